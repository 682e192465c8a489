"""Responses encoded in parts (``rami.server.wire``) parse as the messages built whole."""

from __future__ import annotations

import pytest

from rami.server.wire import ACT_VIEW, UPDATE, UPDATE_VIEW, encode, message_field
from rami.v1 import cards_pb2, events_pb2, game_pb2, table_service_pb2


def _view(cards: int) -> game_pb2.View:
    return game_pb2.View(
        table_id="t1",
        number=7,
        seat=0,
        hand=[cards_pb2.Card.Value("CARD_JOKER")] * cards,
        players=[game_pb2.PlayerState(seat=i, name=f"p{i}") for i in range(4)],
    )


@pytest.mark.parametrize("cards", [0, 1, 60, 200, 20_000])  # lengths of 1, 2 and 3 varint bytes
def test_a_message_field_wraps_an_encoded_message_as_the_library_does(cards: int) -> None:
    view = _view(cards)
    whole = table_service_pb2.ActResponse(number=9, view=view).SerializeToString()
    head = table_service_pb2.ActResponse(number=9).SerializeToString()
    assert head + message_field(ACT_VIEW, view.SerializeToString()) == whole


def test_an_update_in_parts_is_the_same_response_on_watch_and_play_streams() -> None:
    view = _view(14)
    events = [events_pb2.Event(chat_posted=events_pb2.ChatPosted(seat=1, text="hi"))]
    head = table_service_pb2.Update(number=3, events=events).SerializeToString()
    data = message_field(UPDATE, head + message_field(UPDATE_VIEW, view.SerializeToString()))
    update = table_service_pb2.Update(number=3, events=events, view=view)
    assert table_service_pb2.WatchResponse.FromString(data) == table_service_pb2.WatchResponse(
        update=update
    )
    acked = data + table_service_pb2.PlayResponse(accepted=5).SerializeToString()
    assert table_service_pb2.PlayResponse.FromString(acked) == table_service_pb2.PlayResponse(
        update=update, accepted=5
    )


def test_the_serializer_sends_bytes_as_they_are_and_encodes_messages() -> None:
    msg = table_service_pb2.Heartbeat(number=4)
    assert encode(msg) == msg.SerializeToString()
    assert encode(b"\x08\x04") == b"\x08\x04"


@pytest.mark.parametrize("cards", [0, 1, 40, 60, 200, 8_000, 20_000])
@pytest.mark.parametrize("events", [0, 1, 30])
def test_an_encoded_update_is_the_response_built_whole(cards: int, events: int) -> None:
    # convert.encode_update nests message_field (and encode_updates makes every watcher's
    # item with it): the bytes are the library's encoding of the whole response, whatever
    # the view's and the events' sizes (lengths of one, two and three bytes).
    from rami.server.convert import encode_update, encode_updates

    view = _view(cards)
    chat = [events_pb2.Event(chat_posted=events_pb2.ChatPosted(seat=1, text="hi"))] * events
    head = table_service_pb2.Update(number=3, events=chat).SerializeToString()
    whole = table_service_pb2.WatchResponse(
        update=table_service_pb2.Update(number=3, events=chat, view=view)
    ).SerializeToString()
    assert encode_update(head, view.SerializeToString()) == whole
    assert encode_updates(4, head, {0: view.SerializeToString(), None: b""}) == {
        0: (4, whole),
        None: (4, encode_update(head, b"")),
    }
