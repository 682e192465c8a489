"""The log of a real ``rami-server`` at its default level says what operators want to see:
tables created, started and finished, players joining, dropping, leaving and coming back, by
table id and seat; never a card, never a token."""

from __future__ import annotations

import re
import time
from pathlib import Path

from server_support import card_mentions, md, rami_server, stacked_deck
from test_server_contract import RUNS
from test_server_errors import draw, seated

from rami.server.testing import Stubs
from rami.v1 import lobby_service_pb2, table_service_pb2

T = 10.0


def _lines(log: Path, pattern: str, timeout: float = 5.0) -> list[str]:
    """The log's lines, once one matches ``pattern`` (bounded wait: the log is written as it
    happens, by another process)."""
    end = time.monotonic() + timeout
    while True:
        lines = log.read_text().splitlines()
        if any(re.search(pattern, line) for line in lines) or time.monotonic() > end:
            return lines
        time.sleep(0.05)


def test_the_default_log_tells_a_tables_life_without_a_card_or_a_token(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with (
        rami_server(tmp_path / "rami.db", log, log_level="info") as (_, address),
        Stubs(address) as stubs,
    ):
        deck = stacked_deck("portuguese", 2, {1: RUNS}, "Kc", "6s")
        table = seated(stubs, "portuguese", 2, deck, rounds=1)
        tid = table.table_id
        # Seat 0's player opens the table, then drops (closes the terminal).
        call = stubs.table.Watch(
            table_service_pb2.WatchRequest(table_id=tid), metadata=md(table.tokens[0]), timeout=T
        )
        next(call)
        call.cancel()
        _lines(log, rf"table {tid}: seat 0 dropped")
        # Leaves the game, and comes back.
        stubs.lobby.LeaveTable(
            lobby_service_pb2.LeaveTableRequest(table_id=tid),
            metadata=md(table.tokens[0]),
            timeout=T,
        )
        table.view(0)
        # Seat 1 declares: the game (one round) is over.
        table.act(1, **draw())
        card = table.view(1).declarations[0].card
        table.act(1, declare=table_service_pb2.DeclareAction(card=card))
        assert table.info().status == lobby_service_pb2.TABLE_STATUS_FINISHED
        lines = _lines(log, rf"table {tid}: game finished")
    text = "\n".join(lines)
    expected = [
        rf"INFO .*table {tid}: created \(portuguese, 2 seats, turn clock none\)",
        rf"INFO .*table {tid}: player 'P0' took seat 0",
        rf"INFO .*table {tid}: player 'P1' took seat 1",
        rf"INFO .*table {tid}: game started with 2 players",
        rf"INFO .*table {tid}: seat 0 dropped",
        rf"INFO .*table {tid}: seat 0 left: the server plays for it",
        rf"INFO .*table {tid}: seat 0 came back",
        rf"INFO .*table {tid}: seat 0 connected \(a stream opened\)",
        rf"INFO .*table {tid}: game finished",
    ]
    at = 0
    for pattern in expected:  # each, in this order
        found = next((i for i in range(at, len(lines)) if re.search(pattern, lines[i])), None)
        assert found is not None, f"no line {pattern!r} (after line {at}) in:\n{text}"
        at = found + 1
    assert not card_mentions(text), text
    for token in (*table.tokens, table.owner):
        assert token not in text
