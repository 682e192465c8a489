"""The arena: seat assignments, statistics, and reports that a seed reproduces."""

from __future__ import annotations

import math
import random
import time

import pytest
from typer.testing import CliRunner

from rami.client.arena import (
    ArenaConfig,
    ArenaResult,
    DealResult,
    GameResult,
    assignments,
    estimate,
    pair_difference,
    parse_options,
    play_game,
    run_arena,
    summarise,
)
from rami.client.bot_cli import app
from rami.engine import POLICIES, Game, NextRound, Options, Phase, view

SHORT = {"portuguese": ("rounds=1",), "tallage": ("round_cap=1",), "simple": ("round_cap=1",)}


def _arena_text(*args: str) -> list[str]:
    result = CliRunner().invoke(app, ["arena", *args])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith("games/second: ")
    return lines[:-1]


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_the_same_seed_prints_the_same_report(variant: str) -> None:
    def args(seed: str) -> list[str]:
        return [
            "--variant",
            variant,
            "--players",
            "2",
            "--policies",
            "strong,greedy",
            "--games",
            "3",
            "--seed",
            seed,
            "--duplicate",
            *(f"--option={o}" for o in SHORT[variant]),
        ]

    first = _arena_text(*args("7"))
    assert first == _arena_text(*args("7"))
    assert first[0].startswith(f"arena: {variant}, 2 players")
    assert "3 deals × 2 seatings = 6 games" in first[0]
    assert [line.split()[0] for line in first[2:4]] == ["strong", "greedy"]
    assert first[4].startswith("strong − greedy (paired by deal)")
    assert _arena_text(*args("8")) != first  # another seed, other games


def test_processes_do_not_change_the_result() -> None:
    config = ArenaConfig("simple", 2, ("greedy", "random"), 4, "p", True, (("round_cap", 1),))
    assert run_arena(config, jobs=2) == run_arena(config, jobs=1)


def test_duplicate_rotates_every_assignment_over_the_seats() -> None:
    assert assignments(["strong", "greedy"], 2, False) == [("strong", "greedy")]
    assert assignments(["strong", "greedy"], 2, True) == [
        ("strong", "greedy"),
        ("greedy", "strong"),
    ]
    assert assignments(["a", "b"], 4, True) == [("a", "b", "a", "b"), ("b", "a", "b", "a")]
    three = assignments(["a", "b", "c"], 3, True)
    assert len(three) == 3
    for seat in range(3):
        assert sorted(a[seat] for a in three) == ["a", "b", "c"]


def test_a_duplicate_deal_deals_the_same_cards_to_each_assignment() -> None:
    config = ArenaConfig("portuguese", 2, ("greedy", "random"), 1, "d", True, (("rounds", 1),))
    games = [Game.new("portuguese", config.game_options(), "d:0")[0] for _ in range(2)]
    assert games[0].hands == games[1].hands and games[0].stock == games[1].stock


def _result(games: list[list[GameResult]], policies: tuple[str, ...]) -> ArenaResult:
    config = ArenaConfig("simple", 2, policies, len(games))
    return ArenaResult(config, tuple(DealResult(i, tuple(g)) for i, g in enumerate(games)))


def test_a_shared_win_counts_as_a_fraction_and_points_are_per_round() -> None:
    result = _result(
        [
            [
                GameResult(("a", "b"), (10, 10), (0, 1), 2, 0, 50),
                GameResult(("b", "a"), (0, 30), (0,), 3, 1, 60),
            ],
            [
                GameResult(("a", "b"), (0, 40), (0,), 1, 0, 20),
                GameResult(("b", "a"), (20, 0), (1,), 1, 0, 20),
            ],
        ],
        ("a", "b"),
    )
    a, b = summarise(result)
    assert (a.policy, a.seat_games, a.wins) == ("a", 4, 2.5)
    assert (b.policy, b.seat_games, b.wins) == ("b", 4, 1.5)
    assert a.per_deal_win == (0.25, 1.0) and b.per_deal_win == (0.75, 0.0)
    assert a.per_deal_points == (40 / 5, 0.0) and b.per_deal_points == (10 / 5, 60 / 2)
    assert a.win_rate.mean == pytest.approx(0.625)
    win, points = pair_difference(a, b)
    assert win.mean == pytest.approx(0.25) and points.mean == pytest.approx((6 - 30) / 2)
    assert result.games == 4 and result.rounds == 7 and result.void_rounds == 1


def test_estimates_are_means_with_normal_intervals() -> None:
    e = estimate([1.0, 2.0, 3.0, 4.0])
    assert e.mean == 2.5 and e.n == 4
    assert e.half == pytest.approx(1.959964 * math.sqrt((1.25 * 4 / 3) / 4))
    assert estimate([5.0]).half == math.inf
    assert math.isnan(estimate([]).mean)


def test_configurations_are_checked() -> None:
    with pytest.raises(ValueError):
        ArenaConfig("simple", 2, ("a", "b", "c"), 1)
    with pytest.raises(ValueError):
        ArenaConfig("simple", 2, ("a",), 0)
    with pytest.raises(Exception, match="players"):
        ArenaConfig("simple", 9, ("a",), 1)
    assert parse_options(["rounds=2", "false_declaration=reject", "simple_rami_sec=true"]) == (
        ("rounds", 2),
        ("false_declaration", "reject"),
        ("simple_rami_sec", True),
    )
    with pytest.raises(ValueError):
        parse_options(["rounds"])
    result = CliRunner().invoke(app, ["arena", "--policies", "strong,clever"])
    assert result.exit_code != 0 and "clever" in result.output


def test_play_game_finishes_and_is_deterministic() -> None:
    options = Options(players=3, rounds=1)
    first = play_game("portuguese", options, "x", ("strong", "greedy", "random"))
    assert first == play_game("portuguese", options, "x", ("strong", "greedy", "random"))
    assert first.rounds == 1 and first.winners and first.actions > 0


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_strong_decides_quickly(variant: str) -> None:
    """The strong policy plays legal moves (the engine checks each) and decides fast."""
    game, _ = Game.new(variant, Options(players=2, rounds=1, round_cap=1), "speed")
    rng = random.Random(0)
    times = []  # processor time, not wall-clock: other processes may share the machine
    while game.phase != Phase.GAME_OVER:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            continue
        seat = game.turn
        v = view(game, seat)
        start = time.process_time()
        action = POLICIES["strong" if seat == 0 else "greedy"](v, rng)
        if seat == 0:
            times.append(time.process_time() - start)
        game.apply(seat, action)
    assert sum(times) / len(times) < 0.02
