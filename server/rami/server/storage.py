"""Storage: each table's description and its log of entries, in an embedded SQLite file.

The interface is small on purpose (create a table, append an entry, mark a table finished,
load everything unfinished) so that a server database can back it when several server
processes share tables. An entry is a JSON object; a table is rebuilt by replaying its entries.

SQLite runs in WAL mode with ``synchronous=NORMAL``: a committed entry is in the WAL file before
``append`` returns, so it survives the server process being killed at any moment.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["SqliteStorage", "Storage", "StoredTable"]


@dataclass(slots=True)
class StoredTable:
    """A table as stored: its description and its entries in order."""

    table_id: str
    spec: dict[str, Any]
    status: str
    entries: list[dict[str, Any]]


class Storage(Protocol):
    """Where tables live between restarts."""

    def create_table(self, table_id: str, spec: dict[str, Any]) -> None:
        """Store a new table's description."""

    def append(self, table_id: str, number: int, entry: dict[str, Any]) -> None:
        """Store entry ``number`` of a table (numbers are consecutive from 1); durable on return."""

    def set_status(self, table_id: str, status: str) -> None:
        """Record that a table is playing or finished."""

    def load(self, *, finished: bool = False) -> list[StoredTable]:
        """Every table (only unfinished ones unless ``finished``), with its entries."""

    def load_table(self, table_id: str) -> StoredTable | None:
        """One table with its entries, or None."""

    def close(self) -> None:
        """Flush and close."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    table_id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    spec TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'waiting'
);
CREATE TABLE IF NOT EXISTS entries (
    table_id TEXT NOT NULL REFERENCES tables(table_id),
    number INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (table_id, number)
) WITHOUT ROWID;
"""


class SqliteStorage:
    """Storage in one SQLite file (``:memory:`` keeps nothing after the process ends)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def create_table(self, table_id: str, spec: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO tables (table_id, created, spec) VALUES (?, ?, ?)",
            (table_id, time.time(), json.dumps(spec, separators=(",", ":"))),
        )

    def append(self, table_id: str, number: int, entry: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO entries (table_id, number, entry) VALUES (?, ?, ?)",
            (table_id, number, json.dumps(entry, separators=(",", ":"))),
        )

    def set_status(self, table_id: str, status: str) -> None:
        self._db.execute("UPDATE tables SET status = ? WHERE table_id = ?", (status, table_id))

    def load(self, *, finished: bool = False) -> list[StoredTable]:
        rows = self._db.execute(
            "SELECT table_id, spec, status FROM tables"
            + ("" if finished else " WHERE status != 'finished'")
            + " ORDER BY created"
        ).fetchall()
        return [self._stored(tid, spec, status) for tid, spec, status in rows]

    def load_table(self, table_id: str) -> StoredTable | None:
        row = self._db.execute(
            "SELECT table_id, spec, status FROM tables WHERE table_id = ?", (table_id,)
        ).fetchone()
        return self._stored(*row) if row else None

    def _stored(self, table_id: str, spec: str, status: str) -> StoredTable:
        entries = [
            json.loads(e)
            for (e,) in self._db.execute(
                "SELECT entry FROM entries WHERE table_id = ? ORDER BY number", (table_id,)
            )
        ]
        return StoredTable(table_id, json.loads(spec), status, entries)

    def close(self) -> None:
        self._db.close()
