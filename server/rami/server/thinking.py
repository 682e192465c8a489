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
asked; at most ``workers`` moves are in their hands at once, the others (of every table) wait
their turn, the tables of one creating address taking turns with every other address's. A
worker that dies is replaced, and the moves they were deciding are played by the safe move
instead; so is a move still not decided after a long time (:attr:`Thinker.timeout`: a search
is a fixed count of simulations, so that is a worker that hangs).

Hand analyses (``AnalyseHand``, ``AnalyseMyHand``) are run the same way, in a pool of their
own (:class:`Workers`): the solver takes tenths of a second over some 20-card hands.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from rami.engine import POLICIES, Action, Card, Options, View
from rami.engine.analysis import Analysis, analyse
from rami.engine.policies import make_expert
from rami.engine.variants import get_variant

if TYPE_CHECKING:
    import multiprocessing.process
    from concurrent.futures import ProcessPoolExecutor

# ``concurrent.futures.process`` and ``multiprocessing`` are imported with the first pool: a
# server that seats no expert never loads them (two thirds of a megabyte).

__all__ = ["OFF_LOOP", "Thinker", "Workers", "analysed", "decide"]

T = TypeVar("T")

log = logging.getLogger("rami.server")

#: The policies whose moves are decided in worker processes.
OFF_LOOP = frozenset({"expert"})


def decide(policy: str, budget: float, v: View, seed: bytes) -> Action:
    """The move ``policy`` makes for view ``v`` with the random source seeded by ``seed``
    (``budget``: the expert's seconds per move). Runs in a worker process."""
    choose = make_expert(budget) if policy == "expert" else POLICIES[policy]
    return choose(v, random.Random(seed))


def ready() -> None:
    """Nothing: the call that starts a worker before it is needed (:meth:`Workers.warm`)."""


#: How often a worker looks whether the server that started it is still there (seconds).
PARENT_CHECK = 1.0


def _follow_parent(parent: int) -> None:
    """In a worker, as it starts: end it once the server that started it is gone. A server
    killed outright (SIGKILL, the OOM killer) never shuts its pools down, and its workers,
    which hold their call queue's both ends, would wait for calls for ever (some 40 MB
    each, and more at every restart)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK)
        os._exit(0)

    threading.Thread(target=watch, name="rami-follow-parent", daemon=True).start()


def analysed(
    variant: str, options: Options, hand: tuple[Card, ...], bar: int
) -> tuple[Analysis, float]:
    """What the solver says of ``hand`` (``rami.engine.analysis.analyse``), and the seconds it
    took. Runs in a worker process: a hand the solver takes long over (20 cards, 4 jokers)
    holds up no table."""
    started = time.perf_counter()
    found = analyse(get_variant(variant), options, hand, bar)
    return found, time.perf_counter() - started


def _processes(pool: ProcessPoolExecutor) -> list[multiprocessing.process.BaseProcess]:
    """The pool's worker processes (its own record of them: the executor has no public one)."""
    return list((getattr(pool, "_processes", None) or {}).values())


def _outcome_taken(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class TakenInTurn:
    """At most ``size`` holders at once; the callers that wait are let in a key (a client) at
    a time, in turn: the key that was let in longest ago first (one never let in before the
    others, then the first to wait), its oldest caller. One client with many calls waiting
    (the expert bots of all its tables) holds another's up by one of its calls, not by all of
    them; and a client whose calls come one at a time (one table) is not put first each time
    it comes back: when it was let in last is kept while it holds nothing."""

    def __init__(self, size: int) -> None:
        self._free = size
        #: The waiting callers by key, the keys in the order they began to wait.
        self._waiting: dict[str, collections.deque[asyncio.Future[None]]] = {}
        #: The places each key holds.
        self._held: dict[str, int] = {}
        #: When each key was last let in (a count of lets-in). A key that neither holds nor
        #: waits is forgotten once it was let in before every key that does: it would be let
        #: in before them all the same, as one never let in is.
        self._let_in: dict[str, int] = {}
        self._count = 0

    def _take(self, key: str) -> None:
        self._held[key] = self._held.get(key, 0) + 1
        self._let_in[key] = self._count
        self._count += 1

    async def acquire(self, key: str) -> None:
        """Wait for a place (a wait may be cancelled: then no place is taken)."""
        if self._free > 0 and not self._waiting:
            self._free -= 1
            self._take(key)
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, collections.deque()).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.release(key)  # let in just as the wait was given up: passed on
            else:
                line = self._waiting.get(key)
                if line is not None and turn in line:  # (a release may have passed it by)
                    line.remove(turn)
                    if not line:
                        del self._waiting[key]
                self._forget(key)
            raise

    def _forget(self, key: str) -> None:
        """``key`` may hold nothing and wait for nothing now: forget the keys that are so and
        were let in before every key that holds or waits (see :attr:`_let_in`)."""
        if key in self._held or key in self._waiting:
            return
        active = [self._let_in[k] for k in (*self._held, *self._waiting) if k in self._let_in]
        oldest = min(active, default=self._count)
        for k in [
            k
            for k, at in self._let_in.items()
            if at < oldest and k not in self._held and k not in self._waiting
        ]:
            del self._let_in[k]

    def release(self, key: str) -> None:
        """Give back a place ``key`` held: to the caller whose turn it is, if any waits."""
        held = self._held[key] - 1
        if held:
            self._held[key] = held
        else:
            del self._held[key]
            self._forget(key)
        while self._waiting:
            nxt = min(self._waiting, key=lambda k: self._let_in.get(k, -1))
            line = self._waiting[nxt]
            turn = line.popleft()
            if not line:
                del self._waiting[nxt]
            if turn.done():  # cancelled, its caller not yet told: passed by
                self._forget(nxt)
                continue
            self._take(nxt)
            turn.set_result(None)
            return
        self._free += 1


class Workers:
    """Worker processes for CPU-bound calls that must not hold up the event loop: at most
    ``workers`` calls are in their hands at once, the others wait their turn, each client's in
    turn (:class:`TakenInTurn`). Spawned with the first call, or before it by :meth:`warm`; a
    worker that dies is replaced (the calls it held fail with ``BrokenProcessPool``), and so
    are the workers when a call runs past ``timeout``."""

    def __init__(self, workers: int, timeout: float, what: str) -> None:
        if workers < 1:
            raise ValueError(f"{what} workers: at least 1, not {workers}")
        self.workers = workers
        #: Seconds a call may take in its worker before the workers are replaced.
        self.timeout = timeout
        #: What the calls are, for the log ("bot move", "hand analysis or record").
        self.what = what
        self._pool: ProcessPoolExecutor | None = None
        #: At most ``workers`` calls are in the pool at once; the others wait here, each
        #: client's in turn.
        self._slots = TakenInTurn(workers)
        self._closed = False

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_follow_parent,
                initargs=(os.getpid(),),
            )
        return self._pool

    def warm(self) -> None:
        """Start the workers now, with a call nobody waits for: a worker takes seconds to
        start and load the engine, which the first call would wait for (a player's first
        hint). Nothing when they run already, or once closed."""
        if self._closed or self._pool is not None:
            return
        try:
            self._executor().submit(ready)
        except Exception as e:  # no worker now (a limit of processes, say): the call starts one
            log.warning("%s worker could not be started ahead: %s", self.what, e)

    def _replace(self, pool: ProcessPoolExecutor, kill: bool) -> None:
        """Drop ``pool`` (the next call starts a new one); ``kill``: end its workers now (the
        calls they were running fail with ``BrokenProcessPool``)."""
        if self._pool is pool:
            self._pool = None
        processes = _processes(pool)
        # Never cancel_futures: the pool fails every call it holds when a worker dies, and
        # fails itself on one that was cancelled (calls are not cancelled here: see run).
        pool.shutdown(wait=False)
        if kill:
            for process in processes:
                if process.is_alive():
                    process.terminate()

    async def run(
        self, fn: Callable[..., T], *args: Any, timeout: float | None = None, who: str = ""
    ) -> T:
        """``fn(*args)``, run in a worker (``fn`` and its arguments and result pickle). Raises
        ``BrokenProcessPool`` when a worker died while the call was in the pool (the next
        call gets new ones), ``TimeoutError`` after ``timeout`` (by default :attr:`timeout`;
        the workers are replaced), ``RuntimeError`` once closed; what ``fn`` raises, as it
        raised it. ``who``: the client the call is for; calls waiting for a worker are taken
        a client at a time, in turn (:class:`TakenInTurn`)."""
        limit = self.timeout if timeout is None else timeout
        from concurrent.futures.process import BrokenProcessPool

        if self._closed:
            raise RuntimeError("the server is stopping")
        loop = asyncio.get_running_loop()
        await self._slots.acquire(who)  # a wait here may be cancelled: nothing is in the pool
        try:
            if self._closed:
                raise RuntimeError("the server is stopping")
            pool = self._executor()
            future = pool.submit(fn, *args)
        except BrokenProcessPool:
            self._slots.release(who)
            self._replace(pool, kill=True)
            raise
        except BaseException:
            self._slots.release(who)
            raise

        def done(_: object) -> None:  # in the pool's thread: the slot is free once it ends
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(self._slots.release, who)

        future.add_done_callback(done)
        waited = asyncio.wrap_future(future)
        # A caller that went leaves its outcome to nobody (a worker killed as the server
        # stops fails it): taken here, not logged by asyncio as never retrieved.
        waited.add_done_callback(_outcome_taken)
        try:
            # Shielded: a call in the pool is never cancelled (a caller that goes stops
            # waiting for it, and it ends in its worker as it would have).
            result: T = await asyncio.wait_for(asyncio.shield(waited), limit)
        except BrokenProcessPool:
            self._replace(pool, kill=True)
            log.error("a %s worker process died: new ones take the next calls", self.what)
            raise
        except TimeoutError:
            self._replace(pool, kill=True)
            log.error(
                "a %s took over %g s in its worker: the workers are replaced",
                self.what,
                limit,
            )
            raise
        return result

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called: calls are refused from then on."""
        return self._closed

    def pids(self) -> list[int]:
        """The process ids of the workers running now."""
        if self._pool is None:
            return []
        return [p.pid for p in _processes(self._pool) if p.is_alive() and p.pid is not None]

    def close(self) -> None:
        """Stop the workers at once: a call under way is dropped (nothing waits for it any
        more), so a stopping server does not wait out a search."""
        self._closed = True
        if self._pool is not None:
            self._replace(self._pool, kill=True)


class Thinker:
    """Worker processes that decide the searched-for moves of every table of a server."""

    def __init__(self, workers: int, budget: float) -> None:
        #: The expert's budget per move, in seconds (``policies.EXPERT_BUDGET`` by default).
        self.budget = budget
        #: Seconds a move may take in its worker before the workers are replaced and the move
        #: is played by the safe move (a search is a fixed count of simulations: this only
        #: catches a worker that hangs).
        self.pool = Workers(workers, max(30.0, 20 * budget), "bot move")
        #: Moves decided so far (a figure for tests and operators).
        self.decided = 0

    async def decide(self, policy: str, v: View, seed: bytes, who: str = "") -> Action:
        """The move, decided in a worker. Raises ``BrokenProcessPool`` when a worker died
        while it was in the pool (the next move gets new ones), ``TimeoutError`` after
        :attr:`timeout` (the workers are replaced), ``RuntimeError`` once the thinker is closed.
        ``who``: the client whose table it is (the address that created it): the moves
        waiting for a worker are taken a client at a time, in turn, so that one client's many
        expert bots do not hold up everyone else's."""
        action = await self.pool.run(decide, policy, self.budget, v, seed, who=who)
        self.decided += 1
        return action

    def pids(self) -> list[int]:
        """The process ids of the workers running now."""
        return self.pool.pids()

    def close(self) -> None:
        """Stop the workers at once: a move under way is dropped (nothing waits for it any
        more), so a stopping server does not wait out a search."""
        self.pool.close()
