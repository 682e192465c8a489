"""Determinization: a whole game that one seat cannot tell from the real one.

A :class:`~rami.engine.views.View` hides the other hands, the stock and the discard pile
below its top card. :func:`sample_game` deals those unseen cards afresh, uniformly at random
(the other hands by their sizes, the pile below its top, the stock), but for the cards each
other seat is known to hold (``View.known``: taken from the pile, or shown in a false
declaration), which stay in that seat's hand, and rebuilds a
:class:`~rami.engine.game.Game` around them from the view's public fields, so that
``view(sample_game(v, rng), v.seat) == v`` in every field. Searches over imperfect information
(the ``expert`` policy, PIMC) play such sampled games forward with the engine's own rules.

What a view does not say, and how the sampled game fills it in:

- *the order of the stock and of the pile*: shuffled with the unseen cards;
- *the turn index* (the view only says whether the first circuit is still going on): the
  index of the seat to move in the first circuit, or that plus one circuit after it;
- *when each seat opened*: a turn before the present one, but the present one for the seat to
  move when its view says it may not lay again this turn;
- *whether a finish this turn is a Rami sec*: true when the seat to move opened this turn,
  holds one card and every meld on the table is its own (nobody had laid before it);
- *the seeds*: drawn from ``rng`` (they only shuffle rebuilt stocks and later deals);
- *the log*: its actions are not in the view; it holds :data:`UNKNOWN_ACTION` placeholders,
  as many as the view's action count, so that ``Game.number`` matches.

The result depends on nothing but the view and ``rng``: the same seed gives the same game.
"""

from __future__ import annotations

import random
from collections import Counter

from .actions import Action, NextRound
from .cards import Card, full_deck
from .game import Game, Phase
from .views import View

__all__ = ["UNKNOWN_ACTION", "sample_game", "unseen_cards"]

#: What a sampled game's log holds in place of the actions it cannot know.
UNKNOWN_ACTION: tuple[int | None, Action] = (None, NextRound())


def _revealed_hands(v: View) -> tuple[tuple[Card, ...], ...] | None:
    """Every hand, when the round is over (its result shows them), else None."""
    if v.phase in (Phase.ROUND_OVER, Phase.GAME_OVER) and v.results:
        last = v.results[-1]
        if last.round == v.round and len(last.hands) == v.players:
            return last.hands
    return None


def unseen_cards(v: View) -> list[Card]:
    """The cards ``v``'s watcher cannot see, sorted: the full deck less its hand, the melds on
    the table, the top of the discard pile (and every hand once the round is over)."""
    left = Counter(full_deck(v.variant.decks, v.variant.jokers))
    seen: list[Card] = []
    revealed = _revealed_hands(v)
    if revealed is not None:
        for h in revealed:
            seen.extend(h)
    elif v.hand is not None:
        seen.extend(v.hand)
    for tm in v.melds:
        seen.extend(tm.meld.cards)
    if v.discard_top is not None:
        seen.append(v.discard_top)
    for c in seen:
        if left[c] <= 0:
            raise ValueError(f"the view shows more copies of {c} than the deck holds")
        left[c] -= 1
    return sorted(left.elements())


def _turn_index(v: View) -> int:
    n = v.players
    start = v.dealer if v.variant.dealer_extra else (v.dealer + 1) % n
    base = (v.turn - start) % n
    return base if v.first_circuit else base + n


def sample_game(v: View, rng: random.Random) -> Game:
    """A game consistent with ``v``: the unseen cards dealt at random (see the module)."""
    n = v.players
    pool = unseen_cards(v)
    revealed = _revealed_hands(v)
    held: list[tuple[Card, ...]] = [()] * n
    if len(v.known) != n:
        raise ValueError(f"the view knows the cards of {len(v.known)} seats, not {n}")
    if v.seat is not None and v.hand is not None and Counter(v.known[v.seat]) - Counter(v.hand):
        raise ValueError("the view knows its seat holds cards its hand does not")
    if revealed is None:
        # The cards known in the other hands are theirs, not the pool's.
        for s in range(n):
            if s == v.seat and v.hand is not None:
                continue
            known = v.known[s]
            if len(known) > v.hand_sizes[s]:
                raise ValueError(f"the view knows more cards in seat {s}'s hand than it holds")
            held[s] = known
            for c in known:
                if c not in pool:
                    raise ValueError(f"the view knows seat {s} holds {c}, which is not unseen")
                pool.remove(c)
    rng.shuffle(pool)
    hands: list[list[Card]] = []
    for s in range(n):
        if revealed is not None:
            hands.append(list(revealed[s]))
        elif s == v.seat and v.hand is not None:
            hands.append(list(v.hand))
        else:
            size = v.hand_sizes[s] - len(held[s])
            hands.append(sorted([*held[s], *pool[:size]]))
            del pool[:size]
    below = v.discard_size - (1 if v.discard_top is not None else 0)
    if below < 0 or len(pool) != below + v.stock_size:
        raise ValueError("the view's counts of cards do not add up to the deck")
    discard = pool[:below]
    if v.discard_top is not None:
        discard.append(v.discard_top)
    stock = pool[below:]
    turn_index = _turn_index(v)
    mover_opened_now = (
        v.seat == v.turn
        and v.phase == Phase.PLAY
        and not v.variant.declares
        and v.opened[v.turn]
        and not v.can_lay
    )
    opened_turn: list[int | None] = []
    for s in range(n):
        if not v.opened[s]:
            opened_turn.append(None)
        elif s == v.turn and (mover_opened_now or turn_index == 0):
            opened_turn.append(turn_index)
        else:
            opened_turn.append(max(0, turn_index - 1))
    rami_sec = (
        mover_opened_now
        and v.hand_sizes[v.turn] == 1
        and bool(v.melds)
        and all(tm.owner == v.turn for tm in v.melds)
    )
    game = Game(
        v.variant,
        v.options,
        rng.getrandbits(64).to_bytes(8, "big"),
        shuffle_seed=rng.getrandbits(64).to_bytes(8, "big"),
        round=v.round,
        dealer=v.dealer,
        turn=v.turn,
        phase=v.phase,
        turn_index=turn_index,
        hands=hands,
        stock=stock,
        discard=discard,
        melds=list(v.melds),
        opened_turn=opened_turn,
        bar=v.bar,
        rebuilds=v.rebuilds,
        drawn=v.drawn if v.seat == v.turn else None,
        rami_sec=rami_sec,
        known=list(v.known),
        totals=list(v.totals),
        results=list(v.results),
        winners=v.winners,
        log=[UNKNOWN_ACTION] * v.number,
    )
    return game
