"""stages._bisect, the project's one bisection: against a linear scan (integers), a closed form (floats), and its
stated invariants at the edges (an empty bracket, a predicate true everywhere, a tolerance already met)."""
from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import stages._bisect as B
from stages._bisect import bisect, bisect_log, double_until, smallest_noise, smallest_true


def counted(pred):
    """pred, recording every point it is evaluated at."""
    calls = []

    def wrapped(x):
        calls.append(x)
        return pred(x)

    return wrapped, calls


def test_docstring_examples():
    result = doctest.testmod(B, verbose=False)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("seed", range(20))
def test_smallest_true_is_the_first_true_of_a_monotone_predicate(seed):
    rng = np.random.default_rng(seed)
    lo = int(rng.integers(-50, 50))
    hi = lo + int(rng.integers(1, 300))
    threshold = int(rng.integers(lo + 1, hi + 1))  # the first true in (lo, hi]
    pred, calls = counted(lambda v: v >= threshold)
    assert smallest_true(pred, lo, hi) == threshold == next(v for v in range(lo + 1, hi + 1) if v >= threshold)
    assert lo not in calls and hi not in calls  # neither end is evaluated
    assert len(calls) <= math.ceil(math.log2(hi - lo))


def test_smallest_true_edges():
    never, calls = counted(lambda v: False)
    assert smallest_true(never, 3, 4) == 4 and calls == []  # lo + 1 == hi: nothing to evaluate
    assert smallest_true(never, 5, 5) == 5 and calls == []  # an empty bracket returns hi as given
    assert smallest_true(lambda v: True, 0, 1000) == 1  # true everywhere: the first integer above lo
    assert smallest_true(never, 0, 1000) == 1000  # false everywhere: the ceiling the caller vouched for
    # not monotone: the v returned is true and v - 1 false (or the given lo)
    pattern = {v: v in (3, 4, 9, 10, 11) for v in range(13)}
    v = smallest_true(pattern.__getitem__, 0, 12)
    assert pattern[v] and not pattern[v - 1]


@pytest.mark.parametrize("rtol", [1e-3, 1e-9])
def test_bisect_brackets_a_root_to_rtol(rtol):
    pred, calls = counted(lambda x: x * x > 2.0)
    lo, hi = bisect(pred, 1.0, 2.0, rtol=rtol)
    assert lo * lo <= 2.0 < hi * hi
    assert hi - lo <= rtol * hi and (hi - lo) * 2 > rtol * hi  # stops at the first bracket within tolerance
    assert 1.0 not in calls and 2.0 not in calls


def test_bisect_atol_iterations_and_a_met_tolerance():
    lo, hi = bisect(lambda x: x > 0.3, 0.0, 1.0, atol=1e-6)
    assert lo <= 0.3 < hi and hi - lo <= 1e-6
    pred, calls = counted(lambda x: x > 0.3)
    assert bisect(pred, 0.0, 1.0, iterations=3) == (0.25, 0.375) and len(calls) == 3
    assert bisect(pred, 0.0, 1.0, atol=2.0) == (0.0, 1.0) and len(calls) == 3  # already within: no evaluation
    lo, hi = bisect(lambda x: True, 0.0, 1.0, atol=1e-3)  # true everywhere: hi comes down to lo
    assert lo == 0.0 and 0.0 < hi <= 1e-3


def test_bisect_vectorised_bisects_every_entry_as_alone():
    thresholds = np.array([0.1, 0.5, 0.9, 0.99])
    lo, hi = bisect(lambda x: x > thresholds, np.zeros(4), np.ones(4), iterations=60)
    for t, a, b in zip(thresholds, lo, hi):
        assert (a, b) == bisect(lambda x: x > t, 0.0, 1.0, iterations=60)
        assert a <= t < b


def test_bisect_log_and_smallest_noise():
    lo, hi = bisect_log(lambda s: s >= 3.0, 1.0, 10.0, rtol=1e-6)
    assert lo < 3.0 <= hi and hi / lo <= 1 + 1e-6
    ok, calls = counted(lambda s: 1.0 / s <= 0.25)  # ok from sigma = 4 on
    sigma = smallest_noise(ok, 16.0, 32.0, floor=1e-6)
    assert 4.0 <= sigma <= 4.0 * (1 + B.NOISE_RTOL) and 32.0 not in calls
    assert smallest_noise(lambda s: True, 1.0, 2.0, floor=0.1, rtol=1e-3) <= 0.1  # true everywhere: down to floor
    assert smallest_noise(lambda s: False, 1.0, 2.0, floor=0.1) == 2.0  # the hi the caller vouched for


def test_double_until():
    pred, calls = counted(lambda x: x >= 5.0)
    assert double_until(pred, 0.0, 1.0, 100.0) == (4.0, 8.0) and calls == [1.0, 2.0, 4.0, 8.0]
    assert double_until(lambda x: True, 0.0, 1.0, 100.0) == (0.0, 1.0)
    pred, calls = counted(lambda x: False)
    assert double_until(pred, 0.0, 1.0, 100.0) is None and max(calls) == 64.0  # 128 > limit is never evaluated
