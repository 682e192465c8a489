"""``rami-bot connect`` survives a server restart: it reconnects, resumes, and ends the game."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from bots_support import ROOT, FixedPortServer, Tables, free_port

from rami.v1 import lobby_service_pb2


# Down for a moment, and for longer than a table of a dead server takes to move to another
# (its lease, 10 s by default, and a sweep): the bot keeps trying that long.
@pytest.mark.parametrize("down", [0.3, 15.0])
def test_connect_resumes_after_a_server_restart(tmp_path: Path, down: float) -> None:
    db, port = str(tmp_path / "rami.db"), free_port()
    first = FixedPortServer(db, port).start()
    target = f"127.0.0.1:{port}"
    channel = grpc.insecure_channel(target)
    tables = Tables(target, channel)
    second: FixedPortServer | None = None
    bot: subprocess.Popen[str] | None = None
    first_running = True
    try:
        table_id = tables.create("portuguese", 2, ("greedy",), rounds=2)
        bot = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rami.client.bot_cli",
                "connect",
                target,
                "--table",
                table_id,
                "--policy",
                "greedy",
                "--timeout",
                "60",
                "--verbose",  # each try's "resuming after N" logged
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while tables.info(table_id).number < 12:  # a few turns into the game
            assert time.monotonic() < deadline, "the game did not start"
            assert bot.poll() is None, bot.communicate()
            time.sleep(0.05)
        first.stop()
        first_running = False
        time.sleep(down)
        second = FixedPortServer(db, port).start()
        out, err = bot.communicate(timeout=70)
        assert bot.returncode == 0, f"{out}\n{err}"
        line = out.strip().splitlines()[-1]
        assert " 0 refused" in line and "game over after 2 rounds" in line, line
        reconnects = int(line.split(" reconnects")[0].rsplit(" ", 1)[1])
        assert reconnects >= 1, line
        # The place to resume from never moves back, however many tries an outage takes (each
        # try failed used to move it back one update more: 13, 12, 11, ...).
        resumed = [int(n) for n in re.findall(r"resuming after (\d+)", err)]
        assert len(resumed) == reconnects and resumed == sorted(resumed), resumed
        info = tables.info(table_id)
        assert info.status == lobby_service_pb2.TABLE_STATUS_FINISHED
    finally:
        if bot is not None and bot.poll() is None:
            bot.kill()
            bot.wait(timeout=5)
        channel.close()
        if second is not None:
            second.stop()
        if first_running:
            first.stop()
