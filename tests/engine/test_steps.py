"""The step space (``steps.py``): a fixed index, and a mask that is exactly the legal next steps.

Positions come from seeded games played by the engine's policies (``random`` and ``greedy``
side by side, so that openings, additions and joker takes happen), 2 to 4 players, with
``jokers_per_meld`` 1 or 2 and tallage's opening 71 or 51. At each position:

- **sound**: every step in the mask is taken without a refusal, on a copy; a staged lay is one
  whose steps ``Game.apply`` accepts in that order (it refuses it, if at all, only for what a
  whole lay needs at its end); a commit, a draw, a discard, a declaration is accepted by
  ``Game.apply``; and a short random walk of masked steps from there is checked the same way;
- **exact for whole actions**: with nothing staged, ``Game.apply`` accepts a draw, a discard of
  any of the 53 cards, a declaration with any of them, exactly when the mask holds its step;
- **complete for lays**: where a brute-force search can list every legal lay (every meld the
  hand can make, with every joker place, every one- and two-card addition at either end, every
  joker take, in every order, each lay tried through ``Game.apply``), the states those lays
  lead to are exactly the states the masked steps reach by a commit. Positions: the policies'
  games; dealt hands of random melds (openings and finishes); and tallage players who opened
  and hold cards for the table's melds and its joker (additions, joker takes, a discard taken
  with its lay).

The bigger sweeps are marked ``slow`` and run with ``RAMI_SLOW=1``.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from helpers import cards, deal

from rami.engine import (
    CARDS,
    JOKER,
    POLICIES,
    Card,
    Declare,
    Discard,
    Draw,
    Game,
    IllegalAction,
    Lay,
    Meld,
    MeldError,
    NewMeld,
    NextRound,
    Options,
    Phase,
    RuleError,
    TableMeld,
    TakeJoker,
    view,
)
from rami.engine.actions import Action, AddToMeld, LayStep
from rami.engine.game import LEARNING_TURN_CAP, _add_cards
from rami.engine.plays import discard_completions, lays
from rami.engine.steps import StepSpace, StepState, meld_shapes

RUN_SLOW = os.environ.get("RAMI_SLOW") == "1"
slow = pytest.mark.skipif(not RUN_SLOW, reason="slow sweep: set RAMI_SLOW=1 to run")
VARIANTS = ("portuguese", "tallage", "simple")
STAGING = ("new", "add", "add-low", "joker")
#: Refusals of a lay for what a whole lay needs at its end: its steps themselves were accepted.
END_OF_LAY = frozenset(
    {
        "JOKER_NOT_RELAID",
        "MUST_LAY_DISCARD",
        "MUST_KEEP_CARD",
        "NOT_A_FINISH",
        "OPENING_NEEDS_CLEAN_MELDS",
        "OPENING_TOO_LOW",
        "OPENING_BELOW_BAR",
    }
)


# -- positions ----------------------------------------------------------------------------------


def options_for(variant: str, rng: random.Random) -> Options:
    opts = Options(players=rng.choice([2, 3, 4]), jokers_per_meld=rng.choice([1, 1, 2]))
    if variant == "tallage":
        opts = opts.with_(opening=rng.choice([71, 51]))
    if variant == "portuguese":
        opts = opts.with_(false_declaration=rng.choice(["reveal", "reject"]), rounds=2)
    return opts.with_(round_cap=2) if variant != "portuguese" else opts


def positions(variant: str, seed: int, moves: int) -> Iterator[Game]:
    """The game before each seat's decision, in a game played by the policies."""
    rng = random.Random(seed)
    opts = options_for(variant, rng)
    policies = [rng.choice(["random", "greedy", "greedy"]) for _ in range(opts.players)]
    game, _ = Game.new(variant, opts, seed=seed, turn_cap=LEARNING_TURN_CAP)
    while game.phase != Phase.GAME_OVER and game.number < moves:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            continue
        yield game
        seat = game.turn
        game.apply(seat, POLICIES[policies[seat]](view(game, seat), rng))


def dealt_positions(variant: str, seed: int, count: int) -> Iterator[Game]:
    """First turns of dealt games whose dealer (who plays first without drawing, so may lay at
    once) holds random melds, a clean set and a clean run among them, of all its cards but
    one, and one other card: finishes and openings to make, often in several ways."""
    rng = random.Random(seed)
    shapes = [s for s in meld_shapes(1) if len(s.cards) <= 5]
    sets = [s for s in shapes if s.kind == "set" and s.is_clean]
    runs = [s for s in shapes if s.kind == "run" and s.is_clean]
    size = 14 if variant == "simple" else 15
    made = 0
    while made < count:
        pool = [*range(52), *range(52), JOKER]  # one joker: two make too many lays to list
        hand: list[int] = []
        for shape in [rng.choice(sets), rng.choice(runs), *rng.sample(shapes, 8)]:
            if len(hand) + len(shape.cards) > size - 1 or any(
                shape.cards.count(c) > pool.count(c) for c in shape.cards
            ):
                continue
            for c in shape.cards:
                pool.remove(c)
                hand.append(c)
        if len(hand) != size - 1:
            continue
        hand.append(pool.pop(rng.randrange(len(pool))))
        discard = rng.choice([c for c in pool if c != JOKER])
        made += 1
        yield deal(variant, [cards(hand), []], discard, opening=51)


def trial(game: Game, seat: int, action: Action) -> str | None:
    """None when ``Game.apply`` accepts ``action`` (on a clone), else the refusal's reason."""
    try:
        game.clone().apply(seat, action)
    except RuleError as e:
        return e.reason
    return None


def staged_action(state: StepState) -> Action:
    lay = Lay(tuple(state.staged))
    return Draw("discard", lay) if state.taking else lay


# -- soundness ----------------------------------------------------------------------------------


def check_mask(space: StepSpace, game: Game, state: StepState) -> list[int]:
    """Check every step of the mask (and, with nothing staged, the whole actions): see the
    module's docstring. Returns the mask."""
    legal = space.legal_steps(game, state)
    seat = game.turn
    assert legal, "a seat to move always has a step"
    for i in legal:
        g, s = game.clone(), state.copy()
        space.apply_step(g, s, i, check=False)  # raises if the engine refuses it
        kind = space.steps[i].kind
        if kind in STAGING:
            assert g.state_key() == game.state_key()  # staged, not applied
            reason = trial(game, seat, staged_action(s))
            assert reason is None or reason in END_OF_LAY, (space.describe(i), reason)
            assert s.hand, "a staged lay always keeps a card"
        elif kind == "unstage":
            assert g.state_key() == game.state_key()
        elif not (kind == "take" and game.variant.must_lay_discard):
            assert g.number == game.number + 1  # applied: one action
    if not state.staged and not state.taking:
        whole: list[tuple[int, Action]] = [(0, Draw("stock"))]
        if not game.variant.must_lay_discard:
            whole.append((1, Draw("discard")))
        whole += [(space.discard_base + c, Discard(Card(c))) for c in range(53)]
        if space.declare_base >= 0:
            whole += [(space.declare_base + c, Declare(Card(c))) for c in range(53)]
        for i, action in whole:
            if i == 1 and state.gave_back:
                continue
            assert (trial(game, seat, action) is None) == (i in legal), space.describe(i)
        if game.variant.must_lay_discard and not state.gave_back and game.phase == Phase.DRAW:
            assert ("discard" in game.draw_sources(seat)) == (1 in legal)
    if state.staged:
        accepted = trial(game, seat, staged_action(state)) is None
        assert accepted == (space.commit in legal)
    return legal


def walk(space: StepSpace, game: Game, rng: random.Random, steps: int) -> int:
    """A random walk of masked steps from ``game`` (on a clone), each mask checked; staging
    steps are chosen more often than the rest, so that long lays are staged. Returns the
    number of masks checked."""
    game, state = game.clone(), StepState()
    checked = 0
    for _ in range(steps):
        if game.phase not in (Phase.DRAW, Phase.PLAY):
            break
        legal = check_mask(space, game, state)
        checked += 1
        kinds = {space.steps[i].kind for i in legal}
        if "commit" in kinds and rng.random() < 0.5:
            pick = [space.commit]
        elif kinds & set(STAGING) and rng.random() < 0.8:
            pick = [i for i in legal if space.steps[i].kind in STAGING]
        else:
            pick = legal
        space.apply_step(game, state, rng.choice(pick))
    return checked


def sweep_sound(variant: str, seeds: range, moves: int, walk_steps: int) -> int:
    checked = 0
    for seed in seeds:
        rng = random.Random(seed * 7 + 1)
        space: StepSpace | None = None
        for game in positions(variant, seed, moves):
            if space is None:
                space = StepSpace(variant, game.options)
            checked += walk(space, game, rng, walk_steps)
    return checked


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_masked_step_is_accepted_and_whole_actions_are_exact(variant: str) -> None:
    start = time.perf_counter()
    checked = sweep_sound(variant, range(5), moves=200, walk_steps=4)
    elapsed = time.perf_counter() - start
    print(f"{variant}: {checked} masks checked in {elapsed:.1f} s")
    assert checked >= 1500


@slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_masked_step_is_accepted_on_long_sweeps(variant: str) -> None:
    checked = sweep_sound(variant, range(100, 130), moves=600, walk_steps=8)
    print(f"{variant}: {checked} masks checked")
    assert checked >= 20_000


# -- completeness -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def new_melds(work: tuple[Card, ...], jpm: int) -> dict[Meld, NewMeld]:
    """Every meld the cards make, each with one ``NewMeld`` that lays it: every set of one
    suit's or one rank's different cards, with up to ``jpm`` jokers, the jokers first, last,
    or named as each card of that rank, or of that suit within two ranks of the cards."""
    naturals = sorted({c for c in work if c != JOKER})
    jokers = min(work.count(JOKER), jpm)
    groups = [[c for c in naturals if c // 13 == s] for s in range(4)]
    groups += [[c for c in naturals if c % 13 == r] for r in range(13)]
    found: dict[Meld, NewMeld] = {}
    for g, group in enumerate(groups):
        names = (
            [Card(g * 13 + r) for r in range(13)]
            if g < 4
            else [Card(s * 13 + g - 4) for s in range(4)]
        )
        for size in range(1, len(group) + 1):
            for picked in itertools.combinations(group, size):
                for j in range(jokers + 1):
                    if size + j < 3:
                        continue
                    tries = [
                        NewMeld((*[JOKER] * lead, *picked, *[JOKER] * (j - lead)))
                        for lead in range(j + 1)
                    ]
                    near = [n for n in names if g >= 4 or _near(n, picked)]
                    tries += [
                        NewMeld((*picked, *[JOKER] * j), named)
                        for named in itertools.permutations(near, j)
                        if j
                    ]
                    for step in tries:
                        try:
                            meld = Meld.from_cards(
                                step.cards, jokers_as=step.jokers_as, jokers_per_meld=jpm
                            )
                        except MeldError:
                            continue
                        found.setdefault(meld, step)
    return found


def _near(card: Card, cards: tuple[Card, ...]) -> bool:
    """True when ``card`` is within two ranks of one of ``cards`` (an ace high or low)."""
    ranks = {card.rank, 14} if card.rank == 1 else {card.rank}
    held = {r for c in cards for r in ((c.rank, 14) if c.rank == 1 else (c.rank,))}
    return any(abs(r - h) <= 2 for r in ranks for h in held)


def removed(work: tuple[Card, ...], cards: tuple[Card, ...]) -> tuple[Card, ...] | None:
    left = list(work)
    for c in cards:
        if c not in left:
            return None
        left.remove(c)
    return tuple(sorted(left))


def lay_steps(
    work: tuple[Card, ...], melds: tuple[TableMeld, ...], seat: int, jpm: int
) -> Iterator[tuple[LayStep, tuple[Card, ...], tuple[TableMeld, ...]]]:
    """Every lay step the hand could try on the table, with the hand and table it leaves
    (when the melds' own rules take it: ``Game.apply`` says whether the game does)."""
    for meld, step in new_melds(work, jpm).items():
        left = removed(work, step.cards)
        if left is not None:
            yield step, left, (*melds, TableMeld(seat, meld))
    distinct = sorted(set(work))
    for k, tm in enumerate(melds, 1):
        # Cards of the meld's suit (a run) or rank (a set), and jokers: no other card goes on.
        fit = [
            c
            for c in distinct
            if c == JOKER
            or (c.suit == tm.meld.suit if tm.meld.kind == "run" else c.rank == tm.meld.rank)
        ]
        picks = [(c,) for c in fit] + list(itertools.combinations_with_replacement(fit, 2))
        for added in picks:
            left = removed(work, added)
            if left is None:
                continue
            # The end only places jokers.
            for end in (None, "low", "high") if JOKER in added else (None,):
                try:
                    grown = _add_cards(tm.meld, added, end, jpm)
                except MeldError:
                    continue
                table = (*melds[: k - 1], TableMeld(tm.owner, grown), *melds[k:])
                yield AddToMeld(k, added, end), left, table
        for c in fit:
            if c == JOKER:
                continue
            try:
                freed = tm.meld.with_joker_taken(c)
            except MeldError:
                continue
            left = removed(work, (c,))
            assert left is not None
            table = (*melds[: k - 1], TableMeld(tm.owner, freed), *melds[k:])
            yield TakeJoker(k, c), tuple(sorted((*left, JOKER))), table


def _meld_order(tm: TableMeld) -> tuple[object, ...]:
    return (tm.owner, tm.meld.kind, tm.meld.rank, tm.meld.cards)


def canonical(melds: tuple[TableMeld, ...], base: int) -> tuple[TableMeld, ...]:
    """The table with the melds laid by this lay (those after the first ``base``) in one order:
    a lay's new melds can be staged in any order, so the searches need to try only one."""
    return (*melds[:base], *sorted(melds[base:], key=_meld_order))


def canonical_state(game: Game, base: int) -> tuple[object, ...]:
    """``state_key()`` with the new melds in the order of :func:`canonical`."""
    key = list(game.state_key())
    key[8] = canonical(tuple(game.melds), base)  # state_key's melds
    return tuple(key)


def brute_force_lays(game: Game, taking: bool, cap: int) -> set[tuple[object, ...]] | None:
    """The states every legal lay of the seat to move leads to, found by trying every lay step
    in every order through ``Game.apply``; None when there are more than ``cap`` partial lays
    to try."""
    seat, jpm = game.turn, game.options.jokers_per_meld
    hand = [*game.hands[seat], *([game.discard[-1]] if taking else [])]
    base = len(game.melds)
    start = (tuple(sorted(hand)), tuple(game.melds))
    frontier: list[tuple[tuple[LayStep, ...], tuple[Card, ...], tuple[TableMeld, ...]]] = [
        ((), *start)
    ]
    seen = {start}
    finals: set[tuple[object, ...]] = set()
    while frontier:
        steps, work, melds = frontier.pop()
        for step, left, table in lay_steps(work, melds, seat, jpm):
            key = (left, canonical(table, base))
            if not left or key in seen:
                continue  # an empty hand is refused whatever follows
            lay = Lay((*steps, step))
            action: Action = Draw("discard", lay) if taking else lay
            twin = game.clone()
            try:
                twin.apply(seat, action)
            except RuleError as e:
                if e.reason not in END_OF_LAY:
                    continue  # the step itself is refused
            else:
                finals.add(canonical_state(twin, base))
            seen.add(key)
            if len(seen) > cap:
                return None
            frontier.append(((*steps, step), left, table))
    return finals


def stepped_lays(
    space: StepSpace, game: Game, taking: bool, cap: int
) -> set[tuple[object, ...]] | None:
    """The states the masked steps reach by one commit (None past ``cap`` staged states)."""
    state = StepState()
    if taking:
        if 1 not in space.legal_steps(game, state):
            return set()
        space.apply_step(game, state, 1)
    base = len(game.melds)
    seen = {(tuple(sorted(state.hand)), state.melds)}
    frontier = [state]
    finals: set[tuple[object, ...]] = set()
    while frontier:
        state = frontier.pop()
        for i in space.legal_steps(game, state):
            kind = space.steps[i].kind
            if kind == "commit":
                twin = game.clone()
                space.apply_step(twin, state.copy(), i, check=False)
                finals.add(canonical_state(twin, base))
            elif kind in STAGING:
                after = state.copy()
                space.apply_step(game, after, i, check=False)
                key = (tuple(sorted(after.hand)), canonical(after.melds, base))
                if key not in seen:
                    seen.add(key)
                    if len(seen) > cap:
                        return None
                    frontier.append(after)
    return finals


def compare(space: StepSpace, game: Game, taking: bool, cap: int) -> int | None:
    """The number of states legal lays lead to, once the two searches agree on them (None
    when there are too many partial lays to try)."""
    brute = brute_force_lays(game, taking, cap)
    if brute is None:
        return None
    stepped = stepped_lays(space, game, taking, cap)
    assert stepped is not None
    assert stepped == brute, (game.hands[game.turn], game.melds, len(brute), len(stepped))
    return len(brute)


def sweep_complete(
    variant: str, seeds: range, moves: int, cap: int, most: int
) -> tuple[int, int, int]:
    """Compare the two at every position where a lay may be made (and both searches end):
    returns (positions compared, of which with a legal lay, lays found)."""
    compared = with_lays = states = 0
    rng = random.Random(seeds.start)
    for seed in seeds:
        space: StepSpace | None = None
        for game in positions(variant, seed, moves):
            if space is None:
                space = StepSpace(variant, game.options)
            seat = game.turn
            taking = (
                game.phase == Phase.DRAW
                and game.variant.must_lay_discard
                and "discard" in game.draw_sources(seat)
            )
            if not (taking or game.can_lay(seat)):
                continue
            # Every position where the bots' plays find a lay, and one in five of the rest.
            v = view(game, seat)
            found = discard_completions(v) if taking else lays(v, list(game.hands[seat]))
            if not found and rng.random() > 0.2:
                continue
            found_states = compare(space, game, taking, cap)
            if found_states is None:
                continue
            compared += 1
            with_lays += bool(found_states)
            states += found_states
            if compared >= most:
                break
    return compared, with_lays, states


@pytest.mark.parametrize(
    ("variant", "seeds", "least"), [("tallage", range(3), 80), ("simple", range(4), 30)]
)
def test_every_legal_lay_is_reachable_by_masked_steps(
    variant: str, seeds: range, least: int
) -> None:
    """Positions of the policies' games (where a lay may be made)."""
    start = time.perf_counter()
    compared, with_lays, states = sweep_complete(variant, seeds, moves=200, cap=300, most=400)
    elapsed = time.perf_counter() - start
    print(
        f"{variant}: {compared} positions, {with_lays} with lays ({states} states), {elapsed:.1f} s"
    )
    assert compared >= least and with_lays >= 1


@slow
@pytest.mark.parametrize("variant", ["tallage", "simple"])
def test_every_legal_lay_is_reachable_on_long_sweeps(variant: str) -> None:
    compared, with_lays, lays = sweep_complete(variant, range(50, 80), 600, 3000, 10**6)
    print(f"{variant}: {compared} positions, {with_lays} with lays ({lays} states)")
    assert with_lays >= 50


# -- the index ----------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("jpm", [1, 2])
def test_the_index_is_fixed_and_every_step_has_its_place(variant: str, jpm: int) -> None:
    space = StepSpace(variant, Options(jokers_per_meld=jpm))
    again = StepSpace(variant, Options(jokers_per_meld=jpm))
    assert space.size == again.size and space.steps == again.steps
    assert len(set(space.steps)) == space.size
    assert all(space.index(s) == i for i, s in enumerate(space.steps))
    assert all(space.describe(i) for i in range(space.size))
    assert len(set(space.shapes)) == len(space.shapes)
    for shape in space.shapes:  # each new step lays exactly its shape
        step = space.steps[space.new_index(shape)].lay_step()
        assert isinstance(step, NewMeld)
        assert Meld.from_cards(step.cards, jokers_as=step.jokers_as, jokers_per_meld=jpm) == shape


def test_the_sizes_of_the_index() -> None:
    """The figures docs/steps.md gives."""
    sizes = {
        (v, j): StepSpace(v, Options(jokers_per_meld=j)).size for v in VARIANTS for j in (1, 2)
    }
    assert sizes == {
        ("portuguese", 1): 108,
        ("portuguese", 2): 108,
        ("tallage", 1): 6348,
        ("tallage", 2): 13078,
        ("simple", 1): 2532,
        ("simple", 2): 9262,
    }
    tallage = StepSpace("tallage")
    assert tallage.max_melds == 36 and tallage.max_lay_steps == 30
    # A 13-card 2..A holding its natural ace is laid as A..K: 13 such runs of each suit.
    assert len(meld_shapes(1)) == len(tallage.shapes) + 4 * 13


def test_the_melds_of_a_hand_are_the_shapes_it_holds() -> None:
    """The brute force's melds of a hand are the shapes whose cards it holds."""
    hand = tuple(sorted(Card(c) for c in [*range(8), 4 + 13, 4 + 26, 4 + 39, 7 + 26, JOKER, JOKER]))
    for jpm in (1, 2):
        shapes = StepSpace("tallage", Options(jokers_per_meld=jpm)).shapes
        held = {s for s in shapes if set(s.naturals) <= set(hand)}
        assert set(new_melds(hand, jpm)) == held


@slow
def test_every_meld_a_hand_can_lay_is_a_shape() -> None:
    """The brute force's melds of a hand holding every card are the shapes."""
    every = tuple(sorted([*range(52), JOKER, JOKER]))
    for jpm in (1, 2):
        shapes = set(StepSpace("tallage", Options(jokers_per_meld=jpm)).shapes)
        assert set(new_melds(tuple(Card(c) for c in every), jpm)) == shapes


def test_max_game_length_is_known_only_with_a_turn_cap() -> None:
    assert StepSpace("portuguese").max_game_length is None
    space = StepSpace("simple", Options(players=2), turn_cap=LEARNING_TURN_CAP)
    assert space.max_game_length == 50 * LEARNING_TURN_CAP * space.max_turn_steps
    game, _ = space.new_game(seed=1)
    assert game.turn_cap == LEARNING_TURN_CAP


@pytest.mark.parametrize("variant", VARIANTS)
def test_games_of_random_steps_end_within_the_max_length(variant: str) -> None:
    """Uniformly random masked steps, unstaging included: every game ends, within the bound,
    and no turn takes more than ``max_turn_steps``."""
    space = StepSpace(
        variant, Options(players=2, rounds=1, round_cap=1, jokers_per_meld=2), turn_cap=40
    )
    bound = space.max_game_length
    assert bound is not None
    for seed in range(3):
        game, _ = space.new_game(seed)
        state, rng, taken, in_turn, turn = StepState(), random.Random(seed), 0, 0, None
        while game.phase != Phase.GAME_OVER:
            if game.phase == Phase.ROUND_OVER:
                game.apply(None, NextRound())
                continue
            key = (game.round, game.turn_index)
            in_turn = in_turn + 1 if key == turn else 1
            turn = key
            assert in_turn <= space.max_turn_steps
            space.apply_step(game, state, rng.choice(space.legal_steps(game, state)))
            taken += 1
        assert taken <= bound


def test_a_step_not_in_the_mask_is_refused_and_changes_nothing() -> None:
    space = StepSpace("tallage")
    game, _ = space.new_game(seed=2)
    state = StepState()
    legal = space.legal_steps(game, state)
    before = game.state_key()
    bad = next(i for i in range(space.size) if i not in legal)
    with pytest.raises(RuleError) as info:
        space.apply_step(game, state, bad)
    assert info.value.reason == "ILLEGAL_STEP"
    # It says where the turn stands, and where to find the legal steps.
    assert f"seat {game.turn} is to " in str(info.value) and "legal_steps" in str(info.value)
    with pytest.raises(RuleError, match=f"1000000 is no step: steps are 0 to {space.size - 1}"):
        space.apply_step(game, state, 1_000_000)
    assert game.state_key() == before and not state.staged


def test_a_policys_moves_are_steps() -> None:
    """What the greedy bot plays is a sequence of masked steps (adds of one card at a time)."""
    rng = random.Random(5)
    played = 0
    space: StepSpace | None = None
    for game in positions("tallage", 5, 400):
        space = space or StepSpace("tallage", game.options)
        action = POLICIES["greedy"](view(game, game.turn), rng)
        steps = _split_additions(action)
        if steps is None:
            continue
        g, state = game.clone(), StepState()
        for i in space.steps_of(g, state, steps):
            space.apply_step(g, state, i)
        twin = game.clone()
        twin.apply(game.turn, action)
        assert g.state_key() == twin.state_key()
        played += 1
    assert played > 50


def _opened_and_9h_thrown() -> Game:
    """Tallage: seat 0 opened with Q♥ K♥ A♥, 5♥ 6♥ 7♥ and K♠ K♦ K♣ (8♥ and JK kept), and
    seat 1 threw 9♥: seat 0 is to draw."""
    game = deal(
        "tallage",
        [
            "Qh Kh Ah 5h 6h 7h Ks Kd Kc JK 2c 4d 6s 8h 3d",
            "2s 3s 4s 5s 7d 8d 9d 10c Jc Qc 9s 10s 2d 9h",
        ],
        "9c",
        "5c 7c 9d 10h",
    )
    melds = [NewMeld(tuple(cards(m))) for m in ("Qh Kh Ah", "5h 6h 7h", "Ks Kd Kc")]
    game.apply(0, Lay(tuple(melds)))
    game.apply(0, Discard(cards("2c")[0]))
    game.apply(1, Draw("stock"))
    game.apply(1, Discard(cards("9h")[0]))
    return game


def test_a_bots_addition_of_several_cards_is_replayed_one_card_at_a_time() -> None:
    """A bot's AddToMeld of several cards (here 9h taken from the discard pile, which fits
    5h 6h 7h only with the 8h of the hand, the cards given in the other order) becomes one
    step per card, in an order in which each fits: the steps leave the game as the action."""
    game = _opened_and_9h_thrown()
    action = Draw("discard", Lay((AddToMeld(2, tuple(cards("9h 8h"))),)))
    twin = game.clone()
    twin.apply(0, action)  # the engine accepts it
    space = StepSpace("tallage", game.options)
    state = StepState()
    steps = space.steps_of(game, state, action)
    assert [space.describe(i) for i in steps[1:-1]] == ["add 2 8♥", "add 2 9♥"]
    for i in steps:
        space.apply_step(game, state, i)  # each checked against the mask
    assert game.state_key() == twin.state_key()


def test_an_addition_of_a_joker_with_naturals_is_replayed_as_the_engine_makes_it() -> None:
    """Game adds the naturals first, then the joker at its end: AddToMeld(JK, 8♥) on
    5♥ 6♥ 7♥ makes 5♥ 6♥ 7♥ 8♥ JK. The steps make that meld too (JK first, at the low end,
    would fit as well and make another)."""
    game = _opened_and_9h_thrown()
    game.apply(0, Draw("stock"))
    lay = Lay((AddToMeld(2, (JOKER, *cards("8h"))),))
    twin = game.clone()
    twin.apply(0, lay)
    space = StepSpace("tallage", game.options)
    state = StepState()
    for i in space.steps_of(game, state, lay):
        space.apply_step(game, state, i)
    assert game.state_key() == twin.state_key()


def _split_additions(action: Action) -> Action | None:
    """The action with each multi-card addition of naturals split into one card at a time
    (the order ``Game.apply`` adds them in can't be told from outside: skip those)."""
    lay = action.lay if isinstance(action, Draw) else action if isinstance(action, Lay) else None
    if lay is None:
        return action
    if any(isinstance(s, AddToMeld) and len(s.cards) > 1 for s in lay.steps):
        return None
    return action


def sweep_dealt(variant: str, seeds: range, count: int, cap: int) -> tuple[int, int, int]:
    compared = with_lays = states = 0
    spaces: dict[int, StepSpace] = {}
    for seed in seeds:
        for game in dealt_positions(variant, seed, count):
            jpm = game.options.jokers_per_meld
            space = spaces.setdefault(jpm, StepSpace(variant, game.options))
            found = compare(space, game, False, cap)
            if found is None:
                continue
            compared += 1
            with_lays += bool(found)
            states += found
    return compared, with_lays, states


@pytest.mark.parametrize(("variant", "hands"), [("tallage", 8), ("simple", 16)])
def test_every_opening_and_finish_of_a_dealt_hand_is_reachable(variant: str, hands: int) -> None:
    start = time.perf_counter()
    compared, with_lays, states = sweep_dealt(variant, range(1), hands, 3000)
    elapsed = time.perf_counter() - start
    print(f"{variant}: {compared} hands, {with_lays} with lays ({states} states), {elapsed:.1f} s")
    assert compared == hands and with_lays == hands


@slow
@pytest.mark.parametrize("variant", ["tallage", "simple"])
def test_every_opening_and_finish_of_many_dealt_hands_is_reachable(variant: str) -> None:
    compared, with_lays, states = sweep_dealt(variant, range(1, 5), 50, 5000)
    print(f"{variant}: {compared} hands, {with_lays} with lays ({states} states)")
    assert compared >= 150 and with_lays == compared


def opened_positions(seed: int, count: int) -> Iterator[tuple[Game, bool]]:
    """Tallage positions of a player who opened on the first turn (a clean set, a clean run
    and a run with a joker) and holds cards that go on those melds or take the joker back:
    on its next turn, before drawing (the other player discarded such a card: it may be
    taken, with a lay) and after drawing one from the stock."""
    rng = random.Random(seed)
    shapes = meld_shapes(1)
    sets = [s for s in shapes if s.kind == "set" and s.is_clean and s.rank in (1, 11, 12, 13)]
    runs = [s for s in shapes if s.kind == "run" and s.is_clean and s.lo >= 9 and len(s.cards) == 3]
    jokered = [s for s in shapes if s.kind == "run" and s.jokers == 1 and len(s.cards) == 4]
    made = 0
    while made < count:
        opening = [rng.choice(sets), rng.choice(runs), rng.choice(jokered)]
        laid = [c for m in opening for c in m.cards]
        if any(laid.count(c) > (1 if c == JOKER else 2) for c in laid):
            continue
        near = {
            Card(s * 13 + (r - 1) % 13)
            for m in opening
            for r in range(m.lo - 1, m.hi + 2)
            for s in ([m.suit] if m.kind == "run" else range(4))
            if 1 <= r <= 14 and (m.kind == "run" or r == m.rank)
        }
        near |= {JOKER, *(c for m in opening for c in m.joker_cards())}
        pool = sorted(c for c in near if laid.count(c) < 2)
        extras = rng.sample(pool, min(len(pool), rng.choice([3, 4, 5])))
        given, drawn = extras[1:], extras[0]
        if len(laid) + len(given) > 14:
            continue  # a card to discard after the opening is needed
        spare = [c for c in pool if c not in extras] or [Card(0)]
        thrown = rng.choice(spare)  # what the other player throws: it goes on a meld
        try:
            game = deal(
                "tallage", [cards([*laid, *given]), []], "2c", cards([thrown, drawn]), opening=51
            )
        except ValueError:
            continue  # no copy of a card left for it
        rest = list(game.hands[0])
        for c in [*laid, *given]:
            rest.remove(c)
        junk = rest[0]  # the one card the deal added
        try:
            game.apply(0, Lay(tuple(_new_meld_of(m) for m in opening)))
        except RuleError:
            continue  # the random melds did not make an opening
        game.apply(0, Discard(junk))
        game.apply(1, Draw("stock"))
        game.apply(1, Discard(thrown))
        made += 1
        yield game, "discard" in game.draw_sources(0)
        after = game.clone()
        after.apply(0, Draw("stock"))
        yield after, False


def _new_meld_of(shape: Meld) -> NewMeld:
    return NewMeld(shape.cards, tuple(shape.joker_cards()))


@pytest.mark.parametrize(("deals", "slowly"), [(60, False), pytest.param(400, True, marks=slow)])
def test_every_addition_and_joker_take_of_an_opened_hand_is_reachable(
    deals: int, slowly: bool
) -> None:
    start = time.perf_counter()
    space: StepSpace | None = None
    compared = with_lays = states = 0
    for game, taking in opened_positions(3 if not slowly else 4, deals):
        space = space or StepSpace("tallage", game.options)
        found = compare(space, game, taking, 5000)
        if found is None:
            continue
        compared += 1
        with_lays += bool(found)
        states += found
    elapsed = time.perf_counter() - start
    print(
        f"tallage opened: {compared} positions, {with_lays} with lays ({states} states), "
        f"{elapsed:.1f} s"
    )
    assert compared >= deals and with_lays >= deals


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_sequence_of_steps_is_one_move_and_the_same_as_stepping(variant: str) -> None:
    """``action_of`` (what the network's LegalSteps/Act use): random masked steps from the
    start of a move up to the one that ends it make one action; applying it leaves the game
    as taking the steps one by one does, and the game given is never changed."""
    rng = random.Random(17)
    space: StepSpace | None = None
    moves = 0
    for game in positions(variant, 17, 300):
        space = space if space is not None and space.options == game.options else None
        space = space or StepSpace(variant, game.options)
        stepped, state, steps = game.clone(), StepState(), []
        while True:
            legal = space.legal_steps(stepped, state)
            i = rng.choice(legal)
            steps.append(i)
            if space.ends_move(i):
                break
            assert not space.apply_step(stepped, state, i)  # staging: no event
        before = game.state_key()
        action = space.action_of(game, steps)
        assert game.state_key() == before
        space.apply_step(stepped, state, steps[-1])
        played = game.clone()
        played.apply(game.turn, action)
        assert played.state_key() == stepped.state_key()
        moves += 1
    assert moves > 100


def test_steps_that_are_not_one_legal_move_are_refused() -> None:
    space = StepSpace("tallage")
    game, _ = space.new_game(seed=2)
    legal = space.legal_steps(game, StepState())
    before = game.state_key()
    bad = next(i for i in range(space.size) if i not in legal)
    ending = next(i for i in legal if space.ends_move(i))
    for steps, said in [
        ([bad], "is not a legal step then"),
        ([space.size], "no step"),
        ([ending, ending], "ends the move: no step may follow"),
        ([], "do not end with a move"),
    ]:
        with pytest.raises(RuleError, match=said) as info:
            space.action_of(game, steps)
        assert info.value.reason == "ILLEGAL_STEP"
    assert game.state_key() == before


def _refusals_match_apply(
    variant: str,
    label: str,
    refusal: Callable[[Game, int, Any], RuleError | None],
    moves: Callable[[Any], Action],
    choices: Sequence[Any],
) -> set[str | None]:
    """At every position of random games (3 players), for every seat and each of
    ``choices``: ``refusal(game, seat, choice)`` says apply's reason when ``game.apply`` of
    ``moves(choice)`` refuses it on a clone, and None exactly when apply accepts it. Returns
    the answers met."""
    seen: set[str | None] = set()
    for game in _random_positions(label, variant):
        for seat in range(game.players):
            for choice in choices:
                said = refusal(game, seat, choice)
                try:
                    game.clone().apply(seat, moves(choice))
                except RuleError as e:
                    assert said is not None and said.reason == e.reason, (seat, choice, e)
                else:
                    assert said is None, (seat, choice, said)
                seen.add(None if said is None else said.reason)
    return seen


def _random_positions(label: str, variant: str) -> Iterator[Game]:
    """Every position of three seeded random games of 3 players (up to 300 moves each) where
    a seat is to move: the game, before the move."""
    rng = random.Random(f"{label}/{variant}")
    policy = POLICIES["random"]
    for seed in range(3):
        game, _ = Game.new(variant, Options(players=3), seed, turn_cap=LEARNING_TURN_CAP)
        for _ in range(300):
            if game.phase == Phase.GAME_OVER:
                break
            if game.phase == Phase.ROUND_OVER:
                game.apply(None, NextRound())
                continue
            yield game
            game.apply(game.turn, policy(view(game, game.turn), rng))


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_draw_refusal_is_what_apply_says_of_a_plain_draw(variant: str) -> None:
    # The mask asks Game.draw_refusal instead of drawing on a clone.
    seen = _refusals_match_apply(
        variant, "draw-refusal", Game.draw_refusal, Draw, ("stock", "discard")
    )
    # Both answers were met, and the refusals that matter to a draw.
    assert None in seen and {"NOT_YOUR_TURN", "ALREADY_DREW"} <= seen


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_discard_refusal_is_what_apply_says_of_a_discard(variant: str) -> None:
    # The mask asks Game.discard_refusal instead of discarding on a clone: every card, held
    # or not.
    seen = _refusals_match_apply(
        variant, "discard-refusal", Game.discard_refusal, Discard, range(53)
    )
    # Both answers were met, and the refusals that matter to a discard.
    assert None in seen and {"NOT_YOUR_TURN", "MUST_DRAW", "CARD_NOT_IN_HAND"} <= seen


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_discardable_lists_the_cards_whose_discard_refusal_is_none(variant: str) -> None:
    # The mask lists Game.discardable: one check of the turn and phase, not one per card.
    lists = 0
    for game in _random_positions("discardable", variant):
        for seat in range(game.players):
            accepted = [c for c in CARDS if game.discard_refusal(seat, c) is None]
            assert game.discardable(seat) == accepted, (seat, game.phase)
            lists += bool(accepted)
    assert lists > 50  # positions where some discard was allowed were met


def _step_positions(
    space: StepSpace, games: int, moves: int = 1500
) -> Iterator[tuple[Game, StepState]]:
    """Each position of ``games`` seeded games of ``space`` (up to ``moves`` each) where a seat
    is to take a step: the game and its StepState, for the caller to take one (the table's
    NextRound is made here)."""
    for seed in range(games):
        game, _ = space.new_game(seed)
        state = StepState()
        for _ in range(moves):
            if game.phase == Phase.GAME_OVER:
                break
            if game.phase == Phase.ROUND_OVER:
                game.apply(None, NextRound())
                continue
            yield game, state


@pytest.mark.parametrize("variant", ["tallage", "simple"])
def test_commit_is_offered_exactly_when_apply_accepts_the_staged_lay(variant: str) -> None:
    # The mask offers commit when plan_lay (not partial) accepts the staged lay: at every
    # staged position of random step play, that is exactly when apply accepts the lay (alone,
    # or with the discard taken) on a clone.
    space = StepSpace(variant, Options(players=2), turn_cap=LEARNING_TURN_CAP)
    rng = random.Random(f"commit/{variant}")
    offered = refused = 0
    for game, state in _step_positions(space, 6):
        legal = space.legal_steps(game, state)
        if state.staged:
            lay = Lay(tuple(state.staged))
            action = Draw("discard", lay) if state.taking else lay
            try:
                game.clone().apply(game.turn, action)
            except RuleError:
                accepted = False
            else:
                accepted = True
            assert (space.commit in legal) == accepted, (state.staged, accepted)
            offered += accepted
            refused += not accepted
        # Mostly staging, and committing half the times it is offered: random steps
        # alone seldom stage a whole lay.
        staging = [i for i in legal if space.steps[i].kind in ("new", "add", "joker")]
        if space.commit in legal and rng.random() < 0.5:
            step = space.commit
        elif staging and rng.random() < 0.85:
            step = rng.choice(staging)
        else:
            step = rng.choice(legal)
        space.apply_step(game, state, step, check=False)
    # The lays the bots find, staged step by step in games strong plays: commit is offered
    # after each, and apply accepts it.
    strong = POLICIES["strong"]
    for seed in range(4):
        game, _ = space.new_game(100 + seed)
        for _ in range(600):
            if game.phase == Phase.GAME_OVER:
                break
            if game.phase == Phase.ROUND_OVER:
                game.apply(None, NextRound())
                continue
            v = view(game, game.turn)
            if game.phase == Phase.PLAY and v.hand is not None:
                for lay in lays(v, list(v.hand)):
                    state = StepState()
                    try:
                        *staging, last = space.steps_of(game, state, lay)
                    except IllegalAction:
                        continue  # a multi-card addition: not one step
                    assert last == space.commit
                    for i in staging:
                        space.apply_step(game, state, i)
                    assert space.commit in space.legal_steps(game, state), lay
                    game.clone().apply(game.turn, lay)
                    offered += 1
            game.apply(game.turn, strong(v, rng))
    assert offered and refused, (offered, refused)


@pytest.mark.parametrize("variant", ["tallage", "simple"])
def test_a_turns_masks_and_plans_are_those_of_a_fresh_state(variant: str) -> None:
    # A StepState keeps the masks of the game's position and the plans before each staged
    # step, so that unstaging and asking again cost nothing. At every step of random play
    # (which stages and unstages often), its mask and its hand and table after the staged
    # steps are what a fresh state with the same staged steps finds, planned anew.
    space = StepSpace(variant, Options(players=2), turn_cap=LEARNING_TURN_CAP)
    rng = random.Random(f"fresh/{variant}")
    unstaged = 0
    for game, state in _step_positions(space, 3):
        legal = space.legal_steps(game, state)
        fresh = StepState()
        fresh.sync(game)
        if state.taking or state.gave_back:
            fresh.taking, fresh.gave_back = state.taking, state.gave_back
            fresh._rebase(game)
        fresh.used, fresh.staged = state.used, list(state.staged)
        if state.staged:
            fresh.hand, fresh.melds = game.plan_lay(
                game.turn, Lay(tuple(state.staged)), with_discard=state.taking, partial=True
            )
        assert (state.hand, state.melds) == (fresh.hand, fresh.melds), state.staged
        assert legal == space.legal_steps(game, fresh), state.staged
        step = rng.choice(legal)
        unstaged += step == space.unstage and bool(state.staged)
        space.apply_step(game, state, step, check=False)
    assert unstaged > 100, unstaged


def test_a_bots_joker_at_the_low_end_of_an_ace_high_run_is_replayed_by_the_plain_add() -> None:
    # A joker goes on Q K A only below it: the mask offers that as "add JK", and no "add-low"
    # (which is offered only where it makes another meld). A bot's AddToMeld(..., "low") of
    # it is that same step: steps_of must say so, or the move could not be replayed as steps.
    game = deal(
        "tallage",
        [
            "Qh Kh Ah 5h 6h 7h Ks Kd Kc JK 2c 4d 6s 8c 3d",
            "2s 3s 4s 5s 7d 8d 9d 10c Jc Qc 9s 10s 2d 4c",
        ],
        "9c",
        "5c 7c 9h 10h",
    )
    melds = [NewMeld(tuple(cards(m))) for m in ("Qh Kh Ah", "5h 6h 7h", "Ks Kd Kc")]
    game.apply(0, Lay(tuple(melds)))
    game.apply(0, Discard(cards("8c")[0]))
    game.apply(1, Draw("stock"))
    game.apply(1, Discard(cards("2s")[0]))
    game.apply(0, Draw("stock"))
    lay = Lay((AddToMeld(1, (JOKER,), "low"),))
    game.clone().apply(0, lay)  # the engine accepts it
    space = StepSpace("tallage", game.options)
    state = StepState()
    *staging, last = space.steps_of(game, state, lay)
    assert [space.describe(i) for i in staging] == ["add 1 JK"]
    for i in staging:
        space.apply_step(game, state, i)  # checked against the mask
    assert last == space.commit and space.commit in space.legal_steps(game, state)
    before = game.clone()
    space.apply_step(game, state, last)
    before.apply(0, lay)
    assert game.state_key() == before.state_key()
