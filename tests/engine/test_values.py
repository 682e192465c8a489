"""``rami.engine.values.builder``: frozen values made at a mutable dataclass's cost, and the
same values as their constructors make."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import Generic, TypeVar

import pytest

from rami.engine import POLICIES, Game, Options, Phase
from rami.engine.solver import declaration_cards
from rami.engine.values import builder
from rami.engine.views import SeatPart, View, seat_part, view

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    label: str = field(default="", kw_only=True)


@dataclass(frozen=True, slots=True)
class _Box(Generic[T]):
    content: T


def test_a_built_value_is_the_value_its_constructor_makes() -> None:
    make = builder(_Point)
    for args, kwargs in [((1,), {}), ((1, 2), {}), ((1,), {"y": 5, "label": "a"})]:
        built, made = make(*args, **kwargs), _Point(*args, **kwargs)
        assert type(built) is _Point
        assert built == made and repr(built) == repr(made)
    first, second = make(1), make(2)
    assert first.tags == [] and first.tags is not second.tags  # a factory's value each
    given = ["a"]
    assert make(1, tags=given).tags is given and make(1, 2, given).tags is given
    box = builder(_Box)("card")  # generic classes too
    assert box == _Box("card") and hash(box) == hash(_Box("card"))
    # What Python does with values: copies, pickles (a view goes to the bots' worker
    # processes), matching.
    for copied in (copy.copy(box), copy.deepcopy(box), pickle.loads(pickle.dumps(box))):
        assert copied == box and type(copied) is _Box
    match first:
        case _Point(1, 0):
            pass
        case _:
            raise AssertionError(first)


def test_a_built_value_is_frozen_like_any_other() -> None:
    built = builder(_Point)(1, 2)
    with pytest.raises(FrozenInstanceError):
        built.x = 3  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del built.y  # type: ignore[misc]
    assert dataclasses.replace(built, y=7) == _Point(1, 7)


def test_a_field_may_have_any_name_the_builder_does_not_keep_for_itself() -> None:
    @dataclass(frozen=True, slots=True)
    class Named:
        made: int
        cls: str = "a"
        twin: list[int] = field(default_factory=list)
        _default_twin: int = 5

    built = builder(Named)(1, twin=[2])
    assert built == Named(1, twin=[2]) and built.made == 1 and built.twin == [2]
    assert builder(Named)(1).twin == [] and builder(Named)(1)._default_twin == 5


def test_a_missing_or_unknown_argument_is_refused_as_the_constructor_refuses_it() -> None:
    make = builder(_Point)
    with pytest.raises(TypeError, match=r"_Point\(\) missing 1 required positional argument: 'x'"):
        make()
    with pytest.raises(TypeError):
        make(1, z=2)
    with pytest.raises(TypeError):
        make(1, 2, [], "label")  # keyword-only, as in the class


def test_classes_it_cannot_make_the_same_values_of_are_refused() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        x: int

    @dataclass(slots=True)
    class Mutable:
        x: int

    @dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            if self.x < 0:
                raise ValueError("negative")

    @dataclass(frozen=True, slots=True)
    class Derived:
        x: int
        twice: int = field(init=False, default=0)

    @dataclass(frozen=True, slots=True)
    class OwnInit:
        x: int

        def __init__(self, x: int) -> None:
            object.__setattr__(self, "x", abs(x))

    @dataclass(frozen=True, slots=True, init=False)
    class NoInit:
        x: int = 0

    @dataclass(frozen=True, slots=True)
    class OwnNew:
        x: int

        def __new__(cls, x: int) -> OwnNew:
            return super().__new__(cls)

    @dataclass(frozen=True, slots=True)
    class PassedOnly:
        x: int
        scale: InitVar[int] = 1

    @dataclass(frozen=True, slots=True)
    class Reserved:  # a field named as the builder's own names
        _build_made: int

    for cls, said in [
        (Reserved, "_build_made is named as the builder's own names"),
        (NoSlots, "not a frozen dataclass with slots"),
        (Mutable, "not a frozen dataclass with slots"),
        (Checked, "__post_init__"),
        (Derived, "not set by the constructor"),
        (OwnInit, "an __init__ of its own"),
        (NoInit, "an __init__ of its own, or none"),
        (OwnNew, "a __new__ of its own"),
        (PassedOnly, "takes other arguments than its fields"),
        (int, "not a dataclass"),
    ]:
        with pytest.raises(TypeError, match=said):
            builder(cls)


def test_views_and_seat_parts_are_those_their_constructors_make() -> None:
    """The engine builds its views with it: each equals the one View(...) makes from the same
    fields, for every seat of games of every variant, and is frozen."""
    for variant in ("tallage", "simple", "portuguese"):
        game, _ = Game.new(variant, Options(players=3), seed=11)
        for seat in (0, 1, 2, None):
            v = view(game, seat)
            assert type(v) is View
            fields = {f.name: getattr(v, f.name) for f in dataclasses.fields(View)}
            assert v == View(**fields)
            with pytest.raises(FrozenInstanceError):
                v.hand = ()  # type: ignore[misc]
            assert pickle.loads(pickle.dumps(v)) == v and copy.deepcopy(v) == v
            if seat is not None:
                # The seat's part, made by its constructor from the seat's whole view.
                part = seat_part(game, seat)
                assert type(part) is SeatPart
                declared = ()
                if v.can_declare and v.hand is not None:
                    jpm = game.options.jokers_per_meld
                    declared = declaration_cards(v.hand, jokers_per_meld=jpm)
                expected = SeatPart(
                    seat, v.hand, v.drawn, v.draw_sources, v.can_lay, v.can_declare, declared
                )
                assert part == expected


@pytest.mark.parametrize("variant", ["tallage", "simple", "portuguese"])
def test_a_seat_part_unchanged_since_the_one_given_is_that_one(variant: str) -> None:
    """``seat_part(game, seat, before)`` is ``before`` itself when the seat's part is the same
    as it (a server keeps its encoding by identity), else the part made anew: at every update
    of a random game, for every seat."""
    rng = random.Random(f"before/{variant}")
    game, _ = Game.new(variant, Options(players=3), seed=5)
    kept: dict[int, SeatPart | None] = {s: None for s in range(3)}
    reused = changed = 0
    for _ in range(400):
        for seat in range(3):
            fresh = seat_part(game, seat)
            got = seat_part(game, seat, kept[seat])
            assert got == fresh
            if kept[seat] is not None and kept[seat] == fresh:
                assert got is kept[seat]
                reused += 1
            else:
                assert got is not kept[seat]
                changed += 1
            # Another seat's part is never taken for this one's.
            other = seat_part(game, (seat + 1) % 3)
            assert seat_part(game, seat, other) == fresh
            kept[seat] = got
        if game.phase in (Phase.GAME_OVER, Phase.ROUND_OVER):
            break
        game.apply(game.turn, POLICIES["random"](view(game, game.turn), rng))
    assert reused > 50 and changed > 50
