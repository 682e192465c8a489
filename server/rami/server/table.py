"""A table as an actor: one queue, one task, one pipeline for every change.

Whoever changes a table (a seat's command, a built-in bot, the clock, the next deal, chat, a
join) sends a :class:`Change` to its queue, and the table's task runs each change whole, one
at a time, through the same steps (:meth:`Table._change`). At an idle table, the caller of
:meth:`Table.change` runs those steps itself, and changes sent meanwhile queue behind it (the
hand-off to the task and back would cost two turns of the event loop); should the caller be
cancelled while its change is stored, the task takes over its step 4 (:class:`Settle`).

1. **plan**: the change's ``plan`` reads the state as it is now, checks the seat's token and
   the number its command was decided on, and returns the entries to apply (a change and
   everything it implies: the last join and the start it causes are one change);
2. **apply** each entry on the state (``tablestate.py``, the core), collecting its events and
   encoding the update every watched seat is to see; a refused entry raises, and the state is
   put back as it was;
3. **store**: ``await`` the storage's append of those entries, carrying the number they start
   at; if it fails, the state is put back, the change is refused, and nobody has seen it;
4. **commit**: the table's number moves on; the change's acknowledgement is noted;
5. **fan out** the updates to every watcher's mailbox, then re-arm the automatic move;
6. **acknowledge**: the change's ``reply`` makes the caller's answer.

Reading a table (a watcher's first messages, a hand to analyse, a record) is a :class:`Read`
on the same queue, so nobody ever observes a state that is not stored. Outside the task, only
what is committed is read: the table's ``number`` and ``summary``.

A stream resumed with ``after`` is sent what it missed by a replay of the log that runs
outside the table's task: the read that opens the stream takes the log up to the number now
committed and adds the watcher (so every later update reaches its mailbox: no gap, no
duplicate); the stream's own task then replays, from the newest checkpoint at or before
``after`` (:class:`Checkpoints`, a few forks of the state kept every so many updates), in
slices of a few milliseconds with a turn of the event loop between them (and the client's
time budget, for a resume from far back: see :class:`Pace`), and the table serves its
commands meanwhile.

A watcher whose mailbox is full is cut off (it may resume from its last number); it never
slows the table or the others. The table plays for the seats nobody is at: built-in bots,
seats whose player left, and the turn clock, which plays a safe move when it runs out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any, Generic, NoReturn, TypeVar

from rami.engine import POLICIES, Action, Phase, RuleError, View, view
from rami.engine import events as engine_events
from rami.engine.policies import EXPERT_BUDGET, safe_move
from rami.engine.values import builder

from .convert import (
    ViewEncoder,
    encode_heartbeat,
    encode_stream_note,
    encode_update,
    encode_updates,
    snapshot_head,
    update_head,
)
from .entries import Act, Chat, Entry, Join, Leave, NextDeal, Return, Start
from .refusals import Aborted, Exhausted, Invalid, Refusal, Unauthenticated, Unavailable
from .storage import (
    Append,
    Conflict,
    Fenced,
    Storage,
    Unknown,
    append_of,
    failure_words,
    is_outage,
)
from .tablestate import (
    FINISHED,
    OVER,
    PLAYING,
    WAITING,
    Event,
    GameStarted,
    PlayerJoined,
    PlayerLeft,
    PlayerReturned,
    TableClosed,
    TableState,
    TableSummary,
    load_state,
)
from .thinking import OFF_LOOP, Thinker

__all__ = [
    "Change",
    "Checkpoints",
    "Committed",
    "Pace",
    "Read",
    "Table",
    "TableConfig",
    "Watcher",
    "moved",
    "new_seed",
    "safe_move",
    "stale",
    "start_entry",
]

log = logging.getLogger("rami.server.table")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TableConfig:
    """Timings and limits shared by every table of a server."""

    bot_delay: float = 0.6
    round_pause: float = 4.0
    away_delay: float = 0.3
    heartbeat: float = 15.0
    watcher_queue: int = 256
    #: A fork of the state is kept every this many updates, the newest ``checkpoints`` of
    #: them: a resume replays at most this many updates more than it missed.
    checkpoint_every: int = 256
    checkpoints: int = 3
    #: The work of one slice of a replay, in seconds, before the event loop gets a turn.
    replay_slice: float = 0.002
    #: Seconds a seat's player may be gone (no Watch or Play stream of the seat open) during
    #: a game before, on the seat's turn, the server marks the seat away as a LeaveTable
    #: would, and plays for it (its token brings it back, as ever).
    drop_grace: float = 30.0
    #: Seconds before an automatic move (a bot's, the next deal, the clock's, a drop) that
    #: the store refused is tried again; doubled at each refusal in a row, up to
    #: ``storage_retry_most``.
    storage_retry: float = 1.0
    storage_retry_most: float = 30.0
    #: Worker processes that decide the moves of the bots that search (``expert``), for the
    #: whole server (``thinking.py``); and the expert's seconds per move.
    bot_workers: int = 1
    expert_budget: float = EXPERT_BUDGET


#: What a watcher's stream sends: the number of the update it carries (0: none, a heartbeat or,
#: on a Play stream, a refusal) and the response, encoded (see ``wire``).
Item = tuple[int, bytes]
#: What a watcher's queue carries: items, or None when the server shuts down.
Outgoing = Item | None


class Mailbox:
    """A watcher's bounded queue: ``asyncio.Queue``'s ``put_nowait``, ``get``, ``get_nowait``
    and ``empty`` for one reader, without the three more deques and the event that a Queue
    holds (some 2.5 KB per watcher, and a server keeps thousands of watchers). The items are
    a list, not a deque: a deque holds a block of 64 slots (some 500 bytes) even empty, and a
    mailbox holds an item or two at a time, each taken at once. ``idle``
    counts the table's heartbeat sweeps since the last item put (see
    :meth:`Table.heartbeats`)."""

    __slots__ = ("_items", "_limit", "_waiter", "idle")

    def __init__(self, limit: int) -> None:
        self._items: list[Outgoing] = []
        self._limit = limit
        self._waiter: asyncio.Future[None] | None = None
        self.idle = 0

    def put_nowait(self, item: Outgoing) -> None:
        """Add ``item``, or raise ``asyncio.QueueFull`` when ``limit`` items wait already."""
        if len(self._items) >= self._limit:
            raise asyncio.QueueFull
        self._items.append(item)
        self.idle = 0
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def empty(self) -> bool:
        """True when no item waits."""
        return not self._items

    def get_nowait(self) -> Outgoing:
        """The oldest item, or ``asyncio.QueueEmpty``."""
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.pop(0)

    async def get(self) -> Outgoing:
        """The oldest item, waiting for one (no timer per wait: the table's heartbeats put
        an item in a mailbox that stays quiet)."""
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._items.pop(0)


class Heartbeats:
    """The heartbeat sweeps of many tables on one timer: every half ``interval``, each table
    with watchers sends a heartbeat to those that were sent nothing for two sweeps
    (:meth:`Table.heartbeats`). A lobby holds one for all its tables: a timer armed per
    watched table costs it some 500 bytes, where the set of tables to sweep costs a few dozen."""

    __slots__ = ("_loop", "_tables", "_timer", "interval")

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._tables: set[Table] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def add(self, table: Table) -> None:
        """Sweep ``table`` from now on, until it has no watchers left or is closed."""
        self._tables.add(table)
        loop = asyncio.get_running_loop()
        if self._timer is None or self._loop is not loop:  # (a timer of a loop that ended)
            self._loop = loop
            self._timer = loop.call_later(self.interval / 2, self._sweep)

    def discard(self, table: Table) -> None:
        """Sweep ``table`` no more."""
        self._tables.discard(table)

    def _sweep(self) -> None:
        self._timer = None
        try:
            for table in list(self._tables):
                try:
                    swept = table.heartbeats()
                except Exception:  # a bug of one table's: the others' beats go on
                    log.exception("table %s: heartbeats failed", table.table_id)
                    swept = False
                if not swept:
                    self._tables.discard(table)
        finally:
            if self._tables and self._loop is not None and not self._loop.is_closed():
                self._timer = self._loop.call_later(self.interval / 2, self._sweep)


@dataclass(eq=False, slots=True)
class Watcher:
    """One open Watch (or Play) stream."""

    seat: int | None
    queue: Mailbox
    #: Whose stream it is: the hash of the token that opened it, for a seat's stream ("" for
    #: a spectator's). The stream follows that player: to a new number when a start renumbers
    #: the seats, and it ends when the token proves no seat any more (left before the game).
    holder: str = ""
    cut: bool = False
    #: A newer stream of the same seat opened: this one ends (ABORTED TAKEN_OVER).
    taken: bool = False
    #: Its player left the seat (before the game): the stream ends (UNAUTHENTICATED).
    left: bool = False
    last: int = 0
    #: Play streams: the update number each accepted command became -> the command's id.
    acks: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Committed:
    """What a change became: its updates' numbers, and the table that now holds them."""

    table: Table
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class Change(Generic[T]):
    """A change of a table: ``plan`` returns the entries to apply (or raises a refusal, or
    returns none for a change that no longer applies); ``reply`` answers once they are
    stored. ``ack`` is the Play stream's watcher and command id, noted before the update
    reaches the stream. ``failed``, when given, is told a refusal or error in the table's
    task, instead of the caller through its future (which then has no result: a caller
    that does not wait for it)."""

    plan: Callable[[TableState], Sequence[Entry]]
    reply: Callable[[Committed | None], T]
    ack: tuple[Watcher, int] | None = None
    failed: Callable[[Exception], None] | None = None


class Arrival:
    """A seat's stream opening (see :meth:`Table.arrival`): :meth:`done` ends it, once."""

    __slots__ = ("_table", "holder")

    def __init__(self, table: Table, holder: str) -> None:
        self._table: Table | None = table
        self.holder = holder

    def done(self) -> None:
        """The stream is open, or will never be (again: nothing)."""
        table, self._table = self._table, None
        if table is not None:
            table._arrived(self.holder)


@dataclass(frozen=True, slots=True)
class Read(Generic[T]):
    """A look at a table between two changes."""

    run: Callable[[TableState], T]


@dataclass(slots=True)
class _Staged(Generic[T]):
    """A change applied in memory and handed to storage, not committed yet: what its commit
    (or its undoing) needs."""

    job: Change[T]
    first: int
    entries: Sequence[Entry]
    #: The turn's clock before the change, put back if it is not stored.
    clock: tuple[float | None, tuple[int, int] | None]
    updates: list[tuple[int, bytes, dict[int | None, bytes]]]
    events_of: list[list[Event]]
    connected: dict[int, int]
    renumbered: dict[int, int] | None
    #: Done when the storage's transaction has ended: None once stored, or its error.
    stored: asyncio.Future[None]


@dataclass(frozen=True, slots=True)
class Settle(Generic[T]):
    """A change its caller ran, handed to storage, and left before its answer (the caller was
    cancelled): the table's task waits for the answer and commits or undoes it, first thing."""

    staged: _Staged[T]


Job = Change[Any] | Read[Any] | Settle[Any]

#: The entries that change no seat, token or option: the moves, the next deal, chat (nearly
#: every change is one of them alone).
_PLAIN = frozenset({Act, NextDeal, Chat})


#: The events the table's log tells (see ``Table._log_events``).
_LOGGED = frozenset(
    {PlayerJoined, PlayerLeft, PlayerReturned, GameStarted, TableClosed, engine_events.GameEnded}
)


def _plain(entries: Sequence[Entry]) -> bool:
    """True when every one of ``entries`` is a move, a next deal or chat."""
    if len(entries) == 1:
        return type(entries[0]) in _PLAIN
    return all(type(e) in _PLAIN for e in entries)


def _read(answer: asyncio.Future[Any]) -> None:
    """Read a storage answer's outcome (see :meth:`Table._put_back`); one that is no refusal of
    the store (an outage, a conflict, a takeover, an answer lost) is a bug's, and is logged."""
    if answer.cancelled():
        return
    error = answer.exception()
    if error is not None and not (
        is_outage(error) or isinstance(error, Conflict | Fenced | Unknown)
    ):
        log.error("a storage append failed (%s: %s)", type(error).__name__, error)


def _unanswered() -> Refusal:
    """What the caller of a change is told when the table stops (the server stops, or the
    table moves) with the change's append handed to storage and not answered: it may yet be
    stored (a commit on its way to a database that hangs goes through when it wakes up), so
    it is neither "nothing changed" nor a call to send again. Memory puts it back; the stored
    log, which the table is loaded from next, has it or not."""
    return Unavailable(
        "STORAGE_FAILED",
        "the table stopped before the store answered: this change may or may not have been "
        "stored; resume the table's stream to see (a retry with the same request id is safe)",
    )


class _Answered(BaseException):
    """The table's task was stopped once the storage had answered its change: the change's
    answer, its reply (committed) or the storage's refusal (put back)."""

    def __init__(self, result: Any = None, error: Exception | None = None) -> None:
        super().__init__()
        self.result = result
        self.error = error


#: Change(...) and Committed(...) at a mutable dataclass's cost (rami.engine.values): one of
#: each for every command.
_change_of = builder(Change)
_committed = builder(Committed)

#: A seat's presence changes logged at INFO in a window of so many seconds (the others of the
#: window at DEBUG).
_PRESENCE_LINES, _PRESENCE_WINDOW = 4, 10.0
#: The most updates one slice of a replay encodes (its memory, whatever the machine's speed).
_SLICE_ITEMS = 128


class Checkpoints:
    """A few states of a table, each a fork taken at a committed number, the newest kept: a
    replay starts from the newest one at or before the update it resumes after, instead of
    from the table's creation. One is taken whenever the table has moved ``every`` updates past
    the newest (on a commit, or while the table is loaded); ``keep`` of them at most. They are
    never changed: a replay forks the one it starts from."""

    __slots__ = ("_kept", "every", "keep")

    def __init__(self, every: int, keep: int) -> None:
        self.every = every
        self.keep = keep
        self._kept: list[TableState] = []  # a few: a list is a tenth of an empty deque

    def offer(self, state: TableState, heading: int | None = None) -> None:
        """Keep a fork of ``state`` (committed) if one is due. ``heading``: the number the
        caller is on its way to (a table being loaded), so that no fork is made that would be
        dropped before it gets there."""
        if self.every <= 0 or self.keep <= 0:
            return
        number = state.number
        newest = self._kept[-1].number if self._kept else 0
        if number < newest + self.every:
            return
        if heading is not None and heading - number >= self.every * self.keep:
            return
        self._kept.append(state.fork())
        while len(self._kept) > self.keep:
            del self._kept[0]

    def clear(self) -> None:
        """Drop every checkpoint (a table being loaded starts again)."""
        self._kept.clear()

    def before(self, number: int) -> TableState | None:
        """The newest checkpoint at or before ``number`` (None: replay from the start)."""
        for state in reversed(self._kept):
            if state.number <= number:
                return state
        return None


class Pace:
    """How a stream's replay shares the server: after each slice, :meth:`slice` is awaited
    with the server's time the slice took (the CPU time of the event loop's thread from the
    start of its work to the last of its updates sent; here: one turn of the event loop);
    :meth:`done` is called once when the replay is over, however it ends. The services pace a
    resume from far back on the client's time budget (``services.py``)."""

    async def slice(self, seconds: float) -> None:
        """Between two slices of a replay (and after the last)."""
        await asyncio.sleep(0)

    def done(self) -> None:
        """The replay is over."""


@dataclass(frozen=True, slots=True)
class _Replay:
    """What a resumed stream missed, taken between two changes: the updates after ``after``,
    up to ``end`` (the number committed then), to replay from ``start`` (a checkpoint, or
    None: the table's creation) by applying ``entries`` (those after ``start``, to ``end``),
    with who was connected and the clock as they were then."""

    start: TableState | None
    entries: list[Entry]
    after: int
    end: int
    seat: int | None
    connected: dict[int, int]
    deadline: float | None
    turn_key: tuple[int, int] | None


#: The least wait before an automatic move, even when the configured delay is 0. Back-to-back
#: moves would keep the event loop from ever waiting: gRPC's poller thread, which completes
#: every message sent, would get the GIL only at each switch interval, and watchers would fall
#: behind a fast table of bots and be cut off.
_LEAST_AUTO_DELAY = 0.001


def new_seed() -> str:
    """A fresh game seed (hex), from the operating system's randomness."""
    return secrets.token_bytes(32).hex()


def start_entry(state: TableState) -> Start:
    """The entry that starts ``state``'s game: dealt fairly from the table's commitment and
    its seats' entropy, or from a fresh game seed at a table made before fair deals."""
    return Start() if state.spec.deal_commitment else Start(new_seed())


class Table:
    """One table: its state, its queue and task, its watchers and its automatic moves."""

    # A server holds thousands of tables, most of them idle: slots keep each a third of the
    # size of the dict its attributes would need.
    __slots__ = (
        "_arriving",
        "_auto",
        "_busy",
        "_connected",
        "_dirty",
        "_encoder_",
        "_gone",
        "_grace",
        "_presence_due",
        "_presence_logged",
        "_queue",
        "_refused",
        "_sent",
        "_stop",
        "_summary",
        "_summary_stale",
        "_task",
        "_thinking",
        "_thought",
        "_turn_began",
        "_turn_key",
        "changed_at",
        "checkpoints",
        "closed",
        "config",
        "deadline",
        "epoch",
        "heart",
        "moved_to",
        "number",
        "on_finished",
        "on_moved",
        "on_reload",
        "state",
        "storage",
        "thinker",
        "told_deadline",
        "watchers",
    )

    def __init__(
        self,
        state: TableState,
        storage: Storage,
        config: TableConfig,
        on_finished: Callable[[Table], None] | None = None,
        checkpoints: Checkpoints | None = None,
        epoch: int = 0,
        on_moved: Callable[[Table, str], None] | None = None,
        thinker: Thinker | None = None,
        heart: Heartbeats | None = None,
        on_reload: Callable[[Table], None] | None = None,
    ) -> None:
        self.state = state
        #: Called when the table's memory may be behind its stored log (an append conflicted,
        #: or its outcome could not be learnt): the owner drops it and loads it again from the
        #: log. Without one, the table closes (its calls then answer TABLE_MOVED).
        self.on_reload = on_reload
        #: Automatic moves the store refused in a row (their retries wait longer each time).
        self._refused = 0
        #: What sweeps the table's watchers for heartbeats (a lobby's tables share one).
        self.heart = heart or Heartbeats(config.heartbeat)
        #: Where the moves of the policies that search (``thinking.OFF_LOOP``) are decided;
        #: without one, they are decided on the event loop as the others are.
        self.thinker = thinker
        #: The move being decided off the loop: (the game's number, the seat), and its task.
        self._thinking: tuple[int, int] | None = None
        self._thought: asyncio.Task[None] | None = None
        #: The epoch of this server's lease on the table: every append carries it.
        self.epoch = epoch
        #: Called when an append finds the lease taken over, with the new owner's address.
        self.on_moved = on_moved
        #: Set when the table moved to another server (its address, '' when unknown): every
        #: stream and call then ends UNAVAILABLE/TABLE_MOVED naming it.
        self.moved_to: str | None = None
        self.storage = storage
        self.config = config
        self.on_finished = on_finished
        #: Forks of the state, for replays (those a load took, or none yet).
        if checkpoints is None:
            checkpoints = Checkpoints(config.checkpoint_every, config.checkpoints)
        self.checkpoints = checkpoints
        #: The number of the latest stored update: all that anyone outside the task may see.
        self.number = state.number
        #: The open streams, in the order they opened (a dict: an empty set holds 216 bytes,
        #: an empty dict 64, and most tables are watched by nobody at any moment).
        self.watchers: dict[Watcher, None] = {}
        #: ``connected()`` as last counted (None: to count again; every change of the
        #: watchers or of a watcher's seat sets it so).
        self._connected: dict[int, int] | None = None
        #: The seats (by the hash of their token) whose stream is opening, and how many: see
        #: :meth:`arrival` (None: none).
        self._arriving: dict[str, int] | None = None
        self.deadline: float | None = None
        #: When this process last committed a change of the table (or loaded it), monotonic.
        self.changed_at = time.monotonic()
        self.closed = False
        self._turn_key: tuple[int, int] | None = None
        self._auto: asyncio.TimerHandle | None = None
        #: Player seats with no stream open, since when (monotonic): the last stream ended,
        #: the player joined and has opened none yet, or this process loaded the table
        #: mid-game. Their turn marks them away once ``config.drop_grace`` has passed since
        #: then and since the turn began (see :meth:`_arm_grace`).
        self._gone: dict[int, float] = {}
        #: The turn the drop grace is counted on, ``(round, turn index, monotonic start)``.
        self._turn_began: tuple[int, int, float] | None = None
        self._grace: asyncio.TimerHandle | None = None
        self._presence_due = False
        #: Each seat's window of presence lines: (its start, lines in it) (see _log_presence).
        self._presence_logged: dict[int, tuple[float, int]] | None = None
        if state.status in (WAITING, PLAYING):
            # Loaded (or made) now: no stream of its players is open yet, whether its game
            # is under way or waits for the seats still free.
            now = time.monotonic()
            self._gone = {i: now for i, seat in enumerate(state.seats) if seat.kind == "player"}
        #: Made at the first view encoded (an idle table, watched by nobody, has none).
        self._encoder_: ViewEncoder | None = None
        #: The table as the lobby lists it, as of ``number`` (made again after a commit, when
        #: asked while no change is under way: it never shows a change not stored yet).
        self._summary: TableSummary = state.summary({})
        self._summary_stale = False
        #: The views the last fan-out sent, encoded, by seat, and what they were built from.
        self._sent: tuple[tuple[int, float | None, dict[int, int]], dict[int | None, bytes]] | None
        self._sent = None
        #: The table's queue: jobs and the futures of their answers, and the task's wait. A
        #: list: it is short (a job per seat at most, mostly), and a table idles with it empty,
        #: where an empty deque holds 600 bytes.
        self._queue: list[tuple[Job, asyncio.Future[Any]]] = []
        #: The table's task while it has jobs (see :meth:`_serve`).
        self._task: asyncio.Task[None] | None = None
        self._busy = False
        #: Done once :meth:`closing` has stopped the table (made when first needed).
        self._stop: asyncio.Future[None] | None = None
        #: True while the state holds entries not stored yet (between apply and commit).
        self._dirty = False
        self._clock()
        #: The turn's deadline as the views of update ``number`` carry it (``deadline`` runs
        #: ahead of it while a change is being stored): what a heartbeat tells.
        self.told_deadline: float | None = self.deadline
        self._schedule()

    @property
    def table_id(self) -> str:
        """The table's id."""
        return self.state.table_id

    @property
    def status(self) -> str:
        """Its status as stored (a change in progress is not committed yet)."""
        return self.summary.status

    @property
    def summary(self) -> TableSummary:
        """The table as the lobby lists it, as of its latest stored update."""
        if self._summary_stale and not self._dirty:
            self._summary, self._summary_stale = self.state.summary({}), False
        connected = self.connected()
        if not connected:
            return self._summary
        players = tuple(
            p if p.connected or connected.get(p.seat, 0) == 0 else replace(p, connected=True)
            for p in self._summary.players
        )
        return replace(self._summary, players=players)

    def connected(self) -> dict[int, int]:
        """Open streams per seat (the caller's to read, not to change)."""
        out = self._connected
        if out is None:
            out = {}
            for w in self.watchers:
                if w.seat is not None:
                    out[w.seat] = out.get(w.seat, 0) + 1
            self._connected = out
        return out

    # -- the queue --------------------------------------------------------------------------

    async def change(
        self,
        plan: Callable[[TableState], Sequence[Entry]],
        reply: Callable[[Committed | None], T],
        ack: tuple[Watcher, int] | None = None,
    ) -> T:
        """Run a change through the pipeline and return its reply.

        At an idle table (no change under way, none queued) the caller runs the pipeline
        itself, in its own task: a hand-off to the table's task would cost two more turns of
        the event loop (the task's start, and the caller's wake-up). Changes queued meanwhile
        wait for it, as they wait for the task's; should the caller be cancelled once the
        change is handed to storage, the table's task takes it over (:class:`Settle`)."""
        job = _change_of(plan, reply, ack)
        if not self._idle():
            result: T = await self._enqueue(job)
            return result
        self._busy = True
        try:
            staged = self._stage(job)
            if staged is None:
                return job.reply(None)
            await self._wait_stored(staged)
            return self._stored(staged)
        finally:
            self._busy = False
            self._serve_queued()

    def _idle(self) -> bool:
        """No change under way nor queued: the state is the one stored."""
        return not (
            self._busy or self._task is not None or self._queue or self.closed or self._dirty
        )

    def queue(self, change: Change[Any]) -> asyncio.Future[Any]:
        """Queue a change without waiting for it: its reply and its ``failed`` are run in the
        table's task. The future is done when it has been (cancel it to drop the change, if
        it has not started)."""
        return self._enqueue(change)

    def change_later(self, plan: Callable[[TableState], Sequence[Entry]]) -> None:
        """Queue a change nobody waits for (its failure is logged)."""
        done = self._enqueue(Change(plan, lambda _: None))
        done.add_done_callback(self._logged)

    def _logged(self, done: asyncio.Future[Any]) -> None:
        if done.cancelled() or (error := done.exception()) is None:
            return
        if isinstance(error, Refusal):
            # What refused it (the store, the table moved or closing) was logged where it did.
            log.info(
                "table %s: a change nobody waits for was refused (%s)", self.table_id, error.reason
            )
        else:
            log.error("table %s: a change failed (%s)", self.table_id, type(error).__name__)

    async def read(self, run: Callable[[TableState], T]) -> T:
        """Run ``run`` on the state between two changes and return what it returns (at once
        at an idle table, whose state is the one stored)."""
        if not self._idle():
            result: T = await self._enqueue(Read(run))
            return result
        return run(self.state)

    def _gone_refusal(self) -> Refusal:
        """What a call of a closed table is answered: the table moved, or the server stops."""
        if self.moved_to is not None:
            return moved(self.table_id, self.moved_to)
        return Unavailable("SHUTTING_DOWN", "the server is shutting down")

    def _enqueue(self, job: Job) -> asyncio.Future[Any]:
        if self.closed:
            raise self._gone_refusal()
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        self._queue.append((job, done))
        if not self._busy:
            self._serve_queued()
        return done

    def _serve_queued(self) -> None:
        """Start the table's task if it has jobs and none runs."""
        if self._queue and self._task is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # a caller's coroutine dropped after its loop ended
                return
            self._task = loop.create_task(self._serve(), name=f"table {self.table_id}")

    async def _serve(self) -> None:
        """The table's task: every job in turn until the queue is empty. Then it ends, and
        the next job starts it again (an idle table holds no task, nor a job's closures);
        there is never more than one, so jobs never overlap."""
        queue = self._queue
        try:
            while queue:
                job, done = queue.pop(0)
                if done.cancelled():
                    continue  # its caller is gone, and it has changed nothing yet
                if self.closed and not isinstance(job, Settle):
                    self._failed(job, done, self._gone_refusal())
                    continue
                self._busy = True
                try:
                    if isinstance(job, Read):
                        result = job.run(self.state)
                    elif isinstance(job, Settle):
                        result = await self._settle(job.staged)
                    else:
                        result = await self._change(job)
                except _Answered as e:  # answered just as the task was stopped
                    if not done.done():
                        if e.error is not None:
                            self._failed(job, done, e.error)
                        else:
                            done.set_result(e.result)
                    raise asyncio.CancelledError from None
                except asyncio.CancelledError:
                    if not done.done():
                        self._failed(job, done, self._gone_refusal())
                    raise
                except BaseException as e:  # the caller's to answer: a refusal, or an error
                    if not done.done():
                        self._failed(job, done, e)
                else:
                    if not done.done():
                        done.set_result(result)
                finally:
                    self._busy = False
        finally:
            self._task = None

    @staticmethod
    def _failed(job: Job, done: asyncio.Future[Any], error: BaseException) -> None:
        """Tell a job's refusal or error: to its ``failed``, or to its caller."""
        failed = job.failed if isinstance(job, Change) else None
        if failed is None or not isinstance(error, Exception):
            done.set_exception(error)
            return
        done.set_result(None)
        try:
            failed(error)
        except Exception:
            log.exception("a change's refusal could not be told")

    # -- the one pipeline of every change ---------------------------------------------------

    async def _change(self, job: Change[T]) -> T:
        """The pipeline, in the table's task."""
        staged = self._stage(job)
        if staged is None:
            return job.reply(None)
        return await self._settle(staged)

    async def _wait_stored(self, staged: _Staged[Any]) -> None:
        """The wait of a caller that runs its change (see :meth:`change`) for the storage's
        answer: a turn of the loop, at whose end the group commit writes the tick's appends,
        and more if that does not answer it, until it does or :meth:`closing` stops the
        table (then the change is put back, and its caller told it may or may not be stored)."""
        stored = staged.stored
        try:
            await asyncio.sleep(0)
            if not stored.done():
                stop = self._stop
                if stop is None:
                    stop = self._stop = asyncio.get_running_loop().create_future()
                if not stop.done():
                    # asyncio.wait leaves both futures be when the caller is cancelled.
                    await asyncio.wait((stored, stop), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            # The caller goes (cancelled, or its coroutine closed) with its change handed to
            # storage: the table's task settles it, first thing; or, the table stopped
            # already (see closing), it is settled now.
            settle: asyncio.Future[Any] = stored.get_loop().create_future()
            settle.add_done_callback(self._logged)
            if self._stop is not None and self._stop.done():
                self._settle_now(staged, settle)
            else:
                self._queue.insert(0, (Settle(staged), settle))
            raise
        if not stored.done():  # stopped
            raise self._put_back(staged)

    def _stage(self, job: Change[T]) -> _Staged[T] | None:
        """Plan, apply and encode the change, and hand its entries to storage (None: the
        change has no entries, and changes nothing). A refusal raises, having changed
        nothing."""
        state = self.state
        entries = job.plan(state)  # refusals raise here, having changed nothing
        if not entries:
            return None
        first = state.number + 1
        clock = (self.deadline, self._turn_key)
        watched = {w.seat for w in self.watchers}
        connected = self.connected()
        updates: list[tuple[int, bytes, dict[int | None, bytes]]] = []
        events_of: list[list[Event]] = []
        # The start renumbers the seats: its update and every later one reach each seat's
        # watchers under the seat's new number (a seat dropped: none of theirs).
        renumbered: dict[int, int] | None = None
        self._dirty = True
        try:
            for entry in entries:
                if isinstance(entry, Start):
                    renumbered = state.renumbering()
                    watched = {_renumbered(renumbered, s) for s in watched}
                    connected = {renumbered[s]: n for s, n in connected.items() if s in renumbered}
                events = state.apply(entry)
                events_of.append(events)
                self._clock()
                shown = connected if self._arriving is None else self._with_arriving(connected)
                updates.append(self._encode(events, watched, shown))
            stored = self.storage.submit(self._append(first, entries))
        except BaseException:
            if updates:
                self._rollback(clock)
            else:  # refused at its first entry, which changed nothing
                self._dirty = False
                self.deadline, self._turn_key = clock
            raise
        return _Staged(
            job, first, entries, clock, updates, events_of, connected, renumbered, stored
        )

    async def _settle(self, staged: _Staged[T]) -> T:
        """Wait for the storage's answer, in the table's task, then commit or undo."""
        try:
            await staged.stored
        except asyncio.CancelledError:
            # The task is stopped (the server closes): the change is put back, unless its
            # storage has answered; then that answer is told (committed, or refused).
            stored = staged.stored
            task = asyncio.current_task()
            if stored.cancelled() and task is not None and not task.cancelling():
                # Not this task: the storage gave its answer up (told as an answer lost).
                return self._stored(staged)
            try:
                result = self._stopped(staged)
            except Exception as e:
                raise _Answered(error=e) from None
            raise _Answered(result) from None
        except Exception:
            pass  # the storage's refusal: told by _stored
        return self._stored(staged)

    def _stopped(self, staged: _Staged[T]) -> T:
        """The end of a change whose wait for the storage the table's stop cut short: the
        storage's answer, if it came (committed, or refused); else put back, and its caller
        told that it may or may not be stored (:func:`_unanswered`)."""
        if not staged.stored.done() or staged.stored.cancelled():
            raise self._put_back(staged)
        return self._stored(staged)

    def _put_back(self, staged: _Staged[Any]) -> Refusal:
        """Put back a change whose storage has not answered (the table stopped), and what its
        caller is told (:func:`_unanswered`). Its answer, nobody's to wait for now (the log
        says what became of the change), is read when it comes: a refusal nobody read was
        logged by asyncio as an error."""
        staged.stored.add_done_callback(_read)
        self._rollback(staged.clock)
        return _unanswered()

    def _settle_now(self, staged: _Staged[Any], done: asyncio.Future[Any]) -> None:
        """Settle at once, into ``done``, a change whose task was stopped before it took it
        (see :meth:`closing`)."""
        try:
            result = self._stopped(staged)
        except Exception as e:
            if not done.done():
                done.set_exception(e)
        else:
            if not done.done():
                done.set_result(result)

    def _stored(self, staged: _Staged[T]) -> T:
        """Commit a change whose append is stored, or undo it and raise what refuses it."""
        state, job, first, entries = self.state, staged.job, staged.first, staged.entries
        connected, renumbered = staged.connected, staged.renumbered
        stored = staged.stored
        e = Unknown("the storage gave its answer up") if stored.cancelled() else stored.exception()
        if e is not None:
            self._unstored(staged, e)
        # Committed: from here on, everyone may see it.
        self.number = state.number
        self.told_deadline = self.deadline
        self._refused = 0
        self.changed_at = time.monotonic()
        self._dirty, self._summary_stale = False, True
        self.checkpoints.offer(state)
        if job.ack is not None:
            # On the change's last update: a command's move, after the return it may bring.
            job.ack[0].acks[state.number] = job.ack[1]
        if not _plain(entries) and any(isinstance(e, Join | Leave | Start) for e in entries):
            self._seats_changed(entries, renumbered)
        self._fan_out(staged.updates, connected)
        self._present(entries)
        self._schedule()
        for told in staged.events_of:
            self._log_events(told)
        if state.status in OVER and self.on_finished is not None:
            self.on_finished(self)
        return job.reply(_committed(self, first, self.number))

    def _unstored(self, staged: _Staged[Any], e: BaseException) -> NoReturn:
        """Undo a change the storage did not store, and raise what its caller is told."""
        state, first = self.state, staged.first
        self._rollback(staged.clock)
        if isinstance(e, Fenced):
            # Another server took the table over: it never acts for it here again.
            log.warning(
                "table %s: updates %d to %d fenced off (%s): the table moved to %s",
                self.table_id,
                first,
                state.number,
                e,
                e.owner or "another server",
            )
            if self.on_moved is not None:
                self.on_moved(self, e.owner)
            else:
                self.close(moved_to=e.owner)
            raise moved(self.table_id, e.owner) from None
        if isinstance(e, Conflict | Unknown):
            # The stored log is not what this memory was built from (an append stored
            # whose answer was lost, most likely): the log is the truth. The table is
            # loaded again from it, and every stream resumes there.
            log.warning(
                "table %s: updates %d to %d %s; loading the table again from its log",
                self.table_id,
                first,
                state.number,
                "conflict with the stored log"
                if isinstance(e, Conflict)
                else "may or may not be stored (the store's answer was lost)",
            )
            if self.on_reload is not None:
                self.on_reload(self)
            else:
                self.close(moved_to="")
            if isinstance(e, Unknown):
                raise Unavailable(
                    "STORAGE_FAILED",
                    "the store's answer was lost: this change may or may not have been "
                    "stored; resume the table's stream to see (a retry with the same "
                    "request id is safe)",
                ) from None
            raise moved(self.table_id, "") from None
        # The store out of reach for now is an outage, which passes (a warning); anything
        # else that failed it is an error.
        log.log(
            logging.WARNING if is_outage(e) else logging.ERROR,
            "table %s: storing updates %d to %d failed (%s); nothing was changed",
            self.table_id,
            first,
            state.number,
            failure_words(e),
        )
        raise Unavailable(
            "STORAGE_FAILED", "the table could not store this change: nothing was changed"
        ) from None

    def _present(self, entries: Sequence[Entry]) -> None:
        """A seat that acts or comes back with its token is there, stream or none: its grace
        starts again (so a player who returns is not dropped before their stream opens)."""
        if not self._gone:
            return
        now = time.monotonic()
        there = {
            e.seat
            for e in entries
            if isinstance(e, Return) or (isinstance(e, Act) and e.auto is None)
        }
        for seat in there & self._gone.keys():
            self._gone[seat] = now

    def _log_events(self, events: list[Event]) -> None:
        """What operators want to see, at info level: who sat down, left, came back, and the
        game's start and end (seats and names, never a card or a token)."""
        tid = self.table_id
        for event in events:
            if type(event) not in _LOGGED:
                continue  # the moves of the game: told to the watchers, not to the log
            match event:
                case PlayerJoined(seat, name, kind):
                    log.info("table %s: %s %r took seat %d", tid, kind, name, seat)
                case PlayerLeft(seat):
                    if self.state.status == PLAYING:
                        log.info("table %s: seat %d left: the server plays for it", tid, seat)
                    else:
                        log.info("table %s: seat %d left", tid, seat)
                case PlayerReturned(seat):
                    log.info("table %s: seat %d came back", tid, seat)
                case GameStarted(players):
                    log.info("table %s: game started with %d players", tid, len(players))
                case TableClosed(reason):
                    log.info("table %s: closed (%s)", tid, reason)
                case engine_events.GameEnded():
                    log.info("table %s: game finished at update %d", tid, self.number)

    def _append(self, first: int, entries: Sequence[Entry]) -> Append:
        state = self.state
        # The directory's seats change with the lobby's entries only: most entries are moves.
        seated = not _plain(entries)
        return append_of(
            self.table_id,
            first,
            [e.to_dict() for e in entries],
            state.status,
            state.directory_seats() if seated else None,
            state.options.to_dict() if seated else None,
            (
                state.tokens()
                if seated and any(isinstance(e, Join | Leave) for e in entries)
                else None
            ),
            self.epoch,
        )

    def _rollback(self, clock: tuple[float | None, tuple[int, int] | None]) -> None:
        """Put the state back as it was stored (some entries of a change were applied)."""
        s = self.state
        self.state = load_state(s.table_id, s.spec, s.entries[: self.number], s.secret)
        self._dirty = False
        self.deadline, self._turn_key = clock
        self._arm_grace()  # what came meanwhile (a stream's end) is armed by the stored state

    def _encode(
        self, events: list[Event], watched: set[int | None], connected: dict[int, int]
    ) -> tuple[int, bytes, dict[int | None, bytes]]:
        """The update just applied, as its watched seats are to see it."""
        number = self.state.number
        if not watched:
            return number, b"", {}
        views = self._encoder().encode(self.state, watched, connected, self.deadline)
        return number, update_head(number, events), views

    def _fan_out(
        self,
        updates: list[tuple[int, bytes, dict[int | None, bytes]]],
        connected: dict[int, int],
    ) -> None:
        """Put each update in its watchers' mailboxes, and keep the last one's views, with
        the presence they were encoded with (``connected``: a stream may have ended while the
        change was stored), for :meth:`view_bytes`."""
        self._sent = None
        if not self.watchers:
            return
        for number, head, views in updates:
            by_seat = encode_updates(number, head, views)
            for w in list(self.watchers):
                item = by_seat.get(w.seat)
                if item is not None:
                    self._deliver(w, item)
        number, _, views = updates[-1]
        self._sent = ((number, self.deadline, connected), views)

    def _encoder(self) -> ViewEncoder:
        if self._encoder_ is None:
            self._encoder_ = ViewEncoder()
        return self._encoder_

    def view_bytes(self, seat: int | None) -> bytes:
        """The encoded View of a seat now (the one the last fan-out sent it, if nothing
        changed since: an Act answers with the view its update has just sent). Call it from
        a change's ``reply`` or a read."""
        connected = self.connected()
        sent = self._sent
        if (
            sent is not None
            and sent[0] == (self.number, self.deadline, connected)
            and seat in sent[1]
        ):
            return sent[1][seat]
        return self._encoder().encode(self.state, (seat,), connected, self.deadline)[seat]

    # -- watchers ---------------------------------------------------------------------------

    def _deliver(self, w: Watcher, item: Item) -> None:
        """Put ``item`` in ``w``'s mailbox, or cut ``w`` off when the mailbox is full."""
        try:
            w.queue.put_nowait(item)
        except asyncio.QueueFull:
            w.cut = True
            self._remove(w)

    def deliver(self, w: Watcher, data: bytes) -> None:
        """Put a message that carries no update (a Play stream's refusal) in a mailbox."""
        self._deliver(w, (0, data))

    def heartbeats(self) -> bool:
        """Every half heartbeat interval while the table has watchers (:class:`Heartbeats`):
        a heartbeat to each watcher that was sent nothing for two of these sweeps, so a quiet
        stream gets one every interval and none is silent for longer (no timer per message).
        False when the table has no watchers to sweep any more."""
        if self.closed or not self.watchers:
            return False
        beat: Item | None = None
        for w in list(self.watchers):
            w.queue.idle += 1
            if w.queue.idle >= 2:
                beat = beat or (0, self._heartbeat())
                self._deliver(w, beat)
        return True

    def _heartbeat(self) -> bytes:
        """A heartbeat as of the latest stored update: its number, the seats' presence now,
        and the clock its views carry."""
        return encode_heartbeat(self.number, self.presence(), self.told_deadline)

    def presence(self) -> list[bool]:
        """Each seat's presence now (PlayerState.connected), as of the latest stored update."""
        return [p.connected for p in self.summary.players]

    def _add(self, watcher: Watcher, take_over: bool) -> None:
        """A stream begins (taking its seat over from the seat's other streams, if asked);
        presence told."""
        seat = watcher.seat
        if seat is not None and take_over:
            for old in [w for w in self.watchers if w.seat == seat]:
                old.taken = True
                self.watchers.pop(old, None)
                self._connected = None
                with contextlib.suppress(asyncio.QueueFull):
                    old.queue.put_nowait(None)  # wakes its stream, which ends TAKEN_OVER
        before = self.connected().get(seat, 0) if seat is not None else 1
        self.watchers[watcher] = None
        self._connected = None
        if seat is not None and before == 0:
            self._presence(seat, True)

    def _seats_changed(self, entries: Sequence[Entry], renumbered: dict[int, int] | None) -> None:
        """After a change of who holds which seat (committed, before its fan-out): who was gone
        is known by the new numbers, and each seat's stream follows its player."""
        for e in entries:
            # A seat taken, or freed before the game, has a new player (or none): whenever the
            # one before went gone is not theirs. (By the numbers of the entries: before the
            # renumbering of a start.)
            if isinstance(e, Join) or (
                isinstance(e, Leave) and self.state.seats[e.seat].kind == "empty"
            ):
                self._gone.pop(e.seat, None)
            if isinstance(e, Join):
                # No stream of the new player can be open yet (the join makes its token):
                # it is gone until one opens, or a player who never opens one (a bot that
                # crashed after joining) would hold the game up for ever.
                self._gone[e.seat] = time.monotonic()
        if renumbered is not None:
            self._gone = {renumbered[s]: t for s, t in self._gone.items() if s in renumbered}
        self._follow_holders()

    def _follow_holders(self) -> None:
        """Each seat's stream at its player's seat (a start renumbers them), or, its player
        having left, ended now, before anything of the seat's next holder can reach it."""
        seats = self.state.seats
        for w in list(self.watchers):
            if not w.holder:
                continue
            if w.seat is not None and w.seat < len(seats) and seats[w.seat].token_hash == w.holder:
                continue
            held = self.state.seat_held(w.holder)
            self._connected = None
            if held is not None:
                w.seat = held
                continue
            w.left = True
            self.watchers.pop(w, None)
            with contextlib.suppress(asyncio.QueueFull):
                w.queue.put_nowait(None)  # wakes its stream, which ends

    def _remove(self, watcher: Watcher) -> None:
        """A stream ends (or is cut off): presence told when it was its seat's last."""
        if watcher not in self.watchers:
            return
        self.watchers.pop(watcher, None)
        self._connected = None
        seat = watcher.seat
        if seat is not None and not self.closed and self.connected().get(seat, 0) == 0:
            self._presence(seat, False)

    def _presence(self, seat: int, live: bool) -> None:
        """A seat's presence changed: every stream gets a heartbeat that says so (soon, once
        for any number of changes at one moment), and a player who is gone is counted gone
        from now (see :meth:`_arm_grace`)."""
        player = seat < len(self.state.seats) and self.state.seats[seat].kind == "player"
        if live:
            if self._gone.pop(seat, None) is not None and self.state.status == PLAYING:
                self._log_presence(seat, "connected (a stream opened)")
        elif player:
            self._gone[seat] = time.monotonic()
            if self.state.status == PLAYING:
                self._log_presence(seat, "dropped (no stream open)")
        self._arm_grace()
        self._tell_presence_soon()

    def arrival(self, holder: str) -> Arrival:
        """A stream of the seat ``holder`` holds is opening (a Watch or Play with its token):
        until it is open, an update that brings the seat back (or finds it back) shows it
        connected, as it is once the stream opens, not gone for a moment. End it with
        :meth:`Arrival.done` once the stream is open, or failed: a seat shown connected whose
        stream never opened (its call ended first) is then told gone at once."""
        arriving = self._arriving if self._arriving is not None else {}
        arriving[holder] = arriving.get(holder, 0) + 1
        self._arriving = arriving
        return Arrival(self, holder)

    def _arrived(self, holder: str) -> None:
        arriving = self._arriving
        if arriving is None or holder not in arriving:
            return
        if arriving[holder] > 1:
            arriving[holder] -= 1
        else:
            del arriving[holder]
            if not arriving:
                self._arriving = None
        seat = self.state.seat_held(holder)
        if seat is not None and not self.closed and not self.connected().get(seat, 0):
            # Told after the change under way, if any: its update, encoded while the stream
            # was opening, shows the seat connected.
            told = self._enqueue(Read(lambda _: self._tell_presence_soon()))
            told.add_done_callback(self._logged)

    def _with_arriving(self, connected: dict[int, int]) -> dict[int, int]:
        """``connected``, with the seats whose stream is opening counted, once back (not
        away) in the state as it is now."""
        state = self.state
        shown = dict(connected)
        for holder in self._arriving or ():
            seat = state.seat_held(holder)
            if seat is not None and not state.seats[seat].away and not shown.get(seat, 0):
                shown[seat] = 1
        return shown

    def _tell_presence_soon(self) -> None:
        """Every stream gets a heartbeat with the seats' presence (soon, once for any number
        of changes at one moment)."""
        if not self._presence_due:
            self._presence_due = True
            asyncio.get_running_loop().call_soon(self._tell_presence)

    def _log_presence(self, seat: int, what: str) -> None:
        """Log a seat's presence changing: at INFO, the first ``_PRESENCE_LINES`` changes of
        the seat in ``_PRESENCE_WINDOW`` seconds, the others at DEBUG (a stream opened and
        closed over and over wrote two lines an open)."""
        now = time.monotonic()
        logged = self._presence_logged
        if logged is None:
            logged = self._presence_logged = {}
        began, count = logged.get(seat, (now, 0))
        if now - began >= _PRESENCE_WINDOW:
            began, count = now, 0
        count += 1
        logged[seat] = (began, count)
        if count > _PRESENCE_LINES:
            log.debug("table %s: seat %d %s", self.table_id, seat, what)
            return
        more = " (its next changes for a while at debug level)" if count == _PRESENCE_LINES else ""
        log.info("table %s: seat %d %s%s", self.table_id, seat, what, more)

    def _tell_presence(self) -> None:
        self._presence_due = False
        if self.closed or not self.watchers:
            return
        beat = (0, self._heartbeat())
        for w in list(self.watchers):
            self._deliver(w, beat)

    async def _replayed(
        self, r: _Replay, watcher: Watcher, pace: Pace
    ) -> AsyncGenerator[Item, None]:
        """The updates ``r`` holds as its seat saw them, made by replaying the log outside the
        table's task, in slices: each applies and encodes for ``replay_slice`` seconds at most
        (and ``_SLICE_ITEMS`` updates), sends them, then waits for ``pace``. It stops early
        when the watcher is cut off, taken over or left meanwhile, or the table closes (its
        stream then ends ``TOO_SLOW`` (resumable from the last update it sent), ``TAKEN_OVER``,
        ``BAD_TOKEN`` or ``SHUTTING_DOWN``)."""
        try:
            began, cpu = time.perf_counter(), time.thread_time()
            start = r.start
            state = (
                TableState(self.table_id, self.state.spec, secret=self.state.secret)
                if start is None
                else start.fork()
            )
            encoder = ViewEncoder()
            entries = iter(r.entries)
            seat, limit = r.seat, self.config.replay_slice
            while True:
                batch: list[Item] = []
                while state.number < r.end and len(batch) < _SLICE_ITEMS:
                    events = state.apply(next(entries))
                    if state.number > r.after:
                        # Only the clock of the turn being played is kept: its updates show
                        # it, as they did live; older turns' clocks have run out anyway.
                        g = state.game
                        same_turn = g is not None and r.turn_key == (g.round, g.turn_index)
                        deadline = r.deadline if same_turn else None
                        then, connected = seat, r.connected
                        if state.status == WAITING:  # before the start renumbered the seats
                            then, connected = self._before_start(state, watcher.holder, seat, r)
                        view = encoder.encode(state, (then,), connected, deadline)[then]
                        head = update_head(state.number, events)
                        batch.append((state.number, encode_update(head, view)))
                    if time.perf_counter() - began >= limit:
                        break
                for item in batch:
                    yield item
                if watcher.cut or watcher.taken or watcher.left or self.closed:
                    return  # the stream ends TOO_SLOW, TAKEN_OVER, BAD_TOKEN or SHUTTING_DOWN
                # What the slice cost the server: its work, and the loop's while its updates
                # went out (CPU time: a slow connection's waits are not counted).
                await pace.slice(time.thread_time() - cpu)
                if state.number >= r.end:
                    return
                began, cpu = time.perf_counter(), time.thread_time()
        finally:
            pace.done()

    def _before_start(
        self, then: TableState, holder: str, seat: int | None, r: _Replay
    ) -> tuple[int | None, dict[int, int]]:
        """For an update of a replay from before the start, which renumbered the seats: the
        seat ``holder`` held then (``seat``, when none), and each seat's presence now (``r``'s)
        by the number its player had then."""
        now = {s.token_hash: i for i, s in enumerate(self.state.seats) if s.token_hash}
        connected = {
            i: r.connected.get(now[s.token_hash], 0)
            for i, s in enumerate(then.seats)
            if s.token_hash in now
        }
        held = then.seat_held(holder) if holder else None
        return (seat if held is None else held), connected

    def check_after(self, state: TableState, after: int | None) -> None:
        """Refuse to resume after an update that has not happened."""
        if after is not None and after > state.number:
            raise Invalid(
                "BAD_NUMBER",
                f"update {after} has not happened: the table is at {state.number}",
            )

    def watcher(self, seat: int | None, holder: str = "") -> Watcher:
        """A new watcher of ``seat``, held by the token whose hash is ``holder`` (by default
        the seat's token now; "" for a spectator), not yet watching (see :meth:`watch`). A
        caller that looked the token up gives the holder it found: the seat's number may have
        changed since."""
        if seat is not None and not holder:
            holder = self.state.seats[seat].token_hash
        return Watcher(seat, Mailbox(self.config.watcher_queue), holder)

    def _open(
        self, watcher: Watcher, after: int | None, take_over: bool
    ) -> tuple[list[Item] | _Replay, bytes]:
        """A stream's first messages, or what it missed, to replay, and what its first message
        says of the seat's other streams (``encode_stream_note``, or nothing); and the watcher
        added (between two changes: every later update reaches its mailbox)."""
        self.check_after(self.state, after)
        if watcher.holder:
            # The seat as it is now: a start may have renumbered it, or its player left it,
            # since the caller looked the token up.
            held = self.state.seat_held(watcher.holder)
            if held is None:
                raise _seat_left()
            watcher.seat = held
        seat = watcher.seat
        first: list[Item] | _Replay
        others = 0 if seat is None else sum(1 for w in self.watchers if w.seat == seat)
        # Added first: the seat's own first messages show it connected, as it is.
        self._add(watcher, take_over)
        if after is None:
            first = [
                (self.number, encode_update(snapshot_head(self.number), self.view_bytes(seat)))
            ]
        elif after == self.number:
            # A resumed stream that missed nothing opens with a heartbeat, so the watcher
            # knows at once that it is connected again.
            first = [(0, self._heartbeat())]
        else:
            start = self.checkpoints.before(after)
            begin = 0 if start is None else start.number
            first = _Replay(
                start,
                self.state.entries[begin : self.number],
                after,
                self.number,
                seat,
                self.connected(),
                self.deadline,
                self._turn_key,
            )
        if not self.closed:
            self.heart.add(self)
        # On the first message, appended (WatchResponse's and PlayResponse's field numbers
        # are the same): the seat's other streams, taken over or counted.
        return first, encode_stream_note(take_over, others) if others else b""

    async def watch(
        self,
        seat: int | None,
        after: int | None,
        watcher: Watcher | None = None,
        pace: Pace | None = None,
        take_over: bool = False,
        holder: str = "",
        arrival: Arrival | None = None,
    ) -> AsyncIterator[Item]:
        """The stream of one watcher, encoded: a snapshot (or what it missed, replayed at
        ``pace``), then every update (and whatever else is put on ``watcher``'s queue).
        ``take_over``: the seat's other streams end (ABORTED TAKEN_OVER). ``holder``: the hash
        of the seat's token (see :class:`Watcher`; a ``watcher`` given has its own).
        ``arrival``: the seat's, ended once the stream is open or failed (:meth:`arrival`)."""
        if watcher is None:
            watcher = self.watcher(seat, holder)
        pace = pace or Pace()
        try:
            first, note = await self.read(lambda _: self._open(watcher, after, take_over))
        except BaseException:
            pace.done()
            # Its caller gone while the stream was opening: a watcher added is taken out
            # (else its seat would show connected, and its table be swept, for ever).
            self._remove(watcher)
            raise
        finally:
            if arrival is not None:
                arrival.done()
        try:
            if isinstance(first, _Replay):
                async with aclosing(self._replayed(first, watcher, pace)) as missed:
                    async for item in missed:
                        watcher.last = item[0]
                        yield (item[0], item[1] + note) if note else item
                        note = b""
                # Caught up with the updates it missed: a heartbeat says so, with the latest
                # number (a bot knows from it that what comes next is live).
                yield (0, self._heartbeat())
            else:
                pace.done()
                while first:  # popped: a snapshot is not kept for the life of the stream
                    item = first.pop(0)
                    watcher.last = item[0] or watcher.last
                    yield (item[0], item[1] + note) if note else item
                    note = b""
            queue = watcher.queue
            while True:
                got = await queue.get() if queue.empty() else queue.get_nowait()
                if watcher.taken:
                    raise Aborted(
                        "TAKEN_OVER",
                        "a newer stream of this seat took it over: the seat is played there",
                    )
                if watcher.cut:
                    raise _cut_off(watcher, self)
                if watcher.left:
                    raise _seat_left()
                if got is None:
                    if self.moved_to is not None:
                        raise moved(self.table_id, self.moved_to)
                    raise Unavailable("SHUTTING_DOWN", "the server is shutting down; resume later")
                if got[0]:
                    watcher.last = got[0]
                yield got
        finally:
            self._remove(watcher)

    def close(self, moved_to: str | None = None) -> None:
        """Stop automatic moves, refuse what is queued, and end every stream (they may resume
        on restart, or, when the table ``moved_to`` another server, there). The change under
        way, if any, still ends (see :meth:`closing`)."""
        if moved_to is not None and self.moved_to is None:
            self.moved_to = moved_to
        self.closed = True
        if self._auto is not None:
            self._auto.cancel()
        if self._thought is not None:
            self._thought.cancel()
        self.heart.discard(self)
        if self._grace is not None:
            self._grace.cancel()
        for w in self.watchers:
            try:
                w.queue.put_nowait(None)
            except asyncio.QueueFull:
                w.cut = True

    async def closing(self, timeout: float = 5.0) -> None:
        """Until the change under way has ended (the task's, or one its caller runs) and the
        task has refused what was queued after :meth:`close` (at most ``timeout`` seconds);
        then stop them: a change whose storage has not answered is put back and its caller
        told it may or may not be stored, what the task had not reached is refused (nothing
        changed), and a cancelled caller's change is settled."""
        end = time.monotonic() + timeout
        while (self._busy or self._queue) and time.monotonic() < end:
            await asyncio.sleep(0.005)
        # A caller that runs its change and waits for the storage stops waiting.
        if self._stop is None:
            self._stop = asyncio.get_running_loop().create_future()
        if not self._stop.done():
            self._stop.set_result(None)
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            self._task = None  # (a task stopped before its first step ran nothing)
        # What the stopped task left queued is refused too (no caller waits for ever), but
        # a cancelled caller's change, settled.
        queue, self._queue = self._queue, []
        for job, done in queue:
            if isinstance(job, Settle):
                self._settle_now(job.staged, done)
            elif not done.done():
                self._failed(job, done, self._gone_refusal())

    # -- automatic moves: bots, away seats, the clock, the next deal ------------------------

    def _clock(self) -> None:
        game = self.state.game
        seconds = self.state.options.turn_seconds
        if game is None or seconds <= 0 or game.phase not in (Phase.DRAW, Phase.PLAY):
            self.deadline, self._turn_key = None, None
            return
        key = (game.round, game.turn_index)
        if key != self._turn_key:
            self._turn_key = key
            self.deadline = time.time() + seconds

    def _schedule(self) -> None:
        """(Re)arm the one pending automatic move for the state as it is now."""
        if self._auto is not None:
            self._auto.cancel()
            self._auto = None
        self._arm_grace()
        game = self.state.game
        if self.closed or game is None or self.state.status == FINISHED:
            return
        loop = asyncio.get_running_loop()
        number = self.number
        if game.phase == Phase.ROUND_OVER:
            delay = max(self.config.round_pause, _LEAST_AUTO_DELAY)
            self._auto = loop.call_later(delay, self._auto_move, number, "next")
            return
        auto = self.state.auto_seat()
        if auto is not None:
            kind = auto[1]
            if self._thinking == (len(game.log), auto[0]):
                return  # its move is being decided off the loop: nothing has moved the game
            delay = self.config.bot_delay if kind == "bot" else self.config.away_delay
            self._auto = loop.call_later(
                max(delay, _LEAST_AUTO_DELAY), self._auto_move, number, kind
            )
        elif self.deadline is not None:
            delay = max(0.0, self.deadline - time.time())
            self._auto = loop.call_later(delay, self._auto_move, number, "timeout")

    def _arm_grace(self) -> None:
        """(Re)arm the drop of the seat whose turn it is, when its player is gone: once
        ``config.drop_grace`` has passed since its last stream ended (or since it joined,
        when it has opened none, or since its last command) and since its turn began, the
        seat is marked away (a Leave, as LeaveTable makes), and the server plays for it from
        then on. Counted on the turn: a player who plays by Act alone, with no stream, is not
        dropped for the time the others took."""
        if self._dirty:
            # A change is being stored: the state is not the stored one. Its commit re-arms
            # the drop (``_schedule``), and so does its undoing (``_rollback``).
            return
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        state = self.state
        game = state.game
        if self.closed or game is None or state.status != PLAYING:
            return
        if game.phase not in (Phase.DRAW, Phase.PLAY):
            return
        now = time.monotonic()
        began = self._turn_began
        if began is None or began[:2] != (game.round, game.turn_index):
            # Taken at the commit that began the turn, whether or not anybody is gone then:
            # one who goes while a later change is stored counts from their going.
            began = self._turn_began = (game.round, game.turn_index, now)
        if not self._gone:
            return  # nobody to drop
        seat = game.turn
        gone = self._gone.get(seat)
        if gone is None or state.seats[seat].kind != "player" or state.seats[seat].away:
            return
        since = max(gone, began[2])
        delay = max(since + self.config.drop_grace - now, _LEAST_AUTO_DELAY)
        loop = asyncio.get_running_loop()
        self._grace = loop.call_later(delay, self._drop, self.number, seat)

    def _drop(self, number: int, seat: int) -> None:
        """Mark a gone player's seat away, on its turn, decided on update ``number``."""
        self._grace = None
        if self.closed:
            return

        def plan(state: TableState) -> list[Entry]:
            game = state.game
            if state.number != number or game is None or game.turn != seat:
                return []  # something else happened first: its commit re-armed the drop
            if seat not in self._gone or state.seats[seat].away or self.connected().get(seat):
                return []  # back in time
            log.info(
                "table %s: seat %d gone for %g s on its turn: the server plays for it",
                self.table_id,
                seat,
                self.config.drop_grace,
            )
            return [Leave(seat)]

        done = self._enqueue(Change(plan, lambda _: None))
        done.add_done_callback(lambda d: self._auto_done(d, number, "drop", True))

    def _auto_move(self, number: int, kind: str, fallback: bool = False) -> None:
        """Queue the automatic move of ``kind`` decided on update ``number``."""
        self._auto = None
        if self.closed:
            return

        def plan(state: TableState) -> list[Entry]:
            game = state.game
            if state.number != number or game is None:
                return []  # something else happened first: its commit re-armed the move
            if kind == "next":
                return [NextDeal()]
            seat = game.turn
            seat_view = state.seat_view(seat)
            assert seat_view is not None
            if kind == "bot" and not fallback:
                if self.thinker is not None and state.seats[seat].policy in OFF_LOOP:
                    self._think(seat)
                    return []
                policy = POLICIES[state.seats[seat].policy]
                rng = random.Random(state.bot_seed(seat))
                return [Act(seat, policy(seat_view, rng))]
            reason = "timeout" if fallback or kind == "bot" else kind
            first = Act(seat, safe_move(seat_view), reason)
            if reason != "timeout" or game.phase != Phase.DRAW:
                return [first]
            # The clock is the turn's: when it runs out the rest of the turn is played at
            # once, the draw and the discard in one change.
            after = game.clone()
            after.apply(seat, first.action)
            return [first, Act(seat, safe_move(view(after, seat)), reason)]

        done = self._enqueue(Change(plan, lambda _: None))
        done.add_done_callback(lambda d: self._auto_done(d, number, kind, fallback))

    def _think(self, seat: int) -> None:
        """Have the thinker decide the move of the bot at ``seat`` (its turn, now: called from
        a plan, on the committed state), then play it through the pipeline."""
        state = self.state
        game = state.game
        assert game is not None and self.thinker is not None
        position = len(game.log)
        self._thinking = (position, seat)
        v = state.seat_view(seat)
        assert v is not None
        self._thought = asyncio.get_running_loop().create_task(
            self._decide(
                self.thinker, position, seat, state.seats[seat].policy, v, state.bot_seed(seat)
            ),
            name=f"table {self.table_id}: seat {seat} thinking",
        )

    async def _decide(
        self, thinker: Thinker, position: int, seat: int, policy: str, v: View, seed: bytes
    ) -> None:
        """The thinking of :meth:`_think`: the move decided, then a change that plays it if the
        game is still at ``position`` (else whatever is due now is armed again)."""
        try:
            try:
                action: Action | None = await thinker.decide(
                    policy, v, seed, self.state.spec.client
                )
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a worker died or hung, or the server stops: the safe move
                log.warning(
                    "table %s: the %s move of seat %d was not decided (%s); playing the safe move",
                    self.table_id,
                    policy,
                    seat,
                    type(e).__name__,
                )
                action = None

            def plan(state: TableState) -> list[Entry]:
                if self._thinking == (position, seat):
                    self._thinking = None
                game = state.game
                if (
                    game is None
                    or len(game.log) != position
                    or game.turn != seat
                    or state.auto_seat() != (seat, "bot")
                    or state.seats[seat].policy != policy
                ):
                    self._schedule()  # the game moved on meanwhile: whatever is due now
                    return []
                if action is None:
                    self._auto_move(state.number, "bot", fallback=True)
                    return []
                return [Act(seat, action)]

            if self.closed:
                return
            done = self._enqueue(Change(plan, lambda _: None))
            done.add_done_callback(lambda d: self._auto_done(d, self.number, "bot", False))
        finally:
            self._thought = None

    def _auto_done(self, done: asyncio.Future[Any], number: int, kind: str, fallback: bool) -> None:
        if done.cancelled():
            return
        error = done.exception()
        if error is None:
            return
        if isinstance(error, Unavailable):
            if error.reason == "STORAGE_FAILED" and not self.closed:
                # The store refused it (an outage): nothing changed, and nothing else would
                # make the move. Tried again in a moment, longer each time in a row.
                most = self.config.storage_retry_most
                delay = min(self.config.storage_retry * 2 ** min(self._refused, 16), most)
                self._refused += 1
                if self._auto is not None:
                    self._auto.cancel()
                self._auto = asyncio.get_running_loop().call_later(delay, self._schedule)
            return
        if isinstance(error, RuleError) and not fallback and kind != "next":
            # The reason only: the message may name the seat's concealed cards.
            log.warning(
                "table %s: automatic %s move refused (%s); playing the safe move",
                self.table_id,
                kind,
                error.reason,
            )
            self._auto_move(number, kind, fallback=True)
            return
        log.error(
            "table %s: automatic %s move failed (%s)", self.table_id, kind, type(error).__name__
        )


def _renumbered(renumbering: dict[int, int], seat: int | None) -> int | None:
    """``seat``'s number after the start (None: a spectator, or a seat the start dropped)."""
    return None if seat is None else renumbering.get(seat)


def moved(table_id: str, owner: str) -> Refusal:
    """The refusal of a call for a table this server does not hold: UNAVAILABLE/TABLE_MOVED,
    the owner's address in the metadata (``owner``; none when no server holds it right now:
    call again in a moment, on any server)."""
    if owner:
        return Unavailable(
            "TABLE_MOVED",
            f"table {table_id} is played by the server at {owner}: call it there",
            owner=owner,
        )
    return Unavailable(
        "TABLE_MOVED", f"table {table_id} is between servers: call again in a moment"
    )


def _seat_left() -> Refusal:
    return Unauthenticated(
        "BAD_TOKEN", "this stream's seat was left: its token proves no seat at this table now"
    )


def _cut_off(watcher: Watcher, table: Table) -> Refusal:
    return Exhausted(
        "TOO_SLOW",
        f"this stream fell {table.config.watcher_queue} updates behind and was cut off; "
        f"watch again with after={watcher.last} to resume",
        after=str(watcher.last),
    )


def stale(state: TableState, number: int, question: bool = False) -> None:
    """Refuse a command decided on update ``number`` when the game changed since (so a retry
    is never applied twice), or a ``question`` asked of it (LegalSteps). No number at all (0,
    before any game: a field left out) is a mistake that deciding again cannot mend, so it is
    not called stale."""
    if number == 0:
        raise Invalid(
            "BAD_NUMBER",
            "no update number: send the number of the update whose view the command was "
            f"decided on (the table is at {state.number})",
        )
    if number > state.number:
        raise Invalid(
            "BAD_NUMBER",
            f"update {number} has not happened: the table is at {state.number}",
        )
    if number < state.game_number:
        what, again = (
            ("these steps were asked for", "ask again")
            if question
            else ("this action was decided on", "decide again")
        )
        raise Aborted(
            "STALE",
            f"{what} update {number}, but the game changed at update {state.game_number} "
            f"(the table is at {state.number}): {again} on the latest view",
            current=str(state.number),
        )
