"""Fixtures for the bot tests: a real server on 127.0.0.1 (port 0) in a thread of its own
(rami.server.testing), with built-in bots that move at once."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from bots_support import ROOT, Tables

from rami.server.testing import ServerThread


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    with ServerThread(str(tmp_path_factory.mktemp("bots") / "rami.db")) as srv:
        yield srv


@pytest.fixture(scope="module")
def tables(server: ServerThread) -> Iterator[Tables]:
    channel = grpc.insecure_channel(server.target)
    try:
        yield Tables(server.target, channel)
    finally:
        channel.close()


@pytest.fixture(scope="session")
def js_bot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JavaScript example bot, installed with ``npm ci`` from its lockfile in a copy of the
    examples tree (its .proto files are found at ../../proto, as in the repository)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the JavaScript bot")
    root = tmp_path_factory.mktemp("js")
    work = root / "examples" / "js"
    work.mkdir(parents=True)
    for name in ("bot.js", "package.json", "package-lock.json"):
        shutil.copy(ROOT / "examples" / "js" / name, work / name)
    (root / "proto").symlink_to(ROOT / "proto", target_is_directory=True)
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
    return work / "bot.js"


@pytest.fixture(scope="session")
def go_bot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go example bot, built offline by ``examples/go/build.sh`` (GOPATH mode against
    Debian's Go packages, its Go code generated from proto/ at build time). Skipped, saying
    what is missing, where the Go toolchain or those packages are not installed."""
    out = tmp_path_factory.mktemp("go")
    done = subprocess.run(
        ["bash", str(ROOT / "examples" / "go" / "build.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode == 2:
        pytest.skip(f"the Go example cannot be built here: {done.stderr.strip()}")
    assert done.returncode == 0, f"build.sh failed:\n{done.stdout}\n{done.stderr}"
    binary = Path(done.stdout.strip().splitlines()[-1])
    assert binary.is_file(), done.stdout
    return binary
