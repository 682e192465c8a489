"""Hand analyses off the event loop: in a worker process, on each client's budget of server
time, one after another per client, and charged whatever becomes of the call."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from pathlib import Path

import pytest

from rami.engine import Card, Options
from rami.server.limits import TimeBudget
from rami.server.refusals import Exhausted, Unavailable
from rami.server.services import analysis
from rami.server.thinking import TakenInTurn, Workers

#: A 20-card tallage hand the solver takes long over (tenths of a second), two jokers a meld.
SLOW = tuple(Card(s * 13 + r) for s in range(4) for r in (9, 10, 11, 12)) + (Card(52),) * 4
OPTIONS = Options(jokers_per_meld=2)


def test_an_analysis_whose_caller_goes_is_charged_and_keeps_the_clients_turn() -> None:
    """A caller that goes away (a deadline, a cancel) leaves its hand to the worker, which
    finishes it: its time is charged all the same, and the client's next analysis waits for
    it, then is checked against that charge (before, it was neither charged nor waited for:
    short deadlines kept the worker busy for free)."""

    async def main() -> None:
        work = TimeBudget(share=0.01, burst=0.2)
        workers = Workers(1, 30.0, "hand analysis")
        try:
            await workers.run(len, ())  # spawned
            gone = asyncio.create_task(analysis(work, workers, "a", "tallage", OPTIONS, SLOW, 0))
            await asyncio.sleep(0.05)
            gone.cancel()
            with pytest.raises(asyncio.CancelledError):
                await gone
            with pytest.raises(Exhausted):
                await analysis(work, workers, "a", "tallage", OPTIONS, SLOW[:-1], 0)
            assert work._bucket("a").tokens < 0  # the hand's tenths of a second, charged
            # Another client's analysis is not held up by the refused one.
            found = await analysis(work, workers, "b", "tallage", OPTIONS, SLOW[:14], 0)
            assert found.points_left >= 0
        finally:
            workers.close()

    asyncio.run(main())


def test_a_call_dropped_by_a_stopping_server_logs_no_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A search under way when the server stops: its caller is cancelled (the table's task
    ends), then the workers are killed. The call's failure (BrokenProcessPool) has nobody to
    wait for it; it is dropped quietly, not logged by asyncio at ERROR as "Future exception
    was never retrieved" (which it was, in some stops)."""

    async def main() -> None:
        workers = Workers(1, 30.0, "bot move")
        await workers.run(len, ())  # spawned
        caller = asyncio.create_task(workers.run(time.sleep, 5.0))
        await asyncio.sleep(0.2)  # in its worker
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        workers.close()
        for _ in range(100):  # the pool's thread tells the loop of the killed worker
            await asyncio.sleep(0.02)

    with caplog.at_level(logging.ERROR):
        asyncio.run(main())
        gc.collect()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def _slept(who: str, seconds: float) -> str:
    time.sleep(seconds)
    return who


def test_the_workers_take_the_waiting_calls_of_each_client_in_turn() -> None:
    """Calls that wait for a worker are served a client at a time, in turn: one client's
    many (a server's expert bots at the tables of one address) keep another's waiting for
    one of theirs at most, not for all of them (it waited for every one, some 10 s a move)."""

    async def main() -> list[str]:
        workers = Workers(1, 30.0, "bot move")
        try:
            await workers.run(len, ())  # spawned
            order: list[str] = []

            async def call(who: str) -> None:
                order.append(await workers.run(_slept, who, 0.05, who=who))

            calls = [asyncio.create_task(call("a")) for _ in range(5)]
            await asyncio.sleep(0.01)
            calls += [asyncio.create_task(call("b")), asyncio.create_task(call("c"))]
            await asyncio.sleep(0.01)
            calls.append(asyncio.create_task(call("b")))
            await asyncio.gather(*calls)
            return order
        finally:
            workers.close()

    # The first "a" had the worker; then each client that waits, in the order it came, and
    # again: a, b, c, a, b, a, a, a.
    assert asyncio.run(main()) == ["a", "b", "c", "a", "b", "a", "a", "a"]


def test_a_call_that_stops_waiting_for_a_worker_gives_its_turn_away() -> None:
    """A call cancelled while it waits takes no worker: the next in turn gets it, and the
    workers are all free once every call has ended (none is lost to a cancelled wait)."""

    async def main() -> None:
        workers = Workers(1, 30.0, "bot move")
        try:
            await workers.run(len, ())  # spawned
            first = asyncio.create_task(workers.run(_slept, "a", 0.2, who="a"))
            await asyncio.sleep(0.05)
            gone = asyncio.create_task(workers.run(_slept, "b", 0.0, who="b"))
            kept = asyncio.create_task(workers.run(_slept, "c", 0.0, who="c"))
            await asyncio.sleep(0.01)
            gone.cancel()
            assert await first == "a" and await kept == "c"
            with pytest.raises(asyncio.CancelledError):
                await gone
            # Both slots' worth of calls at once: each runs (one worker: one after the other).
            both = await asyncio.gather(*(workers.run(_slept, w, 0.0, who=w) for w in "de"))
            assert both == ["d", "e"]
        finally:
            workers.close()

    asyncio.run(main())


def test_one_clients_many_expert_tables_hold_up_anothers_by_one_move_each(
    tmp_path: Path,
) -> None:
    """Four tables of expert bots created by one address and one by another, on one worker:
    each of the four gets a move decided in its turn, and the other table in every other
    turn (as many as the four together), where it used to get as many as each of the four."""
    from rami.engine import Options
    from rami.server.entries import AddBot
    from rami.server.lobby import Lobby, LobbyConfig, summarize
    from rami.server.services import _with_start
    from rami.server.storage import SqliteStorage
    from rami.server.table import TableConfig

    async def main() -> list[int]:
        storage = await SqliteStorage.open(str(tmp_path / "rami.db"), summarize)
        config = TableConfig(
            bot_delay=0.0, round_pause=0.0, heartbeat=60.0, bot_workers=1, expert_budget=0.01
        )
        lobby = Lobby(storage, LobbyConfig(table_creations_per_second=0), config)
        try:
            await lobby.thinker.pool.run(len, ())  # spawned
            tables = []
            for who in ("flood",) * 4 + ("other",):
                table, _ = await lobby.create(
                    name="t",
                    variant="portuguese",
                    options=Options(players=2),
                    private=False,
                    hand_analysis=False,
                    decks=[],
                    client=who,
                )
                tables.append(table)
            for table in tables:
                bots = [AddBot(s, f"Expert bot {s + 1}", "expert", None) for s in (0, 1)]
                await table.change(lambda s, b=bots: _with_start(s, b), lambda _: None)
            begun = [t.number for t in tables]
            await asyncio.sleep(4.0)
            return [t.number - b for t, b in zip(tables, begun, strict=True)]
        finally:
            lobby.close()
            await lobby.closing()
            lobby.thinker.close()
            await storage.close()

    *flood, other = asyncio.run(main())
    assert min(flood) > 0, flood
    assert other > 2 * max(flood), (flood, other)


def test_a_client_with_calls_always_waiting_has_its_turn_beside_those_that_come_and_go() -> None:
    """One place; client F keeps two calls waiting (two expert tables), clients A and B have
    one each, whose next call comes a moment after the last ends (a table's next bot move).
    Each client gets about a third: F, which was let in before, is not passed over by every
    client that was let in since but held nothing for a moment (F got 7 to their 89)."""

    async def main() -> dict[str, int]:
        places = TakenInTurn(1)
        served = {"F": 0, "A": 0, "B": 0}
        stop = asyncio.Event()

        async def table(key: str, gap: float) -> None:
            while not stop.is_set():
                await places.acquire(key)
                try:
                    served[key] += 1
                    await asyncio.sleep(0.005)  # the search, in its worker
                finally:
                    places.release(key)
                await asyncio.sleep(gap)  # the move played, the next one asked

        tasks = [asyncio.create_task(table("F", 0.0)) for _ in range(2)]
        await asyncio.sleep(0.02)
        tasks += [asyncio.create_task(table(k, 0.001)) for k in "AB"]
        await asyncio.sleep(1.0)
        stop.set()
        await asyncio.gather(*tasks)
        return served

    served = asyncio.run(main())
    assert served["F"] > 0.6 * min(served["A"], served["B"]), served


def test_a_wait_cancelled_as_its_place_is_given_back_takes_no_place() -> None:
    """A waiting caller cancelled in the same turn of the loop as a place is given back,
    before it is told: the place goes to the next caller, and none is lost or made."""

    async def main() -> None:
        places = TakenInTurn(1)
        await places.acquire("a")
        gone = asyncio.create_task(places.acquire("b"))
        kept = asyncio.create_task(places.acquire("c"))
        await asyncio.sleep(0)
        gone.cancel()
        places.release("a")  # "b" is cancelled, not told yet: passed by, to "c"
        await kept
        with pytest.raises(asyncio.CancelledError):
            await gone
        later = asyncio.create_task(places.acquire("d"))
        await asyncio.sleep(0)
        assert not later.done()  # "c" holds the one place
        places.release("c")
        await later
        places.release("d")
        await asyncio.wait_for(places.acquire("e"), 1)
        assert places._held == {"e": 1} and not places._waiting and places._let_in.keys() == {"e"}

    asyncio.run(main())


def test_an_analysis_asked_of_a_stopping_server_is_refused_unavailable() -> None:
    async def main() -> None:
        work = TimeBudget(share=1.0, burst=1.0)
        workers = Workers(1, 30.0, "hand analysis")
        workers.close()
        with pytest.raises(Unavailable) as refused:
            await analysis(work, workers, "a", "tallage", OPTIONS, SLOW[:14], 0)
        assert refused.value.reason == "SHUTTING_DOWN"

    asyncio.run(main())


def test_a_player_sitting_at_a_table_with_hand_analysis_starts_its_worker(tmp_path: Path) -> None:
    """A worker process takes seconds to start and load the engine: a player's first hint
    would wait for it. A player who sits at a table that offers hand analysis starts it; a
    table without, or a server where nobody sits, starts none (an idle server holds no
    worker)."""
    import time

    from rami.server.testing import ServerThread, Stubs
    from rami.server.thinking import _processes
    from rami.v1 import game_pb2, lobby_service_pb2

    def create(stubs: Stubs, analysis: bool) -> str:
        made = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                variant=game_pb2.VARIANT_SIMPLE,
                options=game_pb2.Options(players=2),
                hand_analysis=analysis,
            ),
            timeout=10,
        )
        return str(made.table.table_id)

    with ServerThread(str(tmp_path / "rami.db")) as server, Stubs(server.target) as stubs:
        assert server.server is not None
        analysts = server.server.lobby.analysts
        plain = create(stubs, False)
        stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=plain, name="Ana"), timeout=10
        )
        time.sleep(0.3)
        assert analysts._pool is None
        helped = create(stubs, True)
        stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=helped, name="Bo"), timeout=10
        )
        end = time.monotonic() + 20
        while time.monotonic() < end:
            pool = analysts._pool
            if pool is not None and any(p.is_alive() for p in _processes(pool)):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("no analysis worker started")


def test_the_workers_of_a_server_killed_outright_end_with_it(tmp_path: Path) -> None:
    # A server killed with SIGKILL never shuts its pools down: its worker processes end by
    # themselves once it is gone, instead of waiting for calls for ever.
    import os
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import asyncio, sys\n"
        "from rami.server.thinking import Workers\n"
        "async def main():\n"
        "    w = Workers(1, 30.0, 'hand analysis')\n"
        "    w.warm()\n"
        "    for _ in range(600):\n"
        "        if w.pids():\n"
        "            break\n"
        "        await asyncio.sleep(0.05)\n"
        "    print(*w.pids(), flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "asyncio.run(main())\n"
    )
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        pids = [int(p) for p in server.stdout.readline().split()]
        assert len(pids) == 1
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/status") as f:
                return not any(line.split()[1:2] == ["Z"] for line in f if line.startswith("State"))
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 15
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if alive(p)]
    for p in left:  # (not to leave them behind when this fails)
        os.kill(p, signal.SIGKILL)
    assert not left, f"workers {left} outlived their server"
