"""A rematch: CreateTable with ``rematch_of``, by the seats of a finished game, makes one table
per finished table however many of its players ask, at the same moment too, and on several
servers sharing one PostgreSQL; the old table's TableInfo names it. A request that may not make
one (no such table, a game not over, a caller who held no seat there) is refused and changes
nothing. Each test runs on SQLite, then on PostgreSQL (skipped, saying why, without one)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import grpc
import pytest
from server_support import RPC_TIMEOUT, cards, error_of, md, stacked_deck
from storage_backends import Backend

from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

T = RPC_TIMEOUT
T_ = TypeVar("T_")
#: Ana's hand is complete with a 2♠ face down; Bea's makes no meld. Bea plays first: she
#: draws a 2♠ and throws it, Ana draws the other and declares: the game (one round) is over.
ANA = "3d 4d 5d 7c 8c 9c 10c Ks Kd Kh 9h JK Jh"
BEA = "Ac 3c 5c 7d 9d Jd 2h 4h 6h 8s 10s Qs Kc"
LOBBY = lobby_service_pb2


@pytest.fixture
def servers(backend: Backend, tmp_path: Path) -> Iterator[list[ServerThread]]:
    """Two servers on the backend's database: on PostgreSQL, two servers of one cluster (one
    key); on SQLite, one server (a file serves one server), given twice."""
    key = str(tmp_path / "server.key")
    with ServerThread(backend.db, secret_file=key) as one:
        if backend.kind == "sqlite":
            yield [one, one]
            return
        with ServerThread(backend.db, secret_file=key) as two:
            yield [one, two]


@pytest.fixture
def stubs(servers: list[ServerThread]) -> Iterator[list[Stubs]]:
    with Stubs(servers[0].target) as a, Stubs(servers[1].target) as b:
        yield [a, b]


def _request(old: str, name: str = "pair (rematch)") -> lobby_service_pb2.CreateTableRequest:
    return LOBBY.CreateTableRequest(
        name=name,
        variant=game_pb2.VARIANT_PORTUGUESE,
        options=game_pb2.Options(players=2, rounds=1),
        rematch_of=old,
    )


def _finished(stubs: Stubs) -> tuple[str, str, dict[str, str]]:
    """A two-seat portuguese table whose game is over (Ana won): its id, its owner's token and
    its seats' tokens by name."""
    deck = stacked_deck("portuguese", 2, {0: ANA, 1: BEA}, "3s", "2s 2s")
    created = stubs.lobby.CreateTable(
        LOBBY.CreateTableRequest(
            name="pair",
            variant=game_pb2.VARIANT_PORTUGUESE,
            options=game_pb2.Options(players=2, rounds=1),
            stacked_decks=[deck],
        ),
        timeout=T,
    )
    table_id = created.table.table_id
    tokens = {
        name: stubs.lobby.JoinTable(
            LOBBY.JoinTableRequest(table_id=table_id, name=name), timeout=T
        ).token
        for name in ("Ana", "Bea")
    }
    number = _info(stubs, table_id).number

    def act(name: str, **action: object) -> None:
        nonlocal number
        request = table_service_pb2.ActRequest(table_id=table_id, number=number, **action)  # type: ignore[arg-type]
        number = stubs.table.Act(request, metadata=md(tokens[name]), timeout=T).number

    stock = table_service_pb2.DrawAction(source=game_pb2.DRAW_SOURCE_STOCK)
    two = cards("2s")[0]
    act("Bea", draw=stock)
    act("Bea", discard=table_service_pb2.DiscardAction(card=two))
    act("Ana", draw=stock)
    act("Ana", declare=table_service_pb2.DeclareAction(card=two))
    _until(lambda: _info(stubs, table_id).status == LOBBY.TABLE_STATUS_FINISHED)
    return table_id, created.owner_token, tokens


def _info(stubs: Stubs, table_id: str) -> lobby_service_pb2.TableInfo:
    return stubs.lobby.GetTable(LOBBY.GetTableRequest(table_id=table_id), timeout=T).table


def _until(what: Callable[[], bool], timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def _tables(stubs: Stubs) -> set[str]:
    listed = stubs.lobby.ListTables(LOBBY.ListTablesRequest(), timeout=T).tables
    return {t.table_id for t in listed}


def test_the_players_of_a_finished_game_make_one_rematch_table(stubs: list[Stubs]) -> None:
    a, b = stubs
    old, _, tokens = _finished(a)
    assert _info(a, old).rematch_table_id == ""
    request = _request(old)
    request.request_id = "r" * 24
    first = a.lobby.CreateTable(request, metadata=md(tokens["Ana"]), timeout=T)
    new = first.table.table_id
    assert first.owner_token and not first.rematch_made_before
    assert new != old and first.table.status == LOBBY.TABLE_STATUS_WAITING
    # The old table names it, on every server, as GetTable and ListTables answer.
    for s in stubs:
        assert _info(s, old).rematch_table_id == new
        finished = s.lobby.ListTables(
            LOBBY.ListTablesRequest(status=LOBBY.TABLE_STATUS_FINISHED), timeout=T
        ).tables
        assert [t.rematch_table_id for t in finished if t.table_id == old] == [new]
        assert _info(s, new).rematch_table_id == ""
    a.lobby.JoinTable(LOBBY.JoinTableRequest(table_id=new, name="Ana"), timeout=T)
    tables = _tables(a)
    # Bea's rematch, at the other server, finds Ana's table: no owner token, nothing made.
    second = b.lobby.CreateTable(
        _request(old, name="another name"), metadata=md(tokens["Bea"]), timeout=T
    )
    assert second.rematch_made_before and second.owner_token == ""
    assert second.table.table_id == new and second.table.name == "pair (rematch)"
    assert [s.name for s in second.table.seats] == ["Ana", ""]
    # Ana's own again: the same.
    again = a.lobby.CreateTable(_request(old), metadata=md(tokens["Ana"]), timeout=T)
    assert again.rematch_made_before and again.table.table_id == new
    assert _tables(a) == _tables(b) == tables
    # Bea takes the free seat, as anyone does (at the server that plays the table): the table
    # is full, and the game starts.
    a.lobby.JoinTable(LOBBY.JoinTableRequest(table_id=new, name="Bea"), timeout=T)
    _until(lambda: _info(a, new).status == LOBBY.TABLE_STATUS_PLAYING)
    # The first request sent again (its answer lost) gets the first answer, owner token too.
    retry = b.lobby.CreateTable(request, metadata=md(tokens["Ana"]), timeout=T)
    assert retry.owner_token == first.owner_token and not retry.rematch_made_before
    assert retry.table.table_id == new


def _at_once(calls: list[Callable[[], T_]]) -> list[T_]:
    """Each call on a thread of its own, all let go at the same moment; their answers."""
    start = threading.Barrier(len(calls))
    answers: list[T_] = []

    def run(call: Callable[[], T_]) -> None:
        start.wait(timeout=T)
        answers.append(call())

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(answers) == len(calls)
    return answers


def test_players_asking_for_a_rematch_at_one_moment_get_one_table(stubs: list[Stubs]) -> None:
    for _ in range(3):
        old, _, tokens = _finished(stubs[0])
        before = _tables(stubs[0])
        answers = _at_once(
            [
                functools.partial(
                    stubs[i % 2].lobby.CreateTable,
                    _request(old),
                    metadata=md(tokens[name]),
                    timeout=T,
                )
                for i, name in enumerate(("Ana", "Bea", "Bea", "Ana"))
            ]
        )
        assert len({r.table.table_id for r in answers}) == 1
        assert [r.rematch_made_before for r in answers].count(False) == 1
        assert [bool(r.owner_token) for r in answers].count(True) == 1
        new = answers[0].table.table_id
        assert _tables(stubs[0]) == before | {new}
        assert _info(stubs[1], old).rematch_table_id == new


def test_a_rematch_that_may_not_be_made_is_refused_and_changes_nothing(
    stubs: list[Stubs],
) -> None:
    a, b = stubs
    old, owner, tokens = _finished(a)
    playing = a.lobby.CreateTable(
        LOBBY.CreateTableRequest(
            name="on", variant=game_pb2.VARIANT_PORTUGUESE, options=game_pb2.Options(players=2)
        ),
        timeout=T,
    ).table.table_id
    seated = {
        name: a.lobby.JoinTable(LOBBY.JoinTableRequest(table_id=playing, name=name), timeout=T)
        for name in ("Cy", "Dan")
    }
    waiting = a.lobby.CreateTable(
        LOBBY.CreateTableRequest(name="wait", variant=game_pb2.VARIANT_PORTUGUESE), timeout=T
    ).table.table_id
    eve = a.lobby.JoinTable(LOBBY.JoinTableRequest(table_id=waiting, name="Eve"), timeout=T)
    before = _tables(a)
    cases = [
        ("nosuchtable", tokens["Ana"], grpc.StatusCode.NOT_FOUND, "NO_SUCH_TABLE"),
        (playing, seated["Cy"].token, grpc.StatusCode.FAILED_PRECONDITION, "GAME_NOT_OVER"),
        (waiting, eve.token, grpc.StatusCode.FAILED_PRECONDITION, "GAME_NOT_OVER"),
        (old, None, grpc.StatusCode.UNAUTHENTICATED, "NO_TOKEN"),
        (old, "not-a-token", grpc.StatusCode.UNAUTHENTICATED, "BAD_TOKEN"),
        (old, seated["Dan"].token, grpc.StatusCode.PERMISSION_DENIED, "NOT_YOURS"),
        (old, owner, grpc.StatusCode.PERMISSION_DENIED, "NOT_SEATED"),
    ]
    for s in stubs:
        for table_id, token, code, reason in cases:
            with pytest.raises(grpc.RpcError) as refused:
                s.lobby.CreateTable(_request(table_id), metadata=md(token), timeout=T)
            e = error_of(refused.value)
            assert (e.code, e.reason) == (code, reason), (table_id, token, e)
            assert e.message  # in words
        # A public table's rematch is public: its id is listed on the old table, so a private
        # one would be reachable by anyone who lists the tables.
        private = _request(old)
        private.private = True
        with pytest.raises(grpc.RpcError) as refused:
            s.lobby.CreateTable(private, metadata=md(tokens["Ana"]), timeout=T)
        e = error_of(refused.value)
        assert (e.code, e.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_OPTION"), e
        assert "as private as" in e.message
    assert _tables(a) == _tables(b) == before
    assert _info(a, old).rematch_table_id == _info(b, old).rematch_table_id == ""
    # What was refused may be asked for again by the right seat.
    made = b.lobby.CreateTable(_request(old), metadata=md(tokens["Bea"]), timeout=T)
    assert not made.rematch_made_before and _info(a, old).rematch_table_id == made.table.table_id
    # Once it is made, another `private` is refused as before (it was answered with the
    # rematch): the contract refuses it, making nothing, whenever it is asked.
    with pytest.raises(grpc.RpcError) as refused:
        a.lobby.CreateTable(private, metadata=md(tokens["Ana"]), timeout=T)
    e = error_of(refused.value)
    assert (e.code, e.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_OPTION"), e
    again = a.lobby.CreateTable(_request(old), metadata=md(tokens["Ana"]), timeout=T)
    assert again.rematch_made_before and again.table.table_id == made.table.table_id
