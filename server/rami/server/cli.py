"""``rami-server``: the command line of the server."""

from __future__ import annotations

import logging
from pathlib import Path

import typer

from .app import LOOPS, run, run_loop
from .lobby import LobbyConfig
from .table import TableConfig

__all__ = ["app", "main"]

app = typer.Typer(add_completion=False, help="Serve Rami tables over gRPC.")


@app.command()
def serve(
    port: int = typer.Option(50051, help="Port to listen on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on (0.0.0.0: every interface)."),
    db: str = typer.Option(
        "rami.db", help="SQLite file that keeps every table across restarts; ':memory:' for none."
    ),
    turn_seconds: int = typer.Option(
        0, help="Default turn clock for new tables, in seconds (0: no clock)."
    ),
    log_level: str = typer.Option("info", help="Logging level: debug, info, warning or error."),
    allow_stacked_decks: bool = typer.Option(
        False, help="Let tables be created with an explicit deck order (tests, puzzles)."
    ),
    max_tables_per_client: int = typer.Option(
        20, help="Unfinished tables one client address may have created at once."
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
        "come from it; keep it apart from the database (default: DB path + '.key').",
    ),
) -> None:
    """Serve Rami tables on HOST:PORT until SIGTERM or SIGINT."""
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if db != ":memory:":
        Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
    config = LobbyConfig(
        allow_stacked_decks=allow_stacked_decks,
        turn_seconds=turn_seconds,
        max_tables_per_client=max_tables_per_client,
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
    if loop not in LOOPS:
        typer.echo(f"rami-server: --loop is one of {', '.join(LOOPS)}", err=True)
        raise typer.Exit(2)
    try:
        tables = TableConfig(drop_grace=max(drop_grace, 0.0))
        run_loop(run(host, port, db, config, tls, secret_file or None, tables), loop)
    except ImportError:
        typer.echo("rami-server: uvloop is not installed (pip install uvloop)", err=True)
        raise typer.Exit(2) from None
    except OSError as e:
        typer.echo(f"rami-server: {e}", err=True)
        raise typer.Exit(1) from None


def main() -> None:
    """Entry point of ``rami-server``."""
    app()
