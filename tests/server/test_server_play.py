"""The Play stream: Watch and Act on one bidirectional stream, through the same table.

Whole games played on Play streams (every command acknowledged on the update it became, the
stored log the same as with Act), a table where one seat plays on a stream and the other with
Act, every refusal on the stream (which goes on), and the stream's own errors.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from server_support import (
    DOMAIN,
    RPC_TIMEOUT,
    SeatStream,
    error_of,
    error_reasons,
    first_match,
    md,
)

from rami.client.convert import action_to_request, view_from_proto
from rami.engine import POLICIES
from rami.server.testing import ServerThread
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

_PLAYING = (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)


@dataclass
class PlayStream:
    """One Play stream: requests sent from a queue, every response kept, waiters woken."""

    stub: table_service_pb2_grpc.TableServiceStub
    table_id: str
    token: str | None
    after: int | None = None
    responses: list[table_service_pb2.PlayResponse] = field(default_factory=list)
    error: grpc.RpcError | None = None
    done: bool = False
    _out: asyncio.Queue[table_service_pb2.PlayRequest | None] = field(default_factory=asyncio.Queue)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _task: asyncio.Task[None] | None = None
    _call: object = None
    _ids: int = 0

    def start(self, first: table_service_pb2.PlayRequest | None = None) -> PlayStream:
        """Open the stream (with ``first`` as its first message, else ``open``)."""
        if first is None:
            first = table_service_pb2.PlayRequest(
                open=table_service_pb2.WatchRequest(table_id=self.table_id, after=self.after)
            )
        self._out.put_nowait(first)
        self._call = self.stub.Play(self._requests(), metadata=md(self.token), timeout=60)
        self._task = asyncio.ensure_future(self._read())
        return self

    async def _requests(self) -> AsyncIterator[table_service_pb2.PlayRequest]:
        while True:
            request = await self._out.get()
            if request is None:
                return
            yield request

    async def _read(self) -> None:
        try:
            async for msg in self._call:  # type: ignore[attr-defined]
                async with self._changed:
                    self.responses.append(msg)
                    self._changed.notify_all()
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                self.error = e
        finally:
            async with self._changed:
                self.done = True
                self._changed.notify_all()

    def send(self, request: table_service_pb2.PlayRequest) -> int:
        """Send one message (a command gets the next id, unless it has one); its id."""
        if not request.command_id:
            self._ids += 1
            request.command_id = self._ids
        self._out.put_nowait(request)
        return request.command_id

    def act(self, act: table_service_pb2.ActRequest) -> int:
        """Send a command; its id."""
        return self.send(table_service_pb2.PlayRequest(act=act))

    async def wait(
        self, pred: Callable[[table_service_pb2.PlayResponse], bool], timeout: float = 20.0
    ) -> table_service_pb2.PlayResponse:
        """The first response that satisfies ``pred``, waiting for it if need be."""

        return await first_match(self, self.responses, pred, timeout)

    async def answer(self, command_id: int) -> table_service_pb2.PlayResponse:
        """The acknowledgement or the refusal of a command."""
        return await self.wait(
            lambda r: (
                (r.HasField("accepted") and r.accepted == command_id)
                or (r.HasField("refused") and r.refused.command_id == command_id)
            )
        )

    async def close(self) -> None:
        self._out.put_nowait(None)
        if self._call is not None:
            self._call.cancel()  # type: ignore[attr-defined]
        if self._task is not None:
            await asyncio.wait_for(asyncio.gather(self._task, return_exceptions=True), 10)


async def _table(
    target: str, variant: int, players: int = 2
) -> tuple[grpc.aio.Channel, str, dict[int, str]]:
    """A channel, and a started table whose seats have all joined: (channel, id, tokens)."""
    ch = grpc.aio.insecure_channel(target)
    lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
    created = await lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=variant, options=game_pb2.Options(players=players)
        ),
        timeout=RPC_TIMEOUT,
    )
    tid = created.table.table_id
    tokens = {}
    for _ in range(players):
        joined = await lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=tid, name="p"), timeout=RPC_TIMEOUT
        )
        tokens[joined.seat] = joined.token
    return ch, tid, tokens


async def _play_out(
    streams: dict[int, PlayStream], rng: random.Random, limit: int = 3000
) -> tuple[int, list[int]]:
    """Play every seat on its stream with the greedy policy until the game is over; returns
    (commands sent, update numbers acknowledged)."""
    sent, acked = 0, []
    number = 0
    while sent < limit:
        # The latest update any stream has, then its seat to move, on that seat's own stream.
        latest = await streams[0].wait(
            lambda r, n=number: r.HasField("update") and r.update.number >= n
        )
        view = latest.update.view
        if view.phase == game_pb2.PHASE_GAME_OVER:
            return sent, acked
        if view.phase not in _PLAYING:
            number = view.number + 1
            continue
        seat = view.turn
        own = await streams[seat].wait(
            lambda r, n=view.number: r.HasField("update") and r.update.number >= n
        )
        action = POLICIES["greedy"](view_from_proto(own.update.view), rng)
        cid = streams[seat].act(action_to_request("", own.update.view.number, action))
        sent += 1
        answer = await streams[seat].answer(cid)
        assert answer.HasField("update"), answer
        assert answer.update.number == own.update.view.number + 1
        acked.append(answer.update.number)
        number = answer.update.number
    raise AssertionError("the game did not end")


@pytest.mark.parametrize("variant", [game_pb2.VARIANT_TALLAGE, game_pb2.VARIANT_PORTUGUESE])
def test_a_whole_game_on_play_streams(server: ServerThread, variant: int) -> None:
    async def run() -> None:
        ch, tid, tokens = await _table(server.target, variant)
        stub = table_service_pb2_grpc.TableServiceStub(ch)
        streams = {s: PlayStream(stub, tid, t).start() for s, t in tokens.items()}
        try:
            sent, acked = await _play_out(streams, random.Random(variant))
            assert sent == len(acked) > 0
            assert acked == sorted(acked) and len(set(acked)) == len(acked)
            # Every update reached both streams, in order, numbered one by one.
            for s in streams.values():
                numbers = [r.update.number for r in s.responses if r.HasField("update")]
                assert numbers == list(range(numbers[0], numbers[-1] + 1))
                assert not any(r.HasField("refused") for r in s.responses)
            # The stored log holds one act per acknowledged command.
            record = await stub.ExportRecord(
                table_service_pb2.ExportRecordRequest(table_id=tid), timeout=RPC_TIMEOUT
            )
            assert record.complete
            rounds = json.loads(record.record_json)["rounds"]
            stored = sorted(a["number"] for r in rounds for a in r["actions"])
            assert set(acked) <= set(stored)
        finally:
            for s in streams.values():
                await s.close()
            await ch.close()

    asyncio.run(run())


def test_a_seat_on_a_play_stream_and_a_seat_with_act_share_the_table(
    server: ServerThread,
) -> None:
    async def run() -> None:
        ch, tid, tokens = await _table(server.target, game_pb2.VARIANT_TALLAGE)
        stub = table_service_pb2_grpc.TableServiceStub(ch)
        play = PlayStream(stub, tid, tokens[0]).start()
        watch = SeatStream(stub, tid, tokens[1]).start()
        rng = random.Random(7)
        try:
            for _ in range(40):
                await watch.wait(
                    lambda u: u.view.phase in _PLAYING or u.view.phase == game_pb2.PHASE_GAME_OVER
                )
                latest = watch.updates[-1]
                if latest.view.phase == game_pb2.PHASE_GAME_OVER:
                    break
                if latest.view.phase not in _PLAYING:  # between two rounds
                    await watch.wait_number(latest.number + 1)
                    continue
                if latest.view.turn == 1:
                    action = POLICIES["greedy"](view_from_proto(latest.view), rng)
                    response = await stub.Act(
                        action_to_request(tid, latest.view.number, action),
                        metadata=md(tokens[1]),
                        timeout=RPC_TIMEOUT,
                    )
                    got = await play.wait(
                        lambda r, n=response.number: r.HasField("update") and r.update.number == n
                    )
                    assert not got.HasField("accepted")  # not this stream's command
                    await watch.wait_number(response.number)
                else:
                    own = await play.wait(
                        lambda r, n=latest.number: r.HasField("update") and r.update.number >= n
                    )
                    action = POLICIES["greedy"](view_from_proto(own.update.view), rng)
                    cid = play.act(action_to_request(tid, own.update.number, action))
                    answer = await play.answer(cid)
                    assert answer.HasField("update")
                    await watch.wait_number(answer.update.number)
            # Both streams saw every update, in order, from the later of their openings on.
            play_numbers = [r.update.number for r in play.responses if r.HasField("update")]
            watch_numbers = [u.number for u in watch.updates]
            for numbers in (play_numbers, watch_numbers):
                assert numbers == list(range(numbers[0], numbers[-1] + 1))
            both = range(max(play_numbers[0], watch_numbers[0]), play_numbers[-1] + 1)
            assert set(both) <= set(watch_numbers)
        finally:
            await play.close()
            await watch.close()
            await ch.close()

    asyncio.run(run())


def test_refused_commands_are_answered_on_the_stream_which_goes_on(
    server: ServerThread,
) -> None:
    async def run() -> None:
        ch, tid, tokens = await _table(server.target, game_pb2.VARIANT_TALLAGE)
        stub = table_service_pb2_grpc.TableServiceStub(ch)
        first = (
            await SeatStream(stub, tid, tokens[0]).start().wait(lambda u: u.view.phase in _PLAYING)
        )
        mover = first.view.turn
        other = 1 - mover
        streams = {s: PlayStream(stub, tid, tokens[s]).start() for s in (0, 1)}
        try:
            snap = await streams[mover].wait(lambda r: r.HasField("update"))
            number = snap.update.number
            draw = table_service_pb2.ActRequest(number=number)
            draw.draw.source = game_pb2.DRAW_SOURCE_STOCK
            discard = snap.update.view.hand[0]

            async def refused(stream: PlayStream, request: table_service_pb2.PlayRequest) -> str:
                answer = await stream.answer(stream.send(request))
                assert answer.HasField("refused"), answer
                assert answer.refused.command_id == request.command_id
                assert answer.refused.message
                # As an ErrorInfo would say it, with the code the contract gives the reason.
                assert answer.refused.domain == DOMAIN
                assert answer.refused.code == error_reasons()[answer.refused.reason].value[0]
                return f"{answer.refused.code}:{answer.refused.reason}"

            def act(r: table_service_pb2.ActRequest) -> table_service_pb2.PlayRequest:
                return table_service_pb2.PlayRequest(act=r)

            # Not this seat's turn.
            assert (await refused(streams[other], act(draw))).startswith("9:")
            # A malformed card.
            bad = table_service_pb2.ActRequest(number=number)
            bad.discard.card = 99
            assert await refused(streams[mover], act(bad)) == "3:BAD_CARD"
            # Another table, a second `open`.
            elsewhere = table_service_pb2.ActRequest(table_id="nope", number=number)
            elsewhere.draw.source = game_pb2.DRAW_SOURCE_STOCK
            assert await refused(streams[mover], act(elsewhere)) == "3:OTHER_TABLE"
            again = table_service_pb2.PlayRequest(open=table_service_pb2.WatchRequest(table_id=tid))
            assert await refused(streams[mover], again) == "3:NOT_A_COMMAND"
            # The stream goes on: the mover draws (the first seat of the round may have to
            # discard first; either way one command is accepted).
            view = snap.update.view
            if view.phase == game_pb2.PHASE_PLAY:
                ok = table_service_pb2.ActRequest(number=number)
                ok.discard.card = discard
            else:
                ok = draw
            cid = streams[mover].act(ok)
            answer = await streams[mover].answer(cid)
            assert answer.HasField("update") and answer.update.number == number + 1
            # The same command again, decided on a view that is no longer the latest.
            answer = await streams[mover].answer(streams[mover].act(ok))
            assert answer.HasField("refused")
            assert answer.refused.code == grpc.StatusCode.ABORTED.value[0]
            assert answer.refused.reason == "STALE"
            assert answer.refused.metadata["current"] == str(number + 1)
        finally:
            for s in streams.values():
                await s.close()
            await ch.close()

    asyncio.run(run())


def test_commands_sent_back_to_back_are_answered_in_the_order_sent(
    server: ServerThread,
) -> None:
    """A stream need not wait for one command's answer to send the next: each is answered,
    accepted or refused, in the order sent, a refusal the stream makes itself (a message that
    is not a command) after the answers of the commands sent before it; a burst longer than
    the commands a stream may have queued at once is answered whole."""

    async def run() -> None:
        ch, tid, tokens = await _table(server.target, game_pb2.VARIANT_TALLAGE)
        stub = table_service_pb2_grpc.TableServiceStub(ch)
        first = (
            await SeatStream(stub, tid, tokens[0]).start().wait(lambda u: u.view.phase in _PLAYING)
        )
        mover = first.view.turn
        stream = PlayStream(stub, tid, tokens[mover]).start()
        try:
            snap = await stream.wait(lambda r: r.HasField("update"))
            number = snap.update.number
            view = snap.update.view

            def act(**kind: object) -> table_service_pb2.PlayRequest:
                request = table_service_pb2.ActRequest(number=kind.pop("number", number))
                if "card" in kind:
                    request.discard.card = kind["card"]  # type: ignore[assignment]
                else:
                    request.draw.source = game_pb2.DRAW_SOURCE_STOCK
                return table_service_pb2.PlayRequest(act=request)

            # The first seat of a round may hold 15 cards and discard first.
            opening = act(card=view.hand[0]) if view.phase == game_pb2.PHASE_PLAY else act()
            again = table_service_pb2.PlayRequest(open=table_service_pb2.WatchRequest(table_id=tid))
            burst = [opening, again, act(), act(card=99, number=number + 1)]
            burst += [act(number=number) for _ in range(12)]  # stale, every one
            ids = [stream.send(r) for r in burst]
            answers = [await stream.answer(i) for i in ids]
            kinds = ["update" if a.HasField("update") else a.refused.reason for a in answers]
            assert kinds[:2] == ["update", "NOT_A_COMMAND"], kinds
            assert kinds[2] == "STALE" and kinds[3] == "BAD_CARD", kinds
            assert kinds[4:] == ["STALE"] * 12, kinds
            # In the order sent, on the stream.
            order = [
                r.accepted if r.HasField("accepted") else r.refused.command_id
                for r in stream.responses
                if r.HasField("accepted") or r.HasField("refused")
            ]
            assert order == ids
            assert answers[0].update.number == number + 1
        finally:
            await stream.close()
            await ch.close()

    asyncio.run(run())


def test_messages_that_are_not_commands_count_against_the_seats_commands(tmp_path: Path) -> None:
    """A stream that sends messages which are not commands (a second `open`, an empty
    message), as fast as it can, was answered every one, never slowed: each now counts as a
    command does. Past the seat's burst they are refused RATE_LIMITED, and the stream is read
    no faster than the seat's rate (its next message waits for the refusal's
    retry_after_ms)."""

    async def run(target: str) -> None:
        ch, tid, tokens = await _table(target, game_pb2.VARIANT_TALLAGE)
        stub = table_service_pb2_grpc.TableServiceStub(ch)
        stream = PlayStream(stub, tid, tokens[0]).start()
        try:
            await stream.wait(lambda r: r.HasField("update"))
            again = table_service_pb2.PlayRequest(open=table_service_pb2.WatchRequest(table_id=tid))
            started = time.monotonic()
            ids = [stream.send(table_service_pb2.PlayRequest(open=again.open)) for _ in range(8)]
            ids += [stream.send(table_service_pb2.PlayRequest()) for _ in range(4)]
            answers = [await stream.answer(i) for i in ids]
            took = time.monotonic() - started
            reasons = [a.refused.reason for a in answers]
            # The burst is 3, and the stream's open counted as one.
            assert reasons[:2] == ["NOT_A_COMMAND"] * 2, reasons
            assert "RATE_LIMITED" in reasons, reasons
            limited = answers[reasons.index("RATE_LIMITED")].refused
            assert limited.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
            assert int(limited.metadata["retry_after_ms"]) > 0
            # Some answered at the seat's rate (4 a second): not all at once.
            assert took >= 0.5, (took, reasons)
        finally:
            await stream.close()
            await ch.close()

    with ServerThread(
        str(tmp_path / "rami.db"), commands_per_second=4.0, command_burst=3.0
    ) as server:
        asyncio.run(run(server.target))


def test_a_play_stream_needs_open_first_a_table_and_a_seat_token(server: ServerThread) -> None:
    async def run() -> None:
        ch, tid, tokens = await _table(server.target, game_pb2.VARIANT_TALLAGE)
        stub = table_service_pb2_grpc.TableServiceStub(ch)
        cases = [
            (
                tokens[0],
                table_service_pb2.PlayRequest(act=table_service_pb2.ActRequest()),
                grpc.StatusCode.INVALID_ARGUMENT,
                "OPEN_FIRST",
            ),
            (None, None, grpc.StatusCode.UNAUTHENTICATED, "NO_TOKEN"),
            ("not-a-token", None, grpc.StatusCode.UNAUTHENTICATED, "BAD_TOKEN"),
        ]
        try:
            for token, first, code, reason in cases:
                s = PlayStream(stub, tid, token).start(first)
                await asyncio.wait_for(_ended(s), 20)
                assert s.error is not None, (token, first)
                err = error_of(s.error)
                assert (err.code, err.reason) == (code, reason)
                await s.close()
            s = PlayStream(stub, "no-such-table", tokens[0]).start()
            await asyncio.wait_for(_ended(s), 20)
            assert s.error is not None and error_of(s.error).code == grpc.StatusCode.NOT_FOUND
            await s.close()
        finally:
            await ch.close()

    asyncio.run(run())


async def _ended(stream: PlayStream) -> None:
    async with stream._changed:
        while not stream.done:
            await stream._changed.wait()
