"""A table as an actor: commands applied one at a time, stored, then fanned out.

Every change goes through :meth:`Table.submit`: check and apply the entry on the state, store
it, then put the update on every watcher's queue. That path never awaits, so on the event loop
it runs whole, one command at a time, and nobody can observe a state that is not yet stored.
A watcher whose queue is full is cut off (it may resume from its last number); it never slows
the table or the others.

The table also plays for the seats nobody is at: built-in bots, seats whose player left, and
the turn clock, which plays a safe move when it runs out.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from rami.engine import POLICIES, Action, Discard, Draw, Phase, RuleError, view
from rami.engine.serial import action_to_dict
from rami.v1 import events_pb2, table_service_pb2

from .errors import Aborted, Exhausted, Invalid, Unavailable
from .storage import Storage
from .tablestate import FINISHED, PLAYING, TableState, load_state
from .wire import UPDATE, UPDATE_VIEW, message_field

__all__ = ["Table", "TableConfig", "safe_move"]

log = logging.getLogger("rami.server.table")


@dataclass(frozen=True, slots=True)
class TableConfig:
    """Timings and limits shared by every table of a server."""

    bot_delay: float = 0.6
    round_pause: float = 4.0
    away_delay: float = 0.3
    heartbeat: float = 15.0
    watcher_queue: int = 256


#: What a watcher's stream sends: the number of the update it carries (0: none, a heartbeat or,
#: on a Play stream, a refusal) and the response, encoded (see ``wire``).
Item = tuple[int, bytes]
#: What a watcher's queue carries: items, or None when the server shuts down.
Outgoing = Item | None


class Mailbox:
    """A watcher's bounded queue: ``asyncio.Queue``'s ``put_nowait``, ``get``, ``get_nowait``
    and ``empty`` for one reader, without the three more deques and the event that a Queue
    holds (some 2.5 KB per watcher, and a server keeps thousands of watchers). ``idle``
    counts the table's heartbeat sweeps since the last item put (see
    :meth:`Table._heartbeats`)."""

    __slots__ = ("_items", "_limit", "_waiter", "idle")

    def __init__(self, limit: int) -> None:
        self._items: deque[Outgoing] = deque()
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
        return self._items.popleft()

    async def get(self) -> Outgoing:
        """The oldest item, waiting for one (no timer per wait: the table's heartbeats put
        an item in a mailbox that stays quiet)."""
        while not self._items:
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._items.popleft()


@dataclass(eq=False)
class Watcher:
    """One open Watch (or Play) stream."""

    seat: int | None
    queue: Mailbox
    cut: bool = False
    last: int = 0
    #: Play streams: the update number each accepted command became -> the command's id.
    acks: dict[int, int] = field(default_factory=dict)


#: The least wait before an automatic move, even when the configured delay is 0. Back-to-back
#: moves would keep the event loop from ever waiting: gRPC's poller thread, which completes
#: every message sent, would get the GIL only at each switch interval, and watchers would fall
#: behind a fast table of bots and be cut off.
_LEAST_AUTO_DELAY = 0.001


def safe_move(game_view: Any) -> Action:
    """The move the server makes for a seat whose clock ran out: draw from the stock, then
    throw back the card drawn (or, with nothing drawn, the costliest card)."""
    if game_view.phase == Phase.DRAW:
        return Draw("stock")
    hand = list(game_view.hand)
    if game_view.drawn is not None and game_view.drawn in hand:
        return Discard(game_view.drawn)
    return Discard(max(hand, key=lambda c: (c % 13 == 0, c % 13, c)))


@dataclass(eq=False)
class Table:
    """One table: its state, its stored log, its watchers and its automatic moves."""

    state: TableState
    storage: Storage
    config: TableConfig
    entries: list[dict[str, Any]] = field(default_factory=list)
    watchers: set[Watcher] = field(default_factory=set)
    deadline: float | None = None
    _turn_key: tuple[int, int] | None = None
    _auto: asyncio.TimerHandle | None = None
    _beat: asyncio.TimerHandle | None = None
    _rngs: dict[int, random.Random] = field(default_factory=dict)
    closed: bool = False
    #: The views the last fan-out sent, encoded, by seat, and what they were built from.
    _sent: tuple[tuple[int, float | None, dict[int, int]], dict[int | None, bytes]] | None = None

    @property
    def table_id(self) -> str:
        """The table's id."""
        return self.state.table_id

    def connected(self) -> dict[int, int]:
        """Open streams per seat."""
        out: dict[int, int] = {}
        for w in self.watchers:
            if w.seat is not None:
                out[w.seat] = out.get(w.seat, 0) + 1
        return out

    def view_bytes(self, seat: int | None) -> bytes:
        """The encoded View of a seat now (the one the last fan-out sent it, if nothing
        changed since: an Act answers with the view its update has just sent)."""
        connected = self.connected()
        sent = self._sent
        if (
            sent is not None
            and sent[0] == (self.state.number, self.deadline, connected)
            and seat in sent[1]
        ):
            return sent[1][seat]
        return self.state.encode_views((seat,), connected, self.deadline)[seat]

    # -- the one path of every change -------------------------------------------------------

    def submit(self, entry: dict[str, Any]) -> int:
        """Apply, store, fan out; return the update number. Raises and changes nothing when
        the entry is refused."""
        if self.closed:
            raise Unavailable("SHUTTING_DOWN", "the server is shutting down")
        events = self.state.apply(entry)
        number = self.state.number
        try:
            self.storage.append(self.table_id, number, entry)
        except Exception:
            log.exception("table %s: storing update %d failed; rebuilding", self.table_id, number)
            self._rebuild()
            raise
        self.entries.append(entry)
        if entry["type"] == "start":
            self.storage.set_status(self.table_id, PLAYING)
        if self.state.status == FINISHED and entry["type"] == "act":
            self.storage.set_status(self.table_id, FINISHED)
        self._clock()
        self._fan_out(number, events)
        self._schedule()
        return number

    def act(self, seat: int, number: int, action: Action, auto: str | None = None) -> int:
        """A seat's action decided on update ``number``: refused as stale if the game changed
        since (so a retry is never applied twice)."""
        if number < self.state.game_number or number > self.state.number:
            raise Aborted(
                "STALE",
                f"this action was decided on update {number}, but the game is at update "
                f"{self.state.number}: decide again on the latest view",
                current=str(self.state.number),
            )
        entry: dict[str, Any] = {"type": "act", "seat": seat, "action": action_to_dict(action)}
        if auto:
            entry["auto"] = auto
        return self.submit(entry)

    def _rebuild(self) -> None:
        stored = self.storage.load_table(self.table_id)
        if stored is not None:
            self.state = load_state(self.table_id, stored.spec, stored.entries)
            self.entries = stored.entries

    # -- watchers ---------------------------------------------------------------------------

    def _fan_out(self, number: int, events: list[events_pb2.Event]) -> None:
        self._sent = None
        if not self.watchers:
            return
        connected = self.connected()
        # One encoded message per seat watched, shared by the watchers of that seat: the
        # events once, the part of the views every seat shares once (see ``wire``).
        views = self.state.encode_views({w.seat for w in self.watchers}, connected, self.deadline)
        head = table_service_pb2.Update(number=number, events=events).SerializeToString()
        by_seat = {seat: (number, _update(head, v)) for seat, v in views.items()}
        self._sent = ((number, self.deadline, connected), views)
        for w in list(self.watchers):
            self._deliver(w, by_seat[w.seat])

    def _deliver(self, w: Watcher, item: Item) -> None:
        """Put ``item`` in ``w``'s mailbox, or cut ``w`` off when the mailbox is full."""
        try:
            w.queue.put_nowait(item)
        except asyncio.QueueFull:
            w.cut = True
            self.watchers.discard(w)

    def _heartbeats(self) -> None:
        """Every half heartbeat interval while the table has watchers: a heartbeat to each
        watcher that was sent nothing for two of these sweeps, so a quiet stream gets one
        every interval and none is silent for longer. (One timer per table, none per
        message.)"""
        self._beat = None
        if self.closed or not self.watchers:
            return
        beat: Item | None = None
        for w in list(self.watchers):
            w.queue.idle += 1
            if w.queue.idle >= 2:
                beat = beat or self._heartbeat()
                self._deliver(w, beat)
        self._beat_later()

    def _beat_later(self) -> None:
        if self._beat is None and not self.closed:
            loop = asyncio.get_running_loop()
            self._beat = loop.call_later(self.config.heartbeat / 2, self._heartbeats)

    def history(self, seat: int | None, after: int) -> list[Item]:
        """The updates after ``after`` as ``seat`` saw them, by replaying the table's log."""
        replay = TableState(self.table_id, self.state.spec)
        connected = self.connected()
        out = []
        for i, entry in enumerate(self.entries, 1):
            events = replay.apply(entry)
            if i > after:
                # Only the clock of the turn being played is kept: its updates show it, as
                # they did live; older turns' clocks have run out anyway.
                g = replay.game
                same_turn = g is not None and self._turn_key == (g.round, g.turn_index)
                view = replay.view_proto(seat, connected, self.deadline if same_turn else None)
                update = table_service_pb2.Update(number=i, events=events, view=view)
                out.append((i, table_service_pb2.WatchResponse(update=update).SerializeToString()))
        return out

    def check_after(self, after: int | None) -> None:
        """Refuse to resume after an update that has not happened."""
        if after is not None and after > self.state.number:
            raise Invalid(
                "BAD_NUMBER",
                f"update {after} has not happened: the table is at {self.state.number}",
            )

    def watcher(self, seat: int | None) -> Watcher:
        """A new watcher of ``seat``, not yet watching (see :meth:`watch`)."""
        return Watcher(seat, Mailbox(self.config.watcher_queue))

    def _heartbeat(self) -> Item:
        return 0, table_service_pb2.WatchResponse(
            heartbeat=table_service_pb2.Heartbeat(number=self.state.number)
        ).SerializeToString()

    async def watch(
        self, seat: int | None, after: int | None, watcher: Watcher | None = None
    ) -> AsyncIterator[Item]:
        """The stream of one watcher, encoded: a snapshot (or what it missed), then every
        update (and whatever else is put on ``watcher``'s queue)."""
        self.check_after(after)
        if after is None:
            number = self.state.number
            head = table_service_pb2.Update(number=number, snapshot=True).SerializeToString()
            first = [(number, _update(head, self.view_bytes(seat)))]
        else:
            # A resumed stream that missed nothing opens with a heartbeat, so the watcher
            # knows at once that it is connected again.
            first = self.history(seat, after) or [self._heartbeat()]
        if watcher is None:
            watcher = self.watcher(seat)
        self.watchers.add(watcher)
        self._beat_later()
        try:
            while first:  # popped: a snapshot is not kept for the life of the stream
                item = first.pop(0)
                watcher.last = item[0] or watcher.last
                yield item
            queue = watcher.queue
            while True:
                item = await queue.get() if queue.empty() else queue.get_nowait()
                if watcher.cut:
                    raise _cut_off(watcher, self)
                if item is None:
                    raise Unavailable("SHUTTING_DOWN", "the server is shutting down; resume later")
                if item[0]:
                    watcher.last = item[0]
                yield item
        finally:
            self.watchers.discard(watcher)

    def close(self) -> None:
        """Stop automatic moves and end every stream (they may resume on restart)."""
        self.closed = True
        if self._auto is not None:
            self._auto.cancel()
        if self._beat is not None:
            self._beat.cancel()
        for w in self.watchers:
            try:
                w.queue.put_nowait(None)
            except asyncio.QueueFull:
                w.cut = True

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
        game = self.state.game
        if self.closed or game is None or self.state.status != PLAYING:
            return
        loop = asyncio.get_running_loop()
        if game.phase == Phase.ROUND_OVER:
            self._auto = loop.call_later(
                max(self.config.round_pause, _LEAST_AUTO_DELAY), self._run, "next"
            )
            return
        seat = self.state.seats[game.turn]
        if seat.kind == "bot":
            self._auto = loop.call_later(
                max(self.config.bot_delay, _LEAST_AUTO_DELAY), self._run, "bot"
            )
        elif seat.away:
            self._auto = loop.call_later(
                max(self.config.away_delay, _LEAST_AUTO_DELAY), self._run, "away"
            )
        elif self.deadline is not None:
            delay = max(0.0, self.deadline - time.time())
            self._auto = loop.call_later(delay, self._run, "timeout")

    def _run(self, kind: str) -> None:
        self._auto = None
        game = self.state.game
        if self.closed or game is None:
            return
        try:
            if kind == "next":
                self.submit({"type": "next"})
                return
            seat = game.turn
            seat_view = view(game, seat)
            if kind == "bot":
                policy = POLICIES[self.state.seats[seat].policy]
                rng = self._rngs.setdefault(seat, random.Random(f"{self.table_id}:{seat}"))
                action = policy(seat_view, rng)
            else:
                action = safe_move(seat_view)
            self.act(seat, self.state.number, action, None if kind == "bot" else kind)
        except RuleError as e:
            # The reason only: the message may name the seat's concealed cards.
            log.warning(
                "table %s: automatic %s move refused (%s); playing the safe move",
                self.table_id,
                kind,
                e.reason,
            )
            self._fallback()
        except Unavailable:
            pass

    def _fallback(self) -> None:
        game = self.state.game
        if game is None or game.phase not in (Phase.DRAW, Phase.PLAY):
            return
        seat = game.turn
        self.act(seat, self.state.number, safe_move(view(game, seat)), "timeout")


def _update(head: bytes, view: bytes) -> bytes:
    """The encoded WatchResponse (or PlayResponse) of an update: ``head`` is the update's
    encoding without its view, ``view`` the encoded view."""
    return message_field(UPDATE, head + message_field(UPDATE_VIEW, view))


def _cut_off(watcher: Watcher, table: Table) -> Exception:
    return Exhausted(
        "TOO_SLOW",
        f"this stream fell {table.config.watcher_queue} updates behind and was cut off; "
        f"watch again with after={watcher.last} to resume",
        after=str(watcher.last),
    )


def new_seed() -> str:
    """A fresh game seed (hex), from the operating system's randomness."""
    return secrets.token_bytes(32).hex()
