"""Whole games of every variant and policy run to their end with every card accounted for."""

from __future__ import annotations

import random

import pytest

from rami.engine import POLICIES, Game, NextRound, Options, Phase, view


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
@pytest.mark.parametrize("policy", ["greedy", "strong"])
def test_a_game_between_bots_ends_with_every_card_accounted_for(variant: str, policy: str) -> None:
    game, _ = Game.new(variant, Options(players=3), seed=11)
    rngs = [random.Random(i) for i in range(3)]
    while game.phase != Phase.GAME_OVER:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            continue
        seat = game.turn
        game.apply(seat, POLICIES[policy](view(game, seat), rngs[seat]))
        assert sorted(game.cards_in_play()) == sorted(
            [c for c in range(52) for _ in range(2)] + [52] * game.variant.jokers
        )
    assert game.winners
    assert min(game.totals) == game.totals[game.winners[0]]
