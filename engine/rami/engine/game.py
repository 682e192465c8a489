"""The game: one state machine for the three variants, and its single checked entry point.

A :class:`Game` is fully determined by (variant, options, seed, actions): replaying the same
actions from the same seed gives the same states. :meth:`Game.apply` checks an action against
the rules and either applies all of it, returning the public events, or raises a
:class:`~rami.engine.errors.RuleError` that says which rule refused it and changes nothing.

State leaves the engine only through :func:`rami.engine.views.view`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from .actions import (
    Action,
    AddToMeld,
    Declare,
    Discard,
    Draw,
    Lay,
    NewMeld,
    NextRound,
    Source,
    TakeJoker,
)
from .cards import CARDS, JOKER, Card, format_cards, full_deck
from .errors import IllegalAction, MalformedAction, RuleError
from .events import (
    Declared,
    Discarded,
    Drew,
    Event,
    GameEnded,
    Laid,
    RoundEnded,
    RoundResult,
    RoundStarted,
    StockRebuilt,
)
from .fair import FairDeal
from .melds import RUN, SET, End, Meld, MeldError, TableMeld
from .rng import derive_seed, seed_commitment, shuffle
from .solver import deadwood, declaration_cards, portuguese_declaration
from .variants import Options, Variant, get_variant

__all__ = ["LEARNING_TURN_CAP", "RAMI_SEC_POINTS", "Game", "Phase", "TableMeld", "max_rounds"]

#: What each other player pays for a Rami sec (RULES.md §3).
RAMI_SEC_POINTS = 200

#: The turn cap learning environments use (``Game.new(turn_cap=...)``; a server's tables set
#: their own, the same with the default options: docs/operations.md §5).
#: A round that draws from the stock every turn ends void by itself (RULES.md §2) after at most
#: (``stock_rebuilds`` + 1) × the deck's size turns: 432 with the default 3 rebuilds of a
#: 108-card deck. So 500 only cuts what the rules leave endless: portuguese and simple players
#: taking the discard and throwing a card back, turn after turn, the stock never shrinking.
LEARNING_TURN_CAP = 500


class Phase(StrEnum):
    """Where the game stands: whose move and of what kind."""

    DRAW = "draw"  # the player to move takes a card
    PLAY = "play"  # the player to move lays (where allowed), then discards or declares
    ROUND_OVER = "round_over"  # waiting for the next deal
    GAME_OVER = "game_over"


@dataclass(slots=True)
class _LayPlan:
    """A lay checked against a copy of the state, ready to commit."""

    hand: list[Card]
    melds: list[TableMeld]
    new_ids: list[int]
    changed_ids: list[int]
    cards: list[Card]
    jokers_taken: int
    opens: bool
    opening_value: int
    finish: bool


@dataclass
class Game:
    """The state of one game, and :meth:`apply`."""

    variant: Variant
    options: Options
    seed: bytes
    decks: tuple[tuple[Card, ...], ...] = ()
    #: Shuffle seeds given for the first rounds (replaying a record); later ones are derived.
    round_seeds: tuple[bytes, ...] = ()
    #: A fair game's seeds (``fair.py``): the later rounds are dealt from them, not ``seed``.
    fair: FairDeal | None = None
    #: The shuffle seed of the round being played (secret until the round is over).
    shuffle_seed: bytes = b""
    round: int = 0
    dealer: int = 0
    turn: int = 0
    phase: Phase = Phase.DRAW
    turn_index: int = 0
    hands: list[list[Card]] = field(default_factory=list)
    stock: list[Card] = field(default_factory=list)  # the top card is the last
    discard: list[Card] = field(default_factory=list)  # the top card is the last
    melds: list[TableMeld] = field(default_factory=list)
    opened_turn: list[int | None] = field(default_factory=list)
    bar: int = 0
    rebuilds: int = 0
    drawn: Card | None = None
    rami_sec: bool = False
    #: For each seat, the cards everyone knows it holds, sorted: those it took from the
    #: discard pile, or showed in a declaration, this round, less a copy of each card it
    #: has laid or discarded since (a copy of a known card laid or thrown counts as that one:
    #: nobody can tell them apart). Public: every view shows it.
    known: list[tuple[Card, ...]] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    results: list[RoundResult] = field(default_factory=list)
    winners: tuple[int, ...] = ()
    #: Every action applied, in order, with its seat (None for the table's NextRound).
    log: list[tuple[int | None, Action]] = field(default_factory=list)
    #: A round in which this many turns have been played ends void, as when the stock runs
    #: out (RULES.md §2), so that every game has a known greatest length (0: none). Learning
    #: environments set one, and a server's tables theirs (docs/operations.md §5); not a rule
    #: option: only rounds of the discard taken again and again get that far.
    turn_cap: int = 0

    # -- creation ---------------------------------------------------------------------------

    @classmethod
    def new(
        cls,
        variant: str | Variant,
        options: Options | None = None,
        seed: int | str | bytes = 0,
        *,
        decks: Sequence[Sequence[int]] = (),
        round_seeds: Sequence[bytes] = (),
        fair: FairDeal | None = None,
        turn_cap: int = 0,
    ) -> tuple[Game, list[Event]]:
        """A new game, its first round dealt; ``decks`` stacks the deck of the first rounds
        (top card first) for tests, puzzles and tutorials; ``round_seeds`` gives the shuffle
        seeds of the first rounds (to replay a record); ``fair`` deals every other round
        fairly (``fair.py``), ``seed`` then being unused; ``turn_cap`` (learning environments'
        :data:`LEARNING_TURN_CAP`, a table's cap) ends a round void after that many turns."""
        v = get_variant(variant) if isinstance(variant, str) else variant
        opts = options or Options()
        if not isinstance(turn_cap, int) or isinstance(turn_cap, bool) or turn_cap < 0:
            raise MalformedAction(f"a turn cap is a whole number, not {turn_cap!r}", "BAD_OPTION")
        if fair is not None and fair.length < max_rounds(v, opts):
            raise MalformedAction(
                f"a fair deal's chain of {fair.length} rounds is shorter than the game",
                "BAD_DEAL",
            )
        game = cls(
            v,
            opts,
            _seed_bytes(seed),
            round_seeds=tuple(round_seeds),
            fair=fair,
            turn_cap=turn_cap,
        )
        stacked = []
        for d in decks:
            deck = tuple(CARDS[c] for c in d)
            if sorted(deck) != sorted(full_deck(v.decks, v.jokers)):
                raise MalformedAction(
                    f"a stacked deck must hold exactly the {v.deck_size} cards of {v.id}",
                    "BAD_DECK",
                )
            stacked.append(deck)
        game.decks = tuple(stacked)
        game.totals = [0] * opts.players
        events = game._deal()
        return game, events

    @classmethod
    def replay(
        cls,
        variant: str | Variant,
        options: Options | None,
        seed: int | str | bytes,
        actions: Sequence[tuple[int | None, Action]],
        *,
        decks: Sequence[Sequence[int]] = (),
        turn_cap: int = 0,
    ) -> Game:
        """The game after ``actions`` from the start: the same every time."""
        game, _ = cls.new(variant, options, seed, decks=decks, turn_cap=turn_cap)
        for seat, action in actions:
            game.apply(seat, action)
        return game

    def clone(self) -> Game:
        """An independent copy, cheap enough to call for every trial of a search.

        Only the mutable containers are new; what they hold is shared, because it is
        immutable: cards, melds, actions, results, the variant, the options, the seeds. The
        log and the results only grow, so their lists are copied (pointers, not actions).
        ``test_clone`` checks that every field is either in this list or immutable.
        """
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.hands = [list(h) for h in self.hands]
        new.stock = list(self.stock)
        new.discard = list(self.discard)
        new.melds = list(self.melds)
        new.opened_turn = list(self.opened_turn)
        new.known = list(self.known)
        new.totals = list(self.totals)
        new.results = list(self.results)
        new.log = list(self.log)
        return new

    # -- reading ----------------------------------------------------------------------------

    @property
    def number(self) -> int:
        """Actions applied so far (the game's own count: the log's length)."""
        return len(self.log)

    @property
    def players(self) -> int:
        """Number of seats."""
        return self.options.players

    def has_opened(self, seat: int) -> bool:
        """True once the seat has laid this round (its opening, or a finish)."""
        return self.opened_turn[seat] is not None

    def first_circuit(self) -> bool:
        """True during each player's first turn of the round (no discard may be taken)."""
        return self.turn_index < self.players

    def draw_sources(self, seat: int) -> list[str]:
        """Where the seat may take a card from now (tallage's discard also needs a lay)."""
        if self.phase != Phase.DRAW or seat != self.turn:
            return []
        sources = ["stock"]
        if self.discard and self._discard_refusal(seat) is None:
            sources.append("discard")
        return sources

    def can_lay(self, seat: int) -> bool:
        """True when the rules let the seat lay something now (whether its cards allow it)."""
        if self.phase != Phase.PLAY or seat != self.turn or self.variant.declares:
            return False
        return self.opened_turn[seat] != self.turn_index

    def can_declare(self, seat: int) -> bool:
        """True when the rules let the seat declare now (whether its cards are complete)."""
        return self.phase == Phase.PLAY and seat == self.turn and self.variant.declares

    def declarable(self, seat: int) -> list[Card]:
        """The cards the seat may declare with now, each once, in card order (RULES.md §2):
        none unless it may declare; with false declarations allowed (``reveal``) every card it
        holds (a false one is shown, then discarded); else those that leave 13 complete cards
        (:func:`~rami.engine.solver.declaration_cards`, one search)."""
        if not self.can_declare(seat):
            return []
        hand = self.hands[seat]
        if self.options.false_declaration != "reject":
            return sorted(set(hand))
        jpm = self.options.jokers_per_meld
        return [c for c, _ in declaration_cards(hand, jokers_per_meld=jpm)]

    def state_key(self) -> tuple[object, ...]:
        """Everything that makes the state, for comparing two states."""
        return (
            self.round,
            self.dealer,
            self.turn,
            self.phase,
            self.turn_index,
            tuple(tuple(h) for h in self.hands),
            tuple(self.stock),
            tuple(self.discard),
            tuple(self.melds),
            tuple(self.opened_turn),
            self.bar,
            self.rebuilds,
            self.drawn,
            self.rami_sec,
            tuple(self.known),
            tuple(self.totals),
            tuple(self.results),
            self.winners,
            self.number,
        )

    def discard_top(self) -> Card | None:
        """The discard pile's top card as everyone sees it: None when it lies face down (the
        card a complete declaration put there, RULES.md §2, until the next deal)."""
        if not self.discard:
            return None
        if self.phase in (Phase.ROUND_OVER, Phase.GAME_OVER) and self.results:
            last = self.results[-1]
            if last.ending == "declare" and last.round == self.round:
                return None
        return self.discard[-1]

    def seed_hash(self) -> str:
        """The commitment to this round's shuffle seed ("" for a stacked deck)."""
        if self.round <= len(self.decks):
            return ""
        return seed_commitment(self.shuffle_seed)

    def cards_in_play(self) -> list[Card]:
        """Every card of the round, wherever it is: hands, stock, discard pile, melds."""
        cards = [c for h in self.hands for c in h] + self.stock + self.discard
        for m in self.melds:
            cards.extend(m.meld.cards)
        return cards

    def plan_lay(
        self, seat: int, lay: Lay, *, with_discard: bool = False, partial: bool = False
    ) -> tuple[tuple[Card, ...], tuple[TableMeld, ...]]:
        """The seat's hand and the table after ``lay``, as :meth:`apply` would leave them,
        changing nothing; raises the :class:`RuleError` that :meth:`apply` would.

        ``with_discard``: the lay goes with a draw from the discard pile (``Draw("discard",
        lay)``), the card taken in the hand. ``partial``: check each step against the hand and
        the table the steps before it leave, but not what a whole lay needs at its end (an
        opening's value and clean melds, a finish, the discard taken laid, a joker taken laid
        again, a card kept): a lay that may still grow (``steps.py`` stages lays so).
        """
        if seat != self.turn or self.phase not in (Phase.DRAW, Phase.PLAY):
            raise IllegalAction("it is not your move", "NOT_YOUR_TURN")
        self._check_laying()
        hand = list(self.hands[seat])
        taken = None
        if with_discard:
            if self.phase != Phase.DRAW:
                raise IllegalAction("you have already drawn this turn", "ALREADY_DREW")
            refusal = self._discard_refusal(seat)
            if refusal is not None:
                raise refusal
            hand.append(self.discard[-1])
            taken = self.discard[-1] if self.variant.must_lay_discard else None
        elif self.phase != Phase.PLAY:
            raise IllegalAction("draw first: you lay after taking a card", "MUST_DRAW")
        plan = self._plan_lay(seat, hand, lay, taken, drawing=with_discard, partial=partial)
        return tuple(plan.hand), tuple(plan.melds)

    # -- the one checked entry point --------------------------------------------------------

    def apply(self, seat: int | None, action: Action) -> list[Event]:
        """Apply ``action`` by ``seat`` (None for the table itself, only for NextRound).

        Returns the events it caused. Raises :class:`MalformedAction` or
        :class:`IllegalAction`, saying which rule, and then the state is unchanged.
        """
        if isinstance(action, Draw) and action.source == "stock" and action.lay is not None:
            # Checking a lay against a card the player has not seen would tell them the card.
            raise MalformedAction(
                "a lay goes with a draw from the discard pile only: draw from the stock, then lay",
                "LAY_WITH_STOCK",
            )
        if isinstance(action, NextRound):
            events = self._next_round()
        else:
            mover = self.check_turn(seat)
            if isinstance(action, Draw):
                events = self._draw(mover, action)
            elif isinstance(action, Lay):
                events = self._lay(mover, action)
            elif isinstance(action, Discard):
                events = self._discard(mover, action.card)
            elif isinstance(action, Declare):
                events = self._declare(mover, action.card)
            else:
                raise MalformedAction(f"not an action: {action!r}", "BAD_ACTION")
        self.log.append((seat, action))
        return events

    def check_turn(self, seat: int | None) -> int:
        """Raise what :meth:`apply` refuses any move of ``seat`` with now (no such seat, the
        round or the game over, another seat's turn); else return the seat."""
        if seat is None or not (0 <= seat < self.players):
            raise MalformedAction(f"no seat {seat!r} at a table of {self.players}", "BAD_SEAT")
        if self.phase in (Phase.ROUND_OVER, Phase.GAME_OVER):
            raise IllegalAction(f"the {self._phase_words()}: no play now", "WRONG_PHASE")
        if seat != self.turn:
            raise IllegalAction(f"it is seat {self.turn}'s turn, not yours", "NOT_YOUR_TURN")
        return seat

    def _phase_words(self) -> str:
        return "game is over" if self.phase == Phase.GAME_OVER else "round is over"

    # -- dealing and turns ------------------------------------------------------------------

    def _round_seed(self) -> bytes:
        if self.round <= len(self.round_seeds) and self.round_seeds[self.round - 1]:
            return self.round_seeds[self.round - 1]
        if self.fair is not None:
            return self.fair.round_seed(self.round)
        return derive_seed(self.seed, "round", self.round)

    def _deal(self) -> list[Event]:
        self.round += 1
        v, n = self.variant, self.players
        if self.round > 1:
            self.dealer = (self.dealer + 1) % n
        self.shuffle_seed = self._round_seed()
        if self.round <= len(self.decks):
            deck = list(self.decks[self.round - 1])
        else:
            deck = full_deck(v.decks, v.jokers)
            shuffle(deck, self.shuffle_seed)
        self.hands = [[] for _ in range(n)]
        pos = 0
        for _ in range(v.hand_size):
            for i in range(1, n + 1):
                self.hands[(self.dealer + i) % n].append(deck[pos])
                pos += 1
        for _ in range(v.dealer_extra):
            self.hands[self.dealer].append(deck[pos])
            pos += 1
        self.discard = [deck[pos]]
        self.stock = deck[pos + 1 :][::-1]
        for h in self.hands:
            h.sort()
        self.melds = []
        self.opened_turn = [None] * n
        self.known = [()] * n
        self.bar = 0
        self.rebuilds = 0
        self.rami_sec = False
        self.turn_index = 0
        self.drawn = None
        if v.dealer_extra:
            self.turn, self.phase = self.dealer, Phase.PLAY  # the dealer plays without drawing
        else:
            self.turn, self.phase = (self.dealer + 1) % n, Phase.DRAW
        return [
            RoundStarted(self.round, self.dealer, self.seed_hash(), self.discard[-1], self.turn)
        ]

    def _next_turn(self) -> list[Event]:
        self.turn = (self.turn + 1) % self.players
        self.turn_index += 1
        self.phase = Phase.DRAW
        self.drawn = None
        if self.turn_cap and self.turn_index >= self.turn_cap:
            return self._end_round("void", None)  # the game's cap of turns: see turn_cap
        if self.stock:
            return []
        # The stock ran out: rebuild it from the pile, or end the round void (RULES.md §2).
        if self.rebuilds >= self.options.stock_rebuilds or len(self.discard) < 2:
            return self._end_round("void", None)
        top = self.discard.pop()
        rest = self.discard
        shuffle(rest, derive_seed(self.shuffle_seed, "rebuild", self.rebuilds))
        self.stock, self.discard = rest, [top]
        self.rebuilds += 1
        return [StockRebuilt(self.rebuilds, len(self.stock))]

    def _next_round(self) -> list[Event]:
        if self.phase != Phase.ROUND_OVER:
            if self.phase == Phase.GAME_OVER:
                raise IllegalAction("the game is over", "WRONG_PHASE")
            raise IllegalAction("the round is still being played", "WRONG_PHASE")
        return self._deal()

    # -- drawing ----------------------------------------------------------------------------

    def _discard_refusal(self, seat: int) -> IllegalAction | None:
        if not self.discard:
            return IllegalAction("the discard pile is empty", "EMPTY_DISCARD")
        if self.variant.moroccan_draw_rules:
            if self.first_circuit():
                return IllegalAction(
                    "nobody takes the discard during the first circuit of the table",
                    "FIRST_CIRCUIT",
                )
            if len(self.hands[seat]) == 1:
                return IllegalAction("a player holding one card takes from the stock", "ONE_CARD")
        return None

    def draw_refusal(self, seat: int, source: Source) -> RuleError | None:
        """What :meth:`apply` would refuse a plain ``Draw(source)`` of ``seat`` with now, or
        None when it would accept it (said without drawing: a mask asks it at every turn)."""
        try:
            self.check_turn(seat)
            self._check_draw(seat, Draw(source))
        except RuleError as e:
            return e
        return None

    def _check_draw(self, seat: int, action: Draw) -> None:
        """Raise what refuses ``action`` before its lay is looked at (the seat's turn is
        :meth:`check_turn`'s)."""
        if self.phase != Phase.DRAW:
            if self.drawn is None and self.variant.dealer_extra and self.turn_index == 0:
                raise IllegalAction(
                    "the dealer plays the first turn without drawing: lay or discard",
                    "DEALER_NO_DRAW",
                )
            raise IllegalAction("you have already drawn this turn", "ALREADY_DREW")
        if action.source not in ("stock", "discard"):
            raise MalformedAction(
                f"draw from stock or discard, not {action.source!r}", "BAD_SOURCE"
            )
        if action.lay is not None and self.variant.declares:
            raise IllegalAction("nothing is laid in portuguese: hands stay closed", "NO_LAYING")
        if action.source == "discard":
            refusal = self._discard_refusal(seat)
            if refusal is not None:
                raise refusal
            if self.variant.must_lay_discard and action.lay is None:
                raise IllegalAction(
                    "in tallage a discard taken must be laid this turn: send the lay with the draw",
                    "MUST_LAY_DISCARD",
                )

    def _draw(self, seat: int, action: Draw) -> list[Event]:
        self._check_draw(seat, action)
        if action.source == "stock":
            card = self.stock[-1]
            hand = [*self.hands[seat], card]
            plan = None
            self.stock.pop()
            events: list[Event] = [Drew(seat, "stock")]
        else:
            card = self.discard[-1]
            hand = [*self.hands[seat], card]
            must_lay = self.variant.must_lay_discard
            plan = None
            if action.lay is not None:
                plan = self._plan_lay(
                    seat, hand, action.lay, card if must_lay else None, drawing=True
                )
            self.discard.pop()
            events = [Drew(seat, "discard", card)]
            self.known[seat] = tuple(sorted((*self.known[seat], card)))
        self.hands[seat] = sorted(hand)
        self.drawn = card
        self.phase = Phase.PLAY
        if plan is not None:
            events.extend(self._commit_lay(seat, plan))
        return events

    # -- laying -----------------------------------------------------------------------------

    def _lay(self, seat: int, lay: Lay) -> list[Event]:
        self._check_laying()
        if self.phase != Phase.PLAY:
            raise IllegalAction("draw first: you lay after taking a card", "MUST_DRAW")
        plan = self._plan_lay(seat, list(self.hands[seat]), lay, None, drawing=False)
        return self._commit_lay(seat, plan)

    def _check_laying(self) -> None:
        """A variant whose hands stay closed refuses every lay, in any phase, for that reason
        first (not "draw first", which would suggest a lay after the draw)."""
        if self.variant.declares:
            raise IllegalAction(
                "nothing is laid in portuguese: hands stay closed; declare to finish", "NO_LAYING"
            )

    def _plan_lay(
        self,
        seat: int,
        hand: list[Card],
        lay: Lay,
        taken: Card | None,
        *,
        drawing: bool,
        partial: bool = False,
    ) -> _LayPlan:
        """Check ``lay`` on copies of the hand and the table; raise if any rule refuses it
        (``partial``: only its steps, not the conditions on a whole lay, see plan_lay)."""
        v, opts = self.variant, self.options
        self._check_laying()
        if not isinstance(lay, Lay) or not lay.steps:
            raise MalformedAction("a lay needs at least one step", "BAD_ACTION")
        opened_at = self.opened_turn[seat]
        opened = opened_at is not None
        if opened and opened_at == self.turn_index:
            if v.lays_whole_hand:
                raise IllegalAction(
                    "you laid your hand this turn: discard your last card", "OPENED_THIS_TURN"
                )
            raise IllegalAction(
                "you opened this turn: you lay again from your next turn", "OPENED_THIS_TURN"
            )
        free = opened and v.has_opening
        work = list(hand)
        melds = list(self.melds)
        jokers_before = hand.count(JOKER)
        taken_before = hand.count(taken) if taken is not None else 0
        new_ids: list[int] = []
        changed: list[int] = []
        cards: list[Card] = []
        jokers_taken = 0
        for step in lay.steps:
            if isinstance(step, NewMeld):
                _take(work, step.cards)
                try:
                    meld = Meld.from_cards(
                        step.cards, jokers_as=step.jokers_as, jokers_per_meld=opts.jokers_per_meld
                    )
                except MeldError as e:
                    raise IllegalAction(str(e), "INVALID_MELD") from None
                melds.append(TableMeld(seat, meld))
                new_ids.append(len(melds))
                cards.extend(step.cards)
            elif isinstance(step, AddToMeld | TakeJoker):
                if not free:
                    what = "add to a meld" if isinstance(step, AddToMeld) else "take a joker back"
                    if v.lays_whole_hand:
                        raise IllegalAction(
                            f"in simple nobody may {what}: you lay your whole hand at once",
                            "NO_LAYING",
                        )
                    raise IllegalAction(f"open first: only then may you {what}", "NOT_OPENED")
                if not (1 <= step.meld <= len(melds)):
                    raise IllegalAction(
                        f"there is no meld {step.meld} on the table", "NO_SUCH_MELD"
                    )
                target = melds[step.meld - 1]
                try:
                    if isinstance(step, AddToMeld):
                        _take(work, step.cards)
                        new = _add_cards(target.meld, step.cards, step.end, opts.jokers_per_meld)
                        cards.extend(step.cards)
                    else:
                        _take(work, (step.card,))
                        new = target.meld.with_joker_taken(step.card)
                        work.append(JOKER)
                        jokers_taken += 1
                        cards.append(step.card)
                except MeldError as e:
                    raise IllegalAction(str(e), "INVALID_MELD") from None
                melds[step.meld - 1] = TableMeld(target.owner, new)
                if step.meld not in changed and step.meld not in new_ids:
                    changed.append(step.meld)
            else:
                raise MalformedAction(f"not a lay step: {step!r}", "BAD_ACTION")
        if partial:
            return _LayPlan(work, melds, new_ids, changed, cards, jokers_taken, False, 0, False)
        if work.count(JOKER) > jokers_before:
            raise IllegalAction(
                "a joker taken back must be laid again in the same lay", "JOKER_NOT_RELAID"
            )
        if taken is not None and work.count(taken) >= taken_before:
            raise IllegalAction(
                f"the discard taken ({taken}) must be laid in this same move", "MUST_LAY_DISCARD"
            )
        if not work:
            raise IllegalAction(
                "keep one card to discard: no lay may empty the hand", "MUST_KEEP_CARD"
            )
        opens, value, finish = False, 0, False
        if not free:
            laid = [m.meld for m in melds[len(self.melds) :]]
            clean_set = any(m.is_clean and m.kind == SET for m in laid)
            clean_run = any(m.is_clean and m.kind == RUN for m in laid)
            finish = len(work) == 1 and clean_set and clean_run
            if v.lays_whole_hand:
                if not finish:
                    if len(work) > 1:
                        why = f"this lay leaves {len(work)} cards in your hand"
                    elif not clean_set and not clean_run:
                        why = "this lay has neither a clean set nor a clean run"
                    else:
                        why = f"this lay has no clean {'set' if not clean_set else 'run'}"
                    raise IllegalAction(
                        "in simple you lay the whole hand at once: every card but one in melds, "
                        f"with at least one clean set and one clean run; {why}",
                        "NOT_A_FINISH",
                    )
            else:
                value = sum(m.opening_value() for m in laid)
                refusal = self._opening_refusal(clean_set, clean_run, value)
                if refusal is None:
                    opens = True
                elif not finish and len(work) == 1:
                    # Every card but one laid: a whole-hand finish, refused as one.
                    raise IllegalAction(
                        "a whole-hand finish needs at least one clean set and one clean run "
                        f"among its melds: it lacks {_missing(clean_set, clean_run)}",
                        "NOT_A_FINISH",
                    )
                elif not finish:
                    raise refusal
        else:
            finish = len(work) == 1
        return _LayPlan(work, melds, new_ids, changed, cards, jokers_taken, opens, value, finish)

    def _opening_refusal(
        self, clean_set: bool, clean_run: bool, value: int
    ) -> IllegalAction | None:
        """Why new melds are not an opening (RULES.md §3), or None when they are."""
        if not (clean_set and clean_run):
            return IllegalAction(
                "an opening needs at least one clean set and one clean run: it lacks "
                f"{_missing(clean_set, clean_run)}",
                "OPENING_NEEDS_CLEAN_MELDS",
            )
        least = self.options.opening
        if value < least:
            return IllegalAction(
                f"an opening needs clean melds worth at least {least}; yours are worth {value}",
                "OPENING_TOO_LOW",
            )
        if value <= self.bar:
            return IllegalAction(
                f"an opening must beat the bar: the bar is {self.bar}, yours is worth {value}; "
                f"you need {self.bar + 1}",
                "OPENING_BELOW_BAR",
            )
        return None

    def _commit_lay(self, seat: int, plan: _LayPlan) -> list[Event]:
        nobody_had_laid = not self.melds
        self.hands[seat] = sorted(plan.hand)
        self.melds = plan.melds
        if self.known[seat]:
            # A joker taken back came from the table and was laid again: not one of the hand's.
            laid = list(plan.cards)
            for _ in range(plan.jokers_taken):
                if JOKER in laid:
                    laid.remove(JOKER)
            self._forget(seat, laid)
        if self.opened_turn[seat] is None:
            self.opened_turn[seat] = self.turn_index
        if plan.opens:
            self.bar = plan.opening_value
        if plan.finish and nobody_had_laid:
            self.rami_sec = True
        touched = sorted({*plan.new_ids, *plan.changed_ids})
        return [
            Laid(
                seat,
                tuple(plan.new_ids),
                tuple(plan.changed_ids),
                tuple((i, self.melds[i - 1]) for i in touched),
                tuple(plan.cards),
                plan.jokers_taken,
                plan.opens,
                plan.opening_value,
                self.bar,
                plan.finish,
            )
        ]

    def _forget(self, seat: int, cards: Iterable[Card]) -> None:
        """A copy of each of ``cards`` left ``seat``'s hand in sight: no longer known held."""
        known = list(self.known[seat])
        for c in cards:
            if c in known:
                known.remove(c)
        self.known[seat] = tuple(known)

    # -- ending a turn ----------------------------------------------------------------------

    def discard_refusal(self, seat: int, card: Card) -> RuleError | None:
        """What :meth:`apply` would refuse ``Discard(card)`` of ``seat`` with now, or None
        when it would accept it (said without discarding: a mask asks it for every card)."""
        try:
            self.check_turn(seat)
            self._check_discard(seat, card)
        except RuleError as e:
            return e
        return None

    def discardable(self, seat: int) -> list[Card]:
        """The cards ``seat`` may discard now, each once, in card order: those whose
        :meth:`discard_refusal` is None, found with one check of what refuses every discard
        now (the turn, the phase) and not one per card."""
        try:
            self.check_turn(seat)
            self._check_discard_now()
        except RuleError:
            return []
        return sorted(set(self.hands[seat]))

    def _check_discard_now(self) -> None:
        """Raise what refuses any discard of the seat to move now (its turn aside)."""
        if self.phase != Phase.PLAY:
            raise IllegalAction("draw first: you discard after taking a card", "MUST_DRAW")

    def _check_discard(self, seat: int, card: Card) -> Card:
        """Raise what refuses ``card``'s discard (the seat's turn is :meth:`check_turn`'s);
        else return the card. What it checks beyond :meth:`_check_discard_now` is that the
        seat holds the card (:meth:`discardable` relies on it)."""
        self._check_discard_now()
        card = _card(card)
        if card not in self.hands[seat]:
            raise IllegalAction(f"you don't hold {card}", "CARD_NOT_IN_HAND")
        return card

    def _discard(self, seat: int, card: Card) -> list[Event]:
        card = self._check_discard(seat, card)
        hand = self.hands[seat]
        hand.remove(card)
        self.discard.append(card)
        if card in self.known[seat]:
            self._forget(seat, (card,))
        events: list[Event] = [Discarded(seat, card)]
        if not hand:
            ending = "rami_sec" if self.rami_sec else "rami"
            if self.variant.lays_whole_hand and not self.options.simple_rami_sec:
                ending = "rami"
            events.extend(self._end_round(ending, seat))
        else:
            events.extend(self._next_turn())
        return events

    def _declare(self, seat: int, card: Card) -> list[Event]:
        if not self.variant.declares:
            raise IllegalAction(
                f"declaring is for portuguese; in {self.variant.id} you lay your melds",
                "NO_DECLARING",
            )
        if self.phase != Phase.PLAY:
            raise IllegalAction("draw first: you declare after taking a card", "MUST_DRAW")
        card = _card(card)
        hand = self.hands[seat]
        if card not in hand:
            raise IllegalAction(f"you don't hold {card}", "CARD_NOT_IN_HAND")
        rest = list(hand)
        rest.remove(card)
        found = portuguese_declaration(rest, jokers_per_meld=self.options.jokers_per_meld)
        if found is None:
            if self.options.false_declaration == "reject":
                raise IllegalAction(
                    f"{format_cards(rest)} is not complete: every card must be in a meld, with "
                    "at least one natural run",
                    "INCOMPLETE_DECLARATION",
                )
            # A false declaration: the 13 were shown, the card becomes an ordinary discard.
            hand.remove(card)
            self.discard.append(card)
            self.known[seat] = tuple(sorted(rest))
            events: list[Event] = [Declared(seat, tuple(rest), False, card)]
            events.extend(self._next_turn())
            return events
        split, multiplier = found
        hand.remove(card)
        self.discard.append(card)  # face down on the pile; the round is over
        self.known[seat] = tuple(sorted(rest))  # shown: the card face down is not
        events = [Declared(seat, tuple(rest), True, None, multiplier, tuple(split.melds))]
        events.extend(self._end_round("declare", seat, multiplier))
        return events

    # -- ending a round and the game --------------------------------------------------------

    def _points(self, ending: str, winner: int | None, multiplier: int) -> list[int]:
        n = self.players
        if ending == "void" or winner is None:
            return [0] * n
        if ending == "rami_sec":
            return [0 if s == winner else RAMI_SEC_POINTS for s in range(n)]
        if ending == "declare":
            values = self.variant.values
            jpm = self.options.jokers_per_meld
            return [
                0
                if s == winner
                else deadwood(self.hands[s], values, jokers_per_meld=jpm) * multiplier
                for s in range(n)
            ]
        values = self.options.hand_values(self.variant)
        return [0 if s == winner else sum(values[c] for c in self.hands[s]) for s in range(n)]

    def _end_round(self, ending: str, winner: int | None, multiplier: int = 1) -> list[Event]:
        points = self._points(ending, winner, multiplier)
        for s, p in enumerate(points):
            self.totals[s] += p
        result = RoundResult(
            self.round,
            ending,
            winner,
            tuple(points),
            tuple(self.totals),
            multiplier if ending == "declare" else 1,
            tuple(tuple(h) for h in self.hands),
            # Revealed for a stacked round too: its stock rebuilds are shuffled from it.
            self.shuffle_seed.hex(),
            self._server_seed(),
        )
        self.results.append(result)
        self.drawn = None
        events: list[Event] = [RoundEnded(result)]
        if self._game_over():
            low = min(self.totals)
            self.winners = tuple(s for s, t in enumerate(self.totals) if t == low)
            self.phase = Phase.GAME_OVER
            events.append(GameEnded(tuple(self.totals), self.winners))
        else:
            self.phase = Phase.ROUND_OVER
        return events

    def _server_seed(self) -> str:
        """A fair round's server seed, revealed at its end ("" when not dealt fairly)."""
        given = self.round <= len(self.round_seeds) and self.round_seeds[self.round - 1]
        if self.fair is None or given:
            return ""
        return self.fair.server_seed(self.round).hex()

    def _game_over(self) -> bool:
        if self.variant.game_end == "rounds":
            return self.round >= self.options.rounds
        return max(self.totals) >= self.options.target or self.round >= self.options.round_cap


def _missing(clean_set: bool, clean_run: bool) -> str:
    """What a lay lacks of the clean set and clean run it needs."""
    if not clean_set and not clean_run:
        return "a clean set and a clean run"
    return "a clean set" if not clean_set else "a clean run"


def max_rounds(variant: Variant, options: Options) -> int:
    """The most rounds a game can last: portuguese's ``rounds``, or the moroccan safety cap
    (a fair deal's chain has this many seeds, ``fair.py``)."""
    return options.rounds if variant.game_end == "rounds" else options.round_cap


def _seed_bytes(seed: int | str | bytes) -> bytes:
    if isinstance(seed, bytes):
        return seed
    return str(seed).encode()


def _card(card: int) -> Card:
    if not isinstance(card, int) or not (0 <= card <= 52):
        raise MalformedAction(f"not a card: {card!r}", "BAD_CARD")
    return CARDS[card]


def _take(hand: list[Card], cards: Sequence[int]) -> None:
    """Remove ``cards`` from ``hand`` (a working copy), or refuse naming the missing card."""
    for c in cards:
        card = _card(c)
        if card not in hand:
            raise IllegalAction(f"you don't hold {card}", "CARD_NOT_IN_HAND")
        hand.remove(card)


def _add_cards(meld: Meld, cards: Sequence[Card], end: str | None, jpm: int) -> Meld:
    """Add cards to a meld: naturals where they fit (in any order), then jokers at ``end``."""
    pending = [CARDS[c] for c in cards]
    if not pending:
        raise MeldError("name the cards to add")
    side: End | None = "low" if end == "low" else "high" if end == "high" else None
    #: A joker put at the run's end the player did not name (the default): the end, the
    #: run before it and the cards then left, for a refusal's advice.
    defaulted: tuple[End, Meld, list[Card]] | None = None
    while pending:
        for c in pending:
            if c == JOKER:
                continue
            try:
                meld = meld.with_added(c, jokers_per_meld=jpm)
            except MeldError:
                continue
            pending.remove(c)
            break
        else:
            if JOKER in pending:
                before = meld
                meld = meld.with_added(JOKER, end=side, jokers_per_meld=jpm)
                if side is None and before.kind == RUN:
                    defaulted = ("high" if meld.lo == before.lo else "low", before, list(pending))
                pending.remove(JOKER)
            else:
                try:
                    meld.with_added(pending[0], jokers_per_meld=jpm)  # raises, saying why
                except MeldError as e:
                    if defaulted is None or (other := _other_end(*defaulted, jpm)) is None:
                        raise
                    raise MeldError(
                        f"{e}: the joker went to the {defaulted[0]} end, as none was named; "
                        f"name the {other} end to put it there"
                    ) from None
    return meld


def _other_end(placed: End, before: Meld, pending: list[Card], jpm: int) -> End | None:
    """The end to name, when the joker put at the ``placed`` end of ``before`` left cards
    that go nowhere and every one of ``pending`` would have gone on with it at the other
    (asked only of a refusal)."""
    other: End = "low" if placed == "high" else "high"
    try:
        _add_cards(before, pending, other, jpm)
    except MeldError:
        return None
    return other
