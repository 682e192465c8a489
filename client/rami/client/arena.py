"""The arena: seeded games between bot policies, in-process, and what they say.

Everything here is a pure function of its arguments: the same configuration gives the same
games, the same results and the same report, on one process or several.

- A *deal* is a game seed: it fixes the shuffle of every round of the game.
- The policies are given to the seats round-robin from their list (seat ``s`` plays
  ``policies[s % len(policies)]``). With ``duplicate``, each deal is played once per rotation of
  that assignment over the seats, so every policy meets the same cards from every seat and
  most of the luck of the deal cancels out.
- A policy's *win rate* is the mean, over the seats it held, of the seat's share of the win (a
  win shared by k seats counts 1/k). With equal policies it is ``1 / players``.
- Its *points per round* are what its seats paid, per round played.
- Every figure comes with a 95% confidence interval (normal approximation), computed over
  independent units: the deals (the rotations of one deal are not independent of each other).
- A long arena can keep each deal as it ends in a *record* (:class:`ArenaRecord`, JSON lines):
  run again with the same record, it plays only the deals the record lacks, so a measurement
  of many core-hours can be stopped and carried on, and its report is the one a single run
  would print. A record holds the configuration, the policies' settings and a digest of the
  engine's code; a run that differs in any of them is refused, never mixed in. A run holds
  its record (:func:`hold_record`): a second run on the same file is refused while the first
  goes on.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import math
import os
import random
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from rami.engine import POLICIES, Game, NextRound, Options, Phase, Policy, get_variant, view

__all__ = [
    "ArenaConfig",
    "ArenaRecord",
    "ArenaResult",
    "Comparison",
    "DealResult",
    "Estimate",
    "GameResult",
    "PolicyStats",
    "RecordContents",
    "assignments",
    "code_digest",
    "compare_results",
    "estimate",
    "hold_record",
    "pair_difference",
    "play_deal",
    "play_game",
    "read_record",
    "run_arena",
    "summarise",
]

#: A game longer than this many actions is a bug (the engine's own caps end every game).
MAX_ACTIONS = 200_000
Z95 = 1.959964


@dataclass(frozen=True, slots=True)
class ArenaConfig:
    """What to play: the variant and its options, the policies, how many deals, the seed."""

    variant: str
    players: int
    policies: tuple[str, ...]
    deals: int
    seed: str = "0"
    duplicate: bool = False
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        get_variant(self.variant)
        if not self.policies:
            raise ValueError("name at least one policy")
        if len(self.policies) > self.players:
            raise ValueError(
                f"{len(self.policies)} policies for {self.players} seats: some would never play"
            )
        if self.deals < 1:
            raise ValueError("play at least one deal")
        given = dict(self.options).get("players", self.players)
        if given != self.players:
            raise ValueError(
                f"--players {self.players} and -o players={given} disagree: give the seats once"
            )
        self.game_options()  # the players and the options, which the variant must have

    def game_options(self) -> Options:
        """The table options of every game."""
        return Options.for_variant(self.variant, {**dict(self.options), "players": self.players})


@dataclass(frozen=True, slots=True)
class GameResult:
    """One game: who sat where, and how it ended."""

    seats: tuple[str, ...]
    totals: tuple[int, ...]
    winners: tuple[int, ...]
    rounds: int
    void_rounds: int
    actions: int


@dataclass(frozen=True, slots=True)
class DealResult:
    """The games of one deal (one per seat assignment)."""

    deal: int
    games: tuple[GameResult, ...]


@dataclass(frozen=True, slots=True)
class ArenaResult:
    """Every deal played, in order."""

    config: ArenaConfig
    deals: tuple[DealResult, ...]

    @property
    def games(self) -> int:
        """Games played."""
        return sum(len(d.games) for d in self.deals)

    @property
    def rounds(self) -> int:
        """Rounds played, void ones included."""
        return sum(g.rounds for d in self.deals for g in d.games)

    @property
    def void_rounds(self) -> int:
        """Rounds that ended void."""
        return sum(g.void_rounds for d in self.deals for g in d.games)

    @property
    def actions(self) -> int:
        """Actions played by every seat of every game."""
        return sum(g.actions for d in self.deals for g in d.games)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean with the half-width of its 95% confidence interval, over ``n`` units."""

    mean: float
    half: float
    n: int

    @property
    def low(self) -> float:
        """The interval's lower end."""
        return self.mean - self.half

    @property
    def high(self) -> float:
        """The interval's upper end."""
        return self.mean + self.half


@dataclass(frozen=True, slots=True)
class PolicyStats:
    """What one policy did over the arena."""

    policy: str
    seat_games: int
    wins: float
    win_rate: Estimate
    points_per_round: Estimate
    per_deal_win: tuple[float, ...] = field(repr=False, default=())
    per_deal_points: tuple[float, ...] = field(repr=False, default=())


def assignments(policies: Sequence[str], players: int, duplicate: bool) -> list[tuple[str, ...]]:
    """The seat assignments of one deal: the round-robin one, and with ``duplicate`` every
    distinct rotation of it over the seats (in rotation order)."""
    base = tuple(policies[s % len(policies)] for s in range(players))
    if not duplicate:
        return [base]
    out: list[tuple[str, ...]] = []
    for k in range(players):
        rotated = tuple(base[(s + k) % players] for s in range(players))
        if rotated not in out:
            out.append(rotated)
    return out


def play_game(
    variant: str,
    options: Options,
    seed: str,
    seats: Sequence[str],
    policies: Mapping[str, Policy] = POLICIES,
) -> GameResult:
    """Play one whole game in the engine, each seat by its policy; deterministic in ``seed``."""
    game, _ = Game.new(variant, options, seed)
    rngs = [random.Random(f"{seed}:{s}:{name}") for s, name in enumerate(seats)]
    chosen = [policies[name] for name in seats]
    actions = 0
    while game.phase != Phase.GAME_OVER:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            continue
        seat = game.turn
        game.apply(seat, chosen[seat](view(game, seat), rngs[seat]))
        actions += 1
        if actions > MAX_ACTIONS:
            raise RuntimeError(f"game {seed!r} did not end after {MAX_ACTIONS} actions")
    return GameResult(
        seats=tuple(seats),
        totals=tuple(game.totals),
        winners=tuple(game.winners),
        rounds=len(game.results),
        void_rounds=sum(1 for r in game.results if r.ending == "void"),
        actions=actions,
    )


def deal_seed(seed: str, deal: int) -> str:
    """The game seed of deal number ``deal`` (from 0) of an arena seeded ``seed``."""
    return f"{seed}:{deal}"


def play_deal(
    config: ArenaConfig, deal: int, policies: Mapping[str, Policy] = POLICIES
) -> DealResult:
    """Play one deal under every seat assignment."""
    options = config.game_options()
    seed = deal_seed(config.seed, deal)
    games = tuple(
        play_game(config.variant, options, seed, seats, policies)
        for seats in assignments(config.policies, config.players, config.duplicate)
    )
    return DealResult(deal, games)


def run_arena(
    config: ArenaConfig,
    *,
    jobs: int = 1,
    policies: Mapping[str, Policy] = POLICIES,
    progress: Callable[[Mapping[int, DealResult]], None] | None = None,
    done: Mapping[int, DealResult] | None = None,
    on_deal: Callable[[DealResult], None] | None = None,
) -> ArenaResult:
    """Play every deal (on ``jobs`` processes); the result does not depend on ``jobs``.

    ``done`` holds deals already played (a record's): those are not played again. Each deal
    played is given to ``on_deal`` as it ends, in deal order; ``progress`` gets the deals in
    hand by number (``done``'s among them) after each."""
    unknown = sorted(set(config.policies) - set(policies))
    if unknown:
        raise ValueError(f"unknown policy {unknown[0]!r}: choose from {', '.join(policies)}")
    have = {i: d for i, d in (done or {}).items() if 0 <= i < config.deals}
    indices = [i for i in range(config.deals) if i not in have]
    run = partial(play_deal, config, policies=policies)

    def took(r: DealResult) -> None:
        have[r.deal] = r
        if on_deal:
            on_deal(r)
        if progress:
            progress(have)

    if jobs <= 1:
        for i in indices:
            took(run(i))
    elif indices:
        chunk = max(1, min(8, len(indices) // (jobs * 8)))
        pool = ProcessPoolExecutor(
            max_workers=jobs, initializer=_worker_start, initargs=(os.getpid(),)
        )
        with pool:
            for r in pool.map(run, indices, chunksize=chunk):
                took(r)
    return ArenaResult(config, tuple(have[i] for i in range(config.deals)))


def _worker_start(parent: int) -> None:
    """In each worker process of a run (forked, so holding what the run held): let go of the
    records the run holds, which are the run's and not the worker's (a worker left behind
    would keep them held); and, on Linux, die with the run (a killed run's workers would play
    on the deals queued to them, then wait for ever)."""
    if _HELD:
        # /dev/null in their place: the number stays open, for the run's file object this
        # process inherited with it, which may close it some day.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in _HELD:
            os.dup2(null, fd)
        os.close(null)
        _HELD.clear()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the run died before the line above
            os._exit(1)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h

# -- records ----------------------------------------------------------------------------------

#: The version of the record's format (its first line says it).
RECORD_FORMAT = 1


@contextlib.contextmanager
def hold_record(path: Path) -> Iterator[None]:
    """Hold the record at ``path`` (made empty if there is none) for one run: ValueError if
    another run, in any process, holds it. Two runs on one record would play its missing
    deals twice, and one would read the other's line half written as a line cut short, and
    cut it. (An advisory lock of the file, released with it, also when the process dies;
    where the system has none, nothing is held.)"""
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    with path.open("ab") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(
                f"{path} is in use by another arena run: wait for it to end, or give another file"
            ) from None
        _HELD.add(f.fileno())  # the run's worker processes let go of it (_worker_start)
        try:
            yield
        finally:
            _HELD.discard(f.fileno())
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


#: The descriptors of the records held in this process (see :func:`hold_record`).
_HELD: set[int] = set()


def code_digest(package: str = "rami.engine") -> str:
    """A digest of a package's sources (by default the engine's: its rules and policies). The
    games of a seeded deal are a function of them, so deals played by other code are never
    mixed in a record."""
    import importlib

    module = importlib.import_module(package)
    assert module.__file__ is not None
    h = hashlib.sha256()
    for path in sorted(Path(module.__file__).parent.glob("*.py")):
        h.update(path.name.encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _config_dict(config: ArenaConfig) -> dict[str, Any]:
    """The configuration a record holds: everything but the count of deals (a record grows)."""
    return {
        "variant": config.variant,
        "players": config.players,
        "policies": list(config.policies),
        "seed": config.seed,
        "duplicate": config.duplicate,
        # By name (the same options in any order are the same games; a name given twice
        # is its last value, as in the games).
        "options": sorted([k, v] for k, v in dict(config.options).items()),
    }


def _deal_dict(deal: DealResult) -> dict[str, Any]:
    return {
        "deal": deal.deal,
        "games": [
            {
                "seats": list(g.seats),
                "totals": list(g.totals),
                "winners": list(g.winners),
                "rounds": g.rounds,
                "void_rounds": g.void_rounds,
                "actions": g.actions,
            }
            for g in deal.games
        ],
    }


def _deal_from(data: Any, seats: list[tuple[str, ...]]) -> DealResult:
    """A deal read back from a record, checked against the seatings the configuration plays
    (a ValueError naming what is wrong)."""
    if not isinstance(data, dict) or set(data) != {"deal", "games"}:
        raise ValueError("not a deal: expected the keys deal and games")
    deal, games = data["deal"], data["games"]
    if not isinstance(deal, int) or isinstance(deal, bool) or deal < 0:
        raise ValueError(f"deal {deal!r} is not a deal number")
    if not isinstance(games, list) or len(games) != len(seats):
        raise ValueError(f"deal {deal}: {len(seats)} games expected, one per seating")
    out = []
    for g, expected in zip(games, seats, strict=True):
        try:
            got = GameResult(
                seats=tuple(g["seats"]),
                totals=tuple(int(t) for t in g["totals"]),
                winners=tuple(int(w) for w in g["winners"]),
                rounds=int(g["rounds"]),
                void_rounds=int(g["void_rounds"]),
                actions=int(g["actions"]),
            )
        except (TypeError, KeyError, ValueError) as e:
            raise ValueError(f"deal {deal}: a game does not read ({e!r})") from None
        if got.seats != expected or len(got.totals) != len(expected):
            raise ValueError(f"deal {deal}: seats {list(got.seats)}, expected {list(expected)}")
        out.append(got)
    return DealResult(deal, tuple(out))


@dataclass(slots=True)
class ArenaRecord:
    """An arena's deals kept in a file as they end (JSON lines: a header, then one deal a
    line), so that a run stopped at any moment is carried on by the next with the same file.

    The header holds the configuration (but the count of deals), ``settings`` (what else
    fixes the policies' moves, such as the expert's budget) and :func:`code_digest`. Opening a
    record whose header differs raises ValueError and leaves the file as it was. A last line
    cut short (the run was killed while writing it) is dropped.

    ``read_only`` is a record of other engine code opened for the deals it already holds
    (see :meth:`open`): it takes no deal."""

    path: Path
    deals: dict[int, DealResult]
    read_only: bool = False

    @classmethod
    def open(
        cls,
        path: Path,
        config: ArenaConfig,
        settings: Mapping[str, Any] | None = None,
        *,
        complete: int | None = None,
    ) -> ArenaRecord:
        """The record at ``path`` for ``config``, made when there is none.

        ``complete`` is the count of deals a run asks for: a record of other engine code
        (but the same configuration and settings) that holds every deal below it opens
        read-only, since a run of those deals plays nothing and so mixes nothing; short of
        one, it is refused as any other difference is."""
        header = {
            "rami_arena": RECORD_FORMAT,
            "config": _config_dict(config),
            "settings": dict(sorted((settings or {}).items())),
            "code": code_digest(),
        }
        # The header as JSON reads it back (tuples become lists), for the comparison.
        header = json.loads(json.dumps(header))
        if not path.exists() or path.stat().st_size == 0:
            path.write_text(json.dumps(header) + "\n")
            return cls(path, {})
        raw = path.read_bytes()
        lines = raw.split(b"\n")
        cut = len(raw)
        if lines[-1]:  # no newline at the end: the last line was being written
            cut -= len(lines[-1])
        lines = lines[:-1]
        first = _header(path, lines)

        def differs(key: str, words: str) -> ValueError:
            return ValueError(
                f"{path} holds deals of {words} ({key} {json.dumps(first.get(key))}, this "
                f"run's {json.dumps(header[key])}): give another file to start a new record"
            )

        for key, words in (("config", "another configuration"), ("settings", "other settings")):
            if first.get(key) != header[key]:
                raise differs(key, words)
        deals = _read_deals(path, lines, config)
        if first.get("code") != header["code"]:
            if complete is None or any(i not in deals for i in range(complete)):
                raise differs("code", "other engine code")
            return cls(path, deals, read_only=True)
        if cut < len(raw):
            with path.open("r+b") as f:
                f.truncate(cut)
        return cls(path, deals)

    def add(self, deal: DealResult) -> None:
        """Keep ``deal`` (on disk before this returns)."""
        if self.read_only:
            raise ValueError(
                f"{self.path} holds deals of other engine code: it is read for its deals, "
                "and takes no more"
            )
        with self.path.open("a") as f:
            f.write(json.dumps(_deal_dict(deal)) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.deals[deal.deal] = deal


def _header(path: Path, lines: list[bytes]) -> dict[str, Any]:
    """The header of a record's ``lines`` (a ValueError when they are no record)."""
    try:
        header = json.loads(lines[0]) if lines else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("rami_arena") != RECORD_FORMAT:
        raise ValueError(f"{path} is not an arena record (of format {RECORD_FORMAT})")
    return header


def _read_deals(path: Path, lines: list[bytes], config: ArenaConfig) -> dict[int, DealResult]:
    """The deals of a record's ``lines`` (the header first; none cut short), checked against
    the seatings ``config`` plays (a ValueError naming the line that is wrong)."""
    seats = assignments(config.policies, config.players, config.duplicate)
    deals: dict[int, DealResult] = {}
    for n, line in enumerate(lines[1:], start=2):
        try:
            deal = _deal_from(json.loads(line), seats)
        except ValueError as e:
            raise ValueError(f"{path}, line {n}: {e}") from None
        if deal.deal in deals and deals[deal.deal] != deal:
            raise ValueError(f"{path}, line {n}: deal {deal.deal} twice, with other games")
        deals[deal.deal] = deal
    return deals


@dataclass(frozen=True, slots=True)
class RecordContents:
    """A record as it stood when read: the code and settings that played it, and its deals
    (in deal order) as the result of its configuration."""

    code: str
    settings: Mapping[str, Any]
    result: ArenaResult


def read_record(path: Path) -> RecordContents:
    """Read the record at ``path`` without changing it (a run may be adding to it: a last line
    cut short is left out), whatever code and settings played it. A file that is no record,
    or holds no deal, raises ValueError naming what is wrong."""
    lines = path.read_bytes().split(b"\n")[:-1]  # the last line is empty, or cut short
    header = _header(path, lines)
    c = header.get("config")
    try:
        config = ArenaConfig(
            c["variant"],
            c["players"],
            tuple(c["policies"]),
            max(1, len(lines) - 1),
            c["seed"],
            c["duplicate"],
            tuple((k, v) for k, v in c["options"]),
        )
    except (TypeError, KeyError, ValueError) as e:
        raise ValueError(f"{path}: its configuration does not read ({e})") from None
    deals = _read_deals(path, lines, config)
    if not deals:
        raise ValueError(f"{path} holds no deal yet")
    ordered = tuple(deals[i] for i in sorted(deals))
    return RecordContents(
        str(header.get("code", "")),
        dict(header.get("settings") or {}),
        ArenaResult(replace(config, deals=len(ordered)), ordered),
    )


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two records of the same games (configuration and seed), each played by its own code or
    settings, over the deals both hold: each one's first policy less its second, and the
    second record's difference less the first's, every figure paired deal by deal."""

    deals: int
    first: tuple[Estimate, Estimate]  # win rate, points per round
    second: tuple[Estimate, Estimate]
    change: tuple[Estimate, Estimate]


def _deal_difference(deal: DealResult, a: str, b: str) -> tuple[float, float]:
    """Policy ``a`` less ``b`` in one deal: win rate, points per round."""
    fa, fb = _deal_figures(deal, a), _deal_figures(deal, b)
    assert fa is not None and fb is not None
    return (
        fa[1] / fa[0] - fb[1] / fb[0],
        (fa[2] / fa[3] if fa[3] else 0.0) - (fb[2] / fb[3] if fb[3] else 0.0),
    )


def compare_results(first: ArenaResult, second: ArenaResult) -> Comparison:
    """Compare two results of one configuration and seed (two policies, see
    :class:`Comparison`); a ValueError when they are not of the same games."""
    a, b = first.config, second.config
    differ = [
        f"{name} {_shown(getattr(a, name))} against {_shown(getattr(b, name))}"
        for name in ("variant", "players", "policies", "seed", "duplicate", "options")
        if getattr(a, name) != getattr(b, name)
    ]
    if differ:
        raise ValueError(
            f"the records are of other games ({'; '.join(differ)}): compare records of one "
            "arena command, played by other code or settings"
        )
    policies = tuple(dict.fromkeys(a.policies))
    if len(policies) != 2:
        raise ValueError(
            f"the records' arena has {len(policies)} policies ({', '.join(policies)}): a "
            "comparison is of two, one against the other"
        )
    theirs = {d.deal: d for d in second.deals}
    pairs = [(d, theirs[d.deal]) for d in first.deals if d.deal in theirs]
    if not pairs:
        raise ValueError("the records hold no deal in common")
    x = [_deal_difference(d, *policies) for d, _ in pairs]
    y = [_deal_difference(d, *policies) for _, d in pairs]
    return Comparison(
        len(pairs),
        (estimate([w for w, _ in x]), estimate([p for _, p in x])),
        (estimate([w for w, _ in y]), estimate([p for _, p in y])),
        (
            estimate([v[0] - u[0] for u, v in zip(x, y, strict=True)]),
            estimate([v[1] - u[1] for u, v in zip(x, y, strict=True)]),
        ),
    )


def _shown(value: Any) -> str:
    """A configuration's value as the arena command gives it."""
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    if isinstance(value, tuple):
        return ",".join(f"{k}={v}" for k, v in value) or "none"
    return json.dumps(value)


def estimate(samples: Sequence[float]) -> Estimate:
    """The mean of ``samples`` and the half-width of its 95% interval (normal approximation)."""
    n = len(samples)
    if n == 0:
        return Estimate(math.nan, math.nan, 0)
    mean = math.fsum(samples) / n
    if n == 1:
        return Estimate(mean, math.inf, 1)
    var = math.fsum((x - mean) ** 2 for x in samples) / (n - 1)
    return Estimate(mean, Z95 * math.sqrt(var / n), n)


def _deal_figures(deal: DealResult, policy: str) -> tuple[int, float, float, int] | None:
    """For one deal and policy: seat-games, win shares, points paid, rounds sat."""
    seat_games, wins, points, rounds = 0, 0.0, 0.0, 0
    for g in deal.games:
        for s, name in enumerate(g.seats):
            if name != policy:
                continue
            seat_games += 1
            if s in g.winners:
                wins += 1 / len(g.winners)
            points += g.totals[s]
            rounds += g.rounds
    if not seat_games:
        return None
    return seat_games, wins, points, rounds


def summarise(result: ArenaResult) -> list[PolicyStats]:
    """Per policy (in the order first listed): win rate and points per round, with intervals."""
    out = []
    for policy in dict.fromkeys(result.config.policies):
        seat_games, wins = 0, 0.0
        win_samples: list[float] = []
        point_samples: list[float] = []
        for deal in result.deals:
            figures = _deal_figures(deal, policy)
            if figures is None:
                continue
            n, w, p, r = figures
            seat_games += n
            wins += w
            win_samples.append(w / n)
            point_samples.append(p / r if r else 0.0)
        out.append(
            PolicyStats(
                policy,
                seat_games,
                wins,
                estimate(win_samples),
                estimate(point_samples),
                tuple(win_samples),
                tuple(point_samples),
            )
        )
    return out


def pair_difference(a: PolicyStats, b: PolicyStats) -> tuple[Estimate, Estimate]:
    """``a`` minus ``b``, paired deal by deal: (win rate, points per round)."""
    return (
        estimate([x - y for x, y in zip(a.per_deal_win, b.per_deal_win, strict=True)]),
        estimate([x - y for x, y in zip(a.per_deal_points, b.per_deal_points, strict=True)]),
    )


def parse_options(pairs: Iterable[str]) -> tuple[tuple[str, Any], ...]:
    """Table options from ``name=value`` texts (integers, true/false, or words)."""
    out: list[tuple[str, Any]] = []
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"an option is name=value, not {pair!r}")
        value: Any = text
        if text.lower() in ("true", "false"):
            value = text.lower() == "true"
        else:
            try:
                value = int(text)
            except ValueError:
                value = text
        out.append((name.strip(), value))
    return tuple(out)
