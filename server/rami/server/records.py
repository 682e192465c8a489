"""Game records: the whole game as JSON (docs/records.md), replayable and checkable.

Once the game is over the record holds every round's deal, shuffle seed, actions and result.
While it runs, the record leaves out what is still concealed: the deal and the seed of the
round being played (its actions are public: a draw from the stock does not say the card).
"""

from __future__ import annotations

import json
from typing import Any

from rami.engine import Phase
from rami.engine.cards import Card
from rami.engine.events import RoundResult

from .entries import Act, Entry
from .tablestate import FINISHED, TableSpec, TableState

__all__ = ["FORMAT", "record", "record_json"]

FORMAT = "rami-record/1"


def _codes(cards: Any) -> list[str]:
    return [Card(c).code() for c in cards]


def _result(r: RoundResult) -> dict[str, Any]:
    return {
        "ending": r.ending,
        "winner": r.winner,
        "points": list(r.points),
        "totals": list(r.totals),
        "multiplier": r.multiplier,
        "hands": [_codes(h) for h in r.hands],
    }


def record(table_id: str, spec: TableSpec, entries: list[Entry]) -> dict[str, Any]:
    """The record of a table, from its spec and log."""
    replay = TableState(table_id, spec)
    rounds: list[dict[str, Any]] = []
    seen_round = 0
    for number, entry in enumerate(entries, 1):
        replay.apply(entry)
        game = replay.game
        if game is None:
            continue
        if game.round != seen_round and game.phase in (Phase.DRAW, Phase.PLAY):
            seen_round = game.round
            rounds.append(
                {
                    "round": game.round,
                    "dealer": game.dealer,
                    "first_player": game.turn,
                    "seed_hash": game.seed_hash(),
                    "seed": None,
                    "deal": {
                        "hands": [_codes(h) for h in game.hands],
                        "discard": Card(game.discard[-1]).code(),
                        "stock": _codes(reversed(game.stock)),
                    },
                    "actions": [],
                    "result": None,
                }
            )
        if isinstance(entry, Act) and rounds:
            item = entry.to_dict()
            del item["type"]
            item = {"number": number, **item}
            rounds[-1]["actions"].append(item)
            if len(game.results) >= seen_round and rounds[-1]["result"] is None:
                r = game.results[seen_round - 1]
                rounds[-1]["result"] = _result(r)
                rounds[-1]["seed"] = r.seed or None
    complete = replay.status == FINISHED
    for rnd in rounds:
        if rnd["result"] is None:  # the round being played: its deal is still concealed
            rnd["deal"] = None
    game = replay.game
    return {
        "format": FORMAT,
        "table_id": table_id,
        "name": spec.name,
        "variant": spec.variant,
        "options": replay.options.to_dict(),
        "complete": complete,
        "players": [
            {"seat": i, "name": s.name, "kind": s.kind, "policy": s.policy}
            for i, s in enumerate(replay.seats)
        ],
        "rounds": rounds,
        "totals": list(game.totals) if game else [],
        "winners": list(game.winners) if game and complete else [],
    }


def record_json(table_id: str, spec: TableSpec, entries: list[Entry]) -> tuple[str, bool]:
    """The record as JSON text, and whether it is complete."""
    rec = record(table_id, spec, entries)
    return json.dumps(rec, ensure_ascii=False, indent=1), bool(rec["complete"])
