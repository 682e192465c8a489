"""bench.leaf_values: positions of strong's games, played out, and the least-squares fit of
their value that the expert's simulations use for a round still going."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from bench import leaf_values
from rami.engine import Game, Options
from rami.engine.policies import _LEAF_FIT, _value


def test_least_squares_recovers_the_coefficients() -> None:
    xs = [[1.0, x, (x * x) % 7] for x in range(-6, 9)]
    ys = [0.5 + 1.25 * b - 0.75 * c for _, b, c in xs]
    coef = leaf_values.least_squares(xs, ys)
    assert coef == pytest.approx([0.5, 1.25, -0.75])
    with pytest.raises(ValueError, match="apart"):
        leaf_values.least_squares([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]], [1.0, 2.0, 3.0])


def test_positions_are_seeded_and_read_as_the_leaf_reads_them(tmp_path: Path) -> None:
    rows = leaf_values.collect("portuguese", 2, 12, 1, "t", 0.3)
    assert rows == leaf_values.collect("portuguese", 2, 12, 1, "t", 0.3)
    assert len(rows) == 12
    for r in rows:
        assert r["leaf"] == pytest.approx(r["others_cost"] - r["own_cost"])
        # A round's end is worth the bonus and at most what 13 cards pay at x4, in cards.
        assert abs(r["value"]) <= 8 + 4 * 13 * 20 / 20
    out = tmp_path / "p.csv"
    assert (
        leaf_values.main(
            [
                "--variant",
                "simple",
                "--positions",
                "12",
                "--rollouts",
                "1",
                "--share",
                "0.5",
                "--out",
                str(out),
                "--without-pays",
            ]
        )
        == 0
    )
    with open(out) as f:
        written = list(csv.DictReader(f))
    assert len(written) == 12 and tuple(written[0]) == leaf_values.FIELDS


def test_the_expert_values_a_round_still_going_by_the_fit() -> None:
    game, _ = Game.new("tallage", Options(players=2), seed=4)
    for seat in range(2):
        facts = leaf_values.facts(game, seat)
        a, b, c = _LEAF_FIT[("tallage", False)]
        expected = (
            a
            + b * (facts["others_cost"] - facts["own_cost"])
            + c * (facts["others_exposure"] - facts["own_exposure"]) / 20
        )
        assert _value(game, seat) == pytest.approx(expected)
        assert _value(game, seat, fitted=False) == pytest.approx(facts["leaf"])
        # Another fit in its place: a constant.
        assert _value(game, seat, leaf=(1.5, 0.0, 0.0)) == 1.5
        assert _value(game, seat, fitted=False, leaf=(1.5, 0.0, 0.0)) == pytest.approx(
            facts["leaf"]
        )
    # A fit of five: the seat's pays weighed by how near the others are to going out, and
    # the others' by how near the seat is.
    for players in (2, 3):
        game, _ = Game.new("portuguese", Options(players=players), seed=5)
        for seat in range(players):
            facts = leaf_values.facts(game, seat)
            assert facts["risk"] > 0 and facts["chance"] > 0
            near = (0.5, 0.1, 0.2, -0.4, 0.6)
            expected = (
                0.5
                + 0.1 * (facts["others_cost"] - facts["own_cost"])
                + (
                    0.2 * (facts["others_exposure"] - facts["own_exposure"])
                    - 0.4 * facts["risk"]
                    + 0.6 * facts["chance"]
                )
                / 20
            )
            assert _value(game, seat, leaf=near) == pytest.approx(expected)
            row = {k: float(v) for k, v in facts.items()}
            assert leaf_values.features(row, near=True)[3:] == [
                facts["risk"] / 20,
                facts["chance"] / 20,
            ]
    assert all(math.isfinite(x) for fit in _LEAF_FIT.values() for x in fit)
    assert {v for v, _ in _LEAF_FIT} == {"portuguese", "tallage", "simple"}
