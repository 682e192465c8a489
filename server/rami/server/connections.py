"""Bounds on connections: how many the server holds, in all and per client address; how soon
it closes the ones that never speak or make no calls; and the open-file limit they live in.

gRPC core enforces three of them, as channel arguments (:func:`grpc_options`):

- ``grpc.max_allowed_incoming_connections``: a connection beyond the bound is closed as soon
  as it is accepted (its client sees UNAVAILABLE and retries);
- ``grpc.server_handshake_timeout_ms``: a connection must finish its handshake (TLS, if any,
  then HTTP/2's preface and SETTINGS) in this time, or it is closed;
- ``grpc.max_connection_idle_ms``: a connection without a call for this time is sent GOAWAY
  and closed (a client's next call opens a new one); an open stream is a call, so a Watch or
  Play stream is never idle, whatever passes on it. Pings do not count as calls;
- ``grpc.max_concurrent_streams``: the calls open at once on one connection (HTTP/2's
  SETTINGS_MAX_CONCURRENT_STREAMS); one beyond is refused (RST_STREAM). Without it, a unary
  call whose request never comes holds its place, and its memory, for as long as the
  connection lasts: one connection held 16,000 of them, some 300 MB of the server's memory.
  With it, an address holds at most this many times its connections (``per_address``).

gRPC has no bound per client address. :class:`AddressBound` is one: every ``sweep_seconds``
it counts the server's connections by remote address (Linux: sock_diag, as ``ss`` does, then
the process's files in ``/proc/self/fd`` for those to shut down; in a thread, nothing on any
call's path) and shuts down an address's newest connections beyond the bound. It acts after
the fact, a sweep at a time: between two sweeps an address may hold more, up to the bound in
all.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
from collections import defaultdict
from dataclasses import dataclass, field

__all__ = [
    "RESERVED_FILES",
    "AddressBound",
    "ConnectionLimits",
    "connection_bound",
    "grpc_options",
    "open_file_limit",
    "raise_open_file_limit",
    "tcp_connections",
]

log = logging.getLogger("rami.server")

#: Open files kept for the server's own use out of its limit, beyond every connection it
#: holds: storage (the database, its journal), the log, gRPC's own (its poller, its wakeups).
RESERVED_FILES = 128


@dataclass(frozen=True)
class ConnectionLimits:
    """How many connections the server holds, and for how long the silent ones."""

    #: Connections held at once, in all; always lowered to fit the open-file limit, less
    #: RESERVED_FILES (0: only that).
    max_connections: int = 4096
    #: Connections one client address may hold at once (0: no bound). Every client behind
    #: one address (a NAT, a proxy) shares it.
    per_address: int = 64
    #: Calls open at once on one connection (0: gRPC's own, no bound). Each seat's Watch or
    #: Play stream is a call as long as it lasts: a client that plays many seats over one
    #: connection (each with its stream, and a unary Act in flight) needs two a seat; a
    #: client's calls beyond the bound wait (gRPC's clients queue them) until one ends; not
    #: all: of 600 made at once on a new connection, 3 were refused (RST_STREAM,
    #: REFUSED_STREAM: UNAVAILABLE) on a trial.
    streams_per_connection: int = 256
    #: Seconds a new connection has to finish its handshake (TLS, then HTTP/2's preface).
    handshake_seconds: float = 10.0
    #: Seconds a connection may go without any call before the server closes it (0: never).
    idle_seconds: float = 30.0
    #: How often the connections are counted per address.
    sweep_seconds: float = 1.0


def open_file_limit() -> int | None:
    """The process's (soft) limit of open files, or None where there is none to read."""
    try:
        import resource
    except ImportError:  # not on a POSIX system
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def raise_open_file_limit() -> tuple[int, int] | None:
    """Raise the (soft) limit of open files to the hard limit; (before, after), or None where
    there is no such limit. Every connection takes a file: a soft limit of 1,024, a common
    default, is a thousand connections."""
    try:
        import resource
    except ImportError:
        log.info("no open-file limit to raise on this system")
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        # Linux refuses an unlimited soft limit: the most it allows is fs.nr_open.
        try:
            with open("/proc/sys/fs/nr_open") as f:
                target = int(f.read())
        except (OSError, ValueError):
            target = 1 << 20
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError) as e:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, target, e)
            return soft, soft
        log.info("open-file limit raised from %d to %d (its hard limit)", soft, target)
        return soft, target
    log.info("open-file limit %s (its hard limit)", "unlimited" if soft < 0 else soft)
    return soft, soft


def connection_bound(limits: ConnectionLimits, files: int | None) -> int:
    """The bound on connections in all: ``limits.max_connections``, lowered to fit ``files``
    open files less RESERVED_FILES (half of them, at the least); 0: no bound."""
    if files is None:
        return limits.max_connections
    fit = max(files - RESERVED_FILES, files // 2, 1)
    return fit if limits.max_connections <= 0 else min(limits.max_connections, fit)


def grpc_options(limits: ConnectionLimits, files: int | None) -> list[tuple[str, int]]:
    """gRPC core's channel arguments for ``limits`` with ``files`` open files."""
    options = [("grpc.server_handshake_timeout_ms", round(limits.handshake_seconds * 1000))]
    if limits.streams_per_connection > 0:
        options.append(("grpc.max_concurrent_streams", limits.streams_per_connection))
    bound = connection_bound(limits, files)
    if bound > 0:
        options.append(("grpc.max_allowed_incoming_connections", bound))
    if limits.idle_seconds > 0:
        options.append(("grpc.max_connection_idle_ms", round(limits.idle_seconds * 1000)))
    return options


# -- the bound per address --------------------------------------------------------------

_FDS = "/proc/self/fd"
# Linux's sock_diag (netlink): every TCP socket of the network namespace in the states asked
# for, the kernel keeping only those of the port (what ``ss`` uses; /proc/net/tcp walks every
# bucket of the kernel's table instead, some 10 ms however few the sockets).
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_DUMP_REQUEST = 0x301
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_INET_DIAG_REQ_BYTECODE = 1
_INET_DIAG_BC_S_GE, _INET_DIAG_BC_S_LE = 2, 3
#: The states in which an accepted socket holds a file: established, and closed by the peer
#: but not yet by the server (one still in the accept queue has no file yet: inode 0).
_HELD_STATES = (1 << 1) | (1 << 8)
_HEADER = struct.Struct("=IHHII")
_REQUEST = struct.Struct("=BBBBI48s")
# inet_diag_msg: family, state, timer, retransmits; sockid (source and destination ports,
# big-endian, then 16 bytes of each address, interface, cookie); expires, queues, uid, inode.
_MESSAGE = struct.Struct("=BBBB2s2s16s16sI8sIIIII")


_V4_MAPPED = bytes(10) + b"\xff\xff"


def _host(family: int, raw: bytes) -> str:
    """A remote host as sock_diag gives it, an IPv4-mapped IPv6 address as IPv4."""
    if family == socket.AF_INET:
        return socket.inet_ntop(socket.AF_INET, raw[:4])
    if raw[:12] == _V4_MAPPED:
        return socket.inet_ntop(socket.AF_INET, raw[12:16])
    return socket.inet_ntop(socket.AF_INET6, raw)


def _port_filter(port: int) -> bytes:
    """sock_diag's bytecode for ``port <= local port <= port``: each test is two ops (code,
    jump if true, jump if false; then the port), jumping past the end (+4) to reject."""
    op = struct.Struct("=BBH")
    return b"".join(
        (
            op.pack(_INET_DIAG_BC_S_GE, 8, 20),
            op.pack(0, 0, port),
            op.pack(_INET_DIAG_BC_S_LE, 8, 12),
            op.pack(0, 0, port),
        )
    )


def tcp_connections(port: int) -> list[tuple[str, int]]:
    """Every open TCP connection accepted on ``port`` in this network namespace, as (client
    host, socket inode). Raises OSError where sock_diag is not to be had."""
    bytecode = _port_filter(port)
    out = []
    hosts: dict[tuple[int, bytes], str] = {}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(5.0)
        for family in (socket.AF_INET, socket.AF_INET6):
            attribute = struct.pack("=HH", 4 + len(bytecode), _INET_DIAG_REQ_BYTECODE) + bytecode
            body = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, _HELD_STATES, b"") + attribute
            header = _HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY,
                                  _NLM_F_DUMP_REQUEST, family, 0)  # fmt: skip
            nl.sendall(header + body)
            done = False
            while not done:
                data = nl.recv(1 << 16)
                offset = 0
                while offset + _HEADER.size <= len(data):
                    length, kind, _flags, _seq, _pid = _HEADER.unpack_from(data, offset)
                    if kind == _NLMSG_DONE:
                        done = True
                        break
                    if kind == _NLMSG_ERROR:
                        error = -struct.unpack_from("=i", data, offset + _HEADER.size)[0]
                        raise OSError(error, f"sock_diag: {os.strerror(error)}")
                    if kind == _SOCK_DIAG_BY_FAMILY:
                        m = _MESSAGE.unpack_from(data, offset + _HEADER.size)
                        if m[-1] and int.from_bytes(m[4], "big") == port:
                            key = (m[0], m[7])
                            host = hosts.get(key) or hosts.setdefault(key, _host(*key))
                            out.append((host, m[-1]))
                    offset += (length + 3) & ~3
                if not data:
                    break
    return out


@dataclass
class AddressBound:
    """At most ``limit`` connections per client address to ``port``: every ``every`` seconds,
    the newest beyond it are shut down (their client sees UNAVAILABLE). Linux only.

    It counts the sockets of the network namespace accepted on ``port`` and still open
    (sock_diag), and looks for their files among the process's only when it has some to shut
    down. Were another process to share the port (SO_REUSEPORT, which gRPC sets), its
    connections would count too, and stay open."""

    port: int
    limit: int
    every: float = 1.0
    #: The sweep each connection (its socket's inode) was first seen in: the oldest stay.
    _seen: dict[int, int] = field(default_factory=dict)
    _sweeps: int = 0

    @staticmethod
    def available() -> bool:
        """Whether this system lists a process's sockets and connections (Linux)."""
        if not os.path.isdir(_FDS):
            return False
        try:
            tcp_connections(0)
        except (OSError, AttributeError):  # no netlink (AF_NETLINK), or not allowed
            return False
        return True

    async def run(self) -> None:
        """Sweep every ``every`` seconds, until cancelled."""
        while True:
            await asyncio.sleep(self.every)
            try:
                cut = await asyncio.to_thread(self.sweep)
            except OSError as e:  # files out: try again at the next sweep
                log.warning("could not count connections per address: %s", e)
                continue
            except Exception:  # a bug: never stop bounding for it
                log.exception("could not count connections per address")
                continue
            if cut:
                shown = ", ".join(f"{a} ({n})" for a, n in sorted(cut.items())[:5])
                more = f" and {len(cut) - 5} more addresses" if len(cut) > 5 else ""
                log.warning(
                    "closed %d connections beyond %d per address: %s%s",
                    sum(cut.values()),
                    self.limit,
                    shown,
                    more,
                )

    def sweep(self) -> dict[str, int]:
        """Count the connections per address and shut down every address's newest beyond the
        bound; how many were shut down, by address."""
        self._sweeps += 1
        by_host = self.connections()
        seen = {i: self._seen.get(i, self._sweeps) for c in by_host.values() for i in c}
        self._seen = seen
        over = {h: c for h, c in by_host.items() if len(c) > self.limit}
        if not over:
            return {}
        files = self._files()
        cut: dict[str, int] = {}
        for host, inodes in over.items():
            newest = sorted(inodes, key=lambda i: (seen[i], i))[self.limit :]
            n = sum(self._shut(files[i], i) for i in newest if i in files)
            if n:
                cut[host] = n
        return cut

    def connections(self) -> dict[str, list[int]]:
        """The open connections accepted on the port, by client host: their sockets' inodes."""
        out: dict[str, list[int]] = defaultdict(list)
        for host, inode in tcp_connections(self.port):
            out[host].append(inode)
        return out

    @staticmethod
    def _files() -> dict[int, int]:
        """The process's sockets: inode to file descriptor."""
        out = {}
        for entry in os.scandir(_FDS):
            try:
                target = os.readlink(entry.path)
            except OSError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                out[int(target[8:-1])] = int(entry.name)
        return out

    @staticmethod
    def _shut(fd: int, inode: int) -> bool:
        """Shut down the connection of socket ``inode``, open as ``fd``, for gRPC to close,
        unless ``fd`` is by now another file."""
        try:
            copy = os.dup(fd)
        except OSError:  # closed meanwhile, or no file to spare
            return False
        try:
            s = socket.socket(fileno=copy)
        except OSError:  # by now not a socket
            os.close(copy)
            return False
        try:
            if os.fstat(s.fileno()).st_ino != inode:
                return False
            s.shutdown(socket.SHUT_RDWR)
            return True
        except OSError:
            return False
        finally:
            s.close()
