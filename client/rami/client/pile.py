"""The discard pile's recent history: the last cards thrown, who threw them, who took them.

The watch stream tells every discard and every card taken from the pile; :class:`Pile` keeps
the recent ones (a round's start, a rebuilt stock or a view that disagrees starts it afresh
from the card on top), for the ``pile`` command and the panel's short line.

>>> pile = Pile()
>>> pile.apply(ev.RoundStarted(1, 0, "", Card.parse("3s"), 1))
>>> pile.apply(ev.Discarded(1, Card.parse("9c")))
>>> [(str(t.card), t.by) for t in pile.on_pile()]
[('9♣', 1), ('3♠', None)]
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from prompt_toolkit.formatted_text import StyleAndTextTuples, fragment_list_to_text
from prompt_toolkit.utils import get_cwidth

from rami.engine import Card
from rami.engine import events as ev

from .cardtext import card_fragments
from .look import Look

__all__ = ["Pile", "Throw"]

#: How many throws are kept, and how many the panel's line shows when its width is not
#: given (given one, as many as fit).
KEEP = 30
SHOWN = 5


@dataclass(slots=True)
class Throw:
    """One card that went on the pile: by whom (None: turned up, or not ``seen`` thrown: the
    top of the pile when this client started following it), and who took it, if any. A card
    of None lies face down: a complete declaration's (portuguese), until the next deal."""

    card: Card | None
    by: int | None
    taken_by: int | None = None
    seen: bool = True


class Pile:
    """The recent throws, oldest first."""

    def __init__(self) -> None:
        self.throws: deque[Throw] = deque(maxlen=KEEP)
        #: Followed from the pile's bottom: the round's deal, or the stock's last rebuild
        #: (a table's past read from the middle of a round was not).
        self.whole = False

    def apply(self, event: object) -> None:
        """Follow one event of the game."""
        if isinstance(event, ev.RoundStarted):
            self.throws.clear()
            self.whole = True
            if event.discard_top is not None:
                self.throws.append(Throw(event.discard_top, None))
        elif isinstance(event, ev.Declared) and event.complete:
            self.throws.append(Throw(None, event.seat))  # on the pile, counted, unseen
        elif isinstance(event, ev.Discarded | ev.Declared):
            thrown = _thrown(event)
            if thrown is not None:
                self.throws.append(Throw(thrown, event.seat))
        elif isinstance(event, ev.Drew) and event.source == "discard":
            top = self._top()
            if top is not None:
                top.taken_by = event.seat
        elif isinstance(event, ev.StockRebuilt):
            kept = self._top()
            self.throws.clear()
            self.whole = True
            if kept is not None:
                self.throws.append(kept)

    def sync(self, top: Card | None) -> None:
        """Agree with the view: when its top card is not the one followed (a snapshot after a
        reconnection, say), start again from it."""
        mine = self._top()
        if top is None:
            if mine is not None:
                self.throws.clear()
        elif mine is None or mine.card != top:
            self.throws.clear()
            self.throws.append(Throw(top, None, seen=False))
            self.whole = False

    def _top(self) -> Throw | None:
        for t in reversed(self.throws):
            if t.taken_by is None:
                return t
        return None

    def on_pile(self) -> list[Throw]:
        """The cards still on the pile (as far as followed), the top first."""
        return [t for t in reversed(self.throws) if t.taken_by is None]

    def line(
        self, names: Sequence[str], look: Look, width: int = 0, size: int = 0
    ) -> StyleAndTextTuples:
        """The panel's short line: the top cards of the pile and who threw them, the newest
        first, then an ellipsis and how many more of the pile's ``size`` cards lie under them;
        in ``width`` columns, as many of the newest as fit (0: any width, the ``SHOWN``
        newest)."""
        on_pile = self.on_pile()
        items: list[StyleAndTextTuples] = []
        for t in on_pile if width else on_pile[:SHOWN]:
            if t.card is None:
                items.append([("class:dim", "face down")])
                continue
            item = card_fragments(t.card, look)
            if t.by is not None:
                item.append(("class:dim", f" {_name(names, t.by)}"))
            items.append(item)
        total = max(size, len(on_pile))
        out: StyleAndTextTuples = []
        for shown in range(len(items), 0, -1):
            out = []
            for i, item in enumerate(items[:shown]):
                if i:
                    out.append(("class:dim", look.bullet))
                out += item
            if total > shown:
                more = f"{look.bullet}{look.ellipsis} {total - shown} more (pile)"
                out.append(("class:dim", more))
            if not width or get_cwidth(fragment_list_to_text(out)) <= width:
                break
        return out

    def lines(
        self, names: Sequence[str], look: Look, size: int, rows: int = 0
    ) -> list[StyleAndTextTuples]:
        """The ``pile`` command's answer: every throw followed, the newest first; in at most
        ``rows`` rows (0: any), the newest that fit and how many older ones are left out."""
        if not self.throws:
            return [[("class:dim", "The discard pile is empty.")]]
        cards = f"{size} card{'' if size == 1 else 's'}"
        taken = sum(1 for t in self.throws if t.taken_by is not None)
        if taken:  # listed where they were thrown: the rows are more than the cards on it
            cards += f", and {taken} taken from it"
        out: list[StyleAndTextTuples] = [
            [("class:heading", f"The discard pile ({cards}), the newest first")]
        ]
        for t in reversed(self.throws):
            if t.card is None:  # a declaration's, so by its declarer
                declarer = _name(names, t.by if t.by is not None else -1)
                out.append(
                    [("", "  --  "), ("class:dim", f"face down: the card {declarer} declared with")]
                )
                continue
            if not t.seen:
                who = "on top when you joined"
            elif t.by is None:
                who = "turned up"
            else:
                who = f"discarded by {_name(names, t.by)}"
            row: StyleAndTextTuples = [("", "  "), *card_fragments(t.card, look)]
            pad = " " * max(1, 4 - len(look.card_text(t.card)))
            row.append(("class:dim", f"{pad}{who}"))
            if t.taken_by is not None:
                row.append(("", f", taken by {_name(names, t.taken_by)}"))
            out.append(row)
        # Cards under the oldest followed: on the pile before this client followed it (a
        # join, or a past read from the middle of a round), or older than the throws kept.
        unseen = max(0, size - len(self.on_pile()))
        joined = not self.throws[0].seen
        if not (joined or len(self.throws) == KEEP or not self.whole):
            unseen = 0
        if unseen:
            noun = "card" if unseen == 1 else "cards"
            if joined:
                tail = f"{unseen} {noun} under it, from before you joined"
            else:
                tail = f"{unseen} older {noun} under them"
            out.append([("class:dim", f"  {look.ellipsis} and {tail}")])
        if rows and len(out) > rows:
            kept = max(1, rows - 2)  # under the heading, and above the note
            left = len(self.throws) - kept + unseen
            out = out[: 1 + kept]
            older = f"{left} older throw{'' if left == 1 else 's'}"
            out.append([("class:dim", f"  {look.ellipsis} and {older} (no room in this window)")])
        return out


def _thrown(event: object) -> Card | None:
    """The card an event puts on the pile: a discard, or a false declaration's card."""
    if isinstance(event, ev.Discarded):
        return event.card
    if isinstance(event, ev.Declared) and not event.complete:
        return event.card
    return None


def _name(names: Sequence[str], seat: int) -> str:
    return names[seat] if 0 <= seat < len(names) else f"Seat {seat}"
