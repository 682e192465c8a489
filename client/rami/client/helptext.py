"""The help as printed: the commands that apply now, or one command in full. The list of
commands is made for the window's width, and takes the fullest form that fits the rows the
window has for it: each command with its summary, else every usage in columns, else the names.
One command's help is its usage and one paragraph, which the printer breaks between words to
the window's width (again when it is resized).

>>> [t for _, t in help_lines("", "lobby", None, 60)[0]]
['Commands in the lobby']
"""

from __future__ import annotations

import textwrap

from prompt_toolkit.formatted_text import StyleAndTextTuples

from rami.engine import Variant

from .commands import (
    LOBBY,
    OVER,
    PLAYING,
    WAITING,
    WATCHING,
    Command,
    available,
    details,
    find,
    suggest,
)

__all__ = ["help_lines", "wrap"]

#: The list's heading, by where the person is: what it lists is what applies there (the moves
#: of a game, for instance, on any turn of it; each says when it does not apply now).
_HEADINGS = {
    LOBBY: "Commands in the lobby",
    WAITING: "Commands at this table, before its game",
    PLAYING: "Commands at this table, during the game",
    OVER: "Commands at this table, its game over",
    WATCHING: "Commands while you watch this table",
}

#: The usage column of the command list, in windows of 80 columns or more.
_COLUMN = 34


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken between words."""
    return textwrap.wrap(
        text, width, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
    ) or [indent]


def help_lines(
    word: str, where: str, variant: Variant | None, columns: int, rows: int = 0
) -> list[StyleAndTextTuples]:
    """``help`` (``word`` empty) or ``help WORD`` for a window of ``columns`` columns, the list
    of commands in at most ``rows`` rows if it can be (0: any); raises ValueError for a command
    that does not exist."""
    width = max(20, columns - 1)
    if word:
        command = find(word)
        if command is None:
            guess = suggest(word, available(where, variant)) or suggest(word, cutoff=0.75)
            if guess:
                raise ValueError(
                    f"there is no command {word!r}: did you mean {guess} (help {guess})?"
                )
            raise ValueError(f"there is no command {word!r}; help lists them")
        out: list[StyleAndTextTuples] = [
            [("class:heading", line)] for line in wrap(command.usage, width)
        ]
        # One line, broken by the printer (with no hang: its rows line up), so that it is
        # broken again to a resized window's width.
        return [*out, [("", "  " + " ".join(details(command, variant).split()))]]
    commands = available(where, variant)
    keys = {
        LOBBY: "F1 help",
        WATCHING: "F1 help, F3 shows the table",
    }.get(where, "F1 help, F2 sorts the hand, F3 shows the table")
    completes = "commands and cards" if where == PLAYING else "commands"
    footer = f"Tab completes {completes}; {keys}. help COMMAND explains one."
    # One line, broken by the printer to the window (and again when it is resized); it takes
    # ``tail`` rows of this one.
    tail = len(wrap(footer, width))
    head: StyleAndTextTuples = [("class:heading", _HEADINGS[where])]
    for listing in (
        _summaries(commands, width),
        _grid([c.usage for c in commands], width),
        _grid([c.name for c in commands], width),
    ):
        if not rows or 1 + len(listing) + tail <= rows:
            break
    return [head, *listing, [("class:dim", footer)]]


def _summaries(commands: list[Command], width: int) -> list[StyleAndTextTuples]:
    """Each command's usage and summary: side by side in a wide window, else one under the
    other."""
    out: list[StyleAndTextTuples] = []
    column = _COLUMN if width >= 79 else 0
    for command in commands:
        if column and len(command.usage) <= column:
            lines = wrap(command.summary, width - column - 3)
            out.append([("class:me", f"  {command.usage:<{column}} "), ("", lines[0])])
            out += [[("", " " * (column + 3) + line)] for line in lines[1:]]
            continue
        out += [[("class:me", line)] for line in wrap(command.usage, width, "  ")]
        out += [[("", line)] for line in wrap(command.summary, width, "      ")]
    return out


def _grid(words: list[str], width: int) -> list[StyleAndTextTuples]:
    """``words`` down columns, as many columns as fit ``width`` (as ``ls`` lists files); a
    word wider than the window is cut."""
    words = [w if len(w) <= width - 2 else w[: width - 5] + "..." for w in words]
    for count in range(len(words), 0, -1):
        height = -(-len(words) // count)
        cols = [words[i : i + height] for i in range(0, len(words), height)]
        sizes = [max(len(w) for w in col) for col in cols]
        if count == 1 or 2 + sum(sizes) + 3 * (len(cols) - 1) <= width:
            break
    rows: list[StyleAndTextTuples] = []
    for r in range(height):
        cells = [(col[r], size) for col, size in zip(cols, sizes, strict=True) if r < len(col)]
        line = "   ".join(w.ljust(size) for w, size in cells).rstrip()
        rows.append([("class:me", f"  {line}")])
    return rows
