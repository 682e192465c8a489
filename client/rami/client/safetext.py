"""Text from other people, made safe to show: no escape sequence reaches the terminal.

The server already cleans names and chat; the client cleans again on display, because a
client can't know what a server (or a record file) lets through.

>>> safe("Sara\\x1b[2J\\x07!")
'Sara!'
"""

from __future__ import annotations

import re
import unicodedata

from prompt_toolkit.utils import get_cwidth

__all__ = ["cells", "clip", "ljust", "rjust", "safe"]

# Escape sequences are dropped whole, so no stray "[31m" is left behind (as the server's
# ``sanitize`` drops them): a CSI to its final byte; an OSC, DCS, SOS, PM or APC string to
# its terminator or the text's end; ESC with intermediate bytes and a final one (ESC ( 0);
# ESC and the one byte after it. By the ESC form of an introducer or its 8-bit C1 one.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*(?:[@-~]|$)"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]+[0-~]"
    r"|\x1b[0-~]?"
)


def safe(text: str, limit: int = 280) -> str:
    """``text`` without escape sequences, control or format characters, on one line."""
    text = _ESCAPES.sub("", text)
    kept = []
    for ch in text:
        category = unicodedata.category(ch)
        if category in ("Zl", "Zp") or ch in "\t\n\r":
            kept.append(" ")
        elif category[0] != "C":
            kept.append(ch)
    return " ".join("".join(kept).split())[:limit]


def cells(text: str) -> int:
    """The terminal cells ``text`` takes (a CJK character takes two)."""
    return get_cwidth(text)


def ljust(text: str, width: int) -> str:
    """``text`` padded on the right to ``width`` cells (as ``str.ljust`` does characters)."""
    return text + " " * max(0, width - get_cwidth(text))


def rjust(text: str, width: int) -> str:
    """``text`` padded on the left to ``width`` cells."""
    return " " * max(0, width - get_cwidth(text)) + text


def clip(text: str, width: int) -> str:
    """The start of ``text`` that fits in ``width`` cells."""
    used = 0
    for i, ch in enumerate(text):
        used += get_cwidth(ch)
        if used > width:
            return text[:i]
    return text
