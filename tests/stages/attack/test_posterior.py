"""Issue 16 item 4: the Gibbs posterior attack (stages.attack.posterior) on tiny enumerable tables."""
from __future__ import annotations

import numpy as np
import pytest

from stages.attack.posterior import PosteriorAttack, exact_posterior_marginals
from stages.mechanism.noisy_marginals import MarginalRelease, NoisyMarginals, marginal_subsets, marginal_table
from stages.metric import Exact
from stages.prior.baynet import BayNetPrior
from tabular_helpers import random_network  # tests/stages/tabular_helpers.py

# 4 columns, the binary target c3 last; 3 known columns give 3 released (a, b, c3) tables.
DOMAIN, PARENTS = (2, 3, 2, 2), ((), (0,), (0, 1), (1, 2))


def _setting(n, seed=0, noise_scale=None, epsilon=1.0):
    net = random_network(seed, DOMAIN, PARENTS)
    prior = BayNetPrior.from_network(net, n_records=n, targets=["c3"])
    X = prior.sample(np.random.default_rng(seed + 1))
    rng = np.random.default_rng(seed + 2)
    if noise_scale is None:
        release = NoisyMarginals(epsilon).release(X, rng, net.domain, prior.known)
    else:  # a release with a chosen per-cell noise scale
        subsets = marginal_subsets(len(DOMAIN), prior.known)
        tables = [marginal_table(X, s, net.domain) + noise_scale * rng.standard_normal([net.domain[c] for c in s])
                  for s in subsets]
        release = MarginalRelease(subsets, tables, noise_scale, n)
    marginals = net.conditional_marginals(prior.known, X[:, prior.known], prior.unknown)
    return net, prior, X, release, marginals


def test_gibbs_matches_the_enumerated_posterior():
    # 6 records, binary target: 64 assignments enumerated from the full marginal tables. The noise scale
    # (0.15 per cell, counts move by 1/6) makes the posterior neither the prior nor a point mass.
    net, prior, X, release, marginals = _setting(6, seed=3, noise_scale=0.15)
    log_prior = np.log(marginals[3])
    exact = exact_posterior_marginals(log_prior, release, prior.known, X[:, prior.known], net.domain, 3)
    attack = PosteriorAttack(sweeps=20000, burn_in=200, seed=0)
    _, gibbs = attack.posterior(release, prior.known, X[:, prior.known], net.domain, marginals)
    # Monte Carlo tolerance 0.03 (absolute, per marginal): with 20000 Rao-Blackwellised sweeps the largest error
    # over 8 chain seeds and two tables was 0.011.
    assert np.max(np.abs(gibbs - exact)) < 0.03, (gibbs, exact)
    # the posterior differs from the prior (the test is not vacuous)
    assert np.max(np.abs(exact - marginals[3])) > 0.1


def test_huge_noise_gives_the_prior_only_guess():
    net, prior, X, release, marginals = _setting(40, seed=1, noise_scale=1e4)
    metric = Exact()
    z = PosteriorAttack(sweeps=50, burn_in=10).reconstruct(release, prior.known, X[:, prior.known], net.domain,
                                                           marginals, prior.targets, metric, network=net)
    assert np.array_equal(z, prior.for_trial(X, metric).guess)


def test_tiny_noise_recovers_the_column():
    net, prior, X, release, marginals = _setting(40, seed=2, epsilon=1e4)
    assert 0 < release.noise_scale < 1e-3
    metric = Exact()
    attack = PosteriorAttack(sweeps=100, burn_in=100)
    z = attack.reconstruct(release, prior.known, X[:, prior.known], net.domain, marginals, prior.targets, metric,
                           network=net)
    # Records with the same known values are exchangeable: the release pins how many of them take each
    # target value, not which of them does. So the attack must recover each group's counts exactly.
    keys = [tuple(r) for r in X[:, prior.known]]
    for key in set(keys):
        rows = [i for i, k in enumerate(keys) if k == key]
        assert np.array_equal(np.bincount(z[rows, 0], minlength=2), np.bincount(X[rows, 3], minlength=2)), key
    # (so every record of a unanimous group is recovered) and it does at least as well as the prior
    prior_hits = int(prior.score(X, prior.for_trial(X, metric).guess, metric).sum())
    assert int(prior.score(X, z, metric).sum()) >= prior_hits


def test_exact_release_uses_the_surrogate_scale_and_refuses_nuisance_columns():
    net, prior, X, release, marginals = _setting(30, seed=4, epsilon="inf")
    assert release.noise_scale == 0
    z = PosteriorAttack(sweeps=50, burn_in=50).reconstruct(release, prior.known, X[:, prior.known], net.domain,
                                                           marginals, prior.targets, Exact(), network=net)
    assert z.shape == (30, 1)
    two = BayNetPrior.from_network(net, n_records=30, targets=["c3"], known=["c0", "c1"])
    rel = NoisyMarginals(1.0).release(X, np.random.default_rng(0), net.domain, two.known)
    m2 = net.conditional_marginals(two.known, X[:, two.known], two.unknown)
    with pytest.raises(ValueError, match="one unknown column"):
        PosteriorAttack().relaxed(rel, two.known, X[:, two.known], net.domain, m2)


def test_tabular_epsilon_plays_the_posterior_attack(compose_config, tmp_path):
    """attack=posterior (never a default; alone here, so no RAP compile) plays the figure's points: the game's
    attack, its relaxed table the game's cached attack stage."""
    from figuretools import play_figure
    from pipeline.cache import StageCache
    from pipeline.game import ConfigError

    base = ["experiment=tabular_epsilon", "attack=posterior", "trials=2", "prior.n_records=30", "prior.dataset=acs",
            "figure.columns=SEX", "attack.sweeps=30", "attack.burn_in=10"]
    cache = StageCache(tmp_path / "cache")
    *_, rows = play_figure(compose_config, tmp_path / "sweep", [*base, "mechanism.epsilon=1"],
                           [*base, "mechanism.epsilon=inf"], cache=cache)
    assert {r["objective"] for r in rows} == {"posterior"} and len(rows) == 2
    for r in rows:
        assert 0 <= r["attack_mean"] <= 30
    assert sorted(stage for stage, _ in cache.computed).count("attack") == 2 * 2  # 2 trials x 2 eps
    with pytest.raises(ConfigError, match="compare must list distinct attacks"):
        play_figure(compose_config, tmp_path / "j2", ["experiment=tabular_epsilon", "attack.compare=[bogus]"])


@pytest.mark.parametrize("override,message", [
    ("attack.sweeps=0", r"^attack\.sweeps must be an integer >= 1, got 0"),
    ("attack.decode=mode", r"^attack\.decode must be one of \['joint', 'per_column'\], got 'mode'"),
])
def test_attack_posterior_refuses_bad_values_in_one_sentence(override, message, compose_config, tmp_path):
    """conf/attack/posterior.yaml: a bad value is refused naming the key, before any trial, with no output."""
    from pipeline.game import ConfigError
    from pipeline.job import run_job

    cfg = compose_config("prior=baynet", "mechanism=noisy_marginals", "attack=posterior", "prior.n_records=20",
                         "trials=1", override)
    with pytest.raises(ConfigError, match=message) as info:
        run_job(cfg, tmp_path / "job")
    assert "\n" not in str(info.value) and not (tmp_path / "job" / "metrics.json").exists()
