"""Helpers of the bot tests: where the repository is, and blocking stubs to set tables up."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc, table_service_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = {
    "portuguese": game_pb2.VARIANT_PORTUGUESE,
    "tallage": game_pb2.VARIANT_TALLAGE,
    "simple": game_pb2.VARIANT_SIMPLE,
}
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
        self, variant: str, players: int = 4, bots: tuple[str, ...] = (), **options: int
    ) -> str:
        """A table of ``variant`` with built-in bots in its first seats; returns its id."""
        resp = self.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name=f"{variant} bots",
                variant=VARIANTS[variant],
                options=game_pb2.Options(players=players, **{**SHORT[variant], **options}),
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
