"""The engine as a learning environment sees it: one game played step by step, its
observations as fixed-layout arrays, and its rewards.

Every environment of ``rami.rl`` stands on :class:`Match`: a :class:`~rami.engine.game.Game`
made with a turn cap (so that a game has a declared maximum length), the variant's
:class:`~rami.engine.steps.StepSpace` (the fixed action index) and the turn's
:class:`~rami.engine.steps.StepState`. The table's own move between rounds (``NextRound``) is
made by the match, never by a seat.

**The observation** of a seat is one ``float32`` vector whose layout depends only on the
variant and the player count (:class:`Layout` names its slices). Seats are counted from the
observer: slot 0 is the observer, slot 1 the next seat to play, and so on. Card blocks have 53
entries, one per face (``rami.engine.cards``: 0-51 the faces, 52 the joker), each the number
of copies divided by 2 (jokers by 4, so that every entry lies in [0, 1]):

- ``hand``: the observer's hand; ``staged``: what is left of it after the steps it has staged
  this turn (the same as ``hand`` when nothing is staged; in tallage, with the taken discard);
- ``discard_top``: the top card of the pile, a flag (1 for its card; none when it lies face
  down);
  ``pile``: every card in the pile, as everyone saw them thrown;
- ``melds``: for each seat slot, the cards in the melds that seat laid;
- ``known``: for each other seat, the cards it is known to hold: those it took from the pile,
  and in portuguese those a false declaration showed, that it has not laid or thrown since;
- ``hand_sizes``, ``totals`` (points so far / the target; portuguese, played for its rounds:
  / 100 points a round), ``opened``: one entry per slot;
- ``turn``: one-hot, the slot of the seat to move;
- ``phase``: one-hot of draw, play, taking (tallage: the discard taken, its lay being staged),
  over; ``bar`` (tallage: the opening to beat / 100), ``stock`` (cards left / deck size),
  ``round`` (the round under way / the most a game may have), ``staged_steps`` (staging
  steps used this turn / the most a turn allows).

Nothing in it is hidden from the observer: other hands appear only as their sizes and the
cards the table saw them take.

**Rewards** (``rewards=``): ``"game"`` (the default) gives each seat, when the game ends,
+1 shared among the winners (the lowest totals) and -1 shared among the others (zero-sum;
all 0 when every seat wins); ``"round"`` gives, when each round ends, minus the points the
seat paid that round divided by 100 (the engine's totals are penalty points: fewer is
better), and nothing more at the end.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rami.engine import Phase
from rami.engine.actions import NextRound
from rami.engine.cards import JOKER
from rami.engine.events import (
    Declared,
    Discarded,
    Drew,
    Event,
    GameEnded,
    Laid,
    RoundEnded,
    RoundStarted,
    StockRebuilt,
)
from rami.engine.game import LEARNING_TURN_CAP, max_rounds
from rami.engine.steps import StepSpace, StepState
from rami.engine.variants import Options, get_variant

__all__ = ["Layout", "Match", "RewardKind"]

RewardKind = Literal["game", "round"]

_PHASES = ("draw", "play", "taking", "over")
_FACES = 53


@dataclass(frozen=True)
class Layout:
    """Where each block of an observation lies (slices of the vector)."""

    players: int
    blocks: tuple[tuple[str, int, int], ...]
    size: int

    @classmethod
    def of(cls, players: int) -> Layout:
        widths = [
            ("hand", _FACES),
            ("staged", _FACES),
            ("discard_top", _FACES),
            ("pile", _FACES),
            ("melds", players * _FACES),
            ("known", (players - 1) * _FACES),
            ("hand_sizes", players),
            ("totals", players),
            ("opened", players),
            ("turn", players),
            ("phase", len(_PHASES)),
            ("bar", 1),
            ("stock", 1),
            ("round", 1),
            ("staged_steps", 1),
        ]
        blocks, at = [], 0
        for name, width in widths:
            blocks.append((name, at, at + width))
            at += width
        return cls(players, tuple(blocks), at)

    def slice(self, name: str) -> slice:
        """The slice of block ``name``."""
        for n, start, stop in self.blocks:
            if n == name:
                return slice(start, stop)
        raise KeyError(name)

    def card_weights(self) -> np.ndarray:
        """What one copy of a card counts for at each entry of the card-count blocks (0.5, a
        joker 0.25), 0 elsewhere: the count blocks are made as counts times this."""
        weights = np.zeros(self.size, dtype=np.float64)
        for name, start, stop in self.blocks:
            if name in _COUNTED:
                weights[start:stop] = 0.5
                weights[start + JOKER : stop : _FACES] = 0.25
        return weights


#: The blocks that count cards (``discard_top`` is one-hot, not a count).
_COUNTED = ("hand", "staged", "pile", "melds", "known")


def environment_options(options: dict[str, Any]) -> dict[str, Any]:
    """An environment's game options, refusing a ``seed`` among them (it would be taken as
    the first deal's and then forgotten at the first reset: environments are seeded by
    ``reset(seed=...)``)."""
    if "seed" in options:
        raise TypeError("an environment is seeded by reset(seed=...), not when it is made")
    return options


def whole_seed(seed: Any) -> int:
    """``seed`` as an int: a whole number, 0 or more (numpy's integers too); TypeError or
    ValueError, saying so, for anything else."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"a seed is a whole number, not {seed!r}")
    if seed < 0:
        raise ValueError(f"a seed is 0 or more, not {seed}")
    return int(seed)


class Match:
    """One game of ``variant`` for ``players`` seats, played by steps."""

    def __init__(
        self,
        variant: str = "tallage",
        players: int = 2,
        *,
        seed: int = 0,
        rewards: RewardKind = "game",
        turn_cap: int = LEARNING_TURN_CAP,
        **options: Any,
    ) -> None:
        if rewards not in ("game", "round"):
            raise ValueError(f"rewards is 'game' or 'round', not {rewards!r}")
        if not isinstance(turn_cap, int) or isinstance(turn_cap, bool) or turn_cap < 1:
            # The engine reads 0 as no cap: an episode that might never end.
            raise ValueError(
                f"turn_cap is the turns a round may last, a whole number, 1 or more (every"
                f" episode ends), not {turn_cap!r}"
            )
        self.variant = get_variant(variant)
        # As a table's: a name no option has, or an option the variant has not (``rounds``
        # in tallage), is refused, not ignored (``MalformedAction``, a ``ValueError``).
        self.options = Options.for_variant(self.variant.id, {"players": players, **options})
        self.space = StepSpace(self.variant, self.options, turn_cap=turn_cap)
        self.layout = Layout.of(players)
        self._at = {name: start for name, start, _ in self.layout.blocks}
        self._weights = self.layout.card_weights()
        self.rewards: RewardKind = rewards
        self._rounds = max_rounds(self.variant, self.options)
        self.reset(seed)

    # -- playing ----------------------------------------------------------------------------

    def reset(self, seed: int = 0) -> None:
        """A new game, dealt from ``seed``."""
        self.game, events = self.space.new_game(seed)
        self.state = StepState()
        self._legal: list[int] | None = None
        #: Per seat: cards the table saw it take from the pile and not lay or throw since.
        self.known: list[Counter[int]] = [Counter() for _ in range(self.players)]
        self.pile: list[int] = []
        self._observe(events)

    @property
    def players(self) -> int:
        """Number of seats."""
        return self.options.players

    @property
    def over(self) -> bool:
        """True once the game has ended."""
        return self.game.phase == Phase.GAME_OVER

    @property
    def to_move(self) -> int:
        """The seat whose step it is (the game must not be over)."""
        return self.game.turn

    def legal(self) -> list[int]:
        """The steps the seat to move may take (none once the game is over). Kept until the
        next step: an environment asks for the mask and then takes a step, and the mask is
        the cost of a step."""
        if self._legal is None:
            self._legal = self.space.legal_steps(self.game, self.state)
        return self._legal

    def mask(self) -> np.ndarray:
        """:meth:`legal` as an ``int8`` flag per step."""
        out = np.zeros(self.space.size, dtype=np.int8)
        out[self.legal()] = 1
        return out

    def step(self, i: int) -> list[float]:
        """The seat to move takes step ``i`` (an illegal step raises ``IllegalAction`` and
        changes nothing); the table deals the next round when one ends. Returns each seat's
        reward for this step."""
        _, rewards = self.play(i)
        while self.game.phase == Phase.ROUND_OVER:
            more = self.game.apply(None, NextRound())
            self._observe(more)
        return rewards

    def play(self, i: int) -> tuple[list[Event], list[float]]:
        """Step ``i`` alone (the next round not dealt): the game's events and each seat's
        reward. Checked against :meth:`legal`; an illegal step raises ``IllegalAction`` (the
        step space's own check says why) and changes nothing, as does a step that is not an
        integer (``TypeError``: 3.7 is not taken for 3)."""
        i = self.step_number(i)
        legal = i in self.legal()
        events = self.space.apply_step(self.game, self.state, i, check=not legal)
        self._legal = None
        return events, self._observe(events)

    def step_number(self, i: object) -> int:
        """``i`` as a step number: a Python or numpy integer, or a 0-d numpy array of one (as a
        learning library's ``predict`` returns for one observation); a bool, a float or
        anything else raises ``TypeError``, which an environment's caller sees before anything
        changes."""
        if isinstance(i, np.ndarray) and i.ndim == 0 and np.issubdtype(i.dtype, np.integer):
            i = i.item()
        if isinstance(i, bool | np.bool_) or not isinstance(i, int | np.integer):
            raise TypeError(f"a step is an integer from 0 to {self.space.size - 1}, not {i!r}")
        return int(i)

    def _observe(self, events: list[Event]) -> list[float]:
        """Keep what the table saw (the pile, cards known held); the rewards the events give."""
        rewards = [0.0] * self.players
        for e in events:
            match e:
                case RoundStarted():
                    self.pile = [int(self.game.discard[-1])] if self.game.discard else []
                    self.known = [Counter() for _ in range(self.players)]
                case Drew(seat, "discard", card) if card is not None:
                    if self.pile:
                        self.pile.pop()
                    self.known[seat][int(card)] += 1
                case Discarded(seat, card):
                    self.pile.append(int(card))
                    self._spent(seat, [card])
                case Laid(seat=seat, cards=cards):
                    self._spent(seat, cards)
                case StockRebuilt():
                    self.pile = self.pile[-1:]  # the rest was shuffled into the stock
                case Declared(seat=seat, cards=shown, complete=False, card=card):
                    # A false declaration shows the 13 cards to everyone, and they stay in
                    # the hand; the card declared with goes face up to the pile.
                    self.known[seat] = Counter(int(c) for c in shown)
                    if card is not None:
                        self.pile.append(int(card))
                case Declared(seat=seat):
                    self.known[seat].clear()
                case RoundEnded(result) if self.rewards == "round":
                    for s, p in enumerate(result.points):
                        rewards[s] -= p / 100
                case GameEnded(_, winners) if self.rewards == "game":
                    rewards = _game_rewards(self.players, winners)
                case _:
                    pass
        return rewards

    def _spent(self, seat: int, cards: Any) -> None:
        known = self.known[seat]
        for c in cards:
            if known[int(c)] > 0:
                known[int(c)] -= 1

    def clone(self) -> Match:
        """An independent copy (the game cloned, the space and layout shared)."""
        new = Match.__new__(Match)
        new.__dict__.update(self.__dict__)
        new.game = self.game.clone()
        new.state = self.state.copy()
        new._legal = None  # a copy may be changed (a resampled deal) before its next step
        new.known = [Counter(k) for k in self.known]
        new.pile = list(self.pile)
        return new

    def __deepcopy__(self, memo: dict[int, object]) -> Match:
        return self.clone()

    # -- observing --------------------------------------------------------------------------

    def observe(self, seat: int) -> np.ndarray:
        """The observation of ``seat`` (see the module's docstring)."""
        g, n, at = self.game, self.players, self._at
        slot = [(seat + k) % n for k in range(n)]  # slot k: the k-th seat from the observer
        hand = g.hands[seat] if g.hands else ()
        mine = g.phase in (Phase.DRAW, Phase.PLAY) and g.turn == seat
        if mine:
            self.state.sync(g)
        staged = self.state.hand if mine and (self.state.staged or self.state.taking) else hand
        top = g.discard_top()
        pile = self.pile
        if top is None and pile:
            pile = pile[:-1]  # a declaration's card lies face down
        # Every card block at once: the entries' counts of copies, times what a copy counts.
        base = at["hand"]
        entries = [base + c for c in hand]
        base = at["staged"]
        entries += [base + c for c in staged]
        base = at["pile"]
        entries += [base + c for c in pile]
        base = at["melds"]
        for tm in g.melds:
            owner = base + slot.index(tm.owner) * _FACES
            entries += [owner + c for c in tm.meld.cards]
        base = at["known"] - _FACES  # slot 1 is the first other seat
        for k in range(1, n):
            other = base + k * _FACES
            entries += [other + c for c in self.known[slot[k]].elements()]
        counts = np.bincount(np.array(entries, dtype=np.intp), minlength=self.layout.size)
        out = (counts * self._weights).astype(np.float32)
        if top is not None:
            out[at["discard_top"] + top] = 1.0
        most = self.space.max_hand
        # A game played to a target: totals / the target. One played for its rounds (portuguese)
        # has none: / 100 points a round, what a round may well cost (a declaration's x4 more).
        if self.variant.game_end == "target":
            scale = max(1, self.options.target)
        else:
            scale = 100 * max(1, self.options.rounds)
        sizes, totals, opened = at["hand_sizes"], at["totals"], at["opened"]
        for k, s in enumerate(slot):
            out[sizes + k] = len(g.hands[s]) / most if g.hands else 0.0
            out[totals + k] = min(g.totals[s] / scale, 2.0)
            out[opened + k] = float(g.has_opened(s))
        if g.phase in (Phase.DRAW, Phase.PLAY):
            out[at["turn"] + slot.index(g.turn)] = 1.0
        phase = (
            "over"
            if g.phase in (Phase.ROUND_OVER, Phase.GAME_OVER)
            else "taking"
            if mine and self.state.taking
            else g.phase.value
        )
        out[at["phase"] + _PHASES.index(phase)] = 1.0
        out[at["bar"]] = g.bar / 100
        out[at["stock"]] = len(g.stock) / self.variant.deck_size
        out[at["round"]] = g.round / self._rounds
        if mine and self.space.max_lay_steps:
            out[at["staged_steps"]] = self.state.used / self.space.max_lay_steps
        return out

    def render(self, seat: int | None = None) -> str:
        """The game in words, as ``seat`` sees it (None: everything, for a human watching)."""
        g = self.game
        lines = [f"{self.variant.id} round {g.round}, {g.phase.value}, seat {g.turn} to move"]
        top = g.discard_top()
        lines.append(f"stock {len(g.stock)}, pile top {top if top is not None else '-'}")
        for tm in g.melds:
            lines.append(f"  meld of seat {tm.owner}: {' '.join(str(c) for c in tm.meld.cards)}")
        for s in range(self.players):
            if seat is None or s == seat:
                cards = " ".join(str(c) for c in sorted(g.hands[s]))
                lines.append(f"seat {s} ({g.totals[s]} points): {cards}")
            else:
                lines.append(f"seat {s} ({g.totals[s]} points): {len(g.hands[s])} cards")
        if g.turn == seat and self.state.staged:
            lines.append("staged: " + ", ".join(str(x) for x in self.state.staged))
        return "\n".join(lines)


def _game_rewards(players: int, winners: tuple[int, ...]) -> list[float]:
    """+1 shared by the winners, -1 shared by the others (all 0 when all win)."""
    if not winners or len(winners) == players:
        return [0.0] * players
    losers = players - len(winners)
    return [1 / len(winners) if s in winners else -1 / losers for s in range(players)]
