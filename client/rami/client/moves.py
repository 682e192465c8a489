"""A person's moves as the engine's actions: forgiving to read, checked against the hand.

Cards may be written ``10h``, ``th``, ``10♥``, ``QS`` or ``jk``; melds are separated by commas
(or ``|``); steps may be chained with ``;``. A rank is A, 2-10, J, Q or K: numbers stop at 10,
so ``11h`` and ``1h`` are refused rather than read as J♥ and A♥ (one rule, in help and
refusals alike).

>>> parse_move("draw", "")
Draw(source='stock', lay=None)
>>> parse_move("add", "3 10H High")
Lay(steps=(AddToMeld(meld=3, cards=(Card.parse('10h'),), end='high'),))
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from rami.engine import (
    JOKER,
    Action,
    AddToMeld,
    Card,
    Declare,
    Discard,
    Draw,
    Lay,
    MalformedAction,
    NewMeld,
    TakeJoker,
    parse_action,
)

__all__ = ["MOVES", "MoveError", "cards_given", "check_ranks", "missing_cards", "parse_move"]

#: The commands that are moves at the table.
MOVES = ("draw", "lay", "add", "take", "discard", "declare")

_SOURCES = {
    "stock": "stock",
    "s": "stock",
    "deck": "stock",
    "discard": "discard",
    "d": "discard",
    "pile": "discard",
    "top": "discard",
}


class MoveError(ValueError):
    """A move that can't be read, in plain words."""


#: A card written with a number for its rank: ``11h``, ``1♥``.
_NUMBERED = re.compile(r"(\d+)([cdhs♣♦♥♠♧♢♡♤])", re.IGNORECASE)
_LETTER_FOR = {"1": "A", "11": "J", "12": "Q", "13": "K"}


#: A card written suit first: ``♦10``, ``hQ``.
_SUIT_FIRST = re.compile(r"([cdhs♣♦♥♠♧♢♡♤])(10|[2-9akjq])", re.IGNORECASE)


#: A rank written alone, without its suit: ``3``, ``q``, ``10``.
_RANK_ALONE = re.compile(r"(10|[2-9akjq])", re.IGNORECASE)


def _card_words(name: str, args: str) -> list[str]:
    """The words of a move that are cards: a discard's and a declaration's, a lay's melds,
    and the cards of an add or a take chained after a lay (``lay ...; add 2 Kh``: their first
    word is a meld's number, and ``low``/``high`` an end)."""
    words: list[str] = []
    for i, part in enumerate(args.split(";")):
        said = [w for w in re.split(r"[\s,|]+", part) if w]
        if i > 0 and said and said[0].lower() in ("add", "take", "lay"):
            verb, said = said[0].lower(), said[1:]
            if verb in ("add", "take"):
                said = [w for w in said[1:] if w.lower() not in ("low", "high")]
        elif i > 0 or name not in ("discard", "declare", "lay"):
            continue  # a part this does not read: the move's parser says what is wrong
        words += said
    return words


def _rank_alone(name: str, args: str, hand: Sequence[Card]) -> None:
    """Refuse a card written without its suit (``3``), naming the cards of that rank in
    ``hand``."""
    for word in _card_words(name, args):
        if not _RANK_ALONE.fullmatch(word):
            continue
        rank = word.upper()
        typed = sorted({c.code() for c in hand if c != JOKER and c.code()[:-1] == rank})
        if len(typed) > 1:
            named = f"{', '.join(typed[:-1])} or {typed[-1]} (in your hand)"
        else:
            named = f"{typed[0] if typed else rank + 'h'}, for instance"
        raise MoveError(f"{word!r} is not a card: its suit goes after its rank: {named}")


def check_ranks(text: str) -> None:
    """Refuse a card whose rank is a number other than 2 to 10 (``11h``, ``1h``, ``01h``), or
    written suit first (``♦10``), saying how it is written."""
    for word in re.split(r"[\s,;|]+", text):
        backwards = _SUIT_FIRST.fullmatch(word)
        if backwards is not None:
            suit, rank = backwards.groups()
            raise MoveError(f"{word!r} is not a card: the rank comes first: {rank.upper()}{suit}")
        found = _NUMBERED.fullmatch(word)
        if found is None or found.group(1) in {str(n) for n in range(2, 11)}:
            continue
        letter = _LETTER_FOR.get(found.group(1))
        also = f" ({letter}{found.group(2)} is written so)" if letter else ""
        raise MoveError(
            f"{word!r} is not a card: ranks are A, 2-10, J, Q and K: numbers stop at 10{also}"
        )


def _source(word: str) -> str:
    w = word.strip().lower()
    if not w:
        return "stock"
    if w in _SOURCES:
        return _SOURCES[w]
    for source in ("stock", "discard"):
        if source.startswith(w):
            return source
    found = difflib.get_close_matches(w, ("stock", "discard"), n=1, cutoff=0.6)
    meant = f": did you mean {found[0]}?" if found else ""
    raise MoveError(f"draw from the stock or the discard pile, not {word!r}{meant}")


def parse_move(name: str, args: str, hand: Sequence[Card] = ()) -> Action:
    """The action of a move command (``name`` is one of :data:`MOVES`; ``hand``, the cards
    held, names the cards of a rank typed without its suit)."""
    # Full-width letters, digits and commas (an input method's) as the ASCII they stand for.
    args = unicodedata.normalize("NFKC", args)
    if name in ("discard", "declare") and not args.strip():
        # The example a card of the hand, when there is one: "discard 7h" was given to a
        # player with no 7♥, who typed it and was refused.
        held = [c for c in hand if c != JOKER]
        example = held[-1].code() if held else "7h"
        raise MoveError(f"{name} which card? Type it after {name}: {name} {example}, for instance.")
    text = args.replace("|", ",").lower()
    words = re.split(r"[\s,;]+", text.strip()) if text.strip() else []
    if name in ("add", "take") and len(words) < 2:
        # The engine's "usage: add MELD CARDS [low|high]" was all a player typing add 2c got.
        card = "10h" if name == "add" else "5s"
        typed = " ".join(args.split())
        example = (
            f"{name} {typed} {card}"
            if words and words[0].isdigit()
            else f"{name} 3 {typed or card}"
        )
        what = (
            "add puts cards of your hand on a meld of the table, named by its number first"
            if name == "add"
            else "take puts a card of your hand in a meld in place of its joker, the meld"
            " named by its number first"
        )
        raise MoveError(f"{what}: {example}, for instance (the numbers are beside the melds).")
    for step in text.split(";")[1:] if name in ("lay", "add", "take", "draw") else ():
        verb = next(iter(step.split()), "")
        if verb in ("discard", "declare"):
            # The steps that chain are those of a lay (and a draw before them).
            raise MoveError(
                f"{verb} is a command of its own: type it after this one (the steps chained"
                " with ';' are lay, add and take)."
            )
    check_ranks(args)
    if name == "lay":
        _melds_apart(args.split(";")[0])
    if name in ("discard", "declare", "lay"):
        _rank_alone(name, args, hand)
    try:
        if name == "draw":
            first, _, rest = text.partition(";")
            text = f"{_source(first)}" + (f";{rest}" if rest else "")
        return parse_action(f"{name} {text}".strip())
    except (MoveError, MalformedAction) as e:
        raise MoveError(_as_typed(str(e), args)) from None


def _melds_apart(typed: str) -> None:
    """Refuse three cards or more typed one between each pair of commas (``lay 2d,3d,4d``),
    saying that a comma starts the next meld: the engine's words were "a meld needs at least 3
    cards". (``typed``: as typed, so the cards are quoted as the player wrote them.)"""
    mark = "|" if "|" in typed and "," not in typed else ","
    groups = [g.split() for g in typed.replace("|", ",").split(",") if g.split()]
    if len(groups) > 2 and all(len(g) == 1 for g in groups):
        cards = " ".join(g[0] for g in groups)
        count = {3: "three", 4: "four"}.get(len(groups), str(len(groups)))
        raise MoveError(
            f"a {'bar' if mark == '|' else 'comma'} starts the next meld, and a meld has 3 cards"
            f" or more: lay {cards} lays the {count} in one meld"
        )


def _as_typed(message: str, typed: str) -> str:
    """``message`` quoting the words of ``typed`` as they were typed (the move is read in
    lower case: ``'q'`` is the ``Q`` the player typed)."""
    words = {w.lower(): w for w in re.split(r"[\s,;|]+", typed) if w}
    return re.sub(r"'([^']*)'", lambda m: f"'{words.get(m.group(1), m.group(1))}'", message)


def cards_given(action: Action) -> Counter[Card]:
    """The cards a move takes from the hand, less the jokers it takes back into it."""
    need: Counter[Card] = Counter()
    taken = 0
    lay = action.lay if isinstance(action, Draw) else action
    if isinstance(lay, Lay):
        for step in lay.steps:
            if isinstance(step, NewMeld | AddToMeld):
                need.update(step.cards)
            elif isinstance(step, TakeJoker):
                need[step.card] += 1
                taken += 1
    elif isinstance(action, Discard | Declare):
        need[action.card] += 1
    need[JOKER] = max(0, need[JOKER] - taken)
    return +need


def missing_cards(action: Action, hand: Sequence[Card]) -> list[Card]:
    """The cards a move names that the hand does not hold (counting copies)."""
    short = cards_given(action) - Counter(hand)
    return sorted(short.elements())
