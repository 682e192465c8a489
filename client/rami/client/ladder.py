"""The ladder: every pair of policies plays the same duplicate deals, and each gets a rating.

Like the arena (``arena.py``) everything here is a pure function of its arguments.

- Every pair of the ladder's policies plays ``deals`` duplicate deals of a 2-player game: each
  deal twice, once from each seat, the deals the same for every pair (deal *i* is the arena's
  deal *i* of the ladder's seed), so the luck of the cards cancels out as far as it can.
- A game scores 1 for its winner and 0 for the other (½ each when they tie).
- **Ratings** are Elo-scaled Bradley–Terry strengths fitted to every game by maximum likelihood
  (the minorize–maximize iteration): policy *i* is expected to score
  ``1 / (1 + 10 ** ((r_j - r_i) / 400))`` against *j*. Each pair also counts one virtual drawn
  game (a weak prior that keeps a policy that won every game at a finite rating). The first
  policy listed is anchored at 0.
- **Intervals** are bootstrap percentiles (2.5 and 97.5 of ``resamples`` fits): each resample
  draws, for every pair, its deals with replacement, and fits again.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rami.engine import POLICIES, Policy

from .arena import ArenaConfig, ArenaResult, run_arena

__all__ = [
    "LadderConfig",
    "LadderResult",
    "PairResult",
    "Rating",
    "fit_ratings",
    "format_ladder",
    "ladder_csv",
    "rate",
    "run_ladder",
]

#: Virtual drawn games added to every pair (see the module's docstring).
PRIOR_GAMES = 1.0
#: Bootstrap resamples of the intervals.
RESAMPLES = 400


@dataclass(frozen=True, slots=True)
class LadderConfig:
    """The ladder's variant and options, policies, deals per pair and seed."""

    variant: str
    policies: tuple[str, ...]
    deals: int
    seed: str = "0"
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if len(self.policies) < 2:
            raise ValueError("a ladder needs at least two policies")
        if len(set(self.policies)) != len(self.policies):
            raise ValueError("name each policy once")
        for a, b in self.pairs():
            self.arena(a, b)  # checks the variant, the options and the deals

    def pairs(self) -> list[tuple[str, str]]:
        """Every pair, in the order listed."""
        return list(itertools.combinations(self.policies, 2))

    def arena(self, a: str, b: str) -> ArenaConfig:
        """The arena of one pair: 2 players, duplicate, the ladder's deals."""
        return ArenaConfig(self.variant, 2, (a, b), self.deals, self.seed, True, self.options)


@dataclass(frozen=True, slots=True)
class PairResult:
    """What one pair's deals gave: per deal, ``a``'s score over its two games."""

    a: str
    b: str
    scores: tuple[float, ...]
    #: Games per deal (2: one from each seat).
    games_per_deal: int

    @property
    def games(self) -> int:
        """Games played."""
        return len(self.scores) * self.games_per_deal

    @property
    def score(self) -> float:
        """``a``'s share of the points of every game (0 to 1)."""
        return math.fsum(self.scores) / self.games if self.games else math.nan


@dataclass(frozen=True, slots=True)
class Rating:
    """A policy's rating, its 95% bootstrap interval, and what it played."""

    policy: str
    rating: float
    low: float
    high: float
    games: int
    #: Its share of the points of all its games (0 to 1).
    score: float


@dataclass(frozen=True, slots=True)
class LadderResult:
    """Every pair's result, and the ratings."""

    config: LadderConfig
    pairs: tuple[PairResult, ...]
    ratings: tuple[Rating, ...]


def pair_result(result: ArenaResult) -> PairResult:
    """One pair's arena, as the ladder counts it."""
    a, b = result.config.policies
    scores = []
    per_deal = 0
    for deal in result.deals:
        got = 0.0
        for g in deal.games:
            mine = [s for s, name in enumerate(g.seats) if name == a]
            got += sum(1 / len(g.winners) for s in mine if s in g.winners)
        scores.append(got)
        per_deal = len(deal.games)
    return PairResult(a, b, tuple(scores), per_deal)


def fit_ratings(
    policies: Sequence[str],
    pairs: Sequence[tuple[str, str, float, float]],
    prior: float = PRIOR_GAMES,
) -> dict[str, float]:
    """Elo-scaled Bradley–Terry ratings from ``(a, b, a's points, games)`` of each pair, the
    first policy at 0 (see the module's docstring)."""
    won = dict.fromkeys(policies, 0.0)
    games: dict[tuple[str, str], float] = {}
    for a, b, points, n in pairs:
        won[a] += points + prior / 2
        won[b] += n - points + prior / 2
        for x, y in ((a, b), (b, a)):
            games[x, y] = games.get((x, y), 0.0) + n + prior
    strength = dict.fromkeys(policies, 1.0)
    for _ in range(10_000):
        new = {}
        for i in policies:
            denominator = math.fsum(
                n / (strength[i] + strength[j]) for (x, j), n in games.items() if x == i
            )
            new[i] = won[i] / denominator if denominator else strength[i]
        scale = math.exp(math.fsum(math.log(s) for s in new.values()) / len(new))
        new = {p: s / scale for p, s in new.items()}
        moved = max(abs(math.log(new[p] / strength[p])) for p in policies)
        strength = new
        if moved < 1e-12:
            break
    anchor = strength[policies[0]]
    return {p: 400 * math.log10(strength[p] / anchor) for p in policies}


def rate(
    config: LadderConfig,
    pairs: Sequence[PairResult],
    resamples: int = RESAMPLES,
) -> tuple[Rating, ...]:
    """The ratings of ``pairs``' games, with bootstrap intervals (seeded by the ladder's
    seed), best first."""
    policies = config.policies

    def fitted(chosen: Sequence[Sequence[float]]) -> dict[str, float]:
        return fit_ratings(
            policies,
            [
                (p.a, p.b, math.fsum(s), len(s) * p.games_per_deal)
                for p, s in zip(pairs, chosen, strict=True)
            ],
        )

    point = fitted([p.scores for p in pairs])
    rng = random.Random(f"ladder:{config.seed}")
    draws: dict[str, list[float]] = {p: [] for p in policies}
    for _ in range(resamples):
        fit = fitted([[rng.choice(p.scores) for _ in p.scores] for p in pairs])
        for p in policies:
            draws[p].append(fit[p])
    out = []
    for policy in policies:
        games = sum(p.games for p in pairs if policy in (p.a, p.b))
        points = math.fsum(
            (math.fsum(p.scores) if p.a == policy else p.games - math.fsum(p.scores))
            for p in pairs
            if policy in (p.a, p.b)
        )
        low, high = _percentiles(draws[policy])
        out.append(Rating(policy, point[policy], low, high, games, points / games))
    return tuple(sorted(out, key=lambda r: -r.rating))


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[int(0.025 * (n - 1))], ordered[math.ceil(0.975 * (n - 1))]


def run_ladder(
    config: LadderConfig,
    *,
    jobs: int = 1,
    policies: Mapping[str, Policy] = POLICIES,
    progress: Callable[[str, str], None] | None = None,
) -> LadderResult:
    """Play every pair (each on ``jobs`` processes) and rate them."""
    pairs = []
    for a, b in config.pairs():
        if progress:
            progress(a, b)
        pairs.append(pair_result(run_arena(config.arena(a, b), jobs=jobs, policies=policies)))
    return LadderResult(config, tuple(pairs), rate(config, pairs))


def format_ladder(result: LadderResult) -> list[str]:
    """The ratings table, then each pair's score."""
    c = result.config
    out = [
        f"ladder: {c.variant}, 2 players, {c.deals} duplicate deals per pair "
        f"({2 * c.deals} games), seed {c.seed!r}",
        f"{'policy':<10} {'rating':>7}  {'95% interval':>17} {'games':>6} {'score':>6}",
    ]
    for r in result.ratings:
        # The first policy is the anchor, at 0 by construction: no interval to give.
        interval = (
            f"{'(anchor)':>17}" if r.policy == c.policies[0] else f"[{r.low:>6.0f}, {r.high:>6.0f}]"
        )
        out.append(
            f"{r.policy:<10} {r.rating:>7.0f}  {interval} {r.games:>6} {100 * r.score:>5.1f}%"
        )
    if c.deals < 2:
        out.append(
            "(1 deal a pair: the intervals cannot vary, drawn from one deal; play more deals"
            " for them to mean something)"
        )
    out.append("pairs (the first's score: a win is 1, a shared win its share):")
    for p in result.pairs:
        out.append(f"  {p.a} v {p.b}: {100 * p.score:.1f}% of {p.games} games")
    return out


def ladder_csv(result: LadderResult) -> str:
    """The ratings and the pairs as CSV: one row per policy (``kind`` rating), then one per
    pair (``kind`` pair: the first's score against the second)."""
    buffer = io.StringIO()
    w = csv.writer(buffer, lineterminator="\n")
    w.writerow(["kind", "policy", "opponent", "rating", "low", "high", "games", "score"])
    for r in result.ratings:
        w.writerow(
            [
                "rating",
                r.policy,
                "",
                f"{r.rating:.1f}",
                f"{r.low:.1f}",
                f"{r.high:.1f}",
                r.games,
                f"{r.score:.4f}",
            ]
        )
    for p in result.pairs:
        w.writerow(["pair", p.a, p.b, "", "", "", p.games, f"{p.score:.4f}"])
    return buffer.getvalue()
