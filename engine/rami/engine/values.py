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
import inspect
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["builder"]

T = TypeVar("T")
P = ParamSpec("P")


def builder(cls: Callable[P, T]) -> Callable[P, T]:
    """A function that makes instances of ``cls`` (a frozen dataclass with ``slots=True``) from
    the arguments its constructor takes (typed as the constructor is), without its per-field
    ``object.__setattr__``.

    Classes whose constructor does more than store each argument in its field are refused: a
    ``__post_init__``, an ``__init__`` or ``__new__`` of their own, fields left out of
    ``__init__`` or passed to it only (``InitVar``); so are classes that are not frozen and
    slotted, and fields named as the function's own names (``_build_...``). For them the
    shortcut would not make the same value. TypeError says which."""
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise TypeError(f"{cls!r} is not a dataclass")
    name = cls.__name__
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    if not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{name} is not a frozen dataclass with slots")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{name} has a __post_init__: its constructor does more than store")
    init = cls.__dict__.get("__init__")
    made_by_dataclass = getattr(getattr(init, "__code__", None), "co_filename", "") == "<string>"
    if not params.init or not made_by_dataclass:
        raise TypeError(f"{name} has an __init__ of its own, or none")
    if cls.__new__ is not object.__new__:
        raise TypeError(f"{name} has a __new__ of its own")
    spec: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(cls):
        if f.name.startswith(_OWN):
            raise TypeError(f"{name}.{f.name} is named as the builder's own names ({_OWN}...)")
        if not f.init:
            raise TypeError(f"{name}.{f.name} is not set by the constructor")
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
        raise TypeError(f"{name} does not share its twin's layout: {e}") from None
    # The same arguments, in the same order and kinds, with the same defaults (an InitVar, say,
    # is an argument of the class's and no field of the twin's).
    if _arguments(cls.__init__) != _arguments(twin.__init__):
        raise TypeError(f"{name}'s constructor takes other arguments than its fields")

    build: Callable[P, T] = _build_function(cls, twin)
    build.__doc__ = f"A {name}, made as its constructor makes it (see rami.engine.values)."
    return build


#: The start of every name the written function has of its own: no field may take it.
_OWN = "_build_"


def _build_function(cls: Any, twin: Any) -> Any:
    """The function that fills a twin as the twin's ``__init__`` does, then makes it a
    ``cls``: written for ``cls``'s arguments (as dataclasses writes an ``__init__``), so that
    a value costs one call, without packing the arguments for a second."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]  # without self
    factories = {f.name: f.default_factory for f in dataclasses.fields(cls)}
    space: dict[str, Any] = {f"{_OWN}new": object.__new__, f"{_OWN}twin": twin, f"{_OWN}cls": cls}
    made = f"{_OWN}made"
    args, body, keyword_only = [], [], False
    for p in params:
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not keyword_only:
            args.append("*")
            keyword_only = True
        default = f"{_OWN}default_{p.name}"
        if p.default is inspect.Parameter.empty:
            args.append(p.name)
        else:
            space[default] = p.default
            args.append(f"{p.name}={default}")
        value = p.name
        if factories[p.name] is not dataclasses.MISSING:
            # The constructor's default is a marker that asks for the factory's value.
            space[f"{_OWN}factory_{p.name}"] = factories[p.name]
            value = f"{_OWN}factory_{p.name}() if {p.name} is {default} else {p.name}"
        body.append(f"    {made}.{p.name} = {value}")
    source = "\n".join(
        [
            f"def {_OWN}function({', '.join(args)}):",
            f"    {made} = {_OWN}new({_OWN}twin)",
            *body,
            f"    {made}.__class__ = {_OWN}cls",
            f"    return {made}",
        ]
    )
    exec(compile(source, f"<build {cls.__qualname__}>", "exec"), space)
    build = space[f"{_OWN}function"]
    build.__name__, build.__qualname__ = cls.__name__, cls.__qualname__  # in its errors
    return build


def _arguments(init: Callable[..., None]) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(init).parameters.values()]
