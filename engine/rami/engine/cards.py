"""Cards: the 52 faces and the joker, as small integers with parse/format at the edges.

A card is a :class:`Card`, an ``int`` subclass: faces are ``suit * 13 + rank - 1`` (rank 1 is
the ace, 13 the king; suits in the order ♣ ♦ ♥ ♠) and the joker is 52. The two copies of a face
in a two-deck game are the same value: they are interchangeable in play (RULES.md §1).

>>> Card.parse("10h")
Card.parse('10h')
>>> str(Card.parse("qs")), str(JOKER)
('Q♠', 'JK')
>>> Card.parse("Th") == Card.parse("10♥")
True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = [
    "CARDS",
    "FACES",
    "JOKER",
    "RANK_NAMES",
    "SUIT_LETTERS",
    "SUIT_SYMBOLS",
    "Card",
    "CardError",
    "count_vector",
    "format_cards",
    "full_deck",
    "is_red",
    "parse_cards",
    "sort_cards",
]

SUIT_LETTERS = "cdhs"
SUIT_SYMBOLS = "♣♦♥♠"
RANK_NAMES = ("", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_RANK_ALIASES = {"T": 10, "1": 1, "11": 11, "12": 12, "13": 13}
_JOKER_NAMES = {"JK", "JOKER", "*", "🃏", "JO", "X"}
_SUIT_BY_CHAR = {
    **{c: i for i, c in enumerate(SUIT_LETTERS)},
    **{c: i for i, c in enumerate(SUIT_SYMBOLS)},
}
_SUIT_BY_CHAR.update({"♤": 3, "♡": 2, "♢": 1, "♧": 0})


class CardError(ValueError):
    """A string that does not name a card."""


class Card(int):
    """One card: a face (0..51) or the joker (52)."""

    __slots__ = ()

    @property
    def is_joker(self) -> bool:
        """True for the joker."""
        return self == 52

    @property
    def suit(self) -> int:
        """Suit index 0..3 (♣ ♦ ♥ ♠); -1 for the joker."""
        return -1 if self == 52 else self // 13

    @property
    def rank(self) -> int:
        """Rank 1..13 (ace is 1); 0 for the joker."""
        return 0 if self == 52 else self % 13 + 1

    @classmethod
    def of(cls, rank: int, suit: int) -> Card:
        """The face of a rank (1..13, or 14 for a high ace) and a suit."""
        if rank == 14:
            rank = 1
        if not (1 <= rank <= 13 and 0 <= suit <= 3):
            raise CardError(f"no card of rank {rank} and suit {suit}")
        return CARDS[suit * 13 + rank - 1]

    @classmethod
    def parse(cls, text: str) -> Card:
        """Parse ``10h``, ``Th``, ``10♥``, ``qs``, ``JK``: case and surrounding space ignored."""
        s = text.strip().upper()
        if s in _JOKER_NAMES:
            return JOKER
        if len(s) < 2:
            raise CardError(f"not a card: {text!r}")
        suit = _SUIT_BY_CHAR.get(s[-1].lower(), _SUIT_BY_CHAR.get(s[-1]))
        if suit is None:
            raise CardError(f"not a card: {text!r} (suit must be one of c d h s or ♣ ♦ ♥ ♠)")
        rank_text = s[:-1]
        if rank_text in RANK_NAMES[1:]:
            rank = RANK_NAMES.index(rank_text)
        elif rank_text in _RANK_ALIASES:
            rank = _RANK_ALIASES[rank_text]
        else:
            raise CardError(f"not a card: {text!r} (rank must be A, 2-10, J, Q or K)")
        return CARDS[suit * 13 + rank - 1]

    def code(self) -> str:
        """The ASCII spelling that :meth:`parse` reads back: ``10h``, ``Qs``, ``JK``."""
        if self == 52:
            return "JK"
        return RANK_NAMES[self % 13 + 1] + SUIT_LETTERS[self // 13]

    def __str__(self) -> str:
        if self == 52:
            return "JK"
        return RANK_NAMES[self % 13 + 1] + SUIT_SYMBOLS[self // 13]

    def __repr__(self) -> str:
        return f"Card.parse({self.code()!r})"


CARDS: tuple[Card, ...] = tuple(Card(i) for i in range(53))
FACES: tuple[Card, ...] = CARDS[:52]
JOKER: Card = CARDS[52]


def is_red(suit: int) -> bool:
    """True for ♦ and ♥."""
    return suit in (1, 2)


def parse_cards(text: str | Iterable[str]) -> list[Card]:
    """Parse cards separated by spaces or commas: ``"7h 8h 9h"``."""
    parts = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    return [Card.parse(p) for p in parts]


def format_cards(cards: Iterable[int], *, ascii: bool = False) -> str:
    """Cards joined by spaces, with suit symbols (or ASCII codes)."""
    return " ".join(CARDS[c].code() if ascii else str(CARDS[c]) for c in cards)


def sort_cards(cards: Iterable[int], *, by_rank: bool = False) -> list[Card]:
    """Cards by suit then rank (or by rank then suit); jokers last."""
    if by_rank:
        return sorted((CARDS[c] for c in cards), key=lambda c: (c == 52, c % 13, c // 13))
    return sorted(CARDS[c] for c in cards)


def full_deck(decks: int, jokers: int) -> list[Card]:
    """``decks`` copies of the 52 faces and ``jokers`` jokers, in order."""
    return [c for c in FACES for _ in range(decks)] + [JOKER] * jokers


def count_vector(cards: Sequence[int] | Iterable[int]) -> list[int]:
    """How many of each of the 53 cards: index 52 counts the jokers."""
    counts = [0] * 53
    for c in cards:
        counts[c] += 1
    return counts
