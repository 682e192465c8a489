"""The contract as a bot author reads it (issue: no guessing, no trap): what each field and
refusal means holds through a real server."""

from __future__ import annotations

from typing import Any

import grpc
from server_support import cards, md, stacked_deck
from test_server_errors import draw, seated

from rami.server.testing import Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

Code = grpc.StatusCode

# Seat 1 plays first and draws 6♠: three natural runs and 6♠ to put face down (a hand of runs
# only, which pays more, RULES.md §2); the scattered hand has no meld at all.
RUNS = "2c 3c 4c 5c 6d 7d 8d 9d 9h 10h Jh Qh Kh"
SCATTERED = "2c 5d 8h Js 3c 6d 9h Qs 4c 7d 10h Ks Ah"


def test_a_view_lists_the_complete_declarations_and_none_for_an_incomplete_hand(
    stubs: Stubs,
) -> None:
    complete = seated(stubs, "portuguese", 2, stacked_deck("portuguese", 2, {1: RUNS}, "Kc", "6s"))
    complete.act(1, **draw())
    v = complete.view(1)
    assert v.phase == game_pb2.PHASE_PLAY and v.can_declare
    found = {(d.card, d.multiplier) for d in v.declarations}
    assert found and all(m >= 1 for _, m in found)
    # Each one listed is accepted as is.
    card = v.declarations[0].card
    done = complete.act(1, declare=table_service_pb2.DeclareAction(card=card))
    assert done.view.results and done.view.results[-1].ending == game_pb2.ROUND_ENDING_DECLARE
    assert done.view.results[-1].multiplier == v.declarations[0].multiplier

    # can_declare is true in the play phase whatever the hand: declarations is what tells.
    scattered = seated(
        stubs, "portuguese", 2, stacked_deck("portuguese", 2, {1: SCATTERED}, "Kc", "6s")
    )
    scattered.act(1, **draw())
    v = scattered.view(1)
    assert v.can_declare and not v.declarations
    assert sorted(v.hand) == sorted(cards(SCATTERED + " 6s"))
    # Nobody else is told anything of it.
    assert not scattered.view(0).declarations and not scattered.view(0).can_declare


def test_legal_steps_mark_the_declarations_whose_melds_are_not_complete(stubs: Stubs) -> None:
    """With false declarations revealed (the default), every card's declaration is a legal
    step, complete or not: the simplest bot ("pick any listed step") must be able to tell the
    complete ones, which the view's ``declarations`` list, from the mistakes."""

    def declares(table: Any) -> dict[int, bool]:
        v = table.view(1)
        got = stubs.table.LegalSteps(
            table_service_pb2.LegalStepsRequest(table_id=table.table_id, number=v.number),
            metadata=md(table.tokens[1]),
            timeout=10,
        )
        out = {}
        for step in got.steps:
            if step.text.startswith("declare"):
                # docs/steps.md: the 53 declare steps end the index, one a card (1 to 53).
                out[step.index - (got.size - 53) + 1] = step.false_declaration
            else:
                assert not step.false_declaration, step
        return out

    complete = seated(stubs, "portuguese", 2, stacked_deck("portuguese", 2, {1: RUNS}, "Kc", "6s"))
    complete.act(1, **draw())
    marked = declares(complete)
    good = {d.card for d in complete.view(1).declarations}
    assert good and set(marked) == set(complete.view(1).hand)
    assert {c for c, false in marked.items() if not false} == good
    scattered = seated(
        stubs, "portuguese", 2, stacked_deck("portuguese", 2, {1: SCATTERED}, "Kc", "6s")
    )
    scattered.act(1, **draw())
    marked = declares(scattered)
    assert marked and all(marked.values())  # every one listed, none complete


def _updates_until(stubs: Stubs, table_id: str, token: str, pred: Any, timeout: float) -> list[Any]:
    """The seat's updates from its opening snapshot until one matches ``pred``."""
    call = stubs.table.Watch(
        table_service_pb2.WatchRequest(table_id=table_id), metadata=md(token), timeout=timeout
    )
    seen = []
    try:
        for msg in call:
            if msg.HasField("update"):
                seen.append(msg.update)
                if pred(msg.update):
                    return seen
    finally:
        call.cancel()
    raise AssertionError("the stream ended first")


def test_a_timeout_plays_the_rest_of_the_turn_at_once_and_keeps_jokers_and_melds(
    stubs: Stubs,
) -> None:
    # Seat 1 plays first; it will draw the joker from the stock and hold four melds, K♦ loose.
    hand = "2c 3c 4c 5d 6d 7d 8h 9h 10h Js Qs Ks Kd"
    deck = stacked_deck("portuguese", 2, {1: hand}, "5c", "JK")
    table = seated(stubs, "portuguese", 2, deck, turn_seconds=1)
    start = table.number()
    updates = _updates_until(
        stubs,
        table.table_id,
        table.tokens[1],
        lambda u: u.view.turn == 0 and u.number > start,
        timeout=20,
    )
    played = [u for u in updates if u.number > start]
    timed_out = [e for u in played for e in u.events if e.HasField("turn_timed_out")]
    assert len(timed_out) == 1, "one timeout for the turn, not one per phase"
    drawn = [e.card_drawn for u in played for e in u.events if e.HasField("card_drawn")]
    thrown = [e.card_discarded for u in played for e in u.events if e.HasField("card_discarded")]
    assert [d.source for d in drawn] == [game_pb2.DRAW_SOURCE_STOCK]
    # Not the joker it drew, and no card of its melds: the loose K♦.
    assert [t.card for t in thrown] == cards("Kd")
    assert sorted(played[-1].view.hand) == sorted(cards(hand.replace("Kd", "JK")))


def test_one_rule_for_names_longer_is_refused_never_cut(stubs: Stubs) -> None:
    from test_server_errors import refused

    def create(name: str) -> Any:
        return stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name=name, variant=game_pb2.VARIANT_TALLAGE, options=game_pb2.Options(players=3)
            ),
            timeout=10,
        )

    bad = Code.INVALID_ARGUMENT
    refused(lambda: create("t" * 41), bad, "BAD_NAME")
    assert create("t" * 40).table.name == "t" * 40
    # Escape sequences and control characters are removed before counting.
    assert create("\x1b[31m" + "t" * 40 + "\x07").table.name == "t" * 40
    chosen = create("")
    assert chosen.table.name == "tallage table"
    table_id, owner = chosen.table.table_id, chosen.owner_token

    def join(name: str) -> Any:
        return stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name), timeout=10
        )

    def bot(name: str) -> Any:
        return stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=table_id, policy="random", name=name),
            metadata=md(owner),
            timeout=10,
        )

    for call in (join, bot):
        refused(lambda c=call: c("n" * 25), bad, "BAD_NAME")  # type: ignore[misc]
    refused(lambda: join(""), bad, "BAD_NAME")
    assert join("n" * 24).table.seats[0].name == "n" * 24
    assert bot("").table.seats[1].name == "Random bot 2"


def test_the_owners_token_watches_as_a_spectator(stubs: Stubs) -> None:
    table = seated(stubs, "portuguese", 2)
    call = stubs.table.Watch(
        table_service_pb2.WatchRequest(table_id=table.table_id),
        metadata=md(table.owner),
        timeout=10,
    )
    try:
        first = next(call)
    finally:
        call.cancel()
    assert first.update.snapshot
    assert not first.update.view.HasField("seat") and not first.update.view.hand


# -- the lobby: start after bots, close, expiry ------------------------------------------------


def _new(stubs: Stubs, players: int = 3) -> Any:
    return stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="lobby",
            variant=game_pb2.VARIANT_TALLAGE,
            options=game_pb2.Options(players=players),
        ),
        timeout=10,
    )


def test_add_bots_then_start_works_when_the_bots_filled_the_table(stubs: Stubs) -> None:
    created = _new(stubs, 2)
    table_id, owner = created.table.table_id, md(created.owner_token)
    for _ in range(2):
        stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=table_id, policy="random"),
            metadata=owner,
            timeout=10,
        )
    started = stubs.lobby.StartTable(
        lobby_service_pb2.StartTableRequest(table_id=table_id), metadata=owner, timeout=10
    )
    assert started.table.status in (
        lobby_service_pb2.TABLE_STATUS_PLAYING,
        lobby_service_pb2.TABLE_STATUS_FINISHED,
    )


def test_a_bot_added_without_a_policy_is_strong(stubs: Stubs) -> None:
    """AddBotRequest.policy: "empty for strong"."""
    created = _new(stubs, 2)
    added = stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=created.table.table_id),
        metadata=md(created.owner_token),
        timeout=10,
    )
    assert (added.table.seats[0].name, added.table.seats[0].policy) == ("Strong bot 1", "strong")


def test_the_owner_closes_a_waiting_table_and_it_frees_a_place(tmp_path: Any) -> None:
    from test_server_errors import refused

    from rami.server.testing import ServerThread

    with (
        ServerThread(str(tmp_path / "rami.db"), max_tables_per_client=3) as srv,
        Stubs(srv.target) as stubs,
    ):
        tables = [_new(stubs) for _ in range(3)]
        refused(lambda: _new(stubs), Code.RESOURCE_EXHAUSTED, "TOO_MANY_TABLES")
        first = tables[0]
        table_id, owner = first.table.table_id, md(first.owner_token)
        seat = stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Ana"), timeout=10
        )
        close = lobby_service_pb2.CloseTableRequest(table_id=table_id)
        refused(
            lambda: stubs.lobby.CloseTable(close, metadata=md(seat.token), timeout=10),
            Code.PERMISSION_DENIED,
            "NOT_OWNER",
        )
        closed = stubs.lobby.CloseTable(close, metadata=owner, timeout=10)
        assert closed.table.status == lobby_service_pb2.TABLE_STATUS_CLOSED
        again = stubs.lobby.CloseTable(close, metadata=owner, timeout=10)
        assert again.table == closed.table
        # Nobody joins or starts it; its place counts no more.
        join = lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Bo")
        refused(
            lambda: stubs.lobby.JoinTable(join, timeout=10),
            Code.FAILED_PRECONDITION,
            "TABLE_CLOSED",
        )
        start = lobby_service_pb2.StartTableRequest(table_id=table_id)
        refused(
            lambda: stubs.lobby.StartTable(start, metadata=owner, timeout=10),
            Code.FAILED_PRECONDITION,
            "TABLE_CLOSED",
        )
        _new(stubs)
        listed = stubs.lobby.ListTables(
            lobby_service_pb2.ListTablesRequest(status=lobby_service_pb2.TABLE_STATUS_CLOSED),
            timeout=10,
        )
        assert [t.table_id for t in listed.tables] == [table_id]


def test_a_table_whose_game_has_begun_is_not_closed(stubs: Stubs) -> None:
    from test_server_errors import refused

    playing = seated(stubs, "portuguese", 2)
    refused(
        lambda: stubs.lobby.CloseTable(
            lobby_service_pb2.CloseTableRequest(table_id=playing.table_id),
            metadata=md(playing.owner),
            timeout=10,
        ),
        Code.FAILED_PRECONDITION,
        "TABLE_STARTED",
    )


def test_a_waiting_table_left_alone_is_closed_after_the_expiry(tmp_path: Any) -> None:
    import time

    from rami.server.testing import ServerThread

    with ServerThread(str(tmp_path / "rami.db"), waiting_expiry=0.4) as srv:
        with Stubs(srv.target) as stubs:
            table_id = _new(stubs).table.table_id
            get = lobby_service_pb2.GetTableRequest(table_id=table_id)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                info = stubs.lobby.GetTable(get, timeout=10).table
                if info.status == lobby_service_pb2.TABLE_STATUS_CLOSED:
                    break
                time.sleep(0.05)
            assert info.status == lobby_service_pb2.TABLE_STATUS_CLOSED
        # Closed, it is not reloaded at the next start.
        srv.halt()
        srv.start()
        assert table_id not in srv.server.lobby.tables  # type: ignore[union-attr]
