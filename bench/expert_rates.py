"""``python -m bench.expert_rates``: the expert's simulations per second on this machine.

The expert's budget per move is a count of simulations, never the clock (the same seed gives
the same move on any machine and under any load): the count is the budget times
``rami.engine.policies.EXPERT_RATES``, one-circuit simulations per second of one core of the
reference machine, two players. This measures those rates again: it plays seeded two-player
games between the expert and strong, and at each move the expert searches it times the
search (its candidates in the same sampled games, one circuit each) in CPU seconds of this
process. It prints, per variant, the simulations per second (the median of the searched
moves' rates) beside the rate the code has, and the median CPU time of an expert move at the
default budget with the code's rate, of all moves and of the searched ones (a move with one
candidate, forced or plain, is not searched), and how often a searched move is not strong's
choice (the expert leaves it only for a clear gain in its simulations)::

    python -m bench.expert_rates --moves 40

With ``--players N`` the games have N seats (the expert in seat 0, strong in the others): the
rates printed are then of simulations with N players (the code's beside them scaled by what
a simulation of N players counts for), and the move times say whether the expert keeps its
budget with more players.

Run it on a quiet core (nothing else running): the rates are a property of the machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Sequence

from rami.engine import VARIANTS
from rami.engine.policies import (
    EXPERT_BUDGET,
    expert,
    expert_candidates,
    expert_scores,
    expert_simulations,
)

from .seeded import seat_zero_turns

#: Simulations timed per searched move.
SIMULATIONS = 120


def measure(
    variant: str, moves: int, seed: str, players: int = 2
) -> tuple[float, float, float, float]:
    """(one-circuit simulations per second, median CPU seconds of an expert move at the
    default budget, of a searched one, the share of searched moves where the expert left
    strong's choice) over the first ``moves`` searched moves of seeded games: the expert in
    seat 0, strong in the others."""
    rates: list[float] = []
    times: list[float] = []
    searched: list[float] = []
    left = 0
    for _, game, v, rng in seat_zero_turns(variant, players, seed):
        if len(rates) >= moves:
            break
        candidates = expert_candidates(v, random.Random(0))
        if len(candidates) > 1:
            start = time.process_time()
            expert_scores(v, random.Random(1), candidates, SIMULATIONS, circuits=1)
            elapsed = time.process_time() - start
            sims = max(2, SIMULATIONS // len(candidates)) * len(candidates)
            rates.append(sims / elapsed)
        # The expert's own candidates, from the random source as it will find it: its
        # first is strong's choice.
        before = random.Random()
        before.setstate(rng.getstate())
        start = time.process_time()
        action = expert(v, rng)
        times.append(time.process_time() - start)
        if len(candidates) > 1:
            searched.append(times[-1])
            left += action != expert_candidates(v, before)[0]
        game.apply(0, action)
    return (
        statistics.median(rates),
        statistics.median(times),
        statistics.median(searched),
        left / len(searched),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.expert_rates", description=__doc__)
    parser.add_argument("--moves", type=int, default=40, help="searched moves per variant")
    parser.add_argument("--seed", default="rates")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument(
        "--players",
        type=int,
        default=2,
        choices=range(2, 7),
        help="seats at the table (the expert in one, strong in the others); the measured "
        "rate is of simulations with this many players",
    )
    args = parser.parse_args(argv)
    print(
        f"{'variant':<12} {'measured':>9} {'in code':>9}  "
        f"median expert move at {EXPERT_BUDGET} s (all / searched)  not strong's move"
    )
    for variant in args.variants:
        rate, move, search, left = measure(variant, args.moves, args.seed, args.players)
        print(
            f"{variant:<12} {rate:>9.0f} {expert_simulations(variant, args.players, 1.0, 1):>9}  "
            f"{move * 1000:>13.0f} ms / {search * 1000:.0f} ms {left:>19.0%}"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
