"""Game records: a table's game as JSON (docs/records.md), written by the engine
(:func:`rami.engine.record.write_record`) from what the table's log says."""

from __future__ import annotations

import json
import time
from typing import Any

from rami.engine import NextRound
from rami.engine.cards import Card
from rami.engine.record import FORMAT, Move, RecordPlayer, write_record

from .entries import Act, NextDeal, Start
from .tablestate import TableState

__all__ = ["FORMAT", "record", "record_inputs", "record_json", "timed_record_json"]


def record_inputs(state: TableState) -> dict[str, Any]:
    """What the engine writes a table's record from: its seats and options now, and from its
    log the start's seed, the actions and the next deals (cheap: the table's task reads it,
    the record is written outside). A fair game's seeds stay on the server: the record reveals
    only the server seeds of the rounds that are over."""
    seed: bytes | None = None
    moves: list[Move] = []
    for number, entry in enumerate(state.entries, 1):
        match entry:
            case Start(hex_seed):
                seed = bytes.fromhex(hex_seed)
            case Act(seat, action, auto):
                moves.append(Move(number, seat, action, auto))
            case NextDeal():
                moves.append(Move(number, None, NextRound()))
    if state.game is not None:
        fair = state.game.fair
    else:  # not started: the commitment alone
        fair = state.fair_deal() if state.spec.deal_commitment else None
    return {
        "table_id": state.table_id,
        "name": state.spec.name,
        "variant": state.spec.variant,
        "options": state.options,
        "seed": seed,
        "decks": [[Card.parse(c) for c in d] for d in state.spec.decks],
        "players": [RecordPlayer(s.name, s.kind, s.policy) for s in state.seats],
        "moves": moves,
        "fair": fair,
        "turn_cap": state.spec.turn_cap,
    }


def record(state: TableState) -> dict[str, Any]:
    """The record of a table."""
    return write_record(**record_inputs(state))


def record_json(inputs: dict[str, Any]) -> tuple[str, bool]:
    """The record of :func:`record_inputs` as JSON text, and whether it is complete."""
    rec = write_record(**inputs)
    return json.dumps(rec, ensure_ascii=False, indent=1), bool(rec["complete"])


def timed_record_json(inputs: dict[str, Any]) -> tuple[tuple[str, bool], float]:
    """:func:`record_json`, and the seconds it took (to charge a worker's time to its
    client)."""
    started = time.perf_counter()
    return record_json(inputs), time.perf_counter() - started
