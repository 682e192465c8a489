"""``rami-server --bot-delay`` and ``--round-pause``: the pace of the built-in bots and of the
next deal, set by whoever runs the server (the defaults give people time to see each move; a
server for bots under test plays its own seats at once)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
from server_support import SERVER, VARIANTS, rami_server

from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc

T = 10


def _bots_table(lobby: lobby_service_pb2_grpc.LobbyServiceStub) -> str:
    """A started two-round portuguese table of two built-in bots."""
    created = lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="pace",
            variant=VARIANTS["portuguese"],
            options=game_pb2.Options(players=2, rounds=2),
        ),
        timeout=T,
    )
    table_id = created.table.table_id
    owner = (("rami-token", created.owner_token),)
    for policy in ("greedy", "strong"):
        lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=table_id, policy=policy),
            metadata=owner,
            timeout=T,
        )
    lobby.StartTable(
        lobby_service_pb2.StartTableRequest(table_id=table_id), metadata=owner, timeout=T
    )
    return str(table_id)


@contextmanager
def _lobby(tmp_path: Path, *args: str) -> Iterator[lobby_service_pb2_grpc.LobbyServiceStub]:
    """The lobby of a ``rami-server`` run with ``args``."""
    with (
        rami_server(tmp_path / "r.db", tmp_path / "log", args=args) as (_, address),
        grpc.insecure_channel(address) as channel,
    ):
        yield lobby_service_pb2_grpc.LobbyServiceStub(channel)


def _table(lobby: lobby_service_pb2_grpc.LobbyServiceStub, table_id: str) -> tuple[int, int]:
    got = lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T)
    return int(got.table.number), int(got.table.status)


def test_no_bot_delay_and_no_round_pause_play_a_table_of_bots_at_once(tmp_path: Path) -> None:
    """At the defaults (0.6 s a bot's move, 4 s between rounds) two rounds of portuguese take
    some 30 s or more: every round is dozens of moves. Without them, a few seconds."""
    with _lobby(tmp_path, "--bot-delay", "0", "--round-pause", "0") as lobby:
        table_id = _bots_table(lobby)
        end = time.monotonic() + 15
        while _table(lobby, table_id)[1] != lobby_service_pb2.TABLE_STATUS_FINISHED:
            assert time.monotonic() < end, "the bots did not play at once"
            time.sleep(0.1)
        number, _ = _table(lobby, table_id)
        assert number > 10  # two rounds were played, move by move (one may end early)


def test_a_long_bot_delay_holds_the_bots_moves(tmp_path: Path) -> None:
    """A bot waits the delay the server was given before each move (at the default, 0.6 s, it
    would have made several in the time this waits)."""
    with _lobby(tmp_path, "--bot-delay", "60") as lobby:
        table_id = _bots_table(lobby)
        started = _table(lobby, table_id)
        time.sleep(2.5)
        assert _table(lobby, table_id) == started
        assert started[1] == lobby_service_pb2.TABLE_STATUS_PLAYING


def test_a_pace_out_of_range_is_refused_in_words(tmp_path: Path) -> None:
    for flag, value in (("--bot-delay", "-1"), ("--round-pause", "inf"), ("--bot-delay", "x")):
        done = subprocess.run(
            [str(SERVER), "--db", str(tmp_path / "r.db"), "--port", "0", flag, value],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 2, (flag, value)
        assert f"Invalid value for '{flag}'" in done.stderr, done.stderr
