"""A hand analysis gives whole finishes that can be sent as they are (a Lay of its melds, each
as the cards and jokers_as the contract shows, then the Discard), and a lay that leaves one card
without a clean set and a clean run is refused as a finish, not as an opening."""

from __future__ import annotations

import random

import pytest

from rami.engine import JOKER, Card, Discard, Game, IllegalAction, Lay, NewMeld, Phase
from rami.engine.analysis import analyse
from rami.engine.cards import full_deck
from rami.engine.melds import Meld, MeldError
from rami.engine.variants import Options, get_variant
from rami.server import convert

_NAMES = {1: "A", 11: "J", 12: "Q", 13: "K"}


def _finish_hand(rng: random.Random) -> list[Card]:
    """15 cards that hold a whole-hand finish: a clean set, a clean run, a run with a joker,
    another set, and a card over."""
    while True:
        rank, suit = rng.randrange(1, 14), rng.randrange(4)
        suits = rng.sample(range(4), 3)
        start = rng.randrange(1, 10)
        other = (suit + 1) % 4

        def card(r: int, s: int) -> Card:
            return Card.parse(f"{_NAMES.get(r, str(r))}{'cdhs'[s]}")

        cards = [card(rank, s) for s in suits]
        cards += [card(r, suit) for r in range(start, start + 4)]
        s2 = rng.randrange(1, 11)
        cards += [card(s2, other), JOKER, card(s2 + 2, other)]
        r2 = rng.randrange(1, 14)
        cards += [card(r2, s) for s in rng.sample(range(4), 3)]
        deck = list(full_deck(2, 4))
        try:
            for c in cards:
                deck.remove(c)
        except ValueError:
            continue
        cards.append(rng.choice(deck))
        if len(cards) == 14:
            cards.append(rng.choice(deck))
        return cards[:15]


def _game_with_hand(variant: str, hand: list[Card], seed: int) -> Game:
    """A two-seat game whose dealer (seat 0, playing first without drawing) holds ``hand``."""
    v = get_variant(variant)
    rest = list(full_deck(v.decks, v.jokers))
    for c in hand:
        rest.remove(c)
    random.Random(seed).shuffle(rest)
    other = [rest.pop() for _ in range(v.hand_size)]
    deck = []
    for k in range(v.hand_size):
        deck += [other[k], hand[k]]
    deck += hand[v.hand_size :]
    deck += rest
    game, _ = Game.new(variant, Options(players=2), decks=[[int(c) for c in deck]])
    assert sorted(game.hands[0]) == sorted(hand)
    return game


@pytest.mark.parametrize("variant", ["tallage", "simple"])
def test_every_finish_of_the_analysis_is_accepted_as_sent(variant: str) -> None:
    rng = random.Random(variant)
    played = 0
    for seed in range(30):
        hand = _finish_hand(rng)
        v = get_variant(variant)
        hand = hand[: v.hand_size + v.dealer_extra]
        game = _game_with_hand(variant, hand, seed)
        assert game.phase == Phase.PLAY and game.turn == 0
        a = analyse(game.variant, game.options, game.hands[0], game.bar)
        assert [c for c, _ in a.finishes] == list(a.finish_discards)
        msg = convert.analysis_to_proto(a)
        for finish in msg.finishes:
            trial = game.clone()
            steps = tuple(
                NewMeld(
                    tuple(convert.cards_from_proto(m.cards)),
                    tuple(convert.cards_from_proto(m.jokers_as)),
                )
                for m in finish.melds
            )
            trial.apply(0, Lay(steps))
            events = trial.apply(0, Discard(convert.card_from_proto(finish.discard)))
            assert trial.phase in (Phase.ROUND_OVER, Phase.GAME_OVER), events
            played += 1
    assert played >= 10


def test_a_lay_that_leaves_one_card_without_a_clean_set_is_refused_as_a_finish() -> None:
    # Four runs and a set with a joker: every card but one laid, no clean set.
    text = "2c 3c 4c 5d 6d 7d 8d 8h 9h 10h Jh 4s 4h JK 9c"
    hand = [Card.parse(c) for c in text.split()]
    game = _game_with_hand("tallage", hand, 1)
    lay = Lay(
        tuple(
            NewMeld(tuple(Card.parse(c) for c in m.split()))
            for m in ("2c 3c 4c", "5d 6d 7d 8d", "4s 4h JK")
        )
    )
    with pytest.raises(IllegalAction) as e:
        game.apply(0, lay)
    assert e.value.reason == "OPENING_NEEDS_CLEAN_MELDS"  # leaves five cards: an opening
    lay = Lay((*lay.steps, NewMeld(tuple(Card.parse(c) for c in ["8h", "9h", "10h", "Jh"]))))
    assert len(hand) - sum(len(s.cards) for s in lay.steps) == 1
    with pytest.raises(IllegalAction) as e:
        game.apply(0, lay)
    assert e.value.reason == "NOT_A_FINISH" and "a clean set" in str(e.value)


def test_a_sets_jokers_as_is_one_card_per_joker_or_refused() -> None:
    kings = [Card.parse(c) for c in ("Kc", "Kd", "JK")]
    meld = Meld.from_cards(kings)
    shown = convert.meld_to_proto(meld)
    assert len(shown.stands_for) == 2 and len(shown.jokers_as) == 1
    again = Meld.from_cards(kings, jokers_as=convert.cards_from_proto(shown.jokers_as))
    assert again == meld
    # What was once ignored is refused: two cards for one joker.
    with pytest.raises(MeldError, match="one card per joker"):
        Meld.from_cards(kings, jokers_as=convert.cards_from_proto(shown.stands_for))
