"""Actions: what a player does, as small immutable values.

A turn is a draw, then (where the variant allows) lays, then a discard or a declaration:

- :class:`Draw` from the stock or the discard pile. In ``tallage`` a discard taken must be laid
  in the same move, so that draw carries its :class:`Lay` and is accepted or refused whole.
- :class:`Lay`: steps applied in order and accepted or refused whole — :class:`NewMeld`,
  :class:`AddToMeld` (to any meld on the table, by its number), :class:`TakeJoker` (give the
  card a joker stands for, take the joker into hand; it must be laid again in the same lay).
- :class:`Discard` ends the turn; :class:`Declare` (portuguese) puts a card face down and shows
  the other 13.
- :class:`NextRound` deals the next round once a round is over.

>>> parse_action("lay 7h 8h 9h, Ks Kd Kc")
Lay(steps=(NewMeld(cards=(Card.parse('7h'), Card.parse('8h'), Card.parse('9h')), jokers_as=()), \
NewMeld(cards=(Card.parse('Ks'), Card.parse('Kd'), Card.parse('Kc')), jokers_as=())))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .cards import Card, CardError, format_cards, parse_cards
from .errors import MalformedAction

__all__ = [
    "Action",
    "AddToMeld",
    "Declare",
    "Discard",
    "Draw",
    "Lay",
    "LayStep",
    "NewMeld",
    "NextRound",
    "TakeJoker",
    "format_action",
    "parse_action",
]

Source = Literal["stock", "discard"]


@dataclass(frozen=True, slots=True)
class NewMeld:
    """Lay a new meld from the hand; ``jokers_as`` may name the card each joker stands for."""

    cards: tuple[Card, ...]
    jokers_as: tuple[Card, ...] = ()


@dataclass(frozen=True, slots=True)
class AddToMeld:
    """Add cards from the hand to meld number ``meld`` (1-based); jokers go at ``end``."""

    meld: int
    cards: tuple[Card, ...]
    end: Literal["low", "high"] | None = None


@dataclass(frozen=True, slots=True)
class TakeJoker:
    """Put ``card`` in meld ``meld`` in place of the joker that stands for it; take the joker."""

    meld: int
    card: Card


LayStep = NewMeld | AddToMeld | TakeJoker


@dataclass(frozen=True, slots=True)
class Lay:
    """Steps applied in order, accepted or refused as a whole."""

    steps: tuple[LayStep, ...]


@dataclass(frozen=True, slots=True)
class Draw:
    """Take the top card of the stock or of the discard pile (with its lay, in tallage)."""

    source: Source
    lay: Lay | None = None


@dataclass(frozen=True, slots=True)
class Discard:
    """Put a card from the hand face up on the discard pile: the turn is over."""

    card: Card


@dataclass(frozen=True, slots=True)
class Declare:
    """Portuguese: put ``card`` face down on the pile and show the other 13 as complete."""

    card: Card


@dataclass(frozen=True, slots=True)
class NextRound:
    """Deal the next round (when a round is over and the game is not)."""


Action = Draw | Lay | Discard | Declare | NextRound


def _cards(text: str) -> tuple[Card, ...]:
    try:
        return tuple(parse_cards(text))
    except CardError as e:
        raise MalformedAction(str(e), "BAD_CARD") from None


def _one_card(text: str) -> Card:
    cards = _cards(text)
    if len(cards) != 1:
        raise MalformedAction(f"name exactly one card, not {text!r}", "BAD_CARD")
    return cards[0]


def _meld_number(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise MalformedAction(f"a meld is named by its number, not {text!r}", "BAD_MELD")
    return int(text)


def _parse_steps(verb: str, rest: str) -> list[LayStep]:
    if verb == "lay":
        return [NewMeld(_cards(part)) for part in rest.split(",") if part.strip()]
    words = rest.split()
    if len(words) < 2:
        cards = "CARDS [low|high]" if verb == "add" else "CARD"  # a joker is taken for one card
        raise MalformedAction(f"usage: {verb} MELD {cards}", "BAD_ACTION")
    meld = _meld_number(words[0])
    if verb == "add":
        end: Literal["low", "high"] | None = None
        if words[-1] in ("low", "high"):
            end = "low" if words[-1] == "low" else "high"
            words = words[:-1]
        return [AddToMeld(meld, _cards(" ".join(words[1:])), end)]
    return [TakeJoker(meld, _one_card(" ".join(words[1:])))]


def parse_action(text: str) -> Action:
    """Read an action in the client's words; lay steps may be chained with ``;``.

    ``draw stock``, ``draw discard [; lay ...]``, ``lay 7h 8h 9h, Ks Kd Kc``, ``add 3 10h``,
    ``take 2 5s; add 4 JK high``, ``discard 9c``, ``declare 9c``, ``next``.
    """
    parts = [p.strip() for p in text.strip().split(";") if p.strip()]
    if not parts:
        raise MalformedAction("empty action", "BAD_ACTION")
    verb, _, rest = parts[0].partition(" ")
    verb = verb.lower()
    if verb == "draw":
        source = rest.strip().lower()
        if source not in ("stock", "discard"):
            raise MalformedAction("usage: draw stock|discard", "BAD_ACTION")
        lay = _parse_lay(parts[1:]) if len(parts) > 1 else None
        return Draw("stock" if source == "stock" else "discard", lay)
    if verb in ("lay", "add", "take"):
        return _parse_lay(parts)
    if len(parts) > 1:
        raise MalformedAction(f"{verb} can't be chained with other steps", "BAD_ACTION")
    if verb == "discard":
        return Discard(_one_card(rest))
    if verb == "declare":
        return Declare(_one_card(rest))
    if verb == "next":
        return NextRound()
    raise MalformedAction(f"unknown action {verb!r}", "BAD_ACTION")


def _parse_lay(parts: list[str]) -> Lay:
    steps: list[LayStep] = []
    for part in parts:
        verb, _, rest = part.partition(" ")
        if verb.lower() not in ("lay", "add", "take"):
            raise MalformedAction(f"only lay, add and take go in a lay, not {verb!r}", "BAD_ACTION")
        steps.extend(_parse_steps(verb.lower(), rest))
    if not steps:
        raise MalformedAction("a lay needs at least one meld", "BAD_ACTION")
    return Lay(tuple(steps))


def format_action(action: Action) -> str:
    """The action in the client's words, as :func:`parse_action` reads it back."""
    if isinstance(action, Draw):
        text = f"draw {action.source}"
        return f"{text}; {format_action(action.lay)}" if action.lay else text
    if isinstance(action, Lay):
        out: list[str] = []
        for step in action.steps:
            if isinstance(step, NewMeld):
                out.append("lay " + format_cards(step.cards, ascii=True))
            elif isinstance(step, AddToMeld):
                end = f" {step.end}" if step.end else ""
                out.append(f"add {step.meld} {format_cards(step.cards, ascii=True)}{end}")
            else:
                out.append(f"take {step.meld} {step.card.code()}")
        return "; ".join(out)
    if isinstance(action, Discard):
        return f"discard {action.card.code()}"
    if isinstance(action, Declare):
        return f"declare {action.card.code()}"
    return "next"
