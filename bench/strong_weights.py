"""``python -m bench.strong_weights``: the strong policy with other weights against itself.

Plays ``--deals`` duplicate two-player deals of a variant (each deal once from each seat)
between ``strong`` with the weights changed as given (``NAME=VALUE``, the fields of
:class:`rami.engine.policies.StrongWeights`) and ``strong`` as it is, and prints the paired
difference in win rate and in points per round, each with its 95% interval::

    python -m bench.strong_weights simple no_set=4 no_run=4 --deals 1000 --seed w2 --jobs 2

How the weights in ``rami.engine.policies`` were chosen: docs/bots.md, "Strong's weights".
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence

from rami.client.arena import ArenaConfig, pair_difference, run_arena, summarise
from rami.engine.policies import STRONG_WEIGHTS, Strong, strong


def _value(field: dataclasses.Field[object], text: str) -> object:
    if field.type in (bool, "bool"):
        if text not in ("0", "1", "true", "false"):
            raise ValueError(f"{field.name} is true or false, not {text!r}")
        return text in ("1", "true")
    return float(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.strong_weights", description=__doc__)
    parser.add_argument("variant", choices=sorted(STRONG_WEIGHTS))
    parser.add_argument("changes", nargs="+", metavar="NAME=VALUE")
    parser.add_argument("--deals", type=int, default=300)
    parser.add_argument("--seed", default="w1")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    fields = {f.name: f for f in dataclasses.fields(STRONG_WEIGHTS[args.variant])}
    changes: dict[str, object] = {}
    for change in args.changes:
        name, _, text = change.partition("=")
        if name not in fields:
            parser.error(f"no weight {name!r}: choose from {', '.join(fields)}")
        try:
            changes[name] = _value(fields[name], text)
        except ValueError as e:
            parser.error(str(e))
    weights = dataclasses.replace(STRONG_WEIGHTS[args.variant], **changes)
    policies = {"changed": Strong(((args.variant, weights),)), "strong": strong}
    config = ArenaConfig(args.variant, 2, ("changed", "strong"), args.deals, args.seed, True)
    started = time.perf_counter()
    result = run_arena(config, jobs=args.jobs, policies=policies)
    stats = {s.policy: s for s in summarise(result)}
    win, points = pair_difference(stats["changed"], stats["strong"])
    print(
        f"{args.variant}, {args.deals} duplicate deals, seed {args.seed}: strong with "
        f"{', '.join(args.changes)} − strong: win rate {win.mean:+.3f} ± {win.half:.3f}, "
        f"points/round {points.mean:+.2f} ± {points.half:.2f} "
        f"({time.perf_counter() - started:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
