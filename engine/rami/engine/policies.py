"""Bot policies: pure functions from a view (and a seeded random source) to an action.

- ``random``: a legal play chosen at random, first the kind of play, then the play.
- ``greedy``: takes a discard that makes a meld, lays all it can as soon as it can, discards
  its costliest card left out of melds.
- ``strong``: the same eagerness to finish, open and lay, but it judges its discards (and
  some draws) by how near the resulting hand is to going out: the fewest cards the solver
  leaves out of melds (with the clean melds going out needs), less the expected gain of the
  next draw from the cards still unseen, plus a little of what the hand would pay if another
  player went out.
- ``expert``: a search over determinized deals on top of strong (see ``expert`` below): the
  candidate moves played on in games sampled from the view, within a budget per move that is
  a fixed count of simulations.

Every policy only returns actions from :func:`rami.engine.plays.legal_plays`, so it never
plays an illegal move, and each finishes every game: the game's own caps end the rest.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from .actions import Action, AddToMeld, Declare, Discard, Draw, Lay, NewMeld
from .cards import CARDS, JOKER, Card
from .determinize import sample_game
from .game import Game, Phase
from .melds import Meld
from .plays import discard_completions, hand_deadwood_values, lays, legal_plays
from .solver import (
    FLAG_RUN,
    FLAG_SET,
    Objective,
    best_split,
    deadwood,
    deadwood_split,
    declaration_cards,
    finishes,
    last_cards,
    portuguese_declaration,
)
from .views import View, view

__all__ = [
    "EXPERT_BUDGET",
    "EXPERT_INFER",
    "EXPERT_TESTS",
    "POLICIES",
    "STRONG_WEIGHTS",
    "Expert",
    "Policy",
    "Strong",
    "StrongWeights",
    "expert",
    "greedy",
    "make_expert",
    "random_policy",
    "safe_move",
    "strong",
]

Policy = Callable[[View, random.Random], Action]


def safe_move(v: View) -> Action:
    """The move a table makes for a seat that is not there (its clock ran out, or its player
    left): draw from the stock, then discard the costliest card the best split of the hand
    leaves out of melds, never a joker while another card can go, and a card from a meld only
    when no card is loose. Always legal: a discard after a draw."""
    if v.phase == Phase.DRAW:
        return Draw("stock")
    hand = list(v.hand or ())
    values = v.options.hand_values(v.variant)
    split = deadwood_split(
        hand,
        values,
        need_run=v.variant.sets_need_run,
        jokers_per_meld=v.options.jokers_per_meld,
    )
    for pool in ([c for c in split.left if c != JOKER], [c for c in hand if c != JOKER], hand):
        if pool:
            return Discard(max(pool, key=lambda c: (values[c], c)))
    raise ValueError("a play phase with no card in hand")


def random_policy(v: View, rng: random.Random) -> Action:
    """Any legal play: a random kind of play, then a random play of that kind."""
    plays = legal_plays(v)
    if not plays:
        raise ValueError("no play: it is not this seat's turn")
    kinds: dict[str, list[Action]] = {}
    for p in plays:
        # The kind: the class's name, with the source for a draw (inline: this runs for every
        # play of every decision).
        kind = f"draw-{p.source}" if isinstance(p, Draw) else type(p).__name__
        kinds.setdefault(kind, []).append(p)
    return rng.choice(kinds[rng.choice(sorted(kinds))])


def _need_run(v: View) -> bool:
    return v.variant.sets_need_run


def _deadwood(v: View, hand: list[Card]) -> int:
    return deadwood(
        hand,
        hand_deadwood_values(v),
        need_run=_need_run(v),
        jokers_per_meld=v.options.jokers_per_meld,
    )


def _best_declare(v: View) -> Declare | None:
    assert v.hand is not None
    best: tuple[int, Declare] | None = None
    for card in last_cards(v.hand, FLAG_RUN, jokers_per_meld=v.options.jokers_per_meld):
        rest = list(v.hand)
        rest.remove(card)
        found = portuguese_declaration(rest, jokers_per_meld=v.options.jokers_per_meld)
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
    split = deadwood_split(
        hand, values, need_run=_need_run(v), jokers_per_meld=v.options.jokers_per_meld
    )
    # When every card melds but no finish is open, shed a card other than the one just drawn
    # (thrown back, it could go to and fro between two players taking discards for ever).
    loose = split.left or [c for c in hand if c != v.drawn] or hand
    # The costliest loose card; never a joker while another card can go.
    choices = [c for c in loose if c != JOKER] or list(loose)
    return Discard(max(choices, key=lambda c: (values[c], c)))


def greedy(v: View, rng: random.Random) -> Action:
    """Lay all it can at once; take a discard only to make a meld; shed the costliest card."""
    assert v.hand is not None
    hand = list(v.hand)
    if v.phase == Phase.DRAW:
        if "discard" in v.draw_sources and v.discard_top is not None:
            if v.variant.must_lay_discard:
                found = discard_completions(v)
                if found:
                    return Draw("discard", found[0])
            else:
                split = deadwood_split(
                    [*hand, v.discard_top], hand_deadwood_values(v), need_run=_need_run(v)
                )
                # It melds, and a loose card is left to discard: no meld is broken for it (a
                # discard taken only to be thrown back could pass between players for ever);
                # or it makes the hand go out at once (a declaration, a whole-hand finish).
                taken = [*hand, v.discard_top]
                jpm = v.options.jokers_per_meld
                out = (
                    declaration_cards(taken, jokers_per_meld=jpm)
                    if v.variant.declares
                    else finishes(taken, jokers_per_meld=jpm)
                )
                if (split.left and v.discard_top not in split.left) or out:
                    return Draw("discard")
        return Draw("stock")
    if v.variant.declares:
        declare = _best_declare(v)
        if declare is not None:
            return declare
    else:
        lay = _first_lay(v, hand)
        if lay is not None:
            return lay
    return _greedy_discard(v, hand)


# -- strong ---------------------------------------------------------------------------------
#
# The strong policy judges a hand by how near it is to going out, not by its points alone:
#
# - the fewest cards its best split leaves out of melds (counted by the solver with an
#   objective that weighs a card left over far above its points), plus a penalty when the split
#   lacks what going out needs (moroccan finish: a clean set and a clean run; portuguese
#   declaration: a clean run);
# - less the expected gain of the next draw: the unseen cards that extend one of its melds (one
#   card nearer) or complete a pair or two neighbours left over (three cards nearer), weighted by
#   how many copies are still unseen;
# - plus a small weight on what the hand would pay if another player went out now.
#
# Discards are chosen by that cost, and so are the draws of simple (the discard is taken when
# the hand after it costs less than a stock draw is expected to leave); portuguese takes a
# discard that melds (unless it would throw that card straight back), tallage one it can lay at
# once; a card taken from the pile is never thrown back the same turn. Lays and declarations
# are taken as soon as they exist, as the greedy policy does (a finish first, then the opening,
# the most cards).
# The weights were set by measuring against greedy in the arena, then tallage's and simple's
# against strong's own earlier weights (``python -m bench.strong_weights``; docs/bots.md).

_CARD = 1000  # one card left over, in the counting objective (a hand's points stay below it)
_COUNTING: dict[tuple[int, ...], Objective] = {}


@dataclass(frozen=True, slots=True)
class StrongWeights:
    """How the strong policy weighs a hand, per variant."""

    outs: float  # per card of expected gain from the next draw
    points: float  # per point the hand would pay if another player went out now
    no_set: float  # a split without the clean set a moroccan finish needs
    no_run: float  # a split without the clean run a finish or a declaration needs
    feed: float  # tallage: a discard that the next player, already opened, can lay
    joker: float  # discarding a joker
    meld_draw: bool  # take the discard whenever it melds (else: when it lowers the cost)


_WEIGHTS: dict[str, StrongWeights] = {
    "portuguese": StrongWeights(1.0, 0.1, 0.0, 1.0, 0.0, 50.0, True),
    "tallage": StrongWeights(1.5, 0.01, 2.0, 2.0, 0.5, 50.0, False),
    "simple": StrongWeights(1.5, 0.03, 4.0, 4.0, 0.0, 50.0, False),
}
#: The strong policy's weights, by variant.
STRONG_WEIGHTS: Mapping[str, StrongWeights] = MappingProxyType(_WEIGHTS)


def _counting(values: tuple[int, ...]) -> Objective:
    objective = _COUNTING.get(values)
    if objective is None:
        objective = _COUNTING[values] = Objective(tuple(-(_CARD + x) for x in values))
    return objective


def _unseen(v: View) -> list[int]:
    """How many copies of each card this seat has not seen (hand, table, discard top)."""
    left = [2] * 52 + [v.variant.jokers]
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


def _fits(melds: list[Meld], card: Card, jpm: int) -> bool:
    return any(m.accepts(card, jokers_per_meld=jpm) for m in melds)


@dataclass(frozen=True, slots=True, eq=False)
class _PartKey:
    """What the kept parts of strong's cost of a hand (``_hand_part``, ``_gain_part``) depend
    on besides the cards: their values, the jokers a meld may hold, the clean melds going out
    needs (and the penalties for lacking them), and whether melds count only beside a clean
    run. One object for each such combination (``_part_key``), hashed and compared by
    identity: the caches are asked at every hand judged, and hashing the 53 values each time
    would cost more than the rest of a cache hit."""

    values: tuple[int, ...]
    jokers_per_meld: int
    need: int
    no_set: float
    no_run: float
    sets_need_run: bool


_PART_KEYS: dict[tuple[tuple[int, ...], int, int, float, float, bool], _PartKey] = {}


def _part_key(
    values: tuple[int, ...],
    jokers_per_meld: int,
    need: int,
    no_set: float,
    no_run: float,
    sets_need_run: bool,
) -> _PartKey:
    """The one key of these fields (see :class:`_PartKey`)."""
    fields = (values, jokers_per_meld, need, no_set, no_run, sets_need_run)
    key = _PART_KEYS.get(fields)
    if key is None:
        key = _PART_KEYS[fields] = _PartKey(*fields)
    return key


#: How many hands each of strong's kept parts of a hand's cost remembers (the latest ones).
#: The expert plays every candidate on in the same sampled games, so the same hands are
#: judged again and again: a searched decision judges some 4,000 to 6,000 distinct hands
#: (up to 9,000), two to three times each, mostly close together, so that a bigger memory
#: would serve hardly any more of them.
_KEPT_HANDS = 4096

#: The targets of a hand's next draw: card -> cards nearer (1 or 3). Kept and shared between
#: calls: read, never changed.
_GainPart = Mapping[int, int]


class _HandPart(NamedTuple):
    """The part of strong's cost of a hand that depends on its cards and the key alone, not on
    what is unseen or on the table (``_hand_part``)."""

    penalty: float  # the split lacks the clean melds going out needs
    exposure: int  # what the hand would pay if another player went out now
    left: tuple[Card, ...]  # the cards the split leaves over, sorted
    melds: tuple[Meld, ...]  # the split's melds


@lru_cache(maxsize=_KEPT_HANDS)
def _hand_part(cards: tuple[Card, ...], key: _PartKey) -> _HandPart:
    """Strong's best split of ``cards`` (sorted), and what it costs whatever is unseen.

    The split is the solver's fewest cards left over; when that split lacks what going out
    needs, the best split that has it is weighed against the penalty."""
    objective = _counting(key.values)
    jpm = key.jokers_per_meld
    split = best_split(cards, objective, jokers_per_meld=jpm)
    assert split is not None
    penalty = 0.0
    if key.need & FLAG_SET and not split.has_clean_set:
        penalty += key.no_set
    if key.need & FLAG_RUN and not split.has_clean_run:
        penalty += key.no_run
    if penalty:
        needed = best_split(cards, objective, need=key.need, jokers_per_meld=jpm)
        if needed is not None and len(needed.left) < len(split.left) + penalty:
            split, penalty = needed, 0.0
    values = key.values
    if key.sets_need_run:
        # What a declaration by another player would cost: melds count beside a clean run.
        has_run = any(m.is_clean and m.kind == "run" for m in split.melds)
        exposure = sum(values[c] for c in (split.left if has_run else cards))
    else:
        exposure = sum(values[c] for c in cards)
    return _HandPart(penalty, exposure, tuple(split.left), tuple(split.melds))


@lru_cache(maxsize=_KEPT_HANDS)
def _gain_part(cards: tuple[Card, ...], key: _PartKey, loose: tuple[Card, ...] | None) -> _GainPart:
    """The cards whose draw would bring ``cards`` nearer to going out, and by how much: one
    card for one that extends a meld of the hand's split, three for one that completes a pair
    or two neighbours among its ``loose`` cards (those left over less any that a meld on the
    table takes; all of them when ``None``), and the joker as the best of these."""
    part = _hand_part(cards, key)
    if loose is None:
        loose = part.left
    jpm = key.jokers_per_meld
    gain: dict[int, int] = {}
    joker_fits = False
    for m in part.melds:
        if m.kind == "run":
            if len(m.cards) < 13:
                if m.lo > 1:
                    gain[m.suit * 13 + (m.lo - 2) % 13] = 1
                if m.hi < 14:
                    gain[m.suit * 13 + m.hi % 13] = 1
                joker_fits = joker_fits or m.jokers < jpm
        elif len(m.cards) < 4:
            for suit in m.missing_suits():
                gain[suit * 13 + m.rank - 1] = 1
            joker_fits = joker_fits or m.jokers < jpm
    # Each loose natural as (suit, rank index), in card order.
    placed = [divmod(int(c), 13) for c in sorted({c for c in loose if c != JOKER})]
    pairs = False
    for i, (sa, ra) in enumerate(placed):
        for sb, rb in placed[i + 1 :]:
            if ra == rb:
                pairs = True
                for t in range(4):
                    if t not in (sa, sb):
                        gain[t * 13 + ra] = 3
            elif sa == sb:
                # Places in the suit, the ace both low (0) and high (13).
                for pa in (ra,) if ra else (0, 13):
                    for pb in (rb,) if rb else (0, 13):
                        lo, hi = min(pa, pb), max(pa, pb)
                        if hi - lo == 1:
                            pairs = True
                            for p in (lo - 1, hi + 1):
                                if 0 <= p <= 13:
                                    gain[sa * 13 + p % 13] = 3
                        elif hi - lo == 2:
                            pairs = True
                            gain[sa * 13 + (lo + 1) % 13] = 3
    if pairs:
        gain[JOKER] = 3
    elif joker_fits:
        gain[JOKER] = 1
    return gain


class _Judge:
    """The strong policy's cost of a hand, for one view (lower is better)."""

    def __init__(self, v: View, weights: StrongWeights | None = None) -> None:
        assert v.seat is not None
        self.v = v
        self.w = weights or _WEIGHTS[v.variant.id]
        self.values = hand_deadwood_values(v)
        self.jpm = v.options.jokers_per_meld
        self.unseen = _unseen(v)
        self.total = max(1, sum(self.unseen))
        opened = v.variant.has_opening and v.opened[v.seat]
        # Once opened in tallage, anything goes: melds and additions, no flags needed.
        self.table = [tm.meld for tm in v.melds] if opened else []
        #: The cards (and the joker) that some meld on the table takes, when opened: asked
        #: of every card at every cost, the same for the judge's whole view.
        self.fitting = frozenset(
            c for c in range(53) if self.table and _fits(self.table, CARDS[c], self.jpm)
        )
        if v.variant.declares:
            self.need = FLAG_RUN
        else:
            self.need = 0 if opened else FLAG_SET | FLAG_RUN
        #: What a hand's cost depends on besides the hand and what is unseen (``_hand_part``).
        self.part_key = _part_key(
            self.values,
            self.jpm,
            self.need,
            self.w.no_set,
            self.w.no_run,
            v.variant.sets_need_run,
        )

    def cost(self, hand: list[Card]) -> tuple[float, float]:
        """The hand's cost, and the expected gain (in cards) of its next draw."""
        cards = tuple(sorted(hand))
        penalty, exposure, left, _ = _hand_part(cards, self.part_key)
        loose = tuple(c for c in left if c not in self.fitting) if self.fitting else left
        # The draw's targets of the cards left over (``None``) are kept once for every table.
        targets = _gain_part(cards, self.part_key, loose if len(loose) < len(left) else None)
        gain = self._gain(targets)
        cost = penalty + len(loose) - self.w.outs * gain + self.w.points * exposure
        return cost, gain

    def _gain(self, targets: _GainPart) -> float:
        """Expected cards nearer to going out after the next draw from the stock."""
        unseen = self.unseen
        total = 0
        for c, g in targets.items():
            total += g * unseen[c]
        if self.fitting:
            # A card some meld on the table takes is one card nearer, when nothing better.
            total += sum(unseen[c] for c in self.fitting if c < 52 and c not in targets)
        return total / self.total

    def feeds(self, card: Card) -> bool:
        """Tallage: the next player, already opened, could take this discard and lay it."""
        v = self.v
        assert v.seat is not None
        nxt = (v.seat + 1) % v.players
        return (
            v.variant.has_opening
            and v.opened[nxt]
            and _fits([tm.meld for tm in v.melds], card, self.jpm)
        )

    def discard_key(self, hand: list[Card], card: Card) -> tuple[float, int, Card]:
        """How good a discard ``card`` is, least first: the cost of the rest of ``hand`` (and
        of throwing a joker or a card the next seat wants), then the dearer card, then the card."""
        rest = list(hand)
        rest.remove(card)
        cost, _ = self.cost(rest)
        if card == JOKER:
            cost += self.w.joker
        if self.w.feed and self.feeds(card):
            cost += self.w.feed
        return cost, -self.values[card], card

    def discard(self, hand: list[Card], keep: Card | None = None) -> tuple[float, Card] | None:
        """The discard of least cost, with that cost (``keep`` is never discarded)."""
        keys = [self.discard_key(hand, c) for c in sorted(set(hand)) if c != keep]
        if not keys:
            return None
        best = min(keys)
        return best[0], best[2]


def _taken_from_pile(v: View) -> Card | None:
    """The card the seat took from the pile this turn, which it keeps (None: none).

    The draw was judged by the discard it would make after it, on the view before the draw;
    the view after it (the pile's next card in sight, the card known held) can turn a near
    tie the other way, and a card thrown straight back may pass between two players for ever,
    the stock never running down. (A card known held is one taken from the pile, or shown in
    a declaration.)"""
    if v.drawn is None or v.seat is None or v.drawn not in v.known[v.seat]:
        return None
    return v.drawn


def strong(v: View, rng: random.Random) -> Action:
    """Finish, declare, open and lay as soon as it can; draw and discard to get nearest to
    going out (see above)."""
    return _strong(v, _Judge(v))


@dataclass(frozen=True, slots=True)
class Strong:
    """The strong policy with other weights for some variants (the others keep theirs): for
    measuring a change of weights in the arena against ``strong`` itself. A value (it
    pickles: the arena's worker processes get it whole)."""

    weights: tuple[tuple[str, StrongWeights], ...]

    def __call__(self, v: View, rng: random.Random) -> Action:
        """``strong``, judging hands with these weights."""
        return _strong(v, _Judge(v, dict(self.weights).get(v.variant.id)))


def _strong(v: View, judge: _Judge) -> Action:
    assert v.hand is not None
    hand = list(v.hand)
    if v.phase == Phase.DRAW:
        if "discard" in v.draw_sources and v.discard_top is not None:
            top = v.discard_top
            if v.variant.must_lay_discard:
                found = discard_completions(v)
                if found:
                    return Draw("discard", max(found, key=_cards_laid))
            elif judge.w.meld_draw:
                split = deadwood_split(
                    [*hand, top], judge.values, need_run=_need_run(v), jokers_per_meld=judge.jpm
                )
                # Never a card it would throw straight back: two such players would pass it
                # to and fro for ever, the stock never running down.
                if top not in split.left:
                    after = judge.discard([*hand, top])
                    if after is not None and after[1] != top:
                        return Draw("discard")
            else:
                now, gain = judge.cost(hand)
                taken = judge.discard([*hand, top], keep=top)
                if taken is not None and taken[0] < now - gain:
                    return Draw("discard")
        return Draw("stock")
    if v.variant.declares:
        declare = _best_declare(v)
        if declare is not None:
            return declare
    else:
        lay = _first_lay(v, hand)
        if lay is not None:
            return lay
    found_discard = judge.discard(hand, keep=_taken_from_pile(v)) or judge.discard(hand)
    assert found_discard is not None
    return Discard(found_discard[1])


# -- expert ---------------------------------------------------------------------------------
#
# The expert policy searches over determinized deals (perfect-information Monte Carlo): the
# candidate actions are strong's choice and the best few others (discards ranked by strong's
# cost of the hand kept, lays by cards laid, every draw); each is tried in the same K games
# sampled from the view (``determinize.sample_game``: the unseen cards dealt at random to the
# other hands, the pile and the stock), played on by strong for every seat through the
# expert's next turn, to the draw after it (or the round's end), and valued there. A round
# that ended is worth what the others paid less what the expert paid (in cards, a point being
# 1/20 of a card), plus a bonus for going out (or minus it for another's finish) in tallage
# and simple (``EXPERT_WINS``: in portuguese the points alone, the game's own measure); a round
# still going is worth what such positions were measured to be worth in those units
# (``_LEAF_FIT``: a least-squares fit on the difference of strong's costs of the hands, the
# solver's cards left out of melds less the expected gain of the next draw, and on what the
# hands would pay). Strong's choice is left only for a clear gain (``expert_choice``), and a
# candidate that cannot show one is played no further (``prune``).
#
# The work is bounded by a count of simulations, never by the clock, so a seed always gives
# the same move on any machine and under any load: the count is the budget (seconds) times a
# rate set once per variant (simulations per second on one core of the reference machine,
# two players, one of c circuits counted as c), over what a simulation costs with more
# players. A simulation plays the moves up to the expert's c-th next draw, about c·n − 1 of
# them with n players, so one of n players costs (c·n − 1) / (2c − 1) of a two-player one
# (``_players_cost``; the searched moves of ``python -m bench.expert_rates --players N`` take
# as long with 3 to 6 players as with 2).

#: The expert's default budget per move, in seconds of the reference machine.
EXPERT_BUDGET = 0.5
#: How far a simulation plays by default: through the expert's next turn, to the draw after.
EXPERT_CIRCUITS = 2

#: Simulations per second of one core of the reference machine, two players, set so that a
#: searched move at the default budget takes a median of about 0.4 s of its CPU time (0.37
#: to 0.44 s when last set; ``python -m bench.expert_rates`` measures both again, and
#: docs/bots.md gives its figures).
EXPERT_RATES: dict[str, float] = {"portuguese": 1000.0, "tallage": 1250.0, "simple": 610.0}

_EXPERT_CANDIDATES = 6  # most actions compared in one decision
_EXPERT_DISCARDS = 3  # discards among them, besides strong's
_EXPERT_MARGIN = 0.25  # the least mean gain, in cards, to leave strong's choice
_EXPERT_Z = 2.0  # and in standard errors of the paired mean

#: The test to leave strong's choice, ``(margin, z)``, by variant. Portuguese and tallage
#: leave it on a looser test: the moves it changed were judged better than the strict test's
#: in three runs of ``bench.judge`` each (docs/bots.md, "The test to leave strong's choice");
#: in simple they were judged worse.
EXPERT_TESTS: dict[str, tuple[float, float]] = {
    "portuguese": (0.1, 1.0),
    "tallage": (0.1, 1.0),
    "simple": (_EXPERT_MARGIN, _EXPERT_Z),
}
#: Whether the expert's sampled games read the last discard (``Expert.infer``), by variant.
EXPERT_INFER: dict[str, bool] = {"portuguese": False, "tallage": False, "simple": False}
_EXPERT_PART = 8  # the fewest sampled games played before a candidate may be dropped
_POINT = 1 / 20  # a point paid, in cards
_WIN = 8.0  # going out, in cards
#: What going out is worth, in cards, besides the points paid (``Expert.win``), by variant.
#: A game is won by the points alone; the bonus steers the search toward going out. In
#: portuguese, where the loser pays only the cards left out of its best split, the moves it
#: steered to lost points: judged by the points alone (``bench.judge --win 0``), the expert's
#: moves that differed from strong's were worse with the bonus and even without it
#: (docs/bots.md, "What going out is worth").
EXPERT_WINS: dict[str, float] = {"portuguese": 0.0, "tallage": _WIN, "simple": _WIN}


def expert_simulations(
    variant: str, players: int, budget: float, circuits: int = EXPERT_CIRCUITS
) -> int:
    """The simulations a decision may run for ``budget`` seconds (at least one)."""
    rate = EXPERT_RATES[variant] / circuits / _players_cost(players, circuits)
    return max(1, int(budget * rate))


def _players_cost(players: int, circuits: int) -> float:
    """What a simulation of ``circuits`` circuits with ``players`` players costs, against one
    with two: the moves it plays, up to the expert's ``circuits``-th next draw."""
    return (circuits * players - 1) / (2 * circuits - 1)


def _ranked_discards(judge: _Judge, hand: list[Card]) -> list[Card]:
    """Every card of ``hand`` to discard, the cheapest first by strong's cost of the rest."""
    return [key[2] for key in sorted(judge.discard_key(hand, c) for c in sorted(set(hand)))]


def _laid_of(action: Action) -> int:
    if isinstance(action, Lay):
        return _cards_laid(action)
    if isinstance(action, Draw) and action.lay is not None:
        return _cards_laid(action.lay)
    return -1


def expert_candidates(v: View, rng: random.Random) -> list[Action]:
    """The actions the expert compares, strong's choice first; a single one when the choice
    is forced or plain (a declaration, a finish: going out is never worse)."""
    plays = legal_plays(v)
    assert v.hand is not None
    choice = strong(v, rng)
    if len(plays) == 1 or isinstance(choice, Declare):
        return [choice]
    hand_after = len(v.hand) + (1 if v.phase == Phase.DRAW else 0)
    if _laid_of(choice) == hand_after - 1:
        return [choice]  # a whole-hand finish
    out: list[Action] = [choice]
    if v.phase == Phase.DRAW:
        ranked = sorted(plays, key=lambda p: -_laid_of(p))
    else:
        judge = _Judge(v)
        kept = _taken_from_pile(v)  # never thrown back (strong's choice keeps it too)
        ranked_cards = [c for c in _ranked_discards(judge, list(v.hand)) if c != kept]
        discards: list[Action] = [Discard(c) for c in ranked_cards[: _EXPERT_DISCARDS + 1]]
        others = sorted(
            (p for p in plays if not isinstance(p, Discard)), key=lambda p: -_laid_of(p)
        )
        ranked = [*discards, *others]
    for p in ranked:
        if len(out) >= _EXPERT_CANDIDATES:
            break
        if p not in out:
            out.append(p)
    return out


def _leaf_facts(game: Game, seat: int) -> tuple[float, int]:
    """Strong's cost of ``seat``'s hand, and what the hand would pay if another went out now."""
    sv = view(game, seat)
    assert sv.hand is not None
    judge = _Judge(sv)
    hand = list(sv.hand)
    return judge.cost(hand)[0], _hand_part(tuple(sorted(hand)), judge.part_key).exposure


#: A fit of a round still going, as :data:`_LEAF_FIT` holds them: ``(a, b, c)``, or ``(a, b,
#: c, d, e)`` with the terms of a hand near going out (:func:`_value`).
Leaf = tuple[float, ...]

#: How near a hand is to going out, read from strong's cost of it: ``e^(−cost/_NEAR)``.
_NEAR = 3.0

#: What a round still going is worth to a seat about to draw, in cards: ``a + b·Δcost + c·Δpays/20``
#: (and ``+ d·risk/20 + e·chance/20`` in a fit of five: what the seat's hand would pay times how
#: near the others are to going out, the mean of ``e^(−cost/3)`` over them; what the others' would
#: pay times how near the seat is), where Δcost is the others' mean strong cost less the seat's own
#: and Δpays the others' mean of what their hands would pay if another went out now less the seat's
#: own (in points, 20 to a card). Fitted by least squares, by variant, on positions of strong's own
#: games played on to the round's end with strong for every seat and valued as a round's end is
#: (``python -m bench.leaf_values``; docs/bots.md, "A round still going, valued"): for two players,
#: and for four (used for three or more). Simple's is fitted on Δcost alone (``--without-pays``):
#: with Δpays its fit valued keeping high cards, and the expert's moves that differed from strong's
#: were judged worse than strong's (``bench.judge``). Portuguese's are fitted with its round's end
#: valued by the points alone (``EXPERT_WINS``), on Δcost alone (Δcost and Δpays correlate at 0.93
#: there, and Δpays lowered no error).
_LEAF_FIT: dict[tuple[str, bool], Leaf] = {
    ("portuguese", False): (0.0773, 0.0991, 0.0),
    ("tallage", False): (0.4722, 1.1499, -0.1001),
    ("simple", False): (0.8775, 0.8242, 0.0),
    ("portuguese", True): (0.0884, 0.1206, 0.0),
    ("tallage", True): (0.5897, 0.7488, 0.1817),
    ("simple", True): (0.4028, 0.4867, 0.0),
}


def _value(
    game: Game, seat: int, fitted: bool = True, leaf: Leaf | None = None, win: float = _WIN
) -> float:
    """What the position is worth to ``seat`` (see above), in cards: a round's end by what was
    paid and who went out (``win`` cards for going out); a round still going by
    :data:`_LEAF_FIT` (``fitted``; ``leaf``, when given, in its place) or by the others' mean
    strong cost less the seat's own."""
    n = game.players
    if game.phase in (Phase.ROUND_OVER, Phase.GAME_OVER):
        result = game.results[-1]
        if result.winner is None:
            return 0.0
        paid = result.points
        others = sum(paid[s] for s in range(n) if s != seat) / (n - 1)
        bonus = win if result.winner == seat else -win / (n - 1)
        return bonus + _POINT * (others - paid[seat])
    facts = [_leaf_facts(game, s) for s in range(n)]
    own_cost, own_pays = facts[seat]
    others_cost = sum(facts[s][0] for s in range(n) if s != seat) / (n - 1)
    if not fitted:
        return others_cost - own_cost
    others_pays = sum(facts[s][1] for s in range(n) if s != seat) / (n - 1)
    a, b, c, *near = leaf if leaf is not None else _LEAF_FIT[(game.variant.id, n > 2)]
    value = a + b * (others_cost - own_cost) + c * _POINT * (others_pays - own_pays)
    if near:
        d, e = near
        risk, chance = _near_terms(facts, seat)
        value += _POINT * (d * risk + e * chance)
    return value


def _near_terms(facts: Sequence[tuple[float, int]], seat: int) -> tuple[float, float]:
    """The risk and the chance of a fit of five (points), from each seat's ``_leaf_facts``:
    what ``seat``'s hand would pay times the others' mean nearness to going out, and what
    the others' would pay (their mean) times the seat's own nearness."""
    others = [s for s in range(len(facts)) if s != seat]
    own_cost, own_pays = facts[seat]
    near = sum(math.exp(-facts[s][0] / _NEAR) for s in others) / len(others)
    pays = sum(facts[s][1] for s in others) / len(others)
    return own_pays * near, pays * math.exp(-own_cost / _NEAR)


def _playout(
    game: Game,
    seat: int,
    rng: random.Random,
    circuits: int,
    fitted: bool = True,
    leaf: Leaf | None = None,
    win: float = _WIN,
) -> float:
    """Play ``game`` on with strong for every seat until ``seat`` is to draw for the
    ``circuits``-th time or the round is over; its value to ``seat``."""
    moves = 0
    draws = 0
    while game.phase in (Phase.DRAW, Phase.PLAY):
        if game.turn == seat and game.phase == Phase.DRAW:
            draws += 1
            if draws >= circuits:
                break
        s = game.turn
        game.apply(s, strong(view(game, s), rng))
        moves += 1
        if moves > 40 * game.players * circuits:  # the rules end every turn: a bug's guard
            raise RuntimeError("a playout that does not come back to the seat")
    return _value(game, seat, fitted, leaf, win)


#: The sampled games a search draws, at most, for each one it keeps when it reads the last
#: discard (``Expert.infer``): past them it keeps what it drew.
_INFER_TRIES = 10
#: The share of a search's simulations left for drawing those games (a draw and strong's
#: discard in it cost about a quarter of a simulation; some ten are drawn for each kept).
_INFER_SHARE = 0.3


def _thrower(v: View) -> int | None:
    """The seat whose discard is the top of ``v``'s pile, as the seat to move knows it: the
    seat before, which ended its turn by throwing it; None when the top is not known to be
    its discard (the round's first turn, whose top was dealt; the seat took the discard
    this turn, and the top is the card below), or when the seat has laid cards this turn
    (the moment of the discard is not the view's less the draw)."""
    if v.seat is None or v.seat != v.turn or v.discard_top is None or v.hand is None:
        return None
    if v.phase == Phase.PLAY:
        if v.drawn is None or v.drawn in v.known[v.seat]:
            return None  # taken from the pile (or not drawn): the top is not the thrown card
        if v.variant.has_opening or len(v.hand) != v.variant.hand_size + 1:
            return None  # cards laid this turn, or may have been
    elif v.phase != Phase.DRAW:
        return None
    n = v.players
    start = v.dealer if v.variant.dealer_extra else (v.dealer + 1) % n
    if v.first_circuit and v.seat == start:
        return None  # the round's first turn: the top was dealt
    return (v.seat - 1) % n


def _would_throw(game: Game, v: View, thrower: int) -> bool:
    """Whether, in the sampled ``game``, strong in ``thrower``'s seat, holding its sampled
    hand and the top of the pile, would have thrown that card (and not gone out or declared),
    as it did: the game put back as it was just before that discard."""
    top = v.discard_top
    assert top is not None and v.seat is not None
    before = game.clone()
    before.discard.pop()
    before.hands[thrower] = sorted([*before.hands[thrower], top])
    if v.phase == Phase.PLAY and v.drawn is not None:
        before.hands[v.seat].remove(v.drawn)  # drawn from the stock, after the discard
        before.stock.append(v.drawn)
    before.turn = thrower
    before.phase = Phase.PLAY
    before.drawn = None
    before.turn_index = max(0, before.turn_index - 1)
    then = view(before, thrower)
    assert then.hand is not None
    # Strong's choice (``_strong``) read in the order that rules a game out soonest: most
    # are ruled out by a card it would rather throw, found after a few of the discards'
    # costs, where strong itself would weigh every one.
    judge = _Judge(then)
    hand = list(then.hand)
    thrown = judge.discard_key(hand, top)
    for card in sorted(set(hand)):
        if card != top and judge.discard_key(hand, card) < thrown:
            return False
    if then.variant.declares:
        return _best_declare(then) is None
    return _first_lay(then, hand) is None


def sample_games(v: View, rng: random.Random, count: int, infer: bool = False) -> list[Game]:
    """``count`` games consistent with ``v`` (:func:`~rami.engine.determinize.sample_game`).
    With ``infer``, games in which the seat before would not have thrown the top of the pile
    (strong in its seat, :func:`_would_throw`) are drawn again: a card a player throws tells
    what its hand is not. At most :data:`_INFER_TRIES` draws a game kept, over all the games;
    when they run out, the first games drawn that disagree fill the count."""
    thrower = _thrower(v) if infer else None
    if thrower is None:
        return [sample_game(v, rng) for _ in range(count)]
    kept: list[Game] = []
    spare: list[Game] = []
    for _ in range(count * _INFER_TRIES):
        game = sample_game(v, rng)
        if _would_throw(game, v, thrower):
            kept.append(game)
            if len(kept) == count:
                return kept
        elif len(spare) < count:
            spare.append(game)
    return kept + spare[: count - len(kept)]


def expert_scores(
    v: View,
    rng: random.Random,
    candidates: list[Action],
    simulations: int,
    circuits: int = EXPERT_CIRCUITS,
    drop: tuple[float, float] | None = None,
    fitted: bool = True,
    leaf: Leaf | None = None,
    infer: bool = False,
    win: float = _WIN,
) -> list[list[float]]:
    """The value of each candidate in each of the same sampled games (common to all, so that
    the comparison is not blurred by the luck of different deals).

    With ``drop = (margin, z)`` the games are played a part at a time (a quarter of them, at
    least :data:`_EXPERT_PART`), and after each part a candidate whose gain over the first,
    paired game by game, stays under ``margin`` even at ``z`` standard errors above its mean
    is played no further: its list stops there. When no candidate but the first is left, the
    search stops. A value never depends on the order the games are played in (each game's
    playout has its own random source), so what is played is what the whole search plays.
    With ``infer`` the games are drawn by :func:`sample_games`' reading of the last discard,
    and fewer of them (:data:`_INFER_SHARE` of the simulations goes to drawing them)."""
    assert v.seat is not None
    if infer and _thrower(v) is not None:
        simulations = int(simulations * (1 - _INFER_SHARE))
    worlds = max(2, simulations // len(candidates))
    games = sample_games(v, rng, worlds, infer)
    seeds = [rng.getrandbits(32) for _ in range(worlds)]
    scores: list[list[float]] = [[] for _ in candidates]
    alive = list(range(len(candidates)))
    part = worlds if drop is None else max(_EXPERT_PART, -(-worlds // 4))
    start = 0
    while start < worlds and alive:
        stop = min(worlds, start + part)
        for i in alive:
            for game, seed in zip(games[start:stop], seeds[start:stop], strict=True):
                g = game.clone()
                g.apply(v.seat, candidates[i])
                value = _playout(g, v.seat, random.Random(seed), circuits, fitted, leaf, win)
                scores[i].append(value)
        start = stop
        if drop is not None and start < worlds:
            margin, z = drop
            alive = [i for i in alive if i == 0 or _may_gain(scores[i], scores[0], margin, z)]
            if alive == [0]:
                break
    return scores


def _paired_gain(values: list[float], base: list[float]) -> tuple[float, float]:
    """The mean of ``values`` less ``base``, paired game by game, and its standard error."""
    k = len(values)
    diffs = [a - b for a, b in zip(values, base, strict=True)]
    mean = math.fsum(diffs) / k
    var = math.fsum((d - mean) ** 2 for d in diffs) / (k - 1)
    return mean, math.sqrt(var / k)


def _may_gain(values: list[float], base: list[float], margin: float, z: float) -> bool:
    """Whether ``values``' gain over ``base``, paired, may still reach ``margin``: its mean
    plus ``z`` standard errors is not under it."""
    mean, se = _paired_gain(values, base)
    return mean + z * se >= margin


def expert_choice(
    scores: list[list[float]], margin: float = _EXPERT_MARGIN, z: float = _EXPERT_Z
) -> int:
    """The candidate to play: the one of best mean among those whose advantage over the first
    (strong's choice), paired game by game, is at least ``margin`` cards and more than ``z``
    standard errors; the first when none is. A few sampled games say little, and strong's
    choice is a good one: it is left only for a clear gain. A candidate played in fewer games
    than the first (dropped by :func:`expert_scores`) is not chosen."""
    base = scores[0]
    k = len(base)
    best, best_mean = 0, 0.0
    for i in range(1, len(scores)):
        if len(scores[i]) != k:
            continue
        mean, se = _paired_gain(scores[i], base)
        if mean >= margin and mean > z * se and mean > best_mean:
            best, best_mean = i, mean
    return best


@dataclass(frozen=True, slots=True)
class Expert:
    """The expert policy with ``budget`` seconds (of the reference machine) per move: the
    count of simulations is fixed by the budget, the variant and the players, so a move
    depends only on the view and the random source. A value (it pickles: the arena's worker
    processes get it whole)."""

    budget: float = EXPERT_BUDGET
    #: How far each simulation plays: to the expert's ``circuits``-th next draw.
    circuits: int = EXPERT_CIRCUITS
    #: The least mean gain, in cards, and the standard errors, to leave strong's choice
    #: (``None``: the variant's, :data:`EXPERT_TESTS`).
    margin: float | None = None
    z: float | None = None
    #: Whether a candidate that cannot clear the test is played no further (``expert_scores``'
    #: ``drop``): the same test, fewer simulations (the budget is then the most a move plays).
    prune: bool = True
    #: How a simulation that stops before the round's end is valued: by the fitted value of
    #: a round still going (:data:`_LEAF_FIT`), or (``False``) by the difference of strong's
    #: costs of the hands alone.
    fitted: bool = True
    #: The fit ``(a, b, c)`` to value a round still going by, in place of :data:`_LEAF_FIT`'s
    #: for the variant and players (to try another: ``bench.leaf_values`` makes them).
    leaf: Leaf | None = None
    #: Whether the sampled games must agree with the last discard (:func:`sample_games`):
    #: ``None``, the variant's (:data:`EXPERT_INFER`).
    infer: bool | None = None
    #: What going out is worth, in cards, at a round's end in a simulation (besides the
    #: points paid): ``None``, the variant's (:data:`EXPERT_WINS`). The variant's leaf fit
    #: is measured with the variant's worth; with another, give the fit for it (``leaf``).
    win: float | None = None

    def __post_init__(self) -> None:
        if not (isinstance(self.budget, int | float) and self.budget > 0):
            raise ValueError(f"a budget is a positive number of seconds, not {self.budget!r}")
        if not (isinstance(self.circuits, int) and self.circuits > 0):
            raise ValueError(
                f"a count of circuits is a whole number, 1 or more, not {self.circuits!r}"
            )
        for name in ("margin", "z"):
            value = getattr(self, name)
            if value is None:
                continue
            if not (isinstance(value, int | float) and not isinstance(value, bool)):
                raise ValueError(f"the expert's {name} is a number, not {value!r}")
            if not (0 <= value < math.inf):
                raise ValueError(f"the expert's {name} is 0 or more and finite, not {value!r}")
        if self.win is not None and not (
            isinstance(self.win, int | float)
            and not isinstance(self.win, bool)
            and 0 <= self.win < math.inf
        ):
            raise ValueError(f"the expert's win is 0 or more and finite, not {self.win!r}")
        if self.infer is not None and not isinstance(self.infer, bool):
            raise ValueError(f"the expert's infer is True, False or None, not {self.infer!r}")
        for name in ("prune", "fitted"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(
                    f"the expert's {name} is True or False, not {getattr(self, name)!r}"
                )
        if self.leaf is not None and not (
            isinstance(self.leaf, tuple)
            and len(self.leaf) in (3, 5)
            and all(
                isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
                for x in self.leaf
            )
        ):
            raise ValueError(
                f"the expert's leaf is three or five finite numbers, not {self.leaf!r}"
            )

    def __call__(self, v: View, rng: random.Random) -> Action:
        """Search over determinized deals (see above)."""
        candidates = expert_candidates(v, rng)
        if len(candidates) == 1:
            return candidates[0]
        sims = expert_simulations(v.variant.id, v.players, self.budget, self.circuits)
        margin, z = self.test(v.variant.id)
        drop = (margin, z) if self.prune else None
        infer = EXPERT_INFER[v.variant.id] if self.infer is None else self.infer
        win = EXPERT_WINS[v.variant.id] if self.win is None else self.win
        scores = expert_scores(
            v, rng, candidates, sims, self.circuits, drop, self.fitted, self.leaf, infer, win
        )
        return candidates[expert_choice(scores, margin, z)]

    def test(self, variant: str) -> tuple[float, float]:
        """The test to leave strong's choice in ``variant``: ``(margin, z)``, the expert's own
        where it has them, the variant's (:data:`EXPERT_TESTS`) where not."""
        margin, z = EXPERT_TESTS[variant]
        return (
            margin if self.margin is None else self.margin,
            z if self.z is None else self.z,
        )


def make_expert(
    budget: float = EXPERT_BUDGET,
    circuits: int = EXPERT_CIRCUITS,
    margin: float | None = None,
    z: float | None = None,
    prune: bool = True,
    fitted: bool = True,
    leaf: Leaf | None = None,
    infer: bool | None = None,
    win: float | None = None,
) -> Policy:
    """The expert policy with another budget per move (seconds of the reference machine), and
    other settings (see :class:`Expert`)."""
    return Expert(budget, circuits, margin, z, prune, fitted, leaf, infer, win)


#: The expert policy with the default budget.
expert = make_expert()

POLICIES: dict[str, Policy] = {
    "random": random_policy,
    "greedy": greedy,
    "strong": strong,
    "expert": expert,
}
