"""The cards every watcher knows a seat holds (``Game.known``, ``View.known``): a card taken
from the discard pile, or the 13 shown in a declaration (portuguese), until a copy of it
is laid or discarded; nothing carries over to the next round. The playouts
(``test_playouts.py``) check the same against the public events over whole seeded games."""

from __future__ import annotations

import random
from collections import Counter

from helpers import C, cards, deal, play
from test_determinize import VARIANTS, positions

from rami.engine import NextRound, Phase, view
from rami.engine.determinize import sample_game

#: 7♣–10♣, K♠K♦K♣, 4♠5♠6♠ and Q♥ 2♣ 9♦ over.
PAYS_21 = "7c 8c 9c 10c Ks Kd Kc 4s 5s 6s Qh 2c 9d"
INCOMPLETE = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 2d"


def test_a_card_taken_from_the_pile_is_known_until_it_is_discarded() -> None:
    game = deal("portuguese", [PAYS_21, INCOMPLETE], "Ac", "Qd")
    play(game, 1, "draw discard")
    assert game.known == [(), (C("Ac"),)]
    for seat in (0, 1, None):
        assert view(game, seat).known == ((), (C("Ac"),))
    play(game, 1, "discard Ac")
    assert game.known == [(), ()]


def test_another_discard_keeps_it_known() -> None:
    game = deal("portuguese", [PAYS_21, INCOMPLETE], "Ac", "Qd")
    play(game, 1, "draw discard")
    play(game, 1, "discard 2d")
    assert game.known == [(), (C("Ac"),)]
    play(game, 0, "draw discard")  # the 2♦ the other just threw
    assert game.known == [(C("2d"),), (C("Ac"),)]


def test_a_false_declaration_shows_the_hand() -> None:
    game = deal("portuguese", [PAYS_21, INCOMPLETE, ""], "Ac", "Qd")
    play(game, 1, "draw stock")
    play(game, 1, "declare Qd")
    assert game.known[1] == tuple(sorted(cards(INCOMPLETE)))
    assert view(game, 2).known[1] == tuple(sorted(cards(INCOMPLETE)))


def test_a_new_round_knows_nothing() -> None:
    complete = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 8s"
    game = deal("portuguese", [PAYS_21, complete], "Ac", "Qd Kh", rounds=2)
    play(game, 1, "draw stock")
    play(game, 1, "discard Qd")
    play(game, 0, "draw discard")
    play(game, 0, "discard 2c")
    play(game, 1, "draw stock")
    play(game, 1, "declare Kh")  # complete: the round is over
    assert game.phase == Phase.ROUND_OVER
    assert game.known[0] == (C("Qd"),)
    game.apply(None, NextRound())
    assert game.known == [(), ()]


def test_known_cards_are_held() -> None:
    """At every position of seeded games, each seat holds every card it is known to hold."""
    checked = 0
    for variant in VARIANTS:
        for game in positions(variant, 3, seed=4):
            for s, held in enumerate(game.known):
                assert not Counter(held) - Counter(game.hands[s])
                checked += len(held)
    assert checked > 20


def test_a_sampled_game_keeps_each_known_card_in_its_seat() -> None:
    """Determinization deals the known cards to the seats that hold them, the rest at random."""
    rng = random.Random(2)
    checked = 0
    for variant in ("portuguese", "simple"):
        for game in positions(variant, 3, seed=6):
            if game.phase not in (Phase.DRAW, Phase.PLAY) or not any(game.known):
                continue
            for seat in (game.turn, None):
                v = view(game, seat)
                sampled = sample_game(v, rng)
                for s, held in enumerate(v.known):
                    assert not Counter(held) - Counter(sampled.hands[s])
                    checked += len(held)
    assert checked > 20


def test_a_complete_declaration_leaves_no_face_down_card_known() -> None:
    """The card put face down is nobody's to see until the next deal: a card known held
    that goes face down is not shown by what is known (the 13 shown are)."""
    complete = "As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 8s"
    game = deal("portuguese", [PAYS_21, complete], "Ac", "Qd")
    play(game, 1, "draw discard")
    assert game.known[1] == (C("Ac"),)
    play(game, 1, "declare Ac")
    assert game.phase in (Phase.ROUND_OVER, Phase.GAME_OVER)
    spectator = view(game, None)
    assert spectator.discard_top is None  # face down
    assert C("Ac") not in spectator.known[1]
    assert game.known[1] == tuple(sorted(cards(complete)))


def test_a_view_whose_known_cards_do_not_add_up_is_refused() -> None:
    import dataclasses

    import pytest

    game = deal("portuguese", [PAYS_21, INCOMPLETE], "Ac", "Qd")
    play(game, 1, "draw discard")
    v = view(game, 0)
    rng = random.Random(1)
    for known, words in [
        (((), (C("Ac"),), ()), "3 seats"),
        (((C("Ah"),), (C("Ac"),)), "its hand does not"),
        (((), (C("Ac"),) * 15), "more cards"),
        (((), (C("Ac"),) * 3), "not unseen"),  # two decks: two copies
    ]:
        with pytest.raises(ValueError, match=words):
            sample_game(dataclasses.replace(v, known=known), rng)
