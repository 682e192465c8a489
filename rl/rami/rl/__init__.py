"""rami.rl: the Rami games as learning environments (``pip install 'rami[rl]'``).

- :func:`env` / :class:`raw_env`: a PettingZoo AEC environment per variant and player count;
- :class:`SeatEnv`: a Gymnasium environment of one seat, the others played by built-in
  policies (``gymnasium.make("rami/Seat-v0", ...)`` once ``rami.rl`` is imported);
- :mod:`rami.rl.openspiel`: the games registered with OpenSpiel (``python_rami_*``).

All of them stand on the engine's complete step space (:mod:`rami.engine.steps`) through
:class:`~rami.rl.core.Match`.
"""

from .aec import env, raw_env
from .core import Layout, Match
from .gym import SeatEnv

__all__ = ["Layout", "Match", "SeatEnv", "env", "raw_env"]
