"""``tallage`` (RULES.md §3 and §6 cases 5–9): openings and the bar, laying, jokers, round ends.

Two seats unless said: seat 0 deals, holds 15 cards and plays first without drawing (turn 0);
seat 1 plays turn 1; seat 0 turn 2, the first turn that may take the discard.
"""

from __future__ import annotations

import pytest
from helpers import C, cards, deal, play, refused

from rami.engine import JOKER, Game, NextRound, Phase
from rami.engine.events import Laid, RoundEnded

#: §6 case 5: 10♠J♠Q♠ (30) + 8♣8♦8♥ (24) + 7♥8♥9♥ (24) = 78.
OPEN_78 = "10s Js Qs 8c 8d 8h 7h 8h 9h"
LAY_78 = "lay 10s Js Qs, 8c 8d 8h, 7h 8h 9h"


def laid(events: list[object]) -> Laid:
    return next(e for e in events if isinstance(e, Laid))


def ended(events: list[object]) -> RoundEnded:
    return next(e for e in events if isinstance(e, RoundEnded))


def opened_78(seat0_rest: str, seat1: str = "", stock: str = "", **options: object) -> Game:
    """Seat 0 opens with the 78 of case 5 on turn 0 and discards 9d; seat 1 is to draw."""
    game = deal("tallage", [f"{OPEN_78} 9d {seat0_rest}", seat1], "Ac", stock, **options)
    play(game, 0, LAY_78)
    play(game, 0, "discard 9d")
    return game


# -- the opening and the bar --------------------------------------------------------------------


def test_case_5_an_opening_of_78_sets_the_bar_then_78_is_refused_and_79_accepted() -> None:
    seat1 = "10d Jd Qd 8c 8d 8s 7s 8s 9s 3h 4h 5h 6h 7h"
    game = deal("tallage", [f"{OPEN_78} Kd", seat1], "Ac", "2c")
    assert game.bar == 0
    events = play(game, 0, LAY_78)
    assert laid(events).opened and laid(events).opening_value == 78
    assert game.bar == 78 and game.has_opened(0)
    play(game, 0, "discard Kd")
    play(game, 1, "draw stock")
    error = refused(game, 1, "lay 10d Jd Qd, 8c 8d 8s, 7s 8s 9s", "OPENING_BELOW_BAR")
    assert "79" in str(error)
    events = play(game, 1, "lay 10d Jd Qd, 8c 8d 8s, 3h 4h 5h 6h 7h")
    assert laid(events).opening_value == 79
    assert game.bar == 79 and game.has_opened(1)


def test_case_6_a_low_ace_counts_1_toward_an_opening_and_a_high_ace_10() -> None:
    game = deal("tallage", ["Ac 2c 3c Qc Kc Ac 4s 4d 4h 9d 10d Jd Qd Kd", ""], "2h")
    # A♣2♣3♣ is 6, not 15: 6 + 12 + 49 = 67 is below 71 (76 with the ace at 10).
    error = refused(game, 0, "lay Ac 2c 3c, 4s 4d 4h, 9d 10d Jd Qd Kd", "OPENING_TOO_LOW")
    assert "67" in str(error)
    # Q♣K♣A♣ is 30: 30 + 12 + 29 = 71, exactly enough.
    events = play(game, 0, "lay Qc Kc Ac, 4s 4d 4h, 9d 10d Jd")
    assert laid(events).opening_value == 71
    assert game.bar == 71


def test_case_7_an_opening_whose_only_set_holds_a_joker_is_refused() -> None:
    game = deal("tallage", ["10s Js Qs Ks 5d 6d 7d 8d 9d 7c 7h JK", ""], "2h")
    refused(game, 0, "lay 10s Js Qs Ks, 5d 6d 7d 8d 9d, 7c 7h JK", "OPENING_NEEDS_CLEAN_MELDS")


def test_an_opening_needs_a_clean_run_too() -> None:
    game = deal("tallage", ["Ks Kd Kh Qs Qd Qh Js Jd Jh", ""], "2h")
    refused(game, 0, "lay Ks Kd Kh, Qs Qd Qh, Js Jd Jh", "OPENING_NEEDS_CLEAN_MELDS")


def test_melds_with_a_joker_may_be_laid_in_an_opening_but_count_0() -> None:
    game = deal("tallage", [f"{OPEN_78} 2h 3h 4h Kc Kd JK", ""], "2s")
    # 63 of clean melds; the joker set would bring 30 if it counted.
    error = refused(game, 0, "lay 10s Js Qs, 8c 8d 8h, 2h 3h 4h, Kc Kd JK", "OPENING_TOO_LOW")
    assert "63" in str(error)
    events = play(game, 0, f"{LAY_78}, Kc Kd JK")
    assert laid(events).opening_value == 78
    assert len(game.melds) == 4 and game.bar == 78


def test_option_opening_51_lowers_the_least_opening() -> None:
    hand = "9h 10h Jh 4d 4h 4s Ac 2c 3c 4c"
    lay_51 = "lay 9h 10h Jh, 4d 4h 4s, Ac 2c 3c 4c"  # 29 + 12 + 10
    game = deal("tallage", [hand, ""], "2h")
    refused(game, 0, lay_51, "OPENING_TOO_LOW")
    game = deal("tallage", [hand, ""], "2h", opening=51)
    assert laid(play(game, 0, lay_51)).opening_value == 51


def test_option_opening_51_still_refuses_50() -> None:
    game = deal("tallage", ["9h 10h Jh 3d 3h 3s 3c 4c 5c", ""], "2h", opening=51)
    refused(game, 0, "lay 9h 10h Jh, 3d 3h 3s, 3c 4c 5c", "OPENING_TOO_LOW")


def test_the_bar_starts_each_round_at_0() -> None:
    hand = "10s Js Qs Ks 8c 8d 8h 8s 2h 3h 4h 5h 6h 7h 8h"
    game = deal("tallage", [hand, ""], "2c")
    play(game, 0, "lay 10s Js Qs Ks, 8c 8d 8h 8s, 2h 3h 4h 5h 6h 7h")
    assert game.bar == 99
    play(game, 0, "discard 8h")
    assert game.phase == Phase.ROUND_OVER
    game.apply(None, NextRound())
    assert game.bar == 0 and game.melds == [] and game.opened_turn == [None, None]


def test_an_opening_lays_new_melds_only() -> None:
    seat1 = "Kc Kd Kh 2c 3c 4c 5d 6d 7d 8d 9d 10d Jd Ks"
    game = opened_78("", seat1, stock="Qc")
    play(game, 1, "draw stock")
    refused(game, 1, "lay Kc Kd Kh, 2c 3c 4c, 5d 6d 7d 8d 9d 10d Jd; add 1 Ks", "NOT_OPENED")
    play(game, 1, "lay Kc Kd Kh, 2c 3c 4c, 5d 6d 7d 8d 9d 10d Jd")
    assert game.bar == 94


def test_a_player_lays_only_after_taking_a_card() -> None:
    seat1 = "Kc Kd Kh 2c 3c 4c 5d 6d 7d 8d 9d 10d Jd"
    game = opened_78("", seat1, stock="Qc")
    refused(game, 1, "lay Kc Kd Kh, 2c 3c 4c, 5d 6d 7d 8d 9d 10d Jd", "MUST_DRAW")


def test_a_lay_sent_with_a_stock_draw_is_refused_and_the_stock_card_stays() -> None:
    # Judging a lay with the unseen stock card would tell the player which card it is.
    seat1 = "Kc Kd Kh 2c 3c 4c 5d 6d 7d 8d 9d"
    game = opened_78("", seat1, stock="Qc")
    refused(game, 1, "draw stock; lay Kc Kd Kh, 2c 3c 4c, 5d 6d 7d 8d 9d", "LAY_WITH_STOCK")
    assert game.stock[-1] == C("Qc") and game.phase == Phase.DRAW
    play(game, 1, "draw stock")
    assert C("Qc") in game.hands[1] and game.drawn == C("Qc")


# -- what a player who has not opened may not do (case 8) ---------------------------------------


def test_case_8_a_player_who_has_not_opened_can_not_add_to_a_meld_or_take_a_joker() -> None:
    game = deal("tallage", [f"{OPEN_78} 4c JK 6c 9d", "Ks 5c"], "Ac", "2d")
    play(game, 0, f"{LAY_78}, 4c JK 6c")
    play(game, 0, "discard 9d")
    play(game, 1, "draw stock")
    assert not game.has_opened(1)
    refused(game, 1, "add 1 Ks", "NOT_OPENED")
    refused(game, 1, "take 4 5c; add 1 JK", "NOT_OPENED")


# -- after the opening --------------------------------------------------------------------------


def test_after_opening_a_player_lays_again_only_from_the_next_turn() -> None:
    game = deal("tallage", [f"{OPEN_78} 2c 3c 4c 9d", ""], "Ac", "5d 6d")
    play(game, 0, LAY_78)
    refused(game, 0, "lay 2c 3c 4c", "OPENED_THIS_TURN")
    play(game, 0, "discard 9d")
    play(game, 1, "draw stock")
    play(game, 1, "discard 5d")
    play(game, 0, "draw stock")
    events = play(game, 0, "lay 2c 3c 4c")  # a new meld of any value
    assert laid(events).new_melds == (4,) and not laid(events).opened
    assert game.bar == 78


def test_after_opening_a_player_adds_cards_to_their_own_melds() -> None:
    game = opened_78("Ks 6h 2c", stock="5d 5s")
    play(game, 1, "draw stock")
    play(game, 1, "discard 5d")
    play(game, 0, "draw stock")
    play(game, 0, "add 1 Ks; add 3 6h")
    assert str(game.melds[0].meld) == "10♠ J♠ Q♠ K♠"
    assert str(game.melds[2].meld) == "6♥ 7♥ 8♥ 9♥"


def test_a_rami_by_additions_to_another_players_meld_others_pay_their_hand() -> None:
    seat0 = "2c 3c 4c 5c 6c 2d 2h 2s 9h 10h Jh Qh Kh Ks 5d"
    seat1 = f"{OPEN_78} JK Ad 5s Qd 3h"
    game = deal("tallage", [seat0, seat1], "Ac", "2s 7c")
    play(game, 0, "lay 2c 3c 4c 5c 6c, 2d 2h 2s, 9h 10h Jh Qh Kh")
    assert game.bar == 75
    play(game, 0, "discard 5d")
    play(game, 1, "draw stock")
    play(game, 1, LAY_78)  # melds 4, 5, 6
    play(game, 1, "discard 2s")
    # Seat 0 holds one card: it takes from the stock.
    refused(game, 0, "draw discard; lay 2s 3s 4s", "ONE_CARD")
    play(game, 0, "draw stock")
    play(game, 0, "add 4 Ks")
    assert game.melds[3].owner == 1 and str(game.melds[3].meld) == "10♠ J♠ Q♠ K♠"
    events = play(game, 0, "discard 7c")
    r = ended(events).result
    assert (r.ending, r.winner) == ("rami", 0)
    # Laid cards cost nothing: seat 1 pays JK 20 + A♦ 10 + 5♠ 5 + Q♦ 10 + 3♥ 3.
    assert r.points == (0, 48)
    assert game.totals == [0, 48]


def test_option_joker_penalty_sets_what_a_joker_left_in_hand_costs() -> None:
    seat0 = "2c 3c 4c 5c 6c 2d 2h 2s 9h 10h Jh Qh Kh Ks 5d"
    seat1 = f"{OPEN_78} JK Ad 5s Qd 3h"
    game = deal("tallage", [seat0, seat1], "Ac", "2s 7c", joker_penalty=50)
    for seat, action in [
        (0, "lay 2c 3c 4c 5c 6c, 2d 2h 2s, 9h 10h Jh Qh Kh"),
        (0, "discard 5d"),
        (1, "draw stock"),
        (1, LAY_78),
        (1, "discard 2s"),
        (0, "draw stock"),
        (0, "add 4 Ks"),
        (0, "discard 7c"),
    ]:
        play(game, seat, action)
    assert game.results[-1].points == (0, 78)


#: 9♠–K♠ (49) + 8♣8♦8♥ (24) = 73: an opening in two melds, numbered 1 and 2.
OPEN_73 = "9s 10s Js Qs Ks 8c 8d 8h"
LAY_73 = "lay 9s 10s Js Qs Ks, 8c 8d 8h"


def joker_game(seat0_rest: str, melds: str) -> Game:
    """Seat 0 opens with 73 and ``melds`` (meld 3 on), discards 9♦; on turn 2 it draws 5♣."""
    game = deal("tallage", [f"{OPEN_73} {seat0_rest} 9d", ""], "Ac", "5d 5c")
    play(game, 0, f"{LAY_73}, {melds}")
    play(game, 0, "discard 9d")
    play(game, 1, "draw stock")
    play(game, 1, "discard 5d")
    play(game, 0, "draw stock")
    return game


def test_a_joker_is_taken_back_with_the_card_it_stands_for_and_laid_again() -> None:
    game = joker_game("4c JK 6c", "4c JK 6c")
    refused(game, 0, "take 3 5c", "JOKER_NOT_RELAID")
    refused(game, 0, "take 3 7c; add 1 JK", "CARD_NOT_IN_HAND")
    events = play(game, 0, "take 3 5c; add 1 JK")
    assert laid(events).jokers_taken == 1
    assert str(game.melds[2].meld) == "4♣ 5♣ 6♣"
    assert game.melds[0].meld.joker_cards() == [C("As")]
    assert JOKER not in game.hands[0]


def test_a_joker_is_taken_back_only_with_the_card_it_stands_for() -> None:
    game = joker_game("3c JK 5c", "3c JK 5c")  # the joker is 4♣; seat 0 draws 5♣
    refused(game, 0, "take 3 5c; add 1 JK", "INVALID_MELD")


def test_a_joker_taken_back_may_be_laid_again_in_a_new_meld() -> None:
    game = joker_game("4c JK 6c Qd Qh", "4c JK 6c")
    play(game, 0, "take 3 5c; lay Qd Qh JK")
    assert game.melds[3].meld.kind == "set" and game.melds[3].meld.jokers == 1
    assert game.melds[2].meld.is_clean


@pytest.mark.parametrize("card", ["Ks", "Kh"])
def test_a_joker_in_a_three_card_set_is_taken_back_with_either_missing_suit(card: str) -> None:
    game = joker_game("Kc Kd JK Ks Kh", "Kc Kd JK")
    play(game, 0, f"take 3 {card}; add 2 JK")
    assert game.melds[2].meld.is_clean and C(card) in game.melds[2].meld.cards
    assert game.melds[1].meld.jokers == 1


def test_a_joker_in_a_set_is_not_taken_back_with_a_suit_the_set_holds() -> None:
    game = joker_game("Kc Kd JK Kc", "Kc Kd JK")
    refused(game, 0, "take 3 Kc; add 2 JK", "INVALID_MELD")


def test_a_joker_taken_back_can_not_go_on_a_meld_that_holds_a_joker() -> None:
    game = joker_game("4c JK 6c Qc Qd JK", "4c JK 6c")
    refused(game, 0, "take 3 5c; lay Qc Qd JK; add 4 JK", "INVALID_MELD")
    play(game, 0, "take 3 5c; add 2 JK")
    assert sorted(game.hands[0]) == cards("Qc Qd JK")


def test_a_player_who_has_opened_adds_a_joker_from_the_hand_at_the_end_they_name() -> None:
    game = joker_game("JK", "")
    play(game, 0, "add 1 JK low")
    assert game.melds[0].meld.joker_cards() == [C("8s")]


def test_no_lay_may_empty_the_hand() -> None:
    hand = "10s Js Qs Ks 8c 8d 8h 8s 2h 3h 4h 5h 6h 7h 8h"
    game = deal("tallage", [hand, ""], "2c")
    refused(game, 0, "lay 10s Js Qs Ks, 8c 8d 8h 8s, 2h 3h 4h 5h 6h 7h 8h", "MUST_KEEP_CARD")


def test_no_lay_after_opening_may_empty_the_hand_either() -> None:
    seat0 = "2c 3c 4c 5c 6c 2d 2h 2s 9h 10h Jh Qh Kh 7c 5d"
    game = deal("tallage", [seat0, ""], "Ac", "2s 8c")
    play(game, 0, "lay 2c 3c 4c 5c 6c, 2d 2h 2s, 9h 10h Jh Qh Kh")
    play(game, 0, "discard 5d")
    play(game, 1, "draw stock")
    play(game, 1, "discard 2s")
    play(game, 0, "draw stock")
    refused(game, 0, "add 1 7c 8c", "MUST_KEEP_CARD")
    play(game, 0, "add 1 7c")
    assert game.hands[0] == [C("8c")]
    r = ended(play(game, 0, "discard 8c")).result
    assert (r.ending, r.winner) == ("rami", 0)


# -- taking the discard -------------------------------------------------------------------------


def discard_taking_game() -> Game:
    """Seat 0 has opened with case 5's melds and holds 2♣3♣4♣; seat 1 discarded K♠."""
    game = opened_78("2c 3c 4c", "Ks", stock="5d 6d")
    play(game, 1, "draw stock")
    play(game, 1, "discard Ks")
    return game


def test_a_discard_taken_without_a_lay_is_refused() -> None:
    game = discard_taking_game()
    assert game.draw_sources(0) == ["stock", "discard"]
    refused(game, 0, "draw discard", "MUST_LAY_DISCARD")


def test_a_discard_taken_with_a_lay_that_does_not_use_it_is_refused() -> None:
    game = discard_taking_game()
    refused(game, 0, "draw discard; lay 2c 3c 4c", "MUST_LAY_DISCARD")


def test_a_discard_taken_with_a_lay_that_uses_it_is_accepted_as_one_move() -> None:
    game = discard_taking_game()
    events = play(game, 0, "draw discard; add 1 Ks")
    assert events[0].card == C("Ks")  # type: ignore[union-attr]
    assert str(game.melds[0].meld) == "10♠ J♠ Q♠ K♠"
    assert C("Ks") not in game.hands[0] and game.discard == [C("Ac"), C("9d")]
    assert game.phase == Phase.PLAY


def test_the_two_copies_of_a_face_are_interchangeable_when_laying_a_taken_discard() -> None:
    game = opened_78("2c 3c 4c Ks", "Ks", stock="5d 6d")
    play(game, 1, "draw stock")
    play(game, 1, "discard Ks")
    play(game, 0, "draw discard; add 1 Ks")  # one K♠ laid, one kept: the same card
    assert game.hands[0].count(C("Ks")) == 1


def test_a_discard_taken_by_a_player_who_has_not_opened_must_be_laid_in_the_opening() -> None:
    seat1 = "Kc Kd Qs Qd Qc 2c 3c 4c 5d 6d 7d 8d 9d 10d"
    game = deal("tallage", ["Kh 9s", seat1], "Ac", "5s 6s")
    play(game, 0, "discard 9s")
    play(game, 1, "draw stock")
    play(game, 1, "discard 5s")
    play(game, 0, "draw stock")
    play(game, 0, "discard Kh")
    # A good opening (75) that leaves the K♥ in hand:
    refused(game, 1, "draw discard; lay Qs Qd Qc, 5d 6d 7d 8d 9d 10d", "MUST_LAY_DISCARD")
    # The K♥ laid, but in melds that are no opening:
    refused(game, 1, "draw discard; lay Kc Kd Kh, 2c 3c 4c", "OPENING_TOO_LOW")
    events = play(game, 1, "draw discard; lay Kc Kd Kh, 5d 6d 7d 8d 9d 10d")
    assert laid(events).opened and laid(events).opening_value == 75
    assert C("Kh") not in game.hands[1] and game.discard[-1] == C("5s")


def test_nobody_takes_the_discard_in_their_first_turn() -> None:
    game = deal("tallage", ["Kh Qh", "Kc Kd", "Qc Qd"], "Ah", "5s 6s")
    play(game, 0, "discard Kh")
    assert game.first_circuit() and game.draw_sources(1) == ["stock"]
    refused(game, 1, "draw discard; lay Kc Kd Kh", "FIRST_CIRCUIT")
    play(game, 1, "draw stock")
    play(game, 1, "discard 5s")
    refused(game, 2, "draw discard", "FIRST_CIRCUIT")
    play(game, 2, "draw stock")
    play(game, 2, "discard 6s")
    # The circuit is over: the dealer's second turn may take the discard.
    assert not game.first_circuit() and game.draw_sources(0) == ["stock", "discard"]


def test_the_dealer_plays_first_without_drawing() -> None:
    game = deal("tallage", ["", "", ""], "Ah")
    assert (game.turn, game.phase) == (0, Phase.PLAY)
    assert len(game.hands[0]) == 15
    refused(game, 0, "draw stock", "DEALER_NO_DRAW")
    play(game, 0, f"discard {game.hands[0][0].code()}")
    assert (game.turn, game.phase) == (1, Phase.DRAW)


def test_declaring_is_only_for_portuguese() -> None:
    game = deal("tallage", ["", ""], "Ah")
    refused(game, 0, f"declare {game.hands[0][0].code()}", "NO_DECLARING")


# -- whole-hand finishes, Rami and Rami sec -----------------------------------------------------

LOW_HAND = "Ac 2c 3c 4c 5c 2d 2h 2s 4h 5h 6h 3d 3s 3h"
LAY_LOW = "lay Ac 2c 3c 4c 5c, 2d 2h 2s, 4h 5h 6h, 3d 3s 3h"


def test_case_9_a_whole_hand_laid_before_anyone_has_laid_is_a_rami_sec() -> None:
    game = deal("tallage", [f"{LOW_HAND} Ks", "", ""], "Ah")
    events = play(game, 0, LAY_LOW)
    assert laid(events).finish and not laid(events).opened  # 45: no opening, no matter
    events = play(game, 0, "discard Ks")
    r = ended(events).result
    assert (r.ending, r.winner) == ("rami_sec", 0)
    assert r.points == (0, 200, 200)
    assert game.totals == [0, 200, 200]


def test_a_whole_hand_finish_needs_neither_71_nor_the_bar_and_is_a_rami_after_a_lay() -> None:
    seat0 = f"{OPEN_78} Kd 9c 5s Qh JK 6d"
    game = deal("tallage", [seat0, LOW_HAND], "Ah", "Kc")
    play(game, 0, LAY_78)
    play(game, 0, "discard 6d")
    play(game, 1, "draw stock")
    events = play(game, 1, LAY_LOW)
    assert laid(events).finish and not laid(events).opened
    assert game.bar == 78
    events = play(game, 1, "discard Kc")
    r = ended(events).result
    assert (r.ending, r.winner) == ("rami", 1)
    assert r.points == (10 + 9 + 5 + 10 + 20, 0)


def test_a_whole_hand_finish_with_a_taken_discard_lays_it() -> None:
    seat1 = "Ac 2c 3c 4c 5c 2d 2h 2s 4h 5h 6h 3d 3s Kc"
    game = deal("tallage", [f"{OPEN_78} 3h 9d", seat1], "Ah", "Qc Jd")
    play(game, 0, "discard 9d")
    play(game, 1, "draw stock")
    play(game, 1, "discard Qc")
    play(game, 0, "draw stock")
    play(game, 0, "discard 3h")
    events = play(game, 1, f"draw discard; {LAY_LOW}")
    assert laid(events).finish
    r = ended(play(game, 1, "discard Kc")).result
    assert (r.ending, r.winner) == ("rami_sec", 1)


def test_a_whole_hand_finish_needs_a_clean_set_and_a_clean_run() -> None:
    game = deal("tallage", ["Ac 2c 3c 4c 5c 6c 4h 5h 6h 3d 4d 5d 6d 7d Ks", ""], "Ah")
    refused(game, 0, "lay Ac 2c 3c 4c 5c 6c, 4h 5h 6h, 3d 4d 5d 6d 7d", "NOT_A_FINISH")


def test_option_jokers_per_meld_2_lets_an_opening_hold_a_meld_with_two_jokers() -> None:
    hand = f"{OPEN_78} 4c JK JK"
    game = deal("tallage", [hand, ""], "Ah")
    refused(game, 0, f"{LAY_78}, 4c JK JK", "INVALID_MELD")
    game = deal("tallage", [hand, ""], "Ah", jokers_per_meld=2)
    play(game, 0, f"{LAY_78}, 4c JK JK")
    assert game.melds[3].meld.jokers == 2


def test_a_card_belongs_to_one_meld_only() -> None:
    game = deal("tallage", ["10s Js Qs Ks 8c 8d 8h 7h 9h", ""], "Ah")
    refused(game, 0, "lay 10s Js Qs Ks, 8c 8d 8h, 7h 8h 9h", "CARD_NOT_IN_HAND")


def test_a_lay_is_accepted_or_refused_whole() -> None:
    game = deal("tallage", [OPEN_78, ""], "Ah")
    refused(game, 0, f"{LAY_78}, Kc Kd Kh", "CARD_NOT_IN_HAND")
    assert game.melds == []
    assert sorted(cards(OPEN_78)) == sorted(c for c in game.hands[0] if c in cards(OPEN_78))
