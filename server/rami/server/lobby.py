"""The lobby: the tables this process holds, in front of the table directory in storage.

Storage is the truth about every table (``storage.py``): the lobby lists and finds tables
there, and keeps in memory only the tables this process plays (a cache: every unfinished table
after a restart, and finished ones that someone looked at, a bounded number of them).

On storage that several servers share, a table is played by the server that holds its lease
(``Storage.claim``): the one that created it, or the one that claimed it once its owner's lease
ran out. The lobby loads a table only once it holds its lease, renews the leases of every table
it holds (:meth:`Lobby.keep_leases`), claims the tables whose lease ran out, and drops a table
whose lease it lost (a renewal finds it taken, or an append is fenced): the table's streams and
calls then end UNAVAILABLE/TABLE_MOVED, naming the owner's address, and a call for a table
another server holds is refused the same way.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from rami.engine import Card, Options, Phase, RuleError, get_variant
from rami.engine.cards import full_deck

from .dealing import ServerKey
from .entries import Act, Close, Entry, EntryError, Mark, entry_from_dict
from .errors import log_unexpected
from .limits import KeyedLock, RateLimiter, TimeBudget
from .refusals import (
    Exhausted,
    Invalid,
    NotFound,
    PermissionDenied,
    Precondition,
    Refusal,
    Unauthenticated,
    Unavailable,
)
from .sanitize import MAX_TABLE_NAME, clean_name
from .storage import Created, RematchMade, Storage, TableRow, failure_words, is_outage
from .table import Checkpoints, Heartbeats, Table, TableConfig, moved, start_entry
from .tablestate import (
    FINISHED,
    OVER,
    PLAYING,
    WAITING,
    DealError,
    PlayerInfo,
    TableSpec,
    TableState,
    TableSummary,
    hash_token,
    table_turn_cap,
)
from .thinking import Thinker, Workers

__all__ = ["Lobby", "LobbyConfig", "summarize", "summary_of_row"]

#: The most tables ListTables answers with.
_LISTED = 200

log = logging.getLogger("rami.server.lobby")


#: Seconds, at least, in which a server back from an outage that dropped every table claims
#: only its own tables back (:meth:`Lobby.restore`): longer than a database pool takes to
#: connect again (``storage_postgres.POOL_RECONNECT``, 8 s) and sweep.
OWN_FIRST = 12.0


@dataclass(frozen=True, slots=True)
class LobbyConfig:
    """Server-wide settings for tables."""

    allow_stacked_decks: bool = False
    turn_seconds: int = 0
    max_tables_per_client: int = 20
    finished_kept: int = 500
    #: Commands (Act) per second one seat may send, and the burst it may save up.
    commands_per_second: float = 20.0
    command_burst: float = 40.0
    #: Chat lines per second one seat may send, and the burst.
    chat_per_second: float = 1.0
    chat_burst: float = 5.0
    #: Seats one client address may take or leave at one table (JoinTable, LeaveTable) per
    #: second, and the burst: each is an update to everyone there, and a new player's chat.
    seat_changes_per_second: float = 0.5
    seat_change_burst: float = 10.0
    #: Tables one client address may create per second (0: no bound), and the burst: a table
    #: closed or finished no longer counts toward ``max_tables_per_client``, but it stays in
    #: the directory.
    table_creations_per_second: float = 0.5
    table_creation_burst: float = 20.0
    #: Open watch streams per seat, and spectator streams per client address.
    streams_per_seat: int = 4
    spectator_streams_per_client: int = 64
    #: Play streams of one client address that have not sent their `open` yet.
    opening_streams_per_client: int = 16
    #: Health Watch streams, and reflection streams (v1 and v1alpha together), one client
    #: address may hold open at once, each: what generic tools use, one or two at a time.
    introspection_streams_per_client: int = 16
    #: A resume that replays more than this many updates is from far back: one client
    #: address may have this many of them replaying at once, on its time budget (``work``).
    far_resume: int = 256
    far_resumes_per_client: int = 2
    #: Server time one client address may spend in hand analyses, game records, replays from
    #: far back and LegalSteps: this share of every second, and the seconds it may save up.
    work_share: float = 0.2
    work_burst: float = 1.0
    #: The same for its lobby reads (ListTables, GetTable), on a budget of their own: a
    #: client whose analyses spent its time can still look at the lobby.
    read_share: float = 0.2
    read_burst: float = 1.0
    #: Seconds a waiting table may go without a change before the server closes it (0: never).
    waiting_expiry: float = 3600.0


def new_table_id() -> str:
    """A table id unique across servers: 80 random bits, 16 lowercase base32 characters."""
    return base64.b32encode(secrets.token_bytes(10)).decode().lower()


def could_name_a_table(table_id: str) -> bool:
    """Whether a table id sent by a client may name a stored table: at most 64 characters,
    all of them printable (no control character: PostgreSQL refuses a NUL in a string
    outright; made ids are base32). Any other id is no table's, as an id never made is, and
    storage is not asked."""
    return len(table_id) <= 64 and table_id.isprintable()


def summary_of_row(row: TableRow) -> TableSummary:
    """A table as the directory lists it, without loading it."""
    spec = TableSpec.from_dict(row.spec)
    players = tuple(
        PlayerInfo(i, s["name"], s["kind"], s["policy"], s["kind"] == "bot", away=s["away"])
        for i, s in enumerate(row.seats)
    )
    return TableSummary(
        row.table_id,
        spec.name,
        spec.variant,
        Options.from_dict(row.options),
        spec.private,
        row.status,
        players,
        row.number,
        spec.hand_analysis,
        spec.deal_commitment,
        bool(spec.decks),
        row.rematch,
    )


def rebuild(
    table_id: str,
    spec: dict[str, Any],
    entries: list[dict[str, Any]],
    secret: bytes = b"",
    checkpoints: Checkpoints | None = None,
) -> TableState:
    """A table rebuilt from its stored spec and log with its secret; an entry that does not
    read, or does not apply, raises ``EntryError`` naming the table and the entry (and a deal
    that the secret does not make raises ``DealError``, and a spec with a field this code
    does not know ``NewerTable``). ``checkpoints`` is offered the state
    on the way, for the table's replays."""
    unknown = sorted(set(spec) - _SPEC_FIELDS)
    if unknown:
        raise NewerTable(
            f"table {table_id}: its stored spec has {', '.join(unknown)}, which this server's"
            " code does not know (newer code wrote it): a server of that code plays it"
        )
    table_spec = TableSpec.from_dict(spec)
    try:
        return _replayed(table_id, table_spec, entries, secret, checkpoints)
    except _PastCap as e:
        # Its moves were played by a server of older code, which reads no cap (a cluster
        # upgraded a server at a time): the cap did not hold when they were played.
        if checkpoints is not None:
            checkpoints.clear()
        state = _replayed(table_id, replace(table_spec, turn_cap=0), entries, secret, checkpoints)
        log.warning(
            "table %s: stored entry %d goes on past its turn cap of %d (a server without the"
            " cap played that round on): the table is rebuilt, and played on, without it",
            table_id,
            e.number,
            table_spec.turn_cap,
        )
        return state


#: The fields of a stored spec this code knows (every one it ever wrote: fields are added,
#: never dropped; a field dropped from ``TableSpec`` stays here, read and unused).
_SPEC_FIELDS = frozenset(TableSpec.__dataclass_fields__)


class NewerTable(EntryError):
    """A stored table with a field of its spec this code does not know: newer code wrote
    it, and this code, reading no such field, might play it by other rules."""


class _PastCap(Exception):
    """A stored move that comes after its round ended void at the table's turn cap."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def _replayed(
    table_id: str,
    spec: TableSpec,
    entries: list[dict[str, Any]],
    secret: bytes,
    checkpoints: Checkpoints | None,
) -> TableState:
    state = TableState(table_id, spec, secret=secret)
    state.check_deal()
    for number, d in enumerate(entries, 1):
        entry: Entry | None = None
        try:
            entry = entry_from_dict(d)
            state.apply(entry)
        except (EntryError, Refusal, RuleError) as e:
            game = state.game
            if (
                isinstance(e, RuleError)
                and isinstance(entry, Act)
                and game is not None
                and game.turn_cap
                and game.phase in (Phase.ROUND_OVER, Phase.GAME_OVER)  # its last round
                and game.turn_index >= game.turn_cap
                and game.results[-1].ending == "void"
            ):
                raise _PastCap(number) from None
            raise EntryError(f"table {table_id}, stored entry {number}: {e}") from None
        if checkpoints is not None:
            checkpoints.offer(state, len(entries))
    return state


def summarize(
    spec: dict[str, Any], entries: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The seats and options of a stored table, from its log (a storage migration of tables
    made before fair deals: no secret is needed)."""
    state = rebuild("migrated", spec, entries)
    return state.directory_seats(), state.options.to_dict()


def _start_when_full(table: Table) -> None:
    """Start a waiting table whose every seat is taken (through its queue, as any change)."""

    def plan(state: TableState) -> list[Entry]:
        return [start_entry(state)] if state.is_full() else []

    table.change_later(plan)


#: What a table left out at its load is told in the log to become.
_NOT_AGAIN = "this server claims it no more: another server may, or this one once restarted"


def count_tables(count: int) -> str:
    """``1 table``, ``2 tables``: a count of tables as a log says it."""
    return f"{count} table" if count == 1 else f"{count} tables"


class Lobby:
    """The tables of one server process, and the way to every table in storage."""

    def __init__(
        self,
        storage: Storage,
        config: LobbyConfig,
        table_config: TableConfig,
        key: ServerKey | None = None,
    ) -> None:
        self.storage = storage
        self.config = config
        self.table_config = table_config
        #: The server's key: every table's secret is made from it (``dealing.py``).
        self.key = key or ServerKey.ephemeral()
        #: The tables this process holds, by id.
        self.tables: dict[str, Table] = {}
        self._loading: dict[str, asyncio.Future[Table | Refusal | None]] = {}
        #: Each client address's table creations, one at a time (see :meth:`create`).
        self._creating = KeyedLock()
        #: When the leases of this server's tables were last renewed (monotonic).
        self._renewed = time.monotonic()
        #: When the database was first found out of reach, in the outage going on (None: it
        #: answers). After an outage of a lease or more, every server has dropped its tables
        #: (or held none) and no lease is held: this server then claims back its own first
        #: (:attr:`_own_until`, the monotonic time until which it claims only those).
        self._outage_began: float | None = None
        self._own_until = 0.0
        #: Set at shutdown: no more claims.
        self._stopping = False
        #: The tables whose log this process could not rebuild: its sweeps claim them no
        #: more (each claim would fail again, an error and a new epoch a third of a lease).
        self._unbuildable: set[str] = set()
        #: Whether the shared database answered this server's last round of renewals and
        #: claims (:meth:`keep_leases`); ``on_store`` is awaited with it when it changes (the
        #: server's health says NOT_SERVING while it does not).
        self.store_answers = True
        self.on_store: Callable[[bool], Awaitable[None]] | None = None
        self._finished: OrderedDict[str, None] = OrderedDict()
        #: Server time spent on each client's analyses, records and replays from far back
        #: (shared by every service), and on its lobby reads.
        self.work = TimeBudget(
            config.work_share, config.work_burst, "solver, record and replay time"
        )
        self.reads = TimeBudget(config.read_share, config.read_burst, "lobby reading time")
        #: Where the moves of the bots that search are decided, off the event loop.
        self.thinker = Thinker(table_config.bot_workers, table_config.expert_budget)
        #: Where hands are analysed and records written, off the event loop (one worker,
        #: spawned when first used).
        self.analysts = Workers(1, 30.0, "hand analysis or record")
        #: One timer for the heartbeats of every table.
        self.heart = Heartbeats(table_config.heartbeat)
        #: Tables created, per client address (see ``LobbyConfig.table_creations_per_second``).
        self._creations = (
            RateLimiter(
                config.table_creations_per_second, config.table_creation_burst, "tables created"
            )
            if config.table_creations_per_second > 0
            else None
        )

    def _hold(
        self, state: TableState, checkpoints: Checkpoints | None = None, epoch: int = 0
    ) -> Table:
        table = Table(
            state,
            self.storage,
            self.table_config,
            self.finished,
            checkpoints,
            epoch=epoch,
            on_moved=self.moved,
            thinker=self.thinker,
            heart=self.heart,
            on_reload=self.reload,
        )
        self.tables[state.table_id] = table
        return table

    async def restore(self, share: bool = False) -> int:
        """Rebuild every unfinished table this server holds or may claim from its stored log
        (on SQLite: every one); returns how many. ``share``: claim only this server's share
        of them (their number over the servers holding leases now), in a random order, so
        that the tables of a dead server spread over the survivors (what the others leave
        is claimed at the next sweep)."""
        began = self._outage_began
        long_out = began is not None and time.monotonic() - began >= self.storage.lease_seconds
        own = share and (long_out or time.monotonic() < self._own_until)
        ids = [
            t
            for t in await self.storage.claimable(own=own)
            if t not in self.tables and t not in self._unbuildable
        ]
        if share and long_out:
            # Back after an outage that dropped every table: nobody holds a lease, and the
            # first server to sweep would count itself alone and take every table. For a
            # while from the first sweep the database answers (a lease, and at least the
            # time the others' pools take to connect again), each claims only its own back
            # (the others are alive too: they do the same), then shares what is left.
            self._outage_began = None
            grace = max(self.storage.lease_seconds, OWN_FIRST)
            self._own_until = time.monotonic() + grace
            log.info("claiming back this server's own tables first, for %g s", grace)
        most = len(ids)
        if share and ids and not own:
            random.shuffle(ids)
            most = -(-len(ids) // max(1, await self.storage.servers()))
        count = 0
        for table_id in ids:
            if count >= most or self._stopping:
                break
            if table_id in self.tables:
                continue
            try:
                if await self._load(table_id) is not None:
                    count += 1
            except Refusal:
                pass  # another server claimed it first
        return count

    def _forget(self, table: Table) -> None:
        """This process holds ``table`` no more (a table loaded since in its place stays)."""
        if self.tables.get(table.table_id) is table:
            del self.tables[table.table_id]
        self._finished.pop(table.table_id, None)

    def moved(self, table: Table, owner: str, *, told: bool = False) -> None:
        """Drop a table whose lease this server lost: its streams and calls end
        UNAVAILABLE/TABLE_MOVED naming ``owner``, and it never acts here again (``told``:
        the log has said why already)."""
        self._forget(table)
        if table.moved_to is None and not told:
            if owner and owner == getattr(self.storage, "address", None):
                # A server replacing a dead one at its address takes its tables at once; a
                # live one given this server's address takes them too. This one then stops
                # taking tables by address, so that the two do not take them from each
                # other while their games stall.
                log.error(
                    "table %s: taken by another server that advertises this server's address"
                    " (%s) while this one runs; give each server its own --advertise (this"
                    " one takes no table by its address from now on)",
                    table.table_id,
                    owner,
                )
                self.storage.twin_seen()
            else:
                log.warning(
                    "table %s: its lease was taken over; dropped (owner now: %s)",
                    table.table_id,
                    owner or "none yet",
                )
        table.close(moved_to=owner)
        asyncio.get_running_loop().create_task(table.closing(), name=f"moved {table.table_id}")

    def reload(self, table: Table) -> None:
        """Drop a table whose memory may be behind its stored log, and load it again from the
        log (at once: a table of bots alone has nobody to call for it). Its streams and calls
        end UNAVAILABLE/TABLE_MOVED, "call again in a moment", and resume on the table as
        stored."""
        self._forget(table)
        table.close(moved_to="")

        async def again() -> None:
            await table.closing()
            try:
                await self._load(table.table_id)
            except Refusal:
                pass  # another server holds it now
            except Exception as e:  # the store out of reach: the next call loads it
                log.warning("table %s: not loaded again (%s)", table.table_id, type(e).__name__)

        asyncio.get_running_loop().create_task(again(), name=f"reload {table.table_id}")

    def held(self) -> dict[str, int]:
        """The leases of the tables this server holds: table id -> epoch."""
        return {t.table_id: t.epoch for t in self.tables.values() if not t.closed}

    async def renew_leases(self) -> bool:
        """Renew this server's leases in one statement, and drop the tables it lost; returns
        whether the database answered. When no renewal has got through for a whole lease
        (the database out of reach), every table is dropped: another server may hold them
        by now."""
        held = self.held()
        try:
            lost = await self.storage.renew(held)
        except Exception as e:
            if time.monotonic() - self._renewed > self.storage.lease_seconds:
                log.error(
                    "leases not renewed for %g s (%s): dropping every table",
                    self.storage.lease_seconds,
                    failure_words(e),
                )
                for table in list(self.tables.values()):
                    self.moved(table, "", told=True)
            else:
                log.warning("leases not renewed (%s); trying again", failure_words(e))
            await self._store_reached(e)
            return False
        self._renewed = time.monotonic()
        for table_id in lost:
            table = self.tables.get(table_id)
            if table is None or table.epoch != held[table_id]:
                continue
            try:
                owner, ours = await self.storage.owner_of(table_id)
            except Exception:
                owner, ours = "", False
            if ours:
                # A claim of this server's own, given up on and carried out later by the
                # database (its epoch moved past the table's here): not another server with
                # this one's address. The table is loaded again, at the epoch it holds now.
                log.warning("table %s: its lease moved to a later claim of this server's", table_id)
                self.reload(table)
            else:
                self.moved(table, owner)
        return True

    async def keep_leases(self) -> None:
        """This server's task on shared storage: every third of a lease, renew the leases it
        holds, then claim (and load) the tables whose lease ran out. Whether the database
        answered both is the server's health (:attr:`store_answers`)."""
        seconds = self.storage.lease_seconds
        if seconds <= 0:
            return
        while not self._stopping:
            await asyncio.sleep(seconds / 3)
            if self._stopping:
                return
            renewed = await self.renew_leases()
            try:
                await self.restore(share=True)
            except Exception as e:
                log.warning("could not claim orphaned tables (%s)", failure_words(e))
                # A failure that is no outage (a bug) is the database answering all the same.
                if is_outage(e) or not renewed:
                    await self._store_reached(e)
                    continue
            if renewed:
                await self._store_reached(None)

    async def _store_reached(self, error: BaseException | None) -> None:
        """The database answered (``error`` None) or failed as an outage: tell
        :attr:`on_store` when that changes. Any other failure (a bug) is not the database
        out of reach, and leaves the health as it is."""
        if error is not None and not is_outage(error):
            return
        answers = error is None
        if not answers and self._outage_began is None:
            self._outage_began = time.monotonic()
        elif answers:
            self._outage_began = None
        if answers == self.store_answers or self._stopping:
            return
        self.store_answers = answers
        if answers:
            log.warning("the database answers again: serving")
        else:
            log.warning(
                "the database is out of reach (%s): the health check says NOT_SERVING until"
                " it answers",
                failure_words(error) if error is not None else "",
            )
        if self.on_store is not None:
            await self.on_store(answers)

    def stopping(self) -> dict[str, int]:
        """At shutdown: claim nothing more; the leases this server holds, to release once
        their tables' last appends are stored (:meth:`release`)."""
        self._stopping = True
        return self.held()

    async def release(self, held: dict[str, int]) -> None:
        """At shutdown, after the last appends: end these leases (:meth:`stopping`), so that
        other servers claim the tables at once."""
        self._stopping = True
        if not held or self.storage.lease_seconds <= 0:
            return
        try:
            await self.storage.release(held)
        except Exception as e:
            log.warning("leases not released (%s): they run out", type(e).__name__)
        else:
            log.info(
                "released the lease%s of %s", "" if len(held) == 1 else "s", count_tables(len(held))
            )

    async def _load(self, table_id: str) -> Table | None:
        """Load a stored table into this process (once, however many ask at the same time),
        once it holds its lease; TABLE_MOVED when another server holds it."""
        loading = self._loading.get(table_id)
        if loading is not None:
            got = await asyncio.shield(loading)
            if isinstance(got, Refusal):
                raise got
            return got
        loading = self._loading[table_id] = asyncio.get_running_loop().create_future()
        table: Table | None = None
        refusal: Refusal | None = None
        try:
            table = self.tables.get(table_id)
            if table is not None:
                return table
            if self._stopping:
                refusal = moved(table_id, "")
                raise refusal
            if table_id in self._unbuildable:
                return None  # its rebuild failed here: a claim would fail again, and count
            lease = await self.storage.claim(table_id)
            if lease is None:
                return None
            if lease.epoch is None:
                refusal = moved(table_id, lease.owner)
                raise refusal
            stored = await self.storage.load_table(table_id)
            if stored is not None:
                c = self.table_config
                checkpoints = Checkpoints(c.checkpoint_every, c.checkpoints)
                try:
                    nonce = stored.row.spec.get("deal_nonce", "")
                    secret = self.key.table_secret(table_id, nonce)
                    state = rebuild(table_id, stored.row.spec, stored.entries, secret, checkpoints)
                except Exception as e:
                    self._unbuildable.add(table_id)
                    if isinstance(e, DealError | NewerTable):  # name the table, never a card
                        log.error("%s; the table is left out (%s)", e, _NOT_AGAIN)
                    else:
                        log_unexpected(
                            log,
                            f"table {table_id} could not be rebuilt; left out ({_NOT_AGAIN})",
                            e,
                        )
                else:
                    table = self.tables.get(table_id) or self._hold(state, checkpoints, lease.epoch)
                    if lease.epoch:
                        log.info("table %s: claimed at epoch %d", table_id, lease.epoch)
                    if table.status in OVER:
                        self.finished(table)
                    elif state.is_full():
                        # A log from before a full table's start was stored with its last
                        # join: it starts now instead of waiting for ever.
                        _start_when_full(table)
            if table is None and self.storage.lease_seconds > 0:
                await self.storage.release({table_id: lease.epoch})
        except Exception:
            # The store out of reach, say: those who waited for this load hear so (not that
            # there is no such table: they were told to call again in a moment).
            refusal = refusal or Unavailable(
                "STORAGE_FAILED", f"table {table_id} could not be loaded now: call again shortly"
            )
            raise
        finally:
            del self._loading[table_id]
            loading.set_result(refusal if refusal is not None else table)
        return table

    async def create(
        self,
        *,
        name: str,
        variant: str,
        options: Options,
        private: bool,
        hand_analysis: bool,
        decks: list[list[Card]],
        client: str,
        request: Mark | None = None,
        owner: str | None = None,
        rematch_of: str = "",
        default_clock: bool = True,
        token: str | None = None,
    ) -> tuple[Table | TableSummary, str]:
        """A new table and its owner's token (``owner``, or a new one). With a ``request``
        mark, a request that created a table already gets that table instead, and creates
        nothing (``owner`` is then the token derived from its id, the same every time); when
        another server plays that table, as the directory lists it.

        ``rematch_of``: the finished table whose rematch this is, at which ``token`` (the
        call's) must prove a seat. A finished table has one rematch: when it has one already,
        that table is answered with no owner token ('') and nothing is created.
        ``default_clock``: a turn clock of 0 stands for the server's default (the options did
        not say); else it is no clock."""
        if request is not None:
            assert owner is not None, "a request id's owner token is derived from it"
            before = await self.storage.created_by(request.key)
            if before is not None:
                return await self._created_before(before, request), owner
        if rematch_of:
            old = await self._rematch_check(rematch_of, token)
            was_private = bool(old.spec.get("private"))
            if private != was_private:
                # The old table names its rematch to whoever may read it: a public table's
                # listing would give away a private rematch's id. (Refused made or not.)
                raise Invalid(
                    "BAD_OPTION",
                    f"a rematch is as private as its table: send private={str(was_private).lower()}"
                    ", as that table was made",
                )
            if old.rematch:
                return await self._held_or_listed(old.rematch), ""
        v = get_variant(variant)
        if decks and not self.config.allow_stacked_decks:
            raise PermissionDenied("STACKED_DECKS_OFF", "this server does not allow stacked decks")
        for d in decks:
            if sorted(d) != sorted(full_deck(v.decks, v.jokers)):
                raise Invalid(
                    "BAD_DECK",
                    f"a stacked deck must hold exactly the {v.deck_size} cards of {variant}",
                )
        if default_clock and options.turn_seconds == 0 and self.config.turn_seconds:
            options = options.with_(turn_seconds=self.config.turn_seconds)
        table_name = clean_name(name, MAX_TABLE_NAME, "table name", required=False)
        table_name = table_name or f"{variant} table"
        # One at a time for each client address on this server, from the count of its
        # unfinished tables to the new table's row: calls sent at once would each count the
        # others' tables not yet stored, and pass the limit together.
        async with self._creating.hold(client):
            most = self.config.max_tables_per_client
            if await self.storage.active_tables(client) >= most:
                raise Exhausted(
                    "TOO_MANY_TABLES",
                    f"a client may have at most {most} unfinished tables: a table waiting for"
                    " players can be closed (CloseTable, its owner's token); a game going on"
                    " counts until it ends (the server's operator sets the bound:"
                    " --max-tables-per-client)",
                )
            if self._creations is not None:
                # After the request's checks: a refused one spends none.
                self._creations.take(client)
            owner = owner or secrets.token_urlsafe(24)
            table_id = new_table_id()
            nonce = secrets.token_hex(16)
            secret = self.key.table_secret(table_id, nonce)
            spec = TableSpec(
                table_name,
                variant,
                options,
                private,
                hand_analysis,
                hash_token(owner),
                tuple(tuple(c.code() for c in d) for d in decks),
                client,
                nonce,
                turn_cap=table_turn_cap(options),
            )
            state = TableState(table_id, spec, secret=secret)
            # The commitment is made now, before anyone can join and send entropy.
            spec = state.spec = replace(spec, deal_commitment=state.fair_deal().commitment)
            found = await self.storage.create_table(
                table_id,
                spec.to_dict(),
                state.directory_seats(),
                spec.owner_hash,
                request,
                rematch_of,
            )
        if isinstance(found, RematchMade):  # another player's rematch, stored meanwhile
            return await self._held_or_listed(found.table_id), ""
        if found is not None:  # a copy of this request, sent meanwhile, created it first
            assert request is not None
            return await self._created_before(found, request), owner
        log.info(
            "table %s: created (%s, %d seats, turn clock %s)%s",
            table_id,
            variant,
            options.players,
            f"{options.turn_seconds} s" if options.turn_seconds else "none",
            f", the rematch of {rematch_of}" if rematch_of else "",
        )
        # (A copy of this request that found it stored may have loaded it meanwhile.)
        return self.tables.get(table_id) or self._hold(state), owner

    async def _created_before(self, before: Created, request: Mark) -> Table | TableSummary:
        """The table an earlier copy of a CreateTable request made (or REQUEST_ID_REUSED, when
        that id made another request): as the directory lists it when another server plays
        it (the copy went to another server)."""
        if before.request.digest != request.digest:
            raise Invalid(
                "REQUEST_ID_REUSED",
                "this request id was used for another request: a new request needs a new id",
            )
        return await self._held_or_listed(before.table_id)

    async def _held_or_listed(self, table_id: str) -> Table | TableSummary:
        """A table made already: held here (loaded if need be), or as the directory lists it
        when another server plays it."""
        try:
            return await self.get(table_id)
        except Refusal as e:
            if e.reason != "TABLE_MOVED":
                raise
            return await self.info(table_id)

    async def _rematch_check(self, table_id: str, token: str | None) -> TableRow:
        """Refuse a rematch of ``table_id`` that ``token`` may not ask for: the table must be
        stored, its game over, and the token its seat's. Returns its directory row (its
        ``rematch``: its rematch's id, '' while it has none). Read from the directory, so that
        any server of a cluster answers alike."""
        row = await self.storage.get_table(table_id) if could_name_a_table(table_id) else None
        if row is None:
            raise NotFound("NO_SUCH_TABLE", f"no table {table_id!r} to make a rematch of")
        if not token:
            raise Unauthenticated(
                "NO_TOKEN",
                "a rematch is asked for with the token of your seat at the finished table, "
                "as the 'rami-token' metadata",
            )
        digest = hash_token(token)
        at = await self.storage.token_table(digest)
        if at is None:
            raise Unauthenticated(
                "BAD_TOKEN", "this token proves no seat or table on this server: no rematch"
            )
        if at != table_id:
            raise PermissionDenied(
                "NOT_YOURS",
                "this token proves no seat at that table: only its players make its rematch",
            )
        if digest == row.spec.get("owner_hash"):
            raise PermissionDenied(
                "NOT_SEATED",
                "the table's owner token holds no seat: a rematch is asked for with a seat's",
            )
        if row.status != FINISHED:
            why = (
                "was closed before its game began"
                if row.status in OVER
                else "is still waiting for players"
                if row.status == WAITING
                else "is still being played"
            )
            raise Precondition(
                "GAME_NOT_OVER", f"a rematch is made once the game is over: that table {why}"
            )
        return row

    async def get(self, table_id: str) -> Table:
        """The table of an id (loaded from storage when this process does not hold it), or
        NOT_FOUND."""
        table = self.tables.get(table_id)
        if table is not None:
            return table
        table = await self._load(table_id) if could_name_a_table(table_id) else None
        if table is None:
            raise NotFound("NO_SUCH_TABLE", f"no table {table_id!r}")
        return table

    async def info(self, table_id: str) -> TableSummary:
        """A table as the lobby lists it: live when this process holds it, else as stored
        (a finished table's rematch is always read from the directory: any server of a
        cluster may have made it)."""
        table = self.tables.get(table_id)
        if table is not None and table.status != FINISHED:
            return table.summary
        row = await self.storage.get_table(table_id) if could_name_a_table(table_id) else None
        if table is not None:
            return replace(table.summary, rematch=row.rematch if row is not None else "")
        if row is None:
            raise NotFound("NO_SUCH_TABLE", f"no table {table_id!r}")
        return summary_of_row(row)

    async def listing(self, *, variant: str = "", status: str = "") -> list[TableSummary]:
        """Public tables (at most 200), from the directory: of ``status``, newest first; or,
        without one, the open tables first (waiting, then playing), then the others, each
        newest first, so that tables nobody can join never push out those people can."""
        if status:
            rows = await self.storage.list_tables(variant=variant, status=status, limit=_LISTED)
        else:
            rows = []
            for open_status in (WAITING, PLAYING):
                rows += await self.storage.list_tables(
                    variant=variant, status=open_status, limit=_LISTED - len(rows)
                )
                if len(rows) == _LISTED:
                    break
            if len(rows) < _LISTED:
                seen = {r.table_id for r in rows}
                rest = await self.storage.list_tables(variant=variant, limit=_LISTED)
                rows += [r for r in rest if r.table_id not in seen][: _LISTED - len(rows)]
        out = []
        for row in rows:
            table = self.tables.get(row.table_id)
            if table is None:
                out.append(summary_of_row(row))
            elif row.rematch and table.status == FINISHED:
                out.append(replace(table.summary, rematch=row.rematch))
            else:
                out.append(table.summary)
        return out

    async def holds_token(self, token: str) -> bool:
        """True when ``token`` proves a seat or a table's ownership at any table: a refusal
        then says "not yours" (PERMISSION_DENIED) rather than "nobody" (UNAUTHENTICATED)."""
        return await self.storage.token_known(hash_token(token))

    def finished(self, table: Table) -> None:
        """Keep only the most recent finished tables in memory (the rest reload on demand)."""
        if table.status not in OVER:
            return
        self._finished[table.table_id] = None
        self._finished.move_to_end(table.table_id)
        while len(self._finished) > self.config.finished_kept:
            old, _ = self._finished.popitem(last=False)
            t = self.tables.get(old)
            if t is not None and not t.watchers:
                del self.tables[old]
                t.close()
                asyncio.get_running_loop().create_task(self._evict(t), name=f"evict {old}")

    async def _evict(self, table: Table) -> None:
        """End an evicted table's change under way, then its lease (any server may load it)."""
        await table.closing()
        if self.storage.lease_seconds > 0 and table.moved_to is None:
            try:
                await self.storage.release({table.table_id: table.epoch})
            except Exception as e:
                log.warning("table %s: lease not released (%s)", table.table_id, type(e).__name__)

    def expire_waiting(self) -> int:
        """Close every waiting table that has gone ``waiting_expiry`` seconds without a change
        in this process (each through its queue, as any change); returns how many were asked."""
        expiry = self.config.waiting_expiry
        if expiry <= 0:
            return 0
        now = time.monotonic()
        asked = 0
        for table in list(self.tables.values()):
            if table.status != WAITING or now - table.changed_at < expiry:
                continue

            def plan(state: TableState, t: Table = table) -> list[Entry]:
                # Still waiting, and still idle: a join that came first keeps it open.
                idle = time.monotonic() - t.changed_at >= expiry
                return [Close("expired")] if state.status == WAITING and idle else []

            table.change_later(plan)
            asked += 1
        return asked

    async def expire_forever(self) -> None:
        """Close idle waiting tables, checking a few times per expiry (the server's task)."""
        period = min(60.0, max(0.05, self.config.waiting_expiry / 4))
        while self.config.waiting_expiry > 0:
            await asyncio.sleep(period)
            self.expire_waiting()

    def close(self) -> None:
        """Stop every table's automatic moves and streams; refuse what is queued."""
        for t in self.tables.values():
            t.close()

    async def closing(self) -> None:
        """Until every table has ended the change under way (see ``Table.closing``)."""
        await asyncio.gather(*(t.closing() for t in self.tables.values()))
