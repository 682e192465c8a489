"""Text from other people, made safe to show: no escape sequence reaches the terminal.

The server already cleans names and chat; the client cleans again on display, because a
client can't know what a server (or a record file) lets through.

>>> safe("Sara\\x1b[2J\\x07!")
'Sara!'
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["safe"]

# ESC- and CSI-introduced sequences are dropped whole, so no stray "[31m" is left behind.
_ESCAPES = re.compile(
    r"(\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])?)"
    r"|(\x9b[0-?]*[ -/]*[@-~])"
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
