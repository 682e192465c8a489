"""Events: what every watcher may know of an accepted action.

Events are public by construction: a card drawn from the stock is not in them (the drawer sees
it in their own view). Cards shown to everyone — a discard, a lay, a declaration, the hands
counted at the end of a round — are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cards import Card
from .melds import Meld, TableMeld

__all__ = [
    "Declared",
    "Discarded",
    "Drew",
    "Event",
    "GameEnded",
    "Laid",
    "RoundEnded",
    "RoundResult",
    "RoundStarted",
    "StockRebuilt",
]


@dataclass(frozen=True, slots=True)
class RoundStarted:
    """A round was dealt; ``seed_hash`` commits to the shuffle seed revealed in the record."""

    round: int
    dealer: int
    seed_hash: str
    discard_top: Card | None
    first_player: int


@dataclass(frozen=True, slots=True)
class Drew:
    """A player took a card: from the stock (unseen) or the top of the discard pile (shown)."""

    seat: int
    source: str
    card: Card | None = None


@dataclass(frozen=True, slots=True)
class Laid:
    """A player laid: new melds, additions and jokers taken back, and the melds as they now are.

    ``melds`` maps each meld number touched to its cards; ``opened`` with the opening value
    when this lay was the player's opening (the bar becomes ``bar``); ``finish`` when it laid
    the whole hand but one card.
    """

    seat: int
    new_melds: tuple[int, ...]
    changed_melds: tuple[int, ...]
    melds: tuple[tuple[int, TableMeld], ...]
    cards: tuple[Card, ...]
    jokers_taken: int = 0
    opened: bool = False
    opening_value: int = 0
    bar: int = 0
    finish: bool = False


@dataclass(frozen=True, slots=True)
class Discarded:
    """A player discarded a card, ending the turn."""

    seat: int
    card: Card


@dataclass(frozen=True, slots=True)
class Declared:
    """Portuguese: a player declared, showing 13 cards; ``complete`` or not (then ``card`` was
    turned face up as an ordinary discard, RULES.md §2)."""

    seat: int
    cards: tuple[Card, ...]
    complete: bool
    card: Card | None
    multiplier: int = 0
    melds: tuple[Meld, ...] = ()


@dataclass(frozen=True, slots=True)
class StockRebuilt:
    """The stock ran out: the discard pile but its top card was shuffled into a new stock."""

    rebuilds: int
    stock_size: int


@dataclass(frozen=True, slots=True)
class RoundResult:
    """How a round ended and what each seat paid."""

    round: int
    #: ``declare`` (portuguese), ``rami``, ``rami_sec``, or ``void`` (the stock ran out, or the
    #: round reached the game's cap of turns: ``Game.turn_cap``).
    ending: str
    winner: int | None
    points: tuple[int, ...]
    totals: tuple[int, ...]
    multiplier: int = 1
    #: Every hand as counted at the end: no card is concealed once a round is over.
    hands: tuple[tuple[Card, ...], ...] = ()
    #: The round's shuffle seed, revealed now that the round is over (hex).
    seed: str = ""
    #: A fair round's server seed (hex; ``fair.py``), revealed with it; "" otherwise.
    server_seed: str = ""


@dataclass(frozen=True, slots=True)
class RoundEnded:
    """A round is over."""

    result: RoundResult


@dataclass(frozen=True, slots=True)
class GameEnded:
    """The game is over: the lowest total wins, equal totals share the win."""

    totals: tuple[int, ...]
    winners: tuple[int, ...] = field(default_factory=tuple)


Event = RoundStarted | Drew | Laid | Discarded | Declared | StockRebuilt | RoundEnded | GameEnded
