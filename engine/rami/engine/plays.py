"""Finding plays from a view: what a seat can do now, for bots, hints and tests.

Draws and discards are few and listed whole. Lays are too many to list, so these functions
return the ones worth considering, found with the solver: the best opening, every whole-hand
finish, the melds still in hand, every single card that fits a meld on the table, and every
joker that can be taken back and laid again. Every play returned is legal.
"""

from __future__ import annotations

from collections.abc import Iterator

from .actions import Action, AddToMeld, Declare, Discard, Draw, Lay, LayStep, NewMeld, TakeJoker
from .cards import CARDS, JOKER, Card
from .game import Phase
from .melds import RUN, End, Meld, MeldError
from .solver import (
    FLAG_LEFT,
    FLAG_RUN,
    FLAG_SET,
    Objective,
    Split,
    best_opening,
    best_split,
    clean_opening_value,
    clean_set_and_run,
    declaration_cards,
    finishes,
    last_cards,
    opening_bound,
    portuguese_declaration,
)
from .views import View

__all__ = [
    "additions",
    "chain_additions",
    "complete_declarations",
    "declaration_cards",
    "declarations",
    "discard_completions",
    "finish_lays",
    "hand_deadwood_values",
    "joker_swaps",
    "lays",
    "legal_plays",
    "new_melds",
    "opening",
    "takes_discard",
]

_BIG = 64 * 1000  # outweighs any opening value: "lay this card" comes before "lay most"
# Actions are immutable values: the draws and discards listed for every decision are made once.
_DRAW_STOCK = Draw("stock")
_DRAW_DISCARD = Draw("discard")
_DISCARDS: tuple[Discard, ...] = tuple(Discard(c) for c in CARDS)


def _jpm(v: View) -> int:
    return v.options.jokers_per_meld


def _lay_of(split: Split) -> Lay:
    return Lay(tuple(NewMeld(m.cards) for m in split.melds))


def opening(v: View, hand: list[Card], must: Card | None = None) -> Lay | None:
    """The best tallage opening from ``hand`` that beats the bar (and lays ``must``)."""
    least = max(v.options.opening, v.bar + 1)
    # No split of the hand is worth enough: two bounds say so for most hands, the cheaper first,
    # before the search for the opening.
    if opening_bound(hand) < least or clean_opening_value(hand) < least:
        return None
    if must is None:
        split = best_opening(hand, jokers_per_meld=_jpm(v))
    else:
        leftover = [0] * 53
        leftover[must] = -_BIG
        obj = Objective(tuple(leftover), opening_weight=64, card_weight=1)
        split = best_split(hand, obj, need=FLAG_SET | FLAG_RUN | FLAG_LEFT, jokers_per_meld=_jpm(v))
        if split is not None and _count(split.left, must) >= _count(hand, must):
            return None
    if split is None:
        return None
    value = sum(m.opening_value() for m in split.melds)
    if value < v.options.opening or value <= v.bar:
        return None
    return _lay_of(split)


def _count(cards: list[Card], card: Card) -> int:
    return sum(1 for c in cards if c == card)


def finish_lays(v: View, hand: list[Card], must: Card | None = None) -> list[Lay]:
    """Every whole-hand finish (one per last card), laying ``must`` when given."""
    out = []
    for last, split in finishes(hand, jokers_per_meld=_jpm(v)).items():
        if must is not None and last == must and _count(hand, must) < 2:
            continue
        out.append(_lay_of(split))
    return out


def new_melds(v: View, hand: list[Card], must: Card | None = None) -> Lay | None:
    """After opening: the melds that lay most cards from ``hand``, keeping one to discard."""
    leftover = [0] * 53
    if must is not None:
        leftover[must] = -_BIG
    obj = Objective(tuple(leftover), card_weight=1)
    split = best_split(hand, obj, need=FLAG_LEFT, jokers_per_meld=_jpm(v))
    if split is None or not split.melds:
        return None
    if must is not None and _count(split.left, must) >= _count(hand, must):
        return None
    return _lay_of(split)


def _foreign(meld: Meld, card: Card) -> bool:
    """True for a natural card of another suit than a run's, or another rank than a set's: it
    neither goes on the meld nor takes its joker back. Most cards of a hand are, and this says
    so without the meld's refusal (an error, with a message to format)."""
    if card == JOKER:
        return False
    return card // 13 != meld.suit if meld.kind == RUN else card % 13 + 1 != meld.rank


def _fits(meld: Meld, card: Card, end: End | None, jpm: int) -> Meld | None:
    if _foreign(meld, card):
        return None
    try:
        return meld.with_added(card, end=end, jokers_per_meld=jpm)
    except MeldError:
        return None


def additions(v: View, hand: list[Card]) -> Iterator[AddToMeld]:
    """Every single card of ``hand`` that goes on a meld of the table."""
    jpm = _jpm(v)
    cards = sorted(set(hand))
    for number, tm in enumerate(v.melds, 1):
        for card in cards:
            ends: tuple[End | None, ...] = (None,)
            if card == JOKER and tm.meld.kind == "run":
                ends = ("low", "high")
            for end in ends:
                if _fits(tm.meld, card, end, jpm) is not None:
                    yield AddToMeld(number, (card,), end)


def chain_additions(v: View, hand: list[Card], card: Card) -> Iterator[AddToMeld]:
    """``card`` added to a run of the table together with the natural cards of ``hand`` that
    join it to one of the run's ends (7♥ 8♥ 9♥ with 10♥ in hand takes J♥), keeping a card of
    the hand to discard: one addition per run that can take it so."""
    if card == JOKER:
        return
    jpm = _jpm(v)
    for number, tm in enumerate(v.melds, 1):
        if tm.meld.kind != RUN or _foreign(tm.meld, card):
            continue
        pool = sorted(c for c in set(hand) if c != JOKER and not _foreign(tm.meld, c))
        frontier: list[tuple[Meld, tuple[Card, ...]]] = [(tm.meld, ())]
        seen = {tm.meld.cards}
        found = None
        while frontier and found is None:
            nxt = []
            for meld, chain in frontier:
                if chain and _fits(meld, card, None, jpm) is not None:
                    found = chain
                    break
                for c in pool:
                    if c in chain:
                        continue
                    grown = _fits(meld, c, None, jpm)
                    if grown is not None and grown.cards not in seen:
                        seen.add(grown.cards)
                        nxt.append((grown, (*chain, c)))
            frontier = nxt
        if found is not None and len(hand) - len(found) >= 1:
            yield AddToMeld(number, (*found, card))


def joker_swaps(v: View, hand: list[Card]) -> Iterator[tuple[TakeJoker, LayStep]]:
    """Every joker that a card of ``hand`` takes back, with a place to lay the joker again."""
    jpm = _jpm(v)
    cards = sorted(set(hand))
    for number, tm in enumerate(v.melds, 1):
        if tm.meld.is_clean:
            continue
        for card in cards:
            if card == JOKER or _foreign(tm.meld, card):
                continue
            try:
                after = tm.meld.with_joker_taken(card)
            except MeldError:
                continue
            melds = [m.meld for m in v.melds]
            melds[number - 1] = after
            for other, m in enumerate(melds, 1):
                if m.jokers >= jpm:
                    continue
                sides: tuple[End | None, ...] = ("high", "low") if m.kind == "run" else (None,)
                for end in sides:
                    if _fits(m, JOKER, end, jpm) is not None:
                        yield TakeJoker(number, card), AddToMeld(other, (JOKER,), end)
                        break
                else:
                    continue
                break


def lays(v: View, hand: list[Card]) -> list[Lay]:
    """Lays worth considering now (empty when the rules allow none)."""
    if not v.can_lay or len(hand) < 2:
        return []
    opened = v.seat is not None and v.opened[v.seat]
    out: list[Lay] = []
    if v.variant.lays_whole_hand or not opened:
        if not clean_set_and_run(hand):
            return out  # no finish and no opening, said without a search
        out.extend(finish_lays(v, hand))
        if v.variant.has_opening:
            o = opening(v, hand)
            if o is not None and o not in out:  # an opening of all cards but one: a finish
                out.append(o)
        return out
    m = new_melds(v, hand)
    if m is not None:
        out.append(m)
    if len(hand) >= 2:
        out.extend(Lay((a,)) for a in additions(v, hand))
        out.extend(Lay(swap) for swap in joker_swaps(v, hand))
    return out


def discard_completions(v: View) -> list[Lay]:
    """Tallage: the lays that would let this seat take the top discard (it must be laid)."""
    if v.discard_lays is not None:  # found when the view was made
        return list(v.discard_lays)
    return list(_discard_lays(v))


def takes_discard(v: View) -> bool:
    """Tallage: True when some lay would let this seat take the top discard (the first of
    :func:`discard_completions`, found without looking for the others)."""
    if v.discard_lays is not None:
        return bool(v.discard_lays)
    return next(_discard_lays(v), None) is not None


def _discard_lays(v: View) -> Iterator[Lay]:
    """The lays of :func:`discard_completions`, each kind searched for only when asked, each
    once (an opening that lays all but one card is also a finish)."""
    seen: set[Lay] = set()
    for lay in _discard_lays_found(v):
        if lay not in seen:
            seen.add(lay)
            yield lay


def _discard_lays_found(v: View) -> Iterator[Lay]:
    if v.hand is None or v.discard_top is None or "discard" not in v.draw_sources:
        return
    taken = v.discard_top
    hand = [*v.hand, taken]
    assert v.seat is not None
    if v.opened[v.seat]:
        m = new_melds(v, hand, must=taken)
        if m is not None:
            yield m
        # Those of the taken card alone: what the rest of the hand could lay does not matter.
        yield from (Lay((a,)) for a in additions(v, [taken]))
        yield from (Lay((a,)) for a in chain_additions(v, list(v.hand), taken))
        yield from (Lay(s) for s in joker_swaps(v, [taken]))
    elif clean_set_and_run(hand):  # else no opening and no finish, said without a search
        o = opening(v, hand, must=taken)
        if o is not None:
            yield o
        yield from finish_lays(v, hand, must=taken)


def declarations(v: View) -> list[Declare]:
    """Portuguese: every card whose face-down leaves 13 complete cards."""
    if v.hand is None:
        return []
    out = []
    for card in last_cards(v.hand, FLAG_RUN, jokers_per_meld=_jpm(v)):
        rest = list(v.hand)
        rest.remove(card)
        if portuguese_declaration(rest, jokers_per_meld=_jpm(v)) is not None:
            out.append(Declare(card))
    return out


def complete_declarations(v: View) -> tuple[tuple[Card, int], ...]:
    """The declarations the watcher could make now: each card to put face down that leaves 13
    complete cards, with the multiplier (none unless the rules let it declare now). Read from
    the watcher's own hand alone."""
    if not v.can_declare or v.hand is None:
        return ()
    return declaration_cards(v.hand, jokers_per_meld=_jpm(v))


def legal_plays(v: View) -> list[Action]:
    """A list of legal actions for the watcher now: all draws and discards, the lays above."""
    if not v.my_turn or v.hand is None:
        return []
    hand = list(v.hand)
    if v.phase == Phase.DRAW:
        plays: list[Action] = [_DRAW_STOCK]
        if "discard" in v.draw_sources:
            if v.variant.must_lay_discard:
                plays.extend(Draw("discard", lay) for lay in discard_completions(v))
            else:
                plays.append(_DRAW_DISCARD)
        return plays
    plays = [_DISCARDS[c] for c in sorted(set(hand))]
    if v.variant.declares:
        plays.extend(declarations(v))
    else:
        plays.extend(lays(v, hand))
    return plays


def hand_deadwood_values(v: View) -> tuple[int, ...]:
    """What each card left in hand costs in this view's variant and options."""
    return v.options.hand_values(v.variant)
