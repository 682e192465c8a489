"""What ``create`` asks for: a variant, options, bots, a name — read from ``key=value`` words.

>>> spec = parse_create("simple players=3 bots=2 target=500")
>>> spec.variant, spec.options, spec.bots, spec.policy
('simple', {'players': 3, 'target': 500}, 2, 'strong')
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from rami.engine import OPTION_SPECS, POLICIES, VARIANTS, MalformedAction, Options

__all__ = ["NewTable", "parse_create"]

_SPECS = {s.name: s for s in OPTION_SPECS}
#: The words ``create`` reads with a value.
_KEYS = ("bots", "policy", "name", "variant", *_SPECS)


def _meant(word: str, words: tuple[str, ...] | list[str]) -> str:
    """ " did you mean X?" for a mistyped ``word`` close to one of ``words``, or the start
    of only one of them ("jokers": jokers_per_meld), else ""."""
    word = word.lower()
    found = difflib.get_close_matches(word, words, n=1, cutoff=0.6)
    if not found:
        found = [w for w in words if w.startswith(word)] if len(word) >= 3 else []
    return f": did you mean {found[0]}?" if len(found) == 1 else ""


@dataclass(frozen=True, slots=True)
class NewTable:
    """A table to create: its game, rule options, bots to seat and name."""

    variant: str = "tallage"
    options: dict[str, Any] = field(default_factory=dict)
    bots: int = 0
    policy: str = "strong"
    name: str = ""
    private: bool = False


def _value(name: str, text: str) -> Any:
    spec = _SPECS[name]
    if spec.choices and isinstance(spec.choices[0], bool):
        if text.lower() in ("true", "yes", "on", "1"):
            return True
        if text.lower() in ("false", "no", "off", "0"):
            return False
        raise ValueError(f"{name} is on or off, not {text!r}")
    if spec.choices and isinstance(spec.choices[0], str):
        return text.lower()
    if not text.lstrip("-").isdigit():
        raise ValueError(f"{name} takes a whole number, not {text!r}")
    return int(text)


def _words(args: str) -> list[str]:
    """``args`` split at spaces, as a shell would (a backslash keeps the next character as it
    is), but for apostrophes: a quotation mark, double or single, quotes only where a word or
    its value begins (``name="Friday game"``, ``name='Friday game'``), and a single one only
    when another ends a word further on; elsewhere an apostrophe is a letter
    (``name=Bruno's``, ``name='Bruno's table'``, ``name='90s``)."""
    words: list[str] = []
    word: list[str] = []
    quote = ""
    started = False  # a word is under way (an empty quoted value still makes one)
    i = 0
    while i < len(args):
        ch = args[i]
        i += 1
        if ch == "\\" and quote != "'" and i < len(args):
            if not quote or args[i] in '"\\':
                ch = args[i]
                i += 1
            word.append(ch)
            started = True
        elif quote == "'":
            if ch == "'" and (i == len(args) or args[i].isspace()):
                quote = ""
            else:
                word.append(ch)
        elif quote:
            if ch == quote:
                quote = ""
            else:
                word.append(ch)
        elif ch.isspace():
            if started:
                words.append("".join(word))
            word, started = [], False
        elif ch in "\"'" and (not word or word[-1] == "=") and (ch == '"' or _closes(args, i)):
            quote, started = ch, True
        else:
            word.append(ch)
            started = True
    if quote:
        raise ValueError(
            'a quotation mark (") is not closed: put a name with spaces in quotes,'
            ' name="Friday game"'
        )
    if started:
        words.append("".join(word))
    return words


def _closes(args: str, at: int) -> bool:
    """Whether an apostrophe at or after ``at`` ends a word (a single quotation mark opened
    just before ``at`` is closed there)."""
    return any(
        args[k] == "'" and (k + 1 == len(args) or args[k + 1].isspace())
        for k in range(at, len(args))
    )


def parse_create(args: str) -> NewTable:
    """Read ``create``'s arguments; raises ValueError saying what is wrong."""
    words = _words(args)
    variant, options = "tallage", {}
    bots, policy, name, private = 0, "strong", "", False
    for i, word in enumerate(words):
        key, eq, text = word.partition("=")
        key = key.lower().replace("-", "_")
        if not eq:
            if key in VARIANTS and i == 0:
                variant = key
            elif key == "private":
                private = True
            else:
                meant = _meant(key, [*VARIANTS, "private"]) if i == 0 else _meant(key, ["private"])
                games = f"{', '.join(list(VARIANTS)[:-1])} or {list(VARIANTS)[-1]}"
                known = (
                    f": the game is {games}, then key=value words (create tallage bots=3)"
                    if i == 0
                    else ": after the game come key=value words (create tallage bots=3)"
                )
                named = words[i - 1].partition("=") if i > 0 else ("", "", "")
                if not meant and named[0].lower() == "name" and named[1]:
                    # The name's next word, most likely: a name of several words is quoted.
                    known = f': a name of several words is quoted, name="{named[2]} {word}"'
                raise ValueError(f"unknown word {word!r}{meant or known}")
        elif key == "bots":
            if not text.isdigit():
                raise ValueError(f"bots takes a number, not {text!r}")
            bots = int(text)
        elif key == "policy":
            if text.lower() not in POLICIES:
                raise ValueError(f"policy is one of {', '.join(POLICIES)}, not {text!r}")
            policy = text.lower()
        elif key == "name":
            name = text
        elif key == "variant":
            if text.lower() not in VARIANTS:
                raise ValueError(f"unknown variant {text!r}{_meant(text, list(VARIANTS))}")
            variant = text.lower()
        elif key in _SPECS:
            options[key] = _value(key, text)
        else:
            known = f": the options are {', '.join(_KEYS)} (help create says each)"
            raise ValueError(f"unknown option {key!r}{_meant(key, _KEYS) or known}")
    if bots and "players" not in options:
        # Bots and no number of players: a seat for the person and one for each bot, so the
        # game begins at once (with the default four, a table of two bots would wait).
        most = _SPECS["players"].high
        if most is not None and bots >= most:
            raise ValueError(f"{bots} bots leave you no seat: a table has at most {most} seats")
        options["players"] = bots + 1
    try:
        checked = Options.for_variant(variant, options)  # as the server would, said first
    except MalformedAction as e:
        raise ValueError(str(e)) from None
    if bots >= checked.players:
        raise ValueError(f"{bots} bots leave you no seat at a table of {checked.players}")
    return NewTable(variant, options, bots, policy, name, private)
