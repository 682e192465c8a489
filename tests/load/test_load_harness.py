"""The load harness (``tests/load/run_load.py``, ``make load``) on a few tables, run as
``make load`` runs it, in a process of its own with its own real ``rami-server``: its bots
resume a stream cut off as too slow (they are the bot kit's), a table that stalls or loses a
bot fails the run at once and is named, and however the harness ends, the server and the
client processes it started end with it. (``make load`` itself, 200 tables, is not here.)"""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).with_name("run_load.py")
ROOT = HARNESS.parents[2]


def _alive(pid: int, started: str | None = None) -> bool:
    """True while ``pid`` runs (not a zombie), and is the process that started at ``started``
    (its start time in /proc, so that a pid used again is not mistaken for it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0] != "Z" and (started is None or fields[19] == started)


def _started(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def _children(pid: int) -> dict[int, str | None]:
    """The processes whose parent is ``pid``, with their start times."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out[int(entry.name)] = fields[19]
    return out


def _servers_of(folder: Path) -> list[int]:
    """Live rami-server processes whose command line names ``folder`` (the harness keeps its
    server's database in a temporary folder there: TMPDIR)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "rami-server" in cmdline and str(folder) in cmdline and _alive(int(entry.name)):
                pids.append(int(entry.name))
    return pids


def _until(what: str, ok: Any, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < end, f"{what}: not within {timeout} s"
        time.sleep(0.05)


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}


def run_harness(
    tmp_path: Path, *args: str, timeout: float = 90.0
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], float]:
    """The harness run to its end (bounded): what it printed, its figures, how long it took.
    No rami-server it started is left, whatever the outcome."""
    figures = tmp_path / "figures.json"
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(HARNESS), "--json", str(figures), *args],
            cwd=ROOT,
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        left = _servers_of(tmp_path)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    took = time.monotonic() - start
    assert not left, f"the harness left its rami-server running: {left}"
    assert figures.exists(), f"no figures:\n{done.stdout}\n{done.stderr}"
    return done, json.loads(figures.read_text()), took


def test_the_bots_resume_streams_cut_off_as_too_slow_and_every_game_ends(
    tmp_path: Path,
) -> None:
    # Every table's last seat joins once the others watch: its join and the start of the
    # game are two updates at once, and a server whose streams may fall 1 update behind cuts
    # off the stream of each of the other three seats. They resume, and every game ends.
    tables = 3
    done, figures, _ = run_harness(
        tmp_path,
        *("--tables", str(tables), "--clients", "1", "--late-join", "--watcher-queue", "1"),
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert figures["games_over"] == tables
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["cut_off"] >= 3 * tables
    assert figures["resumed"] >= figures["cut_off"]
    assert figures["commands"] > 0


def test_a_table_that_stalls_fails_the_run_at_once_and_is_named(tmp_path: Path) -> None:
    # The first table's seat 0 never gets its command through: that table stops moving.
    done, figures, took = run_harness(
        tmp_path,
        *("--tables", "3", "--clients", "2", "--hold-seat", "--stall", "3", "--timeout", "120"),
    )
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert took < 60, f"the run took {took:.0f} s to fail"
    stalled = figures["stalled"]
    assert stalled is not None, done.stdout
    head = re.search(
        r"FAILED: table (\w+) \(load 0, portuguese\) has not moved for \d+ s: at update (\d+), "
        r"phase (\w+), seat (\d) to move; the server says: PLAYING, at update (\d+)",
        done.stdout,
    )
    assert head is not None, done.stdout
    table_id, number, phase, turn, server_number = head.groups()
    assert table_id == stalled["table_id"]
    assert int(number) == stalled["number"] == int(server_number)
    assert (phase, int(turn)) == (stalled["phase"], 0)
    assert re.search(
        rf"  seat 0: Act decided on update {number} in flight for [\d.]+ s \(held: --hold-seat\); "
        r"watching",
        done.stdout,
    ), done.stdout
    for seat in (1, 2, 3):
        assert re.search(rf"  seat {seat}: watching .*; last read update {number} ", done.stdout)
    assert figures["error_samples"][0].startswith(f"table {table_id} (load 0, portuguese)")


def test_a_table_that_loses_a_bot_fails_the_run_at_once(tmp_path: Path) -> None:
    # As the tables start, the streams of three seats of each are cut off as too slow, and
    # bots allowed no reconnect give up: the run fails at once, naming a table and the seat.
    done, figures, took = run_harness(
        tmp_path,
        *("--tables", "2", "--clients", "1", "--late-join", "--watcher-queue", "1"),
        *("--max-reconnects", "0", "--stall", "60", "--timeout", "120"),
    )
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert took < 60, f"the run took {took:.0f} s to fail"
    assert figures["stalled"] is not None, done.stdout
    table_id = figures["stalled"]["table_id"]
    assert re.search(
        rf"FAILED: table {table_id} \(load \d, \w+\) lost the bot of its seat \d: ", done.stdout
    )
    assert re.search(
        r"  seat \d: its bot gave up: RESOURCE_EXHAUSTED: this stream fell 1 updates behind "
        r"and was cut off",
        done.stdout,
    ), done.stdout


@pytest.mark.parametrize(
    ("signum", "when"),
    [
        (signal.SIGTERM, "setup"),
        (signal.SIGTERM, "run"),
        (signal.SIGINT, "run"),
        (signal.SIGHUP, "run"),
        (signal.SIGKILL, "run"),
    ],
    ids=["TERM-setup", "TERM", "INT", "HUP", "KILL"],
)
def test_the_harness_stops_what_it_started_however_it_is_stopped(
    tmp_path: Path, signum: int, when: str
) -> None:
    # A run that would last two minutes (a table held), stopped by a signal while it sets its
    # tables up or while the games go: the server and the client processes end with it.
    harness = subprocess.Popen(
        [
            *(sys.executable, str(HARNESS), "--tables", "40", "--clients", "2", "--hold-seat"),
            *("--stall", "120", "--timeout", "120"),
        ],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started: dict[int, str | None] = {}
    try:
        assert harness.stderr is not None
        said = ""
        wanted = "rami-server pid " if when == "setup" else "commands go"
        end = time.monotonic() + 60
        with selectors.DefaultSelector() as sel:
            sel.register(harness.stderr, selectors.EVENT_READ)
            while wanted not in said:
                left = end - time.monotonic()
                assert left > 0 and sel.select(left), f"the harness did not say {wanted!r}"
                line = harness.stderr.readline()
                assert line or harness.poll() is None, f"the harness ended: {said}"
                said += line
        server = int(re.search(r"rami-server pid (\d+)", said).group(1))  # type: ignore[union-attr]
        assert _servers_of(tmp_path) == [server]
        started = {server: _started(server), **_children(harness.pid)}
        if when == "run":
            assert len(started) >= 3, f"the server and two client processes: {started}"
        harness.send_signal(signum)
        code = harness.wait(timeout=30)
        assert code == (-signal.SIGKILL if signum == signal.SIGKILL else 128 + signum)
        # The kernel kills what a harness killed outright started (PR_SET_PDEATHSIG).
        _until(
            "every process the harness started ended",
            lambda: not any(_alive(pid, t) for pid, t in started.items()),
            10,
        )
        assert not _servers_of(tmp_path)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait(timeout=10)
        for pid, t in started.items():
            if _alive(pid, t):
                os.kill(pid, signal.SIGKILL)
        for pid in _servers_of(tmp_path):
            os.kill(pid, signal.SIGKILL)
        if harness.stderr is not None:
            harness.stderr.close()
