"""The one rule for "is this mechanism private" (stages.mechanism.judge_privacy), applied to every mechanism.

Issue 23, item 6: `mechanism.epsilon=1e50` (and mu = 1e6) was reported private with epsilon = inf and bound
lines drawn, while randomized response at epsilon = inf was refused and exact marginals were NOT PRIVATE.
Now a profile whose epsilon is infinite or above MAX_PRIVATE_EPSILON, or no profile at all, is not private:
profile None and privacy() says why, for every option of conf/mechanism/.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from clitools import options

from stages.bound.profiles import GaussianDP, PureDP
from stages.mechanism import MAX_PRIVATE_EPSILON, judge_privacy
from stages.mechanism.dpsgd import DPSGDFineTuning
from stages.mechanism.gaussian import GaussianMechanism
from stages.mechanism.laplace import LaplaceMechanism
from stages.mechanism.noisy_marginals import NoisyMarginals
from stages.mechanism.randomized_response import RandomizedResponse
from stages.mechanism.worst_case import WorstCaseMechanism

INF = math.inf

# Every conf/mechanism option, built with a given epsilon (DP-SGD without a model: only its settings are read).
BUILD = {
    "randomized_response": lambda eps: RandomizedResponse(epsilon=eps),
    "gaussian": lambda eps: GaussianMechanism(epsilon=eps),
    "laplace": lambda eps: LaplaceMechanism(epsilon=eps, releases=3),
    "noisy_marginals": lambda eps: NoisyMarginals(epsilon=eps),
    "dpsgd": lambda eps: DPSGDFineTuning(None, epsilon=eps, n_targets=100),
    "worst_case": lambda eps: WorstCaseMechanism(mu=None, epsilon=eps),
}


def test_every_mechanism_option_is_covered():
    assert sorted(BUILD) == options("mechanism")


# (DP-SGD refuses to calibrate noise to epsilon = 1e50, in one sentence: calibrate_noise_multiplier)
@pytest.mark.parametrize("option,epsilon", [(option, epsilon) for option in sorted(BUILD) for epsilon in (INF, 1e3, 1e50)
                                            if (option, epsilon) != ("dpsgd", 1e50)])
def test_an_infinite_or_vacuous_epsilon_is_not_private_for_every_mechanism(option, epsilon):
    mechanism = BUILD[option](epsilon)
    privacy = mechanism.privacy()
    assert mechanism.profile is None
    assert privacy["private"] is False and privacy["reason"] and "\n" not in privacy["reason"]
    assert ("inf" in privacy["reason"]) if epsilon == INF else (f"{epsilon:.4g}" in privacy["reason"])


@pytest.mark.parametrize("option", sorted(BUILD))
def test_a_large_finite_epsilon_below_the_limit_is_still_private(option):
    mechanism = BUILD[option](700.0)
    assert mechanism.profile is not None and mechanism.privacy()["private"] is True


@pytest.mark.parametrize("mechanism", [
    GaussianMechanism(mu=1e6, epsilon=None),  # the second command: epsilon(1e-5) overflows
    GaussianMechanism(mu=INF, epsilon=None),
    DPSGDFineTuning(None, epsilon=None, noise_multiplier=1e-6, n_targets=100),
    DPSGDFineTuning(None, epsilon=None, noise_multiplier=0.0, n_targets=100),
    DPSGDFineTuning(None, epsilon=3.0, clipping="none", n_targets=100),
], ids=["gaussian_mu_1e6", "gaussian_mu_inf", "dpsgd_sigma_1e-6", "dpsgd_sigma_0", "dpsgd_clipping_none"])
def test_noise_given_directly_is_judged_by_the_same_rule(mechanism):
    assert mechanism.profile is None and mechanism.privacy()["private"] is False
    if isinstance(mechanism, DPSGDFineTuning):
        assert mechanism.private is False


def test_the_rule_is_the_limit_on_epsilon_and_nothing_else():
    just_below, just_above = MAX_PRIVATE_EPSILON * (1 - 1e-9), MAX_PRIVATE_EPSILON * (1 + 1e-9)
    assert judge_privacy(PureDP(just_below)) == (PureDP(just_below), None)
    profile, reason = judge_privacy(PureDP(just_above))
    assert profile is None and "709.78" in reason
    assert judge_privacy(None, no_profile="no noise") == (None, "no noise")
    # a profile with delta: judged at the run's delta (1e-5 without one); mu = 30 is below the limit there
    assert judge_privacy(GaussianDP(30.0))[0] is not None
    assert judge_privacy(GaussianDP(40.0))[0] is None and "delta = 1e-05" in judge_privacy(GaussianDP(40.0))[1]
    # the epsilon the noise was calibrated to is the one judged
    assert judge_privacy(GaussianDP(1.0), 1e-5, stated_epsilon=1e3)[0] is None


def test_noiseless_releases_are_the_secrets_and_their_likelihood_is_exact():
    X = np.array([0, 3, 1])
    gaussian = GaussianMechanism(epsilon=INF, domain_size=4)
    a = gaussian.release(X, np.random.default_rng(0))
    hit = X[:, None] == np.arange(4)[None, :]
    log_likelihood = gaussian.log_likelihood(a)
    assert np.all(log_likelihood[hit] == 0.0) and np.all(np.isneginf(log_likelihood[~hit]))
    rr = RandomizedResponse(epsilon=INF, domain_size=4)
    assert np.array_equal(rr.release(X, np.random.default_rng(0)), X)
