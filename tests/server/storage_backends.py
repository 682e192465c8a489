"""The storage backends the storage tests run against, each with what a test needs to look at
it from outside: a second connection's view of the log, a failure of its own kind, and a
writer elsewhere that holds a table's write lock."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rami.server.lobby import summarize
from rami.server.storage import SqliteStorage

__all__ = ["BACKENDS", "Backend", "backend_for"]

#: The parameters of the ``backend`` fixture.
BACKENDS = ("sqlite", "postgres")


@dataclass
class Backend:
    """One database of one kind, for one test."""

    kind: str
    #: A SQLite file's path, or a PostgreSQL URL.
    db: str

    async def open(self) -> Any:
        """The storage on this database (``Any``: tests set its ``before_commit``)."""
        if self.kind == "sqlite":
            return await SqliteStorage.open(self.db, summarize)
        from rami.server.storage_postgres import PostgresStorage

        return await PostgresStorage.open(self.db, summarize)

    def stored_numbers(self, table_id: str) -> list[int]:
        """The numbers of a table's entries that another connection sees committed."""
        if self.kind == "sqlite":
            db = sqlite3.connect(self.db)
            try:
                rows = db.execute(
                    "SELECT number FROM entries WHERE table_id = ? ORDER BY number", (table_id,)
                )
                return [n for (n,) in rows]
            finally:
                db.close()
        import psycopg

        with psycopg.connect(self.db, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT number FROM rami_entries WHERE table_id = %s ORDER BY number",
                (table_id,),
            ).fetchall()
        return [int(n) for (n,) in rows]

    def io_error(self) -> Exception:
        """What the database's driver raises when the disk fails under it."""
        if self.kind == "sqlite":
            return sqlite3.OperationalError("disk I/O error")
        import psycopg

        return psycopg.OperationalError("could not write to file: No space left on device")

    def hold_write_lock(self, table_id: str) -> Callable[[], None]:
        """Another process's transaction that holds the lock the table's appends need;
        returns what ends it."""
        if self.kind == "sqlite":
            other = sqlite3.connect(self.db, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")

            def release_sqlite() -> None:
                other.execute("COMMIT")
                other.close()

            return release_sqlite
        import psycopg

        conn = psycopg.connect(self.db)
        conn.execute("SELECT 1 FROM rami_tables WHERE table_id = %s FOR UPDATE", (table_id,))

        def release_postgres() -> None:
            conn.commit()
            conn.close()

        return release_postgres


def backend_for(kind: str, tmp_path: Path, postgres_url: Callable[[], str]) -> Backend:
    """A fresh database of ``kind``: a file in ``tmp_path``, or a new PostgreSQL database."""
    if kind == "sqlite":
        return Backend(kind, str(tmp_path / "rami.db"))
    return Backend(kind, postgres_url())
