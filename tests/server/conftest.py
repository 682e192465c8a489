"""Fixtures: a real server on 127.0.0.1 (port 0) in a thread of its own, and stubs for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rami.server.testing import ServerThread, Stubs


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    srv = ServerThread(str(tmp_path / "rami.db")).start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def stubs(server: ServerThread) -> Iterator[Stubs]:
    s = Stubs(server.target)
    try:
        yield s
    finally:
        s.channel.close()
