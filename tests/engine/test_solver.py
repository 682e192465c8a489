"""The solver against a brute-force reference (``reference.py``) on thousands of small hands.

Most hands are drawn from a narrow band of ranks and suits, two copies of each face, 0–2
jokers, so that melds are frequent; many are built from melds on purpose (then spoilt a
little), so that complete hands, openings and finishes are common too; some are long stretches
of one or two suits, for 13-card runs and aces at both ends. Every answer the solver gives is
checked against the reference, and every split it returns is checked to be a real split of
the hand that scores what it claims.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
import reference as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from rami.engine import solver
from rami.engine.cards import JOKER, format_cards, parse_cards
from rami.engine.melds import RUN, SET, Meld, MeldError
from rami.engine.solver import (
    FLAG_LEFT,
    FLAG_RUN,
    FLAG_SET,
    MOROCCAN_VALUES,
    PORTUGUESE_VALUES,
    Objective,
    Split,
    best_opening,
    best_split,
    can_cover,
    clean_opening_value,
    clean_set_and_run,
    cover,
    deadwood,
    deadwood_split,
    finishes,
    last_cards,
    portuguese_declaration,
)

CORPUS_SEED = 20_251
BAND_HANDS = 2_000
BUILT_HANDS = 1_500
LONG_HANDS = 300
NEEDS = (0, FLAG_SET, FLAG_RUN, FLAG_SET | FLAG_RUN)


# -- hands ------------------------------------------------------------------------------------


def _band(rng: random.Random) -> list[int]:
    """Two copies of each face of a few suits and a window of ranks (it may wrap K-A-2)."""
    suits = rng.sample(range(4), rng.choice([1, 2, 2, 3, 3, 4]))
    start, width = rng.randint(1, 13), rng.randint(3, 6)
    ranks = [(start - 1 + i) % 13 + 1 for i in range(width)]
    return [s * 13 + r - 1 for s in suits for r in ranks for _ in range(2)]


def band_hand(rng: random.Random) -> list[int]:
    """6–11 cards of a band, 0–2 of them jokers."""
    jokers = rng.choice([0, 0, 1, 1, 2])
    pool = _band(rng)
    n = min(rng.randint(6, 11) - jokers, len(pool))
    return sorted(rng.sample(pool, n)) + [JOKER] * jokers


def long_hand(rng: random.Random) -> list[int]:
    """9–13 cards of one or two suits over a wide window: long runs, both aces, 0–3 jokers
    (a moroccan hand may hold up to four); a quarter hold one copy of each face only, so that
    runs of 10 to 13 cards are common."""
    suits = rng.sample(range(4), rng.choice([1, 1, 2]))
    start, width = rng.randint(1, 13), rng.randint(8, 13)
    copies = 1 if rng.random() < 0.25 else 2
    pool = [s * 13 + (start - 1 + i) % 13 for s in suits for i in range(width)] * copies
    jokers = rng.choice([0, 1, 1, 2, 3])
    n = min(rng.randint(9, 13) - jokers, len(pool))
    return sorted(rng.sample(pool, n)) + [JOKER] * jokers


def _random_meld(rng: random.Random, joker: bool) -> list[int]:
    if rng.random() < 0.5:
        length = rng.randint(3, 5)
        lo = rng.randint(1, 15 - length)  # 14 is the high ace
        s = rng.randrange(4)
        cards = [s * 13 + (r - 1) % 13 for r in range(lo, lo + length)]
    else:
        r = rng.randrange(13)
        cards = [s * 13 + r for s in rng.sample(range(4), rng.randint(3, 4))]
    if joker:
        cards[rng.randrange(len(cards))] = JOKER
    return cards


def built_hand(rng: random.Random) -> list[int]:
    """2–3 melds (often a clean set and a clean run), a loose card or two, sometimes spoilt."""
    for _ in range(100):
        jokers_left = 2
        hand: list[int] = []
        for _ in range(rng.randint(2, 3)):
            joker = jokers_left > 0 and rng.random() < 0.3
            jokers_left -= joker
            hand.extend(_random_meld(rng, joker))
        for _ in range(rng.choice([0, 1, 1, 2])):
            hand.append(rng.choice([*_band(rng), JOKER]))
        if rng.random() < 0.3:
            hand.remove(rng.choice(hand))
        counts = Counter(hand)
        if len(hand) <= 13 and counts[JOKER] <= 2 and all(counts[c] <= 2 for c in range(52)):
            return sorted(hand)
    raise AssertionError("no hand built")  # pragma: no cover


@dataclass(frozen=True)
class Case:
    """A hand, the jokers a meld may hold, and the reference's answers."""

    hand: tuple[int, ...]
    jpm: int
    want: ref.Answers

    def __str__(self) -> str:
        return f"{format_cards(self.hand)} (jokers per meld {self.jpm})"


def _corpus() -> list[Case]:
    rng = random.Random(CORPUS_SEED)
    hands = [band_hand(rng) for _ in range(BAND_HANDS)]
    hands += [built_hand(rng) for _ in range(BUILT_HANDS)]
    hands += [long_hand(rng) for _ in range(LONG_HANDS)]
    cases = []
    for hand in hands:
        jpm = 2 if hand.count(JOKER) >= 2 and rng.random() < 0.5 else 1
        cases.append(Case(tuple(hand), jpm, ref.answers(hand, jpm)))
    return cases


@pytest.fixture(scope="module")
def corpus() -> list[Case]:
    return _corpus()


def _check_all(cases: Sequence[Case], check: Callable[[Case], object]) -> None:
    """Run ``check`` on every case; fail listing the first few disagreements."""
    bad = []
    for case in cases:
        got = check(case)
        if got is not None:
            bad.append(f"{case}: {got}")
    assert not bad, f"{len(bad)} of {len(cases)} disagree, e.g.\n" + "\n".join(bad[:8])


# -- the reference itself ---------------------------------------------------------------------


def test_the_corpus_holds_every_kind_of_answer(corpus: list[Case]) -> None:
    """A reference that only ever says "no" would prove nothing: each answer occurs often."""
    assert len(corpus) == BAND_HANDS + BUILT_HANDS + LONG_HANDS
    n = len(corpus)
    assert sum(c.want.covers[True, True] for c in corpus) > n // 20
    assert sum(c.want.declaration == 1 for c in corpus) > n // 20
    assert sum((c.want.declaration or 0) > 1 for c in corpus) > n // 50
    assert sum(c.want.opening is not None for c in corpus) > n // 10
    assert sum(bool(c.want.finishes) for c in corpus) > n // 20
    assert sum(c.jpm == 2 for c in corpus) > n // 50
    assert sum(len(c.hand) == 13 and c.want.covers[False, True] for c in corpus) > n // 200


def _placements(cards: Sequence[int]) -> list[tuple[int, ...]]:
    """Every card each joker could stand for, worth trying: same suit or same rank."""
    naturals = [c for c in cards if c != JOKER]
    options = sorted(
        {f for f in range(52) if any(f // 13 == c // 13 or f % 13 == c % 13 for c in naturals)}
    )
    jokers = len(cards) - len(naturals)
    if jokers == 0:
        return [()]
    if jokers == 1:
        return [(f,) for f in options]
    return [(f, g) for f in options for g in options]


def _engine_accepts(cards: Sequence[int], jpm: int) -> bool:
    for jokers_as in [(), *_placements(cards)]:
        try:
            Meld.from_cards(cards, jokers_as=jokers_as, jokers_per_meld=jpm)
        except MeldError:
            continue
        return True
    return False


def test_the_reference_meld_check_agrees_with_meld_from_cards() -> None:
    """The reference's validity check (written from RULES.md §1) and ``Meld.from_cards`` trying
    every joker placement accept exactly the same card groups."""
    rng = random.Random(CORPUS_SEED + 1)
    bad = []
    for i in range(3_000):
        pool = [*_band(rng), JOKER, JOKER]
        cards = rng.sample(pool, min(len(pool), rng.randint(3, 6)))
        jpm = 1 + i % 2
        want = ref.meld_kind(cards, jpm) is not None
        if _engine_accepts(cards, jpm) != want:
            bad.append(f"{format_cards(cards)} jpm={jpm}: reference says {want}")
    assert not bad, "\n".join(bad[:8])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Ac 2c 3c", 6),  # RULES.md §6, case 6
        ("Qc Kc Ac", 30),
        ("10s Js Qs", 30),  # §6 case 5
        ("8c 8d 8h", 24),
        ("Ac Ad As", 30),
    ],
)
def test_the_reference_values_openings_as_the_rules_do(text: str, value: int) -> None:
    cards = tuple(sorted(Meld.parse(text).cards))
    kind = ref.meld_kind(cards)
    assert kind is not None
    assert ref.RefMeld(cards, kind, True).opening_value() == value


def test_the_reference_pays_the_seeds_seven_points() -> None:
    """RULES.md §6 case 1: 3♦4♦5♦ 4♦3♦ beside a complete rest pays 7."""
    hand = parse_cards("3d 4d 5d 4d 3d 7c 8c 9c")
    assert ref.answers(hand).portuguese_deadwood == 7


# -- the solver's answers ---------------------------------------------------------------------


def test_portuguese_deadwood_matches_the_reference(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        got = deadwood(c.hand, PORTUGUESE_VALUES, jokers_per_meld=c.jpm)
        return None if got == c.want.portuguese_deadwood else (got, c.want.portuguese_deadwood)

    _check_all(corpus, check)


def test_moroccan_deadwood_without_a_run_matches_the_reference(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        got = deadwood(c.hand, MOROCCAN_VALUES, need_run=False, jokers_per_meld=c.jpm)
        return None if got == c.want.moroccan_deadwood else (got, c.want.moroccan_deadwood)

    _check_all(corpus, check)


def test_can_cover_matches_the_reference(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        for need in NEEDS:
            got = can_cover(c.hand, need, jokers_per_meld=c.jpm)
            want = c.want.covers[bool(need & FLAG_SET), bool(need & FLAG_RUN)]
            if got != want:
                return f"need={need}: {got} != {want}"
        return None

    _check_all(corpus, check)


def test_portuguese_declaration_matches_the_reference(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        found = portuguese_declaration(c.hand, jokers_per_meld=c.jpm)
        got = None if found is None else found[1]
        return None if got == c.want.declaration else (got, c.want.declaration)

    _check_all(corpus, check)


def test_best_opening_matches_the_reference(corpus: list[Case]) -> None:
    """The best value, and at that value the most cards laid."""

    def check(c: Case) -> object:
        split = best_opening(c.hand, jokers_per_meld=c.jpm)
        got = None if split is None else (split.score, sum(len(m.cards) for m in split.melds))
        return None if got == c.want.opening else (got, c.want.opening)

    _check_all(corpus, check)


def test_finishes_match_the_reference(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        got = set(finishes(c.hand, jokers_per_meld=c.jpm))
        return None if got == c.want.finishes else (sorted(got), sorted(c.want.finishes))

    _check_all(corpus, check)


def test_last_cards_are_the_finishes_but_for_a_card_no_meld_holds(corpus: list[Case]) -> None:
    """``last_cards`` lists every finishing card and no other, but when a single card no meld
    can hold is its one (unchecked) answer."""

    def check(c: Case) -> object:
        got = set(last_cards(c.hand, FLAG_SET | FLAG_RUN, jokers_per_meld=c.jpm))
        if got == c.want.finishes:
            return None
        _, alone = solver._prepare(c.hand, c.jpm)
        if len(alone) == 1 and got == set(alone) and c.want.finishes <= got:
            return None
        return (sorted(got), sorted(c.want.finishes))

    _check_all(corpus, check)


def test_answers_do_not_depend_on_the_memo(corpus: list[Case]) -> None:
    """Solving from a cold memo, in another order, gives the same answers."""
    solver._SEARCHES.clear()
    for case in reversed(corpus[::7]):
        got = deadwood(case.hand, PORTUGUESE_VALUES, jokers_per_meld=case.jpm)
        assert got == case.want.portuguese_deadwood, str(case)
        solver._SEARCHES.clear()


# -- the splits it returns --------------------------------------------------------------------


def split_problem(split: Split, hand: Sequence[int], jpm: int) -> str | None:
    """What is wrong with ``split`` as a split of ``hand``, or None: every meld valid and
    well-formed, the cards exactly the hand's, the flags right."""
    laid = [c for m in split.melds for c in m.cards]
    if Counter([*laid, *split.left]) != Counter(hand):
        return f"cards {format_cards(laid)} + {format_cards(split.left)} are not the hand"
    flags = FLAG_LEFT if split.left else 0
    for m in split.melds:
        problem = _meld_problem(m, jpm)
        if problem:
            return problem
        if m.is_clean:
            flags |= FLAG_SET if m.kind == SET else FLAG_RUN
    if flags != split.flags:
        return f"flags {split.flags} but the melds make {flags}"
    return None


def _meld_problem(m: Meld, jpm: int) -> str | None:
    kind = ref.meld_kind(m.cards, jpm)
    if kind is None:
        return f"{m} is not a meld"
    if m.is_clean != (JOKER not in m.cards) or (m.is_clean and kind != m.kind):
        return f"{m} is a {kind}, not a clean {m.kind}"
    naturals = [c for c in m.cards if c != JOKER]
    if m.kind == SET:
        ok = all(c % 13 + 1 == m.rank for c in naturals)
        return None if ok else f"set {m} says rank {m.rank}"
    # A run holds its cards in order from lo, each natural at its own rank.
    if not 1 <= m.lo <= m.hi <= 14 or m.hi - m.lo + 1 != len(m.cards):
        return f"run {m} spans {m.lo}..{m.hi}"
    for i, c in enumerate(m.cards):
        if c == JOKER:
            continue
        at = m.lo + i
        if c // 13 != m.suit or c % 13 + 1 != (1 if at == 14 else at):
            return f"run {m} from {m.lo} has {format_cards([c])} at rank {at}"
    return None


def test_deadwood_splits_are_valid_and_score_the_deadwood(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        for values, need_run in ((PORTUGUESE_VALUES, True), (MOROCCAN_VALUES, False)):
            split = deadwood_split(c.hand, values, need_run=need_run, jokers_per_meld=c.jpm)
            problem = split_problem(split, c.hand, c.jpm)
            if problem:
                return problem
            points = sum(values[x] for x in split.left)
            want = deadwood(c.hand, values, need_run=need_run, jokers_per_meld=c.jpm)
            if points != want or split.score != -want:
                return f"split leaves {points}, says {-split.score}, deadwood is {want}"
            if need_run and split.melds and not split.has_clean_run:
                return f"melds {split.melds} counted without a natural run"
        return None

    _check_all(corpus, check)


def test_covers_are_valid_and_hold_the_flags_asked(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        for need in NEEDS:
            split = cover(c.hand, need, jokers_per_meld=c.jpm)
            if (split is not None) != can_cover(c.hand, need, jokers_per_meld=c.jpm):
                return f"cover and can_cover disagree for need={need}"
            if split is None:
                continue
            problem = split_problem(split, c.hand, c.jpm)
            if problem or split.left or split.flags & need != need:
                return problem or f"need={need}: cover leaves {split.left}, flags {split.flags}"
        return None

    _check_all(corpus, check)


def test_openings_are_valid_and_worth_their_score(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        split = best_opening(c.hand, jokers_per_meld=c.jpm)
        if split is None:
            return None
        problem = split_problem(split, c.hand, c.jpm)
        if problem:
            return problem
        if not (split.has_clean_set and split.has_clean_run and split.left):
            return f"opening {split.melds} lacks a clean set, a clean run or a card to discard"
        value = sum(
            ref.RefMeld(tuple(sorted(m.cards)), m.kind, m.is_clean).opening_value()
            for m in split.melds
        )
        if value != split.score:
            return f"opening {split.melds} is worth {value}, says {split.score}"
        return None

    _check_all(corpus, check)


def test_finish_splits_lay_all_but_their_card(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        for last, split in finishes(c.hand, jokers_per_meld=c.jpm).items():
            rest = list(c.hand)
            rest.remove(last)
            problem = split_problem(split, rest, c.jpm)
            if problem or split.left or not (split.has_clean_set and split.has_clean_run):
                return f"finish discarding {last}: {problem or split.melds}"
        return None

    _check_all(corpus, check)


def test_declaration_splits_are_complete(corpus: list[Case]) -> None:
    def check(c: Case) -> object:
        found = portuguese_declaration(c.hand, jokers_per_meld=c.jpm)
        if found is None:
            return None
        split, multiplier = found
        problem = split_problem(split, c.hand, c.jpm)
        if problem or split.left or not split.has_clean_run:
            return f"declaration: {problem or split.melds}"
        if multiplier > 1 and not all(m.is_clean and m.kind == RUN for m in split.melds):
            return f"×{multiplier} shown with {split.melds}"
        return None

    _check_all(corpus, check)


# -- hypothesis: the same comparison, shrinking any disagreement to a small hand -------------


@st.composite
def small_hands(draw: st.DrawFn) -> tuple[list[int], int]:
    """A hand of up to 11 cards from a band of suits and ranks, and the jokers per meld."""
    suits = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True))
    start = draw(st.integers(1, 13))
    width = draw(st.integers(3, 6))
    pool = [s * 13 + (start - 1 + i) % 13 for s in suits for i in range(width)]
    faces = draw(st.lists(st.sampled_from(pool), min_size=3, max_size=10))
    counts = Counter(faces)
    hand = sorted(c for c, n in counts.items() for _ in range(min(n, 2)))
    jokers = draw(st.integers(0, 2))
    jpm = draw(st.integers(1, 2)) if jokers == 2 else 1
    return [*hand, *([JOKER] * jokers)], jpm


@settings(max_examples=600, derandomize=True, database=None, deadline=None)
@given(small_hands())
def test_every_answer_matches_the_reference(case: tuple[list[int], int]) -> None:
    hand, jpm = case
    want = ref.answers(hand, jpm)
    assert deadwood(hand, PORTUGUESE_VALUES, jokers_per_meld=jpm) == want.portuguese_deadwood
    assert (
        deadwood(hand, MOROCCAN_VALUES, need_run=False, jokers_per_meld=jpm)
        == want.moroccan_deadwood
    )
    for need in NEEDS:
        want_cover = want.covers[bool(need & FLAG_SET), bool(need & FLAG_RUN)]
        assert can_cover(hand, need, jokers_per_meld=jpm) == want_cover
    found = portuguese_declaration(hand, jokers_per_meld=jpm)
    assert (None if found is None else found[1]) == want.declaration
    opening = best_opening(hand, jokers_per_meld=jpm)
    got = None if opening is None else (opening.score, sum(len(m.cards) for m in opening.melds))
    assert got == want.opening
    assert set(finishes(hand, jokers_per_meld=jpm)) == want.finishes


# -- the solver's shortcuts against its own full search ----------------------------------------


def test_the_no_option_shortcut_agrees_with_building_the_options() -> None:
    """``_any_option`` (bit tests) says a lowest card has melds exactly when the full option
    builder finds some, on every face, jokers 0-2, and many random sub-hands around it."""
    rng = random.Random(CORPUS_SEED)
    checked = 0
    for face in range(52):
        pos = solver._POS[face]
        for jokers in (0, 1, 2):
            for _ in range(150):
                # The face is the lowest card: only faces above it in the walk may be held.
                above = [f for f in range(52) if solver._POS[f] > pos]
                held = rng.sample(above, rng.randint(0, min(10, len(above))))
                key = solver._pack([face, *held, *([JOKER] * jokers)])
                faces = key & solver._FACE_MASK
                present = (faces | faces >> 1) & solver._PRESENT & solver._RELEVANT[pos]
                want = bool(solver._build_options(key, pos, jokers))
                assert solver._any_option(present, pos, jokers) == want, (face, held, jokers)
                checked += 1
    assert checked == 52 * 3 * 150


def test_cards_no_meld_can_hold_are_set_aside_exactly() -> None:
    """``_prepare`` sets a card aside exactly when no meld of the hand can hold it (brute
    force over every set and every run window)."""
    rng = random.Random(CORPUS_SEED + 1)
    for _ in range(3000):
        jokers = rng.choice([0, 0, 1, 2])
        jpm = rng.choice([1, 2])
        faces = band_hand(rng) if rng.random() < 0.5 else rng.sample(range(52), 10)
        hand = [c for c in faces if c != JOKER] + [JOKER] * jokers
        key, alone = solver._prepare(hand, jpm)
        assert key == solver._pack([c for c in hand if c not in alone])
        for card in {c for c in hand if c != JOKER}:
            others = [c for c in hand if c not in (card, JOKER)]
            meldable = _a_meld_holds(card, others, min(jokers, jpm))
            assert (card in alone) == (not meldable), (format_cards(hand), card, jpm)


def _a_meld_holds(card: int, others: list[int], jokers: int) -> bool:
    """Brute force: a set or a run of 3+ cards (up to ``jokers`` jokers) holding ``card``."""
    rank, suit = card % 13 + 1, card // 13
    suits = {c // 13 for c in others if c % 13 + 1 == rank and c // 13 != suit}
    if len(suits) + 1 + jokers >= 3:
        return True
    ranks = {c % 13 + 1 for c in others if c // 13 == suit} | {rank}
    ranks |= {14} if 1 in ranks else set()
    mine = {rank, 14} if rank == 1 else {rank}
    for lo in range(1, 13):
        for hi in range(lo + 2, min(lo + 12, 14) + 1):
            window = set(range(lo, hi + 1))
            if window & mine and len(window - ranks) <= jokers:
                return True
    return False


def test_the_clean_option_builder_matches_the_general_one() -> None:
    """Without jokers, the direct builder gives the general builder's options, in its order
    (the order decides which of equal splits is returned)."""
    rng = random.Random(CORPUS_SEED + 2)
    for face in range(52):
        pos = solver._POS[face]
        above = [f for f in range(52) if solver._POS[f] > pos]
        for _ in range(200):
            held = rng.sample(above, rng.randint(0, min(14, len(above))))
            if rng.random() < 0.5:  # runs are rare among random cards: make some
                run = [face // 13 * 13 + (face % 13 + i) % 13 for i in range(1, rng.randint(2, 13))]
                held += [f for f in run if solver._POS[f] > pos]
            key = solver._pack([face, *held])
            assert solver._build_clean_options(key, pos) == solver._build_options(key, pos, 0)


def test_the_opening_bounds_bound_every_opening(corpus: list[Case]) -> None:
    """No opening the solver finds is worth more than ``clean_opening_value`` says, nor that
    more than ``opening_bound`` says; both are 0 when the hand can't make a clean set and a
    clean run."""

    def check(c: Case) -> object:
        found = best_opening(c.hand, jokers_per_meld=c.jpm)
        bounds = (clean_opening_value(c.hand), solver.opening_bound(c.hand))
        if not clean_set_and_run(c.hand) and bounds != (0, 0):
            return ("no clean set and run", bounds)
        if bounds[0] > bounds[1] or (found is not None and found.score > bounds[0]):
            return (None if found is None else found.score, bounds)
        return None

    _check_all(corpus, check)


def test_covers_are_the_splits_the_full_search_rebuilds(corpus: list[Case]) -> None:
    """``cover`` walks only the splits that lay every card, yet returns the very split of the
    full search (every card worth 0, a card left over forbidden): the same melds, in the same
    order; and ``can_cover`` agrees with it."""
    zeros = Objective(tuple([0] * 53))

    def check(c: Case) -> object:
        for need in NEEDS:
            got = cover(c.hand, need, jokers_per_meld=c.jpm)
            want = best_split(c.hand, zeros, need=need, forbid=FLAG_LEFT, jokers_per_meld=c.jpm)
            if repr(got) != repr(want):
                return (need, got, want)
        return None

    _check_all(corpus, check)


def test_the_memos_of_all_searches_together_stay_within_their_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The solver keeps a memo per objective between calls (a player's successive hands share
    most of their sub-hands), each dropped whole past its own cap. A server plays every
    variant's bots and safe moves in one process, a dozen objectives: capped one by one,
    their memos grew to some 200 MB of its memory in minutes of play, and stayed. Together
    they hold at most ``_MEMO_TOTAL`` entries: past it, the least recently used are dropped
    (here with a small bound, over hands of six objectives in turn)."""
    monkeypatch.setattr(solver, "_MEMO_TOTAL", 1_000)
    solver.clear_caches()
    rng = random.Random(11)
    objectives = [
        solver.Objective(tuple(-rng.randrange(1, 12) for _ in range(53)), ow, 1) for ow in range(6)
    ]
    deck = [*range(26), *range(26), 52, 52]  # two suits: many melds, many sub-hands
    biggest = 0
    try:
        for i in range(300):
            hand = rng.sample(deck, 14)
            solver.best_split(hand, objectives[i % 6], jokers_per_meld=1)
            memos = [len(s.memo) for s in solver._SEARCHES.values()]
            # The search just used is last; the others were bounded before it ran.
            assert sum(memos[:-1]) <= 1_000, memos
            biggest = max(biggest, sum(memos))
        assert biggest > 1_000  # the bound was met, and held
    finally:
        solver.clear_caches()
