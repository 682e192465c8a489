"""Building and running the server: services, health, reflection, keepalive, connection bounds,
shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2

from rami.v1 import (
    errors_pb2,  # noqa: F401  (imported, ErrorReason is described by reflection too)
    lobby_service_pb2,
    lobby_service_pb2_grpc,
    rules_service_pb2,
    rules_service_pb2_grpc,
    table_service_pb2,
    table_service_pb2_grpc,
)

from .connections import (
    AddressBound,
    ConnectionLimits,
    connection_bound,
    grpc_options,
    open_file_limit,
    raise_open_file_limit,
)
from .dealing import ServerKey
from .errors import DecodeGuard
from .introspection import HEALTH, HealthServicer, add_health, add_reflection
from .lobby import Lobby, LobbyConfig, count_tables, summarize
from .services import LobbyService, RulesService, TableService
from .storage import Storage, check_store, is_postgres_url, open_storage, redacted
from .table import TableConfig
from .wire import add_sending_bytes

__all__ = ["LOOPS", "MAX_MESSAGE", "Server", "run_loop", "serve"]

log = logging.getLogger("rami.server")

T = TypeVar("T")

#: The event loops the server runs on: ``auto`` is uvloop when it is installed.
LOOPS = ("auto", "uvloop", "asyncio")

#: The largest message a client may send (a lay of a whole hand is well under 1 KiB).
MAX_MESSAGE = 64 * 1024

SERVICE_NAMES = (
    rules_service_pb2.DESCRIPTOR.services_by_name["RulesService"].full_name,
    lobby_service_pb2.DESCRIPTOR.services_by_name["LobbyService"].full_name,
    table_service_pb2.DESCRIPTOR.services_by_name["TableService"].full_name,
)
PLAY = f"/{SERVICE_NAMES[2]}/Play"


@dataclass
class Server:
    """A running server: its port, its lobby, and how to stop it."""

    grpc_server: grpc.aio.Server
    port: int
    lobby: Lobby
    storage: Storage
    health: HealthServicer
    #: Closes the waiting tables that went too long without a change.
    expiring: asyncio.Task[None] | None = None
    #: The sweep that holds each client address to its bound of connections, if any.
    sweeper: asyncio.Task[None] | None = None
    #: Renews this server's leases and claims orphaned tables (shared storage only).
    leasing: asyncio.Task[None] | None = None
    _stopped: bool = field(default=False)

    async def stop(self, grace: float = 2.0) -> None:
        """Stop gracefully: refuse new calls, tell watchers, flush and close storage."""
        if self._stopped:
            return
        self._stopped = True
        if self.sweeper is not None:
            self.sweeper.cancel()
        for task in (self.expiring, self.leasing):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        shared = self.storage.lease_seconds > 0
        # On shared storage, the tables go on on another server: their streams end
        # TABLE_MOVED (no owner yet), and their leases end once the last appends are stored.
        held = self.lobby.stopping()
        for table in self.lobby.tables.values():
            table.close(moved_to="" if shared else None)
        await self.lobby.closing()
        self.lobby.thinker.close()
        await self.lobby.release(held)
        await self.grpc_server.stop(grace)
        # After the grace: the analyses under way are answered (later ones: SHUTTING_DOWN).
        self.lobby.analysts.close()
        await self.storage.close()

    async def wait(self) -> None:
        """Until the server stops."""
        await self.grpc_server.wait_for_termination()


_NOT_LISTENING = "could not listen on {host}:{port} (is another server listening there?)"


def check_port(host: str, port: int) -> None:
    """Refuse an address another process listens on, as gRPC would at binding, but before the
    server makes anything (its database, its key) and without a line of gRPC core's log.
    gRPC listens when it can bind any of the host's addresses (``localhost``: 127.0.0.1 and
    ::1; ``[::]``: both families, else IPv4 alone), so the address is refused only when each
    of them is in use. Each is bound as gRPC binds it (SO_REUSEADDR: a port whose last
    connections linger in TIME_WAIT is free), then let go; any other failure (a name that
    resolves to nothing, a port below 1024) is left to gRPC's own binding to report."""
    if port == 0:
        return
    if host == "localhost":  # gRPC listens on both loopbacks, whatever the resolver says
        found = [
            (socket.AF_INET, socket.SOCK_STREAM, 0, "", ("127.0.0.1", port)),
            (socket.AF_INET6, socket.SOCK_STREAM, 0, "", ("::1", port, 0, 0)),
        ]
    else:
        try:
            found = socket.getaddrinfo(
                host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )
        except (socket.gaierror, UnicodeError):
            return
    wildcard = any(f == socket.AF_INET6 and a[0] == "::" for f, _, _, _, a in found)
    if wildcard:  # gRPC's fallback when the dual-stack socket can't be bound
        found.append((socket.AF_INET, socket.SOCK_STREAM, 0, "", ("0.0.0.0", port)))
    in_use = False
    for family, kind, proto, _, address in found:
        try:
            probe = socket.socket(family, kind, proto)
        except OSError:  # a family this system has not
            continue
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as e:
                in_use = in_use or e.errno == errno.EADDRINUSE
                continue
        return  # one address gRPC can listen on
    if in_use:
        raise OSError(_NOT_LISTENING.format(host=host, port=port))


async def serve(
    host: str = "127.0.0.1",
    port: int = 50051,
    db: str = "rami.db",
    *,
    lobby_config: LobbyConfig | None = None,
    table_config: TableConfig | None = None,
    tls: tuple[bytes, bytes] | None = None,
    secret_file: str | None = None,
    connections: ConnectionLimits | None = None,
    advertise: str = "",
    lease_seconds: float = 10.0,
) -> Server:
    """Start a server on ``host:port`` (port 0: any free port) and return it, bound.

    ``tls`` is a (private key, certificate chain) pair in PEM: the server then speaks TLS only.
    ``secret_file`` holds the server's key (``dealing.py``; by default ``db`` + ``.key``).
    ``connections``: how many connections it holds, and how long the silent ones
    (``connections.py``). On a PostgreSQL database that several servers share:
    ``advertise``, the ``HOST:PORT`` clients should use to reach this server (by default the
    address it listens on), named to clients of the tables it holds; ``lease_seconds``, how
    long its lease on a table lasts unless renewed (it renews every third of that).
    """
    check_store(db)  # before anything is made from its name (the key file)
    limits = connections or ConnectionLimits()
    files = open_file_limit()
    if is_postgres_url(db) and not secret_file:
        ServerKey.for_store(db, secret_file)  # refused, saying why, before connecting
    check_port(host, port)  # before anything is made: a database, a key
    # The store first: a path that is no database this server can use makes no key file.
    storage = await open_storage(db, summarize, lease_seconds=lease_seconds)
    try:
        key = ServerKey.for_store(db, secret_file)
    except BaseException:
        await storage.close()
        raise
    try:
        await storage.check_key(key.fingerprint())
    except OSError as e:
        await storage.close()
        if not key.made:
            raise
        # A path mistyped, most likely: the key made at it is of no use, and taken away.
        with contextlib.suppress(OSError):
            os.unlink(key.source)
        ask = (
            "is it the path the other servers are given?"
            if is_postgres_url(db)
            else "is the key kept elsewhere?"
        )
        raise OSError(
            f"{e}. The key file {key.source} did not exist (it was made at this start, and is"
            f" removed again): {ask}"
        ) from None
    except BaseException:
        await storage.close()
        raise
    lobby = Lobby(storage, lobby_config or LobbyConfig(), table_config or TableConfig(), key)
    server = grpc.aio.server(
        # Play answers a request that is no message on its stream, in words (``services``).
        interceptors=[DecodeGuard(answering={PLAY})],
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.keepalive_time_ms", 30_000),
            ("grpc.keepalive_timeout_ms", 10_000),
            ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
            ("grpc.keepalive_permit_without_calls", 1),
            # One server per address: gRPC lets processes share a port by default, and the
            # kernel would split the clients between them (and a cluster's tables, matched
            # by address, would go back and forth between the two).
            ("grpc.so_reuseport", 0),
            # channelz keeps a record of every connection and counts every call, for a
            # channelz service this server does not offer: some 1 KB a connection.
            ("grpc.enable_channelz", 0),
            *grpc_options(limits, files),
        ],
    )
    rules_service_pb2_grpc.add_RulesServiceServicer_to_server(
        RulesService(lobby.work, lobby.analysts, lobby.config.turn_seconds), server
    )
    lobby_service_pb2_grpc.add_LobbyServiceServicer_to_server(LobbyService(lobby), server)
    # Its streams send updates encoded once for all their watchers (see ``wire``).
    add_sending_bytes(
        table_service_pb2_grpc.add_TableServiceServicer_to_server, TableService(lobby), server
    )
    # What generic tools ask of any server: health (Check, Watch, List), reflection v1, v1alpha.
    streams = lobby.config.introspection_streams_per_client
    health_servicer = add_health(server, streams)
    add_reflection((*SERVICE_NAMES, HEALTH), server, streams)
    address = f"{host}:{port}"
    try:
        if tls is not None:
            bound = server.add_secure_port(address, grpc.ssl_server_credentials([tls]))
        else:
            bound = server.add_insecure_port(address)
    except RuntimeError:  # gRPC's "Failed to bind"
        bound = 0
    if bound == 0:
        await storage.close()
        raise OSError(_NOT_LISTENING.format(host=host, port=port))
    if hasattr(storage, "address"):
        storage.address = advertise or advertised(host, bound)
    # Only the tables this server holds or may claim (on SQLite: every unfinished one).
    restored = await lobby.restore()
    await server.start()
    sweeper = None
    if limits.per_address > 0:
        if AddressBound.available():
            sweep = AddressBound(bound, limits.per_address, limits.sweep_seconds)
            sweeper = asyncio.ensure_future(sweep.run())
        else:
            log.warning("no bound on connections per address: this system does not list them")
    for name in ("", *SERVICE_NAMES):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)

    async def store_health(answers: bool) -> None:
        # The server and the services that need the database; the rules need none.
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if answers
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", *SERVICE_NAMES[1:]):
            await health_servicer.set(name, status)

    lobby.on_store = store_health
    log.info(
        "listening on %s:%d (storage %s, %s restored)",
        host,
        bound,
        redacted(db),
        count_tables(restored),
    )
    log.info(
        "connections: at most %s in all (open files: %s), %s per address; handshake %g s, "
        "closed after %s without a call",
        connection_bound(limits, files) or "any number",
        files or "no limit",
        limits.per_address or "any number",
        limits.handshake_seconds,
        f"{limits.idle_seconds:g} s" if limits.idle_seconds > 0 else "no time",
    )
    loop = asyncio.get_running_loop()
    expiring = loop.create_task(lobby.expire_forever(), name="expiry")
    leasing = None
    if storage.lease_seconds > 0:
        log.info(
            "leases of %g s, renewed every %.3g s; clients are sent to %s",
            storage.lease_seconds,
            storage.lease_seconds / 3,
            getattr(storage, "address", ""),
        )
        where = getattr(storage, "address", "")
        if not advertise and host in _EVERY_INTERFACE and loopback(where):
            log.warning(
                "clients are sent to %s, which names this machine's loopback (its name resolves"
                " so here): the other servers would send their clients to themselves; give"
                " --advertise HOST:PORT, the address they reach this server at",
                where,
            )
        leasing = loop.create_task(lobby.keep_leases(), name="leases")
    return Server(server, bound, lobby, storage, health_servicer, expiring, sweeper, leasing)


#: The hosts that listen on every interface.
_EVERY_INTERFACE = ("0.0.0.0", "::", "[::]", "")


def loopback(address: str) -> bool:
    """Whether ``address`` (HOST:PORT) names a loopback address of this machine, as its host
    resolves here (a name that does not resolve: no)."""
    import ipaddress
    import socket

    host = address.rpartition(":")[0].strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def advertised(host: str, port: int) -> str:
    """The address clients are sent to by default: the one listened on (this host's name for
    every interface, 0.0.0.0 or ::)."""
    if host in _EVERY_INTERFACE:
        import socket

        host = socket.getfqdn()
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


async def run(
    host: str,
    port: int,
    db: str,
    lobby_config: LobbyConfig,
    tls: tuple[bytes, bytes] | None = None,
    secret_file: str | None = None,
    connections: ConnectionLimits | None = None,
    table_config: TableConfig | None = None,
    advertise: str = "",
    lease_seconds: float = 10.0,
) -> None:
    """Raise the open-file limit, then serve until SIGTERM, SIGINT or SIGHUP and shut down
    gracefully."""
    raise_open_file_limit()
    server = await serve(
        host,
        port,
        db,
        lobby_config=lobby_config,
        table_config=table_config,
        tls=tls,
        secret_file=secret_file,
        connections=connections,
        advertise=advertise,
        lease_seconds=lease_seconds,
    )
    secure = " with TLS" if tls else ""
    print(
        f"rami-server listening on {host}:{server.port}{secure} (storage: {redacted(db)})",
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # SIGHUP: the terminal it was started from closed. Each stops it gracefully (by default
    # SIGHUP killed it on the spot: on shared storage its tables waited out their leases);
    # but a server started with SIGHUP ignored (nohup, a supervisor's reload) keeps running.
    hangups = () if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN else (signal.SIGHUP,)
    for sig in (signal.SIGTERM, signal.SIGINT, *hangups):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down")
    await server.stop()


def run_loop(main: Coroutine[Any, Any, T], loop: str = "auto") -> T:
    """Run ``main`` to its end on a new event loop of the kind ``loop`` names (LOOPS)."""
    if loop not in LOOPS:
        main.close()
        raise ValueError(f"no event loop {loop!r}: choose {', '.join(LOOPS)}")
    if loop != "asyncio":
        try:
            import uvloop
        except ImportError:
            if loop == "uvloop":
                main.close()
                raise
        else:
            result: T = uvloop.run(main)
            return result
    return asyncio.run(main)
