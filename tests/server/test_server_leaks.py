"""No watcher ever sees a card concealed from it, on any update of whole games of each variant,
and no line the server logs at info level names a card.

Every seat played over the wire is watched with its token, and a spectator without one, from
before the deal to the end; the record is exported again and again while the game runs. After
the game, every state is rebuilt by replaying the table's stored log, and each message is
checked against that truth.

A seat's streams and limits belong to its player (its token), whatever the seat's number: a
start that renumbers the seats, or a seat left and taken by another, moves none of them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from server_support import (
    RPC_TIMEOUT,
    VARIANTS,
    SeatStream,
    card_mentions,
    cards,
    error_of,
    md,
    plain_move,
    stacked_deck,
    without_presence,
)

from rami.client.botkit import play, policy_decider
from rami.engine import Declare, Game, Phase
from rami.server import convert
from rami.server.entries import entry_from_dict
from rami.server.table import TableConfig
from rami.server.tablestate import TableSpec, TableState
from rami.server.testing import ServerThread
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

T = RPC_TIMEOUT
#: A concealed hand this big appearing whole in a message is a leak, never a coincidence.
WHOLE_HAND = 5

GAMES = {
    "portuguese": game_pb2.Options(players=4, rounds=2),
    "tallage": game_pb2.Options(players=4, target=201, round_cap=3),
    "simple": game_pb2.Options(players=4, target=201, round_cap=3),
}


@dataclass
class Truth:
    """What the table held after one update, rebuilt from its log."""

    playing: bool
    round: int
    turn: int
    phase: Phase | None
    hands: list[list[int]]
    drawn: int
    views: dict[int | None, game_pb2.View]
    #: Seats whose (false) declaration showed their hand this round.
    declared: frozenset[int] = frozenset()


@dataclass
class Played:
    """A whole game, as its watchers and the record exports saw it, and as the server stored it."""

    table_id: str
    seats: dict[int | None, list[table_service_pb2.Update]]
    records: list[tuple[str, bool]]
    entries: list[dict[str, Any]]
    spec: TableSpec
    secret: bytes
    truths: dict[int, Truth] = field(default_factory=dict)


def proto_cards(cards: Any) -> list[int]:
    return [int(c) + 1 for c in cards]


def replay(
    table_id: str, spec: TableSpec, entries: list[dict[str, Any]], secret: bytes
) -> dict[int, Truth]:
    """The truth after every update number, by replaying the stored entries."""
    state = TableState(table_id, spec, secret=secret)
    encoder = convert.ViewEncoder()
    out = {}
    for number, entry in enumerate(entries, 1):
        state.apply(entry_from_dict(entry))
        g = state.game
        views: dict[int | None, game_pb2.View] = {
            s: without_presence(encoder.view(state, s, {}))
            for s in (*range(len(state.seats)), None)
        }
        if g is None:
            out[number] = Truth(False, 0, 0, None, [], 0, views)
        else:
            out[number] = Truth(
                g.phase in (Phase.DRAW, Phase.PLAY),
                g.round,
                g.turn,
                g.phase,
                [proto_cards(h) for h in g.hands],
                0 if g.drawn is None else int(g.drawn) + 1,
                views,
                _declared_this_round(g),
            )
    return out


def _declared_this_round(g: Game) -> frozenset[int]:
    """The seats that declared since the round was dealt (while it goes on, falsely)."""
    dealt = max((i for i, (seat, _) in enumerate(g.log) if seat is None), default=-1)
    return frozenset(
        seat for seat, a in g.log[dealt + 1 :] if seat is not None and isinstance(a, Declare)
    )


def repeated_cards(msg: Message, path: str = "") -> Iterator[tuple[str, list[int]]]:
    """Every repeated Card field anywhere in a message, with its path."""
    for fd, value in msg.ListFields():
        here = f"{path}.{fd.name}" if path else fd.name
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            if fd.is_repeated:
                for i, item in enumerate(value):
                    yield from repeated_cards(item, f"{here}[{i}]")
            else:
                yield from repeated_cards(value, here)
        elif (
            fd.is_repeated
            and fd.type == FieldDescriptor.TYPE_ENUM
            and fd.enum_type.full_name == "rami.v1.Card"
        ):
            yield here, list(value)


def shown_by_rule(update: table_service_pb2.Update, path: str, seat: int, truth: Truth) -> bool:
    """Fields where a hand is shown by the rules: a false declaration's 13 cards (and the
    seat's cards known held after it, which the engine's tests check against the public
    events), and the hands counted at the end of a round already over."""
    head = path.split(".")[0]
    index = int(head[head.index("[") + 1 : -1]) if "[" in head else -1
    if path.startswith("events[") and ".hand_declared.cards" in path:
        return update.events[index].hand_declared.seat == seat
    if path.startswith("view.players[") and path.endswith(".known"):
        shown = update.view.players[int(path.split("[")[1].split("]")[0])].seat == seat
        return shown and seat in truth.declared
    if path.startswith("view.results["):
        return update.view.results[int(path.split("[")[1].split("]")[0])].round < truth.round
    return False


async def play_watched(server: ServerThread, variant: str) -> Played:
    """Two remote bots, two built-in bots, a watcher on each remote seat and a spectator."""
    channel = grpc.aio.insecure_channel(server.target)
    lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
    table = table_service_pb2_grpc.TableServiceStub(channel)
    try:
        created = await lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name=f"{variant} leaks", variant=VARIANTS[variant], options=GAMES[variant]
            ),
            timeout=T,
        )
        table_id = created.table.table_id
        tokens = {}
        for seat in (0, 2):
            joined = await lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(
                    table_id=table_id, name=f"Remote {seat}", seat=seat
                ),
                timeout=T,
            )
            tokens[seat] = joined.token
        streams: dict[int | None, SeatStream] = {
            s: SeatStream(table, table_id, tok).start() for s, tok in tokens.items()
        }
        streams[None] = SeatStream(table, table_id, None).start()
        for st in streams.values():
            await st.wait(lambda u: u.snapshot)
        bots = [
            asyncio.ensure_future(
                play(
                    server.target,
                    table_id,
                    policy_decider(policy, seat),
                    token=tokens[seat],
                    channel=channel,
                )
            )
            for seat, policy in ((0, "strong"), (2, "random"))
        ]
        records: list[tuple[str, bool]] = []
        over = asyncio.Event()

        async def export() -> None:
            while not over.is_set():
                r = await table.ExportRecord(
                    table_service_pb2.ExportRecordRequest(table_id=table_id), timeout=T
                )
                records.append((r.record_json, r.complete))
                await asyncio.sleep(0.002)

        poller = asyncio.ensure_future(export())
        owner = md(created.owner_token)
        for seat, policy in ((1, "greedy"), (3, "random")):
            await lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=table_id, policy=policy, seat=seat),
                metadata=owner,
                timeout=T,
            )
        results = await asyncio.wait_for(asyncio.gather(*bots), 60)
        over.set()
        await asyncio.wait_for(poller, 10)
        final = await table.ExportRecord(
            table_service_pb2.ExportRecordRequest(table_id=table_id), timeout=T
        )
        records.append((final.record_json, final.complete))
        for r in results:
            assert r.final is not None and not r.refused
        for st in streams.values():
            await st.wait(lambda u: u.view.phase == game_pb2.PHASE_GAME_OVER)
            await st.close()
            assert st.error is None
    finally:
        await channel.close()

    async def stored() -> tuple[list[dict[str, Any]], TableSpec, bytes]:
        t = server.server.lobby.tables[table_id]  # type: ignore[union-attr]
        return await t.read(lambda s: ([e.to_dict() for e in s.entries], s.spec, s.secret))

    entries, spec, secret = server.call(stored())
    updates = {s: st.updates for s, st in streams.items()}
    return Played(table_id, updates, records, entries, spec, secret)


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_no_watcher_ever_sees_a_concealed_card(
    server: ServerThread, variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    game = asyncio.run(asyncio.wait_for(play_watched(server, variant), 90))
    # Nor does the server's log, at info level (the bots' own log, in this process, is theirs).
    server_log = [
        caplog.handler.format(r)
        for r in caplog.records
        if r.name.startswith(("rami.server", "grpc"))
    ]
    assert not [line for line in server_log if card_mentions(line)], server_log
    truths = replay(game.table_id, game.spec, game.entries, game.secret)
    final = len(game.entries)
    assert truths[final].phase == Phase.GAME_OVER
    checked_hands: dict[int, int] = {}
    for seat, updates in game.seats.items():
        # The stream: a snapshot, then every update once, in order, to the end.
        assert updates[0].snapshot and not updates[0].events
        numbers = [u.number for u in updates]
        assert numbers == list(range(numbers[0], final + 1))
        assert numbers[0] < next(i for i, e in enumerate(game.entries, 1) if e["type"] == "start")
        for u in updates:
            truth = truths[u.number]
            view = u.view
            assert view.number == u.number
            # Exactly the engine's own view of this watcher at this number.
            assert without_presence(view) == truth.views[seat], (seat, u.number)
            if seat is None:
                assert not view.HasField("seat") and not view.hand and not view.drawn
                assert not view.draw_sources and not view.can_lay and not view.can_declare
            else:
                assert view.seat == seat
                if truth.hands:
                    assert list(view.hand) == sorted(truth.hands[seat])
                    checked_hands[seat] = checked_hands.get(seat, 0) + 1
                mine = truth.turn == seat and truth.phase == Phase.PLAY
                assert view.drawn == (truth.drawn if mine else 0)
            for e in u.events:
                if e.HasField("card_drawn") and e.card_drawn.source == game_pb2.DRAW_SOURCE_STOCK:
                    assert not e.card_drawn.card, "a card drawn from the stock is never shown"
            if not truth.playing:
                continue
            # No other seat's concealed hand anywhere in the message.
            for other, hand in enumerate(truth.hands):
                if other == seat or len(hand) < WHOLE_HAND:
                    continue
                for path, values in repeated_cards(u):
                    if sorted(values) == sorted(hand):
                        assert shown_by_rule(u, path, other, truth), (seat, other, u.number, path)
    # Each remote seat's hand was compared on every update of the game (how many depends on
    # the deal, which the server's entropy makes: a short game is a few dozen updates).
    assert sorted(checked_hands) == sorted(s for s in game.seats if s is not None)
    assert all(n >= 3 for n in checked_hands.values()), checked_hands

    # The table's secret never leaves the server; a round's seed, server seed and deal only once
    # it is over (the last round's server seed is the tip of the deal chain).
    hidden = (game.secret,)
    for updates in game.seats.values():
        for u in updates:
            wire = u.SerializeToString()
            assert not any(h in wire or h.hex().encode() in wire for h in hidden)
    whole = json.loads(game.records[-1][0])
    assert game.records[-1][1] and whole["complete"]
    seeds = {r["round"]: r["seed"] for r in whole["rounds"]}
    server_seeds = {r["round"]: r["server_seed"] for r in whole["rounds"]}
    assert all(seeds.values()) and all(server_seeds.values())
    assert whole["deal"]["commitment"] == game.spec.deal_commitment
    mid_round = 0
    for text, complete in game.records[:-1]:
        assert not any(h.hex() in text for h in hidden)
        rec = json.loads(text)
        assert rec["complete"] == complete
        if complete:
            continue
        for r in rec["rounds"]:
            if r["result"] is None:
                mid_round += 1
                assert r["deal"] is None and r["seed"] is None and r["server_seed"] is None
                assert seeds[r["round"]] not in text
                assert server_seeds[r["round"]] not in text
            else:
                assert r["seed"] == seeds[r["round"]]
                assert r["server_seed"] == server_seeds[r["round"]]
                assert r["deal"] == whole["rounds"][r["round"] - 1]["deal"]
    # Nor does any update show the seeds of the round being played.
    for updates in game.seats.values():
        for u in updates:
            if u.view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY):
                current = server_seeds[u.view.round]
                assert current not in u.SerializeToString().decode("latin-1")
                assert bytes.fromhex(current) not in u.SerializeToString()
    assert mid_round > 0, "the record was exported while a round was being played"


@pytest.mark.parametrize("variant", ["tallage", "simple"])
def test_a_refused_draw_never_tells_what_the_stock_holds(
    server: ServerThread, variant: str
) -> None:
    # Seat 1 is to draw; the stock's top card is 9♠. A lay sent with a stock draw would be judged
    # with that card: whether it is refused, and why, must not depend on which card it is.
    channel = grpc.insecure_channel(server.target)
    try:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        table = table_service_pb2_grpc.TableServiceStub(channel)
        deck = stacked_deck(variant, 2, {1: "9c 9d 7s 8s"}, "7h", "9s")
        created = lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="peek",
                variant=VARIANTS[variant],
                options=game_pb2.Options(players=2),
                stacked_decks=[deck],
            ),
            timeout=T,
        )
        table_id = created.table.table_id
        tokens = [
            lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{s}", seat=s),
                timeout=T,
            ).token
            for s in (0, 1)
        ]
        first = table.Watch(
            table_service_pb2.WatchRequest(table_id=table_id), metadata=md(tokens[0]), timeout=T
        )
        try:
            view = next(first).update.view
        finally:
            first.cancel()
        table.Act(
            table_service_pb2.ActRequest(
                table_id=table_id,
                number=view.number,
                discard=table_service_pb2.DiscardAction(card=view.hand[0]),
            ),
            metadata=md(tokens[0]),
            timeout=T,
        )
        number = view.number + 1
        answers = set()
        for value in range(1, 54):
            for meld_cards in ([value], [value, *cards("9c 9d")], [*cards("7s 8s"), value]):
                draw = table_service_pb2.DrawAction(
                    source=game_pb2.DRAW_SOURCE_STOCK,
                    lay=game_pb2.Lay(
                        steps=[game_pb2.LayStep(new_meld=game_pb2.NewMeld(cards=meld_cards))]
                    ),
                )
                with pytest.raises(grpc.RpcError) as info:
                    table.Act(
                        table_service_pb2.ActRequest(table_id=table_id, number=number, draw=draw),
                        metadata=md(tokens[1]),
                        timeout=T,
                    )
                err = error_of(info.value)
                answers.add((err.code, err.reason, err.message))
        assert len(answers) == 1, answers
        info = lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T)
        assert info.table.number == number
    finally:
        channel.close()


async def waiting_table(
    lobby: lobby_service_pb2_grpc.LobbyServiceStub,
    variant: int,
    players: int,
    seats: dict[str, int],
) -> tuple[str, str, dict[str, str]]:
    """A new table of ``players`` seats, ``seats`` taken (name: seat), the others empty: its
    id, the owner's token and each name's token."""
    created = await lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=variant, options=game_pb2.Options(players=players)
        ),
        timeout=T,
    )
    tid = created.table.table_id
    tokens = {}
    for name, seat in seats.items():
        joined = await lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=tid, name=name, seat=seat), timeout=T
        )
        tokens[name] = joined.token
    return tid, created.owner_token, tokens


def test_streams_opened_before_a_start_that_renumbers_the_seats_follow_their_seat(
    server: ServerThread,
) -> None:
    """The start drops the empty seats and renumbers the others. A seat's Watch and Play
    streams opened while the table waited follow their player to the new number: each shows
    its own player's hand, never the hand now at its old number, and a Play stream's command
    is its own player's, never that of whoever took its old number."""

    async def main() -> None:
        async with grpc.aio.insecure_channel(server.target) as ch:
            lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
            table = table_service_pb2_grpc.TableServiceStub(ch)
            # Seat 0 stays empty: Ana (seat 1) becomes seat 0, Bo (seat 2) seat 1.
            tid, owner, tokens = await waiting_table(
                lobby, game_pb2.VARIANT_SIMPLE, 3, {"Ana": 1, "Bo": 2}
            )
            ana, bo = tokens["Ana"], tokens["Bo"]
            ana_watch = table.Watch(
                table_service_pb2.WatchRequest(table_id=tid), metadata=md(ana), timeout=T
            )
            commands: asyncio.Queue[table_service_pb2.PlayRequest | None] = asyncio.Queue()
            await commands.put(
                table_service_pb2.PlayRequest(open=table_service_pb2.WatchRequest(table_id=tid))
            )

            async def requests() -> Any:
                while (r := await commands.get()) is not None:
                    yield r

            ana_play = table.Play(requests(), metadata=md(ana), timeout=T)
            bo_watch = table.Watch(
                table_service_pb2.WatchRequest(table_id=tid), metadata=md(bo), timeout=T
            )
            for stream in (ana_watch, ana_play, bo_watch):
                assert (await stream.read()).update.snapshot
            await lobby.StartTable(
                lobby_service_pb2.StartTableRequest(table_id=tid), metadata=md(owner), timeout=T
            )

            async def first_game_view(stream: Any) -> game_pb2.View:
                while True:
                    msg = await asyncio.wait_for(stream.read(), T)
                    if msg.HasField("update") and msg.update.view.phase != game_pb2.PHASE_WAITING:
                        return msg.update.view

            async def own_view(token: str) -> game_pb2.View:
                fresh = table.Watch(
                    table_service_pb2.WatchRequest(table_id=tid), metadata=md(token), timeout=T
                )
                try:
                    return (await fresh.read()).update.view
                finally:
                    fresh.cancel()

            # Nobody moves until a seat acts: the fresh streams show the truth.
            truth = {"Ana": await own_view(ana), "Bo": await own_view(bo)}
            assert (truth["Ana"].seat, truth["Bo"].seat) == (0, 1)
            for name, stream in (("Ana", ana_watch), ("Ana", ana_play), ("Bo", bo_watch)):
                seen = await first_game_view(stream)
                assert seen.seat == truth[name].seat, name
                assert list(seen.hand) == list(truth[name].hand), name
            # Ana plays her turns with Act until it is Bo's turn to draw.
            view = truth["Ana"]
            while not (view.turn == 1 and view.phase == game_pb2.PHASE_DRAW):
                act = plain_move(tid, view)
                view = (await table.Act(act, metadata=md(ana), timeout=T)).view
            # Bo's turn: a draw sent on Ana's stream is Ana's, and refused.
            await commands.put(
                table_service_pb2.PlayRequest(
                    command_id=7,
                    act=table_service_pb2.ActRequest(
                        table_id=tid,
                        number=view.number,
                        draw=table_service_pb2.DrawAction(source=game_pb2.DRAW_SOURCE_STOCK),
                    ),
                )
            )
            while True:
                msg = await asyncio.wait_for(ana_play.read(), T)
                assert not msg.HasField("accepted"), "Ana's stream drew for Bo"
                if msg.HasField("refused"):
                    assert msg.refused.command_id == 7
                    assert msg.refused.reason == "NOT_YOUR_TURN"
                    break
            after = await own_view(bo)
            assert after.number == view.number and after.phase == game_pb2.PHASE_DRAW
            await commands.put(None)
            for stream in (ana_watch, ana_play, bo_watch):
                stream.cancel()

    asyncio.run(main())


def test_a_seats_stream_count_follows_its_player_through_a_start_that_renumbers_the_seats(
    tmp_path: Path,
) -> None:
    """Streams count against their player's seat whatever its number: the streams Bo opened
    at seat 2 before a start that made him seat 1 still count as his, and never as those of
    Cy, who became seat 2."""
    with ServerThread(str(tmp_path / "count.db"), streams_per_seat=2) as server:

        async def main() -> None:
            async with grpc.aio.insecure_channel(server.target) as ch:
                lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
                table = table_service_pb2_grpc.TableServiceStub(ch)
                tid, owner, tokens = await waiting_table(
                    lobby, game_pb2.VARIANT_SIMPLE, 4, {"Ana": 1, "Bo": 2, "Cy": 3}
                )
                opened = []

                async def watch(name: str) -> Any:
                    stream = table.Watch(
                        table_service_pb2.WatchRequest(table_id=tid),
                        metadata=md(tokens[name]),
                        timeout=T,
                    )
                    opened.append(stream)
                    return (await stream.read()).update.view

                # Bo's two streams, at seat 2; then the start: Ana 0, Bo 1, Cy 2.
                assert [(await watch("Bo")).seat for _ in range(2)] == [2, 2]
                await lobby.StartTable(
                    lobby_service_pb2.StartTableRequest(table_id=tid),
                    metadata=md(owner),
                    timeout=T,
                )
                # Cy, now at seat 2, may open his two.
                assert [(await watch("Cy")).seat for _ in range(2)] == [2, 2]
                # Bo, now at seat 1, still has his two open: a third is refused.
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await watch("Bo")
                assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert error_of(refused.value).reason == "TOO_MANY_STREAMS"
                # Watch and Play streams count together: the words say both.
                assert "at most 2 streams (Watch or Play) per seat" in (
                    refused.value.details() or ""
                )
                for stream in opened:
                    stream.cancel()

        asyncio.run(main())


def test_a_seat_at_its_stream_limit_can_still_be_taken_over(tmp_path: Path) -> None:
    """take_over ends the seat's other streams and makes the new one its only one: a seat
    whose streams are all open (a player's dead streams the server has not seen end yet) is
    taken back by a stream that asks, on Watch as on Play; without asking, one more is
    refused as before."""
    with ServerThread(str(tmp_path / "limit.db"), streams_per_seat=2) as server:

        async def main() -> None:
            async with grpc.aio.insecure_channel(server.target) as ch:
                lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
                table = table_service_pb2_grpc.TableServiceStub(ch)
                tid, _, tokens = await waiting_table(lobby, game_pb2.VARIANT_SIMPLE, 2, {"Ana": 0})
                ana = md(tokens["Ana"])

                async def watch(take_over: bool = False) -> Any:
                    stream = table.Watch(
                        table_service_pb2.WatchRequest(table_id=tid, take_over=take_over),
                        metadata=ana,
                        timeout=T,
                    )
                    return stream, await stream.read()

                async def ended(stream: Any) -> str:
                    """The reason a stream ends with (what it was sent before, read)."""
                    with pytest.raises(grpc.aio.AioRpcError) as refused:
                        while True:
                            await asyncio.wait_for(stream.read(), 5)
                    return error_of(refused.value).reason

                old = [(await watch())[0] for _ in range(2)]
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await watch()
                assert error_of(refused.value).reason == "TOO_MANY_STREAMS"
                new, first = await watch(take_over=True)
                assert first.took_over
                for stream in old:
                    assert await ended(stream) == "TAKEN_OVER"
                # The seat's one stream now, and one more beside it: at the limit again.
                beside, _ = await watch()
                requests: asyncio.Queue[Any] = asyncio.Queue()
                await requests.put(
                    table_service_pb2.PlayRequest(
                        open=table_service_pb2.WatchRequest(table_id=tid, take_over=True)
                    )
                )

                async def sent() -> Any:
                    while (request := await requests.get()) is not None:
                        yield request

                play = table.Play(sent(), metadata=ana, timeout=T)
                assert (await asyncio.wait_for(play.read(), 5)).took_over
                for stream in (new, beside):
                    assert await ended(stream) == "TAKEN_OVER"
                await requests.put(None)
                play.cancel()

        asyncio.run(main())


def test_a_seats_stream_ends_when_its_player_leaves_before_the_game(server: ServerThread) -> None:
    """Leaving a waiting table frees the seat and the token proves nothing from then on: the
    streams it opened end (UNAUTHENTICATED BAD_TOKEN) and never show the seat's next holder's
    hand."""

    async def main() -> None:
        async with grpc.aio.insecure_channel(server.target) as ch:
            lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
            table = table_service_pb2_grpc.TableServiceStub(ch)
            tid, owner, tokens = await waiting_table(
                lobby, game_pb2.VARIANT_PORTUGUESE, 2, {"Ana": 0}
            )
            ana = tokens["Ana"]
            spy = table.Watch(
                table_service_pb2.WatchRequest(table_id=tid), metadata=md(ana), timeout=T
            )
            assert (await spy.read()).update.view.seat == 0
            await lobby.LeaveTable(
                lobby_service_pb2.LeaveTableRequest(table_id=tid), metadata=md(ana), timeout=T
            )
            bo = (
                await lobby.JoinTable(
                    lobby_service_pb2.JoinTableRequest(table_id=tid, name="Bo", seat=0), timeout=T
                )
            ).token
            await lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=tid, policy="random", seat=1),
                metadata=md(owner),
                timeout=T,
            )  # the table is full: the game starts
            seen: list[Any] = []
            with pytest.raises(grpc.aio.AioRpcError) as ended:
                while True:
                    msg = await asyncio.wait_for(spy.read(), 3)
                    assert msg is not grpc.aio.EOF
                    seen.append(msg)
            assert ended.value.code() == grpc.StatusCode.UNAUTHENTICATED, ended.value
            assert error_of(ended.value).reason == "BAD_TOKEN"
            assert not [m for m in seen if m.HasField("update") and m.update.view.hand], seen
            # Bo, at the seat now, watches it.
            mine = table.Watch(
                table_service_pb2.WatchRequest(table_id=tid), metadata=md(bo), timeout=T
            )
            view = (await mine.read()).update.view
            assert view.seat == 0 and len(view.hand) >= 13
            mine.cancel()

    asyncio.run(main())


def test_a_stream_opened_as_the_game_starts_shows_its_players_new_seat(
    tmp_path: Path,
) -> None:
    """Watch and Play look a token's seat up, then open the stream: a start that renumbers
    the seats in between (any seated player may start the table) leaves the stream with its
    player, at the new number, never on the old number's new holder. The race is made likely
    by queueing chat lines before the Watch and the start."""
    config = TableConfig(bot_delay=3.0, round_pause=3.0, away_delay=3.0, heartbeat=0.5)
    with ServerThread(str(tmp_path / "race.db"), table_config=config) as server:

        async def attempt(ch: grpc.aio.Channel, play: bool) -> tuple[int, int, list[int]]:
            lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
            table = table_service_pb2_grpc.TableServiceStub(ch)
            tid, _, tokens = await waiting_table(  # seat 1 stays empty
                lobby, game_pb2.VARIANT_PORTUGUESE, 4, {"Ana": 0, "Bo": 2, "Cy": 3}
            )
            ana, bo, cy = tokens["Ana"], tokens["Bo"], tokens["Cy"]
            chats = [
                asyncio.ensure_future(
                    table.Chat(
                        table_service_pb2.ChatRequest(table_id=tid, text="hi"),
                        metadata=md(t),
                        timeout=T,
                    )
                )
                for t in (ana, cy, ana, cy)
            ]
            if play:

                async def requests() -> Any:
                    yield table_service_pb2.PlayRequest(
                        open=table_service_pb2.WatchRequest(table_id=tid)
                    )
                    await asyncio.sleep(T)

                stream = table.Play(requests(), metadata=md(bo), timeout=T)
            else:
                stream = table.Watch(
                    table_service_pb2.WatchRequest(table_id=tid), metadata=md(bo), timeout=T
                )
            start = lobby.StartTable(
                lobby_service_pb2.StartTableRequest(table_id=tid), metadata=md(ana), timeout=T
            )
            await asyncio.gather(start, *chats)
            while True:
                msg = await asyncio.wait_for(stream.read(), T)
                if msg.HasField("update") and msg.update.view.hand:
                    seen = msg.update.view
                    break
            stream.cancel()
            own = table.Watch(
                table_service_pb2.WatchRequest(table_id=tid), metadata=md(bo), timeout=T
            )
            truth = (await own.read()).update.view
            own.cancel()
            assert truth.seat == 1  # Bo: seat 2 -> 1
            return seen.seat, truth.seat, [list(seen.hand), list(truth.hand)]

        async def main() -> None:
            async with grpc.aio.insecure_channel(server.target) as ch:
                for i in range(12):
                    seat, true_seat, (seen, truth) = await attempt(ch, play=i % 2 == 1)
                    assert seat == true_seat and seen == truth, f"try {i}: seat {seat}"

        asyncio.run(main())


def test_a_seats_rate_limit_follows_its_player_through_a_start_that_renumbers_the_seats(
    tmp_path: Path,
) -> None:
    """The chat lines Ana sent at seat 1 before a start that made Bo seat 1 count against
    Ana, never against Bo."""
    with ServerThread(str(tmp_path / "rate.db"), chat_per_second=0.01, chat_burst=2.0) as server:

        async def main() -> None:
            async with grpc.aio.insecure_channel(server.target) as ch:
                lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
                table = table_service_pb2_grpc.TableServiceStub(ch)
                tid, owner, tokens = await waiting_table(
                    lobby, game_pb2.VARIANT_SIMPLE, 3, {"Ana": 1, "Bo": 2}
                )

                async def chat(name: str) -> str:
                    try:
                        await table.Chat(
                            table_service_pb2.ChatRequest(table_id=tid, text="hi"),
                            metadata=md(tokens[name]),
                            timeout=T,
                        )
                    except grpc.aio.AioRpcError as e:
                        return error_of(e).reason
                    return "OK"

                assert [await chat("Ana") for _ in range(3)] == ["OK", "OK", "RATE_LIMITED"]
                await lobby.StartTable(
                    lobby_service_pb2.StartTableRequest(table_id=tid),
                    metadata=md(owner),
                    timeout=T,
                )
                assert await chat("Bo") == "OK"  # Bo: seat 2 -> 1, Ana's old number
                assert await chat("Ana") == "RATE_LIMITED"

        asyncio.run(main())


def test_joining_and_leaving_a_table_over_and_over_is_held_to_a_rate(tmp_path: Path) -> None:
    """Each seat taken or left is a stored update sent to everyone at the table, and a new
    player's allowance of chat: one client address changes seats at one table at a bounded
    rate (RATE_LIMITED past it, changing nothing), and other tables are not held back."""
    with ServerThread(
        str(tmp_path / "churn.db"), seat_changes_per_second=0.01, seat_change_burst=4.0
    ) as server:

        async def main() -> None:
            async with grpc.aio.insecure_channel(server.target) as ch:
                lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
                tid, _, _ = await waiting_table(lobby, game_pb2.VARIANT_SIMPLE, 3, {})
                said = []
                for _ in range(3):
                    try:
                        joined = await lobby.JoinTable(
                            lobby_service_pb2.JoinTableRequest(table_id=tid, name="Eve"),
                            timeout=T,
                        )
                        said.append("joined")
                        await lobby.LeaveTable(
                            lobby_service_pb2.LeaveTableRequest(table_id=tid),
                            metadata=md(joined.token),
                            timeout=T,
                        )
                        said.append("left")
                    except grpc.aio.AioRpcError as e:
                        said.append(error_of(e).reason)
                assert said == ["joined", "left", "joined", "left", "RATE_LIMITED"], said
                info = await lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=tid))
                assert info.table.number == 4  # the refused join stored nothing
                other, _, _ = await waiting_table(lobby, game_pb2.VARIANT_SIMPLE, 3, {"Eve": 0})
                assert other != tid
                # Calls refused for another reason take or leave no seat, and spend nothing.
                for _ in range(6):
                    with pytest.raises(grpc.aio.AioRpcError) as refused:
                        await lobby.LeaveTable(
                            lobby_service_pb2.LeaveTableRequest(table_id=other), timeout=T
                        )
                    assert error_of(refused.value).reason == "NO_TOKEN"
                await lobby.JoinTable(
                    lobby_service_pb2.JoinTableRequest(table_id=other, name="Flo"), timeout=T
                )

        asyncio.run(main())


def test_creating_tables_over_and_over_is_held_to_a_rate(tmp_path: Path) -> None:
    """A table closed by its owner no longer counts toward the unfinished tables of its
    address, but it stays in the directory: one client address creates tables at a bounded
    rate (RATE_LIMITED past it, storing nothing). A retry of a created table, and a request
    refused for its content, spend nothing."""
    with ServerThread(
        str(tmp_path / "creations.db"), table_creations_per_second=0.01, table_creation_burst=3.0
    ) as server:

        async def main() -> None:
            async with grpc.aio.insecure_channel(server.target) as ch:
                lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)

                waits: list[int] = []

                async def create(request_id: str = "", **kwargs: Any) -> str:
                    request = lobby_service_pb2.CreateTableRequest(
                        variant=game_pb2.VARIANT_SIMPLE, request_id=request_id, **kwargs
                    )
                    try:
                        made = await lobby.CreateTable(request, timeout=T)
                    except grpc.aio.AioRpcError as e:
                        refused = error_of(e)
                        if refused.reason == "RATE_LIMITED":
                            waits.append(int(refused.metadata["retry_after_ms"]))
                        return refused.reason
                    await lobby.CloseTable(
                        lobby_service_pb2.CloseTableRequest(table_id=made.table.table_id),
                        metadata=md(made.owner_token),
                        timeout=T,
                    )
                    return made.table.table_id

                # Refused for what it asks: nothing spent.
                for _ in range(4):
                    assert await create(name="x" * 200) == "BAD_NAME"
                first = await create("req-0123456789abcdef0123456789abcdef")
                assert len(first) == 16
                assert len(await create()) == 16
                assert len(await create()) == 16
                assert await create() == "RATE_LIMITED"
                # When the next one would be taken: a token at 0.01 a second, about 100 s away.
                assert 90_000 < waits[0] <= 100_000, waits
                # The retry of a table created before is answered with it, past the rate.
                assert await create("req-0123456789abcdef0123456789abcdef") == first
                listed = await lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T)
                assert len(listed.tables) == 3  # the refused creation stored nothing

        asyncio.run(main())


def test_a_seat_that_left_does_not_come_back_once_the_game_is_over(server: ServerThread) -> None:
    """A seat that left mid-game is played for; once the game is over its token still opens
    its stream (its hand, the record), but that adds nothing to the finished table: no
    PlayerReturned after GameEnded (LeaveTable is refused GAME_OVER there too)."""

    async def main() -> None:
        async with grpc.aio.insecure_channel(server.target) as ch:
            lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
            table = table_service_pb2_grpc.TableServiceStub(ch)
            created = await lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    variant=game_pb2.VARIANT_SIMPLE,
                    options=game_pb2.Options(players=2, round_cap=1),
                ),
                timeout=T,
            )
            tid = created.table.table_id
            ana = await lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=tid, name="Ana"), timeout=T
            )
            await lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=tid, policy="greedy"),
                metadata=md(created.owner_token),
                timeout=T,
            )
            await lobby.LeaveTable(
                lobby_service_pb2.LeaveTableRequest(table_id=tid), metadata=md(ana.token), timeout=T
            )
            info = await lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=tid))
            for _ in range(300):  # the server plays both seats to the end
                if info.table.status == lobby_service_pb2.TABLE_STATUS_FINISHED:
                    break
                await asyncio.sleep(0.1)
                info = await lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=tid))
            assert info.table.status == lobby_service_pb2.TABLE_STATUS_FINISHED
            for opened in range(2):
                stream = table.Watch(
                    table_service_pb2.WatchRequest(table_id=tid, after=info.table.number),
                    metadata=md(ana.token),
                )
                first = await asyncio.wait_for(stream.read(), T)
                assert first.WhichOneof("kind") == "heartbeat", opened
                stream.cancel()
            after = await lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=tid))
            assert after.table.number == info.table.number

    asyncio.run(main())


def test_a_stream_resumed_from_before_the_start_shows_the_seats_as_they_were(
    server: ServerThread,
) -> None:
    """The start drops the empty seats and renumbers the others. A seat's stream resumed from
    before the start gets the updates before it as they were sent live: under the number its
    player had then, and with each seat's presence (now) at that seat's number then."""

    async def main() -> None:
        async with grpc.aio.insecure_channel(server.target) as ch:
            lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
            table = table_service_pb2_grpc.TableServiceStub(ch)
            # Seat 1 stays empty: Bo stays seat 0, Ana (seat 2) becomes seat 1.
            tid, owner, tokens = await waiting_table(lobby, game_pb2.VARIANT_SIMPLE, 3, {"Ana": 2})
            ana = tokens["Ana"]
            live = table.Watch(
                table_service_pb2.WatchRequest(table_id=tid), metadata=md(ana), timeout=T
            )
            first = (await live.read()).update
            await lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=tid, name="Bo", seat=0), timeout=T
            )
            await lobby.StartTable(
                lobby_service_pb2.StartTableRequest(table_id=tid), metadata=md(owner), timeout=T
            )
            sent: dict[int, table_service_pb2.Update] = {}
            while True:
                msg = await asyncio.wait_for(live.read(), T)
                if msg.HasField("update"):
                    sent[msg.update.number] = msg.update
                    if msg.update.view.phase != game_pb2.PHASE_WAITING:
                        break
            assert [sent[n].view.seat for n in sorted(sent)][:1] == [2]  # Bo's join, live
            resumed = table.Watch(
                table_service_pb2.WatchRequest(table_id=tid, after=first.number),
                metadata=md(ana),
                timeout=T,
            )
            live.cancel()
            for number in sorted(sent):
                msg = await asyncio.wait_for(resumed.read(), T)
                while not msg.HasField("update"):
                    msg = await asyncio.wait_for(resumed.read(), T)
                got, then = msg.update, sent[number]
                assert got.number == number
                assert got.view.seat == then.view.seat, number
                assert [p.name for p in got.view.players] == [p.name for p in then.view.players]
                ana_at = [p.name for p in got.view.players].index("Ana")
                connected = [p.connected for p in got.view.players]
                assert connected[ana_at], (number, connected)  # her resumed stream is open
                assert connected.count(True) == 1, (number, connected)
            resumed.cancel()

    asyncio.run(main())


def test_leaving_again_is_refused_for_what_it_is_and_spends_no_seat_change(
    tmp_path: Path,
) -> None:
    """A LeaveTable refused for the seat's state (ALREADY_AWAY) is a refusal for its seat: it
    changes nothing, and counts nothing toward the seat changes of its address."""
    with ServerThread(
        str(tmp_path / "away.db"), seat_changes_per_second=0.01, seat_change_burst=3.0
    ) as server:

        async def main() -> None:
            async with grpc.aio.insecure_channel(server.target) as ch:
                lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
                tid, _, tokens = await waiting_table(
                    lobby, game_pb2.VARIANT_TALLAGE, 2, {"Ana": 0, "Bo": 1}
                )
                leave = lobby_service_pb2.LeaveTableRequest(table_id=tid)
                await lobby.LeaveTable(leave, metadata=md(tokens["Ana"]), timeout=T)
                said = []
                for _ in range(5):
                    try:
                        await lobby.LeaveTable(leave, metadata=md(tokens["Ana"]), timeout=T)
                        said.append("left")
                    except grpc.aio.AioRpcError as e:
                        said.append(error_of(e).reason)
                assert said == ["ALREADY_AWAY"] * 5, said

        asyncio.run(main())
