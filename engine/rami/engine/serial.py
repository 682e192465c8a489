"""Actions as plain data (JSON-ready dicts), for logs and game records.

Cards are written as their ASCII codes (``10h``, ``Qs``, ``JK``).

>>> from rami.engine.actions import parse_action
>>> d = action_to_dict(parse_action("draw discard; lay Qc Kc Ac"))
>>> d
{'type': 'draw', 'source': 'discard', 'lay': [{'new_meld': ['Qc', 'Kc', 'Ac']}]}
>>> action_from_dict(d) == parse_action("draw discard; lay Qc Kc Ac")
True
"""

from __future__ import annotations

from typing import Any

from .actions import (
    Action,
    AddToMeld,
    Declare,
    Discard,
    Draw,
    Lay,
    LayStep,
    NewMeld,
    NextRound,
    TakeJoker,
)
from .cards import Card, CardError
from .errors import MalformedAction

__all__ = ["action_from_dict", "action_to_dict"]


def _codes(cards: tuple[Card, ...]) -> list[str]:
    return [c.code() for c in cards]


def _step_to_dict(step: LayStep) -> dict[str, Any]:
    if isinstance(step, NewMeld):
        if step.jokers_as:
            return {"new_meld": _codes(step.cards), "jokers_as": _codes(step.jokers_as)}
        return {"new_meld": _codes(step.cards)}
    if isinstance(step, AddToMeld):
        d: dict[str, Any] = {"add": step.meld, "cards": _codes(step.cards)}
        if step.end:
            d["end"] = step.end
        return d
    return {"take_joker": step.meld, "card": step.card.code()}


def action_to_dict(action: Action) -> dict[str, Any]:
    """The action as a JSON-ready dict."""
    if isinstance(action, Draw):
        d: dict[str, Any] = {"type": "draw", "source": action.source}
        if action.lay is not None:
            d["lay"] = [_step_to_dict(s) for s in action.lay.steps]
        return d
    if isinstance(action, Lay):
        return {"type": "lay", "lay": [_step_to_dict(s) for s in action.steps]}
    if isinstance(action, Discard):
        return {"type": "discard", "card": action.card.code()}
    if isinstance(action, Declare):
        return {"type": "declare", "card": action.card.code()}
    return {"type": "next"}


def _card(text: Any) -> Card:
    if not isinstance(text, str):
        raise MalformedAction(f"not a card: {text!r}", "BAD_CARD")
    try:
        return Card.parse(text)
    except CardError as e:
        raise MalformedAction(str(e), "BAD_CARD") from None


def _cards(items: Any) -> tuple[Card, ...]:
    if not isinstance(items, list):
        raise MalformedAction(f"not a list of cards: {items!r}", "BAD_CARD")
    return tuple(_card(c) for c in items)


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedAction(f"not a meld number: {value!r}", "BAD_MELD")
    return value


def _step_from_dict(d: Any) -> LayStep:
    if not isinstance(d, dict):
        raise MalformedAction(f"not a lay step: {d!r}", "BAD_ACTION")
    if "new_meld" in d:
        return NewMeld(_cards(d["new_meld"]), _cards(d.get("jokers_as", [])))
    if "add" in d:
        end = d.get("end")
        if end not in (None, "low", "high"):
            raise MalformedAction(f"a run's end is low or high, not {end!r}", "BAD_ACTION")
        return AddToMeld(_int(d["add"]), _cards(d.get("cards")), end)
    if "take_joker" in d:
        return TakeJoker(_int(d["take_joker"]), _card(d.get("card")))
    raise MalformedAction(f"not a lay step: {d!r}", "BAD_ACTION")


def _lay(items: Any) -> Lay:
    if not isinstance(items, list) or not items:
        raise MalformedAction("a lay needs a list of steps", "BAD_ACTION")
    return Lay(tuple(_step_from_dict(s) for s in items))


def action_from_dict(d: Any) -> Action:
    """Read back an action written by :func:`action_to_dict`."""
    if not isinstance(d, dict):
        raise MalformedAction(f"not an action: {d!r}", "BAD_ACTION")
    kind = d.get("type")
    if kind == "draw":
        source = d.get("source")
        if source not in ("stock", "discard"):
            raise MalformedAction(f"draw from stock or discard, not {source!r}", "BAD_SOURCE")
        lay = _lay(d["lay"]) if "lay" in d else None
        return Draw("stock" if source == "stock" else "discard", lay)
    if kind == "lay":
        return _lay(d.get("lay"))
    if kind == "discard":
        return Discard(_card(d.get("card")))
    if kind == "declare":
        return Declare(_card(d.get("card")))
    if kind == "next":
        return NextRound()
    raise MalformedAction(f"unknown action type {kind!r}", "BAD_ACTION")
