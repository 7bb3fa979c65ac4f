"""Privacy profiles (stages/bound/profiles.py) against closed forms, mpmath, convex conjugates of the
trade-off curves, and dp_accounting called directly.

Sources and tolerances are stated at each test.
"""
from __future__ import annotations

import functools
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from stages.bound.profiles import DPSGD, ApproxDP, ComposedGaussian, GaussianDP, PrivacyProfile, PureDP

Phi, Phi_inv = stats.norm.cdf, stats.norm.ppf
FAST = settings(max_examples=40, deadline=None)


# --------------------------------------------------------------------------------------------
# GaussianDP: closed form (Dong, Roth, Su 2019, Cor. 2.13), evaluated in mpmath at 60 digits
# --------------------------------------------------------------------------------------------
def gdp_delta_mp(eps: float, mu: float) -> float:
    """Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), at 60 significant digits."""
    with mp.workdps(60):
        e, m = mp.mpf(eps), mp.mpf(mu)
        val = mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)
        return float(val)


@FAST
@given(mu=st.floats(0.02, 30.0), eps=st.one_of(st.floats(0.0, 60.0), st.floats(60.0, 500.0)))
def test_gdp_delta_matches_mpmath(mu, eps):
    """Relative 1e-8 (float64 log_ndtr carries ~1e-16 * |log Phi| absolute error in the log, which at
    log Phi ~ -1e4 is ~1e-12 relative) plus 1e-300 absolute for underflow."""
    want = gdp_delta_mp(eps, mu)
    got = GaussianDP(mu).delta(eps)
    assert isinstance(got, float)
    assert got >= 0.0
    assert abs(got - want) <= 1e-8 * want + 1e-300, (mu, eps, got, want)


def test_gdp_delta_vectorised_and_endpoints():
    g = GaussianDP(1.3)
    eps = np.array([[0.0, 0.5], [2.0, np.inf]])
    d = g.delta(eps)
    assert d.shape == (2, 2)
    assert d[1, 1] == 0.0
    for e, x in zip(eps.ravel()[:3], d.ravel()[:3]):
        assert x == pytest.approx(gdp_delta_mp(e, 1.3), rel=1e-12)
    # delta(0) = total variation of N(0,1), N(mu,1) = 2 Phi(mu/2) - 1
    assert g.delta(0.0) == pytest.approx(2 * Phi(0.65) - 1, rel=1e-12)


@FAST
@given(mu=st.floats(0.05, 10.0), log10_delta=st.floats(-14.0, -0.5))
def test_gdp_epsilon_inverts_delta(mu, log10_delta):
    """epsilon(d) is the eps with delta(eps) = d: relative 1e-8 in delta (brentq runs to 1e-12)."""
    g = GaussianDP(mu)
    d = 10.0**log10_delta
    e = g.epsilon(d)
    if g.delta(0.0) <= d:
        assert e == 0.0
        return
    assert e > 0 and np.isfinite(e)
    assert g.delta(e) == pytest.approx(d, rel=1e-8)
    # the smallest such eps: a little smaller violates (delta is strictly decreasing)
    assert g.delta(e * (1 - 1e-6)) > d


@FAST
@given(eps=st.floats(0.01, 20.0), log10_delta=st.floats(-12.0, -1.0))
def test_from_epsilon_delta_is_largest_valid_mu(eps, log10_delta):
    d = 10.0**log10_delta
    g = GaussianDP.from_epsilon_delta(eps, d)
    # the profile as evaluated says (eps, d) holds; the exact (60-digit) value agrees to 1e-9 relative
    # (float64 cancellation in Phi(a) - e^eps Phi(b) at small mu, e.g. mu ~ 6e-3, costs ~1e-11)
    assert g.delta(eps) <= d
    assert gdp_delta_mp(eps, g.mu) <= d * (1 + 1e-9)
    # a tiny increase of mu violates (eps, d): 1e-7 relative is far above the brentq tolerance
    assert gdp_delta_mp(eps, g.mu * (1 + 1e-7)) > d


def test_from_epsilon_delta_known_value():
    """(1, 1e-5)-DP <-> mu ~ 0.2? Checked by the closed form only: delta(1) = 1e-5 to rel 1e-9."""
    g = GaussianDP.from_epsilon_delta(1.0, 1e-5)
    assert gdp_delta_mp(1.0, g.mu) == pytest.approx(1e-5, rel=1e-9)


@FAST
@given(mu=st.floats(0.05, 8.0), alpha=st.floats(0.0, 1.0))
def test_gdp_tradeoff_closed_form(mu, alpha):
    """f(alpha) = Phi(Phi^-1(1 - alpha) - mu) (Dong, Roth, Su 2019, eq. G_mu): 1e-12 absolute.
    Phi^-1(1 - alpha) is written -Phi^-1(alpha): forming 1 - alpha first loses alpha's digits at small alpha."""
    want = Phi(-Phi_inv(alpha) - mu)
    assert GaussianDP(mu).tradeoff(alpha) == pytest.approx(want, abs=1e-12)


# --------------------------------------------------------------------------------------------
# delta_f(eps) = 1 + f*(-e^eps) computed numerically from the trade-off curve
# --------------------------------------------------------------------------------------------
def delta_from_tradeoff(f, eps: float, kinks=()) -> float:
    """1 + f*(-e^eps) = 1 - inf_alpha (e^eps alpha + f(alpha)) (Dong, Roth, Su 2019, Prop. 2.12),
    the infimum on a 200001-point alpha grid plus the curve's kinks, refined by a bounded Brent search
    around the best grid point."""
    grid = np.unique(np.concatenate([np.linspace(0, 1, 200_001), np.asarray(kinks, dtype=float)]))
    obj = lambda a: math.exp(eps) * a + float(f(a))
    vals = math.exp(eps) * grid + np.asarray(f(grid), dtype=float)
    j = int(np.argmin(vals))
    best = float(vals[j])
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, len(grid) - 1)]
    if hi > lo:
        res = optimize.minimize_scalar(obj, bounds=(lo, hi), method="bounded", options={"xatol": 1e-14})
        best = min(best, float(res.fun))
    return 1.0 - best


def approx_profile_formula(e0: float, d0: float, eps: float) -> float:
    """delta + (1 - delta) (e^e0 - e^eps)_+ / (1 + e^e0) (the profile of f_{e0, d0}), with
    e^e0 - e^eps = e^eps expm1(e0 - eps) so that tiny e0 - eps keeps full relative accuracy."""
    return d0 + (1 - d0) * math.exp(eps) * math.expm1(max(e0 - eps, 0.0)) / (1 + math.exp(e0))


@FAST
@given(e0=st.floats(0.0, 8.0), d0=st.one_of(st.just(0.0), st.floats(1e-10, 0.5)), eps=st.floats(0.0, 12.0))
def test_approx_dp_profile_formula_and_conjugate(e0, d0, eps):
    prof = ApproxDP(e0, d0) if d0 > 0 else PureDP(e0)
    got = prof.delta(eps)
    # closed form, 1e-12 relative
    assert got == pytest.approx(approx_profile_formula(e0, d0, eps), rel=1e-12, abs=1e-300)
    # conjugate of the trade-off curve f_{e0,d0}(a) = max(0, 1 - d0 - e^e0 a, e^-e0 (1 - d0 - a)):
    # piecewise linear with kinks at (1 - d0)/(1 + e^e0) and 1 - d0, so the grid minimum is exact.
    kinks = [(1 - d0) / (1 + math.exp(e0)), 1 - d0]
    assert got == pytest.approx(delta_from_tradeoff(prof.tradeoff, eps, kinks), abs=1e-12)
    if eps >= e0:
        assert got == pytest.approx(d0, abs=1e-15)
    elif e0 - eps > 1e-12:  # (closer than that, d0 + (1 - d0)(e0 - eps)/2 rounds to d0)
        assert got > d0  # positive below the nominal eps (matters when optimising over eps)


@FAST
@given(e0=st.floats(0.0, 8.0), d0=st.floats(0.0, 0.5), alpha=st.floats(0.0, 1.0))
def test_approx_dp_tradeoff_closed_form(e0, d0, alpha):
    want = max(0.0, 1 - d0 - math.exp(e0) * alpha, math.exp(-e0) * (1 - d0 - alpha))
    assert ApproxDP(e0, d0).tradeoff(alpha) == pytest.approx(want, abs=1e-15)


@settings(max_examples=20, deadline=None)
@given(mu=st.floats(0.1, 6.0), eps=st.floats(0.0, 10.0))
def test_gdp_delta_is_conjugate_of_tradeoff(mu, eps):
    """Closed-form delta vs 1 + f*(-e^eps) of f = G_mu computed numerically: 1e-9 absolute."""
    f = lambda a: Phi(Phi_inv(1 - np.asarray(a)) - mu)
    assert GaussianDP(mu).delta(eps) == pytest.approx(delta_from_tradeoff(f, eps), abs=1e-9)


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
def test_generic_tradeoff_envelope_is_valid_and_close(mu):
    """The base class builds f from the profile as an envelope of lines: never above the true G_mu
    (it must not overstate privacy; 1e-12 slack for rounding) and within 2e-3 of it."""
    g = GaussianDP(mu)
    alpha = np.linspace(0, 1, 2001)
    env = PrivacyProfile.tradeoff(g, alpha)
    true = Phi(Phi_inv(1 - alpha) - mu)
    assert np.all(env <= true + 1e-12)
    assert np.max(true - env) <= 2e-3


# --------------------------------------------------------------------------------------------
# ApproxDP epsilon(delta) inverts its profile
# --------------------------------------------------------------------------------------------
@FAST
@given(e0=st.floats(0.01, 8.0), d0=st.floats(0.0, 0.3), frac=st.floats(0.0, 1.0))
def test_approx_dp_epsilon_inverts(e0, d0, frac):
    """Closed-form inverse of the f_{e0,d0} profile: eps = log(e^e0 - (t - d0)(1 + e^e0)/(1 - d0)),
    clipped at 0; the root-finder (xtol 1e-12) must agree to 1e-9 absolute in eps and 1e-12 in delta."""
    prof = ApproxDP(e0, d0)
    target = d0 + frac * (prof.delta(0.0) - d0)
    e = prof.epsilon(target)
    inner = math.exp(e0) - (target - d0) * (1 + math.exp(e0)) / (1 - d0)
    want = max(0.0, math.log(inner)) if inner > 0 else 0.0
    assert e == pytest.approx(want, abs=1e-9)
    assert 0.0 <= e <= e0 * (1 + 1e-9)
    assert prof.delta(e) <= target + 1e-12


# --------------------------------------------------------------------------------------------
# ComposedGaussian
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma,k,s", [(1.0, 1, 1.0), (2.5, 16, 1.0), (0.7, 3, 2.0), (10.0, 1000, 0.5)])
def test_composed_gaussian_mu(sigma, k, s):
    c = ComposedGaussian(sigma, k, s)
    assert c.mu == pytest.approx(math.sqrt(k) * s / sigma, rel=1e-15)
    assert c.delta(1.0) == pytest.approx(gdp_delta_mp(1.0, math.sqrt(k) * s / sigma), rel=1e-10)


# --------------------------------------------------------------------------------------------
# DPSGD vs dp_accounting called directly
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def dpsgd(sigma, q, steps, neighboring):
    """One DPSGD instance per parameter set, shared by the tests below (its PLD is built once)."""
    return DPSGD(sigma, q, steps, neighboring)


def pld(sigma, q, steps, neighboring):
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    rel = NeighboringRelation.REPLACE_ONE if neighboring == "replace_one" else NeighboringRelation.ADD_OR_REMOVE_ONE
    return pld_lib.from_gaussian_mechanism(
        sigma, sensitivity=1.0, sampling_prob=q, value_discretization_interval=1e-4, neighboring_relation=rel
    ).self_compose(steps)


EPS_GRID = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0])


@pytest.mark.parametrize("neighboring", ["replace_one", "add_remove"])
@pytest.mark.parametrize("sigma,q,steps", [(1.0, 0.01, 500), (0.8, 0.1, 20)])
def test_dpsgd_matches_dp_accounting(sigma, q, steps, neighboring):
    """Same PLD parameters -> same deltas and epsilons (1e-12 relative)."""
    prof = dpsgd(sigma, q, steps, neighboring)
    ref = pld(sigma, q, steps, neighboring)
    # dp_accounting can return tiny negative deltas (-1e-13) at large eps; the profile clips to [0, 1]
    want = np.clip(ref.get_delta_for_epsilon(EPS_GRID), 0.0, 1.0)
    np.testing.assert_allclose(prof.delta(EPS_GRID), want, rtol=1e-12, atol=0)
    for d in (1e-3, 1e-5, 1e-9):
        assert prof.epsilon(d) == pytest.approx(ref.get_epsilon_for_delta(d), rel=1e-12)


@pytest.mark.parametrize("neighboring", ["replace_one", "add_remove"])
@pytest.mark.parametrize("sigma,q,steps", [(1.0, 0.01, 500), (0.8, 0.1, 20)])
def test_dpsgd_delta_upper_valid_and_close(sigma, q, steps, neighboring):
    """delta_upper (the fast bound the theorems search with) is a valid upper bound on delta (never
    below it; 1e-15 rounding) and close: within 1e-3 relative wherever delta > 1e-12."""
    prof = dpsgd(sigma, q, steps, neighboring)
    eps = np.sort(np.concatenate([np.linspace(0.0, 6.0, 37), [0.013, 0.77, 1.2345]]))
    exact = prof.delta(eps)
    upper = np.array([prof.delta_upper(e) for e in eps])
    assert np.all(upper >= exact - 1e-15)
    big = exact > 1e-12
    rel = upper[big] / exact[big] - 1
    i = int(np.argmax(rel))
    assert rel[i] <= 1e-3, f"delta_upper({eps[big][i]}) = {upper[big][i]!r} vs delta = {exact[big][i]!r}"



@pytest.mark.parametrize("neighboring,c", [("replace_one", 2.0), ("add_remove", 1.0)])
@pytest.mark.parametrize("sigma,steps", [(1.0, 1), (2.0, 10), (5.0, 60)])
def test_dpsgd_full_batch_is_gdp(sigma, steps, neighboring, c):
    """sample_rate = 1: mu = c sqrt(T)/sigma exactly (1e-13 relative vs GaussianDP), and the
    pessimistic PLD of dp_accounting upper-bounds it and agrees to 1e-4 relative (discretisation)."""
    prof = DPSGD(sigma, 1.0, steps, neighboring)
    mu = c * math.sqrt(steps) / sigma
    assert prof.full_batch_mu == pytest.approx(mu, rel=1e-15)
    g = GaussianDP(mu)
    np.testing.assert_allclose(prof.delta(EPS_GRID), g.delta(EPS_GRID), rtol=1e-13, atol=0)
    ref = np.asarray(pld(sigma, 1.0, steps, neighboring).get_delta_for_epsilon(EPS_GRID))
    ours = prof.delta(EPS_GRID)
    assert np.all(ref >= ours * (1 - 1e-12))
    mask = ours > 1e-10
    np.testing.assert_allclose(ours[mask], ref[mask], rtol=1e-4)
    assert prof.epsilon(1e-5) == pytest.approx(g.epsilon(1e-5), rel=1e-12)
    alpha = np.linspace(0, 1, 11)
    np.testing.assert_allclose(prof.tradeoff(alpha), Phi(Phi_inv(1 - alpha) - mu), atol=1e-12)
    assert prof.delta_upper(1.0) == pytest.approx(g.delta(1.0), rel=1e-13)


def test_dpsgd_delta_accepts_unsorted_eps():
    """delta(eps) is vectorised over any array of eps (issue 2, item 1): order must not matter.
    Reference: the same call on the sorted array, permuted back (exact equality)."""
    prof = DPSGD(1.0, 0.01, 100, "add_remove")
    eps = np.array([2.0, 0.5, 1.0, 0.0])
    order = np.argsort(eps)
    want = np.empty_like(eps)
    want[order] = prof.delta(eps[order])
    np.testing.assert_array_equal(prof.delta(eps), want)
    np.testing.assert_array_equal(prof.delta(eps.reshape(2, 2)), want.reshape(2, 2))


@pytest.mark.slow
def test_dpsgd_delta_upper_is_never_below_the_accountant_in_the_far_tail():
    """Issue 13: DPSGD(0.8, 0.05, 1000, replace-one).delta_upper gave 0 for eps >= 43.85 while the
    accountant's pessimistic PLD still holds mass there; an upper bound is never below it, never 0
    (the PLD keeps an infinity mass), and non-increasing in eps."""
    prof = DPSGD(0.8, 0.05, 1000, "replace_one")
    grid = np.array([20.0, 30.0, 40.0, 43.85, 45.0, 50.0, 52.4, 60.0, 100.0, 300.0])
    upper = np.array([prof.delta_upper(float(e)) for e in grid])
    accountant = np.asarray(prof.delta(grid), dtype=float)
    assert np.all(upper >= accountant) and np.all(upper > 0)
    assert np.all(np.diff(upper) <= 0)
    assert upper[-1] >= prof._pld._pmf_remove._infinity_mass
