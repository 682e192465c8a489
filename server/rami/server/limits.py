"""Limits on what one client may do: commands per second, open streams, server time."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from .errors import Exhausted

__all__ = ["RateLimiter", "StreamCounter", "TimeBudget"]


def _millis(seconds: float) -> str:
    """Seconds as the whole milliseconds of a refusal's ``retry_after_ms`` (at least 1)."""
    return str(max(1, math.ceil(seconds * 1000)))


@dataclass
class _Bucket:
    tokens: float
    stamp: float


@dataclass
class RateLimiter:
    """A token bucket per key: ``rate`` commands per second, bursts of up to ``burst``."""

    rate: float
    burst: float
    what: str = "commands"
    _buckets: dict[str, _Bucket] = field(default_factory=dict)

    def take(self, key: str) -> None:
        """Spend one token of ``key``'s bucket, or refuse with RESOURCE_EXHAUSTED."""
        now = time.monotonic()
        b = self._buckets.get(key)
        if b is None:
            if len(self._buckets) > 100_000:
                self._forget(now)
            b = self._buckets[key] = _Bucket(self.burst, now)
        b.tokens = min(self.burst, b.tokens + (now - b.stamp) * self.rate)
        b.stamp = now
        if b.tokens < 1.0:
            raise Exhausted(
                "RATE_LIMITED",
                f"too many {self.what}: at most {self.rate:g} per second; slow down",
                retry_after_ms=_millis((1.0 - b.tokens) / self.rate),
            )
        b.tokens -= 1.0

    def _forget(self, now: float) -> None:
        # Full buckets carry no information: drop them.
        full = [
            k
            for k, b in self._buckets.items()
            if b.tokens + (now - b.stamp) * self.rate >= self.burst
        ]
        for k in full:
            del self._buckets[k]


def client_address(context: Any) -> str:
    """The client's address without its port (of a ``grpc.aio.ServicerContext``): limits
    are per client host."""
    peer = context.peer() or ""
    return str(peer.rsplit(":", 1)[0] if ":" in peer else peer)


@dataclass
class KeyedLock:
    """One holder at a time per key; a key's lock is kept only while it is held or awaited."""

    _locks: dict[str, tuple[asyncio.Lock, list[int]]] = field(default_factory=dict)

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold ``key``'s lock while the block runs (waiting for it first)."""
        lock, users = self._locks.get(key) or self._locks.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._locks[key]


@dataclass
class StreamCounter:
    """Open streams per key, at most ``limit`` each."""

    limit: int
    what: str = "watch streams"
    _open: dict[str, int] = field(default_factory=dict)

    def open(self, key: str, take_over: bool = False) -> None:
        """Count one more stream for ``key``, or refuse with RESOURCE_EXHAUSTED. A stream
        that takes the key's others over ends them: it is refused only past twice the limit
        (those it ends count until they have ended, which a stream whose client does not
        read may put off)."""
        n = self._open.get(key, 0)
        if n >= (2 * self.limit if take_over else self.limit):
            raise Exhausted("TOO_MANY_STREAMS", f"at most {self.limit} {self.what} at once")
        self._open[key] = n + 1

    def close(self, key: str) -> None:
        """One stream of ``key`` ended."""
        n = self._open.get(key, 0) - 1
        if n <= 0:
            self._open.pop(key, None)
        else:
            self._open[key] = n


@dataclass
class TimeBudget:
    """Server time per key, for calls whose cost depends on what the client sends (the solver
    on any hand, a long game's record, a replay from far back): ``share`` of every second,
    saved up to ``burst`` seconds. A call is refused while the key's budget is spent; what it
    takes is measured and charged when it ends (or, for work done in slices, after each
    slice). The event loop serves every table: no client may keep it busy."""

    share: float
    burst: float
    what: str = "solver and record time"
    _buckets: dict[str, _Bucket] = field(default_factory=dict)
    #: Per key, the turn of work done off the event loop (see :meth:`turn`) and its waiters.
    _turns: KeyedLock = field(default_factory=KeyedLock)

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        """One at a time per ``key``: for work done off the event loop, checked when its turn
        comes and charged when it ends, so that a key's calls sent at once are each checked
        against what the ones before them were charged (as calls done on the loop are)."""
        async with self._turns.hold(key):
            yield

    def _bucket(self, key: str) -> _Bucket:
        """``key``'s bucket, refilled to now."""
        now = time.monotonic()
        b = self._buckets.get(key)
        if b is None:
            if len(self._buckets) > 100_000:
                full = [k for k, x in self._buckets.items() if x.tokens >= self.burst]
                for k in full:
                    del self._buckets[k]
            b = self._buckets[key] = _Bucket(self.burst, now)
        b.tokens = min(self.burst, b.tokens + (now - b.stamp) * self.share)
        b.stamp = now
        return b

    def check(self, key: str) -> None:
        """Refuse with RESOURCE_EXHAUSTED while ``key``'s budget is spent."""
        tokens = self._bucket(key).tokens
        if tokens <= 0:
            raise Exhausted(
                "RATE_LIMITED",
                f"too much {self.what}: at most {self.share:.0%} of the server's time; slow down",
                retry_after_ms=_millis(-tokens / self.share if self.share > 0 else 1.0),
            )

    def let_in(self, key: str, cost: float) -> None:
        """Let a call of ``key`` in, or refuse it (:meth:`check`), and charge it ``cost``
        seconds for its own handling at once, before any of its work is measured: calls sent
        at once each meet what the ones before them were charged."""
        self.check(key)
        self.charge(key, cost)

    def charge(self, key: str, seconds: float) -> float:
        """Charge ``seconds`` of work to ``key``; returns the seconds until its budget is no
        longer spent (0 when it is not)."""
        b = self._bucket(key)
        b.tokens -= seconds
        return max(0.0, -b.tokens / self.share) if self.share > 0 else 0.0

    @contextmanager
    def spend(self, key: str, checked: bool = False) -> Iterator[None]:
        """Run the block on ``key``'s budget, or refuse with RESOURCE_EXHAUSTED (``checked``:
        the call was let in already, and the block is its own work: it is charged, never
        refused halfway)."""
        if not checked:
            self.check(key)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.charge(key, time.perf_counter() - start)
