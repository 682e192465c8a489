"""The arena: seat assignments, statistics, and reports that a seed reproduces."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rami.client import arena as arena_module
from rami.client import bot_cli
from rami.client.arena import (
    ArenaConfig,
    ArenaRecord,
    ArenaResult,
    DealResult,
    GameResult,
    assignments,
    estimate,
    hold_record,
    pair_difference,
    parse_options,
    play_game,
    run_arena,
    summarise,
)
from rami.client.bot_cli import app
from rami.engine import POLICIES, Game, NextRound, Options, Phase, view

SHORT = {"portuguese": ("rounds=1",), "tallage": ("round_cap=1",), "simple": ("round_cap=1",)}


def _arena_text(*args: str) -> list[str]:
    result = CliRunner().invoke(app, ["arena", *args])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith("games/second: ")
    return lines[:-1]


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_the_same_seed_prints_the_same_report(variant: str) -> None:
    def args(seed: str) -> list[str]:
        return [
            "--variant",
            variant,
            "--players",
            "2",
            "--policies",
            "strong,greedy",
            "--games",
            "3",
            "--seed",
            seed,
            "--duplicate",
            *(f"--option={o}" for o in SHORT[variant]),
        ]

    first = _arena_text(*args("7"))
    assert first == _arena_text(*args("7"))
    assert first[0].startswith(f"arena: {variant}, 2 players")
    assert "3 deals × 2 seatings = 6 games" in first[0]
    assert [line.split()[0] for line in first[2:4]] == ["strong", "greedy"]
    assert first[4].startswith("strong − greedy (paired by deal)")
    assert _arena_text(*args("8")) != first  # another seed, other games


def test_processes_do_not_change_the_result() -> None:
    config = ArenaConfig("simple", 2, ("greedy", "random"), 4, "p", True, (("round_cap", 1),))
    assert run_arena(config, jobs=2) == run_arena(config, jobs=1)


def test_duplicate_rotates_every_assignment_over_the_seats() -> None:
    assert assignments(["strong", "greedy"], 2, False) == [("strong", "greedy")]
    assert assignments(["strong", "greedy"], 2, True) == [
        ("strong", "greedy"),
        ("greedy", "strong"),
    ]
    assert assignments(["a", "b"], 4, True) == [("a", "b", "a", "b"), ("b", "a", "b", "a")]
    three = assignments(["a", "b", "c"], 3, True)
    assert len(three) == 3
    for seat in range(3):
        assert sorted(a[seat] for a in three) == ["a", "b", "c"]


def test_a_duplicate_deal_deals_the_same_cards_to_each_assignment() -> None:
    config = ArenaConfig("portuguese", 2, ("greedy", "random"), 1, "d", True, (("rounds", 1),))
    games = [Game.new("portuguese", config.game_options(), "d:0")[0] for _ in range(2)]
    assert games[0].hands == games[1].hands and games[0].stock == games[1].stock


def _result(games: list[list[GameResult]], policies: tuple[str, ...]) -> ArenaResult:
    config = ArenaConfig("simple", 2, policies, len(games))
    return ArenaResult(config, tuple(DealResult(i, tuple(g)) for i, g in enumerate(games)))


def test_a_shared_win_counts_as_a_fraction_and_points_are_per_round() -> None:
    result = _result(
        [
            [
                GameResult(("a", "b"), (10, 10), (0, 1), 2, 0, 50),
                GameResult(("b", "a"), (0, 30), (0,), 3, 1, 60),
            ],
            [
                GameResult(("a", "b"), (0, 40), (0,), 1, 0, 20),
                GameResult(("b", "a"), (20, 0), (1,), 1, 0, 20),
            ],
        ],
        ("a", "b"),
    )
    a, b = summarise(result)
    assert (a.policy, a.seat_games, a.wins) == ("a", 4, 2.5)
    assert (b.policy, b.seat_games, b.wins) == ("b", 4, 1.5)
    assert a.per_deal_win == (0.25, 1.0) and b.per_deal_win == (0.75, 0.0)
    assert a.per_deal_points == (40 / 5, 0.0) and b.per_deal_points == (10 / 5, 60 / 2)
    assert a.win_rate.mean == pytest.approx(0.625)
    win, points = pair_difference(a, b)
    assert win.mean == pytest.approx(0.25) and points.mean == pytest.approx((6 - 30) / 2)
    assert result.games == 4 and result.rounds == 7 and result.void_rounds == 1


def test_estimates_are_means_with_normal_intervals() -> None:
    e = estimate([1.0, 2.0, 3.0, 4.0])
    assert e.mean == 2.5 and e.n == 4
    assert e.half == pytest.approx(1.959964 * math.sqrt((1.25 * 4 / 3) / 4))
    assert estimate([5.0]).half == math.inf
    assert math.isnan(estimate([]).mean)


def test_configurations_are_checked() -> None:
    with pytest.raises(ValueError):
        ArenaConfig("simple", 2, ("a", "b", "c"), 1)
    with pytest.raises(ValueError):
        ArenaConfig("simple", 2, ("a",), 0)
    with pytest.raises(Exception, match="players"):
        ArenaConfig("simple", 9, ("a",), 1)
    assert parse_options(["rounds=2", "false_declaration=reject", "simple_rami_sec=true"]) == (
        ("rounds", 2),
        ("false_declaration", "reject"),
        ("simple_rami_sec", True),
    )
    with pytest.raises(ValueError):
        parse_options(["rounds"])
    result = CliRunner().invoke(app, ["arena", "--policies", "strong,clever"])
    assert result.exit_code != 0 and "clever" in result.output


def test_an_option_the_variant_lacks_or_that_contradicts_players_is_refused() -> None:
    # ``-o rounds=1`` in tallage played whole games, and ``-o players=4`` two-player ones,
    # where a table and the learning environments refuse them.
    with pytest.raises(ValueError, match="tallage has no option rounds"):
        ArenaConfig("tallage", 2, ("greedy",), 1, options=(("rounds", 1),))
    with pytest.raises(ValueError, match="portuguese has no option round_cap"):
        ArenaConfig("portuguese", 2, ("greedy",), 1, options=(("round_cap", 1),))
    with pytest.raises(ValueError, match="--players 2 and -o players=4 disagree"):
        ArenaConfig("tallage", 2, ("greedy",), 1, options=(("players", 4),))
    assert ArenaConfig("tallage", 4, ("greedy",), 1, options=(("players", 4),)).players == 4
    result = CliRunner().invoke(
        app, ["arena", "--ladder", "--policies", "greedy,strong", "-o", "rounds=1"]
    )
    assert result.exit_code != 0 and "tallage has no option rounds" in result.output
    # The seats given once, by the option alone, are taken (--players unset is no 2).
    four = CliRunner().invoke(
        app,
        ["arena", "-o", "players=4", "-o", "round_cap=1", "--games", "1", "--policies", "greedy"],
    )
    assert four.exit_code == 0, four.output
    assert "arena: tallage, 4 players" in four.output
    ladder = CliRunner().invoke(
        app, ["arena", "--ladder", "--policies", "greedy,strong", "-o", "players=4"]
    )
    assert ladder.exit_code != 0 and "a ladder plays 2 players: drop -o players=4" in (
        ladder.output
    )


def test_play_game_finishes_and_is_deterministic() -> None:
    options = Options(players=3, rounds=1)
    first = play_game("portuguese", options, "x", ("strong", "greedy", "random"))
    assert first == play_game("portuguese", options, "x", ("strong", "greedy", "random"))
    assert first.rounds == 1 and first.winners and first.actions > 0


@pytest.mark.parametrize("variant", ["portuguese", "tallage", "simple"])
def test_strong_decides_quickly(variant: str) -> None:
    """The strong policy plays legal moves (the engine checks each) and decides fast."""
    game, _ = Game.new(variant, Options(players=2, rounds=1, round_cap=1), "speed")
    rng = random.Random(0)
    times = []  # processor time, not wall-clock: other processes may share the machine
    while game.phase != Phase.GAME_OVER:
        if game.phase == Phase.ROUND_OVER:
            game.apply(None, NextRound())
            continue
        seat = game.turn
        v = view(game, seat)
        start = time.process_time()
        action = POLICIES["strong" if seat == 0 else "greedy"](v, rng)
        if seat == 0:
            times.append(time.process_time() - start)
        game.apply(seat, action)
    assert sum(times) / len(times) < 0.02


# -- records: a long arena stopped and carried on ------------------------------------------


def _record_args(record: Path, games: int, *extra: str) -> list[str]:
    return [
        "--variant",
        "simple",
        "--policies",
        "strong,greedy",
        "--games",
        str(games),
        "--seed",
        "r",
        "--duplicate",
        "--option=round_cap=1",
        "--record",
        str(record),
        *extra,
    ]


def test_a_record_carries_a_stopped_arena_on_to_the_report_of_one_run(tmp_path: Path) -> None:
    record = tmp_path / "arena.jsonl"
    whole = _arena_text(*_record_args(tmp_path / "whole.jsonl", 5))
    assert _arena_text(*_record_args(record, 2)) != whole
    lines = record.read_text().splitlines()
    assert len(lines) == 3  # the header and two deals
    # Stopped while writing its third deal: the cut line is dropped, the deal played again.
    record.write_text("\n".join(lines) + "\n" + lines[2][:25])
    result = CliRunner().invoke(app, ["arena", *_record_args(record, 5)])
    assert result.exit_code == 0, result.output
    out = result.stdout.strip().splitlines()
    assert out[:-1] == whole
    assert "3 deals played now, 2 from" in out[-1]
    assert len(record.read_text().splitlines()) == 6
    # Everything recorded: nothing is played again, the report is the same.
    config = ArenaConfig("simple", 2, ("strong", "greedy"), 5, "r", True, (("round_cap", 1),))
    kept = ArenaRecord.open(record, config)
    played: list[int] = []
    again = run_arena(config, done=kept.deals, on_deal=lambda d: played.append(d.deal))
    assert played == [] and again == run_arena(config)


def test_a_record_of_other_games_is_refused_and_left_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "arena.jsonl"
    _arena_text(*_record_args(record, 1))
    before = record.read_bytes()

    def refused(*args: str) -> str:
        result = CliRunner().invoke(app, ["arena", *args])
        assert result.exit_code == 2, result.output
        assert record.read_bytes() == before
        return " ".join(result.output.split())

    assert "another configuration" in refused(*_record_args(record, 2, "--seed", "other"))
    assert "another configuration" in refused(
        *_record_args(record, 2, "--policies", "strong,random")
    )
    # The expert's budget fixes its moves: a record of the expert at one budget is its own.
    expert = tmp_path / "expert.jsonl"
    config = ArenaConfig("simple", 2, ("expert", "strong"), 1, "r", True, (("round_cap", 1),))
    ArenaRecord.open(expert, config, {"expert_budget": 0.01})
    with pytest.raises(ValueError, match="other settings"):
        ArenaRecord.open(expert, config, {"expert_budget": 0.02})
    # Other engine code plays other games.
    monkeypatch.setattr(arena_module, "code_digest", lambda package="": "0" * 16)
    config = ArenaConfig("simple", 2, ("strong", "greedy"), 2, "r", True, (("round_cap", 1),))
    with pytest.raises(ValueError, match="other engine code"):
        ArenaRecord.open(record, config)
    assert record.read_bytes() == before


def test_a_whole_record_of_other_code_is_reported_but_never_carried_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record holding every deal a run asks for is reported whatever code played it (nothing
    is played, so nothing is mixed); asked for one deal more, the run is refused as before."""
    record = tmp_path / "arena.jsonl"
    report = _arena_text(*_record_args(record, 3))
    before = record.read_bytes()
    monkeypatch.setattr(arena_module, "code_digest", lambda package="": "0" * 16)
    result = CliRunner().invoke(app, ["arena", *_record_args(record, 3)])
    assert result.exit_code == 0, result.output
    out = result.stdout.strip().splitlines()
    assert out[:-1] == report
    assert "none played (every deal came from" in out[-1]
    assert "other engine code" in " ".join(result.output.split())
    # Fewer deals than the record holds: the report of those.
    result = CliRunner().invoke(app, ["arena", *_record_args(record, 2)])
    assert result.exit_code == 0, result.output
    assert record.read_bytes() == before
    result = CliRunner().invoke(app, ["arena", *_record_args(record, 4)])
    assert result.exit_code == 2, result.output
    assert "other engine code" in " ".join(result.output.split())
    assert record.read_bytes() == before
    # Opened for a report alone, the record takes no deal.
    config = ArenaConfig("simple", 2, ("strong", "greedy"), 3, "r", True, (("round_cap", 1),))
    kept = ArenaRecord.open(record, config, complete=3)
    assert kept.read_only
    with pytest.raises(ValueError, match="other engine code"):
        kept.add(next(iter(kept.deals.values())))
    assert record.read_bytes() == before


def test_a_record_in_use_by_another_run_is_refused(tmp_path: Path) -> None:
    """Two runs on one record would play the same deals twice, and the second, reading the
    first's last line half written, would cut it off under the first's pen."""
    record = tmp_path / "arena.jsonl"
    _arena_text(*_record_args(record, 1))
    args = ["arena", *_record_args(record, 100_000)]
    first = subprocess.Popen(
        [sys.executable, "-c", "from rami.client.bot_cli import main; main()", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while len(record.read_text().splitlines()) < 3:  # the first run is playing
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        result = CliRunner().invoke(app, ["arena", *_record_args(record, 2)])
        assert result.exit_code == 2, result.output
        assert "in use by another arena run" in " ".join(result.output.split())
    finally:
        first.kill()
        first.wait(30)
    # Its run over, the record is the next run's.
    result = CliRunner().invoke(app, ["arena", *_record_args(record, 2)])
    assert result.exit_code == 0, result.output


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(
    not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists(),
    reason="needs Linux's /proc/PID/task/TID/children to find the run's worker processes",
)
def test_a_killed_run_on_several_processes_leaves_its_record_free(tmp_path: Path) -> None:
    """The workers of ``--jobs`` are forked while the run holds its record: they must neither
    hold it after their run is killed (no later run could carry the record on) nor live on."""
    record = tmp_path / "arena.jsonl"
    args = ["arena", *_record_args(record, 100_000), "--jobs", "2"]
    first = subprocess.Popen(
        [sys.executable, "-c", "from rami.client.bot_cli import main; main()", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while not record.exists() or len(record.read_text().splitlines()) < 3 or len(workers) < 2:
            assert first.poll() is None and time.monotonic() < deadline
            workers = _children(first.pid)
            time.sleep(0.05)
        first.kill()
        first.wait(30)
        deadline = time.monotonic() + 20
        while any(_alive(w) for w in workers):
            assert time.monotonic() < deadline, "the killed run's workers live on"
            time.sleep(0.05)
        with hold_record(record):
            pass
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)


def test_a_damaged_record_is_named_by_line(tmp_path: Path) -> None:
    config = ArenaConfig("simple", 2, ("strong", "greedy"), 2, "r", True, (("round_cap", 1),))
    record = tmp_path / "arena.jsonl"
    ArenaRecord.open(record, config)
    header = record.read_text()
    for bad, words in (
        ('{"deal": 0}', "line 2: not a deal"),
        ('{"deal": -1, "games": []}', "line 2: deal -1 is not a deal number"),
        ('{"deal": 0, "games": []}', "line 2: deal 0: 2 games expected"),
        ("[1, 2", "line 2"),
    ):
        record.write_text(header + bad + "\n")
        with pytest.raises(ValueError, match=words):
            ArenaRecord.open(record, config)
        assert record.read_text() == header + bad + "\n"
    record.write_text("not json\n")
    with pytest.raises(ValueError, match="not an arena record"):
        ArenaRecord.open(record, config)
    # Games that do not fit the seatings played.
    kept = run_arena(config)
    record.write_text(header)
    good = ArenaRecord.open(record, config)
    good.add(kept.deals[0])
    head, deal = record.read_text().splitlines()
    swapped = deal.replace('"strong"', '"greedy"', 1)
    record.write_text(f"{head}\n{swapped}\n")
    with pytest.raises(ValueError, match="line 2: deal 0: seats"):
        ArenaRecord.open(record, config)


def test_a_long_arena_says_how_far_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bot_cli, "PROGRESS_EVERY", 0.0)
    result = CliRunner().invoke(
        app,
        ["arena", "--variant", "simple", "--games", "2", "--option=round_cap=1", "--seed", "p"],
    )
    assert result.exit_code == 0, result.output
    said = result.stderr.splitlines()
    assert said[0].startswith("arena: 1/2 deals (0 from the record), ")
    assert said[0].endswith(" s left")  # one deal: no difference to tell yet
    assert said[1].startswith("arena: 2/2 deals (0 from the record), ")
    assert "about 0 s left; strong − greedy so far: " in said[1]
    report = result.stdout.splitlines()
    difference = next(line for line in report if "(paired by deal): win rate " in line)
    so_far = said[1].split("so far: ")[1]
    assert difference.split("win rate ")[1].startswith(so_far)  # the report's, at the end


def test_a_record_takes_the_same_options_in_any_order_and_a_ladder_refuses_one(
    tmp_path: Path,
) -> None:
    record = tmp_path / "arena.jsonl"
    base = ["--variant", "simple", "--games", "1", "--seed", "o", "--record", str(record)]
    first = _arena_text(*base, "-o", "round_cap=1", "-o", "target=500")
    again = _arena_text(*base, "-o", "target=500", "-o", "round_cap=1")  # the same games
    assert again[1:] == first[1:]  # (the first line lists the options as given)
    assert len(record.read_text().splitlines()) == 2  # the deal was not played again
    result = CliRunner().invoke(app, ["arena", *base, "-o", "round_cap=1", "-o", "target=500"])
    assert result.stdout.strip().splitlines()[-1] == (
        f"games/second: none played (every deal came from {record})"
    )
    result = CliRunner().invoke(
        app, ["arena", "--ladder", "--policies", "random,greedy", "--record", str(record)]
    )
    assert result.exit_code == 2, result.output
    assert "a ladder keeps no record" in " ".join(result.output.split())


# -- comparing two records of the same games ------------------------------------------------


def _write_record(path: Path, code: str, deals: list[list[GameResult]], first: int = 0) -> None:
    """A record of ``deals`` (numbered from ``first``): simple, strong v greedy, duplicate."""
    config = ArenaConfig("simple", 2, ("strong", "greedy"), 1, "c", True, (("round_cap", 1),))
    header = {
        "rami_arena": arena_module.RECORD_FORMAT,
        "config": arena_module._config_dict(config),
        "settings": {},
        "code": code,
    }
    lines = [json.dumps(header)]
    for i, games in enumerate(deals, start=first):
        lines.append(json.dumps(arena_module._deal_dict(DealResult(i, tuple(games)))))
    path.write_text("\n".join(lines) + "\n")


def _deal(strong_first: tuple[int, ...], strong_second: tuple[int, ...]) -> list[GameResult]:
    """A deal's two games (strong in seat 0, then in seat 1) with these winners; each game
    one round, strong paying 10 and greedy 30."""
    return [
        GameResult(("strong", "greedy"), (10, 30), strong_first, 1, 0, 10),
        GameResult(("greedy", "strong"), (30, 10), strong_second, 1, 0, 10),
    ]


def test_two_records_of_the_same_games_compare_deal_by_deal_over_the_deals_both_hold(
    tmp_path: Path,
) -> None:
    won, lost, split = _deal((0,), (1,)), _deal((1,), (0,)), _deal((0,), (0,))
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    _write_record(first, "a" * 16, [won, lost, split])  # deals 0, 1, 2
    _write_record(second, "b" * 16, [won, won, won], first=1)  # deals 1, 2, 3
    a, b = arena_module.read_record(first), arena_module.read_record(second)
    assert a.code == "a" * 16 and [d.deal for d in b.result.deals] == [1, 2, 3]
    compared = arena_module.compare_results(a.result, b.result)
    # Deals 1 and 2: strong − greedy in win rate is -1 and 0 in the first record, +1 and +1
    # in the second; in points a round, always 10 - 30.
    assert compared.deals == 2
    assert [e.mean for e in compared.first] == [-0.5, -20.0]
    assert [e.mean for e in compared.second] == [1.0, -20.0]
    assert [e.mean for e in compared.change] == [1.5, 0.0]
    assert compared.change[0] == estimate([2.0, 1.0])

    result = CliRunner().invoke(app, ["compare", str(first), str(second)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "compare: simple, 2 players, round_cap=1; seed c (duplicate); strong − greedy over the "
        "2 deals both records hold, paired by deal"
    )
    assert lines[1] == f"first: {first} (3 deals; code {'a' * 16})"
    assert lines[2] == f"second: {second} (3 deals; code {'b' * 16})"
    assert lines[4].split()[:2] == ["first", "-0.500"]
    assert lines[5].split()[:2] == ["second", "+1.000"]
    assert lines[6].split()[:4] == ["second", "−", "first", "+1.500"]
    assert len(lines) == 7


def test_a_comparison_reads_records_as_they_stand_and_refuses_other_games(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    _arena_text(*_record_args(first, 2))
    _arena_text(*_record_args(second, 3))
    # A run adding to a record has written half a line: it is left out, and left alone.
    cut = second.read_text() + '{"deal": 3, "ga'
    second.write_text(cut)
    result = CliRunner().invoke(app, ["compare", str(first), str(second)])
    assert result.exit_code == 0, result.output
    assert "over the 2 deals both records hold" in result.stdout
    # The same code played the same deals: nothing changed, and the report says why.
    lines = result.stdout.splitlines()
    assert lines[6].split()[3:] == ["+0.000", "±", "0.000", "+0.00", "±", "0.00"]
    assert lines[7].startswith("note: the same code and settings played both records")
    assert second.read_text() == cut

    def refused(*paths: Path) -> str:
        result = CliRunner().invoke(app, ["compare", *map(str, paths)])
        assert result.exit_code == 2, result.output
        return " ".join(result.output.split())

    other = tmp_path / "other.jsonl"
    _arena_text(*_record_args(other, 1, "--seed", "other"))
    assert 'of other games (seed "r" against "other")' in refused(first, other)
    notes = tmp_path / "notes.txt"
    notes.write_text("not a record\n")
    assert "is not an arena record" in refused(first, notes)
    assert "missing.jsonl: No such file or directory" in refused(first, tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text(first.read_text().splitlines()[0] + "\n")
    assert "holds no deal yet" in refused(empty, first)
    three = tmp_path / "three.jsonl"
    _arena_text(*_record_args(three, 1, "--policies", "strong,greedy,random", "--players", "3"))
    assert "players 2 against 3; policies strong,greedy against strong,greedy,random" in (
        refused(first, three)
    )
    assert "has 3 policies (strong, greedy, random): a comparison is of two" in refused(
        three, three
    )


def test_a_stopped_arena_says_how_far_its_record_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "arena.jsonl"

    def stopped(config: ArenaConfig, **kwargs: object) -> ArenaResult:
        result = run_arena(replace(config, deals=1))
        on_deal = kwargs["on_deal"]
        if callable(on_deal):  # with --record: the deal played is kept
            on_deal(result.deals[0])
        raise KeyboardInterrupt

    monkeypatch.setattr(bot_cli, "run_arena", stopped)
    result = CliRunner().invoke(app, ["arena", *_record_args(record, 5)])
    assert result.exit_code == 130, result.output
    assert f"arena: stopped with 1/5 deals in {record}: the same command carries it on" in (
        result.output
    )
    assert len(record.read_text().splitlines()) == 2  # the header and the deal kept
    result = CliRunner().invoke(app, ["arena", "--games", "3", "--option=round_cap=1"])
    assert result.exit_code == 130
    assert "arena: stopped (without --record, nothing was kept)" in result.output
