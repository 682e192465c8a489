"""Melds: runs and sets, with the card every joker stands for (RULES.md §1).

A :class:`Meld` is an immutable value. A run keeps its cards in rank order from ``lo`` to
``hi`` (1 is a low ace, 14 a high ace), jokers in the places they fill; a set keeps its natural
cards by suit, then its jokers, which stand for any suit the set does not hold.

>>> m = Meld.parse("7h 8h JK")
>>> m.kind, m.lo, m.hi, str(m)
('run', 7, 9, '7♥ 8♥ JK')
>>> m.joker_cards()
[Card.parse('9h')]
>>> Meld.parse("Qc Kc Ac").lo
12
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .cards import CARDS, JOKER, SUIT_SYMBOLS, Card, CardError, format_cards, parse_cards

__all__ = ["RUN", "SET", "Meld", "MeldError", "TableMeld", "card_value", "rank_value"]

RUN: Literal["run"] = "run"
SET: Literal["set"] = "set"
MeldKind = Literal["run", "set"]
End = Literal["low", "high"]

MAX_RUN = 13


class MeldError(ValueError):
    """Cards that do not make a valid meld, or a change a meld does not allow."""


def rank_value(rank: int, ace: int) -> int:
    """Value of a rank (1..14) when scoring: face value, 10 for J Q K, ``ace`` for an ace."""
    if rank in (1, 14):
        return ace
    return 10 if rank > 10 else rank


def card_value(card: int, ace: int, joker: int) -> int:
    """Value of a card in hand: face value, 10 for J Q K, ``ace`` for an ace, ``joker``."""
    if card == 52:
        return joker
    return rank_value(card % 13 + 1, ace)


#: The melds :meth:`Meld.from_cards` made, by (cards, jokers_as, jokers_per_meld): at most
#: some 20,000 (a few MB).
_MADE: dict[tuple[tuple[int, ...], tuple[int, ...], int], Meld] = {}
_MADE_CAP = 20_000


@dataclass(frozen=True, slots=True)
class Meld:
    """A run or a set of cards, jokers included, as laid on the table."""

    kind: MeldKind
    cards: tuple[Card, ...]
    #: Suit of a run; -1 for a set.
    suit: int = -1
    #: Rank of a set; the lowest rank of a run (1 for a low ace).
    rank: int = 0

    # -- construction -------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str, *, jokers_per_meld: int = 1) -> Meld:
        """A meld from text such as ``"7h 8h 9h"`` or ``"Ks Kd JK"``."""
        try:
            cards = parse_cards(text)
        except CardError as e:
            raise MeldError(str(e)) from None
        return cls.from_cards(cards, jokers_per_meld=jokers_per_meld)

    @classmethod
    def from_cards(
        cls,
        cards: Sequence[int],
        *,
        jokers_as: Sequence[int] = (),
        jokers_per_meld: int = 1,
    ) -> Meld:
        """Validate ``cards`` as a new meld.

        A joker's place in a run is the gap it fills; at an open end it is the end where the
        joker stands in ``cards`` (before every natural card: the low end), unless ``jokers_as``
        names the card each joker stands for, in order.
        """
        # Melds are values: each one made is kept (searches and step masks make the same ones
        # again and again), the cache dropped whole when it grows past its bound. Refusals are
        # not kept: they are what anyone may ask for, in any number.
        cards, jokers_as = tuple(cards), tuple(jokers_as)
        key = (cards, jokers_as, jokers_per_meld)
        found = _MADE.get(key)
        if found is None:
            found = cls._from_cards(cards, jokers_as, jokers_per_meld)
            if len(_MADE) >= _MADE_CAP:
                _MADE.clear()
            _MADE[key] = found
        return found

    @classmethod
    def _from_cards(
        cls, cards: Sequence[int], jokers_as: Sequence[int], jokers_per_meld: int
    ) -> Meld:
        given = [CARDS[c] for c in cards]
        if len(given) < 3:
            raise MeldError(f"a meld needs at least 3 cards, not {len(given)}")
        naturals = [c for c in given if c != JOKER]
        jokers = len(given) - len(naturals)
        if jokers > jokers_per_meld:
            raise MeldError(
                f"a meld may hold at most {jokers_per_meld} joker"
                f"{'s' if jokers_per_meld != 1 else ''}, not {jokers}"
            )
        if not naturals:
            raise MeldError("a meld needs at least one card that is not a joker")
        ranks = {c.rank for c in naturals}
        suits = {c.suit for c in naturals}
        wants_run = bool(jokers_as) and all(CARDS[j].suit in suits for j in jokers_as)
        if len(ranks) == 1 and (len(naturals) > 1 or not wants_run):
            return cls._set(naturals, jokers, jokers_as)
        if len(suits) == 1:
            return cls._run(given, naturals, jokers, jokers_as)
        raise MeldError(
            f"{format_cards(cards)} is neither a run (one suit, ranks in a row) "
            "nor a set (one rank, different suits)"
        )

    @classmethod
    def _set(cls, naturals: list[Card], jokers: int, jokers_as: Sequence[int]) -> Meld:
        rank = naturals[0].rank
        suits = [c.suit for c in naturals]
        if len(set(suits)) != len(suits):
            raise MeldError(f"a set holds each suit once: {format_cards(naturals)} repeats a suit")
        if len(naturals) + jokers > 4:
            raise MeldError("a set has at most 4 cards")
        if jokers_as and (len(jokers_as) != jokers or len(set(jokers_as)) != len(jokers_as)):
            raise MeldError(
                f"name one card per joker, each once: {jokers} joker"
                f"{'s' if jokers != 1 else ''}, {len(jokers_as)} named"
            )
        for j in jokers_as:
            jc = CARDS[j]
            if jc.rank != rank or jc.suit in suits:
                raise MeldError(f"a joker in this set can't stand for {jc}")
        return cls(SET, (*sorted(naturals), *([JOKER] * jokers)), -1, rank)

    @classmethod
    def _run(
        cls, cards: list[Card], naturals: list[Card], jokers: int, jokers_as: Sequence[int]
    ) -> Meld:
        suit = naturals[0].suit
        nat_ranks = [c.rank for c in naturals]
        if len(set(nat_ranks)) != len(nat_ranks):
            raise MeldError(f"a run holds each rank once: {format_cards(naturals)}")
        if jokers_as:
            if len(jokers_as) != jokers:
                raise MeldError(f"name one card for each joker: {jokers} jokers")
            return cls._run_with_places(suit, naturals, list(jokers_as))
        low_jokers = 0
        for c in cards:
            if c != JOKER:
                break
            low_jokers += 1
        best: Meld | None = None
        for ace in (1, 14) if 1 in nat_ranks else (1,):
            ranks = sorted(ace if r == 1 else r for r in nat_ranks)
            lo, hi = ranks[0], ranks[-1]
            gaps = hi - lo + 1 - len(ranks)
            spare = jokers - gaps
            if spare < 0:
                continue
            # Spare jokers go to the end where they stand, or the other end if it is closed.
            down = min(low_jokers, spare, lo - 1)
            up = spare - down
            if hi + up > 14:
                down, up = down + (hi + up - 14), 14 - hi
            if lo - down < 1 or hi + up - (lo - down) + 1 > MAX_RUN:
                continue
            lo, hi = lo - down, hi + up
            placed = {r: CARDS[suit * 13 + (r - 1) % 13] for r in ranks}
            run = cls(RUN, tuple(placed.get(r, JOKER) for r in range(lo, hi + 1)), suit, lo)
            if best is None:
                best = run
        if best is None:
            raise MeldError(f"{format_cards(cards)} is not a run: the ranks are not in a row")
        return best

    @classmethod
    def _run_with_places(cls, suit: int, naturals: list[Card], jokers_as: list[int]) -> Meld:
        for j in jokers_as:
            if CARDS[j].suit != suit:
                raise MeldError(f"a joker in a {SUIT_SYMBOLS[suit]} run can't stand for {CARDS[j]}")
        all_cards = [*naturals, *(CARDS[j] for j in jokers_as)]
        if len({c.rank for c in all_cards}) != len(all_cards):
            raise MeldError("a joker can't stand for a card the run already holds")
        for ace in (1, 14):
            ranks = sorted(ace if c.rank == 1 else c.rank for c in all_cards)
            if ranks[-1] - ranks[0] + 1 == len(ranks):
                stands = {ace if CARDS[j].rank == 1 else CARDS[j].rank for j in jokers_as}
                cards = tuple(
                    JOKER if r in stands else CARDS[suit * 13 + (r - 1) % 13] for r in ranks
                )
                return cls(RUN, cards, suit, ranks[0])
        raise MeldError(f"{format_cards(all_cards)} is not a run: the ranks are not in a row")

    # -- reading ------------------------------------------------------------------------

    @property
    def lo(self) -> int:
        """Lowest rank of a run (1 for a low ace); the rank of a set."""
        return self.rank

    @property
    def hi(self) -> int:
        """Highest rank of a run (14 for a high ace); the rank of a set."""
        return self.rank + len(self.cards) - 1 if self.kind == RUN else self.rank

    @property
    def jokers(self) -> int:
        """How many jokers the meld holds."""
        return self.cards.count(JOKER)

    @property
    def is_clean(self) -> bool:
        """True for a meld without a joker (*natural*, *clean*)."""
        return JOKER not in self.cards

    @property
    def naturals(self) -> tuple[Card, ...]:
        """The meld's cards that are not jokers."""
        return tuple(c for c in self.cards if c != JOKER)

    def missing_suits(self) -> list[int]:
        """For a set: the suits no natural card of the set holds."""
        held = {c.suit for c in self.naturals}
        return [s for s in range(4) if s not in held]

    def joker_cards(self) -> list[Card]:
        """The card each joker of a run stands for (for a set, see :meth:`missing_suits`)."""
        if self.kind == SET:
            return []
        return [
            CARDS[self.suit * 13 + (self.lo + i - 1) % 13]
            for i, c in enumerate(self.cards)
            if c == JOKER
        ]

    def opening_value(self) -> int:
        """Worth toward a tallage opening: 0 with a joker; an ace is 1 low in a run, else 10."""
        if not self.is_clean:
            return 0
        if self.kind == SET:
            return rank_value(self.rank, 10) * len(self.cards)
        return sum(1 if r == 1 else rank_value(r, 10) for r in range(self.lo, self.hi + 1))

    def describe(self) -> str:
        """The cards, with what each joker stands for: ``7♥ 8♥ JK(9♥)``."""
        if self.kind == SET:
            missing = "/".join(SUIT_SYMBOLS[s] for s in self.missing_suits())
            return " ".join(
                f"JK({self.rank_name()}{missing})" if c == JOKER else str(c) for c in self.cards
            )
        stands = iter(self.joker_cards())
        return " ".join(f"JK({next(stands)})" if c == JOKER else str(c) for c in self.cards)

    def rank_name(self) -> str:
        """The rank name of a set."""
        return str(CARDS[self.rank - 1])[:-1]

    def __str__(self) -> str:
        return format_cards(self.cards)

    # -- changes on the table -------------------------------------------------------------

    def accepts(self, card: int, *, jokers_per_meld: int = 1) -> bool:
        """True when :meth:`with_added` takes ``card`` (at either end), said without making
        the meld or the words of a refusal: a bot asks it of every card and meld."""
        card = CARDS[card]
        n = len(self.cards)
        if card == JOKER:
            if self.jokers >= jokers_per_meld:
                return False
            if self.kind == SET:
                return n < 4
            return n < MAX_RUN and (self.lo > 1 or self.hi < 14)
        if self.kind == SET:
            return n < 4 and card.rank == self.rank and card.suit in self.missing_suits()
        if n >= MAX_RUN or card.suit != self.suit:
            return False
        r = card.rank
        return r == self.lo - 1 or r == self.hi + 1 or (r == 1 and (self.lo == 2 or self.hi == 13))

    def with_added(self, card: int, *, end: End | None = None, jokers_per_meld: int = 1) -> Meld:
        """The meld with one more card: a natural that fits, or a joker (at ``end`` of a run)."""
        card = CARDS[card]
        if card == JOKER and self.jokers >= jokers_per_meld:
            held = "a joker" if self.jokers == 1 else f"{self.jokers} jokers"
            raise MeldError(f"{self} already holds {held}")
        if self.kind == SET:
            if len(self.cards) >= 4:
                raise MeldError(f"the set {self} already has 4 cards")
            if card != JOKER:
                if card.rank != self.rank:
                    raise MeldError(f"{card} is not a {self.rank_name()}")
                if card.suit not in self.missing_suits():
                    raise MeldError(f"the set {self} already holds a {SUIT_SYMBOLS[card.suit]}")
            naturals = sorted([*self.naturals, card] if card != JOKER else self.naturals)
            jk = self.jokers + (card == JOKER)
            return Meld(SET, (*naturals, *([JOKER] * jk)), -1, self.rank)
        if len(self.cards) >= MAX_RUN:
            raise MeldError(f"the run {self} already has {MAX_RUN} cards")
        if card == JOKER:
            can_low, can_high = self.lo > 1, self.hi < 14
            side = end or ("high" if can_high else "low")
            if (side == "high" and not can_high) or (side == "low" and not can_low):
                raise MeldError(f"the run {self} can't go on at its {side} end")
            if side == "high":
                return Meld(RUN, (*self.cards, JOKER), self.suit, self.lo)
            return Meld(RUN, (JOKER, *self.cards), self.suit, self.lo - 1)
        if card.suit != self.suit:
            raise MeldError(f"{card} is not a {SUIT_SYMBOLS[self.suit]}")
        r = card.rank
        if r == self.lo - 1 or (r == 1 and self.lo == 2):
            return Meld(RUN, (card, *self.cards), self.suit, self.lo - 1)
        if r == self.hi + 1 or (r == 1 and self.hi == 13):
            return Meld(RUN, (*self.cards, card), self.suit, self.lo)
        if self.lo <= r <= self.hi or (r == 1 and self.hi == 14):
            at = (14 if r == 1 and self.lo > 1 else r) - self.lo
            if self.cards[at] == JOKER:
                raise MeldError(
                    f"a joker stands for {card} there in the run {self}: take the joker back"
                    f" with {card} instead"
                )
            raise MeldError(f"the run {self} already holds {card}")
        raise MeldError(f"{card} does not go at either end of {self}")

    def with_joker_taken(self, card: int) -> Meld:
        """The meld with one joker replaced by the natural ``card`` it stands for."""
        card = CARDS[card]
        if self.is_clean:
            raise MeldError(f"{self} holds no joker")
        if card == JOKER:
            raise MeldError("a joker is taken back with the card it stands for, not a joker")
        if self.kind == SET:
            if card.rank != self.rank or card.suit not in self.missing_suits():
                raise MeldError(
                    f"the joker in {self.describe()} stands for a {self.rank_name()} of "
                    f"{'/'.join(SUIT_SYMBOLS[s] for s in self.missing_suits())}, not {card}"
                )
            jk = self.jokers - 1
            return Meld(SET, (*sorted([*self.naturals, card]), *([JOKER] * jk)), -1, self.rank)
        cards = list(self.cards)
        for i, c in enumerate(cards):
            if c == JOKER and CARDS[self.suit * 13 + (self.lo + i - 1) % 13] == card:
                cards[i] = card
                return Meld(RUN, tuple(cards), self.suit, self.lo)
        stands = ", ".join(str(c) for c in self.joker_cards())
        raise MeldError(f"the joker in {self} stands for {stands}, not {card}")


@dataclass(frozen=True, slots=True)
class TableMeld:
    """A meld on the table and the seat that laid it."""

    owner: int
    meld: Meld
