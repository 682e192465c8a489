"""``python -m bench.bot_memory``: what built-in bots' play leaves in a process's memory.

A server decides the quick bots' moves (``strong``, ``greedy``) and the safe moves of away
seats on its event loop, in its own process, for every variant: the solver's caches
(``rami.engine.solver``: a memo per objective, the meld options) grow with that play and stay
within their bounds. This plays seeded four-seat games of strong, strong, greedy and strong,
of each variant in turn, in this process, and prints the CPU time they took and how much the
process's resident memory grew, with the cached entries at the end::

    python -m bench.bot_memory --games 300

Compare trees by running it with another tree's ``engine`` first on the path (the same seeds
give the same games), alternating which runs first: the machine is noisy.
"""

from __future__ import annotations

import argparse
import os
import time

from rami.client.arena import play_game
from rami.engine import solver
from rami.engine.variants import Options

SEATS = ("strong", "strong", "greedy", "strong")
VARIANTS = ("tallage", "portuguese", "simple")


def rss_mb() -> float:
    """This process's resident memory (Linux), in MB."""
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bot_memory")
    parser.add_argument("--games", type=int, default=300, help="games of each variant")
    args = parser.parse_args()
    if args.games < 1:
        parser.error("--games needs at least 1")
    before = rss_mb()
    start = time.process_time()
    for n in range(args.games):
        for variant in VARIANTS:
            play_game(variant, Options(players=4), f"bot-memory:{n}", SEATS)
    cpu = time.process_time() - start
    memos = [len(s.memo) for s in solver._SEARCHES.values()]
    print(
        f"{args.games * len(VARIANTS)} games in {cpu:.1f} s of CPU; resident memory "
        f"+{rss_mb() - before:.1f} MB; solver: {len(memos)} searches, {sum(memos)} memo "
        f"entries, {len(solver._OPTIONS)} meld options ({solver.__file__})"
    )


if __name__ == "__main__":
    main()
