"""Promise 5, no one can stall a table or the server: while one seat disconnects, one never reads
its stream, one floods commands, chat and streams, and one client hogs spectator streams,
tables and the solver, the other seats' games all finish, their commands stay fast, and the
server answers throughout.

- A seat that disconnects, or that never reads its stream, never acts: the turn clock
  (``turn_seconds``) plays for it, and the stream it does not read is cut off (``TOO_SLOW``).
- A seat that floods is held to its rate (``RATE_LIMITED``); its extra streams and a client's
  extra spectator streams and tables are refused (``TOO_MANY_STREAMS``, ``TOO_MANY_TABLES``).
- The latency of the good seats' commands and of a probe calling the lobby every 50 ms is
  measured and bounded (generously: a loaded CI machine), next to a table where nobody
  misbehaves.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
from reliability_support import Acks, Resuming, actions_of, channel, percentile
from server_support import RPC_TIMEOUT, VARIANTS, error_of, md

from rami.client.botkit import play, policy_decider
from rami.server.table import TableConfig
from rami.server.testing import ServerThread
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    rules_service_pb2,
    rules_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

T = RPC_TIMEOUT
CONFIG = TableConfig(
    bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=0.5, watcher_queue=16
)
#: The server's own defaults, but for the tables one client may create (the test's tables too).
LIMITS: dict[str, Any] = {
    "commands_per_second": 20.0,
    "command_burst": 40.0,
    "chat_per_second": 1.0,
    "chat_burst": 5.0,
    "streams_per_seat": 4,
    "spectator_streams_per_client": 64,
    "max_tables_per_client": 8,
    "work_share": 0.2,
    "work_burst": 1.0,
}
OPTIONS = game_pb2.Options(players=3, round_cap=1, turn_seconds=1)
#: Bounds on latency, in seconds: an idle machine shows a few milliseconds.
P99_BOUND = 1.0
MAX_BOUND = 3.0


def heavy_hand(n: int) -> list[int]:
    """A 20-card hand that keeps the solver busy (runs and sets across, four jokers), a
    different one each time so that nothing is remembered from the one before."""
    low = 1 + n % 9
    ranks = [low, low + 1, low + 2]
    faces = [r + 13 * s for s in range(4) for r in ranks] + [low + 13 * (n % 4), low + 1]
    faces += [low + 3 + 13 * (n % 2), low + 2 + 13 * ((n // 9) % 4)]
    return [f + 1 for f in faces] + [53] * 4


async def new_table(
    lobby: lobby_service_pb2_grpc.LobbyServiceStub, name: str
) -> tuple[str, list[str]]:
    created = await lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name=name, variant=VARIANTS["tallage"], options=OPTIONS
        ),
        timeout=T,
    )
    table_id = created.table.table_id
    tokens = []
    for seat in range(OPTIONS.players):
        joined = await lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"{name} {seat}", seat=seat),
            timeout=T,
        )
        tokens.append(joined.token)
    return table_id, tokens


async def scenario(target: str) -> None:
    acks = Acks()
    good = channel(target, interceptors=[acks])
    bad = channel(target)
    # The deaf seat's connection takes little at a time, so its stream backs up soon.
    slow = grpc.aio.insecure_channel(
        target, options=[("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1024)]
    )
    lobby = lobby_service_pb2_grpc.LobbyServiceStub(good)
    table = table_service_pb2_grpc.TableServiceStub(good)
    bad_table = table_service_pb2_grpc.TableServiceStub(bad)
    tasks: list[asyncio.Future[Any]] = []
    streams: list[Any] = []
    try:
        gone_id, gone = await new_table(lobby, "gone")
        deaf_id, deaf = await new_table(lobby, "deaf")
        flood_id, flood = await new_table(lobby, "flood")
        calm_id, calm = await new_table(lobby, "calm")
        # The deaf seat watches and never reads; the gone seat never even watches.
        deaf_stream = table_service_pb2_grpc.TableServiceStub(slow).Watch(
            table_service_pb2.WatchRequest(table_id=deaf_id), metadata=md(deaf[0]), timeout=120
        )
        streams.append(deaf_stream)
        spectator = Resuming(table, calm_id)
        tasks.append(asyncio.ensure_future(spectator.run()))

        started = time.perf_counter()
        # Remote bots in every other seat (seat 0 of gone, deaf and flood misbehaves).
        bots = [
            asyncio.ensure_future(
                play(
                    target,
                    table_id,
                    policy_decider("greedy", f"{name}:{seat}"),
                    token=token,
                    channel=good,
                    stream=False,  # unary Act: the interceptor times every command
                )
            )
            for name, table_id, tokens, first in (
                ("gone", gone_id, gone, 1),
                ("deaf", deaf_id, deaf, 1),
                ("flood", flood_id, flood, 1),
                ("calm", calm_id, calm, 0),
            )
            for seat, token in enumerate(tokens)
            if seat >= first
        ]
        everyone = asyncio.gather(*bots)

        # The flooder: as many commands and chat lines as it can, with the seat's token.
        flooded: Counter[str] = Counter()

        async def flood_commands() -> None:
            n = 0
            while not everyone.done():
                n += 1
                request = table_service_pb2.ActRequest(
                    table_id=flood_id,
                    number=n % 7,
                    discard=table_service_pb2.DiscardAction(card=n % 54),
                )
                try:
                    await bad_table.Act(request, metadata=md(flood[0]), timeout=T)
                    flooded["OK"] += 1
                except grpc.aio.AioRpcError as e:
                    flooded[error_of(e).reason] += 1
                if n % 5 == 0:
                    try:
                        await bad_table.Chat(
                            table_service_pb2.ChatRequest(table_id=flood_id, text=f"spam {n}"),
                            metadata=md(flood[0]),
                            timeout=T,
                        )
                        flooded["chat OK"] += 1
                    except grpc.aio.AioRpcError as e:
                        flooded["chat " + error_of(e).reason] += 1

        # Extra streams of the flooding seat, and a client's spectator streams.
        refused_streams: Counter[str] = Counter()
        settled: list[float] = []  # when each spectator hold was let in or refused

        async def hold(table_id: str, token: str | None) -> None:
            call = bad_table.Watch(
                table_service_pb2.WatchRequest(table_id=table_id), metadata=md(token), timeout=120
            )
            streams.append(call)
            unsettled = token is None  # a spectator's, until let in or refused
            try:
                async for _ in call:
                    if unsettled:
                        settled.append(time.perf_counter())
                        unsettled = False
            except grpc.aio.AioRpcError as e:
                if e.code() != grpc.StatusCode.CANCELLED:
                    refused_streams[error_of(e).reason] += 1
                    if unsettled:
                        settled.append(time.perf_counter())

        for _ in range(5):
            tasks.append(asyncio.ensure_future(hold(flood_id, flood[0])))
        # Each open counts as one of the seat's commands: opened before the flood, not
        # refused RATE_LIMITED by it (the fifth is refused TOO_MANY_STREAMS).
        async with asyncio.timeout(10):
            while not refused_streams["TOO_MANY_STREAMS"]:
                await asyncio.sleep(0.01)
        flood_start = time.perf_counter()
        tasks.append(asyncio.ensure_future(flood_commands()))
        # The calm table's spectator has its stream (of the same client address) first: else
        # it may be refused for the hogger's streams and count among them.
        async with asyncio.timeout(10):
            while not spectator.numbers:
                await asyncio.sleep(0.01)
        for _ in range(70):
            tasks.append(asyncio.ensure_future(hold(calm_id, None)))

        # A client that hogs the solver, and one that creates tables until refused.
        rules = rules_service_pb2_grpc.RulesServiceStub(bad)
        hogged: Counter[str] = Counter()

        async def hog_solver() -> None:
            n = 0
            while not everyone.done():
                n += 1
                try:
                    await rules.AnalyseHand(
                        rules_service_pb2.AnalyseHandRequest(
                            variant=VARIANTS["tallage"], hand=heavy_hand(n)
                        ),
                        timeout=T,
                    )
                    hogged["OK"] += 1
                except grpc.aio.AioRpcError as e:
                    hogged[error_of(e).reason] += 1

        tasks.append(asyncio.ensure_future(hog_solver()))
        bad_lobby = lobby_service_pb2_grpc.LobbyServiceStub(bad)
        created = 0
        while True:
            try:
                await bad_lobby.CreateTable(
                    lobby_service_pb2.CreateTableRequest(name="hog", variant=VARIANTS["simple"]),
                    timeout=T,
                )
                created += 1
            except grpc.aio.AioRpcError as e:
                err = error_of(e)
                assert (err.code, err.reason) == (
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "TOO_MANY_TABLES",
                )
                break
        assert created == LIMITS["max_tables_per_client"] - 4

        # A probe: is the server answering?
        probes: list[float] = []

        async def probe() -> None:
            while not everyone.done():
                start = time.perf_counter()
                await lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=calm_id), timeout=T)
                probes.append(time.perf_counter() - start)
                await asyncio.sleep(0.05)

        tasks.append(asyncio.ensure_future(probe()))

        results = await asyncio.wait_for(everyone, 90)
        elapsed = time.perf_counter() - started
        flood_seconds = time.perf_counter() - flood_start
        await asyncio.sleep(0.2)

        # Every good seat's game finished.
        for r in results:
            assert r.final is not None and r.final.phase == game_pb2.PHASE_GAME_OVER

        async def export(table_id: str) -> dict[str, Any]:
            # The solver hog shares this client's address, and its budget: back off and retry.
            for _ in range(40):
                try:
                    r = await table.ExportRecord(
                        table_service_pb2.ExportRecordRequest(table_id=table_id), timeout=T
                    )
                    return dict(json.loads(r.record_json))
                except grpc.aio.AioRpcError as e:
                    assert error_of(e).reason == "RATE_LIMITED"
                    await asyncio.sleep(0.25)
            raise AssertionError("the record was refused for 10 s")

        for table_id, quiet in ((gone_id, 0), (deaf_id, 0), (flood_id, 0)):
            rec = await export(table_id)
            assert rec["complete"]
            theirs = [a for a in actions_of(rec) if a["seat"] == quiet]
            timed_out = [a for a in theirs if a.get("auto") == "timeout"]
            played_for = [a for a in theirs if a.get("auto") in ("timeout", "away")]
            # The clock played for the seat (the flooder's spam sometimes held a legal move);
            # once a gone seat's drop grace has passed, the server plays it as away.
            assert timed_out and (table_id == flood_id or played_for == theirs)
            others = [a for a in actions_of(rec) if a["seat"] != quiet]
            assert others and not any("auto" in a for a in others)
        # The deaf seat's stream was cut off, after the updates it could hold.
        got = []
        try:
            async for msg in deaf_stream:
                if msg.HasField("update"):
                    got.append(msg.update.number)
        except grpc.aio.AioRpcError as e:
            err = error_of(e)
            assert (err.code, err.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_SLOW")
            assert err.metadata == {"after": str(got[-1])}
        else:
            raise AssertionError("the stream nobody read was never cut off")
        # The flooder was held to its rate: 20 a second, bursts of 40.
        assert flooded["RATE_LIMITED"] > 0 and flooded["chat RATE_LIMITED"] > 0
        let_through = sum(n for k, n in flooded.items() if k != "RATE_LIMITED" and "chat" not in k)
        assert let_through <= 40 + 20 * flood_seconds + 5, (flooded, flood_seconds)
        chats = flooded["chat OK"]
        assert chats <= 5 + 1 * flood_seconds + 1, (flooded, flood_seconds)
        # Extra streams refused: 4 per seat; 64 spectator streams per client address (the
        # calm table's spectator holds one of them).
        # (Exactly so while the spectator held its one stream: on a loaded machine its stream
        # may end first, its game over or cut off for reading too slowly, and its place goes
        # to one of the 70.)
        held = spectator.resumes == 0 and spectator.arrived[-1] > max(settled)
        expected = (5 - 4) + (70 - 63)
        assert refused_streams["TOO_MANY_STREAMS"] in (
            (expected,) if held else (expected, expected - 1)
        ), (
            refused_streams,
            spectator.resumes,
        )
        # The calm table's spectator saw every update once.
        assert spectator.final is not None
        assert spectator.numbers == list(range(spectator.numbers[0], spectator.numbers[-1] + 1))

        # Latency of the good seats' commands, and of the probe.
        own = [a.seconds for a in acks.acks]
        calm_only = [a.seconds for a in acks.acks if a.table_id == calm_id]
        figures = {
            "commands": len(own),
            "p50": percentile(own, 0.5),
            "p99": percentile(own, 0.99),
            "max": max(own),
            "calm p99": percentile(calm_only, 0.99),
            "probe p99": percentile(probes, 0.99),
            "probe max": max(probes),
            "seconds": elapsed,
            "solver calls": dict(hogged),
        }
        print(f"\nstall: {figures}; flood {dict(flooded)}")
        assert figures["p99"] < P99_BOUND and figures["max"] < MAX_BOUND, figures
        assert figures["probe p99"] < P99_BOUND and figures["probe max"] < MAX_BOUND, figures
    finally:
        for s in streams:
            s.cancel()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for ch in (good, bad, slow):
            await ch.close(None)


def test_no_one_stalls_a_table_or_the_server(tmp_path: Path) -> None:
    srv = ServerThread(str(tmp_path / "stall.db"), CONFIG, **LIMITS).start()
    try:
        asyncio.run(asyncio.wait_for(scenario(srv.target), 120))
    finally:
        srv.stop()


def _card(suit: int, rank: int) -> int:
    return suit * 13 + rank


#: 20-card tallage hands the solver takes long over (16 high cards and 4 jokers, two jokers
#: allowed in a meld): some tenths of a second each, cold.
SLOW_HANDS = [
    [_card(s, r) for s in range(4) for r in ranks] + [53] * 4
    for ranks in ((9, 10, 11, 12), (10, 11, 12, 13), (1, 11, 12, 13))
]


def _slow_request(hand: list[int]) -> rules_service_pb2.AnalyseHandRequest:
    return rules_service_pb2.AnalyseHandRequest(
        variant=game_pb2.VARIANT_TALLAGE, hand=hand, options=game_pb2.Options(jokers_per_meld=2)
    )


def test_a_slow_hand_analysis_never_holds_up_the_server(tmp_path: Path) -> None:
    """The solver works off the event loop: while one client's analyses of slow hands run,
    another's calls are answered at once (before, one call held every table and stream up
    for as long as it took)."""
    with ServerThread(str(tmp_path / "rami.db"), CONFIG) as server:

        async def main() -> tuple[list[float], list[float]]:
            async with channel(server.target) as ch:
                rules = rules_service_pb2_grpc.RulesServiceStub(ch)
                analysed: list[float] = []
                waits: list[float] = []

                async def analyse(hand: list[int]) -> None:
                    started = time.perf_counter()
                    await rules.AnalyseHand(
                        _slow_request(hand),
                        timeout=60,
                    )
                    analysed.append(time.perf_counter() - started)

                async def probe(running: asyncio.Task[None]) -> None:
                    while not running.done():
                        started = time.perf_counter()
                        await rules.ListVariants(rules_service_pb2.ListVariantsRequest(), timeout=T)
                        waits.append(time.perf_counter() - started)
                        await asyncio.sleep(0.02)

                await rules.ListVariants(rules_service_pb2.ListVariantsRequest(), timeout=T)
                for hand in SLOW_HANDS:
                    running = asyncio.create_task(analyse(hand))
                    await probe(running)
                    await running
                return analysed, waits

        analysed, waits = asyncio.run(main())
    # The hands are slow (else this proves nothing), and the probe never waited for one.
    assert max(analysed) > 0.2, analysed
    assert len(waits) >= 5 and max(waits) < max(analysed) / 3, (analysed, sorted(waits)[-3:])


def test_a_clients_analyses_sent_at_once_are_each_checked_against_its_budget(
    tmp_path: Path,
) -> None:
    """Off the event loop, a client's analyses still take its budget of server time one
    after another: sent at once, each is checked once those before it are charged, so the
    ones past the budget are refused (all of them were run, one after another, in the one
    worker, before; and other clients' analyses waited behind them)."""
    hands = [*SLOW_HANDS, [_card(s, r) for s in range(4) for r in (9, 10, 12, 13)] + [53] * 4]
    # A budget far below one slow hand's time, so that the outcome does not hang on how fast
    # the machine is: the first call is checked against a full budget and answered, its
    # charge spends the budget, and those checked after it are refused.
    with ServerThread(
        str(tmp_path / "rami.db"), CONFIG, work_share=0.01, work_burst=0.05
    ) as server:

        async def main() -> list[str]:
            async with channel(server.target) as ch:
                rules = rules_service_pb2_grpc.RulesServiceStub(ch)

                async def analyse(hand: list[int]) -> str:
                    try:
                        await rules.AnalyseHand(
                            _slow_request(hand),
                            timeout=60,
                        )
                    except grpc.aio.AioRpcError as e:
                        return error_of(e).reason
                    return "answered"

                return await asyncio.gather(*(analyse(h) for h in hands))

        outcomes = asyncio.run(main())
    assert "answered" in outcomes and "RATE_LIMITED" in outcomes, outcomes
