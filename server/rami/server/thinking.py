"""Built-in bots' moves that are searched for, decided off the event loop.

A built-in bot's move is a change of its table like any other, made by the table's task
(``table.py``). The quick policies (``random``, ``greedy``, ``strong``) decide in a few
milliseconds at most, on the event loop. ``expert`` searches for its budget (half a second by
default) at every move: on the loop, that would hold up every table of the server. Its moves are
decided here instead, in worker processes of their own, while the tables go on:

1. the table's task reads the seat's view between two changes (a state that is stored);
2. a worker decides, from the view and the seed of the choice alone (``dealing.bot_seed``),
   so the move is the one the policy makes anywhere for that view and seed;
3. the move goes through the table's pipeline as any bot's move, and is played only if the
   game has not moved on meanwhile (a chat or a join does not move it).

Workers are spawned (not forked: a forked gRPC process is not safe) when the first move is
asked, at most ``workers`` at once; the moves of every table wait their turn for one. A worker
that dies is replaced, and the move it was deciding is played by the safe move instead.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import random
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from rami.engine import POLICIES, Action, View
from rami.engine.policies import make_expert

__all__ = ["OFF_LOOP", "Thinker", "decide"]

log = logging.getLogger("rami.server")

#: The policies whose moves are decided in worker processes.
OFF_LOOP = frozenset({"expert"})


def decide(policy: str, budget: float, v: View, seed: bytes) -> Action:
    """The move ``policy`` makes for view ``v`` with the random source seeded by ``seed``
    (``budget``: the expert's seconds per move). Runs in a worker process."""
    choose = make_expert(budget) if policy == "expert" else POLICIES[policy]
    return choose(v, random.Random(seed))


class Thinker:
    """Worker processes that decide the searched-for moves of every table of a server."""

    def __init__(self, workers: int, budget: float) -> None:
        if workers < 1:
            raise ValueError(f"bot workers: at least 1, not {workers}")
        self.workers = workers
        #: The expert's budget per move, in seconds (``policies.EXPERT_BUDGET`` by default).
        self.budget = budget
        #: Moves decided so far (a figure for tests and operators).
        self.decided = 0
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("spawn")
            )
        return self._pool

    async def decide(self, policy: str, v: View, seed: bytes) -> Action:
        """The move, decided in a worker. Raises ``BrokenProcessPool`` when the worker died
        (the next move gets a new one) and ``RuntimeError`` once the thinker is closed."""
        if self._closed:
            raise RuntimeError("the server is stopping")
        pool = self._executor()
        loop = asyncio.get_running_loop()
        try:
            action = await loop.run_in_executor(pool, decide, policy, self.budget, v, seed)
        except BrokenProcessPool:
            if self._pool is pool:
                self._pool = None
                pool.shutdown(wait=False, cancel_futures=True)
            log.error("a bot worker process died: a new one takes the next move")
            raise
        self.decided += 1
        return action

    def pids(self) -> list[int]:
        """The process ids of the workers running now."""
        if self._pool is None:
            return []
        processes = getattr(self._pool, "_processes", None) or {}
        return [p.pid for p in processes.values() if p.is_alive() and p.pid is not None]

    def close(self) -> None:
        """Stop the workers at once: a move under way is dropped (nothing waits for it any
        more), so a stopping server does not wait out a search."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
