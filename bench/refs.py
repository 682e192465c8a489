"""The references: bare grpc.aio servers doing what the Rami server does, and nothing else.

- ``echo``: a unary echo (the issue's reference for commands);
- ``broadcast``: a server stream broadcasting to subscribers in groups, as fast as their
  queues drain (the issue's reference for delivery);
- ``relay``: the shape of a Play stream without the game: in each group of ``per-group``
  bidirectional streams, the member whose turn it is sends a message and the server relays
  it to every member of the group; the next member then sends (what bounds delivery when
  every update is made by a command, one at a time per table);
- ``hold``: server streams that send one message and stay open (what an idle watcher's
  stream costs the library, the bound of memory per watcher).

They are what bounds the Rami server on this machine: the same gRPC library and event loop.
Messages are raw bytes (no protobuf at all), so the references pay no parsing or building.
Run as a process of its own, like the Rami server::

    python -m bench.refs echo --port 0         # prints "port N" once listening
    python -m bench.refs broadcast --port 0 --size 600 --groups 100 --per-group 4
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator

import grpc

__all__ = [
    "BROADCAST_METHOD",
    "ECHO_METHOD",
    "HOLD_METHOD",
    "RELAY_METHOD",
    "SERVER_OPTIONS",
    "relay_message",
]

ECHO_METHOD = "/bench.Echo/Echo"
BROADCAST_METHOD = "/bench.Broadcast/Subscribe"
RELAY_METHOD = "/bench.Relay/Join"
HOLD_METHOD = "/bench.Hold/Subscribe"
#: The options of the reference servers: gRPC's defaults, as most services run.
SERVER_OPTIONS: list[tuple[str, int]] = []


async def _echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
    return request


class Broadcast:
    """Subscribers in groups (a group is like a table): one producer puts each message on the
    bounded queue of every subscriber of a group, group after group, as fast as the queues
    drain. A subscriber's stream yields what its queue holds."""

    def __init__(self, size: int, groups: int, per_group: int, queue: int = 256) -> None:
        self.payload = b"x" * size
        self.groups: list[list[asyncio.Queue[bytes]]] = [[] for _ in range(groups)]
        self.per_group = per_group
        self.queue = queue
        self.ready = asyncio.Event()
        self.produced = 0

    async def subscribe(
        self, request: bytes, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        group = self.groups[int(request.decode()) % len(self.groups)]
        q: asyncio.Queue[bytes] = asyncio.Queue(self.queue)
        group.append(q)
        if all(len(g) >= self.per_group for g in self.groups):
            self.ready.set()
        try:
            while True:
                yield await q.get()
        finally:
            group.remove(q)

    async def produce(self) -> None:
        await self.ready.wait()
        payload = self.payload
        while True:
            for group in self.groups:
                for q in group:
                    if q.full():
                        await q.put(payload)  # back-pressure: wait for that subscriber
                    else:
                        q.put_nowait(payload)
                self.produced += 1
                # Let the streams send, as a server does between commands.
                await asyncio.sleep(0)


class Relay:
    """Groups of bidirectional streams: a stream's first message names its group; every later
    message is put on the queue of each stream of that group, whose stream yields it. Once a
    group is full, the server sends its members a first message (a table that starts)."""

    def __init__(self, size: int, per_group: int) -> None:
        self.payload = relay_message(0, size)
        self.groups: dict[bytes, list[asyncio.Queue[bytes]]] = {}
        self.per_group = per_group

    async def join(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        name = await anext(requests)
        q: asyncio.Queue[bytes] = asyncio.Queue()
        group = self.groups.setdefault(name, [])
        group.append(q)
        if len(group) == self.per_group:
            for member in group:
                member.put_nowait(self.payload)

        async def relay() -> None:
            async for message in requests:
                for member in group:
                    member.put_nowait(message)

        task = asyncio.create_task(relay())
        try:
            while True:
                yield await q.get()
        finally:
            task.cancel()
            group.remove(q)


def relay_message(step: int, size: int) -> bytes:
    """A relayed message: its step (which member sends next) and padding to ``size`` bytes."""
    return step.to_bytes(8, "big") + b"x" * max(0, size - 8)


async def _hold(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    yield request
    await asyncio.Event().wait()


async def main_async(args: argparse.Namespace) -> None:
    server = grpc.aio.server(options=SERVER_OPTIONS)
    producer = None
    if args.kind == "echo":
        handler = grpc.method_handlers_generic_handler(
            "bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(_echo)}
        )
    elif args.kind == "relay":
        r = Relay(args.size, args.per_group)
        handler = grpc.method_handlers_generic_handler(
            "bench.Relay", {"Join": grpc.stream_stream_rpc_method_handler(r.join)}
        )
    elif args.kind == "hold":
        handler = grpc.method_handlers_generic_handler(
            "bench.Hold", {"Subscribe": grpc.unary_stream_rpc_method_handler(_hold)}
        )
    else:
        b = Broadcast(args.size, args.groups, args.per_group)
        handler = grpc.method_handlers_generic_handler(
            "bench.Broadcast", {"Subscribe": grpc.unary_stream_rpc_method_handler(b.subscribe)}
        )
        producer = b.produce
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port(f"127.0.0.1:{args.port}")
    await server.start()
    task = asyncio.create_task(producer()) if producer else None
    print(f"port {port}", flush=True)
    # Until stdin closes (the bench's way of saying stop) or the process is terminated.
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    if task:
        task.cancel()
    await server.stop(0)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.refs")
    parser.add_argument("kind", choices=("echo", "broadcast", "relay", "hold"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--size", type=int, default=600, help="broadcast message bytes")
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--per-group", type=int, default=4)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
