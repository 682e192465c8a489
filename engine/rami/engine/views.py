"""Views: the only way state leaves the engine.

:func:`view` makes what one seat (or a spectator, ``seat=None``) may see. The seat's own hand
is the only concealed card in it: other hands appear as their sizes, the stock as its size, the
discard pile as its top card and size. :func:`seat_part` is the part of a seat's view that a
spectator's lacks (the view is built from it). Nothing else reads the game's hidden state, so
a hidden card can't leave by another door.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cards import Card
from .events import RoundResult
from .game import Game, Phase, TableMeld

__all__ = ["SeatPart", "View", "seat_part", "view"]


@dataclass(frozen=True, slots=True)
class View:
    """What one watcher sees of a game at one moment."""

    variant: str
    options: dict[str, Any]
    #: The watcher's seat, or None for a spectator.
    seat: int | None
    players: int
    number: int
    round: int
    dealer: int
    turn: int
    phase: Phase
    #: The watcher's own hand (sorted), or None for a spectator.
    hand: tuple[Card, ...] | None
    #: The card the watcher drew this turn, if it is their turn and they drew.
    drawn: Card | None
    hand_sizes: tuple[int, ...]
    stock_size: int
    discard_top: Card | None
    discard_size: int
    #: Melds on the table, numbered from 1 in the order laid.
    melds: tuple[TableMeld, ...]
    opened: tuple[bool, ...]
    bar: int
    first_circuit: bool
    rebuilds: int
    totals: tuple[int, ...]
    results: tuple[RoundResult, ...]
    winners: tuple[int, ...]
    #: Where the watcher may draw from now (their turn, draw phase).
    draw_sources: tuple[str, ...]
    #: True when the rules let the watcher lay now.
    can_lay: bool

    @property
    def my_turn(self) -> bool:
        """True when the watcher is the seat to move."""
        return (
            self.seat is not None
            and self.seat == self.turn
            and self.phase
            in (
                Phase.DRAW,
                Phase.PLAY,
            )
        )


@dataclass(frozen=True, slots=True)
class SeatPart:
    """What only one seat sees of a game: the part of its :class:`View` that a spectator's
    view lacks (with it, the seat's whole view)."""

    seat: int
    #: The seat's hand (sorted as held).
    hand: tuple[Card, ...]
    #: The card it drew this turn, if it is its turn and it drew.
    drawn: Card | None
    #: Where it may draw from now.
    draw_sources: tuple[str, ...]
    #: True when the rules let it lay now.
    can_lay: bool


def seat_part(game: Game, seat: int | None) -> SeatPart | None:
    """The part of ``view(game, seat)`` that only ``seat`` sees (None for no seat). A server
    that shows every seat builds the spectator's view once and adds each seat's part."""
    if seat is None or not 0 <= seat < game.players:
        return None
    mine = seat == game.turn and game.phase == Phase.PLAY
    return SeatPart(
        seat=seat,
        hand=tuple(game.hands[seat]),
        drawn=game.drawn if mine else None,
        draw_sources=tuple(game.draw_sources(seat)),
        can_lay=game.can_lay(seat),
    )


def view(game: Game, seat: int | None) -> View:
    """What ``seat`` (None: a spectator) may see of ``game`` now."""
    own = seat_part(game, seat)
    return View(
        variant=game.variant.id,
        options=game.options.to_dict(),
        seat=own.seat if own else None,
        players=game.players,
        number=game.number,
        round=game.round,
        dealer=game.dealer,
        turn=game.turn,
        phase=game.phase,
        hand=own.hand if own else None,
        drawn=own.drawn if own else None,
        hand_sizes=tuple(map(len, game.hands)),
        stock_size=len(game.stock),
        discard_top=game.discard[-1] if game.discard else None,
        discard_size=len(game.discard),
        melds=tuple(game.melds),
        opened=tuple(t is not None for t in game.opened_turn),
        bar=game.bar,
        first_circuit=game.first_circuit(),
        rebuilds=game.rebuilds,
        totals=tuple(game.totals),
        results=tuple(game.results),
        winners=game.winners,
        draw_sources=own.draw_sources if own else (),
        can_lay=own.can_lay if own else False,
    )
