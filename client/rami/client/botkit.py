"""The bot kit: write one function from a view to an action; the kit does the rest.

It joins (or reuses a seat's token), watches the table, decides whenever it is the seat's
turn, sends the action with the number of the view it was decided on, and, when the stream
drops, reconnects and resumes from the last update it saw. A refusal is counted and answered
with a safe move, so a bot never stalls its table.

Every call that changes something (the join, each command) carries a request id. When its
answer is lost (the server restarting, the connection dropping), the kit sends the same call
again with the same id: the server applies it once and answers it as the first time, so a join
never takes two seats and every command the server applied is acknowledged to the bot.

Several servers may share one database, each playing some of its tables: a server that does
not play the bot's table refuses its calls UNAVAILABLE/TABLE_MOVED naming the one that does
(ErrorInfo metadata ``owner``), and the kit moves there and resumes; when that server can't be
reached any more (or says no server holds the table this moment), it goes back to the
``target`` it was given (a load balancer, a DNS name, or a list of servers such as
``ipv4:10.0.0.1:50051,10.0.0.2:50051``), which sends it on to the table's next owner.

Commands go on one Play stream with the updates (by default: about half the server's work
per command), or, with ``stream=False``, as unary Act calls beside a Watch stream.

>>> # asyncio.run(play("localhost:50051", table_id, my_decide, name="Mine"))
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc

from rami.engine import POLICIES, Action, Discard, Draw, Phase, View
from rami.engine.policies import make_expert
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

from .convert import action_to_request, new_request_id, view_from_proto
from .link import SILENCE, Route, heard, moved_to, refusal_reason

__all__ = [
    "CHANNEL_OPTIONS",
    "BotResult",
    "CommandRefusedError",
    "Decide",
    "play",
    "policy_decider",
]

log = logging.getLogger("rami.client.bot")

Decide = Callable[[View], Action]
TOKEN_METADATA = "rami-token"
#: Come back quickly after a server restart: gRPC's default backoff grows to two minutes. And
#: find a server that stopped answering (frozen, or cut off by the network, its connection
#: still open): a ping every 20 s, the connection dropped when one is not answered within 10 s
#: (gRPC stops pinging after 2 pings with no data sent, unless told not to; a bot waiting for
#: its turn sends none).
CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.max_pings_without_data", 0),
]

#: The most bots of one process that share a connection to a server. gRPC's channels of one
#: process share one connection when their target and settings are the same, and a server
#: bounds the calls open at once on a connection (``rami-server --max-streams-per-connection``,
#: 256 by default): beyond it, a bot's stream would wait for a place as long as the other
#: bots' streams last. A bot holds one stream on the Play stream, two with unary Act.
BOTS_PER_CONNECTION = 64
#: Failures a bot resumes after, with a growing pause (at most ``max_reconnects`` times): the
#: server restarting, or being killed mid-call, shows as any of these (gRPC's own
#: "Internal error from Core" and UNKNOWN included).
_RETRY = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
}
#: Failures after which a call's answer may have been lost: the call is sent again, with the
#: same request id (RESOURCE_EXHAUSTED is answered by waiting, as a refusal).
_LOST = _RETRY - {grpc.StatusCode.RESOURCE_EXHAUSTED}
_CODES = {c.value[0]: c for c in grpc.StatusCode}
R = TypeVar("R")
#: A command refused for its content is answered once with a safe move.
_REFUSED = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT)
#: Refusals of a command on a Play stream that end the stream: the command is sent again on
#: the next one (resumed where the table is played now).
_ENDING = ("TABLE_MOVED", "SHUTTING_DOWN")


#: The most times a bot moves to another server during one game (a table's owner, or back).
_MOVES = 1000


#: The channels this process opened, by target (see ``_channel_options``).
_OPENED: dict[str, int] = {}


def _channel_options(target: str) -> list[tuple[str, Any]]:
    """A bot's channel's options: each BOTS_PER_CONNECTION channels opened to a target get a
    connection of their own (channels whose settings differ, here by a setting of the kit's
    own, never share one)."""
    opened = _OPENED[target] = _OPENED.get(target, 0) + 1
    return [*CHANNEL_OPTIONS, ("rami.connection", (opened - 1) // BOTS_PER_CONNECTION)]


class _Route:
    """The server a bot talks to and its stubs there: a :class:`~rami.client.link.Route`
    (the client's one rule of moving to a table's owner and back), with a growing pause when
    the moves go back and forth with nothing getting through."""

    def __init__(
        self,
        target: str,
        channel: grpc.aio.Channel | None,
        credentials: grpc.ChannelCredentials | None,
    ) -> None:
        self.route = Route(
            target, credentials, options=_channel_options, given=channel, max_moves=_MOVES
        )
        #: Moves since a call last got through (see :meth:`settled`).
        self.hops = 0

    @property
    def table(self) -> table_service_pb2_grpc.TableServiceStub:
        return self.route.table

    @property
    def lobby(self) -> lobby_service_pb2_grpc.LobbyServiceStub:
        return self.route.lobby

    async def follow(self, error: grpc.aio.AioRpcError) -> bool:
        """After a failed call: move to the table's owner when the server named another
        (TABLE_MOVED), or back to the target given when none holds it this moment or the
        owner followed can't be reached. True when it moved: call again at once."""
        owner = moved_to(error)
        if not self.route.follow(error):
            return False
        self.hops += 1
        log.info("table moved (%s): going to %s", error.details(), self.route.at)
        # Back and forth with nothing getting through (a takeover under way: the server
        # given names the dead owner until its lease runs out): a longer wait at each hop,
        # as after a drop; with no owner yet, at least a moment for the takeover.
        pause = _pause(self.hops - 1) if self.hops > 1 else 0.0
        if pause or not owner:
            await asyncio.sleep(max(pause, 0.0 if owner else 0.1))
        return True

    def settled(self) -> None:
        """A call got through where the route is: the next move is made at once."""
        self.hops = 0

    async def close(self) -> None:
        await self.route.close()


class CommandRefusedError(Exception):
    """The server refused a command on a Play stream for a reason a bot can't answer (the
    seat is not this token's, the table is gone...)."""


@dataclass
class BotResult:
    """How a bot's game went."""

    seat: int = -1
    token: str = ""
    actions: int = 0
    refused: list[str] = field(default_factory=list)
    reconnects: int = 0
    #: Drops in a row since a stream last brought an update: what ``max_reconnects`` bounds
    #: (a bot that comes back each time may be dropped any number of times in a game).
    streak: int = 0
    #: Commands the server asked to send again later (its per-seat rate limit).
    rate_limited: int = 0
    final: game_pb2.View | None = None
    acknowledged: list[int] = field(default_factory=list)
    #: Calls sent again with their request id after their answer was lost.
    retries: int = 0
    #: The randomness this bot sent for the deal when it joined, and the table's commitment to
    #: its deals as it was then: the game's record must show both (docs/records.md).
    entropy: bytes = b""
    deal_commitment: str = ""
    #: What a server last answered to a call it refused for now and the bot tried again
    #: (UNAVAILABLE with its reason, and its words): '' while every failure was a server out
    #: of reach. A bot given up can tell "no server answered" from "it answered, not yet".
    answered: str = ""
    #: Following the table from where it is, after a refusal of updates it has not reached
    #: (a server restored from a backup), until an update comes.
    restarted: bool = False


def policy_decider(name: str, seed: int | str = 0, expert_budget: float | None = None) -> Decide:
    """A decide function from one of the engine's policies (random, greedy, strong, expert;
    ``expert_budget``: the expert's budget per move, when not its default)."""
    policy = POLICIES[name]
    if name == "expert" and expert_budget is not None:
        policy = make_expert(expert_budget)
    rng = random.Random(seed)
    return lambda v: policy(v, rng)


def _safe(v: View) -> Action:
    if v.phase == Phase.DRAW:
        return Draw("stock")
    assert v.hand is not None
    return Discard(v.drawn if v.drawn is not None and v.drawn in v.hand else v.hand[-1])


def _my_turn(v: game_pb2.View) -> bool:
    return (
        v.HasField("seat")
        and v.seat == v.turn
        and v.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY)
    )


async def play(
    target: str,
    table_id: str,
    decide: Decide,
    *,
    name: str = "Bot",
    seat: int | None = None,
    token: str | None = None,
    channel: grpc.aio.Channel | None = None,
    max_reconnects: int = 20,
    credentials: grpc.ChannelCredentials | None = None,
    stream: bool = True,
    on_join: Callable[[BotResult], None] | None = None,
    result: BotResult | None = None,
    silence: float = SILENCE,
) -> BotResult:
    """Play one game at ``table_id`` on the server at ``target`` until it is over.

    ``credentials`` (``grpc.ssl_channel_credentials(...)``) speak TLS to the server; without
    them the channel is plaintext. A ``channel`` given is used as it is (for the target; a
    table's owner elsewhere gets a channel of its own). ``stream``: commands on the Play
    stream; False: unary Act calls beside a Watch stream. ``on_join`` is called once the bot
    has joined (not when it takes a seat back with ``token``), with the seat and the token
    it holds: keep the token to take the seat back after a crash. ``result``, when given, is
    the one filled and returned: what it says so far can be read after a timeout. A stream
    that brings nothing for ``silence`` seconds is taken for dead and opened again."""
    route = _Route(target, channel, credentials)
    if result is None:
        result = BotResult()
    try:
        run = _play_stream if stream else _play
        return await run(
            route, table_id, decide, name, seat, token, max_reconnects, result, silence, on_join
        )
    finally:
        await route.close()


async def _play(
    route: _Route,
    table_id: str,
    decide: Decide,
    name: str,
    seat: int | None,
    token: str | None,
    max_reconnects: int,
    result: BotResult,
    silence: float = SILENCE,
    on_join: Callable[[BotResult], None] | None = None,
) -> BotResult:
    metadata = await _join(route, table_id, name, seat, token, result, max_reconnects, on_join)
    last: int | None = None  # the latest update received
    decided = -1  # the latest update number this bot has acted on
    while True:
        try:
            stream = route.table.Watch(
                table_service_pb2.WatchRequest(table_id=table_id, after=_early(last)),
                metadata=metadata,
            )
            try:
                async for msg in heard(stream, silence):
                    if not msg.HasField("update"):
                        if _beneath(msg, last, result):
                            last = None  # from the table as it is now
                            break
                        continue
                    view = msg.update.view
                    last = msg.update.number
                    result.streak = 0
                    result.restarted = False
                    route.settled()
                    result.seat = view.seat
                    if view.phase == game_pb2.PHASE_GAME_OVER:
                        result.final = view
                        return result
                    while _my_turn(view) and view.number > decided:
                        decided = view.number
                        after = await _act(
                            route, table_id, metadata, view, decide, result, max_reconnects
                        )
                        if after is None:
                            break
                        view = after
            finally:
                stream.cancel()  # a stream left behind would count against the seat's streams
        except grpc.aio.AioRpcError as e:
            if _behind(e, result):
                last = None  # from the table as it is now
            elif not await route.follow(e):
                await _dropped(e, result, max_reconnects, _early(last))
            decided = -1


async def _join(
    route: _Route,
    table_id: str,
    name: str,
    seat: int | None,
    token: str | None,
    result: BotResult,
    max_reconnects: int,
    on_join: Callable[[BotResult], None] | None = None,
) -> tuple[tuple[str, str], ...]:
    """Take a seat (or the seat of ``token``); the metadata of its commands."""
    if token is None:
        result.entropy = secrets.token_bytes(32)
        request = lobby_service_pb2.JoinTableRequest(
            table_id=table_id,
            name=name,
            seat=seat,
            request_id=new_request_id(),
            entropy=result.entropy,
        )
        joined = await _sent(lambda: route.lobby.JoinTable(request), result, max_reconnects, route)
        token, result.seat = joined.token, joined.seat
        result.deal_commitment = joined.table.deal_commitment
        result.token = token
        if on_join is not None:
            on_join(result)
    result.token = token
    return ((TOKEN_METADATA, token),)


async def _sent(
    call: Callable[[], Awaitable[R]],
    result: BotResult,
    max_reconnects: int,
    route: _Route | None = None,
) -> R:
    """The answer of ``call()``, a call whose request carries a request id: after a failure
    that may have lost its answer, it is sent again as it is (the server applies it once, and
    answers it as the first time), with a growing pause, at most ``max_reconnects`` times."""
    lost = 0
    while True:
        try:
            answer = await call()
        except grpc.aio.AioRpcError as e:
            if route is not None and await route.follow(e):
                continue  # to the table's owner: the same call, the same id
            if e.code() not in _LOST or lost >= max_reconnects:
                raise
            lost += 1
            result.retries += 1
            # Said at once the first time in a row (the tries may last half a minute).
            level = logging.WARNING if lost == 1 else logging.INFO
            if answered := _answered(e):
                result.answered = answered
                log.log(level, "the server answered %s; trying again", answered)
            else:
                log.log(
                    level,
                    "the server can't be reached, or its answer was lost (%s: %s); trying again",
                    e.code().name,
                    e.details(),
                )
            await asyncio.sleep(_pause(lost))
        else:
            if route is not None:
                route.settled()
            return answer


def _answered(e: grpc.aio.AioRpcError) -> str:
    """A failure the server itself sent, with its reason (``UNAVAILABLE (STORAGE_FAILED):
    ...``); '' when none came with one (no server, or the call lost on the way)."""
    reason = refusal_reason(e)
    return f"{e.code().name} ({reason}): {e.details()}" if reason else ""


def _pause(attempt: int) -> float:
    """The pause before the ``attempt``-th try again in a row (from 1): 50 ms, doubling to
    2 s. The 20 tries of ``max_reconnects`` then last about 30 s, longer than a table takes to
    move to another server when its own dies (its lease, 10 s by default, and a sweep)."""
    return min(2.0, 0.05 * 2 ** min(attempt - 1, 6))


def _early(last: int | None) -> int | None:
    """Where a stream resumes after a drop, ``last`` the latest update received: one update
    early, so that if the stream or a command failed on this seat's turn, the view it was
    decided on comes again. A command still unanswered is sent again with its request id;
    without one, the view is decided anew (a command that did get through makes that retry
    stale: ABORTED, never a second move). From the update received, not from the last try's
    start: tries that fail in a row all resume from the same place."""
    return last - 1 if last else last


def _behind(e: grpc.aio.AioRpcError, result: BotResult) -> bool:
    """Whether a stream was refused for resuming after an update the table has not reached
    (``INVALID_ARGUMENT BAD_NUMBER``): its server was restored from a backup older than what
    the bot saw. The bot then follows the table from where it is now, once in a row."""
    if e.code() != grpc.StatusCode.INVALID_ARGUMENT or refusal_reason(e) != "BAD_NUMBER":
        return False
    return _restart(result, e.details())


def _beneath(msg: Any, last: int | None, result: BotResult) -> bool:
    """Whether a heartbeat says the table is behind the latest update the bot received: a
    server gone back to a backup one update older than it (a resume one update early is not
    refused then, it is answered with this heartbeat alone). As :func:`_behind`."""
    if last is None or not msg.HasField("heartbeat") or msg.heartbeat.number >= last:
        return False
    return _restart(result, f"the table is at {msg.heartbeat.number}, the bot saw {last}")


def _restart(result: BotResult, why: str) -> bool:
    """Follow the table from where it is now, once until an update comes."""
    if result.restarted:
        return False  # so from the start too: a bug, not a restore
    result.restarted = True
    result.reconnects += 1
    log.warning(
        "the table is behind the updates this bot saw (%s): following it from where it is now",
        why,
    )
    return True


async def _dropped(
    e: grpc.aio.AioRpcError, result: BotResult, max_reconnects: int, resume: int | None
) -> None:
    """After a stream dropped: raise, or wait a little before resuming after ``resume``."""
    if e.code() not in _RETRY or result.streak >= max_reconnects:
        raise e
    result.reconnects += 1
    result.streak += 1
    # Said at once the first time in a row (a server restarting: the tries may last a while).
    level = logging.WARNING if result.streak == 1 else logging.INFO
    if answered := _answered(e):
        result.answered = answered
    log.log(
        level,
        "stream dropped (%s); resuming %s",
        answered or f"{e.code().name}: {e.details()}",
        "from the start" if resume is None else f"after {resume}",
    )
    await asyncio.sleep(_pause(result.streak))


@dataclass
class _Command:
    """A command sent on a Play stream and not yet answered."""

    number: int
    view: View
    action: Action
    attempt: int = 0
    waits: int = 0
    #: The same on every copy of the command, on this stream or the next.
    request_id: str = field(default_factory=new_request_id)


class _Stream:
    """What goes out on one Play stream: its requests, and its commands not yet answered."""

    def __init__(self, table_id: str, after: int | None) -> None:
        self.table_id = table_id
        self.out: asyncio.Queue[table_service_pb2.PlayRequest | None] = asyncio.Queue()
        self.out.put_nowait(
            table_service_pb2.PlayRequest(
                open=table_service_pb2.WatchRequest(table_id=table_id, after=after)
            )
        )
        self.pending: dict[int, _Command] = {}
        self._ids = 0
        self._later: list[asyncio.TimerHandle] = []

    def send(self, command: _Command, delay: float = 0.0) -> None:
        """Send ``command`` (after ``delay`` seconds), under a new id."""
        self._ids += 1
        self.pending[self._ids] = command
        request = table_service_pb2.PlayRequest(
            command_id=self._ids,
            act=action_to_request(
                self.table_id, command.number, command.action, command.request_id
            ),
        )
        if delay:
            loop = asyncio.get_running_loop()
            self._later.append(loop.call_later(delay, self.out.put_nowait, request))
        else:
            self.out.put_nowait(request)

    async def requests(self) -> AsyncIterator[table_service_pb2.PlayRequest]:
        """The stream's requests, until :meth:`close`."""
        while (request := await self.out.get()) is not None:
            yield request

    def close(self) -> None:
        """Send nothing more."""
        for handle in self._later:
            handle.cancel()
        self.out.put_nowait(None)


async def _play_stream(
    route: _Route,
    table_id: str,
    decide: Decide,
    name: str,
    seat: int | None,
    token: str | None,
    max_reconnects: int,
    result: BotResult,
    silence: float = SILENCE,
    on_join: Callable[[BotResult], None] | None = None,
) -> BotResult:
    """The game on Play streams: the update an accepted command became is its answer, a
    refusal comes on the stream (and the stream goes on). The commands a dropped stream left
    unanswered are sent again on the next, with their request ids: each is applied once, and
    answered (``accepted_before`` when the first copy got through)."""
    metadata = await _join(route, table_id, name, seat, token, result, max_reconnects, on_join)
    last: int | None = None  # the latest update received
    decided = -1  # the latest update number this bot has acted on
    unanswered: list[_Command] = []
    while True:
        stream = _Stream(table_id, _early(last))
        for command in unanswered:
            stream.send(command)
        result.retries += len(unanswered)
        call = route.table.Play(stream.requests(), metadata=metadata)
        try:
            async for msg in heard(call, silence):
                kind = msg.WhichOneof("kind")
                if kind == "refused":
                    if msg.refused.reason in _ENDING:
                        continue  # the stream ends: its commands go again on the next
                    command = stream.pending.pop(msg.refused.command_id, None)
                    if command is not None:
                        _refused(msg.refused, command, result, stream.send)
                    continue
                if kind == "accepted_before":
                    before = msg.accepted_before
                    command = stream.pending.pop(before.command_id, None)
                    if command is not None:
                        result.actions += 1
                        result.acknowledged.append(before.number)
                    continue
                if kind != "update":
                    if _beneath(msg, last, result):
                        last = None  # from the table as it is now: what was sent is moot
                        stream.pending.clear()
                        unanswered = []
                        decided = -1
                        break
                    continue  # a heartbeat
                view = msg.update.view
                last = msg.update.number
                result.streak = 0
                result.restarted = False
                route.settled()
                result.seat = view.seat
                if msg.HasField("accepted"):
                    stream.pending.pop(msg.accepted, None)
                    result.actions += 1
                    result.acknowledged.append(last)
                if view.phase == game_pb2.PHASE_GAME_OVER:
                    result.final = view
                    return result
                if _my_turn(view) and view.number > decided:
                    decided = view.number
                    engine_view = view_from_proto(view)
                    stream.send(_Command(view.number, engine_view, decide(engine_view)))
        except grpc.aio.AioRpcError as e:
            if _behind(e, result):
                last = None  # from the table as it is now: what was sent for later is moot
                stream.pending.clear()
            elif not await route.follow(e):
                await _dropped(e, result, max_reconnects, _early(last))
            unanswered = list(stream.pending.values())
            if not unanswered:
                decided = -1  # the view it is at comes again: decided anew
        finally:
            stream.close()
            call.cancel()  # a stream left behind would count against the seat's streams


def _refused(
    refused: table_service_pb2.CommandRefused,
    command: _Command,
    result: BotResult,
    send: Callable[[_Command, float], None],
) -> None:
    """Answer a refusal as the unary path does: stale, nothing (the newer view comes); rate
    limited, the same command a little later; refused for its content, a safe move once."""
    code = _CODES.get(refused.code, grpc.StatusCode.UNKNOWN)
    if code == grpc.StatusCode.ABORTED:
        return
    if code == grpc.StatusCode.UNAVAILABLE and command.waits < 50:
        # STORAGE_FAILED: not stored, or maybe stored (its answer lost): the same command
        # with its request id, a little later, is applied once either way.
        command.waits += 1
        send(command, min(1.0, 0.1 * command.waits))
        return
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and command.waits < 50:
        command.waits += 1
        result.rate_limited += 1
        send(command, min(1.0, 0.05 * command.waits))
        return
    if code in _REFUSED:
        result.refused.append(f"{command.action!r}: {refused.message}")
        log.warning("refused %r: %s", command.action, refused.message)
        if command.attempt == 0:
            send(_Command(command.number, command.view, _safe(command.view), attempt=1), 0.0)
        return
    raise CommandRefusedError(f"{code.name} ({refused.reason}): {refused.message}")


async def _act(
    route: _Route,
    table_id: str,
    metadata: tuple[tuple[str, str], ...],
    view: game_pb2.View,
    decide: Decide,
    result: BotResult,
    max_reconnects: int,
) -> game_pb2.View | None:
    """Decide and send one action; the view after it, or None when it is not ours to act on."""
    engine_view = view_from_proto(view)
    action = decide(engine_view)
    request = action_to_request(table_id, view.number, action, new_request_id())
    attempt, waits, lost = 0, 0, 0
    while attempt < 2:
        try:
            response = await route.table.Act(request, metadata=metadata)
        except grpc.aio.AioRpcError as e:
            if await route.follow(e):
                continue  # the same request, with the same id, at the table's owner
            if e.code() == grpc.StatusCode.ABORTED:
                return None  # the game moved on: the stream brings the newer view
            if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and waits < 50:
                waits += 1  # too many commands: the same command, a little later
                result.rate_limited += 1
                await asyncio.sleep(min(1.0, 0.05 * waits))
                continue
            if e.code() in _LOST and lost < max_reconnects:
                # Its answer may be lost: the same request, with the same id, is applied once
                # and answered as the first time.
                lost += 1
                result.retries += 1
                await asyncio.sleep(_pause(lost))
                continue
            if e.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT):
                result.refused.append(f"{action!r}: {e.details()}")
                log.warning("refused %r: %s", action, e.details())
                if attempt == 0:
                    attempt = 1
                    action = _safe(engine_view)
                    request = action_to_request(table_id, view.number, action, new_request_id())
                    continue
                return None
            raise
        route.settled()
        result.actions += 1
        result.acknowledged.append(response.number)
        return response.view
    return None
