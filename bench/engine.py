"""The engine's figures: random-policy self-play and the solver, timed in this process.

Self-play: complete seeded games of each variant between 2 ``random`` players (gin rummy, the
peers' game, is a 2-player game), each case run until ``games`` games or ``seconds`` seconds,
whichever comes first (at least one game). A *decision* is one action chosen by a player: the
policy reads the seat's view, lists the legal plays, picks one, and the game applies it.

Solver: per hand, cold (every cache of the solver cleared before the hand, so nothing is
remembered from the hands before it), the best of ``REPEATS`` runs to drop the scheduler's
noise. Garbage collection is off while timing (as in ``timeit``).
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from rami.engine import POLICIES, Game, NextRound, Options, Phase, solver, view
from rami.engine.cards import JOKER
from rami.engine.melds import card_value
from rami.engine.solver import MOROCCAN_VALUES, deadwood_split

__all__ = [
    "CORPUS_SEED",
    "GIN_VALUES",
    "VARIANTS",
    "bench_self_play",
    "corpus",
    "gin_corpus",
    "summary",
    "time_per_hand",
    "time_side_by_side",
]

CORPUS_SEED = 1_000_003
#: Every time is the best of this many runs of the same hand from the same (cleared) caches.
REPEATS = 3
VARIANTS = ("portuguese", "tallage", "simple")
FACES = [c for c in range(52) for _ in range(2)]
#: Gin rummy's deadwood values (A 1, pips face value, J Q K 10), as RLCard counts them.
GIN_VALUES: tuple[int, ...] = tuple(card_value(c, 1, 0) for c in range(53))


# -- self-play --------------------------------------------------------------------------------


def play_one(variant: str, players: int, policy: str, seed: int) -> tuple[int, int]:
    """One complete game: (decisions, rounds)."""
    game, _ = Game.new(variant, Options(players=players), seed=seed)
    rng = random.Random(seed)
    bot = POLICIES[policy]
    decisions = 0
    while game.phase != Phase.GAME_OVER:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            continue
        seat = game.turn
        game.apply(seat, bot(view(game, seat), rng))
        decisions += 1
    return decisions, game.round


def bench_self_play(
    variant: str, *, players: int = 2, policy: str = "random", games: int, seconds: float
) -> dict[str, Any]:
    """Decisions per second over complete games."""
    played = decisions = rounds = 0
    start = time.perf_counter()
    while played < games and (played == 0 or time.perf_counter() - start < seconds):
        d, r = play_one(variant, players, policy, seed=played)
        played, decisions, rounds = played + 1, decisions + d, rounds + r
    elapsed = time.perf_counter() - start
    return {
        "games": played,
        "seconds": round(elapsed, 3),
        "decisions": decisions,
        "decisions_per_s": round(decisions / elapsed, 1),
        "rounds_per_game": round(rounds / played, 2),
    }


# -- the step space and the learning environments ---------------------------------------------


def _rate(steps: int, elapsed: float) -> dict[str, Any]:
    return {"steps": steps, "seconds": round(elapsed, 3), "steps_per_s": round(steps / elapsed, 1)}


def _random_steps(space: Any, rng: random.Random, seconds: float, most: int) -> int:
    """Uniformly random legal steps through ``space`` in games of it (a game that ends starts
    the next), until ``most`` steps or ``seconds``: the steps made."""
    from rami.engine.steps import StepState

    steps, games, start = 0, 0, time.perf_counter()
    game, _ = space.new_game(games)
    state = StepState()
    while steps < most and time.perf_counter() - start < seconds:
        if game.phase == Phase.GAME_OVER:
            games += 1
            game, _ = space.new_game(games)
            state = StepState()
        elif game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
        else:
            space.apply_step(game, state, rng.choice(space.legal_steps(game, state)), check=False)
            steps += 1
    return steps


def bench_steps_only(variant: str, steps: int, *, players: int = 2) -> None:
    """``steps`` of :func:`bench_steps`' random steps through the step space, untimed (what
    ``bench.instructions`` counts)."""
    from rami.engine.game import LEARNING_TURN_CAP
    from rami.engine.steps import StepSpace

    space = StepSpace(variant, Options(players=players), turn_cap=LEARNING_TURN_CAP)
    _random_steps(space, random.Random(1), float("inf"), steps)


def bench_steps(
    variant: str, *, players: int = 2, seconds: float, most: int = 200_000
) -> dict[str, Any]:
    """Uniformly random legal steps (rami.engine.steps) in 2-player games: steps/s through the
    bare step space (``legal_steps`` then ``apply_step``), through ``rami.rl``'s Match as an
    environment serves them (the mask as an array, the observation, the step), and through
    the PettingZoo environment ``rami.rl.env()`` (``last()``, then ``step()``), when
    ``rami[rl]`` is installed. Games have the learning turn cap; a game that ends starts a new
    one."""
    try:
        from rami.engine.game import LEARNING_TURN_CAP
        from rami.engine.steps import StepSpace
    except ImportError as e:  # a baseline from before the step space
        return {"unavailable": f"no step space: {e}"}

    space = StepSpace(variant, Options(players=players), turn_cap=LEARNING_TURN_CAP)
    rng = random.Random(1)
    out: dict[str, Any] = {}
    start = time.perf_counter()
    steps = _random_steps(space, rng, seconds, most)
    out["space"] = {**_rate(steps, time.perf_counter() - start), "size": space.size}
    try:
        from rami.rl import Match
    except ImportError as e:
        out["env"] = {"unavailable": f"rami.rl: {e}"}
        return out
    match = Match(variant, players, seed=0)
    steps, games, start = 0, 0, time.perf_counter()
    while steps < most and time.perf_counter() - start < seconds:
        if match.over:
            games += 1
            match.reset(games)
        mask = match.mask()
        match.observe(match.to_move)
        match.step(rng.choice(mask.nonzero()[0].tolist()))
        steps += 1
    out["env"] = _rate(steps, time.perf_counter() - start)
    try:
        from rami.rl import env as pettingzoo_env
    except ImportError as e:  # pragma: no cover - rami.rl without it is not made
        out["pettingzoo"] = {"unavailable": f"rami.rl.env: {e}"}
        return out
    # The PettingZoo AEC environment as its users drive it (``env()``: wrapped, the order of
    # calls enforced, an illegal step's check): last() for the selected agent's observation
    # and mask, then step(). A game that ends starts a new one.
    aec = pettingzoo_env(variant=variant, players=players)
    aec.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while steps < most and time.perf_counter() - start < seconds:
        obs, _, terminated, truncated, _ = aec.last()
        if terminated or truncated:
            aec.reset()
            continue
        aec.step(rng.choice(obs["action_mask"].nonzero()[0].tolist()))
        steps += 1
    out["pettingzoo"] = _rate(steps, time.perf_counter() - start)
    return out


# -- the solver -------------------------------------------------------------------------------


def corpus(jokers: int, size: int) -> list[list[int]]:
    """``size`` seeded 14-card hands: 14 - ``jokers`` faces of the two decks, and the jokers."""
    rng = random.Random(f"{CORPUS_SEED}/{jokers}")
    return [sorted(rng.sample(FACES, 14 - jokers)) + [JOKER] * jokers for _ in range(size)]


def gin_corpus(size: int) -> list[list[int]]:
    """``size`` seeded 10-card hands of one 52-card deck, no jokers (RLCard's task)."""
    rng = random.Random(f"{CORPUS_SEED}/gin")
    return [sorted(rng.sample(range(52), 10)) for _ in range(size)]


def clear_caches() -> None:
    """Forget everything the solver remembers between calls."""
    solver.clear_caches()


def time_per_hand(
    hands: Sequence[Any], work: Callable[[Any], object], *, before: Callable[[], None] | None
) -> list[float]:
    """Milliseconds per hand, the best of ``REPEATS`` runs, ``before`` called before each."""
    out = []
    gc.collect()
    gc.disable()
    try:
        for hand in hands:
            best = float("inf")
            for _ in range(REPEATS):
                if before is not None:
                    before()
                start = time.perf_counter_ns()
                work(hand)
                best = min(best, (time.perf_counter_ns() - start) / 1e6)
            out.append(best)
    finally:
        gc.enable()
    return out


def time_side_by_side(
    items: Sequence[tuple[Any, Any]],
    ours: Callable[[Any], object],
    theirs: Callable[[Any], object],
    *,
    before: Callable[[], None] | None,
) -> tuple[list[float], list[float]]:
    """Milliseconds per item of two ways of doing the same task, interleaved item by item
    (each item's pair timed one right after the other, each the best of ``REPEATS``), so that
    whatever else the machine does at a moment weighs on both alike. ``before`` runs before
    each of ours."""
    mine: list[float] = []
    other: list[float] = []
    for a, b in items:
        mine.extend(time_per_hand([a], ours, before=before))
        other.extend(time_per_hand([b], theirs, before=None))
    return mine, other


def our_split(values: tuple[int, ...]) -> Callable[[Sequence[int]], object]:
    """The timed unit of our solver: the least-deadwood split of a hand, melds and all."""
    return lambda hand: deadwood_split(hand, values, need_run=False)


OUR_14 = our_split(MOROCCAN_VALUES)


def summary(ms: list[float]) -> dict[str, float]:
    """Median, 99th percentile, mean and maximum, in milliseconds."""
    ordered = sorted(ms)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {
        "median_ms": round(statistics.median(ordered), 5),
        "p99_ms": round(p99, 5),
        "mean_ms": round(statistics.fmean(ordered), 5),
        "max_ms": round(ordered[-1], 4),
    }
