"""Bayes-optimal and prior-only attacks: the RR tightness proposition, a brute-force Gaussian posterior."""
import itertools
import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from stages.attack.bayes_optimal import BayesOptimalAttack
from stages.attack.prior_only import PriorOnlyAttack
from stages.mechanism.gaussian import GaussianMechanism
from stages.mechanism.randomized_response import RandomizedResponse
from stages.metric import Exact, Within
from stages.prior.base import Prior
from stages.prior.zipf import ZipfPrior


def test_rr_bayes_optimal_meets_the_pure_dp_bound_for_near_uniform_priors():
    """Proposition A.2: if D(a) e^eps >= D(b) for all a, b, the attack succeeds w.p. beta(eps, D(a)) exactly."""
    eps, n, m, trials = 1.0, 400, 5, 100
    rng = np.random.default_rng(11)
    weights = rng.uniform(1.0, math.exp(eps), size=(n, m))
    prior = Prior(weights / weights.sum(axis=1, keepdims=True))
    assert np.all(prior.probabilities.max(axis=1) <= math.exp(eps) * prior.probabilities.min(axis=1))
    mechanism, attack, metric = RandomizedResponse(epsilon=eps, domain_size=m), BayesOptimalAttack(k=1), Exact()
    successes, betas = [], []
    for _ in range(trials):
        X = prior.sample(rng)
        a = mechanism.release(X, rng)
        z = attack.guess(a, prior, mechanism, metric)
        assert np.array_equal(z[:, 0], a)  # the optimal attack trusts the report
        p = prior.success_probability(z, metric)
        successes.append(metric.score(X, z))
        betas.append(math.exp(eps) / (math.exp(eps) - 1 + 1 / p))
    successes, betas = np.concatenate(successes), np.concatenate(betas)
    standard_error = math.sqrt(np.sum(betas * (1 - betas))) / betas.size
    assert abs(successes.mean() - betas.mean()) < 3 * standard_error


def test_rr_bayes_optimal_defaults_to_the_prior_when_the_report_is_implausible():
    prior = Prior(np.array([[0.9, 0.05, 0.05], [0.9, 0.05, 0.05]]))
    mechanism = RandomizedResponse(epsilon=1.0, domain_size=3)
    z = BayesOptimalAttack().guess(np.array([1, 0]), prior, mechanism, Exact())
    assert z.tolist() == [[0], [0]]
    z = BayesOptimalAttack().guess(np.array([1, 0]), prior, RandomizedResponse(epsilon=5.0, domain_size=3), Exact())
    assert z.tolist() == [[1], [0]]


def brute_force_gaussian_posterior(probabilities, a, sigma):
    """Pr[X_i = j | a] by summing the joint density over every dataset x in [m]^n."""
    n, m = probabilities.shape
    posterior = np.zeros((n, m))
    for x in itertools.product(range(m), repeat=n):
        mean = np.zeros(n * m)
        mean[np.arange(n) * m + np.array(x)] = 1.0
        joint = np.prod(probabilities[np.arange(n), x]) * multivariate_normal.pdf(a, mean=mean, cov=sigma**2)
        posterior[np.arange(n), x] += joint
    return posterior / posterior.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("mu", [0.5, 2.0])
def test_gaussian_posterior_matches_brute_force(mu):
    rng = np.random.default_rng(5)
    prior = Prior(rng.dirichlet(np.ones(3), size=3))
    mechanism = GaussianMechanism(mu=mu, domain_size=3)
    a = mechanism.release(prior.sample(rng), rng)
    attack = BayesOptimalAttack(k=2)
    posterior = attack.posterior(a, prior, mechanism)
    assert posterior == pytest.approx(brute_force_gaussian_posterior(prior.probabilities, a, mechanism.sigma), rel=1e-9)
    z = attack.guess(a, prior, mechanism, Exact())
    assert z.tolist() == np.argsort(-posterior, axis=1, kind="stable")[:, :2].tolist()


def test_gaussian_bayes_optimal_success_matches_its_posterior():
    """Over many trials, the attack's success rate equals the mean posterior mass of its guesses."""
    rng = np.random.default_rng(2)
    prior = ZipfPrior(n_targets=200, domain_size=10, exponent=1.0)
    mechanism = GaussianMechanism(mu=1.0, domain_size=10)
    attack, metric = BayesOptimalAttack(k=1), Within(distance=1)
    successes, predicted = [], []
    for _ in range(50):
        X = prior.sample(rng)
        a = mechanism.release(X, rng)
        posterior = attack.posterior(a, prior, mechanism)
        z = attack.guess(a, prior, mechanism, metric)
        predicted.append(metric.success_probability(posterior, z))
        successes.append(metric.score(X, z))
        # The guess maximises the posterior mass within distance 1.
        windows = np.stack([metric.success_probability(posterior, np.full((200, 1), j)) for j in range(10)], axis=1)
        assert predicted[-1] == pytest.approx(windows.max(axis=1))
    successes, predicted = np.concatenate(successes), np.concatenate(predicted)
    standard_error = math.sqrt(np.sum(predicted * (1 - predicted))) / predicted.size
    assert abs(successes.mean() - predicted.mean()) < 3 * standard_error
    assert successes.mean() > prior.success_probability(prior.a_priori_guess(metric), metric).mean()


def test_prior_only_attack_guesses_z_star():
    prior = Prior(np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3]]))
    z = PriorOnlyAttack(k=2).guess(None, prior, None, Exact())
    assert z.tolist() == [[1, 2], [0, 2]]
    assert PriorOnlyAttack().params() == {"attack": "prior_only", "k": 1}


def test_bayes_optimal_attack_errors():
    prior = Prior(np.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match="exact likelihood"):
        BayesOptimalAttack().guess(np.zeros(2), prior, object(), Exact())
    with pytest.raises(ValueError, match="domain_size"):
        BayesOptimalAttack().guess(np.zeros(8), prior, GaussianMechanism(mu=1.0, domain_size=4), Exact())
    for k in (0, -1, 1.5):
        with pytest.raises(ValueError, match="k"):
            BayesOptimalAttack(k=k)
        with pytest.raises(ValueError, match="k"):
            PriorOnlyAttack(k=k)
