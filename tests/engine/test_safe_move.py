"""The move a table makes for an absent seat (``policies.safe_move``): always legal, never a
joker while another card can go, never a card of a meld while a card is loose."""

from __future__ import annotations

import random

import pytest

from rami.engine import JOKER, POLICIES, Discard, Draw, Game, NextRound, Options, Phase, view
from rami.engine.policies import safe_move
from rami.engine.solver import deadwood_split


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_the_safe_move_is_legal_and_keeps_jokers_and_melds(variant: str) -> None:
    checked = 0
    for seed in range(40):
        game, _ = Game.new(variant, seed=seed)
        rng = random.Random(seed)
        for _ in range(60):
            if game.phase not in (Phase.DRAW, Phase.PLAY):
                break
            seat = game.turn
            v = view(game, seat)
            move = safe_move(v)
            if game.phase == Phase.DRAW:
                assert move == Draw("stock")
            else:
                assert isinstance(move, Discard)
                hand = list(v.hand or ())
                split = deadwood_split(
                    hand,
                    v.options.hand_values(v.variant),
                    need_run=v.variant.sets_need_run,
                    jokers_per_meld=v.options.jokers_per_meld,
                )
                if any(c != JOKER for c in hand):
                    assert move.card != JOKER
                if any(c != JOKER for c in split.left):
                    assert move.card in split.left
                checked += 1
            game.clone().apply(seat, move)  # legal: raises otherwise
            game.apply(seat, POLICIES["random"](v, rng))
    assert checked > 200


def test_tallage_lists_the_discard_only_when_a_lay_this_turn_can_take_it() -> None:
    from rami.engine.plays import discard_completions
    from rami.engine.views import seat_part

    listed = hidden = 0
    for seed in range(30):
        game, _ = Game.new("tallage", seed=seed)
        rng = random.Random(seed)
        for _ in range(300):
            if game.phase not in (Phase.DRAW, Phase.PLAY):
                break
            seat = game.turn
            v = view(game, seat)
            part = seat_part(game, seat)
            assert part is not None and part.draw_sources == v.draw_sources
            if game.phase == Phase.DRAW and "discard" in game.draw_sources(seat):
                if "discard" in v.draw_sources:
                    listed += 1
                    lay = discard_completions(v)[0]
                    game.clone().apply(seat, Draw("discard", lay))  # it can be completed
                else:
                    hidden += 1
            game.apply(seat, POLICIES["greedy"](v, rng))
    assert listed > 0 and hidden > listed


def test_greedy_players_never_pass_a_discard_to_and_fro_for_ever() -> None:
    """Two greedy players of simple each took the other's discard and threw it back: the stock
    never ran down and the round never ended (131 of 29,411 random games). Now they finish."""
    for seed in range(1500):
        game, _ = Game.new("simple", Options(players=2, round_cap=1), seed=seed)
        steps = 0
        while game.phase in (Phase.DRAW, Phase.PLAY):
            v = view(game, game.turn)
            game.apply(game.turn, POLICIES["greedy"](v, random.Random(f"{seed}:{steps}")))
            steps += 1
            assert steps < 1500, f"seed {seed}: the round goes on for ever: {game.log[-4:]}"


def test_strong_players_never_pass_a_discard_to_and_fro_for_ever() -> None:
    """Two strong players of portuguese each took the discard (it melded) and threw it straight
    back (their judge of the hand preferred to): the stock never ran down and the round never
    ended (deal "w1:4", the fourth round). Strong takes no discard it would throw back at once;
    its rounds finish."""
    for seed in ["w1:4", *range(12)]:
        game, _ = Game.new("portuguese", Options(players=2), seed=seed)
        steps = 0
        while game.phase != Phase.GAME_OVER:
            if game.phase == Phase.ROUND_OVER:
                game.apply(None, NextRound())
                continue
            v = view(game, game.turn)
            action = POLICIES["strong"](v, random.Random(steps))
            game.apply(game.turn, action)
            if isinstance(action, Draw) and action.source == "discard":
                thrown = POLICIES["strong"](view(game, game.turn), random.Random(steps))
                assert thrown != Discard(game.drawn), f"seed {seed}: {action} then {thrown}"
            steps += 1
            assert steps < 5000, f"seed {seed}: the game goes on for ever: {game.log[-4:]}"
