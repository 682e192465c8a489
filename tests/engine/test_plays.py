"""What a seat may do now, from its own view: may it declare, and which declarations are
complete, with their multipliers (RULES.md §2)."""

from __future__ import annotations

import random

import pytest
from helpers import C, cards, deal, play

from rami.engine import (
    POLICIES,
    Card,
    Declare,
    Draw,
    Game,
    NextRound,
    Options,
    Phase,
    RuleError,
    view,
)
from rami.engine.plays import (
    complete_declarations,
    declaration_cards,
    declarations,
    legal_plays,
)
from rami.engine.solver import portuguese_declaration

#: 13 cards complete only with a set: ×1.
WITH_A_SET = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 8s"
#: Runs of one colour in two suits: ×3.
RED_RUNS = "2h 3h 4h 5h 6h 9h 10h Jh Ad 2d 3d 4d 5d"
PAYS_21 = "7c 8c 9c 10c Ks Kd Kc 4s 5s 6s Qh 2c 9d"


def test_a_seat_may_declare_on_its_turn_after_drawing_in_portuguese_only() -> None:
    game = deal("portuguese", [PAYS_21, WITH_A_SET], "Ac", "Qd")
    assert not any(view(game, s).can_declare for s in (0, 1, None))  # seat 1 draws first
    play(game, 1, "draw stock")
    assert view(game, 1).can_declare and not view(game, 0).can_declare
    assert not view(game, None).can_declare
    for variant in ("tallage", "simple"):
        other, _ = Game.new(variant, Options(players=2), seed=1)
        assert other.phase == Phase.PLAY  # the dealer plays first without drawing
        assert not view(other, other.turn).can_declare


@pytest.mark.parametrize(
    ("hand", "multiplier"), [(WITH_A_SET, 1), (RED_RUNS, 3), ("Ah 2h 3h 4h 5h 6h 7h 8h 9h "
     "10h Jh Qh Kh", 4)]
)  # fmt: skip
def test_the_complete_declarations_name_the_face_down_card_and_the_multiplier(
    hand: str, multiplier: int
) -> None:
    game = deal("portuguese", [PAYS_21, hand], "Ac", "Qd")
    assert complete_declarations(view(game, 1)) == ()  # not yet: seat 1 draws first
    play(game, 1, "draw stock")
    assert complete_declarations(view(game, 1)) == ((C("Qd"), multiplier),)
    assert complete_declarations(view(game, 0)) == ()  # not its turn
    assert complete_declarations(view(game, None)) == ()


def test_an_incomplete_hand_has_no_complete_declaration() -> None:
    game = deal("portuguese", [WITH_A_SET, PAYS_21], "Ac", "Qd")
    play(game, 1, "draw stock")
    v = view(game, 1)
    assert v.can_declare and complete_declarations(v) == ()


def _brute_force(hand: list[int], jpm: int) -> tuple[tuple[int, int], ...]:
    out = []
    for card in sorted(set(hand)):
        rest = list(hand)
        rest.remove(card)
        found = portuguese_declaration(rest, jokers_per_meld=jpm)
        if found is not None:
            out.append((card, found[1]))
    return tuple(out)


def test_declaration_cards_are_every_card_that_leaves_a_complete_declaration() -> None:
    rng = random.Random(11)
    deck = [c for c in range(52) for _ in range(2)] + [52, 52]
    complete = 0
    for i in range(400):
        if i % 2:
            # Near-complete hands: a declaration's 13 cards and one more.
            base = cards(rng.choice((WITH_A_SET, RED_RUNS)))
            hand = [*base, rng.choice(deck)]
        else:
            hand = rng.sample(deck, 14)
        jpm = rng.choice((1, 2))
        found = declaration_cards(hand, jokers_per_meld=jpm)
        assert found == _brute_force(hand, jpm), hand
        complete += bool(found)
    assert complete >= 150
    assert declaration_cards(cards(WITH_A_SET)) == ()  # 13 cards: nothing to put face down


def test_complete_declarations_agree_with_the_declarations_played_in_random_games() -> None:
    rng = random.Random(5)
    seen = 0
    for seed in range(6):
        game, _ = Game.new("portuguese", Options(players=3, rounds=2), seed=seed)
        while game.phase != Phase.GAME_OVER:
            if game.phase == Phase.ROUND_OVER:
                game.apply(None, NextRound())
                continue
            v = view(game, game.turn)
            found = complete_declarations(v)
            assert v.can_declare == (game.phase == Phase.PLAY)
            if v.can_declare:
                assert sorted(d.card for d in declarations(v)) == [c for c, _ in found]
            else:
                assert found == ()
            seen += bool(found)
            game.apply(game.turn, POLICIES["greedy"](v, rng))
    assert seen > 0


def test_the_cards_a_seat_may_declare_with_are_the_games_own_list() -> None:
    """``Game.declarable`` (what the step mask offers): every card held when a false
    declaration is a move (``reveal``), else exactly the cards that leave a complete
    declaration; none off the seat's turn or before it draws. Each is what ``apply`` accepts."""
    for rule in ("reveal", "reject"):
        # Both seats hold RED_RUNS (each card of it twice in the two decks); the first to move
        # draws K♠: declaring with it leaves the runs.
        game = deal(
            "portuguese", [RED_RUNS, RED_RUNS], "Qc", "Ks", false_declaration=rule, rounds=1
        )
        seat = game.turn
        assert game.declarable(seat) == []  # it has not drawn yet
        game.apply(seat, Draw("stock"))
        assert game.declarable(1 - seat) == []
        held = game.hands[seat]
        expected = (
            sorted(set(held)) if rule == "reveal" else [c for c, _ in declaration_cards(held)]
        )
        assert game.declarable(seat) == expected
        for c in sorted(set(held)):
            accepted = True
            try:
                game.clone().apply(seat, Declare(c))
            except RuleError:
                accepted = False
            assert accepted == (c in expected), (rule, c)
    assert expected == [Card.parse("Ks")]  # reject: the one card that leaves the runs


def test_an_opening_that_is_also_a_finish_is_offered_once() -> None:
    # Tallage, seat 1 not opened, 8♥ on the pile after the first circuit: taking it, the lay
    # of every card but one opens and finishes at once (it was listed twice, as both).
    hand = "3c 3d JK 6c 7c 8c 8c 8d 9s 10s Js Qs Ks 2h"
    game = deal("tallage", ["8h 2s 5d 9d Jd 4h 6h Qc 3s 7d 10c Kh 4c 9h 5s", hand], "Ad", "2c 4d")
    play(game, 0, "discard 5s")
    play(game, 1, "draw stock")
    play(game, 1, "discard 2c")
    play(game, 0, "draw stock")
    play(game, 0, "discard 8h")
    v = view(game, 1)
    assert v.phase == Phase.DRAW and v.discard_top == C("8h") and not v.first_circuit
    takes = [p for p in legal_plays(v) if isinstance(p, Draw) and p.lay is not None]
    assert len(takes) == 1, takes


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_legal_plays_never_lists_an_action_twice(variant: str) -> None:
    rng = random.Random(3)
    positions = 0
    for seed in range(8):
        game, _ = Game.new(variant, Options(players=2, rounds=1, round_cap=1), seed=seed)
        while game.phase not in (Phase.ROUND_OVER, Phase.GAME_OVER):
            v = view(game, game.turn)
            plays = legal_plays(v)
            assert len(set(plays)) == len(plays), [p for p in plays if plays.count(p) > 1]
            positions += 1
            game.apply(game.turn, POLICIES["greedy"](v, rng))
    assert positions > 100
