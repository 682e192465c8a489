"""``rami-bot connect`` survives a server restart: it reconnects, resumes, and ends the game."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from bots_support import ROOT, FixedPortServer, Restart, Tables, free_port, restored_under

from rami.v1 import lobby_service_pb2


def _greedy_bot(target: str, table_id: str, *more: str) -> subprocess.Popen[str]:
    """``rami-bot connect`` with the greedy policy at ``table_id``, in a process of its own
    (60 s at most), its output and log piped."""
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "rami.client.bot_cli", "connect", target),
            *("--table", table_id, "--policy", "greedy", "--timeout", "60", *more),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# Down for a moment, and for longer than a table of a dead server takes to move to another
# (its lease, 10 s by default, and a sweep): the bot keeps trying that long.
@pytest.mark.parametrize("down", [0.3, 15.0])
def test_connect_resumes_after_a_server_restart(tmp_path: Path, down: float) -> None:
    db = str(tmp_path / "rami.db")
    with Restart(db) as r:
        table_id = r.tables.create("portuguese", 2, ("greedy",), rounds=2)
        r.bot = _greedy_bot(r.target, table_id, "--verbose")  # each try's "resuming after N"
        r.wait_until(table_id, 12, "the game did not start")  # a few turns into the game
        r.restart(db, down=down)
        run = r.finish(timeout=70)
        out, err = run.stdout, run.stderr
        assert run.returncode == 0, f"{out}\n{err}"
        line = out.strip().splitlines()[-1]
        assert " 0 refused" in line and "game over after 2 rounds" in line, line
        reconnects = int(line.split(" reconnects")[0].rsplit(" ", 1)[1])
        assert reconnects >= 1, line
        # The place to resume from never moves back, however many tries an outage takes (each
        # try failed used to move it back one update more: 13, 12, 11, ...).
        resumed = [int(n) for n in re.findall(r"resuming after (\d+)", err)]
        assert len(resumed) == reconnects and resumed == sorted(resumed), resumed
        info = r.tables.info(table_id)
        assert info.status == lobby_service_pb2.TABLE_STATUS_FINISHED


def test_a_killed_bot_s_seat_is_taken_back_with_the_token_it_printed(tmp_path: Path) -> None:
    """``rami-bot connect`` says its seat's token when it sits down (on stderr: the output
    stays its summary), so that a bot that died can be started again on its seat with
    ``--token``, which plays the game to its end."""
    from typer.testing import CliRunner

    from rami.client.bot_cli import app

    db, port = str(tmp_path / "rami.db"), free_port()
    server = FixedPortServer(db, port).start()
    target = f"127.0.0.1:{port}"
    channel = grpc.insecure_channel(target)
    tables = Tables(target, channel)
    bot: subprocess.Popen[str] | None = None
    try:
        table_id = tables.create("portuguese", 2, ("greedy",), rounds=1)
        bot = _greedy_bot(target, table_id)
        assert bot.stderr is not None
        said = bot.stderr.readline()
        found = re.search(rf"seat 1 at table {table_id}; .*--token (\S+)", said)
        assert found, said
        deadline = time.monotonic() + 30
        while tables.info(table_id).number < 8:  # a few turns into the game
            assert time.monotonic() < deadline, "the game did not start"
            time.sleep(0.05)
        bot.kill()
        bot.wait(timeout=10)
        result = CliRunner().invoke(
            app,
            [
                "connect",
                target,
                "--table",
                table_id,
                "--policy",
                "greedy",
                "--token",
                found.group(1),
                "--timeout",
                "60",
            ],
        )
        assert result.exit_code == 0, result.output
        line = result.stdout.strip().splitlines()[-1]
        assert re.match(r"seat 1 \(greedy\): \d+ actions, 0 refused, .*game over", line), line
        # Taking a seat back says no new token: the one given is the seat's.
        assert "--token" not in result.stderr
        assert tables.info(table_id).status == lobby_service_pb2.TABLE_STATUS_FINISHED
    finally:
        if bot is not None and bot.poll() is None:
            bot.kill()
            bot.wait(timeout=5)
        channel.close()
        server.stop()


@pytest.mark.parametrize("stream", [True, False])
def test_a_bot_whose_server_goes_silent_opens_its_stream_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    """A server that stops answering without closing anything (frozen, or cut off by the
    network while its connection stays open) sends no heartbeat: the bot takes its stream for
    dead after ``silence`` seconds and opens a new one, rather than wait as long as the server
    does (while another server plays its seat). Here the server's loop is held for 3 s, its
    heartbeat being 0.5 s; the bot's bound is 1 s."""
    import asyncio
    import logging

    from rami.client.botkit import play, policy_decider
    from rami.server.testing import ServerThread

    with ServerThread(str(tmp_path / "rami.db")) as server:
        channel = grpc.insecure_channel(server.target)
        try:
            table_id = Tables(server.target, channel).create("portuguese", 2, ("greedy",))
        finally:
            channel.close()

        def freeze(_: object) -> None:  # once seated, the game started: the server freezes
            server.loop.call_soon_threadsafe(time.sleep, 3.0)

        async def go() -> int:
            result = await asyncio.wait_for(
                play(
                    server.target,
                    table_id,
                    policy_decider("greedy", 1),
                    stream=stream,
                    silence=1.0,
                    on_join=freeze,
                ),
                60,
            )
            assert result.final is not None
            return result.reconnects

        with caplog.at_level(logging.INFO, logger="rami.client.bot"):
            reconnects = asyncio.run(go())
    assert reconnects >= 1
    assert "nothing came from the server for 1 s" in caplog.text, caplog.text


def test_a_bot_follows_a_table_restored_from_an_older_backup(tmp_path: Path) -> None:
    """The server comes back from a backup taken earlier in the game: the table is behind
    the updates the bot saw, and resuming after them is refused (INVALID_ARGUMENT
    BAD_NUMBER). The bot follows the table from where it is now and plays the game to its
    end, rather than stop on a refusal it took for a bug of its own. (The JavaScript and Go
    examples meet the same scenario in their own tests.)"""

    def command(target: str, table_id: str, name: str) -> list[str]:
        return [
            *(sys.executable, "-m", "rami.client.bot_cli", "connect", target),
            *("--table", table_id, "--name", name, "--policy", "greedy", "--timeout", "60"),
        ]

    restored = restored_under(tmp_path, command, ROOT, False)
    out, err = restored.run.stdout, restored.run.stderr
    assert restored.run.returncode == 0, f"{out}\n{err}"
    assert "the table is behind" in err, err
    line = out.strip().splitlines()[-1]
    assert "game over after 2 rounds" in line, line


@pytest.mark.parametrize("stream", [True, False])
def test_a_bot_follows_a_table_restored_one_update_behind(tmp_path: Path, stream: bool) -> None:
    """The backup is one update older than what the bot saw: its own last move. Resumed one
    update early, as bots do, the stream is not refused: the server answers with a heartbeat
    alone, whose number is below the bot's. The bot takes it for what it is, follows the
    table from there and plays its turn again; else the table waits on the bot, and the bot
    for an update, for ever."""
    import asyncio
    import shutil
    import sqlite3
    import threading

    from rami.client.botkit import BotResult, play, policy_decider
    from rami.engine import Discard, Phase

    db, port = str(tmp_path / "rami.db"), free_port()
    backup = str(tmp_path / "backup" / "rami.db")
    from dataclasses import replace

    server = FixedPortServer(db, port)
    server.table_config = replace(server.table_config, bot_delay=3.0)  # time to stop first
    server.start()
    target = f"127.0.0.1:{port}"
    channel = grpc.insecure_channel(target)
    tables = Tables(target, channel)
    greedy = policy_decider("greedy", 1)
    held, go = threading.Event(), threading.Event()

    def decide(view):  # type: ignore[no-untyped-def]
        action = greedy(view)
        if isinstance(action, Discard) and view.phase == Phase.PLAY and not go.is_set():
            held.set()  # the first discard waits until the backup is taken
            go.wait(30)
        return action

    outcome: list[BotResult | BaseException] = []

    def bot() -> None:
        try:
            coro = play(target, table_id, decide, stream=stream, silence=60.0)
            outcome.append(asyncio.run(asyncio.wait_for(coro, 90)))
        except BaseException as e:
            outcome.append(e)

    second: FixedPortServer | None = None
    try:
        table_id = tables.create("portuguese", 2, ("greedy",), rounds=1)
        runner = threading.Thread(target=bot, daemon=True)
        runner.start()
        assert held.wait(30), "the bot's turn did not come"
        (tmp_path / "backup").mkdir()
        with sqlite3.connect(db) as live, sqlite3.connect(backup) as copy:
            live.backup(copy)  # the table after the bot's draw
        shutil.copy(db + ".key", backup + ".key")
        saved = tables.info(table_id).number
        # The bot's discard is stored, and the server stops before the other bot's move.
        go.set()
        deadline = time.monotonic() + 10
        while tables.info(table_id).number < saved + 1:
            assert time.monotonic() < deadline, "the discard was not stored"
            time.sleep(0.001)
        server.stop()
        second = FixedPortServer(backup, port).start()
        runner.join(90)
        assert outcome and isinstance(outcome[0], BotResult), outcome
        assert outcome[0].final is not None
    finally:
        go.set()
        channel.close()
        if second is not None:
            second.stop()
        else:
            server.stop()
