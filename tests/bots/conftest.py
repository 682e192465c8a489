"""Fixtures for the bot tests: a real server on 127.0.0.1 (port 0) in a thread of its own.

The server runs the same way as in tests/server (the ServerThread pattern, copied here so the
two folders stay independent), with built-in bots that move at once.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from rami.server.app import Server, serve
from rami.server.lobby import LobbyConfig
from rami.server.table import TableConfig
from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc, table_service_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
FAST = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=0.5)
VARIANTS = {
    "portuguese": game_pb2.VARIANT_PORTUGUESE,
    "tallage": game_pb2.VARIANT_TALLAGE,
    "simple": game_pb2.VARIANT_SIMPLE,
}
#: Short but whole games: two portuguese rounds; moroccan games to 201, at most three rounds.
SHORT = {"portuguese": {"rounds": 2}, "tallage": {"round_cap": 3}, "simple": {"round_cap": 3}}


class ServerThread:
    """A server running on its own event loop in a background thread."""

    def __init__(self, db: str, table_config: TableConfig = FAST) -> None:
        self.db = db
        self.table_config = table_config
        self.lobby_config = LobbyConfig(max_tables_per_client=1000)
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


@dataclass
class Tables:
    """Blocking stubs to set tables up for the bots under test."""

    target: str
    channel: grpc.Channel

    @property
    def lobby(self) -> lobby_service_pb2_grpc.LobbyServiceStub:
        return lobby_service_pb2_grpc.LobbyServiceStub(self.channel)

    @property
    def table(self) -> table_service_pb2_grpc.TableServiceStub:
        return table_service_pb2_grpc.TableServiceStub(self.channel)

    def create(self, variant: str, players: int = 4, bots: tuple[str, ...] = (),
               **options: int) -> str:
        """A table of ``variant`` with built-in bots in its first seats; returns its id."""
        resp = self.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name=f"{variant} bots", variant=VARIANTS[variant],
                options=game_pb2.Options(players=players, **{**SHORT[variant], **options}),
            ),
            timeout=10,
        )
        md = (("rami-token", resp.owner_token),)
        for policy in bots:
            self.lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=resp.table.table_id, policy=policy),
                metadata=md, timeout=10,
            )
        return resp.table.table_id

    def info(self, table_id: str) -> lobby_service_pb2.TableInfo:
        """The table as the lobby shows it."""
        return self.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=10
        ).table


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    srv = ServerThread(str(tmp_path_factory.mktemp("bots") / "rami.db")).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def tables(server: ServerThread) -> Iterator[Tables]:
    channel = grpc.insecure_channel(server.target)
    try:
        yield Tables(server.target, channel)
    finally:
        channel.close()


@pytest.fixture(scope="session")
def js_bot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JavaScript example bot, installed with ``npm ci`` from its lockfile in a copy of the
    examples tree (its .proto files are found at ../../proto, as in the repository)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the JavaScript bot")
    root = tmp_path_factory.mktemp("js")
    work = root / "examples" / "js"
    work.mkdir(parents=True)
    for name in ("bot.js", "package.json", "package-lock.json"):
        shutil.copy(ROOT / "examples" / "js" / name, work / name)
    (root / "proto").symlink_to(ROOT / "proto", target_is_directory=True)
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=work, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
    return work / "bot.js"
