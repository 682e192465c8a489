"""Game records written by the engine from a game's moves, and read back by it."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from rami.engine import POLICIES, Game, NextRound, Options, Phase, view
from rami.engine.record import FORMAT, Move, RecordPlayer, replay_record, write_record

PLAYERS = (RecordPlayer("Sara", "player"), RecordPlayer("Bot 1", "bot", "random"))


def _moves(variant: str, options: Options, seed: bytes, limit: int = 10_000) -> list[Move]:
    """A seeded game's moves by random players, numbered from 4 (three updates before it)."""
    game, _ = Game.new(variant, options, seed)
    rng = random.Random(seed)
    moves: list[Move] = []
    while game.phase != Phase.GAME_OVER and len(moves) < limit:
        if game.phase == Phase.ROUND_OVER:
            move = Move(len(moves) + 4, None, NextRound())
        else:
            action = POLICIES["random"](view(game, game.turn), rng)
            auto = "timeout" if rng.random() < 0.1 else None
            move = Move(len(moves) + 4, game.turn, action, auto)
        game.apply(move.seat, move.action)
        moves.append(move)
    return moves


def _write(variant: str, options: Options, seed: bytes | None, moves: list[Move]) -> dict[str, Any]:
    return write_record(
        table_id="t1",
        name="Friday",
        variant=variant,
        options=options,
        seed=seed,
        players=PLAYERS,
        moves=moves,
    )


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_a_complete_record_replays_to_the_same_game(variant: str) -> None:
    options = Options(players=2, rounds=2, round_cap=2)
    moves = _moves(variant, options, b"seed")
    doc = json.loads(json.dumps(_write(variant, options, b"seed", moves)))
    assert doc["format"] == FORMAT and doc["complete"]
    assert doc["players"][1] == {"seat": 1, "name": "Bot 1", "kind": "bot", "policy": "random"}
    game = Game.replay(variant, options, b"seed", [(m.seat, m.action) for m in moves])
    again = replay_record(doc)
    assert again.totals == game.totals and again.results == game.results
    assert doc["winners"] == list(game.winners)
    numbers = [a["number"] for r in doc["rounds"] for a in r["actions"]]
    assert numbers == [m.number for m in moves if m.seat is not None]
    autos = sum(1 for r in doc["rounds"] for a in r["actions"] if a.get("auto") == "timeout")
    assert autos == sum(1 for m in moves if m.auto)


def test_a_record_in_progress_keeps_the_round_being_played_concealed() -> None:
    options = Options(players=2, rounds=3)
    moves = _moves("portuguese", options, b"s", limit=10_000)
    nexts = [i for i, m in enumerate(moves) if m.seat is None]
    doc = _write("portuguese", options, b"s", moves[: nexts[0] + 3])
    assert not doc["complete"] and doc["winners"] == []
    first, second = doc["rounds"]
    assert first["deal"] is not None and first["seed"] and first["result"] is not None
    assert second["deal"] is None and second["seed"] is None and second["result"] is None
    assert len(second["actions"]) == 2 and second["seed_hash"]


def test_a_game_not_started_has_its_table_and_no_rounds() -> None:
    doc = _write("tallage", Options(players=2), None, [])
    assert (doc["complete"], doc["rounds"], doc["totals"], doc["winners"]) == (False, [], [], [])
    assert doc["options"] == Options(players=2).to_dict() and doc["name"] == "Friday"
