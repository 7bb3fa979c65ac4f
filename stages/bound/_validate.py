"""Argument checks shared by the bound functions: one clear sentence per bad input (an ``ArgumentError``, a
ValueError), for its values (``probability``, ``epsilon``, ``confidence`` ...) and its shape (``scalar``, ``vector``,
``elementwise``, ``distributions``: the shape received and the shapes taken)."""
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
    """Raise the refusal "{name} must be {allowed}, got {value}[; {fix}]."."""
    msg = f"{name} must be {allowed}, got {value}"
    if fix:
        msg += f"; {fix}"
    raise ArgumentError(name, msg + ".")


def _as_float_array(name: str, value) -> np.ndarray:
    _ragged(name, value, "a number or an array of numbers (every row the same length)")
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
    d = scalar(name, value)
    if not (0.0 <= d < 1.0):
        _fail(name, repr(d), "in [0, 1) (a privacy parameter delta)")
    return d


def positive(name: str, value, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """Return a scalar > 0 (or >= 0)."""
    x = scalar(name, value)
    ok = (x >= 0 if allow_zero else x > 0) and (allow_inf or np.isfinite(x)) and not np.isnan(x)
    if not ok:
        _fail(name, repr(x), ("a number >= 0" if allow_zero else "a number > 0") + ("" if allow_inf else ", finite"))
    return x


def confidence(name: str, value) -> np.ndarray:
    """Return confidences as a 1-d float array, each in the open interval (0, 1)."""
    arr = _as_float_array(name, value)
    if arr.size == 0:
        raise shape_error(name, value, "a confidence or an array of confidences")
    bad = ~np.isfinite(arr) | (arr <= 0) | (arr >= 1)
    if np.any(bad):
        _fail(name, _bad_entry(arr, bad), "in the open interval (0, 1), e.g. 0.95")
    return arr


def integer(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return value as an int, raising unless it is an integer (3 or 3.0) within [minimum, maximum]."""
    if _ragged_lengths(value) is not None or np.ndim(value) != 0:
        raise shape_error(name, value, "a single integer")
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


# --------------------------------------------------------------------------------------------
# shapes: one sentence naming the argument, the shape received and the shapes taken
# --------------------------------------------------------------------------------------------
def _ragged_lengths(value) -> list | None:
    """The lengths of the rows of a sequence whose rows differ in length (a ragged list), else None."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
        return None
    lengths = [len(r) if isinstance(r, (list, tuple, np.ndarray)) else None for r in value]
    if all(n is None for n in lengths):
        return None
    if len(set(lengths)) > 1:
        return lengths
    return next((sub for sub in map(_ragged_lengths, value) if sub is not None), None)


def ndim(value) -> int | None:
    """np.ndim(value), or None for a ragged list (which numpy cannot make an array of)."""
    return None if _ragged_lengths(value) is not None else int(np.ndim(value))


def shape_text(value) -> str:
    """How a message names the shape of ``value``: "shape (100, 10)", "a scalar 0.1", "a ragged list ..."."""
    lengths = _ragged_lengths(value)
    if lengths is not None:
        return f"a ragged list (rows of lengths {lengths})"
    ndim = np.ndim(value)
    if ndim == 0:
        return f"a scalar {value!r}"
    return f"shape {np.shape(value)}" + (" (empty)" if np.size(value) == 0 else "")


def shape_error(name: str, value, takes: str, fix: str = "") -> ArgumentError:
    """The refusal of a shape: "{name} must be {takes}; got {shape}[: {fix}]."."""
    return ArgumentError(name, f"{name} must be {takes}; got {shape_text(value)}" + (f": {fix}" if fix else "") + ".")


def _ragged(name: str, value, takes: str, fix: str = "") -> None:
    if _ragged_lengths(value) is not None:
        raise shape_error(name, value, takes, fix)


def scalar(name: str, value, check=None, *, fix: str = "", **kwargs) -> float:
    """A single number: ``check(name, value, **kwargs)`` (default ``_as_float_array``), refused unless it is 0-d."""
    if _ragged_lengths(value) is not None or np.ndim(value) != 0:
        raise shape_error(name, value, "a single number", fix)
    arr = (check or _as_float_array)(name, value, **kwargs)
    return float(arr)


def vector(name: str, value, check=None, *, what: str = "an array of numbers", fix: str = "",
           allow_scalar: bool = False, **kwargs) -> np.ndarray:
    """A non-empty 1-d float array (or, with ``allow_scalar``, a number, returned 0-d), its entries checked by
    ``check(name, value, **kwargs)`` (default ``_as_float_array``); any other shape is refused in one sentence
    ("{name} must be {what} (1-D); got shape (100, 10): {fix}.")."""
    takes = f"{what} (a number or a 1-d array)" if allow_scalar else f"{what} (1-D)"
    _ragged(name, value, takes, fix)
    ndim = np.ndim(value)
    if ndim > 1 or (ndim == 0 and not allow_scalar) or (ndim == 1 and np.size(value) == 0):
        raise shape_error(name, value, takes, fix)
    return (check or _as_float_array)(name, value, **kwargs)


def elementwise(name: str, value, check=None, **kwargs) -> np.ndarray:
    """A number or a rectangular array of any shape (a function vectorised over it), its entries checked by ``check``;
    a ragged list is refused in one sentence."""
    _ragged(name, value, "a number or a rectangular array (every row the same length)")
    return (check or _as_float_array)(name, value, **kwargs)


def broadcast(**arrays) -> None:
    """Refuse arrays that do not broadcast together, naming them and their shapes."""
    try:
        np.broadcast_shapes(*(np.shape(a) for a in arrays.values()))
    except ValueError:
        names = list(arrays)
        shapes = " and ".join(f"{n} {np.shape(a)}" for n, a in arrays.items())
        raise ArgumentError(names[-1], f"{' and '.join(names)} must have shapes that broadcast together (equal, or "
                                       f"one a number); got {shapes}.") from None


def boolean(name: str, value) -> bool:
    """True or False (numpy bools too); anything else ("yes", 1) is refused."""
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentError(name, f"{name} must be True or False, got {value!r}.")
    return bool(value)


def same_targets(name: str, n: int, other: str, m: int, what: str = "prior successes",
                 other_what: str = "distributions") -> None:
    """Refuse two descriptions of the targets of different lengths, naming both."""
    if n != m:
        raise ArgumentError(name, f"{name} and {other} must describe the same targets, got {n} {what} and {m} "
                                  f"{other_what}; pass one distribution per target, in the same order.")


def distributions(name: str, value) -> np.ndarray | list:
    """Each target's whole prior: a 2-d array (n, d) returned as one, or a sequence of n non-empty 1-d arrays (their
    lengths may differ) returned as a list of arrays; a single prior, a scalar, a 3-d array, no target or an empty
    prior is refused in one sentence. Entries are checked where they are read (``whole_prior.prior_shape``)."""
    takes = "one prior per target (a 2-d array (n, d) or a sequence of n 1-d arrays)"
    if isinstance(value, (str, bytes)) or (not isinstance(value, (list, tuple)) and np.ndim(value) == 0):
        raise shape_error(name, value, takes, "for one target pass [distribution]")
    if _ragged_lengths(value) is None:
        arr = _as_float_array(name, value)
        if arr.ndim == 1:
            raise shape_error(name, value, takes, "for one target pass [distribution]" if arr.size else "")
        if arr.ndim != 2 or arr.size == 0:
            raise shape_error(name, value, takes)
        return arr
    rows = list(value)
    for i, row in enumerate(rows):
        if np.ndim(row) != 1 or np.size(row) == 0 or _ragged_lengths(row) is not None:
            raise shape_error(f"{name}[{i}]", row, "one target's prior, a non-empty 1-d array of probabilities")
    return [_as_float_array(f"{name}[{i}]", row) for i, row in enumerate(rows)]
