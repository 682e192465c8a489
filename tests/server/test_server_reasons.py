"""The error reasons in the contract (``proto/rami/v1/errors.proto``'s ErrorReason) are the ones
the code sends, each with the status code the server gives it, and every RPC points to them.

The reasons the code can send are read from the code itself: every refusal it constructs (an
AST scan of the server's and the engine's modules), as ``errors.py`` maps them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from server_support import DOMAIN, RPC_TIMEOUT, comments, contract, error_of, error_reasons, md

from rami import engine
from rami.server import errors, refusals
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

T = RPC_TIMEOUT
ROOT = Path(__file__).resolve().parents[2]
MODULES = (ROOT / "server" / "rami" / "server", ROOT / "engine" / "rami" / "engine")
#: The engine's refusals take (message, reason); the server's take (reason, message).
ENGINE = {name: getattr(engine, name) for name in ("RuleError", "MalformedAction", "IllegalAction")}
SERVER = {name: getattr(refusals, name) for name in refusals.__all__}


@dataclass(frozen=True)
class Raised:
    """A refusal the code constructs: where, of which class, with which reason."""

    where: str
    kind: str
    reason: str

    def code(self) -> grpc.StatusCode:
        """Its status code, as ``errors.py`` maps it."""
        if self.kind in ENGINE:
            error: Exception = ENGINE[self.kind]("a message", self.reason)
        else:
            error = SERVER[self.kind](self.reason, "a message")
        code, reason, _, _ = errors.refusal_of(error)
        assert reason == self.reason, self
        return code


def raised() -> Iterator[Raised]:
    """Every refusal constructed in the server's and the engine's modules."""
    for folder in MODULES:
        for path in sorted(folder.glob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                kind = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                if kind in ENGINE:
                    keyword = [k.value for k in node.keywords if k.arg == "reason"]
                    given = [*node.args[1:2], *keyword]
                    if not given:  # the class's own reason
                        yield Raised(where, kind, ENGINE[kind].reason)
                        continue
                    arg = given[0]
                elif kind in SERVER:
                    assert node.args, f"{where}: a refusal without its reason"
                    arg = node.args[0]
                else:
                    continue
                assert isinstance(arg, ast.Constant) and isinstance(arg.value, str), (
                    f"{where}: a reason that is not written out: the scan cannot check it"
                )
                yield Raised(where, kind, arg.value)


def test_every_reason_the_code_sends_is_in_the_contract_and_no_other() -> None:
    found = list(raised())
    assert len(found) > 100, "the scan found too few refusals: did the code move?"
    sent = {r.reason for r in found}
    # Anything else that escapes a method is a bug, sent as INTERNAL.
    code, internal, _, _ = errors.refusal_of(RuntimeError("a bug"))
    sent.add(internal)
    listed = set(error_reasons())
    assert sorted(sent - listed) == [], "reasons the code sends that errors.proto lacks"
    assert sorted(listed - sent) == [], "reasons in errors.proto that nothing sends"
    assert error_reasons()[internal] == code


def test_each_reason_is_documented_with_the_code_errors_py_gives_it() -> None:
    documented = error_reasons()
    wrong = [
        f"{r.where}: {r.reason} is {r.code().name}, errors.proto says {documented.get(r.reason)}"
        for r in raised()
        if r.code() != documented.get(r.reason)
    ]
    assert wrong == []


# A value's name in a comment: capitals, digits and underscores, at least one underscore or 4+.
_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{4,}\b")


def test_every_rpc_points_to_the_error_reasons_and_names_only_real_ones() -> None:
    known = set(error_reasons()) | set(grpc.StatusCode.__members__)
    rpcs = 0
    for name, file in contract().items():
        said = comments(file)
        for s, service in enumerate(file.service):
            for m, method in enumerate(service.method):
                rpcs += 1
                # 6: a file's services, 2: a service's methods.
                comment = " ".join(said.get((6, s, 2, m), "").split())
                where = f"{name}: {service.name}.{method.name}"
                assert "Errors: see ErrorReason" in comment, f"{where}: {comment!r}"
                errors_part = comment.split("Errors: see ErrorReason", 1)[1]
                named = set(_NAME.findall(errors_part))
                assert named <= known, f"{where} names {sorted(named - known)}"
    assert rpcs >= 16  # every RPC of the three services


# -- a sample through a real server ----------------------------------------------------------


def _table(stubs: Stubs) -> tuple[str, str, dict[int, str], game_pb2.View]:
    """A started two-seat tallage table of two remote seats: id, owner token, tokens, and the
    view of the seat whose turn it is."""
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            name="reasons", variant=game_pb2.VARIANT_TALLAGE, options=game_pb2.Options(players=2)
        ),
        timeout=T,
    )
    table_id = created.table.table_id
    tokens = {}
    for name in ("Ana", "Rui"):
        joined = stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name), timeout=T
        )
        tokens[joined.seat] = joined.token
    watch = stubs.table.Watch(
        table_service_pb2.WatchRequest(table_id=table_id), metadata=md(tokens[0]), timeout=T
    )
    try:
        view = next(watch).update.view
    finally:
        watch.cancel()
    assert view.phase in (game_pb2.PHASE_DRAW, game_pb2.PHASE_PLAY), view
    return table_id, created.owner_token, tokens, view


def test_a_sample_of_refusals_through_a_real_server_has_the_documented_codes(
    server: ServerThread, stubs: Stubs
) -> None:
    table_id, owner, tokens, view = _table(stubs)
    mover, other = view.turn, 1 - view.turn

    def act(token: str | None, number: int = view.number, discard: int = 0) -> object:
        """A draw from the stock, or the discard of ``discard`` (a proto Card value)."""
        request = table_service_pb2.ActRequest(table_id=table_id, number=number)
        if discard:
            request.discard.card = discard  # type: ignore[assignment]
        else:
            request.draw.source = game_pb2.DRAW_SOURCE_STOCK
        return stubs.table.Act(request, metadata=md(token), timeout=T)

    sample = {
        "NOT_YOUR_TURN": lambda: act(tokens[other]),
        "STALE": lambda: act(tokens[mover], number=view.number - 1),
        "BAD_NUMBER": lambda: act(tokens[mover], number=view.number + 5),
        "BAD_CARD": lambda: act(tokens[mover], discard=99),
        "NO_TOKEN": lambda: act(None),
        "BAD_TOKEN": lambda: act("not-a-token"),
        "NOT_SEATED": lambda: act(owner),
        "NO_SUCH_TABLE": lambda: stubs.lobby.GetTable(
            lobby_service_pb2.GetTableRequest(table_id="no-such-table"), timeout=T
        ),
        "TABLE_STARTED": lambda: stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Eve"), timeout=T
        ),
        "BAD_MESSAGE": lambda: stubs.channel.unary_unary("/rami.v1.LobbyService/GetTable")(
            b"\xff\xff\xff", timeout=T
        ),
        "BAD_VARIANT": lambda: stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(name="none"), timeout=T
        ),
    }
    met = {}
    for reason, call in sample.items():
        with pytest.raises(grpc.RpcError) as info:
            call()
        err = error_of(info.value)  # which checks its code against errors.proto
        assert (err.reason, err.domain) == (reason, DOMAIN), err
        met[reason] = err.code
    assert met == {reason: error_reasons()[reason] for reason in sample}
    assert len(set(met.values())) == 6  # each kind of refusal a client meets most


def test_a_refused_play_command_carries_the_domain_and_the_documented_code(
    server: ServerThread, stubs: Stubs
) -> None:
    table_id, _, tokens, view = _table(stubs)
    other = 1 - view.turn
    draw = table_service_pb2.ActRequest(number=view.number)
    draw.draw.source = game_pb2.DRAW_SOURCE_STOCK
    stale = table_service_pb2.ActRequest(number=view.number - 1)
    stale.draw.source = game_pb2.DRAW_SOURCE_STOCK
    requests = [
        table_service_pb2.PlayRequest(open=table_service_pb2.WatchRequest(table_id=table_id)),
        table_service_pb2.PlayRequest(act=draw, command_id=1),  # not its turn
        table_service_pb2.PlayRequest(act=stale, command_id=2),
        table_service_pb2.PlayRequest(
            open=table_service_pb2.WatchRequest(table_id=table_id), command_id=3
        ),
    ]
    stream = stubs.table.Play(iter(requests), metadata=md(tokens[other]), timeout=T)
    refused = {}
    try:
        for answer in stream:
            if answer.HasField("refused"):
                refused[answer.refused.command_id] = answer.refused
            if len(refused) == 3:
                break
    finally:
        stream.cancel()
    got = {i: (r.reason, r.domain, r.code) for i, r in refused.items()}
    expected = {
        i: (reason, DOMAIN, error_reasons()[reason].value[0])
        for i, reason in ((1, "NOT_YOUR_TURN"), (2, "STALE"), (3, "NOT_A_COMMAND"))
    }
    assert got == expected
    assert refused[2].metadata["current"] == str(view.number)
