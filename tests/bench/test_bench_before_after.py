"""The bench's before/after table: each figure against the reference its own half measured."""

from bench.__main__ import HEADLINES, before_after, combine


def _half(echo_calls: float, unary_calls: float, cpu: float, echo_cpu: float) -> dict:
    return {
        "commands": {
            "echo": {"calls_per_s": echo_calls, "server_cpu_per_call_us": echo_cpu},
            "rami_unary": {"calls_per_s": unary_calls, "server_cpu_per_call_us": cpu},
        }
    }


def _row(rows: list[dict], figure: str) -> dict:
    return next(r for r in rows if r["figure"] == figure)


def test_a_figure_is_compared_against_the_reference_of_its_own_half() -> None:
    # The machine ran the second half 1.5x as fast: the echo and Rami alike.
    before = _half(echo_calls=4000, unary_calls=1000, cpu=800, echo_cpu=200)
    after = _half(echo_calls=6000, unary_calls=1500, cpu=560, echo_cpu=140)
    rows = before_after(before, after)
    calls = _row(rows, "commands/s, unary Act")
    assert calls["after/before"] == 1.5
    assert calls["against reference"] == 1.0
    cpu = _row(rows, "server CPU per command, unary Act")
    assert cpu["after/before"] == 0.7
    assert cpu["against reference"] == 1.0
    # The reference itself has none; a figure whose reference is missing gets none either.
    assert _row(rows, "echo calls/s (reference)")["against reference"] is None
    del after["commands"]["echo"]["server_cpu_per_call_us"]
    assert _row(before_after(before, after), cpu["figure"])["against reference"] is None


def test_figures_absent_from_both_halves_are_left_out() -> None:
    rows = before_after(_half(1, 1, 1, 1), _half(1, 1, 1, 1))
    assert {r["figure"] for r in rows} == {
        "commands/s, unary Act",
        "server CPU per command, unary Act",
        "echo calls/s (reference)",
    }
    assert len(HEADLINES) > len(rows)


def test_rounds_give_the_median_of_each_ratio_and_its_range() -> None:
    rounds = [
        before_after(_half(4000, 1000, 800, 200), _half(4000, 900, 800, 200)),
        before_after(_half(4000, 1000, 800, 200), _half(2000, 500, 800, 200)),
        before_after(_half(3000, 1000, 800, 200), _half(3000, 1100, 800, 200)),
    ]
    calls = _row(combine(rounds), "commands/s, unary Act")
    assert calls["before"] == 1000 and calls["after"] == 900
    assert calls["after/before"] == 0.9
    assert calls["after/before range"] == [0.5, 1.1]
    assert calls["against reference"] == 1.0
    assert calls["against reference range"] == [0.9, 1.1]
    assert combine(rounds[:1]) == rounds[0]


def test_a_figure_missing_from_the_first_round_is_kept() -> None:
    first = before_after(_half(4000, 1000, 800, 200), {"commands": {"echo": {}}})
    later = before_after(_half(4000, 1000, 800, 200), _half(4000, 900, 800, 200))
    rows = combine([first, later])
    assert [r["figure"] for r in rows] == [r["figure"] for r in later]
    assert _row(rows, "commands/s, unary Act")["after/before"] == 0.9
