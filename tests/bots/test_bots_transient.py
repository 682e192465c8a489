"""The bot kit resumes after transient failures, whatever code the dying server gave."""

from __future__ import annotations

import asyncio
from itertools import pairwise

import grpc
import pytest

from rami.client.botkit import BotResult, _dropped, _early, _Route


def failure(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


@pytest.mark.parametrize(
    ("code", "details"),
    [
        (grpc.StatusCode.UNAVAILABLE, "Socket closed"),
        (grpc.StatusCode.INTERNAL, "Internal error from Core"),
        (grpc.StatusCode.UNKNOWN, "Stream removed"),
    ],
)
def test_a_transient_failure_resumes_one_update_early(code: grpc.StatusCode, details: str) -> None:
    result = BotResult()
    assert _early(12) == 11 and _early(None) is None
    asyncio.run(_dropped(failure(code, details), result, 5, _early(12)))  # waits, no raise
    assert result.reconnects == 1


def test_a_bot_gives_up_after_its_reconnects_in_a_row_and_on_a_refusal() -> None:
    result = BotResult()
    result.streak = 5
    with pytest.raises(grpc.aio.AioRpcError):
        asyncio.run(_dropped(failure(grpc.StatusCode.INTERNAL, "x"), result, 5, 12))
    with pytest.raises(grpc.aio.AioRpcError):
        asyncio.run(_dropped(failure(grpc.StatusCode.PERMISSION_DENIED, "x"), BotResult(), 5, 3))


def test_a_bots_tries_are_counted_per_outage_not_per_game() -> None:
    """A bot that came back after each of 50 drops in a game is not out of tries at the 51st:
    ``max_reconnects`` bounds the drops in a row, each try's pause growing with them."""
    dropped = failure(grpc.StatusCode.UNAVAILABLE, "server down")
    result = BotResult(reconnects=50)
    asyncio.run(_dropped(dropped, result, 20, _early(7)))  # waits, then resumes
    assert (result.reconnects, result.streak) == (51, 1)
    result.streak = 20  # twenty in a row, nothing in between: it gives up
    with pytest.raises(grpc.aio.AioRpcError):
        asyncio.run(_dropped(dropped, result, 20, 7))


def _moved(owner: str) -> grpc.aio.AioRpcError:
    """UNAVAILABLE/TABLE_MOVED naming ``owner``, as a server that does not hold the table
    answers."""
    from google.protobuf import any_pb2
    from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

    message = f"table t is played by the server at {owner}: call it there"
    detail = any_pb2.Any()
    detail.Pack(
        error_details_pb2.ErrorInfo(
            reason="TABLE_MOVED", domain="rami.v1", metadata={"owner": owner}
        )
    )
    status = status_pb2.Status(code=grpc.StatusCode.UNAVAILABLE.value[0], message=message)
    status.details.append(detail)
    trailing = grpc.aio.Metadata(("grpc-status-details-bin", status.SerializeToString()))
    return grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), trailing, message)


def test_a_bot_sent_back_and_forth_to_a_dead_owner_waits_longer_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """During a takeover the server a bot was given still names the dead owner (its lease
    has not run out), and the dead owner can't be reached: the bot went from one to the other
    every 0.1 s for the whole lease (150 log lines in 8.5 s, from each bot, on the server
    taking the tables over). It waits longer at each hop, and not at all once it gets
    through. (The waits asked for are recorded, not slept: no clock in the test.)"""
    from rami.client import botkit

    waits: list[float] = []

    async def wait(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(botkit.asyncio, "sleep", wait)

    async def main() -> list[list[float]]:
        route = _Route("127.0.0.1:1", None, None)
        hops = []
        try:
            for _ in range(4):  # to the dead owner, and back from it
                waits.clear()
                assert await route.follow(_moved("127.0.0.1:2"))
                assert await route.follow(failure(grpc.StatusCode.UNAVAILABLE, "refused"))
                hops.append(list(waits))
            route.settled()  # the next stream brought an update
            waits.clear()
            assert await route.follow(_moved("127.0.0.1:2"))
            hops.append(list(waits))
        finally:
            await route.close()
        return hops

    hops = [sum(w) for w in asyncio.run(main())]
    assert hops[0] == pytest.approx(0.1), hops  # the first hop at once, then a moment back
    assert all(b > a for a, b in pairwise(hops[:-1])), hops
    assert hops[-2] > 4 * hops[0], hops
    assert hops[-1] == 0, hops  # after getting through, the owner named is gone to at once
