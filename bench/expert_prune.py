"""``python -m bench.expert_prune``: what stopping the candidates that cannot clear the
expert's test saves, and what it changes.

Plays seeded two-player games of the expert (seat 0) against strong and, at each of seat 0's
searched moves (more than one candidate), asks the expert twice on the same view with the same
random source: as it is (candidates that cannot clear the test played no further) and with
every candidate played in every sampled game (``prune=False``). It counts the playouts each
took and whether they chose the same, and prints the medians and means::

    python -m bench.expert_prune --variant tallage --moves 30

(CPU times are not compared: the search that runs second finds strong's costs of the hands
kept by the first.) Deterministic for a seed; bounded by ``--moves``.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
from collections.abc import Sequence

import rami.engine.policies as policies

from .seeded import seat_zero_turns


def compare(
    variant: str, moves: int, seed: str, budget: float = policies.EXPERT_BUDGET
) -> tuple[list[int], list[int], int]:
    """Playouts of each searched move (whole, pruned), and how many chose the same."""
    count = [0]
    playout = policies._playout

    def counted(*args: object, **kwargs: object) -> float:
        count[0] += 1
        return playout(*args, **kwargs)  # type: ignore[arg-type]

    pruned = policies.Expert(budget=budget)
    whole = dataclasses.replace(pruned, prune=False)
    whole_counts: list[int] = []
    pruned_counts: list[int] = []
    same = 0
    policies._playout = counted  # type: ignore[assignment]
    try:
        for _, game, v, rng in seat_zero_turns(variant, 2, seed):
            if len(policies.expert_candidates(v, random.Random(0))) == 1:
                game.apply(0, pruned(v, rng))
                continue
            state = rng.getstate()
            count[0] = 0
            a = whole(v, rng)
            whole_counts.append(count[0])
            rng.setstate(state)
            count[0] = 0
            b = pruned(v, rng)
            pruned_counts.append(count[0])
            same += a == b
            if len(pruned_counts) >= moves:
                break
            game.apply(0, b)
    finally:
        policies._playout = playout  # type: ignore[assignment]
    return whole_counts, pruned_counts, same


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.expert_prune", description=__doc__)
    parser.add_argument(
        "--variant",
        choices=("portuguese", "tallage", "simple"),
        nargs="+",
        default=["portuguese", "tallage", "simple"],
    )
    parser.add_argument("--moves", type=int, default=30)
    parser.add_argument("--seed", default="prune")
    parser.add_argument("--budget", type=float, default=policies.EXPERT_BUDGET)
    args = parser.parse_args(argv)
    if args.moves < 1:
        parser.error("--moves is at least 1")
    for variant in args.variant:
        whole, pruned, same = compare(variant, args.moves, args.seed, args.budget)
        print(
            f"{variant}: {len(whole)} searched moves, the same move in {same}; playouts a move, "
            f"median {statistics.median(whole):.0f} -> {statistics.median(pruned):.0f}, "
            f"mean {statistics.mean(whole):.0f} -> {statistics.mean(pruned):.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
