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
from rami.server.thinking import Workers

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
