"""The errors the engine raises: every refusal says which rule was broken, and changes nothing."""

from __future__ import annotations

__all__ = ["IllegalAction", "MalformedAction", "RuleError"]


class RuleError(ValueError):
    """Base of the engine's refusals; ``reason`` is a stable machine-readable code."""

    reason = "RULE"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class MalformedAction(RuleError):
    """An action that could never be legal: unknown cards, bad shape, out-of-range ids."""

    reason = "MALFORMED"


class IllegalAction(RuleError):
    """A well-formed action that the rules do not allow now (wrong turn, phase, or play)."""

    reason = "ILLEGAL"
