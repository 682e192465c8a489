"""The table core and its pipeline without sockets: typed entries, domain events, the table's
task, and the storage's group commit (plain pytest, no server). The storage tests run against
each backend (the ``backend`` fixture): a real SQLite file, and a real PostgreSQL database."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sqlite3
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest
from storage_backends import Backend, backend_for

from rami.engine import POLICIES, Card, Discard, Draw, Lay, NewMeld, Options, Phase, RuleError, view
from rami.engine import events as engine_events
from rami.engine.policies import make_expert
from rami.engine.record import RecordError, replay_record
from rami.server.entries import (
    Act,
    AddBot,
    Chat,
    Close,
    Entry,
    EntryError,
    Join,
    Leave,
    Mark,
    NextDeal,
    Return,
    Start,
    entry_from_dict,
)
from rami.server.lobby import Lobby, LobbyConfig, NewerTable, rebuild, summarize
from rami.server.records import record
from rami.server.refusals import Aborted, Invalid, Precondition, Refusal, Unavailable
from rami.server.storage import SCHEMA_VERSION, Append, Conflict, Fenced, SqliteStorage, Unknown
from rami.server.table import Change, Checkpoints, Table, TableConfig, stale
from rami.server.tablestate import (
    FINISHED,
    PLAYING,
    ChatPosted,
    GameStarted,
    PlayerJoined,
    PlayerLeft,
    PlayerReturned,
    TableSpec,
    TableState,
    TurnTimedOut,
    load_state,
    table_turn_cap,
)

T = TypeVar("T")
SEED = "00" * 32
QUIET = TableConfig(bot_delay=60.0, round_pause=60.0, away_delay=60.0, heartbeat=60.0)


def run(coro: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(coro(), 30))  # type: ignore[arg-type]


def two_player_state(variant: str = "tallage") -> TableState:
    return TableState("t1", TableSpec("t", variant, Options(players=2)))


def snapshot(state: TableState) -> Any:
    g = state.game
    game = None if g is None else (g.phase, g.turn, [list(h) for h in g.hands], list(g.stock))
    return (state.number, state.game_number, state.status, repr(state.seats), game)


# -- typed entries --------------------------------------------------------------------------

EVERY_KIND: list[Entry] = [
    Join(0, "Ana", "ab" * 32),
    AddBot(1, "Strong bot 2", "strong"),
    Leave(1),
    Return(1),
    Start(SEED),
    Act(0, Draw("stock")),
    Act(1, Discard(Card.parse("5h")), "timeout"),
    Act(0, Lay((NewMeld(tuple(Card.parse(c) for c in ("2h", "3h", "4h"))),)), "away"),
    NextDeal(),
    Chat(0, "gg"),
]
MARK = Mark("0123456789abcdef" * 2, "fedcba9876543210")
#: Entries made by calls with a request id: each carries its call's mark.
EVERY_KIND += [
    Join(0, "Ana", "ab" * 32, "0f" * 32, MARK),
    AddBot(1, "Strong bot 2", "strong", MARK),
    Leave(1, MARK),
    Start(SEED, MARK),
    Act(0, Draw("stock"), request=MARK),
    Chat(0, "gg", MARK),
]


@pytest.mark.parametrize("entry", EVERY_KIND, ids=lambda e: type(e).__name__)
def test_every_entry_reads_back_as_it_was_written(entry: Entry) -> None:
    stored = json.loads(json.dumps(entry.to_dict()))
    assert entry_from_dict(stored) == entry


@pytest.mark.parametrize(
    ("stored", "says"),
    [
        ("join", "an entry is an object"),
        ({"seat": 0}, "unknown entry type None"),
        ({"type": "deal"}, "unknown entry type 'deal'"),
        ({"type": "join", "seat": 0, "name": "Ana"}, "needs 'token' as str"),
        ({"type": "leave", "seat": "0"}, "needs 'seat' as int"),
        ({"type": "leave", "seat": True}, "needs 'seat' as int"),
        ({"type": "act", "seat": 0, "action": {"type": "fly"}}, "action does not read"),
        (
            {"type": "act", "seat": 0, "action": {"type": "draw", "source": "stock"}, "auto": "x"},
            "auto is one of",
        ),
        ({"type": "leave", "seat": 0, "request": MARK.key}, "digest is 16 hex digits"),
        ({"type": "leave", "seat": 0, "digest": MARK.digest}, "request is 32 hex digits"),
        ({"type": "chat", "seat": 0, "text": "x", **MARK.put({}), "request": "ab"}, "32 hex"),
    ],
)
def test_a_malformed_entry_is_refused_with_what_is_wrong(stored: Any, says: str) -> None:
    with pytest.raises(EntryError, match=says):
        entry_from_dict(stored)


def test_a_damaged_stored_log_names_the_table_and_the_entry() -> None:
    spec = TableSpec("t", "tallage", Options(players=2)).to_dict()
    entries = [Join(0, "Ana", "h0").to_dict(), {"type": "join", "seat": 1}]
    with pytest.raises(EntryError, match=r"table t9, stored entry 2: .*'name'"):
        rebuild("t9", spec, entries)
    # An entry that reads but does not apply (a seat taken twice) is named the same way.
    entries = [Join(0, "Ana", "h0").to_dict(), Join(0, "Bo", "h1").to_dict()]
    with pytest.raises(EntryError, match=r"table t9, stored entry 2: seat 0 is taken"):
        rebuild("t9", spec, entries)
    # A request applied twice: the log is not the one the table wrote.
    entries = [Join(0, "Ana", "h0").to_dict(), Chat(0, "a", MARK).to_dict()]
    entries.append(Chat(0, "b", MARK).to_dict())
    with pytest.raises(EntryError, match=r"table t9, stored entry 3: .*applied already"):
        rebuild("t9", spec, entries)


# -- the core: entries in, domain events out ------------------------------------------------


def test_the_core_applies_entries_and_returns_domain_events() -> None:
    state = two_player_state()
    assert state.apply(Join(0, "Ana", "h0")) == [PlayerJoined(0, "Ana", "player")]
    assert state.apply(AddBot(1, "Bot", "greedy")) == [PlayerJoined(1, "Bot", "bot")]
    events = state.apply(Start(SEED))
    assert isinstance(events[0], GameStarted)
    assert [p.name for p in events[0].players] == ["Ana", "Bot"]
    assert isinstance(events[1], engine_events.RoundStarted)
    assert (state.status, state.number, state.game_number) == (PLAYING, 3, 3)
    assert state.apply(Chat(1, "hi")) == [ChatPosted(1, "hi")]
    assert (state.number, state.game_number) == (4, 3)  # chat is no game change
    assert state.apply(Leave(0)) == [PlayerLeft(0)]
    assert state.apply(Return(0)) == [PlayerReturned(0)]
    g = state.game
    assert g is not None
    seat_view = state.seat_view(g.turn)
    assert seat_view is not None and seat_view.hand is not None
    events = state.apply(Act(g.turn, Discard(seat_view.hand[0]), "timeout"))
    assert events[0] == TurnTimedOut(seat_view.seat or 0)
    assert isinstance(events[1], engine_events.Discarded)


def test_players_facts_come_from_the_public_view() -> None:
    state = two_player_state()
    state.apply(Join(0, "Ana", "h0"))
    state.apply(Join(1, "Bo", "h1"))
    state.apply(Start(SEED))
    public = state.public_view()
    assert public is not None
    players = state.players({1: 2})
    assert [p.hand_size for p in players] == list(public.hand_sizes)
    assert [p.connected for p in players] == [False, True]
    assert [p.total for p in players] == list(public.totals)
    # The same facts again are the same values (an encoder knows them by identity); a seat
    # whose facts changed gets a new one, equal to what the constructor makes of them.
    again = state.players({1: 2})
    assert all(a is b for a, b in zip(again, players, strict=True))
    mover = public.turn  # the dealer, who plays the first turn without drawing
    assert state.game is not None
    state.apply(Act(mover, Discard(state.game.hands[mover][0])))
    after = state.players({1: 2})
    assert after[1 - mover] is players[1 - mover]
    assert after[mover] is not players[mover]
    assert after[mover] == replace(players[mover], hand_size=players[mover].hand_size - 1)
    assert state.players({})[1] == replace(players[1], connected=False)


@pytest.mark.parametrize(
    ("entry", "error", "reason"),
    [
        (Join(0, "Eve", "h9"), RuleError, "TABLE_STARTED"),
        (Start(SEED), RuleError, "TABLE_STARTED"),
        (Act(1, Draw("stock")), RuleError, None),
        (Act(7, Draw("stock")), RuleError, "BAD_SEAT"),
        (Return(0), RuleError, "NOT_AWAY"),
        (AddBot(0, "B", "nobody"), RuleError, "BAD_POLICY"),
    ],
)
def test_a_refused_entry_changes_nothing(entry: Entry, error: type, reason: str | None) -> None:
    state = two_player_state()
    state.apply(Join(0, "Ana", "h0"))
    state.apply(Join(1, "Bo", "h1"))
    state.apply(Start(SEED))
    before = snapshot(state)
    with pytest.raises((Refusal, RuleError)) as info:
        state.apply(entry)
    if reason is not None:
        assert info.value.reason == reason  # type: ignore[union-attr]
    assert snapshot(state) == before


def test_a_command_decided_on_an_older_game_update_is_stale() -> None:
    state = two_player_state()
    state.apply(Join(0, "Ana", "h0"))
    state.apply(Join(1, "Bo", "h1"))
    state.apply(Start(SEED))
    stale(state, 3)
    state.apply(Chat(0, "hi"))
    stale(state, 3)  # a chat does not make a decision stale
    stale(state, 4)
    # Said of the game's last change, beside the table's latest update (the chat's).
    with pytest.raises(Aborted, match=r"the game changed at update 3 \(the table is at 4\)"):
        stale(state, 2)
    with pytest.raises(Invalid, match="has not happened"):
        stale(state, 5)  # a number not reached is a mistake, not a stale view


# -- the table's task and the storage ---------------------------------------------------------


async def open_storage(tmp: Path) -> SqliteStorage:
    return await SqliteStorage.open(str(tmp / "rami.db"), summarize)


async def new_table(lobby: Lobby, variant: str = "tallage", players: int = 2) -> Table:
    table, _ = await lobby.create(
        name="t",
        variant=variant,
        options=Options(players=players),
        private=False,
        hand_analysis=True,
        decks=[],
        client="test",
    )
    return table


def delayed(
    store: Callable[[Append], Awaitable[None]],
    seconds: float,
    first: Callable[[], object] | None = None,
) -> Callable[[Append], asyncio.Future[None]]:
    """A storage's ``submit`` that stores each append ``seconds`` later (as a network database
    takes its time), calling ``first()`` as it is handed one."""

    async def later(append: Append) -> None:
        await asyncio.sleep(seconds)
        await store(append)

    def submit(append: Append) -> asyncio.Future[None]:
        if first is not None:
            first()
        return asyncio.ensure_future(later(append))

    return submit


def joining(name: str) -> Callable[[TableState], list[Entry]]:
    def plan(state: TableState) -> list[Entry]:
        entries: list[Entry] = [Join(state.free_seat(None), name, f"hash-{name}")]
        if state.filled() + 1 == len(state.seats):
            entries.append(Start(SEED))
        return entries

    return plan


def test_the_appends_of_one_tick_share_one_commit_and_are_acknowledged_after_it(
    backend: Backend,
) -> None:
    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        a, b = await new_table(lobby), await new_table(lobby)
        acks: list[asyncio.Future[int]] = []
        at_commit: list[Any] = []

        def look() -> None:  # just before COMMIT, inside the transaction
            at_commit.append(
                (
                    [ack.done() for ack in acks],
                    (a.number, b.number),
                    backend.stored_numbers(a.table_id),
                )
            )

        storage.before_commit = look
        commits = storage.commits
        seen: dict[str, list[int]] = {}

        def reply_of(t: Table) -> Callable[[Any], int]:
            def reply(done: Any) -> int:
                # Acknowledged: another connection must already see the entry.
                seen[t.table_id] = backend.stored_numbers(t.table_id)
                return t.number

            return reply

        acks.extend(asyncio.ensure_future(t.change(joining("Ana"), reply_of(t))) for t in (a, b))
        assert await asyncio.gather(*acks) == [1, 1]
        # At the commit, written but not committed: nobody answered, nothing seen elsewhere.
        assert at_commit == [([False, False], (0, 0), [])]
        assert seen == {a.table_id: [1], b.table_id: [1]}
        assert storage.commits == commits + 1  # both tables' appends, one transaction
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_change_at_an_idle_table_is_stored_and_answered_in_one_turn_of_the_loop(
    tmp_path: Path,
) -> None:
    """Its caller runs the pipeline: the one turn is the group commit's (the tick's end),
    with no hand-off to the table's task and back; a read there is answered at once."""

    async def main() -> None:
        storage = await open_storage(tmp_path)
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        loop = asyncio.get_running_loop()
        turns = 0
        ticking = True

        def tick() -> None:
            nonlocal turns
            turns += 1
            if ticking:
                loop.call_soon(tick)

        loop.call_soon(tick)
        for name in ("Ana", "Bo", "Cy"):
            await asyncio.sleep(0)
            before = turns
            assert await table.change(joining(name), lambda done: done.last) == table.number
            assert turns - before == 1
        before = turns
        assert await table.read(lambda state: state.number) == 4  # the start is the 4th
        assert turns == before
        ticking = False
        await asyncio.sleep(0)
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_change_whose_caller_is_cancelled_while_it_is_stored_is_committed_all_the_same(
    backend: Backend,
) -> None:
    """Cancelled once its entries are handed to storage (a client that goes, a deadline that
    passes), the change is not taken back: the table's task waits for the storage's answer and
    commits it, its watchers get it, and the changes queued behind it follow."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        watcher = table.watcher(None)
        stream = table.watch(None, None, watcher)
        assert (await anext(stream))[0] == 0
        store = storage.submit
        slow_submit = delayed(store, 0.05)
        # Cancelled as its caller hands it to storage, then while it waits for a slow store.
        for name, slow in (("Ana", False), ("Bo", True)):
            number = table.number
            storage.submit = slow_submit if slow else store  # type: ignore[method-assign]
            call = asyncio.ensure_future(table.change(joining(name), lambda _: None))
            for _ in range(3 if slow else 1):  # its entries applied and handed to storage
                await asyncio.sleep(0)
            assert table._dirty and table.number == number
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            item = await asyncio.wait_for(anext(stream), 5)
            assert item[0] == number + 1 == table.number
            assert backend.stored_numbers(table.table_id)[-1] == number + 1
        storage.submit = store  # type: ignore[method-assign]
        # Queued behind one that is cancelled: runs after it, from its state.
        first = asyncio.ensure_future(table.change(joining("Cy"), lambda _: None))
        second = asyncio.ensure_future(table.change(lambda _: [], lambda _: table.number))
        await asyncio.sleep(0)
        first.cancel()
        assert await asyncio.wait_for(second, 5) == 4  # Cy's join and the start it implies
        assert backend.stored_numbers(table.table_id) == [1, 2, 3, 4]
        await stream.aclose()
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_closing_ends_a_change_its_caller_runs_when_its_store_does_not_answer_in_time(
    backend: Backend,
) -> None:
    """A change run by its caller at an idle table is the table's change under way: closing
    stops it as it stops its task's once the time is up, put back, its caller told it may
    or may not be stored."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        hung: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        store = storage.submit
        storage.submit = lambda append: hung  # type: ignore[method-assign]
        under_way = asyncio.ensure_future(table.change(joining("Ana"), lambda _: None))
        for _ in range(3):
            await asyncio.sleep(0)
        assert table._busy and table._dirty
        table.close()
        await table.closing(timeout=0.05)
        with pytest.raises(Unavailable) as info:
            await asyncio.wait_for(under_way, 2)
        # Handed to storage, unanswered: it may yet be stored, and the caller is told so.
        assert info.value.reason == "STORAGE_FAILED"
        assert "may or may not have been stored" in str(info.value)
        assert table.state.number == table.number == 0 and not table._dirty
        storage.submit = store  # type: ignore[method-assign]
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_change_stored_as_the_table_is_stopped_is_committed_and_answered(
    backend: Backend,
) -> None:
    """The storage's answer comes just as closing stops the table's task: the change is
    committed (its watchers get it), and its caller is answered with its reply, never
    refused for a change that everyone has seen."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        watcher = table.watcher(None)
        stream = table.watch(None, None, watcher)
        assert (await anext(stream))[0] == 0
        store = storage.submit
        real: list[asyncio.Future[None]] = []
        answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def held(append: Any) -> asyncio.Future[None]:
            real.append(store(append))  # stored, its answer held back
            return answer

        storage.submit = held  # type: ignore[method-assign]
        call = table.queue(Change(joining("Ana"), lambda _: "ok"))
        for _ in range(5):
            await asyncio.sleep(0)
        await real[0]
        assert table._busy and backend.stored_numbers(table.table_id) == [1]
        answer.set_result(None)
        table.close()
        await table.closing(timeout=0)
        storage.submit = store  # type: ignore[method-assign]
        assert await asyncio.gather(call, return_exceptions=True) == ["ok"]
        assert table.number == table.state.number == 1 and not table._dirty
        await stream.aclose()
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


async def _stopped_before_the_store_answers(
    storage: Any, table: Table, run_by: str
) -> tuple[Any, list[tuple[Any, asyncio.Future[None]]]]:
    """A join handed to a store that takes appends but answers only when told, run by its
    caller (a unary call at an idle table) or by the table's task (queued), and the table
    stopped (moved) meanwhile: the call's outcome, and each append taken with its answer."""
    store = storage.submit
    late: list[tuple[Any, asyncio.Future[None]]] = []

    def slow(append: Any) -> asyncio.Future[None]:
        answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        late.append((append, answer))  # taken, answered later
        return answer

    storage.submit = slow
    try:
        if run_by == "caller":
            call = asyncio.ensure_future(table.change(joining("Ana"), lambda _: "ok"))
        else:
            call = table.queue(Change(joining("Ana"), lambda _: "ok"))
        for _ in range(5):
            await asyncio.sleep(0)
        assert table._busy and table._dirty and len(late) == 1
        table.close(moved_to="")
        await table.closing(timeout=0.05)
        (outcome,) = await asyncio.gather(call, return_exceptions=True)
    finally:
        storage.submit = store
    return outcome, late


@pytest.mark.parametrize("run_by", ["caller", "task"])
def test_a_change_the_store_answers_only_after_the_stop_is_not_said_undone(
    backend: Backend, run_by: str
) -> None:
    """The store takes the change's append but answers only after closing has given up on it
    (a database that hangs: its commit on the way, or in its socket): the change is stored
    after all. Its caller must not be told that nothing changed (TABLE_MOVED or SHUTTING_DOWN
    ask for the call again, which would post a chat line twice): it is told that the change
    may or may not have been stored. Run by its caller (a unary call at an idle table) or by
    the table's task (queued behind another change)."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        outcome, late = await _stopped_before_the_store_answers(storage, table, run_by)
        append, answer = late[0]
        await storage.submit(append)  # the commit goes through at last
        if not answer.done():  # (awaited by the task: cancelled with it)
            answer.set_result(None)
        assert backend.stored_numbers(table.table_id) == [1]
        assert isinstance(outcome, Unavailable), outcome
        assert outcome.reason == "STORAGE_FAILED", outcome
        assert "may or may not have been stored" in str(outcome)
        assert not table._dirty
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


@pytest.mark.parametrize("late", ["fenced", "bug"])
@pytest.mark.parametrize("run_by", ["caller", "task"])
def test_a_refusal_the_store_gives_after_the_stop_is_not_left_unread(
    backend: Backend, run_by: str, late: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The store answers a change only after closing gave up on it, and refuses it (a commit
    held 65 s by a stalled network, delivered after the takeover: Fenced). Nobody waited for
    that answer any more: asyncio logged "Future exception was never retrieved" at ERROR,
    with the refusal's traceback, for what is no error of the server's. A failure that is no
    refusal of the store (a bug's) is logged."""

    async def main() -> list[str]:
        import gc

        loop = asyncio.get_running_loop()
        unread: list[str] = []
        loop.set_exception_handler(lambda _, context: unread.append(context["message"]))
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        _, stored = await _stopped_before_the_store_answers(storage, table, run_by)
        for _, answer in stored:
            if not answer.done():
                answer.set_exception(
                    Fenced("taken over", "127.0.0.1:2") if late == "fenced" else KeyError("x")
                )
        stored.clear()
        del answer
        for _ in range(3):
            await asyncio.sleep(0)
        gc.collect()
        await asyncio.sleep(0)
        lobby.close()
        await lobby.closing()
        await storage.close()
        return unread

    assert run(main) == []
    failed = [r for r in caplog.records if "a storage append failed" in r.getMessage()]
    # (Run by the task, the answer awaited was cancelled with it: no failure came.)
    told = late == "bug" and run_by == "caller"
    assert [r.levelname for r in failed] == (["ERROR"] if told else [])


def test_closing_settles_the_change_of_a_cancelled_caller_before_the_task_took_it(
    backend: Backend,
) -> None:
    """A caller cancelled once its change was handed to storage, and the table stopped before
    its task started: closing settles the change all the same (committed if stored, else put
    back), never leaving memory ahead of what is committed."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        call = asyncio.ensure_future(table.change(joining("Ana"), lambda _: None))
        await asyncio.sleep(0)  # handed to storage
        call.cancel()
        await asyncio.sleep(0)  # the caller gone: the task made, not started
        assert call.cancelled() and table._task is not None and table._dirty
        table.close()
        await table.closing(timeout=0)
        await asyncio.sleep(0.2)
        assert not table._dirty and table.state.number == table.number
        # Committed if its storage had answered; else put back (the log, which has it or
        # will, is what the table is loaded from next).
        assert table.number in (0, len(backend.stored_numbers(table.table_id)))
        assert table._task is None
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


@pytest.mark.parametrize("error", ["fenced", "unknown"])
def test_a_storage_refusal_that_comes_as_the_task_is_stopped_is_told(
    tmp_path: Path, error: str
) -> None:
    """The storage refuses the change in the tick closing stops the table's task: the caller
    hears the storage's answer (the table moved, and where; or the store's answer lost), and
    the lobby is told, as when the answer comes a tick earlier."""

    async def main() -> None:
        storage = await open_storage(tmp_path)
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        told: list[str] = []
        table.on_moved = lambda t, owner: told.append(f"moved {owner}")
        table.on_reload = lambda t: told.append("reload")
        answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        store = storage.submit
        storage.submit = lambda append: answer  # type: ignore[method-assign]
        call = table.queue(Change(joining("Ana"), lambda _: "ok"))
        for _ in range(5):
            await asyncio.sleep(0)
        assert table._busy and table._dirty
        answer.set_exception(
            Fenced("taken over", "other:50051") if error == "fenced" else Unknown("lost")
        )
        table.close()
        await table.closing(timeout=0)
        storage.submit = store  # type: ignore[method-assign]
        (outcome,) = await asyncio.gather(call, return_exceptions=True)
        assert not table._dirty and table.state.number == 0
        assert isinstance(outcome, Unavailable)
        if error == "fenced":
            assert (outcome.reason, outcome.metadata.get("owner")) == ("TABLE_MOVED", "other:50051")
            assert told == ["moved other:50051"]
        else:
            assert outcome.reason == "STORAGE_FAILED"
            assert told == ["reload"]
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_caller_cancelled_as_closing_stops_its_change_leaves_nothing_under_way(
    tmp_path: Path,
) -> None:
    """closing has stopped a change its caller runs, and the caller is cancelled before it
    wakes: the change is settled there (put back: its store has not answered), and no task
    starts at the closed table."""

    async def main() -> None:
        storage = await open_storage(tmp_path)
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        hung: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        store = storage.submit
        storage.submit = lambda append: hung  # type: ignore[method-assign]
        under_way = asyncio.ensure_future(table.change(joining("Ana"), lambda _: None))
        for _ in range(3):
            await asyncio.sleep(0)
        assert table._busy and table._dirty and table._task is None
        table.close()
        await table.closing(timeout=0)
        under_way.cancel()
        await asyncio.gather(under_way, return_exceptions=True)
        for _ in range(5):
            await asyncio.sleep(0)
        storage.submit = store  # type: ignore[method-assign]
        assert table._task is None and not table._dirty
        assert table.state.number == table.number == 0
        hung.set_result(None)
        await asyncio.sleep(0.05)
        assert table.number == 0
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_storage_that_gives_its_answer_up_is_told_as_an_answer_lost(tmp_path: Path) -> None:
    """A storage whose answer ends cancelled (its writing task stopped) while neither the
    table's task nor the caller was: the change is told as one whose storing is unknown (the
    table is loaded again from its log), never as a cancellation of a caller nobody
    cancelled; the change queued behind it is answered too."""

    async def main() -> None:
        storage = await open_storage(tmp_path)
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        store = storage.submit
        for inline in (False, True):
            table = await new_table(lobby, players=3)
            answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            storage.submit = lambda append, answer=answer: answer  # type: ignore[method-assign]
            if inline:
                first = asyncio.ensure_future(table.change(joining("Ana"), lambda _: "ok"))
            else:
                first = table.queue(Change(joining("Ana"), lambda _: "ok"))
            behind = asyncio.ensure_future(table.change(lambda s: [], lambda _: "read"))
            for _ in range(5):
                await asyncio.sleep(0)
            assert table._busy
            storage.submit = store  # type: ignore[method-assign]
            answer.cancel()
            outcome = await asyncio.wait_for(asyncio.gather(first, return_exceptions=True), 2)
            assert isinstance(outcome[0], Unavailable) and outcome[0].reason == "STORAGE_FAILED"
            (after,) = await asyncio.wait_for(asyncio.gather(behind, return_exceptions=True), 2)
            assert after == "read" or isinstance(after, Unavailable)
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_caller_dropped_inside_its_change_leaves_the_table_as_stored(tmp_path: Path) -> None:
    """A caller's coroutine closed while its change is stored (not cancelled: dropped): the
    table's task settles the change, and nobody reads a state that is not committed."""

    async def main() -> None:
        storage = await open_storage(tmp_path)
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        coro = table.change(joining("Ana"), lambda _: None)
        coro.send(None)  # to its first await
        coro.close()
        await asyncio.sleep(0.05)
        assert await table.read(lambda s: s.number) == table.number == 1
        assert not table._dirty
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_an_append_to_a_closed_memory_database_is_refused_not_left_unanswered() -> None:
    async def main() -> None:
        storage = await SqliteStorage.open(":memory:", summarize)
        await storage.close()
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(
                storage.append(Append("t", 1, [{"type": "chat"}], "waiting", None, None)), 2
            )

    run(main)


def test_closing_a_table_answers_every_queued_change_even_when_it_stops_one_under_way(
    backend: Backend,
) -> None:
    """A table closed while its task stores a change, and stopped before it ends (``closing``
    with no time left): that change and those queued behind it are all answered (none waits
    for ever): the one handed to storage may or may not be stored, the queued ones are
    refused, and a change sent later is refused at once."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        # Queued: the table's task runs it (a change its caller runs is not the task's to stop).
        under_way = table.queue(Change(joining("Ana"), lambda _: None))
        queued = [
            asyncio.ensure_future(table.change(joining(name), lambda _: None))
            for name in ("Bo", "Cy")
        ]
        for _ in range(100):  # until the table's task has taken Ana's join (its append waits)
            if table._busy:
                break
            await asyncio.sleep(0)
        assert table._busy and len(table._queue) == 2
        table.close()
        await table.closing(timeout=0)
        for call, reason in zip(
            (under_way, *queued), ("STORAGE_FAILED", "SHUTTING_DOWN", "SHUTTING_DOWN"), strict=True
        ):
            with pytest.raises(Unavailable) as info:
                await asyncio.wait_for(call, 2)
            assert info.value.reason == reason
        with pytest.raises(Unavailable):
            await table.change(joining("Di"), lambda _: None)
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_queued_command_stopped_before_its_turn_is_refused_to_its_stream(
    backend: Backend,
) -> None:
    """A Play stream's command (a change with ``failed``) queued just as its table is closed
    and stopped, before the table's task took it: its refusal goes to ``failed``, as every
    other refusal of such a change does, and its future ends without an error nobody reads."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby, players=3)
        told: list[Exception] = []
        streamed = table.queue(Change(joining("Eve"), lambda _: None, failed=told.append))
        table.close()
        await table.closing(timeout=0)
        assert await asyncio.wait_for(streamed, 2) is None
        assert [type(e) for e in told] == [Unavailable]
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_the_lobby_lists_open_tables_before_finished_and_closed_ones(backend: Backend) -> None:
    """A client that creates and closes tables over and over must not push the tables people
    can join out of the list (at most 200): open ones come first, each group newest first."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(
            storage, LobbyConfig(max_tables_per_client=1000, table_creations_per_second=0), QUIET
        )
        waiting = await new_table(lobby)
        playing = await new_table(lobby)
        await playing.change(joining("Ana"), lambda _: None)
        await playing.change(joining("Bo"), lambda _: None)  # full: the game starts
        for _ in range(205):
            spam = await new_table(lobby)
            await spam.change(lambda _: [Close("owner")], lambda _: None)
        listed = await lobby.listing()
        assert len(listed) == 200
        assert [t.table_id for t in listed[:2]] == [waiting.table_id, playing.table_id]
        assert all(t.status == "closed" for t in listed[2:])
        assert [t.table_id for t in await lobby.listing(status="waiting")] == [waiting.table_id]
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_change_and_what_it_implies_are_stored_together(backend: Backend) -> None:
    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby)
        await table.change(joining("Ana"), lambda _: None)
        commits = storage.commits
        await table.change(joining("Bo"), lambda _: None)  # the last join starts the game
        assert storage.commits == commits + 1
        row = await storage.get_table(table.table_id)
        assert row is not None and (row.status, row.number) == (PLAYING, 3)
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_failed_append_leaves_the_table_as_it_was_and_announces_nothing(
    backend: Backend,
) -> None:
    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby)
        await table.change(joining("Ana"), lambda _: None)
        watcher = table.watcher(None)
        stream = table.watch(None, None, watcher)
        snapshot_item = await anext(stream)
        assert snapshot_item[0] == 1

        def fail() -> None:
            raise backend.io_error()

        storage.before_commit = fail
        before = snapshot(table.state)
        with pytest.raises(Unavailable) as info:
            await table.change(joining("Bo"), lambda _: None)
        assert info.value.reason == "STORAGE_FAILED"
        assert snapshot(table.state) == before
        assert table.number == 1 and watcher.queue.empty()
        storage.before_commit = None
        assert await table.change(joining("Bo"), lambda done: done.first) == 2
        item = await asyncio.wait_for(anext(stream), 5)
        assert item[0] == 2
        await stream.aclose()
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_an_append_at_the_wrong_number_conflicts_alone(backend: Backend) -> None:
    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        a, b = await new_table(lobby), await new_table(lobby)
        seats = [{"name": "", "kind": "empty", "policy": "", "away": False}] * 2
        entry = Join(0, "Ana", "h").to_dict()
        good = Append(a.table_id, 1, [entry], "waiting", seats, {})
        bad = Append(b.table_id, 2, [entry], "waiting", seats, {})  # skips entry 1
        again = Append(a.table_id, 1, [entry], "waiting", seats, {})  # entry 1 twice
        results = await asyncio.gather(
            storage.append(good),
            storage.append(bad),
            storage.append(again),
            return_exceptions=True,
        )
        assert results[0] is None
        assert isinstance(results[1], Conflict) and isinstance(results[2], Conflict)
        assert backend.stored_numbers(a.table_id) == [1]
        assert backend.stored_numbers(b.table_id) == []
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_table_plays_a_whole_game_through_its_task_and_reloads_the_same(
    backend: Backend,
) -> None:
    fast = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=60.0)

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(finished_kept=0), fast)
        table, _ = await lobby.create(
            name="t",
            variant="simple",
            options=Options(players=3, round_cap=2),
            private=False,
            hand_analysis=True,
            decks=[],
            client="test",
        )
        for i in range(3):
            await table.change(
                lambda s, i=i: (
                    [AddBot(s.free_seat(None), f"b{i}", "greedy")]
                    + ([Start(SEED)] if s.filled() == 2 else [])
                ),
                lambda _: None,
            )
        stream = table.watch(None, None)
        numbers = []
        async for number, _ in stream:
            numbers.append(number)
            if table.status == FINISHED and table.number == numbers[-1]:
                break
        await stream.aclose()
        assert numbers == list(range(numbers[0], table.number + 1))
        entries = [e.to_dict() for e in table.state.entries]
        lobby.close()
        await lobby.closing()
        await storage.close()
        storage = await backend.open()
        stored = await storage.load_table(table.table_id)
        assert stored is not None and stored.entries == entries
        assert (stored.row.status, stored.row.number) == (FINISHED, len(entries))
        assert await storage.unfinished() == []
        await storage.close()

    run(main)


def test_a_version_1_database_is_migrated_on_open(tmp_path: Path) -> None:
    path = tmp_path / "rami.db"
    db = sqlite3.connect(str(path))
    db.executescript(
        """
        CREATE TABLE tables (table_id TEXT PRIMARY KEY, created REAL NOT NULL,
            spec TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'waiting');
        CREATE TABLE entries (table_id TEXT NOT NULL REFERENCES tables(table_id),
            number INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (table_id, number))
            WITHOUT ROWID;
        """
    )
    spec = TableSpec("old", "tallage", Options(players=2), owner_hash="own").to_dict()
    db.execute("INSERT INTO tables VALUES ('t1', 1.0, ?, 'waiting')", (json.dumps(spec),))
    db.execute(
        "INSERT INTO entries VALUES ('t1', 1, ?)", (json.dumps(Join(0, "Ana", "tok").to_dict()),)
    )
    db.commit()
    db.close()

    async def main() -> None:
        storage = await open_storage(tmp_path)
        row = await storage.get_table("t1")
        assert row is not None and row.number == 1
        assert [s["name"] for s in row.seats] == ["Ana", ""]
        assert await storage.token_known("tok") and await storage.token_known("own")
        assert [r.table_id for r in await storage.list_tables(variant="tallage")] == ["t1"]
        await storage.close()

    run(main)
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    db.close()


#: The directory of schema version 2, as that version wrote it.
_V2_SCHEMA = """
CREATE TABLE tables (table_id TEXT PRIMARY KEY, created REAL NOT NULL, spec TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'waiting', number INTEGER NOT NULL DEFAULT 0,
    seats TEXT NOT NULL DEFAULT '[]', options TEXT NOT NULL DEFAULT '{}',
    variant TEXT NOT NULL DEFAULT '', client TEXT NOT NULL DEFAULT '',
    private INTEGER NOT NULL DEFAULT 0);
CREATE TABLE entries (table_id TEXT NOT NULL REFERENCES tables(table_id),
    number INTEGER NOT NULL, entry TEXT NOT NULL, status TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (table_id, number)) WITHOUT ROWID;
CREATE TABLE tokens (token_hash TEXT PRIMARY KEY, table_id TEXT NOT NULL) WITHOUT ROWID;
PRAGMA user_version = 2;
"""


def test_a_version_2_database_is_migrated_on_open_and_keeps_create_requests(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rami.db"
    db = sqlite3.connect(str(path))
    db.executescript(_V2_SCHEMA)
    spec = TableSpec("old", "tallage", Options(players=2), owner_hash="own").to_dict()
    db.execute(
        "INSERT INTO tables (table_id, created, spec, number, seats, options, variant)"
        " VALUES ('t1', 1.0, ?, 1, '[]', ?, 'tallage')",
        (json.dumps(spec), json.dumps(spec["options"])),
    )
    db.execute(
        "INSERT INTO entries VALUES ('t1', 1, ?, 'waiting')",
        (json.dumps(Join(0, "Ana", "tok").to_dict()),),
    )
    db.commit()
    db.close()
    mark = Mark("ab" * 16, "cd" * 8)

    async def main() -> None:
        storage = await open_storage(tmp_path)
        stored = await storage.load_table("t1")
        assert stored is not None and stored.row.number == 1 and len(stored.entries) == 1
        assert await storage.created_by("") is None  # the tables there were made without one
        seats = [{"name": "", "kind": "empty", "policy": "", "away": False}] * 2
        assert await storage.create_table("t2", spec, seats, "own2", mark) is None
        found = await storage.created_by(mark.key)
        assert found is not None and (found.table_id, found.request) == ("t2", mark)
        # The same mark again stores nothing, and names the table it made.
        again = await storage.create_table("t3", spec, seats, "own3", mark)
        assert again == found and await storage.get_table("t3") is None
        await storage.close()

    run(main)
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (5,)
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        db.execute(
            "INSERT INTO tables (table_id, created, spec, request) VALUES ('t4', 1, '{}', ?)",
            (mark.key,),
        )
    db.close()


def test_a_version_3_database_is_migrated_on_open_and_its_finished_tables_get_a_rematch(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rami.db"
    db = sqlite3.connect(str(path))
    db.executescript(
        _V2_SCHEMA.replace("PRAGMA user_version = 2;", "PRAGMA user_version = 3;")
        + "ALTER TABLE tables ADD COLUMN request TEXT NOT NULL DEFAULT '';"
        + "ALTER TABLE tables ADD COLUMN request_digest TEXT NOT NULL DEFAULT '';"
    )
    spec = TableSpec("old", "tallage", Options(players=2), owner_hash="own").to_dict()
    db.execute(
        "INSERT INTO tables (table_id, created, spec, status, seats, options, variant)"
        " VALUES ('t1', 1.0, ?, 'finished', '[]', ?, 'tallage')",
        (json.dumps(spec), json.dumps(spec["options"])),
    )
    db.commit()
    db.close()

    async def main() -> None:
        storage = await open_storage(tmp_path)
        row = await storage.get_table("t1")
        assert row is not None and row.status == FINISHED and row.rematch == ""
        seats = [{"name": "", "kind": "empty", "policy": "", "away": False}] * 2
        assert await storage.create_table("t2", spec, seats, "own2", None, "t1") is None
        row = await storage.get_table("t1")
        assert row is not None and row.rematch == "t2"
        await storage.close()

    run(main)
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (5,)
    db.close()


#: Version 4's triggers: an entry's place checked against the number kept in its table's row,
#: which every entry wrote.
_V4_TRIGGERS = """
CREATE TRIGGER entry_in_place BEFORE INSERT ON entries
WHEN NEW.number IS NOT (SELECT number FROM tables WHERE table_id = NEW.table_id) + 1
BEGIN
    SELECT RAISE(ABORT, 'entry out of place');
END;
CREATE TRIGGER entry_moves_table AFTER INSERT ON entries
BEGIN
    UPDATE tables SET number = NEW.number WHERE table_id = NEW.table_id;
END;
"""


def test_a_version_4_database_is_migrated_on_open_and_checks_each_entrys_place(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rami.db"
    db = sqlite3.connect(str(path))
    db.executescript(
        _V2_SCHEMA.replace("PRAGMA user_version = 2;", "PRAGMA user_version = 4;")
        + "ALTER TABLE tables ADD COLUMN request TEXT NOT NULL DEFAULT '';"
        + "ALTER TABLE tables ADD COLUMN request_digest TEXT NOT NULL DEFAULT '';"
        + "ALTER TABLE tables ADD COLUMN rematch TEXT NOT NULL DEFAULT '';"
        + _V4_TRIGGERS
    )
    spec = TableSpec("old", "tallage", Options(players=2), owner_hash="own").to_dict()
    db.execute(
        "INSERT INTO tables (table_id, created, spec, seats, options, variant)"
        " VALUES ('t1', 1.0, ?, '[]', ?, 'tallage')",
        (json.dumps(spec), json.dumps(spec["options"])),
    )
    for number, name in ((1, "Ana"), (2, "Bo")):
        db.execute(
            "INSERT INTO entries VALUES ('t1', ?, ?, 'waiting')",
            (number, json.dumps(Join(number - 1, name, f"tok{number}").to_dict())),
        )
    db.commit()
    db.close()
    seats = [{"name": "", "kind": "empty", "policy": "", "away": False}] * 2
    chat = Chat(0, "hello").to_dict()

    async def main() -> None:
        storage = await open_storage(tmp_path)
        row = await storage.get_table("t1")
        assert row is not None and row.number == 2
        results = await asyncio.gather(
            storage.append(Append("t1", 3, [chat], "waiting", seats, {})),
            storage.append(Append("t1", 5, [chat], "waiting", seats, {})),  # skips 4
            return_exceptions=True,
        )
        assert results[0] is None and isinstance(results[1], Conflict)
        with pytest.raises(Conflict):
            await storage.append(Append("t1", 3, [chat], "waiting", seats, {}))  # 3 twice
        with pytest.raises(Conflict):
            await storage.append(Append("t9", 1, [chat], "waiting", seats, {}))  # no table
        await storage.append(Append("t1", 4, [chat, chat], "waiting", None, None))
        stored = await storage.load_table("t1")
        assert stored is not None and stored.row.number == 5 and len(stored.entries) == 5
        listed = await storage.list_tables()
        assert [(r.table_id, r.number) for r in listed] == [("t1", 5)]
        await storage.close()

    run(main)
    db = sqlite3.connect(str(path))
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (5,)
    triggers = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert triggers == {"entry_in_place_v5", "entry_changes_status"}
    db.close()


def test_an_expert_bot_is_seated_and_plays_from_its_seat_view() -> None:
    """The server seats every policy of the engine, ``expert`` included (its moves are decided
    off the event loop: ``thinking.py``, tested in test_server_games); from the server's own
    seat views (what a worker is given) it plays legal moves. An unknown policy is refused."""
    expert = make_expert(budget=0.002)
    rng = random.Random(3)
    state = two_player_state("tallage")
    state.apply(Join(0, "Ana", "h0"))
    before = state.number
    with pytest.raises(Refusal) as refused:
        state.apply(AddBot(1, "Bot", "expertly"))
    assert refused.value.reason == "BAD_POLICY" and "expert" in str(refused.value)
    assert state.number == before
    state.apply(AddBot(1, "Expert bot 2", "expert"))
    assert state.seats[1].policy == "expert"
    state.apply(Start(SEED))
    for _ in range(60):
        g = state.game
        assert g is not None
        if g.phase != Phase.DRAW and g.phase != Phase.PLAY:
            break
        seat_view = state.seat_view(g.turn)
        assert seat_view is not None
        policy = expert if g.turn == 1 else POLICIES["strong"]
        state.apply(Act(g.turn, policy(seat_view, rng)))  # raises if refused


def test_random_games_replayed_from_their_log_give_the_same_table() -> None:
    rng = random.Random(11)
    for variant in ("portuguese", "tallage", "simple"):
        state = two_player_state(variant)
        state.apply(Join(0, "Ana", "h0"))
        state.apply(AddBot(1, "Bot", "random"))
        state.apply(Start(SEED))
        for _ in range(300):
            g = state.game
            assert g is not None
            if g.phase == Phase.GAME_OVER:
                break
            if g.phase == Phase.ROUND_OVER:
                state.apply(NextDeal())
                continue
            seat_view = state.seat_view(g.turn)
            assert seat_view is not None
            state.apply(Act(g.turn, POLICIES["random"](seat_view, rng)))
        again = rebuild(state.table_id, state.spec.to_dict(), [e.to_dict() for e in state.entries])
        assert snapshot(again) == snapshot(state)


def test_a_fork_goes_on_as_its_table_would_and_leaves_it_as_it_was() -> None:
    def seen(state: TableState) -> Any:
        g = state.game
        log = None if g is None else (list(g.log), list(g.results), list(g.melds), g.discard)
        views = (state.public_view(), state.seat_view(0), state.seat_view(1))
        return snapshot(state), state.options, log, views

    rng = random.Random(12)
    for variant in ("portuguese", "tallage", "simple"):
        state = two_player_state(variant)
        state.apply(Join(0, "Ana", "h0"))
        state.apply(AddBot(1, "Bot", "random"))
        state.apply(Start(SEED))
        for _ in range(300):
            g = state.game
            assert g is not None
            if g.phase == Phase.GAME_OVER:
                break
            if g.phase == Phase.ROUND_OVER:
                state.apply(NextDeal())
                continue
            seat_view = state.seat_view(g.turn)
            assert seat_view is not None
            state.apply(Act(g.turn, POLICIES["random"](seat_view, rng)))
        log = state.entries
        for k in (1, 3, 4, 40, len(log) // 2, len(log) - 1):
            at_k = load_state(state.table_id, state.spec, log[:k])
            before = seen(at_k)
            fork = at_k.fork()
            for entry in log[k:]:
                fork.apply(entry)
            assert seen(fork) == seen(state), (variant, k)
            assert seen(at_k) == before, (variant, k)


def test_leaving_before_the_game_frees_the_seat_and_its_token() -> None:
    state = two_player_state()
    state.apply(Join(0, "Ana", "h0"))
    assert state.tokens() == ("h0",)
    state.apply(Leave(0))
    assert state.tokens() == () and state.seats[0].kind == "empty"
    with pytest.raises(Precondition):
        state.apply(Return(0))


def test_a_write_lock_held_elsewhere_delays_only_the_appends_never_the_loop(
    backend: Backend,
) -> None:
    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby)
        release = backend.hold_write_lock(table.table_id)  # another process holds it
        change = asyncio.ensure_future(table.change(joining("Ana"), lambda d: d.first))
        loop = asyncio.get_running_loop()
        started = loop.time()
        for _ in range(20):
            await asyncio.sleep(0.01)  # the loop goes on serving meanwhile
        assert loop.time() - started < 1.0
        assert not change.done() and table.number == 0
        release()
        assert await asyncio.wait_for(change, 10) == 1
        assert backend.stored_numbers(table.table_id) == [1]
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_reply_never_shows_a_seat_whose_stream_ended_while_its_change_was_stored() -> None:
    """An Act's reply reuses the view its update has just sent only when nothing it shows
    changed since: a stream that ends while the change is being stored takes its seat's
    presence with it, and the reply shows that seat gone."""
    from rami.engine import view
    from rami.engine.policies import safe_move
    from rami.v1 import game_pb2

    async def main(tmp: Path) -> None:
        storage = await open_storage(tmp)
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby)
        await table.change(joining("Ana"), lambda _: None)
        await table.change(joining("Bo"), lambda _: None)
        game = table.state.game
        assert game is not None
        mover, other = game.turn, 1 - game.turn

        async def read(stream: Any) -> None:
            async for _ in stream:
                pass

        readers = {
            seat: asyncio.create_task(read(table.watch(seat, None, table.watcher(seat))))
            for seat in (mover, other)
        }
        await asyncio.sleep(0.05)
        assert table.connected() == {mover: 1, other: 1}
        # The other seat's stream ends while the move is stored (a store that takes its time,
        # as a network database does).
        store = storage.submit
        storage.submit = delayed(store, 0.05, readers[other].cancel)  # type: ignore[method-assign]
        action = safe_move(view(game, mover))
        reply = await table.change(
            lambda _: [Act(mover, action)], lambda done: done.table.view_bytes(mover)
        )
        storage.submit = store  # type: ignore[method-assign]
        await asyncio.sleep(0.05)
        assert table.connected() == {mover: 1}
        shown = game_pb2.View.FromString(reply)
        assert [p.connected for p in shown.players if p.seat == other] == [False]
        readers[mover].cancel()
        await asyncio.gather(*readers.values(), return_exceptions=True)
        lobby.close()
        await lobby.closing()
        await storage.close()

    asyncio.run(main(Path(tempfile.mkdtemp())))


def test_a_heartbeat_tells_the_clock_of_the_stored_update_never_of_one_being_stored() -> None:
    """The turn's clock runs ahead while a change that starts a new turn is stored; a heartbeat
    sent meanwhile (a presence change, a quiet stream's beat) gives the clock of the latest
    stored update, which its number names, and the new one once the change is stored."""
    from rami.engine import view
    from rami.engine.policies import safe_move
    from rami.v1 import table_service_pb2

    def told(table: Table) -> tuple[int, int | None]:
        beat = table_service_pb2.WatchResponse.FromString(table._heartbeat()).heartbeat
        clock = beat.turn_deadline.ToNanoseconds() if beat.HasField("turn_deadline") else None
        return beat.number, clock

    async def main(tmp: Path) -> None:
        storage = await open_storage(tmp)
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table, _ = await lobby.create(
            name="t",
            variant="tallage",
            options=Options(players=2, turn_seconds=60),
            private=False,
            hand_analysis=True,
            decks=[],
            client="test",
        )
        assert told(table) == (0, None)  # waiting: no turn is timed
        await table.change(joining("Ana"), lambda _: None)
        await table.change(joining("Bo"), lambda _: None)
        game = table.state.game
        assert game is not None and table.deadline is not None
        mover = game.turn
        if game.phase == Phase.DRAW:  # (tallage's dealer starts with 15 cards, and discards)
            await table.change(lambda s: [Act(mover, safe_move(view(game, mover)))], lambda _: None)
        before = (table.number, int(table.deadline * 1e9))
        assert told(table) == before
        store = storage.submit
        during: list[tuple[int, int | None]] = []
        # Told as the change is handed to storage: the next turn's clock has started, in memory.
        storage.submit = delayed(  # type: ignore[method-assign]
            store, 0.01, lambda: during.append(told(table))
        )
        await table.change(lambda s: [Act(mover, safe_move(view(game, mover)))], lambda _: None)
        storage.submit = store  # type: ignore[method-assign]
        assert game.turn != mover  # the discard passed the turn: a new clock
        assert during == [before]
        after = (table.number, int(table.deadline * 1e9))
        assert after[0] == before[0] + 1 and after[1] > before[1]
        assert told(table) == after
        lobby.close()
        await lobby.closing()
        await storage.close()

    asyncio.run(main(Path(tempfile.mkdtemp())))


def test_a_lobbys_tables_share_one_heartbeat_timer_and_each_quiet_stream_gets_its_beats() -> None:
    """One timer sweeps every watched table of a lobby (a timer per table costs each some
    500 bytes): each quiet stream gets its heartbeats, a closed table or one left without
    watchers leaves the sweep, and the others' beats go on."""

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            storage = await open_storage(Path(tmp))
            lobby = Lobby(storage, LobbyConfig(), replace(QUIET, heartbeat=0.2))
            a, b, c = [await new_table(lobby) for _ in range(3)]
            assert a.heart is b.heart is lobby.heart
            streams = {t: aiter(t.watch(None, None)) for t in (a, b, c)}
            for s in streams.values():
                number, _ = await anext(s)  # the snapshot
                assert number == 0
            assert lobby.heart._tables == {a, b, c}

            async def beat(t: Table) -> None:
                number, data = await asyncio.wait_for(anext(streams[t]), 2.0)
                assert number == 0 and data  # a heartbeat: no update number

            await asyncio.gather(beat(a), beat(b), beat(c))
            a.close()
            await streams[c].aclose()  # its only stream ends
            await beat(b)
            await beat(b)
            assert lobby.heart._tables == {b}
            await streams[b].aclose()
            await asyncio.sleep(0.25)  # a sweep finds no table watched: no timer left armed
            assert lobby.heart._tables == set() and lobby.heart._timer is None
            lobby.close()
            await lobby.closing()
            await storage.close()

    run(main)


def test_a_table_behind_its_stored_log_loads_it_again_instead_of_conflicting_for_ever(
    backend: Backend,
) -> None:
    """An append stored whose answer was lost leaves the table one update behind its log:
    its next append conflicts. The table is then dropped and loaded again from the log (its
    streams end TABLE_MOVED, "call again in a moment"), instead of refusing every command."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby)
        await table.change(joining("Ana"), lambda _: None)
        # Update 2, stored; its answer never reached the table.
        behind = Append(table.table_id, 2, [Chat(0, "hello").to_dict()], "waiting", None, None)
        await storage.append(behind)
        with pytest.raises(Unavailable) as info:
            await table.change(lambda s: [Chat(0, "again")], lambda _: None)
        assert info.value.reason == "TABLE_MOVED"
        assert table.closed
        again = await lobby.get(table.table_id)
        assert again is not table and again.number == 2
        assert await again.change(joining("Bo"), lambda done: done.first) == 3
        assert backend.stored_numbers(table.table_id) == [1, 2, 3, 4]  # Bo's join, the start
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def _bots_play_on_after_an_outage(
    backend: Backend, config: TableConfig, refusals: int, refused_before: int = 0
) -> None:
    """Two greedy bots start a game of simple; the store refuses ``refusals`` of their moves
    (after ``refused_before`` refusals in a row already); once it is back, they play on."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), config)
        table = await new_table(lobby, "simple", 2)
        failures = []

        def outage() -> None:
            failures.append(1)
            raise backend.io_error()

        await table.change(lambda s: [AddBot(s.free_seat(None), "b0", "greedy")], lambda _: None)
        await table.change(
            lambda s: [AddBot(s.free_seat(None), "b1", "greedy"), Start(SEED)], lambda _: None
        )
        started = table.number
        table._refused = refused_before
        storage.before_commit = outage  # the bots' first moves meet the outage
        while len(failures) < refusals:
            await asyncio.sleep(0.01)
        storage.before_commit = None  # the store is back
        for _ in range(400):
            if table.number > started + 2:
                break
            await asyncio.sleep(0.05)
        assert table.number > started + 2, "the bots did not play on after the outage"
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_an_automatic_move_refused_by_a_storage_outage_is_tried_again(backend: Backend) -> None:
    """Bots' moves (and the next deal, the clock, a drop) are made by the server: one that the
    store refused is tried again once it is back, or the table would wait for ever."""
    fast = TableConfig(
        bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=60.0, storage_retry=0.05
    )
    _bots_play_on_after_an_outage(backend, fast, refusals=3)


def test_a_change_whose_storing_cannot_be_known_reloads_the_table_from_its_log(
    postgres_url: str, tmp_path: Path
) -> None:
    """The commit's answer is lost and the log cannot be read to tell whether it was stored
    (PostgreSQL out of reach for a moment): the caller hears that it may or may not have
    been, and the table is loaded again from its log, where it was."""
    # (A SQLite commit's answer is never lost: it is given in this process.)
    backend = backend_for("postgres", tmp_path, lambda: postgres_url)

    async def main() -> None:
        import psycopg

        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby)
        await table.change(joining("Ana"), lambda _: None)

        def lost() -> None:
            raise psycopg.OperationalError("server closed the connection unexpectedly")

        storage.after_commit = lost
        storage.before_check = lost
        with pytest.raises(Unavailable) as info:
            await table.change(joining("Bo"), lambda _: None)
        assert info.value.reason == "STORAGE_FAILED" and "may or may not" in str(info.value)
        storage.after_commit = storage.before_check = None
        assert table.closed
        again = await lobby.get(table.table_id)
        assert again is not table and again.number == 3 and again.status == PLAYING
        assert await again.change(lambda s: [Chat(0, "hi")], lambda done: done.first) == 4
        lobby.close()
        await lobby.closing()
        await storage.close()

    run(main)


def test_a_store_out_of_reach_is_logged_as_a_warning_once_not_as_an_error(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/operations.md: a change that meets the store out of reach is refused UNAVAILABLE
    STORAGE_FAILED and logged as a warning (an outage, which passes, not a bug of the
    server's); a change nobody waits for that fails so is not logged again as an error. A
    failure that is no outage stays an error."""

    async def main() -> None:
        storage = await backend.open()
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby)
        await table.change(joining("Ana"), lambda _: None)
        caplog.set_level(logging.INFO, logger="rami.server")

        def fail() -> None:
            raise backend.io_error()

        storage.before_commit = fail
        with pytest.raises(Unavailable) as info:
            await table.change(joining("Bo"), lambda _: None)
        assert info.value.reason == "STORAGE_FAILED"
        table.change_later(joining("Cy"))  # as a bot's move or the clock's is made
        await table.read(lambda _: None)  # after it
        told = [r for r in caplog.records if r.name == "rami.server.table"]
        warned = [r.getMessage() for r in told if r.levelname == "WARNING"]
        assert len(warned) == 2 and all("nothing was changed" in m for m in warned), warned
        assert not [r for r in told if r.levelno >= logging.ERROR], [
            (r.levelname, r.getMessage()) for r in told
        ]

        def bug() -> None:
            raise ZeroDivisionError

        caplog.clear()
        storage.before_commit = bug
        with pytest.raises(Unavailable):
            await table.change(joining("Bo"), lambda _: None)
        assert [r.levelname for r in caplog.records if r.name == "rami.server.table"] == ["ERROR"]
        storage.before_commit = None
        assert await table.change(joining("Bo"), lambda done: done.first) == 2
        await storage.close()

    run(main)


def test_a_sqlite_disk_full_is_said_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """A full disk was logged as "storing updates 65 to 65 failed (OperationalError)", which
    does not say what to do; SQLite's own words say it."""

    async def main(tmp: Path) -> None:
        storage = await open_storage(tmp)
        lobby = Lobby(storage, LobbyConfig(), QUIET)
        table = await new_table(lobby)
        caplog.set_level(logging.INFO, logger="rami.server")

        def full() -> None:
            raise sqlite3.OperationalError("database or disk is full")

        storage.before_commit = full
        with pytest.raises(Unavailable):
            await table.change(joining("Ana"), lambda _: None)
        said = [r.getMessage() for r in caplog.records if r.name == "rami.server.table"]
        assert any("failed (OperationalError: database or disk is full)" in m for m in said), said
        storage.before_commit = None
        await storage.close()

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))


def test_a_call_while_a_reloaded_table_cannot_be_loaded_hears_unavailable_not_not_found() -> None:
    """A table dropped to be loaded again (its log ahead of it) while the store is out of
    reach: a client told to call again in a moment is refused UNAVAILABLE STORAGE_FAILED,
    never NOT_FOUND (which a bot takes as final), and the table loads once the store is back."""

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            storage = await open_storage(Path(tmp))
            lobby = Lobby(storage, LobbyConfig(), QUIET)
            table = await new_table(lobby)
            await table.change(joining("Ana"), lambda _: None)
            behind = Append(table.table_id, 2, [Chat(0, "x").to_dict()], "waiting", None, None)
            await storage.append(behind)
            claim = storage.claim

            async def out_of_reach(table_id: str) -> Any:
                await asyncio.sleep(0.2)
                raise sqlite3.OperationalError("disk I/O error")

            storage.claim = out_of_reach  # type: ignore[method-assign]
            with pytest.raises(Unavailable):
                await table.change(lambda s: [Chat(0, "again")], lambda _: None)
            await asyncio.sleep(0.05)  # the reload's load is under way
            with pytest.raises(Unavailable) as info:
                await lobby.get(table.table_id)
            assert info.value.reason == "STORAGE_FAILED"
            storage.claim = claim  # type: ignore[method-assign]
            await asyncio.sleep(0.3)
            again = await lobby.get(table.table_id)
            assert again.number == 2
            lobby.close()
            await lobby.closing()
            await storage.close()

    run(main)


def test_automatic_moves_are_still_tried_after_a_very_long_outage(backend: Backend) -> None:
    """The pause before trying again stops doubling at its cap: after hours of refusals (here
    1,024 in a row) the next is still tried, and the bots play on once the store is back."""
    fast = TableConfig(
        bot_delay=0.0,
        round_pause=0.0,
        away_delay=0.0,
        heartbeat=60.0,
        storage_retry=0.001,
        storage_retry_most=0.05,
    )
    # As after some 8 hours of refusals at the 30 s cap.
    _bots_play_on_after_an_outage(backend, fast, refusals=1, refused_before=1024)


def test_a_stream_whose_caller_goes_while_it_opens_leaves_no_watcher() -> None:
    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            storage = await open_storage(Path(tmp))
            lobby = Lobby(storage, LobbyConfig(), QUIET)
            table = await new_table(lobby)
            task: asyncio.Future[Any] | None = None
            real = Table._open

            def open_as_the_caller_goes(self: Table, *args: Any, **kwargs: Any) -> Any:
                out = real(self, *args, **kwargs)
                assert task is not None
                task.cancel()  # the caller goes just as its stream opens
                return out

            Table._open = open_as_the_caller_goes  # type: ignore[method-assign]
            try:
                stream = table.watch(None, None)
                task = asyncio.ensure_future(anext(stream))
                await asyncio.gather(task, return_exceptions=True)
                await stream.aclose()
            finally:
                Table._open = real  # type: ignore[method-assign]
            assert not table.watchers
            await asyncio.sleep(0)
            lobby.close()
            await lobby.closing()
            await storage.close()

    run(main)


def test_a_seat_asked_of_a_finished_game_is_refused_in_words_of_its_end() -> None:
    """JoinTable or AddBot at a table whose game is over: TABLE_STARTED, as once it began,
    but the words say the game is over, not that it has started."""
    state = TableState("t1", TableSpec("t", "portuguese", Options(players=2, rounds=1)))
    state.apply(Join(0, "Ana", "h0"))
    state.apply(Join(1, "Bo", "h1"))
    state.apply(Start(SEED))
    with pytest.raises(Precondition, match="has started") as started:
        state.free_seat(None)
    rng = random.Random(0)
    for _ in range(2000):  # a round of strong against itself ends well before
        if state.status == FINISHED:
            break
        game = state.game
        assert game is not None
        if game.phase == Phase.ROUND_OVER:
            state.apply(NextDeal())
            continue
        seat = game.turn
        state.apply(Act(seat, POLICIES["strong"](view(game, seat), rng)))
    assert state.status == FINISHED
    with pytest.raises(Precondition, match="the game is over") as over:
        state.free_seat(None)
    assert over.value.reason == started.value.reason == "TABLE_STARTED"


def drop_after(seconds: float) -> TableConfig:
    """Tables that drop a gone player after ``seconds`` and make no other move of their own."""
    return TableConfig(
        bot_delay=60.0, round_pause=60.0, away_delay=60.0, heartbeat=60.0, drop_grace=seconds
    )


async def ana_and_bo(lobby: Lobby) -> Table:
    """A game of simple rami between Ana (seat 0) and Bo (seat 1), started."""
    table, _ = await lobby.create(
        name="t",
        variant="simple",
        options=Options(players=2),
        private=False,
        hand_analysis=False,
        decks=[],
        client="test",
    )
    await table.change(lambda s: [Join(0, "Ana", "h0")], lambda _: None)
    await table.change(lambda s: [Join(1, "Bo", "h1"), Start(SEED)], lambda _: None)
    return table


def test_a_stream_ending_while_a_change_is_stored_leaves_the_drop_armed_for_the_stored_turn(
    tmp_path: Path,
) -> None:
    """Ana plays by Act alone; her discard is being stored when Bo's stream ends, and the store
    then refuses it. The drop is armed by the state as stored, Ana's turn: once the grace has
    passed she is away (the server plays for her), and the table is not stuck on her."""
    grace = drop_after(0.3)

    async def main() -> None:
        storage = await open_storage(tmp_path)
        lobby = Lobby(storage, LobbyConfig(), grace)
        try:
            table = await ana_and_bo(lobby)
            game = table.state.game
            assert game is not None
            ana, bo = game.turn, 1 - game.turn
            bos = table.watcher(bo)
            table._add(bos, False)
            if game.phase == Phase.DRAW:
                await table.change(lambda s: [Act(ana, Draw("stock"))], lambda _: None)
            card = table.state.game.hands[ana][0]  # type: ignore[union-attr]
            answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            submit = storage.submit
            storage.submit = lambda append: answer  # type: ignore[method-assign]
            discard = asyncio.ensure_future(
                table.change(lambda s: [Act(ana, Discard(card))], lambda _: None)
            )
            for _ in range(5):
                await asyncio.sleep(0)
            assert table._dirty
            table._remove(bos)  # Bo's stream ends while the discard is being stored
            answer.set_exception(OSError("the store is out of reach"))
            done = await asyncio.gather(discard, return_exceptions=True)
            storage.submit = submit  # type: ignore[method-assign]
            assert isinstance(done[0], Refusal), done
            assert table.state.game.turn == ana  # type: ignore[union-attr]
            await asyncio.sleep(grace.drop_grace * 5)
            assert table.state.seats[ana].away
        finally:
            lobby.close()
            await lobby.closing()
            await storage.close()

    run(main)


def test_a_player_gone_while_a_change_is_stored_is_dropped_a_grace_after_going(
    tmp_path: Path,
) -> None:
    """Both players' streams are open when Ana's turn begins. Bo's chat is being stored (the
    store takes its time) when Ana's stream ends: her grace counts from her going, not from
    when the chat was stored, so a store slower than the grace drops her as soon as it
    answers, not a whole grace later."""
    grace = drop_after(0.5)

    async def main() -> None:
        storage = await open_storage(tmp_path)
        lobby = Lobby(storage, LobbyConfig(), grace)
        try:
            table = await ana_and_bo(lobby)
            streams = {seat: table.watcher(seat) for seat in (0, 1)}
            for w in streams.values():
                table._add(w, False)
            game = table.state.game
            assert game is not None
            ana = game.turn
            for _ in range(2):  # a turn of each: Ana's next one begins with nobody gone
                mover = game.turn
                if game.phase == Phase.DRAW:
                    await table.change(lambda s, m=mover: [Act(m, Draw("stock"))], lambda _: None)
                card = game.hands[mover][0]
                await table.change(lambda s, m=mover, c=card: [Act(m, Discard(c))], lambda _: None)
            assert game.turn == ana and not table._gone
            submit = storage.submit
            # The store is slower than the grace.
            storage.submit = delayed(submit, grace.drop_grace * 1.6)  # type: ignore[method-assign]
            chat = asyncio.ensure_future(
                table.change(lambda s: [Chat(1 - ana, "hello")], lambda _: None)
            )
            for _ in range(5):
                await asyncio.sleep(0)
            assert table._dirty
            table._remove(streams[ana])  # Ana's stream ends while the chat is being stored
            storage.submit = submit  # type: ignore[method-assign]  # (the drop's own: at once)
            await chat
            await asyncio.sleep(grace.drop_grace * 0.5)
            assert table.state.seats[ana].away
        finally:
            lobby.close()
            await lobby.closing()
            await storage.close()

    run(main)


def _throw_back(state: TableState) -> None:
    """The seat on turn takes the top discard and throws it straight back (portuguese allows
    it): a round played so draws nothing from the stock, and the stock never runs out."""
    g = state.game
    assert g is not None and g.phase == Phase.DRAW
    seat = g.turn
    top = g.discard[-1]
    state.apply(Act(seat, Draw("discard")))
    state.apply(Act(seat, Discard(top)))


def test_a_round_of_discards_thrown_back_ends_void_at_the_tables_turn_cap(tmp_path: Path) -> None:
    # Two seats held by one client could otherwise grow a table's log, its memory and its
    # record for ever without breaking a rule or a rate limit.
    async def main() -> TableSpec:
        storage = await open_storage(tmp_path)
        lobby = Lobby(storage, LobbyConfig(), TableConfig())
        table = await new_table(lobby, "portuguese")
        spec = table.state.spec
        lobby.close()
        await lobby.closing()
        await storage.close()
        return spec

    spec = run(main)
    cap = spec.turn_cap
    assert cap == table_turn_cap(Options(players=2)) == 500
    assert TableSpec.from_dict(spec.to_dict()) == spec
    state = TableState("t1", spec)
    state.apply(Join(0, "Ana", "h0"))
    state.apply(Join(1, "Bo", "h1"))
    state.apply(Start(SEED))
    g = state.game
    assert g is not None
    stock = len(g.stock)
    for _ in range(cap - 1):
        _throw_back(state)
    assert g.round == 1 and g.phase == Phase.DRAW and len(g.stock) == stock
    _throw_back(state)
    assert g.phase == Phase.ROUND_OVER
    assert g.results[-1].ending == "void" and g.totals == [0, 0]


def test_a_capped_rounds_record_replays_and_an_older_table_keeps_no_cap() -> None:
    spec = replace(TableSpec("t", "portuguese", Options(players=2, rounds=2)), turn_cap=6)
    state = TableState("t1", spec)
    state.apply(Join(0, "Ana", "h0"))
    state.apply(Join(1, "Bo", "h1"))
    state.apply(Start(SEED))
    for n in (1, 2):
        for _ in range(6):
            _throw_back(state)
        assert state.game is not None and state.game.results[-1].ending == "void"
        if n == 1:
            state.apply(NextDeal())
    assert state.game is not None and state.game.phase == Phase.GAME_OVER
    doc = record(state)
    assert doc["turn_cap"] == 6
    game = replay_record(json.loads(json.dumps(doc)))
    assert [r.ending for r in game.results] == ["void", "void"]
    # Without the cap the same moves are not a complete game: the record says what it was.
    with pytest.raises(RecordError):
        replay_record({**doc, "turn_cap": 0})
    with pytest.raises(RecordError, match="turn cap"):
        replay_record({**doc, "turn_cap": -1})
    # A table stored before the cap has none: its stored log replays as it was played, a
    # round of 600 turns thrown back included.
    stored = spec.to_dict()
    del stored["turn_cap"]
    assert TableSpec.from_dict(stored).turn_cap == 0
    old = TableState("t2", TableSpec.from_dict(stored))
    for entry in (Join(0, "Ana", "h0"), Join(1, "Bo", "h1"), Start(SEED)):
        old.apply(entry)
    for _ in range(600):
        _throw_back(old)
    again = rebuild("t2", stored, [e.to_dict() for e in old.entries])
    assert again.game is not None and again.game.turn_index == 600
    assert snapshot(again) == snapshot(old)


def test_a_table_whose_spec_has_a_field_this_code_does_not_know_is_not_played() -> None:
    # Written by newer code (a cluster upgraded a server at a time): played as this code
    # reads it, without the field's rule, its game could part from what its watchers were
    # told (as servers of code before the turn cap did with capped rounds).
    spec = replace(TableSpec("t", "portuguese", Options(players=2)), turn_cap=6).to_dict()
    entries = [Join(0, "Ana", "h0").to_dict(), Join(1, "Bo", "h1").to_dict()]
    assert rebuild("t1", spec, entries).spec.turn_cap == 6
    with pytest.raises(NewerTable, match=r"table t1: its stored spec has a_rule, b_rule"):
        rebuild("t1", {**spec, "b_rule": 1, "a_rule": True}, entries)
    # The directory lists it all the same (its listing reads what it knows).
    assert TableSpec.from_dict({**spec, "a_rule": True}).turn_cap == 6


def test_a_log_played_past_its_cap_by_an_older_server_is_rebuilt_as_it_was_played(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A cluster's servers upgraded one at a time: a table made by a server with the cap was
    # then played by one of older code, which reads no cap, past it. Rebuilt with its stored
    # cap, its round would end void where its log goes on, and the table would not load.
    spec = replace(TableSpec("t", "portuguese", Options(players=2)), turn_cap=6)
    old = TableState("t1", replace(spec, turn_cap=0))
    for entry in (Join(0, "Ana", "h0"), Join(1, "Bo", "h1"), Start(SEED)):
        old.apply(entry)
    for _ in range(10):
        _throw_back(old)
    entries = [e.to_dict() for e in old.entries]
    checkpoints = Checkpoints(every=3, keep=4)
    with caplog.at_level(logging.WARNING, logger="rami.server"):
        again = rebuild("t1", spec.to_dict(), entries, checkpoints=checkpoints)
    assert again.spec.turn_cap == 0
    assert again.game is not None and again.game.turn_index == 10
    assert snapshot(again) == snapshot(old)
    assert "past its turn cap of 6" in caplog.text
    # The checkpoints are the uncapped table's: a replay from them goes on as the log did.
    start = checkpoints.before(len(entries))
    assert start is not None and start.spec.turn_cap == 0
    # The game's last round too, which the cap ends with the game.
    last = replace(spec, options=Options(players=2, rounds=1))
    old = TableState("t4", replace(last, turn_cap=0))
    for entry in (Join(0, "Ana", "h0"), Join(1, "Bo", "h1"), Start(SEED)):
        old.apply(entry)
    for _ in range(10):
        _throw_back(old)
    again = rebuild("t4", last.to_dict(), [e.to_dict() for e in old.entries])
    assert again.game is not None and again.game.turn_index == 10
    assert snapshot(again) == snapshot(old)
    # A log that stops at the cap, as a capped server plays it, keeps its cap; and a log
    # whose entry is refused for another reason is still a damaged log.
    capped = TableState("t2", spec)
    for entry in (Join(0, "Ana", "h0"), Join(1, "Bo", "h1"), Start(SEED)):
        capped.apply(entry)
    for _ in range(6):
        _throw_back(capped)
    stopped = rebuild("t2", spec.to_dict(), [e.to_dict() for e in capped.entries])
    assert stopped.spec.turn_cap == 6 and stopped.game is not None
    assert stopped.game.results[-1].ending == "void"
    damaged = [*entries[:5], {**entries[5], "seat": 1 - entries[5]["seat"]}]
    with pytest.raises(EntryError, match="stored entry 6"):
        rebuild("t3", spec.to_dict(), damaged)


@pytest.mark.parametrize("variant", ["portuguese", "simple", "tallage"])
@pytest.mark.parametrize("rebuilds", [0, 3, 6, 20])
def test_a_round_that_draws_from_the_stock_every_turn_ends_by_the_rules_not_the_cap(
    variant: str, rebuilds: int
) -> None:
    options = Options(players=2, stock_rebuilds=rebuilds)
    cap = table_turn_cap(options)
    state = TableState("t1", replace(TableSpec("t", variant, options), turn_cap=cap))
    for entry in (Join(0, "Ana", "h0"), Join(1, "Bo", "h1"), Start(SEED)):
        state.apply(entry)
    g = state.game
    assert g is not None
    while g.phase != Phase.ROUND_OVER:
        seat = g.turn
        if g.phase == Phase.DRAW:
            state.apply(Act(seat, Draw("stock")))
        else:
            state.apply(Act(seat, Discard(g.drawn or g.hands[seat][0])))
    # Every rebuild the table's option allows, then void as the stock runs out once more.
    assert g.results[-1].ending == "void" and g.rebuilds == rebuilds
    assert g.turn_index < cap
