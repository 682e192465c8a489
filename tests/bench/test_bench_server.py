"""The server the bench loads runs as rami-server does, with the bounds a load from one
address would hit lifted (bench.rami_server)."""

from __future__ import annotations

import asyncio
import os
import tempfile

import grpc

from bench.procs import child
from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc

#: The scaling load's burst: its 1,000 tables created at once over one connection (more than
#: the 256 calls one connection may have open on a rami-server).
BURST = 600


def test_the_bench_server_takes_the_scaling_loads_burst_on_one_connection() -> None:
    async def burst(target: str) -> list[BaseException | None]:
        async with grpc.aio.insecure_channel(target) as channel:
            await channel.channel_ready()
            lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)

            async def create() -> None:
                await lobby.CreateTable(
                    lobby_service_pb2.CreateTableRequest(
                        variant=game_pb2.VARIANT_TALLAGE, options=game_pb2.Options(players=4)
                    ),
                    timeout=60,
                )

            return await asyncio.gather(*(create() for _ in range(BURST)), return_exceptions=True)

    with (
        tempfile.TemporaryDirectory() as tmp,
        child("bench.rami_server", "--db", os.path.join(tmp, "burst.db")) as server,
    ):
        results = asyncio.run(burst(server.target))
    failed = [r for r in results if r is not None]
    assert not failed, f"{len(failed)} of {BURST} refused, the first: {failed[0]}"
