"""Retries after a lost answer apply once (issue 12, defect 9): every call that changes
something takes an optional request id, and the same call sent again with it changes nothing
more and gets the first answer, on the same server or after a restart; the same id with
another request, or a malformed id, is refused and changes nothing; one client's id never meets
another's. Then the bot kit and rami-client: they send ids, and after an answer lost on the
network (a proxy that drops what the server sends, then cuts the connection) they send the
same call again with the same id.

Everything runs against a real server on 127.0.0.1; every call and every wait is bounded.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from reliability_support import LossyProxy, actions_of, channel
from server_support import RPC_TIMEOUT, error_of, md, without_presence

from rami.client.botkit import play, policy_decider
from rami.client.link import Link
from rami.engine import Action, View
from rami.server.testing import ServerThread, Stubs, deck_to_proto, stacked_deck
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

T = RPC_TIMEOUT
TALLAGE = game_pb2.VARIANT_TALLAGE


def new_id() -> str:
    """A request id as a client should make it: 24 random bytes, 32 characters."""
    return secrets.token_urlsafe(24)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path / "rami.db")) as srv:
        yield srv


@pytest.fixture
def stubs(server: ServerThread) -> Iterator[Stubs]:
    with Stubs(server.target) as s:
        yield s


def create(stubs: Stubs, players: int = 2, **fields: Any) -> lobby_service_pb2.CreateTableResponse:
    request = lobby_service_pb2.CreateTableRequest(
        variant=TALLAGE, options=game_pb2.Options(players=players, round_cap=1), **fields
    )
    response: lobby_service_pb2.CreateTableResponse = stubs.lobby.CreateTable(request, timeout=T)
    return response


def join(
    stubs: Stubs, table_id: str, name: str, **fields: Any
) -> lobby_service_pb2.JoinTableResponse:
    request = lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name, **fields)
    response: lobby_service_pb2.JoinTableResponse = stubs.lobby.JoinTable(request, timeout=T)
    return response


def table_now(stubs: Stubs, table_id: str) -> lobby_service_pb2.TableInfo:
    info: lobby_service_pb2.TableInfo = stubs.lobby.GetTable(
        lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T
    ).table
    return info


def history(stubs: Stubs, table_id: str) -> list[table_service_pb2.Update]:
    """Every update of the table so far, as a spectator sees them."""
    last = table_now(stubs, table_id).number
    if last == 0:
        return []
    call = stubs.table.Watch(table_service_pb2.WatchRequest(table_id=table_id, after=0), timeout=T)
    out = []
    try:
        for msg in call:
            if msg.HasField("update"):
                out.append(msg.update)
                if msg.update.number >= last:
                    break
    finally:
        call.cancel()
    return out


def events(stubs: Stubs, table_id: str, kind: str) -> list[Any]:
    """Every event of one kind in the table's history."""
    return [
        getattr(e, kind)
        for u in history(stubs, table_id)
        for e in u.events
        if e.WhichOneof("kind") == kind
    ]


def view_of(stubs: Stubs, table_id: str, token: str) -> game_pb2.View:
    call = stubs.table.Watch(
        table_service_pb2.WatchRequest(table_id=table_id), metadata=md(token), timeout=T
    )
    try:
        for msg in call:
            if msg.HasField("update"):
                view: game_pb2.View = msg.update.view
                return view
    finally:
        call.cancel()
    raise AssertionError("the watch ended without a snapshot")


def refused(call: Callable[[], Any]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    err = error_of(caught.value)
    return err.code, err.reason


def two_players(stubs: Stubs) -> tuple[str, dict[int, str]]:
    """A started 2-seat tallage game of two remote players: its id and their tokens."""
    created = create(stubs)
    table_id = created.table.table_id
    tokens = {}
    for name in ("Ana", "Bo"):
        joined = join(stubs, table_id, name)
        tokens[joined.seat] = joined.token
    assert table_now(stubs, table_id).status == lobby_service_pb2.TABLE_STATUS_PLAYING
    return table_id, tokens


def first_move(view: game_pb2.View) -> table_service_pb2.ActRequest:
    """A legal move of the seat to move: draw from the stock, or discard when it plays first."""
    request = table_service_pb2.ActRequest(table_id="", number=view.number)
    if view.phase == game_pb2.PHASE_DRAW:
        request.draw.source = game_pb2.DRAW_SOURCE_STOCK
    else:
        request.discard.card = view.hand[-1]
    return request


# -- each call, twice with one id ---------------------------------------------------------


def test_a_chat_sent_again_with_its_id_is_posted_once(stubs: Stubs) -> None:
    table_id, tokens = two_players(stubs)
    request = table_service_pb2.ChatRequest(table_id=table_id, text="gg", request_id=new_id())
    first = stubs.table.Chat(request, metadata=md(tokens[0]), timeout=T)
    again = stubs.table.Chat(request, metadata=md(tokens[0]), timeout=T)
    assert again == first
    assert [c.text for c in events(stubs, table_id, "chat_posted")] == ["gg"]
    assert table_now(stubs, table_id).number == first.number


def test_a_bot_added_again_with_its_id_is_seated_once(stubs: Stubs) -> None:
    created = create(stubs, players=3)
    table_id, owner = created.table.table_id, created.owner_token
    request = lobby_service_pb2.AddBotRequest(
        table_id=table_id, policy="greedy", request_id=new_id()
    )
    first = stubs.lobby.AddBot(request, metadata=md(owner), timeout=T)
    again = stubs.lobby.AddBot(request, metadata=md(owner), timeout=T)
    assert again == first
    assert [s.kind for s in table_now(stubs, table_id).seats].count(game_pb2.SEAT_KIND_BOT) == 1


def test_a_table_created_again_with_its_id_is_created_once(stubs: Stubs) -> None:
    rid = new_id()
    name = f"once {rid[:6]}"
    first = create(stubs, name=name, request_id=rid)
    again = create(stubs, name=name, request_id=rid)
    assert again == first
    listed = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T).tables
    assert [t.table_id for t in listed if t.name == name] == [first.table.table_id]
    # The owner token given back is the table's: it seats a bot.
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=first.table.table_id, policy="random"),
        metadata=md(again.owner_token),
        timeout=T,
    )


def test_a_join_sent_again_with_its_id_takes_one_seat_even_once_the_table_is_full(
    stubs: Stubs,
) -> None:
    table_id = create(stubs).table.table_id
    rid = new_id()
    first = join(stubs, table_id, "Ana", request_id=rid)
    again = join(stubs, table_id, "Ana", request_id=rid)
    assert again == first
    assert [s.name for s in table_now(stubs, table_id).seats] == ["Ana", ""]
    join(stubs, table_id, "Bo")  # the table is full now, and starts
    late = join(stubs, table_id, "Ana", request_id=rid)
    assert (late.seat, late.token) == (first.seat, first.token)
    assert late.table.status == lobby_service_pb2.TABLE_STATUS_PLAYING
    # The token given back is the seat's.
    assert view_of(stubs, table_id, late.token).seat == first.seat


def test_a_leave_sent_again_with_its_id_leaves_once(stubs: Stubs) -> None:
    # Before the game: the seat is free at once, and its token proves nothing any more; the
    # retry still gets its answer.
    created = create(stubs, players=3)
    table_id = created.table.table_id
    token = join(stubs, table_id, "Ana").token
    request = lobby_service_pb2.LeaveTableRequest(table_id=table_id, request_id=new_id())
    first = stubs.lobby.LeaveTable(request, metadata=md(token), timeout=T)
    again = stubs.lobby.LeaveTable(request, metadata=md(token), timeout=T)
    assert again == first
    assert len(events(stubs, table_id, "player_left")) == 1
    # During the game: the seat left, came back by acting, and the retry does not make it
    # leave again.
    table_id, tokens = two_players(stubs)
    request = lobby_service_pb2.LeaveTableRequest(table_id=table_id, request_id=new_id())
    stubs.lobby.LeaveTable(request, metadata=md(tokens[1]), timeout=T)
    view = view_of(stubs, table_id, tokens[1])  # watching with its token brings it back
    assert not view.players[1].away
    again = stubs.lobby.LeaveTable(request, metadata=md(tokens[1]), timeout=T)
    assert not [p for p in again.table.seats if p.away]
    assert len(events(stubs, table_id, "player_left")) == 1


def test_a_start_sent_again_with_its_id_gets_the_started_table(stubs: Stubs) -> None:
    created = create(stubs, players=3)
    table_id, owner = created.table.table_id, created.owner_token
    join(stubs, table_id, "Ana")
    join(stubs, table_id, "Bo")
    request = lobby_service_pb2.StartTableRequest(table_id=table_id, request_id=new_id())
    first = stubs.lobby.StartTable(request, metadata=md(owner), timeout=T)
    again = stubs.lobby.StartTable(request, metadata=md(owner), timeout=T)
    assert again == first
    assert again.table.status == lobby_service_pb2.TABLE_STATUS_PLAYING
    assert len(events(stubs, table_id, "game_started")) == 1


def test_an_act_sent_again_with_its_id_gets_the_first_answer(stubs: Stubs) -> None:
    table_id, tokens = two_players(stubs)
    view = view_of(stubs, table_id, tokens[0])
    seat = view.turn
    request = first_move(view_of(stubs, table_id, tokens[seat]))
    request.table_id, request.request_id = table_id, new_id()
    first = stubs.table.Act(request, metadata=md(tokens[seat]), timeout=T)
    again = stubs.table.Act(request, metadata=md(tokens[seat]), timeout=T)
    assert again == first
    assert table_now(stubs, table_id).number == first.number
    # Without an id, the same command again is stale: refused, never applied twice.
    request.request_id = ""
    assert refused(lambda: stubs.table.Act(request, metadata=md(tokens[seat]), timeout=T)) == (
        grpc.StatusCode.ABORTED,
        "STALE",
    )


def test_a_play_command_sent_again_with_its_id_is_accepted_before(server: ServerThread) -> None:
    with Stubs(server.target) as stubs:
        table_id, tokens = two_players(stubs)
        seat = view_of(stubs, table_id, tokens[0]).turn
        token = tokens[seat]
        act = first_move(view_of(stubs, table_id, token))
        act.request_id = new_id()

    async def stream(command_id: int) -> list[table_service_pb2.PlayResponse]:
        """A Play stream that sends the command and reads until it is answered."""
        async with channel(server.target) as ch:
            play_stub = table_service_pb2_grpc.TableServiceStub(ch)

            async def requests() -> Any:
                yield table_service_pb2.PlayRequest(
                    open=table_service_pb2.WatchRequest(table_id=table_id)
                )
                yield table_service_pb2.PlayRequest(command_id=command_id, act=act)
                await asyncio.sleep(5)

            call = play_stub.Play(requests(), metadata=md(token), timeout=10)
            got = []
            try:
                async for msg in call:
                    got.append(msg)
                    kind = msg.WhichOneof("kind")
                    if kind in ("refused", "accepted_before") or msg.HasField("accepted"):
                        break
            finally:
                call.cancel()
            return got

    first = asyncio.run(asyncio.wait_for(stream(1), 20))
    accepted = [m for m in first if m.HasField("accepted")]
    assert [m.accepted for m in accepted] == [1]
    number = accepted[0].update.number
    again = asyncio.run(asyncio.wait_for(stream(2), 20))
    answer = again[-1]
    assert answer.WhichOneof("kind") == "accepted_before", answer
    assert (answer.accepted_before.command_id, answer.accepted_before.number) == (2, number)
    with Stubs(server.target) as stubs:
        assert table_now(stubs, table_id).number == number
        # An Act with the same id, token and fields is the same request: the same answer.
        act.table_id = table_id
        assert stubs.table.Act(act, metadata=md(token), timeout=T).number == number


# -- across a restart ---------------------------------------------------------------------


def test_retries_after_a_restart_get_the_first_answers(server: ServerThread) -> None:
    with Stubs(server.target) as stubs:
        create_id, join_id, chat_id, act_id = new_id(), new_id(), new_id(), new_id()
        created = create(stubs, name="restarted", request_id=create_id)
        table_id = created.table.table_id
        joined = join(stubs, table_id, "Ana", request_id=join_id)
        other = join(stubs, table_id, "Bo")
        tokens = {joined.seat: joined.token, other.seat: other.token}
        chat = table_service_pb2.ChatRequest(table_id=table_id, text="hi", request_id=chat_id)
        said = stubs.table.Chat(chat, metadata=md(joined.token), timeout=T)
        mover = tokens[view_of(stubs, table_id, joined.token).turn]
        act = first_move(view_of(stubs, table_id, mover))
        act.table_id, act.request_id = table_id, act_id
        acted = stubs.table.Act(act, metadata=md(mover), timeout=T)
        number = table_now(stubs, table_id).number
    server.halt()
    server.start()
    with Stubs(server.target) as stubs:
        again_created = create(stubs, name="restarted", request_id=create_id)
        assert again_created == lobby_service_pb2.CreateTableResponse(
            table=table_now(stubs, table_id), owner_token=created.owner_token
        )
        again = join(stubs, table_id, "Ana", request_id=join_id)
        assert (again.seat, again.token) == (joined.seat, joined.token)
        assert stubs.table.Chat(chat, metadata=md(joined.token), timeout=T) == said
        # The same answer: its number, and the view as it stands (who is connected aside: the
        # Watch streams that view_of opened may not have been closed on the server yet when
        # the first Act was answered, and presence is not game state).
        again_acted = stubs.table.Act(act, metadata=md(mover), timeout=T)
        assert again_acted.number == acted.number
        assert without_presence(again_acted.view) == without_presence(acted.view)
        assert table_now(stubs, table_id).number == number
        listed = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T).tables
        assert [t.name for t in listed].count("restarted") == 1


# -- refused: another request under the same id, a bad id ---------------------------------


def test_the_same_id_with_another_request_is_refused_and_changes_nothing(stubs: Stubs) -> None:
    reused = (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_ID_REUSED")
    rid = new_id()
    created = create(stubs, players=3, name="first", request_id=rid)
    assert refused(lambda: create(stubs, players=3, name="second", request_id=rid)) == reused
    table_id, owner = created.table.table_id, created.owner_token
    joined = join(stubs, table_id, "Ana", request_id=rid)  # another scope: the table
    assert refused(lambda: join(stubs, table_id, "Bea", request_id=rid)) == reused
    assert refused(lambda: join(stubs, table_id, "Ana", seat=2, request_id=rid)) == reused
    bot = lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy", request_id=rid)
    stubs.lobby.AddBot(bot, metadata=md(owner), timeout=T)
    bot.policy = "random"
    assert refused(lambda: stubs.lobby.AddBot(bot, metadata=md(owner), timeout=T)) == reused
    # Another call under an id this token used already is another request too.
    start = lobby_service_pb2.StartTableRequest(table_id=table_id, request_id=rid)
    assert refused(lambda: stubs.lobby.StartTable(start, metadata=md(owner), timeout=T)) == reused
    chat = table_service_pb2.ChatRequest(table_id=table_id, text="one", request_id=new_id())
    stubs.table.Chat(chat, metadata=md(joined.token), timeout=T)
    chat.text = "two"
    assert refused(lambda: stubs.table.Chat(chat, metadata=md(joined.token), timeout=T)) == reused
    info = table_now(stubs, table_id)
    assert [s.name for s in info.seats][:1] == ["Ana"] and info.status == (
        lobby_service_pb2.TABLE_STATUS_WAITING
    )
    assert [c.text for c in events(stubs, table_id, "chat_posted")] == ["one"]
    listed = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T).tables
    assert "second" not in [t.name for t in listed]
    # An act: another action, or another number, under the same id.
    table_id, tokens = two_players(stubs)
    seat = view_of(stubs, table_id, tokens[0]).turn
    act = first_move(view_of(stubs, table_id, tokens[seat]))
    act.table_id, act.request_id = table_id, new_id()
    done = stubs.table.Act(act, metadata=md(tokens[seat]), timeout=T)
    act.number += 1
    assert refused(lambda: stubs.table.Act(act, metadata=md(tokens[seat]), timeout=T)) == reused
    assert table_now(stubs, table_id).number == done.number


@pytest.mark.parametrize(
    "rid",
    ["x" * 65, "has space", "dot.ted", "ümlaut", "new\nline", "tab\tid"],
    ids=["too-long", "space", "dot", "non-ascii", "newline", "tab"],
)
def test_a_malformed_id_is_invalid_argument_and_changes_nothing(stubs: Stubs, rid: str) -> None:
    bad = (grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST_ID")
    table_id, tokens = two_players(stubs)
    number = table_now(stubs, table_id).number
    waiting = create(stubs, players=3)
    w_id = waiting.table.table_id
    assert refused(lambda: create(stubs, name="bad id", request_id=rid)) == bad
    assert refused(lambda: join(stubs, w_id, "Cy", request_id=rid)) == bad
    calls = [
        lambda: stubs.table.Chat(
            table_service_pb2.ChatRequest(table_id=table_id, text="x", request_id=rid),
            metadata=md(tokens[0]),
            timeout=T,
        ),
        lambda: stubs.lobby.LeaveTable(
            lobby_service_pb2.LeaveTableRequest(table_id=table_id, request_id=rid),
            metadata=md(tokens[0]),
            timeout=T,
        ),
        lambda: stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=w_id, policy="greedy", request_id=rid),
            metadata=md(waiting.owner_token),
            timeout=T,
        ),
        lambda: stubs.lobby.StartTable(
            lobby_service_pb2.StartTableRequest(table_id=w_id, request_id=rid),
            metadata=md(waiting.owner_token),
            timeout=T,
        ),
    ]
    view = view_of(stubs, table_id, tokens[0])
    act = first_move(view_of(stubs, table_id, tokens[view.turn]))
    act.table_id, act.request_id = table_id, rid
    calls.append(lambda: stubs.table.Act(act, metadata=md(tokens[view.turn]), timeout=T))
    for call in calls:
        assert refused(call) == bad
    assert table_now(stubs, table_id).number == number
    assert table_now(stubs, w_id).number == 0
    listed = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T).tables
    assert "bad id" not in [t.name for t in listed]


def test_the_ids_that_give_back_a_token_must_be_long(stubs: Stubs) -> None:
    short = "a" * 21
    bad = (grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST_ID")
    assert refused(lambda: create(stubs, request_id=short)) == bad
    created = create(stubs, players=3)
    table_id = created.table.table_id
    assert refused(lambda: join(stubs, table_id, "Ana", request_id=short)) == bad
    # Calls that carry their token may use any id, however short: it is the token's own.
    token = join(stubs, table_id, "Ana").token
    chat = table_service_pb2.ChatRequest(table_id=table_id, text="x", request_id="1")
    assert stubs.table.Chat(chat, metadata=md(token), timeout=T).number == 2
    assert table_now(stubs, table_id).number == 2


def test_one_clients_id_never_meets_anothers(stubs: Stubs) -> None:
    table_id, tokens = two_players(stubs)
    rid = "1"
    for seat, text in ((0, "from Ana"), (1, "from Bo")):
        chat = table_service_pb2.ChatRequest(table_id=table_id, text=text, request_id=rid)
        stubs.table.Chat(chat, metadata=md(tokens[seat]), timeout=T)
    said = events(stubs, table_id, "chat_posted")
    assert sorted((c.seat, c.text) for c in said) == [(0, "from Ana"), (1, "from Bo")]
    # The same id at two tables takes two seats, with two tokens.
    rid = new_id()
    a, b = create(stubs).table.table_id, create(stubs).table.table_id
    at_a, at_b = join(stubs, a, "Ana", request_id=rid), join(stubs, b, "Ana", request_id=rid)
    assert at_a.token != at_b.token
    assert view_of(stubs, a, at_a.token).seat == at_a.seat
    # A stranger's token with someone's id finds nothing of theirs.
    leave = lobby_service_pb2.LeaveTableRequest(table_id=a, request_id=rid)
    stubs.lobby.LeaveTable(leave, metadata=md(at_a.token), timeout=T)
    assert refused(lambda: stubs.lobby.LeaveTable(leave, metadata=md(at_b.token), timeout=T)) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "NOT_YOURS",
    )


# -- the bot kit and rami-client, after an answer lost on the network ----------------------


async def stored_past(ch: grpc.aio.Channel, table_id: str, number: int) -> None:
    """Wait (polling, at most 10 s) until the server has stored the table past ``number``:
    asked straight, not through the proxy."""
    lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
    request = lobby_service_pb2.GetTableRequest(table_id=table_id)
    async with asyncio.timeout(10):
        while (await lobby.GetTable(request, timeout=T)).table.number <= number:
            await asyncio.sleep(0.02)


def game_with_a_bot(stubs: Stubs) -> str:
    """A 2-seat simple game, one round, waiting for a remote seat; a built-in bot at the other.
    Both are dealt junk, so neither can lay its whole hand in its first turns."""
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=game_pb2.VARIANT_SIMPLE,
            options=game_pb2.Options(players=2, round_cap=1),
            stacked_decks=[deck_to_proto(stacked_deck("simple", [None, None], "3c"))],
        ),
        timeout=T,
    )
    table_id = created.table.table_id
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy", seat=1),
        metadata=md(created.owner_token),
        timeout=T,
    )
    return table_id


def seat_actions(stubs: Stubs, table_id: str, seat: int) -> list[int]:
    record = json.loads(
        stubs.table.ExportRecord(
            table_service_pb2.ExportRecordRequest(table_id=table_id), timeout=T
        ).record_json
    )
    assert record["complete"]
    return [a["number"] for a in actions_of(record) if a["seat"] == seat]


def test_the_bot_kit_joins_again_with_the_same_id_after_a_lost_answer(
    server: ServerThread,
) -> None:
    with Stubs(server.target) as stubs:
        table_id = game_with_a_bot(stubs)

    async def main() -> None:
        proxy = await LossyProxy(server.target).start()
        kit = channel(proxy.target)
        try:
            async with channel(server.target) as direct:
                await asyncio.wait_for(kit.channel_ready(), 10)
                proxy.lose()  # the join's answer never reaches the kit...
                decide = policy_decider("greedy", 1)
                game = asyncio.ensure_future(
                    play(proxy.target, table_id, decide, name="Kit", channel=kit)
                )
                await stored_past(direct, table_id, 1)  # ...though the server seated it
                await proxy.cut()
                result = await asyncio.wait_for(game, 60)
        finally:
            await kit.close()
            await proxy.close()
        assert result.final is not None and result.final.phase == game_pb2.PHASE_GAME_OVER
        assert result.retries >= 1

    asyncio.run(main())
    with Stubs(server.target) as stubs:
        seats = table_now(stubs, table_id).seats
        assert [s.name for s in seats] == ["Kit", "Greedy bot 2"]
        assert len(events(stubs, table_id, "player_joined")) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["act", "play-stream"])
def test_the_bot_kit_sends_a_command_again_with_its_id_after_a_lost_answer(
    server: ServerThread, stream: bool
) -> None:
    with Stubs(server.target) as stubs:
        table_id = game_with_a_bot(stubs)

    async def main() -> Any:
        proxy = await LossyProxy(server.target).start()
        direct = channel(server.target)
        decide = policy_decider("greedy", 2)
        lost: list[int] = []
        cuts: list[asyncio.Task[None]] = []

        async def cut_once_stored(decided: int) -> None:
            await stored_past(direct, table_id, decided)
            await proxy.cut()

        def deciding(view: View) -> Action:
            if len(lost) == 0 and view.number > 4:
                lost.append(view.number)  # the answer to this command is lost
                proxy.lose()
                cuts.append(asyncio.ensure_future(cut_once_stored(view.number)))
            return decide(view)

        try:
            result = await asyncio.wait_for(
                play(proxy.target, table_id, deciding, name="Kit", stream=stream), 60
            )
            await asyncio.gather(*cuts)
        finally:
            await direct.close()
            await proxy.close()
        assert lost and proxy.cuts == 1
        return result, lost[0]

    result, lost = asyncio.run(main())
    with Stubs(server.target) as stubs:
        acted = seat_actions(stubs, table_id, result.seat)
    # The command whose answer was lost was applied once, and the kit got its answer: every
    # action of the seat is one it saw acknowledged.
    assert lost + 1 in acted
    assert sorted(result.acknowledged) == acted
    assert result.retries >= 1


def test_rami_client_sends_a_change_again_with_its_id_after_a_lost_answer(
    server: ServerThread,
) -> None:
    with Stubs(server.target) as stubs:
        created = create(stubs)
        table_id = created.table.table_id

    async def main() -> tuple[lobby_service_pb2.JoinTableResponse, table_service_pb2.ChatResponse]:
        proxy = await LossyProxy(server.target).start()
        direct = channel(server.target)
        link = Link(proxy.target)
        try:
            await link.check()
            proxy.lose()
            joining = asyncio.ensure_future(
                link.call(
                    link.lobby.JoinTable,
                    lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Ana"),
                )
            )
            await stored_past(direct, table_id, 0)
            await proxy.cut()
            joined = await asyncio.wait_for(joining, 20)
            proxy.lose()
            saying = asyncio.ensure_future(
                link.call(
                    link.table.Chat,
                    table_service_pb2.ChatRequest(table_id=table_id, text="hello"),
                    token=joined.token,
                )
            )
            await stored_past(direct, table_id, 1)
            await proxy.cut()
            said = await asyncio.wait_for(saying, 20)
        finally:
            await link.close()
            await direct.close()
            await proxy.close()
        assert proxy.cuts == 2
        return joined, said

    joined, said = asyncio.run(main())
    with Stubs(server.target) as stubs:
        assert [s.name for s in table_now(stubs, table_id).seats] == ["Ana", ""]
        assert view_of(stubs, table_id, joined.token).seat == joined.seat
        assert [c.text for c in events(stubs, table_id, "chat_posted")] == ["hello"]
        assert table_now(stubs, table_id).number == said.number == 2


def test_a_request_ids_token_cannot_be_made_from_the_id_alone(stubs: Stubs) -> None:
    """Whoever learns a request id (from the database, say) cannot make its token without the
    server's key: the token is an HMAC of the id keyed with it."""
    from rami.server.retries import derived_token

    table_id = create(stubs).table.table_id
    rid = new_id()
    joined = join(stubs, table_id, "Ana", request_id=rid)
    assert joined.token != derived_token(rid, "seat", table_id)
    owner_id = new_id()
    owner = create(stubs, request_id=owner_id).owner_token
    assert owner != derived_token(owner_id, "owner")
