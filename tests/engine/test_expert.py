"""The expert policy (``rami.engine.policies``): PIMC over sampled deals.

- whole games with expert seats, in every variant, with a tiny budget: every action it returns
  is accepted by the game (none refused) and the game ends;
- a move depends only on the view and the seed (the budget fixes a count of simulations, not
  a time), and never on the hidden cards: two games that differ only in what the seat cannot
  see get the same move from the same seed;
- it is registered in ``POLICIES``, and its budget is an option.
"""

from __future__ import annotations

import pickle
import random

import pytest

from rami.engine import POLICIES, Draw, Game, NextRound, Options, Phase, view
from rami.engine.determinize import sample_game
from rami.engine.plays import legal_plays
from rami.engine.policies import (
    EXPERT_BUDGET,
    EXPERT_CIRCUITS,
    Expert,
    expert_candidates,
    expert_choice,
    expert_scores,
    expert_simulations,
    make_expert,
)

VARIANTS = ("portuguese", "tallage", "simple")
TINY = make_expert(budget=0.002)


def play_round(variant: str, players: int, seed: int, seats: dict[int, str]) -> Game:
    """One round with ``seats`` by name (the rest strong), the expert's budget tiny."""
    game, _ = Game.new(variant, Options(players=players), seed=seed)
    rngs = [random.Random(f"{seed}:{s}") for s in range(players)]
    while game.phase in (Phase.DRAW, Phase.PLAY):
        seat = game.turn
        name = seats.get(seat, "strong")
        policy = TINY if name == "expert" else POLICIES[name]
        v = view(game, seat)
        action = policy(v, rngs[seat])
        if name == "expert":
            assert action in legal_plays(v)
        game.apply(seat, action)  # raises if refused
    return game


@pytest.mark.parametrize("variant", VARIANTS)
def test_expert_plays_legal_moves_to_the_end(variant: str) -> None:
    game = play_round(variant, 2, 0, {0: "expert", 1: "expert"})
    assert game.phase in (Phase.ROUND_OVER, Phase.GAME_OVER)
    game = play_round(variant, 3, 5, {0: "expert", 2: "expert"})
    assert game.phase in (Phase.ROUND_OVER, Phase.GAME_OVER)


def test_expert_plays_whole_games() -> None:
    """A whole tallage game, every round, the expert beside strong (the arena's loop)."""
    game, _ = Game.new("tallage", Options(players=2, target=201), seed=3)
    rngs = [random.Random(0), random.Random(1)]
    while game.phase != Phase.GAME_OVER:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            continue
        seat = game.turn
        policy = TINY if seat == 0 else POLICIES["strong"]
        game.apply(seat, policy(view(game, seat), rngs[seat]))
    assert game.winners


@pytest.mark.parametrize("variant", VARIANTS)
def test_expert_is_deterministic_and_reads_only_the_view(variant: str) -> None:
    """The same view and seed give the same move; so does a game whose hidden cards were dealt
    afresh (the expert cannot tell them apart, and must not)."""
    policy = make_expert(budget=0.01)
    game, _ = Game.new(variant, Options(players=2), seed=12)
    rng = random.Random(4)
    checked = 0
    while game.phase in (Phase.DRAW, Phase.PLAY) and checked < 6:
        seat = game.turn
        v = view(game, seat)
        if len(expert_candidates(v, random.Random(0))) > 1:
            other = sample_game(v, random.Random(checked))  # same view, other hidden cards
            assert view(other, seat) == v
            a = policy(v, random.Random(99))
            assert policy(v, random.Random(99)) == a
            assert policy(view(other, seat), random.Random(99)) == a
            checked += 1
        game.apply(seat, POLICIES["strong"](v, rng))
    assert checked > 0


@pytest.mark.parametrize("variant", VARIANTS)
def test_pruning_plays_a_prefix_of_the_same_search(variant: str) -> None:
    """With ``drop``, a candidate that cannot clear the test is played no further: what is
    played is what the whole search plays (the same values, a prefix of each list), the first
    candidate is played whenever another is, and fewer games are played in all; the choice
    never goes to a candidate played in fewer games than the first."""
    game, _ = Game.new(variant, Options(players=2), seed=21)
    rng = random.Random(5)
    searched = full_total = pruned_total = 0
    while game.phase in (Phase.DRAW, Phase.PLAY) and searched < 4:
        seat = game.turn
        v = view(game, seat)
        candidates = expert_candidates(v, random.Random(0))
        if len(candidates) > 1:
            full = expert_scores(v, random.Random(7), candidates, 240)
            pruned = expert_scores(v, random.Random(7), candidates, 240, drop=(0.25, 2.0))
            worlds = len(full[0])
            assert all(len(values) == worlds for values in full)
            for values, whole in zip(pruned, full, strict=True):
                assert values == whole[: len(values)]
                assert len(values) >= 8 or len(values) == worlds
            assert all(len(values) <= len(pruned[0]) for values in pruned)
            full_total += sum(map(len, full))
            pruned_total += sum(map(len, pruned))
            chosen = expert_choice(pruned)
            assert chosen == 0 or len(pruned[chosen]) == len(pruned[0])
            searched += 1
        game.apply(seat, POLICIES["strong"](v, rng))
    assert searched == 4
    assert pruned_total < full_total
    assert expert_choice([[0.0, 0.0, 0.0], [5.0, 5.0]]) == 0  # played in fewer games


def test_budget_is_a_count_of_simulations() -> None:
    assert "expert" in POLICIES
    assert isinstance(POLICIES["expert"], Expert)
    assert POLICIES["expert"].budget == EXPERT_BUDGET == 0.5
    assert POLICIES["expert"].circuits == EXPERT_CIRCUITS
    for variant in VARIANTS:
        small = expert_simulations(variant, 2, 0.05)
        assert 1 <= small < expert_simulations(variant, 2, 0.5)
        assert expert_simulations(variant, 4, 0.5) < expert_simulations(variant, 2, 0.5)
        assert expert_simulations(variant, 2, 0.5, 2) < expert_simulations(variant, 2, 0.5, 1)
    with pytest.raises(ValueError):
        make_expert(budget=0)
    for circuits in (0, -1, 1.5):
        with pytest.raises(ValueError, match="circuits"):
            make_expert(circuits=circuits)  # type: ignore[arg-type]
    # A value: it pickles, for the arena's worker processes.
    assert pickle.loads(pickle.dumps(make_expert(0.05))) == make_expert(0.05)


def test_expert_leaves_strong_only_for_a_clear_gain() -> None:
    """Strong's choice (the first) is kept unless another is better by a margin, paired game
    by game, beyond the noise."""
    assert expert_choice([[0.0, 0.0, 0.0], [0.1, 0.1, 0.1]]) == 0  # below the margin
    assert expert_choice([[0.0, 0.0, 0.0], [3.0, -2.0, 0.5]]) == 0  # within the noise
    assert expert_choice([[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [0.5, 1.5, 2.5]]) == 1
    # The test is the expert's to set: a lower margin and fewer standard errors leave it sooner.
    assert expert_choice([[0.0, 0.0, 0.0], [0.1, 0.1, 0.1]], margin=0.05) == 1
    assert expert_choice([[0.0, 0.0, 0.0], [3.0, -2.0, 0.5]], margin=0.0, z=0.0) == 1
    assert make_expert(margin=0.1, z=1.0) == Expert(EXPERT_BUDGET, EXPERT_CIRCUITS, 0.1, 1.0)
    assert POLICIES["expert"].prune and POLICIES["expert"].fitted
    bad_settings = (
        {"margin": -0.1},
        {"z": float("nan")},
        {"z": float("inf")},
        {"margin": True},
        {"prune": 1},
        {"fitted": "yes"},
        {"leaf": (1.0, 2.0)},
        {"leaf": (1.0, 2.0, 3.0, 4.0)},
        {"leaf": [0.4, 0.9, -1.6]},
        {"leaf": (0.4, float("nan"), 0.0)},
        {"leaf": (0.4, True, 0.0)},
        {"win": -1.0},
        {"win": float("inf")},
        {"win": False},
    )
    for bad in bad_settings:
        with pytest.raises(ValueError, match=r"margin|z|prune|fitted|leaf|win"):
            make_expert(**bad)  # type: ignore[arg-type]


def test_the_test_to_leave_strongs_choice_is_the_variants_unless_given() -> None:
    from rami.engine.policies import EXPERT_TESTS

    assert set(EXPERT_TESTS) == {"portuguese", "tallage", "simple"}
    assert Expert().test("simple") == (0.25, 2.0)
    assert Expert().test("tallage") == EXPERT_TESTS["tallage"] == (0.1, 1.0)
    assert Expert().test("portuguese") == (0.1, 1.0)
    assert Expert(margin=0.3).test("tallage") == (0.3, 1.0)
    assert Expert(z=0.5).test("simple") == (0.25, 0.5)
    # The expert plays by it: in tallage as one given the variant's test outright, and not
    # always as one given simple's stricter test (in this game, from its fifth move).
    game, _ = Game.new("tallage", Options(players=2), seed="t0")
    mine, given = Expert(), Expert(margin=0.1, z=1.0)
    strict = Expert(margin=0.25, z=2.0)
    differ = 0
    for _ in range(6):
        s = game.turn
        v = view(game, s)
        move = mine(v, random.Random(3))
        assert move == given(v, random.Random(3))
        differ += move != strict(v, random.Random(3))
        game.apply(s, move)
        if game.phase not in (Phase.DRAW, Phase.PLAY):
            break
    assert differ > 0


def _strong_round(variant: str, seed: int, players: int = 2):  # type: ignore[no-untyped-def]
    """Every view of a round of strong against itself, with the game it was made from."""
    game, _ = Game.new(variant, Options(players=players), seed=seed)
    rng = random.Random(seed)
    while game.phase in (Phase.DRAW, Phase.PLAY):
        seat = game.turn
        v = view(game, seat)
        yield game.clone(), v
        game.apply(seat, POLICIES["strong"](v, rng))


@pytest.mark.parametrize("variant", ["portuguese", "simple"])
def test_the_last_discard_never_rules_out_the_true_game(variant: str) -> None:
    """Reading the last discard (``infer``): in games of strong against itself, the game as it
    truly is always agrees with the discard that was made (strong in the thrower's seat would
    throw that card again), while most games sampled at random do not: the evidence is sound
    and says something."""
    from rami.engine.policies import _thrower, _would_throw

    read = agreed = sampled = 0
    for seed in (1, 2):
        for game, v in _strong_round(variant, seed):
            thrower = _thrower(v)
            if thrower is None:
                continue
            assert thrower == (v.seat - 1) % v.players  # type: ignore[operator]
            assert _would_throw(game, v, thrower)
            read += 1
            for k in range(4):
                sampled += 1
                world = sample_game(v, random.Random(k))
                agreed += _would_throw(world, v, thrower)
    assert read > 30
    assert agreed < sampled / 2


def test_the_last_discard_is_read_only_when_it_is_the_throwers() -> None:
    """The round's first turn shows a dealt card; a seat that took the discard this turn sees
    the card below it: neither is read. A seat that drew from the stock reads the top."""
    from rami.engine.policies import _thrower

    game, _ = Game.new("portuguese", Options(players=2), seed=3)  # no dealer's extra card
    v = view(game, game.turn)
    assert v.first_circuit and v.phase == Phase.DRAW and _thrower(v) is None
    game.apply(game.turn, Draw("discard"))
    assert _thrower(view(game, game.turn)) is None  # took the discard: the top is below it
    seat = game.turn
    game.apply(seat, POLICIES["strong"](view(game, seat), random.Random(0)))
    v = view(game, game.turn)
    assert v.phase == Phase.DRAW and _thrower(v) == seat
    game.apply(game.turn, Draw("stock"))
    assert _thrower(view(game, game.turn)) == seat  # drew from the stock: the top is seat's


@pytest.mark.parametrize("variant", ["portuguese", "simple"])
def test_games_sampled_with_the_last_discard_agree_with_it(variant: str) -> None:
    """``sample_games(infer=True)``: the same games for the same seed, consistent with the view,
    those that agree with the last discard first (the rest fill the count when too few do in
    the draws allowed), and many more of them than among games sampled at random; an expert
    that reads it still plays only legal moves and depends only on the view and the seed."""
    from rami.engine.policies import _thrower, _would_throw, sample_games

    checked = inferred = uniform = 0
    for _, v in _strong_round(variant, 4):
        thrower = _thrower(v)
        if thrower is None or checked >= 5:
            continue
        games = sample_games(v, random.Random(checked), 6, infer=True)
        assert len(games) == 6
        assert [g.hands for g in games] == [
            g.hands for g in sample_games(v, random.Random(checked), 6, infer=True)
        ]
        for g in games:
            assert view(g, v.seat) == v
        agreeing = [_would_throw(g, v, thrower) for g in games]
        assert agreeing == sorted(agreeing, reverse=True)
        inferred += sum(agreeing)
        uniform += sum(
            _would_throw(g, v, thrower) for g in sample_games(v, random.Random(checked), 6)
        )
        policy = make_expert(budget=0.02, infer=True)
        move = policy(v, random.Random(8))
        assert move in legal_plays(v)
        assert policy(view(sample_game(v, random.Random(1)), v.seat), random.Random(8)) == move
        checked += 1
    assert checked == 5
    assert inferred >= max(10, 2 * uniform), (inferred, uniform)
    with pytest.raises(ValueError, match="infer"):
        make_expert(infer="yes")  # type: ignore[arg-type]
