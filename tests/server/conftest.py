"""Fixtures: a real server on 127.0.0.1 (port 0) in a thread of its own, and stubs for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rami.server.testing import ServerThread, Stubs


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path / "rami.db")) as srv:
        yield srv


@pytest.fixture
def stubs(server: ServerThread) -> Iterator[Stubs]:
    with Stubs(server.target) as s:
        yield s
