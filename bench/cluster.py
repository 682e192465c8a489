"""``python -m bench.cluster``: several rami-server processes on one PostgreSQL.

Two measures, each bounded by count and by time:

- **throughput**: one server on its embedded SQLite, then 1, 2 and 3 servers on one
  database, ``--tables`` tables of two remote bots (the bot kit, in this process, given every
  server's address) placed round-robin on the servers, for ``--seconds``: the commands the
  bots had acknowledged per second, the servers' CPU time per command (user + system, from
  /proc: what a bigger machine scales; on a small one the bots, the servers and PostgreSQL
  share the cores), and each command's latency to the other seat's watcher (p50, p99);
- **takeover**: two servers, a table of built-in bots on the first, which is SIGKILLed: the
  time until the other server has claimed the table (its lease row names it) and until the
  game has moved on there (a new entry stored), ``--kills`` times (a new server replaces the
  dead one each time); median and max.

PostgreSQL is the one ``--postgres URL`` names (a database of its own per run is made on it),
or a throwaway server started from Debian's ``postgresql`` binaries as the tests start it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SERVER = Path(sys.executable).with_name("rami-server")
LISTENING = "rami-server listening on "
TICK = os.sysconf("SC_CLK_TCK")


class Servers:
    """rami-server processes on 127.0.0.1, one database, one key file."""

    def __init__(self, url: str, key: Path, lease: float, log: Path) -> None:
        self.url, self.key, self.lease, self.log = url, key, lease, log
        self.procs: list[tuple[subprocess.Popen[str], str]] = []

    def start(self) -> tuple[subprocess.Popen[str], str]:
        with self.log.open("a") as err:
            proc = subprocess.Popen(
                [
                    str(SERVER),
                    "--port",
                    "0",
                    "--db",
                    self.url,
                    "--secret-file",
                    str(self.key),
                    "--lease-seconds",
                    str(self.lease),
                    "--log-level",
                    "warning",
                    "--max-tables-per-client",
                    "1000",
                    "--table-creations-per-second",
                    "0",
                ],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
            )
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        line = ""
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while LISTENING not in line:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left) or proc.poll() is not None:
                    proc.kill()
                    raise SystemExit(f"rami-server did not start: {self.log.read_text()[-2000:]}")
                line = proc.stdout.readline()
        address = line.split(LISTENING, 1)[1].split()[0]
        self.procs.append((proc, address))
        return proc, address

    def stop(self) -> None:
        for proc, _ in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
        self.procs.clear()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def create(address: str, rounds: int, bots: int = 0) -> str:
    import grpc

    from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc

    async with grpc.aio.insecure_channel(address) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        created = await lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="bench",
                variant=game_pb2.VARIANT_PORTUGUESE,
                options=game_pb2.Options(players=2, rounds=rounds),
            ),
            timeout=10,
        )
        for _ in range(bots):
            await lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=created.table.table_id, policy="greedy"),
                metadata=(("rami-token", created.owner_token),),
                timeout=10,
            )
        return str(created.table.table_id)


async def throughput(servers: Servers, n: int, tables: int, seconds: float) -> dict[str, Any]:
    from rami.client.botkit import play, policy_decider

    addresses = [servers.start()[1] for _ in range(n)]
    home = "ipv4:" + ",".join(addresses)
    ids = [await create(addresses[i % n], rounds=50) for i in range(tables)]
    before = [cpu_seconds(p.pid) for p, _ in servers.procs]
    results: list[Any] = []
    #: Per table, each decision's (time, seat, round, number): the view a seat decides on is
    #: the update the other seat's command became.
    decided: dict[str, list[tuple[float, int, int, int]]] = {t: [] for t in ids}

    async def bot(table_id: str, seat: int) -> None:
        policy = policy_decider("greedy", seat)

        def decide(v: Any) -> Any:
            decided[table_id].append((time.perf_counter(), seat, v.round, v.number))
            return policy(v)

        results.append(await play(home, table_id, decide, name=f"B{seat}"))

    tasks = [asyncio.ensure_future(bot(t, s)) for t in ids for s in range(2)]
    started = time.perf_counter()
    done, pending = await asyncio.wait(tasks, timeout=seconds)
    elapsed = time.perf_counter() - started
    after = [cpu_seconds(p.pid) for p, _ in servers.procs]
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    servers.stop()
    # The commands the servers stored for the bots in the time measured: read from the logs.
    commands = await stored_commands(servers.url, ids)
    cpu = sum(a - b for a, b in zip(after, before, strict=True))
    # A command's latency to the other watcher: from one seat's decision to the next seat's,
    # at the next update, in the same round (the other seat's decision time, well under a
    # millisecond for greedy, included).
    waits = sorted(
        1000 * (b[0] - a[0])
        for calls in decided.values()
        for a, b in itertools.pairwise(calls)
        if a[1] != b[1] and a[2] == b[2] and b[3] == a[3] + 1
    )

    def pct(q: float) -> float:
        return waits[min(len(waits) - 1, int(q * len(waits)))] if waits else float("nan")

    return {
        "servers": n,
        "commands": commands,
        "per_second": commands / elapsed,
        "cpu_ms_per_command": 1000 * cpu / max(commands, 1),
        "p50_ms": pct(0.5),
        "p99_ms": pct(0.99),
        "finished": len(done),
    }


async def stored_commands(url: str, ids: list[str]) -> int:
    if not url.startswith(("postgresql://", "postgres://")):  # one server on SQLite
        import sqlite3

        with sqlite3.connect(url) as db:
            marks = ",".join("?" * len(ids))
            (n,) = db.execute(
                f"SELECT count(*) FROM entries WHERE table_id IN ({marks})"
                " AND json_extract(entry, '$.type') = 'act'",
                ids,
            ).fetchone()
        return int(n)
    import psycopg

    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM rami_entries WHERE table_id = ANY(%s)"
            " AND entry::jsonb ->> 'type' = 'act'",
            (ids,),
        )
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def lease_of(url: str, table_id: str) -> tuple[str, int]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT l.address, t.number FROM rami_leases l JOIN rami_tables t USING (table_id)"
            " WHERE table_id = %s",
            (table_id,),
        )
        row = await cur.fetchone()
    assert row is not None
    return str(row[0]), int(row[1])


async def takeover(servers: Servers, kills: int) -> list[tuple[float, float]]:
    """(claimed, moved on) seconds after each SIGKILL."""
    times = []
    servers.start()
    for _ in range(kills):
        proc, owner = servers.start()
        table_id = await create(owner, rounds=20, bots=2)
        end = time.monotonic() + 20
        while (await lease_of(servers.url, table_id))[1] < 4 and time.monotonic() < end:
            await asyncio.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        _, number = await lease_of(servers.url, table_id)
        claimed = moved = None
        while moved is None and time.monotonic() - killed < 4 * servers.lease + 10:
            address, now = await lease_of(servers.url, table_id)
            if claimed is None and address != owner:
                claimed = time.monotonic() - killed
            if claimed is not None and now > number:
                moved = time.monotonic() - killed
            await asyncio.sleep(0.02)
        if claimed is None or moved is None:
            raise SystemExit("a table was not taken over in time")
        times.append((claimed, moved))
        servers.procs = [(p, a) for p, a in servers.procs if p.poll() is None]
    servers.stop()
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", default="", help="a libpq URL (default: a throwaway)")
    parser.add_argument("--seconds", type=float, default=10.0, help="bound of each run")
    parser.add_argument("--tables", type=int, default=12, help="tables of two remote bots")
    parser.add_argument("--lease", type=float, default=2.0, help="--lease-seconds")
    parser.add_argument("--kills", type=int, default=5, help="SIGKILLs for the takeover time")
    args = parser.parse_args(argv)
    if not (0 < args.seconds <= 120 and 0 < args.tables <= 200 and 0 < args.kills <= 20):
        raise SystemExit("--seconds 0 to 120, --tables 1 to 200, --kills 1 to 20")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))
    from postgres_support import PostgresServer, unavailable

    pg = None
    if not args.postgres:
        why = unavailable()
        if why is not None:
            raise SystemExit(f"no PostgreSQL: {why}")
        pg = PostgresServer().start()

    def database() -> str:
        if pg is not None:
            return pg.database()
        import psycopg

        name = f"bench_{os.getpid()}_{time.monotonic_ns()}"
        with psycopg.connect(args.postgres, autocommit=True) as conn:
            try:
                conn.execute(f'CREATE DATABASE "{name}"')
            except psycopg.errors.InsufficientPrivilege:
                raise SystemExit(
                    "--postgres: each run makes a database of its own there, and this role may"
                    " not create one: name a role that may (CREATEDB), or leave --postgres out"
                    " for a throwaway PostgreSQL"
                ) from None
        return args.postgres.rsplit("/", 1)[0] + "/" + name

    try:
        with tempfile.TemporaryDirectory() as tmp:
            key, log = Path(tmp) / "key", Path(tmp) / "servers.log"
            rows = []
            # One server on its embedded SQLite first, the same load: the price of PostgreSQL.
            servers = Servers(str(Path(tmp) / "one.db"), key, args.lease, log)
            try:
                rows.append(asyncio.run(throughput(servers, 1, args.tables, args.seconds)))
                rows[-1]["servers"] = "1 (SQLite)"
            finally:
                servers.stop()
            for n in (1, 2, 3):
                servers = Servers(database(), key, args.lease, log)
                try:
                    rows.append(asyncio.run(throughput(servers, n, args.tables, args.seconds)))
                finally:
                    servers.stop()
            servers = Servers(database(), key, args.lease, log)
            try:
                times = asyncio.run(takeover(servers, args.kills))
            finally:
                servers.stop()
    finally:
        if pg is not None:
            pg.stop()
    print(f"{args.tables} tables of 2 remote bots, {args.seconds:g} s, lease {args.lease:g} s")
    print(
        f"{'servers':>10} {'commands':>9} {'per s':>8} {'server CPU ms/command':>22}"
        f" {'p50 ms':>8} {'p99 ms':>8}"
    )
    for r in rows:
        print(
            f"{r['servers']:>10} {r['commands']:>9} {r['per_second']:>8.0f}"
            f" {r['cpu_ms_per_command']:>22.2f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f}"
        )
    claimed = [c for c, _ in times]
    moved = [m for _, m in times]
    print(f"takeover after SIGKILL ({len(times)} kills, lease {args.lease:g} s):")
    print(f"  claimed   median {statistics.median(claimed):.2f} s, max {max(claimed):.2f} s")
    print(f"  moved on  median {statistics.median(moved):.2f} s, max {max(moved):.2f} s")


if __name__ == "__main__":
    main()
