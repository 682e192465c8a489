"""Storage on PostgreSQL: the same directory and logs as :class:`SqliteStorage`, shared by
every server that opens the same database (``rami-server --db postgresql://...``).

The driver is psycopg 3 with its connection pool (``pip install rami[postgres]``): it takes
any libpq connection string as libpq reads it (URLs, ``service=``, ``sslmode``, the
``PG*`` environment variables, ``~/.pgpass``), and its pipeline mode sends the appends of a
tick and their commit in one round trip.

The log's order is kept by the database, not by this process, so that it holds across
servers: an append is a call of the function ``rami_append`` which, in one transaction,
moves the table's directory row from the number before the append's first entry to its last
(``UPDATE ... WHERE number = first - 1``: the row lock makes a second writer wait for the
first one's commit, then find the number moved on), and inserts the entries under the key
(table_id, number). A writer that is not where it thinks it is stores nothing and gets a
:class:`Conflict`; no two writers can store the same number, nor leave a gap.

The appends of one event-loop tick, across all tables, share one transaction (a group
commit), sent as one pipeline (BEGIN, the appends, COMMIT: one round trip), each answered
after that transaction has committed: with PostgreSQL's default ``synchronous_commit = on``,
once the commit's WAL record is flushed to the database's disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .entries import Mark
from .storage import Append, Conflict, Created, StoredTable, Summarize, TableRow, _json

__all__ = [
    "PG_SCHEMA_VERSION",
    "PostgresStorage",
    "PostgresUnavailable",
    "is_postgres_url",
    "redacted",
]

#: The version of the PostgreSQL schema this code writes (the row of ``rami_schema``).
PG_SCHEMA_VERSION = 1

#: Any server of this version that opens the database makes what is missing of it under this
#: advisory lock, one at a time.
_SCHEMA_LOCK = 0x52414D49  # "RAMI"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rami_schema (
    only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS rami_tables (
    table_id TEXT PRIMARY KEY,
    -- the order of creation, for ties of ``created`` (SQLite's rowid)
    seq BIGSERIAL NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    spec TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'waiting'
        CHECK (status IN ('waiting', 'playing', 'finished', 'closed')),
    number BIGINT NOT NULL DEFAULT 0,
    seats TEXT NOT NULL DEFAULT '[]',
    options TEXT NOT NULL DEFAULT '{}',
    variant TEXT NOT NULL DEFAULT '',
    client TEXT NOT NULL DEFAULT '',
    private BOOLEAN NOT NULL DEFAULT FALSE,
    -- the mark of the request id the table was created with ('': none)
    request TEXT NOT NULL DEFAULT '',
    request_digest TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS rami_entries (
    table_id TEXT NOT NULL REFERENCES rami_tables (table_id),
    number BIGINT NOT NULL CHECK (number > 0),
    entry TEXT NOT NULL,
    -- the table's status after this entry
    status TEXT NOT NULL,
    PRIMARY KEY (table_id, number)
);
CREATE TABLE IF NOT EXISTS rami_tokens (
    token_hash TEXT PRIMARY KEY,
    table_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS rami_tokens_by_table ON rami_tokens (table_id);
CREATE INDEX IF NOT EXISTS rami_tables_by_status ON rami_tables (status, created);
CREATE INDEX IF NOT EXISTS rami_tables_by_client ON rami_tables (client, status);
-- A request id creates one table at most.
CREATE UNIQUE INDEX IF NOT EXISTS rami_tables_by_request ON rami_tables (request)
    WHERE request != '';

-- One append: NULL once stored, else why it was not (and then it stored nothing).
CREATE OR REPLACE FUNCTION rami_append(
    p_table TEXT, p_first BIGINT, p_status TEXT, p_entries TEXT[],
    p_seats TEXT, p_options TEXT, p_tokens TEXT[]
) RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
    n BIGINT := coalesce(array_length(p_entries, 1), 0);
    found_number BIGINT;
BEGIN
    -- The row lock of this UPDATE orders the writers of a table: a second one waits for the
    -- first one's commit, then finds the number moved on.
    UPDATE rami_tables SET
        number = p_first + n - 1,
        status = p_status,
        seats = coalesce(p_seats, seats),
        options = coalesce(p_options, options)
    WHERE table_id = p_table AND number = p_first - 1;
    IF NOT FOUND THEN
        SELECT number INTO found_number FROM rami_tables WHERE table_id = p_table;
        IF found_number IS NULL THEN
            RETURN format('no table %L is stored', p_table);
        END IF;
        RETURN format('table %s: entry %s appended after entry %s',
                      p_table, p_first, found_number);
    END IF;
    BEGIN
        INSERT INTO rami_entries (table_id, number, entry, status)
            SELECT p_table, p_first + e.i - 1, e.entry, p_status
            FROM unnest(p_entries) WITH ORDINALITY AS e(entry, i);
    EXCEPTION WHEN unique_violation THEN
        -- Entries stored beyond the directory's number: never written by this schema's
        -- function, refused all the same (this block's writes, the UPDATE's too, undone).
        RAISE EXCEPTION 'table %: entry % is stored already', p_table, p_first
            USING ERRCODE = 'RM001';
    END;
    IF p_tokens IS NOT NULL THEN
        DELETE FROM rami_tokens WHERE table_id = p_table;
        INSERT INTO rami_tokens (token_hash, table_id)
            SELECT DISTINCT t, p_table FROM unnest(p_tokens) AS t
            ON CONFLICT (token_hash) DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
"""

_ROW = "table_id, spec, status, number, seats, options, created"
_APPEND = "SELECT rami_append(%s, %s, %s, %s, %s, %s, %s)"


class PostgresUnavailable(OSError):
    """The database cannot be used: no driver installed, or no connection to be had."""


def is_postgres_url(db: str) -> bool:
    """True when ``--db`` names a PostgreSQL database (a libpq URL) rather than a file."""
    return db.startswith(("postgresql://", "postgres://"))


def redacted(db: str) -> str:
    """``db`` as a log may show it: a URL's password (and its query, which may hold one) left
    out."""
    if not is_postgres_url(db):
        return db
    parts = urlsplit(db)
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        if ":" in user:
            user = user.split(":", 1)[0] + ":***"
        netloc = f"{user}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "", ""))


def _row(r: tuple[Any, ...]) -> TableRow:
    return TableRow(
        r[0], json.loads(r[1]), r[2], int(r[3]), json.loads(r[4]), json.loads(r[5]), r[6]
    )


def _params(a: Append) -> tuple[Any, ...]:
    changed = a.seats is not None and a.options is not None
    return (
        a.table_id,
        a.first,
        a.status,
        [_json(e) for e in a.entries],
        _json(a.seats) if changed else None,
        _json(a.options) if changed else None,
        list(a.tokens) if a.tokens is not None else None,
    )


def _missing_driver() -> PostgresUnavailable:
    return PostgresUnavailable(
        "PostgreSQL storage needs psycopg 3 and its pool: pip install 'rami[postgres]'"
    )


@dataclass(eq=False)
class PostgresStorage:
    """Storage in a PostgreSQL database, which several servers may share.

    Open it with :meth:`open`. Reads run on connections of a small pool, side by side; the
    appends of a tick go in one transaction on one connection, one such transaction at a time.
    """

    url: str
    _pool: Any
    _pending: list[tuple[Append, asyncio.Future[None]]] = field(default_factory=list)
    _scheduled: bool = False
    _writing: asyncio.Task[None] | None = None
    #: Transactions of appends committed so far (for tests and benchmarks).
    commits: int = 0
    #: Called just before each group commit, inside its transaction (tests use it).
    before_commit: Callable[[], None] | None = None
    #: Called just after it, before its answers are read (tests lose them with it).
    after_commit: Callable[[], None] | None = None

    @classmethod
    async def open(
        cls, url: str, summarize: Summarize | None = None, *, pool_size: int = 4
    ) -> PostgresStorage:
        """Connect to the database at ``url`` (a libpq connection string), creating or
        migrating its schema. ``summarize`` is taken for the same call as SQLite's, unused:
        no PostgreSQL schema before version 1 needs a log replayed."""
        try:
            import psycopg
            from psycopg_pool import AsyncConnectionPool
        except ImportError:
            raise _missing_driver() from None
        # The schema first, on a connection of its own: a database that cannot be reached
        # fails here at once, in libpq's words, instead of after the pool's wait.
        try:
            conn = await psycopg.AsyncConnection.connect(
                url, autocommit=True, connect_timeout=10, application_name="rami-server"
            )
        except psycopg.OperationalError as e:
            raise PostgresUnavailable(
                f"cannot connect to PostgreSQL at {redacted(url)}: {str(e).strip()}"
            ) from None
        try:
            await _migrate(conn)
        finally:
            await conn.close()
        pool = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "application_name": "rami-server"},
            # How long a call waits for a connection (the database down, say) before failing.
            timeout=10.0,
            open=False,
            name="rami",
        )
        try:
            await pool.open(wait=True, timeout=30.0)
        except BaseException:
            await pool.close()
            raise
        return cls(url, pool)

    # -- the directory ----------------------------------------------------------------------

    async def create_table(
        self,
        table_id: str,
        spec: dict[str, Any],
        seats: list[dict[str, Any]],
        owner: str,
        request: Mark | None = None,
    ) -> Created | None:
        from psycopg import errors

        try:
            async with self._pool.connection() as conn, conn.transaction():
                await conn.execute(
                    "INSERT INTO rami_tables (table_id, created, spec, seats, options, variant,"
                    " client, private, request, request_digest)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        table_id,
                        time.time(),
                        _json(spec),
                        _json(seats),
                        _json(spec["options"]),
                        spec["variant"],
                        spec.get("client", ""),
                        bool(spec.get("private")),
                        request.key if request else "",
                        request.digest if request else "",
                    ),
                )
                if owner:
                    await conn.execute(
                        "INSERT INTO rami_tokens VALUES (%s, %s) ON CONFLICT DO NOTHING",
                        (owner, table_id),
                    )
        except errors.UniqueViolation:
            # A request that raced its own retry (on this server or another) finds the table
            # the first one stored.
            if request is not None:
                before = await self.created_by(request.key)
                if before is not None:
                    return before
            raise
        return None

    async def created_by(self, key: str) -> Created | None:
        if not key:
            return None
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT table_id, request, request_digest FROM rami_tables WHERE request = %s",
                (key,),
            )
            r = await cur.fetchone()
        return Created(r[0], Mark(r[1], r[2])) if r else None

    async def get_table(self, table_id: str) -> TableRow | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT {_ROW} FROM rami_tables WHERE table_id = %s", (table_id,)
            )
            r = await cur.fetchone()
        return _row(r) if r else None

    async def list_tables(
        self, *, variant: str = "", status: str = "", limit: int = 200
    ) -> list[TableRow]:
        where, args = ["NOT private"], []
        if variant:
            where.append("variant = %s")
            args.append(variant)
        if status:
            where.append("status = %s")
            args.append(status)
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT {_ROW} FROM rami_tables WHERE {' AND '.join(where)}"
                " ORDER BY created DESC, seq DESC LIMIT %s",
                (*args, limit),
            )
            rows = await cur.fetchall()
        return [_row(r) for r in rows]

    async def unfinished(self) -> list[str]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT table_id FROM rami_tables WHERE status NOT IN ('finished', 'closed')"
                " ORDER BY created, seq"
            )
            return [r[0] for r in await cur.fetchall()]

    async def active_tables(self, client: str) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM rami_tables"
                " WHERE client = %s AND status NOT IN ('finished', 'closed')",
                (client,),
            )
            r = await cur.fetchone()
        return int(r[0])

    async def token_known(self, token_hash: str) -> bool:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT 1 FROM rami_tokens WHERE token_hash = %s", (token_hash,)
            )
            return await cur.fetchone() is not None

    # -- logs -------------------------------------------------------------------------------

    async def load_table(self, table_id: str) -> StoredTable | None:
        # One snapshot for the row and the entries: the row's number is the log's last.
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur = await conn.execute(
                f"SELECT {_ROW} FROM rami_tables WHERE table_id = %s", (table_id,)
            )
            r = await cur.fetchone()
            if r is None:
                return None
            cur = await conn.execute(
                "SELECT entry FROM rami_entries WHERE table_id = %s ORDER BY number",
                (table_id,),
            )
            entries = [json.loads(e) for (e,) in await cur.fetchall()]
        return StoredTable(_row(r), entries)

    async def append(self, append: Append) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((append, done))
        if not self._scheduled:
            # At the end of this tick: the appends of every table made in it share a commit.
            self._scheduled = True
            loop.call_soon(self._flush)
        await done

    def _flush(self) -> None:
        self._scheduled = False
        if self._writing is not None or not self._pending:
            return  # the write under way flushes again when it ends
        batch, self._pending = self._pending, []
        self._writing = asyncio.ensure_future(self._write(batch))
        self._writing.add_done_callback(self._written)

    def _written(self, _: asyncio.Task[None]) -> None:
        self._writing = None
        if self._pending:
            self._flush()  # what came in while this transaction was being written

    async def _write(self, batch: list[tuple[Append, asyncio.Future[None]]]) -> None:
        """One transaction for the whole batch, sent with its commit in one pipeline: each
        append is stored whole or not at all (its Conflict), whatever the others do."""
        results: list[str | None] = []
        try:
            async with self._pool.connection() as conn:
                # BEGIN, the appends and COMMIT go out together, and the pipeline's one sync
                # at its end waits for all their answers: one round trip. Should anything
                # fail in it, the server aborts the transaction, and the rest is not run.
                try:
                    async with conn.pipeline():
                        await conn.execute("BEGIN")
                        cursors = [await conn.execute(_APPEND, _params(a)) for a, _ in batch]
                        if self.before_commit is not None:
                            self.before_commit()
                        await conn.execute("COMMIT")
                except BaseException:
                    await _rollback(conn)
                    raise
                if self.after_commit is not None:
                    self.after_commit()
                for cur in cursors:
                    row = await cur.fetchone()
                    results.append(row[0] if row else "no answer from the database")
        except BaseException as e:
            stored: list[bool] = [False] * len(batch)
            if isinstance(e, Exception):
                # The commit may have happened with its answer lost (the connection dropped):
                # an append whose entries are in the log, as written, was stored.
                stored = await self._stored(batch)
            for (_, done), was_stored in zip(batch, stored, strict=True):
                if done.done():
                    continue
                if was_stored:
                    done.set_result(None)
                elif isinstance(e, asyncio.CancelledError):
                    done.cancel()
                else:
                    done.set_exception(e)
            if not isinstance(e, Exception):
                raise
            return
        self.commits += 1
        for (_, done), why in zip(batch, results, strict=True):
            if done.done():
                continue
            if why is None:
                done.set_result(None)
            else:
                done.set_exception(Conflict(why))

    async def _stored(self, batch: list[tuple[Append, asyncio.Future[None]]]) -> list[bool]:
        """For each append of a batch whose transaction failed: whether its entries are in
        the log all the same, exactly as it wrote them (False when that cannot be known)."""
        found = []
        try:
            async with self._pool.connection(timeout=5.0) as conn:
                for a, _ in batch:
                    cur = await conn.execute(
                        "SELECT entry FROM rami_entries WHERE table_id = %s"
                        " AND number BETWEEN %s AND %s ORDER BY number",
                        (a.table_id, a.first, a.first + len(a.entries) - 1),
                    )
                    rows = [r[0] for r in await cur.fetchall()]
                    found.append(bool(rows) and rows == [_json(e) for e in a.entries])
        except Exception:
            return [False] * len(batch)
        return found

    async def close(self) -> None:
        while self._pending or self._writing is not None:
            if self._writing is not None:
                await asyncio.wait([self._writing])
            else:
                self._flush()
        await self._pool.close()


async def _rollback(conn: Any) -> None:
    """End the transaction a failed batch left open, if the connection still works (else the
    pool discards it)."""
    from psycopg import pq

    if conn.closed or conn.info.transaction_status == pq.TransactionStatus.IDLE:
        return
    with contextlib.suppress(Exception):
        await conn.execute("ROLLBACK")


async def _migrate(conn: Any) -> None:
    """Create what is missing of the schema, or refuse a newer one (one server at a time)."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        cur = await conn.execute("SELECT to_regclass('rami_schema') IS NOT NULL")
        row = await cur.fetchone()
        version = 0
        if row and row[0]:
            cur = await conn.execute("SELECT version FROM rami_schema")
            found = await cur.fetchone()
            version = int(found[0]) if found else 0
        if version > PG_SCHEMA_VERSION:
            raise RuntimeError(
                f"the database's rami schema is version {version}, newer than this server's"
                f" ({PG_SCHEMA_VERSION})"
            )
        # IF NOT EXISTS throughout: makes what is missing. Later versions step up from here,
        # each in this transaction.
        await conn.execute(_SCHEMA)
        await conn.execute(
            "INSERT INTO rami_schema (version) VALUES (%s)"
            " ON CONFLICT (only_row) DO UPDATE SET version = EXCLUDED.version",
            (PG_SCHEMA_VERSION,),
        )
