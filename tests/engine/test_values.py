"""``rami.engine.values.builder``: frozen values made at a mutable dataclass's cost, and the
same values as their constructors make."""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Generic, TypeVar

import pytest

from rami.engine import Game, Options
from rami.engine.values import builder
from rami.engine.views import SeatPart, View, _own, seat_part, view

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
        assert built == made and hash(built.x) == hash(made.x) and repr(built) == repr(made)
    first, second = make(1), make(2)
    assert first.tags == [] and first.tags is not second.tags  # a factory's value each
    assert builder(_Box)("card").content == "card"  # generic classes too


def test_a_built_value_is_frozen_like_any_other() -> None:
    built = builder(_Point)(1, 2)
    with pytest.raises(FrozenInstanceError):
        built.x = 3  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del built.y  # type: ignore[misc]
    assert dataclasses.replace(built, y=7) == _Point(1, 7)


def test_a_missing_or_unknown_argument_is_refused_as_the_constructor_refuses_it() -> None:
    make = builder(_Point)
    with pytest.raises(TypeError):
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

    for cls, said in [
        (NoSlots, "not a frozen dataclass with slots"),
        (Mutable, "not a frozen dataclass with slots"),
        (Checked, "__post_init__"),
        (Derived, "not set by the constructor"),
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
            if seat is not None:
                part = seat_part(game, seat)
                assert type(part) is SeatPart
                own = _own(game, seat)
                assert part is not None and part.hand == own[0]
                expected = SeatPart(seat, *part_fields(part)[1:])
                assert part == expected


def part_fields(part: SeatPart) -> tuple[object, ...]:
    return tuple(getattr(part, f.name) for f in dataclasses.fields(SeatPart))
