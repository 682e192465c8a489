"""The bot kit resumes after transient failures, whatever code the dying server gave."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from rami.client.botkit import BotResult, _dropped, _early


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
