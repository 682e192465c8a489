"""``rami-server``: the command line of the server."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import typer

from .app import LOOPS, run, run_loop
from .connections import ConnectionLimits
from .lobby import LobbyConfig
from .storage import check_store, is_postgres_url
from .table import TableConfig

__all__ = ["app", "main"]

_LOG_LEVELS = ("debug", "info", "warning", "error")


def one_line(record: logging.LogRecord) -> bool:
    """A log filter: each record on one line (psycopg's pool, say, writes libpq's two-line
    words, "...\n\tIs the server running on that host...?"), so that a line is a record.
    Tracebacks (``exc_info``) are the formatter's, and keep their lines. A record whose
    message can't be made is left to the handler, which reports it as logging does."""
    try:
        message = record.getMessage()
    except Exception:
        return True
    if "\n" in message:
        record.msg, record.args = " ".join(message.split()), None
    return True


class Repeats:
    """A log filter: a warning of psycopg's (its pool says each connection it discards and
    each try to connect, about once a second while PostgreSQL is away) at most once every
    ``every`` seconds for each of its message templates, whatever its arguments (a new cause
    under one template waits its turn); the next one says how many were left out. Rami's own
    lines say the outage (NOT_SERVING, the leases), once."""

    def __init__(self, every: float = 30.0, prefix: str = "psycopg") -> None:
        self.every = every
        self.prefix = prefix
        #: A message (its logger and template) -> when it was last let through, and how many
        #: like it were left out since.
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}

    def __call__(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self.prefix) or record.levelno >= logging.ERROR:
            return True
        key = (record.name, str(record.msg))
        last, left_out = self._seen.get(key, (-math.inf, 0))
        if record.created - last < self.every:
            self._seen[key] = (last, left_out + 1)
            return False
        if len(self._seen) > 1000:  # the templates are few: never a bound that is reached
            self._seen.clear()
        self._seen[key] = (record.created, 0)
        if left_out:
            try:
                message = record.getMessage()
            except Exception:
                return True
            record.msg, record.args = (
                f"{message} (and {left_out} more like it since the last one logged)",
                None,
            )
        return True


#: The most a count or a time in seconds given to gRPC may be (its C int, in milliseconds
#: for the times).
_MOST_COUNT = 2**31 - 1
_MOST_SECONDS = (2**31 - 1) // 1000

#: Help as plain text, wrapped at words (Rich's boxed columns cut long words at 80 columns,
#: and would read [postgres] as markup).
app = typer.Typer(add_completion=False, help="Serve Rami tables over gRPC.", rich_markup_mode=None)


@app.command()
def serve(
    port: int = typer.Option(50051, min=0, max=65535, help="Port to listen on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on (0.0.0.0: every interface)."),
    db: str = typer.Option(
        "rami.db",
        help="Where every table is kept across restarts: a SQLite file (':memory:' for none), or"
        " a PostgreSQL database that several servers may share, as a libpq URL such as"
        " postgresql://host/db (it needs --secret-file, and psycopg: pip install -e"
        " '.[postgres]').",
    ),
    turn_seconds: int = typer.Option(
        0, min=0, max=3600, help="Default turn clock for new tables, in seconds (0: no clock)."
    ),
    log_level: str = typer.Option("info", help="Logging level: debug, info, warning or error."),
    allow_stacked_decks: bool = typer.Option(
        False, help="Let tables be created with an explicit deck order (tests, puzzles)."
    ),
    max_tables_per_client: int = typer.Option(
        20, min=1, help="Unfinished tables one client address may have created at once."
    ),
    table_creations_per_second: float = typer.Option(
        LobbyConfig().table_creations_per_second,
        min=0.0,
        help="Tables one client address may create per second, after a burst of 20 (0: no"
        " bound); a closed table no longer counts toward --max-tables-per-client.",
    ),
    tls_cert: Path | None = typer.Option(
        None, help="PEM certificate chain: serve with TLS (needs --tls-key)."
    ),
    tls_key: Path | None = typer.Option(None, help="PEM private key of --tls-cert."),
    loop: str = typer.Option(
        "auto", help="Event loop: auto (uvloop when installed), uvloop or asyncio."
    ),
    waiting_expiry: float = typer.Option(
        3600.0,
        help="Seconds a table waiting for players may go without a change before the server "
        "closes it (0: never).",
    ),
    drop_grace: float = typer.Option(
        30.0,
        help="Seconds a player may be disconnected during a game before, on their turn, the "
        "server plays for them (as if they had left; they take the seat back by reconnecting).",
    ),
    secret_file: str = typer.Option(
        "",
        help="The server's key, made there when missing: the deals and bots of every table "
        "come from it; keep it apart from the database (default: DB path + '.key'; required "
        "with PostgreSQL, the same file for every server on the database).",
    ),
    max_connections: int = typer.Option(
        ConnectionLimits.max_connections,
        help="Connections held at once, in all; lowered to fit the open-file limit (0: only"
        " that). One beyond is closed at once.",
    ),
    max_connections_per_address: int = typer.Option(
        ConnectionLimits.per_address,
        help="Connections one client address may hold at once, its newest closed within a"
        " second (0: no bound; Linux only).",
    ),
    max_streams_per_connection: int = typer.Option(
        ConnectionLimits.streams_per_connection,
        help="Calls open at once on one connection (a Watch or Play stream is one as long as"
        " it lasts); one beyond is refused, and a client's own calls beyond it wait (0: no"
        " bound).",
    ),
    handshake_seconds: float = typer.Option(
        ConnectionLimits.handshake_seconds,
        help="Seconds a new connection has to finish its handshake (TLS, HTTP/2) or be closed.",
    ),
    idle_connection_seconds: float = typer.Option(
        ConnectionLimits.idle_seconds,
        help="Seconds a connection may go without any call before it is closed (0: never);"
        " an open Watch or Play stream is a call.",
    ),
    advertise: str = typer.Option(
        "",
        help="With PostgreSQL: the HOST:PORT clients should use to reach this server, sent to"
        " the clients of its tables that call another server (default: the address it listens"
        " on; this host's name with 0.0.0.0).",
    ),
    lease_seconds: float | None = typer.Option(
        None,
        help="With PostgreSQL: seconds this server's lease on a table lasts unless renewed (it"
        " renews every third of it); a dead server's tables are taken over after about this."
        " From 0.3 to 3600.  [default: 10]",
        show_default=False,
    ),
    watcher_queue: int = typer.Option(
        TableConfig().watcher_queue,
        min=1,
        help="A stream this many updates behind is cut off (TOO_SLOW; it resumes with after).",
    ),
    bot_workers: int = typer.Option(
        TableConfig().bot_workers,
        min=1,
        help="Worker processes that decide the moves of expert bots (a search at every move,"
        " kept off the tables' event loop); their moves wait their turn for one, the tables"
        " of each creating address in turn.",
    ),
    bot_delay: float = typer.Option(
        TableConfig().bot_delay,
        min=0.0,
        max=3600.0,
        help="Seconds a built-in bot waits before each of its moves (0: at once, as for a"
        " table of bots under test; the default gives people time to see each move).",
    ),
    round_pause: float = typer.Option(
        TableConfig().round_pause,
        min=0.0,
        max=3600.0,
        help="Seconds between a round's end and the next deal (time to read the scores).",
    ),
    expert_budget: float = typer.Option(
        TableConfig().expert_budget,
        min=0.001,
        max=60.0,
        help="Seconds of search per move of an expert bot (on the reference machine: a fixed"
        " count of simulations, the same move on any machine).",
    ),
) -> None:
    """Serve Rami tables on HOST:PORT until SIGTERM, SIGINT or SIGHUP."""
    if log_level.lower() not in _LOG_LEVELS:
        typer.echo(f"rami-server: --log-level is one of {', '.join(_LOG_LEVELS)}", err=True)
        raise typer.Exit(2)
    for name, seconds in (
        ("--drop-grace", drop_grace),
        ("--waiting-expiry", waiting_expiry),
        ("--expert-budget", expert_budget),
    ):
        if not (math.isfinite(seconds) and seconds >= 0):
            typer.echo(f"rami-server: {name} is a number of seconds, 0 or more", err=True)
            raise typer.Exit(2)
    if not db:
        typer.echo(
            "rami-server: --db names a SQLite file, ':memory:' (nothing kept) or a PostgreSQL URL",
            err=True,
        )
        raise typer.Exit(2)
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    repeats = Repeats()
    for handler in logging.getLogger().handlers:
        handler.addFilter(repeats)  # first: it tells messages apart by their templates
        handler.addFilter(one_line)
    try:
        check_store(db)  # before a SQLite file's folder is made from a mistyped URL
    except OSError as e:
        typer.echo(f"rami-server: {e}", err=True)
        raise typer.Exit(1) from None
    if is_postgres_url(db):
        if not secret_file:
            typer.echo(
                "rami-server: --db postgresql://... needs --secret-file: the server key file,"
                " the same one for every server on that database (made there when missing)",
                err=True,
            )
            raise typer.Exit(2)
    elif db != ":memory:":
        folder = Path(db).expanduser().parent
        if not folder.is_dir():
            # Not made: a mistyped path would serve from a new, empty database.
            typer.echo(f"rami-server: --db {db}: no folder {folder} (make it first)", err=True)
            raise typer.Exit(2)
    config = LobbyConfig(
        allow_stacked_decks=allow_stacked_decks,
        turn_seconds=turn_seconds,
        max_tables_per_client=max_tables_per_client,
        table_creations_per_second=table_creations_per_second,
        waiting_expiry=waiting_expiry,
    )
    tls = None
    if (tls_cert is None) != (tls_key is None):
        typer.echo("rami-server: --tls-cert and --tls-key go together", err=True)
        raise typer.Exit(2)
    if tls_cert is not None and tls_key is not None:
        try:
            tls = (tls_key.read_bytes(), tls_cert.read_bytes())
        except OSError as e:
            typer.echo(f"rami-server: {e}", err=True)
            raise typer.Exit(2) from None
        # gRPC says only "could not listen" of PEM files it can't use (swapped, say).
        for flag, path, pem, marker, what in (
            ("--tls-key", tls_key, tls[0], b"PRIVATE KEY-----", "private key"),
            ("--tls-cert", tls_cert, tls[1], b"-----BEGIN CERTIFICATE-----", "certificate"),
        ):
            if marker not in pem:
                typer.echo(f"rami-server: {flag} {path} holds no PEM {what}", err=True)
                raise typer.Exit(2)
    if loop not in LOOPS:
        typer.echo(f"rami-server: --loop is one of {', '.join(LOOPS)}", err=True)
        raise typer.Exit(2)
    for name, bound, most in (
        ("--max-connections", max_connections, _MOST_COUNT),
        ("--max-connections-per-address", max_connections_per_address, _MOST_COUNT),
        ("--max-streams-per-connection", max_streams_per_connection, _MOST_COUNT),
        ("--idle-connection-seconds", idle_connection_seconds, _MOST_SECONDS),
    ):
        if not 0 <= bound <= most:  # nan and inf too
            typer.echo(f"rami-server: {name} is 0 (no bound) to {most}, not {bound:g}", err=True)
            raise typer.Exit(2)
    if not 0 < handshake_seconds <= _MOST_SECONDS:
        typer.echo(
            f"rami-server: --handshake-seconds is more than 0, at most {_MOST_SECONDS}, not"
            f" {handshake_seconds:g}",
            err=True,
        )
        raise typer.Exit(2)
    if (advertise or lease_seconds is not None) and not is_postgres_url(db):
        typer.echo(
            "rami-server: --advertise and --lease-seconds are for several servers sharing a"
            " PostgreSQL database (--db postgresql://...); on its SQLite file a server holds"
            " its tables alone",
            err=True,
        )
        raise typer.Exit(2)
    if lease_seconds is None:
        lease_seconds = 10.0
    if not 0.3 <= lease_seconds <= 3600:
        typer.echo("rami-server: --lease-seconds is from 0.3 to 3600", err=True)
        raise typer.Exit(2)
    if advertise:
        where, _, number = advertise.strip().rpartition(":")
        bad_host = not where or any(c in where for c in "/@?#")
        if bad_host or not number.isdigit() or not 0 < int(number) < 65536:
            typer.echo(
                f"rami-server: --advertise {advertise!r} is not HOST:PORT (a host name or"
                " address, no scheme or path, and a port 1 to 65535)",
                err=True,
            )
            raise typer.Exit(2)
        advertise = advertise.strip()
    connections = ConnectionLimits(
        max_connections=max_connections,
        per_address=max_connections_per_address,
        streams_per_connection=max_streams_per_connection,
        handshake_seconds=handshake_seconds,
        idle_seconds=idle_connection_seconds,
    )
    try:
        table_config = TableConfig(
            bot_delay=bot_delay,
            round_pause=round_pause,
            watcher_queue=watcher_queue,
            drop_grace=max(drop_grace, 0.0),
            bot_workers=bot_workers,
            expert_budget=expert_budget,
        )
        run_loop(
            run(
                host,
                port,
                db,
                config,
                tls,
                secret_file or None,
                connections,
                table_config,
                advertise,
                lease_seconds,
            ),
            loop,
        )
    except ImportError:
        typer.echo("rami-server: uvloop is not installed (pip install uvloop)", err=True)
        raise typer.Exit(2) from None
    except OSError as e:
        typer.echo(f"rami-server: {e}", err=True)
        raise typer.Exit(1) from None


def main() -> None:
    """Entry point of ``rami-server``."""
    app()
