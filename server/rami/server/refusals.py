"""Refusals: why the server will not do what a client asked, in the server's own words.

The table core raises these; it knows no gRPC. Each kind names the status a client gets for
it (``errors.py`` maps it to gRPC's code, in the one place that does), and carries a stable
machine-readable ``reason`` (``NOT_YOUR_TURN``, ``STALE``...), a message in words, and
metadata a client can act on (``current``, ``after``...).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "Aborted",
    "Exhausted",
    "Invalid",
    "NotFound",
    "PermissionDenied",
    "Precondition",
    "Refusal",
    "Unauthenticated",
    "Unavailable",
]


class Refusal(Exception):
    """A refusal with its status, reason and message."""

    #: The name of the status code a client is answered with (gRPC's names).
    status: ClassVar[str] = "INTERNAL"

    def __init__(self, reason: str, message: str, **metadata: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.metadata = metadata


class Invalid(Refusal):
    """Malformed input."""

    status = "INVALID_ARGUMENT"


class Precondition(Refusal):
    """Not allowed now."""

    status = "FAILED_PRECONDITION"


class Aborted(Refusal):
    """Decided on a stale state: read the latest view and decide again."""

    status = "ABORTED"


class NotFound(Refusal):
    """No such table."""

    status = "NOT_FOUND"


class Unauthenticated(Refusal):
    """A token that proves no seat."""

    status = "UNAUTHENTICATED"


class PermissionDenied(Refusal):
    """A token that proves another seat, or no right to do this."""

    status = "PERMISSION_DENIED"


class Exhausted(Refusal):
    """Too many: commands, streams or tables."""

    status = "RESOURCE_EXHAUSTED"


class Unavailable(Refusal):
    """The server is shutting down, its storage failed, or a watcher was cut off."""

    status = "UNAVAILABLE"
