"""The load: remote clients over real sockets, each with its own connection, in this process.

Four loads, each run for a warm-up and then a measured window, with the server process's CPU
time read at both ends of the window (``procstat``):

- :func:`echo_load`: ``concurrency`` callers of the bare unary echo, each calling in a loop.
- :func:`broadcast_load`: subscribers of the bare broadcast stream, counting what arrives.
- :func:`relay_load`: members of the bare relay taking turns, as the seats of a table do.
- :func:`rami_load`: tables of load bots. Every seat is a remote bot with its own connection
  and its own Watch stream; when its view says it is its turn it sends ``Act`` (unary) with
  the number of that view. The bots play the safe move (draw from the stock, discard the card
  drawn): what the server does per command is the same for every draw and discard, and the
  load stays cheap on the client side, which shares the machine. A finished game is replaced
  by a new table.

Latency of a Rami command: from the moment the ``Act`` call is made to the moment the last
watcher of that table has read the update the command became (every watcher's stream is read
by its own task, so a bot busy acting does not delay what it reads).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Any

import grpc

from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

from .procstat import CpuTimes, cpu_seconds
from .refs import BROADCAST_METHOD, ECHO_METHOD, RELAY_METHOD, relay_message

__all__ = ["LoadResult", "broadcast_load", "echo_load", "rami_load", "relay_load"]

#: One TCP connection per client: without this, channels to one target share a connection.
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]
_PLAYING = (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
#: The load bots' games: draws and discards alone never go out, so every round ends when the
#: stock runs out; no rebuild and three rounds keep a game (and its views, which carry every
#: finished round) the size of a real tallage game (2-3 rounds of some 100 turns).
GAME_OPTIONS = {"stock_rebuilds": 0, "round_cap": 3}


def _channel(target: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)


def _client_cpu() -> float:
    t = os.times()
    return t.user + t.system


@dataclass
class LoadResult:
    """What one load did in its measured window."""

    seconds: float = 0.0
    #: Completed calls (echo) or accepted commands (Rami) started in the window.
    calls: int = 0
    #: Messages read by the subscribers / watchers in the window.
    delivered: int = 0
    #: Call latencies (echo: call to response; Rami: call to the last watcher), in ms.
    latencies_ms: list[float] = field(default_factory=list)
    server_cpu: CpuTimes = field(default_factory=lambda: CpuTimes(0.0, 0.0))
    client_cpu: float = 0.0
    errors: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.seconds if self.seconds else 0.0

    @property
    def delivered_per_s(self) -> float:
        return self.delivered / self.seconds if self.seconds else 0.0


@dataclass
class _Window:
    """The measured window: figures count only between ``start`` and ``end``."""

    start: float = float("inf")
    end: float = float("inf")

    def holds(self, t: float) -> bool:
        return self.start <= t < self.end


async def _measure(
    pid: int,
    window: _Window,
    warmup: float,
    seconds: float,
    result: LoadResult,
    tasks: list[asyncio.Task[Any]],
) -> None:
    """Warm up, open the window, measure, close it; then stop every task of the load."""
    try:
        await _sleep_or_fail(warmup, tasks)
        cpu0, client0 = cpu_seconds(pid), _client_cpu()
        window.start = time.perf_counter()
        await _sleep_or_fail(seconds, tasks)
        window.end = time.perf_counter()
        result.server_cpu = cpu_seconds(pid) - cpu0
        result.client_cpu = _client_cpu() - client0
        result.seconds = window.end - window.start
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _sleep_or_fail(seconds: float, tasks: list[asyncio.Task[Any]]) -> None:
    """Sleep, but raise at once if a task of the load failed (a load that broke measures
    nothing)."""
    done, _ = await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_EXCEPTION)
    for t in done:
        if not t.cancelled() and t.exception() is not None:
            raise t.exception()  # type: ignore[misc]


# -- the echo ---------------------------------------------------------------------------------


async def echo_load(
    target: str, pid: int, *, concurrency: int, warmup: float, seconds: float, payload: bytes
) -> LoadResult:
    """``concurrency`` callers, each on its own connection, echoing ``payload`` in a loop."""
    result, window = LoadResult(), _Window()
    channels = [_channel(target) for _ in range(concurrency)]

    async def caller(ch: grpc.aio.Channel) -> None:
        call = ch.unary_unary(ECHO_METHOD)
        while True:
            t0 = time.perf_counter()
            await call(payload, timeout=30)
            t1 = time.perf_counter()
            if window.holds(t0):
                result.calls += 1
                result.latencies_ms.append((t1 - t0) * 1e3)

    try:
        await asyncio.gather(*(ch.channel_ready() for ch in channels))
        tasks = [asyncio.create_task(caller(ch)) for ch in channels]
        await _measure(pid, window, warmup, seconds, result, tasks)
    finally:
        await asyncio.gather(*(ch.close() for ch in channels))
    return result


# -- the broadcast ----------------------------------------------------------------------------


async def broadcast_load(
    target: str, pid: int, *, groups: int, per_group: int, warmup: float, seconds: float
) -> LoadResult:
    """``groups`` × ``per_group`` subscribers, each on its own connection, reading messages."""
    result, window = LoadResult(), _Window()
    channels = [_channel(target) for _ in range(groups * per_group)]

    async def subscriber(ch: grpc.aio.Channel, group: int) -> None:
        stream = ch.unary_stream(BROADCAST_METHOD)(str(group).encode())
        async for _ in stream:
            if window.holds(time.perf_counter()):
                result.delivered += 1

    try:
        await asyncio.gather(*(ch.channel_ready() for ch in channels))
        tasks = [
            asyncio.create_task(subscriber(ch, i // per_group)) for i, ch in enumerate(channels)
        ]
        await _measure(pid, window, warmup, seconds, result, tasks)
    finally:
        await asyncio.gather(*(ch.close() for ch in channels))
    return result


async def relay_load(
    target: str,
    pid: int,
    *,
    groups: int,
    per_group: int,
    size: int,
    warmup: float,
    seconds: float,
) -> LoadResult:
    """``groups`` × ``per_group`` members of the bare relay, each on its own connection: a
    member reads every message of its group and, when the step says it is its turn, sends the
    next (``calls``: messages sent; ``delivered``: messages read)."""
    result, window = LoadResult(), _Window()
    channels = [_channel(target) for _ in range(groups * per_group)]

    async def member(ch: grpc.aio.Channel, group: int, index: int) -> None:
        out: asyncio.Queue[bytes] = asyncio.Queue()
        out.put_nowait(str(group).encode())

        async def requests() -> Any:
            while True:
                yield await out.get()

        stream = ch.stream_stream(RELAY_METHOD)(requests())
        try:
            async for message in stream:
                now = time.perf_counter()
                if window.holds(now):
                    result.delivered += 1
                step = int.from_bytes(message[:8], "big") + 1
                if step % per_group == index:
                    if window.holds(now):
                        result.calls += 1
                    out.put_nowait(relay_message(step, size))
        finally:
            stream.cancel()

    try:
        await asyncio.gather(*(ch.channel_ready() for ch in channels))
        tasks = [
            asyncio.create_task(member(ch, i // per_group, i % per_group))
            for i, ch in enumerate(channels)
        ]
        await _measure(pid, window, warmup, seconds, result, tasks)
    finally:
        await asyncio.gather(*(ch.close() for ch in channels))
    return result


# -- Rami -------------------------------------------------------------------------------------


@dataclass
class _RamiStats:
    window: _Window
    seats: int
    result: LoadResult
    #: (table, number) -> the moment its Act call was made (calls made in the window).
    called: dict[tuple[str, int], float] = field(default_factory=dict)
    #: (table, number) -> [watchers that read it, the latest moment one did].
    read: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    games: int = 0
    sizes: list[int] = field(default_factory=list)

    def on_read(self, table_id: str, number: int, now: float, size: int) -> None:
        if self.window.holds(now):
            self.result.delivered += 1
            if len(self.sizes) < 5000:
                self.sizes.append(size)
        r = self.read.get((table_id, number))
        if r is None:
            self.read[(table_id, number)] = [1, now]
        else:
            r[0] += 1
            r[1] = now

    def latencies(self) -> list[float]:
        out = []
        for key, t0 in self.called.items():
            r = self.read.get(key)
            if r is not None and r[0] >= self.seats:
                out.append((r[1] - t0) * 1e3)
        return out


class _Bot:
    """One remote seat: its own connection, a Watch stream, Act calls."""

    def __init__(self, channel: grpc.aio.Channel, stats: _RamiStats) -> None:
        self.table = table_service_pb2_grpc.TableServiceStub(channel)
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        self.stats = stats
        self.acts: set[asyncio.Task[None]] = set()

    async def join(self, table_id: str) -> None:
        joined = await self.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name="load"), timeout=30
        )
        self.table_id = table_id
        self.metadata = (("rami-token", joined.token),)
        self.decided = -1

    async def play(self) -> None:
        """Read the stream until the game is over; act on every view that is this seat's turn."""
        stats, table_id = self.stats, self.table_id
        stream = self.table.Watch(
            table_service_pb2.WatchRequest(table_id=table_id), metadata=self.metadata
        )
        try:
            async for msg in stream:
                if not msg.HasField("update"):
                    continue
                update = msg.update
                view = update.view
                if not update.snapshot:
                    stats.on_read(table_id, update.number, time.perf_counter(), msg.ByteSize())
                if view.phase == game_pb2.PHASE_GAME_OVER:
                    return
                if view.turn == view.seat and view.phase in _PLAYING and view.number > self.decided:
                    self.decided = view.number
                    task = asyncio.create_task(self.act(view))
                    self.acts.add(task)
                    task.add_done_callback(self.acts.discard)
        finally:
            stream.cancel()

    async def act(self, view: game_pb2.View) -> None:
        request = table_service_pb2.ActRequest(table_id=self.table_id, number=view.number)
        if view.phase == game_pb2.PHASE_DRAW:
            request.draw.source = game_pb2.DRAW_SOURCE_STOCK
        else:
            request.discard.card = view.drawn or view.hand[-1]
        t0 = time.perf_counter()
        try:
            response = await self.table.Act(request, metadata=self.metadata, timeout=30)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:  # the bench ends calls in flight
                self.stats.result.errors += 1
            return
        if self.stats.window.holds(t0):
            self.stats.result.calls += 1
            self.stats.called[(self.table_id, response.number)] = t0


class _StreamBot(_Bot):
    """A remote seat on the Play stream: commands in, updates and acknowledgements out, on one
    stream (the acknowledgement is the update the command became, marked ``accepted``)."""

    async def play(self) -> None:
        stats, table_id = self.stats, self.table_id
        out: asyncio.Queue[table_service_pb2.PlayRequest] = asyncio.Queue()
        out.put_nowait(
            table_service_pb2.PlayRequest(open=table_service_pb2.WatchRequest(table_id=table_id))
        )
        sent: dict[int, float] = {}

        async def requests() -> Any:
            while True:
                yield await out.get()

        stream = self.table.Play(requests(), metadata=self.metadata)
        try:
            async for msg in stream:
                if msg.HasField("refused"):
                    stats.result.errors += 1
                    continue
                if not msg.HasField("update"):
                    continue
                update = msg.update
                view = update.view
                now = time.perf_counter()
                if not update.snapshot:
                    stats.on_read(table_id, update.number, now, msg.ByteSize())
                if msg.HasField("accepted"):
                    t0 = sent.pop(msg.accepted)
                    if stats.window.holds(t0):
                        stats.result.calls += 1
                        stats.called[(table_id, update.number)] = t0
                if view.phase == game_pb2.PHASE_GAME_OVER:
                    return
                if view.turn == view.seat and view.phase in _PLAYING and view.number > self.decided:
                    self.decided = view.number
                    request = table_service_pb2.PlayRequest(command_id=view.number)
                    request.act.number = view.number
                    if view.phase == game_pb2.PHASE_DRAW:
                        request.act.draw.source = game_pb2.DRAW_SOURCE_STOCK
                    else:
                        request.act.discard.card = view.drawn or view.hand[-1]
                    sent[view.number] = time.perf_counter()
                    out.put_nowait(request)
        finally:
            stream.cancel()


async def rami_load(
    target: str,
    pid: int,
    *,
    tables: int,
    seats: int,
    warmup: float,
    seconds: float,
    connections: int | None = None,
    stream: bool = False,
    variant: int = game_pb2.VARIANT_TALLAGE,
) -> LoadResult:
    """``tables`` tables of ``seats`` remote bots playing flat out, each bot on a connection of
    its own (or the bots spread over ``connections`` connections); with ``stream``, the bots
    play on the Play stream instead of Watch and unary Act."""
    result, window = LoadResult(), _Window()
    stats = _RamiStats(window, seats, result)
    setup = _channel(target)
    lobby = lobby_service_pb2_grpc.LobbyServiceStub(setup)
    pool = [_channel(target) for _ in range(connections or tables * seats)]
    channels = [pool[i % len(pool)] for i in range(tables * seats)]
    bot_class = _StreamBot if stream else _Bot

    async def table_group(bots: list[_Bot]) -> None:
        while True:
            created = await lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    variant=variant, options=game_pb2.Options(players=seats, **GAME_OPTIONS)
                ),
                timeout=30,
            )
            plays: list[asyncio.Task[None]] = []
            try:
                for bot in bots:  # the table starts when the last seat is taken
                    await bot.join(created.table.table_id)
                plays = [asyncio.create_task(bot.play()) for bot in bots]
                await asyncio.gather(*plays)
                stats.games += 1
            except grpc.aio.AioRpcError as e:
                # Counted and shown with the figures; the group goes on at a new table.
                result.errors += 1
                result.extra.setdefault("first_error", f"{e.code().name}: {e.details()}")
            finally:
                for t in plays:
                    t.cancel()

    try:
        await asyncio.gather(setup.channel_ready(), *(ch.channel_ready() for ch in pool))
        groups = [
            [bot_class(ch, stats) for ch in channels[i * seats : (i + 1) * seats]]
            for i in range(tables)
        ]
        tasks = [asyncio.create_task(table_group(g)) for g in groups]
        await _measure(pid, window, warmup, seconds, result, tasks)
        for g in groups:
            for bot in g:
                for t in list(bot.acts):
                    t.cancel()
    finally:
        await asyncio.gather(setup.close(), *(ch.close() for ch in pool))
    result.latencies_ms = stats.latencies()
    result.extra["games_finished"] = stats.games
    if stats.sizes:
        result.extra["mean_update_bytes"] = round(sum(stats.sizes) / len(stats.sizes))
    return result
