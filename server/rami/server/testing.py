"""A real server in a background thread, for tests of clients and bots (any test runner),
and stacked decks to deal it chosen hands.

>>> # with ServerThread("/tmp/t.db") as srv, Stubs(srv.target) as stubs: ...
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import Counter
from collections.abc import Coroutine
from itertools import combinations
from typing import Any, TypeVar

import grpc

from rami.engine import (
    Card,
    Discard,
    Draw,
    Meld,
    MeldError,
    Phase,
    RuleError,
    get_variant,
    parse_cards,
)
from rami.engine.cards import full_deck
from rami.v1 import (
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    rules_service_pb2_grpc,
    table_service_pb2_grpc,
)

from .app import Server, serve
from .connections import ConnectionLimits
from .convert import cards_to_proto
from .entries import Act, Entry, NextDeal
from .lobby import LobbyConfig
from .table import Table, TableConfig
from .tablestate import TableState

__all__ = [
    "CONNECTIONS",
    "FAST",
    "ServerThread",
    "Stubs",
    "deck_to_proto",
    "long_game",
    "stacked_deck",
]

T = TypeVar("T")

#: Built-in bots, away seats and the next deal move at once; heartbeats every half second.
FAST = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=0.0, heartbeat=0.5)
#: The server's connection settings, but no bound per address (the tests' clients share one).
CONNECTIONS = ConnectionLimits(per_address=0)


class ServerThread:
    """A server on 127.0.0.1 (any free port) running on its own event loop in a thread.

    Test defaults: stacked decks allowed, generous per-client limits, instant bots, no bound on
    connections per address (``connections``: the server's connection settings).
    :meth:`halt` then :meth:`start` stop the server and start a new one on the same port and
    database, as a crash and restart look to a client.
    """

    def __init__(
        self,
        db: str,
        table_config: TableConfig = FAST,
        connections: ConnectionLimits = CONNECTIONS,
        secret_file: str | None = None,
        **lobby: Any,
    ) -> None:
        self.db = db
        #: The server's key file (needed on PostgreSQL; by default ``db`` + ``.key``).
        self.secret_file = secret_file
        self.table_config = table_config
        self.connections = connections
        settings: dict[str, Any] = {
            "allow_stacked_decks": True,
            "max_tables_per_client": 1000,
            "commands_per_second": 1000.0,
            "command_burst": 1000.0,
            "seat_changes_per_second": 1000.0,
            "seat_change_burst": 1000.0,
            "table_creations_per_second": 0.0,
            "work_share": 1000.0,
            "work_burst": 1000.0,
            "read_share": 1000.0,
            "read_burst": 1000.0,
        }
        settings.update(lobby)
        self.lobby_config = LobbyConfig(**settings)
        self.loop = _new_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: Server | None = None
        self.port = 0

    def start(self) -> ServerThread:
        """Start the loop and a server on a free port (or the port it had); returns self."""
        if not self.thread.is_alive():
            self.thread.start()
        self.server = self.call(
            serve(
                "127.0.0.1",
                self.port,
                self.db,
                lobby_config=self.lobby_config,
                table_config=self.table_config,
                connections=self.connections,
                secret_file=self.secret_file,
            )
        )
        self.port = self.server.port
        return self

    def halt(self) -> None:
        """Stop the server; the loop goes on, ready for another."""
        if self.server is not None:
            self.call(self.server.stop(0.2))
            self.server = None

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run a coroutine on the server's loop and wait (up to ``timeout``) for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=timeout)

    def stop(self) -> None:
        """Stop the server gracefully, then the loop."""
        self.halt()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

    @property
    def target(self) -> str:
        """``host:port`` to connect to."""
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _new_loop() -> asyncio.AbstractEventLoop:
    """A new event loop: asyncio's, or uvloop's when ``RAMI_LOOP=uvloop`` (to run the tests
    on the loop ``rami-server`` picks when uvloop is installed)."""
    if os.environ.get("RAMI_LOOP") == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


class Stubs:
    """Blocking stubs of every service on one channel."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(target)
        self.rules = rules_service_pb2_grpc.RulesServiceStub(self.channel)
        self.lobby = lobby_service_pb2_grpc.LobbyServiceStub(self.channel)
        self.table = table_service_pb2_grpc.TableServiceStub(self.channel)

    def __enter__(self) -> Stubs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.channel.close()


def _makes_meld(cards: list[Card]) -> bool:
    for trio in combinations(cards, 3):
        try:
            Meld.from_cards(trio)
        except MeldError:
            continue
        return True
    return False


def _junk(pool: Counter[Card], size: int) -> list[Card]:
    """``size`` cards from ``pool`` that make no meld together (no jokers)."""
    hand: list[Card] = []
    for card in sorted(pool):
        if len(hand) == size:
            break
        if card.is_joker or pool[card] == 0 or card in hand:
            continue
        if not _makes_meld([*hand, card]):
            hand.append(card)
            pool[card] -= 1
    if len(hand) < size:
        raise ValueError("not enough junk cards left")
    return hand


def stacked_deck(
    variant: str, hands: list[str | None], discard: str, stock: str = ""
) -> list[Card]:
    """The deck (top card first) that deals ``hands`` (None: junk) with seat 0 dealing.

    It follows ``Game._deal`` for round 1: one card at a time from seat 1 round to seat 0, the
    dealer's extra card last (tallage, simple), then ``discard`` turned up, then ``stock`` on
    top of the stock, top first. A hand given as None is *junk*: cards that make no meld with
    each other, so a bot holding them can't open, finish or declare on its first turn.
    """
    v = get_variant(variant)
    pool = Counter(full_deck(v.decks, v.jokers))
    given = [parse_cards(h) if h is not None else None for h in hands]
    top = [*parse_cards(discard), *parse_cards(stock)]
    for cards in [*(g for g in given if g), top]:
        for c in cards:
            if pool[c] == 0:
                raise ValueError(f"{c} is used more often than the deck holds it")
            pool[c] -= 1
    dealt: list[list[Card]] = []
    for seat, cards in enumerate(given):
        size = v.hand_size + (v.dealer_extra if seat == 0 else 0)
        cards = cards if cards is not None else _junk(pool, size)
        if len(cards) != size:
            raise ValueError(f"seat {seat} needs {size} cards, not {len(cards)}")
        dealt.append(cards)
    n = len(hands)
    deck: list[Card] = []
    for k in range(v.hand_size):
        for i in range(1, n + 1):
            deck.append(dealt[i % n][k])
    deck.extend(dealt[0][v.hand_size :])
    deck.extend(top)
    deck.extend(c for c in sorted(pool) for _ in range(pool[c]))
    return deck


def deck_to_proto(deck: list[Card]) -> lobby_service_pb2.Deck:
    """``deck`` as CreateTableRequest.stacked_decks takes it."""
    return lobby_service_pb2.Deck(cards=cards_to_proto(deck))


async def long_game(table: Table, entries: int) -> None:
    """Play on until the log of a started table holds ``entries`` entries (or its game is
    over), its seats taking the discard and throwing it straight back where the rules allow it
    (portuguese; simple, after the first circuit): rounds that end only at the turn cap, a
    long log made in a moment."""

    def thrown_back(state: TableState) -> list[Entry]:
        fork, out = state.fork(), []
        while len(out) < min(4000, entries - len(state.entries)) and fork.game is not None:
            g = fork.game
            if g.phase == Phase.GAME_OVER:
                break
            entry: Entry
            if g.phase == Phase.ROUND_OVER:
                entry = NextDeal()
            elif g.phase == Phase.DRAW:
                entry = Act(g.turn, Draw("discard"))
                try:
                    fork.fork().apply(entry)
                except RuleError:  # the first circuit: nobody takes the discard
                    entry = Act(g.turn, Draw("stock"))
            else:
                entry = Act(g.turn, Discard(g.drawn or g.hands[g.turn][0]))
            fork.apply(entry)
            out.append(entry)
        return out

    while len(table.state.entries) < entries and table.state.status == "playing":
        await table.change(thrown_back, lambda _: None)
