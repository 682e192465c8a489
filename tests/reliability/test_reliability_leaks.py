"""Promise 2, no hidden card leaks, where the watch streams are not: error messages and the
server's log. (Updates, snapshots and record exports are proven in
``tests/server/test_server_leaks.py``; every refusal of the fuzz is checked the same way.)

- Every card value, in every kind of command, from the seat to move and from the others, at
  stacked deals of each variant: each refusal names no card but those its sender sent or may
  see, and changes nothing.
- A built-in bot whose move is refused (a policy that declares a hand that is not complete:
  the rules' message lists the 13 cards) is logged by its reason, never by that message.
- An unexpected error whose message quotes cards reaches the client as ``internal error`` and
  the log as its type and place, never its message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from server_support import (
    RPC_TIMEOUT,
    VARIANTS,
    card_mentions,
    cards,
    error_of,
    md,
    stacked_deck,
    without_presence,
)

import rami.server.services
from rami.engine import POLICIES, Card, Declare, Phase, View
from rami.server.testing import ServerThread, Stubs
from rami.v1 import (
    game_pb2,
    lobby_service_pb2,
    rules_service_pb2,
    table_service_pb2,
)

T = RPC_TIMEOUT

# Stacked two-seat deals: who is to move, in which phase.
DEALS = {
    # Seat 0 deals itself 15 cards and plays first, without drawing.
    "tallage": ({0: "2h 3h 4h 5c 5d 5s Kc Kd Ks 10s Js Qs Qc Qd Qh"}, "7h", "8c 6h"),
    "simple": ({0: "2h 3h 4h 5c 5d 5s 9c 10c Jc Qc Kd Kh Ks 8d"}, "7h", "8c 6h"),
    # Seat 1 plays first: it draws the 6♠ (then it may discard or declare).
    "portuguese": ({1: "2c 5d 8h Js 3c 6d 9h Qs 4c 7d 10h Ks Ah"}, "Kc", "6s"),
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path / "leaks.db")) as srv:
        yield srv


def seated(stubs: Stubs, variant: str) -> tuple[str, list[str]]:
    hands, discard, stock = DEALS[variant]
    options = game_pb2.Options(players=2)
    if variant == "portuguese":
        options.false_declaration = game_pb2.FALSE_DECLARATION_REJECT
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="leaks",
            variant=VARIANTS[variant],
            options=options,
            stacked_decks=[stacked_deck(variant, 2, hands, discard, stock)],
        ),
        timeout=T,
    )
    table_id = created.table.table_id
    tokens = [
        stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{s}", seat=s), timeout=T
        ).token
        for s in (0, 1)
    ]
    return table_id, tokens


def snapshot(stubs: Stubs, table_id: str, token: str | None) -> game_pb2.View:
    call = stubs.table.Watch(
        table_service_pb2.WatchRequest(table_id=table_id), metadata=md(token), timeout=T
    )
    try:
        return without_presence(next(call).update.view)
    finally:
        call.cancel()


def visible(view: game_pb2.View) -> set[int]:
    seen = set(view.hand) | {view.discard_top, view.drawn}
    for m in view.melds:
        seen |= set(m.meld.cards) | set(m.meld.stands_for)
    return seen


def probes(table_id: str, number: int, value: int, hand: list[int]) -> Iterator[Any]:
    """Every kind of command naming the card ``value``, with cards of the sender's hand."""
    mine = [c for c in hand if c != value][:2]

    def act(**fields: Any) -> table_service_pb2.ActRequest:
        return table_service_pb2.ActRequest(table_id=table_id, number=number, **fields)

    def lay(*steps: game_pb2.LayStep) -> game_pb2.Lay:
        return game_pb2.Lay(steps=list(steps))

    new = game_pb2.LayStep(new_meld=game_pb2.NewMeld(cards=[value, *mine]))
    joker_as = game_pb2.LayStep(new_meld=game_pb2.NewMeld(cards=mine, jokers_as=[value]))
    add = game_pb2.LayStep(add=game_pb2.AddToMeld(meld=1, cards=[value]))
    take = game_pb2.LayStep(take_joker=game_pb2.TakeJoker(meld=1, card=value))
    if value not in hand:  # a held card may be discarded or declared: that is a move
        yield act(discard=table_service_pb2.DiscardAction(card=value))
    yield act(declare=table_service_pb2.DeclareAction(card=value))
    for step in (new, joker_as, add, take):
        yield act(lay=lay(step))
        for source in (game_pb2.DRAW_SOURCE_STOCK, game_pb2.DRAW_SOURCE_DISCARD):
            yield act(draw=table_service_pb2.DrawAction(source=source, lay=lay(step)))


def request_cards(request: table_service_pb2.ActRequest) -> set[int]:
    out = {request.discard.card, request.declare.card}
    for lay in (request.lay, request.draw.lay):
        for s in lay.steps:
            out |= set(s.new_meld.cards) | set(s.new_meld.jokers_as) | set(s.add.cards)
            out.add(s.take_joker.card)
    return out


@pytest.mark.parametrize("variant", ["tallage", "simple", "portuguese"])
def test_no_refusal_names_a_card_its_sender_may_not_see(server: ServerThread, variant: str) -> None:
    stubs = Stubs(server.target)
    try:
        table_id, tokens = seated(stubs, variant)
        if variant == "portuguese":
            stubs.table.Act(
                table_service_pb2.ActRequest(
                    table_id=table_id,
                    number=snapshot(stubs, table_id, None).number,
                    draw=table_service_pb2.DrawAction(source=game_pb2.DRAW_SOURCE_STOCK),
                ),
                metadata=md(tokens[1]),
                timeout=T,
            )
        views = [snapshot(stubs, table_id, t) for t in (*tokens, None)]
        number = views[-1].number
        named = 0
        for seat, token in enumerate(tokens):
            own = views[seat]
            others = {c for v in views[:2] if v is not own for c in v.hand} - visible(own)
            assert others, "the other seat holds cards this one can't see"
            for value in range(0, 55):
                for request in probes(table_id, number, value, list(own.hand)):
                    with pytest.raises(grpc.RpcError) as info:
                        stubs.table.Act(request, metadata=md(token), timeout=T)
                    err = error_of(info.value)
                    assert err.code != grpc.StatusCode.INTERNAL, err
                    for card in card_mentions(err.message):
                        named += 1
                        allowed = visible(own) | request_cards(request)
                        assert int(card) + 1 in allowed, (seat, err.reason, err.message)
        assert named > 100, "refusals that name cards were met"
        # Nothing changed, for anyone.
        assert [snapshot(stubs, table_id, t) for t in (*tokens, None)] == views
    finally:
        stubs.channel.close()


def test_a_refused_automatic_move_is_logged_by_its_reason_not_its_cards(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def declares_anything(view: View, rng: Any) -> Any:
        greedy = POLICIES["random"](view, rng)
        if view.phase == Phase.PLAY and view.hand:
            return Declare(view.hand[0])  # refused: the other 13 are no complete hand
        return greedy

    monkeypatch.setitem(POLICIES, "greedy", declares_anything)
    caplog.set_level(logging.INFO)
    stubs = Stubs(server.target)
    try:
        created = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name="declares",
                variant=VARIANTS["portuguese"],
                options=game_pb2.Options(
                    players=2, rounds=1, false_declaration=game_pb2.FALSE_DECLARATION_REJECT
                ),
            ),
            timeout=T,
        )
        table_id = created.table.table_id
        for _ in range(2):
            stubs.lobby.AddBot(
                lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy"),
                metadata=md(created.owner_token),
                timeout=T,
            )
        deadline = time.monotonic() + 60
        request = lobby_service_pb2.GetTableRequest(table_id=table_id)
        while stubs.lobby.GetTable(request, timeout=T).table.status != (
            lobby_service_pb2.TABLE_STATUS_FINISHED
        ):
            assert time.monotonic() < deadline, "the bots' game did not end"
            time.sleep(0.05)
    finally:
        stubs.channel.close()
    lines = [caplog.handler.format(r) for r in caplog.records if r.name.startswith("rami.server")]
    refused = [line for line in lines if "INCOMPLETE_DECLARATION" in line]
    assert refused, lines  # the bot's declarations were refused, and said so
    assert not [line for line in lines if card_mentions(line)], lines


def test_an_unexpected_error_is_logged_without_its_message(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(variant: Any, hand: Any) -> Any:
        raise ValueError("the hand " + " ".join(Card(c).code() for c in hand))

    # (The check before the solver, which runs in the server's process: the solver's own
    # worker process imports its module afresh.)
    monkeypatch.setattr(rami.server.services, "check_hand", broken)
    caplog.set_level(logging.INFO)
    stubs = Stubs(server.target)
    try:
        with pytest.raises(grpc.RpcError) as info:
            stubs.rules.AnalyseHand(
                rules_service_pb2.AnalyseHandRequest(
                    variant=VARIANTS["tallage"], hand=cards("7h 8h 9h Qs")
                ),
                timeout=T,
            )
    finally:
        stubs.channel.close()
    err = error_of(info.value)
    assert (err.code, err.reason, err.message) == (
        grpc.StatusCode.INTERNAL,
        "INTERNAL",
        "internal error",
    )
    lines = [caplog.handler.format(r) for r in caplog.records if r.name.startswith("rami.server")]
    assert any("unexpected error in AnalyseHand: ValueError" in line for line in lines), lines
    assert not [line for line in lines if card_mentions(line)], lines
