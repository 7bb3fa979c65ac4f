"""best_bound: the minimum over exactly the bounds that apply, and never one that does not."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stages.bound import prior_work as C
from stages.bound import theorems
from stages.bound.best import RDP_ORDERS, SOURCES, BestBound, best_bound
from stages.bound.profiles import DPSGD, ApproxDP, ComposedGaussian, GaussianDP, PureDP

FAST = settings(max_examples=15, deadline=None)


def check_is_minimum(result: BestBound):
    assert result.source in result.all
    assert result.value == result.all[result.source]
    assert all(result.value <= v for v in result.all.values())
    assert set(result.all).isdisjoint(result.not_applicable)
    assert set(result.all) | set(result.not_applicable) == set(SOURCES)
    json.dumps(result.as_dict())  # JSON-able for metrics.json


@FAST
@given(mu=st.floats(0.1, 4.0), k=st.integers(2, 200))
def test_uniform_prior_gdp(mu, k):
    result = best_bound(GaussianDP(mu), 1.0 / k)
    check_is_minimum(result)
    assert result.kind == "probability"
    assert {"ours", "kgk", "mmc", "rero", "narcissus", "stock"} <= set(result.all)
    assert ("steinke" in result.all) == (k == 2)
    assert "cherubin" in result.not_applicable
    assert result.all["ours"] == pytest.approx(theorems.success_bound(GaussianDP(mu), 1.0 / k), abs=1e-12)
    assert result.value == pytest.approx(result.all["ours"], abs=1e-8)  # MMC ties ours at n = 1


@FAST
@given(mu=st.floats(0.1, 4.0), p=st.floats(0.001, 0.999))
def test_non_uniform_prior_drops_the_uniform_only_bounds(mu, p):
    if abs(p * round(1 / p) - 1) < 1e-9:
        p = p * 0.99
    result = best_bound(GaussianDP(mu), p)
    check_is_minimum(result)
    assert "mmc" not in result.all and "steinke" not in result.all and "cherubin" not in result.all
    assert "uniform priors" in result.not_applicable["mmc"]
    assert result.all["kgk"] == pytest.approx(C.kgk_bound(GaussianDP(mu), p), abs=1e-15)


def test_each_value_is_the_comparator_itself():
    p = 0.5
    result = best_bound(PureDP(1.0), p)
    check_is_minimum(result)
    assert result.all["mmc"] == C.mmc_bound(PureDP(1.0), p)
    # ReRo: the eps-DP corollary and the RDP form on the eps-DP Renyi curve, whichever is smaller
    assert result.all["rero"] == min(C.rero_bound(p, eps=1.0), C.rero_bound(p, rdp=(RDP_ORDERS, PureDP(1.0).renyi(RDP_ORDERS))))
    # an eps-DP mechanism is (e', delta(e'))-DP for every e' < eps too: narcissus is minimised over e'
    grid = np.linspace(0.0, 1.0, 100_001)
    independent = min(C.narcissus_bound(e, d, p) for e, d in zip(grid[::100], PureDP(1.0).delta(grid[::100])))
    assert result.all["narcissus"] <= min(C.narcissus_bound(1.0, 0.0, p), independent) + 1e-12
    assert result.all["narcissus"] == pytest.approx(independent, abs=1e-5)
    assert result.all["steinke"] == pytest.approx(C.steinke_bound(1.0, 0.0, p), rel=1e-9)


def test_approximate_dp_has_no_renyi_bounds():
    result = best_bound(ApproxDP(1.0, 1e-5), 0.25)
    check_is_minimum(result)
    assert "rero" in result.not_applicable and "stock" in result.not_applicable
    # narcissus at the profile's own (eps, delta) is one candidate of the eps-minimum
    assert result.all["narcissus"] <= C.narcissus_bound(1.0, 1e-5, 0.25) + 1e-12


def test_full_batch_dpsgd_brings_cherubin():
    profile = DPSGD(2.0, 1.0, 4)
    result = best_bound(profile, 0.5)
    check_is_minimum(result)
    assert result.all["cherubin"] == pytest.approx(C.cherubin_bound(2.0, 1.0, 4, 0.5), abs=1e-15)
    assert "rero" in result.all  # full-batch DP-SGD is mu-GDP, so zCDP with rho = mu^2 / 2
    composed = best_bound(ComposedGaussian(2.0, 4, 2.0), 0.5)  # the same mu = 2 sqrt(4) / 2
    assert composed.all["ours"] == pytest.approx(result.all["ours"], abs=1e-12)
    assert "cherubin" in composed.not_applicable


def test_renyi_description_of_profiles():
    """What a profile is comes from the profile itself (issue 15: one place, no class-name strings)."""
    assert PureDP(2.0).pure_epsilon() == 2.0 and ApproxDP(1.0, 1e-6).pure_epsilon() is None
    assert GaussianDP(2.0).gdp_mu() == 2.0 and DPSGD(1.0, 1.0, 4).gdp_mu() == pytest.approx(4.0)
    assert DPSGD(1.0, 0.1, 10).gdp_mu() is None
    np.testing.assert_allclose(GaussianDP(2.0).renyi([2.0, 3.0]), [4.0, 6.0])  # (alpha, alpha mu^2 / 2)
    assert ApproxDP(1.0, 1e-6).renyi(RDP_ORDERS) is None
    assert DPSGD(1.0, 0.1, 10).renyi(RDP_ORDERS) is None  # replace-one subsampled: no RDP accountant
    assert "add/remove only" in DPSGD(1.0, 0.1, 10).renyi_missing()
    eps = DPSGD(1.0, 0.1, 10, neighboring="add_remove").renyi(RDP_ORDERS)
    assert eps.shape == RDP_ORDERS.shape and np.all(eps[np.isfinite(eps)] > 0)


def test_pure_dp_renyi_curve_is_dp_accountings_randomized_response():
    """The two copies of the eps-DP Renyi curve disagreed (flat eps vs min(eps, alpha eps^2 / 2)); both are valid
    but loose. The exact worst case over eps-DP pairs is binary randomized response (Bun & Steinke 2016), which
    dp_accounting computes: the profile's curve equals it and lies below both old forms."""
    import dp_accounting
    from dp_accounting import rdp

    for eps in (0.3, 1.0, 3.0):
        orders = [1.5, 2.0, 4.0, 8.0, 32.0]
        accountant = rdp.RdpAccountant(orders=orders, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
        accountant.compose(dp_accounting.RandomizedResponseDpEvent(2.0 / (1.0 + np.exp(eps)), 2))
        ours = PureDP(eps).renyi(orders)
        np.testing.assert_allclose(ours, accountant._rdp, rtol=1e-9)
        assert np.all(ours <= np.minimum(eps, np.asarray(orders) * eps**2 / 2) + 1e-12)
        # the Laplace mechanism is eps-DP, so its RDP (dp_accounting) is below the eps-DP curve
        laplace = rdp.RdpAccountant(orders=orders)
        laplace.compose(dp_accounting.LaplaceDpEvent(1.0 / eps))
        assert np.all(np.asarray(laplace._rdp) <= ours + 1e-12)


@pytest.mark.parametrize("profile,k,n", [(GaussianDP(1.0), 4, 50), (GaussianDP(0.5), 2, 80), (PureDP(1.0), 2, 40)])
def test_count_bounds_uniform(profile, k, n):
    p = np.full(n, 1.0 / k)
    result = best_bound(profile, p, confidence=0.95)
    check_is_minimum(result)
    assert result.kind == "count"
    assert result.all["ours"] == theorems.count_bound(profile, p, 0.95)
    assert result.all["mmc"] == C.mmc_bound(profile, p, confidence=0.95)
    # Steinke's count is never reported: exact DP mechanisms beat it (issue 13, THEORY.md)
    assert "steinke" not in result.all and "beaten" in result.not_applicable["steinke"]
    # per-target comparators count with Markov's inequality on the sum of their per-target bounds
    from stages.bound.best import kgk_markov_count
    assert result.all["kgk"] == kgk_markov_count(profile, p, 0.95)


def test_count_bounds_non_uniform_and_broadcast():
    p = np.linspace(0.01, 0.4, 30)
    result = best_bound(GaussianDP(1.0), p, confidence=0.9)
    check_is_minimum(result)
    assert "mmc" in result.not_applicable and result.source == "ours"
    assert set(result.all) == {"ours", "kgk", "rero", "narcissus", "stock"}  # Markov counts of per-target bounds
    same = best_bound(GaussianDP(1.0), 0.25, n=20, confidence=0.9)
    assert same.all == best_bound(GaussianDP(1.0), np.full(20, 0.25), confidence=0.9).all


def test_abstentions_count_for_steinke_and_mmc():
    p = np.concatenate([np.full(40, 0.5), np.zeros(60)])
    result = best_bound(PureDP(1.0), p, confidence=0.95)
    check_is_minimum(result)
    assert {"ours", "mmc"} <= set(result.all) and "steinke" in result.not_applicable
    assert max(result.all.values()) <= 40


@pytest.mark.parametrize("kwargs,words", [
    ({"p": np.full(3, 0.5)}, ["confidence", "n = 3"]),
    ({"p": 0.5, "n": 3}, ["confidence"]),
    ({"p": np.full(3, 0.5), "n": 4}, ["n must match"]),
    ({"p": 1.5}, ["p", "1.5"]),
    ({"p": 0.5, "confidence": 1.0}, ["confidence", "1.0"]),
    ({"p": [0.5, 0.5], "confidence": [0.9, 0.95]}, ["confidence must be a single number"]),
])
def test_errors(kwargs, words):
    with pytest.raises(ValueError) as info:
        best_bound(GaussianDP(1.0), **kwargs)
    for word in words:
        assert word in str(info.value)
