"""``simple`` (RULES.md §4 and §6 case 10): only the whole-hand finish is laid; its scoring."""

from __future__ import annotations

import pytest
from helpers import C, cards, deal, play, refused

from rami.engine import Game, Phase
from rami.engine.events import Laid, RoundEnded

#: 13 cards in a clean run, a clean set and two more melds, and the K♠ to discard.
FINISH = "Ac 2c 3c 4c 2d 2h 2s 4h 5h 6h 3d 3s 3h Ks"
LAY_FINISH = "lay Ac 2c 3c 4c, 2d 2h 2s, 4h 5h 6h, 3d 3s 3h"
#: A hand to pay for: 20 + 10 + 10 + 9 + 8 + 7 + 6 + 5 + 4 + 3 + 2 + 10 + 10 = 104.
PAYS_104 = "JK Kd Qd 9c 8s 7d 6c 5s 4d 3c 2s Ah 10h"


def value(text: str, joker: int = 20) -> int:
    """A hand's value in tallage and simple (RULES.md §3), written out again here."""
    total = 0
    for c in cards(text):
        total += joker if c.is_joker else 10 if c.rank in (1, 11, 12, 13) else c.rank
    return total


def finished(*others: str, **options: object) -> Game:
    game = deal("simple", [FINISH, *others], "Ad", **options)
    events = play(game, 0, LAY_FINISH)
    assert next(e for e in events if isinstance(e, Laid)).finish
    play(game, 0, "discard Ks")
    return game


def test_the_hand_value_helper_agrees_with_the_rules() -> None:
    assert value(PAYS_104) == 104


def test_the_dealer_holds_14_and_finishes_without_drawing() -> None:
    game = deal("simple", [FINISH, PAYS_104], "Ad")
    assert [len(h) for h in game.hands] == [14, 13]
    assert (game.turn, game.phase) == (0, Phase.PLAY)
    refused(game, 0, "draw stock", "DEALER_NO_DRAW")


def test_a_finish_lays_the_whole_hand_but_one_and_others_pay_their_hand_values() -> None:
    game = finished(PAYS_104, "Kc Qc 9d 8h 7s 6d 5h 4s 3s 2d Ah 10c Jd")
    r = game.results[-1]
    assert (r.ending, r.winner) == ("rami", 0)
    assert r.points == (0, 104, value("Kc Qc 9d 8h 7s 6d 5h 4s 3s 2d Ah 10c Jd"))
    assert game.totals == list(r.points)


def test_option_joker_penalty_applies_to_simple() -> None:
    game = finished(PAYS_104, joker_penalty=0)
    assert game.results[-1].points == (0, 84)


def test_option_simple_rami_sec_makes_every_finish_cost_200() -> None:
    game = finished(PAYS_104, "", simple_rami_sec=True)
    r = game.results[-1]
    assert r.ending == "rami_sec"
    assert r.points == (0, 200, 200)


def test_case_10_four_clean_runs_and_no_set_are_no_finish() -> None:
    game = deal("simple", ["Ac 2c 3c 4h 5h 6h 7d 8d 9d 10s Js Qs Ks 5c", ""], "Ad")
    refused(game, 0, "lay Ac 2c 3c, 4h 5h 6h, 7d 8d 9d, 10s Js Qs Ks", "NOT_A_FINISH")


def test_sets_without_a_clean_run_are_no_finish() -> None:
    game = deal("simple", ["Ac Ad Ah 2c 2d 2h 3c 3d 3h 4c 4d 4h 4s 5c", ""], "As")
    refused(game, 0, "lay Ac Ad Ah, 2c 2d 2h, 3c 3d 3h, 4c 4d 4h 4s", "NOT_A_FINISH")


def test_a_finish_whose_only_set_holds_a_joker_is_no_finish() -> None:
    game = deal("simple", ["Ac 2c 3c 4c 5c 6c 7c 8c 9c 10c Kd Kh JK 5d", ""], "As")
    refused(game, 0, "lay Ac 2c 3c 4c 5c 6c 7c 8c 9c 10c, Kd Kh JK", "NOT_A_FINISH")


def test_a_lay_that_is_not_the_whole_hand_is_refused_even_a_big_one() -> None:
    game = deal("simple", ["10s Js Qs Ks Kc Kd Kh 9d 10d Jd Qd 2c 5h 8s", ""], "Ad")
    refused(game, 0, "lay 10s Js Qs, Kc Kd Kh", "NOT_A_FINISH")
    error = refused(game, 0, "lay 10s Js Qs Ks, Kc Kd Kh, 9d 10d Jd Qd", "NOT_A_FINISH")
    # The refusal says why this lay is none: the cards it would leave in the hand.
    assert str(error).endswith("this lay leaves 3 cards in your hand"), str(error)


def test_a_whole_hand_refused_for_its_melds_says_which_clean_meld_it_lacks() -> None:
    game = deal("simple", ["Ac Ad Ah 2c 2d 2h 3c 3d 3h 4c 4d 4h 4s 5c", ""], "As")
    error = refused(game, 0, "lay Ac Ad Ah, 2c 2d 2h, 3c 3d 3h, 4c 4d 4h 4s", "NOT_A_FINISH")
    assert str(error).endswith("this lay has no clean run"), str(error)


def test_a_finish_keeps_one_card_to_discard() -> None:
    game = deal("simple", ["Ac 2c 3c 4c 2d 2h 2s 4h 5h 6h 3d 3s 3h 3c", ""], "Ad")
    refused(game, 0, "lay Ac 2c 3c 4c, 2d 2h 2s, 4h 5h 6h, 3d 3s 3h 3c", "MUST_KEEP_CARD")


def test_nothing_is_added_to_melds_nor_jokers_taken_in_simple() -> None:
    game = deal("simple", [FINISH, ""], "Ad")
    refused(game, 0, "add 1 Ks", "NO_LAYING")
    refused(game, 0, "take 1 5c; add 1 JK", "NO_LAYING")


def test_after_the_finishing_lay_only_the_discard_is_left() -> None:
    game = deal("simple", [FINISH, ""], "Ad")
    play(game, 0, LAY_FINISH)
    error = refused(game, 0, "add 1 5c", "OPENED_THIS_TURN")
    assert str(error) == "you laid your hand this turn: discard your last card"


def test_a_finish_holds_at_most_one_joker_per_meld_unless_the_option_allows_two() -> None:
    hand = "Ac JK JK 4c 2d 2h 2s 4h 5h 6h 3d 3s 3h Ks"
    lay = "lay Ac JK JK 4c, 2d 2h 2s, 4h 5h 6h, 3d 3s 3h"
    game = deal("simple", [hand, ""], "Ad")
    refused(game, 0, lay, "INVALID_MELD")
    game = deal("simple", [hand, ""], "Ad", jokers_per_meld=2)
    play(game, 0, lay)
    play(game, 0, "discard Ks")
    assert game.results[-1].ending == "rami"


def test_a_finish_may_hold_joker_melds_beside_a_clean_set_and_run() -> None:
    game = deal("simple", ["Ac 2c JK 4c 2d 2h 2s 4h 5h 6h 3d 3s JK Ks", PAYS_104], "Ad")
    play(game, 0, "lay Ac 2c JK 4c, 2d 2h 2s, 4h 5h 6h, 3d 3s JK")
    assert play(game, 0, "discard Ks")
    assert game.results[-1].points == (0, 104)


def test_taking_the_discard_needs_no_lay_after_the_first_circuit() -> None:
    game = deal("simple", ["Qh", "", ""], "Ad", "5s 6s")
    play(game, 0, "discard Qh")
    refused(game, 1, "draw discard", "FIRST_CIRCUIT")
    play(game, 1, "draw stock")
    play(game, 1, "discard 5s")
    refused(game, 2, "draw discard", "FIRST_CIRCUIT")
    play(game, 2, "draw stock")
    play(game, 2, "discard 6s")
    assert game.draw_sources(0) == ["stock", "discard"]
    play(game, 0, "draw discard")
    assert C("6s") in game.hands[0] and len(game.hands[0]) == 14
    play(game, 0, "discard 6s")
    assert game.turn == 1


def test_a_finish_may_lay_the_taken_discard() -> None:
    seat1 = "Ac 2c 3c 4c 2d 2h 2s 4h 5h 6h 3d 3s Kc"
    game = deal("simple", ["3h 9d", seat1], "Ad", "Qc Jd")
    play(game, 0, "discard 9d")
    play(game, 1, "draw stock")
    play(game, 1, "discard Qc")
    play(game, 0, "draw stock")
    play(game, 0, "discard 3h")
    events = play(game, 1, f"draw discard; {LAY_FINISH}")
    assert next(e for e in events if isinstance(e, Laid)).finish
    events = play(game, 1, "discard Kc")
    r = next(e for e in events if isinstance(e, RoundEnded)).result
    assert (r.ending, r.winner) == ("rami", 1)


def test_declaring_is_only_for_portuguese() -> None:
    game = deal("simple", [FINISH, ""], "Ad")
    refused(game, 0, "declare Ks", "NO_DECLARING")


@pytest.mark.parametrize("players", [2, 6])
def test_simple_deals_13_each_and_14_to_the_dealer(players: int) -> None:
    game = deal("simple", [""] * players, "Ad")
    assert [len(h) for h in game.hands] == [14] + [13] * (players - 1)
    assert len(game.stock) == 108 - 13 * players - 1 - 1
