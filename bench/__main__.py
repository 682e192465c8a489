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
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import engine, peers, report, server

RESULTS = Path(__file__).with_name("results.json")
SECTIONS = ("commands", "delivery", "engine", "solver", "memory", "scaling")


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
        "openspiel": peers.openspiel_self_play(games=10 * args.games, seconds=args.engine_seconds),
        "rlcard": peers.rlcard_self_play(games=10 * args.games, seconds=args.engine_seconds),
    }
    for name, fig in peer_figs.items():
        rate = fig.get("decisions_per_s")
        _say(f"  {name:<16}{rate:>10,.0f} decisions/s" if rate else f"  {name}: {fig}")
    return {
        "players": 2,
        "policy": "random",
        "bound": {"games": args.games, "seconds": args.engine_seconds},
        "self_play": ours,
        "peers": peer_figs,
        "peer_versions": peers.versions(),
    }


def run_solver(args: argparse.Namespace) -> dict[str, Any]:
    _say("solver: best split per hand, cold")
    out: dict[str, Any] = {
        "timed_ours": "deadwood_split(hand, values, need_run=False): the least-deadwood split",
        "cold": "every solver cache cleared before each hand",
        "repeats": f"each hand's time is the best of {engine.REPEATS} runs",
        "corpus_seed": engine.CORPUS_SEED,
    }
    hands = engine.gin_corpus(args.hands)
    ours_ms = engine.time_per_hand(
        hands, engine.our_split(engine.GIN_VALUES), before=engine.clear_caches
    )
    task: dict[str, Any] = {"hands": len(hands), "ours": engine.summary(ours_ms)}
    found = peers.rlcard_meld_search()
    if isinstance(found, str):
        task["rlcard"] = {"unavailable": found}
    else:
        to_cards, search, deadwood = found
        decks = [to_cards(h) for h in hands]
        task["rlcard"] = engine.summary(engine.time_per_hand(decks, search, before=None))
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
    _say("delivery: 100 tables x 4 watchers vs a broadcast to 400 subscribers")
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


RUNNERS = {
    "commands": run_commands,
    "delivery": run_delivery,
    "engine": run_engine,
    "solver": run_solver,
    "memory": run_memory,
    "scaling": run_scaling,
}


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
        "--no-save",
        action="store_true",
        help="print only: leave results.json and docs/performance.md alone",
    )
    parser.add_argument("--json", type=Path, help="also write this run's figures here")
    args = parser.parse_args(argv)

    sections = args.only or list(SECTIONS)
    started = time.perf_counter()
    _say(
        f"rami bench: python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"sections {', '.join(sections)}"
    )
    results: dict[str, Any] = {}
    if RESULTS.exists() and args.only:
        # A partial run keeps the other sections' last figures.
        results = {k: v for k, v in json.loads(RESULTS.read_text()).items() if k in SECTIONS}
    for name in sections:
        t0 = time.perf_counter()
        results[name] = RUNNERS[name](args)
        _say(f"  ({name}: {time.perf_counter() - t0:.0f} s)")
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
    rows = report.comparisons(results)
    report.print_rows(rows)
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
