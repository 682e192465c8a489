"""A real server on 127.0.0.1 in a thread of its own, for the client's end-to-end tests.

The pattern of ``tests/server/conftest.py``, with one more ability: :meth:`ServerThread.halt`
then :meth:`ServerThread.start` stop the server and start a new one on the same port and
database, as a crash and restart would look to a client.

This is not a ``conftest.py``: other test folders ``from conftest import`` their own helpers,
and a third conftest module would take that name from them. Test modules here build their
fixtures from :func:`running_server` and :func:`server_stubs`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
from rami.server.app import Server, serve
from rami.server.lobby import LobbyConfig
from rami.server.table import TableConfig
from rami.v1 import lobby_service_pb2_grpc, table_service_pb2_grpc

FAST = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=0.5)
T = TypeVar("T")


class ServerThread:
    """A server running on its own event loop in a background thread."""

    def __init__(self, db: str, table_config: TableConfig = FAST) -> None:
        self.db = db
        self.table_config = table_config
        self.lobby_config = LobbyConfig(allow_stacked_decks=True, max_tables_per_client=1000)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: Server | None = None
        self.port = 0

    def start(self) -> ServerThread:
        """Start the loop and a server on a free port (or the port it had)."""
        if not self.thread.is_alive():
            self.thread.start()
        self.server = self.call(
            serve("127.0.0.1", self.port, self.db, lobby_config=self.lobby_config,
                  table_config=self.table_config)
        )
        self.port = self.server.port
        return self

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def halt(self) -> None:
        """Stop the server (the loop goes on, ready for another)."""
        if self.server is not None:
            self.call(self.server.stop(0.2))
            self.server = None

    def stop(self) -> None:
        """Stop the server and its loop."""
        self.halt()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    @property
    def target(self) -> str:
        """The server's address."""
        return f"127.0.0.1:{self.port}"


class Stubs:
    """Blocking stubs of the lobby and table services on one channel."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(target)
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(self.channel)
        self.table = table_service_pb2_grpc.TableServiceStub(self.channel)


def running_server(tmp_path: Path) -> Iterator[ServerThread]:
    """A server on a file database (so it can be restarted with its tables), stopped after."""
    srv = ServerThread(str(tmp_path / "rami.db")).start()
    try:
        yield srv
    finally:
        srv.stop()


def server_stubs(server: ServerThread) -> Iterator[Stubs]:
    """Blocking stubs on the test server, closed after."""
    s = Stubs(server.target)
    try:
        yield s
    finally:
        s.channel.close()
