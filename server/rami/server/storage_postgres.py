"""Storage on PostgreSQL: the same directory and logs as :class:`SqliteStorage`, shared by
every server that opens the same database (``rami-server --db postgresql://...``).

The driver is psycopg 3 with its connection pool (the extra ``postgres``: ``pip install -e
'.[postgres]'``): it takes any libpq connection string as libpq reads it (URLs, ``service=``,
``sslmode``, the ``PG*`` environment variables, ``~/.pgpass``), and its pipeline mode sends
the appends of a tick and their commit in one round trip.

The log's order is kept by the database, not by this process, so that it holds across
servers: an append is a call of the function ``rami_append`` which, in one transaction,
moves the table's directory row from the number before the append's first entry to its last
(``UPDATE ... WHERE number = first - 1``: the row lock makes a second writer wait for the
first one's commit, then find the number moved on), and inserts the entries under the key
(table_id, number). A writer that is not where it thinks it is stores nothing and gets a
:class:`Conflict`; no two writers can store the same number, nor leave a gap.

Each table is played by one server at a time, by lease (schema version 2): ``rami_leases``
names its owner (a server id, and the address its clients are sent to), the lease's expiry
(by the database's clock) and its epoch, which ``rami_claim`` moves on at every takeover, in
the lease and in the table's directory row. ``rami_append`` checks the writer's epoch in the
same UPDATE as the number: an old owner whose lease was taken over stores nothing and gets
:class:`Fenced` (with the new owner's address), whatever its clock says. Owners renew their
leases in one statement (:meth:`PostgresStorage.renew`).

The appends of one event-loop tick, across all tables, share one transaction (a group
commit), sent as one pipeline (BEGIN, the appends, COMMIT: one round trip), each answered
after that transaction has committed: with PostgreSQL's default ``synchronous_commit = on``,
once the commit's WAL record is flushed to the database's disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar
from urllib.parse import unquote

from .entries import Mark
from .storage import (
    Append,
    Conflict,
    Created,
    Fenced,
    Lease,
    NoAnswer,
    RematchMade,
    StoredTable,
    Summarize,
    TableRow,
    Unknown,
    _json,
    is_postgres_url,
    redacted,
)

__all__ = [
    "PG_SCHEMA_VERSION",
    "PostgresStorage",
    "PostgresUnavailable",
    "is_postgres_url",
    "redacted",
]

log = logging.getLogger("rami.server")


def _index(name: str, what: str, unique: str = "") -> str:
    """An index made where it is missing. ``CREATE INDEX IF NOT EXISTS`` would lock its table
    (against writes) even when the index is there, at every server's start: behind a
    transaction left open that wrote the table, the start waited, and every other server's
    appends waited behind it."""
    sql = f"CREATE {unique}INDEX {name} {what}".replace("'", "''")
    return (
        f"DO $index$ BEGIN IF to_regclass('{name}') IS NULL THEN EXECUTE '{sql}';"
        " END IF; END $index$;"
    )


def _add_column(name: str, kind: str) -> str:
    """A column of ``rami_tables`` added where it is missing. ``ALTER TABLE ... ADD COLUMN IF
    NOT EXISTS`` would lock the whole table even when the column is there: behind a backup's
    long read (pg_dump), and with every other server's statement on the table queued behind
    that lock, a server's start would stall them all until the backup ended."""
    return (
        "DO $add$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_attribute"
        " WHERE attrelid = 'rami_tables'::regclass"
        f" AND attname = '{name}' AND NOT attisdropped) THEN"
        f" ALTER TABLE rami_tables ADD COLUMN {name} {kind}; END IF; END $add$;"
    )


#: The version of the PostgreSQL schema this code writes (the row of ``rami_schema``).
PG_SCHEMA_VERSION = 2

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
""" + "\n".join(
    # Each index made where it is missing (see _index).
    [
        _index("rami_tokens_by_table", "ON rami_tokens (table_id)"),
        _index("rami_tables_by_status", "ON rami_tables (status, created)"),
        _index("rami_tables_by_client", "ON rami_tables (client, status)"),
        # A request id creates one table at most.
        _index("rami_tables_by_request", "ON rami_tables (request) WHERE request != ''", "UNIQUE "),
    ]
)

#: Version 2: leases. A row per table names the server that owns it (its id, and the address
#: its clients should use), until when, and the epoch of its lease, which moves on at every
#: takeover; the table's directory row holds the epoch too, and an append checks it, with the
#: number, in the UPDATE that orders the table's writers.
#: The fingerprint of the key every server of the database shares (made by the first; any
#: version of the schema may hold it: a server of older code checks nothing).
_SCHEMA_KEY = """
CREATE TABLE IF NOT EXISTS rami_key (
    only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    fingerprint TEXT NOT NULL
);
"""

#: The id of a finished table's rematch ('': none yet), set in the transaction that stores the
#: rematch table. Like the key's fingerprint, any version of the schema may hold it: a server of
#: older code neither reads nor writes it (its statements name their columns), so it is added
#: without a new version, which would keep such servers from starting on the database.
_SCHEMA_REMATCH = _add_column("rematch", "TEXT NOT NULL DEFAULT ''")

_SCHEMA_V2 = (
    _add_column("epoch", "BIGINT NOT NULL DEFAULT 0")
    + """
CREATE TABLE IF NOT EXISTS rami_leases (
    table_id TEXT PRIMARY KEY REFERENCES rami_tables (table_id),
    owner TEXT NOT NULL,
    address TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    expiry TIMESTAMPTZ NOT NULL
);
"""
    + _index("rami_leases_by_owner", "ON rami_leases (owner)")
    + """
-- Version 1's append checked no epoch: a server of that version can no longer write.
DROP FUNCTION IF EXISTS rami_append(TEXT, BIGINT, TEXT, TEXT[], TEXT, TEXT, TEXT[]);

-- One append: NULL once stored, else {kind, why} (and then it stored nothing): kind
-- 'conflict' (not where it thought it was) or 'fenced' (its lease was taken over; a third
-- element, the address of the table's owner now).
CREATE OR REPLACE FUNCTION rami_append(
    p_table TEXT, p_first BIGINT, p_status TEXT, p_entries TEXT[],
    p_seats TEXT, p_options TEXT, p_tokens TEXT[], p_epoch BIGINT
) RETURNS TEXT[] LANGUAGE plpgsql AS $$
DECLARE
    n BIGINT := coalesce(array_length(p_entries, 1), 0);
    found_number BIGINT;
    found_epoch BIGINT;
BEGIN
    -- The row lock of this UPDATE orders the writers of a table, and its takeovers (which
    -- move the epoch on in this row): a second one waits for the first one's commit, then
    -- finds the number, or the epoch, moved on.
    UPDATE rami_tables SET
        number = p_first + n - 1,
        status = p_status,
        seats = coalesce(p_seats, seats),
        options = coalesce(p_options, options)
    WHERE table_id = p_table AND number = p_first - 1 AND epoch = p_epoch;
    IF NOT FOUND THEN
        SELECT number, epoch INTO found_number, found_epoch
            FROM rami_tables WHERE table_id = p_table;
        IF found_number IS NULL THEN
            RETURN ARRAY['conflict', format('no table %L is stored', p_table)];
        END IF;
        IF found_epoch != p_epoch THEN
            RETURN ARRAY['fenced',
                format('table %s: the lease of epoch %s was taken over (epoch %s)',
                       p_table, p_epoch, found_epoch),
                coalesce((SELECT address FROM rami_leases WHERE table_id = p_table), '')];
        END IF;
        RETURN ARRAY['conflict', format('table %s: entry %s appended after entry %s',
                                        p_table, p_first, found_number)];
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

-- A claim of a table's lease: {won, epoch, address}. It wins when the lease is free (never
-- held, expired, released) or this server's already, or, with p_by_address, held under this
-- server's address (by the process it replaces there: two servers can't listen at one
-- address), and moves the epoch on, in the lease and in the directory row (whose lock orders
-- it with the appends). Of racing claims, one wins: the others wait for its commit on the
-- lease's key, then find the lease taken. No row: no such table.
CREATE OR REPLACE FUNCTION rami_claim_as(
    p_table TEXT, p_owner TEXT, p_address TEXT, p_seconds DOUBLE PRECISION,
    p_by_address BOOLEAN
) RETURNS TABLE (o_won BOOLEAN, o_epoch BIGINT, o_address TEXT) LANGUAGE plpgsql AS $$
DECLARE
    before BIGINT;
    got BIGINT;
BEGIN
    SELECT t.epoch INTO before FROM rami_tables t WHERE t.table_id = p_table;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO rami_leases AS l (table_id, owner, address, epoch, expiry)
        VALUES (p_table, p_owner, p_address, before + 1,
                now() + make_interval(secs => p_seconds))
    ON CONFLICT (table_id) DO UPDATE SET
        owner = EXCLUDED.owner,
        address = EXCLUDED.address,
        epoch = greatest(l.epoch, before) + 1,
        expiry = EXCLUDED.expiry
    WHERE l.expiry < now() OR l.owner = p_owner OR (p_by_address AND l.address = p_address)
    RETURNING l.epoch INTO got;
    IF got IS NULL THEN
        RETURN QUERY SELECT FALSE, l.epoch, l.address FROM rami_leases l
            WHERE l.table_id = p_table;
        RETURN;
    END IF;
    UPDATE rami_tables t SET epoch = got WHERE t.table_id = p_table;
    RETURN QUERY SELECT TRUE, got, p_address;
END
$$;

-- The claim of servers before rami_claim_as: by address too.
CREATE OR REPLACE FUNCTION rami_claim(
    p_table TEXT, p_owner TEXT, p_address TEXT, p_seconds DOUBLE PRECISION
) RETURNS TABLE (o_won BOOLEAN, o_epoch BIGINT, o_address TEXT) LANGUAGE sql AS $$
    SELECT * FROM rami_claim_as(p_table, p_owner, p_address, p_seconds, TRUE)
$$;
"""
)

_ROW = "table_id, spec, status, number, seats, options, created, rematch"
_APPEND = "SELECT rami_append(%s, %s, %s, %s, %s, %s, %s, %s)"


class PostgresUnavailable(OSError):
    """The database cannot be used: no driver installed, or no connection to be had."""


def _row(r: tuple[Any, ...]) -> TableRow:
    return TableRow(
        r[0], json.loads(r[1]), r[2], int(r[3]), json.loads(r[4]), json.loads(r[5]), r[6], r[7]
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
        a.epoch,
    )


def new_server_id() -> str:
    """An id for this server process in the leases it holds: its host, process and a random
    part (a restarted server is another owner)."""
    return f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"


def _missing_driver() -> PostgresUnavailable:
    return PostgresUnavailable(
        "PostgreSQL storage needs psycopg 3 and its pool: pip install 'psycopg[binary,pool]'"
        " (rami's extra postgres: pip install -e '.[postgres]' in its checkout)"
    )


#: Seconds a call waits for one of the pool's connections before it fails as an outage.
POOL_WAIT = 3.0
#: Seconds a server's start waits for a lock its schema change needs (a column added to the
#: directory, once, by a new version) before it gives up: meanwhile every other server's
#: statement on that table waits behind the request.
MIGRATION_LOCK_WAIT = 2.0
#: Seconds the storage's close waits for a group commit the database has not answered.
CLOSE_WAIT = 2.0
#: The time a call that a client's request waits for (a claim of a table, its load, its
#: owner) is given before the database counts as out of reach (:meth:`PostgresStorage.
#: _answered`): the pool's wait and a second, well inside a client's own wait (the bot kit's
#: and the client's 10 s), so that it hears UNAVAILABLE/STORAGE_FAILED, not its deadline. The
#: lease's own calls (renew, release, which tables may be claimed, how many servers) are given
#: a lease, at least this.
ANSWER_WAIT = POOL_WAIT + 1.0
#: Seconds the pool tries to replace a lost connection before it gives up (then the next call
#: that needs one starts trying again at once). Its waits between tries double from 1 s, with
#: no bound but this: left at psycopg_pool's 300 s, a server tried again 32 s, then 64 s after
#: the last failure, and stayed blind for most of a minute after the database was back.
POOL_RECONNECT = 8.0


T = TypeVar("T")
P = ParamSpec("P")


def _bounded(
    what: str, wait: float = 0.0
) -> Callable[[Callable[P, Awaitable[T]]], Callable[P, Awaitable[T]]]:
    """A storage call the database must answer in time (:meth:`PostgresStorage._answered`:
    ``wait`` seconds, 0 for a lease), or :class:`NoAnswer`; ``what`` names it in that."""

    def bound(method: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        @functools.wraps(method)
        async def bounded(*args: P.args, **kwargs: P.kwargs) -> T:
            storage = args[0]
            assert isinstance(storage, PostgresStorage)
            return await storage._answered(method(*args, **kwargs), what, wait)

        return bounded

    return bound


@dataclass(eq=False)
class PostgresStorage:
    """Storage in a PostgreSQL database, which several servers may share.

    Open it with :meth:`open`. Reads run on connections of a small pool, side by side; the
    appends of a tick go in one transaction on one connection, one such transaction at a time.
    """

    url: str
    _pool: Any
    #: This server's id in the leases it holds, the address its clients should use, and how
    #: long a lease lasts unless renewed.
    server_id: str = ""
    address: str = ""
    lease_seconds: float = 10.0
    #: A live server has taken a table under this server's address (:meth:`twin_seen`): this
    #: one takes no lease by address any more, only free ones.
    twin: bool = False
    _pending: list[tuple[Append, asyncio.Future[None]]] = field(default_factory=list)
    _scheduled: bool = False
    _writing: asyncio.Task[None] | None = None
    #: The connection the group commit under way is written on (see :meth:`close`).
    _writing_on: Any = None
    #: The storage's close gave up the commit under way (see :meth:`close`).
    _gave_up: bool = False
    #: Transactions of appends committed so far (for tests and benchmarks).
    commits: int = 0
    #: Called just before each group commit, inside its transaction (tests use it).
    before_commit: Callable[[], None] | None = None
    #: Called just after it, before its answers are read (tests lose them with it).
    after_commit: Callable[[], None] | None = None
    #: Called before the log is read to learn whether a failed batch was stored (tests:
    #: raise to make that impossible).
    before_check: Callable[[], None] | None = None
    #: Calls given up on (:meth:`_answered`) that psycopg is still ending.
    _abandoned: set[asyncio.Future[Any]] = field(default_factory=set)

    @classmethod
    async def open(
        cls,
        url: str,
        summarize: Summarize | None = None,
        *,
        pool_size: int = 4,
        server_id: str = "",
        address: str = "",
        lease_seconds: float = 10.0,
    ) -> PostgresStorage:
        """Connect to the database at ``url`` (a libpq connection string), creating or
        migrating its schema. ``summarize`` is taken for the same call as SQLite's, unused:
        no PostgreSQL schema before version 1 needs a log replayed. ``server_id`` (a new one
        when empty), ``address`` and ``lease_seconds``: this server's leases."""
        if not lease_seconds > 0:
            raise ValueError("a lease lasts more than 0 seconds")
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
                f"cannot connect to PostgreSQL at {redacted(url)}: {_without_secret(url, e)}"
            ) from None
        except psycopg.Error as e:  # libpq could not read the URL (its words may quote it)
            # Its words may quote any piece of a password, which may break the URL anywhere:
            # they are shown only for a URL that holds none.
            why = (
                "the URL does not read as one (percent-encode / # ? @ : in the password)"
                if _may_hold_password(url)
                else f"libpq cannot read the URL: {' '.join(str(e).split())}"
            )
            raise PostgresUnavailable(
                f"cannot connect to PostgreSQL at {redacted(url)}: {why}"
            ) from None
        try:
            await _migrate(conn)
        except psycopg.errors.LockNotAvailable:
            raise PostgresUnavailable(
                f"cannot change rami's schema in the database at {redacted(url)}: another"
                f" session held a lock on its tables for over {MIGRATION_LOCK_WAIT:g} s (a"
                " backup's long read, or a transaction left open); start the server again"
                " once it ends"
            ) from None
        except psycopg.Error as e:  # the user's rights, say: in the database's words
            rights = (
                " (the user needs to read and write rami's tables, and to create those missing)"
                if isinstance(e, psycopg.errors.InsufficientPrivilege)
                else ""
            )
            raise PostgresUnavailable(
                f"cannot use the database at {redacted(url)}: {_without_secret(url, e)}{rights}"
            ) from None
        finally:
            await conn.close()
        pool = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={
                **_network_settings(url),
                "autocommit": True,
                "application_name": "rami-server",
            },
            # How long a call waits for a connection before failing (the database down, every
            # connection busy): well inside a client's call (the bot kit's and the client's
            # wait 10 s), so that it hears UNAVAILABLE and tries again, not its own deadline;
            # and inside a lease, so that a renewal that cannot be made fails in time to try
            # again before the lease runs out.
            timeout=POOL_WAIT,
            reconnect_timeout=POOL_RECONNECT,
            open=False,
            name="rami",
        )
        try:
            await pool.open(wait=True, timeout=30.0)
        except BaseException:
            await pool.close()
            raise
        return cls(url, pool, server_id or new_server_id(), address, lease_seconds)

    # -- the directory ----------------------------------------------------------------------

    async def create_table(
        self,
        table_id: str,
        spec: dict[str, Any],
        seats: list[dict[str, Any]],
        owner: str,
        request: Mark | None = None,
        rematch_of: str = "",
    ) -> Created | RematchMade | None:
        from psycopg import errors

        try:
            async with self._pool.connection() as conn, conn.transaction():
                if rematch_of:
                    # The row lock of this UPDATE orders racing rematches (on any server): a
                    # second one waits for the first one's commit, then finds the rematch set.
                    cur = await conn.execute(
                        "UPDATE rami_tables SET rematch = %s"
                        " WHERE table_id = %s AND rematch = '' RETURNING 1",
                        (table_id, rematch_of),
                    )
                    if await cur.fetchone() is None:
                        return await _rematch_made(conn, rematch_of, request)
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
                # The server that creates a table holds it, at epoch 0.
                await conn.execute(
                    "INSERT INTO rami_leases (table_id, owner, address, epoch, expiry)"
                    " VALUES (%s, %s, %s, 0, now() + make_interval(secs => %s))",
                    (table_id, self.server_id, self.address, self.lease_seconds),
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
            return await _created_by(conn, key)

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

    async def token_table(self, token_hash: str) -> str | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT table_id FROM rami_tokens WHERE token_hash = %s", (token_hash,)
            )
            r = await cur.fetchone()
        return str(r[0]) if r else None

    # -- leases ----------------------------------------------------------------------------

    @_bounded("a claim of a table", ANSWER_WAIT)
    async def claim(self, table_id: str) -> Lease | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT o_won, o_epoch, o_address FROM rami_claim_as(%s, %s, %s, %s, %s)",
                (table_id, self.server_id, self.address, self.lease_seconds, not self.twin),
            )
            r = await cur.fetchone()
        if r is None:
            return None
        return Lease(int(r[1])) if r[0] else Lease(None, r[2])

    @_bounded("the renewal of its leases")
    async def renew(self, held: Mapping[str, int]) -> list[str]:
        if not held:
            return []
        ids, epochs = list(held), [held[t] for t in held]
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "UPDATE rami_leases l SET expiry = now() + make_interval(secs => %s)"
                " FROM unnest(%s::text[], %s::bigint[]) AS h(table_id, epoch)"
                " WHERE l.table_id = h.table_id AND l.epoch = h.epoch AND l.owner = %s"
                " RETURNING l.table_id",
                (self.lease_seconds, ids, epochs, self.server_id),
            )
            kept = {r[0] for r in await cur.fetchall()}
        return [t for t in ids if t not in kept]

    def twin_seen(self) -> None:
        self.twin = True

    @_bounded("the release of its leases")
    async def release(self, held: Mapping[str, int]) -> None:
        if not held:
            return
        ids, epochs = list(held), [held[t] for t in held]
        async with self._pool.connection() as conn:
            await conn.execute(
                "UPDATE rami_leases l SET expiry = '-infinity'"
                " FROM unnest(%s::text[], %s::bigint[]) AS h(table_id, epoch)"
                " WHERE l.table_id = h.table_id AND l.epoch = h.epoch AND l.owner = %s",
                (ids, epochs, self.server_id),
            )

    @_bounded("which tables may be claimed")
    async def claimable(self, own: bool = False) -> list[str]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT t.table_id FROM rami_tables t"
                " LEFT JOIN rami_leases l ON l.table_id = t.table_id"
                " WHERE t.status NOT IN ('finished', 'closed')"
                " AND (l.owner = %s OR NOT %s AND (l.table_id IS NULL OR l.expiry < now()"
                " OR (%s AND l.address = %s)))"
                " ORDER BY t.created, t.seq",
                (self.server_id, own, not self.twin, self.address),
            )
            return [r[0] for r in await cur.fetchall()]

    @_bounded("a table's owner", ANSWER_WAIT)
    async def owner_of(self, table_id: str) -> tuple[str, bool]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT address, owner FROM rami_leases WHERE table_id = %s AND expiry >= now()",
                (table_id,),
            )
            r = await cur.fetchone()
        return (str(r[0]), r[1] == self.server_id) if r else ("", False)

    @_bounded("how many servers hold leases")
    async def servers(self) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(DISTINCT owner) FROM rami_leases"
                " WHERE expiry >= now() AND owner != %s",
                (self.server_id,),
            )
            r = await cur.fetchone()
        return 1 + (int(r[0]) if r else 0)

    async def _answered(self, call: Awaitable[T], what: str, wait: float = 0.0) -> T:
        """``call``'s answer, or :class:`NoAnswer` (the database out of reach) when it has not
        come within ``wait`` seconds (0: a lease, at least ``ANSWER_WAIT``). A network that
        drops every packet ends no connection, and TCP would wait minutes for one: this server
        would go on renewing nothing and claiming nothing, and its health would say SERVING.
        The call given up on, or left by a caller cancelled (a client's deadline, the server's
        stop), is cancelled too: psycopg cancels its query and, if the database does not
        answer that either, ends its connection (within some 10 s with psycopg 3.3.9; with
        older releases, once ``tcp_user_timeout`` ends it)."""
        wait = wait or max(self.lease_seconds, ANSWER_WAIT)
        task = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait({task}, timeout=wait)
        except BaseException:
            self._abandon(task)
            raise
        if task in done:
            return task.result()
        self._abandon(task)
        raise NoAnswer(f"the database did not answer {what} within {wait:g} s")

    def _abandon(self, task: asyncio.Future[Any]) -> None:
        """Cancel a call nobody waits for any more, and let it end on its own."""
        task.cancel()
        self._abandoned.add(task)
        task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Future[Any]) -> None:
        """A call given up on has ended: forget it, and take its end (a cancellation, or the
        failure it came to), which nobody waits for any more."""
        self._abandoned.discard(task)
        if not task.cancelled():
            task.exception()

    # -- logs -------------------------------------------------------------------------------

    @_bounded("a table's load", ANSWER_WAIT)
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

    async def check_key(self, fingerprint: str) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO rami_key (fingerprint) VALUES (%s) ON CONFLICT DO NOTHING",
                (fingerprint,),
            )
            cur = await conn.execute("SELECT fingerprint FROM rami_key")
            row = await cur.fetchone()
        if row is None or row[0] != fingerprint:
            raise OSError(
                "this server's key (--secret-file) is not the key of this database's servers:"
                " every server of one database is given the same key file (the deals of its"
                " tables are made from it)"
            )

    def submit(self, append: Append) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pending.append((append, done))
        if not self._scheduled:
            # At the end of this tick: the appends of every table made in it share a commit.
            self._scheduled = True
            loop.call_soon(self._flush)
        return done

    async def append(self, append: Append) -> None:
        await self.submit(append)

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
        append is stored whole or not at all (its Conflict), whatever the others do.

        A row lock held elsewhere is waited for briefly (:data:`APPEND_LOCK_WAIT`): a batch
        that waited too long is written again an append at a time, side by side, so that the
        others are stored while the one whose row is held waits, and is refused, alone. No
        statement of it is prepared: psycopg prepares one run five times on a connection,
        and a connection whose transactions failed again and again came to refuse every
        append ("prepared statement does not exist")."""
        results: list[list[str] | None] = []
        # The connection and its database process (read now: a closed connection has none).
        used: Any = None
        backend = 0
        try:
            async with self._pool.connection() as conn, self._written_on(conn):
                used, backend = conn, conn.info.backend_pid
                # BEGIN, the appends and COMMIT go out together, and the pipeline's one sync
                # at its end waits for all their answers: one round trip. Should anything
                # fail in it, the server aborts the transaction, and the rest is not run.
                try:
                    async with conn.pipeline():
                        await conn.execute("BEGIN", prepare=False)
                        await conn.execute(_APPEND_LOCK_WAIT, prepare=False)
                        cursors = [
                            await conn.execute(_APPEND, _params(a), prepare=False) for a, _ in batch
                        ]
                        if self.before_commit is not None:
                            self.before_commit()
                        await conn.execute("COMMIT", prepare=False)
                except BaseException:
                    await _rollback(conn)
                    raise
                if self.after_commit is not None:
                    self.after_commit()
                for cur in cursors:
                    row = await cur.fetchone()
                    results.append(row[0] if row else ["conflict", "no answer from the database"])
        except BaseException as e:
            if len(batch) > 1 and _waited_for_a_lock(e) and not self._gave_up:
                # A table's row held by another session: the database undid the batch. Each
                # append is written alone, side by side; one the writes leave unanswered (a
                # stop cut them short) is told so.
                try:
                    await asyncio.gather(*(self._write([item]) for item in batch))
                finally:
                    for _, done in batch:
                        if not done.done():
                            if self._gave_up:
                                done.set_exception(Unknown("the storage closed meanwhile"))
                            else:
                                done.cancel()
                return
            stored: list[bool | None] = [False] * len(batch)
            if self._gave_up:
                # The storage closes without the commit's answer (:meth:`close`): nothing is
                # asked of a database that does not answer.
                stored = [None] * len(batch)
            elif isinstance(e, Exception):
                # The commit may have happened with its answer lost (the connection dropped):
                # an append whose entries are in the log, as written, was stored.
                cut = used is not None and used.broken and backend
                stored = await self._stored(batch, backend if cut else None)
            for (_, done), was_stored in zip(batch, stored, strict=True):
                if done.done():
                    continue
                if was_stored:
                    done.set_result(None)
                elif isinstance(e, asyncio.CancelledError) and not self._gave_up:
                    done.cancel()
                elif was_stored is None:
                    # Neither stored nor refused, as far as anyone can tell: the table must
                    # learn which from its log (it loads itself again).
                    unknown = Unknown(f"the commit's answer was lost ({type(e).__name__})")
                    unknown.__cause__ = e
                    done.set_exception(unknown)
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
            elif why[0] == "fenced":
                done.set_exception(Fenced(why[1], why[2] if len(why) > 2 else ""))
            else:
                done.set_exception(Conflict(why[1]))

    async def _stored(
        self, batch: list[tuple[Append, asyncio.Future[None]]], backend: int | None = None
    ) -> list[bool | None]:
        """For each append of a batch whose transaction failed: whether its entries are in
        the log all the same, exactly as it wrote them (None when that cannot be known).

        ``backend``: the process that had the transaction, whose connection was cut. It may
        still be running it, the whole batch and its COMMIT read (waiting for a lock, say),
        and commit after a look at the log found nothing: it is ended first, and the log read
        once it is gone (None for all, if it does not go)."""
        found: list[bool | None] = []
        try:
            if self.before_check is not None:
                self.before_check()
            async with self._pool.connection(timeout=5.0) as conn, self._written_on(conn):
                if backend is not None and not await _ended(conn, backend):
                    return [None] * len(batch)
                for a, _ in batch:
                    cur = await conn.execute(
                        "SELECT entry FROM rami_entries WHERE table_id = %s"
                        " AND number BETWEEN %s AND %s ORDER BY number",
                        (a.table_id, a.first, a.first + len(a.entries) - 1),
                    )
                    rows = [r[0] for r in await cur.fetchall()]
                    found.append(bool(rows) and rows == [_json(e) for e in a.entries])
        except Exception:
            return [None] * len(batch)
        return found

    async def close(self, timeout: float = CLOSE_WAIT) -> None:
        """Write what is queued, then close the pool. A group commit the database has not
        answered within ``timeout`` seconds (a database that hangs: stopped, or behind a
        network that drops every packet once the kernel took them) is given up
        (:meth:`_give_up`): its appends are told :class:`Unknown` (the database, awake again,
        may yet commit what it had read), and those queued behind it are refused. A server's
        stop waits for nothing longer than that."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while self._pending or self._writing is not None:
            if self._writing is None:
                self._flush()
                continue
            left = end - loop.time()
            if left <= 0:
                await self._give_up(timeout)
                break
            await asyncio.wait([self._writing], timeout=left)
        await self._pool.close(timeout=1.0)

    async def _give_up(self, waited: float) -> None:
        """End the group commit under way without its answer: its appends are told
        :class:`Unknown`, and those not yet sent are refused (nothing of them is stored)."""
        log.warning(
            "the database has not answered a commit for %g s: the storage closes without "
            "its answer (its appends may or may not be stored)",
            waited,
        )
        self._gave_up = True
        pending, self._pending = self._pending, []
        for _, done in pending:
            if not done.done():
                done.set_exception(ConnectionError("the storage closed before writing this"))
        conn, writing = self._writing_on, self._writing
        if conn is not None:
            # The commit's wait ends as on a dropped connection: its socket is shut down (the
            # descriptor stays psycopg's to close), and psycopg reads the end of it.
            with contextlib.suppress(Exception):  # (a connection psycopg closed already)
                shut = socket.socket(fileno=os.dup(conn.pgconn.socket))
                try:
                    shut.shutdown(socket.SHUT_RDWR)
                finally:
                    shut.close()
        if writing is not None:
            await asyncio.wait([writing], timeout=1.0)
            if not writing.done():
                writing.cancel()

    @contextlib.asynccontextmanager
    async def _written_on(self, conn: Any) -> AsyncIterator[None]:
        """While a group commit is written, or checked, on ``conn`` (until it goes back to
        the pool)."""
        self._writing_on = conn
        try:
            yield
        finally:
            self._writing_on = None


#: libpq's settings for a connection whose network goes silent (the URL's own win): a new
#: connection is given up after 5 s (libpq's default waits 130 s), an idle one is probed
#: after 10 s and given up after 3 probes 5 s apart, and one whose data sent has not been
#: acknowledged for 30 s is ended (``tcp_user_timeout``, in ms). Without them a connection
#: through a network that drops every packet waits as long as the kernel's retransmissions
#: (some 15 minutes), and so would a group commit sent on it, holding up the appends of
#: every table; ended, it fails as the database out of reach.
NETWORK_SETTINGS = {
    "connect_timeout": "5",
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}


def _network_settings(url: str) -> dict[str, str]:
    """:data:`NETWORK_SETTINGS` but those ``url`` sets itself (libpq ignores them on a Unix
    socket)."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    return {k: v for k, v in NETWORK_SETTINGS.items() if k not in given}


async def _created_by(conn: Any, key: str) -> Created | None:
    cur = await conn.execute(
        "SELECT table_id, request, request_digest FROM rami_tables WHERE request = %s", (key,)
    )
    r = await cur.fetchone()
    return Created(r[0], Mark(r[1], r[2])) if r else None


async def _rematch_made(conn: Any, table_id: str, request: Mark | None) -> Created | RematchMade:
    """For a CreateTable whose ``rematch_of`` (``table_id``) has its rematch already, in its
    transaction, after the UPDATE that found it set: the table a copy of the same request made
    (a retry raced its first copy), or that rematch. Each statement reads what was committed
    before it began: the rematch, and the table that set it."""
    if request is not None:
        before = await _created_by(conn, request.key)
        if before is not None:
            return before
    cur = await conn.execute("SELECT rematch FROM rami_tables WHERE table_id = %s", (table_id,))
    r = await cur.fetchone()
    if r is None or not r[0]:
        raise LookupError(f"no table {table_id!r} is stored to make a rematch of")
    return RematchMade(str(r[0]))


def _query_passwords(url: str) -> list[str]:
    """The values, as written, of the settings of ``url``'s query whose name, decoded, is
    ``password`` (a value runs to the next &: libpq reads a # in it as the value's)."""
    query = url.partition("://")[2].partition("?")[2]
    settings = (s.partition("=") for s in query.split("&"))
    return [value for name, _, value in settings if unquote(name).strip() == "password"]


def _may_hold_password(url: str) -> bool:
    """Whether ``url`` may hold a password: a colon in what may be its user part (read up
    to the first / as libpq does, or up to the last @, where a password's own / or ? broke
    it), or a query setting whose name, decoded, is ``password``."""
    rest = url.partition("://")[2]
    users = (rest.partition("/")[0].rpartition("@")[0], rest.rpartition("@")[0])
    return any(":" in u for u in users) or bool(_query_passwords(url))


def _without_secret(url: str, error: Exception) -> str:
    """libpq's words for ``error``, with every piece of the URL's password (or of its query's
    ``password=``) left out: a password that breaks the URL (an unencoded @, say) is read in
    part as a host or a port, which the words then name."""
    # One line: the database's own message when it sent one (without the statement and the
    # caret it quotes under it), else libpq's, its lines joined.
    primary = getattr(getattr(error, "diag", None), "message_primary", None)
    words = primary if primary else " ".join(str(error).split())
    secret = url.partition("://")[2].rpartition("@")[0].partition(":")[2]
    # A password given as a setting of the query (``?password=...``) as well; each as
    # written, and as libpq decodes it (it names a host of "p%2Fq" as "p/q").
    pieces = {
        p
        for s in (secret, *_query_passwords(url))
        for form in (s, unquote(s))
        for p in re.split(r"[/#?@:]", form)
    }
    for piece in sorted(pieces, key=len, reverse=True):
        if len(piece) >= 3:
            words = words.replace(piece, "***")
    return words


async def _rollback(conn: Any) -> None:
    """End the transaction a failed batch left open, if the connection still works (else the
    pool discards it)."""
    from psycopg import pq

    if conn.closed or conn.info.transaction_status == pq.TransactionStatus.IDLE:
        return
    with contextlib.suppress(Exception):
        await conn.execute("ROLLBACK")


#: Seconds a group commit waits for a table's row, locked by another session (an operator's
#: transaction left open, say), before the database undoes it: a batch's appends are then
#: written alone, and the one whose row is held is refused as an outage (nothing stored: the
#: caller may try again). The group commit holds every table's appends: unbounded, one locked
#: row stopped them all. The lock's other takers, a takeover's claim and the table's own
#: appends, hold it for milliseconds.
APPEND_LOCK_WAIT = 0.25
_APPEND_LOCK_WAIT = f"SET LOCAL lock_timeout = '{int(APPEND_LOCK_WAIT * 1000)}ms'"


def _waited_for_a_lock(error: BaseException) -> bool:
    """Whether ``error`` is the database giving up a wait for a lock (``lock_timeout``)."""
    return getattr(error, "sqlstate", None) == "55P03"


#: Seconds the storage waits for the database process of a cut connection to end, before the
#: appends it was writing are told as answers lost (:class:`Unknown`) rather than looked for.
BACKEND_END_WAIT = 3.0


async def _ended(conn: Any, backend: int) -> bool:
    """End the database process ``backend`` (the server's own, whose connection was cut)
    and wait for it to be gone: whether it is, within :data:`BACKEND_END_WAIT` seconds. A
    transaction it had not committed is then rolled back, and one it had is in the log."""
    await conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE pid = %s AND usename = current_user",
        (backend,),
    )
    end = asyncio.get_running_loop().time() + BACKEND_END_WAIT
    while True:
        cur = await conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend,))
        if await cur.fetchone() is None:
            return True
        if asyncio.get_running_loop().time() >= end:
            return False
        await asyncio.sleep(0.05)


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
            raise PostgresUnavailable(
                f"the database's rami schema is version {version}, newer than this server's"
                f" ({PG_SCHEMA_VERSION}): a newer rami-server wrote it; run that version (or a"
                " newer one)"
            )
        # A lock it must wait for (a column to add, behind a backup's long read) is waited
        # for briefly: every other server's statement on that table waits behind the request.
        await conn.execute(f"SET LOCAL lock_timeout = '{int(MIGRATION_LOCK_WAIT * 1000)}ms'")
        # IF NOT EXISTS throughout: makes what is missing. Later versions step up from here,
        # each in this transaction: version 2 adds the leases (a table of version 1 has
        # none: any server may claim it).
        await conn.execute(_SCHEMA)
        await conn.execute(_SCHEMA_V2)
        await conn.execute(_SCHEMA_KEY)
        await conn.execute(_SCHEMA_REMATCH)
        await conn.execute(
            "INSERT INTO rami_schema (version) VALUES (%s)"
            " ON CONFLICT (only_row) DO UPDATE SET version = EXCLUDED.version",
            (PG_SCHEMA_VERSION,),
        )
