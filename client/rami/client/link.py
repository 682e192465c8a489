"""The client's connection to a server: calls in plain words, and a watch stream that survives.

:class:`Link` wraps one gRPC channel. Its calls raise :class:`Refused` with the server's own
reason when the server says no, and :class:`Unreachable` when the server can't be reached, so
the interface never shows a traceback. A call that changes something carries a request id,
and when its answer is lost with the connection it is sent again with the same id, so the
server applies it once. :meth:`Link.updates` watches a table and, when the connection drops,
waits for it to come back and resumes from the last update it saw (``WatchRequest.after``),
telling the caller through ``on_status``.

Several servers may share one database, each playing some of its tables: a call for a table
that reaches a server that does not play it is refused UNAVAILABLE/TABLE_MOVED with the
address of the one that does (ErrorInfo metadata ``owner``). The link then moves to that
server, and calls again there (a stream resumes after its last update); when the server it
moved to can't be reached any more, it goes back to the address it was given, which finds the
table's new owner.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from rami.v1 import (
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

from .convert import new_request_id
from .safetext import safe

__all__ = [
    "CALL_WAIT",
    "DEFAULT_PORT",
    "SILENCE",
    "TOKEN_METADATA",
    "Answered",
    "Link",
    "LinkError",
    "NotSent",
    "Refused",
    "Route",
    "Unreachable",
    "heard",
    "moved_to",
    "next_first",
    "parse_address",
    "plain_error",
    "refusal_reason",
]

DEFAULT_PORT = 50051
TOKEN_METADATA = "rami-token"

_CHANNEL_OPTIONS = [
    # Come back quickly after a server restart: the default backoff grows to two minutes.
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2000),
    # A server that stopped answering (frozen, cut off, its connection still open): a ping
    # every 20 s, the connection dropped when one is not answered within 10 s; gRPC stops
    # pinging after 2 pings with no data sent unless told not to, and a player reading the
    # table sends none.
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.max_pings_without_data", 0),
    # A game record (``save``) passes gRPC's default 4 MB a message in a long game: some 120
    # bytes an update, and rounds that reach the server's turn cap have 1,000 updates each.
    ("grpc.max_receive_message_length", 256 << 20),
]
#: Seconds a stream may bring nothing (no update, no heartbeat: the server leaves none silent
#: past 15 s) before it is taken for dead and opened again: a server that froze, or one whose
#: table another server has taken over meanwhile (the stream is then followed to it).
SILENCE = 45.0
_LOST = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.INTERNAL,
}
#: After these, a call's answer may have been lost on the way: a call with a request id is
#: sent again (a call that ran out of time is not: its time is spent).
_RESEND = _LOST - {grpc.StatusCode.DEADLINE_EXCEEDED}
#: The most times one call is sent again.
_RESENDS = 10
#: The most times a link moves to another server (a table's owner), for its whole life.
_MOVES = 10_000

R = TypeVar("R", bound=Message)


class LinkError(Exception):
    """A call that did not go through, with its reason in plain words."""


class Refused(LinkError):
    """The server refused the call; ``code`` and ``reason`` say why, the message in words."""

    def __init__(self, message: str, code: grpc.StatusCode, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


#: How long a call waits, for the connection to come back as for the answer (seconds).
CALL_WAIT = 10.0


class Unreachable(LinkError):
    """The server could not be reached (or did not answer in time)."""


class NotSent(Unreachable):
    """A call never sent: the connection was down for the whole of its wait."""


class Answered(Unreachable):
    """The server answered that it cannot do it this moment (UNAVAILABLE with its reason:
    its table store out of reach, say); its words say whether the call was made."""


#: The schemes of gRPC's own target names (``dns:///host:port``, ``ipv4:a:p,b:p``, ...), which
#: name one server or several (docs/operations.md: a cluster's servers).
GRPC_SCHEMES = ("dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:", "vsock:", "xds:")


def parse_address(text: str) -> str:
    """``HOST[:PORT]`` as a gRPC target (port 50051 when left out); a gRPC target name with
    its scheme (``dns:///rami.example:50051``, ``ipv4:10.0.0.1:50051,10.0.0.2:50051``) as it is.

    >>> parse_address("localhost"), parse_address("10.0.0.2:6000"), parse_address("[::1]")
    ('localhost:50051', '10.0.0.2:6000', '[::1]:50051')
    >>> parse_address("ipv4:10.0.0.1:50051,10.0.0.2:50051")
    'ipv4:10.0.0.1:50051,10.0.0.2:50051'
    """
    text = text.strip()
    if not text:
        raise ValueError("give the server's address as HOST or HOST:PORT")
    if text.startswith(GRPC_SCHEMES):
        return text
    if text.startswith("["):
        host, _, rest = text.partition("]")
        port = rest.lstrip(":") or str(DEFAULT_PORT)
        host += "]"
    elif text.count(":") == 1:
        host, port = text.split(":")
    elif ":" in text:
        # An IPv6 address alone (its port, when one is given, comes after its brackets).
        try:
            host, port = f"[{ipaddress.IPv6Address(text)}]", str(DEFAULT_PORT)
        except ValueError:
            raise ValueError(
                f"{text!r} is not an address: write HOST or HOST:PORT (an IPv6 address with "
                "a port in brackets: [::1]:50051)"
            ) from None
    else:
        host, port = text, str(DEFAULT_PORT)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{port!r} is not a port number (1 to 65535)")
    if not host:
        raise ValueError("give the server's host name before the port")
    return f"{host}:{port}"


def next_first(target: str) -> str | None:
    """A gRPC target naming several servers (``ipv4:A,B,C``, ``ipv6:[A],[B]``) with its first
    put last, so that a channel tries the next one first; None for a target of one server (a
    name a resolver turns into several is its balancer's to spread)."""
    scheme, colon, rest = target.partition(":")
    if not colon or scheme not in ("ipv4", "ipv6") or rest.startswith("//"):
        return None
    servers = rest.split(",")
    if len(servers) < 2:
        return None
    return f"{scheme}:{','.join([*servers[1:], servers[0]])}"


def refusal_reason(error: grpc.aio.AioRpcError) -> str:
    """The machine-readable reason (google.rpc.ErrorInfo), when the server sent one."""
    info = _info(error)
    return str(info.reason) if info is not None else ""


async def heard(call: Any, silence: float) -> AsyncIterator[Any]:
    """The messages of a server stream, until it ends; UNAVAILABLE (a dropped stream, to open
    again) when none comes for ``silence`` seconds of waiting for one: the server sends a
    heartbeat at least every 15 s, so a stream silent for much longer is dead, though its connection
    may look open. (The call is cancelled by a timer: a read awaited under a timeout of its own
    was seen to never end when cancelled.)"""
    loop = asyncio.get_running_loop()
    lapsed = False

    def lapse() -> None:
        nonlocal lapsed
        lapsed = True
        call.cancel()

    timer = loop.call_later(silence, lapse)
    try:
        async for msg in call:
            timer.cancel()
            yield msg  # the time the reader takes over a message is not the server's silence
            timer = loop.call_later(silence, lapse)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if not lapsed or (task is not None and task.cancelling()):
            raise  # the reader's own cancellation, never taken for a silent server
        raise grpc.aio.AioRpcError(
            grpc.StatusCode.UNAVAILABLE,
            grpc.aio.Metadata(),
            grpc.aio.Metadata(),
            details=f"nothing came from the server for {silence:g} s",
        ) from None
    finally:
        timer.cancel()


def moved_to(error: grpc.aio.AioRpcError) -> str | None:
    """When a server refused a call because another server plays the table
    (UNAVAILABLE/TABLE_MOVED): that server's ``HOST:PORT``, or '' when none does right now
    (call again in a moment, on any server). None for any other error."""
    if error.code() != grpc.StatusCode.UNAVAILABLE:
        return None
    info = _info(error)
    if info is None or info.reason != "TABLE_MOVED":
        return None
    return str(info.metadata.get("owner", ""))


def _rate_limited(error: grpc.aio.AioRpcError) -> float | None:
    """The seconds a call refused RATE_LIMITED is to wait (its retry_after_ms, at most 5 s),
    or None for any other error."""
    if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return None
    info = _info(error)
    if info is None or info.reason != "RATE_LIMITED":
        return None
    try:
        return min(5.0, max(0.05, int(info.metadata["retry_after_ms"]) / 1000))
    except (KeyError, ValueError):
        return 1.0


def _info(error: grpc.aio.AioRpcError) -> Any:
    """The google.rpc.ErrorInfo of a refusal, or None."""
    try:
        from google.rpc import error_details_pb2  # type: ignore[import-untyped]
        from grpc_status import rpc_status

        status = rpc_status.from_call(error)  # type: ignore[arg-type]
    except Exception:
        return None
    if status is None:
        return None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info
    return None


def plain_error(error: grpc.aio.AioRpcError, target: str) -> LinkError:
    """A gRPC error as a :class:`LinkError` whose message a person can read."""
    code = error.code()
    details = safe(error.details() or "")
    if code == grpc.StatusCode.UNAVAILABLE:
        if details and _info(error) is not None:  # it answered: its store is down, say
            return Answered(f"the server at {target} answered that {details}")
        return Unreachable(f"the server at {target} can't be reached right now")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return Unreachable(f"the server at {target} did not answer in time")
    if code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNIMPLEMENTED):
        return Refused(f"the server could not do that ({details or code.name.lower()})", code)
    message = details or code.name.lower().replace("_", " ")
    return Refused(message, code, refusal_reason(error))


#: The states of a channel trying to connect, never connected since.
_CONNECTING = (grpc.ChannelConnectivity.CONNECTING, grpc.ChannelConnectivity.TRANSIENT_FAILURE)


class _Down:
    """Watches a channel that is not connected while a call waits for it (``wait_for_ready``:
    the call goes out the moment it connects): whether it stayed down all along."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        #: A state other than trying to connect was seen (connected, or idle after it).
        self.came_back = False
        self._task = asyncio.ensure_future(self._run())

    @classmethod
    def watch(cls, channel: grpc.aio.Channel) -> _Down | None:
        """A watch of ``channel`` when it is not connected now (None when it is)."""
        if channel.get_state(try_to_connect=False) == grpc.ChannelConnectivity.READY:
            return None
        return cls(channel)

    async def _run(self) -> None:
        state = self.channel.get_state(try_to_connect=False)
        while True:
            await self.channel.wait_for_state_change(state)
            state = self.channel.get_state(try_to_connect=False)
            if state not in _CONNECTING:
                self.came_back = True
                return

    def throughout(self, error: grpc.aio.AioRpcError) -> bool:
        """Whether a call that failed with ``error`` ran out of time never sent: its deadline
        came while the channel had only been trying to connect (a call sent and then cut
        off ends otherwise, or on a channel that was connected meanwhile)."""
        return (
            error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            and not self.came_back
            and self.channel.get_state(try_to_connect=False) in _CONNECTING
        )

    def stop(self) -> None:
        self._task.cancel()


ChannelOptions = Sequence[tuple[str, Any]]


class Route:
    """Where a client's calls go, and the channel there: the address it was given (``home``),
    or the server that plays its table, named by a server that refused a call TABLE_MOVED.

    The one rule of moving between servers for every client of this package (the terminal
    client's :class:`Link` and the bot kit): after a refusal that names the table's owner, go
    there; after a failure to reach the server moved to (or its saying that no server holds
    the table this moment), go back ``home``, which finds the next owner. At most
    ``max_moves`` moves in the route's life. The two channels before the current one are kept
    open a while (calls still on them have their time), older ones closed.

    ``options``: the channels' options, or a function of the target that gives them (called
    for each channel opened). ``given``: a channel of the caller's to ``home``, used for it
    and never closed here."""

    def __init__(
        self,
        home: str,
        credentials: grpc.ChannelCredentials | None = None,
        *,
        options: ChannelOptions | Callable[[str], ChannelOptions] = (),
        given: grpc.aio.Channel | None = None,
        max_moves: int = _MOVES,
    ) -> None:
        #: The address given: the way back.
        self.home = home
        #: The server the calls go to now: ``home``, or a table's owner it was sent to.
        self.at = home
        #: Times it moved to another server.
        self.moves = 0
        self.max_moves = max_moves
        self.given = given
        self._credentials = credentials
        self._options = options
        self._old: list[grpc.aio.Channel] = []
        self._closing: set[asyncio.Task[None]] = set()
        #: Whether ``given`` still goes ``home`` (not once the list given has turned).
        self._given_home = True
        self._use(given if given is not None else self._open(home))

    def _open(self, target: str) -> grpc.aio.Channel:
        options = self._options(target) if callable(self._options) else self._options
        if self._credentials is None:
            return grpc.aio.insecure_channel(target, options=list(options))
        return grpc.aio.secure_channel(target, self._credentials, options=list(options))

    def _use(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)  # type: ignore[no-untyped-call]
        self.table = table_service_pb2_grpc.TableServiceStub(channel)  # type: ignore[no-untyped-call]

    def destination(self, error: grpc.aio.AioRpcError) -> str | None:
        """Where to call again after ``error``: the owner a refusal named, or ``home``, or
        ``home``'s list of servers from the next one; None to stay (the error is the caller's
        to handle)."""
        owner = moved_to(error)
        if owner is None:
            if error.code() != grpc.StatusCode.UNAVAILABLE:
                return None
            if self.at == self.home:
                # A server of a list given (``ipv4:A,B,C``), which a channel keeps to while it
                # answers, that cannot serve the table (its database out of reach: another
                # server plays it now, and it cannot say which): the list from the next one.
                if refusal_reason(error) != "STORAGE_FAILED" or self.moves >= self.max_moves:
                    return None
                return next_first(self.home)
            owner = ""  # the owner it was sent to is gone: the address given finds the next
        where = owner or self.home
        if (where == self.at and owner) or self.moves >= self.max_moves:
            return None
        return where

    def follow(self, error: grpc.aio.AioRpcError) -> bool:
        """Move where :meth:`destination` says; True when it moved (call again)."""
        where = self.destination(error)
        if where is None:
            return False
        self.moves += 1
        if self.channel is not self.given:
            self._old.append(self.channel)
        while len(self._old) > 2:  # calls still on an older one have had their time
            closing = asyncio.get_running_loop().create_task(self._old.pop(0).close(None))
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)
        if self.at == self.home and where != self.home and moved_to(error) is None:
            self.home = where  # the list turned: the way back is to its next server now
            self._given_home = False
        if where == self.home and self.given is not None and self._given_home:
            self._use(self.given)
        else:
            self._use(self._open(where))
        self.at = where
        return True

    async def close(self) -> None:
        """Close every channel it opened (every call on them ends)."""
        for old in self._old:
            await old.close(None)
        self._old.clear()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        if self.channel is not self.given:
            await self.channel.close(None)


_UNTRUSTED = re.compile(r"CERTIFICATE_VERIFY_FAILED:?\s*([^:]*)")


def unreached(target: str, tls: bool, details: str) -> str:
    """Why nothing answered at ``target``, from gRPC's ``details`` of the failed call, and
    what to do: a server that speaks TLS to a client that does not, or with a certificate
    the client does not trust, is no server to it, but not "no server"."""
    untrusted = _UNTRUSTED.search(details)
    if untrusted:
        why = untrusted.group(1).strip() or "not trusted"
        if "expired" in why or "not yet valid" in why:
            return (
                f"the server at {target} speaks TLS with a certificate that is out of date"
                f" ({why}): its operator must give it a new one"
            )
        return (
            f"the server at {target} speaks TLS with a certificate this client does not trust"
            f" ({why}): give the CA that signed it with --ca FILE"
        )
    if "Hostname Verification Check failed" in details:
        return (
            f"the server at {target} speaks TLS with a certificate made out to another name:"
            " connect to it by a name (or address) its certificate holds"
        )
    if tls and "WRONG_VERSION_NUMBER" in details:
        return f"the server at {target} does not speak TLS: connect without --tls and --ca"
    if tls and "handshake failed" in details.lower():
        return f"the TLS handshake with the server at {target} failed: {details}"
    if tls:
        return f"no Rami server answers at {target} (is rami-server running there, with TLS?)"
    return (
        f"no Rami server answers at {target} (is rami-server running there? one that speaks"
        " TLS needs --tls)"
    )


class Link:
    """One route to a server (:class:`Route`), with the services' stubs and calls in plain
    words."""

    def __init__(
        self,
        target: str,
        credentials: grpc.ChannelCredentials | None = None,
        silence: float = SILENCE,
    ) -> None:
        #: The address given: the one saved seats are kept under, and the way back.
        self.target = target
        #: Whether it speaks TLS (for the words of a server it cannot reach).
        self.tls = credentials is not None
        self.route = Route(target, credentials, options=_CHANNEL_OPTIONS)
        #: Seconds a table's stream may bring nothing before it is opened again.
        self.silence = silence

    @property
    def at(self) -> str:
        """The server the link talks to now: ``target``, or a table's owner it was sent to."""
        return self.route.at

    @property
    def moves(self) -> int:
        """Times it moved to another server."""
        return self.route.moves

    @property
    def channel(self) -> grpc.aio.Channel:
        return self.route.channel

    @property
    def lobby(self) -> lobby_service_pb2_grpc.LobbyServiceStub:
        return self.route.lobby

    @property
    def table(self) -> table_service_pb2_grpc.TableServiceStub:
        return self.route.table

    def follow(self, error: grpc.aio.AioRpcError) -> bool:
        """After a failed call: move to the table's owner when the server named another one
        (TABLE_MOVED), or back to ``target`` when that server said none holds the table
        right now or can't be reached; True when the link moved (call again)."""
        return self.route.follow(error)

    async def check(self, timeout: float = 5.0) -> None:
        """Make sure a Rami server answers, or raise :class:`Unreachable` (at once when the
        connection is refused)."""
        request = lobby_service_pb2.ListTablesRequest()
        try:
            await self.lobby.ListTables(request, timeout=timeout)
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                return  # it answers: this address's lobby reads are spent for now
            error = plain_error(e, self.target)
            if isinstance(error, Unreachable) and not isinstance(error, Answered):
                raise Unreachable(unreached(self.target, self.tls, e.details() or "")) from None
            raise error from None

    async def call(
        self,
        method: Callable[..., Awaitable[R]],
        request: Message,
        *,
        token: str | None = None,
        timeout: float = CALL_WAIT,
    ) -> R:
        """One unary call; waits (up to ``timeout``) for a dropped connection to come back.

        A call that changes something (its request has a ``request_id``) is sent with a new
        id when it has none, and, while its answer may have been lost on the way, sent again
        with the same id (within ``timeout``): the server applies it once, and answers every
        copy as the first."""
        metadata = ((TOKEN_METADATA, token),) if token else None
        resend = "request_id" in request.DESCRIPTOR.fields_by_name
        if resend and not request.request_id:  # type: ignore[attr-defined]
            given = request
            request = type(given)()
            request.CopyFrom(given)
            request.request_id = new_request_id()  # type: ignore[attr-defined]
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        sent = tries = 0
        name = self._name_of(method)
        # While the connection is down, whether it came back at any moment of the first try.
        down = _Down.watch(self.channel) if self.at == self.route.home else None
        try:
            while True:
                left = max(end - loop.time(), 0.0)
                try:
                    return await self._now(method, name)(
                        request,
                        metadata=metadata,
                        timeout=left,
                        wait_for_ready=self.at == self.route.home,
                    )
                except grpc.aio.AioRpcError as e:
                    if end - loop.time() > 0.5 and self.follow(e):
                        await asyncio.sleep(0.05 if moved_to(e) else 0.2)
                        continue
                    if (
                        resend
                        and e.code() in _RESEND
                        and sent < _RESENDS
                        and end - loop.time() > 0.5
                    ):
                        sent += 1
                        await asyncio.sleep(0.2)
                        continue
                    if tries == 0 and down is not None and down.throughout(e):
                        raise NotSent(
                            f"the connection did not come back within {timeout:g} s"
                        ) from None
                    raise plain_error(e, self.target) from None
                finally:
                    tries += 1
        finally:
            if down is not None:
                down.stop()

    def _name_of(self, method: Callable[..., Any]) -> tuple[str, str] | None:
        """Which stub's method ``method`` is (so that it is called on the server the link
        talks to when it is sent again): ("lobby" or "table", its name), or None."""
        for stub in ("lobby", "table"):
            for key, value in vars(getattr(self, stub)).items():
                if value is method:
                    return stub, key
        return None

    def _now(self, method: Callable[..., Awaitable[R]], name: tuple[str, str] | None) -> Any:
        return method if name is None else getattr(getattr(self, name[0]), name[1])

    async def updates(
        self,
        table_id: str,
        token: str | None,
        on_status: Callable[[str], None],
        *,
        after: int | None = None,
        on_presence: Callable[[list[bool]], None] | None = None,
    ) -> AsyncIterator[table_service_pb2.Update]:
        """Every update of a table, resuming after a drop; raises :class:`Refused` when the
        server turns the watch down (no such table, bad token) or when another client takes
        the seat over (reason ``TAKEN_OVER``).

        A seat's stream takes the seat over (``WatchRequest.take_over``): this client is the
        seat's player, and whoever else had it open is told. ``on_status`` hears "took_over"
        when the first stream did so (a resumed stream that takes over from its own dead one
        says nothing), "lost" and "reconnected" around a drop, "behind" when the table is
        behind the updates seen (its server went back to a backup: the updates that follow
        are the table's from where it is now, a snapshot first), and ``on_presence`` each
        seat's presence when a heartbeat tells it.

        A resumed stream asks for the last update seen again: it comes once more, without its
        events (they were told), for its view as the server has it now, with the turn clock
        that server runs (a restarted server starts the turn's clock again)."""
        metadata = ((TOKEN_METADATA, token),) if token else None
        lost = False
        opened = False
        while True:
            # Resuming asks for the last update again: its arrival proves the stream is back.
            since = max(after - 1, 0) if after is not None else None
            request = table_service_pb2.WatchRequest(
                table_id=table_id, after=since, take_over=token is not None
            )
            stream: Any = self.table.Watch(
                request, metadata=metadata, wait_for_ready=self.at == self.route.home
            )
            first = True
            behind = False
            try:
                async for msg in heard(stream, self.silence):
                    if first and msg.took_over and not opened:
                        on_status("took_over")
                    first, opened = False, True
                    if lost:
                        lost = False
                        on_status("reconnected")
                    if msg.HasField("heartbeat"):
                        if after is not None and msg.heartbeat.number < after:
                            # The table is behind the updates seen (its server went back to
                            # a backup): a resume one update early is not refused, it only
                            # gets this; follow the table from where it is now.
                            behind = True
                            break
                        if on_presence is not None and len(msg.heartbeat.connected):
                            on_presence(list(msg.heartbeat.connected))
                        continue
                    if not msg.HasField("update"):
                        continue
                    if after is not None and msg.update.number <= after and not msg.update.snapshot:
                        if msg.update.number == after:
                            # The last update, asked for again: its events were told, but
                            # its view is as the server has it now, with the turn clock that
                            # server runs (a restarted one starts the turn's clock again).
                            yield table_service_pb2.Update(
                                number=msg.update.number, view=msg.update.view
                            )
                        continue
                    after = msg.update.number
                    yield msg.update
            except grpc.aio.AioRpcError as e:
                error = plain_error(e, self.target)
                if self.follow(e):
                    await asyncio.sleep(0.05)
                    continue  # resumed on the server that plays the table now
                wait = _rate_limited(e)
                if wait is not None:
                    # The open counted as one of the seat's commands, over its rate: not a
                    # lost connection; opened again once the server's wait is over.
                    stream.cancel()
                    await asyncio.sleep(wait)
                    continue
                if isinstance(error, Refused) and error.reason == "BAD_NUMBER":
                    behind = True  # the server lost updates we saw: start from a snapshot
                elif e.code() not in _LOST and e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                    raise error from None
            finally:
                stream.cancel()
            if behind:
                after = None
                on_status("behind")
                continue
            if not lost:
                lost = True
                on_status("lost")
            await asyncio.sleep(0.2)

    async def close(self) -> None:
        """Close the channel (every open call ends)."""
        await self.route.close()
