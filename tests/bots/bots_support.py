"""Helpers of the bot tests: where the repository is, blocking stubs to set tables up, a
server that can be restarted on the port it had, and one restored from an older backup."""

from __future__ import annotations

import shutil
import socket
import sqlite3
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import grpc

from rami.server.table import TableConfig
from rami.server.testing import ServerThread, deck_to_proto, stacked_deck
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = {
    "portuguese": game_pb2.VARIANT_PORTUGUESE,
    "tallage": game_pb2.VARIANT_TALLAGE,
    "simple": game_pb2.VARIANT_SIMPLE,
}
#: How long a bot over the network may take for one short game.
GAME_SECONDS = 60
#: Short but whole games: two portuguese rounds; moroccan games to 201, at most three rounds.
SHORT = {"portuguese": {"rounds": 2}, "tallage": {"round_cap": 3}, "simple": {"round_cap": 3}}


@dataclass
class Tables:
    """Blocking stubs to set tables up for the bots under test."""

    target: str
    channel: grpc.Channel

    @property
    def lobby(self) -> lobby_service_pb2_grpc.LobbyServiceStub:
        return lobby_service_pb2_grpc.LobbyServiceStub(self.channel)

    @property
    def table(self) -> table_service_pb2_grpc.TableServiceStub:
        return table_service_pb2_grpc.TableServiceStub(self.channel)

    def create(
        self,
        variant: str,
        players: int = 4,
        bots: tuple[str, ...] = (),
        decks: tuple[lobby_service_pb2.Deck, ...] = (),
        **options: int,
    ) -> str:
        """A table of ``variant`` with built-in bots in its first seats, dealt ``decks`` (stacked:
        the first rounds' decks, top card first) or fair deals; returns its id."""
        resp = self.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name=f"{variant} bots",
                variant=VARIANTS[variant],
                options=game_pb2.Options(players=players, **{**SHORT[variant], **options}),
                stacked_decks=decks,
            ),
            timeout=10,
        )
        md = (("rami-token", resp.owner_token),)
        for policy in bots:
            self.lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=resp.table.table_id, policy=policy),
                metadata=md,
                timeout=10,
            )
        return resp.table.table_id

    def info(self, table_id: str) -> lobby_service_pb2.TableInfo:
        """The table as the lobby shows it."""
        return self.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=10
        ).table


def run_all(commands: dict[str, list[str]], cwd: Path) -> dict[str, subprocess.CompletedProcess]:
    """Run the commands at once; wait for each, at most GAME_SECONDS more than the others."""
    procs = {
        key: subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for key, cmd in commands.items()
    }
    done: dict[str, subprocess.CompletedProcess] = {}
    deadline = time.monotonic() + GAME_SECONDS + 15
    try:
        for key, p in procs.items():
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            done[key] = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
    return done


SLOW_BOTS = TableConfig(bot_delay=0.05, round_pause=0.0, away_delay=0.0, heartbeat=0.5)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FixedPortServer(ServerThread):
    """A ServerThread on a chosen port, so that a restarted server is found where it was."""

    def __init__(self, db: str, port: int) -> None:
        super().__init__(db, SLOW_BOTS)
        self.port = port

    def start(self) -> FixedPortServer:
        from rami.server.app import serve

        self.thread.start()
        self.server = self.call(
            serve(
                "127.0.0.1",
                self.port,
                self.db,
                lobby_config=self.lobby_config,
                table_config=self.table_config,
            )
        )
        return self


# -- a server restored from an older backup, under a bot ---------------------------------------


def back_up(db: str, backup: str) -> int:
    """Copy the live SQLite database ``db`` (and its key) to ``backup``, consistent while the
    server runs; returns the newest update number the copy holds."""
    Path(backup).parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as live, sqlite3.connect(backup) as copy:
        live.backup(copy)
    shutil.copy(db + ".key", backup + ".key")
    with sqlite3.connect(backup) as copy:
        return int(copy.execute("SELECT max(number) FROM entries").fetchone()[0])


class Restart:
    """A server on a port of its own, a bot under it, and the server started again on that
    port (on its database, or another: a backup); what runs is stopped at the block's end::

        with Restart(db) as r:
            table_id = r.tables.create(...)
            r.launch(argv)
            r.wait_until(table_id, 12, "the game did not start")
            r.restart(db, down=0.3)
            run = r.finish()
    """

    def __init__(self, db: str, configure: Callable[[FixedPortServer], None] | None = None):
        self.port = free_port()
        self.target = f"127.0.0.1:{self.port}"
        self.first: FixedPortServer | None = FixedPortServer(db, self.port)
        if configure is not None:
            configure(self.first)
        self.first.start()
        self.channel = grpc.insecure_channel(self.target)
        self.tables = Tables(self.target, self.channel)
        self.second: FixedPortServer | None = None
        self.bot: subprocess.Popen[str] | None = None

    def __enter__(self) -> Restart:
        return self

    def launch(self, argv: list[str], cwd: Path | None = None) -> None:
        """Start the bot, its output and log piped."""
        self.bot = subprocess.Popen(
            argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def wait_until(self, table_id: str, number: int, what: str, seconds: float = 30) -> None:
        """Until the table is at update ``number`` (or later), the bot running all along."""
        assert self.bot is not None
        deadline = time.monotonic() + seconds
        while self.tables.info(table_id).number < number:
            assert time.monotonic() < deadline, what
            assert self.bot.poll() is None, self.bot.communicate()
            time.sleep(0.01)

    def restart(self, db: str, down: float = 0.0) -> None:
        """Stop the server, wait ``down`` seconds, and start it again on ``db``."""
        assert self.first is not None
        self.first.stop()
        self.first = None
        time.sleep(down)
        self.second = FixedPortServer(db, self.port).start()

    def finish(self, timeout: float = GAME_SECONDS + 15) -> subprocess.CompletedProcess:
        """The bot's run, once it ends."""
        assert self.bot is not None
        out, err = self.bot.communicate(timeout=timeout)
        return subprocess.CompletedProcess(self.bot.args, self.bot.returncode, out, err)

    def __exit__(self, *exc: object) -> None:
        if self.bot is not None and self.bot.poll() is None:
            self.bot.kill()
            self.bot.wait(timeout=5)
        self.channel.close()
        for server in (self.second, self.first):
            if server is not None:
                server.stop()


@dataclass
class Restored:
    """How a bot's run went when its server came back from an older backup."""

    run: subprocess.CompletedProcess
    #: The newest update the backup holds.
    saved: int
    status: int


def restored_under(
    tmp_path: Path, command: Callable[[str, str, str], list[str]], cwd: Path, one_behind: bool
) -> Restored:
    """Start a bot (``command(target, table_id, name)``) on a 2-player portuguese table with a
    built-in bot, back the database up during the game, let the game go on, and start the
    server again from the backup; the bot's run, once it ends.

    ``one_behind`` False: the game goes on some 8 updates past the backup, and the server is
    down for 1.5 s, so that the bot's resume (``after``) is refused BAD_NUMBER. True: the
    backup is the table right after the bot's draw, and the server stops right after its
    discard (the built-in bot waits 3 s a move, and a command a second gives the backup its
    time), so that the bot resumes one update early, at the number the backup holds: not
    refused, a heartbeat below what it saw.
    """
    db, backup = str(tmp_path / "rami.db"), str(tmp_path / "backup" / "rami.db")

    def slow(server: FixedPortServer) -> None:
        server.table_config = replace(server.table_config, bot_delay=3.0)
        server.lobby_config = replace(
            server.lobby_config, commands_per_second=1.0, command_burst=1.0
        )

    name = "restored"
    with Restart(db, slow if one_behind else None) as r:
        if one_behind:
            # Junk for both seats: no declaration ends the round on the bot's first turn.
            deck = deck_to_proto(stacked_deck("portuguese", [None, None], "3c"))
            table_id = r.tables.create("portuguese", 2, ("greedy",), (deck,), rounds=1)
        else:
            table_id = r.tables.create("portuguese", 2, ("greedy",), rounds=2)
        r.launch(command(r.target, table_id, name), cwd)
        if one_behind:
            saved = _back_up_after_draw(r.tables, table_id, name, db, backup)
            # The bot's discard is stored, and reaches the bot; the built-in bot has not moved.
            r.wait_until(table_id, saved + 1, "the bot did not discard")
            time.sleep(0.3)
            assert r.tables.info(table_id).number == saved + 1
        else:
            r.wait_until(table_id, 6, "the game did not start")
            saved = back_up(db, backup)
            r.wait_until(table_id, saved + 8, "the game did not go on")
        # Not one behind: down a while, the bot tries to resume some times.
        r.restart(backup, down=0.0 if one_behind else 1.5)
        run = r.finish()
        return Restored(run, saved, r.tables.info(table_id).status)


def silenced_under(command: Callable[[str, str, str], list[str]], cwd: Path, db: str) -> str:
    """Start a bot (``command(target, table_id, name)``, told to take a stream silent for 1 s
    for dead) on a 2-player portuguese table with a built-in bot; once the game is under way,
    hold the server's event loop for 3 s (a frozen server, or one cut off by the network while
    its connection stays open: no heartbeat comes, nothing is closed; its heartbeat is 0.5 s).
    Returns the bot's log, once it has played the game to its end."""
    with Restart(db) as r:
        table_id = r.tables.create("portuguese", 2, ("greedy",), rounds=1)
        r.launch(command(r.target, table_id, "silenced"), cwd)
        r.wait_until(table_id, 6, "the game did not start")
        assert r.first is not None
        r.first.loop.call_soon_threadsafe(time.sleep, 3.0)
        run = r.finish()
        assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
        assert "game over" in run.stdout, f"{run.stdout}\n{run.stderr}"
        assert r.tables.info(table_id).status == lobby_service_pb2.TABLE_STATUS_FINISHED
        return run.stderr


def _back_up_after_draw(tables: Tables, table_id: str, name: str, db: str, backup: str) -> int:
    """Back ``db`` up at the first view of ``name``'s play phase (after its draw), seen by a
    spectator's stream; returns that view's number."""
    watch = tables.table.Watch(table_service_pb2.WatchRequest(table_id=table_id), timeout=30)
    try:
        for msg in watch:
            view = msg.update.view
            names = {p.seat: p.name for p in view.players}
            if view.phase == game_pb2.PHASE_PLAY and names.get(view.turn) == name:
                break
        else:
            raise AssertionError("the bot's turn did not come")
    finally:
        watch.cancel()
    saved = back_up(db, backup)
    assert saved == view.number, (saved, view.number)
    return saved
