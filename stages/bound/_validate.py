"""Argument checks shared by the bound functions: one clear ValueError sentence per bad input."""
from __future__ import annotations

import numbers

import numpy as np


class ArgumentError(ValueError):
    """A refused argument: str() is one sentence naming it, the value and the fix; ``argument`` is its name as
    data, so a caller that knows where the argument came from (the pipeline: a config key) need not parse it."""

    def __init__(self, argument: str, message: str):
        super().__init__(message)
        self.argument = argument


def _fail(name: str, value, allowed: str, fix: str = "") -> None:
    msg = f"{name} must be {allowed}, got {value}"
    if fix:
        msg += f"; {fix}"
    raise ArgumentError(name, msg + ".")


def _as_float_array(name: str, value) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        _fail(name, repr(value), "a number or an array of numbers")
    return arr


def _bad_entry(arr: np.ndarray, bad: np.ndarray):
    flat = np.flatnonzero(np.ravel(bad))
    idx = int(flat[0])
    if arr.ndim == 0:
        return repr(float(arr))
    where = tuple(int(i) for i in np.unravel_index(idx, arr.shape))
    return f"{float(np.ravel(arr)[idx])!r} at index {where[0] if len(where) == 1 else where}"


def probability(name: str, value, *, open_low: bool = False, open_high: bool = False) -> np.ndarray:
    """Return value as a float array, raising if any entry is NaN or outside [0, 1]."""
    arr = _as_float_array(name, value)
    bad = ~np.isfinite(arr) | (arr < 0) | (arr > 1)
    if open_low:
        bad |= arr <= 0
    if open_high:
        bad |= arr >= 1
    if np.any(bad):
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        _fail(name, _bad_entry(arr, bad), f"a probability in {lo}, {hi}")
    return arr


def epsilon(name: str, value) -> np.ndarray:
    """Return value as a float array, raising if any entry is NaN or negative (inf is allowed)."""
    arr = _as_float_array(name, value)
    bad = np.isnan(arr) | (arr < 0)
    if np.any(bad):
        _fail(name, _bad_entry(arr, bad), "a number >= 0 (a privacy parameter epsilon)")
    return arr


def delta(name: str, value) -> float:
    """Return a scalar delta in [0, 1)."""
    arr = _as_float_array(name, value)
    if arr.ndim != 0:
        _fail(name, repr(value), "a single number in [0, 1)")
    d = float(arr)
    if not (0.0 <= d < 1.0):
        _fail(name, repr(d), "in [0, 1) (a privacy parameter delta)")
    return d


def positive(name: str, value, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """Return a scalar > 0 (or >= 0)."""
    arr = _as_float_array(name, value)
    if arr.ndim != 0:
        _fail(name, repr(value), "a single number")
    x = float(arr)
    ok = (x >= 0 if allow_zero else x > 0) and (allow_inf or np.isfinite(x)) and not np.isnan(x)
    if not ok:
        _fail(name, repr(x), ("a number >= 0" if allow_zero else "a number > 0") + ("" if allow_inf else ", finite"))
    return x


def confidence(name: str, value) -> np.ndarray:
    """Return confidences as a 1-d float array, each in the open interval (0, 1)."""
    arr = _as_float_array(name, value)
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr >= 1)
    if np.any(bad):
        _fail(name, _bad_entry(arr, bad), "in the open interval (0, 1), e.g. 0.95")
    return arr


def integer(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return value as an int, raising unless it is an integer (3 or 3.0) within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, numbers.Real, np.integer, np.floating)):
        _fail(name, repr(value), "an integer")
    if isinstance(value, (numbers.Real, np.floating)) and not isinstance(value, numbers.Integral):
        if not np.isfinite(value) or float(value) != int(value):
            _fail(name, repr(value), "an integer")
    v = int(value)
    if minimum is not None and v < minimum:
        _fail(name, repr(v), f"an integer >= {minimum}")
    if maximum is not None and v > maximum:
        _fail(name, repr(v), f"an integer <= {maximum}")
    return v
