"""``rami-server``'s flags and start: a value the server can't serve with is refused at once, in
one line, before any file is made; a database it can't open is said in one line, not a
traceback. (An operator's try found values taken that made every later CreateTable fail,
a port number wrapped round, and screens of traceback.)"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
from server_support import SERVER, rami_server


def _serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The server's exit; one that starts (the flag taken) is stopped after a few seconds."""
    try:
        return subprocess.run(
            [str(SERVER), "--port", "0", *args],
            capture_output=True,
            text=True,
            timeout=20,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the server started with {args}: {e.stdout!r}") from None


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--port", "99999"), "--port"),
        (("--port", "-1"), "--port"),
        (("--turn-seconds", "-5"), "--turn-seconds"),
        (("--turn-seconds", "5000"), "--turn-seconds"),
        (("--max-tables-per-client", "-1"), "--max-tables-per-client"),
        (("--drop-grace", "-1"), "--drop-grace"),
        (("--drop-grace", "nan"), "--drop-grace"),
        (("--waiting-expiry", "-3"), "--waiting-expiry"),
        (("--waiting-expiry", "inf"), "--waiting-expiry"),
        (("--log-level", "verbose"), "--log-level"),
        (("--db", ""), "--db"),
        (("--expert-budget", "inf"), "--expert-budget"),
        (("--expert-budget", "100"), "--expert-budget"),
        (("--max-connections", "-1"), "--max-connections"),
        (("--max-streams-per-connection", "-1"), "--max-streams-per-connection"),
        (("--handshake-seconds", "0"), "--handshake-seconds"),
        (("--handshake-seconds", "1e300"), "--handshake-seconds"),
        (("--idle-connection-seconds", "inf"), "--idle-connection-seconds"),
        (("--idle-connection-seconds", "3e6"), "--idle-connection-seconds"),
        (("--max-streams-per-connection", "99999999999"), "--max-streams-per-connection"),
        # The settings of several servers on PostgreSQL, given to one on its SQLite file.
        (("--advertise", "127.0.0.1:50051"), "--advertise and --lease-seconds are for"),
        (("--lease-seconds", "5"), "--advertise and --lease-seconds are for"),
    ],
)
def test_a_flag_the_server_cannot_serve_with_is_refused_before_anything_is_made(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    done = _serve("--db", str(tmp_path / "r.db"), *args, cwd=tmp_path)
    out = done.stderr + done.stdout
    assert done.returncode == 2, out
    assert said in out and "Traceback" not in out, out
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == [], made  # no database, no key, no lock, no folder


def test_a_postgresql_url_without_its_scheme_is_not_taken_for_a_file(tmp_path: Path) -> None:
    # It served from a SQLite file in a new folder named "rami@127.0.0.1:55440".
    done = _serve("--db", "rami:pw@127.0.0.1:55440/rami", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "name the database postgresql://rami:***@127.0.0.1:55440/rami" in done.stderr
    assert "pw" not in done.stderr.replace("postgresql", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_database_in_a_folder_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    # It was made, folders and all: a mistyped path served from a new, empty database.
    done = _serve("--db", str(tmp_path / "no" / "such" / "rami.db"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"no folder {tmp_path / 'no' / 'such'}" in done.stderr, done.stderr
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("trouble", ["a folder", "not a database", "newer schema"])
def test_a_sqlite_file_the_server_cannot_use_is_said_in_one_line(
    tmp_path: Path, trouble: str
) -> None:
    db = tmp_path / "rami.db"
    if trouble == "a folder":
        db.mkdir()
        said = "is a folder"
    elif trouble == "not a database":
        db.write_text("print('hello')\n")
        said = "not a database"
    else:
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA user_version = 99")
        said = (
            "schema version 99 is newer than this server's (5): a newer rami-server wrote it;"
            " run that version (or a newer one)"
        )
    done = _serve("--db", str(db), cwd=tmp_path)
    out = done.stderr + done.stdout
    assert done.returncode == 1, out
    assert said in out and "Traceback" not in out, out
    assert done.stderr.strip().splitlines()[-1].startswith("rami-server: "), out


def test_a_table_asked_without_a_clock_has_none_on_a_server_with_a_default_clock(
    tmp_path: Path,
) -> None:
    """game.proto: turn_seconds 0 is no clock, unset is the server's default. An explicit 0
    was read as unset, so a server started with --turn-seconds made no table without one."""
    import grpc

    from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc

    args = ("--turn-seconds", "30")
    server = rami_server(tmp_path / "r.db", tmp_path / "log", args=args)
    with server as (_, address), grpc.insecure_channel(address) as channel:
        lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)

        def clock(**options: int) -> int:
            made = lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    variant=game_pb2.VARIANT_SIMPLE, options=game_pb2.Options(**options)
                ),
                timeout=10,
            )
            return made.table.options.turn_seconds

        assert clock(players=2, turn_seconds=0) == 0
        assert clock(players=2) == 30
        assert clock(players=2, turn_seconds=45) == 45


def test_an_advertised_address_of_the_loopback_is_told_apart() -> None:
    """With --host 0.0.0.0 on PostgreSQL, clients are sent to this host's name; where that
    name resolves to the loopback (127.0.0.1 in /etc/hosts), a cluster would send remote
    clients to themselves, and the server warns."""
    from rami.server.app import loopback

    assert loopback("localhost:50051") and loopback("127.0.0.1:1") and loopback("[::1]:7")
    assert not loopback("192.0.2.7:50051") and not loopback("[2001:db8::1]:50051")
    assert not loopback("no-such-host.invalid:50051")


def test_a_server_started_with_sighup_ignored_keeps_running_on_sighup(tmp_path: Path) -> None:
    """SIGHUP stops a server gracefully (its terminal closed), but one started with SIGHUP
    ignored (nohup, or a supervisor that sends it to reload) was stopped by it too."""
    import signal
    import time

    with rami_server(tmp_path / "r.db", tmp_path / "log", hangups_ignored=True) as (proc, _):
        time.sleep(0.5)  # its handlers are installed just after its "listening" line
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("not hex at all\n", "is not hexadecimal: it holds"),
        ("abcd\n", "is too short: at least"),
        ("7" * 65 + "\n", "holds an odd number of hex digits (65): two make a byte"),
    ],
)
def test_a_key_file_the_server_cannot_read_as_a_key_says_what_one_is(
    tmp_path: Path, text: str, said: str
) -> None:
    key = tmp_path / "server.key"
    key.write_text(text)
    key.chmod(0o600)
    done = _serve("--db", str(tmp_path / "r.db"), "--secret-file", str(key), cwd=tmp_path)
    out = done.stderr + done.stdout
    assert done.returncode != 0, out
    assert said in out and "64 hex digits" in out and "Traceback" not in out, out


def test_each_log_record_is_one_line() -> None:
    """psycopg's pool logs libpq's words on two lines ("...\\n\\tIs the server running on that
    host...?"): an operator's tools read a line as a record."""
    import logging

    from rami.server.cli import one_line

    record = logging.LogRecord(
        "psycopg.pool", logging.WARNING, __file__, 1, "error connecting: %s", ("a\n\tIs it?",), None
    )
    assert one_line(record)
    assert record.getMessage() == "error connecting: a Is it?"
    plain = logging.LogRecord("rami", logging.INFO, __file__, 1, "two  spaces %d", (1,), None)
    assert one_line(plain) and plain.getMessage() == "two  spaces 1"


def test_psycopg_s_repeated_lines_are_logged_once_in_a_while() -> None:
    """While PostgreSQL is away, psycopg's pool logs each connection it discards and each try
    to connect, about once a second: 36 of a server's 48 lines in a 40 s outage. Each of its
    messages is logged at most once every 30 s, the next one counting those left out."""
    import logging

    from rami.server.cli import Repeats

    repeats = Repeats(every=30.0)

    def record(name: str, at: float, level: int = logging.WARNING) -> logging.LogRecord:
        r = logging.LogRecord(
            name, level, __file__, 1, "error connecting in %r: %s", ("rami", "x"), None
        )
        r.created = at
        return r

    kept = [repeats(record("psycopg.pool", 1000.0 + t)) for t in range(40)]
    assert kept == [t in (0, 30) for t in range(40)], kept
    said = record("psycopg.pool", 1061.0)
    assert repeats(said)
    assert said.getMessage().endswith("(and 9 more like it since the last one logged)"), (
        said.getMessage()
    )
    # Rami's own lines, and errors, are never held back.
    assert all(repeats(record("rami.server", 1000.0 + t)) for t in range(3))
    assert all(repeats(record("psycopg.pool", 1000.0, logging.ERROR)) for _ in range(3))
