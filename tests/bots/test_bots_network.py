"""Bots over real sockets: the JavaScript and Python examples, and ``rami-bot connect``.

Each plays whole games against three built-in bots on a real server (127.0.0.1, bots with no
delay). The games are short but whole (see conftest.SHORT); every wait is bounded.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from bots_support import GAME_SECONDS, ROOT, Tables, restored_under, run_all, silenced_under
from typer.testing import CliRunner

from rami.client.bot_cli import app, normalise_target
from rami.server.testing import ServerThread
from rami.v1 import game_pb2, lobby_service_pb2

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


def _js_command(js_bot: Path, target: str, table_id: str, name: str) -> list[str]:
    return ["node", str(js_bot), target, table_id, name, "--timeout", str(GAME_SECONDS)]


def _js_game_over(run: subprocess.CompletedProcess, rounds: int) -> None:
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    summary = run.stdout.strip().splitlines()[-1]
    assert f"game over after {rounds} rounds" in summary, f"{summary}\n{run.stderr}"
    assert re.search(r"refused 0\b", summary), f"{summary}\n{run.stderr}"


def test_js_bot_follows_a_table_restored_from_an_older_backup(js_bot: Path, tmp_path: Path) -> None:
    """Its resume (`after`) refused BAD_NUMBER by a server restored from a backup older than
    what it saw, the JavaScript bot follows the table anew and plays the game to its end. Its
    tries to resume while the server is down all start from the newest update seen, less
    one: each one earlier, as they once were, could pass the backup's number unrefused."""
    restored = restored_under(
        tmp_path, lambda t, table, name: _js_command(js_bot, t, table, name), js_bot.parent, False
    )
    err = restored.run.stderr
    assert "the table is behind what this bot saw" in err, err
    assert "has not happened" in err, err
    tries = re.findall(r"resuming after update (\d+)", err)
    assert tries and len(set(tries)) == 1, err
    _js_game_over(restored.run, 2)
    assert restored.status == lobby_service_pb2.TABLE_STATUS_FINISHED


def test_js_bot_follows_a_table_restored_one_update_behind(js_bot: Path, tmp_path: Path) -> None:
    """The backup one update older than what the JavaScript bot saw (its own discard): the
    resumed stream opens with a heartbeat below it, and the bot follows the table anew and
    plays its turn again, instead of waiting for ever."""
    restored = restored_under(
        tmp_path, lambda t, table, name: _js_command(js_bot, t, table, name), js_bot.parent, True
    )
    saved, err = restored.saved, restored.run.stderr
    assert f"the table is at {saved}, the bot saw {saved + 1}" in err, err
    _js_game_over(restored.run, 1)
    assert restored.status == lobby_service_pb2.TABLE_STATUS_FINISHED


def test_js_bot_opens_its_stream_again_when_the_server_goes_silent(
    js_bot: Path, tmp_path: Path
) -> None:
    """A server that stops answering without closing anything sends no heartbeat: the
    JavaScript bot takes its stream for dead after ``--silence`` seconds and opens a new one,
    and plays the game to its end."""

    def command(target: str, table_id: str, name: str) -> list[str]:
        return [*_js_command(js_bot, target, table_id, name), "--silence", "1"]

    err = silenced_under(command, js_bot.parent, str(tmp_path / "rami.db"))
    assert "nothing came for 1 s" in err, err


def test_the_js_bot_refuses_an_option_it_does_not_know(js_bot: Path) -> None:
    """A mistyped option is refused before anything is sent (exit 2, saying which): it was
    taken for the bot's name, or left out, and the bot ran without what was asked of it."""
    for argv, said in (
        (["127.0.0.1:1", "T", "--silense", "1"], "unknown option --silense"),
        (["127.0.0.1:1", "T", "name", "extra"], "got 4 arguments"),
        (
            ["127.0.0.1:1", "T", "--timeout", "soon"],
            '--timeout needs a number from 0 to 86400, not "soon"',
        ),
        (
            ["127.0.0.1:1", "T", "--silence", "1e9"],
            '--silence needs a number from 0.1 to 86400, not "1e9"',
        ),
        (
            ["127.0.0.1:1", "T", "--seat", "1.5"],
            '--seat needs a whole number from 0 to 5, not "1.5"',
        ),
    ):
        run = subprocess.run(
            ["node", str(js_bot), *argv], capture_output=True, text=True, timeout=30
        )
        assert run.returncode == 2, f"{argv}: exit {run.returncode}\n{run.stderr}"
        assert said in run.stderr and "usage: node bot.js" in run.stderr, run.stderr


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


def test_rami_bot_create_makes_a_table_for_a_bot_of_ones_own(tables: Tables) -> None:
    """Every example bot needs a TABLE_ID with a free seat, and nothing made one without
    writing a CreateTable and an AddBot first: ``rami-bot create`` prints it, the bots
    seated, and the game starts when a bot takes the free seat."""
    made = CliRunner().invoke(
        app, ["create", tables.target, "--variant", "simple", "--bots", "greedy,random"]
    )
    assert made.exit_code == 0, made.output
    table_id = made.stdout.strip()
    assert "1 seat is free at table" in made.stderr and table_id in made.stderr
    lobby = tables.lobby
    got = lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=10)
    assert got.table.variant == game_pb2.VARIANT_SIMPLE
    assert [s.kind for s in got.table.seats].count(game_pb2.SEAT_KIND_BOT) == 2
    assert got.table.status == lobby_service_pb2.TABLE_STATUS_WAITING
    played = CliRunner().invoke(
        app, ["connect", tables.target, "--table", table_id, "--timeout", str(GAME_SECONDS)]
    )
    assert played.exit_code == 0, played.output
    _assert_finished(tables, table_id)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--bots", "strong,clever"], "unknown bot 'clever'"),
        (["--variant", "gin"], "choose one of portuguese, tallage, simple"),
        (["--bots", "strong,strong,strong,strong,strong,strong"], "a table seats 2 to 6"),
    ],
)
def test_rami_bot_create_refuses_what_it_cannot_make_and_makes_nothing(
    tables: Tables, args: list[str], said: str
) -> None:
    before = tables.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=10)
    result = CliRunner().invoke(app, ["create", tables.target, *args])
    assert result.exit_code == 2
    assert said in " ".join(result.output.split()), result.output
    after = tables.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=10)
    assert len(after.tables) == len(before.tables)


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


def _any_step(target: str, table_id: str) -> subprocess.Popen[str]:
    script = ROOT / "examples" / "python" / "any_step.py"
    return subprocess.Popen(
        [sys.executable, str(script), target, table_id],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _seated(tables: Tables, table_id: str, name: str) -> None:
    """Wait (bounded) until a player called ``name`` sits at the table."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if any(p.name == name for p in tables.info(table_id).seats):
            return
        time.sleep(0.05)
    raise AssertionError(f"{name} never sat at {table_id}")


def _finish(proc: subprocess.Popen[str], tables: Tables, table_id: str) -> str:
    try:
        out, err = proc.communicate(timeout=GAME_SECONDS)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
    assert proc.returncode == 0, f"{out}\n{err}"
    summary = out.strip().splitlines()[-1]
    assert re.fullmatch(r"any step: seat \d: [1-9]\d* moves; game over", summary), summary
    _assert_finished(tables, table_id)
    return summary


def _table(tables: Tables, players: int) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A short simple table nobody sits at: its id and the owner's token as metadata."""
    resp = tables.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="any step",
            variant=game_pb2.VARIANT_SIMPLE,
            options=game_pb2.Options(players=players, round_cap=2),
        ),
        timeout=10,
    )
    return resp.table.table_id, (("rami-token", resp.owner_token),)


def test_the_any_step_example_waits_for_the_game_to_start(tables: Tables) -> None:
    """Joined first, it waits while the table fills (the waiting view names seat 0's turn,
    and LegalSteps refuses NOT_STARTED before the start), then plays the game to its end."""
    table_id, owner = _table(tables, 2)
    proc = _any_step(tables.target, table_id)
    _seated(tables, table_id, "Any step")
    time.sleep(0.5)  # the waiting table's snapshot has reached it
    assert proc.poll() is None, proc.communicate()
    tables.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy"),
        metadata=owner,
        timeout=10,
    )
    _finish(proc, tables, table_id)


def test_the_any_step_example_plays_the_seat_its_view_names(tables: Tables) -> None:
    """Seats are numbered again at the start when some are empty: it plays the seat of its
    view (seat 0 here, where it joined seat 1), and the game does not stall."""
    table_id, owner = _table(tables, 4)
    first = tables.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=table_id, name="First"), timeout=10
    )
    tables.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy", seat=3),
        metadata=owner,
        timeout=10,
    )
    proc = _any_step(tables.target, table_id)
    _seated(tables, table_id, "Any step")
    tables.lobby.LeaveTable(
        lobby_service_pb2.LeaveTableRequest(table_id=table_id),
        metadata=(("rami-token", first.token),),
        timeout=10,
    )
    tables.lobby.StartTable(
        lobby_service_pb2.StartTableRequest(table_id=table_id), metadata=owner, timeout=10
    )
    summary = _finish(proc, tables, table_id)
    assert summary.startswith("any step: seat 0:"), summary


def test_the_any_step_example_waits_when_rate_limited(tmp_path: Path) -> None:
    """Against a bot that moves at once, its commands come faster than a seat's rate (here
    10 a second, one at a time): it waits what each refusal's retry_after_ms says and sends
    the command again, to the end of the game."""
    with (
        ServerThread(str(tmp_path / "rate.db"), commands_per_second=10.0, command_burst=1.0) as srv,
        grpc.insecure_channel(srv.target) as ch,
    ):
        tables = Tables(srv.target, ch)
        table_id = tables.create("simple", 2, ("greedy",), round_cap=1)
        _finish(_any_step(srv.target, table_id), tables, table_id)


def test_rami_bot_connect_says_at_once_that_no_server_answers() -> None:
    """A server that cannot be reached (nothing listens there; or it speaks TLS, and the bot
    does not) is said on the first failure, not after half a minute of silence; given up, the
    bot says where it could not reach a server, not that the game went on too long."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        target = f"127.0.0.1:{s.getsockname()[1]}"  # nothing listens there once closed
    started = time.monotonic()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "rami.client.bot_cli", "connect", target),
            *("--table", "t", "--timeout", "3"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert time.monotonic() - started < 20
    lines = done.stderr.strip().splitlines()
    assert "can't be reached" in lines[0] and "trying again" in lines[0], lines
    assert lines[-1] == (
        f"rami-bot: no Rami server answered at {target} within 3 s (is rami-server running"
        " there? one that speaks TLS needs --tls)"
    ), lines


def test_rami_bot_connect_tells_a_server_that_answered_from_none(tmp_path: Path) -> None:
    """A server that answers, but refuses the join for now (its store is busy: UNAVAILABLE
    with a reason), is not told as no server at all: given up, the bot says what the server
    answered, and that it did answer."""
    import sqlite3

    db = str(tmp_path / "rami.db")
    with ServerThread(db) as srv:
        channel = grpc.insecure_channel(srv.target)
        try:
            table_id = Tables(srv.target, channel).create("simple", 2)
        finally:
            channel.close()
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the join's entry can't be stored while it lasts
        try:
            done = subprocess.run(
                [
                    *(sys.executable, "-m", "rami.client.bot_cli", "connect", srv.target),
                    *("--table", table_id, "--timeout", "8"),
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
        finally:
            other.execute("ROLLBACK")
            other.close()
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[0] == (
        "rami-bot: the server answered UNAVAILABLE (STORAGE_FAILED): the table could not store"
        " this change: nothing was changed; trying again"
    ), lines
    assert not any("no Rami server answered" in line for line in lines), lines
    assert lines[-1] == (
        f"rami-bot: the server at {srv.target} answered, but did not seat the bot within 8 s:"
        " UNAVAILABLE (STORAGE_FAILED): the table could not store this change: nothing was"
        " changed"
    ), lines


def test_rami_bot_connect_with_a_token_says_the_first_drop_at_once(tmp_path: Path) -> None:
    """Taking a seat back (``--token``) while its server is down: the first failed stream is
    said at once, without -v, not only the give-up at the end."""
    with ServerThread(str(tmp_path / "rami.db")) as srv:
        channel = grpc.insecure_channel(srv.target)
        try:
            tables = Tables(srv.target, channel)
            table_id = tables.create("simple", 2, ("greedy",))
            joined = tables.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Back"), timeout=10
            )
        finally:
            channel.close()
        srv.halt()
        done = subprocess.run(
            [
                *(sys.executable, "-m", "rami.client.bot_cli", "connect", srv.target),
                *("--table", table_id, "--token", joined.token, "--timeout", "3"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("rami-bot: stream dropped (UNAVAILABLE: "), lines
    assert lines[0].endswith("; resuming from the start"), lines
    assert lines[1] == "rami-bot: the game did not end within 3 s", lines
