"""Promise 4, hostile input changes nothing (and promises 2 and 3 for error messages and tokens):
hypothesis-driven commands through the real API of a real server.

Commands are drawn at random, shaped to reach deep: actions with random fields, in the wrong
phase or out of turn, cards not held (another seat's, the discard's, values that are no card),
lays of random steps, stale, future and replayed numbers, other seats' and other tables'
tokens, forged and mangled tokens, bytes that are no message, and messages over the 64 KiB
limit. Each one the server refuses must come back with a status code and reason the contract
lists together (``ErrorReason`` in ``proto/rami/v1/errors.proto``), leave the table exactly as
it was (its number, every seat's view and the spectator's, and the hidden state behind them),
and name no card that its sender may not see; the server must answer the next call. A few
commands are legal and accepted: they move the game on, and the next command is judged against
the new state.

CI runs a fixed-seed sample (``RAMI_FUZZ_EXAMPLES``, 500 by default); ``make fuzz`` runs 10,000
(``RAMI_FUZZ_SEED`` picks another seed).
"""

from __future__ import annotations

import logging
import os
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import astuple, dataclass, field
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from reliability_support import card_mentions
from server_support import (
    RPC_TIMEOUT,
    VARIANTS,
    error_reasons,
    md,
    stacked_deck,
    without_presence,
)

from rami.client.convert import action_to_request, view_from_proto
from rami.engine import POLICIES, Card
from rami.server import convert
from rami.server.app import MAX_MESSAGE
from rami.server.table import TableConfig
from rami.server.tablestate import TableState
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

T = RPC_TIMEOUT
EXAMPLES = int(os.environ.get("RAMI_FUZZ_EXAMPLES", "500"))
SEED = os.environ.get("RAMI_FUZZ_SEED")
#: Nothing happens at a table on its own: no bots, no clock, no next deal, no away seat played.
STILL = TableConfig(bot_delay=3600.0, round_pause=3600.0, away_delay=3600.0, heartbeat=0.5)
TABLES = ("tallage", "portuguese", "simple", "waiting", "finished")


def documented() -> dict[str, set[str]]:
    """Status code → reasons, from the contract's ErrorReason (``errors.proto``)."""
    catalog: dict[str, set[str]] = {}
    for reason, code in error_reasons().items():
        catalog.setdefault(code.name, set()).add(reason)
    assert catalog, "no reasons in errors.proto"
    return catalog


# -- the tables under fire ------------------------------------------------------------------


@dataclass
class Target:
    """One table and the tokens that concern it."""

    key: str
    table_id: str
    owner: str
    tokens: list[str]


@dataclass
class Arena:
    """A server, its tables, and what happened to them."""

    server: ServerThread
    stubs: Stubs
    tables: dict[str, Target] = field(default_factory=dict)
    accepted: list[tuple[str, table_service_pb2.ActRequest]] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    log: list[str] = field(default_factory=list)

    def new(self, key: str) -> Target:
        """(Re)create the table ``key`` in its starting state."""
        lobby = self.stubs.lobby
        players = {"tallage": 2, "portuguese": 2, "simple": 3, "waiting": 3, "finished": 2}[key]
        variant = {"waiting": "simple", "finished": "portuguese"}.get(key, key)
        deck: list[lobby_service_pb2.Deck] = []
        if key == "tallage":
            hands = {
                0: "2h 3h 4h 5c 5d 5s Kc Kd Ks 10s Js Qs Qc Qd Qh",
                1: "Jc Jd Jh 7d 8d 9d 10d 2s 3s 4s 6c 5h Ac 2d",
            }
            deck = [stacked_deck("tallage", 2, hands, "7h", "8c 6h 4d")]
        elif key == "finished":
            hearts = "Ah 2h 3h 4h 5h 6h 7h 8h 9h 10h Jh Qh Kh"
            deck = [stacked_deck("portuguese", 2, {1: hearts}, "Kc", "5c")]
        options = game_pb2.Options(players=players)
        if variant == "portuguese":
            options.rounds = 1
        created = lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name=f"fuzz {key}", variant=VARIANTS[variant], options=options, stacked_decks=deck
            ),
            timeout=T,
        )
        table_id = created.table.table_id
        seats = 1 if key == "waiting" else players
        tokens = [
            lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{i}", seat=i),
                timeout=T,
            ).token
            for i in range(seats)
        ]
        target = Target(key, table_id, created.owner_token, tokens)
        self.tables[key] = target
        if key == "tallage":  # one accepted command to replay later
            self.act(target, 0, table_service_pb2.DiscardAction(card=_proto("2h")))
        if key == "finished":  # seat 1 draws the 5♣ and declares the hearts
            self.act(target, 1, table_service_pb2.DrawAction(source=game_pb2.DRAW_SOURCE_STOCK))
            self.act(target, 1, table_service_pb2.DeclareAction(card=_proto("5c")))
        return target

    def act(self, target: Target, seat: int, action: Any) -> None:
        number = self.stubs.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=target.table_id), timeout=T
        ).table.number
        kind = {
            table_service_pb2.DiscardAction: "discard",
            table_service_pb2.DrawAction: "draw",
            table_service_pb2.DeclareAction: "declare",
        }[type(action)]
        request = table_service_pb2.ActRequest(
            table_id=target.table_id, number=number, **{kind: action}
        )
        self.stubs.table.Act(request, metadata=md(target.tokens[seat]), timeout=T)
        self.accepted.append((target.tokens[seat], request))


def _proto(text: str) -> int:
    return int(Card.parse(text)) + 1


class LogLines(logging.Handler):
    """Every log line of the server at info level and above, formatted."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.INFO)
        self.lines = lines
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    lines: list[str] = []
    handler = LogLines(lines)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    srv = ServerThread(str(tmp_path_factory.mktemp("fuzz") / "rami.db"), STILL).start()
    stubs = Stubs(srv.target)
    a = Arena(srv, stubs, log=lines)
    try:
        for key in TABLES:
            a.new(key)
        yield a
    finally:
        stubs.channel.close()
        srv.stop()
        root.removeHandler(handler)
        root.setLevel(old_level)


# -- what a table looks like, inside and out ---------------------------------------------------


@dataclass(frozen=True)
class Look:
    """Everything about a table: as the lobby shows it, as each seat and a spectator see it,
    and the hidden state behind (hands, stock, discard, log)."""

    info: lobby_service_pb2.TableInfo
    views: tuple[game_pb2.View, ...]
    hidden: tuple[Any, ...]


def look(arena: Arena, target: Target) -> Look:
    info = arena.stubs.lobby.GetTable(
        lobby_service_pb2.GetTableRequest(table_id=target.table_id), timeout=T
    ).table
    for p in info.seats:
        p.connected = False

    def inside(s: TableState) -> tuple[tuple[game_pb2.View, ...], tuple[Any, ...]]:
        seats = (*range(len(s.seats)), None)
        encoder = convert.ViewEncoder()
        views = tuple(without_presence(encoder.view(s, seat, {}, None)) for seat in seats)
        g = s.game
        game = None
        if g is not None:
            game = (
                g.round,
                g.dealer,
                g.turn,
                g.phase,
                g.turn_index,
                g.drawn,
                g.bar,
                g.rebuilds,
                tuple(map(tuple, g.hands)),
                tuple(g.stock),
                tuple(g.discard),
                repr(g.melds),
                tuple(g.totals),
                tuple(g.opened_turn),
                len(g.log),
            )
        seated = tuple(astuple(x) for x in s.seats)
        return views, (s.number, s.game_number, s.status, len(s.entries), seated, game)

    async def read() -> tuple[tuple[game_pb2.View, ...], tuple[Any, ...]]:
        table = arena.server.server.lobby.tables[target.table_id]  # type: ignore[union-attr]
        return await table.read(inside)

    views, hidden = arena.server.call(read())
    return Look(info, views, hidden)


def visible_to(view: game_pb2.View) -> set[int]:
    """Proto card values a watcher may see in its view."""
    seen = set(view.hand) | {view.discard_top, view.drawn}
    for m in view.melds:
        seen |= set(m.meld.cards) | set(m.meld.stands_for)
    for r in view.results:
        for h in r.hands:
            seen |= set(h.cards)
    return seen


def request_cards(msg: Any) -> set[int]:
    """Every card value anywhere in a request."""
    out: set[int] = set()
    for fd, value in msg.ListFields():
        if fd.message_type is not None:
            for item in value if fd.is_repeated else [value]:
                out |= request_cards(item)
        elif fd.enum_type is not None and fd.enum_type.full_name == "rami.v1.Card":
            out |= set(value) if fd.is_repeated else {value}
    return out


# -- the commands ------------------------------------------------------------------------------

CARD = st.one_of(
    st.tuples(st.just("own"), st.integers(0, 20)),
    st.tuples(st.just("other"), st.integers(0, 60)),
    st.tuples(st.just("top"), st.just(0)),
    st.tuples(st.just("raw"), st.integers(-3, 70)),
)
STEP = st.one_of(
    st.tuples(st.just("new"), st.lists(CARD, max_size=6), st.lists(CARD, max_size=2)),
    st.tuples(st.just("add"), st.integers(-2, 8), st.lists(CARD, max_size=3), st.integers(0, 3)),
    st.tuples(st.just("take"), st.integers(-2, 8), CARD),
    st.just(("empty",)),
)
LAY = st.one_of(st.lists(STEP, max_size=4), st.just([("new", [], [])] * 41))
ACTION = st.one_of(
    st.tuples(st.just("draw"), st.integers(-1, 4), st.none() | LAY),
    st.tuples(st.just("lay"), LAY),
    st.tuples(st.just("discard"), CARD),
    st.tuples(st.just("declare"), CARD),
    st.just(("nothing",)),
)
NUMBER = st.one_of(
    st.sampled_from(["current"] * 6 + ["previous", "next", "game", "zero"]),
    st.integers(0, 2**64 - 1),
)
STRANGERS = [
    ("owner",),
    ("other seat",),
    ("other owner",),
    ("none",),
    ("empty",),
    ("forged",),
    ("flipped",),
    ("cut",),
    ("longer",),
    ("spaced",),
]
TOKEN = st.one_of(
    st.sampled_from([("turn",)] * 4 + [("not turn",)] * 2 + STRANGERS),
    st.tuples(st.just("seat"), st.integers(0, 3)),
)
PLAYING = ["tallage", "portuguese", "simple"]
TABLE = st.sampled_from(
    [*TABLES, *TABLES, *PLAYING, *PLAYING, "missing", "long id", "empty id", "quoted"]
)
OWN = st.tuples(st.just("own"), st.integers(0, 20))
#: A sensible move of the seat to play, on the latest number: often legal, so games go on.
MOVE = st.tuples(
    st.just("act"),
    st.sampled_from(PLAYING),
    st.just(("turn",)),
    st.just("current"),
    st.one_of(
        st.tuples(st.just("draw"), st.sampled_from([1, 2]), st.none()),
        st.tuples(st.just("discard"), OWN),
        st.tuples(st.just("declare"), OWN),
        st.tuples(
            st.just("lay"),
            st.lists(
                st.tuples(st.just("new"), st.lists(OWN, min_size=3, max_size=4), st.just([])),
                min_size=1,
                max_size=3,
            ),
        ),
    ),
)
NAMES = st.one_of(
    st.sampled_from(["", "   ", "\x1b[31m\x07", "\u202e\u200b", "\x1b]0;x\x07", "Ana", "x" * 500]),
    st.text(max_size=40),
)
COMMAND = st.one_of(
    st.tuples(st.just("policy"), st.sampled_from(PLAYING), st.integers(0, 2**32)),
    MOVE,
    MOVE,
    st.tuples(st.just("act"), TABLE, TOKEN, NUMBER, ACTION),
    st.tuples(st.just("act"), TABLE, TOKEN, NUMBER, ACTION),
    st.tuples(st.just("act"), TABLE, TOKEN, NUMBER, ACTION),
    st.tuples(st.just("replay"), st.integers(0, 1000)),
    st.tuples(st.just("chat"), TABLE, TOKEN, NAMES),
    st.tuples(st.just("analyse"), TABLE, TOKEN),
    st.tuples(st.just("watch"), TABLE, TOKEN, st.none() | NUMBER),
    st.tuples(st.just("join"), TABLE, NAMES, st.sampled_from([0, -1, 3, 99, 2**31 - 1])),
    st.tuples(st.just("leave"), TABLE, TOKEN),
    st.tuples(st.just("bot"), TABLE, TOKEN, st.sampled_from(["cheater", "GREEDY", "x" * 99])),
    st.tuples(st.just("start"), TABLE, TOKEN),
    st.tuples(
        st.just("bytes"),
        st.sampled_from(["Act", "Chat", "Watch", "JoinTable"]),
        st.binary(min_size=1, max_size=64),
    ),
    st.tuples(st.just("oversize"), st.sampled_from(["act", "chat", "join", "create"])),
)


@dataclass
class Sent:
    """A command as sent: where to, with which token, and what it carried."""

    key: str | None
    token: str | None
    request: Any
    call: Any


class Builder:
    """Turns a drawn command into a request against the tables as they are now."""

    def __init__(self, arena: Arena, cmd: tuple[Any, ...]) -> None:
        self.arena = arena
        self.cmd = cmd
        self.key: str | None = None
        self.target: Target | None = None
        self.look: Look | None = None

    def table_id(self, which: str) -> str:
        if which in self.arena.tables:
            self.key = which
            self.target = self.arena.tables[which]
            self.look = look(self.arena, self.target)
            return self.target.table_id
        return {"missing": "nosuchtable00000", "long id": "x" * 5000, "empty id": ""}.get(
            which, "'; DROP TABLE tables; --"
        )

    def token(self, kind: tuple[Any, ...]) -> str | None:
        t = self.target
        others = [x for k, x in self.arena.tables.items() if k != self.key]
        own = t.tokens[0] if t is not None else others[0].tokens[0]
        match kind[0]:
            case "turn" | "not turn":
                if t is None:
                    return others[0].tokens[0]
                turn = self.look.views[-1].turn if self.look is not None else 0
                seat = turn if kind[0] == "turn" else (turn + 1) % len(t.tokens)
                return t.tokens[seat % len(t.tokens)]
            case "seat":
                if t is None:
                    return others[0].tokens[0]
                return t.tokens[kind[1]] if kind[1] < len(t.tokens) else "no-such-seat-token"
            case "owner":
                return t.owner if t is not None else others[0].owner
            case "other seat":
                return others[-1].tokens[-1]
            case "other owner":
                return others[0].owner
            case "none":
                return None
            case "empty":
                return ""
            case "forged":
                return "A" * 32
            case "flipped":
                return ("B" if own[0] != "B" else "C") + own[1:]
            case "cut":
                return own[:-1]
            case "longer":
                return own + "A"
            case "spaced":
                return f" {own} "
        raise AssertionError(kind)

    def card(self, pick: tuple[str, int], seat: int) -> int:
        kind, n = pick
        look_ = self.look
        if kind == "raw" or look_ is None:
            return n if kind == "raw" else 1 + n % 53
        views = look_.views
        if kind == "own":
            hand = list(views[seat].hand) if seat < len(views) - 1 else []
            return hand[n % len(hand)] if hand else 1 + n % 53
        if kind == "other":
            pool = [c for i, v in enumerate(views[:-1]) if i != seat for c in v.hand]
            return pool[n % len(pool)] if pool else 1 + n % 53
        return views[-1].discard_top

    def lay(self, steps: list[tuple[Any, ...]], seat: int) -> game_pb2.Lay:
        out = game_pb2.Lay()
        for step in steps:
            s = out.steps.add()
            if step[0] == "new":
                s.new_meld.cards.extend(self.card(c, seat) for c in step[1])
                s.new_meld.jokers_as.extend(self.card(c, seat) for c in step[2])
                s.new_meld.SetInParent()
            elif step[0] == "add":
                s.add.meld = step[1]
                s.add.cards.extend(self.card(c, seat) for c in step[2])
                s.add.end = step[3]  # type: ignore[assignment]
                s.add.SetInParent()
            elif step[0] == "take":
                s.take_joker.meld = step[1]
                s.take_joker.card = self.card(step[2], seat)  # type: ignore[assignment]
                s.take_joker.SetInParent()
        return out

    def number(self, kind: str | int) -> int:
        if isinstance(kind, int):
            return kind
        hidden = self.look.hidden if self.look is not None else (5, 5)
        now, game = int(hidden[0]), int(hidden[1])
        return {
            "current": now,
            "previous": max(0, now - 1),
            "next": now + 1,
            "game": max(0, game - 1),
            "zero": 0,
        }[kind]

    def seat_of(self, token: str | None) -> int:
        t = self.target
        if t is not None and token in t.tokens:
            return t.tokens.index(token)
        return 99

    def build(self) -> Sent:
        stubs = self.arena.stubs
        cmd = self.cmd
        match cmd[0]:
            case "act":
                _, which, tok, num, action = cmd
                table_id = self.table_id(which)
                token = self.token(tok)
                seat = self.seat_of(token)
                request = table_service_pb2.ActRequest(table_id=table_id, number=self.number(num))
                if action[0] == "draw":
                    request.draw.source = action[1]
                    if action[2] is not None:
                        request.draw.lay.CopyFrom(self.lay(action[2], seat))
                    request.draw.SetInParent()
                elif action[0] == "lay":
                    request.lay.CopyFrom(self.lay(action[1], seat))
                    request.lay.SetInParent()
                elif action[0] == "discard":
                    request.discard.card = self.card(action[1], seat)
                    request.discard.SetInParent()
                elif action[0] == "declare":
                    request.declare.card = self.card(action[1], seat)
                    request.declare.SetInParent()
                return Sent(self.key, token, request, stubs.table.Act)
            case "policy":  # the greedy bot's move for the seat to play: legal, accepted
                table_id = self.table_id(cmd[1])
                assert self.look is not None and self.target is not None
                turn = self.look.views[-1].turn
                view = self.look.views[turn]
                if view.phase not in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY):
                    view = self.look.views[-1]  # nothing to play: sent by a spectator, refused
                    return Sent(
                        self.key,
                        None,
                        table_service_pb2.ActRequest(
                            table_id=table_id, number=view.number, discard={"card": 1}
                        ),
                        stubs.table.Act,
                    )
                action = POLICIES["greedy"](view_from_proto(view), random.Random(cmd[2]))
                request = action_to_request(table_id, view.number, action)
                return Sent(self.key, self.target.tokens[turn], request, stubs.table.Act)
            case "replay":
                token, request = self.arena.accepted[cmd[1] % len(self.arena.accepted)]
                for key, t in self.arena.tables.items():
                    if t.table_id == request.table_id:
                        self.table_id(key)
                return Sent(self.key, token, request, stubs.table.Act)
            case "chat":
                request = table_service_pb2.ChatRequest(table_id=self.table_id(cmd[1]), text=cmd[3])
                return Sent(self.key, self.token(cmd[2]), request, stubs.table.Chat)
            case "analyse":
                request = table_service_pb2.AnalyseMyHandRequest(table_id=self.table_id(cmd[1]))
                return Sent(self.key, self.token(cmd[2]), request, stubs.table.AnalyseMyHand)
            case "watch":
                request = table_service_pb2.WatchRequest(table_id=self.table_id(cmd[1]))
                if cmd[3] is not None:
                    request.after = self.number(cmd[3])
                return Sent(self.key, self.token(cmd[2]), request, stubs.table.Watch)
            case "join":
                request = lobby_service_pb2.JoinTableRequest(
                    table_id=self.table_id(cmd[1]), name=cmd[2], seat=cmd[3]
                )
                return Sent(self.key, None, request, stubs.lobby.JoinTable)
            case "leave":
                request = lobby_service_pb2.LeaveTableRequest(table_id=self.table_id(cmd[1]))
                token = self.token(cmd[2])
                if self.target is not None and token in self.target.tokens:
                    token = "A" * 32  # a seat that leaves is played for: not a refusal
                return Sent(self.key, token, request, stubs.lobby.LeaveTable)
            case "bot":
                request = lobby_service_pb2.AddBotRequest(
                    table_id=self.table_id(cmd[1]), policy=cmd[3]
                )
                return Sent(self.key, self.token(cmd[2]), request, stubs.lobby.AddBot)
            case "start":
                request = lobby_service_pb2.StartTableRequest(table_id=self.table_id(cmd[1]))
                return Sent(self.key, self.token(cmd[2]), request, stubs.lobby.StartTable)
            case "bytes":
                method = f"/rami.v1.{'Lobby' if cmd[1] == 'JoinTable' else 'Table'}Service/{cmd[1]}"
                channel = stubs.channel
                if cmd[1] == "Watch":
                    raw = channel.unary_stream(method)
                else:
                    raw = channel.unary_unary(method)
                self.table_id("tallage")  # the table most likely to be hit: watch it
                return Sent(self.key, None, cmd[2], raw)
            case "oversize":
                which = self.table_id("tallage")
                big = "x" * (MAX_MESSAGE + 10)
                token = self.arena.tables["tallage"].tokens[0]
                if cmd[1] == "act":
                    request = table_service_pb2.ActRequest(table_id=which, number=1)
                    request.lay.steps.add().new_meld.cards.extend([1] * (MAX_MESSAGE + 10))
                    return Sent(self.key, token, request, stubs.table.Act)
                if cmd[1] == "chat":
                    request = table_service_pb2.ChatRequest(table_id=which, text=big)
                    return Sent(self.key, token, request, stubs.table.Chat)
                if cmd[1] == "join":
                    request = lobby_service_pb2.JoinTableRequest(table_id=which, name=big)
                    return Sent(self.key, None, request, stubs.lobby.JoinTable)
                request = lobby_service_pb2.CreateTableRequest(name=big, variant=2)
                return Sent(self.key, None, request, stubs.lobby.CreateTable)
        raise AssertionError(cmd)


def send(sent: Sent) -> Any:
    """Make the call; a stream is read to its first message."""
    result = sent.call(sent.request, metadata=md(sent.token), timeout=T)
    if hasattr(result, "cancel") and hasattr(result, "__next__"):
        try:
            return next(result)
        finally:
            result.cancel()
    return result


def judge(arena: Arena, sent: Sent, before: Look | None, error: grpc.RpcError) -> str:
    """A refusal: documented, with nothing changed and no card it should not name."""
    code = error.code()
    details = error.details() or ""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    if status is None:
        # Refused by gRPC itself before any server code ran: only an oversize message.
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, (code, details)
        assert "larger than max" in details, details
        reason = "OVERSIZE"
    else:
        infos = []
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                infos.append(info)
        assert len(infos) == 1 and infos[0].domain == "rami.v1", status
        reason = infos[0].reason
        assert reason in CATALOG.get(code.name, set()), f"undocumented: {code.name} {reason}"
        assert details, "every refusal says why in words"
    assert reason != "INTERNAL", f"an internal error on {sent.request!r}"
    if before is not None and sent.key is not None:
        target = arena.tables[sent.key]
        after = look(arena, target)
        assert after == before, f"{code.name}/{reason} changed the table"
        # The message names no card but those the sender sent or may see.
        seat = target.tokens.index(sent.token) if sent.token in target.tokens else -1
        allowed = visible_to(before.views[seat])
        if not isinstance(sent.request, bytes):
            allowed |= request_cards(sent.request)
        for card in card_mentions(details):
            assert int(card) + 1 in allowed, f"{reason}: {details!r} names {card}"
    return f"{code.name}/{reason}"


CATALOG: dict[str, set[str]] = {}


def run(arena: Arena, cmd: tuple[Any, ...]) -> None:
    if cmd[0] == "replay" and not arena.accepted:
        return
    builder = Builder(arena, cmd)
    sent = builder.build()
    before = builder.look
    try:
        send(sent)
    except grpc.RpcError as e:
        outcome = judge(arena, sent, before, e)
        assert cmd[0] != "policy" or sent.token is None, f"a legal move refused: {outcome}"
        arena.outcomes[outcome] += 1
    else:
        arena.outcomes["OK " + cmd[0]] += 1
        assert cmd[0] not in ("replay", "join", "leave", "bot", "oversize", "bytes"), cmd
        if cmd[0] == "act" and sent.token is not None:
            arena.accepted.append((sent.token, sent.request))
        if sent.key is not None and sent.key != "finished":
            now = look(arena, arena.tables[sent.key])
            if now.views[-1].phase in (game_pb2.PHASE_ROUND_OVER, game_pb2.PHASE_GAME_OVER):
                arena.new(sent.key)  # a round the fuzz played to its end: a fresh table


def test_hostile_commands_are_refused_documented_and_change_nothing(arena: Arena) -> None:
    CATALOG.update(documented())
    strategy = settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=SEED is None,
        suppress_health_check=list(HealthCheck),
    )(given(cmd=COMMAND)(lambda cmd: run(arena, cmd)))
    if SEED is not None:
        strategy = seed(int(SEED))(strategy)
    strategy()

    # Every kind of refusal was met, and some commands went through.
    refusals = {k for k in arena.outcomes if not k.startswith("OK")}
    reasons = {k.split("/")[1] for k in refusals}
    expected = {"NO_SUCH_TABLE", "NO_TOKEN", "BAD_TOKEN", "NOT_YOURS", "STALE", "BAD_MESSAGE"}
    assert expected <= reasons, arena.outcomes
    print(sum(arena.outcomes.values()), sorted(arena.outcomes.items()))
    assert len(reasons) >= 20, sorted(arena.outcomes.items())
    assert any(k.startswith("OK act") for k in arena.outcomes), arena.outcomes
    health = health_pb2_grpc.HealthStub(arena.stubs.channel)
    answer = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=T)
    assert answer.status == health_pb2.HealthCheckResponse.SERVING
    # The server's log at info level: no error, and no card.
    text = "\n".join(arena.log)
    assert "ERROR" not in text and "Traceback" not in text, text[-3000:]
    assert not card_mentions(text), text[-3000:]
    print(f"\n{EXAMPLES} hostile commands: {sorted(arena.outcomes.items())}")
