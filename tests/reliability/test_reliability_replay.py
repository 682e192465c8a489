"""Resuming from far back on a long table (issue 12, defect 3): ``Watch(after=0)`` on a table of
thousands of updates must cost the event loop little and be limited per client.

- The replay yields: while a stream replays a 3,000-update log, another table's commands are
  applied between its slices (before, the whole log was replayed in one go inside the table's
  task, and every table of the server waited).
- A resume near the end of a long table replays from a checkpoint, not from the start.
- Far resumes are few per client at once (``TOO_MANY_STREAMS``) and spend the client's time
  budget (``RATE_LIMITED``); resumes near the end are neither.
- A replay whose watcher is cut off meanwhile (its table outpaced it: ``TOO_SLOW``) stops
  there, and the watcher resumes after the last update it was sent.
- What a resumed stream sends is what it always did, byte for byte (the server's former
  replay is kept here as the reference), for a seat and for a spectator, from the start and
  from anywhere, and the live updates follow with no gap and no duplicate.

Every table here is written to its database first (``store_long_table``), then served by a
real server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from reliability_support import store_long_table
from server_support import RPC_TIMEOUT, Driver, SeatStream, error_of, md

from rami.client.convert import action_to_request, view_from_proto
from rami.engine import POLICIES
from rami.server.convert import ViewEncoder, encode_update, update_head
from rami.server.entries import Entry
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

WATCH = "/rami.v1.TableService/Watch"
LONG = "longtable0000001"
TOKEN = "the-long-tables-seat-0-token"
T = RPC_TIMEOUT
#: The options a deaf client's channel takes: it reads little at a time, so a stream it does
#: not read stops the server's writes soon.
DEAF = [("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1024)]


def reference(
    spec: TableSpec,
    entries: list[Entry],
    seat: int | None,
    after: int,
    connected: dict[int, int],
) -> list[bytes]:
    """The updates after ``after`` as ``seat`` sees them, encoded, as the server made them
    before replays ran in slices (its former ``Table._history``, for a table without a clock:
    a fresh state, every entry applied, every update after ``after`` encoded)."""
    replay = TableState(LONG, spec)
    encoder = ViewEncoder()
    out = []
    for entry in entries:
        events = replay.apply(entry)
        if replay.number > after:
            view = encoder.encode(replay, (seat,), connected, None)[seat]
            out.append(encode_update(update_head(replay.number, events), view))
    return out


@dataclass
class RawStream:
    """A Watch stream read in the background as raw bytes: every update kept as it came."""

    channel: grpc.aio.Channel
    after: int | None
    token: str | None = None
    table_id: str = LONG
    updates: list[bytes] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    beats: list[int] = field(default_factory=list)
    error: grpc.aio.AioRpcError | None = None
    done: bool = False
    _task: asyncio.Task[None] | None = None
    _call: Any = None

    def start(self) -> RawStream:
        watch = self.channel.unary_stream(
            WATCH,
            request_serializer=table_service_pb2.WatchRequest.SerializeToString,
            response_deserializer=lambda b: b,
        )
        request = table_service_pb2.WatchRequest(table_id=self.table_id, after=self.after)
        self._call = watch(request, metadata=md(self.token), timeout=120)
        self._task = asyncio.ensure_future(self._read())
        return self

    async def _read(self) -> None:
        try:
            async for raw in self._call:
                msg = table_service_pb2.WatchResponse.FromString(raw)
                if msg.HasField("update"):
                    self.updates.append(raw)
                    self.numbers.append(msg.update.number)
                else:
                    self.beats.append(msg.heartbeat.number)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                self.error = e
        finally:
            self.done = True

    async def until(self, check: Callable[[], bool], timeout: float = 60.0) -> None:
        """Until ``check()`` holds (polled; at most ``timeout`` seconds)."""
        end = time.monotonic() + timeout
        while not check():
            assert not self.done, f"the stream ended: {self.error!r}"
            assert time.monotonic() < end, "timed out"
            await asyncio.sleep(0.01)

    async def reach(self, number: int, timeout: float = 60.0) -> None:
        """Until the update ``number`` (or a later one) came."""
        await self.until(lambda: bool(self.numbers) and self.numbers[-1] >= number, timeout)

    async def answered(self, timeout: float = 30.0, past: int = 0) -> None:
        """Until the stream sent an update after ``past`` (its first one, by default), or it
        ended."""
        await self.until(
            lambda: self.done or bool(self.numbers and self.numbers[-1] > past), timeout
        )

    def view(self) -> game_pb2.View:
        """The view of the last update."""
        return table_service_pb2.WatchResponse.FromString(self.updates[-1]).update.view

    async def close(self) -> None:
        if self._call is not None:
            self._call.cancel()
        if self._task is not None:
            await asyncio.wait_for(asyncio.gather(self._task, return_exceptions=True), 10)


@pytest.fixture
def long_db(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    db = tmp_path / "rami.db"
    yield db, asyncio.run(store_long_table(db, LONG, 3000, TOKEN))


def log_of(srv: ServerThread) -> tuple[TableSpec, list[Entry]]:
    """The long table's spec and entries as they are now (read between two changes)."""
    assert srv.server is not None
    table = srv.server.lobby.tables[LONG]
    return srv.call(table.read(lambda s: (s.spec, list(s.entries))))


async def play_seat_0(stub: Any, stream: RawStream, until: int) -> int:
    """Play seat 0 of the long table (the bots answer at once) until the table has passed
    update ``until`` and waits for seat 0 again; returns its number then."""
    rng = random.Random(3)
    for _ in range(400):  # bounded: a turn is two or three commands
        view = stream.view()
        if view.number >= until and view.turn == 0 and view.phase == game_pb2.PHASE_DRAW:
            return view.number
        if view.turn == 0 and view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY):
            action = POLICIES["greedy"](view_from_proto(view), rng)
            request = action_to_request(LONG, view.number, action)
            await stub.Act(request, metadata=md(TOKEN), timeout=T)
        await stream.reach(view.number + 1, 20)
        # The bots' turns come one after another: wait for the table to wait for seat 0.
        await asyncio.sleep(0.05)
    raise AssertionError("seat 0 never got its turn back")


# -- the replay yields --------------------------------------------------------------------


async def replays_beside_a_calm_table(target: str, count: int, replays: int) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        stub = table_service_pb2_grpc.TableServiceStub(channel)
        created = await lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="calm",
                variant=game_pb2.VARIANT_PORTUGUESE,
                options=game_pb2.Options(players=2, rounds=100),
            ),
            timeout=T,
        )
        calm_id = created.table.table_id
        tokens, streams = {}, {}
        for seat in (0, 1):
            joined = await lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=calm_id, name=f"C{seat}", seat=seat),
                timeout=T,
            )
            tokens[seat] = joined.token
        for seat in (0, 1):
            streams[seat] = SeatStream(stub, calm_id, tokens[seat]).start()
            await streams[seat].wait(lambda u: u.snapshot)
        driver = Driver(stub, calm_id, tokens, streams, policy="greedy", seed=5)
        calm = asyncio.ensure_future(driver.play(max_actions=5000))
        try:
            await asyncio.sleep(0.2)  # the calm table is under way
            for _ in range(replays):
                replay = RawStream(channel, after=0).start()
                await replay.reach(count)
                assert replay.numbers == list(range(1, count + 1))
                await replay.close()
            assert not calm.done(), "the calm table stopped playing"
        finally:
            calm.cancel()
            await asyncio.gather(calm, return_exceptions=True)
            for s in streams.values():
                await s.close()


def test_a_long_replay_yields_and_other_tables_are_served_between_its_slices(
    long_db: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, count = long_db
    with ServerThread(str(db)) as srv:
        assert srv.server is not None
        tables = srv.server.lobby.tables
        # Every entry applied on the server, in order: a table's own (its id), or a replay's
        # (each replay's states tagged with a number of their own).
        trace: list[tuple[str, int]] = []
        tags = itertools.count()
        original = TableState.apply

        def apply(self: TableState, entry: Entry) -> Any:
            table = tables.get(self.table_id)
            if table is not None and table.state is self:
                trace.append((self.table_id, 0))
            else:
                if not hasattr(self, "_replay_tag"):
                    self._replay_tag = next(tags)  # type: ignore[attr-defined]
                trace.append(("replay", self._replay_tag))  # type: ignore[attr-defined]
            return original(self, entry)

        monkeypatch.setattr(TableState, "apply", apply)
        asyncio.run(asyncio.wait_for(replays_beside_a_calm_table(srv.target, count, 3), 240))

    spans: dict[int, list[int]] = {}
    for i, (kind, tag) in enumerate(trace):
        if kind == "replay":
            spans.setdefault(tag, []).append(i)
    calm = [i for i, (kind, _) in enumerate(trace) if kind not in ("replay", LONG)]
    assert len(spans) >= 3 and calm
    between = [sum(1 for i in calm if s[0] < i < s[-1]) for s in spans.values() if len(s) > 100]
    # Each replay of the whole log let the calm table go on: its commands were applied while
    # the replay was under way (before, not one: the replay held the event loop throughout).
    assert len(between) >= 3 and all(n >= 1 for n in between), between


# -- checkpoints --------------------------------------------------------------------------


async def near_resumes(srv: ServerThread, count: int, trace: list[int]) -> None:
    async with grpc.aio.insecure_channel(srv.target) as channel:
        stub = table_service_pb2_grpc.TableServiceStub(channel)
        costs = []
        for _ in range(2):
            trace.clear()
            near = RawStream(channel, after=count - 5).start()
            await near.reach(count)
            assert near.numbers == list(range(count - 4, count + 1))
            costs.append(len(trace))
            await near.close()
        # The table goes on live, well past a checkpoint's spacing.
        seat = RawStream(channel, after=count - 1, token=TOKEN).start()
        await seat.reach(count)
        now = await play_seat_0(stub, seat, count + 300)
        await seat.close()
        trace.clear()
        near = RawStream(channel, after=now - 3).start()
        await near.reach(now)
        assert near.numbers == list(range(now - 2, now + 1))
        costs.append(len(trace))
        await near.close()
        # Each resume near the end replayed fewer entries than a checkpoint's spacing and
        # what it missed, not the whole log (before: every resume replayed all 3,000).
        assert all(c < 300 for c in costs), costs


def test_a_resume_near_the_end_of_a_long_table_replays_from_a_checkpoint(
    long_db: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, count = long_db
    with ServerThread(str(db)) as srv:
        assert srv.server is not None
        tables = srv.server.lobby.tables
        trace: list[int] = []
        original = TableState.apply

        def apply(self: TableState, entry: Entry) -> Any:
            table = tables.get(self.table_id)
            if table is None or table.state is not self:
                trace.append(1)
            return original(self, entry)

        monkeypatch.setattr(TableState, "apply", apply)
        asyncio.run(asyncio.wait_for(near_resumes(srv, count, trace), 120))


# -- limits per client --------------------------------------------------------------------


async def refusal(channel: grpc.aio.Channel, after: int, attempts: int = 1) -> Any:
    """The refusal of a Watch from ``after`` (read to its first message), or None."""
    for _ in range(attempts):
        stream = RawStream(channel, after=after).start()
        await stream.answered()
        await stream.close()
        if stream.error is not None:
            return error_of(stream.error)
        await asyncio.sleep(0.05)
    return None


async def few_far_resumes(target: str, count: int) -> None:
    async with (
        grpc.aio.insecure_channel(target, options=DEAF) as deaf,
        grpc.aio.insecure_channel(target) as other,
    ):
        # Two far resumes that their client stops reading: each stays under way.
        held = []
        for _ in range(2):
            call = table_service_pb2_grpc.TableServiceStub(deaf).Watch(
                table_service_pb2.WatchRequest(table_id=LONG, after=0), timeout=60
            )
            first = await call.read()
            assert first.update.number == 1
            held.append(call)
        # A third from the same client address is refused, as documented.
        third = await refusal(other, 0)
        assert third is not None, "a third far resume was let through"
        assert third.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert third.reason == "TOO_MANY_STREAMS"
        # A Play stream from far back too (the seat's own token: the limit is the client's).
        play = table_service_pb2_grpc.TableServiceStub(other).Play(
            iter(
                [
                    table_service_pb2.PlayRequest(
                        open=table_service_pb2.WatchRequest(table_id=LONG, after=0)
                    )
                ]
            ),
            metadata=md(TOKEN),
            timeout=30,
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await play.read()
        assert error_of(refused.value).reason == "TOO_MANY_STREAMS"
        # Resumes near the end are not limited.
        near = RawStream(other, after=count - 5).start()
        await near.reach(count)
        await near.close()
        # Once one of the two is gone, a far resume is let through again.
        held[0].cancel()
        for _ in range(100):  # bounded: the server notices the cancel within moments
            if await refusal(other, 0) is None:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("a far resume stayed refused after one of the two ended")
        for call in held:
            call.cancel()


def test_far_resumes_are_few_per_client_at_once(long_db: tuple[Path, int]) -> None:
    db, count = long_db
    with ServerThread(str(db)) as srv:
        asyncio.run(asyncio.wait_for(few_far_resumes(srv.target, count), 120))


async def budgeted_far_resumes(target: str, count: int) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = table_service_pb2_grpc.TableServiceStub(channel)
        first = RawStream(channel, after=0).start()
        await first.reach(400)
        # Its replay has spent the client's time budget: another far resume is refused...
        second = await refusal(channel, 0, attempts=20)
        assert second is not None, "a far resume was let through on a spent budget"
        assert second.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert second.reason == "RATE_LIMITED"
        # ... and so is a record, which spends the same budget;
        records = 0
        for _ in range(20):
            try:
                await stub.ExportRecord(
                    table_service_pb2.ExportRecordRequest(table_id=LONG), timeout=T
                )
            except grpc.aio.AioRpcError as e:
                assert error_of(e).reason == "RATE_LIMITED"
                records += 1
                break
            await asyncio.sleep(0.05)
        assert records, "a record was let through on a spent budget"
        # ... but a resume near the end is not on the budget.
        near = RawStream(channel, after=count - 5).start()
        await near.reach(count)
        await near.close()
        # The replay under way goes on at the budget's pace, to its end, every update once.
        await first.reach(count, timeout=120)
        assert first.numbers == list(range(1, count + 1))
        assert first.error is None
        await first.close()


def test_far_resumes_spend_the_clients_time_budget(tmp_path: Path) -> None:
    db = tmp_path / "rami.db"
    count = asyncio.run(store_long_table(db, LONG, 1200, TOKEN))
    with ServerThread(str(db), work_share=0.05, work_burst=0.01) as srv:
        asyncio.run(asyncio.wait_for(budgeted_far_resumes(srv.target, count), 180))


async def outpaced(target: str, count: int) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        numbers: list[int] = []
        cuts: list[int] = []
        after = 0
        for _ in range(5):  # each stream sends at least one slice before its cut
            stream = RawStream(channel, after=after).start()
            await stream.answered(past=count)
            await stream.close()
            numbers += stream.numbers
            if numbers and numbers[-1] > count:
                break
            assert stream.error is not None, "the stream ended for no reason"
            e = error_of(stream.error)
            assert (e.code, e.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_SLOW")
            after = int(e.metadata["after"])
            assert after == numbers[-1]
            cuts.append(after)
        # Across its cuts, the watcher got every update once, in order.
        assert numbers == list(range(1, len(numbers) + 1))
        assert len(cuts) >= 2, "the watcher was not cut off while it replayed"
        # The first replay stopped when its watcher was cut, not at the end of its log.
        assert cuts[0] < count, cuts


def test_a_replay_outpaced_by_its_table_stops_at_the_cut_and_resumes_from_there(
    tmp_path: Path,
) -> None:
    db = tmp_path / "rami.db"
    count = asyncio.run(store_long_table(db, LONG, 3000))  # four bots, playing on at once
    config = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, watcher_queue=2)
    with ServerThread(str(db), config) as srv:
        asyncio.run(asyncio.wait_for(outpaced(srv.target, count), 120))


# -- the same bytes as ever ---------------------------------------------------------------


async def same_bytes(srv: ServerThread, count: int) -> None:
    async with grpc.aio.insecure_channel(srv.target) as channel:
        stub = table_service_pb2_grpc.TableServiceStub(channel)
        spec, entries = await asyncio.to_thread(log_of, srv)
        assert len(entries) == count
        # From the start, with nobody connected: a spectator, then seat 0 (which sees itself
        # connected: it is, as its stream is sent).
        spectator = RawStream(channel, after=0).start()
        await spectator.reach(count)
        assert spectator.numbers == list(range(1, count + 1))
        assert spectator.updates == reference(spec, entries, None, 0, {})
        seat = RawStream(channel, after=0, token=TOKEN).start()
        await seat.reach(count)
        assert seat.numbers == list(range(1, count + 1))
        assert seat.updates == reference(spec, entries, 0, 0, {0: 1})

        # Live: seat 0 plays; both streams go on with every update once, in order.
        now = await play_seat_0(stub, seat, count + 30)
        await spectator.reach(now)
        spec, entries = await asyncio.to_thread(log_of, srv)
        assert len(entries) == now
        for stream, who in ((spectator, None), (seat, 0)):
            assert stream.numbers == list(range(1, now + 1)), who
            # Sent live, with seat 0 connected.
            assert stream.updates[count:] == reference(spec, entries, who, count, {0: 1}), who
            assert stream.error is None

        # From anywhere: at, before and after each checkpoint's likely place, near the end.
        afters = [1, 2, now - 300, now - 257, now - 256, now - 255, now - 5, now - 1]
        afters += [k + d for k in range(256, now, 256) for d in (-1, 0, 1)]
        for after in sorted(set(afters)):
            again = RawStream(channel, after=after).start()
            await again.reach(now)
            assert again.numbers == list(range(after + 1, now + 1)), after
            assert again.updates == reference(spec, entries, None, after, {0: 1}), after
            await again.close()
        back = RawStream(channel, after=now - 3, token=TOKEN).start()
        await back.reach(now)
        # Its first message also says the seat has one other stream open (``seat``'s).
        expected = reference(spec, entries, 0, now - 3, {0: 1})
        expected[0] += table_service_pb2.WatchResponse(other_streams=1).SerializeToString()
        assert back.updates == expected
        await back.close()
        # After the last number: a heartbeat says the stream is on.
        idle = RawStream(channel, after=now).start()
        await idle.until(lambda: bool(idle.beats), 10)
        assert not idle.updates and idle.beats[0] == now
        await idle.close()
        await spectator.close()
        await seat.close()


def test_a_resumed_stream_gets_the_same_bytes_as_ever_then_the_live_updates(
    tmp_path: Path,
) -> None:
    db = tmp_path / "rami.db"
    count = asyncio.run(store_long_table(db, LONG, 800, TOKEN))
    with ServerThread(str(db)) as srv:
        asyncio.run(asyncio.wait_for(same_bytes(srv, count), 180))
