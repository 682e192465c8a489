"""Rami as a Gymnasium environment of one seat: ``rami.rl.SeatEnv(variant="tallage")``.

The learner plays ``seat`` (0 by default); every other seat is played by one of the engine's
built-in policies (``opponents``: a name of ``rami.engine.POLICIES`` for all of them, or one
per other seat; ``"greedy"`` by default), whose whole moves are played as their steps
(``StepSpace.steps_of``) between the learner's steps. An observation is the same dict as the
PettingZoo environment's (``observation`` and ``action_mask``); the mask is also in ``info``
as ``"action_mask"``, where wrappers such as masked PPO look. The reward of a step is the
learner's (:class:`~rami.rl.core.Match`); an episode ends when the game does (``terminated``;
never truncated: the game's length is bounded). An illegal step (one the mask does not offer)
changes nothing and ends the episode with ``illegal_reward`` (-1 by default), as PettingZoo's
``TerminateIllegalWrapper`` does; ``info["illegal"]`` then says so.

The opponents' choices are seeded from the ``seed`` given to ``reset``: one seed, one game.
An episode begins with a decision of the learner: a game that the others end before its first
turn (a declaration at once, in a game of one round) is not an episode, and ``reset`` deals
the next game of the seed's sequence instead.
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from rami.engine import POLICIES, view

from .core import Match, RewardKind, environment_options, whole_seed

__all__ = ["SeatEnv"]

#: Most games ``reset`` deals to find one in which the learner has a turn.
_DEALS = 100


class SeatEnv(gymnasium.Env[dict[str, np.ndarray], np.int64]):
    """One seat of a Rami game against built-in policies."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"]}

    def __init__(
        self,
        variant: str = "tallage",
        players: int = 2,
        *,
        seat: int = 0,
        opponents: str | Sequence[str] = "greedy",
        rewards: RewardKind = "game",
        illegal_reward: float = -1.0,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        if isinstance(illegal_reward, bool) or not isinstance(illegal_reward, numbers.Real):
            raise TypeError(f"illegal_reward is a number, not {illegal_reward!r}")
        self.illegal_reward = float(illegal_reward)
        #: The episode ended (or none began: :meth:`reset` first).
        self._ended = True
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode is one of {self.metadata['render_modes']}")
        if not 0 <= seat < players:
            raise ValueError(f"seat is 0 to {players - 1}, not {seat}")
        names = [opponents] * (players - 1) if isinstance(opponents, str) else list(opponents)
        if len(names) != players - 1:
            raise ValueError(f"{players - 1} opponents' policies, not {len(names)}")
        for name in names:
            if name not in POLICIES:
                raise ValueError(f"no policy {name!r}: one of {', '.join(sorted(POLICIES))}")
        self.render_mode = render_mode
        self.seat = seat
        self.match = Match(variant, players, rewards=rewards, **environment_options(options))
        others = [s for s in range(players) if s != seat]
        self._policies = {s: POLICIES[n] for s, n in zip(others, names, strict=True)}
        size = self.match.space.size
        self.observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 2.0, (self.match.layout.size,), dtype=np.float32),
                "action_mask": spaces.Box(0, 1, (size,), dtype=np.int8),
            }
        )
        self.action_space = spaces.Discrete(size)
        self._rng = random.Random(0)

    def _observation(self) -> dict[str, np.ndarray]:
        # Nothing is legal once the episode is over (the game's end, or an illegal step).
        mine = not self._ended and not self.match.over and self.match.to_move == self.seat
        mask = self.match.mask() if mine else np.zeros(self.match.space.size, np.int8)
        return {"observation": self.match.observe(self.seat), "action_mask": mask}

    def _others(self) -> float:
        """The other seats play until it is the learner's step or the game is over; the
        learner's rewards meanwhile."""
        reward = 0.0
        m = self.match
        while not m.over and m.to_move != self.seat:
            seat = m.to_move
            action = self._policies[seat](view(m.game, seat), self._rng)
            for step in m.space.steps_of(m.game, m.state, action):
                reward += m.step(step)[self.seat]
        return reward

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=None if seed is None else whole_seed(seed))
        for _ in range(_DEALS):
            game_seed = int(self.np_random.integers(2**31))
            self._rng = random.Random(game_seed)
            self.match.reset(game_seed)
            self._ended = False
            self._others()  # the game may start with another seat's turn
            if not self.match.over:
                break
            # The others ended the game before the learner's first turn (a declaration on
            # the first turn of a one-round game): an episode begins with a decision of the
            # learner, so the next deal of the same seed's sequence is played instead.
        else:
            raise RuntimeError(f"{_DEALS} deals in a row ended before the learner's turn")
        obs = self._observation()
        return obs, {"action_mask": obs["action_mask"]}

    def step(
        self, action: np.int64 | int
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._ended or self.match.over:
            raise RuntimeError("no episode is under way: call reset()")
        step = self.match.step_number(action)  # not an integer: a TypeError
        if step not in self.match.legal():
            self._ended = True
            obs = self._observation()
            info = {"action_mask": obs["action_mask"], "illegal": True}
            if self.render_mode == "human":
                self.render()
            return obs, self.illegal_reward, True, False, info
        reward = self.match.step(step)[self.seat]
        reward += self._others()
        obs = self._observation()
        if self.render_mode == "human":
            self.render()  # Gymnasium's "human": the table shown at each step
        return obs, reward, self.match.over, False, {"action_mask": obs["action_mask"]}

    def render(self) -> str | None:
        """The table as the learner's seat sees it: returned (``render_mode="ansi"``) or
        printed (``"human"``)."""
        if self.render_mode is None:
            return None
        text = self.match.render(self.seat)
        if self.render_mode == "human":
            print(text)
            return None
        return text


# ``gymnasium.make("rami/Seat-v0", variant=..., ...)`` makes it (with Gymnasium's checks).
if "rami/Seat-v0" not in gymnasium.registry:
    gymnasium.register(id="rami/Seat-v0", entry_point="rami.rl.gym:SeatEnv")
