"""``python -m bench.instructions``: the instructions a command and a step cost, counted, not
timed, for this code and a baseline.

The CPU-time figures of ``python -m bench`` move with the machine: on a shared two-core machine
the table's CPU per command of the same code has been seen to vary by a factor of two between
runs a minute apart. An instruction count does not: ``valgrind --tool=cachegrind`` counts the
instructions a process executes, whatever else the machine does (the same run counted twice
agreed to 0.2%). So a before/after of the code's own work is read here:

- ``pipeline-V``: the table's pipeline per command, in process (``bench.pipeline``: a 4-seat
  table with a watcher per seat on SQLite, safe moves);
- ``steps-V``: a random legal step through the step space (``bench.engine.bench_steps``' loop).

Each figure is the difference between two counted runs of the same case, one of ``--small``
and one of ``--large`` units, divided by the difference in units: the start-up (imports,
building the step space, the first tables) cancels out. Instructions are not time (a cache
miss costs more than an add), but the same Python doing less is faster, and what a change
adds shows up here without the machine's noise.

Needs ``valgrind`` (Debian's package); each counted run takes 20 to 60 times as long as the
run itself, so the whole takes some minutes (``--jobs`` runs the counts side by side).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Units per case: (small, large) counted runs.
UNITS = {"pipeline": (400, 2400), "steps": (2000, 22000)}
VARIANTS = {"pipeline": ("tallage", "portuguese"), "steps": ("tallage", "simple", "portuguese")}


def run_case(kind: str, variant: str, units: int) -> None:
    """The work counted: ``units`` commands or steps of ``variant`` (in this process)."""
    if kind == "pipeline":
        from .pipeline import bench_pipeline

        bench_pipeline(variant, units)
    elif kind == "steps":
        from .engine import bench_steps_only

        bench_steps_only(variant, units)
    else:
        raise ValueError(f"no case {kind!r}")


def count(kind: str, variant: str, units: int, paths: list[str]) -> int:
    """Instructions of one process running ``units`` of a case, ``paths`` first on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    argv = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "bench.instructions",
        "--run",
        kind,
        variant,
        str(units),
    ]
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"counting {kind} {variant} {units} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_unit(kind: str, variant: str, paths: list[str]) -> float:
    small, large = UNITS[kind]
    a = count(kind, variant, small, paths)
    b = count(kind, variant, large, paths)
    return (b - a) / (large - small)


def tree_paths(tree: Path = ROOT) -> list[str]:
    """The import paths of a tree's code (this repository's by default)."""
    return [str(tree / p) for p in ("engine", "server", "client", "proto")]


def measure(baseline: str | None, cases: list[tuple[str, str]], jobs: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"after": tree_paths()}
        if baseline is not None:
            from .__main__ import baseline_tree

            trees["before"] = tree_paths(baseline_tree(baseline, Path(tmp)))
        work = [(side, kind, v) for kind, v in cases for side in trees]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            found = list(pool.map(lambda w: per_unit(w[1], w[2], trees[w[0]]), work))
    figures: dict[tuple[str, str], dict[str, float]] = {}
    for (side, kind, v), n in zip(work, found, strict=True):
        figures.setdefault((kind, v), {})[side] = n
    return [
        {"case": f"{kind}-{v}", "unit": "command" if kind == "pipeline" else "step", **f}
        for (kind, v), f in figures.items()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__)
    parser.add_argument("--baseline", help="also count this git revision (or tree)")
    parser.add_argument(
        "--only", nargs="+", choices=sorted(UNITS), default=sorted(UNITS), help="these cases"
    )
    parser.add_argument("--jobs", type=int, default=2, help="counted runs side by side")
    parser.add_argument("--run", nargs=3, metavar=("KIND", "VARIANT", "UNITS"), help="internal")
    args = parser.parse_args(argv)
    if args.run:
        kind, variant, units = args.run
        run_case(kind, variant, int(units))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind): nothing counted")
        return 1
    cases = [(kind, v) for kind in args.only for v in VARIANTS[kind]]
    rows = measure(args.baseline, cases, args.jobs)
    head = f"{'case':<22}{'unit':<9}{'before':>12}{'after':>12}{'after/before':>14}"
    print("instructions per unit (valgrind --tool=cachegrind)")
    print(head)
    for r in rows:
        before = r.get("before")
        ratio = f"{r['after'] / before:.3f}" if before else "-"
        shown = f"{before:,.0f}" if before else "-"
        print(f"{r['case']:<22}{r['unit']:<9}{shown:>12}{r['after']:>12,.0f}{ratio:>14}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
