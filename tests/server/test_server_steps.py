"""The step index over the network: TableService.LegalSteps and Act's ``steps``.

A seat that takes any step LegalSteps lists plays legal moves only (whole games of every
variant, every move accepted, the record replays); what LegalSteps lists is the engine's mask
after the staged steps; steps that are not one legal move are refused and change nothing.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from server_support import error_of, md

from rami.engine import Game, Phase
from rami.engine.record import replay_record
from rami.engine.steps import StepState, step_space
from rami.server.table import Table
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

VARIANTS = {
    "portuguese": game_pb2.VARIANT_PORTUGUESE,
    "tallage": game_pb2.VARIANT_TALLAGE,
    "simple": game_pb2.VARIANT_SIMPLE,
}
T = 30


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path / "rami.db")) as srv:
        yield srv


def _table(
    stubs: Stubs, variant: str, bot: str | None = "strong", **options: int
) -> tuple[str, str]:
    """A 2-seat table: a built-in bot (when ``bot``) and, in the other seat, a player; returns
    (table id, the player's token)."""
    made = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=VARIANTS[variant], options=game_pb2.Options(players=2, **options)
        ),
        timeout=T,
    )
    tid = made.table.table_id
    if bot is not None:
        stubs.lobby.AddBot(
            lobby_service_pb2.AddBotRequest(table_id=tid, policy=bot),
            metadata=md(made.owner_token),
            timeout=T,
        )
    joined = stubs.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=tid, name="Stepper"), timeout=T
    )
    return tid, joined.token


def _steps(
    stubs: Stubs, tid: str, token: str, number: int, staged: list[int]
) -> table_service_pb2.LegalStepsResponse:
    return stubs.table.LegalSteps(
        table_service_pb2.LegalStepsRequest(table_id=tid, number=number, staged=staged),
        metadata=md(token),
        timeout=T,
    )


def _act(stubs: Stubs, tid: str, token: str, number: int, steps: list[int]) -> int:
    return stubs.table.Act(
        table_service_pb2.ActRequest(
            table_id=tid, number=number, steps=table_service_pb2.StepsAction(steps=steps)
        ),
        metadata=md(token),
        timeout=T,
    ).number


def _play_by_steps(
    server: ServerThread, stubs: Stubs, variant: str, rng: random.Random
) -> tuple[int, int]:
    """A whole game where one seat takes random steps of those LegalSteps lists (each list
    checked against the engine's mask), against a built-in strong bot; returns (its moves, the
    staging steps they held). Every move is accepted, and the record replays."""
    options = {"rounds": 1} if variant == "portuguese" else {"round_cap": 1}
    tid, token = _table(stubs, variant, **options)
    assert server.server is not None
    table = server.server.lobby.tables[tid]
    moves = staged_steps = 0
    watch = stubs.table.Watch(
        table_service_pb2.WatchRequest(table_id=tid), metadata=md(token), timeout=120
    )
    try:
        for msg in watch:
            if not msg.HasField("update"):
                continue
            view = msg.update.view
            if view.phase == game_pb2.PHASE_GAME_OVER:
                break
            if view.turn != view.seat or view.number < table.state.game_number:
                continue  # not ours, or an update we moved past already
            number, staged = msg.update.number, []
            while True:
                answer = _steps(stubs, tid, token, number, staged)
                game = table.state.game  # ours to move: nothing else changes it now
                assert game is not None
                space = step_space(game.variant.id, game.options)
                assert answer.size == space.size
                # What is listed is the engine's mask after the staged steps, in words.
                state = StepState()
                probe = game.clone()
                for i in staged:
                    space.apply_step(probe, state, i)
                legal = space.legal_steps(probe, state)
                assert [s.index for s in answer.steps] == legal
                assert [s.text for s in answer.steps] == [space.describe(i) for i in legal]
                assert [s.ends_move for s in answer.steps] == [space.ends_move(i) for i in legal]
                step = rng.choice(answer.steps)
                staged.append(step.index)
                if step.ends_move:
                    _act(stubs, tid, token, number, staged)  # raises if refused
                    moves += 1
                    staged_steps += len(staged) - 1
                    break
    finally:
        watch.cancel()
    record = json.loads(
        stubs.table.ExportRecord(
            table_service_pb2.ExportRecordRequest(table_id=tid), timeout=T
        ).record_json
    )
    assert record["complete"]
    replay_record(record)
    return moves, staged_steps


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_seat_taking_any_listed_step_plays_a_whole_legal_game(
    server: ServerThread, variant: str
) -> None:
    rng = random.Random(7)
    with Stubs(server.target) as stubs:
        # The deals are the server's (fair, from fresh entropy): games until one held a move
        # that staged something (tallage and simple; portuguese stages nothing), at most 5.
        for _ in range(5):
            moves, staged = _play_by_steps(server, stubs, variant, rng)
            if moves and (staged or variant == "portuguese"):
                break
        else:
            raise AssertionError("in 5 games the seat never moved, or never staged a step")


def _refused(call: object) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    e = error_of(info.value)
    return e.code, e.reason


def _two_players(server: ServerThread, stubs: Stubs) -> tuple[str, Table, Game, str, str]:
    """A tallage table of two players, started: its id, the table and game on the server, and
    the tokens of the seat to move and of the other."""
    tid, token = _table(stubs, "tallage", bot=None)
    other = stubs.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=tid, name="Other"), timeout=T
    ).token
    assert server.server is not None
    table = server.server.lobby.tables[tid]
    game = table.state.game
    assert game is not None
    first = table.state.seat_of(token) == game.turn
    return tid, table, game, *((token, other) if first else (other, token))


def test_steps_that_are_not_one_legal_move_are_refused_and_change_nothing(
    server: ServerThread,
) -> None:
    with Stubs(server.target) as stubs:
        tid, table, game, mover, waiter = _two_players(server, stubs)
        space = step_space(game.variant.id, game.options)
        number = table.number
        listed = _steps(stubs, tid, mover, number, [])
        legal = [s.index for s in listed.steps]
        assert legal and listed.size == space.size
        ending = next(s.index for s in listed.steps if s.ends_move)
        illegal = next(i for i in range(space.size) if i not in legal)
        failed = grpc.StatusCode.FAILED_PRECONDITION
        # Not the seat's turn: nothing to take, and a move of steps is not its to make.
        assert _steps(stubs, tid, waiter, number, []).steps == []
        assert _steps(stubs, tid, waiter, number, []).size == space.size
        assert _refused(lambda: _act(stubs, tid, waiter, number, [ending])) == (
            failed,
            "NOT_YOUR_TURN",
        )
        for staged in ([illegal], [ending]):
            assert _refused(lambda s=staged: _steps(stubs, tid, mover, number, s)) == (
                failed,
                "ILLEGAL_STEP",
            )
        for steps in ([], [illegal], [ending, ending]):
            assert _refused(lambda s=steps: _act(stubs, tid, mover, number, s)) == (
                failed,
                "ILLEGAL_STEP",
            )
        # A number that is no step of the index is malformed, whoever's turn it is.
        bad = grpc.StatusCode.INVALID_ARGUMENT, "BAD_ACTION"
        past = [space.size + 5]
        for token in (mover, waiter):
            assert _refused(lambda t=token: _steps(stubs, tid, t, number, past)) == bad
            assert _refused(lambda t=token: _act(stubs, tid, t, number, [ending, *past])) == bad
        assert table.number == number  # none of it changed the table
        # A number the table has not reached, and one the game has moved past.
        assert _refused(lambda: _steps(stubs, tid, mover, number + 1, []))[1] == "BAD_NUMBER"
        assert _refused(lambda: _steps(stubs, tid, mover, 0, []))[1] == "BAD_NUMBER"
        assert _act(stubs, tid, mover, number, [ending]) == number + 1
        assert _refused(lambda: _steps(stubs, tid, mover, number, [])) == (
            grpc.StatusCode.ABORTED,
            "STALE",
        )
        # Its words are a question's: LegalSteps decides nothing.
        with pytest.raises(grpc.RpcError) as info:
            _steps(stubs, tid, mover, number, [])
        assert info.value.details().startswith(
            f"these steps were asked for update {number}, but the game changed"
        ), info.value.details()


def test_legal_steps_needs_a_seat_and_a_started_game(server: ServerThread) -> None:
    with Stubs(server.target) as stubs:
        made = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                variant=game_pb2.VARIANT_SIMPLE, options=game_pb2.Options(players=2)
            ),
            timeout=T,
        )
        tid = made.table.table_id
        joined = stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=tid, name="Early"), timeout=T
        )
        assert _refused(lambda: _steps(stubs, tid, joined.token, 0, []))[1] == "NOT_STARTED"
        assert (
            _refused(
                lambda: stubs.table.LegalSteps(
                    table_service_pb2.LegalStepsRequest(table_id=tid), timeout=T
                )
            )[1]
            == "NO_TOKEN"
        )


def test_a_move_of_steps_is_charged_to_the_clients_server_time(tmp_path: Path) -> None:
    """Checking a move of steps is the LegalSteps work again (tens of steps, each checked
    against the legal ones, on the table's task): it counts against the client's server time
    as LegalSteps does, and is refused RATE_LIMITED, changing nothing, while that is spent.
    A move sent as an action costs no server time."""
    with (
        ServerThread(str(tmp_path / "rami.db"), work_share=1e-6, work_burst=0.0) as server,
        Stubs(server.target) as stubs,
    ):
        tid, table, game, mover, _ = _two_players(server, stubs)
        space = step_space(game.variant.id, game.options)
        ending = next(
            s for s in space.legal_steps(game, space.stage(game, [])) if space.ends_move(s)
        )
        number = table.number
        assert _refused(lambda: _act(stubs, tid, mover, number, [ending])) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "RATE_LIMITED",
        )
        assert table.number == number
        move = table_service_pb2.ActRequest(table_id=tid, number=number)
        if game.phase == Phase.DRAW:
            move.draw.source = game_pb2.DRAW_SOURCE_STOCK
        else:  # the dealer's first turn: a discard
            move.discard.card = int(game.hands[game.turn][-1]) + 1
        assert stubs.table.Act(move, metadata=md(mover), timeout=T).number == number + 1


def test_every_legal_steps_call_spends_the_clients_server_time(tmp_path: Path) -> None:
    """A LegalSteps call costs the server more than its step search (gRPC's handling, the
    read, the answer), and one off the seat's turn searches nothing: a client that floods
    the call, on its turn or off it, still meets its share of the server's time and is
    refused RATE_LIMITED, where before only the search was counted and such a flood took
    two thirds of a core unrefused."""
    with (
        ServerThread(str(tmp_path / "rami.db"), work_share=0.002, work_burst=0.01) as server,
        Stubs(server.target) as stubs,
    ):
        tid, table, _, _, waiter = _two_players(server, stubs)
        codes = []
        for _ in range(400):  # some 35 fit the burst
            try:
                _steps(stubs, tid, waiter, table.number, [])
            except grpc.RpcError as e:
                codes.append((e.code(), error_of(e).reason))
                break
        assert codes == [(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")], codes
