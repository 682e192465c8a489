"""The peers: OpenSpiel's gin rummy (C++, driven from Python) and RLCard's (pure Python).

Both are bench-only extras that ``make bench`` installs into the venv; neither is a runtime
dependency. When one cannot be imported, its figures say why instead of failing the bench.

Self-play is the peers' own random play, counted the way ours is: a *decision* is one action
chosen by a player (OpenSpiel: every non-chance ``apply_action``, the action drawn uniformly
from ``legal_actions()``; RLCard: every ``env.step`` of a ``RandomAgent``, which draws from the
state's legal actions), over complete games (a gin rummy game is one deal), seeded, bounded by
games and seconds like ours.
"""

from __future__ import annotations

import importlib.metadata
import random
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["openspiel_self_play", "rlcard_meld_search", "rlcard_self_play", "versions"]


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """Installed versions of the peers (None: not installed)."""
    return {"open-spiel": _version("open-spiel"), "rlcard": _version("rlcard")}


def openspiel_self_play(*, games: int, seconds: float, seed: int = 0) -> dict[str, Any]:
    """OpenSpiel ``gin_rummy``, uniform random play from Python through pyspiel."""
    try:
        import pyspiel
    except ImportError as e:
        return {"unavailable": f"open-spiel could not be imported: {e}"}
    game = pyspiel.load_game("gin_rummy")
    rng = random.Random(seed)
    played = decisions = 0
    start = time.perf_counter()
    while played < games and (played == 0 or time.perf_counter() - start < seconds):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = state.chance_outcomes()
                actions = [a for a, _ in outcomes]
                state.apply_action(rng.choices(actions, [p for _, p in outcomes])[0])
            else:
                state.apply_action(rng.choice(state.legal_actions()))
                decisions += 1
        played += 1
    elapsed = time.perf_counter() - start
    return {
        "games": played,
        "seconds": round(elapsed, 3),
        "decisions": decisions,
        "decisions_per_s": round(decisions / elapsed, 1),
    }


def rlcard_self_play(*, games: int, seconds: float, seed: int = 0) -> dict[str, Any]:
    """RLCard ``gin-rummy`` with two ``RandomAgent``: reset, then step until over."""
    try:
        import rlcard
        from rlcard.agents import RandomAgent
    except ImportError as e:
        return {"unavailable": f"rlcard could not be imported: {e}"}
    env = rlcard.make("gin-rummy", config={"seed": seed})
    agents = [RandomAgent(num_actions=env.num_actions) for _ in range(env.num_players)]
    played = decisions = 0
    start = time.perf_counter()
    while played < games and (played == 0 or time.perf_counter() - start < seconds):
        state, player = env.reset()
        while not env.is_over():
            state, player = env.step(agents[player].step(state))
            decisions += 1
        played += 1
    elapsed = time.perf_counter() - start
    return {
        "games": played,
        "seconds": round(elapsed, 3),
        "decisions": decisions,
        "decisions_per_s": round(decisions / elapsed, 1),
    }


def rlcard_meld_search() -> tuple[Any, Any, Any] | str:
    """RLCard's best-meld search, a converter of our cards to its cards, and its deadwood
    count of a result; or why not.

    The timed search is ``get_best_meld_clusters(hand)``: every meld cluster of the least
    deadwood (like our split, the melds themselves). Our card ``suit * 13 + rank - 1`` is
    RLCard's card id ``rank_id + 13 * suit_id``.
    """
    try:
        from rlcard.games.gin_rummy.utils import melding, utils
    except ImportError as e:
        return f"rlcard could not be imported: {e}"

    def to_cards(hand: Sequence[int]) -> list[Any]:
        return [utils.get_card(c) for c in hand]

    def deadwood(cards: list[Any], clusters: list[Any]) -> int:
        if not clusters:
            return sum(utils.get_deadwood_value(c) for c in cards)
        return int(utils.get_deadwood_count(cards, clusters[0]))

    return to_cards, melding.get_best_meld_clusters, deadwood
