"""OpenSpiel's ISMCTS bot as a Rami policy, through the OpenSpiel game (``rami.rl.openspiel``).

:class:`IsmctsPolicy` is a policy like the engine's (a view and a random source in, an action
out), so the arena and the ladder seat it beside ``random``, ``greedy``, ``strong`` and
``expert``. At each decision it:

1. deals a world consistent with the view (``determinize.sample_game``: the cards the seat
   can't see dealt at random), and starts an OpenSpiel state of that round there
   (:func:`state_at`: the seats' recall starts at this point, as the view's does);
2. asks OpenSpiel's ``ISMCTSBot`` (random rollouts, ``simulations`` of them per step, the
   round searched for at most ``horizon`` more turns) for a step, and takes it, until it takes
   a step that ends the move;
3. returns the move those steps make (``StepSpace.action_of``), legal in the real game since
   a move's legality depends only on what the seat sees.

It is deterministic for a given view and random source. It needs the ``rl`` extra
(``pip install rami[rl]``: numpy and open-spiel).
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from rami.engine import Action, Game, Options, View
from rami.engine.determinize import sample_game
from rami.engine.steps import StepState

from .core import Match
from .openspiel import RamiGame, RamiState

__all__ = ["IsmctsPolicy", "state_at"]


def state_at(game: RamiGame, world: Game) -> RamiState:
    """A state of ``game`` (one round of OpenSpiel's Rami) at ``world``, a game in the middle
    of a round (a determinized one, say): its deal is done, and each seat's recall starts here
    (its hand and the pile's top card), the round before this point unknown to all."""
    state = RamiState(game)
    spec = state._spec
    if world.variant != spec.template.variant or world.players != spec.template.players:
        raise ValueError("the world's variant and seats are not the OpenSpiel game's")
    # The world's own options (a round plays by them; the game's are the defaults).
    match = _template(world.variant.id, world.options, spec.turn_cap).clone()
    match.game = world
    match.state = StepState()
    match.known = [Counter() for _ in range(match.players)]
    match.pile = [int(c) for c in world.discard]
    match._legal = None
    state.dealt = [0] * spec.deal_size  # dealt already: no chance node before the play
    state.match = match
    state.replayable = False  # its (empty) history does not make it
    top = world.discard[-1] if world.discard else "none"
    for seat in range(match.players):
        hand = " ".join(str(c) for c in sorted(world.hands[seat]))
        state.seen[seat].append(f"from {hand}; pile {top}")
    return state


@functools.lru_cache(maxsize=16)
def _template(variant: str, options: Options, turn_cap: int) -> Match:
    """A match of these options, to clone (its step space is made once)."""
    fields = {k: v for k, v in options.to_dict().items() if k != "players"}
    return Match(variant, options.players, turn_cap=turn_cap, **fields)


@functools.lru_cache(maxsize=16)
def _game(variant: str, players: int, horizon: int) -> RamiGame:
    loaded: RamiGame = pyspiel.load_game(
        f"python_rami_{variant}", {"players": players, "turn_cap": horizon}
    )
    return loaded


@dataclass(frozen=True, slots=True)
class IsmctsPolicy:
    """OpenSpiel's ISMCTS, ``simulations`` random-rollout simulations per step, each round
    searched for at most ``horizon`` turns past the decision (a round that reaches it is void
    in the search: no seat gains)."""

    simulations: int = 16
    horizon: int = 24
    uct_c: float = 2.0

    def __post_init__(self) -> None:
        if self.simulations < 1 or self.horizon < 1:
            raise ValueError("simulations and horizon are at least 1")

    def __call__(self, v: View, rng: random.Random) -> Action:
        game = _game(v.variant.id, v.players, self.horizon)
        world = sample_game(v, rng)
        space = _template(v.variant.id, v.options, self.horizon).space
        world.turn_cap = world.turn_index + self.horizon
        state = state_at(game, world)
        # Every random choice of the search from ``rng``: its tree's, its rollouts' and its
        # worlds' (the bot's own resampler would draw from an unseeded sampler).
        worlds = random.Random(rng.getrandbits(64))
        bot = ismcts.ISMCTSBot(
            game=game,
            uct_c=self.uct_c,
            evaluator=mcts.RandomRolloutEvaluator(
                random_state=np.random.RandomState(rng.getrandbits(32))
            ),
            max_simulations=self.simulations,
            random_state=np.random.RandomState(rng.getrandbits(32)),
        )
        bot.set_resampler(lambda s, player: s.resample_from_infostate(player, worlds.random))
        before = world.clone()
        steps: list[int] = []
        while True:
            step = int(bot.step(state))
            steps.append(step)
            if space.ends_move(step):
                return space.action_of(before, steps)
            state.apply_action(step)
