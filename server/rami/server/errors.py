"""Errors as gRPC status codes, mapped in one place.

Every refusal becomes a status code with a google.rpc.ErrorInfo detail: ``reason`` is a stable
machine-readable code (``NOT_YOUR_TURN``, ``OPENING_BELOW_BAR``...), ``domain`` is
``rami.v1``, and the message says which rule in words.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from rami.engine import IllegalAction, MalformedAction, RuleError

__all__ = [
    "Aborted",
    "Exhausted",
    "Invalid",
    "NotFound",
    "PermissionDenied",
    "Precondition",
    "ServiceError",
    "Unauthenticated",
    "status_of",
    "unary",
    "streaming",
]

DOMAIN = "rami.v1"
log = logging.getLogger("rami.server")


class ServiceError(Exception):
    """A refusal with its status code, reason and message."""

    code = grpc.StatusCode.INTERNAL

    def __init__(self, reason: str, message: str, **metadata: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.metadata = metadata


class Invalid(ServiceError):
    """Malformed input."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class Precondition(ServiceError):
    """Not allowed now."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(ServiceError):
    """Decided on a stale state: read the latest view and decide again."""

    code = grpc.StatusCode.ABORTED


class NotFound(ServiceError):
    """No such table."""

    code = grpc.StatusCode.NOT_FOUND


class Unauthenticated(ServiceError):
    """A token that proves no seat."""

    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(ServiceError):
    """A token that proves another seat, or no right to do this."""

    code = grpc.StatusCode.PERMISSION_DENIED


class Exhausted(ServiceError):
    """Too many: commands, streams or tables."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unavailable(ServiceError):
    """The server is shutting down, or a watcher was cut off."""

    code = grpc.StatusCode.UNAVAILABLE


def status_of(error: Exception) -> grpc.Status:
    """The gRPC status, with its ErrorInfo detail, for a refusal."""
    if isinstance(error, ServiceError):
        code, reason, message, metadata = error.code, error.reason, error.message, error.metadata
    elif isinstance(error, MalformedAction):
        code, reason, message, metadata = (
            grpc.StatusCode.INVALID_ARGUMENT, error.reason, str(error), {}
        )
    elif isinstance(error, IllegalAction | RuleError):
        code, reason, message, metadata = (
            grpc.StatusCode.FAILED_PRECONDITION, error.reason, str(error), {}
        )
    else:
        code, reason, message, metadata = grpc.StatusCode.INTERNAL, "INTERNAL", "internal error", {}
    info = error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=metadata)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
    assert status.code != code_pb2.OK
    return rpc_status.to_status(status)


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
        except Exception:
            log.exception("unexpected error in %s", method.__name__)
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
        except Exception:
            log.exception("unexpected error in %s", method.__name__)
            await context.abort_with_status(status_of(RuntimeError()))

    return wrapper
