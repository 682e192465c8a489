"""Game records: a table's game as JSON (docs/records.md), written by the engine
(:func:`rami.engine.record.write_record`) from what the table's log says."""

from __future__ import annotations

import json
from typing import Any

from rami.engine import NextRound
from rami.engine.cards import Card
from rami.engine.record import FORMAT, Move, RecordPlayer, write_record
from rami.engine.serial import action_from_dict

from .tablestate import TableState

__all__ = ["FORMAT", "record", "record_json"]


def record(state: TableState, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The record of a table, from its state after ``entries`` (its seats and options) and
    the entries themselves (the start's seed, the actions and the next deals)."""
    seed: bytes | None = None
    moves: list[Move] = []
    for number, entry in enumerate(entries, 1):
        kind = entry["type"]
        if kind == "start":
            seed = bytes.fromhex(entry["seed"])
        elif kind == "act":
            action = action_from_dict(entry["action"])
            moves.append(Move(number, entry["seat"], action, entry.get("auto")))
        elif kind == "next":
            moves.append(Move(number, None, NextRound()))
    return write_record(
        table_id=state.table_id,
        name=state.spec.name,
        variant=state.spec.variant,
        options=state.options,
        seed=seed,
        decks=[[Card.parse(c) for c in d] for d in state.spec.decks],
        players=[RecordPlayer(s.name, s.kind, s.policy) for s in state.seats],
        moves=moves,
    )


def record_json(state: TableState, entries: list[dict[str, Any]]) -> tuple[str, bool]:
    """The record as JSON text, and whether it is complete."""
    rec = record(state, entries)
    return json.dumps(rec, ensure_ascii=False, indent=1), bool(rec["complete"])
