"""The one place where the client side turns protobuf messages into engine values and back.

A proto View becomes an engine :class:`~rami.engine.views.View`, so the engine's policies,
solver and formatting work on what a remote client sees; an engine action becomes an
``ActRequest``. A call that changes something carries a request id (:func:`new_request_id`),
the same on every retry of the call.
"""

from __future__ import annotations

import secrets

from rami.engine import (
    CARDS,
    Action,
    AddToMeld,
    Card,
    Declare,
    Discard,
    Draw,
    Lay,
    Meld,
    NewMeld,
    Options,
    Phase,
    TableMeld,
    TakeJoker,
    Variant,
    View,
    get_variant,
)
from rami.engine import events as ev
from rami.engine.events import RoundResult
from rami.v1 import events_pb2, game_pb2, table_service_pb2

from . import tableevents as te

__all__ = [
    "VARIANT_IDS",
    "action_to_request",
    "card",
    "cards",
    "event_from_proto",
    "meld_from_proto",
    "new_request_id",
    "options_to_proto",
    "result_from_proto",
    "variant_id",
    "variant_of",
    "view_from_proto",
]

_VARIANTS = {
    game_pb2.VARIANT_PORTUGUESE: "portuguese",
    game_pb2.VARIANT_TALLAGE: "tallage",
    game_pb2.VARIANT_SIMPLE: "simple",
}
#: Proto variants by engine id.
VARIANT_IDS = {name: value for value, name in _VARIANTS.items()}
_PHASES = {
    game_pb2.PHASE_WAITING: Phase.DRAW,
    game_pb2.PHASE_DRAW: Phase.DRAW,
    game_pb2.PHASE_PLAY: Phase.PLAY,
    game_pb2.PHASE_ROUND_OVER: Phase.ROUND_OVER,
    game_pb2.PHASE_GAME_OVER: Phase.GAME_OVER,
}
_ENDINGS = {
    game_pb2.ROUND_ENDING_DECLARE: "declare",
    game_pb2.ROUND_ENDING_RAMI: "rami",
    game_pb2.ROUND_ENDING_RAMI_SEC: "rami_sec",
    game_pb2.ROUND_ENDING_VOID: "void",
}
_SOURCES = {game_pb2.DRAW_SOURCE_STOCK: "stock", game_pb2.DRAW_SOURCE_DISCARD: "discard"}
_FALSE_DECL = {game_pb2.FALSE_DECLARATION_REJECT: "reject"}


def card(value: int) -> Card | None:
    """The engine card of a proto Card value (None when unset)."""
    return CARDS[value - 1] if 1 <= value <= 53 else None


def cards(values: object) -> tuple[Card, ...]:
    """Engine cards of proto Card values."""
    return tuple(CARDS[v - 1] for v in values)  # type: ignore[attr-defined]


def meld_from_proto(msg: game_pb2.Meld) -> Meld:
    """The engine meld of a proto Meld (jokers where they stand)."""
    jokers_as = cards(msg.stands_for) if msg.kind == game_pb2.MELD_KIND_RUN else ()
    return Meld.from_cards(cards(msg.cards), jokers_as=jokers_as, jokers_per_meld=4)


def options_dict(msg: game_pb2.Options) -> dict[str, object]:
    """Options as the engine names them (every field is set in a server's view)."""
    return {
        "players": msg.players,
        "rounds": msg.rounds,
        "target": msg.target,
        "opening": msg.opening,
        "joker_penalty": msg.joker_penalty,
        "jokers_per_meld": msg.jokers_per_meld,
        "false_declaration": _FALSE_DECL.get(msg.false_declaration, "reveal"),
        "stock_rebuilds": msg.stock_rebuilds,
        "simple_rami_sec": msg.simple_rami_sec,
        "turn_seconds": msg.turn_seconds,
        "round_cap": msg.round_cap,
    }


def result_from_proto(r: game_pb2.RoundResult) -> RoundResult:
    """A round's result."""
    return RoundResult(
        r.round,
        _ENDINGS.get(r.ending, "void"),
        r.winner if r.HasField("winner") else None,
        tuple(r.points),
        tuple(r.totals),
        r.multiplier,
        tuple(cards(h.cards) for h in r.hands),
        r.seed,
        r.server_seed,
    )


def view_from_proto(msg: game_pb2.View) -> View:
    """The engine view of a proto View."""
    return View(
        variant=get_variant(_VARIANTS[msg.variant]),
        options=Options.from_dict(options_dict(msg.options)),
        seat=msg.seat if msg.HasField("seat") else None,
        players=len(msg.players),
        number=msg.number,
        round=msg.round,
        dealer=msg.dealer,
        turn=msg.turn,
        phase=_PHASES[msg.phase],
        hand=cards(msg.hand) if msg.HasField("seat") else None,
        drawn=card(msg.drawn),
        hand_sizes=tuple(p.hand_size for p in msg.players),
        stock_size=msg.stock_size,
        discard_top=card(msg.discard_top),
        discard_size=msg.discard_size,
        melds=tuple(TableMeld(m.owner, meld_from_proto(m.meld)) for m in msg.melds),
        opened=tuple(p.opened for p in msg.players),
        known=tuple(cards(p.known) for p in msg.players),
        bar=msg.bar,
        first_circuit=msg.first_circuit,
        rebuilds=msg.rebuilds,
        totals=tuple(p.total for p in msg.players),
        results=tuple(result_from_proto(r) for r in msg.results),
        winners=tuple(msg.winners),
        draw_sources=tuple(_SOURCES[s] for s in msg.draw_sources if s in _SOURCES),
        can_lay=msg.can_lay,
        can_declare=msg.can_declare,
    )


def _lay_to_proto(lay: Lay) -> game_pb2.Lay:
    steps = []
    for s in lay.steps:
        if isinstance(s, NewMeld):
            steps.append(
                game_pb2.LayStep(
                    new_meld=game_pb2.NewMeld(
                        cards=[c + 1 for c in s.cards], jokers_as=[c + 1 for c in s.jokers_as]
                    )
                )
            )
        elif isinstance(s, AddToMeld):
            end = {"low": game_pb2.RUN_END_LOW, "high": game_pb2.RUN_END_HIGH}.get(
                s.end or "", game_pb2.RUN_END_UNSPECIFIED
            )
            steps.append(
                game_pb2.LayStep(
                    add=game_pb2.AddToMeld(meld=s.meld, cards=[c + 1 for c in s.cards], end=end)
                )
            )
        elif isinstance(s, TakeJoker):
            steps.append(
                game_pb2.LayStep(take_joker=game_pb2.TakeJoker(meld=s.meld, card=s.card + 1))
            )
    return game_pb2.Lay(steps=steps)


def new_request_id() -> str:
    """A fresh request id: 24 random bytes, 32 characters (long and random enough for every
    call, CreateTable and JoinTable included). A retry of a call sends the same one."""
    return secrets.token_urlsafe(24)


def action_to_request(
    table_id: str, number: int, action: Action, request_id: str = ""
) -> table_service_pb2.ActRequest:
    """An Act command for an engine action decided on update ``number`` (with ``request_id``,
    to send again safely)."""
    req = table_service_pb2.ActRequest(table_id=table_id, number=number, request_id=request_id)
    if isinstance(action, Draw):
        stock = action.source == "stock"
        req.draw.source = game_pb2.DRAW_SOURCE_STOCK if stock else game_pb2.DRAW_SOURCE_DISCARD
        if action.lay is not None:
            req.draw.lay.CopyFrom(_lay_to_proto(action.lay))
    elif isinstance(action, Lay):
        req.lay.CopyFrom(_lay_to_proto(action))
    elif isinstance(action, Discard):
        req.discard.card = action.card + 1
    elif isinstance(action, Declare):
        req.declare.card = action.card + 1
    else:
        raise ValueError(f"not a seat's action: {action!r}")
    return req


def variant_id(value: int) -> str:
    """The engine id of a proto Variant ("" when unset)."""
    return _VARIANTS.get(value, "")


def variant_of(value: int) -> Variant | None:
    """The engine variant of a proto Variant (None when unset)."""
    found = _VARIANTS.get(value)
    return get_variant(found) if found is not None else None


def options_to_proto(options: dict[str, object]) -> game_pb2.Options:
    """Proto Options from engine option names and values (those left out take defaults)."""
    msg = game_pb2.Options()
    for name, value in options.items():
        if name == "false_declaration":
            msg.false_declaration = (
                game_pb2.FALSE_DECLARATION_REJECT
                if value == "reject"
                else game_pb2.FALSE_DECLARATION_REVEAL
            )
        else:
            setattr(msg, name, value)
    return msg


def _table_meld(m: game_pb2.TableMeld) -> tuple[int, TableMeld]:
    return m.number, TableMeld(m.owner, meld_from_proto(m.meld))


def _game_event(which: str, e: object) -> ev.Event | None:
    """The engine event of a proto game event (the stream's public facts)."""
    if which == "round_started":
        assert isinstance(e, events_pb2.RoundStarted)
        return ev.RoundStarted(e.round, e.dealer, e.seed_hash, card(e.discard_top), e.first_player)
    if which == "card_drawn":
        assert isinstance(e, events_pb2.CardDrawn)
        return ev.Drew(e.seat, _SOURCES.get(e.source, "stock"), card(e.card))
    if which == "cards_laid":
        assert isinstance(e, events_pb2.CardsLaid)
        return ev.Laid(
            e.seat,
            tuple(e.new_melds),
            tuple(e.changed_melds),
            tuple(_table_meld(m) for m in e.melds),
            cards(e.cards),
            e.jokers_taken,
            e.opened,
            e.opening_value,
            e.bar,
            e.finish,
        )
    if which == "card_discarded":
        assert isinstance(e, events_pb2.CardDiscarded)
        discarded = card(e.card)
        return ev.Discarded(e.seat, discarded) if discarded is not None else None
    if which == "hand_declared":
        assert isinstance(e, events_pb2.HandDeclared)
        return ev.Declared(
            e.seat,
            cards(e.cards),
            e.complete,
            card(e.card),
            e.multiplier,
            tuple(meld_from_proto(m) for m in e.melds),
        )
    if which == "stock_rebuilt":
        assert isinstance(e, events_pb2.StockRebuilt)
        return ev.StockRebuilt(e.rebuilds, e.stock_size)
    if which == "round_ended":
        assert isinstance(e, events_pb2.RoundEnded)
        return ev.RoundEnded(result_from_proto(e.result))
    if which == "game_ended":
        assert isinstance(e, events_pb2.GameEnded)
        return ev.GameEnded(tuple(e.totals), tuple(e.winners))
    return None


def _table_event(which: str, e: object) -> te.TableEvent | None:
    """The client's value of a proto table event (seats, start, chat, clock)."""
    if which == "player_joined":
        assert isinstance(e, events_pb2.PlayerJoined)
        return te.Joined(e.seat, e.name, e.kind == game_pb2.SEAT_KIND_BOT)
    if which == "player_left":
        assert isinstance(e, events_pb2.PlayerLeft)
        return te.Left(e.seat)
    if which == "player_returned":
        assert isinstance(e, events_pb2.PlayerReturned)
        return te.Returned(e.seat)
    if which == "game_started":
        assert isinstance(e, events_pb2.GameStarted)
        return te.Started(tuple(p.name for p in e.players))
    if which == "chat_posted":
        assert isinstance(e, events_pb2.ChatPosted)
        return te.Chatted(e.seat, e.text)
    if which == "turn_timed_out":
        assert isinstance(e, events_pb2.TurnTimedOut)
        return te.TimedOut(e.seat)
    return None


def event_from_proto(msg: events_pb2.Event) -> ev.Event | te.TableEvent | None:
    """The engine (or table) event of a proto Event; None for a kind this client doesn't know."""
    which = msg.WhichOneof("kind")
    if which is None:
        return None
    inner = getattr(msg, which)
    return _game_event(which, inner) or _table_event(which, inner)
