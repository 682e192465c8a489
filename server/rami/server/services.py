"""The thin servicers: each RPC reads its request, sends a change or a read to its table (or
asks the lobby), and answers.

Refusals are raised as exceptions and turned into status codes by the decorators of
``errors.py``, the one place that maps them. A call that changes something and carries a
request id is planned as a retry first (``retries.py``): when its table's log holds the entry
its first copy made, it changes nothing and is answered from that entry.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from rami.engine import (
    POLICIES,
    Action,
    Card,
    Game,
    MalformedAction,
    Meld,
    MeldError,
    Options,
    Phase,
    RuleError,
    View,
    get_variant,
)
from rami.engine.analysis import Analysis, check_hand
from rami.engine.fair import MAX_ENTROPY
from rami.engine.steps import step_space
from rami.engine.views import seat_part
from rami.v1 import (
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    rules_service_pb2,
    rules_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

from . import convert
from .entries import Act, AddBot, Chat, Close, Entry, Join, Leave, Mark, Return
from .errors import UNDECODABLE, log_unexpected, refusal_of, streaming, unary
from .limits import RateLimiter, StreamCounter, TimeBudget
from .limits import client_address as _client
from .lobby import Lobby
from .records import record_inputs, record_json, timed_record_json
from .refusals import (
    Exhausted,
    Invalid,
    PermissionDenied,
    Precondition,
    Refusal,
    Unauthenticated,
    Unavailable,
)
from .retries import check_request_id, derived_token, mark
from .sanitize import MAX_CHAT, MAX_NAME, clean_name, clean_text, name_key
from .table import Change, Committed, Pace, Table, Watcher, stale, start_entry
from .tablestate import (
    CLOSED,
    FINISHED,
    PLAYING,
    WAITING,
    TableState,
    check_policy,
    hash_token,
)
from .thinking import Workers, analysed

__all__ = ["TOKEN_METADATA", "LobbyService", "RulesService", "TableService"]

#: The call metadata key that carries a seat's (or a table owner's) secret token.
TOKEN_METADATA = "rami-token"
#: Seconds a Play stream has to send its `open`.
OPEN_WITHIN = 10.0
#: The most commands a Play stream has queued at its table at once (its next one waits).
_PLAY_WINDOW = 8
#: Seconds of the server's time a LegalSteps call is charged besides its steps' search: what
#: gRPC's handling, the table's read and the answer cost (a flood of 17,000 calls from one
#: client spent 0.45 ms of CPU a call in all, most of it outside the search).
LEGAL_STEPS_CALL = 0.0003
#: The same for a lobby read (ListTables, GetTable): gRPC's handling and the answer's sending;
#: and, for each table a listing reads, what is not measured on the event loop: the storage's
#: reading of its row (in the storage's thread), its summary, gRPC's encoding of it. The
#: tables' conversion is measured. Unbudgeted, a client listing 200 tables back to back spent
#: 7.6 ms of the server's CPU a call (94% of a core); one sending GetTable, 0.5 ms a call.
LOBBY_READ_CALL = 0.0003
LISTED_TABLE = 0.000025

log = logging.getLogger("rami.server")

T = TypeVar("T")


def _token(context: grpc.aio.ServicerContext) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == TOKEN_METADATA:
            return value if isinstance(value, str) else value.decode(errors="replace")
    return None


class _Stranger(Refusal):
    """A token that proves nothing at this table: whose it is (someone else's, or nobody's)
    is asked of the directory once the table's task is done with the call."""

    def __init__(self, token: str, message: str) -> None:
        super().__init__("BAD_TOKEN", message)
        self.token = token


def _seat(state: TableState, token: str | None) -> int:
    """The seat ``token`` proves at this table, or UNAUTHENTICATED/PERMISSION_DENIED."""
    if not token:
        raise Unauthenticated(
            "NO_TOKEN", f"send your seat's token as the {TOKEN_METADATA!r} metadata"
        )
    seat = state.seat_of(token)
    if seat is None:
        if state.is_owner(token):
            raise PermissionDenied("NOT_SEATED", "the table's owner token holds no seat")
        raise _Stranger(token, "this token proves no seat at this table")
    return seat


def _holder(state: TableState, seat: int | None) -> str:
    """Whose a seat is: the hash of its token ("" for none: a spectator's stream). A seat's
    stream follows it (``Watcher.holder``), and its streams and commands count against it
    (``streams_per_seat``, the rate limits), so that neither a start which renumbers the seats
    nor a seat left and taken again moves any of them to another player."""
    return "" if seat is None else state.seats[seat].token_hash


def _returning_holder(state: TableState, holder: str) -> list[Entry]:
    """:func:`_returning` for the seat ``holder`` holds now (none: it left, nothing to do)."""
    seat = state.seat_held(holder)
    return [] if seat is None else _returning(state, seat)


#: The most moves of a game whose record is written on the event loop, at once (some 25 ms
#: at most: a usual game has a few hundred); a longer game's is written by a worker process,
#: which costs the call the trip there and back, and the worker's start at its first use.
RECORD_ON_LOOP = 2_000


def _owner_or_seat(state: TableState, token: str | None) -> None:
    if not token:
        raise Unauthenticated("NO_TOKEN", "send the table owner's or a seat's token")
    if state.is_owner(token) or state.seat_of(token) is not None:
        return
    raise _Stranger(token, "only the table's owner or a seated player may do this")


async def _named(lobby: Lobby, e: _Stranger) -> Refusal:
    """A stranger's refusal: "not yours" when the token proves something elsewhere, or "bad
    token" when it proves nothing on this server."""
    if await lobby.holds_token(e.token):
        return PermissionDenied("NOT_YOURS", e.message)
    return Unauthenticated("BAD_TOKEN", f"{e.message}: it proves no seat or table on this server")


def _with_start(state: TableState, entries: list[Entry]) -> list[Entry]:
    """``entries``, and the start of the game when they fill the table (one change: stored
    together, so a full table never waits)."""
    probe = [e for e in entries if isinstance(e, Join | AddBot)]
    taken = {e.seat for e in probe}
    if state.status == WAITING and all(
        s.kind != "empty" or i in taken for i, s in enumerate(state.seats)
    ):
        return [*entries, start_entry(state)]
    return entries


#: The names the server gives its bots: "Strong bot 2" (compared as ``name_key`` makes them).
_BOT_NAME = re.compile(rf"({'|'.join(POLICIES)})bot\d+")


def _check_name(state: TableState, name: str, *, bot: bool = False) -> None:
    """Refuse a player's name that passes for a built-in bot's ("Strong bot 2", in any case,
    spacing or width), and any name that a bot at the table has already."""
    key = name_key(name)
    if not key:
        raise Invalid("BAD_NAME", "a name needs a letter or a digit")
    if not bot and _BOT_NAME.fullmatch(key):
        raise Invalid("BAD_NAME", "names like a built-in bot's are kept for the bots")
    for s in state.seats:
        if s.kind == "bot" and name_key(s.name) == key:
            raise Precondition("NAME_TAKEN", f"a bot at this table is called {s.name!r} already")


def _marked(method: str, request: Message, token: str | None) -> Mark | None:
    """The mark of a call that carries its token, with its request id checked: its key is the
    id in the token's scope (None without an id, or without a token: the call is refused for
    the token's sake, as ever)."""
    request_id = check_request_id(request.request_id)  # type: ignore[attr-defined]
    if not request_id or not token:
        return None
    return mark(method, hash_token(token), request_id, request)


def _returning(state: TableState, seat: int) -> list[Entry]:
    """A seat whose player left comes back when it acts or watches with its token, while the
    game goes on (a finished game is not changed by a look at it)."""
    return [Return(seat)] if state.status == PLAYING and state.seats[seat].away else []


async def analysis(
    work: TimeBudget | None,
    analysts: Workers | None,
    client: str,
    variant: str,
    options: Options,
    hand: Sequence[Card],
    bar: int,
) -> Analysis:
    """What the solver says of ``hand``, on ``client``'s budget of server time, found in a
    worker process (:func:`in_worker`), so that a hand it takes long over holds up nothing
    else."""
    check_hand(get_variant(variant), hand)  # a refusal costs no worker
    found: Analysis = await in_worker(
        work, analysts, client, analysed, variant, options, tuple(hand), bar
    )
    return found


async def in_worker(
    work: TimeBudget | None,
    analysts: Workers | None,
    client: str,
    fn: Callable[..., tuple[T, float]],
    *args: Any,
    checked: bool = False,
    timeout: float | None = None,
) -> T:
    """``fn(*args)``'s result (``fn`` returns it with the seconds it took), found in a worker
    process (``analysts``; None: here) on ``client``'s budget of server time, and charged the
    seconds it took there. A client's calls take turns, each checked once those before it are
    charged (``checked``: this one was let in already); one whose caller goes (a deadline, a
    cancel) is finished by the worker, charged, and keeps the client's turn until then.
    ``timeout``: seconds it may take in the worker (by default the workers')."""
    if analysts is not None and analysts.closed:
        raise Unavailable("SHUTTING_DOWN", "the server is shutting down")

    async def run() -> tuple[T, float]:
        if analysts is None:
            return fn(*args)
        try:
            return await analysts.run(fn, *args, timeout=timeout, who=client)
        except Exception:
            if analysts.closed:  # stopped under it (its worker ended, or never came)
                raise Unavailable("SHUTTING_DOWN", "the server is shutting down") from None
            raise

    if work is None:
        return (await run())[0]
    async with work.turn(client):
        if not checked:
            work.check(client)
        started = time.perf_counter()
        job = asyncio.ensure_future(run())

        def charge(done: asyncio.Future[tuple[T, float]]) -> None:
            # The worker's own time; what it took to fail, when it failed.
            ok = not done.cancelled() and done.exception() is None
            work.charge(client, done.result()[1] if ok else time.perf_counter() - started)

        job.add_done_callback(charge)
        try:
            found, _ = await asyncio.shield(job)
        except asyncio.CancelledError:
            # The caller went: its work is finished and charged before the client's next.
            await asyncio.wait([job])
            raise
    return found


class RulesService(rules_service_pb2_grpc.RulesServiceServicer):
    """The rules, stateless."""

    def __init__(
        self,
        work: TimeBudget | None = None,
        analysts: Workers | None = None,
        turn_seconds: int = 0,
    ) -> None:
        #: Solver time per client address (None: unlimited).
        self.work = work
        #: Where the solver runs (None: on the event loop).
        self.analysts = analysts
        #: The variants as ListVariants answers them: with this server's turn clock.
        self.variants = convert.variants_to_proto(turn_seconds)

    @unary
    async def ListVariants(
        self, request: rules_service_pb2.ListVariantsRequest, context: grpc.aio.ServicerContext
    ) -> rules_service_pb2.ListVariantsResponse:
        return rules_service_pb2.ListVariantsResponse(variants=self.variants)

    @unary
    async def CheckMeld(
        self, request: rules_service_pb2.CheckMeldRequest, context: grpc.aio.ServicerContext
    ) -> rules_service_pb2.CheckMeldResponse:
        # A meld has at most 13 cards (the longest run), but "does this card fit that meld?"
        # is asked with 14: it is answered (not valid); only more than a hand is refused.
        if len(request.cards) > 20:
            raise Invalid("TOO_MANY_CARDS", "at most 20 cards to check (a meld has at most 13)")
        cards = convert.cards_from_proto(request.cards)
        jokers_as = convert.cards_from_proto(request.jokers_as)
        jpm = request.jokers_per_meld or 1
        if jpm not in (1, 2):
            raise Invalid("BAD_OPTION", "jokers_per_meld is 1 or 2")
        try:
            meld = Meld.from_cards(cards, jokers_as=jokers_as, jokers_per_meld=jpm)
        except MeldError as e:
            return rules_service_pb2.CheckMeldResponse(valid=False, reason=str(e))
        return rules_service_pb2.CheckMeldResponse(valid=True, meld=convert.meld_to_proto(meld))

    @unary
    async def AnalyseHand(
        self, request: rules_service_pb2.AnalyseHandRequest, context: grpc.aio.ServicerContext
    ) -> rules_service_pb2.AnalyseHandResponse:
        variant = convert.variant_from_proto(request.variant)
        options = convert.options_from_proto(request.options, variant=variant)
        if request.bar < 0:
            raise Invalid("BAD_OPTION", f"bar is 0 or more (the points to beat), not {request.bar}")
        hand = convert.cards_from_proto(request.hand)
        found = await analysis(
            self.work, self.analysts, _client(context), variant, options, hand, request.bar
        )
        return rules_service_pb2.AnalyseHandResponse(analysis=convert.analysis_to_proto(found))


class _TableCalls:
    """What the lobby and the table services share: the way to a table's queue."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby

    async def change(
        self,
        table: Table,
        plan: Callable[[TableState], Sequence[Entry]],
        reply: Callable[[Committed | None], T],
        ack: tuple[Watcher, int] | None = None,
    ) -> T:
        """A change of ``table``, its stranger's refusal named."""
        try:
            return await table.change(plan, reply, ack)
        except _Stranger as e:
            raise await _named(self.lobby, e) from None

    async def read(self, table: Table, run: Callable[[TableState], T]) -> T:
        """A read of ``table``, its stranger's refusal named."""
        try:
            return await table.read(run)
        except _Stranger as e:
            raise await _named(self.lobby, e) from None


class LobbyService(_TableCalls, lobby_service_pb2_grpc.LobbyServiceServicer):
    """Creating, finding, joining and starting tables."""

    def __init__(self, lobby: Lobby) -> None:
        super().__init__(lobby)
        c = lobby.config
        self.seat_changes = RateLimiter(
            c.seat_changes_per_second, c.seat_change_burst, "seats taken or left at a table"
        )

    @unary
    async def CreateTable(
        self, request: lobby_service_pb2.CreateTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.CreateTableResponse:
        # Its id is known across the server, and its retry answers with the owner's token.
        request_id = check_request_id(request.request_id, secret=True)
        marked = mark("CreateTable", "create", request_id, request) if request_id else None
        variant = convert.variant_from_proto(request.variant)
        options = convert.options_from_proto(request.options, variant=variant)
        decks = [list(convert.cards_from_proto(d.cards)) for d in request.stacked_decks]
        table, owner = await self.lobby.create(
            name=request.name,
            variant=variant,
            options=options,
            private=request.private,
            hand_analysis=request.hand_analysis if request.HasField("hand_analysis") else True,
            decks=decks,
            client=_client(context),
            request=marked,
            owner=(
                derived_token(request_id, "owner", server_key=self.lobby.key.token_key())
                if request_id
                else None
            ),
            # A rematch is asked for by a seat of the finished table, with its token.
            rematch_of=request.rematch_of,
            token=_token(context) if request.rematch_of else None,
            # 0 is no clock; unset, the server's default (game.proto).
            default_clock=not request.options.HasField("turn_seconds"),
        )
        summary = table.summary if isinstance(table, Table) else table
        return lobby_service_pb2.CreateTableResponse(
            table=convert.table_info(summary),
            owner_token=owner,
            # (Only a rematch made before is answered without its owner's token.)
            rematch_made_before=not owner,
        )

    @unary
    async def ListTables(
        self, request: lobby_service_pb2.ListTablesRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.ListTablesResponse:
        variant = ""
        if request.variant:
            try:
                variant = convert.variant_from_proto(request.variant)
            except MalformedAction:
                return lobby_service_pb2.ListTablesResponse()  # no table is of that variant
        status = convert.status_from_proto(request.status)
        if request.status and not status:
            return lobby_service_pb2.ListTablesResponse()
        client = _client(context)
        reads = self.lobby.reads
        reads.let_in(client, LOBBY_READ_CALL)
        tables = await self.lobby.listing(variant=variant, status=status)
        reads.charge(client, LISTED_TABLE * len(tables))
        with reads.spend(client, checked=True):
            listed = [convert.table_info(t) for t in tables]
        return lobby_service_pb2.ListTablesResponse(tables=listed)

    @unary
    async def GetTable(
        self, request: lobby_service_pb2.GetTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.GetTableResponse:
        client = _client(context)
        reads = self.lobby.reads
        reads.let_in(client, LOBBY_READ_CALL)
        info = await self.lobby.info(request.table_id)
        with reads.spend(client, checked=True):
            return lobby_service_pb2.GetTableResponse(table=convert.table_info(info))

    @unary
    async def JoinTable(
        self, request: lobby_service_pb2.JoinTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.JoinTableResponse:
        # Its id is known at the table, and its retry answers with the seat's token.
        request_id = check_request_id(request.request_id, secret=True)
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)
        name = clean_name(request.name, MAX_NAME, "player's name", required=True)
        wanted = request.seat if request.HasField("seat") else None
        if len(request.entropy) > MAX_ENTROPY:
            raise Invalid("BAD_ENTROPY", f"entropy is at most {MAX_ENTROPY} bytes")
        entropy = request.entropy.hex()
        marked = mark("JoinTable", "join", request_id, request) if request_id else None
        token = (
            derived_token(request_id, "seat", table.table_id, server_key=self.lobby.key.token_key())
            if request_id
            else secrets.token_urlsafe(24)
        )
        found: list[Join] = []
        changes = f"{table.table_id}:{_client(context)}"

        def plan(state: TableState) -> list[Entry]:
            before = state.answered(marked)
            if isinstance(before, Join):
                found.append(before)
                return []
            seat = state.free_seat(wanted)
            _check_name(state, name)
            self.seat_changes.take(changes)  # after the seat's and name's checks
            return _with_start(state, [Join(seat, name, hash_token(token), entropy, marked)])

        def reply(done: Committed | None) -> lobby_service_pb2.JoinTableResponse:
            if done is None:  # a retry: the seat its first copy took
                return lobby_service_pb2.JoinTableResponse(
                    seat=found[0].seat, token=token, table=convert.table_info(table.summary)
                )
            if done.table.state.spec.hand_analysis:
                # Its player will ask for hints: the analysis worker starts now, not then.
                self.lobby.analysts.warm()
            return lobby_service_pb2.JoinTableResponse(
                seat=done.table.state.seat_of(token) or 0,
                token=token,
                table=convert.table_info(done.table.summary),
            )

        return await self.change(table, plan, reply)

    @unary
    async def LeaveTable(
        self, request: lobby_service_pb2.LeaveTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.LeaveTableResponse:
        token = _token(context)
        marked = _marked("LeaveTable", request, token)
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)
        changes = f"{table.table_id}:{_client(context)}"

        def plan(state: TableState) -> list[Entry]:
            if state.answered(marked) is not None:
                return []  # a retry: left already
            seat = _seat(state, token)
            # After the token's and the seat's checks: a stranger, or a seat that cannot leave
            # now (ALREADY_AWAY, GAME_OVER, TABLE_CLOSED), spends none.
            state.check_leave(seat)
            self.seat_changes.take(changes)
            return [Leave(seat, marked)]

        return await self.change(
            table,
            plan,
            lambda done: lobby_service_pb2.LeaveTableResponse(
                table=convert.table_info(table.summary)
            ),
        )

    @unary
    async def AddBot(
        self, request: lobby_service_pb2.AddBotRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.AddBotResponse:
        token = _token(context)
        marked = _marked("AddBot", request, token)
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)
        wanted = request.seat if request.HasField("seat") else None
        policy = request.policy or "strong"
        check_policy(policy)  # the request's own fault, said before the table's
        seated: list[int] = []
        chosen = clean_name(request.name, MAX_NAME, "bot's name", required=False)

        def plan(state: TableState) -> list[Entry]:
            before = state.answered(marked)
            if isinstance(before, AddBot):
                seated.append(before.seat)  # a retry: the seat its first copy took
                return []
            _owner_or_seat(state, token)
            seat = state.free_seat(wanted)
            name = chosen or f"{policy.capitalize()} bot {seat + 1}"
            _check_name(state, name, bot=True)
            seated.append(seat)
            return _with_start(state, [AddBot(seat, name, policy, marked)])

        return await self.change(
            table,
            plan,
            lambda done: lobby_service_pb2.AddBotResponse(
                seat=seated[-1], table=convert.table_info(table.summary)
            ),
        )

    @unary
    async def StartTable(
        self, request: lobby_service_pb2.StartTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.StartTableResponse:
        token = _token(context)
        marked = _marked("StartTable", request, token)
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)

        def plan(state: TableState) -> list[Entry]:
            if state.answered(marked) is not None:
                return []  # a retry: started already
            _owner_or_seat(state, token)
            if state.status in (PLAYING, FINISHED):
                return []  # it started by itself (its last seat was taken): nothing to do
            return [replace(start_entry(state), request=marked)]

        return await self.change(
            table,
            plan,
            lambda done: lobby_service_pb2.StartTableResponse(
                table=convert.table_info(table.summary)
            ),
        )

    @unary
    async def CloseTable(
        self, request: lobby_service_pb2.CloseTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.CloseTableResponse:
        token = _token(context)
        marked = _marked("CloseTable", request, token)
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)

        def plan(state: TableState) -> list[Entry]:
            if state.answered(marked) is not None:
                return []  # a retry: closed already
            if not token:
                raise Unauthenticated(
                    "NO_TOKEN", f"send the table's owner token as the {TOKEN_METADATA!r} metadata"
                )
            if not state.is_owner(token):
                if state.seat_of(token) is not None:
                    raise PermissionDenied("NOT_OWNER", "only the table's creator may close it")
                raise _Stranger(token, "this token is not this table's owner token")
            if state.status == CLOSED:
                return []
            return [Close("owner", marked)]

        return await self.change(
            table,
            plan,
            lambda done: lobby_service_pb2.CloseTableResponse(
                table=convert.table_info(table.summary)
            ),
        )


class _FarResume(Pace):
    """The pace of a resume from far back: each slice of its replay is charged to the client's
    time budget, and the next waits while that budget is spent (the stream goes on, slower);
    when the replay is over, the client's slot is free again."""

    def __init__(self, work: TimeBudget, slots: StreamCounter, client: str) -> None:
        self.work = work
        self.slots = slots
        self.client = client
        self.over = False

    async def slice(self, seconds: float) -> None:
        await asyncio.sleep(self.work.charge(self.client, seconds))

    def done(self) -> None:
        if not self.over:
            self.over = True
            self.slots.close(self.client)


class TableService(_TableCalls, table_service_pb2_grpc.TableServiceServicer):
    """Playing at a table."""

    def __init__(self, lobby: Lobby) -> None:
        super().__init__(lobby)
        c = lobby.config
        self.commands = RateLimiter(c.commands_per_second, c.command_burst, "commands")
        self.chat = RateLimiter(c.chat_per_second, c.chat_burst, "chat lines")
        self.seat_streams = StreamCounter(c.streams_per_seat, "streams (Watch or Play) per seat")
        self.spectators = StreamCounter(
            c.spectator_streams_per_client, "spectator streams per client"
        )
        self.opening = StreamCounter(c.opening_streams_per_client, "Play streams not yet open")
        self.far = StreamCounter(c.far_resumes_per_client, "resumes from far back per client")
        #: The refusals of Play commands whose token's owner is being asked of the directory.
        self._naming: set[asyncio.Task[None]] = set()

    def _pace(self, client: str, after: int | None, number: int) -> _FarResume | None:
        """The pace of a resume after ``after`` on a table at ``number``: one from far back
        takes one of the client's few slots and needs time left on its budget (or is refused
        with RESOURCE_EXHAUSTED); one near the end goes at the table's own pace (None)."""
        if after is None or number - after <= self.lobby.config.far_resume:
            return None
        self.far.open(client)
        try:
            self.lobby.work.check(client)
        except BaseException:
            self.far.close(client)
            raise
        return _FarResume(self.lobby.work, self.far, client)

    @unary
    async def Act(
        self, request: table_service_pb2.ActRequest, context: grpc.aio.ServicerContext
    ) -> bytes:  # an encoded ActResponse (see ``wire``)
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)
        token = _token(context)
        seats: list[int] = []

        def seat_of(state: TableState) -> int:
            seats.append(_seat(state, token))
            return seats[0]

        # Sent encoded: the view is the one its update has just sent (see ``wire``).
        plan, answer = self._command(
            table,
            seat_of,
            request,
            token,
            _client(context),
            lambda done: convert.encode_act_response(done.last, done.table.view_bytes(seats[0])),
            lambda number, seat: convert.encode_act_response(number, table.view_bytes(seat)),
        )
        return await self.change(table, plan, answer)

    def _command(
        self,
        table: Table,
        seat_of: Callable[[TableState], int],
        request: table_service_pb2.ActRequest,
        token: str | None,
        client: str,
        reply: Callable[[Committed], T],
        again: Callable[[int, int], T],
    ) -> tuple[Callable[[TableState], list[Entry]], Callable[[Committed | None], T]]:
        """A command of a seat, from Act or from a Play stream: the same checks, the same
        pipeline. Its plan, and its answer: ``reply`` of the updates it became, or, when it
        is a retry of a command accepted before, ``again`` of that command's number and
        seat."""
        if request.request_id and request.table_id != table.table_id:
            # A Play stream's command may leave the table empty; its mark is made as an Act's
            # with the table named, so that a retry by either way is known.
            on_table = table_service_pb2.ActRequest()
            on_table.CopyFrom(request)
            on_table.table_id = table.table_id
            request = on_table
        marked = _marked("Act", request, token)
        found: list[Act] = []

        def plan(state: TableState) -> list[Entry]:
            before = state.answered(marked)
            if isinstance(before, Act):
                found.append(before)
                return []
            seat = seat_of(state)
            self.commands.take(f"{table.table_id}:{_holder(state, seat)}")
            by_steps = request.WhichOneof("action") == "steps"
            action = None if by_steps else convert.action_from_proto(request)
            if state.game is None:
                raise Precondition("NOT_STARTED", "the game has not started")
            stale(state, request.number)
            if action is None:
                # The LegalSteps work again: on the client's server time, as LegalSteps is.
                with self.lobby.work.spend(client):
                    action = _steps_action(state.game, seat, request.steps.steps)
            # The seat comes back, then moves, in one change: a refused command changes
            # nothing, its return included. The move is checked first, so that its refusal
            # finds nothing applied to undo (an applied return is undone by rebuilding the
            # table's state from its log).
            back = _returning(state, seat)
            if back:
                state.check_move(seat, action)
            return [*back, Act(seat, action, request=marked)]

        def answer(done: Committed | None) -> T:
            if done is None:
                before = found[0]
                return again(table.state.number_of(before), before.seat)
            return reply(done)

        return plan, answer

    @unary
    async def LegalSteps(
        self, request: table_service_pb2.LegalStepsRequest, context: grpc.aio.ServicerContext
    ) -> table_service_pb2.LegalStepsResponse:
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)
        token = _token(context)

        def look(state: TableState) -> tuple[Game, int, bool]:
            seat = _seat(state, token)
            game = state.game
            if game is None:
                raise Precondition("NOT_STARTED", "the game has not started")
            stale(state, request.number, question=True)
            turn = game.turn == seat and game.phase in (Phase.DRAW, Phase.PLAY)
            # A clone (cheap): the steps are found outside the table's task.
            return (game.clone() if turn else game), seat, turn

        client = _client(context)
        work = self.lobby.work
        # The call's own work, besides the steps' search (gRPC's handling, the read, the
        # answer): counted too, on the turn or off it, or a flood of calls would spend the
        # server's time unbounded (one client took two thirds of a core so).
        work.let_in(client, LEGAL_STEPS_CALL)
        game, seat, turn = await self.read(table, look)
        space = step_space(game.variant.id, game.options)
        _check_indexes(space.size, request.staged)
        if not turn:
            return table_service_pb2.LegalStepsResponse(size=space.size)
        with work.spend(client, checked=True):
            state = space.stage(game, request.staged)
            legal = space.legal_steps(game, state)
            declares = {i for i in legal if space.steps[i].kind == "declare"}
            # The complete declarations, as the seat's view lists them (none: none is).
            part = seat_part(game, seat) if declares else None
            complete = {card for card, _ in part.declarations} if part is not None else set()
            return table_service_pb2.LegalStepsResponse(
                size=space.size,
                steps=[
                    table_service_pb2.LegalStep(
                        index=i,
                        text=space.describe(i),
                        ends_move=space.ends_move(i),
                        false_declaration=i in declares and space.steps[i].card not in complete,
                    )
                    for i in legal
                ],
            )

    @unary
    async def Chat(
        self, request: table_service_pb2.ChatRequest, context: grpc.aio.ServicerContext
    ) -> table_service_pb2.ChatResponse:
        token = _token(context)
        marked = _marked("Chat", request, token)
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)
        found: list[int] = []

        def plan(state: TableState) -> list[Entry]:
            before = state.answered(marked)
            if before is not None:
                found.append(state.number_of(before))  # a retry: posted already
                return []
            seat = _seat(state, token)
            self.chat.take(f"{table.table_id}:{_holder(state, seat)}")
            text = clean_text(request.text)
            if not text:
                raise Invalid("EMPTY_CHAT", "write something printable")
            if len(text) > MAX_CHAT:
                raise Invalid(
                    "CHAT_TOO_LONG",
                    f"a chat line is at most {MAX_CHAT} characters, and this one has "
                    f"{len(text)}: say it in two",
                )
            return [Chat(seat, text, marked)]

        return await self.change(
            table,
            plan,
            lambda done: table_service_pb2.ChatResponse(number=done.first if done else found[0]),
        )

    @unary
    async def AnalyseMyHand(
        self, request: table_service_pb2.AnalyseMyHandRequest, context: grpc.aio.ServicerContext
    ) -> table_service_pb2.AnalyseMyHandResponse:
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)
        token = _token(context)

        def hand_of(state: TableState) -> View:
            seat = _seat(state, token)
            if not state.spec.hand_analysis:
                raise PermissionDenied("ANALYSIS_OFF", "this table does not allow hand analysis")
            own = state.seat_view(seat)
            if own is None:
                raise Precondition("NOT_STARTED", "the game has not started")
            return own

        own = await self.read(table, hand_of)
        # The solver runs outside the table's task, on what the seat's own view shows.
        found = await analysis(
            self.lobby.work,
            self.lobby.analysts,
            _client(context),
            own.variant.id,
            own.options,
            own.hand or (),
            own.bar,
        )
        return table_service_pb2.AnalyseMyHandResponse(analysis=convert.analysis_to_proto(found))

    @unary
    async def ExportRecord(
        self, request: table_service_pb2.ExportRecordRequest, context: grpc.aio.ServicerContext
    ) -> table_service_pb2.ExportRecordResponse:
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)
        client = _client(context)
        work = self.lobby.work
        # Let in (and charged its own handling) before any work at the table: the walk of
        # the log runs in the table's task, and a flood of calls refused only after it held
        # up the table's moves.
        work.let_in(client, LEGAL_STEPS_CALL)

        def walk(state: TableState) -> dict[str, Any]:
            with work.spend(client, checked=True):  # measured and charged as it ends
                return record_inputs(state)

        inputs = await table.read(walk)
        if len(inputs["moves"]) <= RECORD_ON_LOOP:
            with work.spend(client, checked=True):
                text, complete = record_json(inputs)
        else:
            # A long game's, by a worker process, as hand analyses are found: the engine
            # replays the whole game to write it (0.6 s for a simple game whose 50 rounds each
            # reach the turn cap), which on the event loop would hold up every table. Its time
            # there grows with the game: some 30 s for a million moves on a busy machine.
            text, complete = await in_worker(
                work,
                self.lobby.analysts,
                client,
                timed_record_json,
                inputs,
                checked=True,
                timeout=30.0 + 1e-4 * len(inputs["moves"]),
            )
        return table_service_pb2.ExportRecordResponse(record_json=text, complete=complete)

    def _open_seat_stream(self, key: str, take_over: bool) -> None:
        """Let a seat's Watch or Play stream in (``key``: the table and the seat's holder),
        or refuse it TOO_MANY_STREAMS. Let in, its open tells every stream at the table of the
        seat's presence, so it counts as one of the seat's commands: over their rate, it is
        refused RATE_LIMITED and gives its place back."""
        self.seat_streams.open(key, take_over=take_over)
        try:
            self.commands.take(key)
        except Exhausted:
            self.seat_streams.close(key)
            raise

    @streaming
    async def Watch(
        self, request: table_service_pb2.WatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:  # encoded WatchResponses
        table = self.lobby.tables.get(request.table_id) or await self.lobby.get(request.table_id)
        token = _token(context)
        after = request.after if request.HasField("after") else None

        def seat_of(state: TableState) -> tuple[int | None, int, str]:
            # No token, or the owner's token of a seatless owner: a spectator's stream.
            owner_only = bool(token) and state.is_owner(token) and state.seat_of(token) is None
            seat = _seat(state, token) if token and not owner_only else None
            table.check_after(state, after)  # before the seat comes back: a refusal changes nothing
            return seat, state.number, _holder(state, seat)

        seat, number, holder = await self.read(table, seat_of)
        client = _client(context)
        counter, key = (
            (self.spectators, client)
            if seat is None
            else (self.seat_streams, f"{table.table_id}:{holder}")
        )
        if seat is None:
            counter.open(key)
        else:
            self._open_seat_stream(key, request.take_over)
        pace = None
        # The update that brings the seat back shows it connected, as the stream makes it.
        arrival = table.arrival(holder) if seat is not None else None
        try:
            pace = self._pace(client, after, number)
            if seat is not None:
                await table.change(lambda state: _returning_holder(state, holder), lambda _: None)
            async for _, data in table.watch(
                seat, after, pace=pace, take_over=request.take_over, holder=holder, arrival=arrival
            ):
                yield data
        finally:
            if arrival is not None:
                arrival.done()
            if pace is not None:
                pace.done()
            counter.close(key)

    @streaming
    async def Play(
        self,
        requests: AsyncIterator[table_service_pb2.PlayRequest],
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[bytes]:  # encoded PlayResponses
        client = _client(context)
        self.opening.open(client)  # streams not yet open are few per client, and brief
        try:
            first = await asyncio.wait_for(anext(requests, None), OPEN_WITHIN)
        except TimeoutError:
            raise Invalid(
                "OPEN_FIRST", f"a Play stream sends `open` within {OPEN_WITHIN:g} seconds"
            ) from None
        finally:
            self.opening.close(client)
        if first is UNDECODABLE:
            raise Invalid("BAD_MESSAGE", "the request's bytes are not a valid PlayRequest")
        if first is None or first.WhichOneof("kind") != "open":
            raise Invalid("OPEN_FIRST", "a Play stream opens with `open`: the table to play at")
        table = await self.lobby.get(first.open.table_id)
        token = _token(context)
        after = first.open.after if first.open.HasField("after") else None

        def seat_of(state: TableState) -> tuple[int, int, str]:
            seat = _seat(state, token)
            table.check_after(state, after)
            return seat, state.number, _holder(state, seat)

        seat, now, holder = await self.read(table, seat_of)
        key = f"{table.table_id}:{holder}"
        self._open_seat_stream(key, first.open.take_over)
        watcher = table.watcher(seat, holder)
        commands: asyncio.Task[None] | None = None
        pace = None
        # The update that brings the seat back shows it connected, as the stream makes it.
        arrival = table.arrival(holder)
        try:
            pace = self._pace(client, after, now)
            await table.change(lambda state: _returning_holder(state, holder), lambda _: None)
            # The stream's items are encoded WatchResponses, which are PlayResponses as they
            # are (the same field numbers), and refusals (see ``wire``).
            async for number, data in table.watch(
                seat, after, watcher, pace, take_over=first.open.take_over, arrival=arrival
            ):
                if commands is None:
                    # Commands are taken once the stream watches (it has its first message):
                    # the update of each then reaches this stream, as its acknowledgement.
                    commands = asyncio.create_task(
                        self._commands(requests, table, watcher, token, _client(context))
                    )
                command = watcher.acks.pop(number, None) if number else None
                if command is not None:
                    # Appended, the field is part of the same response.
                    data += convert.encode_accepted(command)
                yield data
        finally:
            arrival.done()
            if commands is not None:
                commands.cancel()
                # Its reading may have failed as the stream ended (a read of a call being
                # torn down): nobody is left to tell.
                commands.add_done_callback(_ended)
            if pace is not None:
                pace.done()
            self.seat_streams.close(key)

    async def _commands(
        self,
        requests: AsyncIterator[table_service_pb2.PlayRequest],
        table: Table,
        watcher: Watcher,
        token: str | None,
        client: str,
    ) -> None:
        """The commands of a Play stream, each applied like an Act; a refusal goes out on the
        stream (and the stream goes on), and so does the answer to a retry of a command
        accepted before. The stream does not wait for each command's turn at the table: the
        table's task puts its answer on the stream (its update, with the ``accepted`` that
        the stream adds; or its refusal), and the commands go through the table in the order
        sent. A stream has at most ``_PLAY_WINDOW`` commands queued at once; the next waits
        for the first of them."""

        def refuse(command_id: int, e: Exception) -> None:
            code, reason, message, metadata = refusal_of(e)
            table.deliver(
                watcher,
                convert.encode_refused(command_id, code.value[0], reason, message, metadata),
            )

        def failed(command_id: int, e: Exception) -> None:  # in the table's task
            if isinstance(e, _Stranger):
                # Whose the token is, the directory says: asked outside the table's task.
                naming = asyncio.create_task(self._refuse_named(refuse, command_id, e))
                self._naming.add(naming)
                naming.add_done_callback(self._naming.discard)
                return
            if not isinstance(e, Refusal | RuleError):
                log_unexpected(log, "unexpected error in a Play command", e)
            refuse(command_id, e)

        queued: deque[asyncio.Future[Any]] = deque()
        try:
            async for request in requests:
                while queued and queued[0].done():
                    queued.popleft()
                if len(queued) >= _PLAY_WINDOW:
                    await queued.popleft()
                command_id = 0 if request is UNDECODABLE else request.command_id
                try:
                    if request is UNDECODABLE:
                        raise Invalid(
                            "BAD_MESSAGE", "the request's bytes are not a valid PlayRequest"
                        )
                    if request.WhichOneof("kind") != "act":
                        raise Invalid("NOT_A_COMMAND", "after `open`, a Play stream sends commands")
                    act = request.act
                    if act.table_id and act.table_id != table.table_id:
                        raise Invalid("OTHER_TABLE", "a Play stream plays at the table it opened")

                    def accepted_before(number: int, _: int, command_id: int = command_id) -> None:
                        table.deliver(watcher, convert.encode_accepted_before(command_id, number))

                    plan, answer = self._command(
                        table,
                        # The token's seat now, as for Act: the start renumbers the seats.
                        lambda state: _seat(state, token),
                        act,
                        token,
                        client,
                        lambda done: None,
                        accepted_before,
                    )
                    queued.append(
                        table.queue(
                            Change(
                                plan,
                                answer,
                                (watcher, command_id),
                                functools.partial(failed, command_id),
                            )
                        )
                    )
                except Exception as e:
                    while queued:  # told after the answers of the commands sent before it
                        await queued.popleft()
                    try:
                        if isinstance(e, Invalid):
                            # A message the stream refused itself (not a command, another
                            # table's, malformed) counts as a command does: a stream of such
                            # messages is answered at the seat's rate. (A table gone, moved
                            # or closing, is told as it is.)
                            self.commands.take(f"{table.table_id}:{watcher.holder}")
                    except Exhausted as limited:
                        failed(command_id, limited)
                        await asyncio.sleep(int(limited.metadata["retry_after_ms"]) / 1000)
                        continue
                    failed(command_id, e)
            # The stream's end waits for its commands (its cancellation drops those not
            # begun, as it does a command being waited for).
            while queued:
                await queued.popleft()
        except asyncio.CancelledError:
            for done in queued:
                done.cancel()
            raise

    async def _refuse_named(
        self, refuse: Callable[[int, Exception], None], command_id: int, e: _Stranger
    ) -> None:
        refuse(command_id, await _named(self.lobby, e))


def _ended(commands: asyncio.Task[None]) -> None:
    """A Play stream's commands task, done with the stream: its failure retrieved."""
    if not commands.cancelled() and commands.exception() is not None:
        log.debug("a Play stream's commands ended with its stream: %r", commands.exception())


def _steps_action(game: Game, seat: int, steps: Sequence[int]) -> Action:
    """The move an Act's ``steps`` make for ``seat`` (``StepSpace.action_of``)."""
    space = step_space(game.variant.id, game.options)
    _check_indexes(space.size, steps)
    game.check_turn(seat)
    return space.action_of(game, steps)


def _check_indexes(size: int, steps: Sequence[int]) -> None:
    """Refuse, as malformed, a step that is no index of the table's step space (a step that
    is one, but not legal then, is the engine's ILLEGAL_STEP)."""
    for n, i in enumerate(steps):
        if not 0 <= i < size:
            raise Invalid(
                "BAD_ACTION",
                f"no step {i} (the move's step {n + 1}): this table's steps are numbered"
                f" 0 to {size - 1}",
            )
