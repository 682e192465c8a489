"""Promise 1, the windows between two writes: a change and everything it implies is one append,
a storage failure leaves a table as stored and announced, and finished tables leave memory.

The first four drive the lobby and its tables without sockets (a real SQLite file, storage
failures injected just before the commit); the last goes through a real server.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from server_support import RPC_TIMEOUT, error_of, md

from rami.engine import Options
from rami.server.dealing import ServerKey
from rami.server.entries import AddBot, Entry, Join
from rami.server.lobby import Lobby, LobbyConfig, summarize
from rami.server.refusals import Unavailable
from rami.server.storage import SqliteStorage
from rami.server.table import Table, TableConfig
from rami.server.tablestate import FINISHED, PLAYING, WAITING, TableState
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

T = TypeVar("T")
QUIET = TableConfig(bot_delay=60.0, round_pause=60.0, away_delay=60.0, heartbeat=60.0)
FAST = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=60.0)


def run(main: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(main(), 60))  # type: ignore[arg-type]


async def lobby_on(path: Path, config: TableConfig, **settings: Any) -> Lobby:
    storage = await SqliteStorage.open(str(path / "rami.db"), summarize)
    key = ServerKey.for_store(str(path / "rami.db"))
    return Lobby(storage, LobbyConfig(max_tables_per_client=100, **settings), config, key)


async def shut(lobby: Lobby) -> None:
    lobby.close()
    await lobby.closing()
    await lobby.storage.close()  # type: ignore[attr-defined]


async def new_table(lobby: Lobby, players: int = 2, variant: str = "tallage") -> Table:
    options = Options(players=players, round_cap=1)
    table, _ = await lobby.create(
        name="t",
        variant=variant,
        options=options,
        private=False,
        hand_analysis=True,
        decks=[],
        client="c",
    )
    return table


def join(name: str) -> Callable[[TableState], list[Entry]]:
    """A JoinTable's plan, with the start it implies (as the lobby service plans it)."""
    from rami.server.services import _with_start

    def plan(state: TableState) -> list[Entry]:
        return _with_start(state, [Join(state.free_seat(None), name, f"hash-{name}")])

    return plan


def failing() -> None:
    raise sqlite3.OperationalError("disk I/O error")


def test_a_full_table_never_waits_when_the_write_of_its_start_fails(tmp_path: Path) -> None:
    """Defect 1: the last join and the start it causes were two writes; a failure between
    them left a full table that never started. Now they are one append: all or nothing."""

    async def main() -> None:
        lobby = await lobby_on(tmp_path, QUIET)
        table = await new_table(lobby)
        await table.change(join("Ana"), lambda _: None)
        lobby.storage.before_commit = failing  # type: ignore[attr-defined]
        with pytest.raises(Unavailable):
            await table.change(join("Bo"), lambda _: None)
        row = await lobby.storage.get_table(table.table_id)
        assert row is not None and (row.status, row.number) == (WAITING, 1)
        assert table.status == WAITING and table.state.seats[1].kind == "empty"
        lobby.storage.before_commit = None  # type: ignore[attr-defined]
        await table.change(join("Bo"), lambda _: None)
        row = await lobby.storage.get_table(table.table_id)
        assert row is not None and (row.status, row.number) == (PLAYING, 3)
        await shut(lobby)

    run(main)


def test_a_full_table_stored_without_its_start_starts_when_loaded(tmp_path: Path) -> None:
    """A log written before the fix (every seat taken, no start) recovers on load."""

    async def main() -> None:
        lobby = await lobby_on(tmp_path, QUIET)
        table = await new_table(lobby)
        # Two separate changes, as the server stored them before: the start never came.
        for seat, name in enumerate(("Ana", "Bo")):
            await table.change(lambda s, n=name, i=seat: [Join(i, n, f"h{n}")], lambda _: None)
        assert table.status == WAITING and table.state.is_full()
        table_id = table.table_id
        await shut(lobby)
        lobby = await lobby_on(tmp_path, QUIET)
        assert await lobby.restore() == 1
        for _ in range(200):
            row = await lobby.storage.get_table(table_id)
            if row is not None and row.status == PLAYING:
                break
            await asyncio.sleep(0.01)
        assert row is not None and (row.status, row.number) == (PLAYING, 3)
        await shut(lobby)

    run(main)


async def finish_with_bots(lobby: Lobby, table: Table) -> None:
    for i in range(len(table.state.seats)):

        def plan(s: TableState, i: int = i) -> list[Entry]:
            from rami.server.services import _with_start

            return _with_start(s, [AddBot(s.free_seat(None), f"bot {i}", "greedy")])

        await table.change(plan, lambda _: None)
    for _ in range(2000):
        if table.status == FINISHED:
            return
        await asyncio.sleep(0.01)
    g = table.state.game
    raise AssertionError(
        f"table {table.table_id} did not finish: update {table.number}, status {table.status}, "
        f"phase {g.phase if g else None}, automatic move armed {table._auto is not None}, "
        f"queued {len(table._queue)}, busy {table._busy}"
    )


def test_tables_finished_by_built_in_bots_leave_memory(tmp_path: Path) -> None:
    """Defect 7: a table a bot, the clock or an away seat finished was never evicted."""

    async def main() -> None:
        lobby = await lobby_on(tmp_path, FAST, finished_kept=1)
        tables = [await new_table(lobby, variant="simple") for _ in range(3)]
        for t in tables:
            await finish_with_bots(lobby, t)
        await asyncio.sleep(0.05)
        held = [t.table_id for t in tables if t.table_id in lobby.tables]
        assert len(held) == 1, held
        # An evicted table is still there for whoever asks: loaded again from storage.
        again = await lobby.get(tables[0].table_id)
        assert again.status == FINISHED and again.number == tables[0].number
        await shut(lobby)

    run(main)


def test_the_stored_status_is_finished_in_the_write_of_the_last_entry(tmp_path: Path) -> None:
    """Defect 8: the status was a write of its own after the game's last entry; a crash
    between them left a finished game `playing`, reloaded at every start. Now every entry
    carries the status after it, and the directory row moves with it in the same statement."""

    async def main() -> None:
        lobby = await lobby_on(tmp_path, FAST)
        table = await new_table(lobby, variant="simple")
        await finish_with_bots(lobby, table)
        row = await lobby.storage.get_table(table.table_id)
        assert row is not None and (row.status, row.number) == (FINISHED, table.number)
        assert table.table_id not in await lobby.storage.unfinished()
        await shut(lobby)
        db = sqlite3.connect(str(tmp_path / "rami.db"))
        statuses = [
            s
            for (s,) in db.execute(
                "SELECT status FROM entries WHERE table_id = ? ORDER BY number",
                (table.table_id,),
            )
        ]
        db.close()
        assert statuses[-1] == FINISHED and set(statuses[:-1]) <= {WAITING, PLAYING}

    run(main)


def test_a_failed_write_is_refused_whole_and_no_watcher_sees_a_gap(tmp_path: Path) -> None:
    """Defect 4: a write failing after a stored entry answered INTERNAL to an applied command
    and sent its update to nobody (spectators saw 2 -> 4). Now the change is refused
    (UNAVAILABLE, STORAGE_FAILED), nothing is applied, and the retry's update comes next."""
    with ServerThread(str(tmp_path / "rami.db")) as server, Stubs(server.target) as stubs:
        created = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="w", variant=game_pb2.VARIANT_TALLAGE, options=game_pb2.Options(players=2)
            ),
            timeout=RPC_TIMEOUT,
        )
        table_id = created.table.table_id
        tokens = [
            stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{i}"),
                timeout=RPC_TIMEOUT,
            ).token
            for i in range(2)
        ]
        spectator = stubs.table.Watch(table_service_pb2.WatchRequest(table_id=table_id), timeout=30)
        first = next(spectator).update
        seat = first.view.turn
        token = tokens[[p.seat for p in first.view.players].index(seat)]
        # The dealer plays first with an extra card: discarding it is the first move.
        own = stubs.table.Watch(
            table_service_pb2.WatchRequest(table_id=table_id), metadata=md(token), timeout=30
        )
        view = next(own).update.view
        own.cancel()
        act = table_service_pb2.ActRequest(
            table_id=table_id,
            number=view.number,
            discard=table_service_pb2.DiscardAction(card=view.hand[-1]),
        )
        assert server.server is not None
        server.server.storage.before_commit = failing
        with pytest.raises(grpc.RpcError) as info:
            stubs.table.Act(act, metadata=md(token), timeout=RPC_TIMEOUT)
        err = error_of(info.value)
        assert (err.code, err.reason) == (grpc.StatusCode.UNAVAILABLE, "STORAGE_FAILED")
        got = stubs.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=RPC_TIMEOUT
        ).table
        assert got.number == view.number
        server.server.storage.before_commit = None
        done = stubs.table.Act(act, metadata=md(token), timeout=RPC_TIMEOUT)
        assert done.number == view.number + 1
        numbers = []
        for response in spectator:
            if response.HasField("update"):
                numbers.append(response.update.number)
                if response.update.number == done.number:
                    break
        spectator.cancel()
        assert numbers == [done.number]
