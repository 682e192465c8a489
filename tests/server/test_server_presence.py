"""Presence, drops and takeovers, over a real server on 127.0.0.1.

- A seat's presence (PlayerState.connected) reaches every stream when it changes: a heartbeat
  with ``connected`` is sent at once, with no new update number, and a seat's own opening
  snapshot shows it connected.
- A player whose last stream ends during a game is marked away once the drop grace has passed
  and it is their turn: the server plays for the seat, and the token brings it back.
- A stream that asks to take its seat over ends the seat's other streams at once (ABORTED
  TAKEN_OVER); one that does not ask is told how many others are open.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from server_support import RPC_TIMEOUT, error_of, md, plain_move

from rami.server.table import TableConfig
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

T = RPC_TIMEOUT
#: How long a test waits for what it expects (the server does it in milliseconds).
WAIT = 5.0
#: Bots and away seats wait a little, so a test sees each step; the grace is short.
GRACE = TableConfig(
    bot_delay=0.05, round_pause=0.05, away_delay=0.05, heartbeat=0.5, drop_grace=0.5
)


@dataclass
class Reader:
    """A stream read on a thread of its own: every message, then its error (if any)."""

    stream: Any
    items: queue.Queue[Any] = field(default_factory=queue.Queue)
    error: grpc.RpcError | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        try:
            for msg in self.stream:
                self.items.put(msg)
        except grpc.RpcError as e:
            self.error = e
        finally:
            self.done.set()

    def expect(self, pred: Callable[[Any], bool], what: str, timeout: float = WAIT) -> Any:
        """The first message that satisfies ``pred`` (the others are dropped)."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                pytest.fail(f"no message {what} within {timeout} s")
            try:
                msg = self.items.get(timeout=min(left, 0.2))
            except queue.Empty:
                if self.done.is_set() and self.items.empty():
                    pytest.fail(f"the stream ended ({self.error!r}) before a message {what}")
                continue
            if pred(msg):
                return msg

    def cancel(self) -> None:
        self.stream.cancel()
        self.done.wait(WAIT)


def presence(msg: Any) -> list[bool] | None:
    """The seats' presence a message tells, if it tells it."""
    kind = msg.WhichOneof("kind")
    if kind == "update":
        return [p.connected for p in msg.update.view.players]
    if kind == "heartbeat" and len(msg.heartbeat.connected):
        return list(msg.heartbeat.connected)
    return None


def seat_is(seat: int, live: bool) -> Callable[[Any], bool]:
    def pred(msg: Any) -> bool:
        known = presence(msg)
        return known is not None and len(known) > seat and known[seat] is live

    return pred


def event_of(kind: str, seat: int) -> Callable[[Any], bool]:
    def pred(msg: Any) -> bool:
        if msg.WhichOneof("kind") != "update":
            return False
        return any(
            e.WhichOneof("kind") == kind and getattr(e, kind).seat == seat
            for e in msg.update.events
        )

    return pred


def new_table(stubs: Stubs, variant: int, players: int) -> str:
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=variant, options=game_pb2.Options(players=players, turn_seconds=0)
        ),
        timeout=T,
    )
    return str(created.table.table_id)


def join(stubs: Stubs, table_id: str, name: str) -> str:
    joined = stubs.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name), timeout=T
    )
    return str(joined.token)


def watch(
    stubs: Stubs,
    table_id: str,
    token: str | None,
    after: int | None = None,
    take_over: bool = False,
) -> Reader:
    request = table_service_pb2.WatchRequest(table_id=table_id, after=after, take_over=take_over)
    return Reader(stubs.table.Watch(request, metadata=md(token), timeout=60))


@pytest.fixture
def grace_server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path / "rami.db"), GRACE) as srv:
        yield srv


def test_presence_reaches_every_stream_when_it_changes(server: ServerThread, stubs: Stubs) -> None:
    table_id = new_table(stubs, game_pb2.VARIANT_TALLAGE, 3)
    eva = join(stubs, table_id, "Eva")
    eva_stream = watch(stubs, table_id, eva)
    # A seat's own snapshot shows it connected: it is, as the snapshot is sent.
    first = eva_stream.expect(lambda m: m.WhichOneof("kind") == "update", "(the snapshot)")
    assert first.update.snapshot
    assert presence(first) == [True, False, False]
    bruno = join(stubs, table_id, "Bruno")
    eva_stream.expect(event_of("player_joined", 1), "saying Bruno joined")
    bruno_stream = watch(stubs, table_id, bruno)
    mine = bruno_stream.expect(lambda m: m.WhichOneof("kind") == "update", "(the snapshot)")
    assert presence(mine) == [True, True, False]
    # Eva is told Bruno is here at once, without a new update.
    told = eva_stream.expect(seat_is(1, True), "saying Bruno is connected")
    assert told.WhichOneof("kind") == "heartbeat"
    assert told.heartbeat.number == mine.update.number
    # And told he is gone once his stream ends.
    bruno_stream.cancel()
    gone = eva_stream.expect(seat_is(1, False), "saying Bruno is gone")
    assert gone.WhichOneof("kind") == "heartbeat"
    eva_stream.cancel()


def _bruno_left(stubs: Stubs) -> tuple[str, list[str], Reader]:
    """A tallage game of Eva, Bruno and a bot, Eva watching, Bruno left (away): the table,
    Eva's and Bruno's tokens, and Eva's stream."""
    table_id = new_table(stubs, game_pb2.VARIANT_TALLAGE, 3)
    tokens = [join(stubs, table_id, name) for name in ("Eva", "Bruno")]
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id), metadata=md(tokens[0]), timeout=T
    )
    eva = watch(stubs, table_id, tokens[0])
    eva.expect(lambda m: m.WhichOneof("kind") == "update", "(the snapshot)")
    stubs.lobby.LeaveTable(
        lobby_service_pb2.LeaveTableRequest(table_id=table_id), metadata=md(tokens[1]), timeout=T
    )
    eva.expect(event_of("player_left", 1), "saying Bruno left")
    return table_id, tokens, eva


@pytest.mark.parametrize("stream", ["watch", "play"])
def test_a_returning_player_is_shown_connected(grace_server: ServerThread, stream: str) -> None:
    # The update that brings the seat back by its stream shows it connected, as it is from
    # then on: it used to show it gone, and a heartbeat said otherwise a moment later.
    with Stubs(grace_server.target) as stubs:
        table_id, tokens, eva = _bruno_left(stubs)
        if stream == "watch":
            bruno = watch(stubs, table_id, tokens[1])
        else:
            opening = table_service_pb2.PlayRequest(
                open=table_service_pb2.WatchRequest(table_id=table_id)
            )
            bruno = Reader(stubs.table.Play(iter([opening]), metadata=md(tokens[1]), timeout=60))
        back = eva.expect(event_of("player_returned", 1), "saying Bruno came back")
        assert presence(back)[1] is True  # type: ignore[index]
        mine = bruno.expect(lambda m: m.WhichOneof("kind") == "update", "(Bruno's first)")
        assert presence(mine)[1] is True  # type: ignore[index]
        # Nothing says otherwise after.
        time.sleep(0.3)
        while not eva.items.empty():
            assert presence(eva.items.get()) in (None, [True, True, True])
        bruno.cancel()
        eva.cancel()


def test_a_stream_that_ends_as_its_seat_comes_back_leaves_it_shown_gone(tmp_path: Path) -> None:
    """A seat's stream whose call ends (its deadline) while the Return it brings is being
    stored never opens: the others are told at once that the seat is not connected (it was
    shown connected, and only the next idle heartbeat, 15 s later, said otherwise)."""
    slow = TableConfig(bot_delay=0.05, round_pause=0.05, away_delay=0.05, heartbeat=15.0)
    with ServerThread(str(tmp_path / "rami.db"), slow) as srv, Stubs(srv.target) as stubs:
        table_id, tokens, eva = _bruno_left(stubs)
        assert srv.server is not None
        storage = srv.server.lobby.tables[table_id].storage
        store = storage.submit

        def late(append: Any) -> Any:  # a database that takes its time (on the server's loop)
            async def later() -> None:
                await asyncio.sleep(0.5)
                await store(append)

            return asyncio.ensure_future(later())

        storage.submit = late  # type: ignore[method-assign]
        try:
            with pytest.raises(grpc.RpcError):
                request = table_service_pb2.WatchRequest(table_id=table_id)
                for _ in stubs.table.Watch(request, metadata=md(tokens[1]), timeout=0.2):
                    pass
            back = eva.expect(event_of("player_returned", 1), "saying Bruno came back")
            # That update shows Bruno gone, or Eva is told soon after that he is.
            if presence(back)[1]:  # type: ignore[index]
                eva.expect(seat_is(1, False), "saying Bruno is not connected", timeout=3.0)
        finally:
            storage.submit = store  # type: ignore[method-assign]
        eva.cancel()


def test_a_dropped_player_is_played_for_after_the_grace(grace_server: ServerThread) -> None:
    with Stubs(grace_server.target) as stubs:
        table_id = new_table(stubs, game_pb2.VARIANT_SIMPLE, 2)
        tokens = [join(stubs, table_id, name) for name in ("Eva", "Bruno")]
        streams = [watch(stubs, table_id, t) for t in tokens]
        snapshot = streams[0].expect(lambda m: m.WhichOneof("kind") == "update", "(snapshot)")
        turn = snapshot.update.view.turn
        other = 1 - turn
        streams[other].expect(lambda m: m.WhichOneof("kind") == "update", "(snapshot)")
        dropped_at = time.monotonic()
        streams[turn].cancel()  # the player whose turn it is closes their terminal
        left = streams[other].expect(event_of("player_left", turn), "saying the seat left")
        assert time.monotonic() - dropped_at >= GRACE.drop_grace * 0.9
        assert left.update.view.players[turn].away
        # The server plays for the seat: its turn passes to the other player.
        streams[other].expect(
            lambda m: m.WhichOneof("kind") == "update" and m.update.view.turn == other,
            "with the turn passed on",
        )
        # The token brings the seat back, as after a LeaveTable.
        back = watch(stubs, table_id, tokens[turn])
        streams[other].expect(event_of("player_returned", turn), "saying the seat came back")
        back.cancel()
        streams[other].cancel()


def test_a_stream_that_asks_takes_the_seat_over(server: ServerThread, stubs: Stubs) -> None:
    table_id = new_table(stubs, game_pb2.VARIANT_TALLAGE, 3)
    token = join(stubs, table_id, "Eva")
    old = watch(stubs, table_id, token)
    first = old.expect(lambda m: m.WhichOneof("kind") == "update", "(the snapshot)")
    assert not first.took_over and first.other_streams == 0
    # Without take_over, a second stream of the seat goes on beside the first, and is told.
    beside = watch(stubs, table_id, token)
    opened = beside.expect(lambda m: True, "(the first)")
    assert opened.other_streams == 1 and not opened.took_over
    # With it, the seat's other streams end at once, ABORTED TAKEN_OVER.
    new = watch(stubs, table_id, token, take_over=True)
    opened = new.expect(lambda m: True, "(the first)")
    assert opened.took_over and opened.other_streams == 0
    for ended in (old, beside):
        assert ended.done.wait(WAIT), "the older stream goes on"
        assert ended.error is not None
        refusal = error_of(ended.error)
        assert (refusal.code, refusal.reason) == (grpc.StatusCode.ABORTED, "TAKEN_OVER")
    # A stream that resumes may take over as well (from its own dead stream, say): told on
    # the first update it replays.
    resumed = watch(stubs, table_id, token, after=first.update.number - 1, take_over=True)
    replayed = resumed.expect(lambda m: True, "(the first)")
    assert replayed.took_over and replayed.update.number == first.update.number
    assert new.done.wait(WAIT)
    assert error_of(new.error).reason == "TAKEN_OVER"  # type: ignore[arg-type]
    # A spectator takes nothing over, even when it asks.
    spectator = watch(stubs, table_id, None, take_over=True)
    assert not spectator.expect(lambda m: True, "(the first)").took_over
    # The same on a Play stream.
    requests: queue.Queue[Any] = queue.Queue()
    requests.put(
        table_service_pb2.PlayRequest(
            open=table_service_pb2.WatchRequest(table_id=table_id, take_over=True)
        )
    )
    play = Reader(stubs.table.Play(iter(requests.get, None), metadata=md(token), timeout=60))
    assert play.expect(lambda m: True, "(the first)").took_over
    assert resumed.done.wait(WAIT)
    assert error_of(resumed.error).reason == "TAKEN_OVER"  # type: ignore[arg-type]
    time.sleep(0.3)
    assert not play.done.is_set() and not spectator.done.is_set()
    requests.put(None)
    play.cancel()
    spectator.cancel()


def test_the_drop_grace_the_contract_states_is_the_servers() -> None:
    text = (Path(__file__).resolve().parents[2] / "proto/rami/v1/table_service.proto").read_text()
    found = re.search(r"drop grace,\s*(?://\s*)?(\d+) seconds", text)
    assert found, "table_service.proto states the drop grace"
    assert float(found.group(1)) == TableConfig().drop_grace


def test_a_dropped_player_who_acts_gets_the_grace_again(tmp_path: Path) -> None:
    """A seat dropped on its turn that comes back with a command (Act, with no stream) is
    there: it is not marked away again before it has had the grace to finish its turn."""
    # The server waits long before it plays an away seat: only the drops are seen.
    patient = TableConfig(
        bot_delay=0.05, round_pause=0.05, away_delay=60.0, heartbeat=0.5, drop_grace=0.5
    )
    with ServerThread(str(tmp_path / "rami.db"), patient) as server, Stubs(server.target) as stubs:
        table_id = new_table(stubs, game_pb2.VARIANT_SIMPLE, 2)
        tokens = [join(stubs, table_id, name) for name in ("Eva", "Bruno")]
        streams = [watch(stubs, table_id, t) for t in tokens]
        views = [
            st.expect(lambda m: m.WhichOneof("kind") == "update", "(snapshot)").update.view
            for st in streams
        ]
        turn = views[0].turn
        gone = 1 - turn
        mover = streams[turn]
        streams[gone].cancel()  # the player who is not on turn drops
        time.sleep(GRACE.drop_grace * 2)
        view = views[turn]
        if view.phase == game_pb2.PHASE_DRAW:
            view = act(stubs, table_id, tokens[turn], view.number, draw_stock=True)
        act(stubs, table_id, tokens[turn], view.number, discard=view.hand[0])
        # Gone for longer than the grace: dropped once its turn has lasted the grace.
        left = mover.expect(event_of("player_left", gone), "saying the seat left")
        # It draws (an Act brings it back), and has the grace again to discard.
        request = table_service_pb2.ActRequest(table_id=table_id, number=left.update.number)
        request.draw.source = game_pb2.DRAW_SOURCE_STOCK
        done = stubs.table.Act(request, metadata=md(tokens[gone]), timeout=T)
        seen: list[tuple[int, str]] = []

        def drawn(msg: Any) -> bool:
            if msg.WhichOneof("kind") == "update":
                seen.extend((msg.update.number, e.WhichOneof("kind")) for e in msg.update.events)
            return any(kind == "card_drawn" for _, kind in seen)

        mover.expect(drawn, "its draw")
        # Back first, then its move: the seat is a player's again when it draws; the number
        # Act answers is its move's.
        assert [kind for _, kind in seen[:2]] == ["player_returned", "card_drawn"], seen
        assert done.number == seen[1][0] == done.view.number, (done.number, seen)
        with pytest.raises(pytest.fail.Exception):
            mover.expect(event_of("player_left", gone), "(none)", timeout=0.3)
        mover.cancel()


def act(
    stubs: Stubs,
    table_id: str,
    token: str,
    number: int,
    *,
    draw_stock: bool = False,
    discard: int = 0,
) -> game_pb2.View:
    """One action by Act; the seat's view after it."""
    request = table_service_pb2.ActRequest(table_id=table_id, number=number)
    if draw_stock:
        request.draw.source = game_pb2.DRAW_SOURCE_STOCK
    else:
        request.discard.card = discard
    done = stubs.table.Act(request, metadata=md(token), timeout=T)
    return done.view


def _simple_table(stubs: Stubs, players: int) -> tuple[str, str]:
    """A waiting simple table of ``players`` seats: its id and the owner's token."""
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=game_pb2.VARIANT_SIMPLE, options=game_pb2.Options(players=players)
        ),
        timeout=T,
    )
    return created.table.table_id, created.owner_token


def _join_at(stubs: Stubs, table_id: str, name: str, seat: int) -> str:
    """``name`` takes ``seat``: the seat's token."""
    joined = stubs.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name, seat=seat), timeout=T
    )
    return str(joined.token)


def test_a_player_gone_before_a_renumbering_start_is_dropped_by_the_new_number(
    grace_server: ServerThread,
) -> None:
    """Eva closed her stream while the table waited. The start drops the empty seat 0 and
    renumbers: Eva is seat 0 now, and on her turn she is dropped after the grace as before
    (the server knows who was gone by the new numbers)."""
    with Stubs(grace_server.target) as stubs:
        table_id, owner = _simple_table(stubs, 3)
        eva, bruno = _join_at(stubs, table_id, "Eva", 1), _join_at(stubs, table_id, "Bruno", 2)
        gone = watch(stubs, table_id, eva)
        gone.expect(lambda m: m.WhichOneof("kind") == "update", "(snapshot)")
        gone.cancel()  # Eva closes her terminal before the game
        stream = watch(stubs, table_id, bruno)
        stream.expect(lambda m: m.WhichOneof("kind") == "update", "(snapshot)")
        stubs.lobby.StartTable(
            lobby_service_pb2.StartTableRequest(table_id=table_id), metadata=md(owner), timeout=T
        )
        view = stream.expect(
            lambda m: (
                m.WhichOneof("kind") == "update" and m.update.view.phase != game_pb2.PHASE_WAITING
            ),
            "(the game)",
        ).update.view
        assert view.seat == 1
        # Bruno plays until it is Eva's turn.
        while view.turn != 0:
            view = stubs.table.Act(plain_move(table_id, view), metadata=md(bruno), timeout=T).view
        left = stream.expect(event_of("player_left", 0), "saying Eva's seat left")
        assert left.update.view.players[0].name == "Eva" and left.update.view.players[0].away
        stream.cancel()


def test_a_seats_new_player_is_not_counted_gone_for_the_player_who_left_it(
    grace_server: ServerThread,
) -> None:
    """Ana watched seat 0, closed her stream and left the waiting table; Bo took seat 0 and
    never opens a stream: the time Ana was gone is not his. He has the whole grace of his
    turn, as any seat with no stream open, and is dropped only once it has passed."""
    with Stubs(grace_server.target) as stubs:
        table_id, _ = _simple_table(stubs, 2)
        ana = _join_at(stubs, table_id, "Ana", 0)
        gone = watch(stubs, table_id, ana)
        gone.expect(lambda m: m.WhichOneof("kind") == "update", "(snapshot)")
        gone.cancel()
        time.sleep(0.2)
        stubs.lobby.LeaveTable(
            lobby_service_pb2.LeaveTableRequest(table_id=table_id), metadata=md(ana), timeout=T
        )
        time.sleep(GRACE.drop_grace * 2)
        _join_at(stubs, table_id, "Bo", 0)
        cy = _join_at(stubs, table_id, "Cy", 1)  # the table is full: the game starts
        stream = watch(stubs, table_id, cy)
        view = stream.expect(
            lambda m: m.WhichOneof("kind") == "update" and m.update.view.round > 0, "(the game)"
        ).update.view
        started = time.monotonic()
        assert view.turn == 0  # Bo deals: his turn first
        left = stream.expect(event_of("player_left", 0), "saying Bo's seat left")
        assert time.monotonic() - started >= GRACE.drop_grace * 0.5
        assert left.update.view.players[0].name == "Bo" and left.update.view.players[0].away
        stream.cancel()


def _play_until_seat_1_is_dropped(stubs: Stubs, table_id: str, token: str, stream: Any) -> Any:
    """Seat 0 (``token``, watching on ``stream``) plays from the game's start until it is seat
    1's turn; returns the update that says seat 1 left (its player gone past the grace)."""
    view = stream.expect(
        lambda m: m.WhichOneof("kind") == "update" and m.update.view.round > 0, "(the game)"
    ).update.view
    while view.turn != 1:
        view = stubs.table.Act(plain_move(table_id, view), metadata=md(token), timeout=T).view
    return stream.expect(event_of("player_left", 1), "saying seat 1 left")


def test_a_seat_that_never_opens_a_stream_is_dropped_on_its_turn(
    grace_server: ServerThread,
) -> None:
    """A player (a bot that crashed right after joining) who never opens a stream does not
    hold the table up for ever: once its turn has lasted the grace with no stream and no
    command from it, the seat is away and the server plays for it."""
    with Stubs(grace_server.target) as stubs:
        table_id, _ = _simple_table(stubs, 2)
        eva = _join_at(stubs, table_id, "Eva", 0)
        stream = watch(stubs, table_id, eva)
        stream.expect(lambda m: m.WhichOneof("kind") == "update", "(snapshot)")
        _join_at(stubs, table_id, "Bruno", 1)  # and is never heard of again
        left = _play_until_seat_1_is_dropped(stubs, table_id, eva, stream)
        assert left.update.view.players[1].away
        stream.expect(
            lambda m: m.WhichOneof("kind") == "update" and m.update.view.turn == 0,
            "with the turn passed on",
        )
        stream.cancel()


def test_a_seat_joined_before_a_restart_that_never_streams_is_dropped_on_its_turn(
    grace_server: ServerThread,
) -> None:
    """Bruno joined a waiting table and never opened a stream; the server restarted; Eva
    joined and the game began. The restored table counts Bruno gone as it counts every seat
    of a game under way at a restart: his turn does not hold the game up for ever."""
    with Stubs(grace_server.target) as stubs:
        table_id, _ = _simple_table(stubs, 2)
        _join_at(stubs, table_id, "Bruno", 1)
    grace_server.halt()
    grace_server.start()
    with Stubs(grace_server.target) as stubs:
        eva = _join_at(stubs, table_id, "Eva", 0)
        stream = watch(stubs, table_id, eva)
        left = _play_until_seat_1_is_dropped(stubs, table_id, eva, stream)
        assert left.update.view.players[1].away
        stream.cancel()


def test_a_seat_that_plays_by_act_alone_has_the_grace_of_each_turn(
    grace_server: ServerThread,
) -> None:
    """A player that never watches and plays by Act alone (it reads its view in each answer)
    is not dropped for the time the others take: its grace runs on its own turn."""
    with Stubs(grace_server.target) as stubs:
        table_id, _ = _simple_table(stubs, 2)
        eva = _join_at(stubs, table_id, "Eva", 0)
        stream = watch(stubs, table_id, eva)
        stream.expect(lambda m: m.WhichOneof("kind") == "update", "(snapshot)")
        bo = _join_at(stubs, table_id, "Bo", 1)
        view = stream.expect(
            lambda m: m.WhichOneof("kind") == "update" and m.update.view.round > 0, "(the game)"
        ).update.view
        for _ in range(2):
            # Eva takes twice the grace over her turn; Bo then plays his at once.
            while view.turn != 1:
                time.sleep(GRACE.drop_grace)
                view = stubs.table.Act(plain_move(table_id, view), metadata=md(eva), timeout=T).view
            time.sleep(GRACE.drop_grace * 0.3)
            # (Eva deals: Bo's turns begin with a draw.)
            bos = stubs.table.Act(plain_move(table_id, view), metadata=md(bo), timeout=T).view
            view = stubs.table.Act(plain_move(table_id, bos), metadata=md(bo), timeout=T).view
        seats = stubs.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T
        ).table.seats
        assert not seats[1].away, seats
        stream.cancel()


def _flap(stubs: Stubs, table_id: str, token: str, times: int) -> list[str]:
    """Open a seat's stream, read its snapshot, close it: ``times`` over; the reasons of the
    opens refused."""
    refused = []
    for _ in range(times):
        call = stubs.table.Watch(
            table_service_pb2.WatchRequest(table_id=table_id), metadata=md(token), timeout=T
        )
        try:
            next(call)
        except grpc.RpcError as e:
            refused.append(error_of(e).reason)
        finally:
            call.cancel()
    return refused


def test_a_seats_streams_opened_over_and_over_count_as_its_commands(tmp_path: Path) -> None:
    """Each open of a seat's stream tells every stream at the table of its presence (and the
    log, below): opened and closed as fast as a client can, they count against the seat's
    commands a second, and past its burst an open is refused RATE_LIMITED, changing nothing."""
    with (
        ServerThread(str(tmp_path / "rami.db"), commands_per_second=1.0, command_burst=3.0) as srv,
        Stubs(srv.target) as stubs,
    ):
        table_id = new_table(stubs, game_pb2.VARIANT_TALLAGE, 2)
        tokens = [join(stubs, table_id, name) for name in ("Eva", "Bruno")]
        refused = _flap(stubs, table_id, tokens[0], 6)
        assert refused and set(refused) == {"RATE_LIMITED"}, refused
        assert len(refused) <= 3, refused
        # Another seat's streams are not held up.
        assert _flap(stubs, table_id, tokens[1], 1) == []


def test_a_seat_flapping_is_logged_once_in_a_while(
    server: ServerThread, stubs: Stubs, caplog: pytest.LogCaptureFixture
) -> None:
    """A seat's stream opened and closed over and over: "connected" and "dropped" are told at
    INFO four times, the last saying so, then at DEBUG for some seconds (a client flapping its
    stream filled the log with two lines an open, some 800 a second)."""
    table_id = new_table(stubs, game_pb2.VARIANT_TALLAGE, 2)
    tokens = [join(stubs, table_id, name) for name in ("Eva", "Bruno")]
    said = re.compile(rf"table {table_id}: seat 0 (connected|dropped)")
    lines: list[logging.LogRecord] = []
    with caplog.at_level(logging.DEBUG, logger="rami.server"):
        for n in range(1, 9):
            assert _flap(stubs, table_id, tokens[0], 1) == []
            # Each close told before the next open: a cancel reaches the server a moment
            # later, and an open that came first would find the seat still connected (on a
            # busy machine the suite saw 7 opens and closes told of 8).
            end = time.monotonic() + WAIT
            while time.monotonic() < end:
                lines = [r for r in caplog.records if said.search(r.getMessage())]
                if len([r for r in lines if "dropped" in r.getMessage()]) >= n:
                    break
                time.sleep(0.01)
    info = [r.getMessage() for r in lines if r.levelno == logging.INFO]
    assert len(lines) == 16, [r.getMessage() for r in lines]
    assert len(info) == 4, info
    assert info[-1].endswith("(its next changes for a while at debug level)"), info


def test_a_seats_stream_refused_for_too_many_spends_none_of_its_commands(tmp_path: Path) -> None:
    """An open counts as one of the seat's commands only once it is let in: one refused
    TOO_MANY_STREAMS spent a token all the same, and the next was refused RATE_LIMITED."""
    with (
        ServerThread(
            str(tmp_path / "rami.db"),
            streams_per_seat=1,
            commands_per_second=0.01,
            command_burst=3.0,
        ) as srv,
        Stubs(srv.target) as stubs,
    ):
        table_id = new_table(stubs, game_pb2.VARIANT_TALLAGE, 2)
        tokens = [join(stubs, table_id, name) for name in ("Eva", "Bruno")]
        held = watch(stubs, table_id, tokens[0])  # its one stream: one token spent
        held.expect(lambda m: m.WhichOneof("kind") == "update", "(the snapshot)")
        try:
            refused = _flap(stubs, table_id, tokens[0], 3)
        finally:
            held.cancel()
        assert refused == ["TOO_MANY_STREAMS"] * 3, refused
