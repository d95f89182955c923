"""Argument validation shared by every public entry point.

Every check raises :class:`ValueError` whose message names the argument and the accepted
range, so that the CLI can print it as a single line.  Validation lives here and only here;
estimators, curves and games call these helpers at their boundary.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np

__all__ = [
    "check_probability",
    "check_delta",
    "check_confidence",
    "check_positive",
    "check_nonnegative",
    "check_count",
    "check_counts_le",
    "check_nested_counts",
    "check_finite_array",
    "check_finite_matrix",
    "check_binary_array",
    "check_same_length",
    "check_choice",
    "check_real_array",
    "check_count_array",
    "check_nested_count_arrays",
]


def _reject_non_numbers(name: str, value: object, what: str) -> None:
    """No silent coercions: strings ("5"), booleans (True as 1) and complex numbers are not
    real numbers, even though ``float()`` would accept some of them."""
    if isinstance(value, (str, bytes, bool, np.bool_, complex, np.complexfloating)):
        raise ValueError(f"{name} must be {what}, got {type(value).__name__} {value!r}")


def _as_float(name: str, value: object) -> float:
    _reject_non_numbers(name, value, "a real number")
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if math.isnan(out):
        raise ValueError(f"{name} must be a real number, got NaN")
    return out


def _too_big(v: object) -> bool:
    try:
        float(v)  # type: ignore[arg-type]
    except OverflowError:
        return True
    except (TypeError, ValueError):
        return False
    return False


def _numeric_array(name: str, values: object, what: str) -> np.ndarray:
    """``np.asarray(values)`` of real numbers; strings, complex numbers and ragged nesting are
    rejected instead of being coerced ("0.5" -> 0.5, 1+2j -> 1)."""
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be {what}, got a string")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what} (ragged or non-numeric input)") from None
    kind = arr.dtype.kind
    if kind == "O":
        flat = arr.reshape(-1)
        bad = [v for v in flat[:1_000_000]
               if isinstance(v, (str, bytes, complex)) or v is None]
        if bad:
            raise ValueError(f"{name} must be {what}; found {type(bad[0]).__name__} "
                             f"{bad[0]!r}")
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be {what}") from None
        except OverflowError:  # an integer beyond the float range (JSON allows 10**400)
            i = next(i for i, v in enumerate(flat) if _too_big(v))
            raise ValueError(f"{name} must be {what} within the float range "
                             f"(|x| <= {sys.float_info.max:.4g}); entry {i} is an integer "
                             f"of {len(str(abs(int(flat[i]))))} digits") from None
    elif kind in "USVMmc":
        desc = {"U": "strings", "S": "bytes", "c": "complex numbers"}.get(kind, arr.dtype.name)
        raise ValueError(f"{name} must be {what}, got {desc}")
    return arr


def check_real_array(name: str, values: object, *, allow_bool: bool = False) -> np.ndarray:
    """A float array of any shape built from real numbers only: strings ("0.5"), complex
    numbers and (unless ``allow_bool``) booleans are rejected instead of coerced.  NaN/inf are
    left to the caller (some arguments accept +inf, e.g. epsilon = inf for "no privacy")."""
    if not allow_bool:
        _reject_non_numbers(name, values, "real numbers")
    arr = _numeric_array(name, values, "real numbers")
    if arr.dtype.kind == "b" and not allow_bool:
        raise ValueError(f"{name} must be real numbers, got booleans")
    return arr.astype(float)


def check_count_array(name: str, values: object, *, minimum: int = 0) -> np.ndarray:
    """Whole numbers >= minimum of any shape, as int64 (no strings, booleans, complex, NaN,
    inf or fractions)."""
    arr = check_real_array(name, values)
    if arr.size == 0:
        raise ValueError(f"{name} must contain at least one integer >= {minimum}")
    bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (arr < minimum)
    if bad.any():
        v = arr.reshape(-1)[int(np.flatnonzero(bad.reshape(-1))[0])]
        raise ValueError(f"{name} must be integers >= {minimum}, got {v!r}")
    return arr.astype(np.int64)


def check_probability(name: str, value: object, *, open_low: bool = False,
                      open_high: bool = False) -> float:
    """A probability in [0, 1] (bounds optionally open)."""
    v = _as_float(name, value)
    lo_ok = v > 0 if open_low else v >= 0
    hi_ok = v < 1 if open_high else v <= 1
    if not (lo_ok and hi_ok):
        lb = "(0" if open_low else "[0"
        ub = "1)" if open_high else "1]"
        raise ValueError(f"{name} must be in {lb}, {ub}, got {v!r}")
    return v


def check_delta(value: object, name: str = "delta") -> float:
    """delta of (epsilon, delta)-DP: accepted range [0, 1)."""
    return check_probability(name, value, open_high=True)


def check_confidence(value: object, name: str = "confidence") -> float:
    """Probability that a bound holds: accepted range (0, 1)."""
    return check_probability(name, value, open_low=True, open_high=True)


def check_positive(name: str, value: object, *, upper: float = math.inf) -> float:
    v = _as_float(name, value)
    if not (0 < v <= upper) or math.isinf(v):
        rng = f"(0, {upper}]" if math.isfinite(upper) else "(0, inf)"
        raise ValueError(f"{name} must be finite and in {rng}, got {v!r}")
    return v


def check_nonnegative(name: str, value: object) -> float:
    v = _as_float(name, value)
    if not (0 <= v < math.inf):
        raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
    return v


def check_count(name: str, value: object, *, minimum: int = 0) -> int:
    """A whole number >= minimum (accepts integral floats and NumPy integers; booleans, strings
    and complex numbers are rejected).  Large integers stay exact (no float round trip)."""
    _reject_non_numbers(name, value, f"an integer >= {minimum}")
    if isinstance(value, (int, np.integer)):
        v = int(value)
    else:
        try:
            f = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}") \
                from None
        if not math.isfinite(f) or f != int(f):
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        v = int(f)
    if v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return v


def check_counts_le(small_name: str, small: int, big_name: str, big: int) -> None:
    """Impossible counts (e.g. u > r, r > n) are rejected."""
    if small > big:
        raise ValueError(f"{small_name} must be <= {big_name} ({big}), got {small}")


def check_nested_counts(**counts: object) -> tuple[int, ...]:
    """Counts that must nest, largest first: e.g. ``n >= r >= u`` (one-run audits) or
    ``m >= guesses >= correct``.  The first must be >= 1, the rest >= 0; impossible counts
    (u > r, r > n) are rejected naming both arguments."""
    names = list(counts)
    vals = [check_count(names[0], counts[names[0]], minimum=1)]
    for name in names[1:]:
        v = check_count(name, counts[name], minimum=0)
        check_counts_le(name, v, names[len(vals) - 1], vals[-1])
        vals.append(v)
    return tuple(vals)


def check_nested_count_arrays(total_name: str, total: object, outer_name: str, outer: object,
                              inner_name: str, inner: object
                              ) -> tuple[int, np.ndarray, np.ndarray]:
    """:func:`check_nested_counts` for many observations of one total: ``total`` >= 1 and,
    elementwise, total >= outer >= inner >= 0 (e.g. m, guesses, correct of a guess-count
    grid).  Returns (total, outer, inner) with the arrays as 1-D int64."""
    total_v = check_count(total_name, total, minimum=1)
    o = check_count_array(outer_name, outer).reshape(-1)
    i = check_count_array(inner_name, inner).reshape(-1)
    if o.size != i.size:
        raise ValueError(f"{outer_name} and {inner_name} must have the same length, got "
                         f"{o.size} and {i.size}")
    for a, b in zip(o.tolist(), i.tolist(), strict=True):
        check_nested_counts(**{total_name: total_v, outer_name: a, inner_name: b})
    return total_v, o.astype(np.int64), i.astype(np.int64)


def check_finite_array(name: str, values: object, *, min_size: int = 1) -> np.ndarray:
    """A 1-D float array with no NaN or inf and at least ``min_size`` entries (strings and
    complex numbers are rejected, not coerced).

    A float64 input is returned without a copy (it may be the caller's array: do not modify
    the result in place); other dtypes are converted to float64.  Integer and boolean inputs
    are finite by construction and skip the finiteness scan; float inputs take one pass
    (``np.isfinite(...).all()``) and a second one only to name the first bad entry.
    """
    raw = _numeric_array(name, values, "an array of real numbers")
    arr = np.asarray(raw, dtype=np.float64)
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.ndim == 0 else arr
        if arr.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} entries, got {arr.size}")
    if raw.dtype.kind not in "biu" and not np.isfinite(arr).all():
        i = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name} must be finite (no NaN/inf); entry {i} is {float(arr[i])}")
    return arr


def check_finite_matrix(name: str, values: object) -> np.ndarray:
    """A non-empty (trials, K) float matrix without NaN/inf; a 1-D input is one column."""
    a = _numeric_array(name, values, "a matrix of real numbers").astype(float)
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty (trials, K) matrix, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} must be finite (no NaN/inf)")
    return a


def check_binary_array(name: str, values: object, *, min_size: int = 1,
                       ndim: int = 1) -> np.ndarray:
    """A 0/1 (or boolean) array, returned as bool ("1" strings are rejected, not coerced)."""
    arr = _numeric_array(name, values, "an array of 0/1 values")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} entries, got {arr.size}")
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind in "iu" and arr.dtype.isnative:
        # integers: 0/1 check in their own dtype (no float64 copy); as unsigned of the same
        # width (native byte order), every entry other than 0 and 1 (negatives too) is > 1
        if not (arr.view(f"u{arr.dtype.itemsize}") > 1).any():
            if arr.dtype.itemsize == 1 and arr.flags.c_contiguous:
                return arr.view(bool)
            return arr != 0
    try:
        f = np.asarray(arr, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must contain only 0/1 values") from None
    ok = (f == 0) | (f == 1)
    if not ok.all():
        i = int(np.flatnonzero(~ok.reshape(-1))[0])
        raise ValueError(f"{name} must contain only 0/1 values; entry {i} is "
                         f"{float(f.reshape(-1)[i]):g}")
    return f.astype(bool)


def check_same_length(**arrays: np.ndarray) -> None:
    sizes = {k: len(v) for k, v in arrays.items()}
    if len(set(sizes.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in sizes.items())
        raise ValueError(f"arrays must have the same length: {desc}")


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value
