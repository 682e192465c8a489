"""Provably fair deals: round seeds that nobody can choose or foresee, the server included.

A fair game is dealt from two kinds of randomness (``docs/records.md`` states it for
implementers in other languages):

- **The server's**: a hash chain. The server picks a secret ``tip`` and hashes it ``length``
  times: ``chain[length] = tip`` and ``chain[k] = sha256(chain[k + 1])``. It publishes
  ``chain[0]``, the *commitment*, when the table is created, before anyone has joined. Round
  ``r`` uses ``chain[r]`` as the server's seed and reveals it once the round is over: anyone
  checks it by hashing it ``r`` times back to the commitment, and it tells nothing of the next
  round's (that would need a preimage of SHA-256). ``length`` is the game's most rounds.
- **The players'**: every seat may send its own random bytes when it joins (its *entropy*),
  after the commitment is public. Every seat's entropy, in play order, is mixed into every
  round's seed: ``contribution = sha256(sha256(e_0) + sha256(e_1) + …)``.

``round_seed(r) = sha256(chain[r] + contribution + b"round" + r.to_bytes(8, "big"))``.

The server fixed its part before it saw any player's, and no player knows the server's part
until the round is over: as long as one seated player sent fresh entropy, the server could not
have chosen the deal by trying seeds, and no player could have either. A seat that sends none
adds nothing, and is dealt as fairly as everyone else when another seat sent some.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field

from .rng import derive_seed

__all__ = [
    "MAX_ENTROPY",
    "FairDeal",
    "FairnessError",
    "chain_seed",
    "check_server_seed",
    "contribution",
    "fair_round_seed",
]

#: The most bytes of entropy one seat may send.
MAX_ENTROPY = 64


class FairnessError(ValueError):
    """A fair deal's parts that do not add up."""


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def chain_seed(tip: bytes, length: int, r: int) -> bytes:
    """``chain[r]`` of the chain ending at ``tip`` (``chain[length] = tip``)."""
    if not 0 <= r <= length:
        raise FairnessError(f"round {r} is outside a chain of {length} rounds")
    seed = tip
    for _ in range(length - r):
        seed = _sha(seed)
    return seed


def check_server_seed(commitment: str, server_seed: bytes, r: int) -> bool:
    """True when ``server_seed`` hashed ``r`` times is the commitment (hex)."""
    seed = server_seed
    for _ in range(r):
        seed = _sha(seed)
    return hmac.compare_digest(seed.hex(), commitment)


def contribution(entropies: Sequence[bytes]) -> bytes:
    """What the seats' entropies (in play order, empty for none) add to every round's seed."""
    for e in entropies:
        if len(e) > MAX_ENTROPY:
            raise FairnessError(f"a seat's entropy is at most {MAX_ENTROPY} bytes")
    return _sha(b"".join(_sha(e) for e in entropies))


def fair_round_seed(server_seed: bytes, contributed: bytes, r: int) -> bytes:
    """The shuffle seed of round ``r`` from its server seed and the seats' contribution."""
    return derive_seed(server_seed + contributed, "round", r)


@dataclass(frozen=True, slots=True)
class FairDeal:
    """The seeds of a fair game: the server's secret chain tip, the chain's length (the game's
    most rounds) and every seat's entropy in play order. The tip is secret until the game is
    over: a FairDeal never leaves the server, only what :meth:`reveal` gives per round."""

    tip: bytes = field(repr=False)
    length: int
    entropies: tuple[bytes, ...] = ()

    def __post_init__(self) -> None:
        if len(self.tip) < 16:
            raise FairnessError("a chain tip has at least 16 bytes")
        if self.length < 1:
            raise FairnessError("a chain has at least one round")
        contribution(self.entropies)  # checks each seat's entropy

    def __deepcopy__(self, memo: object) -> FairDeal:
        return self  # immutable

    @property
    def commitment(self) -> str:
        """``chain[0]`` (hex): what the server publishes before anyone joins."""
        return chain_seed(self.tip, self.length, 0).hex()

    def server_seed(self, r: int) -> bytes:
        """The server's seed of round ``r`` (revealed once that round is over)."""
        if not 1 <= r <= self.length:
            raise FairnessError(f"round {r} is outside a game of at most {self.length} rounds")
        return chain_seed(self.tip, self.length, r)

    def round_seed(self, r: int) -> bytes:
        """The shuffle seed of round ``r``."""
        return fair_round_seed(self.server_seed(r), contribution(self.entropies), r)
