"""The solver: exact best splits of a hand into melds.

One search serves every question the variants ask (RULES.md §2–§4). It walks the hand from its
lowest card (suit by suit, 2 up to K, the ace last so it can close a run high or open one low);
that card is either left over or put in one of the melds that can hold it; the rest of the hand
is solved the same way, and every sub-hand is solved once (memoised on a packed count vector).

Every result is kept per *flag combination* — whether the split holds a clean set (``S``),
a clean run (``R``), and leaves at least one card over (``L``) — because the rules ask for
different ones: a portuguese hand counts its sets only beside a natural run, a tallage opening
needs a clean set and a clean run and must keep a card to discard, a finish needs everything
but one card laid.

>>> from rami.engine.cards import parse_cards
>>> hand = parse_cards("3d 4d 5d 4d 3d Ks Kd Kh 7c 8c 9c 10c Jc")
>>> deadwood(hand, PORTUGUESE_VALUES)
7
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from .cards import CARDS, JOKER, Card
from .melds import RUN, SET, Meld, card_value, rank_value

__all__ = [
    "FLAG_LEFT",
    "FLAG_RUN",
    "FLAG_SET",
    "MOROCCAN_VALUES",
    "PORTUGUESE_VALUES",
    "Objective",
    "Split",
    "best_opening",
    "best_split",
    "can_cover",
    "deadwood",
    "finishes",
    "portuguese_declaration",
    "runs_only_multiplier",
]

FLAG_SET = 1  # the split holds a clean set
FLAG_RUN = 2  # the split holds a clean (natural) run
FLAG_LEFT = 4  # the split leaves at least one card over
_NEG = -(10**9)

#: Hand values in ``portuguese``: A 20, K Q J 10, pips face value, joker 0 (RULES.md §2).
PORTUGUESE_VALUES: tuple[int, ...] = tuple(card_value(c, 20, 0) for c in range(53))
#: Hand values in ``tallage`` and ``simple``: A K Q J 10, pips face value, joker 20 (§3).
MOROCCAN_VALUES: tuple[int, ...] = tuple(card_value(c, 10, 20) for c in range(53))

# Processing order: suit by suit, ranks 2..K then the ace. Position i in the order is bits
# 2i..2i+1 of the packed key; the jokers sit above the 52 faces.
_ORDER: tuple[int, ...] = tuple(s * 13 + r for s in range(4) for r in (*range(1, 13), 0))
_POS: tuple[int, ...] = tuple(_ORDER.index(f) for f in range(52))
_JOKER_SHIFT = 104
_FACE_MASK = (1 << _JOKER_SHIFT) - 1


@dataclass(frozen=True, slots=True)
class Objective:
    """What a split is worth: ``leftover[card]`` per card left over, plus per meld laid
    ``opening_weight`` × its opening value (clean melds only) + ``card_weight`` × its size."""

    leftover: tuple[int, ...]
    opening_weight: int = 0
    card_weight: int = 0


@dataclass(slots=True)
class Split:
    """A split of a hand: the melds and the cards left over."""

    melds: list[Meld]
    left: list[Card]
    score: int = 0
    flags: int = 0

    @property
    def has_clean_set(self) -> bool:
        """True when a clean set is among the melds."""
        return bool(self.flags & FLAG_SET)

    @property
    def has_clean_run(self) -> bool:
        """True when a clean run is among the melds."""
        return bool(self.flags & FLAG_RUN)


@dataclass(slots=True)
class _Option:
    faces: tuple[int, ...]  # natural faces the meld takes, f included
    jokers: int
    flags: int
    score: int
    meld: tuple[int, ...]  # the meld's cards in order (jokers as 52); for sets, naturals first
    kind: str
    lo: int


@dataclass(slots=True)
class _Search:
    objective: Objective
    jokers_per_meld: int
    memo: dict[int, list[int]] = field(default_factory=dict)

    def solve(self, counts: list[int], key: int) -> list[int]:
        """Best score per flag combination (``_NEG`` where none) for the cards in ``counts``."""
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        faces = key & _FACE_MASK
        best = [_NEG] * 8
        if not faces:
            jokers = key >> _JOKER_SHIFT
            if jokers:
                best[FLAG_LEFT] = jokers * self.objective.leftover[52]
            else:
                best[0] = 0
            self.memo[key] = best
            return best
        pos = ((faces & -faces).bit_length() - 1) >> 1
        face = _ORDER[pos]
        # The lowest card is left over...
        counts[face] -= 1
        sub = self.solve(counts, key - (1 << (2 * pos)))
        counts[face] += 1
        lv = self.objective.leftover[face]
        for fl in range(8):
            if sub[fl] > _NEG:
                v = sub[fl] + lv
                if v > best[fl | FLAG_LEFT]:
                    best[fl | FLAG_LEFT] = v
        # ...or it is in one of the melds that can hold it.
        for opt in self._options(counts, key, face):
            sub_key = key - (opt.jokers << _JOKER_SHIFT)
            for f in opt.faces:
                counts[f] -= 1
                sub_key -= 1 << (2 * _POS[f])
            sub = self.solve(counts, sub_key)
            for f in opt.faces:
                counts[f] += 1
            for fl in range(8):
                if sub[fl] > _NEG:
                    v = sub[fl] + opt.score
                    nf = fl | opt.flags
                    if v > best[nf]:
                        best[nf] = v
        self.memo[key] = best
        return best

    def _options(self, counts: list[int], key: int, face: int) -> Iterator[_Option]:
        """Every meld (up to which cards it takes) that holds ``face``, the lowest card."""
        jokers = min(key >> _JOKER_SHIFT, self.jokers_per_meld)
        obj = self.objective
        seen: set[tuple[tuple[int, ...], int]] = set()
        suit, rank = divmod(face, 13)
        rank += 1
        # Sets: the other suits are all above this one in the walk.
        others = [t * 13 + rank - 1 for t in range(suit + 1, 4) if counts[t * 13 + rank - 1]]
        n = len(others)
        for mask in range(1 << n):
            chosen = [others[i] for i in range(n) if mask >> i & 1]
            size = 1 + len(chosen)
            for j in range(jokers + 1):
                if 3 <= size + j <= 4:
                    clean = j == 0
                    value = rank_value(rank, 10) * size if clean else 0
                    yield _Option(
                        (face, *chosen),
                        j,
                        FLAG_SET if clean else 0,
                        obj.opening_weight * value + obj.card_weight * (size + j),
                        (face, *chosen, *([52] * j)),
                        SET,
                        rank,
                    )
        # Runs in which this card is the lowest natural, but for a low ace.
        base = suit * 13
        ace = base
        ace_here = counts[ace] > (1 if face == ace else 0)

        def available(p: int) -> bool:
            if p in (1, 14):
                return ace_here
            return p > rank and counts[base + p - 1] > 0

        if rank == 1:
            # Nothing else of this suit is left: an ace runs only with jokers.
            if jokers >= 2:
                yield _Option((face,), 2, 0, obj.card_weight * 3, (face, 52, 52), RUN, 1)
            return
        lo = rank
        forced_low = 0
        while lo >= 1 and forced_low <= jokers:
            forced = forced_low
            hi = rank
            avail: list[int] = []
            while hi <= 14 and hi - lo < 13:
                if hi > rank:
                    if available(hi):
                        avail.append(hi)
                    else:
                        forced += 1
                        if forced > jokers:
                            break
                if hi - lo >= 2:
                    low = [1] if lo == 1 and ace_here else []
                    yield from self._run_options(
                        face, base, lo, hi, rank, low + avail, jokers - forced, seen
                    )
                hi += 1
            lo -= 1
            if lo >= 1 and not (lo == 1 and ace_here):
                forced_low += 1

    def _run_options(
        self,
        face: int,
        base: int,
        lo: int,
        hi: int,
        rank: int,
        candidates: list[int],
        spare: int,
        seen: set[tuple[tuple[int, ...], int]],
    ) -> Iterator[_Option]:
        # Any available card may still be left for another meld, a joker standing in.
        for k in range(min(spare, len(candidates)) + 1):
            for replaced in _combinations(candidates, k):
                used = [p for p in candidates if p not in replaced]
                faces = (face, *(base + (p - 1) % 13 for p in used))
                njokers = (hi - lo + 1) - len(faces)
                sig = (tuple(sorted(faces)), njokers)
                if sig in seen:
                    continue
                seen.add(sig)
                clean = njokers == 0
                value = 0
                if clean:
                    value = sum(1 if p == 1 else rank_value(p, 10) for p in range(lo, hi + 1))
                stands = {rank, *used}
                cards = tuple(
                    base + (p - 1) % 13 if p in stands else 52 for p in range(lo, hi + 1)
                )
                yield _Option(
                    faces,
                    njokers,
                    FLAG_RUN if clean else 0,
                    self.objective.opening_weight * value
                    + self.objective.card_weight * (hi - lo + 1),
                    cards,
                    RUN,
                    lo,
                )

    def reconstruct(self, counts: list[int], key: int, flags: int) -> Split:
        """The melds of a split that reaches the best score for ``flags``."""
        melds: list[Meld] = []
        left: list[Card] = []
        target = self.solve(counts, key)[flags]
        score = target
        counts = list(counts)
        while key:
            faces = key & _FACE_MASK
            if not faces:
                left.extend([JOKER] * (key >> _JOKER_SHIFT))
                break
            pos = ((faces & -faces).bit_length() - 1) >> 1
            face = _ORDER[pos]
            counts[face] -= 1
            sub = self.solve(counts, key - (1 << (2 * pos)))
            lv = self.objective.leftover[face]
            step = _find(sub, target - lv, flags, FLAG_LEFT)
            if step is not None:
                left.append(CARDS[face])
                key -= 1 << (2 * pos)
                target, flags = target - lv, step
                continue
            counts[face] += 1
            for opt in self._options(counts, key, face):
                sub_key = key - (opt.jokers << _JOKER_SHIFT)
                for f in opt.faces:
                    counts[f] -= 1
                    sub_key -= 1 << (2 * _POS[f])
                sub = self.solve(counts, sub_key)
                step = _find(sub, target - opt.score, flags, opt.flags)
                if step is not None:
                    melds.append(_meld_of(opt))
                    key, target, flags = sub_key, target - opt.score, step
                    break
                for f in opt.faces:
                    counts[f] += 1
            else:  # pragma: no cover - the memo says a split exists
                raise AssertionError("solver: no step reaches the memoised score")
        return Split(melds, sorted(left), score, _flags_of(melds, left))


def _find(sub: list[int], value: int, want: int, adds: int) -> int | None:
    """A flag combination of the rest that, with ``adds``, makes ``want`` at ``value``."""
    for fl in range(8):
        if sub[fl] == value and fl | adds == want:
            return fl
    return None


def _flags_of(melds: list[Meld], left: list[Card]) -> int:
    flags = FLAG_LEFT if left else 0
    for m in melds:
        if m.is_clean:
            flags |= FLAG_SET if m.kind == SET else FLAG_RUN
    return flags


def _meld_of(opt: _Option) -> Meld:
    cards = tuple(CARDS[c] for c in opt.meld)
    if opt.kind == SET:
        nat = sorted(c for c in cards if c != JOKER)
        return Meld(SET, (*nat, *([JOKER] * opt.jokers)), -1, opt.lo)
    return Meld(RUN, cards, cards[0].suit if cards[0] != JOKER else opt.faces[0] // 13, opt.lo)


def _combinations(items: list[int], k: int) -> Iterator[tuple[int, ...]]:
    if k == 0:
        yield ()
        return
    for i, x in enumerate(items):
        for rest in _combinations(items[i + 1 :], k - 1):
            yield (x, *rest)


def _pack(cards: Iterable[int]) -> tuple[list[int], int]:
    counts = [0] * 53
    key = 0
    for c in cards:
        counts[c] += 1
        key += 1 << _JOKER_SHIFT if c == 52 else 1 << (2 * _POS[c])
    return counts, key


# Searches are pure functions of (objective, jokers per meld, cards): the memo of each pair is
# kept between calls, since a player's successive hands share most of their sub-hands. It is
# dropped whole when it grows past the cap, which keeps memory bounded and results unchanged.
_SEARCHES: dict[tuple[Objective, int], _Search] = {}
_MEMO_CAP = 100_000
_SEARCH_CAP = 12


def _search(objective: Objective, jokers_per_meld: int) -> _Search:
    key = (objective, jokers_per_meld)
    s = _SEARCHES.pop(key, None)  # re-inserted last: the dict keeps the most recent at the end
    if s is None:
        if len(_SEARCHES) >= _SEARCH_CAP:
            del _SEARCHES[next(iter(_SEARCHES))]
        s = _Search(objective, jokers_per_meld)
    elif len(s.memo) > _MEMO_CAP:
        s.memo.clear()
    _SEARCHES[key] = s
    return s


def _scores(cards: Sequence[int], objective: Objective, jokers_per_meld: int) -> list[int]:
    counts, key = _pack(cards)
    return _search(objective, jokers_per_meld).solve(counts, key)


def best_split(
    cards: Sequence[int], objective: Objective, *, need: int = 0, forbid: int = 0,
    jokers_per_meld: int = 1,
) -> Split | None:
    """The best-scoring split whose flags include ``need`` and exclude ``forbid``."""
    counts, key = _pack(cards)
    search = _search(objective, jokers_per_meld)
    scores = search.solve(counts, key)
    best_flags, best = -1, _NEG
    for fl in range(8):
        if fl & need == need and not fl & forbid and scores[fl] > best:
            best_flags, best = fl, scores[fl]
    if best_flags < 0:
        return None
    return search.reconstruct(counts, key, best_flags)


_DEADWOOD = {v: Objective(tuple(-x for x in v)) for v in (PORTUGUESE_VALUES, MOROCCAN_VALUES)}


def _deadwood_objective(values: Sequence[int]) -> Objective:
    key = tuple(values)
    obj = _DEADWOOD.get(key)
    if obj is None:
        obj = _DEADWOOD[key] = Objective(tuple(-x for x in key))
    return obj


def deadwood(
    cards: Sequence[int], values: Sequence[int], *, need_run: bool = True, jokers_per_meld: int = 1
) -> int:
    """Fewest points left over by any split (portuguese: melds count only beside a natural run).

    With ``need_run`` off, every split counts (a measure of how close a moroccan hand is).
    """
    total = sum(values[c] for c in cards)
    scores = _scores(cards, _deadwood_objective(values), jokers_per_meld)
    best = -total
    for fl in range(8):
        if (not need_run or fl & FLAG_RUN) and scores[fl] > best:
            best = scores[fl]
    return -best


def deadwood_split(
    cards: Sequence[int], values: Sequence[int], *, need_run: bool = True, jokers_per_meld: int = 1
) -> Split:
    """The split behind :func:`deadwood`: with no natural run (when needed), nothing is laid."""
    split = best_split(
        cards,
        _deadwood_objective(values),
        need=FLAG_RUN if need_run else 0,
        jokers_per_meld=jokers_per_meld,
    )
    if split is None:
        total = sum(values[c] for c in cards)
        return Split([], sorted(CARDS[c] for c in cards), -total, FLAG_LEFT if cards else 0)
    return split


_COVER = Objective(tuple([0] * 53))


def can_cover(cards: Sequence[int], need: int, *, jokers_per_meld: int = 1) -> bool:
    """True when every card fits in melds whose flags include ``need``."""
    scores = _scores(cards, _COVER, jokers_per_meld)
    return any(scores[fl] > _NEG for fl in range(8) if fl & need == need and not fl & FLAG_LEFT)


def cover(cards: Sequence[int], need: int, *, jokers_per_meld: int = 1) -> Split | None:
    """A split that lays every card, with the flags in ``need``; None if there is none."""
    return best_split(cards, _COVER, need=need, forbid=FLAG_LEFT, jokers_per_meld=jokers_per_meld)


def runs_only_multiplier(cards: Sequence[int]) -> int:
    """The portuguese multiplier of a hand made of natural runs only: 4, 3, 2; 0 if it is not.

    ×4 one suit, ×3 one colour (two suits), ×2 both colours (RULES.md §2).
    """
    if JOKER in cards:
        return 0
    suits: dict[int, list[int]] = {}
    for c in cards:
        suits.setdefault(c // 13, []).append(c)
    for suit_cards in suits.values():
        if not can_cover(suit_cards, 0):
            return 0
        # A suit's cards alone can only make runs, never sets, so a cover is all runs.
    if len(suits) == 1:
        return 4
    colours = {s in (1, 2) for s in suits}
    return 3 if len(colours) == 1 else 2


def portuguese_declaration(
    cards: Sequence[int], *, jokers_per_meld: int = 1
) -> tuple[Split, int] | None:
    """The declaration of 13 cards: its split and multiplier (1–4), or None if incomplete.

    Complete means every card in melds with at least one natural run (RULES.md §2).
    """
    mult = runs_only_multiplier(cards)
    if mult:
        melds: list[Meld] = []
        for suit in range(4):
            part = cover([c for c in cards if c // 13 == suit], 0)
            if part is not None:
                melds.extend(part.melds)
        return Split(melds, [], 0, FLAG_RUN), mult
    split = cover(cards, FLAG_RUN, jokers_per_meld=jokers_per_meld)
    if split is None:
        return None
    return split, 1


_OPENING = Objective(tuple([0] * 53), opening_weight=64, card_weight=1)


def best_opening(cards: Sequence[int], *, jokers_per_meld: int = 1) -> Split | None:
    """The tallage opening worth most (then laying most cards) that keeps a card to discard
    and holds a clean set and a clean run; its ``score // 64`` is its opening value."""
    split = best_split(
        cards, _OPENING, need=FLAG_SET | FLAG_RUN | FLAG_LEFT, jokers_per_meld=jokers_per_meld
    )
    if split is None:
        return None
    split.score = sum(m.opening_value() for m in split.melds)
    return split


def finishes(
    cards: Sequence[int], *, need: int = FLAG_SET | FLAG_RUN, jokers_per_meld: int = 1
) -> dict[Card, Split]:
    """Every whole-hand finish: for each card that can be the last discard, a split that lays
    all the others in melds holding the flags in ``need`` (a clean set and a clean run)."""
    out: dict[Card, Split] = {}
    distinct = sorted(set(cards))
    for c in distinct:
        rest = list(cards)
        rest.remove(c)
        if not rest:
            continue
        split = cover(rest, need, jokers_per_meld=jokers_per_meld)
        if split is not None:
            out[CARDS[c]] = split
    return out
