"""Bot policies: pure functions from a view (and a seeded random source) to an action.

- ``random``: a legal play chosen at random, first the kind of play, then the play.
- ``greedy``: takes a discard that makes a meld, lays all it can as soon as it can, discards
  its costliest card left out of melds.
- ``strong``: the same eagerness to open and finish, but it judges every draw and discard by
  the solver's best split of the resulting hand *and* by the chances of its loose cards: a card
  counts less when the cards that would meld it are still unseen.

Every policy only returns actions from :func:`rami.engine.plays.legal_plays`, so it never
plays an illegal move, and each finishes every game: the game's own caps end the rest.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from .actions import Action, AddToMeld, Declare, Discard, Draw, Lay, NewMeld
from .cards import JOKER, Card
from .game import Phase
from .plays import discard_completions, hand_deadwood_values, legal_plays, lays
from .solver import deadwood, deadwood_split, portuguese_declaration
from .views import View

__all__ = ["POLICIES", "Policy", "greedy", "random_policy", "strong"]

Policy = Callable[[View, random.Random], Action]


def _kind(a: Action) -> str:
    if isinstance(a, Draw):
        return f"draw-{a.source}"
    return type(a).__name__


def random_policy(v: View, rng: random.Random) -> Action:
    """Any legal play: a random kind of play, then a random play of that kind."""
    plays = legal_plays(v)
    if not plays:
        raise ValueError("no play: it is not this seat's turn")
    kinds: dict[str, list[Action]] = {}
    for p in plays:
        kinds.setdefault(_kind(p), []).append(p)
    return rng.choice(kinds[rng.choice(sorted(kinds))])


def _need_run(v: View) -> bool:
    return v.variant == "portuguese"


def _deadwood(v: View, hand: list[Card]) -> int:
    return deadwood(
        hand, hand_deadwood_values(v), need_run=_need_run(v),
        jokers_per_meld=int(v.options["jokers_per_meld"]),
    )


def _best_declare(v: View) -> Declare | None:
    assert v.hand is not None
    best: tuple[int, Declare] | None = None
    for card in sorted(set(v.hand)):
        rest = list(v.hand)
        rest.remove(card)
        found = portuguese_declaration(rest, jokers_per_meld=int(v.options["jokers_per_meld"]))
        if found is not None and (best is None or found[1] > best[0]):
            best = (found[1], Declare(card))
    return best[1] if best else None


def _first_lay(v: View, hand: list[Card]) -> Lay | None:
    """The lay an eager player makes first: a finish, else the opening, else the rest."""
    found = lays(v, hand)
    return max(found, key=_cards_laid) if found else None


def _cards_laid(lay: Lay) -> int:
    return sum(len(s.cards) for s in lay.steps if isinstance(s, NewMeld | AddToMeld))


def _greedy_discard(v: View, hand: list[Card]) -> Discard:
    values = hand_deadwood_values(v)
    split = deadwood_split(hand, values, need_run=_need_run(v),
                           jokers_per_meld=int(v.options["jokers_per_meld"]))
    loose = split.left or hand
    # The costliest loose card; never a joker while another card can go.
    choices = [c for c in loose if c != JOKER] or list(loose)
    return Discard(max(choices, key=lambda c: (values[c], c)))


def greedy(v: View, rng: random.Random) -> Action:
    """Lay all it can at once; take a discard only to make a meld; shed the costliest card."""
    assert v.hand is not None
    hand = list(v.hand)
    if v.phase == Phase.DRAW:
        if "discard" in v.draw_sources and v.discard_top is not None:
            if v.variant == "tallage":
                found = discard_completions(v)
                if found:
                    return Draw("discard", found[0])
            else:
                split = deadwood_split([*hand, v.discard_top], hand_deadwood_values(v),
                                       need_run=_need_run(v))
                if v.discard_top not in split.left:
                    return Draw("discard")
        return Draw("stock")
    if v.variant == "portuguese":
        declare = _best_declare(v)
        if declare is not None:
            return declare
    else:
        lay = _first_lay(v, hand)
        if lay is not None:
            return lay
    return _greedy_discard(v, hand)


# -- strong ---------------------------------------------------------------------------------


def _unseen(v: View) -> list[int]:
    """How many copies of each card this seat has not seen (hand, table, discard top)."""
    jokers = 2 if v.variant == "portuguese" else 4
    left = [2] * 52 + [jokers]
    assert v.hand is not None
    seen = list(v.hand)
    for tm in v.melds:
        seen.extend(tm.meld.cards)
    if v.discard_top is not None:
        seen.append(v.discard_top)
    for c in seen:
        if left[c] > 0:
            left[c] -= 1
    return left


def _chances(card: Card, loose: list[Card], unseen: list[int]) -> float:
    """How likely a loose card is to be melded soon: live cards that pair it into a meld."""
    if card == JOKER:
        return 1.0
    suit, rank = divmod(int(card), 13)
    live = 0.0
    for other in loose:
        if other == card or other == JOKER:
            continue
        os, orank = divmod(int(other), 13)
        if orank == rank and os != suit:
            # A pair of a rank: the two other suits complete it.
            live += sum(unseen[t * 13 + rank] for t in range(4) if t not in (suit, os))
        elif os == suit and 1 <= abs(orank - rank) <= 2:
            lo, hi = min(rank, orank), max(rank, orank)
            need = [r for r in range(lo - 1, hi + 2) if r not in (rank, orank) and 0 <= r < 13]
            live += sum(unseen[suit * 13 + r] for r in need) * (0.5 if hi - lo == 2 else 0.35)
    live += unseen[JOKER] * 0.15
    return min(1.0, live / 10.0)


def _score(v: View, hand: list[Card], unseen: list[int]) -> float:
    """Expected cost of a hand: points left over, less what its loose cards may still meld."""
    values = hand_deadwood_values(v)
    split = deadwood_split(hand, values, need_run=_need_run(v),
                           jokers_per_meld=int(v.options["jokers_per_meld"]))
    cost = float(sum(values[c] for c in split.left))
    loose = list(split.left)
    for c in loose:
        cost -= values[c] * 0.6 * _chances(c, loose, unseen)
    if v.variant == "portuguese" and not any(m.is_clean and m.kind == "run" for m in split.melds):
        cost += 15.0  # without a natural run nothing counts: chase one
    return cost


def _strong_discard(v: View, hand: list[Card], unseen: list[int]) -> Discard:
    best: tuple[float, int, Card] | None = None
    for card in sorted(set(hand)):
        rest = list(hand)
        rest.remove(card)
        s = _score(v, rest, unseen) + (40.0 if card == JOKER else 0.0)
        key = (s, -hand_deadwood_values(v)[card], card)
        if best is None or key < best:
            best = key
    assert best is not None
    return Discard(best[2])


def strong(v: View, rng: random.Random) -> Action:
    """Open and finish as soon as it can; judge draws and discards by expected cost."""
    assert v.hand is not None
    hand = list(v.hand)
    unseen = _unseen(v)
    if v.phase == Phase.DRAW:
        if "discard" in v.draw_sources and v.discard_top is not None:
            top = v.discard_top
            if v.variant == "tallage":
                found = discard_completions(v)
                if found:
                    return Draw("discard", max(found, key=_cards_laid))
            else:
                now = min(_score(v, [*hand], unseen), _score(v, hand, unseen))
                with_top = [*hand, top]
                after = min(
                    _score(v, [c for i, c in enumerate(with_top) if i != j], unseen)
                    for j in range(len(hand))
                )
                if after < now - 4.0:
                    return Draw("discard")
        return Draw("stock")
    if v.variant == "portuguese":
        declare = _best_declare(v)
        if declare is not None:
            return declare
    else:
        lay = _first_lay(v, hand)
        if lay is not None:
            return lay
    return _strong_discard(v, hand, unseen)


POLICIES: dict[str, Policy] = {"random": random_policy, "greedy": greedy, "strong": strong}
