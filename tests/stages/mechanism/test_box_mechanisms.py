"""Randomized response and the idealized Gaussian: output distributions, profiles, bad values."""
import math

import numpy as np
import pytest
from scipy.stats import norm

from stages.mechanism.gaussian import GaussianMechanism
from stages.mechanism.randomized_response import RandomizedResponse


def gdp_delta(mu, eps):
    """delta(eps) of mu-GDP (Dong, Roth, Su 2019, Corollary 2.13)."""
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def test_randomized_response_output_distribution():
    eps, m, n = 1.3, 5, 200_000
    mechanism = RandomizedResponse(epsilon=eps, domain_size=m)
    X = np.full(n, 2)
    a = mechanism.release(X, np.random.default_rng(0))
    freq = np.bincount(a, minlength=m) / n
    keep = math.exp(eps) / (math.exp(eps) + m - 1)
    expected = np.full(m, (1 - keep) / (m - 1))
    expected[2] = keep
    assert np.all(np.abs(freq - expected) < 4 * np.sqrt(0.25 / n))
    assert mechanism.keep_probability == pytest.approx(keep)


def test_randomized_response_likelihood_ratio_is_e_to_the_epsilon():
    mechanism = RandomizedResponse(epsilon=0.7, domain_size=4)
    log_likelihood = mechanism.log_likelihood(np.array([0, 3]))
    assert np.exp(log_likelihood[0, 0]) == pytest.approx(mechanism.keep_probability)
    assert np.exp(log_likelihood).sum(axis=1) == pytest.approx([1.0, 1.0])  # RR is symmetric in input and output
    assert log_likelihood[0, 0] - log_likelihood[0, 1] == pytest.approx(0.7)
    assert log_likelihood[1, 3] - log_likelihood[1, 2] == pytest.approx(0.7)


def test_randomized_response_infinite_and_zero_epsilon():
    X = np.arange(10) % 4
    assert np.array_equal(RandomizedResponse(epsilon=math.inf, domain_size=4).release(X, np.random.default_rng(1)), X)
    assert RandomizedResponse(epsilon=0.0, domain_size=4).keep_probability == pytest.approx(0.25)


def test_randomized_response_profile():
    profile = RandomizedResponse(epsilon=2.0, domain_size=3).profile
    assert type(profile).__name__ == "PureDP"
    assert profile.epsilon(0.0) == pytest.approx(2.0)


@pytest.mark.parametrize("kwargs, name", [({"epsilon": -1.0}, "epsilon"), ({"domain_size": 1}, "domain_size")])
def test_randomized_response_bad_values(kwargs, name):
    with pytest.raises(ValueError, match=name):
        RandomizedResponse(**kwargs)


def test_records_outside_the_domain_raise():
    with pytest.raises(ValueError, match="domain_size"):
        RandomizedResponse(domain_size=3).release(np.array([0, 3]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="domain_size"):
        GaussianMechanism(mu=1.0, domain_size=3).release(np.array([-1]), np.random.default_rng(0))


def test_gaussian_release_is_one_hot_sum_plus_noise():
    mechanism = GaussianMechanism(mu=2.0, domain_size=3)
    assert mechanism.sigma == pytest.approx(math.sqrt(2) / 2.0)
    X = np.array([2, 0])
    rng = np.random.default_rng(3)
    releases = np.stack([mechanism.release(X, rng) for _ in range(20000)])
    assert releases.shape == (20000, 6)
    assert releases.mean(axis=0) == pytest.approx([0, 0, 1, 1, 0, 0], abs=0.03)
    assert releases.std(axis=0) == pytest.approx([mechanism.sigma] * 6, rel=0.03)


def test_gaussian_profile_from_mu():
    profile = GaussianMechanism(mu=1.5, domain_size=2).profile
    assert type(profile).__name__ == "GaussianDP" and profile.mu == pytest.approx(1.5)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_gaussian_calibrated_from_epsilon_delta(eps):
    mechanism = GaussianMechanism(epsilon=eps, delta=1e-5, domain_size=10)
    # Independent check of the calibration: delta(eps) of mu-GDP meets the target with equality.
    assert gdp_delta(mechanism.mu, eps) == pytest.approx(1e-5, rel=1e-3)
    assert mechanism.sigma == pytest.approx(math.sqrt(2) / mechanism.mu)
    assert mechanism.params()["epsilon"] == eps


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"mu": -1.0}, "mu"),
        ({"mu": 0.0}, "mu"),
        ({"mu": 1.0, "epsilon": 1.0}, "mu or epsilon"),
        ({"epsilon": None}, "mu must be given"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": 1.0, "delta": 0.0}, "delta"),
        ({"epsilon": 1.0, "delta": 1.5}, "delta"),
        ({"mu": 1.0, "domain_size": 0}, "domain_size"),
    ],
)
def test_gaussian_bad_values(kwargs, name):
    with pytest.raises(ValueError, match=name):
        GaussianMechanism(**kwargs)
