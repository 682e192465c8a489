"""Rami's own work per command, in process, without gRPC: a 4-seat table with one watcher per
seat on the server's embedded storage (SQLite in WAL mode, a file in a temporary folder), and
the seats' commands applied one after another, as a unary Act applies them: the change checked,
applied and stored, every watcher's update encoded and put on its queue, the watchers' readers
run, and the mover's view encoded for its answer. With ``store="none"`` the same without the
store: every append answered at once, nothing written (what the table costs apart from its
storage). The seats play safe moves (draw from the stock, throw the card back), decided
outside the timed part; only CPU time is counted (``time.process_time``), so a busy machine
moves the figure less than it moves the loads'.

What the server's CPU per command holds besides gRPC's own work: measured against a baseline
(``python -m bench --baseline REV --only pipeline``), it says what the table's code costs, where
the loads' figures are mostly the gRPC machinery's, which swings from run to run.

Runs on the server code it imports, this tree's or a baseline's (``bench --baseline`` puts the
baseline's on PYTHONPATH): a baseline from before the table became an actor (``Table.act``,
synchronous storage) is driven through that API.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from rami.engine import Options
from rami.engine.actions import Action, Discard, Draw
from rami.engine.game import Phase

#: The variants measured: one with laying on the table, one with closed hands.
VARIANTS = ("tallage", "portuguese")
#: Commands per table before the next one is made (a game of safe moves goes on and on).
PER_TABLE = 200
SEATS = 4


def _safe(game: Any, seat: int) -> Action:
    """Draw from the stock, then throw back the card drawn (the costliest card without one).
    Read off the game itself, not a view: a view costs what the engine's view costs, which
    differs between this code and a baseline, and ``bench.instructions`` counts the driver's
    work with the table's."""
    if game.phase == Phase.DRAW:
        return Draw("stock")
    hand = list(game.hands[seat])
    if game.drawn is not None and game.drawn in hand:
        return Discard(game.drawn)
    return Discard(max(hand, key=lambda c: (c % 13 == 0, c % 13, c)))


async def _drain(stream: AsyncIterator[Any]) -> None:
    async for _ in stream:
        pass


def _lobby_config() -> Any:
    from rami.server.lobby import LobbyConfig

    lifted = {"max_tables_per_client": 1_000_000, "table_creations_per_second": 0.0}
    return LobbyConfig(**{k: v for k, v in lifted.items() if k in LobbyConfig.__dataclass_fields__})


def _table_config() -> Any:
    from rami.server.table import TableConfig

    return TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=15.0)


async def _play(table: Any, command: Callable[[int, Action], Any], total: int) -> tuple[float, int]:
    """Safe moves at ``table`` until its game stops or ``total`` are made: (CPU s, moves)."""
    spent, done = 0.0, 0
    while done < min(total, PER_TABLE):
        game = table.state.game
        if game.phase not in (Phase.DRAW, Phase.PLAY):
            break
        seat = game.turn
        action = _safe(game, seat)
        t0 = time.process_time()
        result = command(seat, action)
        if asyncio.iscoroutine(result):
            await result
        await asyncio.sleep(0)  # the watchers' readers take their update
        spent += time.process_time() - t0
        done += 1
    return spent, done


#: What stores the commands' entries: the server's SQLite, or nothing ("none").
STORES = ("sqlite", "none")


async def _actor(variant: str, total: int, folder: str, store: str) -> tuple[float, int]:
    """This code's table: changes through its pipeline (``Table.change``)."""
    from rami.server.entries import Act, Join, Start
    from rami.server.lobby import Lobby, summarize
    from rami.server.storage import SqliteStorage

    storage = await SqliteStorage.open(os.path.join(folder, "rami.db"), summarize)
    if store == "none":
        storage.submit = _stored_at_once  # type: ignore[method-assign]
    lobby = Lobby(storage, _lobby_config(), _table_config())
    spent, done = 0.0, 0
    try:
        while done < total:
            table, _ = await lobby.create(
                name="bench",
                variant=variant,
                options=Options(players=SEATS),
                private=False,
                hand_analysis=True,
                decks=[],
                client="bench",
            )
            for i in range(SEATS):

                def plan(state: Any, i: int = i) -> list[Any]:
                    entries = [Join(state.free_seat(None), f"p{i}", f"hash-{i}")]
                    if state.filled() + 1 == len(state.seats):
                        entries.append(Start("00" * 16))
                    return entries

                await table.change(plan, lambda _: None)
            readers = [
                asyncio.ensure_future(_drain(table.watch(s, None, table.watcher(s))))
                for s in range(SEATS)
            ]
            await asyncio.sleep(0.01)

            def command(seat: int, action: Action, table: Any = table) -> Any:
                return table.change(
                    lambda _: [Act(seat, action)], lambda stored: stored.table.view_bytes(seat)
                )

            s, d = await _play(table, command, total - done)
            spent, done = spent + s, done + d
            for r in readers:
                r.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
    finally:
        lobby.close()
        await lobby.closing()
        await storage.close()
    return spent, done


def _stored_at_once(append: Any) -> asyncio.Future[None]:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done


async def _inline(variant: str, total: int, folder: str, store: str) -> tuple[float, int]:
    """A baseline's table from before the actor: ``Table.act``, applied and stored inline."""
    from rami.server.lobby import Lobby
    from rami.server.storage import SqliteStorage

    storage = SqliteStorage(os.path.join(folder, "rami.db"))
    if store == "none":
        storage.append = lambda *_: None  # type: ignore[method-assign]
        storage.set_status = lambda *_: None  # type: ignore[method-assign]
    lobby = Lobby(storage, _lobby_config(), _table_config())
    spent, done = 0.0, 0
    try:
        while done < total:
            table, _ = lobby.create(
                name="bench",
                variant=variant,
                options=Options(players=SEATS),
                private=False,
                hand_analysis=True,
                decks=[],
                client="bench",
            )
            for i in range(SEATS):
                table.submit({"type": "join", "seat": None, "name": f"p{i}", "token": f"hash-{i}"})
            table.submit({"type": "start", "seed": "00" * 16})
            readers = [asyncio.ensure_future(_drain(table.watch(s, None))) for s in range(SEATS)]
            await asyncio.sleep(0.01)

            def command(seat: int, action: Action, table: Any = table) -> Any:
                table.act(seat, table.state.number, action)
                return table.view_bytes(seat)

            s, d = await _play(table, command, total - done)
            spent, done = spent + s, done + d
            for r in readers:
                r.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
    finally:
        lobby.close()
    return spent, done


def _run(main: Any) -> Any:
    """On the server's own event loop (uvloop where this code chose it)."""
    try:
        from rami.server.app import run_loop
    except ImportError:  # a baseline from before the choice of loops: asyncio's
        return asyncio.run(main)
    return run_loop(main)


def bench_pipeline(variant: str, commands: int, store: str = "sqlite") -> dict[str, Any]:
    """The table's CPU time per command, ``commands`` safe moves at 4-seat tables, their
    entries stored in SQLite, or with ``store="none"`` not stored at all."""
    from rami.server.table import Table

    if store not in STORES:
        raise ValueError(f"store: one of {', '.join(STORES)}, not {store!r}")
    play = _actor if hasattr(Table, "change") else _inline
    with tempfile.TemporaryDirectory() as folder:
        spent, done = _run(play(variant, commands, folder, store))
    return {
        "variant": variant,
        "store": store,
        "seats": SEATS,
        "watchers": SEATS,
        "commands": done,
        "cpu_per_command_us": round(spent / done * 1e6, 1),
    }
