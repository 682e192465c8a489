"""``python -m bench.leaf_values``: what a position in the middle of a round is worth, measured.

The expert's simulations stop at its next draws and value the position there
(``rami.engine.policies._value``); a round that ended in a simulation is valued by what was
paid and who went out. This measures what positions of the first kind are worth in the units
of the second: it plays seeded games of ``strong`` against itself, and at seat turns chosen at
random (a seat about to draw, where the expert's simulations stop) it records that seat's
facts as the expert's leaf reads them (strong's cost of each hand, what each hand would pay if
another went out now, the stock) and plays the round on from the true game with strong for
every seat, ``--rollouts`` times with the stock reshuffled (``bench.judge.rollout``), to its
end, valued as the expert values a round's end. It writes one CSV row a position and prints
a least-squares fit of the value on the leaf's facts, with the fit's error against the
expert's own leaf value, on positions held out::

    python -m bench.leaf_values --variant portuguese --positions 2000 --out /tmp/p.csv

Deterministic for a seed; bounded by ``--positions``.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import time
from collections.abc import Sequence

from rami.engine import Game, NextRound, Options, Phase, view
from rami.engine.policies import _WIN, EXPERT_WINS, _leaf_facts, _near_terms, _value, strong

from .judge import rollout

FIELDS = (
    "game",
    "seat",
    "players",
    "stock",
    "own_cost",
    "others_cost",
    "own_exposure",
    "others_exposure",
    "risk",
    "chance",
    "leaf",
    "value",
)


def facts(game: Game, seat: int) -> dict[str, float]:
    """The leaf's facts of ``seat`` in ``game``: strong's cost of each hand and what each would
    pay (``_leaf_facts``, as the expert's leaf reads them), the seat's own and the others'
    mean."""
    n = game.players
    each = [_leaf_facts(game, s) for s in range(n)]
    costs, exposures = zip(*each, strict=True)
    risk, chance = _near_terms(each, seat)
    others = [s for s in range(n) if s != seat]
    return {
        "players": n,
        "stock": len(game.stock),
        "own_cost": costs[seat],
        "others_cost": sum(costs[s] for s in others) / len(others),
        "own_exposure": exposures[seat],
        "others_exposure": sum(exposures[s] for s in others) / len(others),
        "risk": risk,
        "chance": chance,
        "leaf": _value(game, seat, fitted=False),
    }


def collect(
    variant: str,
    players: int,
    count: int,
    rollouts: int,
    seed: str,
    share: float,
    win: float = _WIN,
) -> list[dict[str, float]]:
    """``count`` positions of seeded strong games, about ``share`` of the seats' draws."""
    rows: list[dict[str, float]] = []
    pick = random.Random(f"{seed}/pick")
    number = 0
    while len(rows) < count:
        game, _ = Game.new(variant, Options(players=players), f"{seed}:{number}")
        rng = random.Random(f"{seed}:{number}")
        while game.phase != Phase.GAME_OVER and len(rows) < count:
            if game.phase == Phase.ROUND_OVER:
                game.apply(None, NextRound())
                continue
            seat = game.turn
            if game.phase == Phase.DRAW and pick.random() < share:
                row = {"game": number, "seat": seat, **facts(game, seat)}
                outcomes = [
                    rollout(
                        game, seat, None, random.Random(f"{seed}:{number}:{len(rows)}:{k}"), win
                    )
                    for k in range(rollouts)
                ]
                row["value"] = sum(outcomes) / rollouts
                rows.append(row)
            game.apply(seat, strong(view(game, seat), rng))
        number += 1
    return rows


def features(row: dict[str, float], pays: bool = True, near: bool = False) -> list[float]:
    """The fit's inputs: a constant, the difference of costs, and (``pays``) of what the hands
    would pay (in cards, a point being 1/20 of one); with ``near``, the risk and the chance
    (``_value``'s fit of five: a difference of pays of 0 when not ``pays``)."""
    out = [1.0, float(row["others_cost"]) - float(row["own_cost"])]
    if pays:
        out.append((float(row["others_exposure"]) - float(row["own_exposure"])) / 20)
    if near:
        out += [float(row["risk"]) / 20, float(row["chance"]) / 20]
    return out


def least_squares(xs: list[list[float]], ys: list[float]) -> list[float]:
    """The coefficients minimising the squared error (normal equations, Gauss-Jordan)."""
    k = len(xs[0])
    a = [[math.fsum(x[i] * x[j] for x in xs) for j in range(k)] for i in range(k)]
    b = [math.fsum(x[i] * y for x, y in zip(xs, ys, strict=True)) for i in range(k)]
    for col in range(k):
        pivot = max(range(col, k), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        b[col], b[pivot] = b[pivot], b[col]
        if abs(a[col][col]) < 1e-12:
            raise ValueError("the facts do not tell the coefficients apart")
        for r in range(k):
            if r != col:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col], strict=True)]
                b[r] -= f * b[col]
    return [b[i] / a[i][i] for i in range(k)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.leaf_values", description=__doc__)
    parser.add_argument("--variant", required=True, choices=("portuguese", "tallage", "simple"))
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--positions", type=int, default=1000)
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--share", type=float, default=0.15, help="of the draws, recorded")
    parser.add_argument("--seed", default="leaf1")
    parser.add_argument("--out", help="CSV of the positions")
    parser.add_argument(
        "--without-pays", action="store_true", help="fit without the difference of pays"
    )
    parser.add_argument(
        "--near",
        action="store_true",
        help="fit the risk and the chance too (pays times how near another is to going out)",
    )
    parser.add_argument(
        "--win",
        type=float,
        help="what going out is worth at a round's end, in cards, besides the points paid "
        "(by default the expert's for the variant, EXPERT_WINS)",
    )
    args = parser.parse_args(argv)
    if args.win is None:
        args.win = EXPERT_WINS[args.variant]
    if not 0 <= args.win < math.inf:
        parser.error("--win is 0 or more")
    if not (args.positions >= 10 and args.rollouts >= 1 and 0 < args.share <= 1):
        parser.error("--positions is at least 10, --rollouts at least 1, --share in (0, 1]")
    if not 2 <= args.players <= 6:
        parser.error("--players is 2 to 6")
    t0 = time.monotonic()
    rows = collect(
        args.variant, args.players, args.positions, args.rollouts, args.seed, args.share, args.win
    )
    if args.out:
        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, FIELDS)
            writer.writeheader()
            writer.writerows(rows)
    # Fit on the positions of even games, judge on the odd ones (positions of one game are
    # not independent).
    fit = [r for r in rows if int(r["game"]) % 2 == 0]
    held = [r for r in rows if int(r["game"]) % 2 == 1]
    pays, near = not args.without_pays, args.near
    coef = least_squares([features(r, pays, near) for r in fit], [float(r["value"]) for r in fit])

    def rmse(predict: object, part: list[dict[str, float]]) -> float:
        assert callable(predict)
        return math.sqrt(math.fsum((predict(r) - float(r["value"])) ** 2 for r in part) / len(part))

    def fitted(r: dict[str, float]) -> float:
        return math.fsum(c * x for c, x in zip(coef, features(r, pays, near), strict=True))

    def leaf(r: dict[str, float]) -> float:
        return float(r["leaf"])

    print(
        f"{args.variant}, {args.players} players: {len(rows)} positions "
        f"({len(fit)} fitted, {len(held)} held out), {args.rollouts} rollouts each, "
        f"{time.monotonic() - t0:.0f} s"
    )
    names = ["1", "Δcost", *(["Δpays/20"] if pays else []), *(["risk/20", "chance/20"] * near)]
    print("value ≈ " + " + ".join(f"{c:+.4f}·{n}" for c, n in zip(coef, names, strict=True)))
    expert_leaf = [*coef[:2], coef[2] if pays else 0.0, *coef[-2:]] if near else coef
    print("as the expert's leaf (expert:leaf=...): " + "/".join(f"{c:.4f}" for c in expert_leaf))
    if held:
        print(
            f"held-out error (rms, cards): fitted {rmse(fitted, held):.3f}, "
            f"the difference of costs {rmse(leaf, held):.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
