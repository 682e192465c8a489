"""The storage protocol against each backend (the directory, create marks, tokens, the number
check), and what only PostgreSQL has to hold: writers on other connections and in other
processes racing one table's log, servers opening one database at once, the schema's version.
Every PostgreSQL test runs on a real server the tests start (``postgres_support``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from server_support import SERVER, rami_server
from storage_backends import Backend

from rami.server.entries import Mark
from rami.server.lobby import summarize
from rami.server.storage import Append, Conflict, Created, RematchMade

T = TypeVar("T")
SEATS = [{"name": "", "kind": "empty", "policy": "", "away": False}] * 2


def run(coro: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(coro(), 60))  # type: ignore[arg-type]


def spec(variant: str = "tallage", *, private: bool = False, client: str = "c1") -> dict[str, Any]:
    return {
        "name": "t",
        "variant": variant,
        "options": {"players": 2},
        "private": private,
        "client": client,
    }


def entry(i: int, writer: str = "") -> dict[str, Any]:
    return {"type": "chat", "seat": 0, "text": f"{writer}{i}"}


# -- the protocol, on both backends -------------------------------------------------------------


def test_the_directory_lists_filters_and_counts_as_the_protocol_says(backend: Backend) -> None:
    async def main() -> None:
        storage = await backend.open()
        try:
            await storage.create_table("a", spec("tallage"), SEATS, "owner-a")
            await storage.create_table("b", spec("simple"), SEATS, "owner-b")
            await storage.create_table("p", spec("tallage", private=True), SEATS, "")
            await storage.create_table("o", spec("tallage", client="c2"), SEATS, "")
            assert [r.table_id for r in await storage.list_tables()] == ["o", "b", "a"]
            assert [r.table_id for r in await storage.list_tables(variant="tallage")] == [
                "o",
                "a",
            ]
            assert [r.table_id for r in await storage.list_tables(limit=1)] == ["o"]
            await storage.append(Append("a", 1, [entry(1)], "playing", SEATS, {"players": 2}))
            await storage.append(Append("b", 1, [entry(1), entry(2)], "finished", None, None))
            assert [r.table_id for r in await storage.list_tables(status="playing")] == ["a"]
            row = await storage.get_table("b")
            assert row is not None
            assert (row.status, row.number, row.seats) == ("finished", 2, SEATS)
            assert row.spec == spec("simple") and row.options == {"players": 2}
            assert await storage.get_table("nope") is None
            assert await storage.unfinished() == ["a", "p", "o"]
            assert await storage.active_tables("c1") == 2  # a and p; b is finished
            assert await storage.active_tables("c2") == 1
            stored = await storage.load_table("b")
            assert stored is not None and stored.entries == [entry(1), entry(2)]
            assert await storage.load_table("nope") is None
        finally:
            await storage.close()

    run(main)


def test_tokens_are_known_from_creation_and_replaced_whole(backend: Backend) -> None:
    async def main() -> None:
        storage = await backend.open()
        try:
            await storage.create_table("a", spec(), SEATS, "owner")
            assert await storage.token_known("owner")
            assert not await storage.token_known("seat-0")
            tokens = ("owner", "seat-0", "seat-1")
            await storage.append(Append("a", 1, [entry(1)], "waiting", SEATS, {}, tokens))
            assert all([await storage.token_known(t) for t in tokens])
            await storage.append(Append("a", 2, [entry(2)], "waiting", SEATS, {}, ("owner",)))
            assert await storage.token_known("owner")
            assert not await storage.token_known("seat-0")
            # A failed append changes no token either.
            with pytest.raises(Conflict):
                await storage.append(Append("a", 9, [entry(9)], "waiting", SEATS, {}, ("x",)))
            assert not await storage.token_known("x")
        finally:
            await storage.close()

    run(main)


def test_a_request_mark_creates_one_table_and_finds_it_again(backend: Backend) -> None:
    async def main() -> None:
        storage = await backend.open()
        try:
            mark = Mark("k" * 32, "d" * 16)
            assert await storage.create_table("a", spec(), SEATS, "", mark) is None
            again = await storage.create_table("b", spec(), SEATS, "", mark)
            assert again == Created("a", mark)
            assert await storage.created_by(mark.key) == Created("a", mark)
            assert await storage.created_by("") is None
            assert await storage.get_table("b") is None
        finally:
            await storage.close()

    run(main)


def test_a_finished_table_has_one_rematch_however_many_ask(backend: Backend) -> None:
    async def main() -> None:
        storage = await backend.open()
        try:
            await storage.create_table("old", spec(), SEATS, "owner")
            tokens = ("owner", "seat-0", "seat-1")
            await storage.append(Append("old", 1, [entry(1)], "finished", SEATS, {}, tokens))
            assert await storage.token_table("seat-1") == "old"
            assert await storage.token_table("nobody's") is None
            row = await storage.get_table("old")
            assert row is not None and row.rematch == ""
            mark = Mark("m" * 32, "d" * 16)
            assert await storage.create_table("r1", spec(), SEATS, "o1", mark, "old") is None
            row = await storage.get_table("old")
            assert row is not None and row.rematch == "r1"
            # Another seat's: the table made, and nothing stored.
            assert await storage.create_table("r2", spec(), SEATS, "o2", None, "old") == (
                RematchMade("r1")
            )
            # The first request again: what it made, as every retry.
            again = await storage.create_table("r3", spec(), SEATS, "o3", mark, "old")
            assert again == Created("r1", mark)
            assert await storage.get_table("r2") is None and await storage.get_table("r3") is None
            assert not await storage.token_known("o2") and not await storage.token_known("o3")
            listed = await storage.list_tables(status="finished")
            assert [(r.table_id, r.rematch) for r in listed] == [("old", "r1")]
            made = await storage.get_table("r1")
            assert made is not None and made.rematch == ""
        finally:
            await storage.close()

    run(main)


def test_every_append_is_checked_against_the_last_stored_number(backend: Backend) -> None:
    async def main() -> None:
        storage = await backend.open()
        try:
            await storage.create_table("a", spec(), SEATS, "")
            with pytest.raises(Conflict):
                await storage.append(Append("a", 0, [entry(0)], "waiting", None, None))
            with pytest.raises(Conflict):
                await storage.append(Append("a", 2, [entry(2)], "waiting", None, None))
            with pytest.raises(Conflict):
                await storage.append(Append("nope", 1, [entry(1)], "waiting", None, None))
            await storage.append(Append("a", 1, [entry(1), entry(2)], "playing", None, None))
            with pytest.raises(Conflict):
                await storage.append(Append("a", 2, [entry(2)], "playing", None, None))
            await storage.append(Append("a", 3, [entry(3)], "playing", None, None))
            assert backend.stored_numbers("a") == [1, 2, 3]
            row = await storage.get_table("a")
            assert row is not None and (row.number, row.status) == (3, "playing")
        finally:
            await storage.close()
        # Durable when it returned: a new storage on the same database finds it all.
        storage = await backend.open()
        try:
            stored = await storage.load_table("a")
            assert stored is not None
            assert stored.entries == [entry(1), entry(2), entry(3)] and stored.row.number == 3
        finally:
            await storage.close()

    run(main)


# -- PostgreSQL: several writers on one database ------------------------------------------------


async def _open(url: str) -> Any:
    from rami.server.storage_postgres import PostgresStorage

    return await PostgresStorage.open(url, summarize)


def test_postgresql_connections_give_up_on_a_silent_network(postgres_url: str) -> None:
    """The pool's connections carry TCP keepalives and a bound on unacknowledged data, so that
    a network that drops every packet ends them in seconds, not in the kernel's quarter of an
    hour; a setting the URL gives itself is kept."""

    async def go() -> None:
        for url, idle in ((postgres_url, "10"), (f"{postgres_url}?keepalives_idle=20", "20")):
            storage = await _open(url)
            try:
                async with storage._pool.connection() as conn:
                    given = conn.info.get_parameters()
            finally:
                await storage.close()
            assert given.get("keepalives") == "1", given
            assert given.get("keepalives_idle") == idle, given
            assert given.get("tcp_user_timeout") == "30000", given
            assert given.get("connect_timeout") == "5", given

    run(go)


def test_a_call_on_the_leases_left_by_its_caller_is_cancelled_too(postgres_url: str) -> None:
    """A claim or a load whose caller goes (a client's deadline, the server's stop) does not
    go on alone: it could commit a claim nobody knows of, or fail with nobody to hear it. And
    one the database does not answer in time is given up: NoAnswer, an outage."""
    from rami.server.storage import NoAnswer, is_outage

    async def go() -> None:
        storage = await _open(postgres_url)
        ended: list[str] = []

        async def slow() -> None:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                ended.append("cancelled")
                raise
            ended.append("finished")

        try:
            caller = asyncio.ensure_future(storage._answered(slow(), "a slow call", 20.0))
            await asyncio.sleep(0.1)
            caller.cancel()
            with pytest.raises(asyncio.CancelledError):
                await caller
            await asyncio.sleep(0.1)
            assert ended == ["cancelled"]
            with pytest.raises(NoAnswer) as raised:
                await storage._answered(slow(), "a slow call", 0.2)
            assert is_outage(raised.value)
            assert str(raised.value) == "the database did not answer a slow call within 0.2 s"
            await asyncio.sleep(0.1)
            assert ended == ["cancelled", "cancelled"] and not storage._abandoned
        finally:
            await storage.close()

    run(go)


def test_two_storages_racing_one_table_each_number_is_won_exactly_once(
    postgres_url: str,
) -> None:
    """Two storages (two pools of connections, as two servers have) append the same numbers
    of one table at the same moment: one wins each, the other gets a Conflict, and the log
    has every number once, with the winner's entry."""

    async def main() -> None:
        one, two = await _open(postgres_url), await _open(postgres_url)
        try:
            await one.create_table("t", spec(), SEATS, "")
            winners = []
            for n in range(1, 101):
                # Which storage's append is started first alternates: the one started first
                # usually reaches the database first, and either may win.
                racers = [(one, "one"), (two, "two")][:: 1 if n % 2 else -1]
                results = await asyncio.gather(
                    *(
                        s.append(Append("t", n, [entry(n, w)], "playing", None, None))
                        for s, w in racers
                    ),
                    return_exceptions=True,
                )
                won = [w for (_, w), r in zip(racers, results, strict=True) if r is None]
                lost = [r for r in results if r is not None]
                assert len(won) == 1 and len(lost) == 1, results
                assert isinstance(lost[0], Conflict), lost[0]
                winners.append(won[0])
            stored = await one.load_table("t")
            assert stored is not None and stored.row.number == 100
            assert stored.entries == [entry(n, w) for n, w in enumerate(winners, 1)]
            # Both won some and both lost some: each storage met the other's write.
            assert set(winners) == {"one", "two"}, winners
        finally:
            await one.close()
            await two.close()

    run(main)


RACER = textwrap.dedent(
    """
    import asyncio, json, sys
    from rami.server.lobby import summarize
    from rami.server.storage import Append, Conflict
    from rami.server.storage_postgres import PostgresStorage

    async def main(url, name, wins):
        storage = await PostgresStorage.open(url, summarize)
        won = conflicts = 0
        # Both writers start together: each says it is connected, then waits for the go (a
        # process that starts its loop first could win every append before the other starts).
        try:
            await storage.get_table("t")
            print("ready", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            while won < wins:
                row = await storage.get_table("t")
                n = row.number + 1
                e = {"type": "chat", "seat": 0, "text": f"{name}{n}"}
                try:
                    await storage.append(Append("t", n, [e], "playing", None, None))
                except Conflict:
                    conflicts += 1
                else:
                    won += 1
        finally:
            await storage.close()
        print(json.dumps({"won": won, "conflicts": conflicts}))

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)


def test_writers_in_two_processes_never_fork_or_gap_the_log(postgres_url: str) -> None:
    """Two processes append to one table as fast as they can, each reading the last number
    and appending after it: the log is 1..N with no gap and no number twice, and each entry
    is the one its writer was told it stored."""

    async def create() -> None:
        storage = await _open(postgres_url)
        await storage.create_table("t", spec(), SEATS, "")
        await storage.close()

    run(create)
    wins = 150
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, postgres_url, name, str(wins)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("A", "B")
    ]
    for p in procs:
        assert p.stdout is not None
        assert p.stdout.readline() == "ready\n", p.stderr.read() if p.stderr else ""
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(json.loads(out))
    assert [o["won"] for o in outs] == [wins, wins]

    async def check() -> None:
        storage = await _open(postgres_url)
        try:
            stored = await storage.load_table("t")
        finally:
            await storage.close()
        assert stored is not None and stored.row.number == 2 * wins
        texts = [e["text"] for e in stored.entries]
        assert len(texts) == 2 * wins
        for n, text in enumerate(texts, 1):
            assert text in (f"A{n}", f"B{n}"), (n, text)
        assert sum(t.startswith("A") for t in texts) == wins

    run(check)
    assert sum(o["conflicts"] for o in outs) > 0, "the two writers never met"


def test_servers_opening_one_new_database_at_once_make_one_schema(postgres_url: str) -> None:
    async def main() -> None:
        from rami.server.storage_postgres import PG_SCHEMA_VERSION

        storages = await asyncio.gather(*[_open(postgres_url) for _ in range(4)])
        try:
            await storages[0].create_table("a", spec(), SEATS, "")
            assert [await s.get_table("a") is not None for s in storages] == [True] * 4
        finally:
            for s in storages:
                await s.close()
        import psycopg

        async with await psycopg.AsyncConnection.connect(postgres_url) as conn:
            cur = await conn.execute("SELECT version FROM rami_schema")
            assert await cur.fetchall() == [(PG_SCHEMA_VERSION,)]
            cur = await conn.execute(
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'rami_%_by_%' ORDER BY 1"
            )
            assert [r[0] for r in await cur.fetchall()] == [
                "rami_leases_by_owner",
                "rami_tables_by_client",
                "rami_tables_by_request",
                "rami_tables_by_status",
                "rami_tokens_by_table",
            ]

    run(main)


def test_a_newer_schema_is_refused_with_its_version(postgres_url: str) -> None:
    async def main() -> None:
        import psycopg

        await (await _open(postgres_url)).close()
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
            await conn.execute("UPDATE rami_schema SET version = 99")
        with pytest.raises(OSError, match="version 99, newer than this server's"):
            await _open(postgres_url)

    run(main)


@pytest.mark.parametrize("writer", [False, True])
def test_a_server_starting_beside_a_backup_holds_up_no_other_server(
    postgres_url: str, writer: bool
) -> None:
    """pg_dump, the documented backup, reads every table in one long transaction. A server that
    started meanwhile asked for its schema changes (``ALTER TABLE ... ADD COLUMN IF NOT
    EXISTS`` locks the table whole even when the column is there): it waited behind the
    reader, and every other server's statement on the directory queued behind it, the whole
    cluster stalled until the backup ended. The schema at its version asks for no lock."""

    async def main() -> None:
        import psycopg

        running = await _open(postgres_url)
        try:
            await running.create_table("a", spec(), SEATS, "")
            async with await psycopg.AsyncConnection.connect(postgres_url) as backup:
                # As pg_dump does: a transaction that has read the tables and holds them.
                await backup.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                await backup.execute("SELECT count(*) FROM rami_tables")
                await backup.execute("SELECT count(*) FROM rami_entries")
                if writer:  # and an operator's change, not committed yet
                    await backup.execute("UPDATE rami_tables SET status = status WHERE false")
                    for t in ("rami_tokens", "rami_leases"):
                        await backup.execute(f"DELETE FROM {t} WHERE false")
                starting = asyncio.ensure_future(_open(postgres_url))
                try:
                    await asyncio.sleep(1.0)
                    # The running server goes on: a move stored, the directory read.
                    await asyncio.wait_for(
                        running.append(Append("a", 1, [entry(1)], "waiting", None, None)), 5
                    )
                    assert await asyncio.wait_for(running.get_table("a"), 5) is not None
                    # And the new one starts, the backup still reading.
                    other = await asyncio.wait_for(starting, 10)
                    await other.close()
                finally:
                    if not starting.done():
                        starting.cancel()
                await backup.execute("ROLLBACK")
        finally:
            await running.close()

    run(main)


def test_a_schema_change_behind_a_backup_gives_up_in_seconds_and_says_why(
    postgres_url: str,
) -> None:
    """A schema that needs a column (a database of older code) must lock the table to add it:
    behind a backup's read it waits, and every statement on the table waits behind it. It
    gives up within seconds, saying why; the start after the backup makes the column."""

    async def main() -> None:
        import psycopg

        from rami.server.storage_postgres import MIGRATION_LOCK_WAIT, PostgresUnavailable

        await (await _open(postgres_url)).close()
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as c:
            await c.execute("ALTER TABLE rami_tables DROP COLUMN rematch")
        async with await psycopg.AsyncConnection.connect(postgres_url) as backup:
            await backup.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            await backup.execute("SELECT count(*) FROM rami_tables")
            loop = asyncio.get_running_loop()
            began = loop.time()
            with pytest.raises(PostgresUnavailable, match="a backup's long read") as refused:
                await asyncio.wait_for(_open(postgres_url), MIGRATION_LOCK_WAIT + 5)
            assert loop.time() - began < MIGRATION_LOCK_WAIT + 3
            assert "start the server again" in str(refused.value)
            await backup.execute("ROLLBACK")
        storage = await _open(postgres_url)
        try:
            await storage.create_table("a", spec(), SEATS, "")
            assert await storage.get_table("a") is not None
        finally:
            await storage.close()

    run(main)


@pytest.mark.parametrize("trouble", ["newer schema", "no rights", "no rights, new database"])
def test_a_database_the_server_cannot_use_is_said_in_one_line(
    postgres_url: str, tmp_path: Path, trouble: str
) -> None:
    """A schema of newer code, or a user without the rights the server needs: refused at
    start in one line, no traceback (an operator saw a screen of one)."""
    import psycopg

    from rami.server.storage_postgres import PG_SCHEMA_VERSION

    async def made() -> None:
        await (await _open(postgres_url)).close()

    url = postgres_url
    if trouble != "no rights, new database":
        run(made)  # the schema, as a server of this code makes it
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        if trouble == "newer schema":
            said = "version 99, newer than this server's"
        else:
            url = postgres_url.replace("postgresql://rami@", "postgresql://reader@")
            said = "permission denied"
    try:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            if trouble == "newer schema":
                conn.execute("UPDATE rami_schema SET version = 99")
            else:
                conn.execute("CREATE ROLE reader LOGIN")
                conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        done = subprocess.run(
            [str(SERVER), "--db", url, "--port", "0", "--secret-file", str(tmp_path / "key")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            if trouble == "newer schema":
                conn.execute("UPDATE rami_schema SET version = %s", (PG_SCHEMA_VERSION,))
            else:
                conn.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")
                conn.execute("DROP ROLE IF EXISTS reader")
    out = done.stderr + done.stdout
    assert done.returncode == 1, out
    assert said in out and "Traceback" not in out, out
    # One line besides the log's: not the statement quoted under it, and a caret.
    lines = [x for x in done.stderr.strip().splitlines() if not x[:4].isdigit()]
    assert len(lines) == 1, lines
    (line,) = lines
    assert line.startswith("rami-server: ") and "LINE " not in line, out


def test_one_request_racing_on_two_storages_creates_one_table(postgres_url: str) -> None:
    async def main() -> None:
        one, two = await _open(postgres_url), await _open(postgres_url)
        try:
            mark = Mark("r" * 32, "e" * 16)
            results = await asyncio.gather(
                one.create_table("a", spec(), SEATS, "", mark),
                two.create_table("b", spec(), SEATS, "", mark),
            )
            made = [r for r in results if r is None]
            found = [r for r in results if r is not None]
            assert len(made) == 1 and len(found) == 1
            winner = "a" if results[0] is None else "b"
            assert found[0] == Created(winner, mark)
            assert len(await one.list_tables()) == 1
        finally:
            await one.close()
            await two.close()

    run(main)


def test_seats_racing_for_one_rematch_on_two_storages_make_one_table(postgres_url: str) -> None:
    async def main() -> None:
        one, two = await _open(postgres_url), await _open(postgres_url)
        try:
            for n in range(5):
                old = f"old{n}"
                await one.create_table(old, spec(), SEATS, "")
                await one.append(Append(old, 1, [entry(1)], "finished", None, None))
                results = await asyncio.gather(
                    one.create_table(f"a{n}", spec(), SEATS, "", None, old),
                    two.create_table(f"b{n}", spec(), SEATS, "", None, old),
                    one.create_table(f"c{n}", spec(), SEATS, "", None, old),
                )
                made = [i for i, r in enumerate(results) if r is None]
                assert len(made) == 1, results
                winner = "abc"[made[0]] + str(n)
                assert [r for r in results if r is not None] == [RematchMade(winner)] * 2
                row = await two.get_table(old)
                assert row is not None and row.rematch == winner
            assert len(await one.list_tables()) == 10
        finally:
            await one.close()
            await two.close()

    run(main)


def test_an_unreachable_database_is_named_without_its_password(tmp_path: Path) -> None:
    from postgres_support import unavailable

    why = unavailable()
    if why is not None and "psycopg" in why:
        pytest.skip(why)
    from rami.server.storage_postgres import PostgresUnavailable

    async def main() -> None:
        url = "postgresql://rami:s3cret@127.0.0.1:1/none"
        with pytest.raises(PostgresUnavailable) as info:
            await _open(url)
        assert "cannot connect to PostgreSQL at postgresql://rami:***@127.0.0.1:1/none" in str(
            info.value
        )
        assert "s3cret" not in str(info.value)

    run(main)


# -- rami-server --db postgresql://... -----------------------------------------------------------


def test_the_server_on_postgresql_needs_the_shared_key_file(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(SERVER), "--db", "postgresql://rami@127.0.0.1:1/rami", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "needs --secret-file" in proc.stderr
    assert not list(tmp_path.iterdir())


def test_the_server_says_it_stores_on_postgresql_without_the_password(
    tmp_path: Path, postgres_url: str
) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE ROLE keeper LOGIN PASSWORD 's3cret' SUPERUSER")
    url = postgres_url.replace("postgresql://rami@", "postgresql://keeper:s3cret@")
    key = tmp_path / "server.key"
    log = tmp_path / "server.log"
    with rami_server(url, log, args=("--secret-file", str(key)), log_level="info") as (
        proc,
        _address,
    ):
        assert key.exists()
        proc.terminate()
        proc.wait(timeout=30)
    text = log.read_text()
    assert "storage postgresql://keeper:***@127.0.0.1:" in text
    assert "s3cret" not in text


def test_a_commit_whose_answer_was_lost_is_found_stored(postgres_url: str) -> None:
    """The connection drops after the COMMIT was sent (here: an error raised at that moment):
    the appends whose entries are in the log as written are acknowledged, not refused, so the
    table does not go on one number behind its log."""

    async def main() -> None:
        import psycopg

        storage = await _open(postgres_url)
        try:
            await storage.create_table("a", spec(), SEATS, "")
            await storage.create_table("b", spec(), SEATS, "")

            def lost() -> None:
                raise psycopg.OperationalError("server closed the connection unexpectedly")

            storage.after_commit = lost
            results = await asyncio.gather(
                storage.append(Append("a", 1, [entry(1)], "playing", None, None)),
                storage.append(Append("b", 2, [entry(2)], "playing", None, None)),  # a gap
                return_exceptions=True,
            )
            assert results[0] is None
            assert isinstance(results[1], psycopg.OperationalError)  # not stored: the error
            storage.after_commit = None
            await storage.append(Append("a", 2, [entry(2)], "playing", None, None))
            stored = await storage.load_table("a")
            assert stored is not None and stored.entries == [entry(1), entry(2)]
        finally:
            await storage.close()

    run(main)


def test_a_commit_cut_off_while_it_waits_in_the_database_is_never_stored_after_a_refusal(
    postgres_url: str,
) -> None:
    """The group commit waits inside PostgreSQL (here: a row lock another session holds) when
    its connection is cut. The backend has read the whole batch, COMMIT included, and goes on
    waiting: a look at the log on another connection finds nothing yet, but the backend
    commits once the lock goes. An append refused then ("nothing was changed") was stored
    all the same, and the table served on one update behind its log. An append is refused
    only once the backend that had its transaction is gone; where that cannot be known, it is
    told as an answer lost (``Unknown``), never as a refusal."""
    from postgres_support import Gate

    from rami.server.storage import Unknown

    async def main() -> None:
        import psycopg

        gate = Gate(postgres_url)
        storage = await _open(gate.url)
        try:
            await storage.create_table("a", spec(), SEATS, "")
            async with (
                await psycopg.AsyncConnection.connect(postgres_url) as locker,
                await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as look,
            ):
                await locker.execute("SELECT 1 FROM rami_tables WHERE table_id = 'a' FOR UPDATE")
                appending = asyncio.ensure_future(
                    storage.append(Append("a", 1, [entry(1)], "waiting", None, None))
                )
                for _ in range(100):  # until the append waits for the lock
                    cur = await look.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    )
                    if (await cur.fetchone())[0]:
                        break
                    await asyncio.sleep(0.05)
                else:
                    raise AssertionError("the append never waited for the lock")
                gate.shut()  # the connection cut, as a network or a proxy does
                gate.open = True  # new connections go through
                outcome = await asyncio.gather(
                    asyncio.wait_for(appending, 20), return_exceptions=True
                )
                await locker.execute("ROLLBACK")  # the lock goes
                await asyncio.sleep(1.0)  # time for a backend left waiting to commit
                cur = await look.execute("SELECT count(*) FROM rami_entries WHERE table_id = 'a'")
                stored = (await cur.fetchone())[0]
            result = outcome[0]
            # Its process ended before the look, the append is known not stored: refused,
            # not told as lost (nor stored after all).
            assert isinstance(result, Exception) and not isinstance(result, Unknown), result
            assert stored == 0, f"refused ({result!r}), and in the log all the same"
            # And the table's next append goes where the log says.
            loaded = await storage.load_table("a")
            assert loaded is not None
            await storage.append(
                Append("a", len(loaded.entries) + 1, [entry(9)], "waiting", None, None)
            )
        finally:
            await storage.close()
            gate.close()

    run(main)


@pytest.mark.parametrize("together", [False, True])
def test_a_table_whose_row_another_session_locks_holds_up_no_other_table(
    postgres_url: str, together: bool
) -> None:
    """Another session holds one table's directory row (an operator's transaction left open,
    a slow writer): that table's append waits for the lock inside the group commit, and every
    other table's appends waited behind it, for as long as the lock was held, the server's
    health saying SERVING. The append waits a short while for a lock, then is refused
    (nothing stored: the database undid it); the others of its batch are written alone."""

    async def main() -> None:
        import psycopg

        from rami.server.storage import is_outage

        storage = await _open(postgres_url)
        try:
            for t in ("a", "b", "c"):
                await storage.create_table(t, spec(), SEATS, "")
            async with (
                await psycopg.AsyncConnection.connect(postgres_url) as locker,
                await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as look,
            ):
                await locker.execute("SELECT 1 FROM rami_tables WHERE table_id = 'a' FOR UPDATE")
                loop = asyncio.get_running_loop()
                began = loop.time()
                locked = asyncio.ensure_future(
                    storage.append(Append("a", 1, [entry(1)], "waiting", None, None))
                )
                if not together:
                    await asyncio.sleep(0.3)  # a's batch waits for the lock: b's comes after
                others = [
                    asyncio.ensure_future(
                        storage.append(Append(t, 1, [entry(1)], "waiting", None, None))
                    )
                    for t in ("b", "c")
                ]
                await asyncio.wait_for(asyncio.gather(*others), 5)
                assert loop.time() - began < 0.9, "the other tables waited for a's lock"
                refused = await asyncio.gather(asyncio.wait_for(locked, 5), return_exceptions=True)
                assert isinstance(refused[0], Exception) and is_outage(refused[0]), refused
                await locker.execute("ROLLBACK")
                await asyncio.sleep(0.5)
                cur = await look.execute(
                    "SELECT table_id, count(*) FROM rami_entries GROUP BY table_id ORDER BY 1"
                )
                assert await cur.fetchall() == [("b", 1), ("c", 1)]
            # a, its row free again, stores its move.
            await storage.append(Append("a", 1, [entry(1)], "waiting", None, None))
        finally:
            await storage.close()

    run(main)


def test_appends_refused_again_and_again_leave_the_connection_usable(postgres_url: str) -> None:
    """A table whose row stays locked is refused at each try, the others go on; its row free
    again, it stores too. (psycopg prepares a statement run five times: a connection whose
    transactions kept failing came to refuse every append, "prepared statement does not
    exist", until the pool replaced it an hour later.)"""

    async def main() -> None:
        import psycopg

        from rami.server.lobby import summarize
        from rami.server.storage import is_outage
        from rami.server.storage_postgres import PostgresStorage

        storage = await PostgresStorage.open(postgres_url, summarize, pool_size=1)
        try:
            for t in ("a", "b"):
                await storage.create_table(t, spec(), SEATS, "")
            async with await psycopg.AsyncConnection.connect(postgres_url) as locker:
                await locker.execute("SELECT 1 FROM rami_tables WHERE table_id = 'a' FOR UPDATE")
                for n in range(1, 9):
                    tried = await asyncio.gather(
                        storage.append(Append("a", 1, [entry(1)], "waiting", None, None)),
                        storage.append(Append("b", n, [entry(n)], "waiting", None, None)),
                        return_exceptions=True,
                    )
                    assert isinstance(tried[0], Exception) and is_outage(tried[0]), (n, tried)
                    assert tried[1] is None, (n, tried)
                await locker.execute("ROLLBACK")
            await storage.append(Append("a", 1, [entry(1)], "waiting", None, None))
            await storage.append(Append("b", 9, [entry(9)], "waiting", None, None))
        finally:
            await storage.close()

    run(main)


def test_a_batch_the_database_refuses_stores_nothing_and_the_next_one_works(
    postgres_url: str,
) -> None:
    """An error inside the group's transaction (here a status the schema refuses) aborts it
    whole: no append of the batch is stored, none is acknowledged, and the connection is
    left clean for the next batch."""

    async def main() -> None:
        import psycopg

        storage = await _open(postgres_url)
        try:
            await storage.create_table("a", spec(), SEATS, "")
            await storage.create_table("b", spec(), SEATS, "")
            results = await asyncio.gather(
                storage.append(Append("a", 1, [entry(1)], "playing", None, None)),
                storage.append(Append("b", 1, [entry(1)], "exploded", None, None)),
                return_exceptions=True,
            )
            assert all(isinstance(r, psycopg.errors.CheckViolation) for r in results), results
            assert await storage.unfinished() == ["a", "b"]
            for _ in range(8):  # every connection of the pool, whichever took the failure
                await storage.get_table("a")
            await storage.append(Append("a", 1, [entry(1)], "playing", None, None))
            await storage.append(Append("b", 1, [entry(1)], "playing", None, None))
            stored = await storage.load_table("b")
            assert stored is not None and stored.entries == [entry(1)]
        finally:
            await storage.close()

    run(main)


def test_without_the_driver_the_server_says_which_extra_to_install(tmp_path: Path) -> None:
    # On a port of its own: a server the developer runs (``make serve``) holds the default one.
    code = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None\n"
        "from rami.server.cli import main\n"
        "sys.argv = ['rami-server', '--db', 'postgresql://rami@127.0.0.1:1/rami', '--port', '0',"
        f" '--secret-file', {str(tmp_path / 'server.key')!r}]\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "pip install 'psycopg[binary,pool]'" in proc.stderr


# -- one SQLite file, one server ---------------------------------------------------------------


def test_a_second_server_on_a_port_in_use_is_refused_at_start(tmp_path: Path) -> None:
    """Two servers never listen at one address: gRPC shares a port between processes unless
    told not to (SO_REUSEPORT), and the kernel would split the clients between them, each
    server taking the other's tables (which the cluster matches by address) at every sweep."""
    with rami_server(tmp_path / "a.db", tmp_path / "a.log") as (_, address):
        port = address.rsplit(":", 1)[1]
        second = subprocess.run(
            [str(SERVER), "--db", str(tmp_path / "b.db"), "--host", "127.0.0.1", "--port", port],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 1, second.stderr
        assert f"could not listen on 127.0.0.1:{port}" in second.stderr, second.stderr
        # Refused before anything is made: no database, no key, no lock file; and said in
        # the server's own words only (no line of gRPC core's log before them).
        made = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.db"))
        assert made == [], made
        assert "add_port" not in second.stderr, second.stderr


def test_a_second_server_on_a_sqlite_file_in_use_is_refused_at_start(tmp_path: Path) -> None:
    """One SQLite file serves one server (several share a PostgreSQL database). A second
    server on it would load its tables and play them too: each refuses the other's changes
    (Conflict) and its own clients' tables stay stuck. It is refused at start, saying why;
    once the first stops, the file is free again."""
    db, log = tmp_path / "rami.db", tmp_path / "server.log"
    with rami_server(db, log):
        second = subprocess.run(
            [str(SERVER), "--db", str(db), "--port", "0"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 1, second.stderr
        assert "in use by another rami-server" in second.stderr, second.stderr
        assert "PostgreSQL" in second.stderr

    async def main() -> None:
        from rami.server.storage import SqliteStorage

        storage = await SqliteStorage.open(str(db))  # free again
        with pytest.raises(OSError, match="in use by another rami-server"):
            await SqliteStorage.open(str(db))
        await storage.close()
        again = await SqliteStorage.open(str(db))
        await again.close()

    asyncio.run(main())


def test_a_failed_checkpoint_is_logged_and_the_appends_held_meanwhile_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The appends that come while a checkpoint runs wait for it: one that fails lets them
    go on all the same, and is said in the log (its error was left for the garbage
    collector to print as "Future exception was never retrieved")."""
    import sqlite3

    from rami.server import storage as storage_module

    def failing(db: sqlite3.Connection) -> None:
        time.sleep(0.05)  # long enough for appends to come meanwhile
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(storage_module, "_checkpoint", failing)
    monkeypatch.setattr(storage_module, "_CHECKPOINT_COMMITS", 10)

    async def main() -> None:
        storage = await storage_module.SqliteStorage.open(str(tmp_path / "rami.db"), summarize)
        try:
            await storage.create_table("a", spec(), SEATS, "")
            for i in range(1, 61):
                await asyncio.wait_for(
                    storage.append(Append("a", i, [entry(i)], "waiting", None, None)), 5
                )
        finally:
            await storage.close()

    with caplog.at_level("WARNING", logger="rami.server.storage"):
        run(main)
    failed = [r for r in caplog.records if "checkpoint failed" in r.getMessage()]
    assert failed and "disk I/O error" in failed[0].getMessage(), caplog.text
    assert Backend("sqlite", str(tmp_path / "rami.db")).stored_numbers("a") == list(range(1, 61))


def test_appends_wait_for_a_checkpoint_only_while_it_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The appends of the loop's connection are held while a checkpoint copies the WAL, not
    while it waits its turn on the storage's thread behind a long read (a review measured
    an append held 61 ms behind a 50,000-entry table's load, against 9 ms before holds)."""
    from rami.server import storage as storage_module

    monkeypatch.setattr(storage_module, "_CHECKPOINT_COMMITS", 10)

    async def main() -> float:
        storage = await storage_module.SqliteStorage.open(str(tmp_path / "rami.db"), summarize)
        try:
            await storage.create_table("a", spec(), SEATS, "")
            busy = asyncio.ensure_future(storage._run(time.sleep, 1.5))  # a long read
            await asyncio.sleep(0.05)
            started = time.monotonic()
            for i in range(1, 41):  # a checkpoint is due at the 10th commit
                await asyncio.wait_for(
                    storage.append(Append("a", i, [entry(i)], "waiting", None, None)), 5
                )
            took = time.monotonic() - started
            await busy
            return took
        finally:
            await storage.close()

    took = run(main)
    assert took < 1.0, f"40 appends took {took:.2f} s beside a 1.5 s job on the storage's thread"


@pytest.mark.parametrize("tables", [1, 18])
def test_the_sqlite_wal_stays_bounded_under_writes_that_never_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tables: int
) -> None:
    """The write-ahead log is copied into the database every so many commits or entries,
    and SQLite starts it over only when a checkpoint has copied all of it. Appends that went
    on while the checkpoint ran left it never whole, and the file grew for as long as the
    writes never paused (some 5 KB a chat line: 86 MB in 150 s of one client's chat at
    every seat of 18 tables, within every rate limit). A commit of many tables' entries
    writes a page or more for each: counted by commits alone, the checkpoints of 18 busy
    tables came after some 50 MB of log. The WAL must stay near what one interval between
    checkpoints writes."""
    from rami.server import storage as storage_module

    monkeypatch.setattr(storage_module, "_CHECKPOINT_COMMITS", 50)
    monkeypatch.setattr(storage_module, "_CHECKPOINT_ROWS", 100)
    path = tmp_path / "rami.db"
    wal = Path(f"{path}-wal")

    async def main() -> tuple[int, int]:
        storage = await storage_module.SqliteStorage.open(str(path), summarize)
        largest = 0
        try:
            for t in range(tables):
                await storage.create_table(f"t{t}", spec(), SEATS, "")

            async def chat(t: int) -> None:
                nonlocal largest
                for i in range(1, 1 + 1800 // tables):
                    await storage.append(Append(f"t{t}", i, [entry(i)], "waiting", None, None))
                    largest = max(largest, wal.stat().st_size)

            await asyncio.gather(*(chat(t) for t in range(tables)))
            return storage.commits, largest
        finally:
            await storage.close()

    commits, largest = run(main)
    assert commits >= 1800 // tables  # the appends of a tick share a commit
    # 100 entries write about 0.5 MB of log; 1,800 of them, 9 MB.
    assert largest < 1_500_000, f"the WAL reached {largest:,} bytes over {commits} commits"


def test_lobby_calls_while_the_store_is_out_of_reach_are_unavailable_not_internal(
    postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With the database out of reach (here: the server's connection pool closed), a lobby
    call is UNAVAILABLE STORAGE_FAILED, to be called again, and no traceback is logged:
    INTERNAL is for the server's own bugs."""
    import grpc
    from server_support import error_of

    from rami.server.testing import ServerThread, Stubs
    from rami.v1 import lobby_service_pb2

    key = str(tmp_path / "server.key")
    with ServerThread(postgres_url, secret_file=key) as srv, Stubs(srv.target) as stubs:
        assert srv.server is not None
        srv.call(srv.server.storage._pool.close())
        calls = [
            lambda: stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=20),
            lambda: stubs.lobby.GetTable(
                lobby_service_pb2.GetTableRequest(table_id="nosuchtable"), timeout=20
            ),
        ]
        for call in calls:
            with pytest.raises(grpc.RpcError) as raised:
                call()
            err = error_of(raised.value)
            assert (err.code, err.reason) == (grpc.StatusCode.UNAVAILABLE, "STORAGE_FAILED")
    assert "Traceback" not in caplog.text and "unexpected error" not in caplog.text


def test_a_postgresql_connection_string_of_keywords_is_refused_without_repeating_it(
    tmp_path: Path,
) -> None:
    """``--db 'host=... password=...'`` is no SQLite file's name: taken for one, it made files
    named with the password and logged it. It is refused at start, saying to use a URL."""
    conninfo = "host=127.0.0.1 port=5432 dbname=rami user=rami password=Hunter2Secret"
    done = subprocess.run(
        [str(SERVER), "--db", conninfo, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert "postgresql://" in done.stderr
    assert "Hunter2Secret" not in done.stderr + done.stdout
    assert list(tmp_path.iterdir()) == []  # no file made from its name


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://rami:k9/Zq?LeakedPart99@127.0.0.1:1/rami",
        "postgresql://rami:k9#LeakedPart99@127.0.0.1:1/rami",
        "postgresql://rami:k9@LeakedPart99@127.0.0.1:1/rami",
        # The rest of the password percent-encoded, its @ not: libpq names the rest, decoded.
        "postgresql://rami:k9@Leaked%2FPart99%3Fx@127.0.0.1:1/rami",
        "postgresql://rami:k9@Leaked%2FPart99@127.0.0.1:1/rami",
    ],
)
def test_a_url_whose_password_breaks_it_is_refused_in_words_without_the_password(
    tmp_path: Path, url: str
) -> None:
    """A password with / # ? or @ not percent-encoded breaks the URL: the server says it
    cannot connect and how to write it, with no traceback and no part of the password."""
    out = _refused_at_start(tmp_path, url)
    assert "cannot connect to PostgreSQL" in out, out
    assert "Leaked" not in out and "Traceback" not in out, out


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="no /sys on this system")
def test_a_database_in_a_folder_the_server_cannot_write_is_refused_saying_so(
    tmp_path: Path,
) -> None:
    """A folder the server may not write in (/sys: even root makes no file there; a
    read-only file system alike) is said in words, with what to do, not as a bare errno."""
    out = _refused_at_start(tmp_path, "/sys/rami.db")
    assert "cannot make /sys/rami.db.lock" in out and "Permission denied" in out, out
    assert "--db" in out and "Errno" not in out and "Traceback" not in out, out


def test_a_url_with_a_setting_libpq_has_not_is_refused_naming_the_setting(tmp_path: Path) -> None:
    """A mistyped setting in the URL's query is named (libpq's words, the settings' names
    shown, their values not), not blamed on a password the URL does not have."""
    out = _refused_at_start(tmp_path, "postgresql://rami@127.0.0.1:1/rami?sslmode=require&bogus=1")
    assert 'invalid URI query parameter: "bogus"' in out, out
    assert "rami?sslmode=***&bogus=***" in out and "percent-encode" not in out, out


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://rami@127.0.0.1:1/rami?password=Hunter2Secret&bogus=1",
        # libpq quotes a token it cannot decode, and # does not end a setting's value.
        "postgresql://rami@127.0.0.1:1/rami?password=Tr0ub#LeakedPart%or",
        "postgresql://rami@127.0.0.1:1/rami?password=Se#LeakedPart%zz",
        "postgresql://rami@127.0.0.1:1/rami?pass%77ord=LeakedPart%zz",
        "postgresql://rami:Hunter2Secret@127.0.0.1:1/rami?bogus=1",
    ],
)
def test_libpq_s_words_on_a_url_with_a_password_are_left_out(tmp_path: Path, url: str) -> None:
    """libpq's words on a URL it cannot read may quote the password: they are shown only for a
    URL that holds none."""
    out = _refused_at_start(tmp_path, url)
    assert "cannot connect to PostgreSQL" in out and "percent-encode" in out, out
    assert "Leaked" not in out and "Hunter2" not in out and "Traceback" not in out, out


def _refused_at_start(folder: Path, db: str) -> str:
    """What ``rami-server --db db`` says, run in ``folder``, as it exits 1 at start."""
    done = subprocess.run(
        [str(SERVER), "--db", db, "--port", "0", "--secret-file", str(folder / "key")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=folder,
    )
    out = done.stderr + done.stdout
    assert done.returncode == 1, out
    return out


def test_only_the_url_s_user_and_password_are_checked_for_an_at() -> None:
    from rami.server.storage import check_store

    # An @ in a setting of the query is the setting's: libpq reads the user and password up
    # to the first /.
    check_store("postgresql://rami@db/rami?application_name=ops@game1")
    check_store("postgresql://rami:pw@db:5432/rami?sslrootcert=/etc/me@corp/ca.pem")
    check_store("data/rami.db")
    check_store("/var/lib/rami//rami.db")
    for refused in ("postgresql://rami:p@ss@db/rami", "postgresql//rami:pw@db/rami"):
        with pytest.raises(OSError) as info:
            check_store(refused)
        assert "pw" not in str(info.value) and "ss@" not in str(info.value), info.value


@pytest.mark.parametrize(
    "db",
    [
        "postgresq://rami:Hunter2Secret@127.0.0.1:5432/rami",
        "postgresql:/rami:Hunter2Secret@127.0.0.1:5432/rami",
        "PostgreSQL://rami:Hunter2Secret@127.0.0.1:5432/rami",
        "mysql://rami:Hunter2Secret@127.0.0.1/rami",
    ],
)
def test_a_mistyped_database_url_is_refused_not_taken_for_a_file(tmp_path: Path, db: str) -> None:
    """A URL whose scheme is mistyped is no SQLite file's name either: taken for one, the
    server made folders named with the password and said it in its log. It is refused at
    start, saying how a PostgreSQL URL begins, and without repeating it."""
    out = _refused_at_start(tmp_path, db)
    assert "postgresql://" in out and "Traceback" not in out, out
    assert "Hunter2Secret" not in out, out
    assert list(tmp_path.iterdir()) == []  # no file or folder made from its name


def test_a_server_with_another_key_than_its_databases_servers_is_refused_at_start(
    postgres_url: str, tmp_path: Path
) -> None:
    """Every server of one database shares one key: the deals of its tables are made from
    it. A server given another key file (or none, a new one made) would claim tables it
    cannot deal and make tables the others cannot load; it stops at start, saying so."""
    first, other = tmp_path / "first.key", tmp_path / "other.key"
    log = tmp_path / "server.log"
    with rami_server(postgres_url, log, args=("--secret-file", str(first))):
        pass  # the database now knows the key's fingerprint (never the key)
    second = subprocess.run(
        [str(SERVER), "--db", postgres_url, "--port", "0", "--secret-file", str(other)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 1, second.stderr
    assert "not the key of this database's servers" in second.stderr, second.stderr
    # The file it named did not exist: made at this start, then refused, it is taken away
    # again (a stray key was left behind), and the refusal asks about the path.
    assert not other.exists()
    assert f"{other} did not exist" in second.stderr, second.stderr
    with rami_server(postgres_url, log, args=("--secret-file", str(first))):
        pass  # the right key still starts


def test_servers_starting_together_on_a_new_database_agree_on_its_key(postgres_url: str) -> None:
    """Several servers started at once on a new database (a compose file, say): making the
    schema and the key's fingerprint table is one server's work at a time, and all start."""
    from rami.server.storage_postgres import PostgresStorage

    async def main() -> None:
        async def one() -> Any:
            storage = await PostgresStorage.open(postgres_url)
            await storage.check_key("f" * 64)
            return storage

        for _ in range(5):
            opened = await asyncio.gather(*(one() for _ in range(3)))
            for storage in opened:
                await storage.close()

    run(main)


def _on_own_postgres(main: Callable[[Any], Awaitable[None]]) -> None:
    """Run ``main`` with a PostgreSQL server of its own, which it may stop (or skip)."""
    from postgres_support import PostgresServer, unavailable

    why = unavailable()
    if why is not None:
        pytest.skip(f"no PostgreSQL: {why}")
    pg = PostgresServer().start()
    try:
        asyncio.run(main(pg))
    finally:
        pg.stop()


def test_a_call_during_a_postgresql_outage_fails_within_seconds() -> None:
    """The database stopped: a call that needs a connection (a lobby's list, a directory
    read) is refused as an outage within a few seconds, well inside a client's 10 s call, not
    after waiting as long as the client does (it then heard DEADLINE_EXCEEDED, not
    UNAVAILABLE)."""
    from rami.server.storage import is_outage
    from rami.server.storage_postgres import PostgresStorage

    async def main(pg: Any) -> None:
        storage = await PostgresStorage.open(pg.database())
        try:
            assert await storage.list_tables() == []
            pg._run(str(pg.bindir / "pg_ctl"), "-D", str(pg.data), "-m", "immediate", "stop")
            loop = asyncio.get_running_loop()
            for call in range(3):  # the pool's connections are found broken, then none is left
                start = loop.time()
                with pytest.raises(Exception) as refused:
                    await storage.list_tables()
                took = loop.time() - start
                assert is_outage(refused.value), refused.value
                assert took < 5.0, f"call {call}: an outage was told after {took:.1f} s"
        finally:
            await asyncio.wait_for(storage.close(), 30)

    _on_own_postgres(main)


def _postgres_pids(pg: Any) -> list[int]:
    """The processes of ``pg``: its postmaster and every process it started."""
    postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
    pids = [postmaster]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                pids.append(int(stat.parent.name))
    return pids


def test_closing_the_storage_while_postgresql_hangs_ends_within_seconds() -> None:
    """Every process of the database stopped (SIGSTOP: a database that hangs, or a network
    that drops every packet after the kernel took them) with a group commit sent: closing the
    storage, the last step of a server's stop, gives the commit up within seconds, and tells
    its appends that they may or may not be stored; it waited until the database woke up,
    and so did the server's SIGTERM. Woken, the database may yet commit what it had read:
    hence "may or may not"."""
    from rami.server.storage import Unknown
    from rami.server.storage_postgres import PostgresStorage

    async def main(pg: Any) -> None:
        url = pg.database()
        storage = await PostgresStorage.open(url)
        await storage.create_table("a", spec(), SEATS, "")
        # Idle connections in the pool besides the one the commit takes: none of them is
        # asked whether the commit went through (the database would not answer either).
        await asyncio.gather(*(storage.list_tables() for _ in range(4)))
        pids = _postgres_pids(pg)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            append = asyncio.ensure_future(
                storage.append(Append("a", 1, [entry(1)], "playing", None, None))
            )
            await asyncio.sleep(0.5)
            assert not append.done()
            loop = asyncio.get_running_loop()
            start = loop.time()
            await asyncio.wait_for(storage.close(), 30)
            took = loop.time() - start
            assert took < 6.0, f"the storage closed {took:.1f} s after it was asked to"
            with pytest.raises(Unknown):
                await asyncio.wait_for(append, 5)
        finally:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        await asyncio.sleep(1.0)
        again = await PostgresStorage.open(url)
        try:
            stored = await again.load_table("a")
            # The commit had reached the database's socket: awake, it read it and stored it.
            assert stored is not None and stored.entries == [entry(1)]
        finally:
            await again.close()

    _on_own_postgres(main)


def test_after_a_long_postgresql_outage_the_storage_is_back_within_seconds() -> None:
    """The database down for 40 s, then back: the storage answers again within seconds, as a
    server calls it (a lease renewal every few seconds), not after the pool's doubling waits
    between its tries (1, 2, 4, ... 32 s: an operator saw a server blind for 51 s after a
    70 s outage, with psql answering at once)."""
    from rami.server.storage import is_outage
    from rami.server.storage_postgres import PostgresStorage

    async def main(pg: Any) -> None:
        ctl = str(pg.bindir / "pg_ctl")
        storage = await PostgresStorage.open(pg.database())
        loop = asyncio.get_running_loop()
        try:
            assert await storage.list_tables() == []
            pg._run(ctl, "-D", str(pg.data), "-m", "immediate", "stop")
            down = loop.time()
            while loop.time() - down < 40:
                with pytest.raises(Exception) as refused:
                    await storage.list_tables()
                assert is_outage(refused.value), refused.value
                await asyncio.sleep(2)
            await asyncio.to_thread(
                pg._run, ctl, "-D", str(pg.data), "-l", str(pg.log), "-w", "start"
            )
            back = loop.time()
            while True:
                try:
                    assert await storage.list_tables() == []
                    break
                except Exception as e:
                    assert is_outage(e), e
                    blind = loop.time() - back
                    assert blind < 10, f"still out of reach {blind:.0f} s after the database"
                    await asyncio.sleep(1)
        finally:
            await asyncio.wait_for(storage.close(), 30)

    _on_own_postgres(main)


def test_a_sqlite_database_restored_without_its_key_is_refused_at_start(tmp_path: Path) -> None:
    """A database copied back without its key file: a new key was made, and every table was
    left out at start ("the server key does not make the deal") while the lobby still listed
    it, playing, and Watch answered NOT_FOUND. Refused at start as on PostgreSQL, the key
    made at that start taken away again; an empty database takes the new key."""
    import grpc

    from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc

    db, log = tmp_path / "rami.db", tmp_path / "server.log"
    with rami_server(db, log) as (_, address):
        pass  # a new database and its key: nothing dealt yet
    (tmp_path / "rami.db.key").unlink()
    with rami_server(db, log) as (_, address), grpc.insecure_channel(address) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                variant=game_pb2.VARIANT_SIMPLE, options=game_pb2.Options(players=2)
            ),
            timeout=10,
        )
    (tmp_path / "rami.db.key").rename(tmp_path / "kept.key")
    done = subprocess.run(
        [str(SERVER), "--db", str(db), "--port", "0"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 1, done.stderr
    assert "restore the key file kept with the database" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    # One server on SQLite: there are no other servers to ask about.
    assert "other servers" not in done.stderr, done.stderr
    assert not (tmp_path / "rami.db.key").exists()  # made at that start, taken away again
    (tmp_path / "kept.key").rename(tmp_path / "rami.db.key")
    with rami_server(db, log):
        pass  # its own key starts it


def test_the_port_check_refuses_only_what_grpc_would_not_bind() -> None:
    """gRPC listens when any of the host's addresses binds: ``localhost`` with 127.0.0.1 in
    use by another process still listens on ::1, and the server starts as before the check."""
    import socket

    from rami.server.app import check_port

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(OSError, match=f"could not listen on 127.0.0.1:{port}"):
            check_port("127.0.0.1", port)
        try:
            with socket.socket(socket.AF_INET6) as v6:
                v6.bind(("::1", port))
        except OSError:
            pytest.skip("no IPv6 loopback here to listen on beside 127.0.0.1")
        check_port("localhost", port)  # ::1 is free: no refusal


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a file another user cannot open")
def test_a_lock_file_another_user_left_is_named_not_the_folder(tmp_path: Path) -> None:
    """A lock file left by a server of another user (mode 0600): the folder is writable, the
    file is the trouble, and the words say so."""
    import shutil
    import tempfile

    # A folder the other user reaches (pytest's own sit in a folder only root may enter).
    folder = Path(tempfile.mkdtemp(prefix="rami-lock-", dir="/tmp"))
    try:
        folder.chmod(0o777)
        lock = folder / "rami.db.lock"
        lock.write_text("1")
        lock.chmod(0o600)
        code = (
            "import os\n"
            "from rami.server.storage import _hold_alone\n"  # before: root's files stay root's
            "os.setgid(65534); os.setuid(65534)\n"
            f"_hold_alone({str(folder / 'rami.db')!r})\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
    finally:
        shutil.rmtree(folder)
    assert "cannot open" in done.stderr and "It is there already" in done.stderr, done.stderr
    assert "in a folder it may write in" not in done.stderr, done.stderr
