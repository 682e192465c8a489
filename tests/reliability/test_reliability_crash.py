"""Promise 1, no acknowledged command is lost: a soak of concurrent games of remote bots (the bot
kit) against the real ``rami-server``, killed with SIGKILL at seeded random moments and started
again on the same ``--db`` and port each time: a SQLite file, then a PostgreSQL database.

At the end: every game is over; every command a client saw acknowledged is in its table's
record, at its number and for its seat; every action in a record was decided by its seat on
the update just before it (so no command was applied twice, and none was made up); every
record seen while the games ran is a prefix of the final one (nothing acknowledged was
rewritten by a restart); each record replays (deals against their seeds, every action
against the rules, all cards accounted for); a spectator that resumed by number after every
kill saw every update exactly once; and the server's log at info level names no card.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
from collections import defaultdict
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from reliability_support import (
    Acks,
    Resuming,
    actions_of,
    card_mentions,
    channel,
    check_cards_conserved,
    free_port,
)
from server_support import RPC_TIMEOUT, VARIANTS, rami_server

from rami.client.botkit import BotResult, play, policy_decider
from rami.engine import Action, View
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

T = RPC_TIMEOUT
SEED = 20261129
KILLS = 4
#: (variant, options, policy): short games, long enough together to outlive every kill.
GAMES = [
    ("portuguese", game_pb2.Options(players=4, rounds=1), "greedy"),
    ("tallage", game_pb2.Options(players=3, round_cap=1), "greedy"),
    ("simple", game_pb2.Options(players=4, round_cap=1), "greedy"),
    ("portuguese", game_pb2.Options(players=2, rounds=2), "greedy"),
    ("tallage", game_pb2.Options(players=4, round_cap=2), "greedy"),
    ("simple", game_pb2.Options(players=3, round_cap=2), "greedy"),
    ("portuguese", game_pb2.Options(players=3, rounds=2), "greedy"),
    ("tallage", game_pb2.Options(players=2, round_cap=2), "greedy"),
]


@dataclass
class Table:
    """One game of the soak, as its clients saw it."""

    table_id: str
    variant: str
    tokens: dict[int, str]
    #: The update numbers each seat decided on (the bot kit's decide function was called).
    decided: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    records: list[dict[str, Any]] = field(default_factory=list)
    spectator: Resuming | None = None
    results: list[BotResult] = field(default_factory=list)


def deciding(table: Table, seat: int, policy: str) -> Any:
    """The policy, noting each view number it decides on."""
    decide = policy_decider(policy, f"{SEED}:{table.table_id}:{seat}")

    def run(view: View) -> Action:
        table.decided[seat].add(view.number)
        return decide(view)

    return run


class Server:
    """The real server on a fixed port, killed and restarted on the same database."""

    def __init__(
        self, tmp_path: Path, port: int, db: str | Path, args: tuple[str, ...] = ()
    ) -> None:
        self.db = db
        self.args = args
        self.log = tmp_path / "server.log"
        self.port = port
        self.proc: Any = None
        self._cm: AbstractContextManager[Any] | None = None
        self.kills = 0

    async def start(self) -> None:
        self._cm = rami_server(self.db, self.log, port=self.port, log_level="info", args=self.args)
        self.proc, address = await asyncio.to_thread(self._cm.__enter__)
        assert address == f"127.0.0.1:{self.port}"

    async def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        assert self._cm is not None
        await asyncio.to_thread(self._cm.__exit__, None, None, None)
        assert self.proc.returncode == -signal.SIGKILL
        self.kills += 1

    async def stop(self) -> None:
        if self._cm is not None:
            await asyncio.to_thread(self._cm.__exit__, None, None, None)
            self._cm = None


async def soak(tmp_path: Path, db: str | Path, args: tuple[str, ...] = ()) -> None:
    rng = random.Random(SEED)
    server = Server(tmp_path, free_port(), db, args)
    await server.start()
    target = f"127.0.0.1:{server.port}"
    acks = Acks()
    ch = channel(target, interceptors=[acks])
    lobby = lobby_service_pb2_grpc.LobbyServiceStub(ch)
    stub = table_service_pb2_grpc.TableServiceStub(ch)
    tables: list[Table] = []
    tasks: list[asyncio.Task[Any]] = []
    try:
        for variant, options, _ in GAMES:
            created = await lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    name=f"{variant} soak", variant=VARIANTS[variant], options=options
                ),
                timeout=T,
            )
            table = Table(created.table.table_id, variant, {})
            table.spectator = Resuming(stub, table.table_id)
            tasks.append(asyncio.ensure_future(table.spectator.run()))
            for seat in range(options.players):
                joined = await lobby.JoinTable(
                    lobby_service_pb2.JoinTableRequest(
                        table_id=table.table_id, name=f"Bot {seat}", seat=seat
                    ),
                    timeout=T,
                )
                table.tokens[seat] = joined.token
            tables.append(table)
        bots = [
            asyncio.ensure_future(
                play(
                    target,
                    t.table_id,
                    deciding(t, seat, policy),
                    token=token,
                    channel=ch,
                    max_reconnects=1000,
                    stream=False,  # unary Act: the interceptor sees every acknowledgement
                )
            )
            for t, (_, _, policy) in zip(tables, GAMES, strict=True)
            for seat, token in t.tokens.items()
        ]
        everyone = asyncio.gather(*bots)

        async def poll_records() -> None:
            while not everyone.done():
                for t in tables:
                    try:
                        r = await stub.ExportRecord(
                            table_service_pb2.ExportRecordRequest(table_id=t.table_id), timeout=2
                        )
                    except grpc.aio.AioRpcError:
                        continue
                    t.records.append(json.loads(r.record_json))
                await asyncio.sleep(0.1)

        tasks.append(asyncio.ensure_future(poll_records()))
        mark = 0
        cut_off: set[str] = set()
        for _ in range(KILLS):
            mark += rng.randint(50, 120)
            while len(acks.acks) < mark and not everyone.done():
                acks.changed.clear()
                await acks.changed.wait()
            assert not everyone.done(), f"the games ended before kill {server.kills + 1}"
            await asyncio.sleep(rng.uniform(0.0, 0.02))
            await server.kill()
            await asyncio.sleep(rng.uniform(0.05, 0.4))  # clients find the server gone
            # A spectator whose stream was open (it had updates) and is still short of the
            # game's end while the server is down must resume (a table whose game ended before
            # this kill has nothing to resume).
            cut_off |= {
                t.table_id
                for t in tables
                if t.spectator and t.spectator.numbers and t.spectator.final is None
            }
            await server.start()
        results = await asyncio.wait_for(everyone, 90)
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        assert server.kills == KILLS

        by_token = {tok: (t, seat) for t in tables for seat, tok in t.tokens.items()}
        i = 0
        for t in tables:
            t.results = results[i : i + len(t.tokens)]
            i += len(t.tokens)
        acked: dict[tuple[str, int], list[int]] = defaultdict(list)
        for a in acks.acks:
            t, seat = by_token[a.token]
            assert a.table_id == t.table_id
            acked[t.table_id, seat].append(a.number)

        for t in tables:
            r = await stub.ExportRecord(
                table_service_pb2.ExportRecordRequest(table_id=t.table_id), timeout=T
            )
            record = json.loads(r.record_json)
            assert r.complete and record["complete"]
            check_cards_conserved(record)
            actions = actions_of(record)
            numbers = [a["number"] for a in actions]
            assert len(numbers) == len(set(numbers))
            seat_at = {a["number"]: a["seat"] for a in actions}
            for seat, result in zip(t.tokens, t.results, strict=True):
                assert result.final is not None
                assert result.final.phase == game_pb2.PHASE_GAME_OVER
                assert not result.refused, result.refused
                mine = acked[t.table_id, seat]
                # The bot kit's own list and what went over the wire agree.
                assert sorted(result.acknowledged) == sorted(mine)
                # Every acknowledged command is in the record, once, as this seat's.
                assert len(mine) == len(set(mine))
                for n in mine:
                    assert seat_at.get(n) == seat, (t.variant, seat, n)
                # Stored but not acknowledged: at most the command in flight at each kill.
                stored = [a for a in actions if a["seat"] == seat and "auto" not in a]
                assert len(stored) - len(mine) <= KILLS
            for a in actions:
                assert "auto" not in a, a  # no clock, no seat away: every move is a client's
                assert a["number"] - 1 in t.decided[a["seat"]], (t.variant, a)
            # Nothing acknowledged (or seen) was rewritten by a restart.
            assert t.records, "the record was exported while the game ran"
            for seen in t.records:
                before = actions_of(seen)
                assert actions[: len(before)] == before
            # The spectator resumed after every kill and saw each update exactly once.
            spec = t.spectator
            assert spec is not None and spec.final is not None
            assert spec.snapshots == 1
            assert spec.numbers == list(range(spec.numbers[0], spec.numbers[-1] + 1))
            # The joins, the start, every action and every next deal: nothing else happened.
            entries = len(t.tokens) + 1 + len(actions) + len(record["rounds"]) - 1
            assert spec.numbers[-1] == entries
            assert spec.resumes >= (t.table_id in cut_off)
        assert cut_off, "no spectator was watching at a kill"
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await ch.close(None)
        await server.stop()

    text = server.log.read_text()
    assert text.count("listening on") == KILLS + 1
    assert " ERROR " not in text and "Traceback" not in text, text[-3000:]
    assert not card_mentions(text), "a server log line names a card"


def test_no_acknowledged_command_is_lost_across_sigkills(tmp_path: Path) -> None:
    asyncio.run(asyncio.wait_for(soak(tmp_path, tmp_path / "rami.db"), 150))


def test_on_postgresql_no_acknowledged_command_is_lost_across_sigkills(
    tmp_path: Path, postgres_url: str
) -> None:
    """The same soak on ``--db postgresql://...`` (and a shared ``--secret-file``)."""
    args = ("--secret-file", str(tmp_path / "server.key"))
    asyncio.run(asyncio.wait_for(soak(tmp_path, postgres_url, args), 150))
