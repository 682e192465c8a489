"""The one place on the server where engine and table values become protobuf messages, and
requests become the engine's actions and options."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from rami.engine import (
    CARDS,
    JOKER,
    OPTION_SPECS,
    VARIANTS,
    Action,
    AddToMeld,
    Card,
    Declare,
    Discard,
    Draw,
    Lay,
    MalformedAction,
    Meld,
    NewMeld,
    Options,
    Phase,
    TableMeld,
    TakeJoker,
    View,
)
from rami.engine import events as ev
from rami.engine.analysis import Analysis
from rami.engine.melds import RUN
from rami.engine.plays import complete_declarations
from rami.engine.views import SeatPart
from rami.v1 import events_pb2, game_pb2, lobby_service_pb2, rules_service_pb2, table_service_pb2

from .errors import DOMAIN
from .tablestate import (
    CLOSED,
    FINISHED,
    PLAYING,
    WAITING,
    ChatPosted,
    Event,
    GameStarted,
    PlayerInfo,
    PlayerJoined,
    PlayerLeft,
    PlayerReturned,
    TableClosed,
    TableState,
    TableSummary,
    TurnTimedOut,
)
from .wire import ACT_VIEW, UPDATE, UPDATE_VIEW, message_field

__all__ = [
    "action_from_proto",
    "add_own_view",
    "analysis_to_proto",
    "card_from_proto",
    "card_to_proto",
    "cards_from_proto",
    "event_to_proto",
    "meld_to_proto",
    "options_from_proto",
    "options_to_proto",
    "shared_view_to_proto",
    "variant_from_proto",
    "variant_to_proto",
    "view_to_proto",
]

T = TypeVar("T")
K = TypeVar("K")

_VARIANT_TO_PROTO = {
    "portuguese": game_pb2.VARIANT_PORTUGUESE,
    "tallage": game_pb2.VARIANT_TALLAGE,
    "simple": game_pb2.VARIANT_SIMPLE,
}
_VARIANT_FROM_PROTO = {v: k for k, v in _VARIANT_TO_PROTO.items()}
_PHASE_TO_PROTO = {
    Phase.DRAW: game_pb2.PHASE_DRAW,
    Phase.PLAY: game_pb2.PHASE_PLAY,
    Phase.ROUND_OVER: game_pb2.PHASE_ROUND_OVER,
    Phase.GAME_OVER: game_pb2.PHASE_GAME_OVER,
}
_SOURCE_TO_PROTO = {"stock": game_pb2.DRAW_SOURCE_STOCK, "discard": game_pb2.DRAW_SOURCE_DISCARD}
_ENDING_TO_PROTO = {
    "declare": game_pb2.ROUND_ENDING_DECLARE,
    "rami": game_pb2.ROUND_ENDING_RAMI,
    "rami_sec": game_pb2.ROUND_ENDING_RAMI_SEC,
    "void": game_pb2.ROUND_ENDING_VOID,
}
_FALSE_DECL = {
    "reveal": game_pb2.FALSE_DECLARATION_REVEAL,
    "reject": game_pb2.FALSE_DECLARATION_REJECT,
}
_INT_OPTIONS = (
    "players",
    "rounds",
    "target",
    "opening",
    "joker_penalty",
    "jokers_per_meld",
    "stock_rebuilds",
    "turn_seconds",
    "round_cap",
)


# -- cards and melds ------------------------------------------------------------------------


def card_to_proto(card: int | None) -> int:
    """The proto Card value of an engine card (face + 1; the joker is 53)."""
    return 0 if card is None else int(card) + 1


#: The proto Card value of each engine card (a lookup: hands are converted for every update).
_CARD_TO_PROTO: tuple[int, ...] = tuple(range(1, 54))


def cards_to_proto(cards: Iterable[int]) -> list[int]:
    """Proto Card values of engine cards."""
    return list(map(_CARD_TO_PROTO.__getitem__, cards))


def card_from_proto(value: int) -> Card:
    """The engine card of a proto Card value, or INVALID_ARGUMENT."""
    if not 1 <= value <= 53:
        raise MalformedAction(f"not a card: {value} (cards are 1 to 53)", "BAD_CARD")
    return CARDS[value - 1]


def cards_from_proto(values: Iterable[int]) -> tuple[Card, ...]:
    """Engine cards of proto Card values."""
    return tuple(card_from_proto(v) for v in values)


def meld_to_proto(meld: Meld) -> game_pb2.Meld:
    """A meld with what its jokers stand for."""
    if meld.kind == RUN:
        stands = meld.joker_cards()
        kind = game_pb2.MELD_KIND_RUN
        jokers_as = stands
    else:
        stands = (
            [] if meld.is_clean else [CARDS[s * 13 + meld.rank - 1] for s in meld.missing_suits()]
        )
        kind = game_pb2.MELD_KIND_SET
        jokers_as = stands[: meld.cards.count(JOKER)]
    return game_pb2.Meld(
        kind=kind,
        cards=cards_to_proto(meld.cards),
        stands_for=cards_to_proto(stands),
        opening_value=meld.opening_value(),
        jokers_as=cards_to_proto(jokers_as),
    )


def table_meld_to_proto(number: int, tm: TableMeld) -> game_pb2.TableMeld:
    """A numbered meld on the table."""
    return game_pb2.TableMeld(number=number, owner=tm.owner, meld=meld_to_proto(tm.meld))


# -- variants and options -------------------------------------------------------------------


def variant_to_proto(variant_id: str) -> int:
    """The proto Variant of a variant id."""
    return _VARIANT_TO_PROTO[variant_id]


def variant_from_proto(value: int) -> str:
    """The variant id of a proto Variant, or INVALID_ARGUMENT."""
    try:
        return _VARIANT_FROM_PROTO[value]
    except KeyError:
        raise MalformedAction(
            "choose a variant: portuguese, tallage or simple", "BAD_VARIANT"
        ) from None


def options_from_proto(
    msg: game_pb2.Options, defaults: dict[str, Any] | None = None, variant: str = ""
) -> Options:
    """Options from a proto message: unset fields take ``defaults``, then the engine's; with
    ``variant``, checked for its game (``Options.for_variant``)."""
    values: dict[str, Any] = dict(defaults or {})
    for name in _INT_OPTIONS:
        if msg.HasField(name):
            values[name] = getattr(msg, name)
    if msg.HasField("simple_rami_sec"):
        values["simple_rami_sec"] = msg.simple_rami_sec
    if msg.false_declaration == game_pb2.FALSE_DECLARATION_REJECT:
        values["false_declaration"] = "reject"
    elif msg.false_declaration == game_pb2.FALSE_DECLARATION_REVEAL:
        values["false_declaration"] = "reveal"
    elif msg.false_declaration != game_pb2.FALSE_DECLARATION_UNSPECIFIED:
        raise MalformedAction("false_declaration must be REVEAL or REJECT", "BAD_OPTION")
    return Options.for_variant(variant, values) if variant else Options.from_dict(values)


def options_to_proto(options: Options) -> game_pb2.Options:
    """Options with every field set."""
    return game_pb2.Options(
        **{name: getattr(options, name) for name in _INT_OPTIONS},
        simple_rami_sec=options.simple_rami_sec,
        false_declaration=_FALSE_DECL[options.false_declaration],
    )


def variants_to_proto(turn_seconds: int = 0) -> list[rules_service_pb2.VariantInfo]:
    """Every variant with the options that apply to it; ``turn_seconds``: the clock this
    server gives a table whose request leaves it unset (``--turn-seconds``), its default."""
    defaults = {**Options().to_dict(), "turn_seconds": turn_seconds}
    out = []
    for vid, v in VARIANTS.items():
        opts = [
            rules_service_pb2.OptionInfo(
                name=spec.name,
                help=spec.help,
                default_value=_option_text(defaults[spec.name]),
                choices=[_option_text(c) for c in spec.choices],
                min=spec.low,
                max=spec.high,
            )
            for spec in OPTION_SPECS
            if vid in spec.variants
        ]
        out.append(
            rules_service_pb2.VariantInfo(
                variant=variant_to_proto(vid),
                id=vid,
                title=v.title,
                deck_size=v.deck_size,
                jokers=v.jokers,
                hand_size=v.hand_size,
                dealer_extra=v.dealer_extra,
                options=opts,
            )
        )
    return out


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- actions --------------------------------------------------------------------------------


def _step_from_proto(step: game_pb2.LayStep) -> NewMeld | AddToMeld | TakeJoker:
    which = step.WhichOneof("step")
    if which == "new_meld":
        return NewMeld(
            cards_from_proto(step.new_meld.cards), cards_from_proto(step.new_meld.jokers_as)
        )
    if which == "add":
        end = {game_pb2.RUN_END_LOW: "low", game_pb2.RUN_END_HIGH: "high"}.get(step.add.end)
        return AddToMeld(step.add.meld, cards_from_proto(step.add.cards), end)  # type: ignore[arg-type]
    if which == "take_joker":
        return TakeJoker(step.take_joker.meld, card_from_proto(step.take_joker.card))
    raise MalformedAction("a lay step needs new_meld, add or take_joker", "BAD_ACTION")


def lay_from_proto(lay: game_pb2.Lay) -> Lay:
    """A lay from its proto message."""
    if not lay.steps:
        raise MalformedAction("a lay needs at least one step", "BAD_ACTION")
    if len(lay.steps) > 40:
        raise MalformedAction("a lay has at most 40 steps", "BAD_ACTION")
    return Lay(tuple(_step_from_proto(s) for s in lay.steps))


def action_from_proto(request: table_service_pb2.ActRequest) -> Action:
    """The engine action of an Act command, or INVALID_ARGUMENT."""
    which = request.WhichOneof("action")
    if which == "draw":
        source = {game_pb2.DRAW_SOURCE_STOCK: "stock", game_pb2.DRAW_SOURCE_DISCARD: "discard"}.get(
            request.draw.source
        )
        if source is None:
            raise MalformedAction(
                "draw from DRAW_SOURCE_STOCK or DRAW_SOURCE_DISCARD", "BAD_SOURCE"
            )
        # An empty lay is none (a client may set the field whatever it holds).
        lay = lay_from_proto(request.draw.lay) if request.draw.lay.steps else None
        return Draw(source, lay)  # type: ignore[arg-type]
    if which == "lay":
        return lay_from_proto(request.lay)
    if which == "discard":
        return Discard(card_from_proto(request.discard.card))
    if which == "declare":
        return Declare(card_from_proto(request.declare.card))
    raise MalformedAction("an action needs draw, lay, discard, declare or steps", "BAD_ACTION")


# -- events and views -----------------------------------------------------------------------


def result_to_proto(r: ev.RoundResult) -> game_pb2.RoundResult:
    """A round's result."""
    return game_pb2.RoundResult(
        round=r.round,
        ending=_ENDING_TO_PROTO[r.ending],
        winner=r.winner,
        points=r.points,
        totals=r.totals,
        multiplier=r.multiplier,
        hands=[game_pb2.Hand(cards=cards_to_proto(h)) for h in r.hands],
        seed=r.seed,
        server_seed=r.server_seed,
    )


def event_to_proto(e: ev.Event) -> events_pb2.Event:
    """A public engine event as a proto Event."""
    E = events_pb2
    if isinstance(e, ev.RoundStarted):
        return E.Event(
            round_started=E.RoundStarted(
                round=e.round,
                dealer=e.dealer,
                seed_hash=e.seed_hash,
                discard_top=card_to_proto(e.discard_top),
                first_player=e.first_player,
            )
        )
    if isinstance(e, ev.Drew):
        return E.Event(
            card_drawn=E.CardDrawn(
                seat=e.seat, source=_SOURCE_TO_PROTO[e.source], card=card_to_proto(e.card)
            )
        )
    if isinstance(e, ev.Laid):
        return E.Event(
            cards_laid=E.CardsLaid(
                seat=e.seat,
                new_melds=e.new_melds,
                changed_melds=e.changed_melds,
                melds=[table_meld_to_proto(n, tm) for n, tm in e.melds],
                cards=cards_to_proto(e.cards),
                jokers_taken=e.jokers_taken,
                opened=e.opened,
                opening_value=e.opening_value,
                bar=e.bar,
                finish=e.finish,
            )
        )
    if isinstance(e, ev.Discarded):
        return E.Event(card_discarded=E.CardDiscarded(seat=e.seat, card=card_to_proto(e.card)))
    if isinstance(e, ev.Declared):
        return E.Event(
            hand_declared=E.HandDeclared(
                seat=e.seat,
                cards=cards_to_proto(e.cards),
                complete=e.complete,
                card=card_to_proto(e.card),
                multiplier=e.multiplier,
                melds=[meld_to_proto(m) for m in e.melds],
            )
        )
    if isinstance(e, ev.StockRebuilt):
        return E.Event(stock_rebuilt=E.StockRebuilt(rebuilds=e.rebuilds, stock_size=e.stock_size))
    if isinstance(e, ev.RoundEnded):
        return E.Event(round_ended=E.RoundEnded(result=result_to_proto(e.result)))
    if isinstance(e, ev.GameEnded):
        return E.Event(game_ended=E.GameEnded(totals=e.totals, winners=e.winners))
    raise TypeError(f"unknown event {e!r}")


def view_to_proto(
    v: View,
    table_id: str,
    number: int,
    players: Sequence[game_pb2.PlayerState],
    deadline: float | None,
    options: game_pb2.Options | None = None,
) -> game_pb2.View:
    """A watcher's view; ``players`` carries the table's seats with the game's per-seat facts
    (``options``: the options message of ``v.options``, when the caller has it already)."""
    msg = shared_view_to_proto(v, table_id, number, players, deadline, options)
    add_own_view(msg, v)
    return msg


def shared_view_to_proto(
    v: View,
    table_id: str,
    number: int,
    players: Sequence[game_pb2.PlayerState],
    deadline: float | None,
    options: game_pb2.Options | None = None,
    results: Sequence[game_pb2.RoundResult] | None = None,
) -> game_pb2.View:
    """The part of a view that is the same for every watcher of the table: a spectator's
    view, to which :func:`add_own_view` adds what only a seat sees (``options``, ``results``:
    the messages of ``v.options`` and ``v.results``, when the caller has them already)."""
    msg = _view_head(v, table_id, number, deadline)
    msg.options.CopyFrom(options if options is not None else options_to_proto(v.options))
    msg.players.extend(players)
    msg.melds.extend(table_meld_to_proto(i, m) for i, m in enumerate(v.melds, 1))
    msg.results.extend(results if results is not None else [result_to_proto(r) for r in v.results])
    return msg


def _view_head(v: View, table_id: str, number: int, deadline: float | None) -> game_pb2.View:
    """The shared part of a view without its options, players, melds and results."""
    msg = game_pb2.View(
        table_id=table_id,
        number=number,
        variant=variant_to_proto(v.variant.id),
        phase=_PHASE_TO_PROTO[v.phase],
        round=v.round,
        dealer=v.dealer,
        turn=v.turn,
        stock_size=v.stock_size,
        discard_top=card_to_proto(v.discard_top),
        discard_size=v.discard_size,
        bar=v.bar,
        first_circuit=v.first_circuit,
        rebuilds=v.rebuilds,
        winners=v.winners,
    )
    if deadline is not None:
        msg.turn_deadline.FromNanoseconds(int(deadline * 1e9))
    return msg


def add_own_view(msg: game_pb2.View, own: View | SeatPart | None) -> None:
    """Add to a shared view what ``own``'s seat alone sees: its seat, its hand, the card it
    drew, where it may draw from, whether it may lay or declare (nothing for no seat)."""
    if own is None or own.seat is None:
        return
    msg.seat = own.seat
    msg.hand.extend(cards_to_proto(own.hand or ()))
    msg.drawn = card_to_proto(own.drawn)
    msg.draw_sources.extend(_SOURCE_TO_PROTO[s] for s in own.draw_sources)
    msg.can_lay = own.can_lay
    msg.can_declare = own.can_declare
    if own.can_declare:
        found = own.declarations if isinstance(own, SeatPart) else complete_declarations(own)
        msg.declarations.extend(
            game_pb2.Declaration(card=card_to_proto(c), multiplier=m) for c, m in found
        )


def analysis_to_proto(a: Analysis) -> game_pb2.Analysis:
    """What the solver says of a hand, as the message."""
    return game_pb2.Analysis(
        melds=[meld_to_proto(m) for m in a.melds],
        left=cards_to_proto(a.left),
        points_left=a.points_left,
        declare_cards=cards_to_proto(a.declare_cards),
        multiplier=a.multiplier,
        opening_value=a.opening_value,
        opening_melds=[meld_to_proto(m) for m in a.opening_melds],
        can_open=a.can_open,
        finish_discards=cards_to_proto(a.finish_discards),
        finishes=[
            game_pb2.Finish(discard=card_to_proto(c), melds=[meld_to_proto(m) for m in melds])
            for c, melds in a.finishes
        ],
    )


# -- the table core's values ----------------------------------------------------------------

_KIND_TO_PROTO = {
    "empty": game_pb2.SEAT_KIND_EMPTY,
    "player": game_pb2.SEAT_KIND_PLAYER,
    "bot": game_pb2.SEAT_KIND_BOT,
}
_STATUS_TO_PROTO = {
    WAITING: lobby_service_pb2.TABLE_STATUS_WAITING,
    PLAYING: lobby_service_pb2.TABLE_STATUS_PLAYING,
    FINISHED: lobby_service_pb2.TABLE_STATUS_FINISHED,
    CLOSED: lobby_service_pb2.TABLE_STATUS_CLOSED,
}
_STATUS_FROM_PROTO = {v: k for k, v in _STATUS_TO_PROTO.items()}


def status_from_proto(value: int) -> str:
    """The table status of a proto TableStatus ("" for unspecified: any)."""
    return _STATUS_FROM_PROTO.get(value, "")


def player_to_proto(p: PlayerInfo) -> game_pb2.PlayerState:
    """A seat as the table shows it."""
    return game_pb2.PlayerState(
        seat=p.seat,
        name=p.name,
        kind=_KIND_TO_PROTO[p.kind],
        policy=p.policy,
        connected=p.connected,
        hand_size=p.hand_size,
        opened=p.opened,
        total=p.total,
        away=p.away,
        known=cards_to_proto(p.known),
    )


def players_to_proto(players: Iterable[PlayerInfo]) -> list[game_pb2.PlayerState]:
    """Every seat as the table shows it."""
    return [player_to_proto(p) for p in players]


def table_info(s: TableSummary) -> lobby_service_pb2.TableInfo:
    """A table as the lobby shows it."""
    return lobby_service_pb2.TableInfo(
        table_id=s.table_id,
        name=s.name,
        variant=variant_to_proto(s.variant),
        options=options_to_proto(s.options),
        private=s.private,
        status=_STATUS_TO_PROTO[s.status],
        seats=players_to_proto(s.players),
        number=s.number,
        hand_analysis=s.hand_analysis,
        deal_commitment=s.deal_commitment,
        stacked_deck=s.stacked,
        rematch_table_id=s.rematch,
    )


def table_event_to_proto(e: Event) -> events_pb2.Event:
    """A table's event (its own, or the engine's) as a proto Event."""
    if type(e) not in _TABLE_EVENTS:
        return event_to_proto(e)  # the game's (nearly every event)
    E = events_pb2
    match e:
        case PlayerJoined(seat, name, kind):
            return E.Event(
                player_joined=E.PlayerJoined(seat=seat, name=name, kind=_KIND_TO_PROTO[kind])
            )
        case PlayerLeft(seat):
            return E.Event(player_left=E.PlayerLeft(seat=seat))
        case PlayerReturned(seat):
            return E.Event(player_returned=E.PlayerReturned(seat=seat))
        case TableClosed(reason):
            return E.Event(table_closed=E.TableClosed(reason=reason))
        case GameStarted(players):
            return E.Event(game_started=E.GameStarted(players=players_to_proto(players)))
        case TurnTimedOut(seat):
            return E.Event(turn_timed_out=E.TurnTimedOut(seat=seat))
        case ChatPosted(seat, text):
            return E.Event(chat_posted=E.ChatPosted(seat=seat, text=text))
    return event_to_proto(e)


#: The table's own events (the others are the engine's).
_TABLE_EVENTS = frozenset(
    {PlayerJoined, PlayerLeft, PlayerReturned, TableClosed, GameStarted, TurnTimedOut, ChatPosted}
)


class ViewEncoder:
    """Builds a table's views as messages or encoded, keeping what does not change between
    updates for the next update: the options' message, and, encoded, each seat's entry in the
    players, each meld on the table, each finished round's result and each seat's own part.

    One encoder serves one table (its caches hold that table's last values, compared by
    value or, for the engine's frozen melds and results, by identity)."""

    def __init__(self) -> None:
        self._options: tuple[Options, game_pb2.Options, bytes] | None = None
        self._results: list[tuple[ev.RoundResult, game_pb2.RoundResult, bytes]] = []
        #: By seat: the player as last shown, and its ``View.players`` entry encoded.
        self._players: list[tuple[PlayerInfo, bytes]] = []
        #: By place on the table: the meld last there, and its ``View.melds`` entry encoded.
        self._melds: list[tuple[TableMeld, bytes]] = []
        #: By seat: its own part as last encoded.
        self._own: dict[int, tuple[SeatPart, bytes]] = {}

    def _options_of(self, options: Options) -> tuple[Options, game_pb2.Options, bytes]:
        if self._options is None or self._options[0] is not options:
            msg = options_to_proto(options)
            self._options = (options, msg, game_pb2.View(options=msg).SerializeToString())
        return self._options

    def options(self, options: Options) -> game_pb2.Options:
        """The options' message (built once per change of the options)."""
        return self._options_of(options)[1]

    def _results_done(
        self, results: tuple[ev.RoundResult, ...]
    ) -> list[tuple[ev.RoundResult, game_pb2.RoundResult, bytes]]:
        done = self._results
        if len(done) > len(results) or (done and done[-1][0] is not results[len(done) - 1]):
            done.clear()  # another game
        for r in results[len(done) :]:
            msg = result_to_proto(r)
            done.append((r, msg, game_pb2.View(results=[msg]).SerializeToString()))
        return done

    def _results_of(self, results: tuple[ev.RoundResult, ...]) -> list[game_pb2.RoundResult]:
        return [msg for _, msg, _ in self._results_done(results)]

    def parts(
        self, state: TableState, connected: dict[int, int], deadline: float | None
    ) -> tuple[game_pb2.View, Callable[[game_pb2.View, int | None], None]]:
        """The part of every view that all watchers share (a spectator's view), and how to
        add to a message what one seat alone sees."""
        public = state.public_view()
        players = players_to_proto(state.players(connected, public))
        if public is None:
            shared = game_pb2.View(
                table_id=state.table_id,
                number=state.number,
                variant=variant_to_proto(state.spec.variant),
                options=self.options(state.options),
                phase=game_pb2.PHASE_WAITING,
                players=players,
            )

            def own_seat(msg: game_pb2.View, seat: int | None) -> None:
                if seat is not None:
                    msg.seat = seat

            return shared, own_seat
        shared = shared_view_to_proto(
            public,
            state.table_id,
            state.number,
            players,
            deadline,
            self.options(state.options),
            self._results_of(public.results),
        )

        def own_part(msg: game_pb2.View, seat: int | None) -> None:
            if seat is not None:
                add_own_view(msg, state.seat_part(seat))

        return shared, own_part

    def fill(
        self,
        state: TableState,
        views: dict[int | None, game_pb2.View],
        connected: dict[int, int],
        deadline: float | None = None,
    ) -> None:
        """Fill each empty message of ``views`` with what its seat (None: a spectator) sees:
        the shared part built once and copied into each, then each seat's own part added."""
        shared, own = self.parts(state, connected, deadline)
        for seat, msg in views.items():
            msg.CopyFrom(shared)
            own(msg, seat)

    def view(
        self,
        state: TableState,
        seat: int | None,
        connected: dict[int, int],
        deadline: float | None = None,
    ) -> game_pb2.View:
        """What ``seat`` (None: a spectator) sees now."""
        msg = game_pb2.View()
        self.fill(state, {seat: msg}, connected, deadline)
        return msg

    def _shared_bytes(
        self, state: TableState, connected: dict[int, int], deadline: float | None
    ) -> bytes | None:
        """The shared part encoded, from the pieces kept since the last update; None before
        the game (a waiting table is encoded from its message: it changes at every join)."""
        public = state.public_view()
        if public is None:
            return None
        # The message's scalar fields, then each kept piece of its other fields: Protocol
        # Buffers parse concatenated encodings as one message, each repeated field's entries
        # in the order met, so the bytes are the message's whatever the order of its fields.
        msg = _view_head(public, state.table_id, state.number, deadline)
        chunks = [msg.SerializeToString(), self._options_of(state.options)[2]]
        players = self._players
        for i, p in enumerate(state.players(connected, public)):
            # By identity: TableState.players gives the same value while a seat's facts are
            # the same, and a new value only when they changed.
            if not (i < len(players) and players[i][0] is p):
                _keep(players, i, p, game_pb2.View(players=[player_to_proto(p)]))
            chunks.append(players[i][1])
        melds = self._melds
        del melds[len(public.melds) :]
        for i, tm in enumerate(public.melds):
            if not (i < len(melds) and melds[i][0] is tm):  # melds are frozen: new when changed
                _keep(melds, i, tm, game_pb2.View(melds=[table_meld_to_proto(i + 1, tm)]))
            chunks.append(melds[i][1])
        chunks.extend(r[2] for r in self._results_done(public.results))
        return b"".join(chunks)

    def _own_bytes(self, state: TableState, seat: int) -> bytes:
        """What ``seat`` alone sees, encoded (kept while it does not change)."""
        kept = self._own.get(seat)
        part = state.seat_part(seat, None if kept is None else kept[0])
        if part is None:  # before the game, a seat's view says only whose it is
            return game_pb2.View(seat=seat).SerializeToString() if state.game is None else b""
        if kept is not None and part is kept[0]:
            return kept[1]
        msg = game_pb2.View()
        add_own_view(msg, part)
        encoded = msg.SerializeToString()
        self._own[seat] = (part, encoded)
        return encoded

    def encode(
        self,
        state: TableState,
        seats: Iterable[int | None],
        connected: dict[int, int],
        deadline: float | None = None,
    ) -> dict[int | None, bytes]:
        """What each of ``seats`` sees now, encoded: the shared part serialised once and each
        seat's own part (a small message) appended to it. Protocol Buffers parse concatenated
        encodings as one message merged from them, and the two parts set no field in common,
        so the bytes are exactly the seat's whole view (:meth:`view`)."""
        shared = self._shared_bytes(state, connected, deadline)
        if shared is None:  # a waiting table
            shared = self.parts(state, connected, deadline)[0].SerializeToString()
        return {
            seat: shared if seat is None else shared + self._own_bytes(state, seat)
            for seat in seats
        }


def _keep(kept: list[tuple[T, bytes]], i: int, value: T, msg: game_pb2.View) -> None:
    """Keep ``value`` and ``msg`` encoded at place ``i`` of ``kept`` (at most one past its end)."""
    if i < len(kept):
        kept[i] = (value, msg.SerializeToString())
    else:
        kept.append((value, msg.SerializeToString()))


# -- responses sent as bytes (see ``wire``) -------------------------------------------------


def update_head(number: int, events: Iterable[Event]) -> bytes:
    """An Update without its view, encoded: the part every watcher of the update shares."""
    return table_service_pb2.Update(
        number=number, events=[table_event_to_proto(e) for e in events]
    ).SerializeToString()


def snapshot_head(number: int) -> bytes:
    """The Update that opens a stream (its view follows), encoded."""
    return table_service_pb2.Update(number=number, snapshot=True).SerializeToString()


def encode_update(head: bytes, view: bytes) -> bytes:
    """The encoded WatchResponse (or PlayResponse) of an update: ``head`` is the update's
    encoding without its view, ``view`` the encoded view."""
    return message_field(UPDATE, head + message_field(UPDATE_VIEW, view))


def encode_updates(
    number: int, head: bytes, views: Mapping[K, bytes]
) -> dict[K, tuple[int, bytes]]:
    """:func:`encode_update` of ``head`` with each of ``views``, as the items of update
    ``number`` (by the same keys): every watcher's message of an update."""
    return {key: (number, encode_update(head, view)) for key, view in views.items()}


def encode_heartbeat(
    number: int, connected: Sequence[bool] = (), deadline: float | None = None
) -> bytes:
    """A heartbeat WatchResponse (or PlayResponse) with each seat's presence and the turn's
    clock (epoch seconds; None: no turn is timed), encoded."""
    beat = table_service_pb2.Heartbeat(number=number, connected=connected)
    if deadline is not None:
        beat.turn_deadline.FromNanoseconds(int(deadline * 1e9))
    return table_service_pb2.WatchResponse(heartbeat=beat).SerializeToString()


def encode_stream_note(took_over: bool, others: int) -> bytes:
    """What a seat's stream's first message says of the seat's other streams: it took the
    seat over from them, or how many go on beside it (fields to append to that message)."""
    note = (
        table_service_pb2.WatchResponse(took_over=True)
        if took_over
        else table_service_pb2.WatchResponse(other_streams=others)
    )
    return note.SerializeToString()


def encode_act_response(number: int, view: bytes) -> bytes:
    """An ActResponse around an encoded view."""
    head = table_service_pb2.ActResponse(number=number).SerializeToString()
    return head + message_field(ACT_VIEW, view)


def encode_accepted(command_id: int) -> bytes:
    """The ``accepted`` field of a PlayResponse, to append to an encoded update."""
    return table_service_pb2.PlayResponse(accepted=command_id).SerializeToString()


def encode_accepted_before(command_id: int, number: int) -> bytes:
    """A PlayResponse saying a command of the stream was a retry of one accepted before, which
    became update ``number``."""
    before = table_service_pb2.AcceptedBefore(command_id=command_id, number=number)
    return table_service_pb2.PlayResponse(accepted_before=before).SerializeToString()


def encode_refused(
    command_id: int, code: int, reason: str, message: str, metadata: dict[str, str]
) -> bytes:
    """A PlayResponse refusing one command of the stream."""
    refused = table_service_pb2.CommandRefused(
        command_id=command_id,
        code=code,
        reason=reason,
        message=message,
        metadata=metadata,
        domain=DOMAIN,
    )
    return table_service_pb2.PlayResponse(refused=refused).SerializeToString()
