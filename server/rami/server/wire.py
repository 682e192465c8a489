"""Responses encoded once and sent as they are.

An update goes to every watcher of its table, and its view is the same for every watcher of
a seat: the table encodes it once (the part every seat shares once, each seat's own part
once, see ``TableState.encode_views``) and the streams send those bytes. Two rules of the
Protocol Buffers encoding make that exact:

- a message field is its tag, its length as a varint, then the encoded message
  (:func:`message_field`), so an encoded view can be put inside an encoded update without
  parsing it again;
- a message parses as the merge of its concatenated encodings, so a response built from
  parts (the update, then the ``accepted`` of a Play stream) is one message.

The servicers of the table service are registered with a serializer that sends bytes as they
are (:func:`add_sending_bytes`); every other response is serialised by gRPC as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from rami.v1 import table_service_pb2

__all__ = [
    "ACT_VIEW",
    "UPDATE",
    "UPDATE_VIEW",
    "add_sending_bytes",
    "encode",
    "message_field",
]


def _number(message: Any, name: str) -> int:
    return int(message.DESCRIPTOR.fields_by_name[name].number)


#: Field numbers: the update of a WatchResponse (and of a PlayResponse: both responses give
#: ``update`` and ``heartbeat`` the same numbers, so the same bytes are either), the view of an
#: update, the view of an ActResponse.
UPDATE = _number(table_service_pb2.WatchResponse, "update")
UPDATE_VIEW = _number(table_service_pb2.Update, "view")
ACT_VIEW = _number(table_service_pb2.ActResponse, "view")
for _name in ("update", "heartbeat"):
    if _number(table_service_pb2.WatchResponse, _name) != _number(
        table_service_pb2.PlayResponse, _name
    ):  # pragma: no cover - the contract's own promise, checked once at import
        raise ImportError(f"WatchResponse and PlayResponse number {_name!r} differently")


def message_field(number: int, encoded: bytes) -> bytes:
    """The encoding of field ``number`` (under 16) of an enclosing message when its value is
    the message whose encoding is ``encoded``: tag (wire type 2), length varint, bytes."""
    size = len(encoded)
    if size < 0x4000:  # every view and update of a game: a length of one or two bytes
        if size < 0x80:
            return bytes((number << 3 | 2, size)) + encoded
        return bytes((number << 3 | 2, size & 0x7F | 0x80, size >> 7)) + encoded
    head = bytearray((number << 3 | 2,))
    while size > 0x7F:
        head.append(size & 0x7F | 0x80)
        size >>= 7
    head.append(size)
    return bytes(head) + encoded


def encode(message: Any) -> bytes:
    """The serializer of the table service's responses: bytes are already encoded."""
    if type(message) is bytes:
        return message
    encoded: bytes = message.SerializeToString()
    return encoded


class _Capture:
    """Stands in for a server while generated code registers a servicer's handlers."""

    def __init__(self) -> None:
        self.handlers: dict[str, grpc.RpcMethodHandler] = {}
        self.service = ""

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass  # the handlers come again, by method name, just below

    def add_registered_method_handlers(
        self, service: str, handlers: dict[str, grpc.RpcMethodHandler]
    ) -> None:
        self.service, self.handlers = service, handlers


def add_sending_bytes(
    add: Callable[[Any, Any], None], servicer: Any, server: grpc.aio.Server
) -> None:
    """Register ``servicer`` as the generated ``add`` would, its responses serialised by
    :func:`encode` (so its methods may answer with bytes already encoded)."""
    capture = _Capture()
    add(servicer, capture)
    handlers = {
        name: h._replace(response_serializer=encode)  # type: ignore[attr-defined]
        for name, h in capture.handlers.items()
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(capture.service, handlers),)
    )
    server.add_registered_method_handlers(capture.service, handlers)
