"""The client's key bindings: a key for what a player does often without typing."""

from __future__ import annotations

from typing import Protocol

from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.key_binding.bindings.mouse import load_mouse_bindings
from prompt_toolkit.keys import Keys

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

    (mouse,) = load_mouse_bindings().get_bindings_for_keys((Keys.Vt100MouseEvent,))

    @kb.add(Keys.Vt100MouseEvent)
    def _mouse(event: KeyPressEvent) -> object:
        """A mouse report, as prompt_toolkit reads it; one it can't read is dropped. The
        terminal's reader takes Esc [ 3 1 m (a colour's code, typed or pasted) for a report,
        and prompt_toolkit's handler raised on it, stopping the screen at "Press ENTER"."""
        try:
            return mouse.handler(event)
        except (ValueError, KeyError):
            return None

    return kb
