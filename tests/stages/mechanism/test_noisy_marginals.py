"""Noisy 3-way marginals: the tables against a brute-force count, K, the calibrated noise, the profile."""
from __future__ import annotations

import math

import numpy as np
import pytest

from stages.bound.profiles import GaussianDP
from stages.mechanism.noisy_marginals import NoisyMarginals, marginal_subsets, marginal_table


def test_marginal_table_is_a_brute_force_count():
    rng = np.random.default_rng(0)
    domain = [3, 2, 4, 5]
    x = np.stack([rng.integers(0, m, 57) for m in domain], axis=1)
    table = marginal_table(x, (0, 2, 3), domain)
    assert table.shape == (3, 4, 5)
    for a in range(3):
        for b in range(4):
            for c in range(5):
                count = sum(1 for r in x if (r[0], r[2], r[3]) == (a, b, c))
                assert table[a, b, c] == count / 57


def test_subsets_touch_an_unknown_column():
    subsets = marginal_subsets(6, known=[0, 1, 2, 3], way=3)
    assert len(subsets) == math.comb(6, 3) - math.comb(4, 3)
    assert all(set(s) & {4, 5} for s in map(tuple, subsets))


@pytest.mark.parametrize("d,s_expected", [(16, 0.5406), (10, 0.3166)])
def test_reference_noise_scales(d, s_expected):
    """ACS (d = 16) and FIRE (d = 10) with one target at eps = 1: K = C(d,3) - C(d-1,3), s from the issue."""
    mechanism = NoisyMarginals(epsilon=1.0, delta=1e-5)
    k = mechanism.n_marginals(d, d - 1)
    assert k == {16: 105, 10: 36}[d]
    s = mechanism.noise_scale(k, 100)
    assert s == pytest.approx(s_expected, abs=5e-5)
    # The K tables of sensitivity sqrt(2)/N at noise s compose to mu-GDP: mu = sqrt(K) sqrt(2) / (N s) ...
    mu = math.sqrt(k) * math.sqrt(2) / (100 * s)
    # ... and that mu meets (1, 1e-5)-DP exactly.
    assert GaussianDP(mu).delta(1.0) == pytest.approx(1e-5, rel=1e-6)
    assert mechanism.profile.mu == pytest.approx(mu, rel=1e-12)


def test_release_adds_noise_of_scale_s_and_exact_at_infinity():
    rng = np.random.default_rng(1)
    domain = [3, 4, 2, 5, 3]
    x = np.stack([rng.integers(0, m, 100) for m in domain], axis=1)
    noisy = NoisyMarginals(epsilon=2.0).release(x, np.random.default_rng(2), domain, known=[0, 1, 2])
    assert noisy.n_marginals == math.comb(5, 3) - 1
    residual = np.concatenate([(t - marginal_table(x, s, domain)).ravel() for s, t in zip(noisy.subsets, noisy.tables)])
    assert np.std(residual) == pytest.approx(noisy.noise_scale, rel=0.1)
    exact = NoisyMarginals(epsilon=float("inf")).release(x, np.random.default_rng(2), domain, known=[0, 1, 2])
    assert exact.noise_scale == 0.0
    for s, t in zip(exact.subsets, exact.tables):
        np.testing.assert_array_equal(t, marginal_table(x, s, domain))
    exact = NoisyMarginals(epsilon="inf")  # exact marginals: no privacy guarantee, so no profile and no bound
    assert exact.profile is None and not exact.privacy()["private"] and "epsilon = inf" in exact.privacy()["reason"]


@pytest.mark.parametrize("eps", [0, -1, "abc"])
def test_bad_epsilon_is_one_sentence(eps):
    with pytest.raises(ValueError, match="epsilon must be"):
        NoisyMarginals(epsilon=eps)


def test_release_needs_a_table():
    """Records of another kind (one value per target) are refused in one sentence naming what is needed."""
    with pytest.raises(ValueError, match="it needs prior=baynet"):
        NoisyMarginals().release(np.arange(5), np.random.default_rng(0))


def test_bound_release_and_its_stored_form():
    """for_prior binds the table's domain and known columns; the stored arrays give back the same release."""
    from stages.prior.baynet import BayNetPrior

    prior = BayNetPrior("fire", targets=["ALS Unit"], n_records=30)  # data_dir: tests/data (tests/conftest.py)
    mechanism = NoisyMarginals(epsilon=1.0).for_prior(prior)
    assert mechanism.known == tuple(prior.known) and mechanism.params()["known"] == list(prior.known)
    X = prior.sample(np.random.default_rng(0))
    release = mechanism.release(X, np.random.default_rng(1))
    again = mechanism.release_from_arrays(mechanism.release_arrays(release))
    assert again.n_marginals == release.n_marginals == 36 and again.noise_scale == release.noise_scale
    for a, b in zip(release.tables, again.tables):
        np.testing.assert_array_equal(a, b)
