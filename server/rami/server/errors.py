"""Errors as gRPC status codes, mapped in one place.

Every refusal becomes a status code with a google.rpc.ErrorInfo detail: ``reason`` is a stable
machine-readable code (``NOT_YOUR_TURN``, ``OPENING_BELOW_BAR``...), ``domain`` is
``rami.v1``, and the message says which rule in words. The contract lists every reason with
its code: ``ErrorReason`` in ``proto/rami/v1/errors.proto`` (a test keeps it to the code's).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Any, TypeVar

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from rami.engine import IllegalAction, MalformedAction, RuleError

from .refusals import (
    Aborted,
    Exhausted,
    Invalid,
    NotFound,
    PermissionDenied,
    Precondition,
    Refusal,
    Unauthenticated,
    Unavailable,
)
from .storage import is_outage

__all__ = [
    "DOMAIN",
    "UNDECODABLE",
    "Aborted",
    "DecodeGuard",
    "Exhausted",
    "Invalid",
    "NotFound",
    "PermissionDenied",
    "Precondition",
    "ServiceError",
    "Unauthenticated",
    "Unavailable",
    "code_of",
    "log_unexpected",
    "refusal_of",
    "status_of",
    "streaming",
    "unary",
]

#: The ErrorInfo domain of every refusal; its reasons are ErrorReason's (errors.proto).
DOMAIN = "rami.v1"
#: The longest message of a refusal, in characters.
MAX_ERROR_MESSAGE = 300
log = logging.getLogger("rami.server")


#: Every refusal; the table core raises them without knowing gRPC (``refusals.py``).
ServiceError = Refusal


def code_of(error: Refusal) -> grpc.StatusCode:
    """The gRPC status code of a refusal."""
    return grpc.StatusCode[error.status]


def status_of(error: Exception) -> grpc.Status:
    """The gRPC status, with its ErrorInfo detail, for a refusal."""
    code, reason, message, metadata = refusal_of(error)
    info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
    assert status.code != code_pb2.OK
    return rpc_status.to_status(status)


def refusal_of(error: Exception) -> tuple[grpc.StatusCode, str, str, dict[str, str]]:
    """A refusal's status code, reason, message and metadata (as a status or, on a Play
    stream, as a CommandRefused message)."""
    if isinstance(error, ServiceError):
        code, reason, message, metadata = (
            code_of(error),
            error.reason,
            error.message,
            error.metadata,
        )
    elif isinstance(error, MalformedAction):
        code, reason, message, metadata = (
            grpc.StatusCode.INVALID_ARGUMENT,
            error.reason,
            str(error),
            {},
        )
    elif isinstance(error, IllegalAction | RuleError):
        code, reason, message, metadata = (
            grpc.StatusCode.FAILED_PRECONDITION,
            error.reason,
            str(error),
            {},
        )
    else:
        code, reason, message, metadata = grpc.StatusCode.INTERNAL, "INTERNAL", "internal error", {}
    if len(message) > MAX_ERROR_MESSAGE:
        # A message may quote what the client sent (a table id, a policy): never at length, or
        # the trailers outgrow what a client accepts (8 KiB) and the refusal is lost.
        message = message[: MAX_ERROR_MESSAGE - 1] + "…"
    return code, reason, message, metadata


def log_unexpected(logger: logging.Logger, what: str, error: BaseException) -> None:
    """Log an unexpected error by its type and where it happened, without its message: a
    message may quote values (a hand, a card) that no log line may carry."""
    frames = "".join(traceback.format_tb(error.__traceback__)).rstrip()
    logger.error("%s: %s (message withheld)\n%s", what, type(error).__name__, frames)


def _unexpected(name: str, error: Exception) -> grpc.Status:
    """The status of an error no refusal names: UNAVAILABLE when the store is out of reach
    for now (a warning, no traceback: the call may be made again), else INTERNAL, a bug of
    the server's (logged with where it happened)."""
    if is_outage(error):
        log.warning("%s: the table store is out of reach (%s)", name, type(error).__name__)
        return status_of(
            Unavailable(
                "STORAGE_FAILED", "the table store is out of reach for now: call again shortly"
            )
        )
    log_unexpected(log, f"unexpected error in {name}", error)
    return status_of(RuntimeError())


Req = TypeVar("Req")
Resp = TypeVar("Resp")


def unary(
    method: Callable[[Any, Req, grpc.aio.ServicerContext], Awaitable[Resp]],
) -> Callable[[Any, Req, grpc.aio.ServicerContext], Awaitable[Resp]]:
    """Turn the refusals a unary method raises into status codes."""

    @functools.wraps(method)
    async def wrapper(self: Any, request: Req, context: grpc.aio.ServicerContext) -> Resp:
        try:
            return await method(self, request, context)
        except (ServiceError, RuleError) as e:
            await context.abort_with_status(status_of(e))
        except Exception as e:
            await context.abort_with_status(_unexpected(method.__name__, e))
        raise AssertionError("unreachable")  # pragma: no cover

    return wrapper


def streaming(
    method: Callable[[Any, Req, grpc.aio.ServicerContext], AsyncIterator[Resp]],
) -> Callable[[Any, Req, grpc.aio.ServicerContext], AsyncIterator[Resp]]:
    """Turn the refusals a streaming method raises into status codes; a request that did not
    parse (:class:`DecodeGuard`) is refused before the method runs."""

    @functools.wraps(method)
    async def wrapper(
        self: Any, request: Req, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Resp]:
        if request is _UNDECODABLE:
            await context.abort_with_status(_undecodable())
        try:
            # aclosing: when the client goes away, the method's own clean-up runs now, not
            # whenever the garbage collector finalizes the generator.
            async with contextlib.aclosing(method(self, request, context)) as items:
                async for item in items:
                    yield item
        except (ServiceError, RuleError) as e:
            await context.abort_with_status(status_of(e))
        except Exception as e:
            await context.abort_with_status(_unexpected(method.__name__, e))

    # DecodeGuard needs no stream of its own around it (a generator less per open stream).
    wrapper.refuses_undecodable = True  # type: ignore[attr-defined]
    return wrapper


#: What a request whose bytes do not parse becomes (the Play stream answers it in words).
UNDECODABLE = _UNDECODABLE = object()


def _undecodable() -> grpc.Status:
    return status_of(
        Invalid("BAD_MESSAGE", "the request's bytes are not a valid message of this method")
    )


class DecodeGuard(grpc.aio.ServerInterceptor):
    """A request whose bytes do not parse as the method's message is malformed input like any
    other: INVALID_ARGUMENT (``BAD_MESSAGE``), instead of gRPC's UNKNOWN and a logged
    traceback per request, on every service (health and reflection too).

    The request streams of the methods in ``answering`` (Play) meet UNDECODABLE among their
    requests and answer it themselves; any other method's call ends with the refusal."""

    def __init__(self, answering: Collection[str] = ()) -> None:
        self._answering = frozenset(answering)
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method = handler_call_details.method  # type: ignore[attr-defined]
        guarded = self._handlers.get(method)
        if guarded is None:
            handler = await continuation(handler_call_details)
            guarded = _guard(handler, method in self._answering)
            if handler is not None and len(self._handlers) < 1000:
                self._handlers[method] = guarded
        return guarded


def _guard(handler: Any, answering: bool) -> Any:
    if handler is None or handler.request_deserializer is None:
        return handler
    parse = handler.request_deserializer

    def tolerant(data: bytes) -> Any:
        try:
            return parse(data)
        except DecodeError:
            return _UNDECODABLE

    if handler.request_streaming:
        if answering:
            return handler._replace(request_deserializer=tolerant)
        method = handler.stream_stream or handler.stream_unary
        if method is None or not _is_async(method):
            return handler
        kind = "stream_stream" if handler.stream_stream is not None else "stream_unary"
        return handler._replace(request_deserializer=tolerant, **{kind: _checking(method)})
    method = handler.unary_unary or handler.unary_stream
    if method is None or not _is_async(method):
        return handler  # a method that runs in a thread: gRPC's own handling
    kind = "unary_unary" if handler.unary_unary is not None else "unary_stream"
    return handler._replace(request_deserializer=tolerant, **{kind: _refusing(method)})


def _is_async(method: Any) -> bool:
    return inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method)


def _refusing(method: Any) -> Any:
    """``method`` (of one request), refusing an undecodable request before it runs."""
    if getattr(method, "refuses_undecodable", False):
        return method  # a @streaming method: it refuses the request itself
    if inspect.isasyncgenfunction(method):

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            if request is _UNDECODABLE:
                await context.abort_with_status(_undecodable())
            async with contextlib.aclosing(method(request, context)) as items:
                async for item in items:
                    yield item

        return stream

    # A coroutine: a unary method, or a stream that writes (the health service's Watch).
    async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if request is _UNDECODABLE:
            await context.abort_with_status(_undecodable())
        return await method(request, context)

    return call


def _checking(method: Any) -> Any:
    """``method`` (of a stream of requests), its call refused at the first request that is
    undecodable (server reflection's stream)."""

    async def checked(
        requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        async for request in requests:
            if request is _UNDECODABLE:
                await context.abort_with_status(_undecodable())
            yield request

    if inspect.isasyncgenfunction(method):

        async def stream(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            async with contextlib.aclosing(method(checked(requests, context), context)) as items:
                async for item in items:
                    yield item

        return stream

    async def call(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        return await method(checked(requests, context), context)

    return call
