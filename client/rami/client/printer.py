"""Printing above the prompt: styled lines that scroll up while the panel stays below.

prompt-toolkit's ``print_formatted_text`` prints above a running prompt (and straight out when
none runs), so events from the watch stream never tear the line being typed. A line wider than
the window is broken between words, the rows after the first indented under it.

>>> ["".join(t for _, t in row) for row in wrapped([("", "Sara laid [1] Q♣ K♣ A♣.")], 16)]
['Sara laid [1] Q♣', '  K♣ A♣.']
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from prompt_toolkit import print_formatted_text
from prompt_toolkit.formatted_text import (
    FormattedText,
    OneStyleAndTextTuple,
    StyleAndTextTuples,
)
from prompt_toolkit.utils import get_cwidth

from .look import STYLE, Look

__all__ = ["Printer", "wrapped"]

#: How far the rows after a line's first are indented (beyond the line's own indent).
HANG = 2


def wrapped(
    fragments: StyleAndTextTuples, width: int, hang: int = HANG
) -> list[StyleAndTextTuples]:
    """``fragments`` in rows of at most ``width`` columns, broken at their newlines and between
    words (inside a word only when it is wider than a row), each piece keeping its style; the
    rows after a line's first are indented by the line's own indent and ``hang`` more."""
    chars = [(style, ch) for style, text, *_ in fragments for ch in text]
    text = "".join(ch for _, ch in chars)
    if "\n" not in text and get_cwidth(text) <= width:
        return [list(fragments)]
    rows: list[StyleAndTextTuples] = []
    start = 0
    for line in text.split("\n"):
        rows += _wrap(chars[start : start + len(line)], line, width, hang)
        start += len(line) + 1
    return rows


def _wrap(
    chars: list[tuple[str, str]], text: str, width: int, hang: int
) -> list[StyleAndTextTuples]:
    """One line's styled characters (``text`` is theirs) in rows of ``width`` columns."""
    lead = len(text) - len(text.lstrip(" "))
    # The brackets that close further on (a meld shown as [10♠ J♠ Q♠]; a "[" in a chat line
    # that never closes groups nothing).
    opened: list[int] = []
    grouping: set[int] = set()
    for i, ch in enumerate(text):
        if ch == "[":
            opened.append(i)
        elif ch == "]" and opened:
            grouping.add(opened.pop())
            grouping.add(i)
    indent = " " * min(lead + hang, width // 2)
    rows: list[StyleAndTextTuples] = []
    start = 0
    while start < len(text) or not rows:
        room = width - (len(indent) if rows else 0)
        end, used, cut, inner, word, depth = start, 0, 0, 0, False, 0
        while end < len(text) and used + get_cwidth(text[end]) <= room:
            if text[end] == " " and word:
                # The last space after a word: the row may end here; inside brackets (a meld
                # shown as [10♠ J♠ Q♠]) only when nothing outside them would do.
                if depth:
                    inner = end
                else:
                    cut = end
            word = word or text[end] != " "
            if end in grouping:
                depth += 1 if text[end] == "[" else -1 if depth else 0
            used += get_cwidth(text[end])
            end += 1
        if end < len(text):
            if text[end] != " ":
                end = cut or inner or end  # (no space at all: the word is cut)
            elif depth and cut:
                end = cut  # the row would end inside brackets: before them instead
        end = max(end, start + 1)  # a character wider than the row still goes in one
        row = chars[start:end]
        while row and row[-1][1] == " ":
            row.pop()
        rows.append(_fragments(row, indent if rows else ""))
        start = end
        while start < len(text) and text[start] == " ":
            start += 1
    return rows


def _fragments(chars: list[tuple[str, str]], indent: str) -> StyleAndTextTuples:
    """Styled characters joined back into fragments, after ``indent``."""
    out: StyleAndTextTuples = [("", indent)] if indent else []
    for style, ch in chars:
        if out and out[-1][0] == style:
            out[-1] = (style, out[-1][1] + ch)
        else:
            out.append((style, ch))
    return out


def _retext(fragment: OneStyleAndTextTuple, change: Callable[[str], str]) -> OneStyleAndTextTuple:
    """The fragment with its text changed (its style and any mouse handler kept)."""
    if len(fragment) == 2:
        return (fragment[0], change(fragment[1]))
    return (fragment[0], change(fragment[1]), fragment[2])


class Printer:
    """Writes styled lines with the client's style sheet, in colour or not, broken between
    words to the window's ``columns`` (asked at each line; None: never broken)."""

    def __init__(
        self, look: Look, keep: int = 200, columns: Callable[[], int] | None = None
    ) -> None:
        self.look = look
        self.columns = columns
        #: The last lines printed, each with its hang, to draw again (broken to the new
        #: width) when the terminal is resized.
        self.recent: deque[tuple[StyleAndTextTuples, int]] = deque(maxlen=keep)

    def line(self, fragments: StyleAndTextTuples, hang: int = HANG) -> None:
        """One line of styled fragments, its rows after the first indented ``hang`` more than
        it is (in the ASCII look, any card text from the server written as the look writes
        it)."""
        if self.look.ascii:
            fragments = [_retext(f, self.look.text) for f in fragments]
        self.recent.append((list(fragments), hang))
        for row in self._rows(fragments, self.columns() if self.columns else 0, hang):
            self._print(row)

    def again(self, rows: int, columns: int) -> None:
        """Print once more the last lines that fill ``rows`` rows of ``columns`` columns
        (after the screen was cleared)."""
        chosen: list[StyleAndTextTuples] = []
        for fragments, hang in reversed(self.recent):
            lines = self._rows(fragments, columns, hang)
            rows -= len(lines)
            if rows < 0:
                break
            chosen = lines + chosen
        for row in chosen:
            self._print(row)

    @staticmethod
    def _rows(
        fragments: StyleAndTextTuples, columns: int, hang: int = HANG
    ) -> list[StyleAndTextTuples]:
        """The rows a line takes in ``columns`` columns (0: one, however long), the last
        column left free as the help's lines leave it."""
        if columns <= 0:
            return [list(fragments)]
        return wrapped(fragments, max(20, columns - 1), hang)

    def _print(self, fragments: StyleAndTextTuples) -> None:
        print_formatted_text(
            FormattedText(fragments),
            style=STYLE,
            color_depth=self.look.color_depth,
            include_default_pygments_style=False,
        )

    def lines(self, lines: Iterable[StyleAndTextTuples], hang: int = HANG) -> None:
        """Several lines, in order."""
        for fragments in lines:
            self.line(fragments, hang)

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
