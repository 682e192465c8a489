"""Cleaning what clients write: names and chat reach other people's terminals."""

from __future__ import annotations

import re
import unicodedata

from .refusals import Invalid

__all__ = ["MAX_CHAT", "MAX_NAME", "MAX_TABLE_NAME", "clean_name", "clean_text", "name_key"]

MAX_NAME = 24
MAX_TABLE_NAME = 40
MAX_CHAT = 280

# ESC-introduced sequences (CSI, OSC, ...) are dropped whole, not just their ESC byte, so no
# stray "[31m" is left behind; then every remaining control or format character goes.
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])?")


#: Letters that draw nothing: the Hangul fillers and the blank Braille pattern are letters or
#: symbols to Unicode, yet a name made of them shows as empty.
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e\u2028\u2029")


#: The combining marks (accents) kept on one character: what writing stacks, not a pile.
_MARKS = 3


def clean_text(text: str, limit: int | None = None) -> str:
    """``text`` without escape sequences, control or format characters (bidi overrides
    included), letters that draw nothing and combining marks piled more than three on one
    character, whitespace collapsed, cut to ``limit`` characters (when given)."""
    text = _ESCAPES.sub("", text)
    kept = []
    marks = 0  # combining marks in a row: a pile of them draws over the lines around
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Mn", "Me"):
            marks += 1
            if marks <= _MARKS:
                kept.append(ch)
            continue
        if ch in "\t\n\r" or cat == "Zl" or cat == "Zp":
            kept.append(" ")
            marks = 0
        elif cat[0] != "C" and ch not in _BLANK:
            kept.append(ch)
            marks = 0  # a character kept: its own marks start here (one dropped: no new pile)
    # Cut, then strip again: the cut may end on a space that was inside the text.
    return " ".join("".join(kept).split())[:limit].rstrip()


def clean_name(text: str, limit: int, what: str, *, required: bool) -> str:
    """The one rule for names (a table's, a player's, a bot's): cleaned as :func:`clean_text`
    does, then 1 to ``limit`` characters. A longer name is refused, never cut; an empty one is
    refused when ``required``, else returned empty (the server then chooses the name)."""
    name = clean_text(text)
    if len(name) > limit or (required and not name):
        raise Invalid(
            "BAD_NAME",
            f"a {what} needs 1 to {limit} printable characters, not {len(name)}",
        )
    return name


#: Cyrillic and Greek letters (case folded) drawn like a Latin one, as that letter: a name
#: is compared by how it looks, so "Ѕtrong bot 2" (a Cyrillic Ѕ) is "Strong bot 2".
_LOOKALIKES = str.maketrans(
    {
        **dict(zip("аеёһіјӏкмнорсѕтухԁԛԝвүɡ", "aeehijlkmhopcstyxdqwbyg", strict=True)),
        **dict(zip("αβεηικνορτυχωζ", "abenikvoptuxwz", strict=True)),
        "ı": "i",
        "ȷ": "j",
    }
)
#: Capitals drawn like a Latin capital, read before case folding (their small letters look
#: otherwise: Ν is N, its ν a v).
_CAPITALS = str.maketrans(
    dict(
        zip(
            "АВЕКМНОРСТУХЅІЈԚԜҺҮΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
            "ABEKMHOPCTYXSIJQWHYABEZHIKMNOPTYX",
            strict=True,
        )
    )
)


def name_key(name: str) -> str:
    """What two names are compared by: how they look. Their compatibility form, case folded,
    accents and other combining marks dropped, Cyrillic and Greek letters drawn like Latin
    ones read as those, letters and digits only: "Strong bot 2", "strong  bot 2",
    "ＳＴＲＯＮＧ bot 2" and "Ѕtrong bоt 2" (a Cyrillic Ѕ and о) are one name."""
    shown = unicodedata.normalize("NFKC", name).translate(_CAPITALS)
    folded = unicodedata.normalize("NFKD", shown.casefold())
    bare = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return "".join(ch for ch in bare.translate(_LOOKALIKES) if ch.isalnum())
