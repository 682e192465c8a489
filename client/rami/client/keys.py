"""The client's key bindings: a key for what a player does often without typing."""

from __future__ import annotations

from typing import Protocol

from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

__all__ = ["KeyActions", "key_bindings"]


class KeyActions(Protocol):
    """What the keys act on: the interactive client."""

    def toggle_sort(self) -> None:
        """Sort the hand the other way."""

    def show_help(self) -> None:
        """Print the commands that apply now."""

    def show_table(self) -> None:
        """Print the whole table."""


def key_bindings(target: KeyActions) -> KeyBindings:
    """F1 help, F2 sort the hand, F3 the whole table."""
    kb = KeyBindings()

    @kb.add("f1")
    def _help(event: KeyPressEvent) -> None:
        """F1: list the commands that apply now, above the prompt."""
        target.show_help()

    @kb.add("f2")
    def _sort(event: KeyPressEvent) -> None:
        """F2: sort the hand by rank instead of by suit, or back."""
        target.toggle_sort()
        event.app.invalidate()

    @kb.add("f3")
    def _table(event: KeyPressEvent) -> None:
        """F3: print the whole table (every meld and player) above the prompt."""
        target.show_table()

    return kb
