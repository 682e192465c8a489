"""The commands typed, kept between runs of the client (Up recalls the last run's too).

One file per profile beside the seat book (``$XDG_STATE_HOME/rami/history-NAME``), held by the
one client that holds the profile; ``rami-client play`` keeps its own (``history.play``: no
profile's name has a dot). It keeps the newest :data:`KEEP` commands: older ones are dropped
when it is read at the start.
Like the seat book, it never stops the client: a file that can't be read or written is left
alone, and the commands of this run are recalled all the same.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from prompt_toolkit.history import FileHistory, History, InMemoryHistory

__all__ = ["KEEP", "command_history"]

#: The most commands kept in the file.
KEEP = 1000


class _KeptHistory(FileHistory):
    """prompt-toolkit's file of commands, bounded to the newest ``KEEP`` and never raising."""

    def load_history_strings(self) -> Iterable[str]:
        try:
            newest_first = list(super().load_history_strings())
        except OSError:
            return []
        if len(newest_first) > KEEP:
            newest_first = newest_first[:KEEP]
            self._rewrite(newest_first)
        return newest_first

    def _rewrite(self, newest_first: list[str]) -> None:
        """The file with only ``newest_first``, written whole, owner-only, and then put in
        place (a file of its own for each writer: two ``play`` runs may share the history)."""
        path = Path(os.fsdecode(self.filename))
        text = "".join(_entry(line) for line in reversed(newest_first))
        try:
            fd, spare = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp: mode 0600
                f.write(text)
            os.replace(spare, path)
        except OSError:
            with suppress(OSError):
                os.unlink(spare)

    def store_string(self, string: str) -> None:
        with suppress(OSError):  # a full disk, say: this run still recalls it
            super().store_string(string)


def _entry(line: str) -> str:
    """One command as prompt-toolkit's FileHistory writes it (its time, then its lines)."""
    lines = "".join(f"+{part}\n" for part in line.split("\n"))
    return f"\n# {datetime.datetime.now()}\n{lines}"


def command_history(path: Path | None) -> History:
    """The history of commands kept in ``path`` (None: this run's only)."""
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.touch(mode=0o600)
    except OSError:
        return InMemoryHistory()
    return _KeptHistory(path)
