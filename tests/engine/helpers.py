"""Helpers for the rules tests: stacked decks, exact deals, and refusals that must change nothing.

:func:`stacked_deck` turns the hands each seat should be dealt, the turned-up card and the next
stock cards into a full deck order (top card first) for ``Game.new(..., decks=[deck])``. It
follows ``Game._deal``: one card at a time from the dealer's left (seat ``dealer + 1``), the
dealer's extra card last (tallage, simple), then the card turned up, then the stock, top first.
A hand given short is padded with "junk": cards that make no meld with the rest of that hand,
not even with a joker, so a padded hand's value and deadwood are simply the sum of its cards.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rami.engine import (
    Action,
    Card,
    Event,
    Game,
    Options,
    RuleError,
    get_variant,
    parse_action,
    parse_cards,
)
from rami.engine.cards import JOKER, full_deck
from rami.engine.events import Declared, Discarded, Drew, Laid, RoundStarted

__all__ = [
    "C",
    "KnownCards",
    "cards",
    "deal",
    "play",
    "refused",
    "stacked_deck",
]

CardsLike = str | Sequence[int]


def cards(text: CardsLike) -> list[Card]:
    """Cards from text (``"7h 8h 9h"``) or from a sequence of cards."""
    if isinstance(text, str):
        return parse_cards(text)
    return [Card(c) for c in text]


def C(text: str) -> Card:
    """One card from its text: ``C("10h")``."""
    (card,) = parse_cards(text)
    return card


def _ranks(card: int) -> tuple[int, ...]:
    rank = card % 13 + 1
    return (1, 14) if rank == 1 else (rank,)


def _is_junk_with(hand: Sequence[int], card: int) -> bool:
    """True when ``card`` can't share a meld with any card of ``hand``, jokers included."""
    if card == 52:
        return False
    for other in hand:
        if other == 52 or other == card:
            continue
        if other % 13 == card % 13:
            return False  # same rank, another suit: a set with a joker
        if other // 13 == card // 13 and any(
            abs(a - b) <= 2 for a in _ranks(card) for b in _ranks(other)
        ):
            return False  # same suit, close ranks: a run with a joker
    return True


def stacked_deck(
    variant: str,
    hands: Sequence[CardsLike],
    discard: str | int,
    stock: CardsLike = (),
    *,
    dealer: int = 0,
) -> list[Card]:
    """A full deck order that deals ``hands[seat]`` to each seat, turns up ``discard`` and puts
    ``stock`` on top of the stock (first card drawn first); short hands are padded with junk."""
    v = get_variant(variant)
    players = len(hands)
    pool = list(full_deck(v.decks, v.jokers))

    def take(card: int) -> Card:
        if card not in pool:
            raise ValueError(f"no copy of {Card(card)} left in the deck")
        pool.remove(card)
        return Card(card)

    wanted = [[take(c) for c in cards(h)] for h in hands]
    top = take(C(discard) if isinstance(discard, str) else discard)
    head = [take(c) for c in cards(stock)]
    sizes = [v.hand_size + (v.dealer_extra if s == dealer else 0) for s in range(players)]
    for seat, hand in enumerate(wanted):
        if len(hand) > sizes[seat]:
            raise ValueError(f"seat {seat} is dealt {sizes[seat]} cards, not {len(hand)}")
        while len(hand) < sizes[seat]:
            junk = next((c for c in pool if _is_junk_with(hand, c)), None)
            if junk is None:  # no junk left: any card that is not a joker
                junk = next(c for c in pool if c != 52)
            hand.append(take(junk))
    deck: list[Card] = []
    for i in range(v.hand_size):
        for k in range(1, players + 1):
            deck.append(wanted[(dealer + k) % players][i])
    for i in range(v.dealer_extra):
        deck.append(wanted[dealer][v.hand_size + i])
    return [*deck, top, *head, *pool]


def deal(
    variant: str,
    hands: Sequence[CardsLike],
    discard: str | int,
    stock: CardsLike = (),
    *,
    options: Options | None = None,
    later: Sequence[Sequence[Card]] = (),
    **option_values: object,
) -> Game:
    """A new game whose first round is dealt exactly so; ``later`` stacks the next rounds."""
    opts = (options or Options()).with_(players=len(hands), **option_values)
    deck = stacked_deck(variant, hands, discard, stock)
    game, _ = Game.new(variant, opts, seed=1, decks=[deck, *later])
    for seat, hand in enumerate(hands):
        given = cards(hand)
        held = list(game.hands[seat])
        for c in given:
            held.remove(c)  # raises if the deal went wrong
    return game


def play(game: Game, seat: int | None, action: str | Action) -> list[Event]:
    """Apply an action, given as an object or in the client's words."""
    if isinstance(action, str):
        action = parse_action(action)
    return game.apply(seat, action)


def refused(game: Game, seat: int | None, action: str | Action, reason: str) -> RuleError:
    """Assert that the action is refused with ``reason`` and that the state did not change."""
    if isinstance(action, str):
        action = parse_action(action)
    before = game.state_key()
    hands = [list(h) for h in game.hands]
    with pytest.raises(RuleError) as info:
        game.apply(seat, action)
    assert info.value.reason == reason, str(info.value)
    assert game.state_key() == before
    assert [list(h) for h in game.hands] == hands
    return info.value


class KnownCards:
    """What every watcher knows each seat holds, kept from the public events alone (the check
    of ``Game.known`` and ``View.known``): a card taken from the pile, or the 13 shown in a
    declaration; a copy laid or discarded since is gone (a joker taken back off the table and
    laid again was never the hand's)."""

    def __init__(self, players: int) -> None:
        self.held: list[list[Card]] = [[] for _ in range(players)]

    def see(self, events: Sequence[Event]) -> None:
        for e in events:
            match e:
                case RoundStarted():
                    self.held = [[] for _ in self.held]
                case Drew(seat=seat, source="discard", card=card) if card is not None:
                    self.held[seat].append(card)
                case Laid(seat=seat, cards=laid, jokers_taken=taken):
                    gone = list(laid)
                    for _ in range(taken):
                        gone.remove(JOKER)
                    self._gone(seat, gone)
                case Discarded(seat=seat, card=card):
                    self._gone(seat, [card])
                case Declared(seat=seat, cards=shown):  # the 13 shown; not the face-down card
                    self.held[seat] = list(shown)

    def _gone(self, seat: int, cards: Sequence[Card]) -> None:
        for c in cards:
            if c in self.held[seat]:
                self.held[seat].remove(c)

    def known(self) -> list[tuple[Card, ...]]:
        """As ``Game.known`` holds them: per seat, sorted."""
        return [tuple(sorted(h)) for h in self.held]
