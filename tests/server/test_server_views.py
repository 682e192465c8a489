"""Views built together (the shared part once, each seat's part added), as messages or encoded,
are the views built one by one from the engine's view of each seat: at every update of whole
random games, for every seat and a spectator, with and without a turn clock and connected
seats."""

from __future__ import annotations

import random

import pytest

from rami.engine import POLICIES, Options, Phase, view
from rami.server import convert
from rami.server.entries import Act, Join, NextDeal, Start
from rami.server.tablestate import TableSpec, TableState
from rami.v1 import game_pb2


def _one_by_one(
    state: TableState, seat: int | None, connected: dict[int, int], deadline: float | None
) -> game_pb2.View:
    """A view the plain way: the engine's view of that seat, converted whole."""
    players = convert.players_to_proto(state.players(connected))
    if state.game is None:
        return game_pb2.View(
            table_id=state.table_id,
            number=state.number,
            variant=convert.variant_to_proto(state.spec.variant),
            options=convert.options_to_proto(state.options),
            seat=seat,
            phase=game_pb2.PHASE_WAITING,
            players=players,
        )
    return convert.view_to_proto(
        view(state.game, seat), state.table_id, state.number, players, deadline
    )


def _check(state: TableState, rng: random.Random) -> None:
    seats: list[int | None] = [*range(len(state.seats)), None]
    connected = {s: 1 for s in range(len(state.seats)) if rng.random() < 0.5}
    deadline = rng.choice([None, 1_800_000_000.25])
    together = {s: game_pb2.View() for s in seats}
    encoder = convert.ViewEncoder()
    encoder.fill(state, together, connected, deadline)
    encoded = encoder.encode(state, seats, connected, deadline)
    for s in seats:
        assert together[s] == _one_by_one(state, s, connected, deadline), (s, state.number)
        assert encoder.view(state, s, connected, deadline) == together[s]
        assert game_pb2.View.FromString(encoded[s]) == together[s], (s, state.number)


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_views_built_together_are_the_views_built_one_by_one(variant: str) -> None:
    rng = random.Random(f"views/{variant}")
    spec = TableSpec("t", variant, Options(players=3))
    state = TableState("views", spec)
    for seat in range(3):
        state.apply(Join(seat, f"p{seat}", f"h{seat}"))
        _check(state, rng)
    state.apply(Start("00" * 32))
    policy = POLICIES["random"]
    for _ in range(600):
        game = state.game
        assert game is not None
        _check(state, rng)
        if game.phase == Phase.GAME_OVER:
            break
        if game.phase == Phase.ROUND_OVER:
            state.apply(NextDeal())
            continue
        action = policy(view(game, game.turn), rng)
        state.apply(Act(game.turn, action))


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_one_encoder_kept_through_a_table_encodes_every_update_as_built_anew(
    variant: str,
) -> None:
    # A table keeps one encoder for its life, and the encoder keeps what it encoded (each
    # player, meld, result and seat's own part) to reuse while it does not change: at every
    # update of two games (to their end, or 1,500 updates), every seat's bytes are the view
    # built from nothing.
    rng = random.Random(f"kept/{variant}")
    encoder = convert.ViewEncoder()
    policy = POLICIES["random"]
    for game_number in range(2):
        spec = TableSpec("t", variant, Options(players=4, rounds=2))
        state = TableState(f"kept{game_number}", spec)
        for seat in range(4):
            state.apply(Join(seat, f"p{seat}", f"h{seat}"))
        state.apply(Start(f"{game_number:02x}" * 32))
        seats: list[int | None] = [0, 1, 2, 3, None]
        checked = 0
        for _ in range(1500):
            game = state.game
            assert game is not None
            connected = {s: 1 for s in range(4) if rng.random() < 0.7}
            deadline = rng.choice([None, 1_800_000_000.25])
            encoded = encoder.encode(state, seats, connected, deadline)
            for s in seats:
                assert game_pb2.View.FromString(encoded[s]) == _one_by_one(
                    state, s, connected, deadline
                ), (game_number, s, state.number)
            checked += 1
            if game.phase == Phase.GAME_OVER:
                break
            if game.phase == Phase.ROUND_OVER:
                state.apply(NextDeal())
                continue
            state.apply(Act(game.turn, policy(view(game, game.turn), rng)))
        assert checked > 50
