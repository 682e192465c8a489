"""The help as printed: the commands that apply now, or one command in full, broken between
words to the window's width.

>>> [t for _, t in help_lines("", "lobby", None, 60)[0]]
['Commands you can use now']
"""

from __future__ import annotations

import textwrap

from prompt_toolkit.formatted_text import StyleAndTextTuples

from rami.engine import Variant

from .commands import WATCHING, available, details, find

__all__ = ["help_lines", "wrap"]

#: The usage column of the command list, in windows of 80 columns or more.
_COLUMN = 34


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken between words."""
    return textwrap.wrap(
        text, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    ) or [indent]


def help_lines(
    word: str, where: str, variant: Variant | None, columns: int
) -> list[StyleAndTextTuples]:
    """``help`` (``word`` empty) or ``help WORD`` for a window of ``columns`` columns; raises
    ValueError for a command that does not exist."""
    width = max(20, columns - 1)
    if word:
        command = find(word)
        if command is None:
            raise ValueError(f"there is no command {word!r}; help lists them")
        out: list[StyleAndTextTuples] = [
            [("class:heading", line)] for line in wrap(command.usage, width)
        ]
        return out + [[("", line)] for line in wrap(details(command, variant), width, "  ")]
    out = [[("class:heading", "Commands you can use now")]]
    column = _COLUMN if width >= 79 else 0
    for command in available(where, variant):
        if column and len(command.usage) <= column:
            lines = wrap(command.summary, width - column - 3)
            out.append([("class:me", f"  {command.usage:<{column}} "), ("", lines[0])])
            out += [[("", " " * (column + 3) + line)] for line in lines[1:]]
            continue
        out += [[("class:me", line)] for line in wrap(command.usage, width, "  ")]
        out += [[("", line)] for line in wrap(command.summary, width, "      ")]
    keys = "F1 help, F3 shows the table"
    if where != WATCHING:
        keys = "F1 help, F2 sorts the hand, F3 shows the table"
    footer = f"Tab completes commands and cards; {keys}. help COMMAND explains one."
    return out + [[("class:dim", line)] for line in wrap(footer, width)]
