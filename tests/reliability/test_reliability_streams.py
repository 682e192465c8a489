"""Play streams under hostile input, and names that could pass for someone else (issue 12:
defects 5, 6 and 11). Every stream runs against a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import grpc
import pytest
from server_support import RPC_TIMEOUT, error_of

from rami.server import services
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

PLAY = "/rami.v1.TableService/Play"
JUNK = b"\xff\xff\xff\xff"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path / "rami.db"), opening_streams_per_client=2) as srv:
        yield srv


def seated_table(stubs: Stubs) -> tuple[str, str]:
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=game_pb2.VARIANT_TALLAGE, options=game_pb2.Options(players=2)
        ),
        timeout=RPC_TIMEOUT,
    )
    table_id = created.table.table_id
    token = stubs.lobby.JoinTable(
        lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Ana"), timeout=RPC_TIMEOUT
    ).token
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id, policy="greedy"),
        metadata=(("rami-token", token),),
        timeout=RPC_TIMEOUT,
    )
    return table_id, token


async def raw_play(
    target: str,
    messages: list[bytes],
    token: str | None = None,
    hold: float = 0.0,
    until: Callable[[list[table_service_pb2.PlayResponse]], bool] | None = None,
) -> tuple[list[table_service_pb2.PlayResponse], grpc.aio.AioRpcError | None]:
    """A Play stream that sends ``messages`` as raw bytes, then holds for ``hold`` seconds;
    every response it got, and how it ended (or, when ``until`` says the responses so far
    are enough, those responses: an open stream otherwise runs to its 20 s deadline)."""
    async with grpc.aio.insecure_channel(target) as channel:
        play = channel.stream_stream(
            PLAY,
            request_serializer=lambda b: b,
            response_deserializer=table_service_pb2.PlayResponse.FromString,
        )

        async def requests() -> AsyncIterator[bytes]:
            for m in messages:
                yield m
                await asyncio.sleep(0.05)
            await asyncio.sleep(hold)

        metadata = (("rami-token", token),) if token else ()
        call = play(requests(), metadata=metadata, timeout=20)
        got = []
        try:
            async for response in call:
                got.append(response)
                if until is not None and until(got):
                    call.cancel()
                    break
        except grpc.aio.AioRpcError as e:
            return got, e
        return got, None


def opening(table_id: str) -> bytes:
    return table_service_pb2.PlayRequest(
        open=table_service_pb2.WatchRequest(table_id=table_id)
    ).SerializeToString()


def test_undecodable_bytes_as_a_watch_request_are_bad_message_with_no_traceback(
    server: ServerThread, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with Stubs(server.target) as stubs:
        seated_table(stubs)  # a table to watch, were the bytes to be read as one
        watch = stubs.channel.unary_stream("/rami.v1.TableService/Watch")
        with pytest.raises(grpc.RpcError) as raised:
            list(watch(JUNK, timeout=RPC_TIMEOUT))
    err = error_of(raised.value)
    assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_MESSAGE")
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("rami"))
    assert "Traceback" not in logged and "unexpected" not in logged


def test_undecodable_bytes_first_on_a_play_stream_are_bad_message_with_no_traceback(
    server: ServerThread, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    got, error = asyncio.run(raw_play(server.target, [JUNK]))
    assert error is not None and not got
    err = error_of(error)
    assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "BAD_MESSAGE")
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("rami"))
    assert "Traceback" not in logged and "unexpected" not in logged


def test_after_open_a_bad_message_is_refused_and_the_stream_goes_on(
    server: ServerThread,
) -> None:
    with Stubs(server.target) as stubs:
        table_id, token = seated_table(stubs)
    chat_like = table_service_pb2.PlayRequest(
        command_id=7, act=table_service_pb2.ActRequest(table_id="other")
    ).SerializeToString()
    got, _ = asyncio.run(
        raw_play(
            server.target,
            [opening(table_id), JUNK, chat_like],
            token,
            hold=0.3,
            until=lambda got: sum(r.HasField("refused") for r in got) == 2,
        )
    )
    refusals = [r.refused for r in got if r.HasField("refused")]
    assert [r.reason for r in refusals] == ["BAD_MESSAGE", "OTHER_TABLE"]
    # The command after the bad bytes was answered: the stream kept taking commands.
    assert refusals[1].command_id == 7


def test_a_play_stream_that_never_opens_is_ended_and_such_streams_are_few(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services, "OPEN_WITHIN", 0.5)

    async def main() -> list[tuple[grpc.StatusCode, str]]:
        started = time.monotonic()
        results = await asyncio.gather(*(raw_play(server.target, [], hold=5.0) for _ in range(3)))
        assert time.monotonic() - started < 4.0  # none was kept until its own end
        out = []
        for got, error in results:
            assert error is not None and not got
            err = error_of(error)
            out.append((err.code, err.reason))
        return out

    answers = sorted(asyncio.run(main()), key=str)
    assert (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS") in answers
    assert answers.count((grpc.StatusCode.INVALID_ARGUMENT, "OPEN_FIRST")) == 2


def _table_with_a_bot(stubs: Stubs, players: int, bot: str) -> str:
    """A waiting tallage table of ``players`` seats with a strong bot called ``bot``: its id."""
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=game_pb2.VARIANT_TALLAGE, options=game_pb2.Options(players=players)
        ),
        timeout=RPC_TIMEOUT,
    )
    table_id = created.table.table_id
    stubs.lobby.AddBot(
        lobby_service_pb2.AddBotRequest(table_id=table_id, policy="strong", name=bot),
        metadata=(("rami-token", created.owner_token),),
        timeout=RPC_TIMEOUT,
    )
    return table_id


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("Strong bot 2", "BAD_NAME"),
        ("strong  BOT 2", "BAD_NAME"),
        ("ＳＴＲＯＮＧ bot 2", "BAD_NAME"),
        ("greedy bot 7", "BAD_NAME"),
        ("\u0405trong bot 2", "BAD_NAME"),  # Cyrillic Ѕ
        ("Strong b\u043et 2", "BAD_NAME"),  # Cyrillic о
        ("Gr\u0435\u0435dy bot 3", "BAD_NAME"),  # Cyrillic е
        ("Rand\u03bfm bot 4", "BAD_NAME"),  # Greek ο
        ("S\u0306trong bot 2", "BAD_NAME"),  # a combining breve
        ("L\u03c5cky", "NAME_TAKEN"),  # Greek υ
        ("STRO\u039dG BOT 2", "BAD_NAME"),  # Greek capital Ν
        ("RANDO\u039c BOT 1", "BAD_NAME"),  # Greek capital Μ
        ("GREED\u03a5 BOT 1", "BAD_NAME"),  # Greek capital Υ
        ("LUCK\u03a5", "NAME_TAKEN"),
        ("Greed\u03b3 bot 1", "BAD_NAME"),  # Greek γ
        ("R\u0430\u043fdom bot 1", "BAD_NAME"),  # Cyrillic а, п
        ("Strong b\u0585t 2", "BAD_NAME"),  # Armenian օ
        ("R\u0251ndom bot 1", "BAD_NAME"),  # Latin alpha
        ("\ua731trong bot 2", "BAD_NAME"),  # small capital s
        ("\u13datrong bot 2", "BAD_NAME"),  # Cherokee Ꮪ
        ("\u13d5trong bot 2", "BAD_NAME"),  # Cherokee Ꮥ
        ("\u10bdtrong bot 2", "BAD_NAME"),  # Georgian Ⴝ
        ("St\u0433ong bot 2", "BAD_NAME"),  # Cyrillic г
        ("Strong \u042cot 2", "BAD_NAME"),  # Cyrillic Ь
        ("Strong b\u2c9ft 2", "BAD_NAME"),  # Coptic ⲟ
        ("Lu\u03f2ky", "NAME_TAKEN"),  # Greek lunate sigma
        ("L\u057dcky", "NAME_TAKEN"),  # Armenian ս
        ("\u3164", "BAD_NAME"),
        ("\u115f\u1160", "BAD_NAME"),
        ("\u2800\u2800\u2800", "BAD_NAME"),
        ("Lucky", "NAME_TAKEN"),
        ("Random bot 1\u0301", "BAD_NAME"),  # an accent on a digit
        ("Strong bot 2\u0303\u0303", "BAD_NAME"),
        ("\u0301Greedy bot 1", "BAD_NAME"),  # an accent on nothing
        ("Lucky \u0301", "NAME_TAKEN"),
        ("\u0301\u0301\u0301", "BAD_NAME"),  # accents alone: no letter, no digit
        ("\u0301", "BAD_NAME"),
        ("a" + "\u0301" * 30, "BAD_NAME"),  # a pile of accents is refused, never cut
        ("Ana" + "\u0308" * 4, "BAD_NAME"),
    ],
)
def test_names_that_show_nothing_or_pass_for_a_bot_are_refused(
    server: ServerThread, name: str, reason: str
) -> None:
    with Stubs(server.target) as stubs:
        table_id = _table_with_a_bot(stubs, 3, "Lucky")
        with pytest.raises(grpc.RpcError) as info:
            stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name),
                timeout=RPC_TIMEOUT,
            )
        assert error_of(info.value).reason == reason
        # A name that only looks like one of theirs is fine.
        stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name="Strongbow"),
            timeout=RPC_TIMEOUT,
        )


def test_names_that_only_look_alike_in_other_scripts_are_two_names(server: ServerThread) -> None:
    # राम and रमा differ by their vowel signs: a bot called राम leaves रमा free; a name taken
    # is refused with the bot's name.
    with Stubs(server.target) as stubs:
        table_id = _table_with_a_bot(stubs, 4, "राम")
        for name in ("रमा", "रीमा"):
            stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name),
                timeout=RPC_TIMEOUT,
            )
        with pytest.raises(grpc.RpcError) as info:
            stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name="\u0930\u093e\u092e"),
                timeout=RPC_TIMEOUT,
            )
        assert error_of(info.value).reason == "NAME_TAKEN"
        assert "'राम'" in info.value.details()
