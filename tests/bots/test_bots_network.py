"""Bots over real sockets: the JavaScript and Python examples, and ``rami-bot connect``.

Each plays whole games against three built-in bots on a real server (127.0.0.1, bots with no
delay). The games are short but whole (see conftest.SHORT); every wait is bounded.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from bots_support import GAME_SECONDS, ROOT, Tables, run_all
from typer.testing import CliRunner

from rami.client.bot_cli import app, normalise_target
from rami.server.testing import ServerThread
from rami.v1 import lobby_service_pb2

BUILT_IN = ("strong", "greedy", "random")


def _assert_finished(tables: Tables, table_id: str) -> None:
    info = tables.info(table_id)
    assert info.status == lobby_service_pb2.TABLE_STATUS_FINISHED


def test_js_bot_plays_a_whole_game_of_every_variant(
    js_bot: Path, tables: Tables, server: ServerThread
) -> None:
    ids = {v: tables.create(v, 4, BUILT_IN) for v in ("portuguese", "tallage", "simple")}
    runs = run_all(
        {
            v: [
                "node",
                str(js_bot),
                server.target,
                table_id,
                f"JS {v}",
                "--timeout",
                str(GAME_SECONDS),
            ]
            for v, table_id in ids.items()
        },
        cwd=js_bot.parent,
    )
    for variant, run in runs.items():
        assert run.returncode == 0, f"{variant}: {run.stdout}\n{run.stderr}"
        summary = run.stdout.strip().splitlines()[-1]
        assert "game over" in summary, summary
        assert re.search(r"refused 0\b", summary), f"{variant}: {summary}\n{run.stderr}"
        assert int(re.search(r"actions (\d+)", summary).group(1)) > 0
        _assert_finished(tables, ids[variant])


def test_the_js_bots_safe_move_discards_a_card_it_holds(js_bot: Path) -> None:
    """The card drawn may be on the table already (a discard taken with its lay): the safe
    move, the answer to a refusal, then discards a card of the hand, never the one laid."""
    probe = (
        "const { Bot } = require('./bot.js');"
        "const move = (view) => JSON.stringify(Bot.prototype.safeMove.call(null, view));"
        "console.log(move({ phase: 'PHASE_PLAY', drawn: 'CARD_DIAMONDS_7',"
        " hand: ['CARD_CLUBS_2', 'CARD_HEARTS_KING'] }));"
        "console.log(move({ phase: 'PHASE_PLAY', drawn: 'CARD_CLUBS_2',"
        " hand: ['CARD_CLUBS_2', 'CARD_HEARTS_KING'] }));"
    )
    run = subprocess.run(
        ["node", "-e", probe], cwd=js_bot.parent, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    laid, held = run.stdout.split()
    assert json.loads(laid) == {"discard": {"card": "CARD_HEARTS_KING"}}
    assert json.loads(held) == {"discard": {"card": "CARD_CLUBS_2"}}


def test_python_example_bot_plays_a_whole_game_of_every_variant(
    tables: Tables, server: ServerThread
) -> None:
    ids = {v: tables.create(v, 4, BUILT_IN) for v in ("portuguese", "tallage", "simple")}
    script = ROOT / "examples" / "python" / "bot.py"
    runs = run_all(
        {
            v: [
                sys.executable,
                str(script),
                server.target,
                table_id,
                "--name",
                f"Tidy {v}",
                "--timeout",
                str(GAME_SECONDS),
            ]
            for v, table_id in ids.items()
        },
        cwd=ROOT,
    )
    for variant, run in runs.items():
        assert run.returncode == 0, f"{variant}: {run.stdout}\n{run.stderr}"
        summary = run.stdout.strip().splitlines()[-1]
        assert "game over" in summary, summary
        assert " 0 refused" in summary, f"{variant}: {summary}\n{run.stderr}"
        _assert_finished(tables, ids[variant])


def test_the_any_step_example_plays_a_whole_game_of_every_variant(
    tables: Tables, server: ServerThread
) -> None:
    """examples/python/any_step.py, on the bare contract: each move is random steps that
    LegalSteps lists, sent in one Act; every one is accepted and the game ends."""
    ids = {v: tables.create(v, 4, BUILT_IN) for v in ("portuguese", "tallage", "simple")}
    script = ROOT / "examples" / "python" / "any_step.py"
    runs = run_all(
        {v: [sys.executable, str(script), server.target, table_id] for v, table_id in ids.items()},
        cwd=ROOT,
    )
    for variant, run in runs.items():
        assert run.returncode == 0, f"{variant}: {run.stdout}\n{run.stderr}"
        summary = run.stdout.strip().splitlines()[-1]
        assert re.fullmatch(r"any step: seat \d: [1-9]\d* moves; game over", summary), summary
        _assert_finished(tables, ids[variant])


def test_rami_bot_connect_plays_a_seat_to_the_end(tables: Tables) -> None:
    table_id = tables.create("simple", 2, ("greedy",))
    result = CliRunner().invoke(
        app,
        [
            "connect",
            tables.target,
            "--table",
            table_id,
            "--policy",
            "strong",
            "--name",
            "Cli",
            "--timeout",
            str(GAME_SECONDS),
        ],
    )
    assert result.exit_code == 0, result.output
    line = result.stdout.strip().splitlines()[-1]
    pattern = r"seat 1 \(strong\): \d+ actions, 0 refused, 0 reconnects; game over"
    assert re.match(pattern, line), line
    _assert_finished(tables, table_id)


def test_rami_bot_connect_reports_a_missing_table(tables: Tables) -> None:
    result = CliRunner().invoke(
        app, ["connect", tables.target, "--table", "nosuchtable", "--timeout", "10"]
    )
    assert result.exit_code == 1
    assert "NOT_FOUND" in result.stderr


def test_targets_get_the_default_port() -> None:
    assert normalise_target("localhost") == "localhost:50051"
    assert normalise_target("example.org:7000") == "example.org:7000"
    assert normalise_target("[::1]") == "[::1]:50051"
    assert normalise_target("[::1]:7000") == "[::1]:7000"
    assert normalise_target("::1") == "[::1]:50051"
    # gRPC's own target names, several servers among them, go as they are.
    for target in ("dns:///rami.example:50051", "ipv4:10.0.0.1:50051,10.0.0.2:50051", "unix:/s"):
        assert normalise_target(target) == target


def test_rami_bot_connect_plays_expert(tables: Tables) -> None:
    """The expert (a tiny budget: a test, not a match) plays a whole game over the network
    from the views it is sent: none of its moves is refused."""
    table_id = tables.create("simple", 2, ("greedy",))
    result = CliRunner().invoke(
        app,
        [
            "connect",
            tables.target,
            "--table",
            table_id,
            "--policy",
            "expert",
            "--expert-budget",
            "0.002",
            "--timeout",
            str(GAME_SECONDS),
        ],
    )
    assert result.exit_code == 0, result.output
    line = result.stdout.strip().splitlines()[-1]
    pattern = r"seat 1 \(expert\): \d+ actions, 0 refused, 0 reconnects; game over"
    assert re.match(pattern, line), line
    _assert_finished(tables, table_id)
