"""``make load``: many whole games of remote bots on one real ``rami-server`` process.

By default 200 tables of 4 seats, every seat a remote bot with its own Watch stream, sending
``Act`` (unary) with the number of the view it decided on (the engine's greedy policy) whenever
its view says it is its turn; short games (one portuguese round, or moroccan games capped at
one round), every game played to its end. The bots run in ``--clients`` processes of grpc.aio
clients, the server in its own process, all on 127.0.0.1.

Reported: commands per second (accepted ``Act`` calls over the time from the first to the
last), command latency (``Act`` call to its answer) at p50 and p99, command-to-every-watcher
latency (``Act`` call to the moment the last of the table's four watchers read the update it
became) at p50 and p99, errors (every refused or failed call, every game not over: must be
zero), and the server's resident memory (now and at its peak).

    .venv/bin/python tests/load/run_load.py --tables 200 --clients 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import grpc
from server_support import rami_server

from rami.client.convert import action_to_request, view_from_proto
from rami.engine import POLICIES
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

GAMES = [
    ("portuguese", game_pb2.VARIANT_PORTUGUESE, {"rounds": 1}),
    ("tallage", game_pb2.VARIANT_TALLAGE, {"round_cap": 1}),
    ("simple", game_pb2.VARIANT_SIMPLE, {"round_cap": 1}),
]
PLAYING = (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
#: Tables that share one client connection.
PER_CHANNEL = 10


@dataclass
class Figures:
    """What one client process measured."""

    commands: int = 0
    act_ms: list[float] = field(default_factory=list)
    fanout_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    games_over: int = 0
    first: float = float("inf")
    last: float = 0.0


class Seat:
    """One remote bot: a Watch stream read by its own task, and the commands of its turns."""

    def __init__(self, game: Game, seat: int, token: str) -> None:
        self.game = game
        self.seat = seat
        self.metadata = (("rami-token", token),)
        self.view: game_pb2.View | None = None
        self.changed = asyncio.Event()
        self.ready = asyncio.Event()
        self.closed = False
        self.rng = random.Random(f"{game.table_id}:{seat}")

    async def watch(self) -> None:
        stub = self.game.stub
        request = table_service_pb2.WatchRequest(table_id=self.game.table_id)
        try:
            async for msg in stub.Watch(request, metadata=self.metadata):
                if not msg.HasField("update"):
                    continue
                now = time.perf_counter()
                u = msg.update
                self.game.arrived(u.number, now)
                self.view = u.view
                self.ready.set()
                self.changed.set()
                if u.view.phase == game_pb2.PHASE_GAME_OVER:
                    return
        finally:
            self.closed = True
            self.changed.set()

    async def act(self) -> None:
        decided = -1
        while True:
            await self.changed.wait()
            self.changed.clear()
            view = self.view
            if self.closed or view is None or view.phase == game_pb2.PHASE_GAME_OVER:
                return
            while view.phase in PLAYING and view.turn == self.seat and view.number > decided:
                decided = view.number
                action = POLICIES["greedy"](view_from_proto(view), self.rng)
                request = action_to_request(self.game.table_id, view.number, action)
                start = time.perf_counter()
                try:
                    response = await self.game.stub.Act(request, metadata=self.metadata, timeout=30)
                except grpc.aio.AioRpcError as e:
                    self.game.figures.errors.append(f"Act {e.code().name}: {e.details()}")
                    break
                end = time.perf_counter()
                self.game.acted(response.number, start, end)
                view = response.view


class Game:
    """One table's four bots, and the moments its updates reached each of them."""

    def __init__(self, stub: Any, table_id: str, figures: Figures) -> None:
        self.stub = stub
        self.table_id = table_id
        self.figures = figures
        self.sent: dict[int, float] = {}
        self.reads: dict[int, list[float]] = {}

    def acted(self, number: int, start: float, end: float) -> None:
        f = self.figures
        f.commands += 1
        f.act_ms.append((end - start) * 1e3)
        f.first = min(f.first, start)
        f.last = max(f.last, end)
        self.sent[number] = start
        self._fanout(number)

    def arrived(self, number: int, now: float) -> None:
        self.reads.setdefault(number, []).append(now)
        self._fanout(number)

    def _fanout(self, number: int) -> None:
        reads = self.reads.get(number, [])
        if number in self.sent and len(reads) == 4:
            self.figures.fanout_ms.append((max(reads) - self.sent.pop(number)) * 1e3)
            del self.reads[number]


async def client(
    target: str, tables: list[tuple[str, list[str]]], ready: Any, go: Any
) -> dict[str, Any]:
    figures = Figures()
    channels = [
        grpc.aio.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
        for _ in range(0, len(tables), PER_CHANNEL)
    ]
    games: list[tuple[Game, list[Seat]]] = []
    for i, (table_id, tokens) in enumerate(tables):
        stub = table_service_pb2_grpc.TableServiceStub(channels[i // PER_CHANNEL])
        game = Game(stub, table_id, figures)
        games.append((game, [Seat(game, s, t) for s, t in enumerate(tokens)]))
    watchers = [asyncio.ensure_future(s.watch()) for _, seats in games for s in seats]
    try:
        await asyncio.wait_for(
            asyncio.gather(*(s.ready.wait() for _, seats in games for s in seats)), 120
        )
        ready.set()
        while not go.is_set():
            await asyncio.sleep(0.01)
        actors = [asyncio.ensure_future(s.act()) for _, seats in games for s in seats]
        done = await asyncio.gather(*watchers, *actors, return_exceptions=True)
        figures.errors += [f"{type(d).__name__}: {d}" for d in done if isinstance(d, BaseException)]
        for _, seats in games:
            if all(s.view is not None and s.view.phase == game_pb2.PHASE_GAME_OVER for s in seats):
                figures.games_over += 1
    finally:
        for ch in channels:
            await ch.close()
    return asdict(figures)


def client_process(
    target: str, tables: list[tuple[str, list[str]]], ready: Any, go: Any, out: Any
) -> None:
    try:
        out.put(asyncio.run(client(target, tables, ready, go)))
    except BaseException as e:  # reported, never lost
        out.put({"errors": [f"client process: {type(e).__name__}: {e}"]})


def rss_kib(pid: int) -> tuple[int, int]:
    """The resident memory of a process now and at its peak, in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def setup(target: str, count: int) -> list[tuple[str, list[str]]]:
    """``count`` tables of four seats, every seat joined (so every game has begun)."""
    with grpc.insecure_channel(target) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        tables = []
        for i in range(count):
            _, variant, options = GAMES[i % len(GAMES)]
            created = lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    name=f"load {i}",
                    variant=variant,
                    options=game_pb2.Options(players=4, **options),
                ),
                timeout=30,
            )
            table_id = created.table.table_id
            tokens = [
                lobby.JoinTable(
                    lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"Bot {s}", seat=s),
                    timeout=30,
                ).token
                for s in range(4)
            ]
            tables.append((table_id, tokens))
    return tables


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def run(count: int, clients: int, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        args = ["--max-tables-per-client", str(count + 10)]
        with rami_server(folder / "load.db", folder / "server.log", args=args) as (proc, target):
            tables = setup(target, count)
            rss_before = rss_kib(proc.pid)[0]
            ctx = multiprocessing.get_context("spawn")
            go = ctx.Event()
            readies = [ctx.Event() for _ in range(clients)]
            out = ctx.Queue()
            share = [tables[i::clients] for i in range(clients)]
            procs = [
                ctx.Process(target=client_process, args=(target, share[i], readies[i], go, out))
                for i in range(clients)
            ]
            for p in procs:
                p.start()
            for r in readies:
                if not r.wait(180):
                    raise SystemExit("the clients did not get ready")
            start = time.perf_counter()
            go.set()
            peak_rss = 0
            results = []
            deadline = start + timeout
            while len(results) < clients and time.perf_counter() < deadline:
                peak_rss = max(peak_rss, rss_kib(proc.pid)[0])
                try:
                    results.append(out.get(timeout=0.5))
                except Exception:
                    continue
            wall = time.perf_counter() - start
            rss_now, rss_peak = rss_kib(proc.pid)
            for p in procs:
                p.join(10)
                if p.is_alive():
                    p.kill()
            with grpc.insecure_channel(target) as channel:
                lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
                finished = sum(
                    1
                    for table_id, _ in tables
                    if lobby.GetTable(
                        lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=30
                    ).table.status
                    == lobby_service_pb2.TABLE_STATUS_FINISHED
                )
            log = (folder / "server.log").read_text()
    act = [x for r in results for x in r.get("act_ms", [])]
    fanout = [x for r in results for x in r.get("fanout_ms", [])]
    errors = [e for r in results for e in r.get("errors", [])]
    if len(results) < clients:
        errors.append(f"{clients - len(results)} client processes did not finish in {timeout} s")
    if finished < count:
        errors.append(f"{count - finished} of {count} games not over")
    commands = sum(r.get("commands", 0) for r in results)
    first = min((r["first"] for r in results if "first" in r), default=0.0)
    last = max((r["last"] for r in results if "last" in r), default=0.0)
    busy = last - first if last > first else wall
    return {
        "tables": count,
        "seats": 4 * count,
        "client_processes": clients,
        "games_over": finished,
        "commands": commands,
        "seconds": round(busy, 2),
        "commands_per_second": round(commands / busy, 1) if busy else 0.0,
        "act_ms_p50": round(pct(act, 0.5), 2),
        "act_ms_p99": round(pct(act, 0.99), 2),
        "act_ms_mean": round(statistics.fmean(act), 2) if act else 0.0,
        "watchers_ms_p50": round(pct(fanout, 0.5), 2),
        "watchers_ms_p99": round(pct(fanout, 0.99), 2),
        "watchers_measured": len(fanout),
        "errors": len(errors),
        "error_samples": errors[:5],
        "server_rss_mib_before": round(rss_before / 1024, 1),
        "server_rss_mib_end": round(rss_now / 1024, 1),
        "server_rss_mib_peak": round(max(rss_peak, peak_rss) / 1024, 1),
        "server_log_errors": log.count(" ERROR "),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=200, help="tables of 4 remote bots")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--timeout", type=float, default=900.0, help="give up after (s)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    a = parser.parse_args()
    figures = run(a.tables, a.clients, a.timeout)
    width = max(len(k) for k in figures)
    for k, v in figures.items():
        print(f"{k:<{width}}  {v}")
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1) + "\n")
    if figures["errors"] or figures["games_over"] < figures["tables"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
