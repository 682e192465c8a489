"""Full games over real sockets: remote Python bots and built-in bots, through the contract."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rami.client.botkit import play, policy_decider
from rami.engine.record import replay_record
from rami.server.services import RECORD_ON_LOOP
from rami.server.testing import FAST, ServerThread, Stubs, long_game
from rami.server.thinking import Workers
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


def test_an_expert_bot_plays_a_whole_game_with_every_move_decided_in_a_worker(
    tmp_path: Path,
) -> None:
    """``expert`` searches at every move: the server seats it, and each of its moves is
    decided in a worker process (the thinker's count is the seat's moves in the record, none
    played by the fallback), then goes through the table's pipeline as any bot's move."""
    config = replace(FAST, expert_budget=0.01, bot_workers=1)
    with ServerThread(str(tmp_path / "rami.db"), config) as srv, Stubs(srv.target) as stubs:
        table_id, owner = _create(stubs, "portuguese", 2, rounds=1)
        added = stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=table_id, policy="expert"),
            metadata=(("rami-token", owner),),
        )
        assert added.seat == 0
        result = asyncio.run(
            asyncio.wait_for(
                play(srv.target, table_id, policy_decider("strong", 1), name="Ana"), 120
            )
        )
        assert result.final is not None and result.final.phase == game_pb2.PHASE_GAME_OVER
        record = json.loads(
            stubs.table.ExportRecord(
                table_service_pb2.ExportRecordRequest(table_id=table_id)
            ).record_json
        )
        replay_record(record)
        mine = [a for r in record["rounds"] for a in r["actions"] if a["seat"] == 0]
        assert mine and not any("auto" in a for a in mine)
        assert srv.server is not None
        assert srv.server.lobby.thinker.decided == len(mine)


def _ana_against_the_expert(
    stubs: Stubs, variant: str, **options: int
) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A 2-seat table: Ana in seat 0, an expert bot in seat 1; (table id, Ana's metadata)."""
    table_id, owner = _create(stubs, variant, 2, **options)
    ana = stubs.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Ana", seat=0)
    )
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id, policy="expert"),
        metadata=(("rami-token", owner),),
    )
    return table_id, (("rami-token", ana.token),)


def _safe_move(
    stubs: Stubs, table_id: str, token: tuple[tuple[str, str], ...], u: table_service_pb2.Update
) -> None:
    """The seat's safe move on update ``u``: draw from the stock, or discard the card drawn."""
    if u.view.phase == game_pb2.PHASE_DRAW:
        action = {"draw": table_service_pb2.DrawAction(source=game_pb2.DRAW_SOURCE_STOCK)}
    else:
        card = u.view.drawn or u.view.hand[-1]
        action = {"discard": table_service_pb2.DiscardAction(card=card)}
    stubs.table.Act(
        table_service_pb2.ActRequest(table_id=table_id, number=u.number, **action),
        metadata=token,
    )


def test_the_table_goes_on_while_its_expert_bot_thinks_and_a_chat_does_not_restart_it(
    tmp_path: Path,
) -> None:
    """While the expert decides (two seconds of search, in a worker), its table answers: a
    chat is posted and seen at once, and the search is not begun again for it (a chat does
    not move the game); the move then lands, decided once."""
    config = replace(FAST, expert_budget=2.0, bot_workers=1)
    with ServerThread(str(tmp_path / "rami.db"), config) as srv, Stubs(srv.target) as stubs:
        assert srv.server is not None
        thinker = srv.server.lobby.thinker
        table_id, token = _ana_against_the_expert(stubs, "portuguese", rounds=1)
        watch = stubs.table.Watch(
            table_service_pb2.WatchRequest(table_id=table_id), metadata=token, timeout=120
        )
        chatted: int | None = None  # the thinker's count when the chat was sent
        moved = 0  # the expert's moves seen since
        try:
            for msg in watch:
                if not msg.HasField("update"):
                    continue
                u = msg.update
                if any(e.HasField("chat_posted") for e in u.events):
                    # Seen while the search goes on: the bot has not moved yet.
                    assert chatted is not None and thinker.decided == chatted
                    continue
                if chatted is not None:
                    moved += 1
                    if moved == 2:  # its draw, then its discard: two moves, each decided once
                        assert thinker.decided == chatted + 2
                        break
                    continue
                v = u.view
                if v.turn == 1:
                    chatted = thinker.decided
                    stubs.table.Chat(
                        table_service_pb2.ChatRequest(table_id=table_id, text="take your time"),
                        metadata=token,
                    )
                else:
                    _safe_move(stubs, table_id, token, u)
        finally:
            watch.cancel()
        assert moved == 2


def test_when_the_experts_worker_dies_its_move_is_the_safe_move_and_a_new_worker_goes_on(
    tmp_path: Path,
) -> None:
    """A worker killed mid-search: the move it was deciding is played by the safe move (marked
    automatic in the record, as a move the server made for the seat), the table goes on, and
    the expert's next move is decided by a new worker."""
    config = replace(FAST, expert_budget=2.0, bot_workers=1)
    with ServerThread(str(tmp_path / "rami.db"), config) as srv, Stubs(srv.target) as stubs:
        assert srv.server is not None
        thinker = srv.server.lobby.thinker
        table_id, token = _ana_against_the_expert(stubs, "simple", target=1000)
        watch = stubs.table.Watch(
            table_service_pb2.WatchRequest(table_id=table_id), metadata=token, timeout=120
        )
        killed = back = 0
        try:
            for msg in watch:
                if not msg.HasField("update"):
                    continue
                u = msg.update
                v = u.view
                if v.turn == 1 and v.phase == game_pb2.PHASE_DRAW and not killed:
                    deadline = time.monotonic() + 30
                    while not thinker.pids():
                        assert time.monotonic() < deadline, "no worker was started"
                        time.sleep(0.01)
                    for pid in thinker.pids():
                        os.kill(pid, signal.SIGKILL)
                        killed += 1
                    continue
                if v.turn == 1:
                    continue  # the expert's turn
                if killed and v.phase == game_pb2.PHASE_DRAW:
                    back += 1  # Ana's turn again: the expert's turn was played
                    if back == 2:
                        break  # and another one since, its worker a new one
                _safe_move(stubs, table_id, token, u)
        finally:
            watch.cancel()
        assert killed == 1
        record = json.loads(
            stubs.table.ExportRecord(
                table_service_pb2.ExportRecordRequest(table_id=table_id)
            ).record_json
        )
        theirs = [a for r in record["rounds"] for a in r["actions"] if a["seat"] == 1]
        # The move its worker died deciding was played by the server (as when a turn's clock
        # runs out: the draw and the discard at once, or the discard): the safe move.
        drew_itself = "auto" not in theirs[0]
        assert theirs[1].get("auto") == "timeout", theirs
        # The next turn's moves are the expert's own, decided by a new worker.
        assert len(theirs) == 4 and not any("auto" in a for a in theirs[2:]), theirs
        assert thinker.decided == drew_itself + 2


def test_a_long_games_record_is_written_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A game's record replays the whole game and writes it out: 0.6 s for the 50,000 updates
    # of a simple game whose 50 rounds all reach the turn cap. On the event loop that would
    # hold up every table of the server for as long: a worker process writes a long game's, as
    # it analyses hands. A usual game's is written at once.
    handed: list[str] = []
    run = Workers.run

    async def spied(self: Workers, fn: Any, *args: Any, **kw: Any) -> Any:
        handed.append(fn.__name__)
        return await run(self, fn, *args, **kw)

    monkeypatch.setattr(Workers, "run", spied)
    server = ServerThread(str(tmp_path / "rami.db"))
    server.start()
    try:
        with Stubs(server.target) as stubs:
            table_id, owner = _create(stubs, "portuguese", 2)

            def export() -> dict[str, Any]:
                record = stubs.table.ExportRecord(
                    table_service_pb2.ExportRecordRequest(table_id=table_id),
                    metadata=(("rami-token", owner),),
                    timeout=60,
                )
                return dict(json.loads(record.record_json))

            for name in ("Ana", "Bo"):
                stubs.lobby.JoinTable(
                    lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name)
                )
            assert server.server is not None
            table = server.server.lobby.tables[table_id]
            server.call(long_game(table, RECORD_ON_LOOP))
            assert len(export()["rounds"]) == 2 and handed == []
            server.call(long_game(table, RECORD_ON_LOOP + 10))
            assert len(export()["rounds"]) == 3 and handed == ["timed_record_json"]
    finally:
        server.stop()
