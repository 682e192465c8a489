"""Resuming from far back on a long table, against a calm table, on one real ``rami-server``.

A table of four built-in greedy bots is written straight to a new database with ``--updates``
updates (3,000 by default; its bots go on playing, at the server's pace, once it is restored).
On the same server, a calm table of two remote seats plays one command every 50 ms, and a
probe calls the lobby (``GetTable``) every 50 ms. First a quiet phase, then a phase in which
``--replayers`` tokenless clients (in a process of their own) loop ``Watch(after=0)`` on the
long table, each reading the whole replay before it watches again; a refusal makes it wait
0.1 s and watch again (as docs/bots.md tells clients).

Reported, for each phase: the calm table's ``Act`` latency and the probe's, at p50, p99 and
the most; the replays read to their end and the refusals, by reason; the server's CPU time.

    .venv/bin/python tests/load/run_replay.py
    .venv/bin/python tests/load/run_replay.py --server /other/checkout/.venv/bin/rami-server
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))

import grpc
import server_support
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from reliability_support import store_long_table

from rami.client.convert import action_to_request, view_from_proto
from rami.engine import POLICIES
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

WATCH = "/rami.v1.TableService/Watch"
PLAYING = (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
LONG_ID = "longtablereplay0"
#: The calm table's pace: a command every this many seconds, and the probe's.
PACE = 0.05


def reason_of(e: grpc.aio.AioRpcError) -> str:
    """``CODE/REASON`` of a refusal."""
    status = rpc_status.from_call(e)  # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return f"{e.code().name}/{info.reason}"
    return e.code().name


async def replayer(target: str, count: int, until: float, out: dict[str, Any]) -> None:
    """Watch(after=0) again and again until ``until``: each replay read to its ``count``-th
    message (raw bytes: the client's own parsing is left out)."""
    async with grpc.aio.insecure_channel(target) as channel:
        watch = channel.unary_stream(
            WATCH,
            request_serializer=table_service_pb2.WatchRequest.SerializeToString,
            response_deserializer=lambda b: b,
        )
        request = table_service_pb2.WatchRequest(table_id=LONG_ID, after=0)
        while time.perf_counter() < until:
            call = watch(request, timeout=max(1.0, until - time.perf_counter() + 30))
            got = 0
            try:
                async for _ in call:
                    got += 1
                    if got >= count:
                        out["replays"] += 1
                        break
            except grpc.aio.AioRpcError as e:
                out["refused"][reason_of(e)] += 1
                await asyncio.sleep(0.1)
            finally:
                call.cancel()


def replayers_process(target: str, clients: int, count: int, seconds: float, out: Any) -> None:
    async def main() -> dict[str, Any]:
        figures: dict[str, Any] = {"replays": 0, "refused": Counter()}
        until = time.perf_counter() + seconds
        await asyncio.gather(*(replayer(target, count, until, figures) for _ in range(clients)))
        return figures

    try:
        out.put(asyncio.run(main()))
    except BaseException as e:  # reported, never lost
        out.put({"error": f"{type(e).__name__}: {e}"})


class Calm:
    """A two-seat table played by the script, one command every ``PACE`` seconds, and a
    probe of the lobby every ``PACE`` seconds; each call timed."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        self.table = table_service_pb2_grpc.TableServiceStub(channel)
        self.act_ms: list[float] = []
        self.probe_ms: list[float] = []
        self.errors: list[str] = []
        self.table_id = ""
        self.tokens: list[str] = []
        self.views: dict[int, game_pb2.View] = {}
        self.changed = asyncio.Event()

    async def setup(self) -> None:
        created = await self.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="calm",
                variant=game_pb2.VARIANT_PORTUGUESE,
                options=game_pb2.Options(players=2, rounds=100),
            ),
            timeout=30,
        )
        self.table_id = created.table.table_id
        for seat in range(2):
            joined = await self.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(
                    table_id=self.table_id, name=f"Calm {seat}", seat=seat
                ),
                timeout=30,
            )
            self.tokens.append(joined.token)

    async def watch(self, seat: int) -> None:
        request = table_service_pb2.WatchRequest(table_id=self.table_id)
        metadata = (("rami-token", self.tokens[seat]),)
        async for msg in self.table.Watch(request, metadata=metadata):
            if msg.HasField("update"):
                self.views[seat] = msg.update.view
                self.changed.set()

    async def play(self, until: float) -> None:
        rng = random.Random(2)
        decided = -1
        while time.perf_counter() < until:
            seat_view = next(
                (
                    v
                    for v in self.views.values()
                    if v.phase in PLAYING and v.turn == v.seat and v.number > decided
                ),
                None,
            )
            if seat_view is None:
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), 1.0)
                continue
            decided = seat_view.number
            action = POLICIES["greedy"](view_from_proto(seat_view), rng)
            request = action_to_request(self.table_id, seat_view.number, action)
            metadata = (("rami-token", self.tokens[seat_view.seat]),)
            start = time.perf_counter()
            try:
                response = await self.table.Act(request, metadata=metadata, timeout=30)
            except grpc.aio.AioRpcError as e:
                self.errors.append(reason_of(e))
            else:
                self.act_ms.append((time.perf_counter() - start) * 1e3)
                self.views[seat_view.seat] = response.view
            await asyncio.sleep(PACE)

    async def probe(self, until: float) -> None:
        request = lobby_service_pb2.GetTableRequest(table_id=self.table_id)
        while time.perf_counter() < until:
            start = time.perf_counter()
            await self.lobby.GetTable(request, timeout=30)
            self.probe_ms.append((time.perf_counter() - start) * 1e3)
            await asyncio.sleep(PACE)


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(calm: Calm, cpu: float, seconds: float) -> dict[str, Any]:
    act, probe = calm.act_ms, calm.probe_ms
    return {
        "acts": len(act),
        "act_ms_p50": round(pct(act, 0.5), 1),
        "act_ms_p99": round(pct(act, 0.99), 1),
        "act_ms_max": round(max(act, default=0.0), 1),
        "probe_ms_p50": round(pct(probe, 0.5), 1),
        "probe_ms_p99": round(pct(probe, 0.99), 1),
        "probe_ms_max": round(max(probe, default=0.0), 1),
        "act_errors": dict(Counter(calm.errors)),
        "server_cpu_share": round(cpu / seconds, 2),
    }


async def phase(
    calm: Calm, pid: int, seconds: float, during: Any = None
) -> tuple[dict[str, Any], Any]:
    calm.act_ms, calm.probe_ms, calm.errors = [], [], []
    cpu = cpu_seconds(pid)
    until = time.perf_counter() + seconds
    await asyncio.gather(calm.play(until), calm.probe(until))
    result = await during if during is not None else None
    return summary(calm, cpu_seconds(pid) - cpu, seconds), result


async def measure(target: str, pid: int, a: argparse.Namespace, count: int) -> dict[str, Any]:
    async with grpc.aio.insecure_channel(target) as channel:
        calm = Calm(channel)
        await calm.setup()
        watchers = [asyncio.ensure_future(calm.watch(s)) for s in range(2)]
        try:
            await asyncio.sleep(1.0)  # both snapshots in, the game begun
            quiet, _ = await phase(calm, pid, a.seconds)
            ctx = multiprocessing.get_context("spawn")
            out = ctx.Queue()
            proc = ctx.Process(
                target=replayers_process, args=(target, a.replayers, count, a.seconds, out)
            )
            proc.start()
            loop = asyncio.get_running_loop()
            got = loop.run_in_executor(None, out.get, True, a.seconds + 120)
            busy, replays = await phase(calm, pid, a.seconds, got)
            proc.join(30)
        finally:
            for w in watchers:
                w.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)
    return {"quiet": quiet, "replaying": busy, "replayers": replays}


def run(a: argparse.Namespace) -> dict[str, Any]:
    if a.server:
        server_support.SERVER = Path(a.server)
    with tempfile.TemporaryDirectory(prefix="watch-replay-") as tmp:
        folder = Path(tmp)
        count = asyncio.run(store_long_table(folder / "replay.db", LONG_ID, a.updates))
        with server_support.rami_server(folder / "replay.db", folder / "server.log") as (
            proc,
            target,
        ):
            figures = asyncio.run(measure(target, proc.pid, a, count))
        figures["server_log_errors"] = (folder / "server.log").read_text().count(" ERROR ")
    figures["long_table_updates"] = count
    figures["server"] = str(server_support.SERVER)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=3000, help="updates of the long table")
    parser.add_argument("--replayers", type=int, default=3, help="clients looping the replay")
    parser.add_argument("--seconds", type=float, default=15.0, help="each phase's length")
    parser.add_argument("--server", help="the rami-server to run (default: this venv's)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    a = parser.parse_args()
    figures = run(a)
    print(json.dumps(figures, indent=1))
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
