"""The client's connection to a server: calls in plain words, and a watch stream that survives.

:class:`Link` wraps one gRPC channel. Its calls raise :class:`Refused` with the server's own
reason when the server says no, and :class:`Unreachable` when the server can't be reached, so
the interface never shows a traceback. A call that changes something carries a request id,
and when its answer is lost with the connection it is sent again with the same id, so the
server applies it once. :meth:`Link.updates` watches a table and, when the connection drops,
waits for it to come back and resumes from the last update it saw (``WatchRequest.after``),
telling the caller through ``on_status``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
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
    "DEFAULT_PORT",
    "TOKEN_METADATA",
    "Link",
    "LinkError",
    "Refused",
    "Unreachable",
    "parse_address",
    "plain_error",
]

DEFAULT_PORT = 50051
TOKEN_METADATA = "rami-token"

_CHANNEL_OPTIONS = [
    # Come back quickly after a server restart: the default backoff grows to two minutes.
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.min_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
]
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

R = TypeVar("R", bound=Message)


class LinkError(Exception):
    """A call that did not go through, with its reason in plain words."""


class Refused(LinkError):
    """The server refused the call; ``code`` and ``reason`` say why, the message in words."""

    def __init__(self, message: str, code: grpc.StatusCode, reason: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


class Unreachable(LinkError):
    """The server could not be reached (or did not answer in time)."""


def parse_address(text: str) -> str:
    """``HOST[:PORT]`` as a gRPC target (port 50051 when left out).

    >>> parse_address("localhost"), parse_address("10.0.0.2:6000"), parse_address("[::1]")
    ('localhost:50051', '10.0.0.2:6000', '[::1]:50051')
    """
    text = text.strip()
    if not text:
        raise ValueError("give the server's address as HOST or HOST:PORT")
    if text.startswith("["):
        host, _, rest = text.partition("]")
        port = rest.lstrip(":") or str(DEFAULT_PORT)
        host += "]"
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:
        host, port = text, str(DEFAULT_PORT)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{port!r} is not a port number (1 to 65535)")
    if not host:
        raise ValueError("give the server's host name before the port")
    return f"{host}:{port}"


def _reason(error: grpc.aio.AioRpcError) -> str:
    """The machine-readable reason (google.rpc.ErrorInfo), when the server sent one."""
    try:
        from google.rpc import error_details_pb2  # type: ignore[import-untyped]
        from grpc_status import rpc_status

        status = rpc_status.from_call(error)  # type: ignore[arg-type]
    except Exception:
        return ""
    if status is None:
        return ""
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return str(info.reason)
    return ""


def plain_error(error: grpc.aio.AioRpcError, target: str) -> LinkError:
    """A gRPC error as a :class:`LinkError` whose message a person can read."""
    code = error.code()
    details = safe(error.details() or "")
    if code == grpc.StatusCode.UNAVAILABLE:
        return Unreachable(f"the server at {target} can't be reached right now")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return Unreachable(f"the server at {target} did not answer in time")
    if code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNIMPLEMENTED):
        return Refused(f"the server could not do that ({details or code.name.lower()})", code)
    message = details or code.name.lower().replace("_", " ")
    return Refused(message, code, _reason(error))


class Link:
    """One channel to a server, with the three services' stubs."""

    def __init__(self, target: str, credentials: grpc.ChannelCredentials | None = None) -> None:
        self.target = target
        if credentials is None:
            self.channel = grpc.aio.insecure_channel(target, options=_CHANNEL_OPTIONS)
        else:
            self.channel = grpc.aio.secure_channel(target, credentials, options=_CHANNEL_OPTIONS)
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(self.channel)  # type: ignore[no-untyped-call]
        self.table = table_service_pb2_grpc.TableServiceStub(self.channel)  # type: ignore[no-untyped-call]

    async def check(self, timeout: float = 5.0) -> None:
        """Make sure a Rami server answers, or raise :class:`Unreachable` (at once when the
        connection is refused)."""
        request = lobby_service_pb2.ListTablesRequest()
        try:
            await self.lobby.ListTables(request, timeout=timeout)
        except grpc.aio.AioRpcError as e:
            if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                raise Unreachable(
                    f"no Rami server answers at {self.target} (is rami-server running there?)"
                ) from None
            raise plain_error(e, self.target) from None

    async def call(
        self,
        method: Callable[..., Awaitable[R]],
        request: Message,
        *,
        token: str | None = None,
        timeout: float = 10.0,
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
        sent = 0
        while True:
            left = max(end - loop.time(), 0.0)
            try:
                return await method(request, metadata=metadata, timeout=left, wait_for_ready=True)
            except grpc.aio.AioRpcError as e:
                if resend and e.code() in _RESEND and sent < _RESENDS and end - loop.time() > 0.5:
                    sent += 1
                    await asyncio.sleep(0.2)
                    continue
                raise plain_error(e, self.target) from None

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
        says nothing), and ``on_presence`` each seat's presence when a heartbeat tells it."""
        metadata = ((TOKEN_METADATA, token),) if token else None
        lost = False
        opened = False
        while True:
            # Resuming asks for the last update again: its arrival proves the stream is back.
            since = max(after - 1, 0) if after is not None else None
            request = table_service_pb2.WatchRequest(
                table_id=table_id, after=since, take_over=token is not None
            )
            stream: Any = self.table.Watch(request, metadata=metadata, wait_for_ready=True)
            first = True
            try:
                async for msg in stream:
                    if first and msg.took_over and not opened:
                        on_status("took_over")
                    first, opened = False, True
                    if lost:
                        lost = False
                        on_status("reconnected")
                    if msg.HasField("heartbeat"):
                        if on_presence is not None and len(msg.heartbeat.connected):
                            on_presence(list(msg.heartbeat.connected))
                        continue
                    if not msg.HasField("update"):
                        continue
                    if after is not None and msg.update.number <= after and not msg.update.snapshot:
                        continue
                    after = msg.update.number
                    yield msg.update
            except grpc.aio.AioRpcError as e:
                error = plain_error(e, self.target)
                if isinstance(error, Refused) and error.reason == "BAD_NUMBER":
                    after = None  # the server lost updates we saw: start from a snapshot
                elif e.code() not in _LOST and e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                    raise error from None
            finally:
                stream.cancel()
            if not lost:
                lost = True
                on_status("lost")
            await asyncio.sleep(0.2)

    async def close(self) -> None:
        """Close the channel (every open call ends)."""
        await self.channel.close(None)
