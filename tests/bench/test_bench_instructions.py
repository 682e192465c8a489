"""bench.instructions: instructions counted by valgrind, the start-up cancelled out."""

import shutil

import pytest

from bench import instructions


def test_a_counted_run_is_the_case_and_more_units_count_more() -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (Debian: apt-get install valgrind)")
    paths = instructions.tree_paths()
    few = instructions.count("steps", "portuguese", 10, paths)
    many = instructions.count("steps", "portuguese", 1010, paths)
    # A thousand random steps are some 10^8 instructions here (about 10^5 each); the start-up
    # (Python, the engine's imports, the space) is the same in both runs.
    assert 10_000 < (many - few) / 1000 < 1_000_000, (few, many)


def test_bytecodes_are_counted_by_function_and_more_commands_count_more() -> None:
    paths = instructions.tree_paths()
    few = instructions.bytecodes("pipeline", "tallage", 20, paths)
    many = instructions.bytecodes("pipeline", "tallage", 120, paths)
    per_command = (sum(many.values()) - sum(few.values())) / 100
    # A command is some 5,000 bytecodes here; the table's pipeline is among the functions.
    assert 1_000 < per_command < 50_000, per_command
    assert many["table.py:_stage"] > few["table.py:_stage"] > 0
