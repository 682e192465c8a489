"""Hand analysis: what the solver says of a hand under a variant's rules, for the rules service,
a seat's own hand, and hints.

:func:`analyse` checks that the hand could be dealt from the variant's deck, then gathers the
facts: the split leaving the fewest points, and per the variant's rules the declarations
(hands stay closed), the best opening (an opening against a bar) and the whole-hand finishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .cards import Card
from .errors import MalformedAction
from .melds import Meld
from .plays import declaration_cards
from .solver import best_opening, deadwood_split, finishes, portuguese_declaration
from .variants import Options, Variant

__all__ = ["MAX_HAND", "Analysis", "analyse", "check_hand"]

#: The most cards a hand to analyse may hold.
MAX_HAND = 20


@dataclass(frozen=True, slots=True)
class Analysis:
    """What the solver says of one hand."""

    #: The best split: melds that leave the fewest points over (where sets need a run, sets
    #: and joker melds count only beside a natural run).
    melds: tuple[Meld, ...]
    #: The cards the best split leaves over.
    left: tuple[Card, ...]
    #: What the cards left over cost under the variant's values and the options.
    points_left: int
    #: Declaring variants: the cards whose face-down leaves 13 complete cards.
    declare_cards: tuple[Card, ...] = ()
    #: Declaring variants: the best multiplier of a declaration (0 when none is possible).
    multiplier: int = 0
    #: Variants with an opening: the best opening's value (its clean melds, with a clean set
    #: and a clean run, keeping a card to discard); 0 when no such opening exists.
    opening_value: int = 0
    #: The melds of that opening.
    opening_melds: tuple[Meld, ...] = ()
    #: True when that opening reaches the table's least value and beats the bar.
    can_open: bool = False
    #: Variants with a whole-hand finish: the cards that can be its last discard.
    finish_discards: tuple[Card, ...] = ()
    #: The finishes themselves: for each of those cards, melds that lay every other card with
    #: a clean set and a clean run (a Lay of these as new melds, then the card's Discard).
    finishes: tuple[tuple[Card, tuple[Meld, ...]], ...] = ()


def check_hand(variant: Variant, hand: Sequence[Card]) -> None:
    """Refuse a hand too long to analyse, or one the variant's deck could not deal."""
    if len(hand) > MAX_HAND:
        raise MalformedAction(f"a hand to analyse has at most {MAX_HAND} cards", "TOO_MANY_CARDS")
    counts = [0] * 53
    for c in hand:
        counts[c] += 1
    if any(n > variant.decks for n in counts[:52]):
        raise MalformedAction(
            f"a {variant.id} deck holds each face {variant.decks} times", "BAD_HAND"
        )
    if counts[52] > variant.jokers:
        raise MalformedAction(f"a {variant.id} deck holds {variant.jokers} jokers", "BAD_HAND")


def _left_over(hand: Sequence[Card], melds: Sequence[Meld]) -> tuple[Card, ...]:
    """The cards of ``hand`` that ``melds`` do not hold (in hand order)."""
    rest = list(hand)
    for meld in melds:
        for c in meld.cards:
            rest.remove(c)
    return tuple(rest)


def analyse(variant: Variant, options: Options, hand: Sequence[Card], bar: int) -> Analysis:
    """What the solver says of ``hand`` under ``variant`` and ``options``, against ``bar``."""
    check_hand(variant, hand)
    jpm = options.jokers_per_meld
    values = options.hand_values(variant)
    split = deadwood_split(hand, values, need_run=variant.sets_need_run, jokers_per_meld=jpm)
    melds, left = tuple(split.melds), tuple(split.left)
    points_left = sum(values[c] for c in split.left)
    if variant.declares:
        found = declaration_cards(hand, jokers_per_meld=jpm)
        multiplier = max((m for _, m in found), default=0)
        declared = None
        if len(hand) == 13:
            declared = portuguese_declaration(list(hand), jokers_per_meld=jpm)
            multiplier = declared[1] if declared else 0
        elif found:
            # The arrangement shown is the best declaration's (its multiplier, then the
            # cheapest card face down), not another split of the same cards.
            card = min((c for c, m in found if m == multiplier), key=lambda c: (values[c], c))
            rest = list(hand)
            rest.remove(card)
            declared = portuguese_declaration(rest, jokers_per_meld=jpm)
        if declared is not None:
            melds = tuple(declared[0].melds)
            left = _left_over(hand, melds)
            points_left = sum(values[c] for c in left)
        return Analysis(melds, left, points_left, tuple(c for c, _ in found), multiplier)
    opening_value, can_open = 0, False
    opening_melds: tuple[Meld, ...] = ()
    if variant.has_opening:
        opening = best_opening(hand, jokers_per_meld=jpm)
        if opening is not None:
            opening_value, opening_melds = opening.score, tuple(opening.melds)
            can_open = opening.score >= options.opening and opening.score > bar
    found_finishes = finishes(hand, jokers_per_meld=jpm) if variant.has_finish else {}
    return Analysis(
        melds,
        left,
        points_left,
        opening_value=opening_value,
        opening_melds=opening_melds,
        can_open=can_open,
        finish_discards=tuple(found_finishes),
        finishes=tuple((c, tuple(split.melds)) for c, split in found_finishes.items()),
    )
