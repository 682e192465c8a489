"""The ladder: every pair of policies on the same duplicate deals, Bradley–Terry ratings with
bootstrap intervals, a table and CSV that a seed reproduces; and ISMCTS as a ladder entrant."""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rami.client.arena import parse_options
from rami.client.bot_cli import app
from rami.client.ladder import (
    LadderConfig,
    PairResult,
    fit_ratings,
    format_ladder,
    ladder_csv,
    rate,
    run_ladder,
)

SHORT = parse_options(["round_cap=1"])


def _expected(ratings: dict[str, float], a: str, b: str) -> float:
    return 1 / (1 + 10 ** ((ratings[b] - ratings[a]) / 400))


def test_the_ratings_are_the_maximum_likelihood_fit_anchored_at_the_first() -> None:
    pairs = [("a", "b", 30.0, 40.0), ("b", "c", 10.0, 40.0), ("a", "c", 35.0, 40.0)]
    ratings = fit_ratings(["a", "b", "c"], pairs, prior=1.0)
    assert ratings["a"] == 0.0
    # The likelihood equations: each policy's expected points (the virtual draws included)
    # are the points it scored.
    for p in "abc":
        expected = scored = 0.0
        for a, b, points, n in pairs:
            if p == a:
                expected += (n + 1) * _expected(ratings, a, b)
                scored += points + 0.5
            elif p == b:
                expected += (n + 1) * _expected(ratings, b, a)
                scored += n - points + 0.5
        assert expected == pytest.approx(scored, abs=1e-9)
    assert ratings["a"] > ratings["c"] > ratings["b"]  # c beat b 30 of 40
    # Without the prior, 75% against one opponent is Elo's 400 log10(3) apart.
    two = fit_ratings(["x", "y"], [("x", "y", 75.0, 100.0)], prior=0.0)
    assert two["x"] - two["y"] == pytest.approx(400 * math.log10(3))
    # Even play, even ratings; a policy that won every game stays finite.
    assert fit_ratings(["x", "y"], [("x", "y", 5.0, 10.0)])["y"] == pytest.approx(0.0)
    assert math.isfinite(fit_ratings(["x", "y"], [("x", "y", 10.0, 10.0)])["y"])


def test_the_intervals_are_bootstrap_percentiles_that_hold_the_fit() -> None:
    config = LadderConfig("simple", ("a", "b"), 6)
    pairs = [PairResult("a", "b", (2.0, 1.0, 1.5, 2.0, 0.0, 1.0), 2)]
    ratings = {r.policy: r for r in rate(config, pairs)}
    assert ratings["a"].rating == ratings["a"].low == ratings["a"].high == 0.0  # the anchor
    b = ratings["b"]
    assert b.low <= b.rating <= b.high and b.low < b.high
    assert b.games == 12 and b.score == pytest.approx(1 - 7.5 / 12)
    assert rate(config, pairs) == rate(config, pairs)  # seeded


def test_a_ladder_plays_every_pair_on_the_same_deals_and_a_seed_repeats_it() -> None:
    config = LadderConfig("simple", ("random", "greedy", "strong"), 3, "7", SHORT)
    result = run_ladder(config)
    assert [(p.a, p.b) for p in result.pairs] == [
        ("random", "greedy"),
        ("random", "strong"),
        ("greedy", "strong"),
    ]
    for p in result.pairs:
        assert p.games == 6 and p.games_per_deal == 2
        assert all(0.0 <= s <= 2.0 for s in p.scores)
    # Each pair's deals are the arena's deals of the ladder's seed.
    assert config.arena("random", "strong").seed == "7"
    assert config.arena("random", "strong").duplicate
    again = run_ladder(config)
    assert again == result
    lines = format_ladder(result)
    assert lines[0].startswith("ladder: simple, 2 players, 3 duplicate deals per pair")
    assert {r.policy for r in result.ratings} == {"random", "greedy", "strong"}
    rows = list(csv.DictReader(io.StringIO(ladder_csv(result))))
    assert [r["kind"] for r in rows] == ["rating"] * 3 + ["pair"] * 3
    assert [r["policy"] for r in rows[:3]] == [r.policy for r in result.ratings]
    assert float(rows[3]["score"]) == pytest.approx(result.pairs[0].score, abs=1e-4)


def test_a_ladder_is_refused_what_it_cannot_play() -> None:
    for policies, said in [(("strong",), "at least two"), (("strong", "strong"), "once")]:
        with pytest.raises(ValueError, match=said):
            LadderConfig("simple", policies, 2)
    with pytest.raises(ValueError):
        LadderConfig("simple", ("random", "strong"), 0)


def test_rami_bot_arena_ladder_prints_the_table_and_writes_csv(tmp_path: Path) -> None:
    out = tmp_path / "ladder.csv"
    args = ["arena", "--ladder", "--variant", "simple", "--policies", "random,greedy"]
    result = CliRunner().invoke(
        app, [*args, "--games", "2", "-o", "round_cap=1", "--csv", str(out), "--seed", "3"]
    )
    assert result.exit_code == 0, result.output
    assert "ladder: simple, 2 players, 2 duplicate deals per pair" in result.output
    assert "random v greedy" in result.output
    rows = list(csv.DictReader(out.open()))
    assert {r["policy"] for r in rows if r["kind"] == "rating"} == {"random", "greedy"}
    # The policies named are the ladder's, and no others.
    assert {r["policy"] for r in rows if r["kind"] == "pair"} == {"random"}
    bad = CliRunner().invoke(app, [*args, "--players", "4"])
    assert bad.exit_code != 0 and "2 players" in bad.output
    # ``--csv`` is the ladder's: without ``--ladder`` it was ignored, and nothing written.
    alone = tmp_path / "arena.csv"
    arena = ["arena", "--variant", "simple", "--policies", "random,greedy", "--games", "1"]
    bad = CliRunner().invoke(app, [*arena, "-o", "round_cap=1", "--csv", str(alone)])
    assert bad.exit_code != 0 and "--csv" in bad.output and "--ladder" in bad.output
    assert not alone.exists()
    # One deal a pair: the bootstrap has one value to draw, so the intervals are no wider
    # than a point, which reads as certainty; the table says so.
    one = CliRunner().invoke(app, [*args, "--games", "1", "-o", "round_cap=1"])
    assert one.exit_code == 0, one.output
    assert "1 deal a pair: the intervals cannot vary" in one.output
    assert "cannot vary" not in result.output
    assert "score: a win is 1" in result.output
    # The first policy, the anchor, has no interval: it is named, not shown as [0, 0].
    assert re.search(r"\nrandom\s+0\s+\(anchor\)\s+4\s", result.output), result.output
    assert "[     0,      0]" not in result.output


def test_openspiels_ismcts_is_a_policy_of_the_arena_and_the_ladder() -> None:
    pytest.importorskip("pyspiel", reason="pip install 'rami[rl]' for OpenSpiel")
    # Deterministic: a view and a seed give one move (its worlds, rollouts and tree all
    # drawn from the random source given).
    import random

    from rami.engine import POLICIES, Game, Options, view
    from rami.rl.ismcts import IsmctsPolicy

    ismcts = IsmctsPolicy(simulations=6, horizon=4)
    for seed in range(6):
        game, _ = Game.new("tallage", Options(players=2), seed)
        v = view(game, game.turn)
        first = ismcts(v, random.Random(seed))
        assert all(ismcts(v, random.Random(seed)) == first for _ in range(3))
    policies = {**POLICIES, "ismcts": IsmctsPolicy(simulations=2, horizon=4)}
    config = LadderConfig("portuguese", ("random", "ismcts"), 1, "2", parse_options(["rounds=1"]))
    result = run_ladder(config, policies=policies)
    (pair,) = result.pairs
    assert pair.games == 2
    assert run_ladder(config, policies=policies) == result  # deterministic for a seed
