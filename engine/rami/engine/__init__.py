"""The Rami engine: pure, deterministic rules for ``portuguese``, ``tallage`` and ``simple``.

>>> from rami.engine import Game, Draw, view
>>> game, events = Game.new("portuguese", seed=7)
>>> v = view(game, game.turn)
>>> len(v.hand), v.phase
(13, <Phase.DRAW: 'draw'>)
>>> _ = game.apply(game.turn, Draw("stock"))
"""

from __future__ import annotations

from .actions import (
    Action,
    AddToMeld,
    Declare,
    Discard,
    Draw,
    Lay,
    NewMeld,
    NextRound,
    TakeJoker,
    format_action,
    parse_action,
)
from .cards import CARDS, JOKER, Card, CardError, format_cards, parse_cards, sort_cards
from .errors import IllegalAction, MalformedAction, RuleError
from .events import Event, RoundResult
from .game import Game, Phase, TableMeld
from .melds import Meld, MeldError
from .policies import POLICIES, Policy
from .steps import Step, StepSpace, StepState
from .variants import OPTION_SPECS, VARIANTS, Options, Variant, get_variant
from .views import View, view

__all__ = [
    "CARDS",
    "JOKER",
    "OPTION_SPECS",
    "POLICIES",
    "VARIANTS",
    "Action",
    "AddToMeld",
    "Card",
    "CardError",
    "Declare",
    "Discard",
    "Draw",
    "Event",
    "Game",
    "IllegalAction",
    "Lay",
    "MalformedAction",
    "Meld",
    "MeldError",
    "NewMeld",
    "NextRound",
    "Options",
    "Phase",
    "Policy",
    "RoundResult",
    "RuleError",
    "Step",
    "StepSpace",
    "StepState",
    "TableMeld",
    "TakeJoker",
    "Variant",
    "View",
    "format_action",
    "format_cards",
    "get_variant",
    "parse_action",
    "parse_cards",
    "sort_cards",
    "view",
]
