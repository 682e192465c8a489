"""Rami as OpenSpiel games: ``import rami.rl.openspiel`` registers ``python_rami_tallage``,
``python_rami_portuguese`` and ``python_rami_simple`` with ``pyspiel.register_game``.

One OpenSpiel game is **one round** (a deal played out), as OpenSpiel's own ``gin_rummy`` is
one hand: a Rami game is a match of such rounds, which a learner or a search plays one at a
time. Parameter ``players`` (2 by default) sets the seats, ``turn_cap`` the round's most
turns (:data:`~rami.engine.game.LEARNING_TURN_CAP` by default: a round that reaches it ends
void, so the game is finite).

- **Chance nodes** deal the cards one by one in the engine's dealing order (each outcome a
  face, weighted by the copies left unseen) and draw each card taken from the stock: a seat
  that takes step ``draw`` is followed by a chance node choosing the card, so every hidden
  card is chance's, and a state never holds an order of the stock that nobody has drawn.
- **Actions** are the variant's steps (:class:`~rami.engine.steps.StepSpace`); the legal
  actions are exactly its mask.
- **Returns** (at the end of the round, zero-sum): +1 shared among the seats that paid the
  fewest points, -1 shared among the others (all 0 when they all paid the same).
- **Observations**: the tensor is :meth:`rami.rl.core.Match.observe` of the seat (a fixed
  layout); the information-state string is the seat's hand and staged steps, its own steps
  this turn, and the public history (draws from the pile, lays, discards, declarations, and
  who drew from the stock), every card it drew itself, and nothing else.
- :meth:`RamiState.resample_from_infostate` deals the cards a seat cannot see (the others'
  hands and the stock) afresh, keeping the cards each seat is known to hold (those it took
  from the pile), so that searches such as OpenSpiel's ISMCTS can determinize.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyspiel

from rami.engine import Phase
from rami.engine.cards import CARDS, full_deck
from rami.engine.events import Declared, Discarded, Drew, Event, Laid
from rami.engine.game import LEARNING_TURN_CAP, Game
from rami.engine.variants import OPTION_SPECS, Options, get_variant

from .core import Match

__all__ = ["GAMES", "RamiGame", "RamiState", "register", "round_options"]

_VARIANTS = ("tallage", "portuguese", "simple")
_FACES = 53


#: Options of a whole game (its rounds, its target, its cap on rounds) or of a table (the
#: seats, the clock): not a round's. The others change a round's play or its points.
_NOT_OF_A_ROUND = ("players", "rounds", "target", "round_cap", "turn_seconds")


def round_options(variant: str) -> dict[str, Any]:
    """The options of ``variant`` that change one round (its game's parameters beside
    ``players`` and ``turn_cap``), with their defaults."""
    defaults = Options().to_dict()
    return {
        spec.name: defaults[spec.name]
        for spec in OPTION_SPECS
        if variant in spec.variants and spec.name not in _NOT_OF_A_ROUND
    }


def _game_type(variant: str) -> pyspiel.GameType:
    return pyspiel.GameType(
        short_name=f"python_rami_{variant}",
        long_name=f"Python Rami ({variant}, one round)",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=6,
        min_num_players=2,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification={
            "players": 2,
            "turn_cap": LEARNING_TURN_CAP,
            **round_options(variant),
        },
    )


@dataclass(frozen=True)
class _Spec:
    """What the states of one game share (kept here, not on the game: OpenSpiel may copy a
    state with its game, and a copied game has none of the attributes its ``__init__`` set)."""

    template: Match
    deal_size: int
    turn_cap: int
    #: The round's options (:func:`round_options`) as given.
    options: tuple[tuple[str, Any], ...] = ()


_SPECS: dict[tuple[Any, ...], _Spec] = {}


def _spec_for(variant: str, params: dict[str, Any]) -> tuple[tuple[Any, ...], _Spec]:
    """The key and spec of the game of ``variant`` with ``params`` (made once a process)."""
    players = int(params.get("players", 2))
    turn_cap = int(params.get("turn_cap", LEARNING_TURN_CAP))
    if turn_cap < 1:  # the engine's "no cap": no bound on the game's length
        raise pyspiel.SpielError(
            f"turn_cap is the turns a round may last, 1 or more (every game ends), not {turn_cap}"
        )
    options = tuple(
        (k, params.get(k, default)) for k, default in sorted(round_options(variant).items())
    )
    key = (variant, players, turn_cap, *options)
    spec = _SPECS.get(key)
    if spec is None:
        template = Match(variant, players, turn_cap=turn_cap, **dict(options))
        v = get_variant(variant)
        deal_size = players * v.hand_size + v.dealer_extra + 1
        spec = _SPECS[key] = _Spec(template, deal_size, turn_cap, options)
    return key, spec


class RamiGame(pyspiel.Game):  # type: ignore[misc]
    """One round of a Rami variant (each variant is a subclass: :data:`GAMES`)."""

    #: The variant of the subclass.
    variant_id = ""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        _, spec = _spec_for(self.variant_id, params or {})
        space = spec.template.space
        info = pyspiel.GameInfo(
            num_distinct_actions=space.size,
            max_chance_outcomes=_FACES,
            num_players=spec.template.players,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=spec.deal_size + spec.turn_cap * (space.max_turn_steps + 1),
        )
        given = {"players": spec.template.players, "turn_cap": spec.turn_cap, **dict(spec.options)}
        super().__init__(_game_type(self.variant_id), info, given)

    @property
    def key(self) -> tuple[Any, ...]:
        """What its states look their spec up by. (From its parameters, once: a copy OpenSpiel
        makes of a game, or an unpickled one, has none of the attributes ``__init__`` set.)"""
        try:
            return self._key  # type: ignore[no-any-return]
        except AttributeError:
            self._key: tuple[Any, ...] = _spec_for(self.variant_id, self.get_parameters())[0]
            return self._key

    def new_initial_state(self) -> RamiState:
        return RamiState(self)

    def deserialize_state(self, text: str) -> RamiState:
        """The state :meth:`RamiState.serialize` wrote: its actions replayed (or, written
        whole, read so)."""
        if "__dict__=" in text:
            whole: RamiState = pyspiel.Game.deserialize_state(self, text)
            return whole
        state = self.new_initial_state()
        for word in text.split():
            state.apply_action(int(word))
        return state

    def make_py_observer(
        self, iig_obs_type: Any = None, params: dict[str, Any] | None = None
    ) -> _Observer | _Recall:
        if iig_obs_type is not None and iig_obs_type.perfect_recall:
            # The information state is a string only (its history grows without bound).
            return _Recall()
        return _Observer(self)


class RamiState(pyspiel.State):  # type: ignore[misc]
    """A round being dealt or played."""

    def __init__(self, game: RamiGame) -> None:
        super().__init__(game)
        self._key = game.key
        self.dealt: list[int] = []
        self.match: Match | None = None
        #: A seat took step ``draw``: chance chooses the card before it is applied.
        self.drawing = False
        #: Per seat: the public history it has seen, and what it alone saw.
        self.seen: list[list[str]] = [[] for _ in range(game.num_players())]
        #: The steps of the seat to move this turn (its own recall).
        self.turn_steps: list[int] = []
        #: While :meth:`clone` copies the history: the player of the action being recorded.
        self._recording: int | None = None
        #: Its history makes it (False once :meth:`resample_from_infostate` dealt the unseen
        #: cards afresh, or ``ismcts.state_at`` started it mid-round): see :meth:`serialize`.
        self.replayable = True

    # -- the tree ---------------------------------------------------------------------------

    def current_player(self) -> int:
        if self._recording is not None:
            return self._recording
        if self.is_terminal():
            return int(pyspiel.PlayerId.TERMINAL)
        if self.match is None or self.drawing:
            return int(pyspiel.PlayerId.CHANCE)
        return self.match.to_move

    def is_terminal(self) -> bool:
        return self.match is not None and self.match.game.phase in (
            Phase.ROUND_OVER,
            Phase.GAME_OVER,
        )

    def _unseen(self) -> Counter[int]:
        """The cards chance may give now: the deck less those dealt (dealing), or the stock."""
        if self.match is None:
            left = Counter(int(c) for c in self._full_deck())
            left.subtract(self.dealt)
            return +left
        return Counter(int(c) for c in self.match.game.stock)

    @property
    def _spec(self) -> _Spec:
        return _SPECS[self._key]

    def _full_deck(self) -> list[int]:
        v = self._spec.template.variant
        return [int(c) for c in full_deck(v.decks, v.jokers)]

    def chance_outcomes(self) -> list[tuple[int, float]]:
        left = self._unseen()
        total = sum(left.values())
        return [(c, n / total) for c, n in sorted(left.items())]

    def _legal_actions(self, player: int) -> list[int]:
        assert self.match is not None and player == self.match.to_move
        return self.match.legal()

    def _apply_action(self, action: int) -> None:
        if self._recording is not None:
            return  # clone() records the history: the state itself is copied
        if self.match is None:
            self._deal(int(action))
        elif self.drawing:
            self._draw(int(action))
        else:
            self._step(int(action))

    def _deal(self, card: int) -> None:
        if self._unseen()[card] <= 0:
            raise pyspiel.SpielError(f"card {card} is not left to deal")
        self.dealt.append(card)
        if len(self.dealt) < self._spec.deal_size:
            return
        rest = Counter(self._full_deck())
        rest.subtract(self.dealt)
        deck = [*self.dealt, *sorted(rest.elements())]
        t = self._spec.template
        match = Match(
            t.variant.id, t.players, turn_cap=self._spec.turn_cap, **dict(self._spec.options)
        )
        match.game, events = Game.new(
            t.variant, t.options, 0, decks=[deck], turn_cap=self._spec.turn_cap
        )
        match._observe(events)
        self.match = match
        for seat in range(t.players):
            hand = " ".join(str(c) for c in sorted(match.game.hands[seat]))
            self.seen[seat].append(f"dealt {hand}; pile {match.game.discard[-1]}")

    def _draw(self, card: int) -> None:
        assert self.match is not None
        stock = self.match.game.stock
        held = [i for i, c in enumerate(stock) if int(c) == card]
        if not held:
            raise pyspiel.SpielError(f"card {card} is not in the stock: chance cannot draw it")
        at = held[-1]
        stock[at], stock[-1] = stock[-1], stock[at]  # chance's card on top, then drawn
        self.drawing = False
        seat = self.match.to_move
        self._events(self._apply(0), seat, drew=CARDS[card])

    def _step(self, i: int) -> None:
        assert self.match is not None
        m = self.match
        seat = m.to_move
        if i == 0 and m.game.phase == Phase.DRAW and i in m.legal():
            self.drawing = True  # chance picks the card
            self.turn_steps.append(i)
            return
        before = m.game.number
        rewards_events = self._apply(i)
        if m.game.number != before or m.to_move != seat:
            self.turn_steps = []
        else:
            self.turn_steps.append(i)
        self._events(rewards_events, seat)

    def _apply(self, i: int) -> list[Event]:
        assert self.match is not None
        events, _ = self.match.play(i)
        return events

    def _events(self, events: list[Event] | None, seat: int, drew: Any = None) -> None:
        """What each seat saw of a move."""
        n = len(self.seen)
        if drew is not None:
            for s in range(n):
                self.seen[s].append(f"{seat} drew {drew}" if s == seat else f"{seat} drew")
            self.turn_steps = []
        for e in events or ():
            match e:
                case Drew(s0, "discard", card):
                    text = f"{s0} took {card}"
                case Laid(seat=s0, cards=cards):
                    text = f"{s0} laid {' '.join(str(c) for c in cards)}"
                case Discarded(s0, card):
                    text = f"{s0} threw {card}"
                case Declared(seat=s0, cards=cards):
                    text = f"{s0} declared {' '.join(str(c) for c in cards)}"
                case _:
                    continue
            for s in range(n):
                self.seen[s].append(text)

    # -- what a seat knows ------------------------------------------------------------------

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            return f"card {CARDS[action]}"
        return self._spec.template.space.describe(action)

    def returns(self) -> list[float]:
        n = len(self.seen)
        if not self.is_terminal():
            return [0.0] * n
        assert self.match is not None
        points = self.match.game.results[-1].points
        low = min(points)
        winners = [s for s in range(n) if points[s] == low]
        if len(winners) == n:
            return [0.0] * n
        return [1 / len(winners) if s in winners else -1 / (n - len(winners)) for s in range(n)]

    def _seat(self, player: int | None) -> int:
        """``player``, or the player to move, checked to be a seat (chance and the terminal
        state have none: Python's negative indexes would read the last seat's)."""
        seat = self.current_player() if player is None else player
        if not 0 <= seat < len(self.seen):
            raise pyspiel.SpielError(
                f"player {seat} is no seat: seats are 0 to {len(self.seen) - 1}"
                + (" (give the seat: the player to move is none)" if player is None else "")
            )
        return seat

    def information_state_string(self, player: int | None = None) -> str:
        player = self._seat(player)
        head = f"p{player}"
        if self.match is None:
            mine = [c for k, c in enumerate(self.dealt) if self._dealt_to(k) == player]
            return f"{head} dealing {' '.join(str(CARDS[c]) for c in mine)}"
        m = self.match
        hand = " ".join(str(c) for c in sorted(m.game.hands[player]))
        own = ""
        if m.to_move == player and not self.is_terminal():
            own = " | now " + " ".join(str(i) for i in self.turn_steps)
        return f"{head} hand {hand}{own} | " + "; ".join(self.seen[player])

    def observation_string(self, player: int | None = None) -> str:
        player = self._seat(player)
        if self.match is None:
            return self.information_state_string(player)
        return self.match.render(player)

    def _dealt_to(self, k: int) -> int:
        """The seat the ``k``-th card of the deal goes to (the engine's dealing order)."""
        t = self._spec.template
        n, v = t.players, t.variant
        dealer = 0  # the first round's dealer
        if k < v.hand_size * n:
            return (dealer + 1 + k % n) % n
        if k < v.hand_size * n + v.dealer_extra:
            return dealer
        return -1  # the pile's first card

    def resample_from_infostate(self, player: int, probability_sampler: Any) -> RamiState:
        """A state that ``player`` cannot tell from this one: the hands of the others and the
        stock dealt afresh from the cards it cannot see."""
        seed = int(probability_sampler() * 2**31) if callable(probability_sampler) else 0
        rng = random.Random(seed)
        new = self.clone()
        new.replayable = False  # the same history, other cards
        m = new.match
        if m is None:
            hidden = [k for k, _ in enumerate(new.dealt) if new._dealt_to(k) != player]
            pool = _pool(new._full_deck(), [c for k, c in enumerate(new.dealt) if k not in hidden])
            rng.shuffle(pool)
            for k in hidden:
                new.dealt[k] = pool.pop()
            return new
        g = m.game
        unseen: list[int] = []
        for s in range(m.players):
            if s != player:
                unseen += [int(c) for c in g.hands[s]]
        unseen += [int(c) for c in g.stock]
        keep: dict[int, list[int]] = {}
        for s in range(m.players):
            if s == player:
                continue
            known = list(m.known[s].elements())
            keep[s] = known
            for c in known:
                unseen.remove(c)
        rng.shuffle(unseen)
        for s in range(m.players):
            if s == player:
                continue
            size = len(g.hands[s])
            hand = keep[s] + [unseen.pop() for _ in range(size - len(keep[s]))]
            g.hands[s] = [CARDS[c] for c in sorted(hand)]
        g.stock = [CARDS[c] for c in unseen]
        return new

    def clone(self) -> RamiState:
        """A copy, made without replaying the game (``copy.deepcopy``, OpenSpiel's default for
        a Python game, replays every action). Its history and move number are the same: the
        actions are recorded by OpenSpiel's ``apply_action`` as they were taken, each applying
        nothing, then the state is copied."""
        new = RamiState(self.get_game())
        for taken in self.full_history():
            new._recording = taken.player
            new.apply_action(taken.action)
        new._recording = None
        new.dealt = list(self.dealt)
        new.drawing = self.drawing
        new.seen = [list(s) for s in self.seen]
        new.turn_steps = list(self.turn_steps)
        new.replayable = self.replayable
        if self.match is not None:
            new.match = self.match.clone()
        return new

    def apply_action_with_legality_check(self, action: int) -> None:
        """:meth:`apply_action`, once ``action`` is legal here. (OpenSpiel's own check
        quotes the whole state in its refusal, the pickle of every object it holds.)"""
        legal = (
            [o for o, _ in self.chance_outcomes()]
            if self.is_chance_node()
            else self.legal_actions()
        )
        if action not in legal:
            player = self.current_player()
            raise pyspiel.SpielError(
                f"action {action} is not legal for player {player} at move"
                f" {self.move_number()} ({len(legal)} legal actions)"
            )
        self.apply_action(action)

    def serialize(self) -> str:
        """The actions taken, one a line (OpenSpiel's own default for a game): the chance
        outcomes are among them, so :meth:`RamiGame.deserialize_state` replays the state
        exactly. A state its history does not make (resampled, or started mid-round) is
        written whole, as OpenSpiel writes a Python state (long: every object it holds)."""
        if not self.replayable:
            return str(pyspiel.State.serialize(self))
        return "".join(f"{a}\n" for a in self.history())

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its game and its actions (pyspiel's own pickle holds every object), or
        # whole when its history does not make it.
        if not self.replayable:
            return (_whole, (pyspiel.State.__getstate__(self),))
        return (_replayed, (self.get_game(), self.serialize()))

    def __str__(self) -> str:
        if self.match is None:
            return f"dealing: {len(self.dealt)} of {self._spec.deal_size} cards"
        return self.match.render()


def _replayed(game: RamiGame, text: str) -> RamiState:
    return game.deserialize_state(text)


def _whole(text: str) -> RamiState:
    state: RamiState = pyspiel.deserialize_game_and_state(text)[1]
    return state


def _pool(deck: list[int], seen: list[int]) -> list[int]:
    left = Counter(deck)
    left.subtract(seen)
    return list((+left).elements())


class _Observer:
    """The observation tensor of a seat: :meth:`Match.observe` (zeros while dealing)."""

    def __init__(self, game: RamiGame) -> None:
        size = _SPECS[game.key].template.layout.size
        self.tensor = np.zeros(size, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: RamiState, player: int) -> None:
        if state.match is None:
            self.tensor.fill(0.0)
        else:
            self.tensor[:] = state.match.observe(player)

    def string_from(self, state: RamiState, player: int) -> str:
        return state.observation_string(player)


class _Recall:
    """A perfect-recall observation: the information-state string, and no tensor (the game
    provides none: asking for one is an error, not the observation tensor in its place)."""

    tensor = None
    dict: dict[str, np.ndarray] = {}  # noqa: RUF012 (read by OpenSpiel, never written)

    def set_from(self, state: RamiState, player: int) -> None:
        raise pyspiel.SpielError(
            "Rami provides no information-state tensor: use the observation tensor, or the"
            " information-state string"
        )

    def string_from(self, state: RamiState, player: int) -> str:
        return state.information_state_string(player)


#: The game class of each variant, registered with OpenSpiel as ``python_rami_<variant>``.
GAMES: dict[str, type[RamiGame]] = {
    v: type(f"Rami{v.title()}Game", (RamiGame,), {"variant_id": v, "__module__": __name__})
    for v in _VARIANTS
}
# Each by its name in this module, as pickle finds a class (games pickle, for workers).
globals().update({cls.__name__: cls for cls in GAMES.values()})


def register() -> None:
    """Register the three variants with OpenSpiel (done on import; calling again is a no-op)."""
    for variant, cls in GAMES.items():
        if f"python_rami_{variant}" not in pyspiel.registered_names():
            pyspiel.register_game(_game_type(variant), cls)


register()
