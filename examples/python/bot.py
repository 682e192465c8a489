"""A small Rami bot in Python: its own decide function, the bot kit for everything else.

The bot kit (``rami.client.botkit``) joins the table, watches it, calls ``decide`` with the
engine's view whenever it is this seat's turn, sends the action with the view's number,
resumes after a dropped stream and answers a refusal with a safe move. All a bot writes is one
function from a view to an action.

This one, "Tidy", plays a simple heuristic of its own:

- draw: the discard when it goes straight into a meld of the hand (in tallage, when it can be
  laid at once, as the rules require), else the stock;
- lay and declare: whatever finishes (a declaration, a whole-hand finish), then the opening,
  then the most cards it can lay;
- discard: among the cards the best split leaves over, the *loneliest*: the one with fewest
  neighbours in hand (same rank, or same suit within two ranks), the costliest on a tie;
  never a joker while another card can go.

Every action it returns comes from ``rami.engine.plays``, so it is always legal.

    python examples/python/bot.py HOST:PORT TABLE_ID [--name NAME] [--seat N]
    python examples/python/bot.py HOST:PORT --create tallage --bots strong,greedy
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import grpc

from rami.client.botkit import BotResult, play
from rami.engine import JOKER, Action, AddToMeld, Card, Discard, Draw, Lay, NewMeld, Phase, View
from rami.engine.plays import declarations, discard_completions, hand_deadwood_values, lays
from rami.engine.solver import deadwood_split
from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc

VARIANTS = {
    "portuguese": game_pb2.VARIANT_PORTUGUESE,
    "tallage": game_pb2.VARIANT_TALLAGE,
    "simple": game_pb2.VARIANT_SIMPLE,
}


# -- the decide function --------------------------------------------------------------------


def _split(v: View, hand: list[Card]) -> tuple[list[Card], tuple[int, ...]]:
    """The cards the best split of ``hand`` leaves over, and what each card costs."""
    values = hand_deadwood_values(v)
    split = deadwood_split(
        hand,
        values,
        need_run=v.variant.sets_need_run,
        jokers_per_meld=v.options.jokers_per_meld,
    )
    return list(split.left), values


def _neighbours(card: Card, hand: list[Card]) -> int:
    """Cards of ``hand`` that could share a meld with ``card``."""
    count = 0
    for other in hand:
        if other in (JOKER, card):
            continue
        if other.rank == card.rank or (
            other.suit == card.suit and abs(other.rank - card.rank) <= 2
        ):
            count += 1
    return count


def _laid(lay: Lay) -> int:
    """Cards a lay takes from the hand."""
    return sum(len(s.cards) if isinstance(s, NewMeld | AddToMeld) else 1 for s in lay.steps)


def decide(v: View) -> Action:
    """Tidy's move for the view ``v`` (always the seat's turn when the kit calls it)."""
    assert v.hand is not None
    hand = list(v.hand)
    if v.phase == Phase.DRAW:
        top = v.discard_top
        if "discard" in v.draw_sources and top is not None:
            if v.variant.must_lay_discard:
                found = discard_completions(v)  # a discard taken must be laid at once
                if found:
                    return Draw("discard", max(found, key=_laid))
            else:
                left, _ = _split(v, [*hand, top])
                if top not in left:
                    return Draw("discard")
        return Draw("stock")
    if v.variant.declares:
        found_declarations = declarations(v)
        if found_declarations:
            return found_declarations[0]
    else:
        found_lays = lays(v, hand)
        if found_lays:
            return max(found_lays, key=_laid)
    left, values = _split(v, hand)
    pool = [c for c in (left or hand) if c != JOKER] or hand
    return Discard(min(pool, key=lambda c: (_neighbours(c, hand), -values[c], c)))


# -- running it -----------------------------------------------------------------------------


def create_table(target: str, variant: str, bots: list[str]) -> str:
    """A new table of ``variant`` with built-in bots in every seat but one; its id."""
    with grpc.insecure_channel(target) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        created = lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="Tidy's table",
                variant=VARIANTS[variant],
                options=game_pb2.Options(players=len(bots) + 1),
            ),
            timeout=10,
        )
        owner = (("rami-token", created.owner_token),)
        for policy in bots:
            lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=created.table.table_id, policy=policy),
                metadata=owner,
                timeout=10,
            )
        return created.table.table_id


def summary(result: BotResult) -> str:
    """One line: the seat, what it did, and how the game ended."""
    line = (
        f"tidy: seat {result.seat}: {result.actions} actions, {len(result.refused)} refused, "
        f"{result.reconnects} reconnects"
    )
    if result.final is None:
        return line + "; the game did not finish"
    totals = "/".join(str(p.total) for p in result.final.players)
    winners = ",".join(str(w) for w in result.final.winners)
    return (
        f"{line}; game over after {len(result.final.results)} rounds: totals {totals}, "
        f"winners {winners}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Tidy, an example Rami bot.")
    parser.add_argument("target", metavar="HOST:PORT")
    parser.add_argument("table", nargs="?", help="the table's id (or use --create)")
    parser.add_argument("--name", default="Tidy")
    parser.add_argument("--seat", type=int, default=None)
    parser.add_argument("--create", choices=sorted(VARIANTS), help="create a table first")
    parser.add_argument(
        "--bots",
        default="strong,greedy,random",
        help="built-in bots for --create (comma-separated policies)",
    )
    parser.add_argument("--timeout", type=float, default=None, help="give up after seconds")
    args = parser.parse_args(argv)
    table = args.table
    if args.create:
        table = create_table(args.target, args.create, args.bots.split(","))
        print(f"tidy: created table {table}", file=sys.stderr)
    if not table:
        parser.error("give a table id, or --create VARIANT")
    game = play(args.target, table, decide, name=args.name, seat=args.seat)
    try:
        result = asyncio.run(asyncio.wait_for(game, args.timeout) if args.timeout else game)
    except grpc.aio.AioRpcError as e:
        print(f"tidy: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    except TimeoutError:
        print(f"tidy: the game did not end within {args.timeout:g} s", file=sys.stderr)
        return 3
    print(summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
