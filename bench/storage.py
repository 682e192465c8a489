"""``python -m bench.storage``: the latency of a durable append, SQLite against PostgreSQL.

Two runs per backend, each bounded by count and by time: one table appending one entry at a
time (the latency of a commit alone), and 64 tables appending at once, each as soon as its
previous append was acknowledged (the group commit: the appends of a tick share a
transaction). Prints p50 and p99 of the time from ``append`` to its acknowledgement, the
appends per second, and the commits (transactions) they took.

PostgreSQL is the one ``--postgres URL`` names, or else a throwaway server started from
Debian's ``postgresql`` binaries as the tests start it (fsync on, synchronous_commit on),
on the same machine: a round trip over loopback, no network.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rami.server.lobby import summarize
from rami.server.storage import Append, SqliteStorage

SEATS = [{"name": "", "kind": "empty", "policy": "", "away": False}] * 2
SPEC = {"name": "b", "variant": "tallage", "options": {"players": 2}, "client": "bench"}
ENTRY = {"type": "act", "seat": 0, "action": {"kind": "draw", "source": "stock"}}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def one_run(storage: Any, tables: int, appends: int, seconds: float) -> dict[str, Any]:
    ids = [f"bench-{tables}-{i}-{time.monotonic_ns()}" for i in range(tables)]
    for table_id in ids:
        await storage.create_table(table_id, SPEC, SEATS, "")
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    commits = storage.commits

    async def writer(table_id: str) -> None:
        n = 0
        while n < appends and time.perf_counter() < deadline:
            n += 1
            started = time.perf_counter()
            await storage.append(Append(table_id, n, [ENTRY], "playing", None, None))
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*[writer(t) for t in ids])
    elapsed = time.perf_counter() - started
    return {
        "appends": len(latencies),
        "per_second": len(latencies) / elapsed,
        "p50_ms": 1000 * pct(latencies, 0.50),
        "p99_ms": 1000 * pct(latencies, 0.99),
        "mean_ms": 1000 * statistics.fmean(latencies),
        "commits": storage.commits - commits,
    }


async def measure(kind: str, db: str, seconds: float) -> list[tuple[str, dict[str, Any]]]:
    if kind == "sqlite":
        storage: Any = await SqliteStorage.open(db, summarize)
    else:
        from rami.server.storage_postgres import PostgresStorage

        storage = await PostgresStorage.open(db, summarize)
    try:
        await one_run(storage, 1, 50, seconds)  # warm up: connections, prepared statements
        alone = await one_run(storage, 1, 2000, seconds)
        together = await one_run(storage, 64, 200, seconds)
    finally:
        await storage.close()
    return [(f"{kind}, 1 table", alone), (f"{kind}, 64 tables at once", together)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", default="", help="a libpq URL (default: a throwaway)")
    parser.add_argument("--seconds", type=float, default=10.0, help="bound of each run")
    args = parser.parse_args(argv)
    server = None
    url = args.postgres
    if not url:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))
        from postgres_support import PostgresServer, unavailable

        why = unavailable()
        if why is not None:
            raise SystemExit(f"no PostgreSQL: {why}")
        server = PostgresServer().start()
        url = server.database()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rows = asyncio.run(measure("sqlite", str(Path(tmp) / "bench.db"), args.seconds))
        rows += asyncio.run(measure("postgres", url, args.seconds))
    finally:
        if server is not None:
            server.stop()
    print(f"{'run':<30} {'appends':>8} {'per s':>8} {'p50 ms':>8} {'p99 ms':>8} {'commits':>8}")
    for name, r in rows:
        print(
            f"{name:<30} {r['appends']:>8} {r['per_second']:>8.0f} {r['p50_ms']:>8.2f}"
            f" {r['p99_ms']:>8.2f} {r['commits']:>8}"
        )


if __name__ == "__main__":
    main()
