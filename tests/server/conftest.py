"""A real server on 127.0.0.1 (port 0) in a thread of its own, for tests over real sockets."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from rami.server.app import Server, serve
from rami.server.lobby import LobbyConfig
from rami.server.table import TableConfig
from rami.v1 import (
    lobby_service_pb2_grpc,
    rules_service_pb2_grpc,
    table_service_pb2_grpc,
)

FAST = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=0.5)


class ServerThread:
    """A server running on its own event loop in a background thread."""

    def __init__(self, db: str, table_config: TableConfig = FAST, **lobby: object) -> None:
        self.db = db
        self.table_config = table_config
        self.lobby_config = LobbyConfig(
            **{"allow_stacked_decks": True, "max_tables_per_client": 1000, **lobby}  # type: ignore[arg-type]
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: Server | None = None

    def start(self) -> ServerThread:
        self.thread.start()
        self.server = self.call(
            serve("127.0.0.1", 0, self.db, lobby_config=self.lobby_config,
                  table_config=self.table_config)
        )
        return self

    def call(self, coro):  # type: ignore[no-untyped-def]
        """Run a coroutine on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def stop(self) -> None:
        if self.server is not None:
            self.call(self.server.stop(0.5))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    @property
    def target(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.port}"


class Stubs:
    """Blocking stubs of every service on one channel."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(target)
        self.rules = rules_service_pb2_grpc.RulesServiceStub(self.channel)
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(self.channel)
        self.table = table_service_pb2_grpc.TableServiceStub(self.channel)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    srv = ServerThread(str(tmp_path / "rami.db")).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def stubs(server: ServerThread) -> Iterator[Stubs]:
    s = Stubs(server.target)
    try:
        yield s
    finally:
        s.channel.close()
