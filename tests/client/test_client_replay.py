"""``rami-client replay``: a record from a real game, stepped forwards and backwards."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from client_harness import Driver
from client_server import ServerThread, Stubs, running_server, server_stubs
from prompt_toolkit.formatted_text import fragment_list_to_text
from prompt_toolkit.utils import get_cwidth
from typer.testing import CliRunner

from rami.client.cli import app
from rami.client.look import Look
from rami.client.replay import (
    ReplayError,
    Viewer,
    frame_fragments,
    load_frames,
    replay_frames,
    wrapped_frame,
)
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    """A real server on 127.0.0.1 for this test."""
    yield from running_server(tmp_path)


@pytest.fixture
def stubs(server: ServerThread) -> Iterator[Stubs]:
    """Blocking stubs on it."""
    yield from server_stubs(server)


def _finished_record(stubs: Stubs, path: Path) -> Path:
    """A whole game between two bots, exported to ``path``."""
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="Bots only",
            variant=game_pb2.VARIANT_PORTUGUESE,
            options=game_pb2.Options(players=2, rounds=2),
        )
    )
    table_id = created.table.table_id
    md = (("rami-token", created.owner_token),)
    for policy in ("greedy", "strong"):
        stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=table_id, policy=policy), metadata=md
        )
    deadline = time.monotonic() + 20
    while True:
        table = stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id)).table
        if table.status == lobby_service_pb2.TABLE_STATUS_FINISHED:
            break
        assert time.monotonic() < deadline, "the bots' game did not finish"
        time.sleep(0.05)
    record = stubs.table.ExportRecord(table_service_pb2.ExportRecordRequest(table_id=table_id))
    path.write_text(record.record_json)
    return path


@pytest.fixture
def record(stubs: Stubs, tmp_path: Path) -> Path:
    return _finished_record(stubs, tmp_path / "game.json")


def test_every_action_of_the_record_is_a_frame(record: Path) -> None:
    doc = json.loads(record.read_text())
    replay = load_frames(record, Look(color=False))
    actions = sum(len(r["actions"]) for r in doc["rounds"])
    rounds = len(doc["rounds"])
    # The first deal, every action, and the deal of each later round.
    assert len(replay.frames) == 1 + actions + (rounds - 1)
    assert replay.round_starts()[:rounds] == sorted(replay.round_starts())[:rounds]
    first = fragment_list_to_text(frame_fragments(replay, 0, Look(ascii=True)))
    assert "Round 1: Greedy bot 1 deals; Strong bot 2 plays first" in first
    last = fragment_list_to_text(frame_fragments(replay, len(replay.frames) - 1, Look()))
    assert "Game over after 2 rounds" in last
    # Every hand is face up: both seats' cards are listed in the last frame.
    assert last.count(" pts ") == 2
    # A declaration's card lies face down: the frame says no discard shows (it said "discard
    # none", read as a move by a new player).
    texts = [
        fragment_list_to_text(frame_fragments(replay, i, Look())) for i in range(len(replay.frames))
    ]
    assert not any("discard none" in t for t in texts)
    if any(r.get("result", {}).get("ending") == "declare" for r in doc["rounds"]):
        assert any("no discard showing" in t for t in texts)
    # A name in double-width characters keeps the points in line (by terminal cells).
    wide = dataclasses.replace(replay, names=("山田太郎", replay.names[1]))
    rows = [
        line
        for line in fragment_list_to_text(frame_fragments(wide, 0, Look())).splitlines()
        if " pts " in line
    ]
    assert len({get_cwidth(line[: line.index(" pts ")]) for line in rows}) == 1, rows


def _until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the viewer did not get there in time"
        time.sleep(0.02)


def test_a_frame_is_broken_between_words_to_the_window(record: Path) -> None:
    replay = load_frames(record, Look(color=False))
    for index in range(0, len(replay.frames), 7):
        plain = fragment_list_to_text(frame_fragments(replay, index, Look()))
        for columns in (100, 60):
            shown = fragment_list_to_text(wrapped_frame(replay, index, Look(), columns))
            assert shown.split() == plain.split(), (index, columns)  # no word cut in two
            assert all(get_cwidth(row) < columns for row in shown.splitlines()), shown
        # A window too short for the frame: the last row says how much is cut.
        whole = fragment_list_to_text(wrapped_frame(replay, index, Look(), 60)).split("\n")
        cut = fragment_list_to_text(wrapped_frame(replay, index, Look(), 60, 8)).split("\n")
        assert len(cut) == 8 and cut[:7] == whole[:7]
        assert cut[7] == f"… {len(whole) - 7} more lines"


def test_the_viewer_steps_forwards_and_backwards_with_keys(record: Path) -> None:
    replay = load_frames(record, Look())
    viewer = Viewer(replay, Look())
    last = len(replay.frames) - 1
    d = Driver(lambda: viewer.application().run_async()).start()
    try:
        d.keys("\x1b[C\x1b[C\x1b[C")  # right x3
        _until(lambda: viewer.index == 3)
        d.keys("\x1b[D")  # left
        _until(lambda: viewer.index == 2)
        d.keys("\x1b[F")  # end
        _until(lambda: viewer.index == last)
        d.keys("\x1b[5~")  # page up: the start of the last round
        _until(lambda: viewer.index == replay.round_starts()[-1])
        d.keys("\x1b[H")  # home
        _until(lambda: viewer.index == 0)
        d.keys("q")
        d.thread.join(10)
        assert not d.thread.is_alive(), "q did not leave the replay"
        assert "Round 1: Greedy bot 1 deals" in d.screen.text()
    finally:
        d.close()


def test_a_bad_file_is_refused_in_plain_words(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    with pytest.raises(ReplayError, match="not a game record"):
        load_frames(bad)
    running = tmp_path / "running.json"
    running.write_text(json.dumps({"format": "rami-record/1", "complete": False}))
    with pytest.raises(ReplayError, match="still being played"):
        load_frames(running)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"format": "rami-record/1", "complete": True, "rounds": []}))
    with pytest.raises(ReplayError, match="can't be replayed"):
        load_frames(broken)
    result = CliRunner().invoke(app, ["replay", str(bad)])
    assert result.exit_code == 1
    assert "not a game record" in result.output
    assert "Traceback" not in result.output


def test_the_viewer_stays_within_the_game(record: Path) -> None:
    viewer = Viewer(load_frames(record), Look())
    viewer.go(-5)
    assert viewer.index == 0
    viewer.go(10**6)
    assert viewer.index == len(viewer.replay.frames) - 1
    viewer.next_round(1)
    assert viewer.index == len(viewer.replay.frames) - 1
    viewer.next_round(-1)
    assert viewer.index == viewer.replay.round_starts()[-1]


def test_the_replay_footer_says_how_to_quit_in_a_narrow_window() -> None:
    """The window cuts the footer at its width: at 60 columns "q: quit", last, was cut."""
    from rami.client.replay import _FOOTER

    assert "q: quit" in _FOOTER[:40]


def test_a_record_whose_rounds_reached_the_turn_cap_replays() -> None:
    # The server's tables end a round void at its turn cap: the viewer deals and plays the
    # game with the record's cap, as the engine's replay does.
    from rami.engine import Discard, Draw, Options
    from rami.server.entries import Act, Join, NextDeal, Start
    from rami.server.records import record
    from rami.server.tablestate import TableSpec, TableState

    spec = dataclasses.replace(
        TableSpec("t", "portuguese", Options(players=2, rounds=2)), turn_cap=6
    )
    state = TableState("t1", spec)
    for entry in (Join(0, "Ana", "h0"), Join(1, "Bo", "h1"), Start("00" * 32)):
        state.apply(entry)
    for n in (1, 2):
        for _ in range(6):
            assert state.game is not None
            seat, top = state.game.turn, state.game.discard[-1]
            state.apply(Act(seat, Draw("discard")))
            state.apply(Act(seat, Discard(top)))
        if n == 1:
            state.apply(NextDeal())
    frames = replay_frames(json.loads(json.dumps(record(state))), Look(color=False))
    assert len(frames.frames) == 1 + 2 * 12 + 1
