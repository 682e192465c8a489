"""``python -m bench.judge``: where two policies choose differently, which choice was better.

An arena measures a policy by whole games: a change that alters a few moves in a hundred needs
thousands of games to show (the expert's records take 11 to 35 hours of a core per variant).
This looks at those moves alone. It plays seeded games, policy A in seat 0 and ``strong`` in
the others, and at each of A's decisions asks policy B too, on the same view with the same
random source. Where they choose differently, it judges both choices from the **true** game
(every hand as dealt, not a sample): each is played, then strong plays every seat to the end
of the round, ``--rollouts`` times, the stock shuffled afresh for each rollout (the same
shuffles for both choices, so that the luck of the draw cancels); a rollout is worth what the
expert values a round's end at (``rami.engine.policies._value``: 8 cards for going out, less
8 for another's finish, plus a twentieth of a card per point the others paid more; with
``--win 0`` the points alone, the game's own measure, ``--win W`` W cards for going out). It
prints each such decision with A's choice less B's, and the mean over all of them with its 95%
interval, counted over games (the decisions of one game are not independent).

The judge plays on with strong, so it says which choice is better when strong plays the rest
of the round: the one-step improvement a search over strong's play aims at. Policies:

- ``expert``, ``strong``, ``greedy``, ``random``: the built-in policies;
- ``expert:OPTIONS``, the expert otherwise: ``budget=S``, ``circuits=N``, ``margin=C`` and ``z=Z``
  (``make_expert``'s: the least gain in cards, and in standard errors, to leave strong's
  choice); ``whole``: every candidate played in every sampled game (by default one that cannot
  clear that test is played no further); ``costs``: a simulation that stops mid-round valued by
  the difference of strong's costs, as before the fitted value of ``bench.leaf_values``;
  ``leaf=A/B/C`` (or ``A/B/C/D/E``): a round still going valued by that fit, in place of the
  expert's for the variant (``bench.leaf_values`` prints them); ``blind``: not told which cards
  the others are known to hold (``View.known`` emptied: its sampled games deal every hidden card
  at random); ``infer``: sampled games that agree with the last discard (``Expert.infer``),
  ``uniform``: sampled games that need not; ``strongdraws``: strong's draw (the draw not
  searched: judged against ``expert``, the decisions that differ are the draws alone);
  ``win=W``: going out worth W cards in its search (``Expert.win``). For instance
  ``expert:circuits=3``, ``expert:margin=0.1,z=1`` or ``expert:costs,whole``.

::

    python -m bench.judge --variant portuguese --a expert --b expert:blind --decisions 60
    python -m bench.judge --variant simple --a expert --b strong --decisions 60

Deterministic for a seed; bounded by ``--decisions`` and ``--games``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

from rami.engine import POLICIES, VARIANTS, Action, Game, Phase, View, view
from rami.engine.policies import _WIN, _value, make_expert, strong

from .seeded import seat_zero_turns

Policy = Callable[[View, random.Random], Action]


def _blind(policy: Policy) -> Policy:
    def blind(v: View, rng: random.Random) -> Action:
        return policy(dataclasses.replace(v, known=tuple(() for _ in v.known)), rng)

    return blind


def _strong_draws(policy: Policy) -> Policy:
    def strong_draws(v: View, rng: random.Random) -> Action:
        return strong(v, rng) if v.phase == Phase.DRAW else policy(v, rng)

    return strong_draws


def policy_named(name: str) -> Policy:
    """A built-in policy, or the expert with options (see the module)."""
    base, _, spec = name.partition(":")
    if base not in POLICIES:
        raise SystemExit(f"no policy {base!r}: {', '.join(POLICIES)}")
    if not spec:
        return POLICIES[base]
    if base != "expert":
        raise SystemExit(f"only the expert takes options, not {base!r}")
    settings: dict[str, float | int] = {}
    blind = draws = False
    for item in spec.split(","):
        key, _, value = item.partition("=")
        try:
            if key == "blind" and not value:
                blind = True
            elif key == "strongdraws" and not value:
                draws = True
            elif key == "whole" and not value:
                settings["prune"] = False
            elif key == "costs" and not value:
                settings["fitted"] = False
            elif key in ("infer", "uniform") and not value:
                settings["infer"] = key == "infer"  # type: ignore[assignment]
            elif key == "budget":
                settings["budget"] = float(value)
            elif key == "circuits":
                settings["circuits"] = int(value)
            elif key in ("margin", "z", "win"):
                settings[key] = float(value)
            elif key == "leaf":
                fit = tuple(float(x) for x in value.split("/"))
                if len(fit) not in (3, 5):
                    raise ValueError(item)
                settings["leaf"] = fit  # type: ignore[assignment]
            else:
                raise ValueError(item)
        except ValueError:
            raise SystemExit(
                f"not an expert option: {item!r} "
                "(blind, strongdraws, whole, costs, infer, uniform, leaf=A/B/C[/D/E], budget=S, "
                "circuits=N, margin=C, z=Z, win=W)"
            ) from None
    try:
        policy = make_expert(**settings)  # type: ignore[arg-type]
    except ValueError as e:
        raise SystemExit(str(e)) from None
    if draws:
        policy = _strong_draws(policy)
    return _blind(policy) if blind else policy


def rollout(
    game: Game, seat: int, action: Action | None, rng: random.Random, win: float = _WIN
) -> float:
    """``action`` (if any) played at the true ``game``, strong for every seat to the round's
    end (the stock shuffled by ``rng`` first): its value to ``seat``, in cards (``win`` of
    them for going out)."""
    g = game.clone()
    rng.shuffle(g.stock)
    g.shuffle_seed = rng.getrandbits(64).to_bytes(8, "big")  # the stock's rebuilds
    if action is not None:
        g.apply(seat, action)
    moves = 0
    while g.phase in (Phase.DRAW, Phase.PLAY):
        s = g.turn
        g.apply(s, strong(view(g, s), rng))
        moves += 1
        if moves > 10_000:  # the rules end every round (the stock's rebuilds are bounded)
            raise RuntimeError("a rollout that does not end")
    return _value(g, seat, win=win)


def judge(
    game: Game, seat: int, a: Action, b: Action, rollouts: int, seed: str, win: float = _WIN
) -> list[float]:
    """A's value less B's in each of ``rollouts`` common rollouts."""
    out = []
    for k in range(rollouts):
        va = rollout(game, seat, a, random.Random(f"{seed}/{k}"), win)
        vb = rollout(game, seat, b, random.Random(f"{seed}/{k}"), win)
        out.append(va - vb)
    return out


def _kind(action: Action) -> str:
    return type(action).__name__.lower()


def clustered(per_game: dict[int, list[float]]) -> tuple[float, float, int]:
    """The mean of every value, and its 95% half-interval counted over games (a ratio
    estimator: each game's sum against its count); and the count."""
    sums = {g: math.fsum(v) for g, v in per_game.items() if v}
    counts = {g: len(v) for g, v in per_game.items() if v}
    n = sum(counts.values())
    if not n:
        return 0.0, math.nan, 0
    mean = math.fsum(sums.values()) / n
    k = len(sums)
    if k < 2:
        return mean, math.nan, n
    spread = math.fsum((sums[g] - mean * counts[g]) ** 2 for g in sums)
    return mean, 1.96 * math.sqrt(k / (k - 1) * spread) / n, n


def run(
    variant: str,
    a_name: str,
    b_name: str,
    decisions: int,
    rollouts: int,
    seed: str,
    players: int,
    games: int,
    out: Callable[[str], None] = print,
    win: float = _WIN,
) -> tuple[float, float, int]:
    """Play until ``decisions`` differing decisions are judged (or ``games`` games); print
    each and the summary. Returns the summary (mean, half-interval, decisions)."""
    pa, pb = policy_named(a_name), policy_named(b_name)
    per_game: dict[int, list[float]] = defaultdict(list)
    by_kind: dict[str, list[float]] = defaultdict(list)
    asked = judged = 0
    started = time.perf_counter()
    for number, game, v, rng in seat_zero_turns(variant, players, seed, games):
        if judged >= decisions:
            break
        source = rng.getrandbits(32)
        a = pa(v, random.Random(source))
        b = pb(v, random.Random(source))
        asked += 1
        if a != b:
            diffs = judge(game, 0, a, b, rollouts, f"{seed}:{number}:{game.number}", win)
            mean = math.fsum(diffs) / len(diffs)
            per_game[number].append(mean)
            judged += 1
            by_kind[_kind(a) if _kind(a) == _kind(b) else "other"].append(mean)
            spread = math.fsum((d - mean) ** 2 for d in diffs) / max(1, len(diffs) - 1)
            half = 1.96 * math.sqrt(spread / len(diffs))
            total, total_half, n = clustered(per_game)
            out(
                f"{n:4d}  game {number:3d} move {game.number:4d}: {a_name} {_show(a)}, "
                f"{b_name} {_show(b)}: {mean:+.2f} ± {half:.2f}   "
                f"(all: {total:+.3f} ± {total_half:.3f}, {time.perf_counter() - started:.0f} s)"
            )
        game.apply(0, a)
    total, total_half, n = clustered(per_game)
    out("")
    out(
        f"{variant}, {players} players: {a_name} and {b_name} chose differently on {n} of "
        f"{asked} decisions, in {len(per_game)} games"
    )
    interval = (
        f"± {total_half:.3f} (95%, over games)" if not math.isnan(total_half) else "(one game)"
    )
    out(f"{a_name} − {b_name}, cards a decision: {total:+.3f} {interval}")
    for kind, values in sorted(by_kind.items()):
        m = math.fsum(values) / len(values)
        better = sum(1 for x in values if x > 0)
        out(f"  {kind:8s} {len(values):4d} decisions, mean {m:+.3f}, {a_name} better on {better}")
    return total, total_half, n


def _show(action: Action) -> str:
    from rami.engine import format_action

    return format_action(action)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.judge", description=__doc__)
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="simple")
    parser.add_argument("--a", default="expert", help="the policy that plays seat 0")
    parser.add_argument("--b", default="strong", help="the policy asked beside it")
    parser.add_argument("--decisions", type=int, default=60, help="differing decisions judged")
    parser.add_argument("--rollouts", type=int, default=100, help="rollouts per choice")
    parser.add_argument("--players", type=int, default=2, choices=range(2, 7))
    parser.add_argument("--games", type=int, default=200, help="at most this many games")
    parser.add_argument("--seed", default="judge")
    parser.add_argument(
        "--win",
        type=float,
        default=_WIN,
        help="what going out is worth in a rollout, in cards, besides the points paid "
        "(0: the points alone, the game's own measure)",
    )
    args = parser.parse_args(argv)
    if args.decisions < 1 or args.rollouts < 2 or args.games < 1:
        parser.error("--decisions and --games are at least 1, --rollouts at least 2")
    if not 0 <= args.win < math.inf:
        parser.error("--win is 0 or more")
    run(
        args.variant,
        args.a,
        args.b,
        args.decisions,
        args.rollouts,
        args.seed,
        args.players,
        args.games,
        win=args.win,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
