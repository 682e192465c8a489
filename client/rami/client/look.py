"""How things look on this terminal: colour or not, suit symbols or ASCII, and the style sheet.

Colour is on unless ``NO_COLOR`` is set, ``TERM`` is ``dumb``, or the output is not a terminal;
suit symbols are used unless the output's encoding can't write them (then ``10h``, ``Qs``).

>>> Look(color=False, ascii=True).card_text(Card.parse("10h"))
'10h'
>>> Look().card_style(Card.parse("Qd"))
'class:card.red'
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from prompt_toolkit.output import ColorDepth
from prompt_toolkit.styles import Style

from rami.engine import Card
from rami.engine.cards import is_red

__all__ = ["STYLE", "Look"]

#: Every style class the client uses, in one place.
STYLE = Style.from_dict(
    {
        "card.red": "ansired bold",
        "card.black": "bold",
        "card.joker": "ansimagenta bold",
        "card.drawn": "underline",
        "label": "ansicyan",
        "dim": "ansibrightblack",
        "me": "ansigreen bold",
        "turn": "ansiyellow bold",
        "good": "ansigreen",
        "bad": "ansired",
        "warn": "ansiyellow",
        "chat": "ansicyan",
        "heading": "bold underline",
        "prompt": "",
        "prompt.mine": "ansigreen bold",
        "bottom-toolbar": "noreverse bg:#303030 #e4e4e4",
        "bottom-toolbar.turn": "ansiyellow bold",
        "bottom-toolbar.mine": "ansigreen bold",
    }
)

_PLAIN_TERMS = {"dumb", "unknown"}


#: The suit symbols as the ASCII look's letters (``Q♦`` is ``Qd``, as a card's code is).
_SUIT_LETTERS = str.maketrans("♣♦♥♠", "cdhs")
#: A card written with its suit's symbol: its rank, then the symbol.
_SUITED = re.compile(r"\b(10|[2-9AJQK])([♣♦♥♠])")


@dataclass(frozen=True, slots=True)
class Look:
    """Whether to colour, and how to write a card."""

    color: bool = True
    ascii: bool = False

    @classmethod
    def detect(cls, stream: TextIO | None = None, env: Mapping[str, str] | None = None) -> Look:
        """The look that suits ``stream`` (stdout) under ``env`` (the environment)."""
        stream = stream if stream is not None else sys.stdout
        env = env if env is not None else os.environ
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        color = tty and not env.get("NO_COLOR") and env.get("TERM", "") not in _PLAIN_TERMS
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "♣♦♥♠".encode(encoding)
            ascii_only = False
        except (UnicodeEncodeError, LookupError):
            ascii_only = True
        return cls(color=color, ascii=ascii_only)

    @property
    def color_depth(self) -> ColorDepth | None:
        """The colour depth to render with: none at all without colour, else the terminal's."""
        return None if self.color else ColorDepth.DEPTH_1_BIT

    def card_text(self, card: int) -> str:
        """``10♥`` (or ``10h`` in ASCII)."""
        c = Card(card)
        return c.code() if self.ascii else str(c)

    def card_style(self, card: int) -> str:
        """The style class of a card: red, black or joker."""
        c = Card(card)
        if c.is_joker:
            return "class:card.joker"
        return "class:card.red" if is_red(c.suit) else "class:card.black"

    def text(self, text: str) -> str:
        """Text made elsewhere (the server's refusals name cards ``Q♦``) as this look writes
        it: in ASCII, each card ``Qd`` (a suit symbol that follows no rank stays)."""
        if not self.ascii:
            return text
        return _SUITED.sub(lambda m: m.group(1) + m.group(2).translate(_SUIT_LETTERS), text)

    def suit(self, suit: int) -> str:
        """A suit's symbol (or letter in ASCII)."""
        return "cdhs"[suit] if self.ascii else "♣♦♥♠"[suit]

    @property
    def bullet(self) -> str:
        """The separator between items on one line."""
        return " - " if self.ascii else " · "

    @property
    def ellipsis(self) -> str:
        """What stands for things left out."""
        return "..." if self.ascii else "…"

    @property
    def arrow(self) -> str:
        """The marker of the player to move."""
        return ">" if self.ascii else "▶"
