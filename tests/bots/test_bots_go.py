"""The Go example bot (examples/go), built offline from the .proto files, over real sockets.

It plays whole games of every variant against three built-in bots with no refused command,
sends a rate-limited command again, resumes after a server restart, follows a table restored
from an older backup anew (its resume refused BAD_NUMBER, or a heartbeat one update behind),
and sends its own entropy. The build (the ``go_bot`` fixture) is skipped, saying what is
missing, where Go or Debian's Go packages are not installed; the contract's go_package is
checked everywhere.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import grpc
import pytest
from bots_support import (
    GAME_SECONDS,
    ROOT,
    Restart,
    Tables,
    restored_under,
    run_all,
    silenced_under,
)

from rami.server.testing import ServerThread, deck_to_proto, stacked_deck
from rami.v1 import lobby_service_pb2, table_service_pb2, table_service_pb2_grpc

BUILT_IN = ("strong", "greedy", "random")
#: The Go import path of the contract (docs/bots.md, "Worked example: Go").
GO_PACKAGE = "rami.invalid/gen/go/rami/v1;ramiv1"
SUMMARY = re.compile(
    r"rami-go-bot: seat (?P<seat>\d+): game over after (?P<rounds>\d+) rounds; .*"
    r"actions (?P<actions>\d+) \(lays (?P<lays>\d+)\), refused (?P<refused>\d+), "
    r"aborted (?P<aborted>\d+), rate-limited (?P<limited>\d+), reconnects (?P<reconnects>\d+)$"
)


def _summary(run: subprocess.CompletedProcess) -> re.Match[str]:
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    line = run.stdout.strip().splitlines()[-1]
    found = SUMMARY.match(line)
    assert found, f"no summary line: {line}\n{run.stderr}"
    return found


def _command(go_bot: Path, target: str, table_id: str, name: str) -> list[str]:
    return [str(go_bot), target, table_id, name, "--timeout", str(GAME_SECONDS)]


def test_every_contract_file_names_the_same_go_package() -> None:
    # The released contract has it too (buf breaking checks it from now on); this keeps the
    # documented import path in every file, a new one included.
    files = sorted((ROOT / "proto" / "rami" / "v1").glob("*.proto"))
    assert len(files) >= 6, files
    for path in files:
        module = importlib.import_module(f"rami.v1.{path.stem}_pb2")
        assert module.DESCRIPTOR.GetOptions().go_package == GO_PACKAGE, path.name


def test_go_bot_plays_a_whole_game_of_every_variant(
    go_bot: Path, tables: Tables, server: ServerThread
) -> None:
    ids = {v: tables.create(v, 4, BUILT_IN) for v in ("portuguese", "tallage", "simple")}
    runs = run_all(
        {v: _command(go_bot, server.target, table_id, f"Go {v}") for v, table_id in ids.items()},
        cwd=ROOT,
    )
    table = table_service_pb2_grpc.TableServiceStub(tables.channel)
    for variant, run in runs.items():
        found = _summary(run)
        print(f"{variant}: {run.stdout.strip().splitlines()[-1]}")
        assert found["refused"] == "0", f"{variant}: {found.string}\n{run.stderr}"
        assert int(found["actions"]) > 0, found.string
        info = tables.info(ids[variant])
        assert info.status == lobby_service_pb2.TABLE_STATUS_FINISHED
        # Its own 32 random bytes are in the record, at its seat.
        record = json.loads(
            table.ExportRecord(
                table_service_pb2.ExportRecordRequest(table_id=ids[variant]), timeout=10
            ).record_json
        )
        entropy = record["deal"]["entropies"][int(found["seat"])]
        assert len(bytes.fromhex(entropy)) == 32, record["deal"]


def test_go_bot_sends_a_rate_limited_command_again(go_bot: Path, tmp_path: Path) -> None:
    # One command at a time, ten a second: the discard right after the draw must wait. The deal
    # is junk for both seats, so the greedy dealer can't lay its whole hand before the Go bot
    # has drawn (on a fair deal it once did, and the Go bot never played).
    deck = stacked_deck("simple", [None, None], "3c")
    with (
        ServerThread(
            str(tmp_path / "limited.db"), commands_per_second=10.0, command_burst=1.0
        ) as srv,
        grpc.insecure_channel(srv.target) as ch,
    ):
        tables = Tables(srv.target, ch)
        table_id = tables.create("simple", 2, ("greedy",), (deck_to_proto(deck),), round_cap=1)
        run = subprocess.run(
            _command(go_bot, srv.target, table_id, "Go limited"),
            capture_output=True,
            text=True,
            timeout=GAME_SECONDS + 15,
        )
        found = _summary(run)
        assert int(found["limited"]) >= 1, found.string
        assert found["refused"] == "0", f"{found.string}\n{run.stderr}"
        assert tables.info(table_id).status == lobby_service_pb2.TABLE_STATUS_FINISHED


def test_go_bot_resumes_after_a_server_restart(go_bot: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "rami.db")
    with Restart(db) as r:
        table_id = r.tables.create("portuguese", 2, ("greedy",), rounds=2)
        r.launch(_command(go_bot, r.target, table_id, "Go resumed"))
        r.wait_until(table_id, 12, "the game did not start")  # a few turns into the game
        r.restart(db, down=0.3)
        run = r.finish()
        found = _summary(run)
        assert found["rounds"] == "2" and found["refused"] == "0", f"{found.string}\n{run.stderr}"
        assert int(found["reconnects"]) >= 1, found.string
        assert r.tables.info(table_id).status == lobby_service_pb2.TABLE_STATUS_FINISHED


def test_go_bot_follows_a_table_restored_from_an_older_backup(go_bot: Path, tmp_path: Path) -> None:
    """The server comes back from a backup taken some updates before what the bot saw: its
    resume (`after`) is refused INVALID_ARGUMENT BAD_NUMBER. The bot follows the table anew,
    from where it is, and plays the game to its end, rather than stop on a refusal it would
    take for a bug of its own."""
    restored = restored_under(
        tmp_path, lambda t, table, name: _command(go_bot, t, table, name), go_bot.parent, False
    )
    found, err = _summary(restored.run), restored.run.stderr
    # Its one line says why: the server's refusal ("update N has not happened: ...").
    assert "the table is behind what this bot saw" in err, err
    assert "has not happened" in err, err
    assert found["rounds"] == "2" and found["refused"] == "0", f"{found.string}\n{err}"
    assert restored.status == lobby_service_pb2.TABLE_STATUS_FINISHED


def test_go_bot_follows_a_table_restored_one_update_behind(go_bot: Path, tmp_path: Path) -> None:
    """The backup is one update older than what the bot saw: its own discard. Resumed one
    update early, the stream is not refused: it opens with a heartbeat whose number is below
    the bot's last update. The bot follows the table anew and plays its turn again; else the
    table waits on the bot, and the bot on an update, until its --timeout."""
    restored = restored_under(
        tmp_path, lambda t, table, name: _command(go_bot, t, table, name), go_bot.parent, True
    )
    found, err, saved = _summary(restored.run), restored.run.stderr, restored.saved
    assert f"the table is at {saved}, the bot saw {saved + 1}" in err, err
    assert found["rounds"] == "1" and found["refused"] == "0", f"{found.string}\n{err}"
    assert restored.status == lobby_service_pb2.TABLE_STATUS_FINISHED


def test_go_bot_opens_its_stream_again_when_the_server_goes_silent(
    go_bot: Path, tmp_path: Path
) -> None:
    """A server that stops answering without closing anything sends no heartbeat: the Go bot
    takes its stream for dead after ``--silence`` seconds and opens a new one, and plays the
    game to its end, rather than wait on a stream nothing will come on."""

    def command(target: str, table_id: str, name: str) -> list[str]:
        return [*_command(go_bot, target, table_id, name), "--silence", "1"]

    err = silenced_under(command, ROOT, str(tmp_path / "rami.db"))
    assert "stream lost (no message for 1s)" in err, err


def test_the_go_example_is_gofmt_clean_and_vets(go_bot: Path) -> None:
    gofmt = shutil.which("gofmt")
    if gofmt is None:
        pytest.skip("gofmt is not on PATH (it comes with golang-go)")
    example = ROOT / "examples" / "go"
    unformatted = subprocess.run(
        [gofmt, "-l", str(example)], capture_output=True, text=True, timeout=60
    )
    assert unformatted.returncode == 0 and unformatted.stdout == "", unformatted
    # The build's GOPATH holds the generated code: vet the example against it.
    gopath = f"{go_bot.parent.parent}:{os.environ.get('RAMI_GOCODE', '/usr/share/gocode')}"
    env = {"GOPATH": gopath, "GO111MODULE": "off", "GOPROXY": "off", "GOFLAGS": ""}
    vet = subprocess.run(
        ["go", "vet", "."],
        cwd=example,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert vet.returncode == 0, vet.stderr
