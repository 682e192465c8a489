"""The bot kit: write one function from a view to an action; the kit does the rest.

It joins (or reuses a seat's token), watches the table, decides whenever it is the seat's
turn, sends the action with the number of the view it was decided on, and, when the stream
drops, reconnects and resumes from the last update it saw. A refusal is counted and answered
with a safe move, so a bot never stalls its table.

>>> # asyncio.run(play("localhost:50051", table_id, my_decide, name="Mine"))
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc

from rami.engine import POLICIES, Action, Discard, Draw, Phase, View
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

from .convert import action_to_request, view_from_proto

__all__ = ["CHANNEL_OPTIONS", "BotResult", "Decide", "play", "policy_decider"]

log = logging.getLogger("rami.client.bot")

Decide = Callable[[View], Action]
TOKEN_METADATA = "rami-token"
#: Come back quickly after a server restart: gRPC's default backoff grows to two minutes.
CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2000),
]
_RETRY = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
}


@dataclass
class BotResult:
    """How a bot's game went."""

    seat: int = -1
    token: str = ""
    actions: int = 0
    refused: list[str] = field(default_factory=list)
    reconnects: int = 0
    final: game_pb2.View | None = None
    acknowledged: list[int] = field(default_factory=list)


def policy_decider(name: str, seed: int | str = 0) -> Decide:
    """A decide function from one of the engine's policies (random, greedy, strong)."""
    policy = POLICIES[name]
    rng = random.Random(seed)
    return lambda v: policy(v, rng)


def _safe(v: View) -> Action:
    if v.phase == Phase.DRAW:
        return Draw("stock")
    assert v.hand is not None
    return Discard(v.drawn if v.drawn is not None and v.drawn in v.hand else v.hand[-1])


def _my_turn(v: game_pb2.View) -> bool:
    return (
        v.HasField("seat")
        and v.seat == v.turn
        and v.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
    )


async def play(
    target: str,
    table_id: str,
    decide: Decide,
    *,
    name: str = "Bot",
    seat: int | None = None,
    token: str | None = None,
    channel: grpc.aio.Channel | None = None,
    max_reconnects: int = 20,
    credentials: grpc.ChannelCredentials | None = None,
) -> BotResult:
    """Play one game at ``table_id`` on the server at ``target`` until it is over.

    ``credentials`` (``grpc.ssl_channel_credentials(...)``) speak TLS to the server; without
    them the channel is plaintext. A ``channel`` given is used as it is."""
    own = channel is None
    if channel is not None:
        ch = channel
    elif credentials is not None:
        ch = grpc.aio.secure_channel(target, credentials, options=CHANNEL_OPTIONS)
    else:
        ch = grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
    try:
        return await _play(ch, table_id, decide, name, seat, token, max_reconnects)
    finally:
        if own:
            await ch.close()


async def _play(
    channel: grpc.aio.Channel,
    table_id: str,
    decide: Decide,
    name: str,
    seat: int | None,
    token: str | None,
    max_reconnects: int,
) -> BotResult:
    lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
    table = table_service_pb2_grpc.TableServiceStub(channel)
    result = BotResult()
    if token is None:
        joined = await lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name, seat=seat)
        )
        token, result.seat = joined.token, joined.seat
    result.token = token
    metadata = ((TOKEN_METADATA, token),)
    last: int | None = None
    decided = -1  # the latest update number this bot has acted on
    while True:
        try:
            stream = table.Watch(
                table_service_pb2.WatchRequest(table_id=table_id, after=last), metadata=metadata
            )
            try:
                async for msg in stream:
                    if not msg.HasField("update"):
                        continue
                    view = msg.update.view
                    last = msg.update.number
                    result.seat = view.seat
                    if view.phase == game_pb2.PHASE_GAME_OVER:
                        result.final = view
                        return result
                    while _my_turn(view) and view.number > decided:
                        decided = view.number
                        after = await _act(table, table_id, metadata, view, decide, result)
                        if after is None:
                            break
                        view = after
            finally:
                stream.cancel()  # a stream left behind would count against the seat's streams
        except grpc.aio.AioRpcError as e:
            if e.code() not in _RETRY or result.reconnects >= max_reconnects:
                raise
            result.reconnects += 1
            log.info("stream dropped (%s: %s); resuming after %s", e.code().name, e.details(), last)
            # Resume one update early: if the stream or a command failed on this seat's turn,
            # the view it was decided on comes again and is decided anew (a command that did
            # get through makes the retry stale: ABORTED, never a second move).
            if last:
                last -= 1
            decided = -1
            await asyncio.sleep(min(2.0, 0.05 * result.reconnects))


async def _act(
    table: table_service_pb2_grpc.TableServiceStub,
    table_id: str,
    metadata: tuple[tuple[str, str], ...],
    view: game_pb2.View,
    decide: Decide,
    result: BotResult,
) -> game_pb2.View | None:
    """Decide and send one action; the view after it, or None when it is not ours to act on."""
    engine_view = view_from_proto(view)
    action = decide(engine_view)
    attempt, waits = 0, 0
    while attempt < 2:
        try:
            response = await table.Act(
                action_to_request(table_id, view.number, action), metadata=metadata
            )
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.ABORTED:
                return None  # the game moved on: the stream brings the newer view
            if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and waits < 50:
                waits += 1  # too many commands: the same command, a little later
                await asyncio.sleep(min(1.0, 0.05 * waits))
                continue
            if e.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT):
                result.refused.append(f"{action!r}: {e.details()}")
                log.warning("refused %r: %s", action, e.details())
                if attempt == 0:
                    attempt = 1
                    action = _safe(engine_view)
                    continue
                return None
            raise
        result.actions += 1
        result.acknowledged.append(response.number)
        return response.view
    return None
