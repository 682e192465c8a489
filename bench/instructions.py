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

``--bytecodes`` counts instead the Python bytecodes the interpreter executes per unit (by
``sys.settrace``'s opcode events, no valgrind needed), and ``--top N`` lists the functions
that execute the most. Where the work is Python, the bytecodes follow the time more closely
than the instructions do: a bytecode dispatched costs more than its instructions say (a
branch the processor mispredicts, code and data out of its caches), and C that a change adds
or saves (uvloop, protobuf, SQLite) costs fewer cycles per instruction. In one such case, the
instructions of a tallage command were equal to the baseline's (0.99) while its CPU time was
1.18 of it and its bytecodes 1.21 (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
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


def count_bytecodes(kind: str, variant: str, units: int) -> dict[str, int]:
    """Run a case with every bytecode counted, by function ("file:name": bytecodes)."""
    import collections

    counts: collections.Counter[tuple[str, str]] = collections.Counter()

    def trace(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            counts[(code.co_filename, code.co_name)] += 1
        return trace

    sys.settrace(trace)
    try:
        run_case(kind, variant, units)
    finally:
        sys.settrace(None)
    out: dict[str, int] = {}
    for (filename, name), n in counts.items():
        key = f"{Path(filename).name}:{name}"
        out[key] = out.get(key, 0) + n
    return out


def bytecodes(kind: str, variant: str, units: int, paths: list[str]) -> dict[str, int]:
    """Bytecodes of one process running ``units`` of a case, by function."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    argv = [sys.executable, "-m", "bench.instructions", "--count-bytecodes", kind, variant]
    done = subprocess.run(
        [*argv, str(units)], env=env, cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"counting {kind} {variant} {units} failed:\n{done.stderr[-2000:]}")
    found: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


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


def bytecodes_per_unit(kind: str, variant: str, paths: list[str]) -> dict[str, float]:
    """Bytecodes per unit, by function (the difference of a small and a large run)."""
    small, large = UNITS[kind]
    a = bytecodes(kind, variant, small, paths)
    b = bytecodes(kind, variant, large, paths)
    return {k: (n - a.get(k, 0)) / (large - small) for k, n in b.items()}


def tree_paths(tree: Path = ROOT) -> list[str]:
    """The import paths of a tree's code (this repository's by default)."""
    return [str(tree / p) for p in ("engine", "server", "client", "proto")]


def measure(
    baseline: str | None, cases: list[tuple[str, str]], jobs: int, by_bytecodes: bool = False
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"after": tree_paths()}
        if baseline is not None:
            from .__main__ import baseline_tree

            trees["before"] = tree_paths(baseline_tree(baseline, Path(tmp)))
        work = [(side, kind, v) for kind, v in cases for side in trees]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            if by_bytecodes:
                found: list[Any] = list(
                    pool.map(lambda w: bytecodes_per_unit(w[1], w[2], trees[w[0]]), work)
                )
            else:
                found = list(pool.map(lambda w: per_unit(w[1], w[2], trees[w[0]]), work))
    figures: dict[tuple[str, str], dict[str, Any]] = {}
    for (side, kind, v), n in zip(work, found, strict=True):
        if by_bytecodes:
            figures.setdefault((kind, v), {})[side] = sum(n.values())
            figures[(kind, v)][f"{side}_by_function"] = n
        else:
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
    parser.add_argument(
        "--bytecodes", action="store_true", help="count Python bytecodes instead (no valgrind)"
    )
    parser.add_argument(
        "--top", type=int, default=0, help="with --bytecodes: list the N costliest functions"
    )
    parser.add_argument("--run", nargs=3, metavar=("KIND", "VARIANT", "UNITS"), help="internal")
    parser.add_argument(
        "--count-bytecodes", nargs=3, metavar=("KIND", "VARIANT", "UNITS"), help="internal"
    )
    args = parser.parse_args(argv)
    if args.run:
        kind, variant, units = args.run
        run_case(kind, variant, int(units))
        return 0
    if args.count_bytecodes:
        kind, variant, units = args.count_bytecodes
        print(json.dumps(count_bytecodes(kind, variant, int(units))))
        return 0
    cases = [(kind, v) for kind in args.only for v in VARIANTS[kind]]
    if args.bytecodes:
        return _print_bytecodes(measure(args.baseline, cases, args.jobs, True), args.top)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind): nothing counted")
        return 1
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


def _print_bytecodes(rows: list[dict[str, Any]], top: int) -> int:
    print("Python bytecodes per unit (sys.settrace opcode events)")
    print(f"{'case':<22}{'unit':<9}{'before':>12}{'after':>12}{'after/before':>14}")
    for r in rows:
        before = r.get("before")
        ratio = f"{r['after'] / before:.3f}" if before else "-"
        shown = f"{before:,.0f}" if before else "-"
        print(f"{r['case']:<22}{r['unit']:<9}{shown:>12}{r['after']:>12,.0f}{ratio:>14}")
    for r in rows if top else []:
        print(f"\n{r['case']}: the {top} functions that execute the most (after; before)")
        after, before = r["after_by_function"], r.get("before_by_function", {})
        for name, n in sorted(after.items(), key=lambda kv: -kv[1])[:top]:
            was = f"{before[name]:10.1f}" if name in before else f"{'-':>10}"
            print(f"  {n:10.1f}{was}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
