"""The noise primitives of diffprivlib: every mechanism's ``randomise`` (pure Python / NumPy),
read as (value, sensitivity, epsilon, delta) of the mechanism instance."""

from __future__ import annotations

import inspect
from typing import Any

from dpaudit.greybox.recorder import Primitive

__all__ = ["primitives"]


def _read(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    value = args[0] if args else kwargs.get("value")
    out: dict[str, Any] = {"epsilon": getattr(obj, "epsilon", None),
                           "delta": getattr(obj, "delta", None)}
    if value is not None:
        out["value"] = value
    if getattr(obj, "sensitivity", None) is not None:
        out["sensitivity"] = obj.sensitivity
    return out


def primitives() -> tuple[Primitive, ...]:
    """One primitive per diffprivlib mechanism class that defines ``randomise``."""
    import diffprivlib.mechanisms as m

    out = []
    for name, cls in sorted(vars(m).items()):
        if inspect.isclass(cls) and "randomise" in vars(cls):
            out.append(Primitive(f"diffprivlib.{name}.randomise",
                                 f"{cls.__module__}.{cls.__qualname__}", "randomise", _read))
    return tuple(out)
