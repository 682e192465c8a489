"""Errors as gRPC status codes, mapped in one place.

Every refusal becomes a status code with a google.rpc.ErrorInfo detail: ``reason`` is a stable
machine-readable code (``NOT_YOUR_TURN``, ``OPENING_BELOW_BAR``...), ``domain`` is
``rami.v1``, and the message says which rule in words.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
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

__all__ = [
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
            log_unexpected(log, f"unexpected error in {method.__name__}", e)
            await context.abort_with_status(status_of(RuntimeError()))
        raise AssertionError("unreachable")  # pragma: no cover

    return wrapper


def streaming(
    method: Callable[[Any, Req, grpc.aio.ServicerContext], AsyncIterator[Resp]],
) -> Callable[[Any, Req, grpc.aio.ServicerContext], AsyncIterator[Resp]]:
    """Turn the refusals a streaming method raises into status codes."""

    @functools.wraps(method)
    async def wrapper(
        self: Any, request: Req, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Resp]:
        try:
            # aclosing: when the client goes away, the method's own clean-up runs now, not
            # whenever the garbage collector finalizes the generator.
            async with contextlib.aclosing(method(self, request, context)) as items:
                async for item in items:
                    yield item
        except (ServiceError, RuleError) as e:
            await context.abort_with_status(status_of(e))
        except Exception as e:
            log_unexpected(log, f"unexpected error in {method.__name__}", e)
            await context.abort_with_status(status_of(RuntimeError()))

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
    traceback per request."""

    def __init__(self) -> None:
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
            guarded = _guard(handler)
            if handler is not None and len(self._handlers) < 1000:
                self._handlers[method] = guarded
        return guarded


def _guard(handler: Any) -> Any:
    if handler is None or handler.request_deserializer is None:
        return handler
    parse = handler.request_deserializer

    def tolerant(data: bytes) -> Any:
        try:
            return parse(data)
        except DecodeError:
            return _UNDECODABLE

    if handler.request_streaming:
        # A stream of requests (Play) meets UNDECODABLE among them, and answers it.
        if handler.stream_stream is None:
            return handler
        return handler._replace(request_deserializer=tolerant)

    if handler.unary_unary is not None:
        call = handler.unary_unary

        async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if request is _UNDECODABLE:
                await context.abort_with_status(_undecodable())
            return await call(request, context)

        return handler._replace(request_deserializer=tolerant, unary_unary=unary_unary)
    stream = handler.unary_stream
    if stream is None or not inspect.isasyncgenfunction(stream):
        return handler  # e.g. the health service's Watch, which writes rather than yields

    async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        if request is _UNDECODABLE:
            await context.abort_with_status(_undecodable())
            return
        async with contextlib.aclosing(stream(request, context)) as items:
            async for item in items:
                yield item

    return handler._replace(request_deserializer=tolerant, unary_stream=unary_stream)
