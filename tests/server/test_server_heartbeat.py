"""A stream on which nothing happens gets heartbeats (the test server's interval is half a
second), each with the table's latest number."""

from __future__ import annotations

import itertools
import time

from rami.server.testing import ServerThread, Stubs
from rami.v1 import game_pb2, lobby_service_pb2, table_service_pb2


def test_a_quiet_stream_gets_a_heartbeat_every_interval(server: ServerThread, stubs: Stubs) -> None:
    created = stubs.lobby.CreateTable(
        lobby_service_pb2.CreateTableRequest(
            variant=game_pb2.VARIANT_SIMPLE, options=game_pb2.Options(players=2)
        )
    )
    table_id = created.table.table_id
    stream = stubs.table.Watch(table_service_pb2.WatchRequest(table_id=table_id), timeout=10)
    first = next(stream)
    assert first.update.snapshot
    start, beats = time.monotonic(), []
    for msg in stream:
        assert msg.WhichOneof("kind") == "heartbeat"
        assert msg.heartbeat.number == first.update.number
        beats.append(time.monotonic() - start)
        if len(beats) == 4:
            break
    stream.cancel()
    # Four beats of a 0.5 s interval: one per interval, not more often, and none after a
    # silence of much more than the interval (generous bounds: the machine may be busy).
    assert beats[0] < 1.5
    gaps = [b - a for a, b in itertools.pairwise(beats)]
    assert all(0.35 < g < 1.5 for g in gaps), gaps
