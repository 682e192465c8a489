"""One complete, finite action space: a turn as a sequence of primitive steps from a fixed index.

Bots and the client speak whole actions (``actions.py``); :func:`~rami.engine.plays.legal_plays`
lists some of them, those worth considering. Learning needs more: a fixed-size index of
everything a seat may do, and a mask that is exactly the legal next steps. A :class:`StepSpace`
is that index for one variant and its options; a :class:`StepState` is the turn in progress of
the seat to move (the lay it has staged so far); :meth:`StepSpace.legal_steps` is the mask and
:meth:`StepSpace.apply_step` plays one step.

The steps, in index order (``docs/steps.md`` has the sizes):

- ``draw``: take the top card of the stock.
- ``take``: take the top discard. In tallage it must be laid in the same move (RULES.md §3),
  so this step only starts staging: the lay staged next is sent with the draw, as one
  ``Draw("discard", lay)``, at ``commit``.
- ``new``: stage a new meld, one of a canonical list of **meld shapes** built once per space:
  every run (suit, lowest rank, length, the places of its jokers; a joker's place is the card
  it stands for) and every set (rank, the suits of its natural cards, its jokers) that
  ``jokers_per_meld`` allows. Each shape is a :class:`~rami.engine.melds.Meld`, and the
  ``NewMeld`` it is laid with is checked, when the space is built, to make exactly it.
- ``add``: stage one card from the hand onto table meld *k* (a joker at the end the run goes
  on by default, or ``add-low``: at its low end, offered only where that is another meld).
- ``joker``: stage taking back the joker of table meld *k* with card *c*.
- ``unstage``: drop the last staged step (with nothing staged: give the tallage discard back,
  which is then not offered again this turn).
- ``commit``: apply the staged steps to the game as one ``Lay`` (or one ``Draw("discard",
  lay)``).
- ``discard``: discard card *c*; ``declare``: declare with card *c* face down (portuguese).

The rules stay in ``game.py``: staging a step asks :meth:`Game.plan_lay` (``partial=True``)
whether the staged steps so far are valid steps in that order; ``commit`` is in the mask only
when :meth:`Game.plan_lay` of the whole staged lay (``partial=False``: the check ``apply`` makes
of a lay, alone or with the discard taken) accepts it, ``discard`` when
:meth:`Game.discardable` lists the card (the cards :meth:`Game.discard_refusal`, the check
``apply`` makes of a discard, has nothing against), ``draw`` and ``take`` when
:meth:`Game.draw_refusal` (the same, for a draw) has nothing against them, ``declare`` when
:meth:`Game.declarable` lists the card. The melds' own validators only pick the few candidates
worth asking about; and where what the engine checks of a kind of step is, beyond what those
validators said of each candidate, the same for all candidates (the seat's turn and phase,
laying now, the staged steps), the first one accepted answers for the others: one
``plan_lay`` for the new melds, one for the steps on table melds.
So every step in the mask is accepted, and every committed lay is one ``apply`` accepts
(sound); and every legal lay is a sequence of ``new``, ``add`` and ``joker`` steps (complete:
a lay's multi-card addition is its cards added one at a time, which is what ``apply`` does
with it), each of which the mask offers. ``tests/engine/test_steps.py``
checks both on thousands of positions, and completeness against every lay a brute-force
search finds through ``Game.apply``.

Staged steps may lead nowhere (an opening that the rest of the hand can't bring to 71); the
mask does not look ahead, but ``unstage`` is always offered while anything is staged, so a
seat is never stuck, and ``discard`` needs an empty stage (nothing staged is lost unseen).

Finite: a turn allows at most :attr:`StepSpace.max_lay_steps` staging steps (``new``, ``add``,
``joker``), enough for any legal turn (each such step lays a card of the hand, or swaps one for
a joker, and a hand of *h* cards allows at most 2*h* - 1 of them), so a turn has at most
:attr:`StepSpace.max_turn_steps` steps; with a game made with a turn cap
(:meth:`StepSpace.new_game`, :data:`~rami.engine.game.LEARNING_TURN_CAP`) a game has at most
:attr:`StepSpace.max_game_length` steps.

Table melds are numbered 1 to :attr:`StepSpace.max_melds`: every meld holds at least 3 cards,
so a deck of 108 cards never has more than 36 on the table.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from .actions import Action, AddToMeld, Declare, Discard, Draw, Lay, LayStep, NewMeld, TakeJoker
from .cards import CARDS, JOKER, Card
from .errors import IllegalAction, RuleError
from .events import Event
from .game import Game, Phase, TableMeld, max_rounds
from .melds import MAX_RUN, RUN, SET, Meld, MeldError
from .variants import Options, Variant, get_variant

__all__ = ["Step", "StepKind", "StepSpace", "StepState", "meld_shapes", "step_space"]

StepKind = Literal[
    "draw", "take", "new", "add", "add-low", "joker", "unstage", "commit", "discard", "declare"
]

#: A refusal that no other card or meld would change: the seat may not stage that kind of step
#: now (so the mask stops asking about it).
_GATES = frozenset(
    {"NO_LAYING", "NOT_OPENED", "OPENED_THIS_TURN", "MUST_DRAW", "NOT_YOUR_TURN", "ALREADY_DREW"}
)
_DRAW_STOCK = Draw("stock")
_DRAW_DISCARD = Draw("discard")


@dataclass(frozen=True, slots=True)
class Step:
    """What one index of a :class:`StepSpace` does."""

    kind: StepKind
    #: The card discarded, declared, added, or given for a joker.
    card: Card | None = None
    #: The table meld (numbered from 1) added to, or whose joker is taken.
    meld: int = 0
    #: The meld a ``new`` step lays.
    shape: Meld | None = None
    #: The ``NewMeld`` that lays it.
    new: NewMeld | None = None

    def lay_step(self) -> LayStep:
        """The engine's lay step this staging step stands for."""
        if self.new is not None:
            return self.new
        assert self.card is not None
        if self.kind == "joker":
            return TakeJoker(self.meld, self.card)
        return AddToMeld(self.meld, (self.card,), "low" if self.kind == "add-low" else None)

    def __str__(self) -> str:
        if self.kind == "new":
            assert self.shape is not None
            return f"lay {self.shape.describe()}"
        if self.kind in ("add", "add-low"):
            end = " low" if self.kind == "add-low" else ""
            return f"add {self.meld} {self.card}{end}"
        if self.kind == "joker":
            return f"take the joker of {self.meld} with {self.card}"
        if self.kind in ("discard", "declare"):
            return f"{self.kind} {self.card}"
        return {"draw": "draw stock", "take": "take discard"}.get(self.kind, self.kind)


def meld_shapes(jokers_per_meld: int = 1) -> tuple[Meld, ...]:
    """Every meld a hand can lay, jokers' places included, in a fixed order: runs by suit,
    lowest rank, length and joker places; then sets by rank, suits and jokers."""
    out: list[Meld] = []
    for suit in range(4):
        for lo in range(1, 13):
            for length in range(3, MAX_RUN + 1):
                if lo + length - 1 > 14:
                    break
                faces = [CARDS[suit * 13 + (r - 1) % 13] for r in range(lo, lo + length)]
                for places in _joker_places(length, jokers_per_meld):
                    cards = tuple(JOKER if i in places else c for i, c in enumerate(faces))
                    out.append(Meld(RUN, cards, suit, lo))
    for rank in range(1, 14):
        for suits in _suit_subsets():
            for jokers in range(jokers_per_meld + 1):
                if 3 <= len(suits) + jokers <= 4:
                    naturals = tuple(CARDS[s * 13 + rank - 1] for s in suits)
                    out.append(Meld(SET, (*naturals, *([JOKER] * jokers)), -1, rank))
    return tuple(out)


def _joker_places(length: int, most: int) -> list[tuple[int, ...]]:
    """Places of up to ``most`` jokers in a run of ``length`` (at least one natural card)."""
    places: list[tuple[int, ...]] = [()]
    if most >= 1:
        places += [(i,) for i in range(length)]
    if most >= 2:
        places += [(i, j) for i in range(length) for j in range(i + 1, length) if length > 2]
    return places


def _suit_subsets() -> list[tuple[int, ...]]:
    """Non-empty sets of suits, smallest first, each in suit order."""
    subsets = [tuple(s for s in range(4) if bits >> s & 1) for bits in range(1, 16)]
    return sorted(subsets, key=lambda s: (len(s), s))


def _new_meld(shape: Meld) -> NewMeld:
    """The engine's ``NewMeld`` that lays exactly ``shape``."""
    if shape.kind == RUN and not shape.is_clean:
        return NewMeld(shape.cards, tuple(shape.joker_cards()))
    return NewMeld(shape.cards)


def _checked_new_meld(shape: Meld, jpm: int) -> NewMeld | None:
    """``_new_meld``, or the cards alone (a joker's end told by where it stands), whichever
    :meth:`Meld.from_cards` turns into ``shape`` (2..K + JK is a high ace only so); None when
    no lay makes it: a 13-card run 2..A holding its natural ace, which the same cards always
    make as A..K (13 runs of each suit; they only arise on the table, by additions)."""
    for step in (_new_meld(shape), NewMeld(shape.cards)):
        if Meld.from_cards(step.cards, jokers_as=step.jokers_as, jokers_per_meld=jpm) == shape:
            return step
    return None


@dataclass
class StepState:
    """The turn in progress of the seat to move, as steps see it: what it has staged.

    One per game: :meth:`StepSpace.legal_steps` and :meth:`StepSpace.apply_step` bring it up
    to date with the game (a new turn starts with nothing staged).
    """

    #: (round, turn index, seat) of the turn this state is about.
    turn: tuple[int, int, int] = (-1, -1, -1)
    #: The game's action count the staged steps build on.
    number: int = -1
    #: Tallage: the discard is being taken; the staged lay goes with the draw.
    taking: bool = False
    #: The tallage discard was taken and given back this turn: not offered again.
    gave_back: bool = False
    staged: list[LayStep] = field(default_factory=list)
    #: The seat's hand and the table after the staged steps.
    hand: tuple[Card, ...] = ()
    melds: tuple[TableMeld, ...] = ()
    #: Staging steps made this turn (bounded by ``StepSpace.max_lay_steps``).
    used: int = 0
    #: (hand, melds) before each staged step: ``unstage`` goes back to them.
    _before: list[tuple[tuple[Card, ...], tuple[TableMeld, ...]]] = field(
        default_factory=list, repr=False, compare=False
    )
    #: The masks asked at the game's action ``number``, by what else they depend on (see
    #: StepSpace.legal_steps), and the game they were asked of.
    _masks: dict[tuple[bool, bool, tuple[LayStep, ...], bool], tuple[int, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _masked: Game | None = field(default=None, repr=False, compare=False)

    def copy(self) -> StepState:
        """An independent copy (for search, beside ``Game.clone``)."""
        return StepState(
            self.turn,
            self.number,
            self.taking,
            self.gave_back,
            list(self.staged),
            self.hand,
            self.melds,
            self.used,
            list(self._before),
        )

    def sync(self, game: Game) -> None:
        """Start afresh on a new turn, and drop staged steps the game has moved past."""
        key = (game.round, game.turn_index, game.turn)
        if key != self.turn:
            self.turn, self.used, self.gave_back = key, 0, False
            self.number = -1
        if game.number != self.number:
            self.number = game.number
            self.taking = False
            self.staged = []
            self._rebase(game)
            self._masks.clear()

    def _rebase(self, game: Game) -> None:
        hand = list(game.hands[game.turn]) if game.hands else []
        if self.taking:
            hand.append(game.discard[-1])
        self.hand, self.melds = tuple(hand), tuple(game.melds)
        self._before.clear()


class StepSpace:
    """The fixed index of primitive steps for one variant and its options."""

    def __init__(
        self, variant: str | Variant, options: Options | None = None, *, turn_cap: int = 0
    ) -> None:
        self.variant = get_variant(variant) if isinstance(variant, str) else variant
        self.options = options or Options()
        #: The turn cap of the games this space's :attr:`max_game_length` is about.
        self.turn_cap = turn_cap
        v, jpm = self.variant, self.options.jokers_per_meld
        stages = not v.declares
        adds = v.has_opening
        #: Most melds the table can hold: each has at least 3 cards.
        self.max_melds = v.deck_size // 3 if adds else 0
        made = [(s, _checked_new_meld(s, jpm)) for s in (meld_shapes(jpm) if stages else ())]
        #: The meld of each ``new`` step, in index order.
        self.shapes: tuple[Meld, ...] = tuple(s for s, m in made if m is not None)
        new_melds = tuple(m for _, m in made if m is not None)
        steps: list[Step] = [Step("draw"), Step("take")]
        self.new_base = len(steps)
        steps += [Step("new", shape=s, new=m) for s, m in zip(self.shapes, new_melds, strict=True)]
        self.add_base = len(steps)
        for k in range(1, self.max_melds + 1):
            steps += [Step("add", CARDS[c], k) for c in range(53)]
            steps.append(Step("add-low", JOKER, k))
        self.joker_base = len(steps)
        for k in range(1, self.max_melds + 1):
            steps += [Step("joker", CARDS[c], k) for c in range(52)]
        self.unstage = self.commit = -1
        if stages:
            self.unstage, self.commit = len(steps), len(steps) + 1
            steps += [Step("unstage"), Step("commit")]
        self.discard_base = len(steps)
        steps += [Step("discard", CARDS[c]) for c in range(53)]
        self.declare_base = -1
        if v.declares:
            self.declare_base = len(steps)
            steps += [Step("declare", CARDS[c]) for c in range(53)]
        self.steps: tuple[Step, ...] = tuple(steps)
        self._index = {s: i for i, s in enumerate(self.steps)}
        #: What the meld's own checks allow on each meld met on the table (_meld_steps).
        self._on_meld: dict[Meld, tuple[frozenset[Card], bool, frozenset[Card]]] = {}
        self._new_index = {s: self.new_base + n for n, s in enumerate(self.shapes)}
        #: The ``new`` steps each hand met holds (_shapes_held).
        self._held_shapes: dict[tuple[Card, ...], list[int]] = {}
        # The shapes by their two lowest natural cards (-1 for the second of a shape with one
        # natural card): a hand holds a shape only if it holds both, so a mask looks at the
        # shapes of the pairs of cards held, not at every shape. Each shape is listed as its
        # natural cards as bits, its jokers and its length (the cheap test of "held") and its
        # step's index; those without jokers apart, for a hand that holds none.
        Entry = tuple[int, int, int, int]
        by_pair: list[dict[int, tuple[list[Entry], list[Entry]]]] = [{} for _ in range(52)]
        for n, shape in enumerate(self.shapes):
            low = sorted(set(shape.naturals))
            entry = (sum(1 << c for c in low), shape.jokers, len(shape.cards), self.new_base + n)
            kinds = by_pair[low[0]].setdefault(low[1] if len(low) > 1 else -1, ([], []))
            kinds[1 if shape.jokers else 0].append(entry)
        # Per lowest card: (the second card as a bit, 0 for none; its shapes without jokers;
        # those with), the shapes in chains (see _chains).
        self._by_pair = tuple(
            tuple(
                (1 << k if k >= 0 else 0, _chains(clean), _chains(wild))
                for k, (clean, wild) in d.items()
            )
            for d in by_pair
        )
        #: Most cards a seat holds when it lays: the deal, the dealer's extra or a draw.
        self.max_hand = v.hand_size + max(v.dealer_extra, 1)
        #: Staging steps a turn may make: each lays a card of the hand or swaps one for a
        #: joker, and a hand of h cards allows at most 2h - 1 of them in any legal turn.
        self.max_lay_steps = 2 * self.max_hand if stages else 0
        #: Most steps of one turn: take and give back, draw, the staging steps, one unstage or
        #: a share of one commit for each, the discard.
        self.max_turn_steps = 4 + 2 * self.max_lay_steps

    # -- the index --------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Number of steps in the index."""
        return len(self.steps)

    @property
    def max_game_length(self) -> int | None:
        """Most steps the seats make in a game made by :meth:`new_game` (NextRound, the
        table's, not counted); None without a turn cap: a portuguese or simple round may then
        last for ever (RULES.md §2, §4: taking the discard and throwing a card back)."""
        if not self.turn_cap:
            return None
        return max_rounds(self.variant, self.options) * self.turn_cap * self.max_turn_steps

    def new_game(self, seed: int | str | bytes = 0) -> tuple[Game, list[Event]]:
        """A new game of this space's variant, options and turn cap."""
        return Game.new(self.variant, self.options, seed, turn_cap=self.turn_cap)

    def describe(self, i: int) -> str:
        """Step ``i`` in words: ``lay 7♥ 8♥ JK(9♥)``, ``add 3 10♥``, ``discard 9♣``."""
        return str(self.steps[i])

    def index(self, step: Step) -> int:
        """The index of a step (the inverse of ``steps[i]``)."""
        return self._index[step]

    def new_index(self, shape: Meld) -> int:
        """The index of the ``new`` step that lays ``shape``."""
        return self._new_index[shape]

    # -- the mask ---------------------------------------------------------------------------

    def legal_steps(self, game: Game, state: StepState) -> list[int]:
        """Exactly the steps the seat to move may take next, in index order (none when the
        round or the game is over: ``NextRound`` is the table's)."""
        state.sync(game)
        if game.phase not in (Phase.DRAW, Phase.PLAY):
            return []
        if self.variant.declares:
            return self._legal_steps(game, state)  # nothing staged: each mask is asked once
        # The mask is a function of the game, which changes only with its action number,
        # and of the turn in progress: kept per game position, since a turn's masks meet
        # the same staged steps again as steps are staged and unstaged.
        if state._masked is not game:
            state._masks.clear()
            state._masked = game
        key = (
            state.taking,
            state.gave_back,
            tuple(state.staged),
            state.used < self.max_lay_steps,
        )
        found = state._masks.get(key)
        if found is None:
            found = state._masks[key] = tuple(self._legal_steps(game, state))
        return list(found)

    def _legal_steps(self, game: Game, state: StepState) -> list[int]:
        seat = game.turn
        out: list[int] = []
        if game.phase == Phase.DRAW and not state.taking:
            if game.draw_refusal(seat, "stock") is None:
                out.append(0)
            # Tallage's take is refused without its lay: the lay is staged after the take.
            if (
                not state.gave_back
                and "discard" in game.draw_sources(seat)
                and (self.variant.must_lay_discard or game.draw_refusal(seat, "discard") is None)
            ):
                out.append(1)
            return out
        if state.used < self.max_lay_steps:
            out += self._staging(game, seat, state)
        if state.staged or state.taking:
            out.append(self.unstage)
        if state.staged and self._commit_ok(game, seat, state):
            out.append(self.commit)
        if game.phase == Phase.PLAY and not state.staged:
            base = self.discard_base
            out += [base + c for c in game.discardable(seat)]
            if self.variant.declares:
                out += [self.declare_base + c for c in self._declarations(game, seat, state)]
        return sorted(out)

    def mask(self, game: Game, state: StepState) -> list[bool]:
        """:meth:`legal_steps` as one flag per index."""
        flags = [False] * self.size
        for i in self.legal_steps(game, state):
            flags[i] = True
        return flags

    def _declarations(self, game: Game, seat: int, state: StepState) -> list[Card]:
        # The game's own list (one solver search at most, not one per card).
        return game.declarable(seat)

    def _staging(self, game: Game, seat: int, state: StepState) -> list[int]:
        """The staging steps the engine accepts after the staged ones."""
        if self.variant.declares or not (state.taking or game.can_lay(seat)):
            return []
        out: list[int] = []
        hand = state.hand
        shapes = self._held_shapes.get(hand)
        if shapes is None:
            shapes = self._shapes_held(hand)
        # Once the engine has accepted one held shape after the staged steps, it accepts
        # every held shape: a shape's NewMeld makes a valid meld (checked when the space was
        # built), its cards are in the hand the staged steps leave and one card is left
        # (_shapes_held); what else could refuse it (the seat's turn, its phase, laying now,
        # the staged steps) is the same for every shape.
        for i, index in enumerate(shapes):
            verdict = self._stage_ok(game, seat, state, self.steps[index].lay_step())
            if verdict is None:
                break  # no new meld may be staged now, whichever
            if verdict:
                out += shapes[i:]
                break
        if not self.max_melds or len(hand) < 2:
            return out
        cards = frozenset(hand)
        # As with the shapes: once the engine has accepted one step on a table meld, it
        # accepts every one that the meld's own check allows (it makes that same meld, with a
        # card of the hand the staged steps leave); the rest of what it checks is the same
        # for them all (the seat's turn and phase, that it opened before this turn).
        on_table = False
        for k, tm in enumerate(state.melds, 1):
            if k > self.max_melds:  # pragma: no cover - the deck allows no more
                raise AssertionError(f"meld {k} on the table: more than {self.max_melds}")
            adds, low, takes = self._meld_steps(tm.meld)
            for c in sorted(adds & cards):
                verdict = on_table or self._stage_ok(game, seat, state, AddToMeld(k, (c,)))
                if verdict is None:
                    return out
                if verdict:
                    on_table = True
                    out.append(self.add_base + (k - 1) * 54 + c)
            if (
                low
                and JOKER in cards
                and (on_table or self._stage_ok(game, seat, state, AddToMeld(k, (JOKER,), "low")))
            ):
                out.append(self.add_base + (k - 1) * 54 + 53)
            for c in sorted(takes & cards):
                if on_table or self._stage_ok(game, seat, state, TakeJoker(k, c)):
                    out.append(self.joker_base + (k - 1) * 52 + c)
        return out

    def _shapes_held(self, hand: tuple[Card, ...]) -> list[int]:
        """The ``new`` steps whose meld ``hand`` holds, leaving a card: the shapes of each
        held pair of cards (and of each held card alone, with jokers), in chains (see
        _chains), each read up to its first shape not held. Kept per hand: a turn's masks
        meet the same hands again as steps are staged and unstaged."""
        held = 0
        for c in hand:
            if c != JOKER:
                held |= 1 << c
        jokers = hand.count(JOKER)
        left = len(hand)
        shapes: list[int] = []
        for first in sorted({c for c in hand if c != JOKER}):
            for second, clean, wild in self._by_pair[first]:  # some four per card
                if held & second != second:
                    continue
                for chain in (clean + wild) if jokers else clean:
                    for bits, need_jokers, length, index in chain:
                        if bits & ~held or need_jokers > jokers or length >= left:
                            break  # not held, or it would leave no card: nor the rest
                        shapes.append(index)
        if len(self._held_shapes) >= 4096:
            self._held_shapes.clear()
        self._held_shapes[hand] = shapes
        return shapes

    def _meld_steps(self, meld: Meld) -> tuple[frozenset[Card], bool, frozenset[Card]]:
        """What the meld's own checks allow on ``meld``: the cards that go on it (a joker at
        the end a run goes on by default), whether a joker also goes at its low end as another
        meld, and the cards that take its joker back. Kept per meld: a meld stays on the table
        for many masks."""
        found = self._on_meld.get(meld)
        if found is not None:
            return found
        jpm = self.options.jokers_per_meld
        adds: set[Card] = set()
        grown_joker: Meld | None = None
        for c in CARDS:
            if _foreign(meld, c):
                continue
            try:
                grown = meld.with_added(c, jokers_per_meld=jpm)
            except MeldError:
                continue
            adds.add(c)
            if c == JOKER:
                grown_joker = grown
        low = False
        if meld.kind == RUN:
            try:
                low = meld.with_added(JOKER, end="low", jokers_per_meld=jpm) != grown_joker
            except MeldError:
                low = False
        takes: set[Card] = set()
        if not meld.is_clean:
            for c in CARDS[:52]:
                if _foreign(meld, c):
                    continue
                try:
                    meld.with_joker_taken(c)
                except MeldError:
                    continue
                takes.add(c)
        if len(self._on_meld) >= 4096:
            self._on_meld.clear()
        found = self._on_meld[meld] = (frozenset(adds), low, frozenset(takes))
        return found

    def _stage_ok(self, game: Game, seat: int, state: StepState, step: LayStep) -> bool | None:
        """True when the engine accepts ``step`` after the staged steps (a lay that may still
        grow), False when it refuses it, None when it refuses any step of that kind now."""
        try:
            game.plan_lay(seat, Lay((*state.staged, step)), with_discard=state.taking, partial=True)
        except RuleError as e:
            return None if e.reason in _GATES else False
        return True

    def _commit_ok(self, game: Game, seat: int, state: StepState) -> bool:
        """True when the engine accepts the staged lay as a whole move now: ``plan_lay`` is
        the check ``apply`` makes of a lay (alone, or with the discard taken), without a
        clone of the game."""
        try:
            game.plan_lay(seat, Lay(tuple(state.staged)), with_discard=state.taking)
        except RuleError:
            return False
        return True

    def _commit_action(self, state: StepState) -> Action:
        lay = Lay(tuple(state.staged))
        return Draw("discard", lay) if state.taking else lay

    # -- playing a step ---------------------------------------------------------------------

    def apply_step(
        self, game: Game, state: StepState, i: int, *, check: bool = True
    ) -> list[Event]:
        """Take step ``i`` for the seat to move: stage it in ``state``, or apply it to
        ``game`` (commit, draw, take, discard, declare). Returns the game's events (none for a
        staging step). Raises :class:`IllegalAction` (``ILLEGAL_STEP``) for a step not in
        :meth:`legal_steps` (``check=False`` skips that test, for a caller that just made it)."""
        if check and i not in self.legal_steps(game, state):
            if not (isinstance(i, int) and 0 <= i < self.size):
                raise IllegalAction(
                    f"{i!r} is no step: steps are 0 to {self.size - 1}", "ILLEGAL_STEP"
                )
            raise IllegalAction(
                f"{self.describe(i)} is not a legal step now ({_when(game, state)}; "
                "legal_steps lists those that are)",
                "ILLEGAL_STEP",
            )
        state.sync(game)
        step = self.steps[i]
        seat = game.turn
        if step.kind in ("new", "add", "add-low", "joker"):
            staged = [*state.staged, step.lay_step()]
            before = (state.hand, state.melds)
            state.hand, state.melds = game.plan_lay(
                seat, Lay(tuple(staged)), with_discard=state.taking, partial=True
            )
            state.staged = staged
            state._before.append(before)
            state.used += 1
            return []
        if step.kind == "unstage":
            if state.staged:
                state.staged.pop()
                state.hand, state.melds = state._before.pop()
            else:
                state.taking, state.gave_back = False, True
                state._rebase(game)
            return []
        if step.kind == "take" and self.variant.must_lay_discard:
            state.taking = True
            state._rebase(game)
            return []
        events = game.apply(seat, self._final_action(state, i))
        state.sync(game)
        return events

    def ends_move(self, i: int) -> bool:
        """True when step ``i`` sends a move to the game (a draw, tallage's ``take`` aside; a
        commit, a discard or a declaration); False for the steps that only stage."""
        kind = self.steps[i].kind
        if kind == "take":
            return not self.variant.must_lay_discard
        return kind in ("draw", "commit", "discard", "declare")

    def stage(self, game: Game, steps: Sequence[int]) -> StepState:
        """The turn in progress after ``steps``, staging steps taken from the start of the
        seat's move in ``game``, each legal after those before it (what the network's
        LegalSteps is sent). ``game`` is not changed. Raises :class:`IllegalAction`
        (``ILLEGAL_STEP``) for a step that is not legal then, or one that ends the move."""
        state = StepState()
        for n, i in enumerate(steps):
            self._check_next(game, state, n, i)
            if self.ends_move(i):
                raise IllegalAction(
                    f"step {n + 1}, {self.describe(i)}, ends the move: no step may follow",
                    "ILLEGAL_STEP",
                )
            self.apply_step(game, state, i, check=False)  # stages only: the game is as it was
        return state

    def action_of(self, game: Game, steps: Sequence[int]) -> Action:
        """The move that ``steps`` make from the start of the seat's move in ``game`` (the
        staging steps, then the one that ends the move): each must be legal after those before
        it, and only the last may end the move. ``game`` is not changed. Raises
        :class:`IllegalAction` (``ILLEGAL_STEP``) otherwise."""
        if not steps:
            raise IllegalAction("these steps do not end with a move", "ILLEGAL_STEP")
        state = self.stage(game, steps[:-1])
        last = steps[-1]
        self._check_next(game, state, len(steps) - 1, last)
        if not self.ends_move(last):
            raise IllegalAction("these steps do not end with a move", "ILLEGAL_STEP")
        return self._final_action(state, last)

    def _check_next(self, game: Game, state: StepState, n: int, i: int) -> None:
        """Refuse step ``i``, the ``n``-th (from 0), unless it is legal now."""
        if not 0 <= i < self.size or i not in self.legal_steps(game, state):
            what = self.describe(i) if 0 <= i < self.size else f"no step {i}"
            raise IllegalAction(f"step {n + 1}, {what}, is not a legal step then", "ILLEGAL_STEP")

    def _final_action(self, state: StepState, i: int) -> Action:
        step = self.steps[i]
        if step.kind == "commit":
            return self._commit_action(state)
        if step.kind == "draw":
            return _DRAW_STOCK
        if step.kind == "take":
            return _DRAW_DISCARD
        assert step.card is not None
        return Discard(step.card) if step.kind == "discard" else Declare(step.card)

    def steps_of(self, game: Game, state: StepState, action: Action) -> Sequence[int]:
        """Steps that make ``action`` (a draw, a lay of new melds, additions and joker takes,
        a discard or a declaration) from here: for replaying bots' moves. An addition of
        several cards becomes one step per card, in an order in which each fits."""
        out: list[int] = []
        if isinstance(action, Draw):
            out.append(0 if action.source == "stock" else 1)
            if action.lay is not None:
                out += self._lay_steps(game, action.lay, with_discard=True)
                out.append(self.commit)
        elif isinstance(action, Lay):
            out += self._lay_steps(game, action, with_discard=False)
            out.append(self.commit)
        elif isinstance(action, Discard):
            out.append(self.discard_base + action.card)
        elif isinstance(action, Declare):
            out.append(self.declare_base + action.card)
        else:
            raise IllegalAction(f"{action!r} is not a seat's step", "ILLEGAL_STEP")
        return out

    def _lay_steps(self, game: Game, lay: Lay, *, with_discard: bool) -> list[int]:
        lay = _one_card_adds(game, lay, with_discard)
        out: list[int] = []
        jpm = self.options.jokers_per_meld
        for n, s in enumerate(lay.steps):
            if isinstance(s, NewMeld):
                shape = Meld.from_cards(s.cards, jokers_as=s.jokers_as, jokers_per_meld=jpm)
                out.append(self.new_index(shape))
            elif isinstance(s, TakeJoker):
                out.append(self.joker_base + (s.meld - 1) * 52 + s.card)
            else:
                if len(s.cards) != 1:
                    raise IllegalAction("add the cards one at a time as steps", "ILLEGAL_STEP")
                low = s.end == "low" and s.cards[0] == JOKER
                if low and not self._meld_steps(self._meld_before(game, lay, n, with_discard))[1]:
                    # The low end is the only place the joker goes on that meld: the plain
                    # add step puts it there (add-low is offered only where it is another).
                    low = False
                out.append(self.add_base + (s.meld - 1) * 54 + (53 if low else s.cards[0]))
        return out

    def _meld_before(self, game: Game, lay: Lay, n: int, with_discard: bool) -> Meld:
        """The table meld that step ``n`` of ``lay`` goes on, as the steps before it leave it."""
        step = lay.steps[n]
        assert isinstance(step, AddToMeld)
        melds: Sequence[TableMeld] = game.melds
        if n:
            _, melds = game.plan_lay(
                game.turn, Lay(lay.steps[:n]), with_discard=with_discard, partial=True
            )
        if not 1 <= step.meld <= len(melds):
            raise IllegalAction(f"no meld {step.meld} on the table", "ILLEGAL_STEP")
        return melds[step.meld - 1].meld

    def __copy__(self) -> StepSpace:
        return self  # immutable: copies of a game or an environment share their space

    def __deepcopy__(self, memo: dict[int, object]) -> StepSpace:
        return self

    def __repr__(self) -> str:
        return f"StepSpace({self.variant.id!r}, size={self.size})"


def _chains(
    entries: Sequence[tuple[int, int, int, int]],
) -> tuple[tuple[tuple[int, int, int, int], ...], ...]:
    """Shapes (natural cards as bits, jokers, length, index) in chains along which each
    needs at least all that the one before it needs (its natural cards, as many jokers, as
    many cards): a hand that does not hold one of a chain's shapes, or that it would leave
    no card, holds none after it in the chain, so a mask stops reading the chain there. Each
    shape is in one chain; the chains are made greedily, the shapes taken shortest first,
    each put at the end of the first chain it extends."""
    chains: list[list[tuple[int, int, int, int]]] = []
    for e in sorted(entries, key=lambda e: (e[2], e[1], e[3])):
        for chain in chains:
            last = chain[-1]
            if last[0] & ~e[0] == 0 and last[1] <= e[1] and last[2] <= e[2]:
                chain.append(e)
                break
        else:
            chains.append([e])
    return tuple(tuple(c) for c in chains)


def _when(game: Game, state: StepState) -> str:
    """Where the turn stands, as an illegal step's refusal says it."""
    if game.phase not in (Phase.DRAW, Phase.PLAY):
        return "the round is over"
    if game.phase == Phase.DRAW and not state.taking:
        return f"seat {game.turn} is to draw"
    staged = f", {len(state.staged)} staged" if state.staged else ""
    return f"seat {game.turn} is to play{staged}"


def _one_card_adds(game: Game, lay: Lay, with_discard: bool) -> Lay:
    """``lay`` with each addition of several cards made one card at a time, in an order in
    which each card fits the meld as the cards before it leave it (a joker at either end),
    and that leaves the meld as the whole addition does (``Game`` adds the naturals first,
    then the jokers at ``end``): the same lay, as steps can stage it. IllegalAction when
    there is no such order."""
    if all(not isinstance(s, AddToMeld) or len(s.cards) == 1 for s in lay.steps):
        return lay
    done: list[LayStep] = []

    def fits(step: LayStep) -> bool:
        try:
            game.plan_lay(game.turn, Lay((*done, step)), with_discard=with_discard, partial=True)
        except RuleError:
            return False
        return True

    def melds_after(steps: Sequence[LayStep]) -> tuple[TableMeld, ...]:
        return game.plan_lay(game.turn, Lay(tuple(steps)), with_discard=with_discard, partial=True)[
            1
        ]

    def place(
        meld: int, left: tuple[Card, ...], end: Literal["low", "high"] | None, whole: Meld
    ) -> bool:
        if not left:
            return melds_after(done)[meld - 1].meld == whole
        # Naturals first, as Game adds them: the order most likely to end as it does.
        for i, card in sorted(enumerate(left), key=lambda ic: ic[1] == JOKER):
            if card in left[:i]:
                continue  # the same card again: the same tries
            ends: tuple[Literal["low", "high"] | None, ...] = (
                (end, "high", "low") if card == JOKER else (None,)
            )
            for e in dict.fromkeys(ends):
                one = AddToMeld(meld, (card,), e)
                if fits(one):
                    done.append(one)
                    if place(meld, left[:i] + left[i + 1 :], end, whole):
                        return True
                    done.pop()
        return False

    for s in lay.steps:
        if isinstance(s, AddToMeld) and len(s.cards) > 1:
            whole = melds_after([*done, s])[s.meld - 1].meld
            if not place(s.meld, s.cards, s.end, whole):
                raise IllegalAction(
                    f"the cards added to meld {s.meld} do not fit it one at a time",
                    "ILLEGAL_STEP",
                )
        else:
            done.append(s)
    return Lay(tuple(done))


def _foreign(meld: Meld, card: Card) -> bool:
    """True for a natural card of another suit than a run's, or of another rank than a set's:
    it neither goes on the meld nor takes its joker back (said without asking the meld)."""
    if card == JOKER:
        return False
    return card // 13 != meld.suit if meld.kind == RUN else card % 13 + 1 != meld.rank


@functools.lru_cache(maxsize=64)
def step_space(variant: str, options: Options) -> StepSpace:
    """The step space of ``variant`` with ``options``, made once (a space is never changed
    once made, and making tallage's takes some 40 ms): what a server uses for every table."""
    return StepSpace(variant, options)
