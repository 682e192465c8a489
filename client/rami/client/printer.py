"""Printing above the prompt: styled lines that scroll up while the panel stays below.

prompt-toolkit's ``print_formatted_text`` prints above a running prompt (and straight out when
none runs), so events from the watch stream never tear the line being typed.
"""

from __future__ import annotations

from collections.abc import Iterable

from prompt_toolkit import print_formatted_text
from prompt_toolkit.formatted_text import FormattedText, StyleAndTextTuples

from .look import STYLE, Look

__all__ = ["Printer"]


class Printer:
    """Writes styled lines with the client's style sheet, in colour or not."""

    def __init__(self, look: Look) -> None:
        self.look = look

    def line(self, fragments: StyleAndTextTuples) -> None:
        """One line of styled fragments."""
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
