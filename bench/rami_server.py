"""The Rami server as the bench runs it: a process of its own, on 127.0.0.1, any free port.

``rami.server.app.serve`` with the production code paths and two bench settings: built-in
moves (bots, the next deal) happen at once, and the per-seat command rate limit is lifted,
since the load bots play as fast as the server answers. Everything else (storage in a SQLite
file in WAL mode, a stored entry before every acknowledgement, fan-out to every watcher) is
what ``rami-server`` does::

    python -m bench.rami_server --db /tmp/bench.db      # prints "port N" once listening

The process stops when its standard input closes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from rami.server.app import serve

try:
    from rami.server.app import LOOPS, run_loop
except ImportError:  # a baseline from before the choice of loops: asyncio's
    LOOPS = ("asyncio",)

    def run_loop(main: Any, loop: str = "asyncio") -> Any:
        return asyncio.run(main)


from rami.server.lobby import LobbyConfig
from rami.server.table import TableConfig

try:
    from rami.server.connections import ConnectionLimits

    #: The bench's clients, thousands of connections, all come from 127.0.0.1; and the
    #: scaling load creates its 1,000 tables at once over one connection (beyond the calls
    #: one connection may have open, its first calls were refused: RST_STREAM, REFUSED_STREAM).
    BENCH_CONNECTIONS: dict[str, Any] = {
        "connections": ConnectionLimits(per_address=0, streams_per_connection=0)
    }
except ImportError:  # a baseline from before the bounds on connections
    BENCH_CONNECTIONS = {}

__all__ = ["BENCH_LOBBY", "BENCH_TABLES"]

BENCH_TABLES = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=15.0)
_LIFTED: dict[str, Any] = {
    "max_tables_per_client": 1_000_000,
    "commands_per_second": 1e9,
    "command_burst": 1e9,
    "streams_per_seat": 8,
    "spectator_streams_per_client": 100_000,
    # The loads create their thousands of tables from 127.0.0.1 as fast as they can.
    "table_creations_per_second": 0.0,
}
# (A baseline's settings may predate some of these.)
BENCH_LOBBY = LobbyConfig(
    **{k: v for k, v in _LIFTED.items() if k in LobbyConfig.__dataclass_fields__}
)


async def main_async(args: argparse.Namespace) -> None:
    server = await serve(
        "127.0.0.1",
        args.port,
        args.db,
        lobby_config=BENCH_LOBBY,
        table_config=BENCH_TABLES,
        **BENCH_CONNECTIONS,
    )
    print(f"port {server.port}", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    await server.stop(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.rami_server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--db", default=":memory:")
    parser.add_argument("--profile", help="write a cProfile of the whole run to this file")
    parser.add_argument(
        "--loop",
        choices=LOOPS,
        default=os.environ["RAMI_LOOP"] if os.environ.get("RAMI_LOOP") in LOOPS else LOOPS[0],
        help="the event loop (default: $RAMI_LOOP, else auto)",
    )
    args = parser.parse_args()
    if args.profile:
        import cProfile

        with cProfile.Profile() as profile:
            run_loop(main_async(args), args.loop)
        profile.dump_stats(args.profile)
    else:
        run_loop(main_async(args), args.loop)


if __name__ == "__main__":
    main()
