"""The strong policy's cost of a hand (``rami.engine.policies``), kept between views.

Strong judges a hand by its best split (the solver's), the clean melds it lacks, what it would
pay, and the cards whose draw would help it. The part that depends on the hand alone is kept
for the latest hands, since the expert's simulations judge the same hands again and again:
a cost must come out the same whether that part was kept from another view's judging or
computed afresh, in every variant, for seats opened or not, with melds on the table or not.
"""

from __future__ import annotations

import random

import pytest

from rami.engine import Game, NextRound, Options, Phase, view
from rami.engine.cards import Card
from rami.engine.policies import _PART_KEYS, _gain_part, _hand_part, _Judge, strong
from rami.engine.views import View

VARIANTS = ("portuguese", "tallage", "simple")


def _options(variant: str) -> list[Options]:
    """The default options with three players, and others that each change one thing a hand's
    cost depends on: the jokers a meld may hold, what a joker left in hand costs."""
    out = [Options(players=3), Options(players=2, jokers_per_meld=2)]
    if variant != "portuguese":
        out.append(Options(players=2, joker_penalty=50))
    return out


def _views(variant: str, options: Options, seed: str, count: int) -> list[View]:
    """Views of the seats to move in strong's seeded games, from every part of a round."""
    out: list[View] = []
    g = 0
    while len(out) < count:
        game, _ = Game.new(variant, options, f"{seed}:{g}")
        rng = random.Random(g)
        g += 1
        moves = 0
        while game.phase != Phase.GAME_OVER and moves < 300:
            if game.phase == Phase.ROUND_OVER:
                game.apply(None, NextRound())
                continue
            v = view(game, game.turn)
            if moves % 7 == 0:
                out.append(v)
            game.apply(game.turn, strong(v, rng))
            moves += 1
    return out[:count]


def _forget() -> None:
    """Forget every kept part of a cost, and every key of them."""
    _hand_part.cache_clear()
    _gain_part.cache_clear()
    _PART_KEYS.clear()


def _costs(
    views: list[View], hands: list[list[Card]], afresh: bool = False
) -> list[tuple[float, float]]:
    """Every view's judge on every hand (each hand less its first card too); ``afresh``: each
    cost with nothing kept, the hand's cards in the other order."""
    out = []
    for v in views:
        for hand in (h for full in hands for h in (full, full[1:])):
            if afresh:
                _forget()
                hand = hand[::-1]
            out.append(_Judge(v).cost(hand))
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_kept_cost_is_the_cost_computed_afresh(variant: str) -> None:
    views = [v for options in _options(variant) for v in _views(variant, options, "kept", 15)]
    hands = [list(v.hand) for v in views if v.hand]
    # Other options, seats opened and not, tables with melds and without: the judges differ
    # in what a hand's kept part must not be mixed up with.
    if variant == "tallage":
        assert {bool(v.opened[v.seat]) for v in views} == {True, False}
        assert any(v.melds for v in views)
    _forget()
    kept = _costs(views, hands)  # each hand judged by every view: kept after the first
    assert _hand_part.cache_info().hits > 0
    assert kept == _costs(views, hands, afresh=True)
