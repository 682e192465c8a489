"""A smoke test in a real terminal: ``rami-client play`` under tmux, typed into, read back.

Skipped only when tmux is not installed (``.ci/run`` installs it). Every wait is bounded.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
CLIENT = Path(sys.executable).parent / "rami-client"
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)")


class Pane:
    """One tmux session on a private server socket."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        return done.stdout

    def start(self, command: str, env: dict[str, str], size: tuple[int, int] = (120, 40)) -> None:
        assert TMUX is not None
        subprocess.run(
            [
                TMUX,
                "-L",
                self.socket,
                "new-session",
                "-d",
                "-s",
                "rami",
                "-x",
                str(size[0]),
                "-y",
                str(size[1]),
                command,
            ],
            env=env,
            check=True,
            timeout=10,
        )

    def screen(self, colours: bool = False) -> str:
        return self.tmux("capture-pane", "-p", *(["-e"] if colours else []), "-t", "rami")

    def type(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "rami", *keys)

    def wait_for(self, pattern: str, timeout: float = 15.0, colours: bool = False) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen(colours)
            if re.search(pattern, screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not on screen within {timeout}s:\n{screen}")
            time.sleep(0.1)

    def resize(self, columns: int, rows: int) -> None:
        self.tmux("resize-window", "-t", "rami", "-x", str(columns), "-y", str(rows))

    def alive(self) -> bool:
        assert TMUX is not None
        return (
            subprocess.run(
                [TMUX, "-L", self.socket, "has-session", "-t", "rami"],
                capture_output=True,
                timeout=10,
                check=False,
            ).returncode
            == 0
        )


@pytest.fixture
def pane() -> Iterator[Pane]:
    # A socket of its own per test: a server killed at one test's end can't take the next's.
    p = Pane(f"rami-test-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        yield p
    finally:
        p.tmux("kill-server")


#: Where the clients keep their seats and preferences, unless a test gives its own: never the
#: account's (a preference written there would change what the next test, or person, sees).
_STATE = tempfile.mkdtemp(prefix="rami-tmux-state-")
atexit.register(shutil.rmtree, _STATE, ignore_errors=True)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TMUX")}
    env.update(
        {
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "XDG_STATE_HOME": _STATE,
            **extra,
        }
    )
    return env


def test_play_shows_the_hand_and_the_toolbar_and_takes_commands(pane: Pane, tmp_path: Path) -> None:
    env = _env(XDG_STATE_HOME=str(tmp_path / "state"))
    pane.start(f"{CLIENT} play --variant portuguese --players 2 --name Ana", env)
    # Wait for the whole picture: the sentence, the panel, then the toolbar below it.
    screen = pane.wait_for(
        r"(?s)It's your turn: take a card.*Hand .*\(13 cards, by suit.*"
        r"Your turn: draw stock.*▶You 13 cards"
    )
    hand = re.search(r"Hand\s+(.*?)\s+\(13 cards, by suit", screen)
    assert hand is not None, screen
    assert len(hand.group(1).split()) == 13
    assert re.search(r"Your turn: draw stock or draw discard", screen)
    # Ana deals round 1, so the bot moves first; on about one deal in 3,000 it goes out at
    # once, and this is Ana's first turn of round 2, the bot dealing.
    header = re.search(r"Portuguese Rami · round (\d) of 5 · stock \d+ · pile top \S+", screen)
    assert header is not None, screen
    if header.group(1) == "1":
        seats = r"▶You 13 cards, 0 pts, dealer │\s+Strong bot 2 1[34] cards, 0 pts"
    else:
        assert header.group(1) == "2", screen
        seats = r"▶You 13 cards, \d+ pts │\s+Strong bot 2 13 cards, 0 pts, dealer"
    assert re.search(seats, screen), screen
    # Suits are coloured: a red suit symbol comes right after a colour escape.
    pane.wait_for(r"\x1b\[[0-9;]*(31|91)[0-9;]*m[^\x1b]*[♥♦]", colours=True)

    pane.type("draw", "Enter")
    pane.wait_for(r"(?s)You drew \S+ from the stock\..*\(14 cards, by suit")
    pane.type("F2")
    pane.wait_for(r"\(14 cards, by rank")
    pane.type("help", "Enter")
    pane.wait_for(r"Commands at this table, during the game")
    pane.type("quit", "Enter")
    # Mid-game, quit asks first (here the game ends with the client).
    pane.wait_for(r"The game is still on: if you quit, the game ends with the client\.")
    pane.type("yes", "Enter")
    deadline = time.monotonic() + 10
    while pane.alive():
        assert time.monotonic() < deadline, "the client did not quit"
        time.sleep(0.1)
    # F2's order is kept for the next run, as with connect.
    pane.start(f"{CLIENT} play --variant portuguese --players 2 --name Ana", env)
    pane.wait_for(r"\(13 cards, by rank")


def test_no_color_keeps_the_symbols_and_drops_the_colours(pane: Pane) -> None:
    pane.start(f"{CLIENT} play --variant simple --players 2 --name Ana", _env(NO_COLOR="1"))
    coloured = pane.wait_for(r"Hand\s+.*[♣♦♥♠].*\(1[34] cards, by suit", colours=True)
    assert not re.search(r"\x1b\[[0-9;]*(31|91)m", coloured)
    # A game of `play` goes on without the player who leaves it, the server playing the seat
    # until join takes it back.
    pane.type("leave", "Enter")
    pane.wait_for(r"if you leave, the server plays your seat until you take it back \(join\)")
    pane.type("n", "Enter")
    pane.wait_for(r"You stay at the table\.")
    pane.type("quit", "Enter")
    pane.wait_for(r"Type y \(or yes\) to quit")
    pane.type("yes", "Enter")


def test_the_toolbar_shows_who_is_connected_as_it_changes(pane: Pane, tmp_path: Path) -> None:
    """Presence changes with no new update: the toolbar follows it at once (a joiner who
    opens the table, a player who drops, one who comes back), and ``create`` gives the table
    a turn clock."""
    from rami.server.table import TableConfig
    from rami.server.testing import ServerThread, Stubs
    from rami.v1 import lobby_service_pb2, table_service_pb2

    quiet = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=0.5)
    with ServerThread(str(tmp_path / "rami.db"), quiet) as server, Stubs(server.target) as stubs:
        env = _env(XDG_STATE_HOME=str(tmp_path / "state"))
        pane.start(f"{CLIENT} connect {server.target} --name Eva", env)
        pane.wait_for(r"Connected to")
        pane.type("create tallage players=2", "Enter")
        pane.wait_for(r"You sit at seat 0")
        (table,) = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=10).tables
        assert table.options.turn_seconds == 60  # the client's default clock
        joined = stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table.table_id, name="Bruno"), timeout=10
        )
        token = (("rami-token", joined.token),)
        pane.wait_for(r"Bruno 1[34] cards, 0 pts, offline")  # joined, not watching yet
        bruno = stubs.table.Watch(
            table_service_pb2.WatchRequest(table_id=table.table_id), metadata=token, timeout=30
        )
        next(bruno)
        pane.wait_for(r"Bruno 1[34] cards, 0 pts(?!, offline)")
        bruno.cancel()
        pane.wait_for(r"Bruno 1[34] cards, 0 pts, offline")
        # Bruno leaves the game and comes back: back, and connected.
        stubs.lobby.LeaveTable(
            lobby_service_pb2.LeaveTableRequest(table_id=table.table_id), metadata=token, timeout=10
        )
        pane.wait_for(r"Bruno 1[34] cards, 0 pts, away")
        bruno = stubs.table.Watch(
            table_service_pb2.WatchRequest(table_id=table.table_id), metadata=token, timeout=30
        )
        next(bruno)
        screen = pane.wait_for(r"Bruno came back\.")
        screen = pane.wait_for(r"Bruno 1[34] cards, 0 pts(?!, offline|, away)")
        assert "Bruno came back." in screen
        bruno.cancel()
        pane.type("quit", "Enter")
        pane.wait_for(r"yes\) to quit")  # the game is on: quit asks first
        pane.type("yes", "Enter")


def _fits(screen: str, columns: int) -> None:
    assert all(len(line.rstrip()) <= columns for line in screen.split("\n")), screen


def test_80_by_24_shows_the_events_the_hint_the_panel_and_the_toolbar(pane: Pane) -> None:
    pane.start(f"{CLIENT} play --variant tallage --players 4 --name Ana", _env(), (80, 24))
    pane.wait_for(r"(?s)It's your turn.*Hand .*your turn>.*Your turn: open with melds")
    pane.type("hint", "Enter")
    screen = pane.wait_for(
        r"(?s)> hint\nBest arrangement: .*Hand .*your turn>.*Your turn: open.*"
        r"Tallage · round 1.*▶You 15 cards"
    )
    # The whole hint is on the screen above the panel, not pushed into the scrollback: to its
    # last line, the strong bot's choice (named apart, or marked among the plays listed, as
    # the deal has it).
    assert re.search(
        r"(?s)> hint\nBest arrangement: .*(The strong bot would play|the strong bot's choice)",
        screen,
    ), screen
    assert "It's your turn" in screen
    _fits(screen, 80)


def test_60_by_15_keeps_the_last_events_above_the_panel(pane: Pane) -> None:
    pane.start(f"{CLIENT} play --variant portuguese --players 2 --name Ana", _env(), (60, 15))
    screen = pane.wait_for(r"(?s)Hand .*your turn>.*Your turn: draw stock.*▶You 13")
    assert "It's your turn: take a card" in screen, screen
    pane.type("table", "Enter")
    screen = pane.wait_for(r"(?s)> table\nTable .*Strong bot 2 .*Hand .*your turn>.*▶You 13")
    assert re.search(r"▶ You\s+seat 0 · 13 cards · 0 points", screen), screen
    pane.type("hint", "Enter")
    screen = pane.wait_for(r"(?s)> hint\nBest arrangement: .*Hand .*your turn>.*▶You 13")
    # Every card of the hand is on the screen, and nothing runs past the window.
    hand = re.search(r"(?s)Hand (.*?)\(13\)", screen)
    assert hand is not None and len(hand.group(1).split()) == 13, screen
    _fits(screen, 60)


def test_a_resize_redraws_the_screen_once_with_the_last_events(pane: Pane) -> None:
    pane.start(f"{CLIENT} play --variant portuguese --players 2 --name Ana", _env())
    pane.wait_for(r"(?s)It's your turn: take a card.*Hand .*Your turn: draw stock")
    pane.resize(80, 24)
    time.sleep(1.0)
    screen = pane.wait_for(r"(?s)It's your turn: take a card.*Hand .*Your turn: draw stock")
    assert screen.count("Hand ") == 1 and screen.count("Your turn: draw") == 1, screen
    assert screen.count("Portuguese Rami") == 1, screen
    _fits(screen, 80)
    pane.resize(120, 40)
    time.sleep(1.0)
    screen = pane.wait_for(r"(?s)The game begins.*It's your turn: take a card.*Hand .*Your turn")
    assert screen.count("Hand ") == 1 and screen.count("Your turn: draw") == 1, screen


def test_a_resize_leaves_each_event_once_in_the_scrollback(pane: Pane) -> None:
    """The screen drawn again after a resize replaces the lines that were on it: the terminal's
    history (what scrolling back shows) holds each event once, not the old screen as well."""
    pane.start(f"{CLIENT} play --variant portuguese --players 2 --name Ana", _env())
    pane.wait_for(r"(?s)It's your turn: take a card.*Hand .*Your turn: draw stock")
    for columns in (130, 140):  # wider: no line is wrapped again, none pushed off the screen
        pane.resize(columns, 40)
        time.sleep(1.0)
        pane.wait_for(r"(?s)It's your turn: take a card.*Hand .*Your turn: draw stock")
    history = pane.tmux("capture-pane", "-p", "-S", "-", "-t", "rami")
    assert history.count("The game begins") == 1, history


def test_80_by_24_help_fits_above_the_panel(pane: Pane) -> None:
    """The help's first line and its last are on the screen together, above the panel."""
    pane.start(f"{CLIENT} play --variant tallage --players 4 --name Ana", _env(), (80, 24))
    pane.wait_for(r"(?s)It's your turn.*Hand .*your turn>.*Your turn: open with melds")
    pane.type("help", "Enter")
    # (The panel is drawn again below the help a moment after the help is printed.)
    screen = pane.wait_for(
        r"(?s)> help\nCommands at this table, during the game\n.*help COMMAND explains one\.\n"
        r"Table .*Hand .*your turn>"
    )
    assert re.search(r"draw stock\|discard +cancel +scores", screen), screen  # in columns
    _fits(screen, 80)
    pane.type("help lay", "Enter")  # one command in full
    pane.wait_for(r"(?s)> help lay\nlay CARDS\[, CARDS\.\.\.\]\n  lay 7h 8h 9h, Ks Kd Kc")


def test_80_by_24_keeps_the_end_of_a_four_player_game_in_view(pane: Pane, tmp_path: Path) -> None:
    """A whole hand laid at once ends the only round: who went out, what everyone paid, the
    result and what to do next are all on the screen together."""
    from rami.client.convert import VARIANT_IDS
    from rami.server.table import TableConfig
    from rami.server.testing import ServerThread, Stubs, stacked_deck
    from rami.v1 import game_pb2, lobby_service_pb2

    hand = "Qs Ks As 8c 8d 8h 7h 8h 9h 10h Jh 4c JK 6c 2d"
    deck = stacked_deck("tallage", [hand, None, None, None], "3s", "10c 5c")
    quiet = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0)
    with ServerThread(str(tmp_path / "rami.db"), quiet) as server, Stubs(server.target) as stubs:
        stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="four",
                variant=VARIANT_IDS["tallage"],
                options=game_pb2.Options(players=4, round_cap=1),
                stacked_decks=[lobby_service_pb2.Deck(cards=[c + 1 for c in deck])],
            ),
            timeout=10,
        )
        env = _env(XDG_STATE_HOME=str(tmp_path / "state"))
        pane.start(f"{CLIENT} connect {server.target} --name Ana", env, (80, 24))
        pane.wait_for(r"four: tallage, 0/4 seated")
        pane.type("join 1", "Enter")
        pane.wait_for(r"You sit at seat 0")
        for seat in (1, 2, 3):
            pane.type("bot greedy", "Enter")
            pane.wait_for(rf"sat down at seat {seat}\.")
        pane.wait_for(r"It's your turn: you play first with 15 cards")
        pane.type("lay qs ks as, 8c 8d 8h, 7h 8h 9h 10h jh, 4c jk 6c", "Enter")
        pane.wait_for(r"leaving one card to discard")
        pane.type("discard 2d", "Enter")
        # The toolbar (the screen's last row) is drawn apart from the lines above it: the
        # screen is read once it shows too.
        screen = pane.wait_for(
            r"(?s)Game over after 1 round: You win.*leave goes back.*Game over: You win"
        )
        assert re.search(r"(?s)You discarded 2♦\.\nRound 1: You laid the whole hand", screen), (
            screen
        )
        for name in ("You", "Greedy bot 2", "Greedy bot 3", "Greedy bot 4"):
            assert re.search(rf"\n  {name}\s+\d+\s+\d+\s", screen), screen  # the round's row
            assert re.search(rf"\n  \d\. {name}\s+\d+\n", screen), screen  # the game's
        assert "Game over: You win" in screen  # the toolbar
        _fits(screen, 80)
