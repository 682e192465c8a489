"""Views: the only way state leaves the engine.

:func:`view` makes what one seat (or a spectator, ``seat=None``) may see. The seat's own hand
is the only concealed card in it: other hands appear as their sizes, the stock as its size, the
discard pile as its top card and size. :func:`seat_part` is the part of a seat's view that a
spectator's lacks (the view holds the same fields, read by the same function). Nothing else
reads the game's hidden state, so a hidden card can't leave by another door.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from operator import is_not
from typing import TYPE_CHECKING

from .cards import Card
from .events import RoundResult
from .game import Game, Phase, TableMeld
from .solver import declaration_cards
from .values import builder
from .variants import Options, Variant

if TYPE_CHECKING:
    from .actions import Lay

__all__ = ["SeatPart", "View", "seat_part", "view"]


@dataclass(frozen=True, slots=True)
class View:
    """What one watcher sees of a game at one moment."""

    variant: Variant
    #: The table's rule options (the game's own: Options are frozen).
    options: Options
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
    #: For each seat, the cards everyone knows it holds (sorted): taken from the discard
    #: pile, or shown in a declaration, this round, and not laid or discarded since
    #: (``Game.known``). Public: a spectator sees it too.
    known: tuple[tuple[Card, ...], ...]
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
    #: True when the rules let the watcher declare now (RULES.md §2): its turn, after drawing,
    #: in a variant where hands stay closed. Whether its cards are complete is
    #: :func:`~rami.engine.plays.complete_declarations`.
    can_declare: bool
    #: Tallage, the watcher's draw phase: the lays that would take the top discard, found
    #: when the view was made (:func:`~rami.engine.plays.discard_completions` reads them
    #: from here); None when not looked for. Not compared: it follows from the other fields.
    discard_lays: tuple[Lay, ...] | None = field(default=None, compare=False, repr=False)

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
    #: True when the rules let it declare now.
    can_declare: bool
    #: The complete declarations it could make now: each card to put face down, with the
    #: multiplier (``plays.complete_declarations`` of its view).
    declarations: tuple[tuple[Card, int], ...] = ()


#: View(...) and SeatPart(...) without the frozen dataclass's per-field cost (a view is made
#: before every decision of every bot, a seat's part for every watcher of every update).
_view_of = builder(View)
_seat_part = builder(SeatPart)
#: None, for ever: with ``is_not``, whether each of a list's entries is set (in C, not in a loop).
_NONE = repeat(None)


def _own(
    game: Game, seat: int
) -> tuple[tuple[Card, ...], Card | None, tuple[str, ...], bool, bool]:
    """What only ``seat`` sees: its hand, the card it drew, where it may draw, whether it may
    lay, whether it may declare (a tuple, not a SeatPart: :func:`view` runs before every
    decision of every bot)."""
    if seat != game.turn:
        return tuple(game.hands[seat]), None, (), False, False
    drawn = game.drawn if game.phase == Phase.PLAY else None
    return (
        tuple(game.hands[seat]),
        drawn,
        tuple(game.draw_sources(seat)),
        game.can_lay(seat),
        game.can_declare(seat),
    )


def seat_part(game: Game, seat: int | None, before: SeatPart | None = None) -> SeatPart | None:
    """The part of ``view(game, seat)`` that only ``seat`` sees (None for no seat). A server
    that shows every seat builds the spectator's view once and adds each seat's part.

    ``before``: the seat's part as the caller last had it, of this game; when the seat's part
    is the same now, ``before`` itself is returned (at most updates, every seat but the one
    that moved: a caller that keeps its encoding knows it by identity, without building and
    comparing a new part)."""
    if seat is None or not 0 <= seat < game.options.players:  # (game.players, without a call)
        return None
    own = _own(game, seat)
    # Tallage: only whether some lay takes the discard (the seat's own view lists them all).
    if (
        "discard" in own[2]
        and game.variant.must_lay_discard
        and not _plays.takes_discard(_view(game, seat, own))
    ):
        own = (own[0], own[1], tuple(s for s in own[2] if s != "discard"), own[3], own[4])
    if before is not None and before.seat == seat:
        b = before
        if own == (b.hand, b.drawn, b.draw_sources, b.can_lay, b.can_declare):
            return before  # its declarations follow from its hand (and the game's options)
    if not own[4]:
        return _seat_part(seat, *own)
    jpm = game.options.jokers_per_meld
    return _seat_part(seat, *own, declaration_cards(own[0], jokers_per_meld=jpm))


def view(game: Game, seat: int | None) -> View:
    """What ``seat`` (None: a spectator) may see of ``game`` now."""
    v = _view(game, seat)
    if "discard" in v.draw_sources and game.variant.must_lay_discard:
        # Tallage: the discard is taken only with a lay that uses it. The lays found are kept
        # for the seat's decision (a bot asks for them next); when there are none, the
        # discard is not a place to draw from this turn. The view is still the function's
        # own here, so it is finished in place (dataclasses.replace costs half a view).
        lays = tuple(_plays.discard_completions(v))
        object.__setattr__(v, "discard_lays", lays)
        if not lays:
            object.__setattr__(
                v, "draw_sources", tuple(s for s in v.draw_sources if s != "discard")
            )
    return v


def _view(
    game: Game,
    seat: int | None,
    own: tuple[tuple[Card, ...], Card | None, tuple[str, ...], bool, bool] | None = None,
) -> View:
    """:func:`view`, but for tallage's discard: listed as a draw source whenever there is one,
    its lays not looked for. ``own``: the seat's ``_own``, when the caller has it already."""
    hand: tuple[Card, ...] | None = None
    drawn: Card | None = None
    draw_sources: tuple[str, ...] = ()
    can_lay = can_declare = False
    if seat is not None and 0 <= seat < game.players:
        hand, drawn, draw_sources, can_lay, can_declare = own or _own(game, seat)
    else:
        seat = None
    # Positional, in the order of View's fields (matching 25 keywords costs a fifth of a view,
    # and a view is made before every decision of every bot); a test checks every field.
    return _view_of(
        game.variant,  # variant
        game.options,  # options
        seat,  # seat
        game.players,  # players
        len(game.log),  # number (Game.number, without the property call)
        game.round,  # round
        game.dealer,  # dealer
        game.turn,  # turn
        game.phase,  # phase
        hand,  # hand
        drawn,  # drawn
        tuple(map(len, game.hands)),  # hand_sizes
        len(game.stock),  # stock_size
        game.discard_top(),  # discard_top
        len(game.discard),  # discard_size
        tuple(game.melds),  # melds
        tuple(map(is_not, game.opened_turn, _NONE)),  # opened
        tuple(game.known),  # known
        game.bar,  # bar
        game.first_circuit(),  # first_circuit
        game.rebuilds,  # rebuilds
        tuple(game.totals),  # totals
        tuple(game.results),  # results
        game.winners,  # winners
        draw_sources,  # draw_sources
        can_lay,  # can_lay
        can_declare,  # can_declare
    )


# plays reads views (its functions take a View): imported last, as a module, so that either may
# be imported first. Not inside the functions above: an import statement run at every call
# costs a microsecond, and seat_part runs for every watcher of every update.
from . import plays as _plays  # noqa: E402
