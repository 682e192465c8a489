"""The entries of a table's log: one small frozen value per kind of change.

A table is its spec and its log; replaying the log rebuilds it. Each entry is written as a
JSON object (``to_dict``) and read back with :func:`entry_from_dict`, which checks every field
and says clearly what is wrong with an entry that does not read (:class:`EntryError`), so a
damaged log fails loudly instead of rebuilding a different table.

An entry a client's call made with a request id carries that call's :class:`Mark`, so a retry
of the call finds it in the log (``retries.py``).

>>> entry_from_dict({"type": "chat", "seat": 1, "text": "gg"})
Chat(seat=1, text='gg', request=None)
>>> entry_from_dict(Leave(2, Mark("ab" * 16, "cd" * 8)).to_dict()).request
Mark(key='abababababababababababababababab', digest='cdcdcdcdcdcdcdcd')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rami.engine import Action, MalformedAction
from rami.engine.fair import MAX_ENTROPY
from rami.engine.serial import action_from_dict, action_to_dict

__all__ = [
    "AUTO_REASONS",
    "Act",
    "AddBot",
    "Chat",
    "Close",
    "Entry",
    "EntryError",
    "Join",
    "Leave",
    "Mark",
    "NextDeal",
    "Return",
    "Start",
    "entry_from_dict",
]

#: Why the server played a seat's move for it: its player left (``away``) or its clock ran out
#: (``timeout``). A built-in bot's moves are its own (no reason).
AUTO_REASONS = ("away", "timeout")


class EntryError(ValueError):
    """A stored entry that does not read as any entry."""


_KEY, _DIGEST = re.compile(r"[0-9a-f]{32}"), re.compile(r"[0-9a-f]{16}")


@dataclass(frozen=True, slots=True)
class Mark:
    """What the log keeps of a call's request id: ``key``, a digest of the id and of whose
    call it was (never the id itself), and ``digest``, a digest of the request, to tell a retry
    from another request under the same id."""

    key: str
    digest: str

    def put(self, d: dict[str, Any]) -> dict[str, Any]:
        """``d`` (an entry as stored) with the mark in it."""
        d["request"], d["digest"] = self.key, self.digest
        return d


def _with(d: dict[str, Any], mark: Mark | None) -> dict[str, Any]:
    return d if mark is None else mark.put(d)


def _mark(d: dict[str, Any]) -> Mark | None:
    key, digest = d.get("request"), d.get("digest")
    if key is None and digest is None:
        return None
    if not (isinstance(key, str) and _KEY.fullmatch(key)):
        raise EntryError(f"a {d['type']!r} entry's request is 32 hex digits, not {key!r}")
    if not (isinstance(digest, str) and _DIGEST.fullmatch(digest)):
        raise EntryError(f"a {d['type']!r} entry's digest is 16 hex digits, not {digest!r}")
    return Mark(key, digest)


@dataclass(frozen=True, slots=True)
class Join:
    """A player sat down; ``token`` is the hash of the seat's token (``hash_token``),
    ``entropy`` (hex) the randomness the player sent for the deal (``rami.engine.fair``)."""

    seat: int
    name: str
    token: str
    entropy: str = ""
    request: Mark | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored."""
        d: dict[str, Any] = {
            "type": "join",
            "seat": self.seat,
            "name": self.name,
            "token": self.token,
        }
        if self.entropy:
            d["entropy"] = self.entropy
        return _with(d, self.request)


@dataclass(frozen=True, slots=True)
class AddBot:
    """A built-in bot sat down, playing ``policy``."""

    seat: int
    name: str
    policy: str
    request: Mark | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored."""
        d: dict[str, Any] = {
            "type": "bot",
            "seat": self.seat,
            "name": self.name,
            "policy": self.policy,
        }
        return _with(d, self.request)


@dataclass(frozen=True, slots=True)
class Leave:
    """A player left: the seat is free again before the game, played for during it."""

    seat: int
    request: Mark | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored."""
        return _with({"type": "leave", "seat": self.seat}, self.request)


@dataclass(frozen=True, slots=True)
class Return:
    """A player who left came back to their seat."""

    seat: int

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored."""
        return {"type": "return", "seat": self.seat}


@dataclass(frozen=True, slots=True)
class Start:
    """The game began. Its rounds are dealt fairly (``rami.engine.fair``: the table's
    committed chain and the seats' entropy) when ``seed`` is empty; a table made before fair
    deals keeps dealing from its game ``seed`` (hex)."""

    seed: str = ""
    request: Mark | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored."""
        d = {"type": "start", "seed": self.seed} if self.seed else {"type": "start"}
        return _with(d, self.request)


@dataclass(frozen=True, slots=True)
class Act:
    """A seat's action; ``auto`` says why the server chose it, when it did (AUTO_REASONS)."""

    seat: int
    action: Action
    auto: str | None = None
    request: Mark | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored."""
        d: dict[str, Any] = {
            "type": "act",
            "seat": self.seat,
            "action": action_to_dict(self.action),
        }
        if self.auto:
            d["auto"] = self.auto
        return _with(d, self.request)


@dataclass(frozen=True, slots=True)
class NextDeal:
    """The next round was dealt."""

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored."""
        return {"type": "next"}


@dataclass(frozen=True, slots=True)
class Chat:
    """A seated player said something to the table (cleaned text)."""

    seat: int
    text: str
    request: Mark | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored."""
        return _with({"type": "chat", "seat": self.seat, "text": self.text}, self.request)


@dataclass(frozen=True, slots=True)
class Close:
    """A waiting table was closed: by its owner (``owner``), or by the server after it waited
    too long without a change (``expired``)."""

    reason: str
    request: Mark | None = None

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored."""
        return _with({"type": "close", "reason": self.reason}, self.request)


#: Why a table was closed.
CLOSE_REASONS = ("owner", "expired")

Entry = Join | AddBot | Leave | Return | Start | Act | NextDeal | Chat | Close


def _field(d: dict[str, Any], name: str, kind: type) -> Any:
    value = d.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise EntryError(f"a {d['type']!r} entry needs {name!r} as {kind.__name__}, not {value!r}")
    return value


def _is_hex(text: str, most: int) -> bool:
    try:
        bytes.fromhex(text)
    except ValueError:
        return False
    return len(text) <= most and " " not in text


def entry_from_dict(d: Any) -> Entry:
    """Read back an entry written by its ``to_dict``, or raise :class:`EntryError`."""
    if not isinstance(d, dict):
        raise EntryError(f"an entry is an object, not {d!r}")
    match d.get("type"):
        case "join":
            entropy = _field(d, "entropy", str) if "entropy" in d else ""
            if not _is_hex(entropy, 2 * MAX_ENTROPY):
                raise EntryError(f"a 'join' entry's entropy is hex, not {entropy!r}")
            return Join(
                _field(d, "seat", int),
                _field(d, "name", str),
                _field(d, "token", str),
                entropy,
                _mark(d),
            )
        case "bot":
            return AddBot(
                _field(d, "seat", int), _field(d, "name", str), _field(d, "policy", str), _mark(d)
            )
        case "leave":
            return Leave(_field(d, "seat", int), _mark(d))
        case "return":
            return Return(_field(d, "seat", int))
        case "start":
            seed = _field(d, "seed", str) if "seed" in d else ""
            if not _is_hex(seed, 256):
                raise EntryError(f"a 'start' entry's seed is hex, not {seed!r}")
            return Start(seed, _mark(d))
        case "act":
            auto = d.get("auto")
            if auto is not None and auto not in AUTO_REASONS:
                raise EntryError(f"an 'act' entry's auto is one of {AUTO_REASONS}, not {auto!r}")
            try:
                action = action_from_dict(d.get("action"))
            except MalformedAction as e:
                raise EntryError(f"an 'act' entry's action does not read: {e}") from None
            return Act(_field(d, "seat", int), action, auto, _mark(d))
        case "next":
            return NextDeal()
        case "chat":
            return Chat(_field(d, "seat", int), _field(d, "text", str), _mark(d))
        case "close":
            reason = _field(d, "reason", str)
            if reason not in CLOSE_REASONS:
                raise EntryError(f"a 'close' entry's reason is one of {CLOSE_REASONS}")
            return Close(reason, _mark(d))
        case kind:
            raise EntryError(f"unknown entry type {kind!r}")
