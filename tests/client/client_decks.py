"""Stacked decks for the client's end-to-end tests: exact hands for the person, junk for bots.

:func:`stacked_deck` follows ``Game._deal`` for round 1 (seat 0 deals): one card at a time from
seat 1 round to seat 0, the dealer's extra card last (tallage, simple), then the card turned
up, then the stock, top first. Hands left out are filled with *junk*: cards that make no meld
with each other, so a bot holding them can't open, finish or declare.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

from rami.engine import Card, Meld, MeldError, get_variant, parse_cards
from rami.engine.cards import full_deck

__all__ = ["stacked_deck"]


def _makes_meld(cards: list[Card]) -> bool:
    for trio in combinations(cards, 3):
        try:
            Meld.from_cards(trio)
        except MeldError:
            continue
        return True
    return False


def _junk(pool: Counter[Card], size: int) -> list[Card]:
    """``size`` cards from ``pool`` that make no meld together (no jokers)."""
    hand: list[Card] = []
    for card in sorted(pool):
        if len(hand) == size:
            break
        if card.is_joker or pool[card] == 0 or card in hand:
            continue
        if not _makes_meld([*hand, card]):
            hand.append(card)
            pool[card] -= 1
    if len(hand) < size:
        raise ValueError("not enough junk cards left")
    return hand


def stacked_deck(
    variant: str, hands: list[str | None], discard: str, stock: str = ""
) -> list[Card]:
    """The deck (top card first) that deals ``hands`` (None: junk) with seat 0 dealing."""
    v = get_variant(variant)
    pool = Counter(full_deck(v.decks, v.jokers))
    given = [parse_cards(h) if h is not None else None for h in hands]
    top = [*parse_cards(discard), *parse_cards(stock)]
    for cards in [*(g for g in given if g), top]:
        for c in cards:
            if pool[c] == 0:
                raise ValueError(f"{c} is used more often than the deck holds it")
            pool[c] -= 1
    dealt: list[list[Card]] = []
    for seat, cards in enumerate(given):
        size = v.hand_size + (v.dealer_extra if seat == 0 else 0)
        cards = cards if cards is not None else _junk(pool, size)
        if len(cards) != size:
            raise ValueError(f"seat {seat} needs {size} cards, not {len(cards)}")
        dealt.append(cards)
    n = len(hands)
    deck: list[Card] = []
    for k in range(v.hand_size):
        for i in range(1, n + 1):
            deck.append(dealt[i % n][k])
    deck.extend(dealt[0][v.hand_size :])
    deck.extend(top)
    deck.extend(c for c in sorted(pool) for _ in range(pool[c]))
    return deck
