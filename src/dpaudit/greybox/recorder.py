"""Record the calls that reach a mechanism's noise primitives (grey-box, pure Python / NumPy).

A :class:`Primitive` names a Python callable to intercept (a method of a pure-Python class, or
a module-level function) and how to read its inputs: the value the noise is added to, the
declared sensitivity, epsilon.  :class:`Recorder` patches every primitive for the duration of
a ``with`` block and appends one :class:`Call` per invocation, with the call site (file and
line in the library) and the nesting depth (a primitive called from another primitive, e.g.
``LaplaceTruncated.randomise`` -> ``Laplace.randomise``, has depth 1).

Raw randomness is also recorded, as calls without inputs: the module-level functions of
``random`` and ``numpy.random`` and ``secrets``.  NumPy ``Generator`` / ``RandomState`` methods
are C methods that cannot be patched; a library that draws from an instance it creates is
recorded at its own sampler (its primitive), and replayed with identical randomness by
seeding (see :mod:`dpaudit.greybox.replay`).

Compiled libraries (OpenDP's Rust core, PyDP's C++) draw noise where no Python hook reaches:
they are audited black-box only (:mod:`dpaudit.zoo`).
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Primitive", "Call", "Recorder", "RAW_RANDOMNESS", "site_of"]


@dataclass(frozen=True)
class Primitive:
    """A callable to intercept: ``owner`` (dotted path of a class or module) . ``attr``.

    ``read(obj, args, kwargs) -> dict`` returns the recorded inputs (keys ``value``,
    ``sensitivity``, ``epsilon``, ``delta`` when known); ``obj`` is the bound instance for
    methods (None for functions)."""

    name: str
    owner: str
    attr: str
    read: Callable[[Any, tuple[Any, ...], dict[str, Any]], dict[str, Any]] | None = None
    method: bool = True


@dataclass(frozen=True)
class Call:
    """One invocation of a primitive."""

    primitive: str
    site: str
    depth: int
    inputs: dict[str, Any] = field(default_factory=dict)


def site_of(frame: Any) -> str:
    """``package/path.py:line`` of a frame (path from the top-level package directory)."""
    path = frame.f_code.co_filename.replace(os.sep, "/")
    marker = "site-packages/"
    if marker in path:
        path = path.split(marker, 1)[1]
    return f"{path}:{frame.f_lineno}"


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ValueError(f"cannot import {dotted!r}")


RAW_RANDOMNESS: tuple[Primitive, ...] = tuple(
    Primitive(f"{mod}.{fn}", mod, fn, None, method=False)
    for mod, fns in (("random", ("random", "uniform", "gauss", "normalvariate", "randint",
                                 "choice", "expovariate", "getrandbits")),
                     ("numpy.random", ("random", "random_sample", "rand", "uniform", "normal",
                                       "laplace", "exponential", "choice", "randint",
                                       "standard_normal", "geometric")),
                     ("secrets", ("randbits", "randbelow", "choice")))
    for fn in fns)


class Recorder:
    """Context manager: patch ``primitives`` (plus raw randomness) and record their calls."""

    def __init__(self, primitives: tuple[Primitive, ...], *, raw: bool = True) -> None:
        self.primitives = tuple(primitives) + (RAW_RANDOMNESS if raw else ())
        self.calls: list[Call] = []
        self._saved: list[tuple[Any, str, Any]] = []
        self._depth = 0

    def _wrap(self, prim: Primitive, original: Callable[..., Any]) -> Callable[..., Any]:
        rec = self

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            obj = args[0] if prim.method and args else None
            rest = args[1:] if prim.method else args
            try:
                inputs = prim.read(obj, rest, kwargs) if prim.read is not None else {}
            except Exception as exc:  # noqa: BLE001 -- recording must not change behaviour
                inputs = {"read_error": repr(exc)}
            rec.calls.append(Call(prim.name, site_of(sys._getframe(1)), rec._depth, inputs))
            rec._depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                rec._depth -= 1

        return wrapper

    def __enter__(self) -> Recorder:
        for prim in self.primitives:
            try:
                owner = _resolve(prim.owner)
            except (ValueError, AttributeError):
                continue
            if prim.method and prim.attr not in vars(owner):
                continue  # inherited: the defining class is patched by its own entry
            original = getattr(owner, prim.attr, None)
            if original is None:
                continue
            self._saved.append((owner, prim.attr, vars(owner).get(prim.attr, original)))
            setattr(owner, prim.attr, self._wrap(prim, original))
        return self

    def __exit__(self, *exc: Any) -> None:
        for owner, attr, original in reversed(self._saved):
            setattr(owner, attr, original)
        self._saved.clear()
