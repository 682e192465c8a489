"""A real server on 127.0.0.1 for the client's end-to-end tests (rami.server.testing).

Test modules here build their fixtures from :func:`running_server` and :func:`server_stubs`;
``ServerThread.halt`` then ``start`` restart the server on the same port and database, as a
crash and restart look to a client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from rami.server.testing import ServerThread, Stubs

__all__ = ["ServerThread", "Stubs", "running_server", "server_stubs"]


def running_server(tmp_path: Path) -> Iterator[ServerThread]:
    """A server on a file database (so it can be restarted with its tables), stopped after."""
    with ServerThread(str(tmp_path / "rami.db")) as srv:
        yield srv


def server_stubs(server: ServerThread) -> Iterator[Stubs]:
    """Blocking stubs on the test server, closed after."""
    with Stubs(server.target) as s:
        yield s
