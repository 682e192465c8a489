"""Full games over real sockets: remote Python bots and built-in bots, through the contract."""

from __future__ import annotations

import asyncio
import json

import pytest

from rami.client.botkit import play, policy_decider
from rami.engine.record import replay_record
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

VARIANTS = {
    "portuguese": game_pb2.VARIANT_PORTUGUESE,
    "tallage": game_pb2.VARIANT_TALLAGE,
    "simple": game_pb2.VARIANT_SIMPLE,
}


def _create(stubs: Stubs, variant: str, players: int, **options: int) -> tuple[str, str]:
    resp = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name=f"{variant} test",
            variant=VARIANTS[variant],
            options=game_pb2.Options(players=players, **options),
        )
    )
    return resp.table.table_id, resp.owner_token


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_remote_bots_and_built_in_bots_play_a_whole_game(
    server: ServerThread, stubs: Stubs, variant: str
) -> None:
    options = {"rounds": 2} if variant == "portuguese" else {"target": 201}
    table_id, owner = _create(stubs, variant, 4, **options)
    md = (("rami-token", owner),)
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy"), metadata=md
    )
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id, policy="strong"), metadata=md
    )

    async def both() -> list:
        return await asyncio.gather(
            # One bot kit on the Play stream (its default), one with Watch and unary Act.
            play(server.target, table_id, policy_decider("strong", 1), name="Ana"),
            play(server.target, table_id, policy_decider("greedy", 2), name="Rui", stream=False),
        )

    results = asyncio.run(asyncio.wait_for(both(), 120))
    for r in results:
        assert r.final is not None and r.final.phase == game_pb2.PHASE_GAME_OVER
        assert not r.refused
        assert r.actions > 0
    final = results[0].final
    totals = [p.total for p in final.players]
    # The totals are the sums of every round's points, and the lowest total wins.
    sums = [sum(r.points[s] for r in final.results) for s in range(4)]
    assert totals == sums
    assert list(final.winners) == [s for s, t in enumerate(totals) if t == min(totals)]
    if variant == "portuguese":
        assert len(final.results) == 2
    else:
        assert max(totals) >= 201 or len(final.results) >= final.options.round_cap
    record = stubs.table.ExportRecord(table_service_pb2.ExportRecordRequest(table_id=table_id))
    assert record.complete
    # The record replays: every seed matches its hash, every deal its seed, every result.
    game = replay_record(json.loads(record.record_json))
    assert list(game.totals) == totals
