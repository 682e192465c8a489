"""The table core: seats, status and game of one table, changed only by applying entries.

This is the table without the server around it: no protobuf, no gRPC, no storage, no clock.
:meth:`TableState.apply` checks one typed entry (``entries.py``) against the table as it is,
applies it, and returns what happened as domain events: the engine's events, and the table's
own (:class:`PlayerJoined`, :class:`PlayerLeft`, :class:`PlayerReturned`,
:class:`GameStarted`, :class:`TurnTimedOut`, :class:`ChatPosted`). A refused entry raises a
refusal (``refusals.py``) or the engine's ``RuleError`` and changes nothing. What leaves the
table about its game leaves through the engine's views (:meth:`TableState.public_view`,
:meth:`TableState.seat_part`) and :meth:`TableState.players`, which is built from the public
view alone. An entry a call made with a request id carries its mark, and the table knows each
mark once (:meth:`TableState.answered`): a retry of the call finds the entry it made.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import compress, repeat
from operator import add, attrgetter, eq, ne, or_
from typing import Any, Literal

from rami.engine import (
    POLICIES,
    Action,
    Game,
    NextRound,
    Options,
    Phase,
    View,
    get_variant,
    view,
)
from rami.engine import events as engine_events
from rami.engine.cards import Card
from rami.engine.fair import FairDeal
from rami.engine.game import max_rounds
from rami.engine.values import builder
from rami.engine.views import SeatPart, seat_part

from .dealing import bot_seed, deal_tip
from .entries import (
    Act,
    AddBot,
    Chat,
    Close,
    Entry,
    EntryError,
    Join,
    Leave,
    Mark,
    NextDeal,
    Return,
    Start,
)
from .refusals import Invalid, Precondition

#: The policies a table seats as built-in bots: every one of the engine's. The moves of those
#: that search (``expert``) are decided off the event loop (``thinking.py``).
SEATED_POLICIES = tuple(POLICIES)


def check_policy(policy: str) -> None:
    """Refuse (``BAD_POLICY``) a policy no bot seated here plays."""
    if policy not in SEATED_POLICIES:
        raise Invalid("BAD_POLICY", f"no policy {policy!r}: choose {', '.join(SEATED_POLICIES)}")


#: The turns a table's round may last for each stock it may draw (the first and each rebuild):
#: see :func:`table_turn_cap`.
TURNS_PER_STOCK = 125


def table_turn_cap(options: Options) -> int:
    """The turns a round of a table with ``options`` may last: at the last it ends void, as
    when the stock runs out. The rules alone end every round whose turns draw from the stock
    (void after the last rebuild: a stock holds at most 107 cards, so within
    (``stock_rebuilds`` + 1) x 107 turns), but seats that take the discard and throw it back
    draw nothing and never end one; held by one client, they would grow the table's log, its
    memory and its record for ever, each within its rate limit. 125 turns a stock cut only
    rounds where the discard was taken some hundred times: 500 by default (3 rebuilds), as
    ``rami.engine.game.LEARNING_TURN_CAP`` (docs/steps.md, "A finite game")."""
    return TURNS_PER_STOCK * (options.stock_rebuilds + 1)


__all__ = [
    "CLOSED",
    "FINISHED",
    "OVER",
    "PLAYING",
    "TURNS_PER_STOCK",
    "WAITING",
    "ChatPosted",
    "DealError",
    "Event",
    "GameStarted",
    "PlayerInfo",
    "PlayerJoined",
    "PlayerLeft",
    "PlayerReturned",
    "Seat",
    "TableClosed",
    "TableEvent",
    "TableSpec",
    "TableState",
    "TableSummary",
    "TurnTimedOut",
    "check_policy",
    "hash_token",
    "load_state",
    "table_turn_cap",
]

WAITING, PLAYING, FINISHED, CLOSED = "waiting", "playing", "finished", "closed"
#: A table that will never change again: its game is over, or it was closed before one began.
OVER = (FINISHED, CLOSED)


class DealError(EntryError):
    """A table whose deal cannot be made: its secret is missing or does not match."""


SeatKind = Literal["empty", "player", "bot"]


def hash_token(token: str) -> str:
    """What is stored of a token: its SHA-256, never the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(slots=True)
class Seat:
    """One seat of a table."""

    name: str = ""
    kind: SeatKind = "empty"
    policy: str = ""
    token_hash: str = ""
    away: bool = False
    #: The randomness the seat's player sent for the deal (hex; empty for none, and for bots).
    entropy: str = ""


@dataclass(frozen=True, slots=True)
class PlayerInfo:
    """A seat as everyone may see it, with the game's public facts about it."""

    seat: int
    name: str
    kind: SeatKind
    policy: str
    connected: bool
    hand_size: int = 0
    opened: bool = False
    total: int = 0
    away: bool = False
    #: The cards everyone knows the seat holds (``View.known``).
    known: tuple[Card, ...] = ()


#: PlayerInfo(...) at a mutable dataclass's cost (rami.engine.values): every seat's facts are
#: made again at every update, to be compared with the ones sent before.
_player_info = builder(PlayerInfo)
#: What of a seat its PlayerInfo shows, and a PlayerInfo's facts in the same order followed by
#: the game's (``players``).
_seat_facts = attrgetter("name", "kind", "policy", "away")
_info_facts = attrgetter(
    "name", "kind", "policy", "away", "connected", "hand_size", "opened", "total", "known"
)
_kind = attrgetter("kind")


@dataclass(frozen=True, slots=True)
class TableSummary:
    """A table as the lobby lists it."""

    table_id: str
    name: str
    variant: str
    options: Options
    private: bool
    status: str
    players: tuple[PlayerInfo, ...]
    number: int
    hand_analysis: bool
    #: The server's commitment to the table's deals (hex; empty for a table made before fair
    #: deals), and whether its first rounds are dealt from stacked decks.
    deal_commitment: str = ""
    stacked: bool = False
    #: The id of its rematch, once one of its players made one (the directory's: GetTable and
    #: ListTables fill it in).
    rematch: str = ""


# -- the table's own events (the engine's are in rami.engine.events) ------------------------


@dataclass(frozen=True, slots=True)
class PlayerJoined:
    """Someone sat down: a player or a built-in bot."""

    seat: int
    name: str
    kind: SeatKind


@dataclass(frozen=True, slots=True)
class TableClosed:
    """A waiting table was closed (``owner``, ``expired``): nobody can join or start it."""

    reason: str


@dataclass(frozen=True, slots=True)
class PlayerLeft:
    """A player left the table (during a game, the server plays for the seat)."""

    seat: int


@dataclass(frozen=True, slots=True)
class PlayerReturned:
    """A player who had left came back."""

    seat: int


@dataclass(frozen=True, slots=True)
class GameStarted:
    """The game began with these players (empty seats dropped, seats renumbered)."""

    players: tuple[PlayerInfo, ...]


@dataclass(frozen=True, slots=True)
class TurnTimedOut:
    """A seat's clock ran out: the server played for it."""

    seat: int


@dataclass(frozen=True, slots=True)
class ChatPosted:
    """A seated player said something."""

    seat: int
    text: str


TableEvent = (
    PlayerJoined
    | PlayerLeft
    | PlayerReturned
    | GameStarted
    | TurnTimedOut
    | ChatPosted
    | TableClosed
)
Event = TableEvent | engine_events.Event


@dataclass(frozen=True, slots=True)
class TableSpec:
    """What a table is created with; stored once, never changed."""

    name: str
    variant: str
    options: Options
    private: bool = False
    hand_analysis: bool = True
    owner_hash: str = ""
    decks: tuple[tuple[str, ...], ...] = ()
    #: The address of the client that created the table (for the tables-per-client limit).
    client: str = ""
    #: The random nonce that, with the server's key, makes the table's secret (``dealing``),
    #: and the public commitment to its deals made from that secret (``rami.engine.fair``).
    deal_nonce: str = ""
    deal_commitment: str = ""
    #: The turns a round may last before it ends void (``Game.new``'s ``turn_cap``): new
    #: tables get :func:`table_turn_cap`'s; 0, no cap, for tables stored before it.
    turn_cap: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The spec as stored."""
        return {
            "name": self.name,
            "variant": self.variant,
            "options": self.options.to_dict(),
            "private": self.private,
            "hand_analysis": self.hand_analysis,
            "owner_hash": self.owner_hash,
            "decks": [list(d) for d in self.decks],
            "client": self.client,
            "deal_nonce": self.deal_nonce,
            "deal_commitment": self.deal_commitment,
            "turn_cap": self.turn_cap,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TableSpec:
        """Read back a stored spec."""
        return cls(
            d["name"],
            d["variant"],
            Options.from_dict(d["options"]),
            d.get("private", False),
            d.get("hand_analysis", True),
            d.get("owner_hash", ""),
            tuple(tuple(x) for x in d.get("decks", ())),
            d.get("client", ""),
            d.get("deal_nonce", ""),
            d.get("deal_commitment", ""),
            d.get("turn_cap", 0),
        )


@dataclass
class TableState:
    """Seats, status, game and log of one table, changed only by :meth:`apply`."""

    table_id: str
    spec: TableSpec
    seats: list[Seat] = field(default_factory=list)
    status: str = WAITING
    game: Game | None = None
    #: Every entry applied, in order: entry ``n`` is update ``n``.
    entries: list[Entry] = field(default_factory=list)
    #: Number of the latest entry that changed the game (commands decided before it are stale).
    game_number: int = 0
    #: The table's secret (``dealing.py``): its deals and its bots' choices are made from it.
    secret: bytes = field(default=b"", repr=False)
    #: The number of the entry each request id's mark made (its key: a digest, 32 characters),
    #: for every entry of the log that carries one: one small item per such entry, as long as
    #: the table is in memory, rebuilt with the log when it is loaded.
    requests: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        #: The players' facts last made, one a seat (``players``).
        self._infos: list[PlayerInfo] = []
        self.options = self.spec.options
        get_variant(self.spec.variant)
        if not self.seats:
            self.seats = [Seat() for _ in range(self.options.players)]

    def check_deal(self) -> None:
        """Raise ``DealError`` unless the secret makes the deal the spec committed to: checked
        once, where a stored table meets the server's key (a fork or a replay of a checked
        state needs no second look)."""
        if self.spec.deal_commitment and self.fair_deal().commitment != self.spec.deal_commitment:
            raise DealError(
                f"table {self.table_id}: the server key does not make the deal this table "
                "committed to (was the key file changed or lost?)"
            )

    def fair_deal(self, entropies: Iterable[bytes] = ()) -> FairDeal:
        """The table's fair deal (``rami.engine.fair``), with the seats' ``entropies``."""
        if not self.secret:
            raise DealError(f"table {self.table_id}: no secret to deal from")
        length = max_rounds(get_variant(self.spec.variant), self.options)
        return FairDeal(deal_tip(self.secret), length, tuple(entropies))

    def bot_seed(self, seat: int) -> bytes:
        """The seed of the choice a built-in bot at ``seat`` makes now (``dealing.bot_seed``)."""
        return bot_seed(self.secret or self.table_id.encode(), seat, self.number)

    # -- reading ----------------------------------------------------------------------------

    @property
    def number(self) -> int:
        """The number of the latest update (0 before any)."""
        return len(self.entries)

    def seat_of(self, token: str) -> int | None:
        """The seat a token proves, compared in constant time; None if it proves none."""
        return self.seat_held(hash_token(token))

    def seat_held(self, digest: str) -> int | None:
        """The seat whose token hashes to ``digest`` (compared in constant time), or None."""
        found = None
        for i, seat in enumerate(self.seats):
            if seat.token_hash and hmac.compare_digest(seat.token_hash, digest):
                found = i
        return found

    def is_owner(self, token: str) -> bool:
        """True when the token is the table creator's."""
        return bool(self.spec.owner_hash) and hmac.compare_digest(
            self.spec.owner_hash, hash_token(token)
        )

    def free_seat(self, wanted: int | None) -> int:
        """The seat to take: ``wanted`` if it is free, else the first free one."""
        self._not_closed()
        if self.status == FINISHED:
            raise Precondition("TABLE_STARTED", "the game is over: no seat can be taken")
        if self.status != WAITING:
            raise Precondition(
                "TABLE_STARTED",
                "the game has started: no seat can be taken (a seat's player comes back with"
                " the seat's token, on Watch or Play)",
            )
        if wanted is not None:
            if not 0 <= wanted < len(self.seats):
                raise Invalid("BAD_SEAT", f"no seat {wanted}: seats are 0 to {len(self.seats) - 1}")
            if self.seats[wanted].kind != "empty":
                raise Precondition("SEAT_TAKEN", f"seat {wanted} is taken")
            return wanted
        for i, s in enumerate(self.seats):
            if s.kind == "empty":
                return i
        raise Precondition("TABLE_FULL", "every seat is taken")

    def filled(self) -> int:
        """Seats taken."""
        return sum(1 for s in self.seats if s.kind != "empty")

    def is_full(self) -> bool:
        """True when a waiting table has every seat taken (it then starts)."""
        return self.status == WAITING and self.filled() == len(self.seats)

    def public_view(self) -> View | None:
        """What a spectator sees of the game now (None before it starts)."""
        return None if self.game is None else view(self.game, None)

    def seat_part(self, seat: int | None, before: SeatPart | None = None) -> SeatPart | None:
        """What only ``seat`` sees of the game now (None for no seat, or before the game);
        ``before`` itself when it is that (see :func:`rami.engine.views.seat_part`)."""
        return None if self.game is None else seat_part(self.game, seat, before)

    def seat_view(self, seat: int) -> View | None:
        """The whole view of one seat (None before the game)."""
        return None if self.game is None else view(self.game, seat)

    def players(
        self, connected: Mapping[int, int], public: View | None = None
    ) -> tuple[PlayerInfo, ...]:
        """Every seat as the table shows it, with the game's public facts about it (from
        ``public``, the spectator's view, when the caller has it already)."""
        if public is None:
            public = self.public_view()
        seats = self.seats
        n = len(seats)
        facts: tuple[Iterable[Any], ...] = (
            ([0] * n, [False] * n, [0] * n, [()] * n)
            if public is None
            else (public.hand_sizes, public.opened, public.totals, public.known)
        )
        # Each seat's facts in a row, in _info_facts' order, made and compared in C (the
        # operator module's functions mapped): at every update, for every seat. A seat whose
        # row is its value's keeps that value: an encoder that kept its encoding knows it by
        # identity.
        bots = map(eq, map(_kind, seats), repeat("bot"))
        streams = map(connected.get, range(n), repeat(0))
        lives = map(or_, bots, map(bool, streams))  # a bot is always there
        rows = list(map(add, map(_seat_facts, seats), zip(lives, *facts, strict=True)))
        kept = self._infos
        if len(kept) != n:
            kept[:] = [None] * n  # type: ignore[list-item]
            changed: Iterable[int] = range(n)
        else:
            changed = compress(range(n), map(ne, rows, map(_info_facts, kept)))
        for i in changed:
            name, kind, policy, away, live, size, opened, total, known = rows[i]
            kept[i] = _player_info(i, name, kind, policy, live, size, opened, total, away, known)
        return tuple(kept)

    def summary(self, connected: Mapping[int, int]) -> TableSummary:
        """The table as the lobby lists it."""
        s = self.spec
        return TableSummary(
            self.table_id,
            s.name,
            s.variant,
            self.options,
            s.private,
            self.status,
            self.players(connected),
            self.number,
            s.hand_analysis,
            s.deal_commitment,
            bool(s.decks),
        )

    def directory_seats(self) -> list[dict[str, Any]]:
        """The seats as the table directory keeps them (no token)."""
        return [
            {"name": s.name, "kind": s.kind, "policy": s.policy, "away": s.away} for s in self.seats
        ]

    def fork(self) -> TableState:
        """An independent copy, to apply more entries to without changing this one. What only
        grows is shared, not copied: the entries, the game's log of actions and its finished
        rounds' results are immutable values, and only the lists that hold them are new (a
        whole deep copy of a long game would copy thousands of actions)."""
        game = self.game
        if game is not None:
            shared: dict[int, Any] = {
                id(game.log): list(game.log),
                id(game.results): list(game.results),
                id(game.variant): game.variant,
                id(game.options): game.options,
            }
            game = copy.deepcopy(game, shared)
        seats = [replace(s) for s in self.seats]
        out = TableState(
            self.table_id,
            self.spec,
            seats,
            self.status,
            game,
            list(self.entries),
            self.game_number,
            self.secret,
            dict(self.requests),
        )
        out.options = self.options  # the players of a started game, not the spec's
        return out

    def tokens(self) -> tuple[str, ...]:
        """The hashes of every token that proves something here: the owner's, the seats'."""
        return tuple(h for h in (self.spec.owner_hash, *(s.token_hash for s in self.seats)) if h)

    def answered(self, mark: Mark | None) -> Entry | None:
        """The entry a call with this request mark made, when it was a retry (None for a call
        without an id, or one not applied yet). The same id with another request is refused
        (INVALID_ARGUMENT, ``REQUEST_ID_REUSED``)."""
        number = self.requests.get(mark.key, 0) if mark is not None else 0
        if not number:
            return None
        entry = self.entries[number - 1]
        made = getattr(entry, "request", None)
        assert mark is not None and made is not None
        if made.digest != mark.digest:
            raise Invalid(
                "REQUEST_ID_REUSED",
                "this request id was used for another request: a new request needs a new id",
            )
        return entry

    def number_of(self, entry: Entry) -> int:
        """The update number of an entry that carries a request mark."""
        mark = getattr(entry, "request", None)
        assert mark is not None
        return self.requests[mark.key]

    def check_move(self, seat: int, action: Action) -> None:
        """Raise what :meth:`apply` would raise for a seat's move (``Act(seat, action)``),
        changing nothing: the move is tried on a copy of the game."""
        self._playing().clone().apply(self._seat_arg(seat), action)

    def auto_seat(self) -> tuple[int, str] | None:
        """The seat the server plays for now and why (``bot`` or ``away``), or None."""
        game = self.game
        if game is None or self.status != PLAYING or game.phase not in (Phase.DRAW, Phase.PLAY):
            return None
        seat = self.seats[game.turn]
        if seat.kind == "bot":
            return game.turn, "bot"
        if seat.away:
            return game.turn, "away"
        return None

    # -- applying entries -------------------------------------------------------------------

    def apply(self, entry: Entry) -> list[Event]:
        """Check and apply one entry; return its events. Raises and changes nothing when the
        entry is not allowed now (an entry whose request mark is known already included: a
        request is applied once)."""
        mark: Mark | None = getattr(entry, "request", None)
        if mark is not None and mark.key in self.requests:
            raise Invalid("REQUEST_ID_REUSED", "this request id was applied already")
        events: list[Event]
        match entry:  # the moves first: nearly every entry is one
            case Act(seat, action, auto):
                game = self._playing()
                timed_out = auto == "timeout" and not self._rest_of_timeout(seat)
                done = game.apply(self._seat_arg(seat), action)
                events = [TurnTimedOut(seat), *done] if timed_out else list(done)
                if game.phase == Phase.GAME_OVER:
                    self.status = FINISHED
            case Join(seat, name, token, entropy):
                seat_ = Seat(name, "player", "", token, entropy=entropy)
                events = [self._sit(seat, seat_)]
            case AddBot(seat, name, policy):
                check_policy(policy)
                events = [self._sit(seat, Seat(name, "bot", policy))]
            case Leave(seat):
                events = [self._leave(self._seat_arg(seat))]
            case Return(seat):
                events = [self._return(self._seat_arg(seat))]
            case Start(seed):
                events = self._start(seed)
            case NextDeal():
                events = list(self._playing().apply(None, NextRound()))
            case Close(reason):
                self._not_closed()
                if self.status == PLAYING:
                    raise Precondition("TABLE_STARTED", "its game has begun: it cannot be closed")
                if self.status != WAITING:
                    raise Precondition("GAME_OVER", "its game is over: it cannot be closed")
                self.status = CLOSED
                events = [TableClosed(reason)]
            case Chat(seat, text):
                events = [ChatPosted(self._seat_arg(seat), text)]
            case _:
                raise Invalid("BAD_ENTRY", f"not a table entry: {entry!r}")
        self.entries.append(entry)
        if isinstance(entry, Start | Act | NextDeal):
            self.game_number = self.number
        if mark is not None:
            self.requests[mark.key] = self.number
        return events

    def _rest_of_timeout(self, seat: int) -> bool:
        """True when the last entry is a timed-out move of ``seat``: one timeout a turn, and
        the discard that follows a timed-out draw is its rest."""
        last = self.entries[-1] if self.entries else None
        return isinstance(last, Act) and last.auto == "timeout" and last.seat == seat

    def _seat_arg(self, seat: int) -> int:
        if not 0 <= seat < len(self.seats):
            raise Invalid("BAD_SEAT", f"no seat {seat!r}")
        return seat

    def _sit(self, wanted: int, seat: Seat) -> PlayerJoined:
        taken = self.free_seat(wanted)
        self.seats[taken] = seat
        return PlayerJoined(taken, seat.name, seat.kind)

    def check_leave(self, seat: int) -> None:
        """Refuse, as a Leave of ``seat`` would be refused now (changing nothing)."""
        self._not_closed()
        if self.status == PLAYING and self.seats[seat].away:
            raise Precondition("ALREADY_AWAY", "you have already left this game")
        if self.status not in (WAITING, PLAYING):
            raise Precondition("GAME_OVER", "the game is over")

    def _leave(self, seat: int) -> PlayerLeft:
        self.check_leave(seat)
        if self.status == WAITING:
            self.seats[seat] = Seat()
        else:
            self.seats[seat].away = True
        return PlayerLeft(seat)

    def _return(self, seat: int) -> PlayerReturned:
        if not self.seats[seat].away:
            raise Precondition("NOT_AWAY", "this seat is not away")
        self.seats[seat].away = False
        return PlayerReturned(seat)

    def _not_closed(self) -> None:
        if self.status == CLOSED:
            raise Precondition("TABLE_CLOSED", "this table was closed before its game began")

    def renumbering(self) -> dict[int, int]:
        """The seat each seat taken now gets at the start (the empty seats dropped, the others
        numbered from 0 in order): what a table's watchers of those seats follow."""
        taken = (i for i, s in enumerate(self.seats) if s.kind != "empty")
        return {old: new for new, old in enumerate(taken)}

    def _start(self, seed: str) -> list[Event]:
        self._not_closed()
        if self.status != WAITING:
            raise Precondition("TABLE_STARTED", "the game has already started")
        seated = [self.seats[old] for old in self.renumbering()]
        if len(seated) < 2:
            raise Precondition("NOT_ENOUGH_PLAYERS", "a game needs at least two seated players")
        options = self.options.with_(players=len(seated))
        decks = [[Card.parse(c) for c in d] for d in self.spec.decks]
        if seed:  # a table made before fair deals
            game, dealt = Game.new(
                self.spec.variant,
                options,
                bytes.fromhex(seed),
                decks=decks,
                turn_cap=self.spec.turn_cap,
            )
        else:
            if not self.spec.deal_commitment:
                raise DealError(f"table {self.table_id}: a start without a seed needs a deal")
            fair = self.fair_deal(bytes.fromhex(s.entropy) for s in seated)
            game, dealt = Game.new(
                self.spec.variant, options, b"", decks=decks, fair=fair, turn_cap=self.spec.turn_cap
            )
        self.seats = seated
        self.options = options
        self.game = game
        self.status = PLAYING
        return [GameStarted(self.players({})), *dealt]

    def _playing(self) -> Game:
        if self.game is None:
            raise Precondition("NOT_STARTED", "the game has not started")
        return self.game


def load_state(
    table_id: str, spec: TableSpec, entries: Iterable[Entry], secret: bytes = b""
) -> TableState:
    """A table rebuilt from its spec, entries and secret."""
    state = TableState(table_id, spec, secret=secret)
    for entry in entries:
        state.apply(entry)
    return state
