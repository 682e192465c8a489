"""bench.expert_prune: the expert with and without pruning, on the same views."""

from __future__ import annotations

from bench import expert_prune
from rami.engine import policies


def test_pruning_plays_fewer_games_and_is_counted() -> None:
    whole, pruned, same = expert_prune.compare("tallage", 3, "t", budget=0.1)
    assert len(whole) == len(pruned) == 3
    assert all(p <= w for p, w in zip(pruned, whole, strict=True))
    assert sum(pruned) < sum(whole)
    assert 0 <= same <= 3
    assert policies._playout.__name__ == "_playout"  # put back
