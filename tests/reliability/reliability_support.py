"""Helpers of the reliability tests: channels that come back fast after a restart, a client
interceptor that times and keeps every acknowledged command, a watcher that resumes by number,
a proxy that loses answers, card mentions in text, the checks every finished game's record must
pass, and a long table written straight to a new database."""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from server_support import card_mentions, md

from rami.client.botkit import CHANNEL_OPTIONS
from rami.engine import POLICIES, Game, Options, Phase, get_variant
from rami.engine.cards import full_deck
from rami.engine.record import replay_record
from rami.server.entries import Act, AddBot, Join, NextDeal, Start
from rami.server.lobby import summarize
from rami.server.storage import Append, SqliteStorage
from rami.server.tablestate import TableSpec, TableState, hash_token
from rami.v1 import game_pb2, table_service_pb2, table_service_pb2_grpc

__all__ = [
    "ACT",
    "Acks",
    "LossyProxy",
    "Resuming",
    "actions_of",
    "card_mentions",
    "channel",
    "check_cards_conserved",
    "free_port",
    "percentile",
    "store_long_table",
]

ACT = "/rami.v1.TableService/Act"


def free_port() -> int:
    """A port of 127.0.0.1 free right now (for a server restarted on the same port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def channel(
    target: str,
    *,
    credentials: grpc.ChannelCredentials | None = None,
    interceptors: list[Any] | None = None,
) -> grpc.aio.Channel:
    """An aio channel that reconnects within a quarter second after a restart."""
    if credentials is not None:
        return grpc.aio.secure_channel(
            target, credentials, options=CHANNEL_OPTIONS, interceptors=interceptors
        )
    return grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS, interceptors=interceptors)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0 to 1) of ``values``, nearest rank."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


@dataclass(frozen=True)
class Ack:
    """One acknowledged command, as its client saw it."""

    table_id: str
    token: str
    number: int
    seconds: float


@dataclass
class Acks(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """Times every Act call of a channel and keeps every acknowledged one (number and token),
    whatever the code that made it (here, the bot kit)."""

    acks: list[Ack] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def intercept_unary_unary(
        self,
        continuation: Callable[[Any, Any], Awaitable[Any]],
        client_call_details: Any,
        request: Any,
    ) -> Any:
        method = client_call_details.method
        if isinstance(method, bytes):
            method = method.decode()
        if method != ACT:
            return await continuation(client_call_details, request)
        token = dict(client_call_details.metadata or ()).get("rami-token", "")
        start = time.perf_counter()
        call = await continuation(client_call_details, request)
        try:
            response = await call
        except grpc.aio.AioRpcError as e:
            self.refusals[e.code().name] += 1
            raise
        self.acks.append(
            Ack(request.table_id, token, int(response.number), time.perf_counter() - start)
        )
        self.changed.set()
        return call


@dataclass
class Resuming:
    """A spectator that watches a table to its end and, whenever its stream drops (a server
    killed, a cut), watches again after the last number it saw."""

    stub: table_service_pb2_grpc.TableServiceStub
    table_id: str
    token: str | None = None
    numbers: list[int] = field(default_factory=list)
    snapshots: int = 0
    resumes: int = 0
    final: game_pb2.View | None = None
    arrived: list[float] = field(default_factory=list)

    async def run(self) -> None:
        """Watch until the game is over."""
        after: int | None = None
        while True:
            request = table_service_pb2.WatchRequest(table_id=self.table_id, after=after)
            call = self.stub.Watch(request, metadata=md(self.token), wait_for_ready=True)
            try:
                async for msg in call:
                    if not msg.HasField("update"):
                        continue
                    u = msg.update
                    assert u.view.number == u.number
                    if u.snapshot:
                        self.snapshots += 1
                    self.numbers.append(u.number)
                    self.arrived.append(time.perf_counter())
                    after = u.number
                    if u.view.phase == game_pb2.PHASE_GAME_OVER:
                        self.final = u.view
                        return
            except grpc.aio.AioRpcError as e:
                if e.code() not in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    grpc.StatusCode.CANCELLED,
                    grpc.StatusCode.UNKNOWN,
                    grpc.StatusCode.INTERNAL,
                ):
                    raise
                self.resumes += 1
                await asyncio.sleep(0.05)
            finally:
                call.cancel()


class LossyProxy:
    """A TCP proxy in front of a server that loses answers as a network does: after
    :meth:`lose`, every byte the server sends is dropped (a call's request reaches the server,
    which applies it, but its answer never arrives), until :meth:`cut` ends every connection
    (the client sees it lost). New connections are forwarded whole again."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.losing = False
        self.cuts = 0
        self._server: asyncio.Server | None = None
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> LossyProxy:
        """Listen on a free port of 127.0.0.1."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    @property
    def target(self) -> str:
        """``host:port`` of the proxy."""
        assert self._server is not None
        return f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def lose(self) -> None:
        """Drop whatever the server sends from now on, until :meth:`cut`."""
        self.losing = True

    async def cut(self) -> None:
        """End every connection (a reset, both ways), and forward whole again."""
        self._abort()
        self.cuts += 1
        await asyncio.sleep(0)

    def _abort(self) -> None:
        for client, server in list(self._links):
            client.transport.abort()
            server.transport.abort()
        self._links.clear()
        self.losing = False

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.transport.abort()
            return
        link = (writer, up_writer)
        self._links.add(link)
        pumps = [
            asyncio.ensure_future(self._pump(reader, up_writer, lossy=False)),
            asyncio.ensure_future(self._pump(up_reader, writer, lossy=True)),
        ]
        self._tasks.update(pumps)
        try:
            # Never ends cancelled: Python 3.11's start_server logs a connection task that does.
            await asyncio.gather(*pumps, return_exceptions=True)
        finally:
            self._tasks.difference_update(pumps)
            self._links.discard(link)
            for w in link:
                w.transport.abort()

    async def _pump(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, lossy: bool
    ) -> None:
        try:
            while data := await src.read(65536):
                if lossy and self.losing:
                    continue
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            dst.transport.abort()

    async def close(self) -> None:
        """Stop listening and end every connection."""
        self._abort()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def actions_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every action of a record, in order, each with its number and seat."""
    return [a for r in record["rounds"] for a in r["actions"]]


def check_cards_conserved(record: dict[str, Any]) -> Game:
    """Replay a complete record (its deals against their seeds, every action against the rules,
    every result) and check that the last deal's cards are all still somewhere: hands, melds,
    stock and discard pile hold the whole deck, once."""
    game = replay_record(record)
    v = get_variant(record["variant"])
    held = [c for h in game.hands for c in h]
    held += [c for m in game.melds for c in m.meld.cards]
    held += list(game.stock) + list(game.discard)
    assert sorted(held) == sorted(full_deck(v.decks, v.jokers)), "cards lost or made up"
    return game


async def store_long_table(db: Path, table_id: str, updates: int, token: str | None = None) -> int:
    """Write to a new database a portuguese table of four seats with at least ``updates``
    updates, played by the engine's greedy policy; returns its number. Seats 1 to 3 are
    built-in bots; seat 0 is one too, or, with ``token``, a player holding that token, and the
    table then stops on a turn of seat 0: once loaded, it waits for that player."""
    spec = TableSpec("long", "portuguese", Options(players=4, rounds=100), client="long")
    state = TableState(table_id, spec)
    fresh = state.directory_seats()
    first = Join(0, "Ana", hash_token(token)) if token else AddBot(0, "Greedy bot 1", "greedy")
    state.apply(first)
    for seat in (1, 2, 3):
        state.apply(AddBot(seat, f"Greedy bot {seat + 1}", "greedy"))
    state.apply(Start("5e" * 32))
    rng = random.Random(1)
    for _ in range(10 * updates):  # bounded: every round ends, and the game is long enough
        game = state.game
        assert game is not None and game.phase != Phase.GAME_OVER, "the game ended too soon"
        if state.number >= updates and (
            token is None or (game.turn == 0 and game.phase == Phase.DRAW)
        ):
            break
        if game.phase == Phase.ROUND_OVER:
            state.apply(NextDeal())
            continue
        view = state.seat_view(game.turn)
        assert view is not None
        state.apply(Act(game.turn, POLICIES["greedy"](view, rng)))
    else:
        raise AssertionError("the long table did not reach its length")
    storage = await SqliteStorage.open(str(db), summarize)
    try:
        await storage.create_table(table_id, spec.to_dict(), fresh, "")
        await storage.append(
            Append(
                table_id,
                1,
                [e.to_dict() for e in state.entries],
                state.status,
                state.directory_seats(),
                state.options.to_dict(),
                state.tokens(),
            )
        )
    finally:
        await storage.close()
    return state.number
