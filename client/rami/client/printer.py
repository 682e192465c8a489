"""Printing above the prompt: styled lines that scroll up while the panel stays below.

prompt-toolkit's ``print_formatted_text`` prints above a running prompt (and straight out when
none runs), so events from the watch stream never tear the line being typed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from prompt_toolkit import print_formatted_text
from prompt_toolkit.formatted_text import (
    FormattedText,
    StyleAndTextTuples,
    fragment_list_to_text,
)
from prompt_toolkit.utils import get_cwidth

from .look import STYLE, Look

__all__ = ["Printer"]


class Printer:
    """Writes styled lines with the client's style sheet, in colour or not."""

    def __init__(self, look: Look, keep: int = 200) -> None:
        self.look = look
        #: The last lines printed, to draw again when the terminal is resized.
        self.recent: deque[StyleAndTextTuples] = deque(maxlen=keep)

    def line(self, fragments: StyleAndTextTuples) -> None:
        """One line of styled fragments."""
        self.recent.append(list(fragments))
        self._print(fragments)

    def again(self, rows: int, columns: int) -> None:
        """Print once more the last lines that fill ``rows`` rows of ``columns`` columns
        (after the screen was cleared)."""
        chosen: list[StyleAndTextTuples] = []
        for fragments in reversed(self.recent):
            width = get_cwidth(fragment_list_to_text(fragments))
            rows -= max(1, -(-width // max(1, columns)))
            if rows < 0:
                break
            chosen.append(fragments)
        for fragments in reversed(chosen):
            self._print(fragments)

    def _print(self, fragments: StyleAndTextTuples) -> None:
        print_formatted_text(
            FormattedText(fragments),
            style=STYLE,
            color_depth=self.look.color_depth,
            include_default_pygments_style=False,
        )

    def lines(self, lines: Iterable[StyleAndTextTuples]) -> None:
        """Several lines, in order."""
        for fragments in lines:
            self.line(fragments)

    def text(self, text: str, style: str = "") -> None:
        """A plain sentence, in one style."""
        self.line([(style, text)])

    def info(self, text: str) -> None:
        """Something the client says."""
        self.text(text, "class:dim")

    def warn(self, text: str) -> None:
        """Something the person should notice."""
        self.text(text, "class:warn")

    def error(self, text: str) -> None:
        """A refusal or a mistake, and why."""
        self.text(text, "class:bad")
