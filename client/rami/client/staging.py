"""Moves that wait for their lay: tallage's discard taken, and a joker taken back.

The server wants a tallage discard laid in the same command as the draw, and a joker taken
back laid again in the same lay. People think in steps, so the client lets them say
``draw discard`` (or ``take 2 5s``), keeps it staged, and sends it together with the next lay
they type, as one command. :func:`plan` decides, purely, what to send now and what stays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from rami.engine import (
    JOKER,
    Action,
    AddToMeld,
    Card,
    Declare,
    Discard,
    Draw,
    Lay,
    NewMeld,
    TakeJoker,
    Variant,
    format_action,
)
from rami.engine.actions import LayStep

__all__ = ["WHERE_JOKER", "Plan", "Stage", "plan"]


@dataclass(frozen=True, slots=True)
class Stage:
    """What waits for the next lay: the discard to take, and joker takes not yet laid again."""

    draw: Card | None = None
    steps: tuple[LayStep, ...] = ()

    @property
    def empty(self) -> bool:
        """True when nothing is staged."""
        return self.draw is None and not self.steps

    @property
    def jokers(self) -> int:
        """Jokers the staged takes bring into the hand."""
        return sum(1 for s in self.steps if isinstance(s, TakeJoker))

    def describe(self, card_text: Callable[[Card], str] = Card.code) -> str:
        """The staged moves, as the person would type them (the card taken written by
        ``card_text``)."""
        parts = []
        if self.draw is not None:
            parts.append(f"draw discard ({card_text(self.draw)})")
        if self.steps:
            parts.append(format_action(Lay(self.steps)))
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class Plan:
    """What to send now (None: nothing yet), what stays staged, and what to tell the person."""

    send: Action | None
    stage: Stage
    note: str = ""


def _draw(
    action: Draw, *, variant: Variant, discard_top: Card | None, card_text: Callable[[Card], str]
) -> Plan:
    """:func:`plan` of a draw, whatever is staged."""
    if action.source == "discard" and variant.must_lay_discard:
        if action.lay is None:
            if discard_top is None:
                return Plan(action, Stage())
            note = (
                f"you take {card_text(discard_top)} when you lay it: now type the lay that "
                "uses it (lay, add or take; cancel drops it)"
            )
            return Plan(None, Stage(draw=discard_top), note)
        if _unplaced_jokers(action.lay.steps):
            return Plan(None, Stage(discard_top, action.lay.steps), WHERE_JOKER)
    return Plan(action, Stage())


def _unplaced_jokers(steps: tuple[LayStep, ...]) -> int:
    taken = sum(1 for s in steps if isinstance(s, TakeJoker))
    laid = sum(s.cards.count(JOKER) for s in steps if isinstance(s, NewMeld | AddToMeld))
    return max(0, taken - laid)


#: What a staged take waits for.
WHERE_JOKER = "now say where the joker goes, e.g. add 3 JK or lay 10c Jc JK (cancel drops it)"


def plan(
    action: Action,
    stage: Stage,
    *,
    variant: Variant,
    discard_top: Card | None,
    card_text: Callable[[Card], str] = Card.code,
) -> Plan:
    """Combine ``action`` with what is staged: send it, stage it, or refuse it with a note
    (cards in notes written by ``card_text``)."""
    if isinstance(action, Draw):
        drawn = _draw(action, variant=variant, discard_top=discard_top, card_text=card_text)
        if stage.empty or drawn.stage == stage or (action.source == "discard" and not stage.steps):
            return drawn  # (the staged draw of the discard, made now with its lay: not dropped)
        # A new draw in place of what was staged (a draw of the discard waiting for its lay):
        # said, as cancel says it.
        dropped = f"dropped {stage.describe(card_text)}"
        return replace(drawn, note=f"{dropped}; {drawn.note}" if drawn.note else dropped)
    if isinstance(action, Lay):
        steps = stage.steps + action.steps
        if _unplaced_jokers(steps):
            return Plan(None, Stage(stage.draw, steps), WHERE_JOKER)
        lay = Lay(steps)
        return Plan(Draw("discard", lay) if stage.draw is not None else lay, Stage())
    if isinstance(action, Discard | Declare) and not stage.empty:
        return Plan(
            None, stage, f"first finish {stage.describe(card_text)} with a lay, or cancel it"
        )
    return Plan(action, stage)
