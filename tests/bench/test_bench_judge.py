"""bench.judge: two policies' differing choices judged by rollouts from the true game."""

from __future__ import annotations

import math
import random
import re
import sys
from pathlib import Path

from bench import judge

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from helpers import C, deal, play

from rami.engine import Declare, Discard

#: Complete with a set: declaring with the card drawn ends the round, the others paying.
COMPLETE = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 8s"
PAYS_21 = "7c 8c 9c 10c Ks Kd Kc 4s 5s 6s Qh 2c 9d"


def test_going_out_is_judged_better_than_breaking_the_hand() -> None:
    game = deal("portuguese", [PAYS_21, COMPLETE], "Ac", "Qd")
    play(game, 1, "draw stock")
    diffs = judge.judge(game, 1, Declare(C("Qd")), Discard(C("As")), 20, "t")
    # Throwing the ace breaks the clean run: the round goes on, and the other may go out first.
    assert all(d > 0 for d in diffs) and sum(diffs) / len(diffs) > 4, diffs
    back = judge.judge(game, 1, Discard(C("As")), Declare(C("Qd")), 20, "t")
    assert back == [-d for d in diffs]  # the same rollouts for both choices
    # Throwing the card drawn keeps the hand complete: it goes out next turn, nearly as well.
    later = judge.judge(game, 1, Declare(C("Qd")), Discard(C("Qd")), 20, "t")
    assert all(d >= 0 for d in later) and sum(later) / len(later) < 1, later
    assert judge.judge(game, 1, Discard(C("Qd")), Discard(C("Qd")), 4, "t") == [0.0] * 4


def test_a_round_end_is_worth_the_points_alone_without_the_bonus() -> None:
    """``--win 0``: going out is worth what the others pay, nothing more (here 21 points,
    the first hand's cards left over, paid to the seat that declares)."""
    game = deal("portuguese", [PAYS_21, COMPLETE], "Ac", "Qd")
    play(game, 1, "draw stock")
    play(game, 1, "declare Qd")
    assert judge.rollout(game, 1, None, random.Random(0), win=0) == 21 / 20
    assert judge.rollout(game, 0, None, random.Random(0), win=0) == -21 / 20
    assert judge.rollout(game, 1, None, random.Random(0)) == 8 + 21 / 20
    assert judge.rollout(game, 1, None, random.Random(0), win=2.5) == 2.5 + 21 / 20


def test_the_interval_is_counted_over_games() -> None:
    mean, half, n = judge.clustered({0: [1.0, 3.0], 1: [2.0], 2: [-1.0, 1.0, 0.0]})
    assert n == 6 and math.isclose(mean, 1.0)
    # Games' sums 4, 2, 0 against their counts 2, 1, 3: residuals 2, 1, -3.
    assert math.isclose(half, 1.96 * math.sqrt(3 / 2 * 14) / 6)
    assert math.isnan(judge.clustered({0: [1.0]})[1])


def test_a_run_is_the_same_for_a_seed() -> None:
    outs: list[list[str]] = [[], []]
    for out in outs:
        summary = judge.run("simple", "strong", "greedy", 2, 3, "s", 2, 5, out.append)
        assert summary[2] == 2
    untimed = [[re.sub(r", \d+ s\)", ")", line) for line in out] for out in outs]
    assert untimed[0] == untimed[1]
    assert "strong and greedy chose differently on 2 of" in "\n".join(outs[0])


def test_expert_options_are_read_or_refused() -> None:
    from rami.engine.policies import Expert

    named = judge.policy_named("expert:margin=0.1,z=1,whole,circuits=3")
    assert named == Expert(circuits=3, margin=0.1, z=1.0, prune=False)
    assert judge.policy_named("expert:costs") == Expert(fitted=False, prune=True)
    assert judge.policy_named("expert:leaf=0.5/1/-0.25") == Expert(leaf=(0.5, 1.0, -0.25))
    assert judge.policy_named("expert:win=0") == Expert(win=0.0)
    assert judge.policy_named("expert:leaf=0/1/0/-0.5/0.5") == Expert(
        leaf=(0.0, 1.0, 0.0, -0.5, 0.5)
    )
    for bad in (
        "expert:strongdraws=1",
        "expert:leaf=1/2",
        "expert:leaf=1/2/3/4",
        "expert:leaf=1/x/2",
        "expert:leaf=1/2/inf",
        "expert:margin=x",
        "expert:margin=-1",
        "expert:win=-2",
        "expert:fast",
        "expert:prune",
        "strong:whole",
    ):
        try:
            judge.policy_named(bad)
        except SystemExit as e:
            assert str(e), bad
        else:
            raise AssertionError(f"{bad} was read")


def test_strongdraws_draws_as_strong_and_plays_on_as_the_expert() -> None:
    import random

    from rami.engine import Game, Options, Phase, view
    from rami.engine.policies import Expert, strong

    asked: list[Phase] = []

    def other(v, rng):  # type: ignore[no-untyped-def]
        asked.append(v.phase)
        return "other's"

    wrapped = judge._strong_draws(other)
    named = judge.policy_named("expert:strongdraws,budget=0.02")
    expert = Expert(budget=0.02)
    game, _ = Game.new("tallage", Options(players=2), seed="sd")
    phases = set()
    for _ in range(40):
        s = game.turn
        v = view(game, s)
        if v.phase == Phase.DRAW:
            assert wrapped(v, random.Random(7)) == strong(v, random.Random(7))
        else:
            assert wrapped(v, random.Random(7)) == "other's"
        got = named(v, random.Random(7))
        want = (strong if v.phase == Phase.DRAW else expert)(v, random.Random(7))
        assert got == want
        phases.add(v.phase)
        game.apply(s, got)
        if game.phase not in (Phase.DRAW, Phase.PLAY):
            break
    assert phases == {Phase.DRAW, Phase.PLAY}
    assert asked and set(asked) == {Phase.PLAY}
