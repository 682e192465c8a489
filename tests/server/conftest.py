"""Fixtures: a real server on 127.0.0.1 (port 0) in a thread of its own, stubs for it, and a
throwaway PostgreSQL server with a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_support import postgres_server, postgres_url  # noqa: F401  (fixtures)
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


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A fresh database of each kind in turn: SQLite, then PostgreSQL (skipped without one)."""
    return backend_for(request.param, tmp_path, lambda: request.getfixturevalue("postgres_url"))
