"""The server's figures, each against the bare grpc.aio reference on the same machine, same run.

Every server (Rami or reference) is a child process on 127.0.0.1 with its own fresh database;
the loads run in this process (``load``). CPU time and memory are the server process's own
(``procstat``).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import grpc

from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

from .load import (
    CHANNEL_OPTIONS,
    LoadResult,
    broadcast_load,
    echo_load,
    rami_load,
    relay_load,
)
from .procs import child
from .procstat import rss_bytes
from .refs import HOLD_METHOD

__all__ = ["bench_commands", "bench_delivery", "bench_memory", "bench_scaling", "percentile"]

T = TypeVar("T")

#: An ActRequest of a discard is about this size; the echo sends as much.
ECHO_PAYLOAD = b"x" * 24


_LOOP: asyncio.AbstractEventLoop | None = None


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a load on the bench's one event loop. (gRPC's poller stays bound to the loop it
    first served: a loop per load, closed after it, gets callbacks from the poller later.)"""
    global _LOOP
    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()
    return _LOOP.run_until_complete(coro)


def percentile(values: list[float], p: float) -> float:
    """The ``p`` quantile (0..1) of ``values``, nearest rank."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def _figures(r: LoadResult) -> dict[str, Any]:
    """The figures of one load, rounded for the record."""
    per = r.calls or r.delivered
    return {
        "seconds": round(r.seconds, 2),
        "calls": r.calls,
        "calls_per_s": round(r.calls_per_s, 1),
        "delivered": r.delivered,
        "delivered_per_s": round(r.delivered_per_s, 1),
        "server_cpu_s": round(r.server_cpu.total, 3),
        "server_cpu_user_s": round(r.server_cpu.user, 3),
        "server_cpu_per_call_us": round(1e6 * r.server_cpu.total / r.calls, 1) if r.calls else None,
        "server_cpu_per_delivery_us": (
            round(1e6 * r.server_cpu.total / r.delivered, 1) if r.delivered else None
        ),
        "server_cores_busy": round(r.server_cpu.total / r.seconds, 2) if r.seconds else None,
        "client_cpu_s": round(r.client_cpu, 3),
        "latency_ms": {
            "p50": round(percentile(r.latencies_ms, 0.5), 3),
            "p99": round(percentile(r.latencies_ms, 0.99), 3),
            "mean": round(statistics.fmean(r.latencies_ms), 3) if r.latencies_ms else None,
            "samples": len(r.latencies_ms),
        },
        "errors": r.errors,
        "per_unit": per,
        **r.extra,
    }


def _db(tmp: str, name: str) -> str:
    return str(Path(tmp) / f"{name}.db")


def run_echo(concurrency: int, warmup: float, seconds: float) -> dict[str, Any]:
    """The bare unary echo: ``concurrency`` callers on their own connections."""
    with child("bench.refs", "echo") as c:
        r = _run(
            echo_load(
                c.target,
                c.pid,
                concurrency=concurrency,
                warmup=warmup,
                seconds=seconds,
                payload=ECHO_PAYLOAD,
            )
        )
    return _figures(r)


def run_rami(
    tables: int,
    seats: int,
    warmup: float,
    seconds: float,
    *,
    connections: int | None = None,
    stream: bool = False,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Rami tables of remote load bots, on a fresh server and database."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        child("bench.rami_server", "--db", _db(tmp, "load"), env=env) as c,
    ):
        r = _run(
            rami_load(
                c.target,
                c.pid,
                tables=tables,
                seats=seats,
                warmup=warmup,
                seconds=seconds,
                connections=connections,
                stream=stream,
            )
        )
        out = _figures(r)
        out["server_rss_mb"] = round(rss_bytes(c.pid) / 2**20, 1)
    out.update(tables=tables, seats=seats, connections=connections or tables * seats)
    return out


def bench_commands(
    *,
    concurrency: int,
    tables: int,
    seats: int,
    warmup: float,
    seconds: float,
    stream: bool = True,
) -> dict[str, Any]:
    """(1) and (3): commands through the whole server against the bare unary echo."""
    out = {
        "echo": run_echo(concurrency, warmup, seconds),
        "rami_unary": run_rami(tables, seats, warmup, seconds),
    }
    if stream:
        out["rami_stream"] = run_rami(tables, seats, warmup, seconds, stream=True)
    return out


def _reference(
    kind: str, args: list[str], load: Callable[[str, int], Coroutine[Any, Any, LoadResult]]
) -> dict[str, Any]:
    """A bare reference server (``bench.refs KIND ARGS``) under ``load(target, pid)``."""
    with child("bench.refs", kind, *args) as c:
        r = _run(load(c.target, c.pid))
    return _figures(r)


def run_broadcast(
    groups: int, per_group: int, size: int, warmup: float, seconds: float
) -> dict[str, Any]:
    """The bare server-stream broadcast to ``groups`` × ``per_group`` subscribers."""
    out = _reference(
        "broadcast",
        ["--size", str(size), "--groups", str(groups), "--per-group", str(per_group)],
        lambda target, pid: broadcast_load(
            target, pid, groups=groups, per_group=per_group, warmup=warmup, seconds=seconds
        ),
    )
    out["message_bytes"] = size
    return out


def run_relay(
    groups: int, per_group: int, size: int, warmup: float, seconds: float
) -> dict[str, Any]:
    """The bare relay: ``groups`` × ``per_group`` members taking turns."""
    out = _reference(
        "relay",
        ["--size", str(size), "--per-group", str(per_group)],
        lambda target, pid: relay_load(
            target,
            pid,
            groups=groups,
            per_group=per_group,
            size=size,
            warmup=warmup,
            seconds=seconds,
        ),
    )
    out["message_bytes"] = size
    return out


def bench_delivery(
    *, tables: int, seats: int, warmup: float, seconds: float, stream: bool = True
) -> dict[str, Any]:
    """(2): updates delivered to the ``tables`` × ``seats`` watchers of tables whose seats are
    remote bots playing flat out (each bot watches its own seat), against the bare broadcast
    of messages of the same mean size to as many subscribers, and against the bare relay of
    such messages in as many groups (the shape of the Play stream without the game)."""
    out: dict[str, Any] = {"rami_unary": run_rami(tables, seats, warmup, seconds)}
    if stream:
        out["rami_stream"] = run_rami(tables, seats, warmup, seconds, stream=True)
    sizes = [out[k].get("mean_update_bytes") for k in ("rami_unary", "rami_stream") if k in out]
    size = round(sum(x for x in sizes if x) / max(1, len([x for x in sizes if x]))) or 200
    out["broadcast"] = run_broadcast(tables, seats, size, warmup, seconds)
    out["relay"] = run_relay(tables, seats, size, warmup, seconds)
    return out


def bench_scaling(
    table_counts: list[int],
    *,
    seats: int,
    connections: int,
    warmup: float,
    seconds: float,
    stream: bool = True,
) -> list[dict[str, Any]]:
    """The command figures at 1, 10, 100, 1,000 tables (at most ``connections`` connections,
    the seats spread over them)."""
    rows = []
    for tables in table_counts:
        conns = min(connections, tables * seats)
        row = {
            "tables": tables,
            "unary": run_rami(tables, seats, warmup, seconds, connections=conns),
        }
        if stream:
            row["stream"] = run_rami(tables, seats, warmup, seconds, connections=conns, stream=True)
        rows.append(row)
    return rows


# -- memory -----------------------------------------------------------------------------------


async def _idle_tables(target: str, count: int, seats: int) -> list[tuple[str, str]]:
    """``count`` tables whose ``seats`` players have joined (so each game has started), then
    nobody acts or watches; returns (table id, seat 0's token) of each."""
    async with grpc.aio.insecure_channel(target) as ch:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)

        async def one() -> tuple[str, str]:
            created = await lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    variant=game_pb2.VARIANT_TALLAGE, options=game_pb2.Options(players=seats)
                ),
                timeout=30,
            )
            tid = created.table.table_id
            tokens = []
            for _ in range(seats):
                joined = await lobby.JoinTable(
                    lobby_service_pb2.JoinTableRequest(table_id=tid, name="idle"), timeout=30
                )
                tokens.append(joined.token)
            return tid, tokens[0]

        out: list[tuple[str, str]] = []
        for start in range(0, count, 50):
            out.extend(await asyncio.gather(*(one() for _ in range(min(50, count - start)))))
        return out


async def _open_watchers(target: str, seats: list[tuple[str, str]]) -> Any:
    """One seat watcher per (table, token), each on its own connection, open once its
    snapshot has arrived; returns how to close them."""
    channels = [grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS) for _ in seats]
    ready = asyncio.Semaphore(0)

    async def watch(ch: grpc.aio.Channel, table_id: str, token: str) -> None:
        stub = table_service_pb2_grpc.TableServiceStub(ch)
        stream = stub.Watch(
            table_service_pb2.WatchRequest(table_id=table_id), metadata=(("rami-token", token),)
        )
        first = True
        async for _ in stream:
            if first:
                ready.release()
                first = False

    pairs = zip(channels, seats, strict=True)
    tasks = [asyncio.create_task(watch(ch, t, k)) for ch, (t, k) in pairs]
    for _ in seats:
        await asyncio.wait_for(ready.acquire(), 60)

    async def close() -> None:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(ch.close() for ch in channels))

    return close


async def _held_streams(target: str, count: int) -> Any:
    """``count`` streams of the bare ``hold`` server, each on its own connection, open once
    their first message has arrived; returns how to close them."""
    channels = [grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS) for _ in range(count)]
    ready = asyncio.Semaphore(0)

    async def hold(ch: grpc.aio.Channel) -> None:
        async for _ in ch.unary_stream(HOLD_METHOD)(b"x" * 200):
            ready.release()

    tasks = [asyncio.create_task(hold(ch)) for ch in channels]
    for _ in range(count):
        await asyncio.wait_for(ready.acquire(), 60)

    async def close() -> None:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(ch.close() for ch in channels))

    return close


def bare_stream_memory(streams: int) -> dict[str, Any]:
    """The reference of (6b): the RSS a bare grpc.aio server gains per open server stream,
    each on its own connection, the stream idle after its first message."""

    async def run(target: str, pid: int) -> dict[str, Any]:
        await asyncio.sleep(0.5)
        empty = rss_bytes(pid)
        close = await _held_streams(target, streams)
        await asyncio.sleep(0.5)
        held = rss_bytes(pid)
        await close()
        return {"streams": streams, "per_stream_kb": round((held - empty) / streams / 1024, 1)}

    with child("bench.refs", "hold") as c:
        return _run(run(c.target, c.pid))


def bench_memory(*, tables: int, seats: int, watchers: int) -> dict[str, Any]:
    """(6): the server's RSS empty, with ``tables`` idle tables, and per connected watcher;
    and, for reference, what a bare grpc.aio server spends per open stream."""

    async def run(target: str, pid: int) -> dict[str, Any]:
        await asyncio.sleep(0.5)
        empty = rss_bytes(pid)
        made = await _idle_tables(target, tables, seats)
        await asyncio.sleep(0.5)
        with_tables = rss_bytes(pid)
        close = await _open_watchers(target, made[:watchers])
        await asyncio.sleep(0.5)
        with_watchers = rss_bytes(pid)
        await close()
        return {
            "empty_mb": round(empty / 2**20, 1),
            "tables": tables,
            "seats": seats,
            "with_tables_mb": round(with_tables / 2**20, 1),
            "per_table_kb": round((with_tables - empty) / tables / 1024, 1),
            "watchers": watchers,
            "with_watchers_mb": round(with_watchers / 2**20, 1),
            "per_watcher_kb": round((with_watchers - with_tables) / watchers / 1024, 1),
        }

    with (
        tempfile.TemporaryDirectory() as tmp,
        child("bench.rami_server", "--db", _db(tmp, "memory")) as c,
    ):
        started = time.perf_counter()
        out = _run(run(c.target, c.pid))
        out["seconds"] = round(time.perf_counter() - started, 1)
    out["bare_stream"] = bare_stream_memory(watchers)
    return out
