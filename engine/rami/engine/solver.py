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

Questions about splits that lay every card (a cover) or all but one (a finish, a declaration)
walk only those splits, in the search's order, so they find what it would find, sooner; and
bit tests on the hand rule out most openings and finishes before any search.

>>> from rami.engine.cards import parse_cards
>>> hand = parse_cards("3d 4d 5d 4d 3d Ks Kd Kh 7c 8c 9c 10c Jc")
>>> deadwood(hand, PORTUGUESE_VALUES)
7
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import reduce
from operator import or_
from typing import TypeVar

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
    "clean_opening_value",
    "clean_set_and_run",
    "clear_caches",
    "deadwood",
    "declaration_cards",
    "finishes",
    "last_cards",
    "opening_bound",
    "portuguese_declaration",
    "runs_only_multiplier",
]

FLAG_SET = 1  # the split holds a clean set
FLAG_RUN = 2  # the split holds a clean (natural) run
FLAG_LEFT = 4  # the split leaves at least one card over
_NEG = -(10**9)
_T = TypeVar("_T")

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


# An option is a meld that holds the lowest card of a (sub-)hand, as a tuple:
# (delta, flags, value, size, kind, lo, cards) — ``delta`` is what taking it subtracts from the
# packed key, ``value`` its opening value when clean, ``cards`` the meld's cards in order.
_Opt = tuple[int, int, int, int, str, int, tuple[int, ...]]

# The options of a sub-hand do not depend on what a split is worth, so every search shares them.
_OPTIONS: dict[int, tuple[_Opt, ...]] = {}
_OPTIONS_CAP = 60_000
_FACE_BIT: tuple[int, ...] = tuple(1 << (2 * _POS[f]) for f in range(52))
# The low bit of every position: ``(faces | faces >> 1) & _PRESENT`` marks the faces held.
_PRESENT = sum(1 << (2 * p) for p in range(52))


def _relevant(pos: int) -> int:
    """The positions whose presence decides the options of the card at ``pos`` when it is the
    lowest of a hand: itself and the rest of its suit above it (the ace included, walked
    last), and its rank in the suits above."""
    face = _ORDER[pos]
    suit, rank0 = divmod(face, 13)
    mask = sum(1 << (2 * p) for p in range(pos, 13 * suit + 13))
    return mask | sum(_FACE_BIT[t * 13 + rank0] for t in range(suit + 1, 4))


_RELEVANT: tuple[int, ...] = tuple(_relevant(p) for p in range(52))
#: The positions of the same rank in the suits above, per position.
_SAME_ABOVE: tuple[int, ...] = tuple(
    sum(_FACE_BIT[t * 13 + _ORDER[p] % 13] for t in range(_ORDER[p] // 13 + 1, 4))
    for p in range(52)
)


def _any_option(present: int, pos: int, jokers: int) -> bool:
    """Whether any meld can hold the lowest card (at ``pos``), from which faces are
    ``present``: most sub-hands met once a joker is spent have none, and this says so with a
    few bit tests instead of building the (empty) list."""
    if (present & _SAME_ABOVE[pos]).bit_count() + jokers >= 2:
        return True  # a set
    rank = _ORDER[pos] % 13 + 1
    if rank == 1:
        return jokers >= 2  # an ace walked last runs only with two jokers
    if jokers >= 2:
        return True  # the card and two jokers
    # The next two ranks up (the king's next is the ace), and the ace for A-2-3.
    up1 = present >> (2 * pos + 2) & 1
    up2 = present >> (2 * pos + 4) & 1 if rank <= 12 else 0
    ace = present >> (2 * (pos - rank + 14)) & 1
    if jokers == 0:
        return bool(up1 and up2) or (rank == 2 and bool(ace and up1))
    return bool(up1 or up2) or (rank <= 3 and bool(ace))


def _options(key: int, jokers_per_meld: int) -> tuple[_Opt, ...]:
    """Every meld (up to which cards it takes) that holds the lowest card of ``key``."""
    faces = key & _FACE_MASK
    pos = ((faces & -faces).bit_length() - 1) >> 1
    jokers = min(key >> _JOKER_SHIFT, jokers_per_meld)
    # The options depend only on which of the relevant faces are held (not how many, nor
    # anything else of the hand) and on the jokers one meld may use: sub-hands that differ
    # elsewhere share them.
    present = (faces | faces >> 1) & _PRESENT & _RELEVANT[pos]
    cache_key = present << 2 | jokers
    hit = _OPTIONS.get(cache_key)
    if hit is not None:
        return hit
    if len(_OPTIONS) > _OPTIONS_CAP:
        _OPTIONS.clear()
    if not _any_option(present, pos, jokers):
        _OPTIONS[cache_key] = ()
        return ()
    build = _build_options if jokers else _build_clean_options
    _OPTIONS[cache_key] = result = build(key, pos, jokers)
    return result


#: The opening value of the clean run ``lo..hi`` is ``_RUN_VALUE[hi] - _RUN_VALUE[lo - 1]``
#: (the ace low counts 1, high 10).
_RUN_VALUE: tuple[int, ...] = tuple(
    sum(1 if p == 1 else rank_value(p, 10) for p in range(1, hi + 1)) for hi in range(15)
)


def _build_clean_options(key: int, pos: int, jokers: int = 0) -> tuple[_Opt, ...]:
    """:func:`_build_options` without jokers, the same options in the same order, found
    directly: the sets of the rank in the suits above, then the runs up from the card (and
    from a low ace) as far as the suit holds every next rank."""
    face = _ORDER[pos]
    suit, rank0 = divmod(face, 13)
    rank = rank0 + 1
    out: list[_Opt] = []
    others = [t * 13 + rank0 for t in range(suit + 1, 4) if key >> (2 * _POS[t * 13 + rank0]) & 3]
    if len(others) >= 2:
        unit = rank_value(rank, 10)
        n = len(others)
        for mask in range(3, 1 << n):
            chosen = [others[i] for i in range(n) if mask >> i & 1]
            if len(chosen) >= 2:
                delta = _FACE_BIT[face] + sum(_FACE_BIT[f] for f in chosen)
                size = 1 + len(chosen)
                out.append((delta, FLAG_SET, unit * size, size, SET, rank, (face, *chosen)))
    if rank == 1:
        return tuple(out)
    base = suit * 13
    ace_here = bool(key >> (2 * _POS[base]) & 3)
    # The ranks held above this card, in a row: rank + 1, rank + 2, ... (14: the ace high).
    top = rank
    while top < 14 and (ace_here if top == 13 else bool(key >> (2 * _POS[base + top]) & 3)):
        top += 1
    for lo in (rank, 1) if rank == 2 and ace_here else (rank,):
        delta = _FACE_BIT[base] if lo == 1 else 0
        for p in range(rank, min(top, lo + 12) + 1):
            delta += _FACE_BIT[base + (p - 1) % 13]
            # A..K holds the same cards as 2..A, found first.
            if p - lo >= 2 and not (lo == 1 and p == 13 and top == 14):
                out.append(
                    (
                        delta,
                        FLAG_RUN,
                        _RUN_VALUE[p] - _RUN_VALUE[lo - 1],
                        p - lo + 1,
                        RUN,
                        lo,
                        tuple(base + (q - 1) % 13 for q in range(lo, p + 1)),
                    )
                )
    return tuple(out)


def _build_options(key: int, pos: int, jokers: int) -> tuple[_Opt, ...]:
    """The options of the card at ``pos``, the lowest of ``key``, with ``jokers`` usable."""
    face = _ORDER[pos]
    out: list[_Opt] = []
    seen: set[int] = set()
    suit, rank0 = divmod(face, 13)
    rank = rank0 + 1
    # Sets: the other suits are all above this one in the walk.
    others = [t * 13 + rank0 for t in range(suit + 1, 4) if key >> (2 * _POS[t * 13 + rank0]) & 3]
    n = len(others)
    unit = rank_value(rank, 10)
    for mask in range(1 << n):
        chosen = [others[i] for i in range(n) if mask >> i & 1]
        size = 1 + len(chosen)
        base_delta = _FACE_BIT[face] + sum(_FACE_BIT[f] for f in chosen)
        for j in range(jokers + 1):
            if 3 <= size + j <= 4:
                clean = j == 0
                out.append(
                    (
                        base_delta + (j << _JOKER_SHIFT),
                        FLAG_SET if clean else 0,
                        unit * size if clean else 0,
                        size + j,
                        SET,
                        rank,
                        (face, *chosen, *([52] * j)),
                    )
                )
    base = suit * 13
    if rank == 1:
        # Nothing else of this suit is left: an ace runs only with jokers.
        if jokers >= 2:
            out.append((_FACE_BIT[face] + (2 << _JOKER_SHIFT), 0, 0, 3, RUN, 1, (face, 52, 52)))
        return tuple(out)
    # Runs in which this card is the lowest natural, but for a low ace (walked last).
    held = [key >> (2 * _POS[base + r]) & 3 for r in range(13)]  # this suit, by rank - 1
    ace_here = held[0] > 0
    # available[p]: rank p (1..14) can be a natural card of the run above this one.
    available = (
        [False, ace_here] + [p > rank and held[p - 1] > 0 for p in range(2, 14)] + [ace_here]
    )
    lo = rank
    forced_low = 0
    while lo >= 1 and forced_low <= jokers:
        forced = forced_low
        hi = rank
        avail: list[int] = []
        while hi <= 14 and hi - lo < 13:
            if hi > rank:
                if available[hi]:
                    avail.append(hi)
                else:
                    forced += 1
                    if forced > jokers:
                        break
            if hi - lo >= 2:
                low = [1] if lo == 1 and ace_here else []
                _run_options(out, seen, face, base, lo, hi, rank, low + avail, jokers - forced)
            hi += 1
        lo -= 1
        if lo >= 1 and not (lo == 1 and ace_here):
            forced_low += 1
    return tuple(out)


def _run_options(
    out: list[_Opt],
    seen: set[int],
    face: int,
    base: int,
    lo: int,
    hi: int,
    rank: int,
    candidates: list[int],
    spare: int,
) -> None:
    """The runs over ``lo..hi`` holding ``face``; any available card may still be left for
    another meld, a joker standing in its place."""
    length = hi - lo + 1
    for k in range(min(spare, len(candidates)) + 1):
        for replaced in _combinations(candidates, k):
            used = [p for p in candidates if p not in replaced]
            faces = (face, *(base + (p - 1) % 13 for p in used))
            njokers = length - len(faces)
            delta = sum(_FACE_BIT[f] for f in faces) + (njokers << _JOKER_SHIFT)
            if delta in seen:
                continue
            seen.add(delta)
            clean = njokers == 0
            value = (
                sum(1 if p == 1 else rank_value(p, 10) for p in range(lo, hi + 1)) if clean else 0
            )
            stands = {rank, *used}
            cards = tuple(base + (p - 1) % 13 if p in stands else 52 for p in range(lo, hi + 1))
            out.append((delta, FLAG_RUN if clean else 0, value, length, RUN, lo, cards))


@dataclass(slots=True)
class _Search:
    objective: Objective
    jokers_per_meld: int
    memo: dict[int, dict[int, int]] = field(default_factory=dict)

    def solve(self, key: int) -> dict[int, int]:
        """Best score per flag combination (those reachable) for the packed hand ``key``."""
        memo = self.memo
        hit = memo.get(key)
        if hit is not None:
            return hit
        faces = key & _FACE_MASK
        leftover = self.objective.leftover
        if not faces:
            jokers = key >> _JOKER_SHIFT
            best = {FLAG_LEFT: jokers * leftover[52]} if jokers else {0: 0}
            memo[key] = best
            return best
        pos = ((faces & -faces).bit_length() - 1) >> 1
        best = {}
        # The lowest card is left over...
        lv = leftover[_ORDER[pos]]
        for fl, v in self.solve(key - (1 << (2 * pos))).items():
            v += lv
            fl |= FLAG_LEFT
            if v > best.get(fl, _NEG):
                best[fl] = v
        # ...or it is in one of the melds that can hold it.
        ow, cw = self.objective.opening_weight, self.objective.card_weight
        for delta, flags, value, size, _k, _l, _c in _options(key, self.jokers_per_meld):
            score = ow * value + cw * size
            for fl, v in self.solve(key - delta).items():
                v += score
                fl |= flags
                if v > best.get(fl, _NEG):
                    best[fl] = v
        memo[key] = best
        return best

    def reconstruct(self, key: int, flags: int) -> Split:
        """The melds of a split that reaches the best score for ``flags``."""
        melds: list[Meld] = []
        left: list[Card] = []
        target = self.solve(key)[flags]
        score = target
        ow, cw = self.objective.opening_weight, self.objective.card_weight
        while key:
            faces = key & _FACE_MASK
            if not faces:
                left.extend([JOKER] * (key >> _JOKER_SHIFT))
                break
            pos = ((faces & -faces).bit_length() - 1) >> 1
            face = _ORDER[pos]
            lv = self.objective.leftover[face]
            step = _find(self.solve(key - (1 << (2 * pos))), target - lv, flags, FLAG_LEFT)
            if step is not None:
                left.append(CARDS[face])
                key -= 1 << (2 * pos)
                target, flags = target - lv, step
                continue
            for delta, oflags, value, size, kind, lo, cards in _options(key, self.jokers_per_meld):
                sc = ow * value + cw * size
                step = _find(self.solve(key - delta), target - sc, flags, oflags)
                if step is not None:
                    melds.append(_meld_of(kind, lo, cards))
                    key, target, flags = key - delta, target - sc, step
                    break
            else:  # pragma: no cover - the memo says a split exists
                raise AssertionError("solver: no step reaches the memoised score")
        return Split(melds, sorted(left), score, _flags_of(melds, left))


def _find(sub: dict[int, int], value: int, want: int, adds: int) -> int | None:
    """A flag combination of the rest that, with ``adds``, makes ``want`` at ``value``."""
    for fl, v in sub.items():
        if v == value and fl | adds == want:
            return fl
    return None


def _flags_of(melds: list[Meld], left: list[Card]) -> int:
    flags = FLAG_LEFT if left else 0
    for m in melds:
        if m.is_clean:
            flags |= FLAG_SET if m.kind == SET else FLAG_RUN
    return flags


def _meld_of(kind: str, lo: int, meld: tuple[int, ...]) -> Meld:
    cards = tuple(CARDS[c] for c in meld)
    if kind == SET:
        nat = sorted(c for c in cards if c != JOKER)
        return Meld(SET, (*nat, *([JOKER] * (len(cards) - len(nat)))), -1, lo)
    suit = next(c for c in cards if c != JOKER) // 13
    return Meld(RUN, cards, suit, lo)


def _combinations(items: list[int], k: int) -> Iterator[tuple[int, ...]]:
    if k == 0:
        yield ()
        return
    for i, x in enumerate(items):
        for rest in _combinations(items[i + 1 :], k - 1):
            yield (x, *rest)


def _pack(cards: Iterable[int]) -> int:
    key = 0
    for c in cards:
        key += 1 << _JOKER_SHIFT if c == 52 else _FACE_BIT[c]
    return key


# For ``_prepare``: each card's bit in the packed key (the joker's counts jokers), and in a
# mask of 14 bits per suit (bit 0 the ace, 1..12 the 2..K, 13 the ace again above the king).
_KEY_BIT: tuple[int, ...] = (*_FACE_BIT, 1 << _JOKER_SHIFT)
_BIT14: tuple[int, ...] = (*(1 << (14 * (f // 13) + f % 13) for f in range(52)), 0)
_ACE_LOW = sum(1 << (14 * s) for s in range(4))
_RUN_STARTS = sum(1 << (14 * s + r) for s in range(4) for r in range(12))
_EVERY_SUIT = sum(1 << (14 * s) for s in range(4))


def _held(cards: Sequence[int]) -> int:
    """The natural cards, as a mask of 14 bits per suit (a joker adds nothing)."""
    return reduce(or_, map(_BIT14.__getitem__, cards), 0)


def _clean_melds(held: int) -> tuple[bool, bool]:
    """Whether the natural cards ``held`` can make a clean set, and a clean run (bit tests as
    in :func:`_meldable`)."""
    a, b, c, d = held & 0x1FFF, held >> 14 & 0x1FFF, held >> 28 & 0x1FFF, held >> 42
    x = held | (held & _ACE_LOW) << 13
    return (
        bool((a & b & c) | (a & b & d) | (a & c & d) | (b & c & d)),
        bool(x & x >> 1 & x >> 2 & _RUN_STARTS),
    )


def clean_set_and_run(cards: Sequence[int]) -> bool:
    """Whether the natural cards can make a clean set and a clean run (each on its own, maybe
    sharing cards): what every tallage opening and every moroccan finish needs. Most hands
    can't, and this says so with a few bit tests, before any search."""
    clean_set, clean_run = _clean_melds(_held(cards))
    return clean_set and clean_run


def _meldable(held: int, j: int) -> int:
    """The natural cards ``held`` that some meld could hold, with ``j`` (0 or 1) jokers usable
    in one meld.

    A card can be in a meld when three cards of its meld could be there: a run needs ``3 - j``
    of the 3 ranks of a window holding the card (any run holding it has such a window), a set
    ``3 - j`` suits of its rank. Both are bit tests on the mask of 14 bits per suit, all suits
    at once (this runs before every search, so it avoids a loop per card or per suit).
    """
    a, b, c, d = held & 0x1FFF, held >> 14 & 0x1FFF, held >> 28 & 0x1FFF, held >> 42
    if j == 0:
        sets = (a & b & c) | (a & b & d) | (a & c & d) | (b & c & d)
    else:
        sets = (a & b) | (a & c) | (a & d) | (b & c) | (b & d) | (c & d)
    x = held | (held & _ACE_LOW) << 13
    y, z = x >> 1, x >> 2
    w = (x & y & z if j == 0 else (x & y) | (x & z) | (y & z)) & _RUN_STARTS  # 3-rank windows
    run = (w | w << 1 | w << 2) & x
    return (run | (run >> 13) & _ACE_LOW | sets * _EVERY_SUIT) & held


def _prepare(
    cards: Sequence[int], jokers_per_meld: int, held: int | None = None
) -> tuple[int, list[int]]:
    """The packed key of the cards that some meld of this hand could hold, and the cards that
    no meld can hold (left over in every split, so the search need not walk them); ``held`` is
    ``_held(cards)``, when the caller has it."""
    jokers = cards.count(52)
    j = min(jokers, jokers_per_meld)
    if j >= 2:  # a card and two jokers make a meld
        return sum(map(_KEY_BIT.__getitem__, cards)), []
    if held is None:
        held = _held(cards)
    meldable = _meldable(held, j)
    if not meldable and not jokers:
        return 0, list(cards)
    key = sum(map(_KEY_BIT.__getitem__, cards))
    if meldable == held:
        return key, []
    alone = [card for card in cards if not meldable & _BIT14[card] and card != 52]
    return key - sum(map(_KEY_BIT.__getitem__, alone)), alone


# Searches are pure functions of (objective, jokers per meld, cards): the memo of each pair is
# kept between calls, since a player's successive hands share most of their sub-hands. It is
# dropped whole when it grows past its cap; and the memos of all searches together hold at
# most _MEMO_TOTAL entries (some 340 bytes each), the least recently used dropped first. That
# keeps memory bounded, and results unchanged. A server plays every variant's bots in one
# process, a dozen objectives: with 100,000 entries a search and no bound on them together,
# their memos grew to 200 MB in minutes of play. Bots played no faster with the larger caps
# (the same CPU time over 450 four-seat games of strong bots with caps of 100,000, 10,000 and
# 2,000 a search; expert's over tallage deals, with 100,000 and 30,000).
_SEARCHES: dict[tuple[Objective, int], _Search] = {}
_MEMO_CAP = 30_000
_MEMO_TOTAL = 60_000
_SEARCH_CAP = 12


def clear_caches() -> None:
    """Forget every memo and meld-option cache (results do not change; only their cost)."""
    _SEARCHES.clear()
    _OPTIONS.clear()
    _COVERS.clear()
    _LONE.clear()


def _search(objective: Objective, jokers_per_meld: int) -> _Search:
    key = (objective, jokers_per_meld)
    s = _SEARCHES.pop(key, None)  # re-inserted last: the dict keeps the most recent at the end
    if s is None:
        if len(_SEARCHES) >= _SEARCH_CAP:
            del _SEARCHES[next(iter(_SEARCHES))]
        s = _Search(objective, jokers_per_meld)
    elif len(s.memo) > _MEMO_CAP:
        s.memo.clear()
    total = len(s.memo) + sum(len(other.memo) for other in _SEARCHES.values())
    if total > _MEMO_TOTAL:
        for other in _SEARCHES.values():  # the least recently used first
            total -= len(other.memo)
            other.memo.clear()
            if total <= _MEMO_TOTAL:
                break
    _SEARCHES[key] = s
    return s


def _scores(cards: Sequence[int], objective: Objective, jokers_per_meld: int) -> dict[int, int]:
    key, alone = _prepare(cards, jokers_per_meld)
    scores = _search(objective, jokers_per_meld).solve(key)
    if not alone:
        return scores
    lv = sum(objective.leftover[c] for c in alone)
    out: dict[int, int] = {}
    for fl, v in scores.items():
        fl |= FLAG_LEFT
        v += lv
        if v > out.get(fl, _NEG):
            out[fl] = v
    return out


def best_split(
    cards: Sequence[int],
    objective: Objective,
    *,
    need: int = 0,
    forbid: int = 0,
    jokers_per_meld: int = 1,
) -> Split | None:
    """The best-scoring split whose flags include ``need`` and exclude ``forbid``."""
    key, alone = _prepare(cards, jokers_per_meld)
    # The cards no meld can hold are left over in every split: they add their value and
    # FLAG_LEFT to what the search finds for the others.
    extra = FLAG_LEFT if alone else 0
    lv = sum(objective.leftover[c] for c in alone) if alone else 0
    if not key:  # nothing to search: every card is left over
        if extra & need != need or extra & forbid:
            return None
        return Split([], sorted(CARDS[c] for c in alone), lv, extra)
    search = _search(objective, jokers_per_meld)
    best_flags, best = -1, _NEG
    for fl, v in search.solve(key).items():
        total = fl | extra
        if total & need == need and not total & forbid and v + lv > best:
            best_flags, best = fl, v + lv
    if best_flags < 0:
        return None
    split = search.reconstruct(key, best_flags)
    if alone:
        split.left = sorted([*split.left, *(CARDS[c] for c in alone)])
        split.score += lv
        split.flags |= FLAG_LEFT
    return split


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
    for fl, v in scores.items():
        if (not need_run or fl & FLAG_RUN) and v > best:
            best = v
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


# -- splits that lay every card, or all but one ----------------------------------------------
#
# A cover (every card laid) and a finish or declaration (all but one) only ask which flags such
# splits can have. Their own walk is far shorter than a search of every split: a card left
# over ends it (or is the one card left), so only the sub-hands whose lower cards are all laid
# are met. It tries the melds in the search's order and keeps the flags in the order the search
# first finds them, so :func:`cover` picks and rebuilds the very split that the best split with
# an objective of zeros and FLAG_LEFT forbidden would.

#: Per jokers per meld: the flags of the covers of a packed hand, in the search's order.
_COVERS: dict[int, dict[int, tuple[int, ...]]] = {}
#: Per jokers per meld: per flags of the splits of a packed hand that leave one card, the cards
#: they can leave.
_LONE: dict[int, dict[int, dict[int, frozenset[int]]]] = {}


def _memo_of(table: dict[int, dict[int, _T]], jokers_per_meld: int) -> dict[int, _T]:
    """The memo of ``table`` for ``jokers_per_meld``, dropped whole past the memo cap."""
    memo = table.get(jokers_per_meld)
    if memo is None or len(memo) > _MEMO_CAP:
        memo = table[jokers_per_meld] = {}
    return memo


def _covers(key: int, jokers_per_meld: int, memo: dict[int, tuple[int, ...]]) -> tuple[int, ...]:
    """The flags of the splits of ``key`` that lay every card (as :meth:`_Search.solve` finds
    them first, in its order; a dict keeps the first insertion's place)."""
    hit = memo.get(key)
    if hit is not None:
        return hit
    found: tuple[int, ...]
    if not key & _FACE_MASK:
        found = () if key else (0,)  # jokers alone make no meld
    else:
        flags: dict[int, None] = {}
        for delta, oflags, *_ in _options(key, jokers_per_meld):
            for fl in _covers(key - delta, jokers_per_meld, memo):
                flags[fl | oflags] = None
        found = tuple(flags)
    memo[key] = found
    return found


def _lone(
    key: int,
    jokers_per_meld: int,
    memo: dict[int, dict[int, frozenset[int]]],
    covers: dict[int, tuple[int, ...]],
) -> dict[int, frozenset[int]]:
    """Per flags of the splits of ``key`` that leave exactly one card, the cards they can
    leave: the lowest card, all the others laid; or the lowest card in a meld, and one card
    left by the rest (``covers``: the memo of :func:`_covers`)."""
    hit = memo.get(key)
    if hit is not None:
        return hit
    found: dict[int, frozenset[int]] = {}
    faces = key & _FACE_MASK
    if not faces:
        if key >> _JOKER_SHIFT == 1:
            found[FLAG_LEFT] = frozenset((JOKER,))
    else:
        pos = ((faces & -faces).bit_length() - 1) >> 1
        lowest = frozenset((_ORDER[pos],))
        for fl in _covers(key - (1 << (2 * pos)), jokers_per_meld, covers):
            found[fl | FLAG_LEFT] = lowest
        for delta, oflags, *_ in _options(key, jokers_per_meld):
            for fl, cards in _lone(key - delta, jokers_per_meld, memo, covers).items():
                fl |= oflags
                found[fl] = found[fl] | cards if fl in found else cards
    memo[key] = found
    return found


def can_cover(cards: Sequence[int], need: int, *, jokers_per_meld: int = 1) -> bool:
    """True when every card fits in melds whose flags include ``need``."""
    key, alone = _prepare(cards, jokers_per_meld)
    if alone:
        return False
    covers = _covers(key, jokers_per_meld, _memo_of(_COVERS, jokers_per_meld))
    return any(fl & need == need for fl in covers)


def cover(cards: Sequence[int], need: int, *, jokers_per_meld: int = 1) -> Split | None:
    """A split that lays every card, with the flags in ``need``; None if there is none."""
    key, alone = _prepare(cards, jokers_per_meld)
    if alone:
        return None
    memo = _memo_of(_COVERS, jokers_per_meld)
    flags = next((fl for fl in _covers(key, jokers_per_meld, memo) if fl & need == need), None)
    if flags is None:
        return None
    # Rebuilt as _Search.reconstruct would: at each step the first meld after which the rest
    # has a cover that makes the flags.
    melds: list[Meld] = []
    while key:
        for delta, oflags, _v, _s, kind, lo, meld in _options(key, jokers_per_meld):
            rest = next(
                (fl for fl in _covers(key - delta, jokers_per_meld, memo) if fl | oflags == flags),
                None,
            )
            if rest is not None:
                melds.append(_meld_of(kind, lo, meld))
                key, flags = key - delta, rest
                break
        else:  # pragma: no cover - the memo says a cover exists
            raise AssertionError("solver: no meld leads to the cover found")
    return Split(melds, [], 0, _flags_of(melds, []))


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
#: The most a card adds to an opening's value (an ace: 10 high, 1 low; a joker: nothing).
_OPENING_MOST: tuple[int, ...] = (*(rank_value(f % 13 + 1, 10) for f in range(52)), 0)


def opening_bound(cards: Sequence[int]) -> int:
    """An upper bound of the value of any opening of ``cards`` (a split holding a clean set
    and a clean run): 0 when the cards can make no clean set or no clean run, else what the
    cards that some clean meld could hold are worth (melds with a joker count nothing), found
    without a search. Below the bar, no opening needs looking for."""
    held = _held(cards)
    if not all(_clean_melds(held)):
        return 0
    meldable = _meldable(held, 0)
    return sum(_OPENING_MOST[c] for c in cards if meldable & _BIT14[c])  # a joker's bit is 0


_CLEAN_VALUE = Objective(tuple([0] * 53), opening_weight=1)


def clean_opening_value(cards: Sequence[int]) -> int:
    """The most that the clean melds of a split holding a clean set and a clean run are worth
    (0 when none does): an upper bound of the value of any opening of ``cards``, tighter than
    :func:`opening_bound` (which counts every card some clean meld could hold, as if all those
    melds could be laid together) and dearer, found with a search of the natural cards alone.
    Jokers add nothing to an opening's value; without them the search is short, and being the
    same search for every hand, its memo serves the next hands."""
    faces = [c for c in cards if c != JOKER]
    both = FLAG_SET | FLAG_RUN
    scores = _scores(faces, _CLEAN_VALUE, 0)
    return max((v for fl, v in scores.items() if fl & both == both), default=0)


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
    for c in last_cards(cards, need, jokers_per_meld=jokers_per_meld):
        rest = list(cards)
        rest.remove(c)
        if not rest:
            continue
        split = cover(rest, need, jokers_per_meld=jokers_per_meld)
        if split is not None:
            out[CARDS[c]] = split
    return out


def last_cards(cards: Sequence[int], need: int, *, jokers_per_meld: int = 1) -> list[Card]:
    """The distinct cards that may be the one left when all the others are laid in melds whose
    flags include ``need`` (a whole-hand finish, a portuguese declaration): every card that is,
    and none that is not, but for a card that no meld can hold (it must be the one left, and is
    the one answer, unchecked); none when no split leaves a single card.

    A clean set or run that ``need`` asks for and the cards cannot make rules out every finish
    (the cheapest test, first), as do two cards that no meld can hold; else the splits that
    leave one card are walked for the cards they leave.
    """
    held = _held(cards)
    clean_set, clean_run = _clean_melds(held)
    if (need & FLAG_SET and not clean_set) or (need & FLAG_RUN and not clean_run):
        return []
    key, alone = _prepare(cards, jokers_per_meld, held)
    if len(alone) > 1:
        return []
    if alone:
        return [CARDS[alone[0]]]
    lone = _lone(
        key, jokers_per_meld, _memo_of(_LONE, jokers_per_meld), _memo_of(_COVERS, jokers_per_meld)
    )
    found: set[int] = set()
    for fl, left in lone.items():
        if fl & need == need:
            found |= left
    return sorted(CARDS[c] for c in found)


def declaration_cards(
    hand: Sequence[Card], *, jokers_per_meld: int = 1
) -> tuple[tuple[Card, int], ...]:
    """Each card (in card order) whose face-down leaves 13 complete cards, with the
    declaration's multiplier (RULES.md §2: ×1, or ×2, ×3, ×4 for natural runs only)."""
    if len(hand) != 14:
        return ()
    out = []
    for card in sorted(last_cards(hand, FLAG_RUN, jokers_per_meld=jokers_per_meld)):
        rest = list(hand)
        rest.remove(card)
        found = portuguese_declaration(rest, jokers_per_meld=jokers_per_meld)
        if found is not None:
            out.append((card, found[1]))
    return tuple(out)
