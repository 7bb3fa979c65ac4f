"""Theorem 3 with set-valued success (k guesses, distance windows) and each target's whole prior (THEORY.md, Lemma 4').

Against the exact LP over every (eps, delta)-DP / eps-DP mechanism (tests/stages/bound/lp_oracle.py, success sets
given explicitly): at n = 1 the one-target worst case and the threshold excess E[(rho - q)_+] of Lemma 4' are never
below the exact values, for k-subsets and windows on skewed priors; at n = 2 Theorem 3's tail bound is never below
the exact worst case of Pr[at least v of 2 succeed], and averaged over trials with different priors never below the
exact worst case of the trials' mixture; the count with ``set_size`` is the minimum with Theorem 1's (Theorem 2's over
the trials) and beats it on a skewed prior; bad arguments get one sentence.
"""
from __future__ import annotations

import numpy as np
import pytest

import lp_oracle as O
from stages.bound import ApproxDP, GaussianDP, PureDP
from stages.bound import search as S
from stages.bound import theorems as T
from stages.bound import whole_prior as W

PRIORS = {"skewed4": (0.55, 0.25, 0.15, 0.05), "zipf5": O.zipf_prior(5, 1.3), "ternary": (0.5, 0.3, 0.2)}
PROFILES = [(ApproxDP(1.0, 0.01), [(1.0, 0.01)]), (ApproxDP(0.5, 0.05), [(0.5, 0.05)]), (PureDP(1.0), [(1.0, 0.0)])]


def families(d: int):
    """(name, success sets, the largest set's size) for a domain of d values."""
    return [("2-subsets", O.subsets(d, 2), 2), ("windows-2", O.windows(d, 2), 2), ("windows-3", O.windows(d, 3), 3)]


def best_mass(prior, sets) -> float:
    return max(sum(prior[x] for x in s) for s in sets)


def set_threshold_excess(prior, sets, q: float, constraints) -> float:
    """max E[(rho - q)_+] over every mechanism, rho the posterior mass of the named set (outputs: a set, counted, or
    one 'not counted' output; the same post-processing argument as lp_oracle.threshold_excess)."""
    d = len(prior)
    outputs = [(s,) for s in sets] + [(None,)]
    gain = np.zeros((d, len(outputs)))
    for x in range(d):
        for j, (s,) in enumerate(outputs[:-1]):
            gain[x, j] = prior[x] * ((x in s) - q)
    return O._solve_lp(1, d, [(x,) for x in range(d)], outputs, gain, constraints)[0]


@pytest.mark.parametrize("profile, constraints", PROFILES, ids=lambda x: repr(x) if not isinstance(x, list) else "")
@pytest.mark.parametrize("name", sorted(PRIORS))
def test_one_target_never_below_the_exact_lp(profile, constraints, name):
    prior = PRIORS[name]
    d = len(prior)
    shape = W.prior_shape(np.array(prior))
    for family, sets, k in families(d):
        exact = O.worst_case_success(1, d, prior, 1, constraints, success=("sets", sets))[0]
        bound = W.whole_prior_success(profile, shape, k)
        assert bound >= exact - 1e-9, (family, bound, exact)
        assert bound <= 1.0
        curve = W.ExcessCurve(profile, shape, k)
        for q in (0.2, 0.5, 0.8):
            exact_q = set_threshold_excess(prior, sets, q, constraints)
            assert curve(q, fine=False) >= exact_q - 1e-9, (family, q, curve(q, fine=False), exact_q)
            assert curve(q) >= exact_q - 1e-9


@pytest.mark.parametrize("profile, constraints", PROFILES[:2], ids=lambda x: repr(x) if not isinstance(x, list) else "")
@pytest.mark.parametrize("name", ["skewed4", "ternary"])
def test_two_targets_never_below_the_exact_lp(profile, constraints, name):
    prior = PRIORS[name]
    d = len(prior)
    for family, sets, k in families(d)[:2]:
        p = best_mass(prior, sets)
        for v in (1, 2):
            exact = O.worst_case_success(2, d, prior, v, constraints, success=("sets", sets))[0]
            bound = T.tail_bound(profile, [p, p], v, distributions=[prior, prior], set_valued=True, set_size=k)
            assert bound >= exact - 1e-9, (family, v, bound, exact)


def test_the_count_is_the_minimum_and_the_whole_prior_helps_on_a_skewed_prior():
    rows = np.tile([0.5, 0.3, 0.15, 0.05], (50, 1))
    p = np.full(50, 0.8)  # two guesses: the two likeliest values
    levels = [0.05, 0.5, 0.95]
    without, by0 = T.count_bounds(GaussianDP(1.0), p, levels, distributions=rows, set_valued=True)
    with_size, by = T.count_bounds(GaussianDP(1.0), p, levels, distributions=rows, set_valued=True, set_size=2)
    assert list(by0) == [T.SPLIT_THEOREM] and W.WHOLE_PRIOR_THEOREM in by
    assert np.array_equal(with_size, np.minimum(by[T.SPLIT_THEOREM], by[W.WHOLE_PRIOR_THEOREM]))
    assert np.all(with_size <= without) and with_size[0] < without[0]


def test_thresholds_are_placed_by_the_largest_k_values():
    d = W.Distributions.of([[0.5, 0.3, 0.15, 0.05], [0.25, 0.25, 0.25, 0.25]])
    assert W.threshold_priors(d, 1).tolist() == pytest.approx(d.p.tolist())
    assert sorted(W.threshold_priors(d, 2).tolist()) == pytest.approx([0.5, 0.8])
    assert sorted(W.threshold_priors(d, 9).tolist()) == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize("call, match", [
    (lambda: T.count_bound(GaussianDP(1.0), None, 0.5, distributions=[[0.7, 0.3]], set_size=2),
     r"^set_size must be None or 1 for one exact guess"),
    (lambda: T.count_bound(GaussianDP(1.0), [0.9], 0.5, distributions=[[0.7, 0.3]], set_valued=True, set_size=0),
     r"^set_size must be"),
    (lambda: W.ExcessCurve(GaussianDP(1.0), W.prior_shape([0.7, 0.3]), 0), r"^set_size must be a positive integer"),
])
def test_bad_set_size_is_one_sentence(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------- over the trials (the expected box)
def _mixture_oracle_sets(runs, v, constraints, sets):
    """The exact worst case over the trials' mixture with success sets: max over every mechanism meeting the
    constraints (one mechanism for all trials) of (1/R) sum_r Pr_r[at least v of n succeed]."""
    import itertools
    import math

    n, d = runs[0].shape
    datasets = list(itertools.product(range(d), repeat=n))
    outputs = O._outputs(n, d, ("sets", sets))
    px = np.mean([[math.prod(r[i][xi] for i, xi in enumerate(x)) for x in datasets] for r in runs], axis=0)
    win = np.array([[O._hits(x, o) >= v for o in outputs] for x in datasets], dtype=float)
    return O._solve_lp(n, d, datasets, outputs, px[:, None] * win, constraints)[0]


def test_over_the_trials_never_below_the_exact_lp_over_the_mixture():
    runs = [np.array([[0.6, 0.3, 0.1], [0.5, 0.25, 0.25]]), np.array([[0.8, 0.15, 0.05], [0.4, 0.35, 0.25]])]
    dists = [W.Distributions.of(r) for r in runs]
    sets = O.subsets(3, 2)
    for profile, constraints in PROFILES[:2]:
        for v in (1, 2):
            exact = _mixture_oracle_sets(runs, v, constraints, sets)
            bound = S.expected_whole_prior_tail(profile, dists, v, 2)[0]
            assert bound >= exact - 1e-9, (profile, v, bound, exact)


def test_expected_counts_with_sets_are_the_minimum_and_need_the_set_size():
    rows = np.tile([0.5, 0.3, 0.15, 0.05], (50, 1))
    p_runs = np.full((3, 50), 0.8)
    counts, by = T.expected_count_bounds(GaussianDP(1.0), p_runs, [0.05, 0.5, 0.95], distributions=rows,
                                         set_valued=True, set_size=2)
    assert set(by) == {T.EXPECTED_THEOREM, W.WHOLE_PRIOR_THEOREM}
    assert np.array_equal(counts, np.minimum(by[T.EXPECTED_THEOREM], by[W.WHOLE_PRIOR_THEOREM]))
    per_trial = [rows, np.tile([0.4, 0.4, 0.1, 0.1], (50, 1)), rows]
    counts, by = T.expected_count_bounds(GaussianDP(1.0), p_runs, [0.05, 0.5, 0.95], distributions=per_trial,
                                         set_valued=True, set_size=2)
    assert set(by) == {T.EXPECTED_THEOREM, T.EXPECTED_WHOLE_PRIOR_THEOREM}
    with pytest.raises(ValueError, match=r"^distributions= with set_valued=True needs set_size="):
        T.expected_count_bounds(GaussianDP(1.0), p_runs, 0.5, distributions=rows, set_valued=True)
