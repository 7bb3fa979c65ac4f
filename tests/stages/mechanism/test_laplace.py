"""The Laplace mechanism box: a game under a profile an accountant gives (dp_accounting through from_dp_event)."""
from __future__ import annotations

import dp_accounting
import numpy as np
import pytest

from pipeline.errors import ConfigError
from pipeline.game import compute_metrics
from stages.bound import PureDP, count_bound, from_dp_event
from stages.bound.accountants import DpEventProfile
from stages.bound.profiles import pure_epsilon_of
from stages.mechanism.laplace import LaplaceMechanism


@pytest.mark.parametrize("epsilon,releases", [(1.0, 1), (2.0, 4), (0.5, 3)])
def test_profile_is_the_accountants_and_eps_dp_at_the_stated_epsilon(epsilon, releases):
    m = LaplaceMechanism(epsilon=epsilon, releases=releases)
    assert m.scale == pytest.approx(2 * releases / epsilon)
    profile = m.profile
    assert isinstance(profile, DpEventProfile)  # dp_accounting's PLD, not a class of ours
    assert profile.pure_epsilon() == pytest.approx(epsilon) and pure_epsilon_of(profile) == pytest.approx(epsilon)
    assert profile.delta(epsilon) == 0.0 and profile.delta(0.9 * epsilon) > 0.0
    # add/remove by dp_accounting itself: half the replace-one epsilon (sensitivity 1 instead of 2)
    add_remove = from_dp_event(m.dp_event(), neighboring="add_remove")
    assert add_remove.pure_epsilon() == pytest.approx(epsilon / 2)
    # an eps-DP profile from an accountant gets Theorem 3.1, as PureDP does
    p = np.full(50, 0.1)
    assert list(count_bound(profile, p, [0.05, 0.5, 0.95])) == list(count_bound(PureDP(epsilon), p, [0.05, 0.5, 0.95]))


def test_log_likelihood_is_the_laplace_density_up_to_a_constant():
    rng = np.random.default_rng(3)
    m = LaplaceMechanism(scale=0.7, epsilon=None, releases=3, domain_size=4)
    x = np.array([0, 3, 2])
    a = m.release(x, rng)
    assert a.shape == (3, 12)
    ll = m.log_likelihood(a)
    for i in range(3):
        full = []
        for j in range(4):
            mean = np.zeros(12)
            mean[i * 4 + j] = 1.0
            others = [k for k in range(3) if k != i]
            mean[[k * 4 + x[k] for k in others]] = 1.0
            full.append(float(np.sum(-np.abs(a - mean) / m.scale)))
        np.testing.assert_allclose(ll[i] - ll[i].max(), np.array(full) - max(full), atol=1e-9)


def test_no_noise_is_not_private_and_reveals_every_secret():
    m = LaplaceMechanism(epsilon=float("inf"))
    assert m.profile is None and m.privacy()["private"] is False and "without noise" in m.privacy()["reason"]
    x = np.array([1, 0, 9])
    ll = m.log_likelihood(m.release(x, np.random.default_rng(0)))
    assert np.array_equal(np.argmax(ll, axis=1), x)


def test_a_game_under_the_accountants_profile(compose_config):
    """mechanism=laplace plays like any mechanism: the bound box reads the accountant's profile (Theorem 3.1 at
    its eps), the attack reads the box's likelihood, and metrics.json names the guarantee."""
    metrics, _, _ = compute_metrics(compose_config("mechanism=laplace", "mechanism.epsilon=2", "mechanism.releases=2",
                                                   "prior.n_targets=40", "trials=20"))
    assert metrics["privacy"]["private"] and metrics["privacy"]["epsilon"] == pytest.approx(2.0)
    assert metrics["privacy"]["delta"] == 0.0
    assert "Thm 3.1" in metrics["bound_theorem"]["theorem"] or "3.1" in metrics["bound_theorem"]["theorem"]
    assert metrics["attack_success_mean"] > metrics["prior_success_mean"]  # the likelihood is used
    bound95 = metrics["bound"]["0.95"]
    assert np.mean(np.asarray(metrics["attack_successes"]) > bound95) <= 0.2
    pure, _, _ = compute_metrics(compose_config("mechanism=laplace", "mechanism.epsilon=2", "mechanism.releases=2",
                                                "prior.n_targets=40", "trials=20", "bound=pure_dp"))
    assert pure["attack_successes"] == metrics["attack_successes"]


def test_bad_laplace_settings_are_one_sentence(compose_config):
    with pytest.raises(ConfigError, match=r"^mechanism.releases must be an integer >= 1, got 0") as refused:
        compute_metrics(compose_config("mechanism=laplace", "mechanism.releases=0", "trials=2"))
    assert refused.value.key == "mechanism.releases"
    with pytest.raises(ConfigError, match="give either scale or epsilon"):
        compute_metrics(compose_config("mechanism=laplace", "mechanism.scale=1.0", "trials=2"))
