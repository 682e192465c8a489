"""``make load``: many whole games of remote bots on one real ``rami-server`` process.

By default 200 tables of 4 seats, every seat a remote bot of the bot kit
(``rami.client.botkit.play`` with the engine's greedy policy, unary ``Act`` calls beside its
own Watch stream): like any client of the kit, it resumes a stream that dropped or was cut
off from the last update it saw, and sends a rate-limited command again a little later.
Short games (one portuguese round, or moroccan games capped at one round), every game played
to its end. The bots run in ``--clients`` processes of grpc.aio clients, the server in its own
process, all on 127.0.0.1. The harness sees the kit's calls through client interceptors: the
kit's own code runs unchanged.

Reported: commands per second (accepted ``Act`` calls over the time from the first to the
last), command latency (``Act`` call to its answer) at p50 and p99, command-to-every-watcher
latency (``Act`` call to the moment the last of the table's three other seats read the update
it became: the seat that acted reads its own stream once its turn is done) at p50 and p99,
streams resumed, streams cut off (``TOO_SLOW``), calls sent again after a lost answer,
commands rate-limited or stale (sent again, or decided anew, by the kit), errors (every
refused or failed call, every stream that failed but for a cut-off, every bot that gave up,
every game not over: must be zero), and the server's resident memory (now and at its peak).

It fails fast: a table where nothing moved for ``--stall`` seconds (no update read by any of
its seats, no command answered), or whose bot gave up, ends the run at once, naming the
table, where it stands (update number, phase, whose turn, and what the server says) and what
the bot of each of its seats was doing; the whole run has its own deadline (``--timeout``).
However it ends (success, failure, an exception, its deadline, SIGINT, SIGTERM, SIGHUP), it
stops the server and the client processes it started and waits for them; killed outright
(SIGKILL), they are killed with it (PR_SET_PDEATHSIG). It prints the server's pid.

    .venv/bin/python tests/load/run_load.py --tables 200 --clients 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import queue
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import grpc
from server_support import die_with_parent, rami_server

from rami.client.botkit import TOKEN_METADATA, play, policy_decider
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
)

GAMES = [
    ("portuguese", game_pb2.VARIANT_PORTUGUESE, {"rounds": 1}),
    ("tallage", game_pb2.VARIANT_TALLAGE, {"round_cap": 1}),
    ("simple", game_pb2.VARIANT_SIMPLE, {"round_cap": 1}),
]
#: How long after the run's deadline the clients have to say where they stand.
GRACE = 5.0
#: Tables that share one client connection.
PER_CHANNEL = 10
#: Every unary call of the harness's own (setting up, asking the server) gives up after this.
CALL_TIMEOUT = 30.0


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
    reconnects: int = 0
    retries: int = 0
    cut_off: int = 0
    rate_limited: int = 0
    stale: int = 0


def _failure(e: BaseException) -> str:
    if isinstance(e, grpc.aio.AioRpcError):
        return f"{e.code().name}: {e.details()}"
    return f"{type(e).__name__}: {e}"


class Seat:
    """What the harness saw of one seat's bot: its stream and its commands, as they went."""

    def __init__(self, game: Game, seat: int) -> None:
        self.game = game
        self.seat = seat
        #: Its commands are held forever (``--hold-seat``: a table that stalls, for the tests).
        self.held = False
        self.opens = 0
        self.after: int | None = None
        self.opened_at = 0.0
        self.streaming = False
        self.ended = ""
        self.ended_at = 0.0
        self.last = -1
        self.read_at = 0.0
        self.acting: int | None = None
        self.acting_since = 0.0
        self.cut_off = 0
        self.rate_limited = 0
        self.stale = 0
        self.first = asyncio.Event()
        self.bot: asyncio.Task[Any] | None = None

    def opened(self, after: int | None) -> None:
        self.opens += 1
        self.after, self.opened_at, self.streaming = after, time.monotonic(), True

    def read(self, update: table_service_pb2.Update) -> None:
        now = time.perf_counter()
        if update.number > self.last:
            self.last, self.read_at = update.number, time.monotonic()
            self.game.moved(update.number, update.view)
        self.game.arrived(self.seat, update.number, now)
        self.first.set()

    def dropped(self, e: grpc.aio.AioRpcError) -> None:
        self.streaming = False
        self.ended, self.ended_at = _failure(e), time.monotonic()
        if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "cut off" in (e.details() or ""):
            self.cut_off += 1
        else:
            self.game.figures.errors.append(
                f"table {self.game.table_id} seat {self.seat}: Watch {_failure(e)}"
            )

    def refused(self, e: grpc.aio.AioRpcError) -> None:
        code = e.code()
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            self.rate_limited += 1
        elif code == grpc.StatusCode.ABORTED:
            self.stale += 1
        else:
            self.game.figures.errors.append(
                f"table {self.game.table_id} seat {self.seat}: Act {_failure(e)}"
            )

    def doing(self, now: float) -> str:
        """What this seat's bot is doing, in words."""
        if self.bot is not None and self.bot.done():
            if self.bot.cancelled():
                return "its bot was cancelled"
            error = self.bot.exception()
            if error is not None:
                return f"its bot gave up: {_failure(error)}"
            return f"its bot is done: it read the end of the game (update {self.last})"
        parts = []
        if self.acting is not None:
            held = " (held: --hold-seat)" if self.held else ""
            parts.append(
                f"Act decided on update {self.acting} in flight for "
                f"{now - self.acting_since:.1f} s{held}"
            )
        after = "from the start" if self.after is None else f"after {self.after}"
        if self.streaming:
            parts.append(
                f"watching (stream {self.opens}, {after}, {now - self.opened_at:.1f} s ago)"
            )
        elif self.opens:
            parts.append(
                f"not watching: stream {self.opens} ({after}) ended {now - self.ended_at:.1f} s "
                f"ago ({self.ended}); the kit resumes after a pause"
            )
        else:
            parts.append("no stream opened yet")
        read = (
            f"last read update {self.last} {now - self.read_at:.1f} s ago"
            if self.last >= 0
            else "nothing read yet"
        )
        parts.append(read)
        parts.append(
            f"{max(0, self.opens - 1)} resumed, {self.cut_off} cut off, "
            f"{self.rate_limited} rate-limited, {self.stale} stale"
        )
        return "; ".join(parts)


class Game:
    """One table's four bots, and the moments its updates reached each of them."""

    def __init__(self, table_id: str, label: str, figures: Figures) -> None:
        self.table_id = table_id
        self.label = label
        self.figures = figures
        self.seats = [Seat(self, s) for s in range(4)]
        self.number = -1
        self.phase = game_pb2.PHASE_UNSPECIFIED
        self.turn = -1
        self.moved_at = time.monotonic()
        #: When the command each update number became was sent, and by which seat.
        self.sent: dict[int, tuple[float, int]] = {}
        self.reads: dict[int, dict[int, float]] = {}
        self.measured: set[int] = set()

    @property
    def done(self) -> bool:
        """Every bot of the table has ended."""
        return all(s.bot is not None and s.bot.done() for s in self.seats)

    def moved(self, number: int, view: game_pb2.View) -> None:
        """Something moved: a seat read an update it had not read, or a command was answered."""
        self.moved_at = time.monotonic()
        if number >= self.number:
            self.number, self.phase, self.turn = number, view.phase, view.turn

    def acted(self, seat: int, response: table_service_pb2.ActResponse, start: float) -> None:
        end = time.perf_counter()
        f = self.figures
        f.commands += 1
        f.act_ms.append((end - start) * 1e3)
        f.first = min(f.first, start)
        f.last = max(f.last, end)
        self.moved(response.number, response.view)
        self.sent[response.number] = (start, seat)
        self._fanout(response.number)

    def arrived(self, seat: int, number: int, now: float) -> None:
        if number not in self.measured:
            self.reads.setdefault(number, {}).setdefault(seat, now)
            self._fanout(number)

    def _fanout(self, number: int) -> None:
        """Command to every other watcher: from the ``Act`` call to the moment the last of the
        table's other three seats read the update it became (the seat that acted reads its
        own stream once its turn is done: the kit acts on the views its commands return)."""
        sent = self.sent.get(number)
        reads = self.reads.get(number, {})
        if sent is None or len(reads) < 3:
            return
        start, actor = sent
        others = [t for s, t in reads.items() if s != actor]
        if len(others) == 3:
            self.figures.fanout_ms.append((max(others) - start) * 1e3)
            self.measured.add(number)
            del self.sent[number], self.reads[number]

    def describe(self, why: str) -> dict[str, Any]:
        """The table, where it stands and what each of its bots is doing."""
        now = time.monotonic()
        phase = game_pb2.Phase.Name(self.phase).removeprefix("PHASE_") if self.phase else "none"
        head = (
            f"table {self.table_id} ({self.label}) {why}: at update {self.number}, "
            f"phase {phase}, seat {self.turn} to move"
        )
        return {
            "table_id": self.table_id,
            "label": self.label,
            "number": self.number,
            "phase": phase,
            "turn": self.turn,
            "seats": [f"seat {s.seat}: {s.doing(now)}" for s in self.seats],
            "text": head,
        }


class _Observer:
    """Sees the calls of the kit's bots, known by their token."""

    def __init__(self, seats: dict[str, Seat], joining: dict[tuple[str, int], Seat]) -> None:
        self.seats = seats
        self.joining = joining

    def _seat(self, details: grpc.aio.ClientCallDetails) -> Seat | None:
        for key, value in details.metadata or ():
            if key == TOKEN_METADATA:
                return self.seats.get(str(value))
        return None


class ActObserver(_Observer, grpc.aio.UnaryUnaryClientInterceptor):
    """Holds every command until ``go`` (every stream is open by then), then measures it;
    learns the token of a seat its bot joins."""

    def __init__(
        self, seats: dict[str, Seat], joining: dict[tuple[str, int], Seat], go: asyncio.Event
    ) -> None:
        super().__init__(seats, joining)
        self.go = go

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        if isinstance(request, lobby_service_pb2.JoinTableRequest):
            call = await continuation(details, request)
            joined = await call
            seat = self.joining.get((request.table_id, joined.seat))
            if seat is not None:
                self.seats[joined.token] = seat
            return joined
        seat = self._seat(details)
        if seat is None or not isinstance(request, table_service_pb2.ActRequest):
            return await continuation(details, request)
        await self.go.wait()
        seat.acting, seat.acting_since = request.number, time.monotonic()
        if seat.held:
            await asyncio.Event().wait()  # until the harness stops this process
        start = time.perf_counter()
        try:
            call = await continuation(details, request)
            response = await call
        except grpc.aio.AioRpcError as e:
            seat.refused(e)
            raise
        finally:
            seat.acting = None
        seat.game.acted(seat.seat, response, start)
        return response


class WatchObserver(_Observer, grpc.aio.UnaryStreamClientInterceptor):
    """Notes what each stream reads, and how it ends."""

    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        call = await continuation(details, request)
        seat = self._seat(details)
        if seat is None:
            return call
        seat.opened(request.after if request.HasField("after") else None)
        return self._read(seat, call)

    async def _read(self, seat: Seat, call: Any) -> Any:
        try:
            async for msg in call:
                if msg.HasField("update"):
                    seat.read(msg.update)
                yield msg
        except grpc.aio.AioRpcError as e:
            seat.dropped(e)
            raise
        finally:
            seat.streaming = False


def _gave_up(seat: Seat) -> bool:
    bot = seat.bot
    return bot is not None and bot.done() and (bot.cancelled() or bot.exception() is not None)


async def watchdog(
    games: list[Game], go: asyncio.Event, stall: float, deadline: float, out: Any
) -> None:
    """Report at once a table whose bot gave up, or (once the commands go) where nothing moved
    for ``stall`` seconds, or (at the run's deadline) the one that moved least recently; until
    every table is done."""
    while True:
        await asyncio.sleep(0.5)
        waiting = [g for g in games if not g.done]
        if not waiting:
            return
        now = time.monotonic()
        for g in waiting:
            lost = [s for s in g.seats if _gave_up(s)]
            if lost:
                why = f"lost the bot of its seat {lost[0].seat}"
            elif go.is_set() and now - g.moved_at > stall:
                why = f"has not moved for {now - g.moved_at:.0f} s"
            else:
                continue
            out.put({"kind": "stalled", **g.describe(why)})
            return
        if time.time() > deadline:
            g = min(waiting, key=lambda g: g.moved_at)
            why = f"was not over at the run's deadline (last moved {now - g.moved_at:.0f} s ago)"
            out.put({"kind": "stalled", **g.describe(why)})
            return


async def until(what: str, ok: Any, deadline: float) -> None:
    """Until ``ok()``, or fail at the run's deadline."""
    while not ok():
        if time.time() > deadline:
            raise TimeoutError(f"{what} before the run's deadline")
        await asyncio.sleep(0.02)


async def client(
    index: int,
    target: str,
    tables: list[tuple[str, str, list[str | None]]],
    go: Any,
    out: Any,
    opts: dict[str, Any],
) -> dict[str, Any]:
    """One client process's bots: every seat of its tables (a seat without a token is joined
    by its bot once the others watch), each with its own stream and commands."""
    figures = Figures()
    games = [Game(table_id, label, figures) for table_id, label, _ in tables]
    seats = [s for g in games for s in g.seats]
    local_go = asyncio.Event()
    by_token: dict[str, Seat] = {}
    joining: dict[tuple[str, int], Seat] = {}
    for game, (_, _, tokens) in zip(games, tables, strict=True):
        for seat, token in zip(game.seats, tokens, strict=True):
            if token is None:
                joining[game.table_id, seat.seat] = seat
            else:
                by_token[token] = seat
    if opts["hold_seat"] and index == 0 and games:
        games[0].seats[0].held = True
    observers = [ActObserver(by_token, joining, local_go), WatchObserver(by_token, joining)]
    channels = [
        grpc.aio.insecure_channel(
            target, options=[("grpc.use_local_subchannel_pool", 1)], interceptors=observers
        )
        for _ in range(0, len(tables), PER_CHANNEL)
    ]
    deadline = opts["deadline"]

    def start(seat: Seat, token: str | None, channel: grpc.aio.Channel) -> None:
        table_id = seat.game.table_id
        seat.bot = asyncio.ensure_future(
            play(
                target,
                table_id,
                policy_decider("greedy", f"{table_id}:{seat.seat}"),
                name=f"Bot {seat.seat}",
                seat=seat.seat,
                token=token,
                channel=channel,
                stream=False,
                max_reconnects=opts["max_reconnects"],
            )
        )

    dog = asyncio.ensure_future(watchdog(games, local_go, opts["stall"], deadline, out))
    try:
        for i, (game, (_, _, tokens)) in enumerate(zip(games, tables, strict=True)):
            for seat, token in zip(game.seats, tokens, strict=True):
                if token is not None:
                    start(seat, token, channels[i // PER_CHANNEL])
        early = [s for s in seats if s.bot is not None]
        await until("the streams opened", lambda: all(s.first.is_set() for s in early), deadline)
        for i, game in enumerate(games):
            for seat in game.seats:
                if seat.bot is None:
                    start(seat, None, channels[i // PER_CHANNEL])
        await until("the streams opened", lambda: all(s.first.is_set() for s in seats), deadline)
        out.put({"kind": "ready", "client": index})
        await until("the go", go.is_set, deadline)
        for g in games:
            g.moved_at = time.monotonic()
        local_go.set()
        done = await asyncio.gather(*(s.bot for s in seats if s.bot), return_exceptions=True)
        for seat, d in zip(seats, done, strict=True):
            where = f"table {seat.game.table_id} seat {seat.seat}"
            if isinstance(d, BaseException):
                figures.errors.append(f"{where}: the bot gave up: {_failure(d)}")
            else:
                figures.reconnects += d.reconnects
                figures.retries += d.retries
            figures.cut_off += seat.cut_off
            figures.rate_limited += seat.rate_limited
            figures.stale += seat.stale
        not_over = {
            s.game.table_id
            for s, d in zip(seats, done, strict=True)
            if isinstance(d, BaseException)
            or d.final is None
            or d.final.phase != game_pb2.PHASE_GAME_OVER
        }
        figures.games_over = sum(g.table_id not in not_over for g in games)
    finally:
        dog.cancel()
        for s in seats:
            if s.bot is not None:
                s.bot.cancel()
        for ch in channels:
            await ch.close()
    return asdict(figures)


def client_process(
    index: int,
    parent: int,
    target: str,
    tables: list[tuple[str, str, list[str | None]]],
    go: Any,
    out: Any,
    opts: dict[str, Any],
) -> None:
    """One client process: killed with the harness, however the harness dies."""
    die_with_parent(parent)
    try:
        out.put(
            {
                "kind": "result",
                "client": index,
                **asyncio.run(client(index, target, tables, go, out, opts)),
            }
        )
    except BaseException as e:  # reported, never lost
        out.put(
            {
                "kind": "result",
                "client": index,
                "errors": [f"client process {index}: {_failure(e)}"],
            }
        )


def rss_kib(pid: int) -> tuple[int, int]:
    """The resident memory of a process now and at its peak, in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def _left(deadline: float) -> float:
    left = deadline - time.time()
    if left <= 0:
        raise TimeoutError("the run's deadline passed")
    return min(CALL_TIMEOUT, left)


def setup(
    target: str, count: int, deadline: float, late_join: bool = False
) -> list[tuple[str, str, list[str | None]]]:
    """``count`` tables of four seats, every seat joined (so every game has begun; with
    ``late_join``, all but the last, which its bot joins): their ids, labels and tokens."""
    with grpc.insecure_channel(target) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        tables = []
        for i in range(count):
            name, variant, options = GAMES[i % len(GAMES)]
            created = lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    name=f"load {i}",
                    variant=variant,
                    options=game_pb2.Options(players=4, **options),
                ),
                timeout=_left(deadline),
            )
            table_id = created.table.table_id
            tokens: list[str | None] = [
                lobby.JoinTable(
                    lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"Bot {s}", seat=s),
                    timeout=_left(deadline),
                ).token
                for s in range(3 if late_join else 4)
            ]
            tokens += [None] * (4 - len(tokens))
            tables.append((table_id, f"load {i}, {name}", tokens))
    return tables


def server_says(target: str, table_id: str, deadline: float) -> str:
    """Where the server says a table stands."""
    try:
        with grpc.insecure_channel(target) as channel:
            info = (
                lobby_service_pb2_grpc.LobbyServiceStub(channel)
                .GetTable(
                    lobby_service_pb2.GetTableRequest(table_id=table_id),
                    timeout=min(10.0, max(1.0, deadline - time.time())),
                )
                .table
            )
    except grpc.RpcError as e:
        return f"the server did not say ({e.code().name})"
    status = lobby_service_pb2.TableStatus.Name(info.status).removeprefix("TABLE_STATUS_")
    return f"the server says: {status}, at update {info.number}"


def count_finished(target: str, table_ids: list[str], budget: float = 30.0) -> int:
    """How many of the tables the server says are finished (asking for ``budget`` seconds at
    most: the tables not asked about by then count as not finished)."""
    end = time.monotonic() + budget
    finished = 0
    with grpc.insecure_channel(target) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        for table_id in table_ids:
            left = end - time.monotonic()
            if left <= 0:
                break
            try:
                info = lobby.GetTable(
                    lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=left
                ).table
            except grpc.RpcError:
                break
            finished += info.status == lobby_service_pb2.TABLE_STATUS_FINISHED
    return finished


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def _stop(procs: list[Any]) -> None:
    """Stop the client processes and wait for them (bounded)."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
            p.join(5)


def run(opts: argparse.Namespace) -> dict[str, Any]:
    count, clients = opts.tables, opts.clients
    began = time.time()
    deadline = began + opts.timeout
    errors: list[str] = []
    stalled: dict[str, Any] | None = None
    results: dict[int, dict[str, Any]] = {}
    finished = 0
    wall = 0.0
    with tempfile.TemporaryDirectory(prefix="rami-load-") as tmp:
        folder = Path(tmp)
        args = ["--max-tables-per-client", str(count + 10), "--table-creations-per-second", "0"]
        if opts.watcher_queue:
            args += ["--watcher-queue", str(opts.watcher_queue)]
        db: str | Path = folder / "load.db"
        if opts.db:  # a PostgreSQL database: its servers share a key file
            db = opts.db
            args += ["--secret-file", str(folder / "server.key")]
        with rami_server(db, folder / "server.log", args=args, with_parent=os.getpid()) as (
            proc,
            target,
        ):
            print(f"rami-server pid {proc.pid} on {target}", file=sys.stderr, flush=True)
            tables = setup(target, count, deadline, opts.late_join)
            setup_seconds = time.time() - began
            rss_before = rss_kib(proc.pid)[0]
            ctx = multiprocessing.get_context("spawn")
            go = ctx.Event()
            out = ctx.Queue()
            share = [tables[i::clients] for i in range(clients)]
            client_opts = {
                "deadline": deadline,
                "stall": opts.stall,
                "max_reconnects": opts.max_reconnects,
                "hold_seat": opts.hold_seat,
            }
            procs = [
                ctx.Process(
                    target=client_process,
                    args=(i, os.getpid(), target, share[i], go, out, client_opts),
                    daemon=True,
                )
                for i in range(clients)
            ]
            peak_rss = 0
            start = time.perf_counter()
            try:
                for p in procs:
                    p.start()
                ready: set[int] = set()
                while len(results) < clients and stalled is None:
                    peak_rss = max(peak_rss, rss_kib(proc.pid)[0])
                    try:
                        msg = out.get(timeout=0.5)
                    except queue.Empty:
                        if time.time() > deadline + GRACE:
                            where = "the run" if go.is_set() else "getting ready"
                            errors.append(f"the run's deadline ({opts.timeout:g} s) passed {where}")
                            break
                        if proc.poll() is not None:
                            errors.append(f"rami-server exited with {proc.returncode}")
                            break
                        gone = [i for i, p in enumerate(procs) if p.exitcode is not None]
                        lost = [i for i in gone if i not in results]
                        if lost:
                            code = procs[lost[0]].exitcode
                            errors.append(f"client process {lost[0]} exited ({code}) unreported")
                            break
                        continue
                    if msg["kind"] == "ready":
                        ready.add(msg["client"])
                        if len(ready) == clients:
                            print(f"run_load: {count} tables, commands go", file=sys.stderr)
                            start = time.perf_counter()
                            go.set()
                    elif msg["kind"] == "stalled":
                        stalled = msg
                        stalled["server"] = server_says(target, msg["table_id"], deadline)
                    else:
                        results[msg["client"]] = msg
                wall = time.perf_counter() - start
            finally:
                _stop(procs)
            rss_now, rss_peak = rss_kib(proc.pid)
            finished = count_finished(target, [t for t, _, _ in tables])
        log = (folder / "server.log").read_text()
    got = list(results.values())
    act = [x for r in got for x in r.get("act_ms", [])]
    fanout = [x for r in got for x in r.get("fanout_ms", [])]
    if stalled is not None:
        errors.insert(0, f"{stalled['text']}; {stalled['server']}")
    errors += [e for r in got for e in r.get("errors", [])]
    if len(results) < clients and stalled is None:
        errors.append(f"{clients - len(results)} client processes did not finish")
    if finished < count:
        errors.append(f"{count - finished} of {count} games not over")
    commands = sum(r.get("commands", 0) for r in got)
    first = min((r["first"] for r in got if "first" in r), default=0.0)
    last = max((r["last"] for r in got if "last" in r), default=0.0)
    busy = last - first if last > first else wall

    def total(name: str) -> int:
        return sum(int(r.get(name, 0)) for r in got)

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
        "resumed": total("reconnects"),
        "retried": total("retries"),
        "cut_off": total("cut_off"),
        "rate_limited": total("rate_limited"),
        "stale": total("stale"),
        "errors": len(errors),
        "error_samples": errors[:5],
        "stalled": stalled,
        "server_rss_mib_before": round(rss_before / 1024, 1),
        "server_rss_mib_end": round(rss_now / 1024, 1),
        "server_rss_mib_peak": round(max(rss_peak, peak_rss) / 1024, 1),
        "server_log_errors": log.count(" ERROR "),
        "setup_seconds": round(setup_seconds, 2),
        "run_seconds": round(wall, 2),
        "cpus": os.cpu_count(),
    }


class Stopped(BaseException):
    """A signal asked the harness to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _stop_on_signal(signum: int, frame: Any) -> None:
    # Once: the way out (stopping what was started) is not to be cut short by a second one.
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    raise Stopped(signum)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=200, help="tables of 4 remote bots")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--timeout", type=float, default=600.0, help="the whole run's deadline (s)")
    parser.add_argument(
        "--stall",
        type=float,
        default=90.0,
        help="fail at once when a table has not moved for this long (s)",
    )
    parser.add_argument(
        "--max-reconnects", type=int, default=20, help="the bot kit's reconnect limit per seat"
    )
    parser.add_argument(
        "--watcher-queue",
        type=int,
        default=0,
        help="the server's --watcher-queue (0: its default): small, to see streams cut off",
    )
    parser.add_argument(
        "--hold-seat",
        action="store_true",
        help="hold the commands of the first table's seat 0 forever (a stall, for the tests)",
    )
    parser.add_argument(
        "--late-join",
        action="store_true",
        help="the bot of every table's last seat joins it once the others watch (its join and "
        "the start are two updates at once: with --watcher-queue 1, every other stream is "
        "cut off, and resumes)",
    )
    parser.add_argument(
        "--db",
        default="",
        help="the server's --db (default: a SQLite file in a temporary folder); a PostgreSQL"
        " URL (postgresql://...) is given a key file there too",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    a = parser.parse_args()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _stop_on_signal)
    try:
        figures = run(a)
    except Stopped as e:
        print(f"run_load: stopped by {e}; the server and the clients were stopped", file=sys.stderr)
        raise SystemExit(128 + e.signum) from None
    width = max(len(k) for k in figures)
    for k, v in figures.items():
        if k != "stalled":
            print(f"{k:<{width}}  {v}")
    if a.json:
        a.json.write_text(json.dumps(figures, indent=1) + "\n")
    stalled = figures["stalled"]
    if stalled is not None:
        print(f"\nFAILED: {stalled['text']}; {stalled['server']}")
        for line in stalled["seats"]:
            print(f"  {line}")
    if figures["errors"] or figures["games_over"] < figures["tables"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
