"""Helpers of the bot tests: where the repository is, blocking stubs to set tables up, and a
server that can be restarted on the port it had."""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

from rami.server.table import TableConfig
from rami.server.testing import ServerThread
from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc, table_service_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = {
    "portuguese": game_pb2.VARIANT_PORTUGUESE,
    "tallage": game_pb2.VARIANT_TALLAGE,
    "simple": game_pb2.VARIANT_SIMPLE,
}
#: How long a bot over the network may take for one short game.
GAME_SECONDS = 60
#: Short but whole games: two portuguese rounds; moroccan games to 201, at most three rounds.
SHORT = {"portuguese": {"rounds": 2}, "tallage": {"round_cap": 3}, "simple": {"round_cap": 3}}


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

    def create(
        self,
        variant: str,
        players: int = 4,
        bots: tuple[str, ...] = (),
        decks: tuple[lobby_service_pb2.Deck, ...] = (),
        **options: int,
    ) -> str:
        """A table of ``variant`` with built-in bots in its first seats, dealt ``decks`` (stacked:
        the first rounds' decks, top card first) or fair deals; returns its id."""
        resp = self.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name=f"{variant} bots",
                variant=VARIANTS[variant],
                options=game_pb2.Options(players=players, **{**SHORT[variant], **options}),
                stacked_decks=decks,
            ),
            timeout=10,
        )
        md = (("rami-token", resp.owner_token),)
        for policy in bots:
            self.lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=resp.table.table_id, policy=policy),
                metadata=md,
                timeout=10,
            )
        return resp.table.table_id

    def info(self, table_id: str) -> lobby_service_pb2.TableInfo:
        """The table as the lobby shows it."""
        return self.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=10
        ).table


def run_all(commands: dict[str, list[str]], cwd: Path) -> dict[str, subprocess.CompletedProcess]:
    """Run the commands at once; wait for each, at most GAME_SECONDS more than the others."""
    procs = {
        key: subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for key, cmd in commands.items()
    }
    done: dict[str, subprocess.CompletedProcess] = {}
    deadline = time.monotonic() + GAME_SECONDS + 15
    try:
        for key, p in procs.items():
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            done[key] = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
    return done


SLOW_BOTS = TableConfig(bot_delay=0.05, round_pause=0.0, away_delay=0.0, heartbeat=0.5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FixedPortServer(ServerThread):
    """A ServerThread on a chosen port, so that a restarted server is found where it was."""

    def __init__(self, db: str, port: int) -> None:
        super().__init__(db, SLOW_BOTS)
        self.port = port

    def start(self) -> FixedPortServer:
        from rami.server.app import serve

        self.thread.start()
        self.server = self.call(
            serve(
                "127.0.0.1",
                self.port,
                self.db,
                lobby_config=self.lobby_config,
                table_config=self.table_config,
            )
        )
        return self
