"""Determinization (``rami.engine.determinize``): a game sampled from a seat's view is one the
seat cannot tell from the real game, and it plays on under the engine's rules.

Positions come from seeded games of every variant (2 and 3 players) between ``random`` and
``strong`` seats; at every position each seat's view (and a spectator's) is sampled twice.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import pytest

from rami.engine import POLICIES, Game, NextRound, Options, Phase, view
from rami.engine.cards import full_deck
from rami.engine.determinize import sample_game, unseen_cards
from rami.engine.plays import legal_plays

VARIANTS = ("portuguese", "tallage", "simple")


def positions(variant: str, players: int, seed: int, rounds: int = 2) -> Iterator[Game]:
    """Every position of a seeded game's first ``rounds`` rounds, round ends included."""
    game, _ = Game.new(variant, Options(players=players), seed=seed)
    rng = random.Random(seed)
    names = ["strong", "random", "greedy"]
    while game.phase != Phase.GAME_OVER:
        yield game
        if game.phase == Phase.ROUND_OVER:
            if game.round >= rounds:
                return
            game.apply(None, NextRound())
            continue
        seat = game.turn
        game.apply(seat, POLICIES[names[seat % 3]](view(game, seat), rng))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("players", [2, 3])
def test_sampled_view_equals_view(variant: str, players: int) -> None:
    rng = random.Random(7)
    checked = 0
    for game in positions(variant, players, seed=players * 10 + 1):
        for seat in [*range(players), None]:
            v = view(game, seat)
            for _ in range(2):
                sampled = sample_game(v, rng)
                assert view(sampled, seat) == v
                # Every card is somewhere, once: the deck is whole.
                deck = full_deck(game.variant.decks, game.variant.jokers)
                assert Counter(sampled.cards_in_play()) == Counter(deck)
                checked += 1
    assert checked > 200


@pytest.mark.parametrize("variant", VARIANTS)
def test_sampled_game_keeps_what_the_seat_sees(variant: str) -> None:
    """Only unseen cards move: the seat's hand, the melds, the pile's top stay; the other hands
    and the stock are drawn from the unseen cards, and the draw depends on the seed alone."""
    for game in positions(variant, 2, seed=5, rounds=1):
        if game.phase not in (Phase.DRAW, Phase.PLAY):
            continue
        seat = game.turn
        v = view(game, seat)
        a = sample_game(v, random.Random(3))
        b = sample_game(v, random.Random(3))
        assert a.state_key() == b.state_key()
        assert a.hands[seat] == game.hands[seat]
        assert a.melds == game.melds
        assert a.discard[-1] == game.discard[-1]
        hidden = [c for s, h in enumerate(a.hands) if s != seat for c in h]
        hidden += a.stock + a.discard[:-1]
        assert sorted(hidden) == unseen_cards(v)


@pytest.mark.parametrize("variant", VARIANTS)
def test_sampled_game_plays_on(variant: str) -> None:
    """Every play listed for the seat is accepted by a sampled game, and a sampled game can be
    played to the end of its round."""
    rng = random.Random(11)
    for i, game in enumerate(positions(variant, 2, seed=9, rounds=1)):
        if game.phase not in (Phase.DRAW, Phase.PLAY) or i % 5:
            continue
        v = view(game, game.turn)
        sampled = sample_game(v, rng)
        for play in legal_plays(v):
            sampled.clone().apply(game.turn, play)
        while sampled.phase in (Phase.DRAW, Phase.PLAY):
            s = sampled.turn
            sampled.apply(s, POLICIES["greedy"](view(sampled, s), rng))
