"""Storage: the table directory and each table's log, behind one async interface.

A table is its spec and its log of entries (JSON objects, ``entries.py``); replaying the log
rebuilds it. The directory keeps a row per table that the lobby lists without loading any
table: its spec, status, update number, seats and options, the tokens that prove something at
it, the mark of the request id it was created with (``retries.py``), so a CreateTable sent
again finds the table its first copy made, and the id of its rematch (a finished table's: the
table made with ``rematch_of`` it, set once, in the transaction that stores that table, so a
second one finds it instead of making another). An append carries the number of its first entry,
so a writer that is not where it thinks it is fails (:class:`Conflict`) instead of forking
the log, and the directory row changes in the same transaction as the entries that change it.

:class:`SqliteStorage`, the embedded default, keeps everything in one SQLite file;
:class:`~rami.server.storage_postgres.PostgresStorage` keeps the same in a PostgreSQL database
that several servers may share (:func:`open_storage` picks one by the ``--db`` given). Its work is
done on a thread of its own, so a slow disk or another process holding the file's write lock
never blocks the event loop. The appends of one event-loop tick, across all tables, go in one
transaction (a group commit): each append's future is resolved only after that transaction
has committed, and an append that fails (a conflict) is rolled back alone, to its savepoint.

SQLite runs in WAL mode with ``synchronous=NORMAL``: a committed transaction is in the WAL file
when its appends are acknowledged, so it survives the server process being killed at any
moment.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from rami.engine.values import builder

from .entries import Mark

__all__ = [
    "SCHEMA_VERSION",
    "Append",
    "Conflict",
    "Created",
    "Fenced",
    "Lease",
    "NoAnswer",
    "RematchMade",
    "SqliteStorage",
    "Storage",
    "StoredTable",
    "TableRow",
    "is_postgres_url",
    "open_storage",
    "redacted",
]

T = TypeVar("T")

log = logging.getLogger("rami.server.storage")

#: The version of the SQLite schema this code writes (``PRAGMA user_version``).
SCHEMA_VERSION = 5


class Conflict(Exception):
    """An append whose first number is not the one after the table's last stored entry."""


#: SQLite's primary result codes of a database out of reach or failing for now.
_SQLITE_OUTAGES = frozenset(
    {5, 6, 7, 8, 10, 13, 14}
)  # BUSY LOCKED NOMEM READONLY IOERR FULL CANTOPEN


class NoAnswer(Exception):
    """A network database that has not answered a call in the time it is given (a network
    that drops every packet ends no connection: TCP alone would wait for minutes). The call
    may still be carried out when the network comes back."""


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` is the store out of reach or failing for now (the database down, its
    connections all taken, its disk full), which a call made again later may get past: not a
    bug of the server's."""
    if isinstance(error, NoAnswer):
        return True
    if isinstance(error, sqlite3.OperationalError):
        # Busy, locked, I/O, full, cannot open, out of memory, read-only: not a statement
        # SQLite cannot run ("no such table" is OperationalError too: that is a bug).
        code = getattr(error, "sqlite_errorcode", None)
        return code is None or code & 0xFF in _SQLITE_OUTAGES
    psycopg = sys.modules.get("psycopg")  # loaded only by a server on PostgreSQL
    return psycopg is not None and isinstance(error, psycopg.OperationalError)


def failure_words(error: BaseException) -> str:
    """A store's failure as a log says it: SQLite's own words, which say what to do (a full
    disk, a file it can't write); only the kind of any other (a network database's words
    may name where it is, and are its own log's)."""
    if isinstance(error, sqlite3.Error):
        return f"{type(error).__name__}: {error}"
    if isinstance(error, NoAnswer):  # its words are the server's own
        return str(error)
    return type(error).__name__


class Unknown(Exception):
    """An append whose transaction may or may not have committed: its answer was lost, and the
    log could not be read to tell. The table's memory may be behind its stored log."""


class Fenced(Exception):
    """An append by a server whose lease on the table was taken over (the table's epoch moved
    on past the append's): it stored nothing, and this server must never act for the table
    again. ``owner`` is the address of the server that holds the table now ('' if none)."""

    def __init__(self, message: str, owner: str = "") -> None:
        super().__init__(message)
        self.owner = owner


@dataclass(frozen=True, slots=True)
class Lease:
    """What a claim of a table found: ``epoch`` when this server holds the table now (its
    appends carry it), else None, and ``owner``, the address of the server that does."""

    epoch: int | None
    owner: str = ""


@dataclass(frozen=True, slots=True)
class Created:
    """The table a CreateTable request made, and that request's mark."""

    table_id: str
    request: Mark


@dataclass(frozen=True, slots=True)
class RematchMade:
    """The rematch a finished table has already: a CreateTable with ``rematch_of`` it stored
    nothing."""

    table_id: str


@dataclass(frozen=True, slots=True)
class TableRow:
    """A table as the directory lists it."""

    table_id: str
    spec: dict[str, Any]
    status: str
    #: The number of its latest stored entry.
    number: int
    #: Each seat: name, kind, policy, away.
    seats: list[dict[str, Any]]
    #: Its options as they are now (the number of players is fixed at the start).
    options: dict[str, Any]
    created: float
    #: The id of its rematch ('' until one of its players made one).
    rematch: str = ""


@dataclass(slots=True)
class StoredTable:
    """A table as stored: its directory row and its entries in order."""

    row: TableRow
    entries: list[dict[str, Any]]

    @property
    def table_id(self) -> str:
        """The table's id."""
        return self.row.table_id


@dataclass(frozen=True, slots=True)
class Append:
    """Entries ``first``, ``first + 1``... of a table, and its directory row after them."""

    table_id: str
    first: int
    entries: Sequence[dict[str, Any]]
    status: str
    #: The seats and options after these entries, when they change (None: as they were).
    seats: list[dict[str, Any]] | None
    options: dict[str, Any] | None
    #: When they change: every token hash that proves something at the table from now on.
    tokens: tuple[str, ...] | None = None
    #: The epoch of the writer's lease on the table (``Storage.claim``): an append whose
    #: epoch is not the table's stores nothing and raises :class:`Fenced`.
    epoch: int = 0


class Storage(Protocol):
    """Where tables live: the directory and the logs.

    A table is played by one server at a time, its owner, by lease (``claim``, ``renew``,
    ``release``): storage that one process holds alone (SQLite) grants every lease at once
    and for ever; shared storage (PostgreSQL) keeps each table's owner, the address clients
    should use, its lease's expiry and an epoch that moves on at every takeover, and refuses
    an append whose epoch is not the table's (:class:`Fenced`)."""

    #: Seconds a lease lasts unless renewed (0: leases never end, the storage is this
    #: process's alone).
    lease_seconds: float

    async def create_table(
        self,
        table_id: str,
        spec: dict[str, Any],
        seats: list[dict[str, Any]],
        owner: str,
        request: Mark | None = None,
        rematch_of: str = "",
    ) -> Created | RematchMade | None:
        """Store a new table (no entries yet); ``owner`` is the hash of its owner's token,
        ``request`` the mark of the request id it is created with. When a table was created
        with that mark's key already, store nothing and return that table's id and mark.
        ``rematch_of``: the stored table whose rematch it is, which names it from now on (in
        the same transaction); when that table has its rematch already, store nothing and
        return it (a copy of the same request is answered as above, first). Of racing calls
        with one ``rematch_of``, exactly one stores its table."""

    async def created_by(self, key: str) -> Created | None:
        """The table created by a request whose mark has this key, and that mark, or None."""

    async def append(self, append: Append) -> None:
        """Store entries of a table; durable when it returns. Raises :class:`Conflict` when
        ``append.first`` is not one more than the number of the table's last entry."""

    def submit(self, append: Append) -> asyncio.Future[None]:
        """Hand ``append`` to storage without waiting: the future is done once it is durable
        (None) or refused (its error, as :meth:`append` raises it). Cancelling the future
        does not take the append back; it is written with its batch all the same. Call it on
        the event loop; the appends handed in one turn of the loop share a transaction,
        written as the turn ends."""

    async def check_key(self, fingerprint: str) -> None:
        """Refuse (OSError) a server whose key's ``fingerprint`` is not that of the key the
        other servers of shared storage use (the first server's is kept); one that holds its
        storage alone checks nothing (its key file is beside it)."""

    async def get_table(self, table_id: str) -> TableRow | None:
        """A table's directory row, or None."""

    async def list_tables(
        self, *, variant: str = "", status: str = "", limit: int = 200
    ) -> list[TableRow]:
        """Public tables, newest first, of a variant and a status when given."""

    async def load_table(self, table_id: str) -> StoredTable | None:
        """One table with its entries, or None."""

    async def unfinished(self) -> list[str]:
        """The ids of every table not over (finished or closed), oldest first."""

    async def active_tables(self, client: str) -> int:
        """How many tables ``client`` created that are not over (finished or closed)."""

    async def token_known(self, token_hash: str) -> bool:
        """True when a token with this hash proves a seat or an ownership at some table."""

    async def token_table(self, token_hash: str) -> str | None:
        """The table at which a token with this hash proves a seat or the ownership, or None."""

    async def claim(self, table_id: str) -> Lease | None:
        """Take the lease of a table when it is free (never held, expired, released, or held
        by this server already): the new epoch, moved on past every earlier owner's. When
        another server holds it, that server's address; None when no such table is stored.
        Of servers racing to claim one free table, exactly one wins."""

    async def renew(self, held: Mapping[str, int]) -> list[str]:
        """Extend the leases this server holds (table id -> epoch), all in one statement; the
        ids of those it no longer holds (taken over: the server must drop them)."""

    def twin_seen(self) -> None:
        """Another live server took a table under this server's address: from now on, claim
        no lease by address (a server at this address replaces a dead one there, and takes its
        tables at once; two live ones at one address would take them from each other)."""

    async def release(self, held: Mapping[str, int]) -> None:
        """End these leases now (table id -> epoch), so that another server may claim the
        tables at once; leases taken over meanwhile are left alone."""

    async def claimable(self, own: bool = False) -> list[str]:
        """The ids of the tables not over whose lease is free for this server, oldest first
        (``own``: only those whose lease this server held last)."""

    async def owner_of(self, table_id: str) -> tuple[str, bool]:
        """The address of the server that holds the table's lease now ('' when none does),
        and whether that server is this one (a claim of its own it gave up on, say, that
        the database carried out later)."""

    async def servers(self) -> int:
        """How many servers hold a lease now, this one counted (at least 1)."""

    async def close(self) -> None:
        """Finish pending writes and close."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    table_id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    spec TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'waiting',
    -- unused since version 5 (the number of a table's last entry is read from its entries)
    number INTEGER NOT NULL DEFAULT 0,
    seats TEXT NOT NULL DEFAULT '[]',
    options TEXT NOT NULL DEFAULT '{}',
    variant TEXT NOT NULL DEFAULT '',
    client TEXT NOT NULL DEFAULT '',
    private INTEGER NOT NULL DEFAULT 0,
    -- the mark of the request id the table was created with ('': none)
    request TEXT NOT NULL DEFAULT '',
    request_digest TEXT NOT NULL DEFAULT '',
    -- the id of this finished table's rematch ('': none yet)
    rematch TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS entries (
    table_id TEXT NOT NULL REFERENCES tables(table_id),
    number INTEGER NOT NULL,
    entry TEXT NOT NULL,
    -- the table's status after this entry ('' in logs written before version 2)
    status TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (table_id, number)
) WITHOUT ROWID;
-- An entry goes right after its table's last one (a seek in the entries' key: the table's
-- row, which holds its spec, is not written for every entry), and the directory row follows
-- it: one statement stores an append and changes the row, in the same transaction.
CREATE TRIGGER IF NOT EXISTS entry_in_place_v5 BEFORE INSERT ON entries
WHEN NOT EXISTS (SELECT 1 FROM tables WHERE table_id = NEW.table_id)
  OR NEW.number IS NOT coalesce(
    (SELECT max(number) FROM entries WHERE table_id = NEW.table_id), 0) + 1
BEGIN
    SELECT RAISE(ABORT, 'entry out of place');
END;
-- The status (and its index) is written only when it changes: a start, a game's end.
CREATE TRIGGER IF NOT EXISTS entry_changes_status AFTER INSERT ON entries
WHEN NEW.status != (SELECT status FROM tables WHERE table_id = NEW.table_id)
BEGIN
    UPDATE tables SET status = NEW.status WHERE table_id = NEW.table_id;
END;
CREATE TABLE IF NOT EXISTS tokens (
    token_hash TEXT PRIMARY KEY,
    table_id TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tables_by_status ON tables (status, created);
CREATE INDEX IF NOT EXISTS tables_by_client ON tables (client, status);
-- A request id creates one table at most.
CREATE UNIQUE INDEX IF NOT EXISTS tables_by_request ON tables (request) WHERE request != '';
-- The fingerprint of the server key the tables were dealt with (any version may hold it).
CREATE TABLE IF NOT EXISTS rami_key (
    only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
    fingerprint TEXT NOT NULL
);
"""

#: Version 1's tables lack these columns (and the tokens table): added, then filled.
_V2_COLUMNS = (
    "number INTEGER NOT NULL DEFAULT 0",
    "seats TEXT NOT NULL DEFAULT '[]'",
    "options TEXT NOT NULL DEFAULT '{}'",
    "variant TEXT NOT NULL DEFAULT ''",
    "client TEXT NOT NULL DEFAULT ''",
    "private INTEGER NOT NULL DEFAULT 0",
)
#: The columns each later version added to the tables of the one before (empty in the tables
#: there are): 3, the mark of the request a table was created with; 4, the id of a finished
#: table's rematch.
_ADDED_COLUMNS: dict[int, tuple[str, ...]] = {
    3: ("request TEXT NOT NULL DEFAULT ''", "request_digest TEXT NOT NULL DEFAULT ''"),
    4: ("rematch TEXT NOT NULL DEFAULT ''",),
}

#: What a migration needs to know of a table that only its log says: its seats and options
#: (the table core's replay), from its spec and entries.
Summarize = Callable[
    [dict[str, Any], list[dict[str, Any]]], tuple[list[dict[str, Any]], dict[str, Any]]
]

#: A directory row; its number, that of its last entry.
_ROW = (
    "table_id, spec, status,"
    " coalesce((SELECT max(number) FROM entries e WHERE e.table_id = tables.table_id), 0),"
    " seats, options, created, rematch"
)


@dataclass(frozen=True, slots=True)
class _Encoded:
    """An append as the database writes it: its rows and its directory's columns."""

    table_id: str
    first: int
    last: int
    status: str
    #: (table_id, number, entry, status) of each entry.
    rows: list[tuple[str, int, str, str]]
    seats: str | None
    options: str | None
    tokens: tuple[str, ...] | None

    @classmethod
    def of(cls, a: Append) -> _Encoded:
        """The append, encoded."""
        changed = a.seats is not None and a.options is not None
        return _encoded(
            a.table_id,
            a.first,
            a.first + len(a.entries) - 1,
            a.status,
            [(a.table_id, a.first + i, _json(e), a.status) for i, e in enumerate(a.entries)],
            _json(a.seats) if changed else None,
            _json(a.options) if changed else None,
            a.tokens,
        )


#: Append(...) (the tables make them with it) and _Encoded(...) at a mutable dataclass's
#: cost (rami.engine.values): one of each for every append.
append_of = builder(Append)
_encoded = builder(_Encoded)


#: Entries as stored: compact JSON (one encoder for all: ``json.dumps`` with options makes
#: one per call, a third of an entry's encoding).
_json: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _row(r: tuple[Any, ...]) -> TableRow:
    return TableRow(
        r[0], json.loads(r[1]), r[2], r[3], json.loads(r[4]), json.loads(r[5]), r[6], r[7]
    )


@dataclass(eq=False)
class SqliteStorage:
    """Storage in one SQLite file (``:memory:`` keeps nothing after the process ends).

    Open it with :meth:`open`. Reads, the directory's changes and checkpoints run on a worker
    thread of their own, one at a time, on one connection; the appends of a tick are written
    on the event loop by a second connection that never waits (see :meth:`_flush`), or on the
    worker thread when that one would have to wait.
    """

    path: str
    _db: sqlite3.Connection
    _pool: ThreadPoolExecutor
    #: The event loop's connection for appends (None for ``:memory:``, which is one
    #: connection's alone: every append then goes through the worker thread).
    _fast: sqlite3.Connection | None = None
    #: Commits and entries of the loop's connection since its last checkpoint.
    _fast_commits: int = 0
    _fast_rows: int = 0
    _checkpointing: asyncio.Future[None] | None = None
    #: Jobs handed to the worker thread and not yet done (see :meth:`_run`).
    _jobs: int = 0
    _pending: list[tuple[_Encoded, asyncio.Future[None]]] = field(default_factory=list)
    _scheduled: bool = False
    _writing: asyncio.Future[list[Exception | None]] | None = None
    #: Transactions of appends committed so far (for tests and benchmarks).
    commits: int = 0
    #: Called just before each group commit, on the thread that writes it (tests use it).
    before_commit: Callable[[], None] | None = None
    #: One process holds the file: every lease is its own, for ever.
    lease_seconds: float = 0.0
    #: The lock that keeps the file this process's alone (see :func:`_hold_alone`).
    _alone: int | None = None

    @classmethod
    async def open(cls, path: str, summarize: Summarize | None = None) -> SqliteStorage:
        """Open (creating or migrating) the database at ``path``, which no other process may
        hold (OSError, saying so, when one does, or when it is no database this server can
        use: a folder, another kind of file, a newer schema)."""
        if path != ":memory:" and os.path.isdir(path):
            raise OSError(f"{path} is a folder: name a file in it, such as {path}/rami.db")
        alone = None if path == ":memory:" else _hold_alone(path)
        try:
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rami-sqlite")
            loop = asyncio.get_running_loop()
            db = await loop.run_in_executor(pool, _connect, path, summarize)
            fast = None if path == ":memory:" else _connect_fast(path)
        except BaseException as e:
            if alone is not None:
                os.close(alone)
            if isinstance(e, sqlite3.DatabaseError):  # a file that is no database, say
                raise OSError(f"{path}: {e} (SQLite)") from None
            raise
        storage = cls(path, db, pool, fast)
        storage._alone = alone
        return storage

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        self._jobs += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
        finally:
            self._jobs -= 1

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
        return await self._run(self._create, table_id, spec, seats, owner, request, rematch_of)

    def _create(
        self,
        table_id: str,
        spec: dict[str, Any],
        seats: list[dict[str, Any]],
        owner: str,
        request: Mark | None,
        rematch_of: str,
    ) -> Created | RematchMade | None:
        with _transaction(self._db):
            if request is not None:
                # In the transaction that would store the table: a request that raced its own
                # retry finds the table the first one stored.
                before = self._created_by(request.key)
                if before is not None:
                    return before
            if rematch_of:
                # The write lock (BEGIN IMMEDIATE) orders racing rematches: the second finds
                # the first one's.
                named = self._db.execute(
                    "UPDATE tables SET rematch = ? WHERE table_id = ? AND rematch = ''",
                    (table_id, rematch_of),
                )
                if named.rowcount == 0:
                    return RematchMade(self._rematch_of(rematch_of))
            self._db.execute(
                "INSERT INTO tables (table_id, created, spec, seats, options, variant, client,"
                " private, request, request_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    table_id,
                    time.time(),
                    _json(spec),
                    _json(seats),
                    _json(spec["options"]),
                    spec["variant"],
                    spec.get("client", ""),
                    int(bool(spec.get("private"))),
                    request.key if request else "",
                    request.digest if request else "",
                ),
            )
            if owner:
                self._db.execute("INSERT OR IGNORE INTO tokens VALUES (?, ?)", (owner, table_id))
        return None

    def _rematch_of(self, table_id: str) -> str:
        r = self._db.execute("SELECT rematch FROM tables WHERE table_id = ?", (table_id,))
        found = r.fetchone()
        if found is None or not found[0]:
            raise LookupError(f"no table {table_id!r} is stored to make a rematch of")
        return str(found[0])

    async def created_by(self, key: str) -> Created | None:
        return await self._run(self._created_by, key)

    def _created_by(self, key: str) -> Created | None:
        r = self._db.execute(
            "SELECT table_id, request, request_digest FROM tables WHERE request = ?", (key,)
        ).fetchone()
        return Created(r[0], Mark(r[1], r[2])) if r and key else None

    async def get_table(self, table_id: str) -> TableRow | None:
        return await self._run(self._get, table_id)

    def _get(self, table_id: str) -> TableRow | None:
        r = self._db.execute(
            f"SELECT {_ROW} FROM tables WHERE table_id = ?", (table_id,)
        ).fetchone()
        return _row(r) if r else None

    async def list_tables(
        self, *, variant: str = "", status: str = "", limit: int = 200
    ) -> list[TableRow]:
        return await self._run(self._list, variant, status, limit)

    def _list(self, variant: str, status: str, limit: int) -> list[TableRow]:
        where, args = ["private = 0"], []
        if variant:
            where.append("variant = ?")
            args.append(variant)
        if status:
            where.append("status = ?")
            args.append(status)
        rows = self._db.execute(
            f"SELECT {_ROW} FROM tables WHERE {' AND '.join(where)}"
            " ORDER BY created DESC, rowid DESC LIMIT ?",
            (*args, limit),
        )
        return [_row(r) for r in rows]

    async def unfinished(self) -> list[str]:
        return await self._run(self._unfinished)

    def _unfinished(self) -> list[str]:
        rows = self._db.execute(
            "SELECT table_id FROM tables WHERE status NOT IN ('finished', 'closed')"
            " ORDER BY created, rowid"
        )
        return [r[0] for r in rows]

    async def active_tables(self, client: str) -> int:
        return await self._run(self._active, client)

    def _active(self, client: str) -> int:
        (n,) = self._db.execute(
            "SELECT count(*) FROM tables WHERE client = ? AND status NOT IN ('finished', 'closed')",
            (client,),
        ).fetchone()
        return int(n)

    async def token_known(self, token_hash: str) -> bool:
        return await self._run(self._token_known, token_hash)

    def _token_known(self, token_hash: str) -> bool:
        return (
            self._db.execute("SELECT 1 FROM tokens WHERE token_hash = ?", (token_hash,)).fetchone()
            is not None
        )

    async def token_table(self, token_hash: str) -> str | None:
        return await self._run(self._token_table, token_hash)

    def _token_table(self, token_hash: str) -> str | None:
        r = self._db.execute(
            "SELECT table_id FROM tokens WHERE token_hash = ?", (token_hash,)
        ).fetchone()
        return str(r[0]) if r else None

    # -- leases: this process's, every one --------------------------------------------------

    async def claim(self, table_id: str) -> Lease | None:
        return Lease(0) if await self.get_table(table_id) is not None else None

    async def renew(self, held: Mapping[str, int]) -> list[str]:
        return []

    def twin_seen(self) -> None:
        return None

    async def release(self, held: Mapping[str, int]) -> None:
        return None

    async def claimable(self, own: bool = False) -> list[str]:
        return await self.unfinished()

    async def owner_of(self, table_id: str) -> tuple[str, bool]:
        return "", False

    async def servers(self) -> int:
        return 1

    # -- logs -------------------------------------------------------------------------------

    async def load_table(self, table_id: str) -> StoredTable | None:
        return await self._run(self._load, table_id)

    def _load(self, table_id: str) -> StoredTable | None:
        row = self._get(table_id)
        if row is None:
            return None
        entries = [
            json.loads(e)
            for (e,) in self._db.execute(
                "SELECT entry FROM entries WHERE table_id = ? ORDER BY number", (table_id,)
            )
        ]
        return StoredTable(row, entries)

    async def check_key(self, fingerprint: str) -> None:
        await self._run(_check_key, self._db, fingerprint, self.path)

    def submit(self, append: Append) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        # Encoded here: the worker thread runs as little Python as it can, since each of its
        # steps waits for the interpreter lock that the event loop holds while it is busy.
        self._pending.append((_Encoded.of(append), done))
        if not self._scheduled:
            # The first append of a tick writes the batch at the tick's end: the appends of
            # every table made in it share a commit.
            self._scheduled = True
            loop.call_soon(self._flush)
        return done

    async def append(self, append: Append) -> None:
        done = self.submit(append)
        # One turn: the batch's write, scheduled before, runs first; when it is written on
        # the loop (see _flush), the answer is there, and needs no further turn.
        await asyncio.sleep(0)
        await done

    def _flush(self) -> None:
        self._scheduled = False
        if self._writing is not None or not self._pending:
            return  # the write under way flushes again when it ends
        if self._checkpointing is not None and not self._checkpointing.done():
            return  # the checkpoint under way flushes when it ends (see _checkpoint)
        batch, self._pending = self._pending, []
        encoded = [a for a, _ in batch]
        loop = asyncio.get_running_loop()
        if self._fast is not None:
            # On the loop's own connection, which never waits: it takes the write lock at
            # once or not at all (busy_timeout 0), and leaves checkpoints (the fsyncs) to the
            # worker thread. A batch of a tick is some 100 us of work there, against several
            # milliseconds of handing it to a thread that must win the interpreter lock from
            # a busy event loop at every statement.
            try:
                results = self._write(encoded, self._fast)
            except sqlite3.OperationalError as e:
                if not _busy(e):
                    self._answer(batch, e, None)
                    return
                # Another process holds the lock: the worker thread waits for it, the loop
                # goes on serving.
            except BaseException as e:
                self._answer(batch, e, None)
                return
            else:
                self._answer(batch, None, results)
                self._fast_commits += 1
                self._fast_rows += sum(len(a.rows) for a in encoded)
                # Due: at once when the worker thread is free, else at a commit once it is
                # (but at four times the interval whatever it does: reads that never stop).
                due = max(
                    self._fast_commits / _CHECKPOINT_COMMITS, self._fast_rows / _CHECKPOINT_ROWS
                )
                if due >= (4 if self._jobs else 1):
                    self._fast_commits = self._fast_rows = 0
                    self._checkpoint()
                return
        try:
            work = loop.run_in_executor(self._pool, self._write, encoded, self._db)
        except RuntimeError as e:  # the worker thread is gone: the storage is closed
            self._answer(batch, e, None)
            return
        self._writing = writing = asyncio.ensure_future(work)
        writing.add_done_callback(lambda w: self._written(batch, w))

    def _checkpoint(self) -> None:
        """Copy the WAL into the database on the worker thread (never on the loop), holding
        the appends that come meanwhile until it ends. SQLite starts the WAL over only after
        a checkpoint that copied all of it: one that writes kept running beside never does,
        and the file grew for as long as the writes never paused. Started only while the
        worker thread has nothing else to do (see :meth:`_flush`), so that the appends are
        held while it copies, not while it waits its turn behind a long read."""
        loop = asyncio.get_running_loop()
        self._checkpointing = asyncio.ensure_future(
            loop.run_in_executor(self._pool, _checkpoint, self._db)
        )
        self._checkpointing.add_done_callback(self._checkpointed)

    def _checkpointed(self, done: asyncio.Future[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            log.warning(
                "SQLite's checkpoint failed (the next one copies the WAL): %s", done.exception()
            )
        self._flush()  # the appends held meanwhile

    def _answer(
        self,
        batch: list[tuple[_Encoded, asyncio.Future[None]]],
        failed: BaseException | None,
        results: list[Exception | None] | None,
    ) -> None:
        for i, (_, done) in enumerate(batch):
            if done.done():
                continue
            error = failed or (results[i] if results is not None else None)
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(None)

    def _written(
        self,
        batch: list[tuple[_Encoded, asyncio.Future[None]]],
        writing: asyncio.Future[list[Exception | None]],
    ) -> None:
        self._writing = None
        if writing.cancelled():
            for _, done in batch:
                done.cancel()
        elif writing.exception() is not None:
            self._answer(batch, writing.exception(), None)
        else:
            self._answer(batch, None, writing.result())
        if self._pending:
            self._flush()  # what came in while this transaction was being written

    def _write(self, batch: list[_Encoded], db: sqlite3.Connection) -> list[Exception | None]:
        """One transaction for the whole batch: every append at once when none conflicts,
        else each in a savepoint of its own, so that one conflict fails alone."""
        if sum(len(a.rows) for a in batch) <= _ONE_STATEMENT and all(
            a.seats is None and a.tokens is None for a in batch
        ):
            # Moves only (nearly every batch): one INSERT, its own transaction.
            if self.before_commit is not None:
                self.before_commit()
            try:
                self._append_all(batch, db)
            except sqlite3.IntegrityError:
                pass  # one is out of place: find which, below
            else:
                self.commits += 1
                return [None] * len(batch)
        db.execute("BEGIN IMMEDIATE")
        try:
            try:
                self._append_all(batch, db)
                results: list[Exception | None] = [None] * len(batch)
            except (Conflict, sqlite3.IntegrityError):
                db.execute("ROLLBACK")
                db.execute("BEGIN IMMEDIATE")
                results = [self._append_alone(a, db) for a in batch]
            if self.before_commit is not None:
                self.before_commit()
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self.commits += 1
        return results

    def _append_all(self, batch: list[_Encoded], db: sqlite3.Connection) -> None:
        """Every append of a batch in a statement (and the seats and tokens that change);
        IntegrityError if any entry is out of place (the trigger ``entry_in_place``)."""
        rows = [row for a in batch for row in a.rows]
        if len(rows) == 1:
            db.execute("INSERT INTO entries VALUES (?, ?, ?, ?)", rows[0])
        else:
            # One statement for the whole batch (or per _ONE_STATEMENT entries: SQLite binds
            # at most 32,766 values to one), a few microseconds of the loop's time.
            for start in range(0, len(rows), _ONE_STATEMENT):
                part = rows[start : start + _ONE_STATEMENT]
                values = ", ".join(["(?, ?, ?, ?)"] * len(part))
                db.execute(f"INSERT INTO entries VALUES {values}", [x for r in part for x in r])
        seated = [a for a in batch if a.seats is not None]
        if seated:
            db.executemany(
                "UPDATE tables SET seats = ?, options = ? WHERE table_id = ?",
                [(a.seats, a.options, a.table_id) for a in seated],
            )
        for a in batch:
            if a.tokens is not None:
                _replace_tokens(db, a)

    def _append_alone(self, a: _Encoded, db: sqlite3.Connection) -> Exception | None:
        """One append in a savepoint: its Conflict, or None once written."""
        db.execute("SAVEPOINT one")
        try:
            found = db.execute(
                "SELECT coalesce((SELECT max(number) FROM entries e WHERE e.table_id = ?), 0)"
                " FROM tables WHERE table_id = ?",
                (a.table_id, a.table_id),
            ).fetchone()
            if found is None:
                raise Conflict(f"no table {a.table_id!r} is stored")
            if found[0] != a.first - 1:
                raise Conflict(
                    f"table {a.table_id}: entry {a.first} appended after entry {found[0]}"
                )
            self._append_all([a], db)
        except (Conflict, sqlite3.IntegrityError) as e:
            db.execute("ROLLBACK TO one")
            db.execute("RELEASE one")
            return e if isinstance(e, Conflict) else Conflict(str(e))
        db.execute("RELEASE one")
        return None

    async def close(self) -> None:
        while self._pending or self._writing is not None:
            if self._writing is not None:
                await asyncio.wait([self._writing])
            elif self._checkpointing is not None and not self._checkpointing.done():
                await asyncio.wait([self._checkpointing])
            else:
                self._flush()
        if self._checkpointing is not None:
            await asyncio.wait([self._checkpointing])
        if self._fast is not None:
            self._fast.close()
        await self._run(self._db.close)
        self._pool.shutdown(wait=True)
        if self._alone is not None:
            os.close(self._alone)  # the file is free for another process
            self._alone = None


def is_postgres_url(db: str) -> bool:
    """True when ``--db`` names a PostgreSQL database (a libpq URL) rather than a file."""
    return db.startswith(("postgresql://", "postgres://"))


def redacted(db: str) -> str:
    """``db`` as a log may show it: a URL's password left out, and the values of its query's
    settings (``password=`` may be one of them), whose names stay."""
    if not is_postgres_url(db):
        return db
    # By hand, not by urllib: a password with / # ? not percent-encoded would end the
    # address there, and its rest be shown as the path or the query. Everything before the
    # last @ is the user and the password.
    scheme, _, rest = db.partition("://")
    userinfo, at, where = rest.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        where = f"{user}{':***' if colon else ''}@{where}"
    where, mark, query = where.partition("?")
    where = where.partition("#")[0]
    settings = "&".join(
        f"{name}=***" if equals else "***"
        for name, equals, _ in (part.partition("=") for part in query.partition("#")[0].split("&"))
    )
    return f"{scheme}://{where}{'?' + settings if mark else ''}"


#: A PostgreSQL connection string of keywords (libpq's ``host=... dbname=...``).
_CONNINFO = re.compile(
    r"(?:^|\s)(?:host|hostaddr|port|dbname|user|password|passfile|service|sslmode)\s*="
)


#: The start of a URL, "scheme:/" (or "scheme//", its colon missed): no name a person gives
#: a SQLite file.
_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+(?::/|//)")


#: user@host:port/dbname (or user@host/dbname): a PostgreSQL URL whose scheme was left out.
_URL_WITHOUT_SCHEME = re.compile(r"[^/@\s]+@[^/@\s]+(?::\d+)?/[^/\s]*")


def check_store(db: str) -> None:
    """Refuse a ``--db`` that names a PostgreSQL database other than by a URL libpq reads:
    a connection string of keywords or a URL with a mistyped scheme would be taken for a
    SQLite file's name (folders made with that name, the password in them and in the log),
    and a URL whose user name or password holds an @ is read in part as the host, which
    libpq's words then quote. The message does not repeat ``db``."""
    if is_postgres_url(db):
        # libpq reads the user and password up to the first / (an @ after it, in the
        # query, is a setting's).
        authority = db.partition("://")[2].partition("/")[0]
        if authority.count("@") > 1:
            raise OSError(
                f"cannot connect to PostgreSQL at {redacted(db)}: its user name or password"
                " holds an @: percent-encode it as %40 (and / # ? : as %2F %23 %3F %3A)"
            )
        return
    if _CONNINFO.search(db):
        raise OSError(
            "--db looks like a PostgreSQL connection string of keywords (host=... dbname=...):"
            " name the database by a URL, postgresql://user:password@host:port/dbname"
            " (percent-encode / # ? @ : in the password)"
        )
    if _URL_WITHOUT_SCHEME.fullmatch(db):
        raise OSError(
            "--db looks like a PostgreSQL URL without its scheme: name the database"
            f" {redacted('postgresql://' + db)}, a SQLite file by its path"
        )
    if _URL_START.match(db):
        raise OSError(
            "--db looks like a URL, but not a PostgreSQL one: a PostgreSQL database is named"
            " postgresql://user:password@host:port/dbname (in lower case, with two slashes),"
            " a SQLite file by its path"
        )


async def open_storage(
    db: str,
    summarize: Summarize | None = None,
    *,
    server_id: str = "",
    address: str = "",
    lease_seconds: float = 10.0,
) -> Storage:
    """The storage ``db`` names: a PostgreSQL database for a ``postgresql://`` (or
    ``postgres://``) URL, else a SQLite file (``:memory:``: one that keeps nothing).
    ``server_id``, ``address`` and ``lease_seconds``: this server's leases of the tables of a
    shared database (see :class:`Storage`)."""
    check_store(db)
    if is_postgres_url(db):
        from .storage_postgres import PostgresStorage  # loaded only for PostgreSQL

        return await PostgresStorage.open(
            db, summarize, server_id=server_id, address=address, lease_seconds=lease_seconds
        )
    return await SqliteStorage.open(db, summarize)


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any error (the connection autocommits)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


#: The most entries one INSERT stores.
_ONE_STATEMENT = 500

#: The loop's connection checkpoints after this many commits, or this many entries written,
#: whichever comes first. SQLite's own default is a checkpoint per 1,000 pages of WAL (4 MB);
#: an entry writes some 1.3 to 1.5 pages of it (its table's last page of entries, the
#: index's, the directory row's), so the WAL stays near 6 MB however the entries are batched.
_CHECKPOINT_COMMITS = 500
_CHECKPOINT_ROWS = 1000


def _check_key(db: sqlite3.Connection, fingerprint: str, path: str) -> None:
    """The key's fingerprint, kept by the first server on the database; another key is
    refused while the database holds tables (they were dealt with the first: a database
    restored without its key file would list tables no server can play)."""
    with _transaction(db):
        db.execute(
            "INSERT OR IGNORE INTO rami_key (only_row, fingerprint) VALUES (1, ?)", (fingerprint,)
        )
        (kept,) = db.execute("SELECT fingerprint FROM rami_key").fetchone()
        if kept == fingerprint:
            return
        if db.execute("SELECT 1 FROM tables LIMIT 1").fetchone() is None:
            db.execute("UPDATE rami_key SET fingerprint = ?", (fingerprint,))
            return
    raise OSError(
        f"the server's key is not the key {path}'s tables were dealt with: restore the key"
        " file kept with the database (by default its path + '.key'), or name it with"
        " --secret-file"
    )


def _busy(error: sqlite3.OperationalError) -> bool:
    """True when SQLite refused because another connection holds the lock."""
    return "locked" in str(error) or "busy" in str(error)


def _connect_fast(path: str) -> sqlite3.Connection:
    """The event loop's connection: it never waits for a lock, and never checkpoints."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=0.0)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    # It only appends (the last pages of the entries and their index): a small page cache,
    # not SQLite's 2 MB default, which the worker thread's connection keeps for the reads.
    db.execute("PRAGMA cache_size=-256")
    return db


def _checkpoint(db: sqlite3.Connection) -> None:
    """Copy what the WAL holds into the database, without waiting for anyone."""
    db.execute("PRAGMA wal_checkpoint(PASSIVE)")


def _replace_tokens(db: sqlite3.Connection, a: _Encoded) -> None:
    db.execute("DELETE FROM tokens WHERE table_id = ?", (a.table_id,))
    db.executemany(
        "INSERT OR IGNORE INTO tokens VALUES (?, ?)", [(t, a.table_id) for t in a.tokens or ()]
    )


def _hold_alone(path: str) -> int:
    """Lock ``path`` + ".lock" for this process (released when it closes the lock or ends,
    however it ends); OSError when another process holds it. A second server on the file
    would load its tables and play them too, each refusing the other's changes."""
    try:
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        if os.path.exists(f"{path}.lock"):  # left by a server of another user, say
            raise OSError(
                f"cannot open {path}.lock, the file that keeps the database one server's:"
                f" {e.strerror}. It is there already: this server must be able to write it"
                " (a server run by another user left it?)"
            ) from None
        # A folder it may not write in: a read-only file system, say.
        raise OSError(
            f"cannot make {path}.lock, the file that keeps the database one server's:"
            f" {e.strerror}. The server writes beside its database (its journal too): name a"
            " --db in a folder it may write in"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        raise OSError(
            f"{path} is in use by another rami-server (process {holder or '?'}): one SQLite "
            "database serves one server; several servers share a PostgreSQL database"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def _connect(path: str, summarize: Summarize | None) -> sqlite3.Connection:
    """Open the database, creating or migrating its schema (worker thread)."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    (version,) = db.execute("PRAGMA user_version").fetchone()
    if version > SCHEMA_VERSION:
        db.close()
        raise OSError(
            f"{path}: schema version {version} is newer than this server's ({SCHEMA_VERSION}):"
            " a newer rami-server wrote it; run that version (or a newer one)"
        )
    old = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'tables'").fetchone()
    if old and version < SCHEMA_VERSION:
        # Every step and the new version in one transaction: a migration cut short is undone
        # whole, and runs again at the next open.
        with _transaction(db):
            if version < 2:
                _migrate_v1(db, summarize)
            for added, columns in _ADDED_COLUMNS.items():
                if version < added:
                    for column in columns:
                        db.execute(f"ALTER TABLE tables ADD COLUMN {column}")
            if version < 5:
                # Version 5 checks an entry's place in the entries and keeps no number in
                # the table's row: version 4's triggers go (the schema below makes the new).
                db.execute("DROP TRIGGER IF EXISTS entry_in_place")
                db.execute("DROP TRIGGER IF EXISTS entry_moves_table")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    db.executescript(_SCHEMA)  # IF NOT EXISTS throughout: makes what is missing
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return db


def _migrate_v1(db: sqlite3.Connection, summarize: Summarize | None) -> None:
    """Version 1 to 2: the directory's columns and the tokens table, filled from each log."""
    for column in _V2_COLUMNS:
        db.execute(f"ALTER TABLE tables ADD COLUMN {column}")
    db.execute("ALTER TABLE entries ADD COLUMN status TEXT NOT NULL DEFAULT ''")
    db.execute(
        "CREATE TABLE IF NOT EXISTS tokens (token_hash TEXT PRIMARY KEY, table_id TEXT NOT NULL)"
        " WITHOUT ROWID"
    )
    for table_id, spec_text in db.execute("SELECT table_id, spec FROM tables").fetchall():
        spec = json.loads(spec_text)
        entries = [
            json.loads(e)
            for (e,) in db.execute(
                "SELECT entry FROM entries WHERE table_id = ? ORDER BY number", (table_id,)
            )
        ]
        seats, options = summarize(spec, entries) if summarize else ([], spec["options"])
        db.execute(
            "UPDATE tables SET number = ?, seats = ?, options = ?, variant = ?, client = ?,"
            " private = ? WHERE table_id = ?",
            (
                len(entries),
                _json(seats),
                _json(options),
                spec["variant"],
                spec.get("client", ""),
                int(bool(spec.get("private"))),
                table_id,
            ),
        )
        tokens = [spec.get("owner_hash", "")]
        tokens += [e["token"] for e in entries if e.get("type") == "join"]
        db.executemany(
            "INSERT OR IGNORE INTO tokens VALUES (?, ?)", [(t, table_id) for t in tokens if t]
        )
