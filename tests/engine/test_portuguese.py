"""``portuguese`` (RULES.md §2 and §6 cases 1–4): declarations, multipliers and deadwood."""

from __future__ import annotations

import pytest
from helpers import C, cards, deal, play, refused

from rami.engine import Declare, Draw, Game, NextRound, Phase, RoundResult, view
from rami.engine.events import Declared, RoundEnded
from rami.engine.solver import PORTUGUESE_VALUES, deadwood, portuguese_declaration

#: 13 cards complete only with a set: ×1 (§6 case 4).
WITH_A_SET = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 8s"
#: 7♣–10♣, K♠K♦K♣, 4♠5♠6♠ and Q♥ 2♣ 9♦ over: pays 21.
PAYS_21 = "7c 8c 9c 10c Ks Kd Kc 4s 5s 6s Qh 2c 9d"
#: §6 case 1: 3♦4♦5♦ and a spare 4♦ 3♦ beside a complete rest.
CASE_1 = "3d 4d 5d 4d 3d Ks Kd Kh 7c 8c 9c 10c Jc"
#: §6 case 2: sets and a joker run, no natural run: 30 + 21 + 27 + 4 + 5 + 0 + 2 = 89.
CASE_2 = "Ks Kd Kh 7c 7d 7h 9s 9d 9c 4h 5h JK 2c"


def declared(declarer: str, *others: str, face_down: str = "Qd", **options: object) -> Game:
    """Seat 1 (first to play) draws ``face_down`` and declares it; seat 0 and the rest hold
    ``others`` (2 players with one other hand, 3 with two)."""
    hands = [others[0], declarer, *others[1:]]
    game = deal("portuguese", hands, "Ac", face_down, **options)
    play(game, 1, "draw stock")
    play(game, 1, f"declare {face_down}")
    return game


def result(game: Game) -> RoundResult:
    assert game.phase in (Phase.ROUND_OVER, Phase.GAME_OVER)
    return game.results[-1]


# -- deadwood of the other players -----------------------------------------------------------------


def test_case_1_the_spare_four_and_three_of_a_run_pay_7() -> None:
    assert deadwood(cards(CASE_1), PORTUGUESE_VALUES) == 7
    game = declared(WITH_A_SET, CASE_1)
    r = result(game)
    assert (r.ending, r.winner, r.multiplier) == ("declare", 1, 1)
    assert r.points == (7, 0)
    assert game.totals == [7, 0]


def test_case_2_a_hand_without_a_natural_run_pays_for_all_13_cards() -> None:
    assert deadwood(cards(CASE_2), PORTUGUESE_VALUES) == 89
    assert sum(PORTUGUESE_VALUES[c] for c in cards(CASE_2)) == 89
    game = declared(WITH_A_SET, CASE_2)
    assert result(game).points == (89, 0)


def test_sets_and_joker_melds_are_taken_out_beside_a_natural_run() -> None:
    hand = cards("Ks Kd Kh 7c 7d 7h 2c 3c 4c 4h 5h JK 9s")
    assert deadwood(hand, PORTUGUESE_VALUES) == 9
    game = declared(WITH_A_SET, "Ks Kd Kh 7c 7d 7h 2c 3c 4c 4h 5h JK 9s")
    assert result(game).points == (9, 0)


def test_natural_runs_are_always_taken_out() -> None:
    assert deadwood(cards("2c 3c 4c 8h 9h 10h Jh Ks Kd 5s 5d Ad 7c"), PORTUGUESE_VALUES) == (
        10 + 10 + 5 + 5 + 20 + 7
    )


def test_portuguese_card_values_are_ace_20_faces_10_pips_face_value_joker_0() -> None:
    hand = cards("Ac Kd Qh Js 10c 9d 2h JK")
    assert [PORTUGUESE_VALUES[c] for c in hand] == [20, 10, 10, 10, 10, 9, 2, 0]


# -- multipliers --------------------------------------------------------------------------------


def test_case_3_runs_of_one_colour_in_two_suits_multiply_by_3() -> None:
    declarer = "2h 3h 4h 5h 6h 9h 10h Jh Ad 2d 3d 4d 5d"
    found = portuguese_declaration(cards(declarer))
    assert found is not None and found[1] == 3
    game = deal("portuguese", [PAYS_21, declarer, CASE_2], "Ac", "Qd")
    play(game, 1, "draw stock")
    events = play(game, 1, "declare Qd")
    shown = next(e for e in events if isinstance(e, Declared))
    assert shown.complete and shown.multiplier == 3
    r = result(game)
    assert r.multiplier == 3
    assert r.points == (21 * 3, 0, 89 * 3)


def test_case_4_a_declaration_complete_only_with_a_set_multiplies_by_1() -> None:
    found = portuguese_declaration(cards(WITH_A_SET))
    assert found is not None and found[1] == 1
    game = declared(WITH_A_SET, PAYS_21)
    assert result(game).multiplier == 1
    assert result(game).points == (21, 0)


def test_runs_of_one_single_suit_multiply_by_4() -> None:
    game = declared("Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh", PAYS_21)
    assert result(game).multiplier == 4
    assert result(game).points == (84, 0)


def test_runs_of_both_colours_multiply_by_2() -> None:
    game = declared("2h 3h 4h 5c 6c 7c 9s 10s Js Qs 4d 5d 6d", PAYS_21)
    assert result(game).multiplier == 2
    assert result(game).points == (42, 0)


def test_the_split_with_the_highest_multiplier_is_used() -> None:
    # 5-6-7 in three suits could also be three sets; as runs only it is worth ×2.
    game = declared("5h 6h 7h 5d 6d 7d 5c 6c 7c 8c 9c 10c Jc", PAYS_21)
    assert result(game).multiplier == 2
    assert result(game).points == (42, 0)


def test_a_joker_among_the_runs_leaves_the_multiplier_at_1() -> None:
    game = declared("2h 3h JK 5h 6h 9h 10h Jh Ad 2d 3d 4d 5d", PAYS_21)
    assert result(game).multiplier == 1
    assert result(game).points == (21, 0)


def test_the_declarer_scores_0_and_every_other_player_pays_their_own_deadwood() -> None:
    game = declared(WITH_A_SET, CASE_1, PAYS_21)
    assert result(game).points == (7, 0, 21)
    assert game.totals == [7, 0, 21]


# -- what a complete declaration is -------------------------------------------------------------


def test_a_complete_declaration_ends_the_round_and_shows_the_split() -> None:
    game = deal("portuguese", [PAYS_21, WITH_A_SET], "Ac", "Qd")
    play(game, 1, "draw stock")
    events = play(game, 1, "declare Qd")
    shown = next(e for e in events if isinstance(e, Declared))
    assert shown.complete and shown.card is None
    assert sorted(shown.cards) == sorted(cards(WITH_A_SET))
    assert sorted(c for m in shown.melds for c in m.cards) == sorted(cards(WITH_A_SET))
    assert any(isinstance(e, RoundEnded) for e in events)
    assert game.discard[-1] == C("Qd")


def test_the_card_a_complete_declaration_puts_face_down_is_in_nobodys_view() -> None:
    game = deal("portuguese", [PAYS_21, WITH_A_SET], "Ac", "Qd")
    play(game, 1, "draw stock")
    play(game, 1, "declare Qd")
    for seat in (0, 1, None):
        v = view(game, seat)
        assert v.discard_top is None and v.discard_size == 2, seat
    game.apply(None, NextRound())
    assert view(game, None).discard_top is not None  # the next deal turns a card up


def test_a_declaration_needs_a_natural_run_sets_and_a_joker_run_are_not_enough() -> None:
    no_run = "Ks Kd Kh Kc 7c 7d 7h 9s 9d 9c 4h 5h JK"
    assert portuguese_declaration(cards(no_run)) is None
    game = deal("portuguese", [PAYS_21, no_run], "Ac", "Qd", false_declaration="reject")
    play(game, 1, "draw stock")
    refused(game, 1, "declare Qd", "INCOMPLETE_DECLARATION")


def test_a_declaration_needs_every_card_in_a_meld() -> None:
    almost = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 2d"
    assert portuguese_declaration(cards(almost)) is None
    game = deal("portuguese", [PAYS_21, almost], "Ac", "Qd", false_declaration="reject")
    play(game, 1, "draw stock")
    refused(game, 1, "declare Qd", "INCOMPLETE_DECLARATION")


def test_the_player_only_names_the_face_down_card_any_card_that_completes_the_rest_works() -> None:
    # 14 cards: 2♥–7♥ and 9♥–J♥ and A♦–5♦; laying down 7♥ or 2♥ leaves complete runs.
    game = deal("portuguese", [PAYS_21, "2h 3h 4h 5h 6h 9h 10h Jh Ad 2d 3d 4d 5d"], "Ac", "7h")
    play(game, 1, "draw stock")
    play(game, 1, "declare 2h")
    assert result(game).multiplier == 3


def test_option_jokers_per_meld_2_lets_a_declaration_hold_a_meld_with_two_jokers() -> None:
    two_jokers = "2h JK JK 5h 9h 10h Jh Ad 2d 3d 4d 5d 6d"
    game = deal("portuguese", [PAYS_21, two_jokers], "Ac", "Qd", false_declaration="reject")
    play(game, 1, "draw stock")
    refused(game, 1, "declare Qd", "INCOMPLETE_DECLARATION")
    game = declared(two_jokers, PAYS_21, jokers_per_meld=2)
    assert result(game).points == (21, 0)


# -- false declarations -------------------------------------------------------------------------


def test_a_false_declaration_is_revealed_its_card_discarded_and_play_passes_by_default() -> None:
    incomplete = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 2d"
    game = deal("portuguese", [PAYS_21, incomplete, ""], "Ac", "Qd")
    assert game.options.false_declaration == "reveal"
    play(game, 1, "draw stock")
    events = play(game, 1, "declare Qd")
    shown = next(e for e in events if isinstance(e, Declared))
    assert not shown.complete
    assert shown.card == C("Qd")
    assert sorted(shown.cards) == sorted(cards(incomplete))
    assert game.discard[-1] == C("Qd")  # an ordinary discard, face up
    assert sorted(game.hands[1]) == sorted(cards(incomplete))
    assert (game.turn, game.phase) == (2, Phase.DRAW)
    assert game.totals == [0, 0, 0] and game.results == []
    # The revealed card is an ordinary discard: the next player may take it.
    play(game, 2, Draw("discard"))
    assert C("Qd") in game.hands[2]


def test_with_false_declaration_reject_an_incomplete_declaration_changes_nothing() -> None:
    incomplete = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 2d"
    game = deal("portuguese", [PAYS_21, incomplete], "Ac", "Qd", false_declaration="reject")
    play(game, 1, "draw stock")
    refused(game, 1, Declare(C("Qd")), "INCOMPLETE_DECLARATION")
    assert game.phase == Phase.PLAY and game.turn == 1
    play(game, 1, "discard Qd")  # the turn goes on normally
    assert game.turn == 0


# -- the turn -----------------------------------------------------------------------------------


def test_the_first_player_may_take_the_turned_up_card() -> None:
    game = deal("portuguese", ["", ""], "Ac", "Qd")
    assert game.draw_sources(1) == ["stock", "discard"]
    events = play(game, 1, "draw discard")
    assert C("Ac") in game.hands[1] and len(game.hands[1]) == 14
    assert game.discard == []
    assert events[0].card == C("Ac")  # type: ignore[union-attr]


def test_the_card_just_drawn_may_be_discarded() -> None:
    game = deal("portuguese", ["", ""], "Ac", "Qd")
    play(game, 1, "draw stock")
    play(game, 1, "discard Qd")
    assert game.discard[-1] == C("Qd") and len(game.hands[1]) == 13
    assert (game.turn, game.phase) == (0, Phase.DRAW)


def test_a_player_declares_only_after_drawing() -> None:
    game = deal("portuguese", [PAYS_21, WITH_A_SET], "Ac", "Qd")
    refused(game, 1, "declare As", "MUST_DRAW")


def test_nothing_is_laid_in_portuguese() -> None:
    game = deal("portuguese", [PAYS_21, WITH_A_SET], "Ac", "Qd")
    refused(game, 1, "draw discard; lay As 2s 3s", "NO_LAYING")
    refused(game, 1, "draw stock; lay As 2s 3s", "LAY_WITH_STOCK")
    # Before the draw too, for that reason: "draw first" would promise a lay after it.
    refused(game, 1, "lay As 2s 3s", "NO_LAYING")
    refused(game, 1, "add 1 As", "NO_LAYING")
    play(game, 1, "draw stock")
    refused(game, 1, "lay As 2s 3s", "NO_LAYING")


@pytest.mark.parametrize("mode", ["reveal", "reject"])
def test_a_declared_card_must_be_in_the_hand(mode: str) -> None:
    game = deal("portuguese", [PAYS_21, WITH_A_SET], "Ac", "Qd", false_declaration=mode)
    play(game, 1, "draw stock")
    refused(game, 1, "declare Kh", "CARD_NOT_IN_HAND")
