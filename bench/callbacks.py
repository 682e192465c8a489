"""``python -m bench.callbacks``: what the event loop runs per command on the Play stream.

The bench's server (``bench.rami_server``) under the bench's Play-stream load (tables of 4
remote bots playing flat out) with cProfile on, on asyncio's own loop (uvloop's calls are
not seen by a profiler), and per command (per ``Game.apply`` of the server) the event loop's
callbacks run (``Context.run``), the tasks created and the callbacks scheduled
(``call_soon``). With ``--baseline REV`` the same for another revision of this repository
(or a tree), first::

    python -m bench.callbacks --baseline 16ecdde --seconds 8

These are counts, not times: cProfile slows every call, so its times are only compared
with each other. ``make bench`` gives the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .__main__ import baseline_tree
from .load import rami_load
from .procs import child

_COUNTED = {
    "run": "event-loop callbacks run (Context.run)",
    "create_task": "tasks created",
    "call_soon": "callbacks scheduled (call_soon)",
}


def profile(tree: Path | None, seconds: float, tables: int, out: Path) -> dict[str, float]:
    """Run the load on ``tree``'s server (None: this one); the counts per command."""
    env = dict(os.environ, RAMI_LOOP="asyncio")
    here = str(Path(__file__).resolve().parent.parent)
    if tree is not None:
        parts = [str(tree / p) for p in ("engine", "server", "client", "proto")]
        env["PYTHONPATH"] = os.pathsep.join([*parts, here])
    else:
        env["PYTHONPATH"] = here
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "load.db")
        with child("bench.rami_server", "--db", db, "--profile", str(out), env=env) as c:
            asyncio.run(
                rami_load(
                    c.target,
                    c.pid,
                    tables=tables,
                    seats=4,
                    warmup=1.0,
                    seconds=seconds,
                    stream=True,
                )
            )
    stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    counts = dict.fromkeys(_COUNTED, 0)
    commands = 0
    for (filename, _, name), (_, calls, *_rest) in stats.items():
        if name == "apply" and filename.endswith(os.path.join("engine", "game.py")):
            commands += calls
        elif name == "<method 'run' of '_contextvars.Context' objects>":
            counts["run"] += calls
        elif name in ("create_task", "call_soon") and filename.endswith("base_events.py"):
            counts[name] += calls
    if not commands:
        raise RuntimeError("no command reached the server")
    return {k: v / commands for k, v in counts.items()} | {"commands": commands}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.callbacks", description=__doc__)
    parser.add_argument("--baseline", help="a git revision of this repository, or a tree")
    parser.add_argument("--seconds", type=float, default=8.0)
    # Few tables: the streams' openings, counted over many commands each, weigh little.
    parser.add_argument("--tables", type=int, default=10)
    args = parser.parse_args(argv)
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.baseline:
            tree = baseline_tree(args.baseline, Path(tmp))
            rows.append((args.baseline, profile(tree, args.seconds, args.tables, Path(tmp) / "b")))
        rows.append(("this tree", profile(None, args.seconds, args.tables, Path(tmp) / "a")))
    print(f"{'per command':<40}" + "".join(f"{name:>14}" for name, _ in rows))
    for key, words in _COUNTED.items():
        print(f"{words:<40}" + "".join(f"{r[key]:>14.2f}" for _, r in rows))
    print(f"{'commands profiled':<40}" + "".join(f"{r['commands']:>14.0f}" for _, r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
