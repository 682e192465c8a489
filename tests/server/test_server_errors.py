"""Every error class of the contract, over real sockets: the status code, the google.rpc.ErrorInfo
reason in the domain ``rami.v1``, and a table left exactly as it was by every refusal.

malformed → INVALID_ARGUMENT, illegal now → FAILED_PRECONDITION, stale → ABORTED, no such table
→ NOT_FOUND, no or bad token → UNAUTHENTICATED, not yours → PERMISSION_DENIED, too many →
RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from server_support import (
    DOMAIN,
    RPC_TIMEOUT,
    VARIANTS,
    ErrorOf,
    cards,
    error_of,
    md,
    stacked_deck,
    without_presence,
)
from storage_backends import Backend

import rami.server.table as table_module
from rami.server.table import TableConfig
from rami.server.testing import ServerThread, Stubs
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    rules_service_pb2,
    table_service_pb2,
    table_service_pb2_grpc,
)

Code = grpc.StatusCode
T = RPC_TIMEOUT

# A two-seat tallage deal. Seat 0 deals itself 15 cards and plays first without drawing: it can
# open with 90 (K♣K♦K♠, 10♠J♠Q♠, Q♣Q♦Q♥) or try 24 (2♥3♥4♥, 5♣5♦5♠). Seat 1 can lay 73
# (J♣J♦J♥, 7♦8♦9♦10♦, 2♠3♠4♠): enough for the table's 71, not enough to beat a bar of 90.
TALLAGE_HANDS = {
    0: "2h 3h 4h 5c 5d 5s Kc Kd Ks 10s Js Qs Qc Qd Qh",
    1: "Jc Jd Jh 7d 8d 9d 10d 2s 3s 4s 6c 5h Ac 2d",
}
TALLAGE_DISCARD = "7h"
TALLAGE_STOCK = "8c 6h 4d"


def refused(call: Callable[[], object], code: grpc.StatusCode, reason: str) -> ErrorOf:
    """Run ``call``; it must fail with ``code`` and an ErrorInfo of ``reason`` in rami.v1."""
    with pytest.raises(grpc.RpcError) as info:
        call()
    err = error_of(info.value)
    assert (err.code, err.reason, err.domain) == (code, reason, DOMAIN), err
    assert err.message, "every refusal says why in words"
    return err


def meld(text: str) -> game_pb2.LayStep:
    """A NewMeld step."""
    return game_pb2.LayStep(new_meld=game_pb2.NewMeld(cards=cards(text)))


def lay(*melds: str) -> game_pb2.Lay:
    """A lay of new melds."""
    return game_pb2.Lay(steps=[meld(m) for m in melds])


def draw(
    source: int = game_pb2.DRAW_SOURCE_STOCK, with_lay: game_pb2.Lay | None = None
) -> dict[str, Any]:
    """ActRequest fields of a draw."""
    action = table_service_pb2.DrawAction(source=source)
    if with_lay is not None:
        action.lay.CopyFrom(with_lay)
    return {"draw": action}


def discard(card: str | int) -> dict[str, Any]:
    """ActRequest fields of a discard (a card as text, or a raw proto value)."""
    value = card if isinstance(card, int) else cards(card)[0]
    return {"discard": table_service_pb2.DiscardAction(card=value)}


@dataclass
class Seated:
    """A started table whose every seat was joined over the wire."""

    stubs: Stubs
    table_id: str
    owner: str
    tokens: list[str]

    def info(self) -> lobby_service_pb2.TableInfo:
        return self.stubs.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=self.table_id), timeout=T
        ).table

    def number(self) -> int:
        return self.info().number

    def snapshot(self, token: str | None) -> table_service_pb2.Update:
        """The opening snapshot of a fresh Watch stream (the seat's, or a spectator's)."""
        call = self.stubs.table.Watch(
            table_service_pb2.WatchRequest(table_id=self.table_id), metadata=md(token), timeout=T
        )
        try:
            msg = next(call)
        finally:
            call.cancel()
        assert msg.update.snapshot
        return msg.update

    def view(self, seat: int) -> game_pb2.View:
        return self.snapshot(self.tokens[seat]).view

    def state(self) -> tuple[Any, ...]:
        """Everything anyone can see of the table, presence left out."""
        info = self.info()
        for p in info.seats:
            p.connected = False
        views = [without_presence(self.snapshot(t).view) for t in (*self.tokens, None)]
        return (info, *views)

    def act(
        self, seat: int, number: int | None = None, token: str | None = "seat", **action: Any
    ) -> table_service_pb2.ActResponse:
        """Send an action for ``seat`` decided on ``number`` (default: the latest)."""
        request = table_service_pb2.ActRequest(
            table_id=self.table_id, number=self.number() if number is None else number, **action
        )
        tok = self.tokens[seat] if token == "seat" else token
        return self.stubs.table.Act(request, metadata=md(tok), timeout=T)

    def refuse(
        self,
        code: grpc.StatusCode,
        reason: str,
        seat: int,
        number: int | None = None,
        **action: Any,
    ) -> ErrorOf:
        """The action must be refused with ``code``/``reason`` and change nothing at all."""
        with unchanged(self):
            return refused(lambda: self.act(seat, number, **action), code, reason)


@contextmanager
def unchanged(table: Seated) -> Iterator[None]:
    """The block must leave the table, every seat's view and the spectator's view as they were."""
    before = table.state()
    yield
    after = table.state()
    assert after == before


def create(
    stubs: Stubs,
    variant: str,
    players: int = 2,
    deck: lobby_service_pb2.Deck | None = None,
    **options: Any,
) -> lobby_service_pb2.CreateTableResponse:
    return stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name=f"{variant} errors",
            variant=VARIANTS[variant],
            options=game_pb2.Options(players=players, **options),
            stacked_decks=[deck] if deck is not None else [],
        ),
        timeout=T,
    )


def seated(
    stubs: Stubs,
    variant: str,
    players: int = 2,
    deck: lobby_service_pb2.Deck | None = None,
    **options: Any,
) -> Seated:
    """A table of ``players`` remote seats; the last join starts it."""
    created = create(stubs, variant, players, deck, **options)
    table_id = created.table.table_id
    tokens = [
        stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{i}", seat=i), timeout=T
        ).token
        for i in range(players)
    ]
    table = Seated(stubs, table_id, created.owner_token, tokens)
    assert table.info().status == lobby_service_pb2.TABLE_STATUS_PLAYING
    return table


def tallage(stubs: Stubs) -> Seated:
    deck = stacked_deck("tallage", 2, TALLAGE_HANDS, TALLAGE_DISCARD, TALLAGE_STOCK)
    table = seated(stubs, "tallage", 2, deck)
    v = table.view(0)
    assert (v.turn, v.phase) == (0, game_pb2.PHASE_PLAY)
    assert sorted(v.hand) == sorted(cards(TALLAGE_HANDS[0]))
    return table


# -- INVALID_ARGUMENT: malformed ------------------------------------------------------------


def test_malformed_commands_are_invalid_argument_and_change_nothing(stubs: Stubs) -> None:
    t = tallage(stubs)
    bad = Code.INVALID_ARGUMENT
    t.refuse(bad, "BAD_CARD", 0, **discard(0))
    t.refuse(bad, "BAD_CARD", 0, **discard(99))
    t.refuse(
        bad,
        "BAD_CARD",
        0,
        lay=game_pb2.Lay(
            steps=[game_pb2.LayStep(new_meld=game_pb2.NewMeld(cards=[*cards("2h 3h"), 54]))]
        ),
    )
    empty = table_service_pb2.ActRequest()
    empty.lay.SetInParent()
    t.refuse(bad, "BAD_ACTION", 0, lay=empty.lay)  # a lay of no step
    t.refuse(bad, "BAD_ACTION", 0, lay=game_pb2.Lay(steps=[game_pb2.LayStep()]))  # an empty step
    t.refuse(bad, "BAD_ACTION", 0)  # no action at all
    t.refuse(bad, "BAD_SOURCE", 0, **draw(game_pb2.DRAW_SOURCE_UNSPECIFIED))
    # A lay with a draw from the stock would be judged with a card nobody has seen yet.
    t.refuse(bad, "LAY_WITH_STOCK", 1, **draw(with_lay=lay("Jc Jd Jh")))
    # The same refusals for the seat whose turn it is not: malformed is judged first.
    t.refuse(bad, "BAD_CARD", 1, **discard(0))


def test_malformed_lobby_requests_are_invalid_argument_and_change_nothing(stubs: Stubs) -> None:
    def tables() -> list[str]:
        resp = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T)
        return [x.table_id for x in resp.tables]

    before = tables()
    bad = Code.INVALID_ARGUMENT

    def make(**fields: Any) -> Callable[[], object]:
        request = lobby_service_pb2.CreateTableRequest(name="x", **fields)
        return lambda: stubs.lobby.CreateTable(request, timeout=T)

    refused(make(), bad, "BAD_VARIANT")  # no variant
    refused(make(variant=7), bad, "BAD_VARIANT")  # an unknown one
    tallage_ = VARIANTS["tallage"]
    for options in (
        game_pb2.Options(players=1),
        game_pb2.Options(players=7),
        game_pb2.Options(opening=60),
        game_pb2.Options(target=300),
        game_pb2.Options(jokers_per_meld=3),
        game_pb2.Options(false_declaration=9),
        game_pb2.Options(turn_seconds=-1),
        # Options tallage does not have (RulesService.ListVariants lists each variant's).
        game_pb2.Options(false_declaration=game_pb2.FALSE_DECLARATION_REJECT),
        game_pb2.Options(simple_rami_sec=True),
        game_pb2.Options(rounds=7),
    ):
        refused(make(variant=tallage_, options=options), bad, "BAD_OPTION")
    for options in (game_pb2.Options(target=500), game_pb2.Options(round_cap=7)):
        refused(make(variant=VARIANTS["portuguese"], options=options), bad, "BAD_OPTION")
    # A value no table takes, of an option the variant has not: the option is what is wrong.
    said = refused(
        make(variant=VARIANTS["portuguese"], options=game_pb2.Options(target=100)),
        bad,
        "BAD_OPTION",
    )
    assert "portuguese has no option target" in said.message, said.message
    short = lobby_service_pb2.Deck(cards=stacked_deck("tallage", 2, {}, "7h").cards[:-1])
    refused(make(variant=tallage_, stacked_decks=[short]), bad, "BAD_DECK")
    assert tables() == before

    created = create(stubs, "portuguese", 2)
    table_id = created.table.table_id
    number = created.table.number
    # TableInfo lists every option; a copy of them makes a table of the same variant.
    again = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=VARIANTS["portuguese"], options=created.table.options
        ),
        timeout=T,
    )
    assert again.table.options == created.table.options

    def join(name: str, seat: int | None = None) -> Callable[[], object]:
        request = lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name, seat=seat)
        return lambda: stubs.lobby.JoinTable(request, timeout=T)

    for name in ("", "   ", "\x1b[31m\x07\x1b]0;x\x07", "\u202e\u200b"):
        refused(join(name), bad, "BAD_NAME")
    refused(join("Ana", seat=2), bad, "BAD_SEAT")
    refused(join("Ana", seat=-1), bad, "BAD_SEAT")
    owner = md(created.owner_token)
    refused(
        lambda: stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=table_id, policy="cheater"),
            metadata=owner,
            timeout=T,
        ),
        bad,
        "BAD_POLICY",
    )
    joined = stubs.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Ana"), timeout=T
    )
    refused(
        lambda: stubs.table.Chat(
            table_service_pb2.ChatRequest(table_id=table_id, text="\x1b[2J \x07"),
            metadata=md(joined.token),
            timeout=T,
        ),
        bad,
        "EMPTY_CHAT",
    )
    # Too long is refused, never cut (as names are): the line said is the line typed.
    long = refused(
        lambda: stubs.table.Chat(
            table_service_pb2.ChatRequest(table_id=table_id, text="b" * 300 + "END"),
            metadata=md(joined.token),
            timeout=T,
        ),
        bad,
        "CHAT_TOO_LONG",
    )
    assert "280" in long.message and "303" in long.message, long.message
    info = stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T)
    assert info.table.number == number + 1  # the one join, and nothing else
    assert [s.kind for s in info.table.seats] == [
        game_pb2.SEAT_KIND_PLAYER,
        game_pb2.SEAT_KIND_EMPTY,
    ]


# -- FAILED_PRECONDITION: illegal now --------------------------------------------------------


def test_a_bad_policy_is_said_before_the_state_of_the_table(stubs: Stubs) -> None:
    # AddBot with policy "smart" at a started table was answered TABLE_STARTED: the request's
    # own fault is said first, as every malformed request's is.
    t = seated(stubs, "simple")
    request = lobby_service_pb2.AddBotRequest(table_id=t.table_id, policy="smart")
    said = refused(
        lambda: stubs.lobby.AddBot(request, metadata=md(t.owner), timeout=T),
        Code.INVALID_ARGUMENT,
        "BAD_POLICY",
    )
    assert "smart" in said.message
    request = lobby_service_pb2.AddBotRequest(table_id=t.table_id, policy="greedy")
    refused(
        lambda: stubs.lobby.AddBot(request, metadata=md(t.owner), timeout=T),
        Code.FAILED_PRECONDITION,
        "TABLE_STARTED",
    )


def test_illegal_actions_are_failed_precondition_and_change_nothing(stubs: Stubs) -> None:
    t = tallage(stubs)
    no = Code.FAILED_PRECONDITION
    # Seat 0 (the dealer) is to play; seat 1 may not.
    t.refuse(no, "NOT_YOUR_TURN", 1, **draw())
    t.refuse(no, "NOT_YOUR_TURN", 1, **discard("Jc"))
    t.refuse(no, "DEALER_NO_DRAW", 0, **draw())  # the dealer plays first without drawing
    t.refuse(no, "CARD_NOT_IN_HAND", 0, **discard("7h"))
    t.refuse(no, "CARD_NOT_IN_HAND", 0, lay=lay("8s 9s 10s"))
    t.refuse(no, "INVALID_MELD", 0, lay=lay("2h 5c Kc"))
    t.refuse(no, "OPENING_TOO_LOW", 0, lay=lay("2h 3h 4h", "5c 5d 5s"))  # worth 24, not 71
    t.refuse(no, "OPENING_NEEDS_CLEAN_MELDS", 0, lay=lay("Kc Kd Ks", "Qc Qd Qh"))
    t.refuse(no, "NO_DECLARING", 0, declare=table_service_pb2.DeclareAction(card=cards("2h")[0]))
    t.refuse(
        no,
        "NOT_OPENED",
        0,
        lay=game_pb2.Lay(
            steps=[game_pb2.LayStep(add=game_pb2.AddToMeld(meld=1, cards=cards("5c")))]
        ),
    )

    opened = t.act(0, lay=lay("Kc Kd Ks", "10s Js Qs", "Qc Qd Qh"))
    assert opened.view.bar == 90 and len(opened.view.melds) == 3
    t.refuse(no, "OPENED_THIS_TURN", 0, lay=lay("2h 3h 4h"))
    t.act(0, **discard("5s"))

    # Seat 1, still in the first circuit: no discard may be taken; then a draw is one a turn.
    t.refuse(no, "FIRST_CIRCUIT", 1, **draw(game_pb2.DRAW_SOURCE_DISCARD, lay("5s 5c 5d")))
    t.refuse(no, "MUST_DRAW", 1, **discard("Jc"))
    drew = t.act(1, **draw(with_lay=game_pb2.Lay()))  # an empty lay is no lay
    assert drew.view.drawn == cards("8c")[0] and len(drew.view.hand) == 15
    t.refuse(no, "ALREADY_DREW", 1, **draw())
    # 73 reaches 71 but does not beat the bar of 90.
    t.refuse(no, "OPENING_BELOW_BAR", 1, lay=lay("Jc Jd Jh", "7d 8d 9d 10d", "2s 3s 4s"))
    t.act(1, **discard("5h"))

    # Seat 0 again, after the first circuit: a tallage discard is taken only with its lay.
    t.refuse(no, "MUST_LAY_DISCARD", 0, **draw(game_pb2.DRAW_SOURCE_DISCARD))
    # An empty lay (a client that always sets the field) is no lay: refused for the rule.
    t.refuse(no, "MUST_LAY_DISCARD", 0, **draw(game_pb2.DRAW_SOURCE_DISCARD, game_pb2.Lay()))
    t.refuse(no, "MUST_LAY_DISCARD", 0, **draw(game_pb2.DRAW_SOURCE_DISCARD, lay("2h 3h 4h")))
    taken = t.act(0, **draw(game_pb2.DRAW_SOURCE_DISCARD, lay("5c 5d 5h")))
    assert sorted(taken.view.hand) == sorted(cards("2h 3h 4h"))
    assert len(taken.view.melds) == 4


def test_portuguese_and_simple_refusals_are_failed_precondition(stubs: Stubs) -> None:
    no = Code.FAILED_PRECONDITION
    # Portuguese, incomplete declarations rejected: seat 1 plays first and draws.
    scattered = "2c 5d 8h Js 3c 6d 9h Qs 4c 7d 10h Ks Ah"  # not one meld in it
    deck = stacked_deck("portuguese", 2, {1: scattered}, "Kc", "6s")
    p = seated(stubs, "portuguese", 2, deck, false_declaration=game_pb2.FALSE_DECLARATION_REJECT)
    v = p.view(1)
    assert (v.turn, v.phase) == (1, game_pb2.PHASE_DRAW)
    some = v.hand[0]
    p.refuse(no, "MUST_DRAW", 1, discard=table_service_pb2.DiscardAction(card=some))
    p.refuse(no, "MUST_DRAW", 1, declare=table_service_pb2.DeclareAction(card=some))
    p.refuse(no, "NO_LAYING", 1, **draw(game_pb2.DRAW_SOURCE_DISCARD, lay("2h 3h 4h")))
    p.refuse(Code.INVALID_ARGUMENT, "LAY_WITH_STOCK", 1, **draw(with_lay=lay("2h 3h 4h")))
    p.refuse(no, "NOT_YOUR_TURN", 0, **draw())
    p.act(1, **draw())
    assert sorted(p.view(1).hand) == sorted(cards(scattered + " 6s"))
    for card in ("6s", "2c", "Ah"):
        p.refuse(
            no,
            "INCOMPLETE_DECLARATION",
            1,
            declare=table_service_pb2.DeclareAction(card=cards(card)[0]),
        )
    p.refuse(
        no, "CARD_NOT_IN_HAND", 1, declare=table_service_pb2.DeclareAction(card=cards("JK")[0])
    )
    p.refuse(no, "NO_LAYING", 1, lay=lay("2c 3c 4c"))

    # Simple: nothing is laid but a whole-hand finish.
    s = seated(stubs, "simple", 2, stacked_deck("simple", 2, {0: "2h 3h 4h 5c 5d 5s"}, "7h"))
    s.refuse(no, "NOT_A_FINISH", 0, lay=lay("2h 3h 4h", "5c 5d 5s"))
    s.refuse(
        no,
        "NO_LAYING",
        0,
        lay=game_pb2.Lay(
            steps=[game_pb2.LayStep(add=game_pb2.AddToMeld(meld=1, cards=cards("5h")))]
        ),
    )


def test_lobby_refusals_that_depend_on_the_table_are_failed_precondition(stubs: Stubs) -> None:
    no = Code.FAILED_PRECONDITION
    created = create(stubs, "tallage", 3)
    table_id = created.table.table_id
    owner = md(created.owner_token)
    start = lobby_service_pb2.StartTableRequest(table_id=table_id)
    refused(
        lambda: stubs.lobby.StartTable(start, metadata=owner, timeout=T), no, "NOT_ENOUGH_PLAYERS"
    )
    ana = stubs.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Ana", seat=1), timeout=T
    )
    refused(
        lambda: stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Rui", seat=1), timeout=T
        ),
        no,
        "SEAT_TAKEN",
    )
    refused(
        lambda: stubs.lobby.StartTable(start, metadata=owner, timeout=T), no, "NOT_ENOUGH_PLAYERS"
    )
    refused(
        lambda: stubs.table.Act(
            table_service_pb2.ActRequest(table_id=table_id, number=2, **draw()),
            metadata=md(ana.token),
            timeout=T,
        ),
        no,
        "NOT_STARTED",
    )
    refused(
        lambda: stubs.table.AnalyseMyHand(
            table_service_pb2.AnalyseMyHandRequest(table_id=table_id),
            metadata=md(ana.token),
            timeout=T,
        ),
        no,
        "NOT_STARTED",
    )
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy"),
        metadata=owner,
        timeout=T,
    )
    number = stubs.lobby.GetTable(
        lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T
    ).table.number
    started = stubs.lobby.StartTable(start, metadata=md(ana.token), timeout=T)
    assert started.table.status == lobby_service_pb2.TABLE_STATUS_PLAYING
    assert len(started.table.seats) == 2  # the empty seat is left out
    # Starting it again changes nothing: it answers the table as it is (the documented "add
    # bots, then start" works whether or not the bots filled the table).
    again = stubs.lobby.StartTable(start, metadata=owner, timeout=T)
    assert again.table.status == lobby_service_pb2.TABLE_STATUS_PLAYING
    assert [p.name for p in again.table.seats] == [p.name for p in started.table.seats]
    late = refused(
        lambda: stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Rui"), timeout=T
        ),
        no,
        "TABLE_STARTED",
    )
    # A bot that crashed and joins again is told how its player comes back.
    assert "with the seat's token" in late.message, late.message
    refused(
        lambda: stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy"),
            metadata=owner,
            timeout=T,
        ),
        no,
        "TABLE_STARTED",
    )
    after = stubs.lobby.GetTable(
        lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T
    ).table
    assert after.number >= number + 1  # the start (the bot may be playing by now)


# -- ABORTED: stale --------------------------------------------------------------------------


def test_a_stale_number_is_aborted_and_a_retry_is_never_applied_twice(stubs: Stubs) -> None:
    t = tallage(stubs)
    stale = Code.ABORTED
    start = t.number()
    # A number not reached yet is a mistake, not a stale view: INVALID_ARGUMENT, as in Watch.
    t.refuse(Code.INVALID_ARGUMENT, "BAD_NUMBER", 0, number=start + 1, **discard("2h"))
    # No number (0: the field left out) is a mistake too, which deciding again cannot mend: a
    # bot told STALE would send it again for ever.
    missing = t.refuse(Code.INVALID_ARGUMENT, "BAD_NUMBER", 0, number=0, **discard("2h"))
    assert "no update number" in missing.message, missing.message
    t.refuse(stale, "STALE", 0, number=start - 1, **discard("2h"))  # before the deal
    discarded = t.act(0, number=start, **discard("2h"))
    assert discarded.number == start + 1
    # The very same command again (a client retrying after a lost answer): refused, not applied.
    err = t.refuse(stale, "STALE", 0, number=start, **discard("2h"))
    assert err.metadata == {"current": str(start + 1)}
    assert cards("2h")[0] not in t.view(0).hand and len(t.view(0).hand) == 14
    drew = t.act(1, number=start + 1, **draw())
    assert drew.number == start + 2
    for _ in range(3):
        t.refuse(stale, "STALE", 1, number=start + 1, **draw())
    assert len(t.view(1).hand) == 15
    # A decision on a view that a chat line made older is still current: chat is not the game.
    chat = stubs.table.Chat(
        table_service_pb2.ChatRequest(table_id=t.table_id, text="hi"),
        metadata=md(t.tokens[0]),
        timeout=T,
    )
    assert chat.number == start + 3
    done = t.act(1, number=start + 2, **discard("2d"))
    assert done.number == start + 4
    t.refuse(stale, "STALE", 1, number=start + 2, **discard("2d"))


def test_a_refused_command_of_a_seat_that_left_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server waits long before playing for a seat that left, so that the seat's own
    # command comes first.
    config = TableConfig(bot_delay=0.0, round_pause=0.0, away_delay=30.0, heartbeat=0.5)
    # A refused command is refused before anything is applied: nothing to undo, so the
    # table's state is never rebuilt from its log for it (the seat's return comes first in
    # the change, and the move is checked before it).
    rebuilt: list[int] = []
    load_state = table_module.load_state
    monkeypatch.setattr(
        table_module,
        "load_state",
        lambda *args, **kwargs: rebuilt.append(1) or load_state(*args, **kwargs),
    )
    srv = ServerThread(str(tmp_path / "away.db"), config).start()
    stubs = Stubs(srv.target)
    try:
        _refused_while_away(stubs)
    finally:
        stubs.channel.close()
        srv.stop()
    assert rebuilt == []


def _refused_while_away(stubs: Stubs) -> None:
    t = tallage(stubs)
    left = stubs.lobby.LeaveTable(
        lobby_service_pb2.LeaveTableRequest(table_id=t.table_id),
        metadata=md(t.tokens[1]),
        timeout=T,
    )
    assert left.table.seats[1].away

    def seen() -> tuple[Any, ...]:
        # Watching with seat 1's token would bring it back: look as seat 0 and as a spectator.
        info = t.info()
        for p in info.seats:
            p.connected = False
        return info, *(without_presence(t.snapshot(tok).view) for tok in (t.tokens[0], None))

    before = seen()
    refused(lambda: t.act(1, **draw()), Code.FAILED_PRECONDITION, "NOT_YOUR_TURN")
    refused(lambda: t.act(1, number=1, **draw()), Code.ABORTED, "STALE")
    refused(lambda: t.act(1, **discard(0)), Code.INVALID_ARGUMENT, "BAD_CARD")
    assert seen() == before
    assert t.info().seats[1].away
    # A command that is accepted brings the player back.
    t.act(0, **discard("2h"))
    back = t.act(1, **draw())
    # The discard, the seat's return, then its draw: Act answers the draw's number.
    assert back.number == before[0].number + 3
    assert not back.view.players[1].away and len(back.view.hand) == 15


# -- NOT_FOUND, UNAUTHENTICATED, PERMISSION_DENIED -------------------------------------------


def test_no_such_table_is_not_found(stubs: Stubs) -> None:
    missing = "nosuchtable00000"
    nf = Code.NOT_FOUND
    calls: list[Callable[[], object]] = [
        lambda: stubs.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id=missing), timeout=T
        ),
        lambda: stubs.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id="x" * 500), timeout=T
        ),
        lambda: stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=""), timeout=T),
        lambda: stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=missing, name="Ana"), timeout=T
        ),
        lambda: stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=missing), metadata=md("t"), timeout=T
        ),
        lambda: stubs.lobby.StartTable(
            lobby_service_pb2.StartTableRequest(table_id=missing), metadata=md("t"), timeout=T
        ),
        lambda: stubs.lobby.LeaveTable(
            lobby_service_pb2.LeaveTableRequest(table_id=missing), metadata=md("t"), timeout=T
        ),
        lambda: stubs.table.Act(
            table_service_pb2.ActRequest(table_id=missing, number=1, **draw()),
            metadata=md("t"),
            timeout=T,
        ),
        lambda: stubs.table.Chat(
            table_service_pb2.ChatRequest(table_id=missing, text="hi"), metadata=md("t"), timeout=T
        ),
        lambda: stubs.table.AnalyseMyHand(
            table_service_pb2.AnalyseMyHandRequest(table_id=missing), metadata=md("t"), timeout=T
        ),
        lambda: stubs.table.ExportRecord(
            table_service_pb2.ExportRecordRequest(table_id=missing), timeout=T
        ),
        lambda: next(
            stubs.table.Watch(table_service_pb2.WatchRequest(table_id=missing), timeout=T)
        ),
        lambda: next(
            stubs.table.Watch(table_service_pb2.WatchRequest(table_id=missing, after=0), timeout=T)
        ),
    ]
    for call in calls:
        refused(call, nf, "NO_SUCH_TABLE")


def test_a_table_id_no_store_can_hold_is_not_found(backend: Backend, tmp_path: Path) -> None:
    """A table id with a NUL or another control character in it names no table, on either
    backend: NOT_FOUND, as any unknown id (PostgreSQL refuses such a string outright, which
    was answered INTERNAL, and logged as an unexpected error, to anyone who sent one)."""
    key = str(tmp_path / "server.key")
    with ServerThread(backend.db, secret_file=key) as server, Stubs(server.target) as s:
        created = s.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                variant=game_pb2.VARIANT_PORTUGUESE, options=game_pb2.Options(players=2)
            ),
            timeout=T,
        )
        real = created.table.table_id
        owner = md(created.owner_token)
        for bad in (real + "\x00", "\x00", real[:5] + "\x01" + real[6:], real + "\n"):
            calls: list[Callable[[], object]] = [
                lambda b=bad: s.lobby.GetTable(
                    lobby_service_pb2.GetTableRequest(table_id=b), timeout=T
                ),
                lambda b=bad: s.lobby.JoinTable(
                    lobby_service_pb2.JoinTableRequest(table_id=b, name="Ana"), timeout=T
                ),
                lambda b=bad: s.lobby.StartTable(
                    lobby_service_pb2.StartTableRequest(table_id=b),
                    metadata=owner,
                    timeout=T,
                ),
                lambda b=bad: s.lobby.CreateTable(
                    lobby_service_pb2.CreateTableRequest(
                        variant=game_pb2.VARIANT_PORTUGUESE, rematch_of=b
                    ),
                    metadata=owner,
                    timeout=T,
                ),
                lambda b=bad: s.table.Chat(
                    table_service_pb2.ChatRequest(table_id=b, text="hi"),
                    metadata=owner,
                    timeout=T,
                ),
                lambda b=bad: s.table.ExportRecord(
                    table_service_pb2.ExportRecordRequest(table_id=b), timeout=T
                ),
                lambda b=bad: next(
                    s.table.Watch(table_service_pb2.WatchRequest(table_id=b), timeout=T)
                ),
            ]
            for call in calls:
                refused(call, Code.NOT_FOUND, "NO_SUCH_TABLE")
        info = s.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=real), timeout=T)
        assert info.table.number == created.table.number


def test_no_token_or_a_bad_token_is_unauthenticated(stubs: Stubs) -> None:
    t = tallage(stubs)
    unauth = Code.UNAUTHENTICATED
    for token, reason in ((None, "NO_TOKEN"), ("", "NO_TOKEN"), ("forged-token", "BAD_TOKEN")):
        with unchanged(t):
            refused(lambda tok=token: t.act(0, token=tok, **discard("2h")), unauth, reason)
            refused(
                lambda tok=token: stubs.table.Chat(
                    table_service_pb2.ChatRequest(table_id=t.table_id, text="hi"),
                    metadata=md(tok),
                    timeout=T,
                ),
                unauth,
                reason,
            )
            refused(
                lambda tok=token: stubs.table.AnalyseMyHand(
                    table_service_pb2.AnalyseMyHandRequest(table_id=t.table_id),
                    metadata=md(tok),
                    timeout=T,
                ),
                unauth,
                reason,
            )
            refused(
                lambda tok=token: stubs.lobby.LeaveTable(
                    lobby_service_pb2.LeaveTableRequest(table_id=t.table_id),
                    metadata=md(tok),
                    timeout=T,
                ),
                unauth,
                reason,
            )
            refused(
                lambda tok=token: stubs.lobby.StartTable(
                    lobby_service_pb2.StartTableRequest(table_id=t.table_id),
                    metadata=md(tok),
                    timeout=T,
                ),
                unauth,
                reason,
            )
            refused(
                lambda tok=token: stubs.lobby.AddBot(
                    lobby_service_pb2.AddBotRequest(table_id=t.table_id),
                    metadata=md(tok),
                    timeout=T,
                ),
                unauth,
                reason,
            )
    # Watching without a token is a spectator; with a forged one, it is refused.
    assert not t.snapshot(None).view.HasField("seat")
    refused(lambda: t.snapshot("forged-token"), unauth, "BAD_TOKEN")


def test_a_token_of_another_table_or_a_non_owner_is_permission_denied(stubs: Stubs) -> None:
    t = tallage(stubs)
    other = seated(stubs, "portuguese", 2)
    waiting = create(stubs, "simple", 3)
    denied = Code.PERMISSION_DENIED
    strangers = (other.tokens[0], other.owner, waiting.owner_token)
    for token in strangers:
        with unchanged(t):
            refused(lambda tok=token: t.act(0, token=tok, **discard("2h")), denied, "NOT_YOURS")
            refused(lambda tok=token: t.snapshot(tok), denied, "NOT_YOURS")
            refused(
                lambda tok=token: stubs.table.Chat(
                    table_service_pb2.ChatRequest(table_id=t.table_id, text="hi"),
                    metadata=md(tok),
                    timeout=T,
                ),
                denied,
                "NOT_YOURS",
            )
    # The owner's token proves no seat: it starts and seats bots, it does not play.
    with unchanged(t):
        refused(lambda: t.act(0, token=t.owner, **discard("2h")), denied, "NOT_SEATED")
    # Only the owner or a seated player starts a table or seats a bot.
    table_id = waiting.table.table_id
    for token in (t.tokens[0], t.owner, other.tokens[1]):
        refused(
            lambda tok=token: stubs.lobby.StartTable(
                lobby_service_pb2.StartTableRequest(table_id=table_id), metadata=md(tok), timeout=T
            ),
            denied,
            "NOT_YOURS",
        )
        refused(
            lambda tok=token: stubs.lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=table_id), metadata=md(tok), timeout=T
            ),
            denied,
            "NOT_YOURS",
        )
    info = stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T)
    assert info.table.number == 0 and info.table.status == lobby_service_pb2.TABLE_STATUS_WAITING
    # A table that keeps hands private refuses the analysis even to its own seat.
    request = lobby_service_pb2.CreateTableRequest(
        name="no hints",
        variant=VARIANTS["tallage"],
        options=game_pb2.Options(players=2),
        hand_analysis=False,
    )
    private = stubs.lobby.CreateTable(request, timeout=T)
    seat = stubs.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=private.table.table_id, name="Ana"), timeout=T
    )
    refused(
        lambda: stubs.table.AnalyseMyHand(
            table_service_pb2.AnalyseMyHandRequest(table_id=private.table.table_id),
            metadata=md(seat.token),
            timeout=T,
        ),
        denied,
        "ANALYSIS_OFF",
    )


# -- RESOURCE_EXHAUSTED ----------------------------------------------------------------------


def test_too_many_tables_for_one_client_is_resource_exhausted(tmp_path: Path) -> None:
    srv = ServerThread(
        str(tmp_path / "limits.db"), max_tables_per_client=2, allow_stacked_decks=False
    ).start()
    stubs = Stubs(srv.target)
    try:

        def tables() -> list[str]:
            resp = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T)
            return sorted(x.table_id for x in resp.tables)

        first = create(stubs, "tallage", 2)
        create(stubs, "portuguese", 2)
        before = tables()
        assert len(before) == 2
        e = refused(lambda: create(stubs, "simple", 2), Code.RESOURCE_EXHAUSTED, "TOO_MANY_TABLES")
        # What to do, which no backoff does: close a waiting table, or wait for games to end.
        assert "CloseTable" in e.message and "--max-tables-per-client" in e.message, e.message
        assert tables() == before
        # The limit counts unfinished tables: once one is over, the client may create again.
        owner = md(first.owner_token)
        for _ in range(2):
            stubs.lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=first.table.table_id, policy="greedy"),
                metadata=owner,
                timeout=T,
            )
        call = stubs.table.Watch(
            table_service_pb2.WatchRequest(table_id=first.table.table_id), timeout=60
        )
        try:
            for msg in call:
                if msg.update.view.phase == game_pb2.PHASE_GAME_OVER:
                    break
        finally:
            call.cancel()
        # Stacked decks are a server option: without it they are not yours to ask for.
        deck = stacked_deck("simple", 2, {}, "7h")
        refused(
            lambda: create(stubs, "simple", 2, deck), Code.PERMISSION_DENIED, "STACKED_DECKS_OFF"
        )
        create(stubs, "simple", 2)
        refused(lambda: create(stubs, "simple", 2), Code.RESOURCE_EXHAUSTED, "TOO_MANY_TABLES")
    finally:
        stubs.channel.close()
        srv.stop()


def test_tables_created_at_once_never_pass_the_clients_limit(tmp_path: Path) -> None:
    """Many CreateTable calls of one client at once, on connections of their own: as many
    tables as the limit allows are made, every other call is TOO_MANY_TABLES."""
    limit = 3
    with ServerThread(
        str(tmp_path / "race.db"), max_tables_per_client=limit, table_creations_per_second=0.0
    ) as srv:

        async def one(channel: grpc.aio.Channel) -> str:
            stub = lobby_service_pb2_grpc.LobbyServiceStub(channel)
            request = lobby_service_pb2.CreateTableRequest(
                variant=game_pb2.VARIANT_SIMPLE, options=game_pb2.Options(players=2)
            )
            try:
                await stub.CreateTable(request, timeout=T)
            except grpc.aio.AioRpcError as e:
                return e.code().name
            return "OK"

        async def race() -> list[str]:
            channels = [grpc.aio.insecure_channel(srv.target) for _ in range(30)]
            try:
                return await asyncio.gather(*(one(channels[i % 30]) for i in range(150)))
            finally:
                for c in channels:
                    await c.close()

        answers = asyncio.run(race())
        assert answers.count("OK") == limit, sorted(answers)
        assert set(answers) == {"OK", "RESOURCE_EXHAUSTED"}, sorted(answers)
        with Stubs(srv.target) as stubs:
            listed = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T)
            assert len(listed.tables) == limit


@pytest.mark.parametrize("read", ["ListTables", "GetTable"])
def test_lobby_reads_spend_the_clients_server_time(tmp_path: Path, read: str) -> None:
    """A listing of a busy lobby costs the server milliseconds (its tables read and encoded),
    a GetTable a fraction of one: a client sending them back to back meets its share of the
    server's time and is refused RATE_LIMITED, as an analysis or LegalSteps is. Unbudgeted,
    one client listing 200 tables back to back kept the server at 94% of a core. Lobby
    reads have a budget of their own: a client busy with the solver can still look around."""
    with (
        ServerThread(str(tmp_path / "rami.db"), read_share=0.002, read_burst=0.02) as server,
        Stubs(server.target) as stubs,
    ):
        tables = [create(stubs, "tallage", 2).table.table_id for _ in range(20)]
        calls = {
            "ListTables": lambda: stubs.lobby.ListTables(
                lobby_service_pb2.ListTablesRequest(), timeout=T
            ),
            "GetTable": lambda: stubs.lobby.GetTable(
                lobby_service_pb2.GetTableRequest(table_id=tables[0]), timeout=T
            ),
        }
        codes = []
        for _ in range(1000):  # the burst holds some tens of them
            try:
                calls[read]()
            except grpc.RpcError as e:
                codes.append((e.code(), error_of(e).reason))
                break
        assert codes == [(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")], codes


def test_a_client_whose_solver_time_is_spent_still_reads_the_lobby(tmp_path: Path) -> None:
    with (
        ServerThread(str(tmp_path / "rami.db"), work_share=1e-6, work_burst=0.0) as server,
        Stubs(server.target) as stubs,
    ):
        table = create(stubs, "tallage", 2).table.table_id
        refused(
            lambda: stubs.rules.AnalyseHand(
                rules_service_pb2.AnalyseHandRequest(
                    variant=VARIANTS["tallage"], hand=cards("3c 4c 5c")
                ),
                timeout=T,
            ),
            Code.RESOURCE_EXHAUSTED,
            "RATE_LIMITED",
        )
        listed = stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T)
        assert [t.table_id for t in listed.tables] == [table]
        got = stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table), timeout=T)
        assert got.table.table_id == table


def test_a_refused_export_record_costs_its_table_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ExportRecord walked the table's whole log in the table's own task before it asked
    the caller's budget: a flood of calls, each refused RATE_LIMITED, held up the table's
    moves (a table of 13,000 updates stood still for seconds). The budget is asked first; the
    walk runs only for a call let in, and is charged to it."""
    import rami.server.services as services

    walks: list[int] = []
    real = services.record_inputs

    def counted(state: Any) -> Any:
        walks.append(state.number)
        return real(state)

    monkeypatch.setattr(services, "record_inputs", counted)
    with (
        ServerThread(str(tmp_path / "rami.db"), work_share=1e-6, work_burst=0.0) as server,
        Stubs(server.target) as stubs,
    ):
        table = create(stubs, "tallage", 2).table.table_id
        for _ in range(5):
            refused(
                lambda: stubs.table.ExportRecord(
                    table_service_pb2.ExportRecordRequest(table_id=table), timeout=T
                ),
                Code.RESOURCE_EXHAUSTED,
                "RATE_LIMITED",
            )
        assert walks == []


def test_export_records_sent_at_once_are_each_checked_against_the_walks_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client's calls sent at once are each checked against the walks of the log before
    them (a walk runs and is charged before the next call is let in): a burst walks a long
    table once or twice, not once a call."""
    import time as clock

    import rami.server.services as services

    walks: list[int] = []
    real = services.record_inputs

    def long_walk(state: Any) -> Any:
        walks.append(state.number)
        end = clock.perf_counter() + 0.02  # a table of some thousands of updates
        while clock.perf_counter() < end:
            pass
        return real(state)

    monkeypatch.setattr(services, "record_inputs", long_walk)
    with (
        ServerThread(str(tmp_path / "rami.db"), work_share=0.001, work_burst=0.01) as server,
        Stubs(server.target) as stubs,
    ):
        table = create(stubs, "tallage", 2).table.table_id

        async def burst() -> list[str]:
            async with grpc.aio.insecure_channel(server.target) as channel:
                stub = table_service_pb2_grpc.TableServiceStub(channel)
                await channel.channel_ready()

                async def export() -> str:
                    try:
                        await stub.ExportRecord(
                            table_service_pb2.ExportRecordRequest(table_id=table), timeout=T
                        )
                        return "ok"
                    except grpc.RpcError as e:
                        return error_of(e).reason

                return list(await asyncio.gather(*(export() for _ in range(10))))

        answers = asyncio.run(burst())
        assert answers.count("ok") == len(walks) <= 2, (answers, walks)
        assert answers.count("RATE_LIMITED") >= 8, answers
