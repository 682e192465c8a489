"""Provably fair deals through a real server (docs/records.md, docs/operations.md promise 2):
the server commits to its deals before anyone joins, mixes in every player's entropy, keeps
nothing in its database that foretells a deal or a bot's choice, and its records let anyone
check every deal. The engine's own tests (tests/engine/test_fair.py) play the cheating server.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import stat
from pathlib import Path
from typing import Any

import grpc
import pytest
from server_support import RPC_TIMEOUT, error_of, md

from rami.client.botkit import play, policy_decider
from rami.engine import POLICIES, Game, NextRound, Phase, view
from rami.engine.record import replay_record
from rami.engine.rng import derive_seed
from rami.engine.serial import action_from_dict
from rami.engine.variants import Options
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

PORTUGUESE = game_pb2.VARIANT_PORTUGUESE
TALLAGE = game_pb2.VARIANT_TALLAGE


def _create(stubs: Stubs, variant: int = PORTUGUESE, **options: Any) -> tuple[Any, str]:
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="fair", variant=variant, options=game_pb2.Options(**options)
        ),
        timeout=RPC_TIMEOUT,
    )
    return created.table, created.owner_token


def _record(stubs: Stubs, table_id: str) -> dict[str, Any]:
    got = stubs.table.ExportRecord(
        table_service_pb2.ExportRecordRequest(table_id=table_id), timeout=RPC_TIMEOUT
    )
    return json.loads(got.record_json)


def _two_bots(srv: ServerThread, table_id: str) -> list[Any]:
    async def both() -> list[Any]:
        return await asyncio.gather(
            play(srv.target, table_id, policy_decider("greedy", 1), name="Ana"),
            play(srv.target, table_id, policy_decider("greedy", 2), name="Bo"),
        )

    return asyncio.run(asyncio.wait_for(both(), 90))


def test_deals_are_committed_before_anyone_joins_and_mix_every_players_entropy(
    tmp_path: Path,
) -> None:
    with ServerThread(str(tmp_path / "rami.db")) as srv, Stubs(srv.target) as stubs:
        table, _ = _create(stubs, players=2, rounds=2)
        assert re.fullmatch(r"[0-9a-f]{64}", table.deal_commitment)
        assert not table.stacked_deck
        listed = stubs.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=table.table_id), timeout=RPC_TIMEOUT
        ).table
        assert listed.deal_commitment == table.deal_commitment
        results = _two_bots(srv, table.table_id)
        doc = _record(stubs, table.table_id)
    assert doc["complete"]
    # The record shows the commitment every player saw before joining, and each one's entropy
    # at their seat: the bot kit sent 32 fresh bytes each.
    assert doc["deal"]["commitment"] == table.deal_commitment
    by_seat = sorted(results, key=lambda r: r.seat)
    assert all(r.deal_commitment == table.deal_commitment for r in by_seat)
    assert all(len(r.entropy) == 32 for r in by_seat)
    assert doc["deal"]["entropies"] == [r.entropy.hex() for r in by_seat]
    assert len({r.entropy for r in by_seat}) == 2
    # Every round's server seed hashes back to the commitment and, mixed with the entropies,
    # makes the round's seed, which deals the round's hands (the verifier checks it all).
    assert all(r["server_seed"] for r in doc["rounds"])
    assert replay_record(doc).phase == Phase.GAME_OVER


def _hex_values(db: Path) -> set[str]:
    """Every hexadecimal string of 32 characters or more anywhere in the table store."""
    found: set[str] = set()
    con = sqlite3.connect(db)
    try:
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in con.execute(f"SELECT * FROM {name}"):
                for value in row:
                    found.update(re.findall(r"[0-9a-f]{32,}", str(value)))
    finally:
        con.close()
    return found


def test_the_database_alone_foretells_no_deal(tmp_path: Path) -> None:
    """Whoever reads the table store (not the key file beside it) learns no seed: nothing in it
    deals a round, as a game seed or as a round's seed."""
    db = tmp_path / "rami.db"
    with ServerThread(str(db)) as srv, Stubs(srv.target) as stubs:
        table, _ = _create(stubs, players=2, rounds=2)
        _two_bots(srv, table.table_id)
        doc = _record(stubs, table.table_id)
    seeds = {bytes.fromhex(r["seed"]) for r in doc["rounds"]}
    secrets_ = seeds | {bytes.fromhex(r["server_seed"]) for r in doc["rounds"]}
    assert len(seeds) == 2
    stored = _hex_values(db)
    assert stored, "the store keeps hashes (tokens, the commitment)"
    for value in stored:
        raw = bytes.fromhex(value[: len(value) // 2 * 2])
        assert raw not in secrets_
        for r in (1, 2):
            assert derive_seed(raw, "round", r) not in seeds, "a stored value deals a round"
    # The key is a file of its own, readable by its owner only.
    key = Path(str(db) + ".key")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_text().strip() not in stored


def _bot_moves(doc: dict[str, Any], bot_seat: int) -> list[tuple[Any, Any]]:
    """Each move of the bot at ``bot_seat`` with the view it was chosen from, replayed from the
    record's revealed seeds."""
    options = Options.from_dict(doc["options"])
    seeds = [bytes.fromhex(r["seed"]) for r in doc["rounds"]]
    game, _ = Game.new(doc["variant"], options, b"unused", round_seeds=seeds)
    out = []
    for r in doc["rounds"]:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
        for item in r["actions"]:
            action = action_from_dict(item["action"])
            if item["seat"] == bot_seat:
                out.append((view(game, bot_seat), action))
            game.apply(item["seat"], action)
    return out


def test_a_random_bot_cannot_be_followed_from_the_public_table_id(tmp_path: Path) -> None:
    """The attack seeded a copy of the bot from the table id and seat, as the server did, and
    predicted its every move; the bot's choices now come from the table's secret."""
    import random

    with ServerThread(str(tmp_path / "rami.db")) as srv, Stubs(srv.target) as stubs:
        table, owner = _create(stubs, TALLAGE, players=2, target=201, round_cap=2)
        stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=table.table_id, policy="random", seat=1),
            metadata=md(owner),
            timeout=RPC_TIMEOUT,
        )
        asyncio.run(
            asyncio.wait_for(
                play(srv.target, table.table_id, policy_decider("greedy", 3), name="Ana"), 90
            )
        )
        doc = _record(stubs, table.table_id)
    moves = _bot_moves(doc, 1)
    assert len(moves) >= 20
    copy_rng = random.Random(f"{table.table_id}:1")
    predicted = sum(POLICIES["random"](v, copy_rng) == action for v, action in moves)
    assert predicted < len(moves) * 0.9, (predicted, len(moves))


def test_entropy_longer_than_64_bytes_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    with ServerThread(str(tmp_path / "rami.db")) as srv, Stubs(srv.target) as stubs:
        table, _ = _create(stubs, players=2)
        with pytest.raises(grpc.RpcError) as e:
            stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(
                    table_id=table.table_id, name="Ana", entropy=b"x" * 65
                ),
                timeout=RPC_TIMEOUT,
            )
        err = error_of(e.value)
        assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_ENTROPY")
        after = stubs.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=table.table_id), timeout=RPC_TIMEOUT
        ).table
        assert after.number == table.number
        assert all(s.kind == game_pb2.SEAT_KIND_EMPTY for s in after.seats)
        # 64 bytes, and none at all, are fine.
        for name, entropy in (("Ana", b"y" * 64), ("Bo", b"")):
            stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(
                    table_id=table.table_id, name=name, entropy=entropy
                ),
                timeout=RPC_TIMEOUT,
            )


def test_a_stacked_deck_table_says_so(tmp_path: Path) -> None:
    from server_support import stacked_deck

    with ServerThread(str(tmp_path / "rami.db")) as srv, Stubs(srv.target) as stubs:
        created = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="puzzle",
                variant=PORTUGUESE,
                options=game_pb2.Options(players=2),
                stacked_decks=[stacked_deck("portuguese", 2, {}, "Ac")],
            ),
            timeout=RPC_TIMEOUT,
        )
        assert created.table.stacked_deck
        listed = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=RPC_TIMEOUT)
        assert [t.stacked_deck for t in listed.tables] == [True]


def test_a_restart_deals_on_from_the_key_and_a_changed_key_is_named(tmp_path: Path) -> None:
    db = tmp_path / "rami.db"
    srv = ServerThread(str(db)).start()
    try:
        with Stubs(srv.target) as stubs:
            table, _ = _create(stubs, players=2, rounds=2)
            first = _two_bots_until_round(srv, table.table_id, 2)
            srv.halt()
            srv.start()
            # The same key: the table is restored, and its game goes on to a record that checks.
            _finish(srv, table.table_id, first)
            doc = _record(stubs, table.table_id)
            assert doc["complete"] and replay_record(doc).phase == Phase.GAME_OVER
            # A waiting table, then another key: the server cannot deal it, and says so.
            waiting, _ = _create(stubs, players=2)
            stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=waiting.table_id, name="Ana"),
                timeout=RPC_TIMEOUT,
            )
        srv.halt()
        # Another key: the server would deal none of the database's tables, and says so at
        # start, refusing it (it used to start, leaving every table out, still listed).
        key = Path(str(db) + ".key")
        kept = key.read_bytes()
        key.write_text("ab" * 32 + "\n")
        with pytest.raises(OSError, match="restore the key file kept with the database"):
            srv.start()
        key.write_bytes(kept)  # the key restored: the waiting table is dealt again
        srv.start()
        with Stubs(srv.target) as stubs:
            got = stubs.lobby.GetTable(
                lobby_service_pb2.GetTableRequest(table_id=waiting.table_id), timeout=RPC_TIMEOUT
            )
            assert [p.name for p in got.table.seats if p.name] == ["Ana"], got
    finally:
        srv.stop()


def _two_bots_until_round(srv: ServerThread, table_id: str, round_: int) -> list[str]:
    """Seat two players and play until round ``round_`` is dealt; their tokens."""
    with Stubs(srv.target) as stubs:
        tokens = [
            stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(
                    table_id=table_id, name=name, entropy=bytes([i]) * 32
                ),
                timeout=RPC_TIMEOUT,
            ).token
            for i, name in enumerate(("Ana", "Bo"))
        ]

    async def until() -> None:
        tasks = [
            asyncio.create_task(
                play(srv.target, table_id, policy_decider("greedy", i), token=t, name="x")
            )
            for i, t in enumerate(tokens)
        ]
        try:
            async with grpc.aio.insecure_channel(srv.target) as ch:
                from rami.v1 import table_service_pb2_grpc

                stub = table_service_pb2_grpc.TableServiceStub(ch)
                async for m in stub.Watch(table_service_pb2.WatchRequest(table_id=table_id)):
                    if m.HasField("update") and m.update.view.round >= round_:
                        return
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(asyncio.wait_for(until(), 60))
    return tokens


def _finish(srv: ServerThread, table_id: str, tokens: list[str]) -> None:
    async def both() -> None:
        await asyncio.gather(
            *(
                play(srv.target, table_id, policy_decider("greedy", i), token=t, name="x")
                for i, t in enumerate(tokens)
            )
        )

    asyncio.run(asyncio.wait_for(both(), 90))
