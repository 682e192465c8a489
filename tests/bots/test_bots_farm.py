"""Many bots of the bot kit in one process. gRPC's channels of one process share a connection
when their target and settings are the same, and a server bounds the calls open at once on a
connection (``--max-streams-per-connection``): the kit spreads its bots over connections
(``botkit.BOTS_PER_CONNECTION`` a connection), so that a farm of any size plays."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
from bots_support import Tables

from rami.client import botkit
from rami.client.botkit import play
from rami.engine import Discard, Draw, Phase, View
from rami.server.connections import ConnectionLimits
from rami.server.testing import ServerThread
from rami.v1 import game_pb2


def _safe(view: View) -> Draw | Discard:
    """Draw from the stock, throw the card drawn: every round ends when the stock runs out."""
    if view.phase == Phase.DRAW:
        return Draw("stock")
    assert view.hand is not None
    return Discard(view.drawn if view.drawn is not None else view.hand[0])


def test_a_farm_of_more_bots_than_a_connection_carries_plays_every_game(tmp_path: Path) -> None:
    """A connection that may carry as many streams as the kit puts bots on it; that many bots
    of one process sit waiting for their games (each stream open), and more bots then play.
    Before, every bot's stream went on the one connection their channels shared: those beyond
    the bound waited for a place as long as the others' streams lasted, and their games
    stalled."""
    bound = botkit.BOTS_PER_CONNECTION
    limits = ConnectionLimits(per_address=0, streams_per_connection=bound)
    with ServerThread(
        str(tmp_path / "farm.db"),
        connections=limits,
        max_tables_per_client=2 * bound,
        table_creations_per_second=0.0,
    ) as srv:
        channel = grpc.insecure_channel(srv.target)
        try:
            tables = Tables(srv.target, channel)
            # Games that never start (one seat of two taken), and quick ones.
            waiting = [tables.create("simple", 2) for _ in range(bound)]
            quick = [tables.create("simple", 2, round_cap=1, stock_rebuilds=0) for _ in range(3)]

            def streaming() -> int:
                infos = [tables.info(t) for t in waiting]
                return sum(p.connected for info in infos for p in info.seats)

            async def farm() -> list[botkit.BotResult]:
                sitting = [
                    asyncio.ensure_future(play(srv.target, t, _safe, name="Waits")) for t in waiting
                ]
                try:
                    async with asyncio.timeout(30):
                        while await asyncio.to_thread(streaming) < bound:
                            await asyncio.sleep(0.1)
                    players = [
                        play(srv.target, t, _safe, name=f"Bot {i}") for t in quick for i in range(2)
                    ]
                    return await asyncio.wait_for(asyncio.gather(*players), 60)
                finally:
                    for task in sitting:
                        task.cancel()
                    await asyncio.gather(*sitting, return_exceptions=True)

            results = asyncio.run(farm())
        finally:
            channel.close()
    assert len(results) == 6
    assert all(r.final is not None and r.final.phase == game_pb2.PHASE_GAME_OVER for r in results)
