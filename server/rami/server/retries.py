"""Request ids: a call sent again after its answer was lost changes nothing more, and gets the
first call's answer.

A client may give each call that changes something a ``request_id`` (``rami.v1``'s
LobbyService says what a retry gets). The server keeps no id and no answer: it keeps a
:class:`~rami.server.entries.Mark` with the change the call made, in the same write, and
rebuilds the answer from it when the id comes again:

- the mark's ``key`` is a digest of the id and of whose call it was (the scope): the hash of
  the call's token for the calls that carry one, so one client's id never meets another's;
  the table, for JoinTable; the whole server, for CreateTable. The ids of those two must be
  long (:data:`SECRET_LENGTH`): nothing but the id tells who asks, and their answer carries a
  token;
- the mark's ``digest`` is a digest of the request (every field but the id), so the same id
  with another request is refused instead of answered with what another request did;
- a table's marks are in its log, each in the entry its call made (``TableState.answered``
  finds them, after a restart too); CreateTable's is in the table's directory row;
- the tokens that CreateTable and JoinTable answer with are derived from the id
  (:func:`derived_token`), so a retry gives back the same token while the server still stores
  only its hash.

>>> check_request_id("")
''
>>> check_request_id("x y")
Traceback (most recent call last):
...
rami.server.refusals.Invalid: a request id is 1 to 64 of the characters A-Z, a-z, 0-9, - and _
>>> len(derived_token("a" * 22, "owner", "t1")), derived_token("a" * 22, "seat", "t1") == (
...     derived_token("a" * 22, "seat", "t2"))
(32, False)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

from google.protobuf.message import Message

from .entries import Mark
from .refusals import Invalid

__all__ = [
    "MAX_LENGTH",
    "SECRET_LENGTH",
    "check_request_id",
    "derived_token",
    "mark",
]

#: The longest request id, in characters.
MAX_LENGTH = 64
#: The shortest request id of CreateTable and JoinTable: 22 characters of base64url hold 128
#: random bits.
SECRET_LENGTH = 22
_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_LENGTH}}}")


def check_request_id(value: str, *, secret: bool = False) -> str:
    """``value`` when it is a well-formed request id ('' when there is none); refuses it
    (INVALID_ARGUMENT, ``BAD_REQUEST_ID``) otherwise. ``secret``: the id of a call whose answer
    carries a token, which must be at least :data:`SECRET_LENGTH` characters."""
    if not value:
        return ""
    if not _ID.fullmatch(value):
        raise Invalid(
            "BAD_REQUEST_ID",
            f"a request id is 1 to {MAX_LENGTH} of the characters A-Z, a-z, 0-9, - and _",
        )
    if secret and len(value) < SECRET_LENGTH:
        raise Invalid(
            "BAD_REQUEST_ID",
            f"this call's request id must be random and at least {SECRET_LENGTH} characters "
            "long: whoever sends it again gets the answer's token",
        )
    return value


def mark(method: str, scope: str, request_id: str, request: Message) -> Mark:
    """The mark of a call with ``request_id``: its key (the id in its ``scope``) and the digest
    of the request (``method`` and every field of ``request`` but ``request_id``)."""
    key = hashlib.sha256(f"rami.v1 request\0{scope}\0{request_id}".encode()).hexdigest()[:32]
    body = type(request)()
    body.CopyFrom(request)
    body.ClearField("request_id")
    data = body.SerializeToString(deterministic=True)
    digest = hashlib.sha256(method.encode() + b"\0" + data).hexdigest()[:16]
    return Mark(key, digest)


def derived_token(
    request_id: str, purpose: str, table_id: str = "", server_key: bytes = b""
) -> str:
    """The token a call with ``request_id`` answers with (``purpose``: ``owner`` or ``seat``),
    the same on every retry: 24 bytes of an HMAC of the id keyed with the server's key (so
    that whoever learns an id from the database alone still cannot make its token), 32
    base64url characters like every token."""
    message = f"rami.v1 {purpose} token\0{table_id}\0{request_id}".encode()
    raw = hmac.new(server_key or request_id.encode(), message, hashlib.sha256).digest()[:24]
    return base64.urlsafe_b64encode(raw).decode()
