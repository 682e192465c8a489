"""``python -m bench`` (``make bench``): how fast Rami is, against what bounds it, in one run.

Six comparisons, each printed as (ours, reference, ratio) with its target, saved in
``bench/results.json`` and written into ``docs/performance.md``:

1. commands through the whole server against a bare grpc.aio unary echo of the same
   concurrency (64 callers): 64 tables of 4 remote bots, one connection each, so that at any
   moment 64 bots (the one whose turn it is at each table) have a command in flight, sent as a
   unary Act (and, beside it, on the Play stream); each command is stored and fanned out to
   the table's 4 watchers. Calls/s, and the server process's CPU time per command against
   per echo call;
2. updates delivered to 400 watchers (100 tables of 4) against a bare grpc.aio server-stream
   broadcast to 400 subscribers;
3. latency at the load of (1), a command's call to its table's last watcher, against the
   echo's;
4. decisions/s of random self-play per variant against OpenSpiel's and RLCard's gin rummy;
5. the solver: RLCard's task (10-card best split) against RLCard, and our 14-card hands;
6. the server's memory with 1,000 idle tables, and per connected watcher;

and how the command figures scale with 1, 10, 100 and 1,000 tables. Every server is a child
process on 127.0.0.1; every loop is bounded by count and by time.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# gRPC core's informational lines (a GOAWAY per connection when a server stops) would bury
# the figures; errors are still shown.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from . import engine, peers, pipeline, report, server

RESULTS = Path(__file__).with_name("results.json")
SECTIONS = ("commands", "delivery", "pipeline", "engine", "solver", "memory", "scaling")


def _say(text: str) -> None:
    print(text, flush=True)


def run_engine(args: argparse.Namespace) -> dict[str, Any]:
    _say("engine: random self-play, 2 players, ours and the peers")
    ours = {}
    for variant in engine.VARIANTS:
        ours[variant] = engine.bench_self_play(
            variant, games=args.games, seconds=args.engine_seconds
        )
        _say(f"  rami {variant:<11}{ours[variant]['decisions_per_s']:>10,.0f} decisions/s")
    peer_figs = {
        "openspiel": peers.openspiel_self_play(games=100 * args.games, seconds=args.engine_seconds),
        "rlcard": peers.rlcard_self_play(games=100 * args.games, seconds=args.engine_seconds),
    }
    for name, fig in peer_figs.items():
        rate = fig.get("decisions_per_s")
        _say(f"  {name:<16}{rate:>10,.0f} decisions/s" if rate else f"  {name}: {fig}")
    steps = {}
    for variant in engine.VARIANTS:
        steps[variant] = engine.bench_steps(variant, seconds=args.engine_seconds)
        fig = steps[variant]
        if "space" not in fig:
            _say(f"  steps {variant:<11}{fig}")
            continue
        env = fig["env"].get("steps_per_s")
        aec = (fig.get("pettingzoo") or {}).get("steps_per_s")
        _say(
            f"  steps {variant:<11}{fig['space']['steps_per_s']:>10,.0f} steps/s (step space), "
            + (f"{env:,.0f} steps/s (rami.rl Match)" if env else str(fig["env"]))
            + (f", {aec:,.0f} steps/s (PettingZoo env)" if aec else "")
        )
    return {
        "players": 2,
        "policy": "random",
        "bound": {"games": args.games, "seconds": args.engine_seconds},
        "self_play": ours,
        "steps": steps,
        "peers": peer_figs,
        "peer_versions": peers.versions(),
    }


def run_pipeline(args: argparse.Namespace) -> dict[str, Any]:
    _say("pipeline: the table's own CPU per command, in process, 4 seats watched")
    out: dict[str, Any] = {}
    for variant in pipeline.VARIANTS:
        fig = pipeline.bench_pipeline(variant, args.pipeline_commands, args.pipeline_store)
        out[variant] = fig
        _say(f"  {variant:<11}{fig['cpu_per_command_us']:>10,.1f} us/command")
    return out


def run_solver(args: argparse.Namespace) -> dict[str, Any]:
    _say("solver: best split per hand, cold")
    out: dict[str, Any] = {
        "timed_ours": "deadwood_split(hand, values, need_run=False): the least-deadwood split",
        "cold": "every solver cache cleared before each hand",
        "repeats": f"each hand's time is the best of {engine.REPEATS} runs",
        "corpus_seed": engine.CORPUS_SEED,
    }
    hands = engine.gin_corpus(args.hands)
    ours = engine.our_split(engine.GIN_VALUES)
    task: dict[str, Any] = {"hands": len(hands)}
    found = peers.rlcard_meld_search()
    if isinstance(found, str):
        ours_ms = engine.time_per_hand(hands, ours, before=engine.clear_caches)
        task["ours"] = engine.summary(ours_ms)
        task["rlcard"] = {"unavailable": found}
    else:
        to_cards, search, deadwood = found
        decks = [to_cards(h) for h in hands]
        # Hand by hand, ours then RLCard's: a busy moment of the machine weighs on both.
        ours_ms, theirs_ms = engine.time_side_by_side(
            list(zip(hands, decks, strict=True)), ours, search, before=engine.clear_caches
        )
        task["ours"] = engine.summary(ours_ms)
        task["rlcard"] = engine.summary(theirs_ms)
        task["timing"] = "interleaved hand by hand"
        # Same task, same answers: the least deadwood must agree, but where Rami's rules find
        # more (a Q-K-A run, which gin rummy does not allow).
        agree = differ_qka = other = 0
        for hand, cards in zip(hands, decks, strict=True):
            ours = engine.our_split(engine.GIN_VALUES)(hand)
            theirs = deadwood(cards, search(cards))
            mine = sum(engine.GIN_VALUES[c] for c in ours.left)  # type: ignore[attr-defined]
            if mine == theirs:
                agree += 1
            elif mine < theirs and _has_qka(hand):
                differ_qka += 1
            else:
                other += 1
        task["agreement"] = {"same": agree, "rami_lower_by_qka_run": differ_qka, "other": other}
    out["rlcard_task"] = task
    _say(f"  10-card, ours {task['ours']}\n  10-card, rlcard {task['rlcard']}")
    out["ours_14"] = {}
    for jokers in (0, 1, 2):
        ms = engine.time_per_hand(
            engine.corpus(jokers, args.hands), engine.OUR_14, before=engine.clear_caches
        )
        out["ours_14"][f"{jokers}_jokers"] = engine.summary(ms)
        _say(f"  14-card, {jokers} jokers: {out['ours_14'][f'{jokers}_jokers']}")
    return out


def _has_qka(hand: Sequence[int]) -> bool:
    held = set(hand)
    return any({s * 13, s * 13 + 11, s * 13 + 12} <= held for s in range(4))


def run_commands(args: argparse.Namespace) -> dict[str, Any]:
    _say(f"commands: echo x{args.concurrency} vs {args.tables} tables x 4 remote bots")
    out = server.bench_commands(
        concurrency=args.concurrency,
        tables=args.tables,
        seats=4,
        warmup=args.warmup,
        seconds=args.seconds,
        stream=args.stream,
    )
    for k, v in out.items():
        _say(
            f"  {k:<12}{v['calls_per_s']:>9,.0f} calls/s  {v['server_cpu_per_call_us']:>7} us "
            f"CPU/call  p50 {v['latency_ms']['p50']} ms  p99 {v['latency_ms']['p99']} ms"
        )
    return out


def run_delivery(args: argparse.Namespace) -> dict[str, Any]:
    _say("delivery: 100 tables x 4 watchers vs a broadcast to 400 subscribers and a relay")
    out = server.bench_delivery(
        tables=100, seats=4, warmup=args.warmup, seconds=args.seconds, stream=args.stream
    )
    for k, v in out.items():
        _say(
            f"  {k:<12}{v['delivered_per_s']:>9,.0f} updates/s  "
            f"{v['server_cpu_per_delivery_us']} us CPU/update"
        )
    return out


def run_memory(args: argparse.Namespace) -> dict[str, Any]:
    _say("memory: 1,000 idle tables, 1,000 watchers")
    out = server.bench_memory(tables=1000, seats=4, watchers=1000)
    _say(f"  {out}")
    return out


def run_scaling(args: argparse.Namespace) -> list[dict[str, Any]]:
    counts = [1, 10, 100, 1000]
    _say(f"scaling: {counts} tables of 4, at most 64 connections")
    rows = server.bench_scaling(
        counts,
        seats=4,
        connections=64,
        warmup=args.warmup,
        seconds=args.scale_seconds,
        stream=args.stream,
    )
    for row in rows:
        for mode in ("unary", "stream"):
            f = row.get(mode)
            if f:
                _say(
                    f"  {row['tables']:>5} tables {mode:<7}{f['calls_per_s']:>9,.0f} calls/s "
                    f"{f['server_cpu_per_call_us']:>7} us CPU/call  p99 {f['latency_ms']['p99']}"
                    f" ms  RSS {f['server_rss_mb']} MB"
                )
    return rows


#: The packages of the code measured, compiled before a run (see :func:`precompile`).
PACKAGES = ("rami.engine", "rami.server", "rami.client", "rami.v1")


def precompile() -> None:
    """Write the bytecode of the measured code's modules (``__pycache__``), as an install
    does, so that every server the bench starts loads it instead of compiling its sources:
    a process that compiles a module keeps some of the compiler's memory (3 MB more RSS for
    this server, more for larger modules), which the RSS figures would count. The baseline's
    run does the same for its own tree, so both are measured as installed."""
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        for where in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(where, quiet=1)


def baseline_tree(where: str, tmp: Path) -> Path:
    """The tree to measure as the baseline: a directory holding ``engine/ server/ client/
    proto/`` as this repository does, or a git revision of this repository, exported into
    ``tmp`` with its contract's Python code generated."""
    if Path(where).is_dir():
        return Path(where)
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", where, "engine", "server", "client", "proto"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    protos = sorted(str(p.relative_to(tmp / "proto")) for p in (tmp / "proto").rglob("*.proto"))
    protos = [p for p in protos if not p.startswith("released")]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-I.",
            "--python_out=.",
            "--grpc_python_out=.",
            *protos,
        ],
        cwd=tmp / "proto",
        check=True,
    )
    return tmp


@contextlib.contextmanager
def section_runner(
    args: argparse.Namespace, where: str | None
) -> Iterator[Callable[[list[str]], dict[str, Any]]]:
    """A way to run this bench for the sections given in a fresh process of its own: on the
    code of ``where`` (the baseline: its server, engine and solver; its tree is exported once
    for all the calls), or with None on this code. Both sides of a before/after are measured
    so, alike: in this long-lived process, whose earlier sections leave it holding much, the
    solver's hands took up to 1.6x the time they take in a fresh one."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        has_play = True
        name = "this code"
        if where is not None:
            name = where
            tree = baseline_tree(where, Path(tmp))
            paths = [str(tree / part) for part in ("engine", "server", "client", "proto")]
            env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(
                os.pathsep
            )
            # The Play stream's figures too, when the baseline has the Play stream.
            contract = tree / "proto" / "rami" / "v1" / "table_service.proto"
            has_play = contract.exists() and "rpc Play(" in contract.read_text()
        out = Path(tmp) / "figures.json"

        def measure(sections: list[str]) -> dict[str, Any]:
            argv = [
                sys.executable,
                "-m",
                "bench",
                "--no-save",
                *([] if args.stream and has_play else ["--no-stream"]),
                "--json",
                str(out),
                "--only",
                *sections,
                "--seconds",
                str(args.seconds),
                "--warmup",
                str(args.warmup),
                "--scale-seconds",
                str(args.scale_seconds),
                "--concurrency",
                str(args.concurrency),
                "--tables",
                str(args.tables),
                "--games",
                str(args.games),
                "--engine-seconds",
                str(args.engine_seconds),
                "--hands",
                str(args.hands),
                "--pipeline-commands",
                str(args.pipeline_commands),
                "--pipeline-store",
                args.pipeline_store,
            ]
            _say(f"{name}: {' '.join(sections)}")
            root = Path(__file__).resolve().parent.parent
            subprocess.run(argv, env=env, check=True, cwd=root)
            figures = json.loads(out.read_text())
            return {k: v for k, v in figures.items() if k in sections}

        yield measure


def run_rounds(
    args: argparse.Namespace, sections: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """This code's figures, and with ``--baseline`` the baseline's, measured section by
    section in ``--rounds`` rounds: in each, the baseline and this code measure a section one
    right after the other, the baseline first in odd rounds and last in even ones, so that a
    drift of the machine's speed weighs on both alike, each in a fresh process (see
    :func:`section_runner`). The figures are the last round's; the before/after rows are
    over every round (see :func:`combine`)."""
    if not args.baseline:
        figures = {}
        for name in sections:
            t0 = time.perf_counter()
            figures[name] = RUNNERS[name](args)
            _say(f"  ({name}: {time.perf_counter() - t0:.0f} s)")
        return figures, {}
    rounds: list[tuple[dict[str, Any], dict[str, Any]]] = []
    with section_runner(args, args.baseline) as before_of, section_runner(args, None) as now:

        def ours(name: str) -> Any:
            return now([name])[name]

        for i in range(args.rounds):
            if args.rounds > 1:
                _say(f"round {i + 1} of {args.rounds}")
            before: dict[str, Any] = {}
            after: dict[str, Any] = {}
            for name in sections:
                if i % 2 == 0:
                    before.update(before_of([name]))
                after[name] = ours(name)
                if i % 2 == 1:
                    before.update(before_of([name]))
            rounds.append((before, after))
    rows = combine([before_after(b, a) for b, a in rounds])
    baseline = {
        "tree": args.baseline,
        "rounds": len(rounds),
        "results": rounds[-1][0],
        "before_after": rows,
    }
    return rounds[-1][1], baseline


def combine(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The before/after rows of several rounds as one: the median of each figure and of each
    ratio, and, with more than one round, each ratio's least and greatest (``range``)."""
    if len(rounds) == 1:
        return rounds[0]
    out = []
    firsts = {r["figure"]: r for rows in reversed(rounds) for r in rows}  # in HEADLINES' order
    for row in sorted(firsts.values(), key=lambda r: _ORDER[r["figure"]]):
        same = [r for rows in rounds for r in rows if r["figure"] == row["figure"]]
        merged: dict[str, Any] = {"figure": row["figure"], "unit": row["unit"]}
        for key in ("before", "after", "after/before", "against reference"):
            values = [r[key] for r in same if isinstance(r[key], int | float)]
            merged[key] = round(statistics.median(values), 3) if values else None
            if key in ("after/before", "against reference"):
                merged[f"{key} range"] = [min(values), max(values)] if values else None
        out.append(merged)
    return out


def before_after(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """The headline figures of the baseline and of this code, side by side.

    Even measured one right after the other (see :func:`run_rounds`), the two are apart by
    the length of a section, and on a shared machine the speed of the whole machine moves in
    that time (the echo's calls/s was 1,423 in the baseline's half and 1,770 in this code's
    of one run). So each figure that has a reference measured in its own half (the echo, the
    bare relay, OpenSpiel, RLCard) is compared a second way too: ``against reference`` is
    after/before of the figure divided by its half's reference, which cancels what the
    machine did to both."""
    rows = []
    for name, path, unit, ref in HEADLINES:
        b, a = _dig(before, path), _dig(after, path)
        if b is None and a is None:
            continue
        rows.append(
            {
                "figure": name,
                "unit": unit,
                "before": b,
                "after": a,
                "after/before": _rounded(_ratio(a, b)),
                "against reference": (
                    _rounded(_ratio(_ratio(a, _dig(after, ref)), _ratio(b, _dig(before, ref))))
                    if ref
                    else None
                ),
            }
        )
    return rows


def _ratio(a: Any, b: Any) -> float | None:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or not b:
        return None
    return a / b


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


#: (name, path in the results, unit, path of its reference in the same half or None) of the
#: figures compared before and after (see :func:`before_after`).
Headline = tuple[str, tuple[str, ...], str, tuple[str, ...] | None]

_ECHO = ("commands", "echo")
_RELAY = ("delivery", "relay")

HEADLINES: list[Headline] = [
    (
        "commands/s, unary Act",
        ("commands", "rami_unary", "calls_per_s"),
        "calls/s",
        (*_ECHO, "calls_per_s"),
    ),
    (
        "server CPU per command, unary Act",
        ("commands", "rami_unary", "server_cpu_per_call_us"),
        "us",
        (*_ECHO, "server_cpu_per_call_us"),
    ),
    (
        "latency p99, unary Act",
        ("commands", "rami_unary", "latency_ms", "p99"),
        "ms",
        (*_ECHO, "latency_ms", "p99"),
    ),
    ("echo calls/s (reference)", (*_ECHO, "calls_per_s"), "calls/s", None),
    (
        "commands/s, Play stream",
        ("commands", "rami_stream", "calls_per_s"),
        "calls/s",
        (*_ECHO, "calls_per_s"),
    ),
    (
        "server CPU per command, Play stream",
        ("commands", "rami_stream", "server_cpu_per_call_us"),
        "us",
        (*_ECHO, "server_cpu_per_call_us"),
    ),
    (
        "latency p99, Play stream",
        ("commands", "rami_stream", "latency_ms", "p99"),
        "ms",
        (*_ECHO, "latency_ms", "p99"),
    ),
    ("relay updates/s (reference)", (*_RELAY, "delivered_per_s"), "updates/s", None),
    (
        "updates/s to 400 watchers, unary Act",
        ("delivery", "rami_unary", "delivered_per_s"),
        "updates/s",
        (*_RELAY, "delivered_per_s"),
    ),
    (
        "server CPU per update delivered, unary",
        ("delivery", "rami_unary", "server_cpu_per_delivery_us"),
        "us",
        (*_RELAY, "server_cpu_per_delivery_us"),
    ),
    (
        "updates/s to 400 watchers, Play stream",
        ("delivery", "rami_stream", "delivered_per_s"),
        "updates/s",
        (*_RELAY, "delivered_per_s"),
    ),
    (
        "server CPU per update delivered, Play stream",
        ("delivery", "rami_stream", "server_cpu_per_delivery_us"),
        "us",
        (*_RELAY, "server_cpu_per_delivery_us"),
    ),
    *(
        (
            f"table's CPU per command, in process, {v}",
            ("pipeline", v, "cpu_per_command_us"),
            "us",
            None,
        )
        for v in pipeline.VARIANTS
    ),
    *(
        (
            f"decisions/s, {v}",
            ("engine", "self_play", v, "decisions_per_s"),
            "decisions/s",
            ("engine", "peers", "openspiel", "decisions_per_s"),
        )
        for v in engine.VARIANTS
    ),
    (
        "10-card split, mean",
        ("solver", "rlcard_task", "ours", "mean_ms"),
        "ms",
        ("solver", "rlcard_task", "rlcard", "mean_ms"),
    ),
    *(
        (
            f"14-card split, {j} jokers, median",
            ("solver", "ours_14", f"{j}_jokers", "median_ms"),
            "ms",
            None,
        )
        for j in (0, 1, 2)
    ),
    *(
        (
            f"14-card split, {j} jokers, p99",
            ("solver", "ours_14", f"{j}_jokers", "p99_ms"),
            "ms",
            None,
        )
        for j in (0, 1, 2)
    ),
    # Memory is not what a busy machine moves: no reference.
    ("RSS, 1,000 idle tables", ("memory", "with_tables_mb"), "MB", None),
    ("memory per watcher", ("memory", "per_watcher_kb"), "KB", None),
]


_ORDER = {h[0]: i for i, h in enumerate(HEADLINES)}


def _dig(data: Any, path: tuple[str, ...]) -> Any:
    for p in path:
        if not isinstance(data, dict):
            return None
        data = data.get(p)
    return data


def print_before_after(rows: list[dict[str, Any]]) -> None:
    print(
        f"\n{'before / after (same run)':<46}{'before':>10}{'after':>10}{'after/before':>22}"
        f"{'against ref.':>22}"
    )
    for r in rows:
        b, a = r["before"], r["after"]
        c, n = (
            report.ratio_text(r, "after/before", _num),
            report.ratio_text(r, "against reference", _num),
        )
        print(f"{r['figure']:<46}{_num(b):>10}{_num(a):>10}{c:>22}{n:>22}  {r['unit']}")


def _num(x: Any) -> str:
    if not isinstance(x, int | float):
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


RUNNERS = {
    "commands": run_commands,
    "delivery": run_delivery,
    "pipeline": run_pipeline,
    "engine": run_engine,
    "solver": run_solver,
    "memory": run_memory,
    "scaling": run_scaling,
}


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run these sections only")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window per load")
    parser.add_argument("--warmup", type=float, default=3.0, help="warm-up before each window")
    parser.add_argument("--scale-seconds", type=float, default=6.0, help="window per scaling row")
    parser.add_argument("--concurrency", type=int, default=64, help="echo callers")
    parser.add_argument("--tables", type=int, default=64, help="tables of 4 bots in (1)")
    parser.add_argument(
        "--no-stream", dest="stream", action="store_false", help="leave out the Play stream loads"
    )
    parser.add_argument("--games", type=int, default=50, help="most games per self-play case")
    parser.add_argument(
        "--engine-seconds", type=float, default=10.0, help="most seconds per self-play case"
    )
    parser.add_argument("--hands", type=int, default=1000, help="hands per solver corpus")
    parser.add_argument(
        "--pipeline-commands", type=_positive, default=4000, help="commands per pipeline case"
    )
    parser.add_argument(
        "--pipeline-store",
        choices=pipeline.STORES,
        default="sqlite",
        help="the pipeline's entries stored in SQLite, or (none) answered at once and never "
        "written: what the table costs apart from its store (needs --no-save)",
    )
    parser.add_argument(
        "--no-save",
        action="store_true",
        help="print only: leave results.json and docs/performance.md alone",
    )
    parser.add_argument("--json", type=Path, help="also write this run's figures here")
    parser.add_argument(
        "--baseline",
        help="also measure this code as it was (a git revision, or a tree with engine/ "
        "server/ client/ proto/), each section right before or after this code's, in the "
        "same run: before/after figures",
    )
    parser.add_argument(
        "--rounds",
        type=_positive,
        default=1,
        help="with --baseline: measure both this many times, alternating which goes first; "
        "the before/after rows give medians and ranges",
    )
    args = parser.parse_args(argv)
    if args.pipeline_store != "sqlite" and not args.no_save:
        parser.error(
            "--pipeline-store none measures something else than the saved figures: "
            "give --no-save with it"
        )

    sections = args.only or list(SECTIONS)
    started = time.perf_counter()
    precompile()
    _say(
        f"rami bench: python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"sections {', '.join(sections)}"
    )
    results: dict[str, Any] = {}
    if RESULTS.exists() and args.only:
        # A partial run keeps the other sections' last figures.
        results = {k: v for k, v in json.loads(RESULTS.read_text()).items() if k in SECTIONS}
    figures, baseline = run_rounds(args, sections)
    results.update(figures)
    elapsed = time.perf_counter() - started
    results["meta"] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(elapsed, 1),
        "sections": sections,
        "argv": list(argv if argv is not None else sys.argv[1:]),
    }
    if baseline:
        results["baseline"] = baseline
    rows = report.comparisons(results)
    report.print_rows(rows)
    if baseline:
        print_before_after(baseline["before_after"])
    _say(f"\nbench took {elapsed:.0f} s")
    if args.json:
        report.dump(results, rows, args.json)
    if not args.no_save:
        report.dump(results, rows, RESULTS)
        command = " ".join(["make bench" if not sys.argv[1:] else "python -m bench", *sys.argv[1:]])
        report.write_doc(rows, results, command)
        _say(f"figures written to {RESULTS} and {report.DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
