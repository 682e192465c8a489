"""The command line: help everywhere, and mistakes said in plain words with no traceback."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rami.client.cli import app
from rami.client.link import Link
from rami.server.testing import ServerThread

RUNNER = CliRunner()


@pytest.mark.parametrize(
    "args", [[], ["--help"], ["connect", "--help"], ["play", "--help"], ["replay", "--help"]]
)
def test_every_command_has_help(args: list[str]) -> None:
    result = RUNNER.invoke(app, args)
    assert result.exit_code in (0, 2)  # no arguments at all shows the help too
    assert "Usage" in result.output


def test_play_help_lists_the_choices() -> None:
    out = RUNNER.invoke(app, ["play", "--help"], terminal_width=200).output
    for word in ("tallage", "portuguese", "strong", "--players", "--name", "--option"):
        assert word in out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["connect", f"127.0.0.1:{_free_port()}"], 1, "no Rami server answers at 127.0.0.1:"),
        (["connect", "host:port"], 2, "'port' is not a port number"),
        (["play", "-o", "target=300"], 2, "target must be one of 201, 500, 1000"),
        (["play", "--variant", "poker"], 2, "poker"),
        (["play", "-o", "rounds=3"], 2, "tallage has no option rounds"),
        (["connect", "localhost:48177:9"], 2, "'localhost:48177:9' is not an address"),
        (["replay", "/no/such/record.json"], 1, "can't read /no/such/record.json"),
        # A name the server would refuse, refused before any table is made.
        (["play", "--name", "Zoë the Magnificent Überplayer"], 2, "--name is 1 to 24 char"),
        (["play", "--name", "..."], 2, "--name needs a letter or a digit"),
        (["connect", "localhost", "--name", "x" * 25], 2, "--name is 1 to 24 characters"),
    ],
)
def test_mistakes_are_said_in_plain_words(args: list[str], code: int, says: str) -> None:
    result = RUNNER.invoke(app, args)
    assert result.exit_code == code, result.output
    assert says in result.output
    assert "Traceback" not in result.output


def test_a_server_that_refuses_the_check_for_its_rate_limit_still_answers(tmp_path: Path) -> None:
    # The client checks that a Rami server answers by listing its tables; one that refuses the
    # listing because the address's lobby reads are spent (many clients behind one address)
    # answered all the same: the client connects, and its first listing says why it waits.
    with ServerThread(str(tmp_path / "rami.db"), read_share=1e-6, read_burst=0.0) as server:

        async def main() -> None:
            link = Link(server.target)
            try:
                await link.check()
            finally:
                await link.close()

        asyncio.run(main())


def test_play_takes_the_players_from_an_option_as_from_its_flag() -> None:
    """``-o players=2`` is ``--players 2``: a seat for the person, one bot (it was refused for
    the three bots of the default four seats)."""
    from rami.client.cli import play_spec

    spec = play_spec("simple", None, "strong", ["players=2"])
    assert (spec.options["players"], spec.bots) == (2, 1)
    assert play_spec("simple", 3, "greedy", []).bots == 2
    given = play_spec("simple", None, "strong", ["players=3", "bots=1"])
    assert (given.options["players"], given.bots) == (3, 1)
    assert play_spec("simple", None, "strong", []).options["players"] == 4  # the default
    assert play_spec("simple", 2, "strong", ["players=2"]).bots == 1  # the same twice


def test_play_refuses_a_players_flag_and_option_that_disagree() -> None:
    """``--players 3 -o players=2`` asked for two tables: the option won, silently."""
    from rami.client.cli import play_spec

    with pytest.raises(ValueError, match="--players 3 and -o players=2 disagree"):
        play_spec("simple", 3, "strong", ["players=2"])


def test_the_local_server_quiets_the_servers_log_only_while_it_runs() -> None:
    """``rami-client play`` keeps the server's log from printing over the game; once its
    server ends, the log is as it was (a test that played left the rest of the suite's server
    logs at errors only, and a test reading those logs found none)."""
    import asyncio
    import logging

    from rami.client.local import local_server

    log = logging.getLogger("rami.server")
    before = log.level

    async def run() -> int:
        async with local_server():
            return log.getEffectiveLevel()

    assert asyncio.run(run()) == logging.ERROR
    assert log.level == before
