"""Game records as the server exports them: the same document as the table's log always wrote,
for complete games and games in progress, and one that replays."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

import pytest

from rami.engine import POLICIES, Phase, view
from rami.engine.cards import Card, full_deck
from rami.engine.events import RoundResult
from rami.engine.record import replay_record
from rami.engine.serial import action_to_dict
from rami.engine.variants import Options, get_variant
from rami.server.entries import entry_from_dict
from rami.server.records import record, record_inputs, record_json
from rami.server.tablestate import FINISHED, TableSpec, TableState, table_turn_cap

# -- the record as the server wrote it before the engine did (kept as the reference) ----------


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


def reference_record(state: TableState, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The record of a table, from its spec and log, as the server built it by replaying its
    TableState."""
    replay = TableState(state.table_id, state.spec, secret=state.secret)
    rounds: list[dict[str, Any]] = []
    seen_round = 0
    for number, entry in enumerate(entries, 1):
        replay.apply(entry_from_dict(entry))
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
                    "server_seed": None,
                    "deal": {
                        "hands": [_codes(h) for h in game.hands],
                        "discard": Card(game.discard[-1]).code(),
                        "stock": _codes(reversed(game.stock)),
                    },
                    "actions": [],
                    "result": None,
                }
            )
        if entry["type"] == "act" and rounds:
            item = {"number": number, "seat": entry["seat"], "action": entry["action"]}
            if "auto" in entry:
                item["auto"] = entry["auto"]
            rounds[-1]["actions"].append(item)
            if len(game.results) >= seen_round and rounds[-1]["result"] is None:
                r = game.results[seen_round - 1]
                rounds[-1]["result"] = _result(r)
                rounds[-1]["seed"] = r.seed or None
                rounds[-1]["server_seed"] = r.server_seed or None
    complete = replay.status == FINISHED
    for rnd in rounds:
        if rnd["result"] is None:
            rnd["deal"] = None
    game = replay.game
    return {
        "format": "rami-record/1",
        "table_id": state.table_id,
        "name": state.spec.name,
        "variant": state.spec.variant,
        "options": replay.options.to_dict(),
        "turn_cap": state.spec.turn_cap,
        "complete": complete,
        "players": [
            {"seat": i, "name": s.name, "kind": s.kind, "policy": s.policy}
            for i, s in enumerate(replay.seats)
        ],
        "deal": _deal(replay),
        "rounds": rounds,
        "totals": list(game.totals) if game else [],
        "winners": list(game.winners) if game and complete else [],
    }


def _deal(state: TableState) -> dict[str, Any] | None:
    """A fair table's commitment, its chain's length and (once started) every seat's entropy."""
    if not state.spec.deal_commitment:
        return None
    v = get_variant(state.spec.variant)
    rounds = state.options.rounds if v.game_end == "rounds" else state.options.round_cap
    started = state.game is not None
    return {
        "commitment": state.spec.deal_commitment,
        "rounds": rounds,
        "entropies": [s.entropy for s in state.seats] if started else None,
        "stacked": len(state.spec.decks),
    }


# -- random tables ----------------------------------------------------------------------------

VARIANTS = ("portuguese", "tallage", "simple")


def _table(seed: int) -> tuple[TableSpec, list[dict[str, Any]]]:
    """A seeded table's spec and log: seats taken and left, chat, a start, the game played by
    random bots (some moves by the clock), and the next deals, to the game's end. Most tables
    are dealt fairly (their secret is ``_secret(seed)``), some from a game seed, as tables made
    before fair deals were."""
    rng = random.Random(f"records/{seed}")
    variant = VARIANTS[seed % 3]
    seats = rng.choice((2, 3, 4))
    options = {"players": seats, "rounds": 2, "target": 201, "round_cap": rng.choice((2, 3))}
    decks: tuple[tuple[str, ...], ...] = ()
    if rng.random() < 0.25:
        v = get_variant(variant)
        deck = full_deck(v.decks, v.jokers)
        rng.shuffle(deck)
        decks = (tuple(c.code() for c in deck),)
    # Tables stored before the turn cap have none (0); new ones, the server's.
    cap = table_turn_cap(Options.from_dict(options)) if seed % 2 else 0
    spec = TableSpec(
        f"table {seed}", variant, Options.from_dict(options), decks=decks, turn_cap=cap
    )
    fair = rng.random() < 0.75
    if fair:
        commitment = TableState(f"t{seed}", spec, secret=_secret(seed)).fair_deal().commitment
        spec = replace(spec, deal_nonce="n", deal_commitment=commitment)
    entries: list[dict[str, Any]] = []
    state = TableState(f"t{seed}", spec, secret=_secret(seed))

    def add(entry: dict[str, Any]) -> None:
        state.apply(entry_from_dict(entry))
        entries.append(entry)

    for seat in range(seats):
        if rng.random() < 0.5:
            add({"type": "bot", "seat": seat, "name": f"bot {seat}", "policy": "random"})
        else:
            join = {"type": "join", "seat": seat, "name": f"p{seat}", "token": f"h{seat}"}
            if rng.random() < 0.7:
                join["entropy"] = rng.randbytes(rng.choice((1, 32, 64))).hex()
            add(join)
        if rng.random() < 0.2:
            add({"type": "chat", "seat": seat, "text": "hello"})
    if seats > 2 and rng.random() < 0.3:
        add({"type": "leave", "seat": seats - 1})  # the game starts with one seat fewer
    add({"type": "start"} if fair else {"type": "start", "seed": rng.randbytes(32).hex()})
    game = state.game
    assert game is not None
    policy = POLICIES["random"]
    while game.phase != Phase.GAME_OVER and len(entries) < 3000:
        if game.phase == Phase.ROUND_OVER:
            add({"type": "next"})
            continue
        seat = game.turn
        entry: dict[str, Any] = {
            "type": "act",
            "seat": seat,
            "action": action_to_dict(policy(view(game, seat), rng)),
        }
        if rng.random() < 0.05:
            entry["auto"] = rng.choice(("timeout", "away"))
        add(entry)
        if rng.random() < 0.02:
            add({"type": "chat", "seat": seat, "text": "gg"})
        if rng.random() < 0.01 and game.phase != Phase.GAME_OVER:
            add({"type": "leave", "seat": seat})
            add({"type": "return", "seat": seat})
    return spec, entries


def _secret(seed: int) -> bytes:
    return random.Random(f"secret {seed}").randbytes(32)


def _state(table_id: str, spec: TableSpec, entries: list[dict[str, Any]]) -> TableState:
    state = TableState(table_id, spec, secret=_secret(int(table_id[1:])))
    for entry in entries:
        state.apply(entry_from_dict(entry))
    return state


@pytest.mark.parametrize("seed", range(24))
def test_the_record_of_a_table_is_the_one_its_log_always_gave(seed: int) -> None:
    spec, entries = _table(seed)
    rng = random.Random(seed)
    # The whole game, and the game cut at points along the way (in progress, before the start,
    # right after a deal and right after a round's end).
    cuts = {len(entries), 0, 1, *rng.sample(range(len(entries)), min(8, len(entries)))}
    for i, entry in enumerate(entries):
        if entry["type"] in ("start", "next"):
            cuts.update((i, i + 1))
    for cut in sorted(cuts):
        log = entries[:cut]
        state = _state(f"t{seed}", spec, log)
        assert record(state) == reference_record(state, log), (seed, cut)


def test_a_complete_record_replays_to_the_same_game() -> None:
    replayed = 0
    for seed in range(24):
        spec, entries = _table(seed)
        state = _state(f"t{seed}", spec, entries)
        text, complete = record_json(record_inputs(state))
        doc = json.loads(text)
        assert complete == (state.status == FINISHED) == doc["complete"]
        # A stacked round reveals its seed too once it is over (its stock rebuilds are
        # shuffled from it): stacked games replay whole as well.
        if not complete:
            continue
        game = replay_record(doc)
        assert state.game is not None
        assert game.totals == state.game.totals
        assert [r.points for r in game.results] == [r.points for r in state.game.results]
        assert game.phase == state.game.phase == Phase.GAME_OVER
        replayed += 1
    assert replayed >= 8
