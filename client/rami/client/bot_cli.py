"""``rami-bot``: run an engine policy over the network, or pit policies against each other.

- ``rami-bot connect HOST[:PORT] --table ID --policy strong`` plays one seat of a table
  through the bot kit, exactly as a third-party bot would, and prints a one-line summary.
- ``rami-bot arena --variant tallage --policies strong,greedy --games 400 --duplicate``
  plays seeded games in-process (no server) and prints win rates and points per round with
  their 95% intervals. The arena's logic is in :mod:`rami.client.arena`; this only formats.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import grpc
import typer

from rami.engine import POLICIES, VARIANTS, Policy
from rami.engine.policies import EXPERT_BUDGET, make_expert

from .arena import (
    ArenaConfig,
    ArenaRecord,
    ArenaResult,
    Comparison,
    DealResult,
    Estimate,
    RecordContents,
    code_digest,
    compare_results,
    hold_record,
    pair_difference,
    parse_options,
    read_record,
    run_arena,
)
from .arena import summarise as summarise_arena
from .botkit import BotResult, CommandRefusedError, play, policy_decider
from .ladder import LadderConfig, format_ladder, ladder_csv, run_ladder
from .link import GRPC_SCHEMES, refusal_reason

__all__ = ["app", "format_arena", "format_summary", "main", "normalise_target"]

DEFAULT_PORT = 50051

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Rami bots: play a policy over the network, or run an arena between policies.",
    rich_markup_mode=None,  # plain help, wrapped at words (Rich's columns cut long words)
)


def normalise_target(target: str) -> str:
    """``HOST[:PORT]`` as a gRPC target, with the default port when none is given; a gRPC
    target name with its scheme (``dns:///host:port``, ``ipv4:a:p,b:p``: several servers) as
    it is."""
    if target.startswith(GRPC_SCHEMES):
        return target
    if target.startswith("["):  # an IPv6 address: [::1] or [::1]:50051
        return target if "]:" in target else f"{target}:{DEFAULT_PORT}"
    if target.count(":") == 1:
        return target
    if ":" in target:  # a bare IPv6 address
        return f"[{target}]:{DEFAULT_PORT}"
    return f"{target}:{DEFAULT_PORT}"


def format_summary(result: BotResult, policy: str) -> str:
    """One line: the seat, what it did, and how the game ended."""
    head = (
        f"seat {result.seat} ({policy}): {result.actions} actions, {len(result.refused)} refused, "
        f"{result.reconnects} reconnects"
    )
    final = result.final
    if final is None:
        return f"{head}; the game did not finish"
    totals = " / ".join(str(p.total) for p in final.players)
    winners = ", ".join(str(w) for w in final.winners)
    plural = "s" if len(final.winners) > 1 else ""
    return (
        f"{head}; game over after {len(final.results)} rounds: totals {totals}; "
        f"winner{plural}: seat{plural} {winners}"
    )


def _credentials(tls: bool, ca: Path | None) -> grpc.ChannelCredentials | None:
    """The channel's TLS credentials (``--tls``, ``--ca``), None for plain text; exits 2,
    saying why, on a CA file it can't read."""
    if not tls and ca is None:
        return None
    try:
        root = ca.read_bytes() if ca is not None else None
    except OSError as e:
        typer.echo(f"rami-bot: can't read {ca}: {e.strerror}", err=True)
        raise typer.Exit(2) from None
    return grpc.ssl_channel_credentials(root)


@app.command()
def connect(
    target: Annotated[
        str,
        typer.Argument(
            metavar="HOST[:PORT]",
            help="The server (port 50051 by default), or a gRPC target: dns:///HOST:PORT, "
            "or ipv4:A:PORT,B:PORT for several servers.",
        ),
    ],
    table: Annotated[str, typer.Option("--table", help="The table's id.")],
    policy: Annotated[str, typer.Option(help="random, greedy, strong or expert.")] = "strong",
    seat: Annotated[int | None, typer.Option(help="The seat wanted (default: first free).")] = None,
    name: Annotated[str, typer.Option(help="The player's name.")] = "",
    token: Annotated[
        str | None, typer.Option(help="A seat's token: take the seat back instead of joining.")
    ] = None,
    seed: Annotated[str | None, typer.Option(help="Seed of the policy's random choices.")] = None,
    timeout: Annotated[float | None, typer.Option(help="Give up after this many seconds.")] = None,
    tls: Annotated[bool, typer.Option("--tls", help="Speak TLS to the server.")] = False,
    ca: Annotated[
        Path | None,
        typer.Option("--ca", help="PEM file of the CA to trust (implies --tls)."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log every refusal.")] = False,
    unary: Annotated[
        bool,
        typer.Option(
            "--unary", help="Send commands as unary Act calls beside a Watch stream, not on Play."
        ),
    ] = False,
    expert_budget: Annotated[
        float,
        typer.Option(min=0.001, help="The expert's budget per move (seconds, as in arena)."),
    ] = EXPERT_BUDGET,
) -> None:
    """Play one seat of a table with an engine policy until the game is over."""
    if policy not in POLICIES:
        raise typer.BadParameter(f"choose one of {', '.join(POLICIES)}", param_hint="--policy")
    credentials = _credentials(tls, ca)
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="rami-bot: %(message)s",
    )
    seated: list[BotResult] = []
    progress = BotResult()  # read after a timeout: did a server answer at all?

    def joined(result: BotResult) -> None:
        seated.append(result)
        typer.echo(
            f"rami-bot: seat {result.seat} at table {table}; to take it back after a crash:"
            f" --token {result.token}",
            err=True,
        )

    def unreached(within: str = "") -> str:
        hint = (
            "with TLS, and a certificate --ca trusts? the lines above say why"
            if credentials is not None
            else "one that speaks TLS needs --tls"
        )
        return (
            f"rami-bot: no Rami server answered at {target}{within} (is rami-server running"
            f" there? {hint})"
        )

    decide = policy_decider(
        policy, seed if seed is not None else f"{table}:{policy}", expert_budget=expert_budget
    )
    coro = play(
        normalise_target(target),
        table,
        decide,
        name=name or f"{policy.capitalize()} bot",
        seat=seat,
        token=token,
        credentials=credentials,
        stream=not unary,
        on_join=joined,
        result=progress,
    )
    try:
        result = asyncio.run(asyncio.wait_for(coro, timeout) if timeout else coro)
    except grpc.aio.AioRpcError as e:
        typer.echo(f"rami-bot: {e.code().name}: {e.details()}", err=True)
        answered = refusal_reason(e) or progress.answered
        if e.code() == grpc.StatusCode.UNAVAILABLE and not (seated or token or answered):
            typer.echo(unreached(), err=True)
        raise typer.Exit(1) from None
    except CommandRefusedError as e:
        typer.echo(f"rami-bot: {e}", err=True)
        raise typer.Exit(1) from None
    except TimeoutError:
        if seated or token is not None:
            typer.echo(f"rami-bot: the game did not end within {timeout:g} s", err=True)
        elif progress.answered:
            typer.echo(
                f"rami-bot: the server at {target} answered, but did not seat the bot within"
                f" {timeout:g} s: {progress.answered}",
                err=True,
            )
        else:
            typer.echo(unreached(f" within {timeout:g} s"), err=True)
        raise typer.Exit(1) from None
    for refusal in result.refused:
        typer.echo(f"rami-bot: refused: {refusal}", err=True)
    typer.echo(format_summary(result, policy))


@app.command()
def create(
    target: Annotated[
        str,
        typer.Argument(metavar="HOST[:PORT]", help="The server (port 50051 by default)."),
    ],
    variant: Annotated[str, typer.Option(help="portuguese, tallage or simple.")] = "tallage",
    bots: Annotated[
        str,
        typer.Option(help="The built-in bots to seat, comma-separated (random, greedy, ...)."),
    ] = "strong",
    free: Annotated[int, typer.Option(min=1, help="The seats left free for your bots.")] = 1,
    tls: Annotated[bool, typer.Option("--tls", help="Speak TLS to the server.")] = False,
    ca: Annotated[
        Path | None,
        typer.Option("--ca", help="PEM file of the CA to trust (implies --tls)."),
    ] = None,
) -> None:
    """Create a table with built-in bots in some seats and the rest free, and print its id:
    the TABLE_ID a bot of your own joins (the game starts when its last seat is taken)."""
    from rami.v1 import game_pb2, lobby_service_pb2, lobby_service_pb2_grpc

    from .convert import VARIANT_IDS

    if variant not in VARIANT_IDS:
        raise typer.BadParameter(f"choose one of {', '.join(VARIANT_IDS)}", param_hint="--variant")
    policies = [b.strip() for b in bots.split(",") if b.strip()]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise typer.BadParameter(
            f"unknown bot {unknown[0]!r}: choose from {', '.join(POLICIES)}", param_hint="--bots"
        )
    players = len(policies) + free
    if not 2 <= players <= 6:
        raise typer.BadParameter(
            f"{len(policies)} bots and {free} free seats make {players} players: a table"
            " seats 2 to 6",
            param_hint="--bots",
        )
    credentials = _credentials(tls, ca)
    where = normalise_target(target)
    channel = (
        grpc.insecure_channel(where)
        if credentials is None
        else grpc.secure_channel(where, credentials)
    )
    try:
        with channel:
            lobby = lobby_service_pb2_grpc.LobbyServiceStub(channel)  # type: ignore[no-untyped-call]
            created = lobby.CreateTable(
                lobby_service_pb2.CreateTableRequest(
                    name=f"{', '.join(policies) or 'open'} table",
                    variant=VARIANT_IDS[variant],  # type: ignore[arg-type]
                    options=game_pb2.Options(players=players),
                ),
                timeout=10,
            )
            owner = (("rami-token", created.owner_token),)
            for policy in policies:
                lobby.AddBot(
                    lobby_service_pb2.AddBotRequest(table_id=created.table.table_id, policy=policy),
                    metadata=owner,
                    timeout=10,
                )
    except grpc.RpcError as e:
        code = e.code() if isinstance(e, grpc.Call) else None
        details = e.details() if isinstance(e, grpc.Call) else str(e)
        typer.echo(f"rami-bot: {code.name if code else 'error'}: {details}", err=True)
        raise typer.Exit(1) from None
    table_id = created.table.table_id
    typer.echo(table_id)
    seats = "1 seat is" if free == 1 else f"{free} seats are"
    typer.echo(
        f"rami-bot: {seats} free at table {table_id} ({variant}); the game starts when the"
        f" last is taken: rami-bot connect {target} --table {table_id}, or your own bot",
        err=True,
    )


def _ci(e: Estimate, digits: int, signed: bool = False) -> str:
    sign = "+" if signed else ""
    return f"{e.mean:{sign}.{digits}f} ± {e.half:.{digits}f}"


def format_arena(result: ArenaResult) -> list[str]:
    """The arena's report, line by line (the same for the same configuration)."""
    c = result.config
    stats = summarise_arena(result)
    seatings = result.games // len(result.deals)
    how = (
        f"{len(result.deals)} deals × {seatings} seatings"
        if c.duplicate
        else (f"{len(result.deals)} deals")
    )
    options = "".join(f", {k}={v}" for k, v in c.options)
    lines = [
        f"arena: {c.variant}, {c.players} players{options}; {how} = {result.games} games; "
        f"seed {c.seed}{' (duplicate)' if c.duplicate else ''}",
        f"{'policy':<10} {'seat-games':>10} {'wins':>8}  {'win rate (95% CI)':<22} "
        f"{'points/round (95% CI)':<22}",
    ]
    for s in stats:
        lines.append(
            f"{s.policy:<10} {s.seat_games:>10} {s.wins:>8.1f}  {_ci(s.win_rate, 3):<22} "
            f"{_ci(s.points_per_round, 2):<22}"
        )
    if len(stats) == 2:
        win, points = pair_difference(stats[0], stats[1])
        lines.append(
            f"{stats[0].policy} − {stats[1].policy} (paired by deal): win rate "
            f"{_ci(win, 3, True)}, points/round {_ci(points, 2, True)}"
        )
    rounds = result.rounds
    lines.append(
        f"rounds: {rounds} ({rounds / result.games:.2f} per game), void {result.void_rounds} "
        f"({100 * result.void_rounds / max(1, rounds):.1f}%); actions: {result.actions}"
    )
    return lines


#: The arena's policies unless told; and the ladder's.
ARENA_POLICIES = "strong,greedy"
LADDER_POLICIES = ("random", "greedy", "strong", "expert", "ismcts")


def _ismcts(simulations: int, horizon: int) -> Policy | str:
    """OpenSpiel's ISMCTS as a policy, or why it can't be had."""
    try:
        from rami.rl.ismcts import IsmctsPolicy
    except ImportError as e:
        return f"it needs OpenSpiel: pip install 'rami[rl]' ({e.name or e} is missing)"
    policy: Policy = IsmctsPolicy(simulations, horizon)
    return policy


@app.command()
def arena(
    variant: Annotated[str, typer.Option(help="portuguese, tallage or simple.")] = "tallage",
    players: Annotated[
        int | None,
        typer.Option(min=2, max=6, show_default=False, help="Seats per game [default: 2]."),
    ] = None,
    policies: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated policies, given to the seats round-robin (default: "
            "strong,greedy; with --ladder: random, greedy, strong, expert and ismcts)."
        ),
    ] = None,
    games: Annotated[
        int,
        typer.Option(
            min=1,
            help="Deals (seeded games); with --duplicate each deal is "
            "played once per rotation of the seats.",
        ),
    ] = 100,
    seed: Annotated[str, typer.Option(help="The arena's seed: same seed, same games.")] = "0",
    duplicate: Annotated[
        bool, typer.Option("--duplicate", help="Play every deal from every seat assignment.")
    ] = False,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="A table option, name=value.")
    ] = None,
    jobs: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    expert_budget: Annotated[
        float,
        typer.Option(
            min=0.001,
            help="The expert's budget per move, in seconds of the reference machine (it "
            "fixes a count of simulations: the games stay the same on any machine).",
        ),
    ] = EXPERT_BUDGET,
    ladder: Annotated[
        bool,
        typer.Option(
            "--ladder",
            help="Play every pair of --policies (default: random, greedy, strong, expert and "
            "ismcts) on the same --games duplicate 2-player deals, and print ratings with 95% "
            "intervals.",
        ),
    ] = False,
    csv_path: Annotated[
        Path | None, typer.Option("--csv", help="With --ladder: also write the table as CSV.")
    ] = None,
    ismcts_simulations: Annotated[
        int, typer.Option(min=1, help="OpenSpiel's ISMCTS (policy ismcts): simulations a step.")
    ] = 16,
    ismcts_horizon: Annotated[
        int, typer.Option(min=1, help="OpenSpiel's ISMCTS: turns of the round it searches.")
    ] = 24,
    record: Annotated[
        Path | None,
        typer.Option(
            help="Keep each deal in this file (JSON lines) as it ends; run again with the same "
            "file to play only the deals it lacks (a long arena can be stopped and carried "
            "on; --games may grow). A file of another configuration, budget or engine code is "
            "refused."
        ),
    ] = None,
) -> None:
    """Play seeded games between policies in-process and print how each did."""
    if variant not in VARIANTS:
        raise typer.BadParameter(f"choose one of {', '.join(VARIANTS)}", param_hint="--variant")
    chosen: dict[str, Policy] = {**POLICIES, "expert": make_expert(expert_budget)}
    wanted = (
        policies
        if policies is not None
        else ",".join(LADDER_POLICIES)
        if ladder
        else ARENA_POLICIES
    )
    names = tuple(p.strip() for p in wanted.split(",") if p.strip())
    missing = ""
    if "ismcts" in names:  # OpenSpiel is imported only when asked for
        ismcts = _ismcts(ismcts_simulations, ismcts_horizon)
        if isinstance(ismcts, str):
            missing = ismcts
            if policies is None:  # the ladder's default: on without it
                typer.echo(f"ladder: without ismcts ({missing})", err=True)
                names = tuple(p for p in names if p != "ismcts")
        else:
            chosen["ismcts"] = ismcts
    unknown = [p for p in names if p not in chosen]
    if unknown:
        why = f" ({missing})" if unknown[0] == "ismcts" and missing else ""
        known = ", ".join([*chosen, *([] if "ismcts" in chosen else ["ismcts"])])
        raise typer.BadParameter(
            f"unknown policy {unknown[0]!r}{why}: choose from {known}",
            param_hint="--policies",
        )
    if csv_path is not None and not ladder:
        raise typer.BadParameter(
            "--csv writes the ladder's table: it goes with --ladder", param_hint="--csv"
        )
    try:
        parsed = parse_options(option or ())
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--option") from None
    seats = dict(parsed).get("players")  # -o players=N: the seats, as --players says them
    if ladder:
        if record is not None:
            raise typer.BadParameter(
                "a ladder keeps no record: --record is for an arena of two or more policies",
                param_hint="--record",
            )
        if players not in (None, 2):
            raise typer.BadParameter("a ladder plays 2 players", param_hint="--players")
        if seats not in (None, 2):
            raise typer.BadParameter(
                f"a ladder plays 2 players: drop -o players={seats}", param_hint="--option"
            )
        try:
            ladder_config = LadderConfig(variant, names, games, seed, parsed)
        except Exception as e:  # a bad option or count: say which
            raise typer.BadParameter(str(e)) from None
        start = time.perf_counter()
        done = run_ladder(
            ladder_config,
            jobs=jobs,
            policies=chosen,
            progress=lambda a, b: typer.echo(f"ladder: {a} v {b}...", err=True),
        )
        for line in format_ladder(done):
            typer.echo(line)
        elapsed = time.perf_counter() - start
        typer.echo(f"ladder took {elapsed:.1f} s ({jobs} jobs)")
        if csv_path is not None:
            csv_path.write_text(ladder_csv(done))
        return
    if players is None:
        players = seats if isinstance(seats, int) and not isinstance(seats, bool) else 2
    try:
        config = ArenaConfig(variant, players, names, games, seed, duplicate, parsed)
    except Exception as e:  # a bad option or count: say which
        raise typer.BadParameter(str(e)) from None
    kept: ArenaRecord | None = None
    held = contextlib.ExitStack()
    if record is not None:
        settings: dict[str, object] = {}
        if "expert" in names:
            settings["expert_budget"] = expert_budget
        if "ismcts" in names:
            settings.update(
                ismcts_simulations=ismcts_simulations,
                ismcts_horizon=ismcts_horizon,
                ismcts_code=code_digest("rami.rl"),
            )
        try:
            held.enter_context(hold_record(record))  # until the run ends
            kept = ArenaRecord.open(record, config, settings, complete=games)
        except (OSError, ValueError) as e:
            held.close()
            raise typer.BadParameter(str(e), param_hint="--record") from None
        if kept.read_only:
            typer.echo(
                f"arena: {record} was played by other engine code: its {games} deals are "
                "reported, and no deal is added to it",
                err=True,
            )
    start = time.perf_counter()
    recorded = {i for i in (kept.deals if kept else {}) if i < games}
    before = len(recorded)
    shown = [start]

    def progress(so_far: Mapping[int, DealResult]) -> None:
        # A line now and then on stderr (a long arena is otherwise silent until its report),
        # with the paired difference so far when two policies play.
        now = time.perf_counter()
        have = len(so_far)
        if now - shown[0] < PROGRESS_EVERY and have < games:
            return
        shown[0] = now
        played = have - before
        left = (now - start) / played * (games - have) if played else 0.0
        line = (
            f"arena: {have}/{games} deals ({before} from the record), {now - start:.0f} s, "
            f"about {left:.0f} s left"
        )
        stats = summarise_arena(ArenaResult(config, tuple(so_far[i] for i in sorted(so_far))))
        if len(stats) == 2 and have > 1:
            win, _ = pair_difference(stats[0], stats[1])
            line += f"; {stats[0].policy} − {stats[1].policy} so far: {_ci(win, 3, True)}"
        typer.echo(line, err=True)

    try:
        with held:
            result = run_arena(
                config,
                jobs=jobs,
                policies=chosen,
                progress=progress,
                done=kept.deals if kept else None,
                on_deal=kept.add if kept else None,
            )
    except KeyboardInterrupt:
        if kept is None:
            typer.echo("arena: stopped (without --record, nothing was kept)", err=True)
        else:
            have = len([i for i in kept.deals if i < games])
            typer.echo(
                f"arena: stopped with {have}/{games} deals in {record}: the same command "
                "carries it on",
                err=True,
            )
        raise typer.Exit(130) from None
    elapsed = time.perf_counter() - start
    for line in format_arena(result):
        typer.echo(line)
    if before == games:
        typer.echo(f"games/second: none played (every deal came from {record})")
    elif before:
        played = sum(len(d.games) for d in result.deals if d.deal not in recorded)
        typer.echo(
            f"games/second: {played / elapsed:.2f} ({elapsed:.1f} s, {jobs} jobs; "
            f"{games - before} deals played now, {before} from {record})"
        )
    else:
        typer.echo(f"games/second: {result.games / elapsed:.2f} ({elapsed:.1f} s, {jobs} jobs)")


@app.command()
def compare(
    first: Annotated[
        Path, typer.Argument(metavar="FIRST", help="An arena record (arena --record).")
    ],
    second: Annotated[
        Path,
        typer.Argument(
            metavar="SECOND",
            help="A record of the same arena command, played by other code or settings.",
        ),
    ],
) -> None:
    """Compare two arena records of the same games (one arena command: variant, players, two
    policies, seed, --duplicate and options) played by other code or settings, such as a
    policy before and after a change. Over the deals both records hold (the same deal number
    deals the same cards in both), it prints each record's first policy less its second,
    and the second record's difference less the first's, each with its 95% interval. The
    records are only read (an arena may be adding to one)."""
    read = []
    for path, hint in ((first, "FIRST"), (second, "SECOND")):
        try:
            read.append(read_record(path))
        except OSError as e:
            raise typer.BadParameter(f"{path}: {e.strerror or e}", param_hint=hint) from None
        except ValueError as e:
            raise typer.BadParameter(str(e), param_hint=hint) from None
    try:
        compared = compare_results(read[0].result, read[1].result)
    except ValueError as e:
        raise typer.BadParameter(f"{first} and {second}: {e}") from None
    for line in format_comparison(read[0], read[1], compared, (str(first), str(second))):
        typer.echo(line)


def format_comparison(
    first: RecordContents,
    second: RecordContents,
    compared: Comparison,
    names: tuple[str, str],
) -> list[str]:
    """The comparison's report, line by line."""
    c = first.result.config
    a, b = dict.fromkeys(c.policies)
    options = "".join(f", {k}={v}" for k, v in c.options)
    lines = [
        f"compare: {c.variant}, {c.players} players{options}; seed {c.seed}"
        f"{' (duplicate)' if c.duplicate else ''}; {a} − {b} over the {compared.deals} deals "
        "both records hold, paired by deal",
    ]
    for label, contents, name in (("first", first, names[0]), ("second", second, names[1])):
        settings = "".join(f", {k} {v}" for k, v in contents.settings.items())
        lines.append(
            f"{label}: {name} ({len(contents.result.deals)} deals; code "
            f"{contents.code or 'unknown'}{settings})"
        )
    lines.append(f"{'':<15} {'win rate (95% CI)':<22} {'points/round (95% CI)'}")
    for label, (win, points) in (
        ("first", compared.first),
        ("second", compared.second),
        ("second − first", compared.change),
    ):
        lines.append(f"{label:<15} {_ci(win, 3, True):<22} {_ci(points, 2, True)}")
    if first.code == second.code and first.settings == second.settings:
        lines.append(
            "note: the same code and settings played both records, so their common deals "
            "are the same games: compare records played by other code or settings"
        )
    return lines


#: Seconds between the arena's progress lines.
PROGRESS_EVERY = 30.0


def main() -> None:
    """The ``rami-bot`` console script."""
    app()


if __name__ == "__main__":
    main()
