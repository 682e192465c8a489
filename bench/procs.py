"""Servers as child processes: started, read for their port, stopped by closing their stdin."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Child", "child"]


@dataclass
class Child:
    """A running server process and its port on 127.0.0.1."""

    proc: subprocess.Popen[str]
    port: int

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"


@contextlib.contextmanager
def child(
    module: str, *args: str, timeout: float = 60.0, env: dict[str, str] | None = None
) -> Iterator[Child]:
    """``python -m module args`` in a process of its own until the block ends (``env``: the
    whole environment of the process, when given)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "port N", or nothing if it failed to start
        if not line.startswith("port "):
            raise RuntimeError(f"{module} did not start: {line!r}")
        yield Child(proc, int(line.split()[1]))
    finally:
        with contextlib.suppress(Exception):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
