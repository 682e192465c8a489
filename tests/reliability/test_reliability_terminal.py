"""Terminal safety: names, table names and chat that carry escape sequences never reach a
client raw.

- The server cleans them: every string of every answer, update and record a client receives
  is free of escape sequences and of control and format characters (a property over random
  text, then the real API with hostile names and chat).
- The client cleans them again: against a server that lets them through, the real terminal
  client (driven through a pipe, as a person at a terminal) shows the words and never writes
  the sequences to the terminal.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from client_harness import Driver
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from hypothesis import given, settings
from hypothesis import strategies as st
from server_support import RPC_TIMEOUT, VARIANTS, md

import rami.server.lobby
import rami.server.services
from rami.client import cli
from rami.client.look import Look
from rami.server.sanitize import MAX_CHAT, clean_text
from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2

T = RPC_TIMEOUT
OSC_TITLE = "\x1b]0;PWNED\x07"
TRUECOLOR = "\x1b[38;2;1;2;3m"
HOSTILE = [
    OSC_TITLE,
    "\x1b]8;;http://evil.invalid\x1b\\link\x1b]8;;\x1b\\",
    "\x1b[2J",
    TRUECOLOR,
    "\x9b2J",
    "\x1bP1$qm\x1b\\",
    "\x07",
    "\x08",
    "\r",
    "\u202e",
    "\u200b",
    "\x1b[6n",
]


def unsafe(text: str) -> list[str]:
    """Characters of ``text`` a terminal could act on: controls, formats, line separators."""
    return [ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")]


def strings(msg: Message) -> Iterator[str]:
    """Every string field anywhere in a message."""
    for fd, value in msg.ListFields():
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            if fd.message_type.GetOptions().map_entry:
                for k, v in value.items():
                    yield str(k)
                    if isinstance(v, Message):
                        yield from strings(v)
                    else:
                        yield str(v)
            else:
                for item in value if fd.is_repeated else [value]:
                    yield from strings(item)
        elif fd.type == FieldDescriptor.TYPE_STRING:
            yield from (value if fd.is_repeated else [value])


def json_strings(doc: Any) -> Iterator[str]:
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield k
            yield from json_strings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from json_strings(v)


PIECES = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=8))


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(st.lists(PIECES, max_size=12), st.integers(1, MAX_CHAT))
def test_clean_text_leaves_nothing_a_terminal_acts_on(pieces: list[str], limit: int) -> None:
    text = "".join(pieces)
    out = clean_text(text, limit)
    assert not unsafe(out) and "\x1b" not in out and "PWNED" not in out
    assert len(out) <= limit and out == out.strip()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    db = str(tmp_path / "terminal.db")
    with ServerThread(db, chat_per_second=100.0, chat_burst=100.0) as srv:
        yield srv


def test_no_answer_update_or_record_carries_an_escape(server: ServerThread) -> None:
    stubs = Stubs(server.target)
    seen: list[str] = []
    try:
        created = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name=f"Tab{TRUECOLOR}le\x9b2J",
                variant=VARIANTS["portuguese"],
                options=game_pb2.Options(players=3, rounds=1),
            ),
            timeout=T,
        )
        table_id = created.table.table_id
        watch = stubs.table.Watch(table_service_pb2.WatchRequest(table_id=table_id), timeout=T)
        answers: list[Message] = [created]
        tokens = []
        for seat, name in enumerate((f"{OSC_TITLE}Eve", "Ana\u202e\r\nBob\x07")):
            joined = stubs.lobby.JoinTable(
                lobby_service_pb2.JoinTableRequest(table_id=table_id, name=name, seat=seat),
                timeout=T,
            )
            answers.append(joined)
            tokens.append(joined.token)
        answers.append(
            stubs.lobby.AddBot(
                lobby_service_pb2.AddBotRequest(
                    table_id=table_id, policy="greedy", name=f"\x1b[2JBot{TRUECOLOR}"
                ),
                metadata=md(created.owner_token),
                timeout=T,
            )
        )
        for piece in HOSTILE:
            stubs.table.Chat(
                table_service_pb2.ChatRequest(table_id=table_id, text=f"hi {piece} there"),
                metadata=md(tokens[0]),
                timeout=T,
            )
        answers.append(stubs.lobby.ListTables(lobby_service_pb2.ListTablesRequest(), timeout=T))
        answers.append(
            stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T)
        )
        chats = 0
        for msg in watch:
            answers.append(msg)
            chats += sum(1 for e in msg.update.events if e.HasField("chat_posted"))
            if chats == len(HOSTILE):
                break
        watch.cancel()
        record = stubs.table.ExportRecord(
            table_service_pb2.ExportRecordRequest(table_id=table_id), timeout=T
        )
        for answer in answers:
            seen += strings(answer)
        seen += json_strings(json.loads(record.record_json))
    finally:
        stubs.channel.close()
    text = "\n".join(seen)
    assert "Eve" in text and "hi there" in text and "Bot" in text
    for s in seen:
        assert not unsafe(s), repr(s)
    assert "PWNED" not in text and "evil" not in text


def test_the_client_never_writes_what_a_server_lets_through(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server that cleans nothing: what the client shows is up to the client alone.
    def raw(text: str, limit: int | None = None) -> str:
        return text[:limit]

    def raw_name(text: str, limit: int, what: str, *, required: bool) -> str:
        return text[:limit]

    monkeypatch.setattr(rami.server.services, "clean_text", raw)
    monkeypatch.setattr(rami.server.services, "clean_name", raw_name)
    monkeypatch.setattr(rami.server.lobby, "clean_name", raw_name)
    stubs = Stubs(server.target)
    driver: Driver | None = None
    try:
        created = stubs.lobby.CreateTable(
            lobby_service_pb2.CreateTableRequest(
                name=f"Tab{TRUECOLOR}le\x9b2J",
                variant=VARIANTS["portuguese"],
                options=game_pb2.Options(players=2, rounds=1),
            ),
            timeout=T,
        )
        table_id = created.table.table_id
        eve = stubs.lobby.JoinTable(
            lobby_service_pb2.JoinTableRequest(table_id=table_id, name=f"{OSC_TITLE}Eve", seat=1),
            timeout=T,
        )
        info = stubs.lobby.GetTable(lobby_service_pb2.GetTableRequest(table_id=table_id), timeout=T)
        assert OSC_TITLE in info.table.seats[1].name  # the name goes out as it came in
        driver = Driver(
            lambda: cli._connect(server.target, "Ana", Look(color=True, ascii=False), None)
        ).start()
        driver.expect(r"Connected to 127\.0\.0\.1")
        driver.expect(r"Eve")
        driver.type("join 1")
        driver.expect(r"You sit at seat 0")
        # The hand is drawn from the stream's first update: chat posted from now on reaches it
        # (a chat line is live news, not part of the snapshot a stream opens with).
        driver.expect(r"Hand ")
        for piece in HOSTILE:
            stubs.table.Chat(
                table_service_pb2.ChatRequest(table_id=table_id, text=f"hi {piece} there"),
                metadata=md(eve.token),
                timeout=T,
            )
        for _ in HOSTILE:
            driver.expect(r"Eve: hi[^\n]*there")
        raw_screen = driver.screen.raw()
    finally:
        if driver is not None:
            driver.close()
        stubs.channel.close()
    for bad in (OSC_TITLE, "PWNED", "evil", TRUECOLOR, "\x9b", "\x1bP", "\u202e", "\u200b"):
        assert bad not in raw_screen, repr(bad)


def test_clean_text_keeps_accents_but_not_a_pile_of_combining_marks() -> None:
    assert (
        clean_text("Z" + "\u0338" * 7 + "oe\u0302\u0323") == "Z" + "\u0338" * 3 + "oe\u0302\u0323"
    )
    assert clean_text("e\u0301" * 3) == "e\u0301" * 3  # one accent on each letter: all kept
    # Characters dropped between them do not start a new pile.
    assert clean_text("a" + ("\u0301" * 3 + "\u200b\u3164") * 5) == "a" + "\u0301" * 3


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("\x1bPq#0;2;0;0;0\x1b\\dcs", "dcs"),  # DCS (sixel), to its string terminator
        ("\x1b_app\x1b\\ok", "ok"),  # APC
        ("\x1b^pm\x9cok", "ok"),  # PM, ended by the 8-bit ST
        ("\x9b31mok", "ok"),  # CSI by its 8-bit introducer
        ("\x9b2J\x9b31mX", "X"),
        ("\x9d0;title\x07ok", "ok"),  # OSC by its 8-bit introducer
        ("\x1b(0lqqk", "lqqk"),  # a character set chosen (ESC ( 0): the drawing letters stay
        ("\x1b#8ok", "ok"),  # DEC screen alignment
        ("a\x1b7b\x1b8c", "abc"),  # cursor saved and restored
        ("hi \x1b[31", "hi"),  # a CSI cut off by the text's end: its parameters go too
    ],
)
def test_escape_sequences_are_dropped_whole_not_their_introducer_alone(
    text: str, kept: str
) -> None:
    """Only the introducer went: a DCS's body, an 8-bit CSI's parameters ("31m") stayed as
    visible text (found by an outside attack)."""
    assert clean_text(text) == kept
