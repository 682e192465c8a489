"""Events of the table itself, beside the game's: seats taken and left, the start, chat, clock.

The game's events are the engine's (:mod:`rami.engine.events`); these are the rest of what a
watch stream says, as small values the narrator reads.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Chatted", "Joined", "Left", "Returned", "Started", "TableEvent", "TimedOut"]


@dataclass(frozen=True, slots=True)
class Joined:
    """Someone took a seat (a person, a remote program, or a built-in bot)."""

    seat: int
    name: str
    bot: bool = False


@dataclass(frozen=True, slots=True)
class Left:
    """A player left their seat (during a game, the server plays for it)."""

    seat: int


@dataclass(frozen=True, slots=True)
class Returned:
    """A player came back to a seat the server was playing for."""

    seat: int


@dataclass(frozen=True, slots=True)
class Started:
    """The game began; seats were renumbered, these are the names in play order."""

    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Chatted:
    """A seated player wrote in the chat."""

    seat: int
    text: str


@dataclass(frozen=True, slots=True)
class TimedOut:
    """The clock ran out and the server played for the seat."""

    seat: int


TableEvent = Joined | Left | Returned | Started | Chatted | TimedOut
