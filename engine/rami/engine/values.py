"""Quick construction of frozen values.

The engine and the server keep their records as frozen, slotted dataclasses: a value once made
does not change, so it can be shared, cached and compared. The price is in the constructor. A
frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (its own
``__setattr__`` refuses), which on CPython 3.11 costs some 90 ns a field, six times the store
into a slot that a mutable dataclass's ``__init__`` makes. For the values made at every command
(a seat's part of a view: 7 fields, four times an update; a view: 27) that was a fifth of the
server's own instructions per command (``python -m bench.instructions``).

:func:`builder` makes such values at the mutable twin's cost: it fills an instance of a mutable
dataclass with the same fields, in the same slots, and then makes it an instance of the frozen
class, which refuses any change from then on. The value is an instance of the class like any
other (equal to the one its constructor makes from the same arguments, hashed alike, printed
alike); only the way it was filled differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["builder"]

T = TypeVar("T")


def builder(cls: type[T]) -> Callable[..., T]:
    """A function that makes instances of ``cls`` (a frozen dataclass with ``slots=True``) from
    the arguments its constructor takes, without its per-field ``object.__setattr__``.

    Classes whose fields a constructor does more than store (``__post_init__``, fields left out
    of ``__init__``) are refused, as are classes that are not frozen and slotted: for them the
    shortcut would not make the same value. TypeError says which."""
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise TypeError(f"{cls!r} is not a dataclass")
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    if not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass with slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__: its constructor does more than store")
    spec: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            raise TypeError(f"{cls.__name__}.{f.name} is not set by the constructor")
        if f.default is not dataclasses.MISSING:
            made = dataclasses.field(default=f.default, kw_only=f.kw_only)
        elif f.default_factory is not dataclasses.MISSING:
            made = dataclasses.field(default_factory=f.default_factory, kw_only=f.kw_only)
        else:
            made = dataclasses.field(kw_only=f.kw_only)
        spec.append((f.name, f.type, made))
    # The same bases (a generic class's as written), so that the layouts match.
    bases = cls.__dict__.get("__orig_bases__", cls.__bases__)
    twin: Any = dataclasses.make_dataclass(
        f"_{cls.__name__}Twin",
        spec,
        bases=bases,
        slots=True,
        eq=False,
        repr=False,
        match_args=False,
    )
    # The two share one layout, or the class of a twin could not become ``cls``: checked now,
    # on an empty twin, rather than at the first value.
    try:
        object.__new__(twin).__class__ = cls
    except TypeError as e:
        raise TypeError(f"{cls.__name__} does not share its twin's layout: {e}") from None

    def build(*args: Any, **kwargs: Any) -> T:
        made = twin(*args, **kwargs)
        made.__class__ = cls
        return made  # type: ignore[no-any-return]

    build.__name__ = build.__qualname__ = f"build_{cls.__name__}"
    build.__doc__ = f"A {cls.__name__}, made as its constructor makes it (see rami.engine.values)."
    return build
