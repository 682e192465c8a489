"""A real server in a background thread, for tests of clients and bots (any test runner).

>>> # with ServerThread("/tmp/t.db") as srv, Stubs(srv.target) as stubs: ...
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import grpc

from rami.v1 import lobby_service_pb2_grpc, rules_service_pb2_grpc, table_service_pb2_grpc

from .app import Server, serve
from .connections import ConnectionLimits
from .lobby import LobbyConfig
from .table import TableConfig

__all__ = ["CONNECTIONS", "FAST", "ServerThread", "Stubs"]

T = TypeVar("T")

#: Built-in bots, away seats and the next deal move at once; heartbeats every half second.
FAST = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=0.5)
#: The server's connection settings, but no bound per address (the tests' clients share one).
CONNECTIONS = ConnectionLimits(per_address=0)


class ServerThread:
    """A server on 127.0.0.1 (any free port) running on its own event loop in a thread.

    Test defaults: stacked decks allowed, generous per-client limits, instant bots, no bound on
    connections per address (``connections``: the server's connection settings).
    :meth:`halt` then :meth:`start` stop the server and start a new one on the same port and
    database, as a crash and restart look to a client.
    """

    def __init__(
        self,
        db: str,
        table_config: TableConfig = FAST,
        connections: ConnectionLimits = CONNECTIONS,
        **lobby: Any,
    ) -> None:
        self.db = db
        self.table_config = table_config
        self.connections = connections
        settings: dict[str, Any] = {
            "allow_stacked_decks": True,
            "max_tables_per_client": 1000,
            "commands_per_second": 1000.0,
            "command_burst": 1000.0,
            "work_share": 1000.0,
            "work_burst": 1000.0,
        }
        settings.update(lobby)
        self.lobby_config = LobbyConfig(**settings)
        self.loop = _new_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: Server | None = None
        self.port = 0

    def start(self) -> ServerThread:
        """Start the loop and a server on a free port (or the port it had); returns self."""
        if not self.thread.is_alive():
            self.thread.start()
        self.server = self.call(
            serve(
                "127.0.0.1",
                self.port,
                self.db,
                lobby_config=self.lobby_config,
                table_config=self.table_config,
                connections=self.connections,
            )
        )
        self.port = self.server.port
        return self

    def halt(self) -> None:
        """Stop the server; the loop goes on, ready for another."""
        if self.server is not None:
            self.call(self.server.stop(0.2))
            self.server = None

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def stop(self) -> None:
        """Stop the server gracefully, then the loop."""
        self.halt()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    @property
    def target(self) -> str:
        """``host:port`` to connect to."""
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _new_loop() -> asyncio.AbstractEventLoop:
    """A new event loop: asyncio's, or uvloop's when ``RAMI_LOOP=uvloop`` (to run the tests
    on the loop ``rami-server`` picks when uvloop is installed)."""
    if os.environ.get("RAMI_LOOP") == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


class Stubs:
    """Blocking stubs of every service on one channel."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(target)
        self.rules = rules_service_pb2_grpc.RulesServiceStub(self.channel)
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(self.channel)
        self.table = table_service_pb2_grpc.TableServiceStub(self.channel)

    def __enter__(self) -> Stubs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.channel.close()
