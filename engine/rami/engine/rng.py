"""Deterministic, language-independent shuffling: anyone can re-deal a round from its seed.

The shuffle is Fisher–Yates driven by SHA-256 in counter mode: block ``i`` of the stream is
``sha256(seed + i.to_bytes(8, "big"))``; numbers are drawn as 8-byte big-endian integers, with
rejection sampling so every order is equally likely. ``docs/records.md`` states it for
implementers in other languages.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, MutableSequence
from typing import TypeVar

__all__ = ["derive_seed", "seed_commitment", "shuffle"]

T = TypeVar("T")


def derive_seed(seed: bytes, label: str, index: int = 0) -> bytes:
    """A sub-seed: ``sha256(seed + label + index)``, for a round's deal or a stock rebuild."""
    return hashlib.sha256(seed + label.encode() + index.to_bytes(8, "big")).digest()


def seed_commitment(seed: bytes) -> str:
    """The hash of a seed, published before the seed itself is revealed."""
    return hashlib.sha256(seed).hexdigest()


def _stream(seed: bytes) -> Iterator[int]:
    counter = 0
    while True:
        block = hashlib.sha256(seed + counter.to_bytes(8, "big")).digest()
        counter += 1
        for i in range(0, 32, 8):
            yield int.from_bytes(block[i : i + 8], "big")


def shuffle(items: MutableSequence[T], seed: bytes) -> None:
    """Shuffle ``items`` in place, the same way for the same seed in any language."""
    stream = _stream(seed)
    for i in range(len(items) - 1, 0, -1):
        n = i + 1
        limit = (1 << 64) - (1 << 64) % n
        while True:
            x = next(stream)
            if x < limit:
                break
        j = x % n
        items[i], items[j] = items[j], items[i]
