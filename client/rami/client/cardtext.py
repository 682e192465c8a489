"""Cards, hands and melds as styled text fragments (prompt-toolkit's formatted text).

Every function is pure: it takes cards and a :class:`~rami.client.look.Look` and returns
``(style, text)`` fragments, so the same code draws the live table, the events and replays.

>>> from prompt_toolkit.formatted_text import fragment_list_to_text
>>> from rami.engine import parse_cards
>>> fragment_list_to_text(hand_fragments(parse_cards("Qs 2c JK 3c"), Look()))
'2♣ 3♣  Q♠  JK'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prompt_toolkit.formatted_text import StyleAndTextTuples

from rami.engine import JOKER, Card, Meld, sort_cards

from .look import Look

__all__ = [
    "card_fragments",
    "cards_fragments",
    "hand_fragments",
    "hand_groups",
    "meld_fragments",
    "meld_text",
]


def card_fragments(card: int, look: Look, extra: str = "") -> StyleAndTextTuples:
    """One card, in its colour."""
    style = look.card_style(card) + (f" {extra}" if extra else "")
    return [(style, look.card_text(card))]


def cards_fragments(cards: Iterable[int], look: Look, sep: str = " ") -> StyleAndTextTuples:
    """Cards in the order given, separated by ``sep``."""
    out: StyleAndTextTuples = []
    for i, c in enumerate(cards):
        if i:
            out.append(("", sep))
        out.extend(card_fragments(c, look))
    return out


def _group(card: Card, by_rank: bool) -> int:
    return card.rank if by_rank else card.suit


def hand_groups(
    hand: Sequence[int], look: Look, *, by_rank: bool = False, drawn: int | None = None
) -> list[StyleAndTextTuples]:
    """A hand sorted by suit (one group per suit) or by rank (one group per rank); the card
    just drawn underlined."""
    groups: list[StyleAndTextTuples] = []
    marked = False
    previous: Card | None = None
    for c in sort_cards(hand, by_rank=by_rank):
        if previous is None or _group(c, by_rank) != _group(previous, by_rank):
            groups.append([])
        else:
            groups[-1].append(("", " "))
        mark = c == drawn and not marked
        marked = marked or mark
        groups[-1].extend(card_fragments(c, look, "class:card.drawn" if mark else ""))
        previous = c
    return groups


def hand_fragments(
    hand: Sequence[int], look: Look, *, by_rank: bool = False, drawn: int | None = None
) -> StyleAndTextTuples:
    """:func:`hand_groups` on one line, the groups two spaces apart."""
    out: StyleAndTextTuples = []
    for i, group in enumerate(hand_groups(hand, look, by_rank=by_rank, drawn=drawn)):
        if i:
            out.append(("", "  "))
        out.extend(group)
    return out


def _joker_label(meld: Meld, index: int, look: Look) -> str:
    """What the joker at ``index`` of ``meld`` stands for: ``8♥``, or ``K♣/♥`` in a set."""
    if meld.kind == "set":
        suits = "/".join(look.suit(s) for s in meld.missing_suits())
        rank = look.card_text(Card.of(meld.rank, 0))[:-1]
        return f"{rank}{suits}"
    jokers_before = sum(1 for c in meld.cards[:index] if c == JOKER)
    return look.card_text(meld.joker_cards()[jokers_before])


def meld_fragments(meld: Meld, look: Look) -> StyleAndTextTuples:
    """A meld's cards, each joker with the card it stands for: ``7♥ JK(8♥) 9♥``."""
    out: StyleAndTextTuples = []
    for i, c in enumerate(meld.cards):
        if i:
            out.append(("", " "))
        out.extend(card_fragments(c, look))
        if c == JOKER:
            out.append(("class:card.joker", f"({_joker_label(meld, i, look)})"))
    return out


def meld_text(meld: Meld, look: Look) -> str:
    """:func:`meld_fragments` as plain text."""
    return "".join(text for _, text, *_ in meld_fragments(meld, look))
