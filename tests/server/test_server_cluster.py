"""Several ``rami-server`` processes on one PostgreSQL (a real one, started by the tests):
leases with fencing, takeovers, the redirect of a table's calls to its owner, handover at
SIGTERM, and servers killed mid-game while remote bots play on."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from postgres_support import Gate
from server_support import RPC_TIMEOUT, error_of, md, rami_server

from rami.client.botkit import BotResult, play, policy_decider
from rami.client.link import moved_to
from rami.engine.record import replay_record
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

T = TypeVar("T")


def run(coro: Callable[[], Awaitable[T]], timeout: float = 120) -> T:
    return asyncio.run(asyncio.wait_for(coro(), timeout))


async def _open(url: str, name: str, lease: float) -> Any:
    from rami.server.lobby import summarize
    from rami.server.storage_postgres import PostgresStorage

    return await PostgresStorage.open(
        url, summarize, server_id=name, address=f"{name}:1", lease_seconds=lease
    )


def _spec() -> dict[str, Any]:
    return {
        "name": "t",
        "variant": "tallage",
        "options": {"players": 2},
        "private": False,
        "hand_analysis": True,
        "owner_hash": "",
        "decks": [],
        "client": "c",
    }


def _entry(i: int) -> dict[str, Any]:
    return {"type": "chat", "seat": 0, "text": f"line {i}"}


# -- the leases, on the storage itself ---------------------------------------------------------


def test_a_fenced_append_stores_nothing_and_names_the_new_owner(postgres_url: str) -> None:
    from rami.server.storage import Append, Fenced, Lease

    async def go() -> None:
        a = await _open(postgres_url, "a", 0.4)
        b = await _open(postgres_url, "b", 0.4)
        try:
            await a.create_table("t1", _spec(), [], "")
            await a.append(Append("t1", 1, [_entry(1)], "waiting", None, None, epoch=0))
            # Held by its creator: another server is sent there.
            assert await b.claim("t1") == Lease(None, "a:1")
            assert await b.owner_of("t1") == ("a:1", False)
            assert await a.owner_of("t1") == ("a:1", True)
            assert await a.renew({"t1": 0}) == []
            await asyncio.sleep(0.6)  # a stops renewing: the lease runs out
            assert await b.claimable() == ["t1"]
            assert await b.claim("t1") == Lease(1)
            assert await a.claim("t1") == Lease(None, "b:1")
            # The old owner's next write fails on the epoch, storing nothing...
            with pytest.raises(Fenced) as fenced:
                await a.append(Append("t1", 2, [_entry(2)], "waiting", None, None, epoch=0))
            assert fenced.value.owner == "b:1"
            # ... and its renewal finds the lease lost.
            assert await a.renew({"t1": 0}) == ["t1"]
            await b.append(Append("t1", 2, [_entry(3)], "waiting", None, None, epoch=1))
            stored = await b.load_table("t1")
            assert [e["text"] for e in stored.entries] == ["line 1", "line 3"]
            # Released, it is claimed at once, at the next epoch.
            await b.release({"t1": 1})
            assert await a.claim("t1") == Lease(2)
            assert await b.claim("nope") is None
        finally:
            await a.close()
            await b.close()

    run(go)


def test_servers_racing_to_claim_one_orphaned_table_exactly_one_wins(postgres_url: str) -> None:
    async def go() -> None:
        racers = [await _open(postgres_url, f"s{i}", 30.0) for i in range(6)]
        try:
            for n in range(8):
                await racers[0].create_table(f"t{n}", _spec(), [], "")
                await racers[0].release({f"t{n}": 0})  # orphaned
            for n in range(8):
                leases = await asyncio.gather(*(r.claim(f"t{n}") for r in racers))
                winners = [i for i, lease in enumerate(leases) if lease.epoch is not None]
                assert len(winners) == 1, leases
                owner = f"s{winners[0]}:1"
                assert all(lease.owner == owner for lease in leases if lease.epoch is None)
                assert leases[winners[0]].epoch == 1
        finally:
            for r in racers:
                await r.close()

    run(go)


def test_a_table_that_cannot_be_rebuilt_is_claimed_once_not_at_every_sweep(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A damaged log (or one a newer server wrote, which this code cannot replay) was claimed,
    # failed, released and claimed again at every sweep, a third of a lease apart: an ERROR
    # each time, and the table's epoch counting up for as long as the server ran.
    from rami.server.lobby import Lobby, LobbyConfig
    from rami.server.refusals import NotFound
    from rami.server.table import TableConfig

    async def go() -> None:
        a = await _open(postgres_url, "a", 0.4)
        b = await _open(postgres_url, "b", 0.4)
        lobby = Lobby(b, LobbyConfig(), TableConfig())
        try:
            await a.create_table("bad", _spec(), [], "")
            await a.append(Append("bad", 1, [{"type": "nonsense"}], "waiting", None, None, epoch=0))
            await a.release({"bad": 0})
            with caplog.at_level(logging.ERROR, logger="rami.server"):
                for _ in range(3):
                    assert await lobby.restore(share=True) == 0
            assert "bad" not in lobby.tables
            said = [r for r in caplog.records if "could not be rebuilt" in r.getMessage()]
            assert len(said) == 1, said
            assert "claims it no more" in said[0].getMessage()
            with pytest.raises(NotFound):  # a client's call: no claim either
                await lobby.get("bad")
            assert _lease(postgres_url, "bad")[1] == 1  # claimed once, released
            # Another server may still take it (a newer one may read what this one cannot).
            assert await a.claim("bad") == Lease(2)
        finally:
            lobby.close()
            await lobby.closing()
            await a.close()
            await b.close()

    from rami.server.storage import Append, Lease

    run(go)


def test_a_database_of_version_1_is_migrated_and_its_tables_claimed(postgres_url: str) -> None:
    import psycopg

    from rami.server.storage import Append, Lease
    from rami.server.storage_postgres import PG_SCHEMA_VERSION

    async def go() -> None:
        a = await _open(postgres_url, "a", 5.0)
        await a.create_table("old", _spec(), [], "")
        await a.close()
        # As version 1 left it: no leases, no epochs.
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as c:
            await c.execute("DROP TABLE rami_leases")
            await c.execute("ALTER TABLE rami_tables DROP COLUMN epoch")
            await c.execute("UPDATE rami_schema SET version = 1")
        b = await _open(postgres_url, "b", 5.0)
        try:
            assert await b.claimable() == ["old"]
            assert await b.claim("old") == Lease(1)
            await b.append(Append("old", 1, [_entry(1)], "waiting", None, None, epoch=1))
        finally:
            await b.close()
        async with await psycopg.AsyncConnection.connect(postgres_url) as c:
            cur = await c.execute("SELECT version FROM rami_schema")
            assert (await cur.fetchone())[0] == PG_SCHEMA_VERSION == 2

    run(go)


# -- real servers ------------------------------------------------------------------------------


class Stubs:
    def __init__(self, address: str) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(self.channel)
        self.table = table_service_pb2_grpc.TableServiceStub(self.channel)

    async def close(self) -> None:
        await self.channel.close(None)


def _args(key: Path, lease: float, *more: str) -> tuple[str, ...]:
    return ("--secret-file", str(key), "--lease-seconds", str(lease), "--log-level", "info", *more)


async def _create(stubs: Stubs, rounds: int = 2, bots: int = 0) -> tuple[str, str]:
    created = await stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="cluster",
            variant=game_pb2.VARIANT_PORTUGUESE,
            options=game_pb2.Options(players=2, rounds=rounds),
        ),
        timeout=RPC_TIMEOUT,
    )
    table_id, owner = created.table.table_id, created.owner_token
    for _ in range(bots):
        await stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy"),
            metadata=md(owner),
            timeout=RPC_TIMEOUT,
        )
    return table_id, owner


async def _refusal(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    try:
        await call
    except grpc.aio.AioRpcError as e:
        return e
    raise AssertionError("not refused")


def _log_has(log: Path, text: str) -> bool:
    return text in log.read_text()


async def _true(value: bool) -> bool:
    return value


async def _until(what: Callable[[], Awaitable[bool]], timeout: float, step: float = 0.1) -> None:
    end = time.monotonic() + timeout
    while not await what():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        await asyncio.sleep(step)


def test_a_client_at_a_server_that_does_not_play_the_table_plays_a_whole_game(
    tmp_path: Path, postgres_url: str
) -> None:
    key, log = tmp_path / "key", tmp_path / "log"
    with (
        rami_server(postgres_url, log, args=_args(key, 2.0)) as (_, a),
        rami_server(postgres_url, log, args=_args(key, 2.0)) as (_, b),
    ):

        async def go() -> None:
            at_a, at_b = Stubs(a), Stubs(b)
            try:
                # Two rounds: each kit plays even if a round ends on its first turn.
                table_id, _ = await _create(at_a, rounds=2)
                # A CreateTable sent again to another server gets the table its first copy
                # made (played by the first server).
                request = lobby_service_pb2.CreateTableRequest(
                    name="again",
                    variant=game_pb2.VARIANT_PORTUGUESE,
                    options=game_pb2.Options(players=2, rounds=1),
                    request_id="r" * 30,
                )
                first = await at_a.lobby.CreateTable(request)
                again = await at_b.lobby.CreateTable(request)
                assert again.table.table_id == first.table.table_id
                assert again.owner_token == first.owner_token
                # The lobby answers on any server; a table call is sent to the owner.
                listed = await at_b.lobby.ListTables(lobby_service_pb2.ListTablesRequest())
                assert table_id in [t.table_id for t in listed.tables]
                e = await _refusal(
                    at_b.table.Watch(table_service_pb2.WatchRequest(table_id=table_id)).read()
                )
                assert e.code() == grpc.StatusCode.UNAVAILABLE
                assert error_of(e).reason == "TABLE_MOVED"
                assert moved_to(e) == a
                # Two bot kits given the other server: they join and play there, at the owner.
                results = await asyncio.gather(
                    play(b, table_id, policy_decider("greedy", 1), name="Ana"),
                    play(b, table_id, policy_decider("greedy", 2), name="Rui", stream=False),
                )
                for r in results:
                    assert r.final is not None and r.final.phase == game_pb2.PHASE_GAME_OVER
                    assert not r.refused and r.actions > 0
                record = await at_a.table.ExportRecord(
                    table_service_pb2.ExportRecordRequest(table_id=table_id)
                )
                assert record.complete
                replay_record(json.loads(record.record_json))
            finally:
                await at_a.close()
                await at_b.close()

        run(go)


def _entries(url: str, table_id: str) -> list[dict[str, Any]]:
    import psycopg

    with psycopg.connect(url) as c:
        rows = c.execute(
            "SELECT number, entry FROM rami_entries WHERE table_id = %s ORDER BY number",
            (table_id,),
        ).fetchall()
    assert [n for n, _ in rows] == list(range(1, len(rows) + 1))
    return [json.loads(e) for _, e in rows]


def _lease(url: str, table_id: str) -> tuple[str, int]:
    import psycopg

    with psycopg.connect(url) as c:
        row = c.execute(
            "SELECT l.address, t.epoch FROM rami_leases l JOIN rami_tables t USING (table_id)"
            " WHERE table_id = %s",
            (table_id,),
        ).fetchone()
    assert row is not None
    return str(row[0]), int(row[1])


def test_a_paused_owner_cannot_append_after_the_takeover(tmp_path: Path, postgres_url: str) -> None:
    key, log_a, log_b = tmp_path / "key", tmp_path / "a.log", tmp_path / "b.log"
    with (
        rami_server(postgres_url, log_a, args=_args(key, 1.0)) as (proc_a, a),
        rami_server(postgres_url, log_b, args=_args(key, 1.0)) as (_, b),
    ):

        async def go() -> None:
            at_a, at_b = Stubs(a), Stubs(b)
            try:
                # Built-in bots play at a's table on their own.
                table_id, _ = await _create(at_a, rounds=3, bots=2)
                await _until(lambda: _at(at_a, table_id, 4), 20)
                os.kill(proc_a.pid, signal.SIGSTOP)
                try:
                    # Past its lease: b claims the table and plays on.
                    await _until(lambda: _claimed(postgres_url, table_id, b), 15)
                    claimed_at = len(_entries(postgres_url, table_id))
                    await _until(lambda: _grown(postgres_url, table_id, claimed_at + 2), 15)
                finally:
                    os.kill(proc_a.pid, signal.SIGCONT)
                # a wakes up: its next write is fenced (or its renewal finds the lease
                # gone), it drops the table and sends its clients to b.
                await _until(
                    lambda: _said(log_a, "fenced off", "its lease was taken over"), 15, 0.2
                )
                e = await _refusal(
                    at_a.table.Watch(table_service_pb2.WatchRequest(table_id=table_id)).read()
                )
                assert error_of(e).reason == "TABLE_MOVED" and moved_to(e) == b
                # The game goes on at b; the log has no fork: every entry, whoever wrote it,
                # applies in order on one state.
                woke_at = len(_entries(postgres_url, table_id))
                await _until(lambda: _grown(postgres_url, table_id, woke_at + 2), 15)
                assert _lease(postgres_url, table_id) == (b, 1)
                _replays(postgres_url, key, table_id)
            finally:
                await at_a.close()
                await at_b.close()

        run(go)


async def _at(stubs: Stubs, table_id: str, number: int) -> bool:
    info = await stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id))
    return info.table.number >= number


async def _finished(stubs: Stubs, table_id: str) -> bool:
    info = await stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id))
    return info.table.status == lobby_service_pb2.TABLE_STATUS_FINISHED


async def _claimed(url: str, table_id: str, by: str) -> bool:
    return _lease(url, table_id) == (by, 1)


async def _grown(url: str, table_id: str, number: int) -> bool:
    return len(_entries(url, table_id)) >= number


async def _said(log: Path, *texts: str) -> bool:
    return any(_log_has(log, t) for t in texts)


def _replays(url: str, key: Path, table_id: str) -> int:
    """Rebuild a table from its stored log (as a server loads it); its number."""
    import psycopg

    from rami.server.dealing import ServerKey
    from rami.server.lobby import rebuild

    with psycopg.connect(url) as c:
        row = c.execute("SELECT spec FROM rami_tables WHERE table_id = %s", (table_id,)).fetchone()
    assert row is not None
    spec = json.loads(row[0])
    secret = ServerKey.for_store(url, str(key)).table_secret(table_id, spec.get("deal_nonce", ""))
    entries = _entries(url, table_id)
    return rebuild(table_id, spec, entries, secret).number


async def _watch_all(home: str, table_id: str) -> list[int]:
    """Every update number a spectator sees of a table to its end, resuming after the last
    one it saw wherever the table is played (following TABLE_MOVED, or back to ``home``)."""
    seen: list[int] = []
    at = home
    for _ in range(400):
        channel = grpc.aio.insecure_channel(at)
        stub = table_service_pb2_grpc.TableServiceStub(channel)
        after = seen[-1] if seen else 0
        try:
            async for msg in stub.Watch(
                table_service_pb2.WatchRequest(table_id=table_id, after=after)
            ):
                if not msg.HasField("update"):
                    continue
                seen.append(msg.update.number)
                if msg.update.view.phase == game_pb2.PHASE_GAME_OVER:
                    return seen
        except grpc.aio.AioRpcError as e:
            owner = moved_to(e)
            at = owner or home
        finally:
            await channel.close(None)
        await asyncio.sleep(0.1)
    raise AssertionError(f"table {table_id}: the watcher gave up after {seen[-1:]}")


def test_servers_killed_mid_game_their_tables_finish_on_the_survivor(
    tmp_path: Path, postgres_url: str
) -> None:
    key, tables = tmp_path / "key", 30
    logs = [tmp_path / f"s{i}.log" for i in range(3)]
    # All 30 tables are made from one address (this test): the limits per client are lifted.
    more = ("--max-tables-per-client", "100", "--table-creations-per-second", "0")
    with (
        rami_server(postgres_url, logs[0], args=_args(key, 1.5, *more)) as (proc_a, a),
        rami_server(postgres_url, logs[1], args=_args(key, 1.5, *more)) as (proc_b, b),
        rami_server(postgres_url, logs[2], args=_args(key, 1.5, *more)) as (_, c),
    ):
        # What a load balancer would be: any server that answers.
        home = "ipv4:" + ",".join((a, b, c))

        async def go() -> None:
            servers = [Stubs(x) for x in (a, b, c)]
            try:
                # Placed on the server that created each: ten tables each.
                ids = [(await _create(servers[n % 3], rounds=3))[0] for n in range(tables)]
                bots = [
                    asyncio.ensure_future(
                        play(home, t, policy_decider("greedy", 10 * n + s), name=f"B{s}")
                    )
                    for n, t in enumerate(ids)
                    for s in range(2)
                ]
                watchers = [asyncio.ensure_future(_watch_all(home, t)) for t in ids]
                at_c = servers[2]
                await _until(lambda: _all_at(at_c, ids, 12), 40, 0.2)
                os.kill(proc_a.pid, signal.SIGKILL)  # no goodbye
                killed = time.monotonic()
                # a's tables are taken over (by b or c) within the lease and a sweep...
                await _until(lambda: _all_claimed(postgres_url, ids[0::3], a), 15, 0.2)
                taken = time.monotonic() - killed
                assert taken < 1.5 + 3.0, taken
                # ... then b dies too, with some of them.
                os.kill(proc_b.pid, signal.SIGKILL)
                results: list[BotResult] = await asyncio.gather(*bots)
                seen = await asyncio.gather(*watchers)
                said = "".join(log.read_text() for log in logs)
                for n, table_id in enumerate(ids):
                    # b and c raced for a's tables: one of them won each epoch.
                    _, epoch = _lease(postgres_url, table_id)
                    for e in range(1, epoch + 1):
                        assert said.count(f"table {table_id}: claimed at epoch {e}\n") == 1
                    _check_table(postgres_url, key, table_id, results[2 * n : 2 * n + 2], seen[n])
                    assert _lease(postgres_url, table_id)[0] == c
                    record = await at_c.table.ExportRecord(
                        table_service_pb2.ExportRecordRequest(table_id=table_id)
                    )
                    assert record.complete
                    replay_record(json.loads(record.record_json))
            finally:
                for s in servers:
                    await s.close()

        run(go, 150)


async def _all_at(stubs: Stubs, ids: list[str], number: int) -> bool:
    for t in ids:
        if not await _at(stubs, t, number):
            return False
    return True


async def _all_claimed(url: str, ids: list[str], dead: str) -> bool:
    return all(_lease(url, t)[0] != dead for t in ids)


def _check_table(
    url: str, key: Path, table_id: str, bots: list[BotResult], seen: list[int]
) -> None:
    entries = _entries(url, table_id)  # numbered 1, 2, ... with no gap
    assert _replays(url, key, table_id) == len(entries)
    # A resuming watcher saw every update exactly once, in order.
    assert seen == list(range(1, len(entries) + 1)), (table_id, seen)
    acts = [(n, e) for n, e in enumerate(entries, 1) if e["type"] == "act"]
    # None applied twice: each command's request id is in the log once.
    keys = [e["request"] for _, e in acts if "request" in e]
    assert len(keys) == len(set(keys))
    for bot in bots:
        assert bot.final is not None and bot.final.phase == game_pb2.PHASE_GAME_OVER
        assert not bot.refused
        mine = {n for n, e in acts if e["seat"] == bot.seat and not e.get("auto")}
        # Every acknowledged command is in the log at its number (and every one stored was
        # acknowledged).
        assert set(bot.acknowledged) == mine, (table_id, bot.seat)


# SIGHUP: the terminal a server was started from closed (it stops as at SIGTERM; it used to
# die on the spot, its tables waiting out their leases).
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_hands_the_tables_over_at_once(
    tmp_path: Path, postgres_url: str, sig: signal.Signals
) -> None:
    key, log_a, log_b = tmp_path / "key", tmp_path / "a.log", tmp_path / "b.log"
    lease = 6.0
    with (
        rami_server(postgres_url, log_a, args=_args(key, lease)) as (proc_a, a),
        rami_server(postgres_url, log_b, args=_args(key, lease)) as (_, b),
    ):

        async def go() -> None:
            at_a = Stubs(a)
            try:
                table_id, _ = await _create(at_a, rounds=3, bots=2)
                await _until(lambda: _at(at_a, table_id, 3), 20)
                watch = at_a.table.Watch(table_service_pb2.WatchRequest(table_id=table_id))
                await watch.read()  # its snapshot
                os.kill(proc_a.pid, sig)
                stopped = time.monotonic()
                # The stream ends TABLE_MOVED (no owner yet: call again on any server).
                while True:
                    try:
                        msg = await asyncio.wait_for(watch.read(), 10)
                    except grpc.aio.AioRpcError as e:
                        assert error_of(e).reason == "TABLE_MOVED" and moved_to(e) == ""
                        break
                    assert msg is not grpc.aio.EOF
                # Claimed by b at its next sweep (a third of a lease), not after the lease.
                await _until(lambda: _claimed(postgres_url, table_id, b), lease)
                assert time.monotonic() - stopped < lease / 3 + 1.5
                assert proc_a.wait(10) == 0
                assert _log_has(log_a, "released the lease of 1 table")
            finally:
                await at_a.close()

        run(go)


def test_two_live_servers_advertising_one_address_are_told_in_the_log(
    tmp_path: Path, postgres_url: str
) -> None:
    """A server at one address replaces the dead one there: it takes its tables at once. A
    second live server given the first one's address (--advertise copied from its
    configuration) takes them as well, and the two take the tables from each other; nothing
    said so, while the games stalled. The server that loses a table to its own address says
    what is wrong, and the lease going back and forth is no longer logged as a takeover.
    And it takes no table by its address from then on: before, the two went on taking the
    tables from each other, every third of a lease, for as long as both ran."""
    key, log_a, log_c = tmp_path / "key", tmp_path / "a.log", tmp_path / "c.log"
    said = "another server that advertises this server's address"

    def told() -> int:
        return sum(log.read_text().count(said) for log in (log_a, log_c))

    with rami_server(postgres_url, log_a, args=_args(key, 2.0)) as (_, a):

        async def made() -> None:
            at_a = Stubs(a)
            try:
                await _create(at_a, rounds=3, bots=2)
            finally:
                await at_a.close()

        run(made)
        with rami_server(postgres_url, log_c, args=_args(key, 2.0, "--advertise", a)):

            async def settled() -> None:
                await _until(lambda: _said(log_a, said), 20)
                await asyncio.sleep(2.0)  # a lease: each server has renewed and swept thrice
                first = told()
                await asyncio.sleep(6.0)
                assert told() == first, f"the table went on changing hands: {told()} times"

            run(settled)
    assert "its lease was taken over" not in log_a.read_text()


def test_rami_client_s_link_follows_the_table_to_its_owner(
    tmp_path: Path, postgres_url: str
) -> None:
    from rami.client.link import Link

    key, log = tmp_path / "key", tmp_path / "log"
    with (
        rami_server(postgres_url, log, args=_args(key, 2.0)) as (_, a),
        rami_server(postgres_url, log, args=_args(key, 2.0)) as (_, b),
    ):

        async def go() -> None:
            at_a = Stubs(a)
            link = Link(b)
            try:
                table_id, _ = await _create(at_a, rounds=1, bots=1)
                joined = await link.call(
                    link.lobby.JoinTable,
                    lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Ana"),
                )
                assert link.at == a and link.target == b
                statuses: list[str] = []
                async for update in link.updates(table_id, joined.token, statuses.append):
                    assert update.snapshot  # the game started with the join
                    break
            finally:
                await link.close()
                await at_a.close()

        run(go)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--lease-seconds", "0"), "--lease-seconds is from 0.3 to 3600"),
        (("--lease-seconds", "5000"), "--lease-seconds is from 0.3 to 3600"),
        (("--advertise", "nowhere"), "--advertise 'nowhere' is not HOST:PORT"),
        (("--advertise", "host:70000"), "--advertise 'host:70000' is not HOST:PORT"),
        # Clients are sent to it as a gRPC target: a URL's scheme would be read as a host.
        (("--advertise", "http://host:50051"), "--advertise 'http://host:50051' is not HOST:PORT"),
        (("--advertise", "host/x:50051"), "--advertise 'host/x:50051' is not HOST:PORT"),
    ],
)
def test_bad_lease_and_advertise_flags_are_refused_in_words(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    import subprocess

    from server_support import SERVER

    # Checked before the database is reached: this one is never connected to.
    db = "postgresql://rami@127.0.0.1:1/rami"
    done = subprocess.run(
        [str(SERVER), "--db", db, "--secret-file", str(tmp_path / "key"), "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert said in done.stderr


# -- the database out of reach: health --------------------------------------------------------


def test_health_says_not_serving_while_the_database_is_out_of_reach(
    tmp_path: Path, postgres_url: str
) -> None:
    """A load balancer asks the health service which servers to send clients to: one that
    cannot reach the database can neither store a move nor renew a lease, and says so until
    it can again. The rules service needs no database and serves on."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    serving, not_serving = (
        health_pb2.HealthCheckResponse.SERVING,
        (health_pb2.HealthCheckResponse.NOT_SERVING),
    )
    gate = Gate(postgres_url)
    key, log = tmp_path / "key", tmp_path / "a.log"
    try:
        with rami_server(gate.url, log, args=_args(key, 0.6)) as (_, a):

            async def go() -> None:
                channel = grpc.aio.insecure_channel(a)
                health = health_pb2_grpc.HealthStub(channel)

                async def status(service: str = "") -> int:
                    request = health_pb2.HealthCheckRequest(service=service)
                    return int((await health.Check(request, timeout=RPC_TIMEOUT)).status)

                async def down() -> bool:
                    return await status() == not_serving

                async def up() -> bool:
                    return await status() == serving

                try:
                    assert await up()
                    gate.shut()
                    await _until(down, 20)
                    await asyncio.sleep(1.0)  # five rounds of renewals: still out of reach
                    assert await down()
                    for service in ("rami.v1.LobbyService", "rami.v1.TableService"):
                        assert await status(service) == not_serving, service
                    assert await status("rami.v1.RulesService") == serving
                    assert _log_has(log, "the database is out of reach")
                    gate.open = True
                    await _until(up, 30)
                    for service in ("rami.v1.LobbyService", "rami.v1.TableService"):
                        assert await status(service) == serving, service
                    assert _log_has(log, "the database answers again")
                    # And it serves indeed: a table is made.
                    stubs = Stubs(a)
                    try:
                        await _create(stubs)
                    finally:
                        await stubs.close()
                finally:
                    await channel.close(None)

            run(go)
    finally:
        gate.close()


def test_health_says_not_serving_when_the_database_goes_silent(
    tmp_path: Path, postgres_url: str
) -> None:
    """A network that drops every packet ends no connection: a renewal sent into it waits for
    an answer as long as TCP keeps trying (minutes). The server does not wait that long: a
    renewal or a claim the database has not answered within a lease (and the pool's wait) is
    the database out of reach, and health says NOT_SERVING until it answers again."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    gate = Gate(postgres_url)
    key, log = tmp_path / "key", tmp_path / "a.log"
    try:
        with rami_server(gate.url, log, args=_args(key, 0.6)) as (_, a):

            async def go() -> None:
                channel = grpc.aio.insecure_channel(a)
                health = health_pb2_grpc.HealthStub(channel)
                stubs = Stubs(a)

                async def status() -> int:
                    request = health_pb2.HealthCheckRequest()
                    return int((await health.Check(request, timeout=RPC_TIMEOUT)).status)

                async def down() -> bool:
                    return await status() == health_pb2.HealthCheckResponse.NOT_SERVING

                async def up() -> bool:
                    return await status() == health_pb2.HealthCheckResponse.SERVING

                try:
                    await _create(stubs)  # a lease to renew
                    assert await up()
                    gate.freeze()
                    started = time.monotonic()
                    await _until(down, 20)
                    silent = time.monotonic() - started
                    assert silent < 15, silent
                    assert _log_has(log, "the database is out of reach")
                    assert _log_has(log, "did not answer")
                    gate.thaw()
                    await _until(up, 40)
                    await _create(stubs)  # and it serves indeed
                finally:
                    await stubs.close()
                    await channel.close(None)

            run(go)
    finally:
        gate.close()


def test_a_late_claim_of_the_server_s_own_is_no_twin(tmp_path: Path, postgres_url: str) -> None:
    """A claim this server gave up on (the database silent) may be carried out when the network
    comes back: its epoch then moves past the table's here, and the renewal finds the lease
    lost to ... this same server. That is no other server advertising this one's address
    (which would stop its claims by address for good): the table is loaded again, at the epoch
    it holds now, and the game goes on."""
    from rami.server.app import serve

    async def go() -> None:
        server = await serve(
            "127.0.0.1", 0, postgres_url, secret_file=str(tmp_path / "key"), lease_seconds=0.6
        )
        stubs = Stubs(f"127.0.0.1:{server.port}")
        try:
            table_id, _ = await _create(stubs)
            before = server.lobby.tables[table_id].epoch
            # What the abandoned claim does when it lands at last: the same owner, a new epoch.
            await server.storage.claim(table_id)

            async def reloaded() -> bool:
                table = server.lobby.tables.get(table_id)
                return table is not None and table.epoch > before + 1

            await _until(reloaded, 10)
            assert not server.storage.twin
            got = await stubs.lobby.GetTable(
                lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=RPC_TIMEOUT
            )
            assert got.table.table_id == table_id
        finally:
            await stubs.close()
            await server.stop(0.5)

    run(go)


def test_after_an_outage_each_server_takes_its_own_tables_back(
    tmp_path: Path, postgres_url: str
) -> None:
    """A database outage longer than a lease: every server drops every table, and none
    holds a lease when the database is back. The first to sweep counted itself the only
    server and took every table (an operator's try: all six on one server, twice). Each
    server now claims back its own tables first, for a lease, before it shares the others."""
    from rami.server.app import serve

    gate = Gate(postgres_url)

    async def go() -> None:
        key = str(tmp_path / "key")
        a = await serve("127.0.0.1", 0, gate.url, secret_file=key, lease_seconds=0.6)
        b = await serve("127.0.0.1", 0, gate.url, secret_file=key, lease_seconds=0.6)
        c = await serve("127.0.0.1", 0, gate.url, secret_file=key, lease_seconds=0.6)  # none
        stubs = [Stubs(f"127.0.0.1:{s.port}") for s in (a, b)]
        try:
            mine = [{(await _create(st))[0] for _ in range(3)} for st in stubs]
            assert set(a.lobby.tables) == mine[0] and set(b.lobby.tables) == mine[1]
            gate.shut()

            async def dropped() -> bool:
                return not a.lobby.tables and not b.lobby.tables

            await _until(dropped, 20)
            await asyncio.sleep(0.5)
            gate.open = True

            async def back() -> bool:
                return len(a.lobby.tables) + len(b.lobby.tables) == 6

            await _until(back, 30)
            assert set(a.lobby.tables) == mine[0] and set(b.lobby.tables) == mine[1]
            assert not c.lobby.tables  # it held none, and takes none of theirs
        finally:
            for st in stubs:
                await st.close()
            for server in (a, b, c):
                await server.stop(0.5)

    try:
        run(go)
    finally:
        gate.close()


def test_a_bot_given_every_server_leaves_one_cut_off_from_the_database(
    tmp_path: Path, postgres_url: str
) -> None:
    """Two servers, the bot kit given both (``ipv4:A,B``, as docs/bots.md advises). The
    table's owner loses its database: the other server takes the table over within a lease
    and plays on. The owner still answers, refusing every call STORAGE_FAILED (it cannot load
    the table, nor say who holds it), and a channel keeps to the first server of a list while
    it answers: the bot stayed there for as long as the outage lasted (an attacker's 60 s),
    and the new owner played its seat as away. It now takes the list from the next server."""
    from rami.server.app import serve

    gate = Gate(postgres_url)

    async def go() -> None:
        key = str(tmp_path / "key")
        a = await serve("127.0.0.1", 0, gate.url, secret_file=key, lease_seconds=0.6)
        b = await serve("127.0.0.1", 0, postgres_url, secret_file=key, lease_seconds=0.6)
        at_a = Stubs(f"127.0.0.1:{a.port}")
        try:
            table_id, _ = await _create(at_a, rounds=1, bots=1)
            assert table_id in a.lobby.tables
            cut: list[float] = []
            after: list[float] = []
            decide = policy_decider("greedy", 1)

            def counting(view: Any) -> Any:
                if cut:
                    after.append(time.monotonic())
                elif view.number > 6:
                    gate.shut()  # the owner's database gone, mid-game
                    cut.append(time.monotonic())
                return decide(view)

            home = f"ipv4:127.0.0.1:{a.port},127.0.0.1:{b.port}"
            playing = asyncio.ensure_future(play(home, table_id, counting, name="Ana"))
            try:
                # Three moves of its own after the cut: the bot plays on at the new owner.
                await _until(lambda: _true(len(after) >= 3 or playing.done()), 40)
            finally:
                playing.cancel()
                await asyncio.gather(playing, return_exceptions=True)
            assert cut and len(after) >= 3, (cut, after)
            # Its first came within seconds, not at the drop grace (30 s) with the server
            # playing its seat meanwhile (a refusal of the cut-off server takes up to 4 s).
            assert after[0] - cut[0] < 15, after[0] - cut[0]
            assert table_id in b.lobby.tables
        finally:
            await at_a.close()
            for server in (a, b):
                await server.stop(0.5)

    try:
        run(go)
    finally:
        gate.close()


def test_health_comes_back_when_the_database_answers_though_a_claim_fails_otherwise(
    tmp_path: Path, postgres_url: str
) -> None:
    """Out of reach, then back: the renewals get through, but the claims of orphaned tables
    fail for another reason (a bug, not an outage). The database answers: health says
    SERVING again (it stayed NOT_SERVING for as long as the claims failed)."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from rami.server.app import serve

    async def go() -> None:
        server = await serve(
            "127.0.0.1", 0, postgres_url, secret_file=str(tmp_path / "key"), lease_seconds=0.6
        )
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
        try:
            health = health_pb2_grpc.HealthStub(channel)

            async def serving() -> bool:
                got = await health.Check(health_pb2.HealthCheckRequest(), timeout=RPC_TIMEOUT)
                return bool(got.status == health_pb2.HealthCheckResponse.SERVING)

            # As after an outage: the health said NOT_SERVING.
            await server.lobby._store_reached(OSError("down"))  # not an outage: no change
            assert await serving()
            import psycopg

            await server.lobby._store_reached(psycopg.OperationalError("down"))
            assert not await serving()

            async def broken(own: bool = False) -> list[str]:
                raise ValueError("a bug in the claim")

            server.storage.claimable = broken  # type: ignore[method-assign]
            await _until(serving, 10)
        finally:
            await channel.close(None)
            await server.stop(0.5)

    run(go)
