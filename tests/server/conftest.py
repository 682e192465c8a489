"""Fixtures: a real server on 127.0.0.1 (port 0) in a thread of its own, stubs for it, and a
throwaway PostgreSQL server with a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_support import PostgresServer, unavailable
from storage_backends import BACKENDS, Backend, backend_for

from rami.server.testing import ServerThread, Stubs


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path / "rami.db")) as srv:
        yield srv


@pytest.fixture
def stubs(server: ServerThread) -> Iterator[Stubs]:
    with Stubs(server.target) as s:
        yield s


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


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A fresh database of each kind in turn: SQLite, then PostgreSQL (skipped without one)."""
    return backend_for(request.param, tmp_path, lambda: request.getfixturevalue("postgres_url"))
