"""A table's state: seats, the game, and the entries that change them, applied deterministically.

Every change to a table is an *entry* (a JSON object): a join, a bot seated, a start, an
action, the next deal, a chat line. :meth:`TableState.apply` checks an entry and applies it
whole, or raises and changes nothing. Replaying the stored entries of a table rebuilds it
exactly; that is how the server restarts, resumes watchers and writes game records.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rami.engine import POLICIES, Game, NextRound, Options, Phase, get_variant, view
from rami.engine.cards import Card
from rami.engine.events import RoundResult
from rami.engine.serial import action_from_dict
from rami.engine.views import seat_part
from rami.v1 import events_pb2, game_pb2

from . import convert
from .errors import Invalid, Precondition

__all__ = ["Seat", "TableSpec", "TableState", "hash_token"]

WAITING, PLAYING, FINISHED = "waiting", "playing", "finished"
_KIND = {
    "empty": game_pb2.SEAT_KIND_EMPTY,
    "player": game_pb2.SEAT_KIND_PLAYER,
    "bot": game_pb2.SEAT_KIND_BOT,
}


def hash_token(token: str) -> str:
    """What is stored of a token: its SHA-256, never the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(slots=True)
class Seat:
    """One seat of a table."""

    name: str = ""
    kind: str = "empty"  # empty | player | bot
    policy: str = ""
    token_hash: str = ""
    away: bool = False


@dataclass(frozen=True, slots=True)
class TableSpec:
    """What a table is created with; stored once, never changed."""

    name: str
    variant: str
    options: dict[str, Any]
    private: bool = False
    hand_analysis: bool = True
    owner_hash: str = ""
    decks: tuple[tuple[str, ...], ...] = ()
    #: The address of the client that created the table (for the tables-per-client limit).
    client: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The spec as stored."""
        return {
            "name": self.name,
            "variant": self.variant,
            "options": self.options,
            "private": self.private,
            "hand_analysis": self.hand_analysis,
            "owner_hash": self.owner_hash,
            "decks": [list(d) for d in self.decks],
            "client": self.client,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TableSpec:
        """Read back a stored spec."""
        return cls(
            d["name"],
            d["variant"],
            d["options"],
            d.get("private", False),
            d.get("hand_analysis", True),
            d.get("owner_hash", ""),
            tuple(tuple(x) for x in d.get("decks", ())),
            d.get("client", ""),
        )


@dataclass
class TableState:
    """Seats, status and game of one table, changed only by :meth:`apply`."""

    table_id: str
    spec: TableSpec
    seats: list[Seat] = field(default_factory=list)
    status: str = WAITING
    game: Game | None = None
    #: Entries applied so far: the number of the latest update.
    number: int = 0
    #: Number of the latest entry that changed the game (commands decided before it are stale).
    game_number: int = 0

    def __post_init__(self) -> None:
        self.options = Options.from_dict(self.spec.options)
        self._options_msg: tuple[Options, game_pb2.Options] | None = None
        self._result_msgs: list[tuple[RoundResult, game_pb2.RoundResult]] = []
        get_variant(self.spec.variant)
        if not self.seats:
            self.seats = [Seat() for _ in range(self.options.players)]

    # -- reading ----------------------------------------------------------------------------

    def seat_of(self, token: str) -> int | None:
        """The seat a token proves, compared in constant time; None if it proves none."""
        digest = hash_token(token)
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
        if self.status != WAITING:
            raise Precondition("TABLE_STARTED", "the game has started: no seat can be taken")
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

    def players_proto(self, connected: dict[int, int]) -> list[game_pb2.PlayerState]:
        """Every seat as the table shows it, with the game's per-seat facts."""
        g = self.game
        out = []
        for i, s in enumerate(self.seats):
            out.append(
                game_pb2.PlayerState(
                    seat=i,
                    name=s.name,
                    kind=_KIND[s.kind],
                    policy=s.policy,
                    connected=s.kind == "bot" or connected.get(i, 0) > 0,
                    hand_size=len(g.hands[i]) if g else 0,
                    opened=g.has_opened(i) if g else False,
                    total=g.totals[i] if g else 0,
                    away=s.away,
                )
            )
        return out

    def options_proto(self) -> game_pb2.Options:
        """The table's options as a message (built once per change of the options)."""
        if self._options_msg is None or self._options_msg[0] is not self.options:
            self._options_msg = (self.options, convert.options_to_proto(self.options))
        return self._options_msg[1]

    def _results_proto(self, results: tuple[RoundResult, ...]) -> list[game_pb2.RoundResult]:
        """The messages of the game's finished rounds: a round's result never changes, so each
        is built once (every view of the game carries them all)."""
        done = self._result_msgs
        if len(done) > len(results) or (done and done[-1][0] is not results[len(done) - 1]):
            done.clear()  # another game
        done.extend((r, convert.result_to_proto(r)) for r in results[len(done) :])
        return [msg for _, msg in done]

    def view_proto(
        self, seat: int | None, connected: dict[int, int], deadline: float | None = None
    ) -> game_pb2.View:
        """What ``seat`` (None: a spectator) sees now."""
        msg = game_pb2.View()
        self.fill_views({seat: msg}, connected, deadline)
        return msg

    def fill_views(
        self,
        views: dict[int | None, game_pb2.View],
        connected: dict[int, int],
        deadline: float | None = None,
    ) -> None:
        """Fill each empty message of ``views`` with what its seat (None: a spectator) sees
        now. The part that every watcher sees alike (the table, the players, the melds, the
        results) is built once and copied into each, then each seat's own part is added."""
        shared, own = self._view_parts(connected, deadline)
        for seat, msg in views.items():
            msg.CopyFrom(shared)
            own(msg, seat)

    def encode_views(
        self, seats: Iterable[int | None], connected: dict[int, int], deadline: float | None = None
    ) -> dict[int | None, bytes]:
        """What each of ``seats`` sees now, as the encoded View: the shared part is serialised
        once and each seat's own part (a small message) appended to it. Protocol Buffers parse
        concatenated encodings as one message merged from them, and the two parts set no field
        in common, so the bytes are exactly the seat's whole view (``view_proto``)."""
        shared_msg, own = self._view_parts(connected, deadline)
        shared = shared_msg.SerializeToString()
        out: dict[int | None, bytes] = {}
        for seat in seats:
            if seat is None:
                out[seat] = shared
            else:
                part = game_pb2.View()
                own(part, seat)
                out[seat] = shared + part.SerializeToString()
        return out

    def _view_parts(
        self, connected: dict[int, int], deadline: float | None
    ) -> tuple[game_pb2.View, Callable[[game_pb2.View, int | None], None]]:
        """The part of every view that all watchers share (a spectator's view), and how to
        add to a message what one seat alone sees."""
        players = self.players_proto(connected)
        game = self.game
        if game is None:
            shared = game_pb2.View(
                table_id=self.table_id,
                number=self.number,
                variant=convert.variant_to_proto(self.spec.variant),
                options=self.options_proto(),
                phase=game_pb2.PHASE_WAITING,
                players=players,
            )

            def own_seat(msg: game_pb2.View, seat: int | None) -> None:
                if seat is not None:
                    msg.seat = seat

            return shared, own_seat
        public = view(game, None)
        shared = convert.shared_view_to_proto(
            public,
            self.table_id,
            self.number,
            players,
            deadline,
            self.options_proto(),
            self._results_proto(public.results),
        )

        def own_part(msg: game_pb2.View, seat: int | None) -> None:
            if seat is not None:
                convert.add_own_view(msg, seat_part(game, seat), public)

        return shared, own_part

    # -- applying entries -------------------------------------------------------------------

    def apply(self, entry: dict[str, Any]) -> list[events_pb2.Event]:
        """Check and apply one entry; return its public events. Raises and changes nothing
        when the entry is not allowed now."""
        kind = entry.get("type")
        handler = getattr(self, f"_apply_{kind}", None)
        if handler is None:
            raise Invalid("BAD_ENTRY", f"unknown entry {kind!r}")
        events: list[events_pb2.Event] = handler(entry)
        self.number += 1
        if kind in ("start", "act", "next"):
            self.game_number = self.number
        return events

    def _seat_arg(self, entry: dict[str, Any]) -> int:
        seat = entry.get("seat")
        if not isinstance(seat, int) or not 0 <= seat < len(self.seats):
            raise Invalid("BAD_SEAT", f"no seat {seat!r}")
        return seat

    def _apply_join(self, e: dict[str, Any]) -> list[events_pb2.Event]:
        seat = self.free_seat(e["seat"])
        self.seats[seat] = Seat(e["name"], "player", "", e["token"])
        return [
            events_pb2.Event(
                player_joined=events_pb2.PlayerJoined(
                    seat=seat, name=e["name"], kind=game_pb2.SEAT_KIND_PLAYER
                )
            )
        ]

    def _apply_bot(self, e: dict[str, Any]) -> list[events_pb2.Event]:
        if e["policy"] not in POLICIES:
            raise Invalid("BAD_POLICY", f"no policy {e['policy']!r}: choose {', '.join(POLICIES)}")
        seat = self.free_seat(e["seat"])
        self.seats[seat] = Seat(e["name"], "bot", e["policy"])
        return [
            events_pb2.Event(
                player_joined=events_pb2.PlayerJoined(
                    seat=seat, name=e["name"], kind=game_pb2.SEAT_KIND_BOT
                )
            )
        ]

    def _apply_leave(self, e: dict[str, Any]) -> list[events_pb2.Event]:
        seat = self._seat_arg(e)
        if self.status == WAITING:
            self.seats[seat] = Seat()
        elif self.status == PLAYING:
            if self.seats[seat].away:
                raise Precondition("ALREADY_AWAY", "you have already left this game")
            self.seats[seat].away = True
        else:
            raise Precondition("GAME_OVER", "the game is over")
        return [events_pb2.Event(player_left=events_pb2.PlayerLeft(seat=seat))]

    def _apply_return(self, e: dict[str, Any]) -> list[events_pb2.Event]:
        seat = self._seat_arg(e)
        if not self.seats[seat].away:
            raise Precondition("NOT_AWAY", "this seat is not away")
        self.seats[seat].away = False
        return [events_pb2.Event(player_returned=events_pb2.PlayerReturned(seat=seat))]

    def _apply_start(self, e: dict[str, Any]) -> list[events_pb2.Event]:
        if self.status != WAITING:
            raise Precondition("TABLE_STARTED", "the game has already started")
        seated = [s for s in self.seats if s.kind != "empty"]
        if len(seated) < 2:
            raise Precondition("NOT_ENOUGH_PLAYERS", "a game needs at least two seated players")
        options = self.options.with_(players=len(seated))
        decks = [[Card.parse(c) for c in d] for d in self.spec.decks]
        game, engine_events = Game.new(
            self.spec.variant, options, bytes.fromhex(e["seed"]), decks=decks
        )
        self.seats = seated
        self.options = options
        self.game = game
        self.status = PLAYING
        started = events_pb2.Event(
            game_started=events_pb2.GameStarted(players=self.players_proto({}))
        )
        return [started, *(convert.event_to_proto(x) for x in engine_events)]

    def _apply_act(self, e: dict[str, Any]) -> list[events_pb2.Event]:
        game = self._playing()
        seat = self._seat_arg(e)
        action = action_from_dict(e["action"])
        engine_events = game.apply(seat, action)
        out = []
        if e.get("auto") == "timeout":
            out.append(events_pb2.Event(turn_timed_out=events_pb2.TurnTimedOut(seat=seat)))
        out.extend(convert.event_to_proto(x) for x in engine_events)
        self._check_over()
        return out

    def _apply_next(self, e: dict[str, Any]) -> list[events_pb2.Event]:
        game = self._playing()
        return [convert.event_to_proto(x) for x in game.apply(None, NextRound())]

    def _apply_chat(self, e: dict[str, Any]) -> list[events_pb2.Event]:
        seat = self._seat_arg(e)
        return [events_pb2.Event(chat_posted=events_pb2.ChatPosted(seat=seat, text=e["text"]))]

    def _playing(self) -> Game:
        if self.game is None:
            raise Precondition("NOT_STARTED", "the game has not started")
        return self.game

    def _check_over(self) -> None:
        if self.game is not None and self.game.phase == Phase.GAME_OVER:
            self.status = FINISHED


def load_state(table_id: str, spec: dict[str, Any], entries: list[dict[str, Any]]) -> TableState:
    """A table rebuilt from its stored spec and entries."""
    state = TableState(table_id, TableSpec.from_dict(spec))
    for entry in entries:
        state.apply(entry)
    return state
