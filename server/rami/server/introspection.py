"""What generic gRPC tools (grpcurl, buf curl, grpc-health-probe) ask of any server: health
checking with Check, Watch and List, and server reflection in both its versions, the current
``grpc.reflection.v1`` and the older ``v1alpha``.

grpcio-health-checking's servicer has no List (its base answers UNIMPLEMENTED and gRPC logs a
traceback), and grpcio-reflection serves v1alpha only: this module adds what they lack, and
bounds the streams of both (Watch, reflection) per client address, as the game's are bounded.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from .errors import status_of
from .limits import StreamCounter, client_address
from .refusals import Exhausted

__all__ = [
    "HEALTH",
    "REFLECTION_V1",
    "REFLECTION_V1ALPHA",
    "HealthServicer",
    "add_health",
    "add_reflection",
]

HEALTH: str = health.SERVICE_NAME
REFLECTION_V1ALPHA: str = reflection.SERVICE_NAME
REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"

_V1_FILE = "grpc/reflection/v1/reflection.proto"
_V1_PACKAGE = "grpc.reflection.v1"
_ServingStatus = health_pb2.HealthCheckResponse.ServingStatus


class HealthServicer(health.aio.HealthServicer):
    """grpcio-health-checking's servicer (Check and Watch), with List: the status of the server
    (``""``) and of every service it has set, as Check would answer each. One client address
    may hold at most ``streams_per_client`` Watch streams open at once."""

    def __init__(self, streams_per_client: int = 16) -> None:
        super().__init__()
        self._statuses: dict[str, _ServingStatus] = {"": health_pb2.HealthCheckResponse.SERVING}
        self._shutting_down = False
        self._watches = StreamCounter(streams_per_client, "health Watch streams per client")

    async def Watch(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> None:
        async with _counted(self._watches, context):
            await super().Watch(request, context)

    async def set(self, service: str, status: _ServingStatus) -> None:
        if self._shutting_down:
            return  # as the base does: after a graceful shutdown, nothing changes
        await super().set(service, status)
        self._statuses[service] = status

    async def enter_graceful_shutdown(self) -> None:
        self._shutting_down = True
        await super().enter_graceful_shutdown()
        for service in self._statuses:
            self._statuses[service] = health_pb2.HealthCheckResponse.NOT_SERVING

    async def List(
        self, request: health_pb2.HealthListRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthListResponse:
        return health_pb2.HealthListResponse(
            statuses={
                service: health_pb2.HealthCheckResponse(status=status)
                for service, status in self._statuses.items()
            }
        )


class _Reflection(reflection.aio.ReflectionServicer):
    """grpcio-reflection's servicer, one client address holding at most ``streams`` of its
    streams open at once."""

    def __init__(self, names: Iterable[str], streams: int) -> None:
        super().__init__(names)
        self._streams = StreamCounter(streams, "reflection streams per client")

    async def ServerReflectionInfo(  # type: ignore[override]
        self,
        request_iterator: AsyncIterable[reflection_pb2.ServerReflectionRequest],
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[reflection_pb2.ServerReflectionResponse]:
        async with _counted(self._streams, context):
            async for answer in super().ServerReflectionInfo(request_iterator, context):
                yield answer


@contextlib.asynccontextmanager
async def _counted(
    streams: StreamCounter, context: grpc.aio.ServicerContext
) -> AsyncIterator[None]:
    """One more of the client address's ``streams`` while the block runs; refused with
    RESOURCE_EXHAUSTED TOO_MANY_STREAMS when it holds as many as it may. An open stream
    keeps its connection from being idle, and holds the server's memory: without a bound
    one address could open them by the thousand."""
    key = client_address(context)
    try:
        streams.open(key)
    except Exhausted as e:
        await context.abort_with_status(status_of(e))
    try:
        yield
    finally:
        streams.close(key)


def add_health(server: grpc.aio.Server, streams_per_client: int = 16) -> HealthServicer:
    """Serve ``grpc.health.v1.Health`` on ``server``; returns its servicer, to set statuses."""
    servicer = HealthServicer(streams_per_client)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    return servicer


def add_reflection(
    service_names: Iterable[str], server: grpc.aio.Server, streams_per_client: int = 16
) -> None:
    """Serve server reflection, v1 and v1alpha, listing ``service_names`` and both reflection
    services; any file of the default descriptor pool (every generated module imported)
    can be asked for, with its imports."""
    _v1_descriptor()
    names = (*service_names, REFLECTION_V1, REFLECTION_V1ALPHA)
    servicer = _Reflection(names, streams_per_client)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    # v1's messages are v1alpha's, field for field, under another package: the same bytes on
    # the wire. The same servicer answers both, v1's calls read and written as v1alpha's.
    handlers = {
        "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
            response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
        )
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(REFLECTION_V1, handlers),)
    )
    server.add_registered_method_handlers(REFLECTION_V1, handlers)


def _v1_descriptor() -> Any:
    """The file of ``grpc.reflection.v1`` in the default pool, so that reflection describes
    its own v1 service too: made from v1alpha's (the same messages under another package),
    unless a newer grpcio-reflection has added the real one already."""
    pool = descriptor_pool.Default()
    try:
        return pool.FindFileByName(_V1_FILE)
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    old = f".{proto.package}."
    proto.name, proto.package = _V1_FILE, _V1_PACKAGE
    proto.ClearField("options")  # v1alpha's are deprecated: true and its own packages
    proto.options.go_package = "google.golang.org/grpc/reflection/grpc_reflection_v1"
    proto.options.java_package = "io.grpc.reflection.v1"
    proto.options.java_outer_classname = "ServerReflectionProto"
    proto.options.java_multiple_files = True
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(old):
                field.type_name = f".{_V1_PACKAGE}.{field.type_name[len(old) :]}"
    for service in proto.service:
        for method in service.method:
            method.input_type = f".{_V1_PACKAGE}.{method.input_type[len(old) :]}"
            method.output_type = f".{_V1_PACKAGE}.{method.output_type[len(old) :]}"
    pool.AddSerializedFile(proto.SerializeToString())
    return pool.FindFileByName(_V1_FILE)
