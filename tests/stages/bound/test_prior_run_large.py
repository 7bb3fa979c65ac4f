"""Theorem 4 with two groups at large n (stages/bound/prior_run.py; THEORY.md section 9).

The case: n targets sharing 10 distinct priors (Zipf over 10 values, exponents 1.0, 1.1, ..., 1.9; target i has
shape i % 10; tests/benchmarks/bench_whole_prior.py's case) at mu = 1, two groups (the default).

* The decisions' stall stop (``_STALL_ROUNDS``) gives counts the converged LP certifies, at most one above its own.
* With groups, the counts that are their own blocks reach no farther than _NEAR_MAX from c (``_near``): the layout is
  the default up to n ~ 320, its blocks stay few at any n, and the counts show no cliff where it departs.
* At n = 2,000 and 10,000 the counts are below Theorem 3's and above what a real attack reaches.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from stages.bound import prior_run as R
from stages.bound.profiles import GaussianDP
from stages.bound.search import whole_prior_counts
from stages.bound.whole_prior import Distributions

#: A certified value may sit below the exact LP optimum by the LP solver's tolerance only.
TOL = 1e-7
TARGETS = np.array([0.5, 0.05])


def _family(n: int) -> Distributions:
    shapes = [np.arange(1, 11.0) ** -s for s in np.arange(1.0, 2.0, 0.1)]
    shapes = [w / w.sum() for w in shapes]
    return Distributions.of(np.array([shapes[i % 10] for i in range(n)]))


def _counts(n: int) -> tuple[list[int], np.ndarray]:
    """Theorem 4's counts as ``count_bounds`` searches them (below Theorem 3's), and Theorem 3's."""
    dists = _family(n)
    hint = np.asarray(whole_prior_counts(GaussianDP(1.0), dists, TARGETS))
    return R.prior_run_counts(GaussianDP(1.0), dists, TARGETS, hint=hint, at_most=True), hint


def test_decided_counts_are_what_the_converged_lp_certifies():
    """At n = 40 (two groups, every count its own block) each count c, decided with the stall stop, is certified by
    the LP solved to convergence (tail(c + 1) <= target) and is at most one above that LP's own count."""
    dists = _family(40)
    counts = R.prior_run_counts(GaussianDP(1.0), dists, TARGETS)
    assert R.PriorRun(GaussianDP(1.0), dists).sizes.size == 2
    for c, t in zip(counts, TARGETS):
        exact = lambda v: R.PriorRun(GaussianDP(1.0), dists).tail(v)  # noqa: E731 (no target: rounds to convergence)
        assert exact(c + 1) <= t + TOL, (c, t)
        assert exact(c - 1) > t, (c, t)


def test_the_near_blocks_stop_growing_with_groups_only():
    """``_near``: the default layout with one group at any n, and with groups wherever every block is one count
    (n <= 300) or 2 sqrt(n) <= _NEAR_MAX; beyond, the counts within _NEAR_MAX of c stay their own blocks and the blocks
    stay few (n = 10^5: under 200, where the default has ~1,350)."""
    assert R._near(10**5, 1) is None and R._near(100, 2) is None and R._near(101, 2) == R._NEAR_MAX
    for n in (150, 300):
        assert np.array_equal(R._layout(n, 1, n // 2, R._near(n, 2)), R._layout(n, 1, n // 2))
    near = R._NEAR_MAX
    for n, a, c in ((400, 150, 300), (10_000, 6474, 8974), (10**5, 64_233, 89_233)):
        starts = R._layout(n, a, c, R._near(n, 2))
        assert starts[0] == a and c in starts and starts[-1] <= n and np.all(np.diff(starts) >= 1)
        assert np.all(np.isin(np.arange(c - near, c + near + 1), starts))
        assert starts.size < R._layout(n, a, c).size
    assert R._layout(10**5, 64_233, 89_233, R._near(10**5, 2)).size < 200
    assert R._layout(10**5, 64_233, 89_233).size > 1000


def _first_departure() -> int:
    """The least n at which the layout with groups differs from the default at c = 0.7 n (window n / 4 below)."""
    for n in range(301, 2000):
        c = int(0.7 * n)
        a = max(1, c - max(R._WINDOW_MIN, int(R._WINDOW * n)))
        if not np.array_equal(R._layout(n, a, c, R._near(n, 2)), R._layout(n, a, c)):
            return n
    raise AssertionError("the layouts never differ")


@pytest.mark.slow
def test_no_cliff_where_the_near_blocks_stop_growing(monkeypatch):
    """Just past the n where the layout with groups first departs from the default (~320): the counts move by at most
    2 from n to n + 1, and at n + 1 they are the default layout's or at most one more; never above Theorem 3's."""
    n = _first_departure() + 8
    here, _ = _counts(n)
    there, t3 = _counts(n + 1)
    assert all(0 <= b - a <= 2 for a, b in zip(here, there)), (n, here, there)
    assert np.all(np.asarray(there) <= t3)
    monkeypatch.setattr(R, "_near", lambda n, groups: None)
    default, _ = _counts(n + 1)
    assert all(0 <= b - a <= 1 for a, b in zip(default, there)), (n, default, there)


@pytest.mark.slow
def test_large_n_counts_are_below_theorem_3_and_above_a_real_attack():
    """n = 2,000 and 10,000: Theorem 4's counts are at most Theorem 3's, and at 0.5 and 0.95 below it (two groups see
    the priors differ), and above what the attack that guesses every target's likeliest value reaches (a real attack:
    no valid count is below it)."""
    for n in (2000, 10_000):
        counts, t3 = _counts(n)
        assert np.all(np.asarray(counts) < t3), (n, counts, t3)
        run = R.PriorRun(GaussianDP(1.0), _family(n))
        assert all(c > run.unreachable(t) for c, t in zip(counts, TARGETS)), (n, counts)
