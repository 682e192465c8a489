"""Seeded games with one policy in seat 0 and ``strong`` in the others, as the expert's
benches play them (``bench.expert_rates``, ``bench.judge``)."""

from __future__ import annotations

import random
from collections.abc import Iterator

from rami.engine import Game, NextRound, Options, Phase, View, view
from rami.engine.policies import strong


def seat_zero_turns(
    variant: str, players: int, seed: str, games: int | None = None
) -> Iterator[tuple[int, Game, View, random.Random]]:
    """Each turn of seat 0 in games ``f"{seed}:{n}"`` for n = 0, 1, ... (at most ``games``):
    the game's number, the game, seat 0's view and the game's random source. The caller
    applies seat 0's move before asking for the next turn; strong plays the other seats and
    the next deal comes by itself. Stop asking to stop."""
    number = 0
    while games is None or number < games:
        game, _ = Game.new(variant, Options(players=players), f"{seed}:{number}")
        rng = random.Random(f"{seed}:{number}")
        while game.phase != Phase.GAME_OVER:
            if game.phase == Phase.ROUND_OVER:
                game.apply(None, NextRound())
                continue
            seat = game.turn
            v = view(game, seat)
            if seat != 0:
                game.apply(seat, strong(v, rng))
                continue
            before = game.number
            yield number, game, v, rng
            if game.number == before:
                raise RuntimeError("seat 0's move was not applied before the next turn")
        number += 1
