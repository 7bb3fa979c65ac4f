"""Bisection on a monotone predicate: the one threshold search of the project, on integers and on floats (linear
or log scale), and the calibration of a noise scale built on it.

Every search here holds one invariant: the predicate is false at ``lo`` (or ``lo`` is a floor that is never
evaluated) and true at ``hi`` (or ``hi`` is given as true), and each step evaluates the midpoint and keeps it.
So the end the caller reads is always one where the predicate held (or the end it gave), whatever the
predicate does between evaluations: a bound searched this way stays certified by an evaluation.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["NOISE_RTOL", "bisect", "bisect_log", "double_until", "gallop_down", "smallest_noise", "smallest_true"]

#: The relative tolerance of every noise calibration (``smallest_noise``): the sigma returned meets the target
#: and is at most this much (relative) above the smallest sigma that does. 1e-3 is the tolerance every published
#: DP-SGD training was calibrated with (its sigma is part of each cached release's key, so a tighter one would
#: retrain them all for a sigma at most 0.1% smaller); stages.bound.calibrate_noise had 1e-4 and now shares it.
NOISE_RTOL = 1e-3
#: Most midpoints a float bisection evaluates: 200 halvings reach any tolerance a double can hold.
ITERATIONS = 200


def smallest_true(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest integer v in (lo, hi] with ``pred(v)``, for a predicate false then true (monotone).

    Invariant: ``pred(lo)`` is false, or ``lo`` is a floor below every candidate; ``pred(hi)`` is true, or ``hi``
    is the ceiling the caller vouches for. Neither end is evaluated; each step evaluates the midpoint
    ``(lo + hi) // 2`` and moves the end whose value it shares, so hi is returned once hi <= lo + 1 (at once
    when the bracket holds no integer in between). If ``pred`` is not monotone, the v returned still has
    ``pred(v)`` true (or is the given hi) and ``pred(v - 1)`` false (or v - 1 is the given lo).

    >>> smallest_true(lambda v: v * v >= 50, 0, 100)
    8
    >>> smallest_true(lambda v: True, 4, 5), smallest_true(lambda v: True, 0, 100)
    (5, 1)
    """
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def gallop_down(pred: Callable[[int], bool], good: int, bottom: int = 0) -> int:
    """The smallest integer found in [bottom, good] with ``pred`` true, ``pred(good)`` given true: steps down 2, 4, 8, ...
    below the last true point (never below ``bottom``), and at the first false one bisects back (``smallest_true``).
    The value returned is ``good`` itself or a point where ``pred`` held (the count searches of Theorems 5 and 6).

    >>> gallop_down(lambda v: v >= 37, 100), gallop_down(lambda v: v >= 37, 100, bottom=60)
    (37, 60)
    """
    step = 2
    while good > bottom:
        c = max(good - step, bottom)
        if not pred(c):
            return smallest_true(pred, c, good)
        good, step = c, step * 2
    return good


def bisect(pred: Callable, lo, hi, *, atol: float = 0.0, rtol: float = 0.0, iterations: int = ITERATIONS):
    """(lo, hi) around the threshold of a predicate false at ``lo`` and true at ``hi``, halved at arithmetic
    midpoints 0.5 (lo + hi) until hi - lo <= atol + rtol |hi|, or after ``iterations`` midpoints.

    Invariant: as ``smallest_true``'s (neither given end is evaluated): the lo returned is the given lo or a point
    where ``pred`` was false, the hi returned the given hi or a point where it was true. Arrays ``lo`` and ``hi``
    (``pred`` then returns a boolean array) bisect every entry at once and stop when every entry has met the
    tolerance (with atol = rtol = 0: when every bracket has closed, or after ``iterations``).

    >>> lo, hi = bisect(lambda x: x * x > 2.0, 1.0, 2.0, rtol=1e-12)
    >>> lo * lo <= 2.0 < hi * hi, round(hi, 10)
    (True, 1.4142135624)
    """
    for _ in range(iterations):
        if np.all(hi - lo <= atol + rtol * np.abs(hi)):
            break
        mid = 0.5 * (lo + hi)
        true = pred(mid)
        if np.ndim(true) == 0:
            if true:
                hi = mid
            else:
                lo = mid
        else:
            lo, hi = np.where(true, lo, mid), np.where(true, mid, hi)
    return lo, hi


def bisect_log(pred: Callable[[float], bool], lo: float, hi: float, *, rtol: float,
               iterations: int = ITERATIONS) -> tuple[float, float]:
    """``bisect`` on a log scale, for 0 < lo < hi: geometric midpoints sqrt(lo hi) until hi / lo <= 1 + rtol, or
    after ``iterations`` midpoints. The same invariant: pred false at lo (or lo as given), true at hi (or hi as
    given).

    >>> lo, hi = bisect_log(lambda s: s >= 3.0, 1.0, 10.0, rtol=1e-6)
    >>> lo < 3.0 <= hi <= 3.0 * (1 + 1e-6)
    True
    """
    for _ in range(iterations):
        if hi / lo <= 1 + rtol:
            break
        mid = math.sqrt(lo * hi)
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def double_until(pred: Callable[[float], bool], lo: float, hi: float, limit: float) -> tuple[float, float] | None:
    """A bracket (lo, hi) with ``pred(hi)`` true, found by doubling: while ``pred(hi)`` is false, (lo, hi) becomes
    (hi, 2 hi), so lo is the given lo or a point where ``pred`` was false. None once hi passes ``limit`` (``pred`` is
    not evaluated there).

    >>> double_until(lambda x: x >= 5.0, 0.0, 1.0, 100.0), double_until(lambda x: False, 0.0, 1.0, 100.0)
    ((4.0, 8.0), None)
    """
    while not pred(hi):
        lo, hi = hi, hi * 2
        if hi > limit:
            return None
    return lo, hi


def smallest_noise(ok: Callable[[float], bool], lo: float, hi: float, *, floor: float, rtol: float = NOISE_RTOL,
                   iterations: int = ITERATIONS) -> float:
    """The smallest noise scale sigma with ``ok(sigma)``, to ``rtol`` relative, where more noise only helps (``ok``
    false, then true, as sigma grows).

    ``ok(hi)`` must hold (the caller evaluated it or knows it); 0 < lo < hi. While ``ok(lo)`` holds and lo > floor,
    the bracket moves down an octave ((lo, hi) becomes (lo / 2, lo)); then ``bisect_log`` closes it to hi / lo <=
    1 + rtol. The hi returned satisfies ``ok``: it is the upper end of the final bracket (the given hi, or a point
    where ``ok`` was evaluated true). A bracket that reaches ``floor`` with ``ok`` still true returns the smallest
    sigma tried (to rtol).

    >>> sigma = smallest_noise(lambda s: 1.0 / s <= 0.5, 1.0, 4.0, floor=1e-6)
    >>> 2.0 <= sigma <= 2.0 * (1 + NOISE_RTOL)
    True
    """
    while ok(lo) and lo > floor:
        lo, hi = lo / 2, lo
    return bisect_log(ok, lo, hi, rtol=rtol, iterations=iterations)[1]
