"""Melds (RULES.md §1): runs, sets, jokers and what each joker stands for, changes on the table."""

from __future__ import annotations

import contextlib

import pytest
from helpers import C, cards

from rami.engine import JOKER, Meld, MeldError
from rami.engine.melds import card_value


def meld(text: str, jokers_per_meld: int = 1) -> Meld:
    return Meld.parse(text, jokers_per_meld=jokers_per_meld)


def rejects(text: str, jokers_per_meld: int = 1) -> MeldError:
    with pytest.raises(MeldError) as info:
        Meld.parse(text, jokers_per_meld=jokers_per_meld)
    assert isinstance(info.value, ValueError)
    return info.value


# -- runs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["7h 8h 9h", "9h 7h 8h", "2c 3c 4c 5c 6c", "10s Js Qs Ks"])
def test_three_or_more_cards_of_one_suit_in_a_row_are_a_run(text: str) -> None:
    m = meld(text)
    assert m.kind == "run"
    assert m.is_clean
    assert sorted(m.cards) == sorted(cards(text))


def test_a_run_keeps_its_cards_in_rank_order_with_its_lowest_and_highest_rank() -> None:
    m = meld("9h 7h 8h")
    assert str(m) == "7♥ 8♥ 9♥"
    assert (m.suit, m.lo, m.hi) == (2, 7, 9)


@pytest.mark.parametrize(
    "text",
    [
        "7h 8h",  # too short
        "7h 8h 10h",  # not in a row
        "7h 8s 9h",  # two suits
        "7h 7h 8h 9h",  # a rank twice
    ],
)
def test_cards_that_are_not_in_a_row_of_one_suit_are_no_run(text: str) -> None:
    rejects(text)


def test_the_ace_is_low_before_a_two() -> None:
    m = meld("Ac 2c 3c")
    assert (m.lo, m.hi) == (1, 3)


def test_the_ace_is_high_after_a_king() -> None:
    m = meld("Qc Kc Ac")
    assert (m.lo, m.hi) == (12, 14)
    assert str(m) == "Q♣ K♣ A♣"


@pytest.mark.parametrize("text", ["Kc Ac 2c", "Qc Kc Ac 2c", "Kc Ac 2c 3c"])
def test_a_run_never_goes_around_the_corner(text: str) -> None:
    rejects(text)


def test_a_run_of_all_thirteen_ranks_is_the_longest_run() -> None:
    low = meld("Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh")
    assert (low.lo, low.hi, len(low.cards)) == (1, 13, 13)
    # The same thirteen cards in another order are the same run.
    assert meld("2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh Ah") == low
    high = meld("2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh JK")
    assert (high.lo, high.hi, len(high.cards)) == (2, 14, 13)
    assert high.joker_cards() == [C("Ah")]


def test_a_run_never_holds_the_ace_both_low_and_high() -> None:
    rejects("Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh Ah")
    rejects("Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh JK")


def test_a_run_of_thirteen_can_not_be_extended_by_a_card_or_a_joker() -> None:
    full = meld("Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh")
    for card in ("Ah", "JK"):
        with pytest.raises(MeldError):
            full.with_added(C(card))
    twelve = meld("2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh")
    assert len(twelve.with_added(JOKER).cards) == 13
    assert len(twelve.with_added(C("Ah")).cards) == 13


# -- sets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["7h 7s 7d", "7h 7s 7d 7c", "Ac Ad As"])
def test_three_or_four_cards_of_one_rank_in_different_suits_are_a_set(text: str) -> None:
    m = meld(text)
    assert m.kind == "set"
    assert m.rank == cards(text)[0].rank
    assert m.is_clean


def test_two_cards_of_the_same_suit_never_sit_in_one_set() -> None:
    rejects("7s 7s 7h")
    rejects("7s 7s 7h 7d")


def test_a_set_has_at_most_four_cards() -> None:
    rejects("7h 7s 7d 7c JK")


def test_a_set_needs_three_cards() -> None:
    rejects("7h 7s")
    rejects("7h 7s 8d")


# -- jokers -------------------------------------------------------------------------------------


def test_a_joker_in_a_gap_of_a_run_stands_for_the_missing_card() -> None:
    m = meld("7h JK 9h")
    assert m.joker_cards() == [C("8h")]
    assert not m.is_clean
    assert m.describe() == "7♥ JK(8♥) 9♥"


def test_a_joker_at_an_open_end_stands_for_the_end_where_the_player_puts_it() -> None:
    assert meld("JK 8h 9h").joker_cards() == [C("7h")]
    assert meld("8h 9h JK").joker_cards() == [C("10h")]


def test_a_joker_at_an_open_end_stands_for_the_card_the_player_names() -> None:
    low = Meld.from_cards(cards("8h 9h JK"), jokers_as=[C("7h")])
    assert low.joker_cards() == [C("7h")]
    assert (low.lo, low.hi) == (7, 9)
    high = Meld.from_cards(cards("JK 8h 9h"), jokers_as=[C("10h")])
    assert high.joker_cards() == [C("10h")]


def test_a_joker_can_not_stand_for_a_card_that_does_not_fit_the_run() -> None:
    for named in ("Jh", "8h", "10s"):
        with pytest.raises(MeldError):
            Meld.from_cards(cards("8h 9h JK"), jokers_as=[C(named)])


def test_a_run_never_extends_past_an_ace() -> None:
    # With Q-K-A a joker can only be the jack, wherever the player puts it.
    assert meld("Qc Kc Ac JK").joker_cards() == [C("Jc")]
    assert meld("JK Qc Kc Ac").joker_cards() == [C("Jc")]
    # With A-2 at the low end, the joker can only be the three.
    assert meld("JK Ah 2h").joker_cards() == [C("3h")]
    # Q-K and a joker: the joker is the jack or the high ace, as placed.
    assert meld("Qh Kh JK").joker_cards() == [C("Ah")]
    assert meld("JK Qh Kh").joker_cards() == [C("Jh")]


def test_a_joker_in_a_four_card_set_stands_for_the_missing_suit() -> None:
    m = meld("7h 7s 7d JK")
    assert m.missing_suits() == [0]
    assert m.describe() == "7♦ 7♥ 7♠ JK(7♣)"


def test_a_joker_in_a_three_card_set_stands_for_either_missing_suit() -> None:
    m = meld("7h 7s JK")
    assert m.kind == "set"
    assert m.missing_suits() == [0, 1]
    assert m.describe() == "7♥ 7♠ JK(7♣/♦)"


def test_a_meld_holds_one_joker_by_default() -> None:
    error = rejects("7h JK JK")
    assert "at most 1 joker" in str(error)
    rejects("7h 7s JK JK")
    rejects("7h JK 9h JK")


def test_option_jokers_per_meld_2_allows_two_jokers_in_a_meld() -> None:
    run = meld("7h JK JK 10h", jokers_per_meld=2)
    assert run.kind == "run" and run.joker_cards() == [C("8h"), C("9h")]
    s = meld("7h 7s JK JK", jokers_per_meld=2)
    assert s.kind == "set" and s.jokers == 2
    rejects("7h JK JK JK 11h", jokers_per_meld=2)


def test_a_second_joker_added_is_refused_in_words() -> None:
    with pytest.raises(MeldError, match=r"^JK 6♦ 7♦ 8♦ already holds a joker$"):
        meld("JK 6d 7d 8d").with_added(C("JK"))
    with pytest.raises(MeldError, match=r"already holds 2 jokers$"):
        meld("7h JK JK 10h", jokers_per_meld=2).with_added(C("JK"), jokers_per_meld=2)


def test_a_meld_needs_a_card_that_is_not_a_joker() -> None:
    rejects("JK JK JK", jokers_per_meld=2)


# -- with_added ---------------------------------------------------------------------------------


def test_a_card_is_added_at_either_end_of_a_run() -> None:
    m = meld("7h 8h 9h")
    assert str(m.with_added(C("10h"))) == "7♥ 8♥ 9♥ 10♥"
    assert str(m.with_added(C("6h"))) == "6♥ 7♥ 8♥ 9♥"
    for wrong in ("5h", "8h", "10s"):
        with pytest.raises(MeldError):
            m.with_added(C(wrong))


def test_an_ace_is_added_only_where_the_run_allows_it() -> None:
    assert str(meld("Jh Qh Kh").with_added(C("Ah"))) == "J♥ Q♥ K♥ A♥"
    assert str(meld("2h 3h 4h").with_added(C("Ah"))) == "A♥ 2♥ 3♥ 4♥"
    with pytest.raises(MeldError):
        meld("Qh Kh Ah").with_added(C("2h"))
    with pytest.raises(MeldError):
        meld("Ah 2h 3h").with_added(C("Kh"))


def test_a_joker_is_added_at_the_end_the_player_names() -> None:
    m = meld("7h 8h 9h")
    assert m.with_added(JOKER, end="low").joker_cards() == [C("6h")]
    assert m.with_added(JOKER, end="high").joker_cards() == [C("10h")]


def test_a_joker_is_never_added_past_an_ace() -> None:
    high = meld("Qh Kh Ah")
    assert high.with_added(JOKER).joker_cards() == [C("Jh")]
    with pytest.raises(MeldError):
        high.with_added(JOKER, end="high")
    low = meld("Ah 2h 3h")
    assert low.with_added(JOKER).joker_cards() == [C("4h")]
    with pytest.raises(MeldError):
        low.with_added(JOKER, end="low")


def test_a_joker_added_to_a_meld_that_holds_one_is_refused_unless_the_option_allows() -> None:
    m = meld("7h JK 9h")
    with pytest.raises(MeldError):
        m.with_added(JOKER)
    assert m.with_added(JOKER, jokers_per_meld=2).jokers == 2


def test_a_joker_keeps_the_card_it_stands_for_when_cards_are_added() -> None:
    m = meld("JK 8h 9h").with_added(C("10h")).with_added(C("Jh"))
    assert m.joker_cards() == [C("7h")]
    assert str(m) == "JK 8♥ 9♥ 10♥ J♥"


def test_the_card_a_joker_stands_for_is_not_added_beside_it() -> None:
    with pytest.raises(MeldError):
        meld("JK 8h 9h").with_added(C("7h"))  # the joker is the 7♥: take it back instead
    with pytest.raises(MeldError):
        meld("7h JK 9h").with_added(C("8h"))


def test_a_card_is_added_to_a_set_only_in_a_missing_suit_up_to_four() -> None:
    m = meld("7h 7s 7d")
    four = m.with_added(C("7c"))
    assert four.kind == "set" and len(four.cards) == 4
    for wrong in ("7h", "8c"):
        with pytest.raises(MeldError):
            m.with_added(C(wrong))
    with pytest.raises(MeldError):
        four.with_added(JOKER)


def test_a_card_added_to_a_three_card_set_with_a_joker_leaves_the_joker_the_last_suit() -> None:
    m = meld("7h 7s JK").with_added(C("7c"))
    assert len(m.cards) == 4
    assert m.missing_suits() == [1]
    with pytest.raises(MeldError):
        m.with_added(C("7d"))  # four cards already


# -- with_joker_taken ---------------------------------------------------------------------------


def test_a_joker_is_taken_from_a_run_with_the_exact_card_it_stands_for() -> None:
    m = meld("7h JK 9h")
    taken = m.with_joker_taken(C("8h"))
    assert str(taken) == "7♥ 8♥ 9♥" and taken.is_clean
    for wrong in ("10h", "8s", "7h"):
        with pytest.raises(MeldError):
            m.with_joker_taken(C(wrong))


def test_a_joker_at_an_open_end_is_taken_only_with_the_card_it_was_placed_as() -> None:
    m = meld("8h 9h JK")
    assert str(m.with_joker_taken(C("10h"))) == "8♥ 9♥ 10♥"
    with pytest.raises(MeldError):
        m.with_joker_taken(C("7h"))


def test_a_joker_is_taken_from_a_three_card_set_with_either_missing_suit() -> None:
    m = meld("7h 7s JK")
    assert str(m.with_joker_taken(C("7c"))) == "7♣ 7♥ 7♠"
    assert str(m.with_joker_taken(C("7d"))) == "7♦ 7♥ 7♠"
    for wrong in ("7s", "7h", "8c"):
        with pytest.raises(MeldError):
            m.with_joker_taken(C(wrong))


def test_a_joker_is_taken_from_a_four_card_set_only_with_the_missing_suit() -> None:
    m = meld("7h 7s 7d JK")
    assert m.with_joker_taken(C("7c")).is_clean
    with pytest.raises(MeldError):
        m.with_joker_taken(C("7d"))


def test_no_joker_is_taken_from_a_clean_meld_nor_with_a_joker() -> None:
    with pytest.raises(MeldError):
        meld("7h 8h 9h").with_joker_taken(C("10h"))
    with pytest.raises(MeldError):
        meld("7h JK 9h").with_joker_taken(JOKER)


# -- values -------------------------------------------------------------------------------------


def test_a_low_ace_counts_one_toward_an_opening_and_a_high_ace_ten() -> None:
    assert meld("Ac 2c 3c").opening_value() == 6
    assert meld("Qc Kc Ac").opening_value() == 30
    assert meld("Ac Ad As").opening_value() == 30


def test_opening_values_of_the_worked_example_and_of_joker_melds() -> None:
    assert meld("10s Js Qs").opening_value() == 30
    assert meld("8c 8d 8h").opening_value() == 24
    assert meld("7h 8h 9h").opening_value() == 24
    assert meld("7h JK 9h").opening_value() == 0
    assert meld("Kc Kd JK").opening_value() == 0


def test_card_values_for_each_variant() -> None:
    # portuguese: A 20, K Q J 10, pips face value, joker 0 (§2)
    assert [card_value(c, 20, 0) for c in cards("Ah Kh Qh Jh 10h 2h JK")] == [
        20,
        10,
        10,
        10,
        10,
        2,
        0,
    ]
    # tallage and simple: A 10, K Q J 10, pips face value, joker 20 (§3)
    assert [card_value(c, 10, 20) for c in cards("Ah Kh 9h JK")] == [10, 10, 9, 20]


def test_accepts_says_whether_with_added_takes_the_card_for_every_meld_and_card() -> None:
    """``accepts`` (asked by the bots of every card and meld) is :meth:`Meld.with_added` at
    either end, without making the meld: the same answer for every run and set, jokers in
    them or not, and every card."""
    from rami.engine.cards import CARDS

    def runs(jpm: int) -> list[Meld]:
        out = []
        for suit in range(4):
            for lo in range(1, 13):
                for n in range(3, 15 - lo + 1):
                    naturals = [CARDS[suit * 13 + (lo + i - 1) % 13] for i in range(n)]
                    for j in range(jpm + 1):  # jokers for the first naturals, or the last
                        for laid in ([JOKER] * j + naturals[j:], naturals[: n - j] + [JOKER] * j):
                            with contextlib.suppress(MeldError):
                                out.append(Meld.from_cards(laid, jokers_per_meld=jpm))
        return out

    def sets(jpm: int) -> list[Meld]:
        out = []
        for rank in range(13):
            for size in (3, 4):
                for jokers in range(jpm + 1):
                    naturals = [CARDS[s * 13 + rank] for s in range(size - jokers)]
                    with contextlib.suppress(MeldError):
                        out.append(
                            Meld.from_cards([*naturals, *[JOKER] * jokers], jokers_per_meld=jpm)
                        )
        return out

    asked = 0
    for jpm in (1, 2):
        for m in [*runs(jpm), *sets(jpm)]:
            for c in range(53):
                try:
                    m.with_added(c, jokers_per_meld=jpm)
                    takes = True
                except MeldError:
                    takes = False
                assert m.accepts(c, jokers_per_meld=jpm) == takes, (str(m), c, jpm)
                asked += 1
    assert asked > 50_000, asked


def test_a_refused_addition_says_what_stopped_it() -> None:
    """A card of the run's own rank and suit is refused as one the run holds already (not as
    one that goes at neither end), and cards that fit only with the joker at the other end
    than the one it went to by default say so, and how to ask for that end."""
    from rami.engine.game import _add_cards

    run = Meld.parse("Jc Qc Kc")
    with pytest.raises(MeldError, match="already holds Q♣"):
        run.with_added(C("Qc"))
    low = Meld.parse("6c 7c 8c")
    with pytest.raises(MeldError, match=r"the joker went to the high end.*low"):
        _add_cards(low, cards("3c 4c JK"), None, 1)
    assert _add_cards(low, cards("3c 4c JK"), "low", 1) == Meld.parse("3c 4c JK 6c 7c 8c")
    # A card that fits at neither end, wherever the joker goes: no advice about the ends.
    with pytest.raises(MeldError) as neither:
        _add_cards(Meld.parse("Ah 2h 3h"), cards("JK 7s"), None, 1)
    assert "end" not in str(neither.value).split(":", 1)[-1], neither.value
    # The place a joker holds: the joker can be taken back for the card.
    with pytest.raises(MeldError, match=r"a joker stands for 6♥ there"):
        Meld.parse("5h JK 7h").with_added(C("6h"))
    # Said high, it is the player's choice: no advice about the other end.
    with pytest.raises(MeldError) as high:
        _add_cards(low, cards("3c 4c JK"), "high", 1)
    assert "went to the high end" not in str(high.value)
