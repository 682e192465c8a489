"""Cleaning what clients write: names and chat reach other people's terminals."""

from __future__ import annotations

import re
import unicodedata

from .refusals import Invalid

__all__ = ["MAX_CHAT", "MAX_NAME", "MAX_TABLE_NAME", "clean_name", "clean_text", "name_key"]

MAX_NAME = 24
MAX_TABLE_NAME = 40
MAX_CHAT = 280

# Escape sequences are dropped whole, not just their introducer, so no stray "[31m" is left
# behind (ECMA-48, by the ESC form of an introducer or its 8-bit C1 one): a CSI to its final
# byte; an OSC, DCS, SOS, PM or APC string to its terminator (BEL, ESC \\ or ST), or to the
# end of the text; ESC with intermediate bytes and a final one (ESC ( 0, ESC # 8); ESC and
# the one byte after it (ESC 7, ESC c). Then every remaining control or format character goes.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*(?:[@-~]|$)"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]+[0-~]"
    r"|\x1b[0-~]?"
)


#: Letters that draw nothing: the Hangul fillers and the blank Braille pattern are letters or
#: symbols to Unicode, yet a name made of them shows as empty.
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e\u2028\u2029")


#: The combining marks (accents) kept on one character: what writing stacks, not a pile.
_MARKS = 3


def clean_text(text: str, limit: int | None = None) -> str:
    """``text`` without escape sequences, control or format characters (bidi overrides
    included), letters that draw nothing and combining marks piled more than three on one
    character, whitespace collapsed, cut to ``limit`` characters (when given)."""
    return _clean(text, limit)[0]


def _clean(text: str, limit: int | None = None) -> tuple[str, bool]:
    """:func:`clean_text`, and whether it dropped combining marks of a pile."""
    text = _ESCAPES.sub("", text)
    kept = []
    marks = 0  # combining marks in a row: a pile of them draws over the lines around
    piled = False
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Mn", "Me"):
            marks += 1
            if marks <= _MARKS:
                kept.append(ch)
            else:
                piled = True
            continue
        if ch in "\t\n\r" or cat == "Zl" or cat == "Zp":
            kept.append(" ")
            marks = 0
        elif cat[0] != "C" and ch not in _BLANK:
            kept.append(ch)
            marks = 0  # a character kept: its own marks start here (one dropped: no new pile)
    # Cut, then strip again: the cut may end on a space that was inside the text.
    return " ".join("".join(kept).split())[:limit].rstrip(), piled


def clean_name(text: str, limit: int, what: str, *, required: bool) -> str:
    """The one rule for names (a table's, a player's, a bot's): cleaned as :func:`clean_text`
    does, then 1 to ``limit`` characters. A longer name is refused, never cut; an empty one is
    refused when ``required``, else returned empty (the server then chooses the name). A pile
    of more than three combining marks on one character is refused too: a name is shown as it
    was written, or not at all."""
    name, piled = _clean(text)
    if len(name) > limit or (required and not name):
        raise Invalid(
            "BAD_NAME",
            f"a {what} needs 1 to {limit} printable characters, not {len(name)}",
        )
    if piled:
        raise Invalid("BAD_NAME", f"a {what} has at most {_MARKS} accents on one character")
    return name


#: Letters of other scripts (case folded) drawn like a Latin small letter, as that letter: a
#: name is compared by how it looks, so "Ѕtrong bot 2" (a Cyrillic Ѕ) is "Strong bot 2". Not
#: every lookalike of Unicode (TR39 lists thousands): those of the scripts whose letters pass
#: for Latin ones in a name (Cyrillic, Greek, Armenian, Cherokee, Coptic, Georgian, and
#: Latin's own small capitals and variants).
_LOOKALIKES = str.maketrans(
    {
        # Cyrillic
        **dict(zip("аеёһіјӏкмнопрсѕтухԁԛԝвүɡԍгь", "aeehijlkmhonpcstyxdqwbyggrb", strict=True)),
        # Greek
        **dict(zip("αβγεηικνοπρτυχωζϲϳ", "abyenikvonptuxwzcj", strict=True)),
        # Armenian
        **dict(zip("օոսհցքաւզ", "onuhgpwlz", strict=True)),
        # Coptic
        **dict(zip("ⲟⲣⲥⲓⲕⲭ", "opcikx", strict=True)),
        # Cherokee small letters (Unicode case-folds Cherokee to them)
        **dict(zip("ꭺꮪꮯꭼꮋꭻꮶꮇꮲꭲꮃꮤꮖꮐꮪ", "ascehjkmptwwlgs", strict=True)),
        # Latin variants and small capitals
        **dict(zip("ɑıȷɪʏᴏᴀʙᴄᴅᴇɢʜᴊᴋʟᴍɴᴘꞯʀꜱᴛᴜᴠᴡʏᴢ", "aijiyoabcdeghjklmnpqrstuvwyz", strict=True)),
    }
)
#: Capitals drawn like a Latin capital, read before the compatibility form and case folding
#: (their small letters look otherwise: Ν is N, its ν a v), and the lunate sigmas (c-shaped,
#: whose compatibility form is a final sigma).
_CAPITALS = str.maketrans(
    dict(
        zip(
            "АВЕКМНОРСТУХЅІЈԚԜҺҮΑΒΕΖΗΙΚΜΝΟΡΤΥΧᎪᏴᏟᎬᎻᎫᏦᎷᏢᏚᏕᎢᏔᏙϹϲႽ",
            "ABEKMHOPCTYXSIJQWHYABEZHIKMNOPTYXABCEHJKMPSSTWVCcS",
            strict=True,
        )
    )
)


def name_key(name: str) -> str:
    """What two names are compared by: how they look. Their compatibility form, case folded,
    the accents of Latin letters dropped, letters of other scripts drawn like Latin ones read
    as those, letters, digits and the marks of other scripts only: "Strong bot 2",
    "strong  bot 2", "ＳＴＲＯＮＧ bot 2" and "Ѕtrong bоt 2" (a Cyrillic Ѕ and о) are one name,
    and "राम" and "रमा" two (their vowel signs are kept). A mark is kept only on a letter of
    another script: on a Latin letter, a digit, or nothing, it is dropped ("Strong bot 2"
    with an accent on its 2 is "Strong bot 2")."""
    # Before the compatibility form (the lunate sigmas), and after (a capital it makes, such
    # as the Ν of the mathematical bold Nu).
    shown = unicodedata.normalize("NFKC", name.translate(_CAPITALS)).translate(_CAPITALS)
    folded = unicodedata.normalize("NFKD", shown.casefold()).translate(_LOOKALIKES)
    out: list[str] = []
    marked = False  # whether the last character kept takes its marks (another script's letter)
    for ch in folded:
        if unicodedata.category(ch)[0] == "M":
            if marked:
                out.append(ch)
            continue
        if ch.isalnum():
            marked = not (
                "a" <= ch <= "z" or ch.isdigit() or unicodedata.name(ch, "").startswith("LATIN")
            )
            out.append(ch)
        else:
            marked = False  # a mark on a space or a sign draws on nothing kept
    return "".join(out)
