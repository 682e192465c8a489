"""The real ``rami-server`` killed mid-game (SIGKILL) and started again on the same database
(a SQLite file, then a PostgreSQL database): every table continues from its last acknowledged
command, and nothing is applied twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import grpc
from server_support import (
    DOMAIN,
    RPC_TIMEOUT,
    VARIANTS,
    Driver,
    SeatStream,
    error_of,
    md,
    rami_server,
    stacked_deck,
    without_presence,
)

from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

T = RPC_TIMEOUT


class Remote:
    """Stubs on one aio channel to one server."""

    def __init__(self, address: str) -> None:
        # A subchannel of its own: the pool's one to a dead server's address is in its backoff.
        self.channel = grpc.aio.insecure_channel(
            address, options=[("grpc.use_local_subchannel_pool", 1)]
        )
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(self.channel)
        self.table = table_service_pb2_grpc.TableServiceStub(self.channel)
        self.streams: list[SeatStream] = []

    def watch(self, table_id: str, token: str | None) -> SeatStream:
        s = SeatStream(self.table, table_id, token, timeout=60).start()
        self.streams.append(s)
        return s

    async def snapshot(self, table_id: str, token: str | None) -> game_pb2.View:
        call = self.table.Watch(
            table_service_pb2.WatchRequest(table_id=table_id), metadata=md(token), timeout=T
        )
        try:
            async for msg in call:
                assert msg.update.snapshot
                return without_presence(msg.update.view)
        finally:
            call.cancel()
        raise AssertionError("no snapshot")

    async def number(self, table_id: str) -> int:
        info = await self.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T
        )
        return int(info.table.number)

    async def record(self, table_id: str) -> dict[str, Any]:
        r = await self.table.ExportRecord(
            table_service_pb2.ExportRecordRequest(table_id=table_id), timeout=T
        )
        rec: dict[str, Any] = json.loads(r.record_json)
        assert rec["complete"] == r.complete
        return rec

    async def close(self) -> None:
        for s in self.streams:
            await s.close()
        await self.channel.close(grace=None)


async def new_game(
    remote: Remote, variant: str, options: game_pb2.Options
) -> tuple[str, dict[int, str]]:
    """A game of remote seats on a stacked deal that greedy players take dozens of moves over."""
    deck = stacked_deck(variant, options.players, {}, "7h", seed=7)
    created = await remote.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name=f"{variant} restart",
            variant=VARIANTS[variant],
            options=options,
            stacked_decks=[deck],
        ),
        timeout=T,
    )
    table_id = created.table.table_id
    tokens = {}
    for seat in range(options.players):
        joined = await remote.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{seat}", seat=seat),
            timeout=T,
        )
        tokens[seat] = joined.token
    return table_id, tokens


def driver(remote: Remote, table_id: str, tokens: dict[int, str], seed: int) -> Driver:
    streams = {s: remote.watch(table_id, t) for s, t in tokens.items()}
    return Driver(remote.table, table_id, tokens, streams, policy="greedy", seed=seed)


def acted(record: dict[str, Any]) -> list[tuple[int, int]]:
    """(update number, seat) of every action in a record."""
    return [(a["number"], a["seat"]) for r in record["rounds"] for a in r["actions"]]


async def scenario(db: Path | str, log: Path, args: tuple[str, ...] = ()) -> None:
    quiet: dict[str, Any] = {}
    busy: dict[str, Any] = {}
    with rami_server(db, log, args=args) as (proc, address):
        remote = Remote(address)
        try:
            # A: portuguese, quiet when the server dies. B: tallage, acting when it dies.
            a_id, a_tokens = await new_game(
                remote, "portuguese", game_pb2.Options(players=2, rounds=1)
            )
            b_id, b_tokens = await new_game(
                remote, "tallage", game_pb2.Options(players=3, round_cap=1)
            )
            waiting = await remote.lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    name="waiting", variant=VARIANTS["simple"], options=game_pb2.Options(players=2)
                ),
                timeout=T,
            )
            w_id = waiting.table.table_id
            ana = await remote.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=w_id, name="Ana"), timeout=T
            )
            a = driver(remote, a_id, a_tokens, 1)
            await a.play(max_actions=9)
            b = driver(remote, b_id, b_tokens, 2)
            await b.play(max_actions=9)
            quiet = {
                "number": await remote.number(a_id),
                "views": [await remote.snapshot(a_id, t) for t in (*a_tokens.values(), None)],
                "record": await remote.record(a_id),
                "acked": list(a.acked),
                "last": a.requests[-1],
            }
            assert quiet["number"] == a.last
            waiting_before = (
                await remote.lobby.GetTable(
                    lobby_service_pb2.GetTableRequest(table_id=w_id), timeout=T
                )
            ).table
            # D: a game already over (seat 1 draws the 5♣ and declares A♥ to K♥).
            over = stacked_deck(
                "portuguese", 2, {1: "Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh"}, "Kc", "5c"
            )
            d = await remote.lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    name="over",
                    variant=VARIANTS["portuguese"],
                    options=game_pb2.Options(players=2, rounds=1),
                    stacked_decks=[over],
                ),
                timeout=T,
            )
            d_id = d.table.table_id
            d_tokens = {
                s: (
                    await remote.lobby.JoinTable(
                        lobby_service_pb2.JoinTableRequest(table_id=d_id, name="D", seat=s),
                        timeout=T,
                    )
                ).token
                for s in (0, 1)
            }
            await driver(remote, d_id, d_tokens, 5).play()
            finished = await remote.record(d_id)
            assert finished["complete"] and finished["rounds"][0]["result"]["multiplier"] == 4

            # B plays on; the server is killed in the middle of it.
            playing = asyncio.ensure_future(b.play())
            target = len(b.acked) + 7
            while len(b.acked) < target and not playing.done():
                await asyncio.sleep(0.001)
            assert not playing.done(), "the game ended before the kill"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            await asyncio.gather(playing, return_exceptions=True)
            busy = {"acked": list(b.acked), "sent": list(b.requests)}
        finally:
            await remote.close()

    # At the same address: on PostgreSQL, the server there takes the dead one's tables at once
    # (elsewhere, once their leases ran out).
    port = int(address.rsplit(":", 1)[1])
    with rami_server(db, log, port=port, args=args) as (_proc, address):
        remote = Remote(address)
        try:
            # A: exactly as before the kill.
            assert await remote.number(a_id) == quiet["number"]
            views = [await remote.snapshot(a_id, t) for t in (*a_tokens.values(), None)]
            assert views == quiet["views"]
            assert await remote.record(a_id) == quiet["record"]
            # The last acknowledged command, sent again with its old number: not applied twice.
            seat, request = quiet["last"]
            try:
                await remote.table.Act(request, metadata=md(a_tokens[seat]), timeout=T)
            except grpc.aio.AioRpcError as e:
                err = error_of(e)
                assert (err.code, err.reason, err.domain) == (
                    grpc.StatusCode.ABORTED,
                    "STALE",
                    DOMAIN,
                )
            else:
                raise AssertionError("a command was applied twice across a restart")
            assert await remote.number(a_id) == quiet["number"]

            # B: every acknowledged command is there, once; at most the one in flight is too.
            rec = await remote.record(b_id)
            numbers = [n for n, _ in acted(rec)]
            assert len(numbers) == len(set(numbers))
            assert set(busy["acked"]) <= set(numbers)
            last = busy["acked"][-1]
            now = await remote.number(b_id)
            assert now in (last, last + 1)
            if now == last + 1:  # the command in flight was stored, not acknowledged
                seat_in_flight = busy["sent"][-1][0]
                assert acted(rec)[-1] == (now, seat_in_flight)

            # The finished game is still there, whole.
            d_info = (
                await remote.lobby.GetTable(
                    lobby_service_pb2.GetTableRequest(table_id=d_id), timeout=T
                )
            ).table
            assert d_info.status == lobby_service_pb2.TABLE_STATUS_FINISHED
            assert await remote.record(d_id) == finished

            # The waiting table waits still, with its seat.
            info = (
                await remote.lobby.GetTable(
                    lobby_service_pb2.GetTableRequest(table_id=w_id), timeout=T
                )
            ).table
            for p in (*info.seats, *waiting_before.seats):
                p.connected = False
            assert info == waiting_before
            await remote.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=w_id, name="Rui"), timeout=T
            )
            assert (await remote.snapshot(w_id, ana.token)).phase in (
                game_pb2.PHASE_DRAW,
                game_pb2.PHASE_PLAY,
            )

            # Both games play on to their end.
            a2 = driver(remote, a_id, a_tokens, 3)
            a2.last = quiet["number"]
            b2 = driver(remote, b_id, b_tokens, 4)
            b2.last = now
            await asyncio.gather(a2.play(), b2.play())
            for table_id, before, after in (
                (a_id, quiet["acked"], a2.acked),
                (b_id, busy["acked"], b2.acked),
            ):
                rec = await remote.record(table_id)
                assert rec["complete"]
                numbers = [n for n, _ in acted(rec)]
                assert len(numbers) == len(set(numbers))
                assert set(before) | set(after) <= set(numbers)
                assert min(after) > max(before)
        finally:
            await remote.close()


def test_every_table_continues_from_its_last_acknowledged_command(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(scenario(tmp_path / "rami.db", tmp_path / "server.log"), 80))


def test_on_postgresql_every_table_continues_from_its_last_acknowledged_command(
    tmp_path: Path, postgres_url: str
) -> None:
    """The same, with ``--db postgresql://...``: the server killed with SIGKILL loses nothing
    it acknowledged, and the server started after it deals on from the same key file."""
    args = ("--secret-file", str(tmp_path / "server.key"))
    asyncio.run(asyncio.wait_for(scenario(postgres_url, tmp_path / "server.log", args), 80))
