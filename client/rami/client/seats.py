"""Seats kept between runs of the client, so a person who quits can sit back down.

A seat taken with ``rami-client connect`` is written down with its server, table and token in
``$XDG_STATE_HOME/rami/seats.json`` (by default ``~/.local/state/rami/seats.json``), a file
only its owner may read: the token *is* the seat. ``join`` at that table then takes the seat
back with the token instead of asking for a new one. A seat is forgotten when its game is
over, when the person leaves a table whose game has not started (the seat is free again), and
when its table is gone.

The book never stops the client: a file that can't be read or written is left alone (the
client plays on without it) and reported once.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["SavedSeat", "SeatBook", "default_path"]

_FIELDS = ("server", "table_id", "seat", "token", "table_name")


@dataclass(frozen=True, slots=True)
class SavedSeat:
    """A seat the person holds at a table of a server."""

    server: str
    table_id: str
    seat: int
    token: str
    table_name: str = ""


def default_path() -> Path:
    """Where the book lives: ``$XDG_STATE_HOME/rami/seats.json``, else under ``~/.local/state``."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "rami" / "seats.json"


class SeatBook:
    """The seats written down in one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: What went wrong with the file, if anything did (said once by the client).
        self.problem = ""

    def _read(self) -> list[SavedSeat]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as e:
            self.problem = f"can't read {self.path}: {e}"
            return []
        seats = []
        for item in data if isinstance(data, list) else []:
            if isinstance(item, dict) and set(_FIELDS) <= item.keys():
                try:
                    seats.append(SavedSeat(**{k: item[k] for k in _FIELDS}))
                except TypeError:
                    continue
        return seats

    def _write(self, seats: list[SavedSeat]) -> None:
        """Replace the file whole (a new file, then a rename), readable by its owner only."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".seats-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump([asdict(s) for s in seats], f, indent=1)
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as e:
            self.problem = f"can't write {self.path}: {e}"

    def at(self, server: str) -> list[SavedSeat]:
        """The seats held on ``server``."""
        return [s for s in self._read() if s.server == server]

    def find(self, server: str, table_id: str) -> SavedSeat | None:
        """The seat held at ``table_id`` on ``server``, if any."""
        for s in self.at(server):
            if s.table_id == table_id:
                return s
        return None

    def save(self, seat: SavedSeat) -> None:
        """Write ``seat`` down (in place of any other seat at the same table)."""
        others = [s for s in self._read() if (s.server, s.table_id) != (seat.server, seat.table_id)]
        self._write([*others, seat])

    def forget(self, server: str, table_id: str) -> None:
        """Cross out the seat at ``table_id`` on ``server`` (nothing if there is none)."""
        seats = self._read()
        kept = [s for s in seats if (s.server, s.table_id) != (server, table_id)]
        if len(kept) != len(seats):
            self._write(kept)
