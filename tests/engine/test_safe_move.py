"""The move a table makes for an absent seat (``policies.safe_move``): always legal, never a
joker while another card can go, never a card of a meld while a card is loose."""

from __future__ import annotations

import random

import pytest

from rami.engine import JOKER, POLICIES, Discard, Draw, Game, Phase, view
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
