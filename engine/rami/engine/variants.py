"""The three variants as data, and the table options (RULES.md §5).

A :class:`Variant` says what differs between the games: the deck, the deal, who plays first,
what may be laid when, and how a round and the game end. The game itself (``game.py``) is
written once and reads these fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from .errors import MalformedAction
from .solver import MOROCCAN_VALUES, PORTUGUESE_VALUES

__all__ = ["OPTION_SPECS", "VARIANTS", "OptionSpec", "Options", "Variant", "get_variant"]

VariantId = Literal["portuguese", "tallage", "simple"]


@dataclass(frozen=True, slots=True)
class Variant:
    """What one of the three games is made of."""

    id: VariantId
    title: str
    jokers: int
    hand_size: int
    #: The dealer's extra card (tallage, simple): the dealer then plays first without drawing.
    dealer_extra: int
    #: ``declare`` (portuguese: hands stay closed), ``open`` (tallage: opening then free),
    #: ``finish`` (simple: only the whole-hand finish).
    laying: Literal["declare", "open", "finish"]
    #: Values of cards left in hand (the joker's is the option ``joker_penalty`` in moroccan).
    values: tuple[int, ...]
    #: Nobody takes the discard in their first turn; a one-card hand takes from the stock.
    moroccan_draw_rules: bool
    #: ``rounds`` (portuguese) or ``target`` (moroccan).
    game_end: Literal["rounds", "target"]

    # What the rules say, asked by the rule (plain attributes, read for every decision of every
    # bot; each follows from ``laying``, set once below).
    #: Hands stay closed; a 13-card declaration ends the round (RULES.md §2).
    declares: bool = field(init=False)
    #: An opening of clean melds above a bar, then free laying, adding, taking jokers (RULES.md §3).
    has_opening: bool = field(init=False)
    #: Nothing is laid in play but the whole-hand finish (RULES.md §4).
    lays_whole_hand: bool = field(init=False)
    #: All cards but one may be laid at once, the last discarded (RULES.md §3, §4).
    has_finish: bool = field(init=False)
    #: A discard taken must be laid in the same turn, with the draw (RULES.md §3).
    must_lay_discard: bool = field(init=False)
    #: Sets and joker melds count only in a hand with a natural run (RULES.md §2).
    sets_need_run: bool = field(init=False)

    def __post_init__(self) -> None:
        rules = {
            "declares": self.laying == "declare",
            "has_opening": self.laying == "open",
            "lays_whole_hand": self.laying == "finish",
            "has_finish": self.laying != "declare",
            "must_lay_discard": self.laying == "open",
            "sets_need_run": self.laying == "declare",
        }
        for name, value in rules.items():
            object.__setattr__(self, name, value)  # frozen: set once, here

    @property
    def decks(self) -> int:
        """Every variant plays with two 52-card decks."""
        return 2

    @property
    def deck_size(self) -> int:
        """Cards in the full deck, jokers included."""
        return 104 + self.jokers


VARIANTS: dict[str, Variant] = {
    "portuguese": Variant(
        "portuguese", "Portuguese Rami", 2, 13, 0, "declare", PORTUGUESE_VALUES, False, "rounds"
    ),
    "tallage": Variant(
        "tallage", "Moroccan Rami: Tallage", 4, 14, 1, "open", MOROCCAN_VALUES, True, "target"
    ),
    "simple": Variant(
        "simple", "Moroccan Rami: Simple", 4, 13, 1, "finish", MOROCCAN_VALUES, True, "target"
    ),
}


def get_variant(variant_id: str) -> Variant:
    """The variant of an id, or a clear error."""
    try:
        return VARIANTS[variant_id]
    except KeyError:
        raise MalformedAction(
            f"unknown variant {variant_id!r}: choose one of {', '.join(VARIANTS)}", "BAD_VARIANT"
        ) from None


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """How one table option is shown to clients: its meaning, default and allowed values."""

    name: str
    help: str
    variants: tuple[str, ...]
    #: Allowed values, or an inclusive (low, high) range for integers.
    choices: tuple[Any, ...] = ()
    low: int | None = None
    high: int | None = None


ALL = ("portuguese", "tallage", "simple")
MOROCCAN = ("tallage", "simple")

OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("players", "Number of seats at the table.", ALL, low=2, high=6),
    OptionSpec(
        "rounds", "Rounds in a game; the lowest total then wins.", ("portuguese",), low=1, high=100
    ),
    OptionSpec(
        "target",
        "The game ends after the round in which a total reaches this.",
        MOROCCAN,
        choices=(201, 500, 1000),
    ),
    OptionSpec(
        "opening", "Least value of the clean melds of an opening.", ("tallage",), choices=(71, 51)
    ),
    OptionSpec(
        "joker_penalty",
        "What a joker left in hand costs at the end of a round.",
        MOROCCAN,
        low=0,
        high=200,
    ),
    OptionSpec("jokers_per_meld", "Most jokers one meld may hold.", ALL, choices=(1, 2)),
    OptionSpec(
        "false_declaration",
        "An incomplete declaration is shown and play goes on (reveal) or refused (reject).",
        ("portuguese",),
        choices=("reveal", "reject"),
    ),
    OptionSpec(
        "stock_rebuilds",
        "Times the stock is rebuilt from the discard pile in a round; the round is void "
        "when it runs out once more.",
        ALL,
        low=0,
        high=20,
    ),
    OptionSpec(
        "simple_rami_sec",
        "Every simple finish is a Rami sec: the others pay 200.",
        ("simple",),
        choices=(False, True),
    ),
    OptionSpec(
        "turn_seconds", "Seconds a player has for a turn; 0 for no clock.", ALL, low=0, high=3600
    ),
    OptionSpec(
        "round_cap",
        "Safety cap: a moroccan game also ends after this many rounds, so that a table "
        "whose rounds keep ending void still finishes.",
        MOROCCAN,
        low=1,
        high=1000,
    ),
)
_SPECS = {s.name: s for s in OPTION_SPECS}


@dataclass(frozen=True, slots=True)
class Options:
    """The rule options of a table (RULES.md §5); fixed when the table is created."""

    players: int = 4
    rounds: int = 5
    target: int = 201
    opening: int = 71
    joker_penalty: int = 20
    jokers_per_meld: int = 1
    false_declaration: Literal["reveal", "reject"] = "reveal"
    stock_rebuilds: int = 3
    simple_rami_sec: bool = False
    turn_seconds: int = 0
    round_cap: int = 50

    def __post_init__(self) -> None:
        for f in fields(self):
            spec = _SPECS[f.name]
            value = getattr(self, f.name)
            # Compare types too: True == 1, but True is no jokers_per_meld and 1 no on/off.
            if spec.choices and not any(
                value == c and type(value) is type(c) for c in spec.choices
            ):
                allowed = ", ".join(str(c) for c in spec.choices)
                raise MalformedAction(
                    f"option {f.name} must be one of {allowed}, not {value!r}", "BAD_OPTION"
                )
            if spec.low is not None and not (
                isinstance(value, int)
                and not isinstance(value, bool)
                and spec.low <= value <= (spec.high if spec.high is not None else value)
            ):
                raise MalformedAction(
                    f"option {f.name} must be an integer from {spec.low} to {spec.high}, "
                    f"not {value!r}",
                    "BAD_OPTION",
                )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Options:
        """Options from names and values, with the defaults for those left out."""
        unknown = sorted(set(values) - set(_SPECS))
        if unknown:
            raise MalformedAction(f"unknown option {unknown[0]!r}", "BAD_OPTION")
        return cls(**values)

    @classmethod
    def for_variant(cls, variant: str, values: Mapping[str, Any]) -> Options:
        """:meth:`from_dict` for a game of ``variant``, checked as :meth:`check_variant` does;
        an option the variant does not have is refused as such before any value is checked
        (``target=100`` in portuguese: it has no target, not a wrong one)."""
        _check_names(variant, values)  # the options left out are at their defaults
        return cls.from_dict(values)

    def to_dict(self) -> dict[str, Any]:
        """Every option by name."""
        # Every value is an int, bool or str: a flat copy is what asdict's deep one would be.
        return {name: getattr(self, name) for name in _OPTION_NAMES}

    def check_variant(self, variant: str) -> None:
        """Refuse (``BAD_OPTION``) an option that ``variant`` does not have, set to anything
        but its default (left at its default, it is only not used: a table's whole list of
        options can be copied into a new table of the same variant)."""
        _check_names(variant, self.to_dict())

    def with_(self, **changes: Any) -> Options:
        """A copy with some options changed (and checked)."""
        return replace(self, **changes)

    def hand_values(self, variant: Variant) -> tuple[int, ...]:
        """What each card left in hand costs under these options."""
        if variant.game_end == "target":
            return (*variant.values[:52], self.joker_penalty)
        return variant.values


_OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Options))
_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Options)}


def _check_names(variant: str, values: Mapping[str, Any]) -> None:
    """Refuse (``BAD_OPTION``) an option of ``values`` that ``variant`` does not have, set to
    anything but its default (a name no option has is :meth:`Options.from_dict`'s to refuse)."""
    for name, value in values.items():
        spec = _SPECS.get(name)
        if spec is not None and variant not in spec.variants and value != _DEFAULTS[name]:
            raise MalformedAction(f"{variant} has no option {name} (leave it unset)", "BAD_OPTION")
