"""Views: the only way state leaves the engine.

:func:`view` makes what one seat (or a spectator, ``seat=None``) may see. The seat's own hand
is the only concealed card in it: other hands appear as their sizes, the stock as its size, the
discard pile as its top card and size. Nothing else reads the game's hidden state, so a hidden
card can't leave by another door.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cards import Card
from .events import RoundResult
from .game import Game, Phase, TableMeld

__all__ = ["View", "view"]


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
        return self.seat is not None and self.seat == self.turn and self.phase in (
            Phase.DRAW,
            Phase.PLAY,
        )


def view(game: Game, seat: int | None) -> View:
    """What ``seat`` (None: a spectator) may see of ``game`` now."""
    own = seat is not None and 0 <= seat < game.players
    mine = own and seat == game.turn and game.phase == Phase.PLAY
    return View(
        variant=game.variant.id,
        options=game.options.to_dict(),
        seat=seat if own else None,
        players=game.players,
        number=game.number,
        round=game.round,
        dealer=game.dealer,
        turn=game.turn,
        phase=game.phase,
        hand=tuple(game.hands[seat]) if own and seat is not None else None,
        drawn=game.drawn if mine else None,
        hand_sizes=tuple(len(h) for h in game.hands),
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
        draw_sources=tuple(game.draw_sources(seat)) if own and seat is not None else (),
        can_lay=game.can_lay(seat) if own and seat is not None else False,
    )
