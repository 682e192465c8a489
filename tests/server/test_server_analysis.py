"""Hand analysis as the server answers it: the engine's facts, converted, byte for byte the
message the server built from the solver itself."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from rami.engine import VARIANTS, Card, MalformedAction, Options, Variant
from rami.engine.analysis import analyse
from rami.engine.cards import full_deck
from rami.engine.solver import best_opening, deadwood_split, finishes, portuguese_declaration
from rami.server import convert
from rami.v1 import game_pb2

# -- the analysis as the server built it before the engine did (kept as the reference) --------


def reference_analysis(
    variant: Variant, options: Options, hand: Sequence[Card], bar: int
) -> game_pb2.Analysis:
    jpm = options.jokers_per_meld
    values = options.hand_values(variant)
    split = deadwood_split(hand, values, need_run=variant.id == "portuguese", jokers_per_meld=jpm)
    out = game_pb2.Analysis(
        melds=[convert.meld_to_proto(m) for m in split.melds],
        left=convert.cards_to_proto(split.left),
        points_left=sum(values[c] for c in split.left),
    )
    if variant.id == "portuguese":
        best = 0
        multipliers: dict[Card, int] = {}
        for card in sorted(set(hand)):
            rest = list(hand)
            rest.remove(card)
            if len(rest) != 13:
                break
            found = portuguese_declaration(rest, jokers_per_meld=jpm)
            if found is not None:
                out.declare_cards.append(convert.card_to_proto(card))
                best = max(best, found[1])
                multipliers[card] = found[1]
        declared = None
        if len(hand) == 13:
            declared = portuguese_declaration(list(hand), jokers_per_meld=jpm)
            best = declared[1] if declared else 0
        elif best:
            # Since: the arrangement is the best declaration's (its multiplier, then the
            # cheapest card face down).
            down = min((c for c, m in multipliers.items() if m == best), key=lambda c: values[c])
            rest = list(hand)
            rest.remove(down)
            declared = portuguese_declaration(rest, jokers_per_meld=jpm)
        if declared is not None:
            kept = list(hand)
            for meld in declared[0].melds:
                for c in meld.cards:
                    kept.remove(c)
            del out.melds[:]
            out.melds.extend(convert.meld_to_proto(m) for m in declared[0].melds)
            del out.left[:]
            out.left.extend(convert.cards_to_proto(kept))
            out.points_left = sum(values[c] for c in kept)
        out.multiplier = best
        return out
    if variant.id == "tallage":
        opening = best_opening(hand, jokers_per_meld=jpm)
        if opening is not None:
            out.opening_value = opening.score
            out.opening_melds.extend(convert.meld_to_proto(m) for m in opening.melds)
            out.can_open = opening.score >= options.opening and opening.score > bar
    found = finishes(hand, jokers_per_meld=jpm)
    out.finish_discards.extend(convert.card_to_proto(c) for c in found)
    out.finishes.extend(
        game_pb2.Finish(
            discard=convert.card_to_proto(c),
            melds=[convert.meld_to_proto(m) for m in split.melds],
        )
        for c, split in found.items()
    )
    return out


#: Hands that hold something to find: a declaration, an opening, a finish.
NEAR = (
    "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 8s Kd",
    "2h 3h 4h 5h 6h 9h 10h Jh Ad 2d 3d 4d 5d",
    "Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh 2c",
    "Qc Qd Qh 10s Js Qs Ks 4c 5c 6c JK 9d 9h 2s",
    "7c 8c 9c Ks Kd Kc 4s 5s 6s 2h 2d 2c JK",
)


@pytest.mark.parametrize("variant_id", list(VARIANTS))
def test_the_analysis_is_the_message_the_server_always_built(variant_id: str) -> None:
    variant = VARIANTS[variant_id]
    rng = random.Random(f"analysis/{variant_id}")
    deck = full_deck(variant.decks, variant.jokers)
    for i in range(300):
        if i % 3 == 0:
            hand = [Card.parse(c) for c in rng.choice(NEAR).split()]
        else:
            hand = rng.sample(deck, rng.choice((0, 1, 3, 12, 13, 14, 14, 15, 20)))
        options = Options(
            jokers_per_meld=rng.choice((1, 2)),
            opening=rng.choice((51, 71)),
            joker_penalty=rng.choice((0, 20, 50)),
        )
        bar = rng.choice((0, 0, 60, 80))
        got = convert.analysis_to_proto(analyse(variant, options, hand, bar))
        want = reference_analysis(variant, options, hand, bar)
        assert got.SerializeToString() == want.SerializeToString(), (hand, options, bar)


def test_a_hand_that_no_deck_deals_is_refused_with_its_reason() -> None:
    tallage = VARIANTS["tallage"]
    with pytest.raises(MalformedAction) as info:
        analyse(tallage, Options(), [Card.parse("2c")] * 21, 0)
    assert info.value.reason == "TOO_MANY_CARDS"
    assert str(info.value) == "a hand to analyse has at most 20 cards"
    with pytest.raises(MalformedAction) as info:
        analyse(tallage, Options(), [Card.parse("2c")] * 3, 0)
    assert (info.value.reason, str(info.value)) == (
        "BAD_HAND",
        "a tallage deck holds each face 2 times",
    )
    with pytest.raises(MalformedAction) as info:
        analyse(VARIANTS["portuguese"], Options(), [Card.parse("JK")] * 3, 0)
    assert (info.value.reason, str(info.value)) == ("BAD_HAND", "a portuguese deck holds 2 jokers")
