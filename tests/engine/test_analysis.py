"""Hand analysis: the facts the solver finds in a hand, asked by the variant's rules."""

from __future__ import annotations

from helpers import C, cards

from rami.engine import VARIANTS, Options
from rami.engine.analysis import Analysis, analyse


def test_a_declaring_variant_names_the_face_down_cards_and_the_best_multiplier() -> None:
    hand = cards("2h 3h 4h 5h 6h 9h 10h Jh Ad 2d 3d 4d 5d Kc")
    a = analyse(VARIANTS["portuguese"], Options(), hand, 0)
    assert a.declare_cards == (C("Kc"),) and a.multiplier == 3
    assert a.opening_value == 0 and a.finish_discards == ()
    assert a.left == (C("Kc"),) and a.points_left == 10


def test_thirteen_complete_cards_say_their_multiplier_with_nothing_to_put_face_down() -> None:
    hand = cards("As 2s 3s 5c 5d 5h 9h 10h Jh Qh 6s 7s 8s")
    a = analyse(VARIANTS["portuguese"], Options(), hand, 0)
    assert a.declare_cards == () and a.multiplier == 1


def test_the_arrangement_shown_is_the_declaration_that_earns_the_multiplier() -> None:
    # Three sets of 3, 4 and 5 or three runs of 3-4-5: the runs make the x2.
    hand = cards("3h 4h 5h 3d 4d 5d 3s 4s 5s 9s 10s Js 7c Qs")
    a = analyse(VARIANTS["portuguese"], Options(), hand, 0)
    assert (a.declare_cards, a.multiplier) == ((C("7c"),), 2)
    assert all(m.kind == "run" for m in a.melds), a.melds
    assert (a.left, a.points_left) == ((C("7c"),), 7)
    whole = analyse(VARIANTS["portuguese"], Options(), hand[:12] + hand[13:], 0)
    assert whole.multiplier == 2 and whole.left == ()
    assert all(m.kind == "run" for m in whole.melds), whole.melds


def test_an_opening_is_measured_against_the_least_value_and_the_bar() -> None:
    hand = cards("Qc Qd Qh 10s Js Qs Ks 4c 5c 6c 9d 9h 2s 3h")
    tallage = VARIANTS["tallage"]
    a = analyse(tallage, Options(), hand, 0)
    assert a.opening_value == 30 + 40 + 15 and a.can_open
    assert {m.kind for m in a.opening_melds} == {"set", "run"}
    assert not analyse(tallage, Options(), hand, a.opening_value).can_open  # the bar
    assert a.declare_cards == () and a.multiplier == 0


def test_a_whole_hand_finish_names_its_last_discards_and_simple_has_no_opening() -> None:
    hand = cards("Qc Qd Qh 10s Js Qs Ks 4c 5c 6c 2d")
    a = analyse(VARIANTS["simple"], Options(), hand, 0)
    assert a.finish_discards == (C("2d"),)
    assert a.opening_value == 0 and a.opening_melds == () and not a.can_open
    assert isinstance(a, Analysis)
