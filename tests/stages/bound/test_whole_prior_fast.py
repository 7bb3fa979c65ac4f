"""The exact fast path of Theorem 3's one-target relaxation (stages/bound/whole_prior.py, ``_FAST``): each cutting-plane
round's LP handed to scipy's HiGHS without linprog's wrapper, the tangent's bounded search in plain floats, mu-GDP's
delta on one float. It must give the values of the plain path (scipy's linprog and minimize_scalar) bit for bit, and
those stay at or above the exact LP oracle (tests/stages/bound/lp_oracle.py) where it is exact."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

import lp_oracle as L
from stages.bound import success_bound
from stages.bound import whole_prior as W
from stages.bound.profiles import DPSGD, ApproxDP, ComposedGaussian, GaussianDP, PureDP, gdp_delta, gdp_delta_scalar

#: How far a certified value may sit below the exact LP optimum (as in test_whole_prior_vs_oracle.py).
TOL = 1e-7


def _curve_values(profile, prior, set_size, qs, fast, monkeypatch):
    """phi at each q in turn on a fresh (not memoised) ExcessCurve, with the fast path on or off."""
    monkeypatch.setattr(W, "_FAST", fast)
    curve = W.ExcessCurve(profile, W.prior_shape(prior), set_size)
    return [curve(q) for q in qs]


def _priors(seed, count):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        d = int(rng.integers(3, 13))
        w = rng.dirichlet(np.full(d, rng.choice([0.3, 1.0, 3.0])))
        out.append(w / w.sum())
    return out


#: DPSGD at sample rate 1: mu-GDP through the generic delta (not GaussianDP._delta), the tangent by profile.delta.
PROFILES = [GaussianDP(0.3), GaussianDP(1.0), GaussianDP(2.5), ApproxDP(1.0, 1e-3), PureDP(0.7),
            DPSGD(noise_multiplier=2.0, sample_rate=1.0, steps=4)]


@pytest.mark.parametrize("profile", PROFILES, ids=repr)
def test_fast_path_equals_plain_path(profile, monkeypatch):
    """The one-target relaxation at q = 0 and at later thresholds (the cuts carried over), one exact guess and sets of
    two values: the same numbers with and without the fast path."""
    for i, prior in enumerate(_priors(7, 3)):
        set_size = 1 + i % 2
        qs = (0.0, 0.4, 0.15)
        fast = _curve_values(profile, prior, set_size, qs, True, monkeypatch)
        plain = _curve_values(profile, prior, set_size, qs, False, monkeypatch)
        assert fast == plain, (profile, prior.tolist(), set_size, fast, plain)
        assert all(0.0 < v <= 1.0 for v in fast)


def test_success_bound_fast_equals_plain(monkeypatch):
    """The public call on a Zipf prior over 10 values (issue 40's case): the same value either way."""
    z = 1.0 / np.arange(1, 11)
    z = z / z.sum()
    values = {}
    for fast in (True, False):
        monkeypatch.setattr(W, "_FAST", fast)
        W._CURVES.clear()
        values[fast] = [success_bound(GaussianDP(mu), distribution=z) for mu in (0.61, 1.37)]
    W._CURVES.clear()
    assert values[True] == values[False]


def test_linprog_core_equals_linprog():
    """One LP of the relaxation's form through the fast call and through linprog: the same solution, duals and slack."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        n, rows = 2 * int(rng.integers(2, 8)), int(rng.integers(4, 40))
        A = rng.normal(size=(rows, n)) * (rng.random((rows, n)) < 0.5)
        b = rng.uniform(0.1, 2.0, rows)  # x = 0 is feasible
        c = rng.normal(size=n)
        solved = W._linprog_core(c, A, b)
        res = optimize.linprog(c, A_ub=A, b_ub=b, bounds=(0.0, 1.0), method="highs", options={"presolve": False})
        assert solved is not None and res.status == 0
        x, duals, residual = solved
        assert np.array_equal(x, res.x)
        assert np.array_equal(duals, res.ineqlin.marginals)
        assert np.array_equal(residual, res.ineqlin.residual)


def test_bounded_minimum_equals_minimize_scalar():
    """The plain-float Brent search returns minimize_scalar's x bit for bit (smooth, flat and edge minima)."""
    rng = np.random.default_rng(5)
    functions = [lambda x, a=a, b=b: (x - a) ** 2 + b * math.sin(3 * x) for a, b in rng.uniform(-1, 2, (30, 2))]
    functions += [lambda x: 1.0, lambda x: x, lambda x: -x, lambda x: abs(x - 0.3)]
    for f in functions:
        for lo, hi in ((0.0, 1.0), (0.37, 0.371), (1e-6, 20.0)):
            ref = optimize.minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}).x
            assert W._bounded_minimum(f, lo, hi, 1e-10) == float(ref)


def test_gdp_delta_on_one_float_equals_the_array_call():
    """GaussianDP.delta on one float (gdp_delta_scalar, the tangent search's call) is the array call's value bit for
    bit, for ComposedGaussian too, and at eps = inf."""
    rng = np.random.default_rng(11)
    for mu in (0.05, 0.5, 1.0, 3.0, 8.0):
        eps = np.concatenate([rng.uniform(0.0, 20.0, 400), rng.uniform(0.0, 1e-3, 50), [0.0, 20.0, np.inf]])
        ref = np.clip(gdp_delta(eps, mu), 0.0, 1.0)
        for profile in (GaussianDP(mu), ComposedGaussian(noise_multiplier=1.0 / mu)):
            assert profile.mu == pytest.approx(mu, rel=1e-15)
            ref_p = np.clip(gdp_delta(eps, profile.mu), 0.0, 1.0)
            assert all(profile.delta(float(e)) == r for e, r in zip(eps, ref_p))
            assert np.array_equal(profile.delta(eps), ref_p)
        assert all(gdp_delta_scalar(float(e), mu) == r for e, r in zip(eps[:-1], ref[:-1]))


@pytest.mark.parametrize("eps,delta", [(0.5, 1e-3), (1.5, 0.0)])
@pytest.mark.parametrize("prior", [(0.5, 0.3, 0.2), (0.4, 0.3, 0.2, 0.1)])
def test_fast_path_above_exact_oracle(eps, delta, prior):
    """(eps, delta)-DP and eps-DP, where the oracle is the exact worst case over all mechanisms: the fast path's
    phi(0) and phi(q) are never below it (and phi(0) equals it, the relaxation being exact there)."""
    profile = PureDP(eps) if delta == 0 else ApproxDP(eps, delta)
    curve = W.ExcessCurve(profile, W.prior_shape(list(prior)))
    exact, _ = L.worst_case_success(1, len(prior), list(prior), 1, [(eps, delta)])
    assert curve(0.0) >= exact - TOL
    assert curve(0.0) <= exact + 1e-6
    for q in (0.3, 0.6):
        excess, _ = L.threshold_excess(len(prior), list(prior), q, [(eps, delta)])
        assert curve(q) >= excess - TOL


@pytest.mark.parametrize("mu,p", [(0.5, 0.7), (2.0, 0.9), (1.0, 0.55)])
def test_fast_path_above_gaussian_mechanism(mu, p):
    """mu-GDP on two values: the relaxation (closed_form=False, the LP by cutting planes) is never below the success
    of the Gaussian mechanism, a certified mu-GDP mechanism attaining the exact worst case (two_valued_success minus its
    rounding margin)."""
    profile = GaussianDP(mu)
    value = W.ExcessCurve(profile, W.prior_shape([p, 1.0 - p]))(0.0)
    assert value >= W.two_valued_success(profile, p) - W._CLOSED_FORM_MARGIN - 1e-12


def test_fast_path_falls_back_to_linprog(monkeypatch):
    """Without scipy's HiGHS module the fast path's LP hands each round to linprog: the same values still."""
    prior = _priors(13, 1)[0]
    plain = _curve_values(GaussianDP(1.2), prior, 1, (0.0, 0.3), False, monkeypatch)
    monkeypatch.setattr(W, "_scipy_highs", None)
    assert W._linprog_core(np.zeros(2), np.ones((1, 2)), np.ones(1)) is None
    assert _curve_values(GaussianDP(1.2), prior, 1, (0.0, 0.3), True, monkeypatch) == plain
