"""Hand analysis for the rules service and for a seat's own hand."""

from __future__ import annotations

from collections.abc import Sequence

from rami.engine import Card, Options, Variant
from rami.engine.solver import (
    best_opening,
    deadwood_split,
    finishes,
    portuguese_declaration,
)
from rami.v1 import game_pb2

from . import convert
from .errors import Invalid

__all__ = ["MAX_HAND", "analyse"]

MAX_HAND = 20


def _check_hand(variant: Variant, hand: Sequence[Card]) -> None:
    if len(hand) > MAX_HAND:
        raise Invalid("TOO_MANY_CARDS", f"a hand to analyse has at most {MAX_HAND} cards")
    counts = [0] * 53
    for c in hand:
        counts[c] += 1
    if any(n > variant.decks for n in counts[:52]):
        raise Invalid("BAD_HAND", f"a {variant.id} deck holds each face {variant.decks} times")
    if counts[52] > variant.jokers:
        raise Invalid("BAD_HAND", f"a {variant.id} deck holds {variant.jokers} jokers")


def analyse(
    variant: Variant, options: Options, hand: Sequence[Card], bar: int
) -> game_pb2.Analysis:
    """What the solver says of ``hand`` under ``variant`` and ``options``."""
    _check_hand(variant, hand)
    jpm = options.jokers_per_meld
    values = options.hand_values(variant)
    split = deadwood_split(hand, values, need_run=variant.sets_need_run, jokers_per_meld=jpm)
    out = game_pb2.Analysis(
        melds=[convert.meld_to_proto(m) for m in split.melds],
        left=convert.cards_to_proto(split.left),
        points_left=sum(values[c] for c in split.left),
    )
    if variant.declares:
        best = 0
        for card in sorted(set(hand)):
            rest = list(hand)
            rest.remove(card)
            if len(rest) != 13:
                break
            found = portuguese_declaration(rest, jokers_per_meld=jpm)
            if found is not None:
                out.declare_cards.append(convert.card_to_proto(card))
                best = max(best, found[1])
        if len(hand) == 13:
            found = portuguese_declaration(list(hand), jokers_per_meld=jpm)
            best = found[1] if found else 0
        out.multiplier = best
        return out
    if variant.has_opening:
        opening = best_opening(hand, jokers_per_meld=jpm)
        if opening is not None:
            out.opening_value = opening.score
            out.opening_melds.extend(convert.meld_to_proto(m) for m in opening.melds)
            out.can_open = opening.score >= options.opening and opening.score > bar
    out.finish_discards.extend(
        convert.card_to_proto(c) for c in finishes(hand, jokers_per_meld=jpm)
    )
    return out
