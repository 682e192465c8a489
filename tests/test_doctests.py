"""Every example written in a docstring runs, as python-chess runs its own: an example that no
longer says what the code does fails here, not in a reader's hands."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The packages' source folders, each holding ``rami/<package>``.
PACKAGES = ("engine", "client", "server", "rl")


def _modules_with_examples() -> list[str]:
    names = []
    for top in PACKAGES:
        base = ROOT / top
        for path in sorted((base / "rami").rglob("*.py")):
            if ">>> " in path.read_text(encoding="utf-8"):
                names.append(".".join(path.with_suffix("").relative_to(base).parts))
    return names


MODULES = _modules_with_examples()


def test_the_packages_have_examples_to_run() -> None:
    # The search above finds the modules (an empty list would pass every case below).
    assert "rami.engine.cards" in MODULES and "rami.client.moves" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    failed, tried = doctest.testmod(module, optionflags=flags, report=True, verbose=False)
    assert failed == 0, f"{failed} of {tried} examples in {name} failed (printed above)"
