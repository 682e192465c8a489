"""Completion as the person types: command names, then what each command takes — the cards
in the hand (only as many copies as are left), meld numbers, draw sources, tables, options.

The completer reads the situation through a callable, so it always completes against the
hand and the table as they are now.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from rami.engine import JOKER, OPTION_SPECS, POLICIES, VARIANTS, Card, CardError, Meld, Variant

from .cardtext import meld_fragments
from .commands import available, split_command
from .look import Look

__all__ = ["Situation", "TableCompleter", "card_matches"]

_PLAIN = Look(color=False)


@dataclass(frozen=True, slots=True)
class Situation:
    """What completion needs to know: where the person is, their hand, the table."""

    where: str
    look: Look = _PLAIN
    hand: tuple[Card, ...] = ()
    #: (number, meld, owner's name) of every meld on the table.
    melds: tuple[tuple[int, Meld, str], ...] = ()
    #: (what to type, description) of every table in the last list.
    tables: tuple[tuple[str, str], ...] = ()
    #: The game played at the table (None in the lobby).
    variant: Variant | None = None


def card_matches(card: Card, word: str) -> bool:
    """True when ``card`` completes ``word``: ``1`` → 10s, ``q`` → queens, ``h`` → hearts,
    ``t`` → tens.

    >>> card_matches(Card.parse("10h"), "1"), card_matches(Card.parse("10h"), "h")
    (True, True)
    >>> card_matches(Card.parse("Qs"), "qh")
    False
    """
    w = word.strip().lower()
    if not w:
        return True
    code = card.code().lower()
    if card == JOKER:
        return "jk".startswith(w) or "joker".startswith(w)
    if w.startswith("t"):
        w = "10" + w[1:]
    if code.startswith(w) or str(card).lower().startswith(w):
        return True
    return len(w) == 1 and w in "cdhs♣♦♥♠" and (code.endswith(w) or str(card).endswith(w))


def _card_completions(cards: Iterable[Card], word: str, look: Look) -> Iterator[Completion]:
    for c in sorted(set(cards)):
        if card_matches(c, word):
            yield Completion(
                c.code(), -len(word), display=[(look.card_style(c), look.card_text(c))]
            )


def _typed_cards(words: Iterable[str]) -> Counter[Card]:
    out: Counter[Card] = Counter()
    for w in words:
        with contextlib.suppress(CardError):
            out[Card.parse(w)] += 1
    return out


def _words(options: Iterable[tuple[str, str]], word: str) -> Iterator[Completion]:
    for text, meta in options:
        if text.lower().startswith(word.lower()):
            yield Completion(text, -len(word), display_meta=meta)


class TableCompleter(Completer):
    """Completes commands and their arguments against the situation now."""

    def __init__(self, situation: Callable[[], Situation]) -> None:
        self.situation = situation

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        """The completions of the word before the cursor."""
        s = self.situation()
        text = document.text_before_cursor
        # In a chain (take 2 5s; add 3 JK), complete the last step on its own; cards named
        # by earlier steps are no longer in the hand.
        earlier, _, segment = text.rpartition(";")
        if " " not in segment.lstrip():
            word = segment.lstrip()
            for c in available(s.where, s.variant):
                if c.name.startswith(word.lower()):
                    # A command that takes arguments comes with the space before them.
                    text = c.name + " " if " " in c.usage else c.name
                    yield Completion(text, -len(word), display=c.name, display_meta=c.summary)
            return
        name, args = split_command(segment)
        done = args.replace(",", " ").split()
        # The word being typed (none after a space or a comma, or when none was typed).
        word = "" if segment.endswith((" ", ",")) or not done else done[-1]
        if word:
            done = done[:-1]
        yield from self._arguments(s, name, done, word, earlier)

    def _arguments(
        self, s: Situation, name: str, done: list[str], word: str, earlier: str
    ) -> Iterator[Completion]:
        look = s.look
        left = Counter(s.hand) - _typed_cards(earlier.replace(",", " ").split())
        # A joker taken back earlier in the chain is in the hand to be laid again.
        left[JOKER] += sum(1 for step in earlier.split(";") if step.strip().startswith("take"))
        if name == "draw" and not done:
            yield from _words(
                (("stock", "the face-down pile"), ("discard", "the face-up card")), word
            )
        elif name in ("lay", "discard", "declare"):
            if name != "lay" and done:
                return
            yield from _card_completions((left - _typed_cards(done)).elements(), word, look)
        elif name == "add":
            if not done:
                yield from self._melds(s, word, lambda m: True)
            else:
                yield from _card_completions((left - _typed_cards(done[1:])).elements(), word, look)
                if len(done) >= 2:
                    yield from _words((("high", "joker at the top"), ("low", "joker below")), word)
        elif name == "take":
            if not done:
                yield from self._melds(s, word, lambda m: not m.is_clean)
            elif len(done) == 1:
                yield from _card_completions(self._joker_cards(s, done[0], left), word, look)
        else:
            yield from self._lobby(s, name, done, word)

    def _melds(self, s: Situation, word: str, keep: Callable[[Meld], bool]) -> Iterator[Completion]:
        for number, meld, owner in s.melds:
            if keep(meld) and str(number).startswith(word):
                shown = "".join(t for _, t, *_ in meld_fragments(meld, s.look))
                yield Completion(str(number), -len(word), display_meta=f"{owner}: {shown}")

    @staticmethod
    def _joker_cards(s: Situation, number: str, left: Counter[Card]) -> list[Card]:
        """The cards of the hand that take back a joker of meld ``number``."""
        for n, meld, _ in s.melds:
            if str(n) != number or meld.is_clean:
                continue
            if meld.kind == "set":
                wanted = [Card.of(meld.rank, suit) for suit in meld.missing_suits()]
            else:
                wanted = meld.joker_cards()
            return [c for c in wanted if left[c]]
        return []

    @staticmethod
    def _lobby(s: Situation, name: str, done: list[str], word: str) -> Iterator[Completion]:
        if name == "help" and not done:
            yield from _words(((c.name, c.summary) for c in available(s.where, s.variant)), word)
        elif name == "sort" and not done:
            yield from _words((("suit", "by suit then rank"), ("rank", "by rank")), word)
        elif name == "bot" and not done:
            yield from _words(((p, "bot policy") for p in POLICIES), word)
        elif name in ("join", "watch") and not done:
            yield from _words(s.tables, word)
        elif name == "create":
            if not done:
                yield from _words(((v, VARIANTS[v].title) for v in VARIANTS), word)
            extra = [
                ("bots=", "bots to seat with you"),
                ("policy=", "the bots' policy"),
                ("name=", "the table's name"),
                ("private", "leave it out of the list"),
            ]
            given = {d.split("=")[0] for d in done}
            options = [(f"{o.name}=", o.help) for o in OPTION_SPECS] + extra
            yield from _words(((t, m) for t, m in options if t.rstrip("=") not in given), word)
