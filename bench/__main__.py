"""``python -m bench``: time the solver per hand and self-play games per second, on one core.

Solver: a fixed seeded corpus of 14-card hands dealt from the two-deck faces, with 0, 1 and 2
jokers. What is timed per hand is the work a bot does on it::

    deadwood(hand, MOROCCAN_VALUES, need_run=False)
    best_opening(hand)

*cold*: ``solver.clear_caches()`` runs before each hand, so nothing is remembered from the
hands before it (the memo is still used within the hand, as it always is). *warm*: the corpus
in order from a cleared memo, the memo kept between hands as it is during a game (up to its
cap), so sub-hands met in earlier hands cost only a lookup. *next turn*: the memo is cleared,
a hand is solved (untimed), then the hand that differs from it by one card (one drawn, one
dropped) is timed: the case a bot meets from one turn to the next. Each figure per hand is the
best of 3 runs from the same memo state, to drop scheduling noise. Garbage collection is off
while timing (as in ``timeit``).

Self-play: complete games of each variant between 4 ``greedy`` players and between 4
``random`` players, default options, seeded; each case runs until ``--games`` games or
``--seconds`` seconds, whichever comes first (at least one game).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rami.engine import POLICIES, Game, NextRound, Options, Phase, solver, view
from rami.engine.cards import JOKER
from rami.engine.solver import MOROCCAN_VALUES, best_opening, deadwood

RESULTS = Path(__file__).with_name("results.json")
CORPUS_SEED = 1_000_003
#: Every time is the best of this many runs of the same thing from the same memo state: the
#: minimum drops the scheduler's noise (other processes on the machine), not the solver's cost.
REPEATS = 3
TARGET_MEDIAN_MS = 0.5
TARGET_P99_MS = 5.0
VARIANTS = ("portuguese", "tallage", "simple")
FACES = [c for c in range(52) for _ in range(2)]


# -- the solver -------------------------------------------------------------------------------


def corpus(jokers: int, size: int) -> list[list[int]]:
    """``size`` seeded 14-card hands: 14 - ``jokers`` faces of the two decks, and the jokers."""
    rng = random.Random(f"{CORPUS_SEED}/{jokers}")
    return [sorted(rng.sample(FACES, 14 - jokers)) + [JOKER] * jokers for _ in range(size)]


def next_turns(hands: list[list[int]]) -> list[tuple[list[int], list[int]]]:
    """Each hand with its next turn's hand: one card drawn from the rest of the deck, one
    non-joker card dropped."""
    rng = random.Random(f"{CORPUS_SEED}/next")
    pairs = []
    for hand in hands:
        rest = list(FACES)
        for c in hand:
            if c != JOKER:
                rest.remove(c)
        after = list(hand)
        after.remove(rng.choice([c for c in hand if c != JOKER]))
        after.append(rng.choice(rest))
        pairs.append((hand, sorted(after)))
    return pairs


def bot_work(hand: Sequence[int]) -> None:
    """What a bot asks the solver about one hand (the timed unit)."""
    deadwood(hand, MOROCCAN_VALUES, need_run=False)
    best_opening(hand)


def _time(work: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    work()
    return (time.perf_counter_ns() - start) / 1e6


def time_solver(hands: list[list[int]]) -> dict[str, list[float]]:
    """Milliseconds per hand: cold, warm and next turn, each the best of ``REPEATS`` runs."""
    pairs = next_turns(hands)
    cold, turn = [], []
    warm: list[float] = [float("inf")] * len(hands)
    gc.collect()
    gc.disable()
    try:
        for hand in hands:
            runs = []
            for _ in range(REPEATS):
                solver.clear_caches()
                runs.append(_time(lambda h=hand: bot_work(h)))
            cold.append(min(runs))
        for _ in range(REPEATS):
            solver.clear_caches()
            for i, hand in enumerate(hands):
                warm[i] = min(warm[i], _time(lambda h=hand: bot_work(h)))
        for before, after in pairs:
            runs = []
            for _ in range(REPEATS):
                solver.clear_caches()
                bot_work(before)
                runs.append(_time(lambda h=after: bot_work(h)))
            turn.append(min(runs))
    finally:
        gc.enable()
        solver.clear_caches()
    return {"cold": cold, "warm": warm, "next turn": turn}


def summary(ms: list[float]) -> dict[str, float]:
    """Median, 99th percentile, mean and maximum, in milliseconds."""
    ordered = sorted(ms)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {
        "median_ms": round(statistics.median(ordered), 4),
        "p99_ms": round(p99, 4),
        "mean_ms": round(statistics.fmean(ordered), 4),
        "max_ms": round(ordered[-1], 4),
    }


def bench_solver(size: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for jokers in (0, 1, 2):
        times = time_solver(corpus(jokers, size))
        out[f"{jokers}_jokers"] = {mode: summary(ms) for mode, ms in times.items()}
    return out


# -- self-play --------------------------------------------------------------------------------


def play_one(variant: str, policy: str, seed: int) -> tuple[int, int]:
    """One complete game between 4 ``policy`` players: (actions, rounds)."""
    game, _ = Game.new(variant, Options(players=4), seed=seed)
    rng = random.Random(seed)
    bot = POLICIES[policy]
    actions = 0
    while game.phase != Phase.GAME_OVER:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            continue
        seat = game.turn
        game.apply(seat, bot(view(game, seat), rng))
        actions += 1
    return actions, game.round


def bench_games(variant: str, policy: str, games: int, seconds: float) -> dict[str, Any]:
    played = actions = rounds = 0
    start = time.perf_counter()
    while played < games and (played == 0 or time.perf_counter() - start < seconds):
        a, r = play_one(variant, policy, seed=played)
        played, actions, rounds = played + 1, actions + a, rounds + r
    elapsed = time.perf_counter() - start
    return {
        "games": played,
        "seconds": round(elapsed, 3),
        "games_per_s": round(played / elapsed, 4),
        "actions_per_s": round(actions / elapsed, 1),
        "rounds_per_game": round(rounds / played, 2),
        "actions_per_game": round(actions / played, 1),
    }


# -- reporting --------------------------------------------------------------------------------


def _mark(ok: bool) -> str:
    return "ok" if ok else "MISS"


def print_solver(results: dict[str, Any], size: int) -> None:
    print(f"\nSolver: ms per 14-card hand ({size} hands each), timed:")
    print("  deadwood(hand, MOROCCAN_VALUES, need_run=False) + best_opening(hand)")
    print(f"  targets (cold): median < {TARGET_MEDIAN_MS} ms, p99 < {TARGET_P99_MS} ms\n")
    print(f"  {'jokers':<7}{'memo':<11}{'median':>9}{'p99':>9}{'mean':>9}{'max':>9}  target")
    for key, modes in results.items():
        for mode, s in modes.items():
            target = ""
            if mode == "cold":
                med_ok = s["median_ms"] < TARGET_MEDIAN_MS
                p99_ok = s["p99_ms"] < TARGET_P99_MS
                target = f"median {_mark(med_ok)}, p99 {_mark(p99_ok)}"
            print(
                f"  {key[0]:<7}{mode:<11}{s['median_ms']:>9.3f}{s['p99_ms']:>9.3f}"
                f"{s['mean_ms']:>9.3f}{s['max_ms']:>9.2f}  {target}"
            )


def print_games(results: dict[str, Any]) -> None:
    print("\nSelf-play: complete games, 4 players, default options, one core\n")
    print(
        f"  {'variant':<12}{'players':<9}{'games':>6}{'seconds':>9}{'games/s':>10}"
        f"{'actions/s':>11}{'rounds/game':>13}"
    )
    for key, r in results.items():
        variant, policy = key.split("/")
        print(
            f"  {variant:<12}{policy:<9}{r['games']:>6}{r['seconds']:>9.1f}"
            f"{r['games_per_s']:>10.3f}{r['actions_per_s']:>11.0f}{r['rounds_per_game']:>13.1f}"
        )


def save(figures: dict[str, Any]) -> None:
    """Merge the figures into ``bench/results.json`` under ``engine``."""
    data: dict[str, Any] = {}
    if RESULTS.exists():
        data = json.loads(RESULTS.read_text())
    engine = data.setdefault("engine", {})
    engine.update(figures)
    RESULTS.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _one_core() -> str:
    """Pin the process to one CPU where the OS allows it; say which."""
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to cpu {cpu}"
    return "single-threaded (no affinity call on this OS)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--hands", type=int, default=3000, help="hands per joker count")
    parser.add_argument("--games", type=int, default=50, help="most games per self-play case")
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="most seconds per self-play case"
    )
    parser.add_argument("--no-save", action="store_true", help="don't write results.json")
    args = parser.parse_args(argv)

    core = _one_core()
    started = time.perf_counter()
    print(f"rami engine bench: python {platform.python_version()}, {core}")
    solver_figures = bench_solver(args.hands)
    print_solver(solver_figures, args.hands)
    game_figures = {
        f"{variant}/{policy}": bench_games(variant, policy, args.games, args.seconds)
        for variant in VARIANTS
        for policy in ("greedy", "random")
    }
    print_games(game_figures)
    elapsed = time.perf_counter() - started
    print(f"\nbench took {elapsed:.0f} s")
    figures = {
        "solver": {
            "timed": "deadwood(hand, MOROCCAN_VALUES, need_run=False) + best_opening(hand)",
            "hands_per_joker_count": args.hands,
            "corpus_seed": CORPUS_SEED,
            "targets_ms": {"median": TARGET_MEDIAN_MS, "p99": TARGET_P99_MS},
            "cold": "memo cleared before each hand",
            "warm": "memo kept between hands, corpus order from a cleared memo",
            "next_turn": "memo holding only the previous hand; this hand is it, one card swapped",
            "repeats": f"each hand's time is the best of {REPEATS} runs from the same memo state",
            "per_hand": solver_figures,
        },
        "self_play": {
            "players": 4,
            "options": "defaults",
            "bound": {"games": args.games, "seconds": args.seconds},
            "cases": game_figures,
        },
        "meta": {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "platform": platform.platform(),
            "core": core,
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": round(elapsed, 1),
        },
    }
    if not args.no_save:
        save(figures)
        print(f"figures merged into {RESULTS} under 'engine'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
