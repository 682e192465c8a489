"""Rami as a PettingZoo AEC environment: ``rami.rl.env(variant="tallage", players=2)``.

The agents are ``player_0`` … ``player_{n-1}``, the seats; the agent selected is always the
seat to move, and a turn is several steps (draw, the staging steps of a lay, commit, the
discard), so the same agent is selected again until its turn ends. Each observation is a dict
of ``observation`` (a ``float32`` vector: :mod:`rami.rl.core` gives its layout) and
``action_mask`` (an ``int8`` flag per step of the variant's
:class:`~rami.engine.steps.StepSpace`: exactly the legal steps; all zero for an agent not
selected). Rewards are those of :class:`~rami.rl.core.Match` (``rewards="game"`` or
``"round"``). The game has a declared maximum length (``Match.space.max_game_length``), so
it always terminates; it is never truncated.

``env()`` wraps ``raw_env`` as PettingZoo's classic games are: an illegal step ends the game
with a reward of -1 for its agent (``TerminateIllegalWrapper``), and the order of calls is
enforced.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from .core import Match, RewardKind, environment_options, whole_seed

__all__ = ["env", "raw_env"]


def env(**kwargs: Any) -> AECEnv:
    """The wrapped environment (PettingZoo's ``env()`` convention)."""
    e: AECEnv = raw_env(**kwargs)
    e = wrappers.TerminateIllegalWrapper(e, illegal_reward=-1)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    e = wrappers.OrderEnforcingWrapper(e)
    return e


class raw_env(AECEnv):  # PettingZoo's name for the unwrapped environment
    """One Rami game per episode; ``options`` are the game's (``rami.engine`` Options)."""

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human"],
        "name": "rami_v0",
        "is_parallelizable": False,
    }

    def __init__(
        self,
        variant: str = "tallage",
        players: int = 2,
        *,
        rewards: RewardKind = "game",
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode is one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.match = Match(variant, players, rewards=rewards, **environment_options(options))
        self.metadata = dict(self.metadata, name=f"rami_{variant}_{players}p_v0")
        self.possible_agents = [f"player_{i}" for i in range(players)]
        self.agents = list(self.possible_agents)
        size = self.match.space.size
        obs = spaces.Box(0.0, 2.0, (self.match.layout.size,), dtype=np.float32)
        mask = spaces.Box(0, 1, (size,), dtype=np.int8)
        self.observation_spaces = {
            a: spaces.Dict({"observation": obs, "action_mask": mask}) for a in self.agents
        }
        self.action_spaces = {a: spaces.Discrete(size) for a in self.agents}
        self.state_space = spaces.Box(
            0.0, 2.0, (players * self.match.layout.size,), dtype=np.float32
        )
        self._seed: int | None = None
        #: Episodes since the last seed given (-1 before the first reset: deal 0 comes first).
        self._episodes = -1
        self._start()

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def _start(self) -> None:
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.match.to_move]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new game: dealt from ``seed`` when given, else from the seed of the last reset
        that gave one (or 0) and the number of episodes since."""
        if seed is not None:
            self._seed, self._episodes = whole_seed(seed), 0
        else:
            self._episodes += 1
        base = self._seed or 0
        self.match.reset(base * 1_000_003 + self._episodes)
        self._start()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self.possible_agents.index(agent)
        # The seat to move, selected, in a game still on: once an illegal step ended the game
        # (env()), PettingZoo selects every agent in turn to step it out, and none may act.
        selected = (
            agent == self.agent_selection
            and agent in self.agents  # not stepped out
            and seat == self.match.to_move
            and not self.match.over
            and not (self.terminations.get(agent) or self.truncations.get(agent))
        )
        mask = self.match.mask() if selected else np.zeros(self.match.space.size, np.int8)
        return {"observation": self.match.observe(seat), "action_mask": mask}

    def step(self, action: int) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        step = self.match.step_number(action)  # a TypeError before anything changes
        self._cumulative_rewards[agent] = 0.0
        rewards = self.match.step(step)
        for i, a in enumerate(self.possible_agents):
            self.rewards[a] = rewards[i]
        if self.match.over:
            self.terminations = dict.fromkeys(self.agents, True)
        else:
            self.agent_selection = self.possible_agents[self.match.to_move]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()  # which prints it

    def state(self) -> np.ndarray:
        """A global state for centralised training: every seat's observation, seat 0's first
        (``state_space``). It holds every hand: for a critic, never for a seat's policy."""
        return np.concatenate([self.match.observe(s) for s in range(self.match.players)])

    def render(self) -> str | None:
        """The table as text: returned (``render_mode="ansi"``) or printed (``"human"``)."""
        if self.render_mode is None:
            return None
        text = self.match.render()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass
