"""The variants as data: what each game's rules say, asked by the rule, never by the name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rami.engine import VARIANTS, Game, Options, get_variant, view

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("engine/rami", "client/rami", "server/rami", "examples", "bench")
#: A comparison with a variant's id, either way round, or a test of membership in ids.
_NAMES = "portuguese|tallage|simple"
COMPARISON = re.compile(
    rf"""(==|!=)\s*["']({_NAMES})["']"""
    rf"""|["']({_NAMES})["']\s*(==|!=)"""
    rf"""|\bin\s*[(\[{{]\s*["']({_NAMES})["']"""
    r"""|\.variant(\.id)?\s*(==|!=)\s*["']"""
)


def test_each_variant_says_how_its_rounds_are_played() -> None:
    p, t, s = VARIANTS["portuguese"], VARIANTS["tallage"], VARIANTS["simple"]
    assert (p.declares, t.declares, s.declares) == (True, False, False)
    assert (p.has_opening, t.has_opening, s.has_opening) == (False, True, False)
    assert (p.lays_whole_hand, t.lays_whole_hand, s.lays_whole_hand) == (False, False, True)
    assert (p.has_finish, t.has_finish, s.has_finish) == (False, True, True)
    assert (p.must_lay_discard, t.must_lay_discard, s.must_lay_discard) == (False, True, False)
    assert (p.sets_need_run, t.sets_need_run, s.sets_need_run) == (True, False, False)
    assert (p.jokers, t.jokers, s.jokers) == (2, 4, 4)


@pytest.mark.parametrize("variant_id", list(VARIANTS))
def test_every_variant_lays_one_way(variant_id: str) -> None:
    v = get_variant(variant_id)
    assert [v.declares, v.has_opening, v.lays_whole_hand].count(True) == 1
    assert v.has_finish == (not v.declares)


def test_a_view_carries_the_games_variant_and_options() -> None:
    options = Options(players=3, opening=51)
    game, _ = Game.new("tallage", options, seed=3)
    for seat in (0, 1, 2, None):
        v = view(game, seat)
        assert v.variant is VARIANTS["tallage"] and v.options is options


def test_no_source_compares_a_variant_by_its_name() -> None:
    """Callers ask the variant's rules (``declares``, ``has_opening``...): a comparison with an
    id would silently be False once a view carries a Variant, not its id."""
    found = []
    for root in SOURCES:
        for path in sorted((ROOT / root).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if COMPARISON.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_the_audit_finds_a_comparison_by_name() -> None:
    for line in (
        'if v.variant == "tallage":',
        'x = "portuguese" != name',
        'if variant.id in ("simple", "tallage"):',
        "if view.variant.id == 'simple':",
    ):
        assert COMPARISON.search(line), line
    for line in ('VARIANTS = {"tallage": 1}', 'Literal["portuguese", "tallage"]'):
        assert not COMPARISON.search(line), line
