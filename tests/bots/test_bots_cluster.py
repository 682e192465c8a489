"""The JavaScript example on several servers sharing one PostgreSQL (a real one, started by the
tests): given a server that does not play its table, it follows TABLE_MOVED to the owner, and
when that server is killed mid-game, it finds the table again on the survivor."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from bots_support import GAME_SECONDS
from postgres_support import postgres_server, postgres_url  # noqa: F401  (fixtures)
from server_support import rami_server

from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc


async def _table(address: str) -> str:
    async with grpc.aio.insecure_channel(address) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        created = await lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="js cluster",
                variant=game_pb2.VARIANT_PORTUGUESE,
                # Two rounds: one can end at a declaration on the first turns (it did once in
                # CI), before the owner is killed mid-game.
                options=game_pb2.Options(players=2, rounds=2),
            ),
            timeout=10,
        )
        await lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=created.table.table_id, policy="greedy"),
            metadata=(("rami-token", created.owner_token),),
            timeout=10,
        )
        return str(created.table.table_id)


async def _number(address: str, table_id: str) -> tuple[int, int]:
    async with grpc.aio.insecure_channel(address) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)
        info = await lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id))
        return int(info.table.number), int(info.table.status)


def _js_bot_under_way(
    js_bot: Path, target: str, table_id: str, seconds: float, look: str
) -> subprocess.Popen[str]:
    """The JavaScript bot started on ``table_id`` at ``target``, returned once the game is
    under way (10 updates, as the server at ``look`` lists it)."""
    cmd = ["node", str(js_bot), target, table_id, "JS", "--timeout", str(seconds)]
    bot = subprocess.Popen(
        cmd, cwd=js_bot.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    end = time.monotonic() + 30
    while asyncio.run(_number(look, table_id))[0] < 10:
        if time.monotonic() > end or bot.poll() is not None:
            bot.kill()
            out, err = bot.communicate(timeout=5)
            raise AssertionError(f"the game did not get under way:\n{out}\n{err}")
        time.sleep(0.1)
    return bot


def _finished_by(bot: subprocess.Popen[str], seconds: float, look: str, table_id: str) -> str:
    """The JavaScript bot's end (killed past ``seconds``): the game over, nothing refused, the
    table finished (as the server at ``look`` lists it); what the bot logged."""
    try:
        out, err = bot.communicate(timeout=seconds)
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait(5)
    assert bot.returncode == 0, f"{out}\n{err}"
    summary = out.strip().splitlines()[-1]
    assert "game over" in summary and re.search(r"refused 0\b", summary), summary
    _, status = asyncio.run(_number(look, table_id))
    assert status == lobby_service_pb2.TABLE_STATUS_FINISHED
    return err


def test_js_bot_follows_its_table_to_the_owner_and_through_a_takeover(
    js_bot: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("postgres_url")
    key, log = tmp_path / "key", tmp_path / "servers.log"
    # The built-in bot at a quicker pace than people need (0.6 s a move, 4 s between rounds):
    # the game lasts some seconds, time enough to kill its owner mid-game.
    args = (
        *("--secret-file", str(key), "--lease-seconds", "1.5", "--log-level", "info"),
        *("--bot-delay", "0.1", "--round-pause", "0.5"),
    )
    with (
        rami_server(url, log, args=args) as (proc_a, a),
        rami_server(url, log, args=args) as (_, b),
    ):
        table_id = asyncio.run(_table(a))
        bot = _js_bot_under_way(js_bot, b, table_id, GAME_SECONDS, b)
        # Mid-game, the table's owner dies without a goodbye.
        os.killpg(proc_a.pid, signal.SIGKILL)
        err = _finished_by(bot, GAME_SECONDS + 15, b, table_id)
        assert f"going to {a}" in err  # sent to the owner, then back when it died


def test_js_bot_given_every_server_leaves_one_cut_off_from_the_database(
    js_bot: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The bot given both servers (``ipv4:A,B``); the table's owner loses its database mid-game
    and refuses the table STORAGE_FAILED while the other plays it on: the bot takes the list
    from the next server (docs/bots.md, rule 4) and finishes the game there, the owner still
    cut off."""
    from postgres_support import Gate

    url = request.getfixturevalue("postgres_url")
    gate = Gate(url)
    key, log = tmp_path / "key", tmp_path / "servers.log"
    args = (
        *("--secret-file", str(key), "--lease-seconds", "1", "--log-level", "info"),
        *("--bot-delay", "0.1", "--round-pause", "0.5"),
    )
    try:
        with (
            rami_server(gate.url, log, args=args) as (_, a),
            rami_server(url, log, args=args) as (_, b),
        ):
            table_id = asyncio.run(_table(a))
            bot = _js_bot_under_way(js_bot, f"ipv4:{a},{b}", table_id, 60, b)
            gate.shut()  # the owner's database gone, for the rest of the game
            # Done well before the drop grace (30 s), after which the other server would
            # play the seat it thinks away.
            err = _finished_by(bot, 25, b, table_id)
            assert f"going to ipv4:{b},{a}" in err, err
    finally:
        gate.close()
