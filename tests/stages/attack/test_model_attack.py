"""The Model Attack: argmax of prior x model, the model-only guess beside it, and the bound it must respect."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from stages.attack.model_attack import ModelAttack
from stages.metric import Exact
from stages.prior.base import Prior


def test_guess_is_the_argmax_of_prior_times_model():
    rng = np.random.default_rng(0)
    prior = Prior(rng.dirichlet(np.ones(10), size=50))
    log_probs = np.log(rng.dirichlet(np.ones(10), size=50)) - 3.0  # not normalised over the candidates
    z = ModelAttack().guess(log_probs, prior, None, Exact())
    assert np.array_equal(z[:, 0], np.argmax(prior.probabilities * np.exp(log_probs), axis=1))
    model_only = ModelAttack().model_only_guess(log_probs, prior, Exact())
    assert np.array_equal(model_only[:, 0], np.argmax(log_probs, axis=1))
    hot = ModelAttack(temperature=1e6).guess(log_probs, prior, None, Exact())
    assert np.array_equal(hot[:, 0], np.argmax(prior.probabilities, axis=1)), "infinite temperature: the prior decides"
    top3 = ModelAttack(k=3).guess(log_probs, prior, None, Exact())
    post = special.softmax(np.log(prior.probabilities) + log_probs, axis=1)
    assert np.array_equal(np.sort(top3, axis=1), np.sort(np.argsort(-post, axis=1)[:, :3], axis=1))


def test_release_of_the_wrong_shape_fails_with_one_sentence():
    prior = Prior(np.full((4, 10), 0.1))
    with pytest.raises(ValueError, match=r"^the release must hold one log-probability per \(canary, candidate\)"):
        ModelAttack().guess(np.zeros(40), prior, None, Exact())
    with pytest.raises(ValueError, match=r"^temperature must be"):
        ModelAttack(temperature=0)


def test_successes_exceed_the_95_percent_bound_no_more_often_than_a_binomial_allows(tiny):
    """A game of DP-SGD + the Model Attack: the one-run count bound at 0.95 holds in >= 95% of trials."""
    from stages.bound.theorems import count_bound
    from stages.mechanism.dpsgd import DPSGDFineTuning
    from stages.prior.zipf import ZipfPrior

    prior = ZipfPrior(n_targets=40, domain_size=10, exponent=1.84, permutation_seed=1)
    mech = DPSGDFineTuning(tiny, epsilon=4.0, clip_norm=1.0, learning_rate=10.0, epochs=5, n_targets=40, batch_size=40)
    attack, metric, trials, exceeded = ModelAttack(), Exact(), 6, 0
    for seq in np.random.SeedSequence(0).spawn(trials):
        data_seed, mechanism_seed = seq.spawn(2)
        X = prior.sample(np.random.default_rng(data_seed))
        z = attack.guess(mech.release(X, np.random.default_rng(mechanism_seed)), prior, mech, metric)
        bound = count_bound(mech.profile, prior.success_probability(z, metric), 0.95)
        exceeded += int(metric.score(X, z).sum() > bound)
    assert exceeded <= stats.binom.ppf(0.999, trials, 0.05)


def test_fitted_temperature_recovers_the_noise_of_a_noisy_one_hot_release():
    """x = b e_X + N(0, s^2) plus a per-canary offset: EM finds s^2 / b without the secrets and then plays
    the Bayes-optimal attack of that model (the same guesses as the exact posterior)."""
    from stages.attack.model_attack import fit_temperature
    from stages.prior.zipf import ZipfPrior

    rng = np.random.default_rng(0)
    prior = ZipfPrior(n_targets=2000, domain_size=10, exponent=1.84, permutation_seed=0)
    X = prior.sample(rng)
    b, s = 2.0, 1.5
    a = s * rng.standard_normal((2000, 10)) + rng.normal(0, 5, size=(2000, 1))
    a[np.arange(2000), X] += b
    assert fit_temperature(a, prior.probabilities) == pytest.approx(s * s / b, rel=0.1)
    fitted = ModelAttack(temperature="fit").guess(a, prior, None, Exact())
    exact = np.argmax(np.log(prior.probabilities) + a * b / s**2, axis=1)
    assert np.mean(fitted[:, 0] == exact) > 0.97
    raw = Exact().score(X, ModelAttack().guess(a, prior, None, Exact())).sum()
    assert Exact().score(X, fitted).sum() > raw, "the fitted temperature lets the prior weigh in"
    with pytest.raises(ValueError, match=r"^temperature must be a number > 0 or 'fit'"):
        ModelAttack(temperature="auto")


def test_a_diverged_training_tells_the_attack_nothing_and_is_counted():
    """A release with NaN log-probabilities (a DP-SGD run that diverged, e.g. lr x clip = 100 at 100 epochs) used
    to fail the job with 'probability 0 under the prior'; its canaries now get the prior's guess and are counted."""
    import numpy as np

    from stages.attack.model_attack import ModelAttack, ModelOnlyAttack
    from stages.metric import Exact
    from stages.prior.zipf import ZipfPrior

    prior = ZipfPrior(n_targets=4, domain_size=5, exponent=1.5)
    release = np.log(np.full((4, 5), 0.2))
    release[0, 3] = 5.0  # canary 0: the model points at candidate 3
    release[1] = np.nan  # canary 1: diverged
    release[2] = -np.inf  # canary 2: every candidate underflowed
    release[3, 1] = -np.inf  # canary 3: one candidate of probability 0, the others usable
    for attack in (ModelAttack(1), ModelAttack(1, "fit"), ModelOnlyAttack(1)):
        z = attack.guess(release, prior, None, Exact())
        assert attack.observed()["unusable_canaries"] == 2
        if not isinstance(attack, ModelOnlyAttack):
            star = prior.a_priori_guess(Exact(), 1)
            assert z[1, 0] == star[1, 0] and z[2, 0] == star[2, 0]
        assert z[3, 0] != 1
