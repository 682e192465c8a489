"""Resuming a watch from a number: exactly the updates missed, then the live ones; a number not
reached yet is refused; a watcher too slow to keep up is cut off without slowing the table."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import grpc
from server_support import (
    DOMAIN,
    RPC_TIMEOUT,
    VARIANTS,
    Driver,
    SeatStream,
    error_of,
    md,
    stacked_deck,
    without_presence,
)

from rami.server.table import TableConfig
from rami.server.testing import ServerThread
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

T = RPC_TIMEOUT


def by_number(updates: list[table_service_pb2.Update]) -> dict[int, table_service_pb2.Update]:
    """Live updates by number (the opening snapshot left out)."""
    return {u.number: u for u in updates if not u.snapshot}


async def resume_mid_game(target: str) -> None:
    channel = grpc.aio.insecure_channel(target)
    lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
    table = table_service_pb2_grpc.TableServiceStub(channel)
    streams: list[SeatStream] = []
    try:
        created = await lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="resume",
                variant=VARIANTS["portuguese"],
                options=game_pb2.Options(players=2, rounds=2),
            ),
            timeout=T,
        )
        table_id = created.table.table_id

        def watch(token: str | None, after: int | None = None) -> SeatStream:
            s = SeatStream(table, table_id, token, after=after).start()
            streams.append(s)
            return s

        tokens = {}
        seats: dict[int, SeatStream] = {}
        spectator = watch(None)
        for seat in (0, 1):
            joined = await lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{seat}", seat=seat),
                timeout=T,
            )
            tokens[seat] = joined.token
            seats[seat] = watch(joined.token)  # these never disconnect
            await seats[seat].wait(lambda u: u.snapshot)
        driver = Driver(table, table_id, tokens, seats, policy="greedy", seed=7)
        await driver.play(max_actions=6)

        # Two watchers (seat 0, and a spectator) read a while, then drop.
        leavers = {0: watch(tokens[0]), None: watch(None)}
        for s in leavers.values():
            await s.wait_number(driver.last)
        await driver.play(max_actions=6)
        for s in leavers.values():
            await s.wait_number(driver.last)
            await s.close()
        seen = {k: s.updates[-1].number for k, s in leavers.items()}
        await driver.play(max_actions=10)  # the game goes on while they are away
        missed = driver.last
        assert missed > max(seen.values())
        back = {k: watch(tokens[0] if k == 0 else None, after=seen[k]) for k in leavers}
        final_view = await driver.play()  # to the end of the game
        assert final_view is None
        stayed = {0: seats[0], None: spectator}
        for s in (*stayed.values(), *back.values()):
            await s.wait(lambda u: u.view.phase == game_pb2.PHASE_GAME_OVER)
        final = stayed[0].updates[-1].number

        for k in leavers:
            before, after = leavers[k].updates, back[k].updates
            # Exactly the updates after the one last seen, each once, in order, to the end.
            assert [u.number for u in after] == list(range(seen[k] + 1, final + 1))
            assert not any(u.snapshot for u in after)
            # Identical, events and view, to what a watcher that never left received.
            always = by_number(stayed[k].updates)
            for u in after:
                assert u == always[u.number], (k, u.number)
            joined_up = [u for u in before if not u.snapshot] + after
            assert [u.number for u in joined_up] == list(range(before[0].number + 1, final + 1))
            assert all(u == always[u.number] for u in joined_up)

        # From 0: the whole history; the same as lived, but for who was connected at the time.
        whole = watch(tokens[0], after=0)
        await whole.wait(lambda u: u.view.phase == game_pb2.PHASE_GAME_OVER)
        assert [u.number for u in whole.updates] == list(range(1, final + 1))
        lived = by_number(seats[0].updates)
        for u in whole.updates:
            if u.number in lived:
                assert list(u.events) == list(lived[u.number].events)
                assert without_presence(u.view) == without_presence(lived[u.number].view)

        # After the last number: nothing to catch up, and the stream stays open (heartbeats).
        at_end = watch(None, after=final)
        await asyncio.sleep(0.7)  # more than the test server's heartbeat
        assert not at_end.updates and not at_end.done
    finally:
        for s in streams:
            await s.close()
        await channel.close()


def test_a_watcher_resumes_with_exactly_the_updates_it_missed(server: ServerThread) -> None:
    asyncio.run(asyncio.wait_for(resume_mid_game(server.target), 60))


def test_resuming_after_a_number_not_reached_yet_is_invalid_argument(server: ServerThread) -> None:
    channel = grpc.insecure_channel(server.target)
    try:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        table = table_service_pb2_grpc.TableServiceStub(channel)
        created = lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(name="r", variant=VARIANTS["tallage"]), timeout=T
        )
        table_id = created.table.table_id
        joined = lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Ana"), timeout=T
        )
        number = joined.table.number
        for token in (None, joined.token):
            for after in (number + 1, number + 1000, 2**63):
                call = table.Watch(
                    table_service_pb2.WatchRequest(table_id=table_id, after=after),
                    metadata=md(token),
                    timeout=T,
                )
                try:
                    next(call)
                except grpc.RpcError as e:
                    err = error_of(e)
                    assert (err.code, err.reason, err.domain) == (
                        grpc.StatusCode.INVALID_ARGUMENT,
                        "BAD_NUMBER",
                        DOMAIN,
                    )
                else:
                    raise AssertionError(f"after={after} was accepted at update {number}")
        info = lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T)
        assert info.table.number == number
    finally:
        channel.close()


def test_a_slow_watcher_is_cut_off_without_slowing_the_table(tmp_path: Path) -> None:
    config = TableConfig(
        bot_delay=0.002, round_pause=0.0, away_delay=0.0, heartbeat=0.5, watcher_queue=16
    )
    srv = ServerThread(str(tmp_path / "slow.db"), config).start()
    channel = grpc.insecure_channel(srv.target)
    # The slow watcher's own connection takes little at a time, so its stream backs up soon.
    slow_channel = grpc.insecure_channel(
        srv.target, options=[("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1024)]
    )
    calls: list[grpc.Future] = []
    try:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        table = table_service_pb2_grpc.TableServiceStub(channel)
        created = lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="slow",
                variant=VARIANTS["tallage"],
                options=game_pb2.Options(players=4, target=201, round_cap=2),
            ),
            timeout=T,
        )
        table_id = created.table.table_id
        request = table_service_pb2.WatchRequest(table_id=table_id)
        slow = table_service_pb2_grpc.TableServiceStub(slow_channel).Watch(request, timeout=60)
        fast = table.Watch(request, timeout=60)
        calls += [slow, fast]
        assert next(slow).update.snapshot and next(fast).update.snapshot
        started = time.monotonic()
        for _ in range(4):
            lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy"),
                metadata=md(created.owner_token),
                timeout=T,
            )
        # The table plays its whole game while the slow watcher reads nothing at all.
        numbers = []
        for msg in fast:
            if msg.HasField("update"):
                numbers.append(msg.update.number)
                if msg.update.view.phase == game_pb2.PHASE_GAME_OVER:
                    break
        elapsed = time.monotonic() - started
        assert numbers == list(range(1, numbers[-1] + 1))  # the fast one missed nothing
        final = numbers[-1]
        assert final > 3 * config.watcher_queue
        info = lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T)
        assert info.table.status == lobby_service_pb2.TABLE_STATUS_FINISHED
        assert elapsed < 30

        # Now the slow one reads: what was sent before it fell behind, then the cut.
        got = []
        try:
            for msg in slow:
                if msg.HasField("update"):
                    got.append(msg.update.number)
        except grpc.RpcError as e:
            err = error_of(e)
        else:
            raise AssertionError("the slow watcher was never cut off")
        assert (err.code, err.reason, err.domain) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "TOO_SLOW",
            DOMAIN,
        )
        assert got == list(range(1, len(got) + 1)) and len(got) < final
        assert err.metadata == {"after": str(got[-1])}
        # It resumes from where it was cut, and misses nothing.
        resumed = table_service_pb2_grpc.TableServiceStub(slow_channel).Watch(
            table_service_pb2.WatchRequest(table_id=table_id, after=got[-1]), timeout=30
        )
        calls.append(resumed)
        rest = []
        for msg in resumed:
            if msg.HasField("update"):
                rest.append(msg.update.number)
                if msg.update.view.phase == game_pb2.PHASE_GAME_OVER:
                    break
        assert got + rest == list(range(1, final + 1))
    finally:
        for c in calls:
            c.cancel()
        slow_channel.close()
        channel.close()
        srv.stop()


async def resume_on_the_clock(target: str) -> None:
    channel = grpc.aio.insecure_channel(target)
    lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
    table = table_service_pb2_grpc.TableServiceStub(channel)
    streams: list[SeatStream] = []
    try:
        created = await lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="clock",
                variant=VARIANTS["portuguese"],
                options=game_pb2.Options(players=2, rounds=1, turn_seconds=600),
                # One deal, the same every run: a dealt hand that greedy declares with within
                # its first moves ended the game, and the turn had no clock to see.
                stacked_decks=[stacked_deck("portuguese", 2, {}, "Kc")],
            ),
            timeout=T,
        )
        table_id = created.table.table_id
        tokens, seats = {}, {}
        for seat in (0, 1):
            joined = await lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{seat}", seat=seat),
                timeout=T,
            )
            tokens[seat] = joined.token
            seats[seat] = SeatStream(table, table_id, joined.token).start()
            streams.append(seats[seat])
            await seats[seat].wait(lambda u: u.snapshot)
        driver = Driver(table, table_id, tokens, seats, policy="greedy", seed=3)
        await driver.play(max_actions=3)  # two turns, and the draw of a third
        start = await seats[1].wait(lambda u: u.view.phase == game_pb2.PHASE_DRAW)
        await seats[1].wait_number(driver.last)
        live = by_number(seats[1].updates)
        back = SeatStream(table, table_id, tokens[1], after=start.number - 1).start()
        streams.append(back)
        await back.wait_number(driver.last)
        latest = back.updates[-1]
        # The turn being played has its clock in the resumed view, as it had in the live one.
        assert latest.view.HasField("turn_deadline")
        assert latest == live[latest.number]
        current = (latest.view.round, latest.view.turn)
        for u in back.updates:
            if (u.view.round, u.view.turn) == current:
                assert u == live[u.number]
    finally:
        for s in streams:
            await s.close()
        await channel.close()


def test_a_resumed_watcher_sees_the_clock_of_the_turn_being_played(server: ServerThread) -> None:
    asyncio.run(asyncio.wait_for(resume_on_the_clock(server.target), 30))


def _first_message(
    table: table_service_pb2_grpc.TableServiceStub, table_id: str, token: str, after: int | None
) -> table_service_pb2.WatchResponse:
    stream = table.Watch(
        table_service_pb2.WatchRequest(table_id=table_id, after=after),
        metadata=md(token),
        timeout=T,
    )
    try:
        return next(iter(stream))
    finally:
        stream.cancel()


def test_a_stream_resumed_at_its_last_number_learns_the_restarted_clock(
    server: ServerThread,
) -> None:
    # A restarted server starts the clock of the turn under way again, in full. A bot that
    # resumes at the very number it last saw is sent no update, only the opening heartbeat:
    # the heartbeat carries the clock the server runs now, so the bot's timer is right.
    with grpc.insecure_channel(server.target) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        table = table_service_pb2_grpc.TableServiceStub(channel)
        created = lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="clock",
                variant=VARIANTS["portuguese"],
                options=game_pb2.Options(players=2, rounds=1, turn_seconds=600),
                # One deal, the same every run: a dealt hand that greedy declares with within
                # its first moves ended the game, and the turn had no clock to see.
                stacked_decks=[stacked_deck("portuguese", 2, {}, "Kc")],
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
        seen = _first_message(table, table_id, tokens[0], None).update.view
        assert seen.HasField("turn_deadline")
        before = seen.turn_deadline.ToNanoseconds()
        # Before the restart, the heartbeat gives the clock of the latest update's views.
        beat = _first_message(table, table_id, tokens[0], seen.number)
        assert beat.HasField("heartbeat") and beat.heartbeat.number == seen.number
        assert beat.heartbeat.turn_deadline.ToNanoseconds() == before
    time.sleep(1.1)  # the new server's clock starts a second later, at least
    server.halt()
    server.start()
    with grpc.insecure_channel(server.target) as channel:
        table = table_service_pb2_grpc.TableServiceStub(channel)
        beat = _first_message(table, table_id, tokens[0], seen.number)
        assert beat.HasField("heartbeat") and beat.heartbeat.number == seen.number
        fresh = beat.heartbeat.turn_deadline.ToNanoseconds()
        assert fresh >= before + 1_000_000_000
        # The same clock as the view sent again by a resume one update early.
        again = _first_message(table, table_id, tokens[0], seen.number - 1)
        assert again.update.number == seen.number
        assert again.update.view.turn_deadline.ToNanoseconds() == fresh


def _two_seats(lobby: lobby_service_pb2_grpc.LobbyServiceStub, name: str, variant: str) -> str:
    """A new two-seat table of ``variant``: its id."""
    created = lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name=name, variant=VARIANTS[variant], options=game_pb2.Options(players=2)
        ),
        timeout=T,
    )
    return created.table.table_id


def test_a_heartbeat_carries_no_clock_where_no_turn_is_timed(
    server: ServerThread,
) -> None:
    with grpc.insecure_channel(server.target) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        table = table_service_pb2_grpc.TableServiceStub(channel)
        table_id = _two_seats(lobby, "untimed", "portuguese")
        joined = lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name="P0"), timeout=T
        )
        waiting = _first_message(table, table_id, joined.token, 1)
        assert waiting.HasField("heartbeat") and waiting.heartbeat.number == 1
        assert not waiting.heartbeat.HasField("turn_deadline")


def test_a_replay_ends_with_a_heartbeat_so_the_watcher_knows_it_is_live(tmp_path: Path) -> None:
    # A resume from far back sent every update missed, then nothing until the next heartbeat
    # (up to 15 s): a bot could not tell the past from the present.
    config = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=60.0)
    server = ServerThread(str(tmp_path / "rami.db"), table_config=config).start()
    try:
        with grpc.insecure_channel(server.target) as channel:
            lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
            table = table_service_pb2_grpc.TableServiceStub(channel)
            table_id = _two_seats(lobby, "replay", "simple")
            for s in (0, 1):
                lobby.JoinTable(
                    lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{s}", seat=s),
                    timeout=T,
                )
            # A spectator: its stream changes no seat's presence (which a heartbeat tells).
            stream = table.Watch(
                table_service_pb2.WatchRequest(table_id=table_id, after=0), timeout=10
            )
            got = []
            began = time.monotonic()
            try:
                for msg in stream:
                    got.append(msg)
                    if msg.HasField("heartbeat"):
                        break
            finally:
                stream.cancel()
            assert time.monotonic() - began < 10
            assert [m.update.number for m in got[:-1]] == [1, 2, 3]
            assert got[-1].heartbeat.number == 3
    finally:
        server.stop()
