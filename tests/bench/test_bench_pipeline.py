"""bench.pipeline: the table's own work per command, with its store or without it."""

import sqlite3

import pytest

from bench import pipeline
from bench.__main__ import main


def _entries(folder: str) -> int:
    db = sqlite3.connect(f"{folder}/rami.db")
    try:
        (count,) = db.execute("SELECT count(*) FROM entries").fetchone()
    finally:
        db.close()
    return int(count)


@pytest.mark.parametrize("store, stored", [("sqlite", True), ("none", False)])
def test_the_commands_are_stored_or_not_as_asked(
    tmp_path: object, store: str, stored: bool
) -> None:
    folder = str(tmp_path)
    spent, done = pipeline._run(pipeline._actor("portuguese", 30, folder, store))
    assert done == 30 and spent > 0
    # 4 joins, the start and 30 moves; none of them without the store.
    assert _entries(folder) == (35 if stored else 0)


def test_an_unknown_store_is_refused() -> None:
    with pytest.raises(ValueError, match="store: one of sqlite, none"):
        pipeline.bench_pipeline("tallage", 10, "disk")


def test_the_figures_without_the_store_are_never_saved(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--only", "pipeline", "--pipeline-store", "none"])
    assert "give --no-save with it" in capsys.readouterr().err
