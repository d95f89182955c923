"""The one place that checks for the optional ``dpaudit[torch]`` extra (PyTorch + Opacus).

Every module of :mod:`dpaudit.training` imports torch at module level; the package's
``__init__`` calls :func:`require_torch` first, so a missing extra gives one clear error
instead of a traceback from deep inside an import chain.
"""

from __future__ import annotations

import importlib.util

__all__ = ["MissingExtraError", "require_torch", "EXTRA_HINT"]

EXTRA_HINT = "pip install 'dpaudit[torch]'"


class MissingExtraError(ImportError):
    """A training feature was used without PyTorch / Opacus / scikit-learn installed."""


def require_torch() -> None:
    """Raise :class:`MissingExtraError` naming the extra unless torch, opacus and sklearn import."""
    missing = [m for m in ("torch", "opacus", "sklearn") if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtraError(
            f"dpaudit.training needs PyTorch, Opacus and scikit-learn ({', '.join(missing)} "
            f"not installed): {EXTRA_HINT}")
