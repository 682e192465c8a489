"""A brute-force reference for the solver: every split of a small hand, checked by hand.

Written from RULES.md §1–§4 alone, without the engine's meld code, so that it can disagree with
it. Cards are the engine's integers (``suit * 13 + rank - 1``; the joker is 52). A hand is
split into melds and cards left over in every possible way (:func:`splits`), and each question
the solver answers is then a plain minimum or maximum over that list. It is exponential: keep
hands to about ten cards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

JOKER = 52

#: portuguese (RULES.md §2): A 20, K Q J 10, pips face value, joker 0.
PORTUGUESE = tuple([*(20 if r == 1 else min(r, 10) for _ in range(4) for r in range(1, 14)), 0])
#: tallage and simple (RULES.md §3): A K Q J 10, pips face value, joker 20.
MOROCCAN = tuple([*(10 if r == 1 else min(r, 10) for _ in range(4) for r in range(1, 14)), 20])


def rank(card: int) -> int:
    """1 (ace) to 13 (king)."""
    return card % 13 + 1


def suit(card: int) -> int:
    """0 to 3 (♣ ♦ ♥ ♠)."""
    return card // 13


@dataclass(frozen=True)
class RefMeld:
    """A valid meld: its cards (sorted), ``set`` or ``run``, and whether it holds no joker."""

    cards: tuple[int, ...]
    kind: str
    clean: bool

    def opening_value(self) -> int:
        """Worth toward an opening (§3): joker melds 0; an ace 1 at a run's low end, else 10."""
        if not self.clean:
            return 0
        ranks = [rank(c) for c in self.cards]
        if self.kind == "set":
            return len(ranks) * (10 if ranks[0] == 1 else min(ranks[0], 10))
        low_ace = 2 in ranks  # a clean run holding an ace holds 2 (A-2-3) or K (Q-K-A)
        return sum((1 if low_ace else 10) if r == 1 else min(r, 10) for r in ranks)


def meld_kind(cards: Sequence[int], jokers_per_meld: int = 1) -> str | None:
    """``set`` or ``run`` if ``cards`` make a valid meld (RULES.md §1), else None.

    A meld that could be read both ways (one natural and two jokers) is called a run; it is
    not clean either way, so nothing downstream tells the two apart.
    """
    naturals = [c for c in cards if c != JOKER]
    jokers = len(cards) - len(naturals)
    if len(cards) < 3 or not naturals or jokers > jokers_per_meld:
        return None
    ranks = [rank(c) for c in naturals]
    suits = [suit(c) for c in naturals]
    if len(set(suits)) == 1 and len(set(ranks)) == len(ranks) and len(cards) <= 13:
        # The ace is 1 or 14, never both: the run is a window of len(cards) consecutive ranks
        # in 1..14 around the naturals, and such a window exists when they span no more.
        for ace in (1, 14):
            placed = [ace if r == 1 else r for r in ranks]
            if max(placed) - min(placed) + 1 <= len(cards):
                return "run"
    if len(set(ranks)) == 1 and len(set(suits)) == len(suits) and len(cards) <= 4:
        return "set"
    return None


def valid_melds(hand: Sequence[int], jokers_per_meld: int = 1) -> list[RefMeld]:
    """Every distinct sub-multiset of ``hand`` that is a valid meld.

    A meld's naturals share a suit (a run) or a rank (a set), so only those groups, each with
    up to ``jokers_per_meld`` jokers, are tried; :func:`meld_kind` still judges each one.
    """
    naturals = sorted(c for c in hand if c != JOKER)
    jokers = min(len(hand) - len(naturals), jokers_per_meld)
    groups = [[c for c in naturals if suit(c) == s] for s in range(4)]
    groups += [[c for c in naturals if rank(c) == r] for r in range(1, 14)]
    found: dict[tuple[int, ...], RefMeld] = {}
    for group in groups:
        for size in range(1, len(group) + 1):
            for combo in combinations(group, size):
                for j in range(jokers + 1):
                    cards = (*combo, *([JOKER] * j))
                    kind = meld_kind(cards, jokers_per_meld)
                    if kind is not None and cards not in found:
                        found[cards] = RefMeld(cards, kind, j == 0)
    return list(found.values())


@dataclass(frozen=True)
class RefSplit:
    """One way to split a hand: melds and the cards left over."""

    melds: tuple[RefMeld, ...]
    left: tuple[int, ...]

    @property
    def clean_set(self) -> bool:
        """A clean set is among the melds."""
        return any(m.clean and m.kind == "set" for m in self.melds)

    @property
    def clean_run(self) -> bool:
        """A clean (natural) run is among the melds."""
        return any(m.clean and m.kind == "run" for m in self.melds)


def _contains(big: Counter[int], small: Sequence[int]) -> bool:
    need = Counter(small)
    return all(big[c] >= n for c, n in need.items())


def splits(hand: Sequence[int], jokers_per_meld: int = 1) -> Iterator[RefSplit]:
    """Every split of ``hand`` into melds and leftovers (a few more than once: with two copies
    of a card, "leave the first, meld the second" and the reverse give the same split).

    The lowest card still unplaced is either left over or goes into one of the melds that hold
    it; the rest is split the same way.
    """
    melds = valid_melds(hand, jokers_per_meld)

    def walk(rest: Counter[int], taken: list[RefMeld], left: list[int]) -> Iterator[RefSplit]:
        if not +rest:
            yield RefSplit(tuple(taken), tuple(sorted(left)))
            return
        low = min(c for c, n in rest.items() if n)
        rest[low] -= 1
        yield from walk(rest, taken, [*left, low])
        rest[low] += 1
        for m in melds:
            if m.cards[0] == low and _contains(rest, m.cards):
                rest.subtract(m.cards)
                yield from walk(rest, [*taken, m], left)
                rest.update(m.cards)

    return walk(Counter(hand), [], [])


# -- the solver's questions, answered by looking at every split --------------------------------


@dataclass(frozen=True)
class Answers:
    """Everything the solver says about one small hand, computed by brute force."""

    portuguese_deadwood: int
    moroccan_deadwood: int
    #: Keyed by (needs a clean set, needs a clean run): can every card be laid so?
    covers: dict[tuple[bool, bool], bool]
    #: None if the hand can't be declared; else the portuguese multiplier 1–4.
    declaration: int | None
    #: None if no opening exists; else (best opening value, most cards laid at that value).
    opening: tuple[int, int] | None
    #: The cards that can be the last discard of a whole-hand finish.
    finishes: frozenset[int]


def answers(hand: Sequence[int], jokers_per_meld: int = 1) -> Answers:
    """Answer every question of the solver about ``hand`` from the full list of its splits."""
    hand = list(hand)
    port_total = sum(PORTUGUESE[c] for c in hand)
    port = port_total
    mor = sum(MOROCCAN[c] for c in hand)
    covers = {(s, r): False for s in (False, True) for r in (False, True)}
    runs_only = False
    opening: tuple[int, int] | None = None
    finishes: set[int] = set()
    for sp in splits(hand, jokers_per_meld):
        # portuguese: melds count only when the split holds a natural run (§2).
        if sp.clean_run:
            port = min(port, sum(PORTUGUESE[c] for c in sp.left))
        mor = min(mor, sum(MOROCCAN[c] for c in sp.left))
        if not sp.left:
            for s, r in covers:
                if (sp.clean_set or not s) and (sp.clean_run or not r):
                    covers[s, r] = True
            if all(m.clean and m.kind == "run" for m in sp.melds):
                runs_only = True
        if sp.left and sp.clean_set and sp.clean_run:
            value = sum(m.opening_value() for m in sp.melds)
            laid = len(hand) - len(sp.left)
            if opening is None or (value, laid) > opening:
                opening = (value, laid)
        if len(sp.left) == 1 and len(hand) > 1 and sp.clean_set and sp.clean_run:
            finishes.add(sp.left[0])
    return Answers(
        port,
        mor,
        covers,
        _declaration(hand, covers[False, True], runs_only),
        opening,
        frozenset(finishes),
    )


def _declaration(hand: list[int], complete: bool, runs_only: bool) -> int | None:
    """The portuguese multiplier (§2): ×4 one suit, ×3 one colour, ×2 both, when all the cards
    are natural runs; ×1 for any other complete hand; None when it is not complete."""
    if not complete:
        return None
    if not runs_only:
        return 1
    suits = {suit(c) for c in hand}
    if len(suits) == 1:
        return 4
    reds = {s in (1, 2) for s in suits}
    return 3 if len(reds) == 1 else 2
