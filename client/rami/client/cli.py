"""``rami-client``: play Rami in a terminal.

- ``rami-client play`` starts a server in this process and seats you with bots: a game in
  seconds.
- ``rami-client connect HOST[:PORT]`` plays on any server: list tables, create one, join,
  watch, play.
- ``rami-client replay FILE`` steps through a saved game record.

Mistakes and lost connections are said in plain words, never with a traceback.
"""

from __future__ import annotations

import asyncio
import getpass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import grpc
import typer

from .link import Link, LinkError, parse_address
from .look import Look
from .newtable import NewTable, parse_create
from .panel import NAME_CELLS
from .safetext import safe
from .seats import (
    DEFAULT_PROFILE,
    HeldSeats,
    Preferences,
    SeatBook,
    check_profile,
    default_path,
)
from .session import ClientSession

__all__ = ["app", "default_name", "main"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Play Rami in a terminal: against bots at once (play), on a server (connect), "
    "or step through a saved game (replay).",
    rich_markup_mode=None,  # plain help, wrapped at words (Rich's columns cut long words)
)


class VariantName(StrEnum):
    """The games, as the command line names them."""

    tallage = "tallage"
    simple = "simple"
    portuguese = "portuguese"


class PolicyName(StrEnum):
    """The built-in bots' policies."""

    strong = "strong"
    greedy = "greedy"
    random = "random"
    expert = "expert"


def default_name() -> str:
    """The login name, capitalised (``Player`` when there is none)."""
    try:
        user = getpass.getuser()
    except Exception:
        user = ""
    return (user[:24] or "Player").capitalize()


def player_name(given: str) -> str:
    """``--name`` as the tables will show it (the login name when not given); ValueError when
    the server would refuse it, so that nothing is made under a name that can't sit."""
    if not given:
        return default_name()
    name = " ".join(safe(given).split())
    if not any(ch.isalnum() for ch in name):
        raise ValueError(f"--name needs a letter or a digit, not {given!r}")
    if len(name) > NAME_CELLS:
        raise ValueError(f"--name is 1 to {NAME_CELLS} characters; {name!r} has {len(name)}")
    return name


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"rami-client: {message}", err=True)
    return typer.Exit(code)


def _look(ascii_only: bool, no_color: bool) -> Look:
    look = Look.detect()
    return Look(color=look.color and not no_color, ascii=look.ascii or ascii_only)


def _greeting(name: str) -> list[str]:
    return [
        f"Welcome, {name}. Type help for the commands; Tab completes commands and your cards; "
        "F2 sorts your hand.",
    ]


async def _connect(
    target: str,
    name: str,
    look: Look,
    credentials: grpc.ChannelCredentials | None,
    seats: SeatBook | None = None,
) -> None:
    link = Link(target, credentials)
    greeting = [*_greeting(name), f"Connected to {target}."]
    elsewhere = None
    if seats is not None and not seats.claim():
        # Another client runs with this profile: its seats are its own, never offered here.
        greeting.append(
            f"Another rami-client is running with the profile {seats.profile!r}: this one keeps "
            "no seats and takes none back. Start it with --profile NAME for seats of its own."
        )
        elsewhere, seats = seats, None
    try:
        await link.check()
        history = seats.path.with_name(f"history-{seats.profile}") if seats is not None else None
        session = ClientSession(
            link, name=name, look=look, seats=seats, history=history, seats_elsewhere=elsewhere
        )

        async def list_tables(s: ClientSession) -> None:
            """Start by showing the server's tables."""
            await s.handle("tables")

        await session.run(greeting, list_tables)
    finally:
        await link.close()
        if seats is not None:
            seats.release()


async def _play(spec: NewTable, name: str, look: Look) -> None:
    from .local import local_server  # the one place the client starts a server

    async with local_server() as target:
        link = Link(target)
        try:
            # The seats are kept while the client runs (its server ends with it), the
            # preferences written down.
            prefs = Preferences(default_path())
            session = ClientSession(
                link,
                name=name,
                look=look,
                local=True,
                seats=HeldSeats(),
                prefs=prefs,
                history=default_path().with_name("history.play"),  # no profile has a dot
            )

            async def create(s: ClientSession) -> None:
                """Start at the new table, bots seated: the game begins at once."""
                await s.create(spec)

            await session.run(_greeting(name), create)
        finally:
            await link.close()


def _run(main: object) -> None:
    """Run a coroutine; a lost server or Ctrl-C ends it with a sentence, not a traceback."""
    try:
        asyncio.run(main)  # type: ignore[arg-type]
    except LinkError as e:
        raise _fail(str(e)) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except OSError as e:
        raise _fail(f"{e.strerror or e}") from None


#: Options every interactive command shares.
AsciiOption = Annotated[
    bool, typer.Option("--ascii", help="Write cards as 10h, Qs (no suit symbols).")
]
NoColorOption = Annotated[
    bool, typer.Option("--no-color", help="No colour (NO_COLOR does the same).")
]


@app.command()
def connect(
    address: Annotated[
        str,
        typer.Argument(
            metavar="HOST[:PORT]",
            help="The server (port 50051 by default), or a gRPC target: dns:///HOST:PORT, "
            "or ipv4:A:PORT,B:PORT for several servers.",
        ),
    ],
    name: Annotated[str, typer.Option(help="Your name at the tables.")] = "",
    tls: Annotated[bool, typer.Option(help="Speak TLS to the server.")] = False,
    ca_cert: Annotated[
        Path | None,
        typer.Option("--ca", "--ca-cert", help="PEM file of the CA to trust (implies --tls)."),
    ] = None,
    ascii_only: AsciiOption = False,
    no_color: NoColorOption = False,
    profile: Annotated[
        str,
        typer.Option(
            help="Whose saved seats these are: people who share an account each use their own "
            "(one running client per profile)."
        ),
    ] = DEFAULT_PROFILE,
) -> None:
    """Play on a Rami server: list tables, create one, join, watch, play.

    The seats you take are kept in $XDG_STATE_HOME/rami/seats.json (~/.local/state by
    default), under your profile (--profile, "default" unless given), so that join takes
    yours back after the client is closed; the commands you type beside it (history-PROFILE:
    Up recalls them in the next run). Only one running client holds a profile: a second one
    with the same profile keeps no seats. Tables made with create get a 60-second turn clock
    unless you give turn_seconds."""
    try:
        target = parse_address(address)
        check_profile(profile)
        name = player_name(name)
    except ValueError as e:
        raise _fail(str(e), 2) from None
    credentials = None
    if tls or ca_cert is not None:
        try:
            root = ca_cert.read_bytes() if ca_cert is not None else None
        except OSError as e:
            raise _fail(f"can't read {ca_cert}: {e.strerror}", 2) from None
        credentials = grpc.ssl_channel_credentials(root)
    # The seats taken are written down, to be taken back after the client is closed.
    seats = SeatBook(default_path(), profile)
    _run(_connect(target, name, _look(ascii_only, no_color), credentials, seats))


@app.command()
def play(
    variant: Annotated[VariantName, typer.Option(help="The game.")] = VariantName.tallage,
    players: Annotated[
        int | None,
        typer.Option(
            min=2,
            max=6,
            show_default=False,
            help="Seats at the table, yours included [default: 4].",
        ),
    ] = None,
    policy: Annotated[PolicyName, typer.Option(help="How the bots play.")] = PolicyName.strong,
    name: Annotated[str, typer.Option(help="Your name at the table.")] = "",
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            "-o",
            metavar="KEY=VALUE",
            help="A table option, e.g. -o target=500 -o turn_seconds=60 (repeatable).",
        ),
    ] = None,
    ascii_only: AsciiOption = False,
    no_color: NoColorOption = False,
) -> None:
    """Play at once against bots, on a server started in this process."""
    try:
        spec = play_spec(variant.value, players, policy.value, option or [])
        name = player_name(name)
    except ValueError as e:
        raise _fail(str(e), 2) from None
    _run(_play(spec, name, _look(ascii_only, no_color)))


def play_spec(variant: str, players: int | None, policy: str, options: list[str]) -> NewTable:
    """``play``'s table: its flags, then its ``-o`` words, which may say the same (``-o
    players=2`` is ``--players 2``: the bots fill the seats it makes, unless ``-o bots=N``
    says otherwise; ``players`` None: not given, 4 unless an option says). ValueError says
    what is wrong, and a ``--players`` that an option contradicts."""
    given = {w.partition("=")[0].strip().lower().replace("-", "_"): w for w in options}
    if "players" in given:
        number = given["players"].partition("=")[2].strip()
        if number.isdigit():  # (else parse_create says)
            if players is not None and int(number) != players:
                raise ValueError(
                    f"--players {players} and -o {given['players'].strip()} disagree:"
                    " give the seats once"
                )
            players = int(number)
    players = 4 if players is None else players
    words = [variant, f"players={players}", f"policy={policy}"]
    if "bots" not in given:
        words.append(f"bots={max(0, players - 1)}")
    return parse_create(" ".join([*words, *options]))


@app.command()
def replay(
    file: Annotated[Path, typer.Argument(help="A game record (JSON), e.g. from the save command.")],
    ascii_only: AsciiOption = False,
    no_color: NoColorOption = False,
) -> None:
    """Step through a saved game, forwards and backwards, every hand face up."""
    from .replay import ReplayError, load_frames, run_viewer

    try:
        frames = load_frames(file)
    except ReplayError as e:
        raise _fail(str(e)) from None
    _run(run_viewer(frames, _look(ascii_only, no_color)))


def main() -> None:
    """The console script."""
    app(prog_name="rami-client")


if __name__ == "__main__":  # pragma: no cover
    main()
