"""Promise 3, nobody acts for anyone else.

- Tokens are unguessable: 24 random bytes (192 bits) in base64url, all distinct, their bits
  balanced; only their SHA-256 is stored, never the token.
- They are compared in constant time: ``hmac.compare_digest`` against every seat's hash, the
  same work whichever seat (if any) matches.
- Without a token a client is a spectator: it watches without a hand, and every command is
  ``UNAUTHENTICATED``.
- A seat's token works for that seat at that table only: another table says ``NOT_YOURS``, the
  owner's token holds no seat, a token changed by one character proves nothing, and a command
  is always applied to the seat its token proves (a command names no seat).
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from server_support import RPC_TIMEOUT, VARIANTS, error_of, md, without_presence

from rami.server.tablestate import hash_token
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

T = RPC_TIMEOUT
Code = grpc.StatusCode


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path / "auth.db")) as srv:
        yield srv


@pytest.fixture
def stubs(server: ServerThread) -> Iterator[Stubs]:
    with Stubs(server.target) as s:
        yield s


def table_of(stubs: Stubs, variant: str, players: int, seated: int) -> tuple[str, str, list[str]]:
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="auth", variant=VARIANTS[variant], options=game_pb2.Options(players=players)
        ),
        timeout=T,
    )
    table_id = created.table.table_id
    tokens = [
        stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"P{i}", seat=i), timeout=T
        ).token
        for i in range(seated)
    ]
    return table_id, created.owner_token, tokens


def refused(call: Callable[[], object]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()
    err = error_of(info.value)
    return err.code, err.reason


def snapshot(stubs: Stubs, table_id: str, token: str | None) -> game_pb2.View:
    call = stubs.table.Watch(
        table_service_pb2.WatchRequest(table_id=table_id), metadata=md(token), timeout=T
    )
    try:
        return next(call).update.view
    finally:
        call.cancel()


def test_tokens_are_192_random_bits_and_only_their_hash_is_stored(
    server: ServerThread, stubs: Stubs
) -> None:
    tokens: list[str] = []
    for _ in range(12):
        _table_id, owner, seats = table_of(stubs, "tallage", 6, 5)
        tokens += [owner, *seats]
    assert len(set(tokens)) == len(tokens) == 72
    raw = []
    for token in tokens:
        assert len(token) == 32 and set(token) <= set(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        ), token
        decoded = base64.urlsafe_b64decode(token)
        assert len(decoded) * 8 >= 128
        raw.append(decoded)
    # Bits balanced (13,824 of them: a fair source gives 0.5 ± 0.005), and no shared prefixes.
    ones = sum(bin(b).count("1") for r in raw for b in r)
    assert abs(ones / (len(raw) * 24 * 8) - 0.5) < 0.03
    assert len({r[:3] for r in raw}) == len(raw)
    # The database holds each token's SHA-256, never the token.
    server.halt()  # flush: everything is in the files
    stored = b"".join(
        p.read_bytes() for p in Path(server.db).parent.iterdir() if p.name.startswith("auth.db")
    )
    for token in tokens:
        assert token.encode() not in stored
        assert hash_token(token).encode() in stored
    server.start()


def test_tokens_are_compared_in_constant_time(
    stubs: Stubs, monkeypatch: pytest.MonkeyPatch
) -> None:
    table_id, _, tokens = table_of(stubs, "tallage", 4, 4)
    calls: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    number = snapshot(stubs, table_id, None).number
    for token in (tokens[0], tokens[3], "A" * 32):
        calls.clear()
        request = table_service_pb2.ActRequest(
            table_id=table_id, number=number, draw=table_service_pb2.DrawAction(source=1)
        )
        with contextlib.suppress(grpc.RpcError):
            stubs.table.Act(request, metadata=md(token), timeout=T)
        digest = hash_token(token)
        # Every seat's hash was compared with the token's, whichever matched: no early exit.
        compared = {a for a, b in calls if b == digest} | {b for a, b in calls if a == digest}
        assert len(compared) >= 4, calls


def test_without_a_token_a_client_is_a_spectator(stubs: Stubs) -> None:
    table_id, _, _tokens = table_of(stubs, "portuguese", 2, 2)
    view = snapshot(stubs, table_id, None)
    assert not view.HasField("seat") and not view.hand and not view.drawn
    assert [p.hand_size for p in view.players] == [13, 13]
    number = view.number
    for token in (None, ""):
        for call in (
            lambda t=token: stubs.table.Act(
                table_service_pb2.ActRequest(
                    table_id=table_id, number=number, draw=table_service_pb2.DrawAction(source=1)
                ),
                metadata=md(t),
                timeout=T,
            ),
            lambda t=token: stubs.table.Chat(
                table_service_pb2.ChatRequest(table_id=table_id, text="hi"),
                metadata=md(t),
                timeout=T,
            ),
            lambda t=token: stubs.table.AnalyseMyHand(
                table_service_pb2.AnalyseMyHandRequest(table_id=table_id),
                metadata=md(t),
                timeout=T,
            ),
            lambda t=token: stubs.lobby.LeaveTable(
                lobby_service_pb2.LeaveTableRequest(table_id=table_id),
                metadata=md(t),
                timeout=T,
            ),
        ):
            assert refused(call) == (Code.UNAUTHENTICATED, "NO_TOKEN")
    assert without_presence(snapshot(stubs, table_id, None)) == without_presence(view)


def test_a_seat_token_works_for_that_seat_at_that_table_only(stubs: Stubs) -> None:
    a_id, a_owner, a = table_of(stubs, "portuguese", 2, 2)
    _b_id, b_owner, b = table_of(stubs, "portuguese", 2, 2)
    view = snapshot(stubs, a_id, None)
    first, number = view.turn, view.number

    def act(token: str, table_id: str = a_id) -> Callable[[], object]:
        request = table_service_pb2.ActRequest(
            table_id=table_id, number=number, draw=table_service_pb2.DrawAction(source=1)
        )
        return lambda: stubs.table.Act(request, metadata=md(token), timeout=T)

    mover = a[first]
    variants = {
        "flipped": ("B" if mover[0] != "B" else "C") + mover[1:],
        "cut": mover[:-1],
        "longer": mover + "A",
        "spaced": f" {mover}",
        "upper": mover.upper() if mover.upper() != mover else mover.lower(),
    }
    for name, token in variants.items():
        assert refused(act(token)) == (Code.UNAUTHENTICATED, "BAD_TOKEN"), name
    for token in (*b, b_owner):  # proves a seat (or ownership) elsewhere: not here
        assert refused(act(token)) == (Code.PERMISSION_DENIED, "NOT_YOURS")
        assert refused(lambda t=token: snapshot(stubs, a_id, t)) == (
            Code.PERMISSION_DENIED,
            "NOT_YOURS",
        )
    assert refused(act(a_owner)) == (Code.PERMISSION_DENIED, "NOT_SEATED")
    assert refused(act(a[1 - first])) == (Code.FAILED_PRECONDITION, "NOT_YOUR_TURN")
    assert snapshot(stubs, a_id, None).number == number  # none of that changed anything
    # Each token sees its own seat's hand, and only that one.
    hands = [snapshot(stubs, a_id, t) for t in a]
    assert [v.seat for v in hands] == [0, 1]
    assert all(len(v.hand) == 13 for v in hands)
    # The one command that goes through is the token's seat's, whatever the client meant.
    done = act(mover)()
    assert done.number == number + 1  # type: ignore[attr-defined]
    record = json.loads(
        stubs.table.ExportRecord(
            table_service_pb2.ExportRecordRequest(table_id=a_id), timeout=T
        ).record_json
    )
    last = record["rounds"][-1]["actions"][-1]
    assert (last["number"], last["seat"]) == (number + 1, first)
    # A seat given up (before the game) takes its token's rights with it.
    w_id, _, w = table_of(stubs, "simple", 3, 2)
    stubs.lobby.LeaveTable(
        lobby_service_pb2.LeaveTableRequest(table_id=w_id), metadata=md(w[0]), timeout=T
    )
    assert refused(
        lambda: stubs.table.Chat(
            table_service_pb2.ChatRequest(table_id=w_id, text="still here?"),
            metadata=md(w[0]),
            timeout=T,
        )
    ) == (Code.UNAUTHENTICATED, "BAD_TOKEN")
