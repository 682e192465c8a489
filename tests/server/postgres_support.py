"""A throwaway PostgreSQL server for the tests: Debian's ``initdb`` and ``pg_ctl`` in a temporary
folder, listening on a free port of 127.0.0.1 only, stopped and deleted after.

Where PostgreSQL or the driver (psycopg, the ``postgres`` extra) cannot be had, the tests
that need it are skipped, saying why; they are never passed without it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["PostgresServer", "postgres_server", "postgres_url", "unavailable"]


def _bindir() -> Path | None:
    def version(initdb: str) -> int:
        name = Path(initdb).parent.parent.name
        return int(name) if name.isdigit() else 0

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def unavailable() -> str | None:
    """Why PostgreSQL tests cannot run here, or None when they can."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg 3 with its pool is not installed (pip install -e '.[postgres]')"
    if _bindir() is None:
        return "PostgreSQL's initdb is not installed (Debian: apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root with no 'postgres' user for initdb (which refuses root)"
        if shutil.which("runuser") is None:
            return "running as root without runuser to start PostgreSQL as 'postgres'"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One PostgreSQL server of the test session; :meth:`database` makes a fresh database."""

    def __init__(self) -> None:
        bindir = _bindir()
        assert bindir is not None
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="rami-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = _free_port()
        self.user = "rami"
        self._as: list[str] = []
        if os.geteuid() == 0:
            import pwd

            pw = pwd.getpwnam("postgres")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        proc = subprocess.run(
            [*self._as, *args], capture_output=True, text=True, timeout=120, cwd=self.root
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {proc.stdout}{proc.stderr}")

    def start(self) -> PostgresServer:
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        # Loopback and TCP only, on the port chosen; durable commits as in production
        # (fsync and synchronous_commit are left at their defaults, on).
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                "unix_socket_directories = ''\nmax_connections = 200\n"
            )
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "start"
        )
        return self

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            # Immediate: a throwaway server, deleted next; its shutdown checkpoint (every dirty
            # page written and synced) would take many seconds after the cluster tests.
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def database(self) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:16]
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.url(), autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
                return self.url(name)
            except psycopg.OperationalError:
                # Another CREATE DATABASE copying the template at the same moment.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server for the session (skipped, saying why, without one)."""
    why = unavailable()
    if why is not None:
        pytest.skip(f"no PostgreSQL: {why}")
    srv = PostgresServer()
    try:
        srv.start()
    except Exception as e:
        srv.stop()
        pytest.skip(f"no PostgreSQL: could not start a throwaway server: {e}")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a new, empty database on the session's PostgreSQL server."""
    return postgres_server.database()


class Gate:
    """A TCP forwarder in front of the database that can be shut, as a database machine gone
    from the network: shut, it resets every connection through it and every new one, until
    it is opened again. Or frozen, as a network that drops every packet and says nothing:
    frozen, nothing goes through and no connection ends (a new one waits), until it thaws
    (then what was held goes on, as TCP sends it again)."""

    def __init__(self, url: str) -> None:
        import socket
        import threading
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.listener = socket.create_server(("127.0.0.1", 0))
        port = self.listener.getsockname()[1]
        self.url = parts._replace(netloc=f"{parts.username}@127.0.0.1:{port}").geturl()
        self.open = True
        self._thawed = threading.Event()
        self._thawed.set()
        self._links: set[Any] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self) -> None:
        self._thawed.clear()

    def thaw(self) -> None:
        self._thawed.set()

    def _accept(self) -> None:
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                self._reset(client)
                continue
            threading.Thread(target=self._link, args=(client,), daemon=True).start()

    def _link(self, client: Any) -> None:
        import socket
        import threading

        self._thawed.wait()
        try:
            server = socket.create_connection(self.upstream)
        except OSError:
            self._reset(client)
            return
        with self._lock:
            self._links.update((client, server))
        for a, b in ((client, server), (server, client)):
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, a: Any, b: Any) -> None:
        try:
            while data := a.recv(65536):
                self._thawed.wait()
                b.sendall(data)
        except OSError:
            pass
        self._reset(a)
        self._reset(b)

    def _reset(self, sock: Any) -> None:
        import socket
        import struct

        with self._lock:
            self._links.discard(sock)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()

    def shut(self) -> None:
        self.open = False
        with self._lock:
            links = list(self._links)
        for sock in links:
            self._reset(sock)

    def close(self) -> None:
        self.shut()
        self.thaw()
        self.listener.close()
