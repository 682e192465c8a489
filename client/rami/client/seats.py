"""Seats kept between runs of the client, so a person who quits can sit back down.

A seat taken with ``rami-client connect`` is written down with its server, table and token in
``$XDG_STATE_HOME/rami/seats.json`` (by default ``~/.local/state/rami/seats.json``), a file
only its owner may read: the token *is* the seat. ``join`` at that table then takes the seat
back with the token instead of asking for a new one. A seat is forgotten when its game is
over, when the person leaves a table whose game has not started (the seat is free again), and
when its table is gone.

Seats belong to a **profile** (``rami-client connect --profile NAME``; ``default`` unless
given): each entry records the profile that took it, and a client sees only its own
profile's seats. One running client holds a profile at a time (a lock file beside the book,
``seats-NAME.lock``, held while the client runs): a second client started with the same
profile keeps no seats, and is told so, rather than offer the first one's seats as its own.
Two people who share an account give each their own profile.

The book never stops the client: a file that can't be read or written is left alone (the
client plays on without it) and reported once.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

__all__ = [
    "DEFAULT_PROFILE",
    "HeldSeats",
    "SavedSeat",
    "SeatBook",
    "Seats",
    "check_profile",
    "default_path",
]

_FIELDS = ("server", "table_id", "seat", "token", "table_name")
#: The profile of a client started without ``--profile`` (and of entries written before
#: profiles).
DEFAULT_PROFILE = "default"
_PROFILE = re.compile(r"[A-Za-z0-9_-]{1,32}")


def check_profile(name: str) -> str:
    """``name`` as a profile's name (1 to 32 of A-Z, a-z, 0-9, ``_``, ``-``), or ValueError."""
    if not _PROFILE.fullmatch(name):
        raise ValueError(f"a profile is 1 to 32 letters, digits, '_' or '-', not {name!r}")
    return name


@dataclass(frozen=True, slots=True)
class SavedSeat:
    """A seat the person holds at a table of a server."""

    server: str
    table_id: str
    seat: int
    token: str
    table_name: str = ""
    #: The profile of the client that took the seat.
    profile: str = DEFAULT_PROFILE
    #: The table's update the person was shown last (0: not known), written down as each
    #: comes and when they leave: taking the seat back replays what happened after it, after
    #: a crash too.
    seen: int = 0


def default_path() -> Path:
    """Where the book lives: ``$XDG_STATE_HOME/rami/seats.json``, else under ``~/.local/state``."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "rami" / "seats.json"


class Preferences:
    """A profile's preferences (how the hand is sorted), in ``prefs-PROFILE.json`` beside the
    seat book's file (``path``). ``play`` keeps them too, though it keeps no seats."""

    def __init__(self, path: Path, profile: str = DEFAULT_PROFILE) -> None:
        self.path = path.with_name(f"prefs-{check_profile(profile)}.json")

    def preference(self, name: str) -> str | None:
        """The preference ``name`` as last written (None: none, or unreadable)."""
        try:
            value = json.loads(self.path.read_text(encoding="utf-8")).get(name)
        except (OSError, ValueError, AttributeError):
            return None
        return value if isinstance(value, str) else None

    def prefer(self, name: str, value: str) -> None:
        """Write the preference ``name`` down (a file that can't be written: left alone, the
        client goes on without it)."""
        try:
            kept = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            kept = {}
        if not isinstance(kept, dict):
            kept = {}
        kept[name] = value
        with suppress(OSError):
            _replace_whole(self.path, kept)


class SeatBook:
    """The seats of one profile, written down in one file (shared by the profiles)."""

    def __init__(self, path: Path, profile: str = DEFAULT_PROFILE) -> None:
        self.path = path
        self.profile = check_profile(profile)
        #: What went wrong with the file, if anything did (said once by the client).
        self.problem = ""
        self._lock: IO[bytes] | None = None

    @property
    def lock_path(self) -> Path:
        """The file whose lock says a running client holds this profile."""
        return self.path.with_name(f"{self.path.stem}-{self.profile}.lock")

    def claim(self) -> bool:
        """Hold the profile for as long as this book lives (or until :meth:`release`): False
        when another running client holds it already. A lock file that can't be made counts
        as held by nobody (the book's problem says why)."""
        if self._lock is not None:
            return True
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            f = open(self.lock_path, "ab")  # noqa: SIM115 (held open: the lock is the file's)
        except OSError as e:
            self.problem = f"can't make {self.lock_path}: {e}"
            return True
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            return False
        self._lock = f
        return True

    def release(self) -> None:
        """Let another client hold the profile."""
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.close()  # closing the file drops its lock

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
                profile = item.get("profile") or DEFAULT_PROFILE
                seen = item.get("seen")
                seen = seen if isinstance(seen, int) and seen > 0 else 0
                try:
                    seats.append(
                        SavedSeat(**{k: item[k] for k in _FIELDS}, profile=profile, seen=seen)
                    )
                except TypeError:
                    continue
        return seats

    def _write(self, seats: list[SavedSeat]) -> None:
        """Replace the file whole (a new file, then a rename), readable by its owner only."""
        try:
            _replace_whole(self.path, [asdict(s) for s in seats], indent=1)
        except OSError as e:
            self.problem = f"can't write {self.path}: {e}"

    @property
    def prefs(self) -> Preferences:
        """The profile's preferences, beside the book."""
        return Preferences(self.path, self.profile)

    def at(self, server: str) -> list[SavedSeat]:
        """This profile's seats held on ``server``."""
        return [s for s in self._read() if s.server == server and s.profile == self.profile]

    def find(self, server: str, table_id: str) -> SavedSeat | None:
        """The seat held at ``table_id`` on ``server``, if any."""
        for s in self.at(server):
            if s.table_id == table_id:
                return s
        return None

    @contextmanager
    def _changing(self) -> Iterator[None]:
        """Hold the book while it is read, changed and written whole, so that two clients
        (profiles) writing it at once lose nothing of each other's (a lock that can't be
        taken: the write goes on without it)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            f = open(self.path.with_name(self.path.name + ".lock"), "ab")  # noqa: SIM115
        except OSError:
            yield
            return
        with f:
            with suppress(OSError):
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            yield  # the lock ends with the file

    def save(self, seat: SavedSeat) -> None:
        """Write ``seat`` down for this profile (in place of its other seat at the table)."""
        seat = SavedSeat(
            seat.server,
            seat.table_id,
            seat.seat,
            seat.token,
            seat.table_name,
            self.profile,
            seat.seen,
        )
        key = (seat.server, seat.table_id, self.profile)
        with self._changing():
            others = [s for s in self._read() if (s.server, s.table_id, s.profile) != key]
            self._write([*others, seat])

    def forget(self, server: str, table_id: str) -> None:
        """Cross out this profile's seat at ``table_id`` on ``server`` (if there is one)."""
        with self._changing():
            seats = self._read()
            key = (server, table_id, self.profile)
            kept = [s for s in seats if (s.server, s.table_id, s.profile) != key]
            if len(kept) != len(seats):
                self._write(kept)


class HeldSeats:
    """The seats of a client whose server ends with it (``rami-client play``), kept in memory
    for as long as it runs: a player who leaves the game takes the seat back with ``join``, as
    one who connected to a server does, and nothing is written down."""

    def __init__(self) -> None:
        self.profile = DEFAULT_PROFILE
        #: Nothing can go wrong with memory (the client reads it as the book's).
        self.problem = ""
        self._seats: dict[tuple[str, str], SavedSeat] = {}

    def at(self, server: str) -> list[SavedSeat]:
        """The seats held on ``server``."""
        return [s for (where, _), s in self._seats.items() if where == server]

    def find(self, server: str, table_id: str) -> SavedSeat | None:
        """The seat held at ``table_id`` on ``server``, if any."""
        return self._seats.get((server, table_id))

    def save(self, seat: SavedSeat) -> None:
        """Keep ``seat`` (in place of another at its table)."""
        self._seats[(seat.server, seat.table_id)] = seat

    def forget(self, server: str, table_id: str) -> None:
        """Drop the seat at ``table_id`` on ``server`` (if there is one)."""
        self._seats.pop((server, table_id), None)


#: Where a client keeps the seats it took: written down (``connect``) or in memory (``play``).
Seats = SeatBook | HeldSeats


def _replace_whole(path: Path, data: object, indent: int | None = None) -> None:
    """Write ``data`` as JSON to ``path`` whole (a new file, then a rename), readable by its
    owner only; OSError when it can't."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=indent)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
