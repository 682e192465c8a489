"""The thin servicers: each RPC reads its request, calls the lobby or a table, and answers.

Refusals are raised as exceptions and turned into status codes by the decorators of
``errors.py``, the one place that maps them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator

import grpc

from rami.engine import Meld, MeldError, RuleError, get_variant
from rami.engine.analysis import analyse
from rami.v1 import (
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    rules_service_pb2,
    rules_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

from . import convert
from .errors import (
    Invalid,
    PermissionDenied,
    Precondition,
    ServiceError,
    Unauthenticated,
    log_unexpected,
    refusal_of,
    streaming,
    unary,
)
from .limits import RateLimiter, StreamCounter, TimeBudget
from .lobby import Lobby
from .records import record_json
from .sanitize import MAX_CHAT, MAX_NAME, clean_text
from .table import Table, Watcher, new_seed
from .tablestate import FINISHED, PLAYING, WAITING, hash_token
from .wire import ACT_VIEW, message_field

__all__ = ["TOKEN_METADATA", "LobbyService", "RulesService", "TableService"]

#: The call metadata key that carries a seat's (or a table owner's) secret token.
TOKEN_METADATA = "rami-token"

log = logging.getLogger("rami.server")

_STATUS = {
    WAITING: lobby_service_pb2.TABLE_STATUS_WAITING,
    PLAYING: lobby_service_pb2.TABLE_STATUS_PLAYING,
    FINISHED: lobby_service_pb2.TABLE_STATUS_FINISHED,
}


def _token(context: grpc.aio.ServicerContext) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == TOKEN_METADATA:
            return value if isinstance(value, str) else value.decode(errors="replace")
    return None


def _seat(table: Table, context: grpc.aio.ServicerContext, lobby: Lobby) -> int:
    """The seat the call's token proves at this table, or UNAUTHENTICATED/PERMISSION_DENIED."""
    token = _token(context)
    if not token:
        raise Unauthenticated(
            "NO_TOKEN", f"send your seat's token as the {TOKEN_METADATA!r} metadata"
        )
    seat = table.state.seat_of(token)
    if seat is None:
        if table.state.is_owner(token):
            raise PermissionDenied("NOT_SEATED", "the table's owner token holds no seat")
        raise _stranger(lobby, token, "this token proves no seat at this table")
    return seat


def _owner_or_seat(table: Table, context: grpc.aio.ServicerContext, lobby: Lobby) -> None:
    token = _token(context)
    if not token:
        raise Unauthenticated("NO_TOKEN", "send the table owner's or a seat's token")
    if table.state.is_owner(token) or table.state.seat_of(token) is not None:
        return
    raise _stranger(lobby, token, "only the table's owner or a seated player may do this")


def _stranger(lobby: Lobby, token: str, message: str) -> Unauthenticated | PermissionDenied:
    """A token that proves nothing here: someone else's (not yours), or nobody's (bad token)."""
    if lobby.holds_token(token):
        return PermissionDenied("NOT_YOURS", message)
    return Unauthenticated("BAD_TOKEN", f"{message}: it proves no seat or table on this server")


def table_info(table: Table) -> lobby_service_pb2.TableInfo:
    """A table as the lobby shows it."""
    s = table.state
    return lobby_service_pb2.TableInfo(
        table_id=s.table_id,
        name=s.spec.name,
        variant=convert.variant_to_proto(s.spec.variant),
        options=convert.options_to_proto(s.options),
        private=s.spec.private,
        status=_STATUS[s.status],
        seats=s.players_proto(table.connected()),
        number=s.number,
        hand_analysis=s.spec.hand_analysis,
    )


class RulesService(rules_service_pb2_grpc.RulesServiceServicer):
    """The rules, stateless."""

    def __init__(self, work: TimeBudget | None = None) -> None:
        #: Solver time per client address (None: unlimited).
        self.work = work

    @unary
    async def ListVariants(
        self, request: rules_service_pb2.ListVariantsRequest, context: grpc.aio.ServicerContext
    ) -> rules_service_pb2.ListVariantsResponse:
        return rules_service_pb2.ListVariantsResponse(variants=convert.variants_to_proto())

    @unary
    async def CheckMeld(
        self, request: rules_service_pb2.CheckMeldRequest, context: grpc.aio.ServicerContext
    ) -> rules_service_pb2.CheckMeldResponse:
        if len(request.cards) > 20:
            raise Invalid("TOO_MANY_CARDS", "a meld has at most 13 cards")
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
        options = convert.options_from_proto(request.options)
        hand = convert.cards_from_proto(request.hand)
        with self.work.spend(_client(context)) if self.work else contextlib.nullcontext():
            analysis = convert.analysis_to_proto(
                analyse(get_variant(variant), options, hand, request.bar)
            )
        return rules_service_pb2.AnalyseHandResponse(analysis=analysis)


class LobbyService(lobby_service_pb2_grpc.LobbyServiceServicer):
    """Creating, finding, joining and starting tables."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby

    @unary
    async def CreateTable(
        self, request: lobby_service_pb2.CreateTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.CreateTableResponse:
        variant = convert.variant_from_proto(request.variant)
        options = convert.options_from_proto(request.options)
        decks = [list(convert.cards_from_proto(d.cards)) for d in request.stacked_decks]
        table, owner = self.lobby.create(
            name=request.name,
            variant=variant,
            options=options,
            private=request.private,
            hand_analysis=request.hand_analysis if request.HasField("hand_analysis") else True,
            decks=decks,
            client=_client(context),
        )
        return lobby_service_pb2.CreateTableResponse(table=table_info(table), owner_token=owner)

    @unary
    async def ListTables(
        self, request: lobby_service_pb2.ListTablesRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.ListTablesResponse:
        tables = []
        for t in reversed(list(self.lobby.tables.values())):
            info = table_info(t)
            if info.private:
                continue
            if request.variant and info.variant != request.variant:
                continue
            if request.status and info.status != request.status:
                continue
            tables.append(info)
            if len(tables) >= 200:
                break
        return lobby_service_pb2.ListTablesResponse(tables=tables)

    @unary
    async def GetTable(
        self, request: lobby_service_pb2.GetTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.GetTableResponse:
        return lobby_service_pb2.GetTableResponse(
            table=table_info(self.lobby.get(request.table_id))
        )

    @unary
    async def JoinTable(
        self, request: lobby_service_pb2.JoinTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.JoinTableResponse:
        table = self.lobby.get(request.table_id)
        name = clean_text(request.name, MAX_NAME)
        if not name:
            raise Invalid("BAD_NAME", f"a name needs 1 to {MAX_NAME} printable characters")
        seat = table.state.free_seat(request.seat if request.HasField("seat") else None)
        token = secrets.token_urlsafe(24)
        table.submit({"type": "join", "seat": seat, "name": name, "token": hash_token(token)})
        self._maybe_start(table)
        return lobby_service_pb2.JoinTableResponse(
            seat=table.state.seat_of(token) or 0, token=token, table=table_info(table)
        )

    @unary
    async def LeaveTable(
        self, request: lobby_service_pb2.LeaveTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.LeaveTableResponse:
        table = self.lobby.get(request.table_id)
        seat = _seat(table, context, self.lobby)
        table.submit({"type": "leave", "seat": seat})
        return lobby_service_pb2.LeaveTableResponse(table=table_info(table))

    @unary
    async def AddBot(
        self, request: lobby_service_pb2.AddBotRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.AddBotResponse:
        table = self.lobby.get(request.table_id)
        _owner_or_seat(table, context, self.lobby)
        seat = table.state.free_seat(request.seat if request.HasField("seat") else None)
        policy = request.policy or "strong"
        name = clean_text(request.name, MAX_NAME) or f"{policy.capitalize()} bot {seat + 1}"
        table.submit({"type": "bot", "seat": seat, "name": name, "policy": policy})
        self._maybe_start(table)
        return lobby_service_pb2.AddBotResponse(seat=seat, table=table_info(table))

    @unary
    async def StartTable(
        self, request: lobby_service_pb2.StartTableRequest, context: grpc.aio.ServicerContext
    ) -> lobby_service_pb2.StartTableResponse:
        table = self.lobby.get(request.table_id)
        _owner_or_seat(table, context, self.lobby)
        table.submit({"type": "start", "seed": new_seed()})
        return lobby_service_pb2.StartTableResponse(table=table_info(table))

    def _maybe_start(self, table: Table) -> None:
        s = table.state
        if s.status == WAITING and s.filled() == len(s.seats):
            table.submit({"type": "start", "seed": new_seed()})


def _client(context: grpc.aio.ServicerContext) -> str:
    """The client's address without its port: limits are per client host."""
    peer = context.peer() or ""
    return peer.rsplit(":", 1)[0] if ":" in peer else peer


class TableService(table_service_pb2_grpc.TableServiceServicer):
    """Playing at a table."""

    def __init__(self, lobby: Lobby) -> None:
        self.lobby = lobby
        c = lobby.config
        self.commands = RateLimiter(c.commands_per_second, c.command_burst, "commands")
        self.chat = RateLimiter(c.chat_per_second, c.chat_burst, "chat lines")
        self.seat_streams = StreamCounter(c.streams_per_seat, "watch streams per seat")
        self.spectators = StreamCounter(
            c.spectator_streams_per_client, "spectator streams per client"
        )

    @unary
    async def Act(
        self, request: table_service_pb2.ActRequest, context: grpc.aio.ServicerContext
    ) -> bytes:  # an encoded ActResponse (see ``wire``)
        table = self.lobby.get(request.table_id)
        seat = _seat(table, context, self.lobby)
        number = self._act(table, seat, request)
        # Sent encoded: the view is the one its update has just sent (see ``wire``).
        head = table_service_pb2.ActResponse(number=number).SerializeToString()
        return head + message_field(ACT_VIEW, table.view_bytes(seat))

    def _act(self, table: Table, seat: int, request: table_service_pb2.ActRequest) -> int:
        """One command of a seat, from Act or from a Play stream: the same checks, the same
        table; returns the update number it became."""
        self.commands.take(f"{table.table_id}:{seat}")
        action = convert.action_from_proto(request)
        if table.state.game is None:
            raise Precondition("NOT_STARTED", "the game has not started")
        number = table.act(seat, request.number, action)
        _returns(table, seat)  # only once accepted: a refused command changes nothing
        self.lobby.finished(table)
        return number

    @unary
    async def Chat(
        self, request: table_service_pb2.ChatRequest, context: grpc.aio.ServicerContext
    ) -> table_service_pb2.ChatResponse:
        table = self.lobby.get(request.table_id)
        seat = _seat(table, context, self.lobby)
        self.chat.take(f"{table.table_id}:{seat}")
        text = clean_text(request.text, MAX_CHAT)
        if not text:
            raise Invalid("EMPTY_CHAT", "write something printable")
        number = table.submit({"type": "chat", "seat": seat, "text": text})
        return table_service_pb2.ChatResponse(number=number)

    @unary
    async def AnalyseMyHand(
        self, request: table_service_pb2.AnalyseMyHandRequest, context: grpc.aio.ServicerContext
    ) -> table_service_pb2.AnalyseMyHandResponse:
        table = self.lobby.get(request.table_id)
        seat = _seat(table, context, self.lobby)
        s = table.state
        if not s.spec.hand_analysis:
            raise PermissionDenied("ANALYSIS_OFF", "this table does not allow hand analysis")
        if s.game is None:
            raise Precondition("NOT_STARTED", "the game has not started")
        with self.lobby.work.spend(_client(context)):
            analysis = convert.analysis_to_proto(
                analyse(s.game.variant, s.options, s.game.hands[seat], s.game.bar)
            )
        return table_service_pb2.AnalyseMyHandResponse(analysis=analysis)

    @unary
    async def ExportRecord(
        self, request: table_service_pb2.ExportRecordRequest, context: grpc.aio.ServicerContext
    ) -> table_service_pb2.ExportRecordResponse:
        table = self.lobby.get(request.table_id)
        with self.lobby.work.spend(_client(context)):
            text, complete = record_json(table.state, table.entries)
        return table_service_pb2.ExportRecordResponse(record_json=text, complete=complete)

    @streaming
    async def Watch(
        self, request: table_service_pb2.WatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:  # encoded WatchResponses
        table = self.lobby.get(request.table_id)
        seat = _seat(table, context, self.lobby) if _token(context) else None
        after = request.after if request.HasField("after") else None
        table.check_after(after)  # before the seat comes back: a refused call changes nothing
        counter, key = (
            (self.spectators, _client(context))
            if seat is None
            else (self.seat_streams, f"{table.table_id}:{seat}")
        )
        counter.open(key)
        try:
            if seat is not None:
                _returns(table, seat)
            async for _, data in table.watch(seat, after):
                yield data
        finally:
            counter.close(key)

    @streaming
    async def Play(
        self,
        requests: AsyncIterator[table_service_pb2.PlayRequest],
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[bytes]:  # encoded PlayResponses
        first = await anext(requests, None)
        if first is None or first.WhichOneof("kind") != "open":
            raise Invalid("OPEN_FIRST", "a Play stream opens with `open`: the table to play at")
        table = self.lobby.get(first.open.table_id)
        seat = _seat(table, context, self.lobby)
        after = first.open.after if first.open.HasField("after") else None
        table.check_after(after)
        key = f"{table.table_id}:{seat}"
        self.seat_streams.open(key)
        watcher = table.watcher(seat)
        commands: asyncio.Task[None] | None = None
        try:
            _returns(table, seat)
            # The stream's items are encoded WatchResponses, which are PlayResponses as they
            # are (the same field numbers), and refusals (see ``wire``).
            async for number, data in table.watch(seat, after, watcher):
                if commands is None:
                    # Commands are taken once the stream watches (it has its first message):
                    # the update of each then reaches this stream, as its acknowledgement.
                    commands = asyncio.create_task(self._commands(requests, table, seat, watcher))
                command = watcher.acks.pop(number, None) if number else None
                if command is not None:
                    # Appended, the field is part of the same response.
                    data += table_service_pb2.PlayResponse(accepted=command).SerializeToString()
                yield data
        finally:
            if commands is not None:
                commands.cancel()
            self.seat_streams.close(key)

    async def _commands(
        self,
        requests: AsyncIterator[table_service_pb2.PlayRequest],
        table: Table,
        seat: int,
        watcher: Watcher,
    ) -> None:
        """The commands of a Play stream, each applied like an Act; a refusal goes out on the
        stream (and the stream goes on)."""
        async for request in requests:
            try:
                if request.WhichOneof("kind") != "act":
                    raise Invalid("NOT_A_COMMAND", "after `open`, a Play stream sends commands")
                act = request.act
                if act.table_id and act.table_id != table.table_id:
                    raise Invalid("OTHER_TABLE", "a Play stream plays at the table it opened")
                watcher.acks[self._act(table, seat, act)] = request.command_id
            except Exception as e:
                if not isinstance(e, ServiceError | RuleError):
                    log_unexpected(log, "unexpected error in a Play command", e)
                code, reason, message, metadata = refusal_of(e)
                refused = table_service_pb2.CommandRefused(
                    command_id=request.command_id,
                    code=code.value[0],
                    reason=reason,
                    message=message,
                    metadata=metadata,
                )
                try:
                    refusal = table_service_pb2.PlayResponse(refused=refused)
                    watcher.queue.put_nowait((0, refusal.SerializeToString()))
                except asyncio.QueueFull:
                    watcher.cut = True  # its stream ends, TOO_SLOW, at its next message


def _returns(table: Table, seat: int) -> None:
    """A seat whose player left comes back when it acts or watches with its token."""
    if table.state.seats[seat].away:
        table.submit({"type": "return", "seat": seat})
