"""Bound boxes: they feed the theorems the right prior successes, and their counts hold in simulation."""
import itertools
import math

import numpy as np
import pytest

from stages.attack.bayes_optimal import BayesOptimalAttack
from stages.bound import prior_work
from stages.bound.best import kgk_markov_count
from stages.bound.comparator import COMPARATORS, ComparatorBound
from stages.bound.expected import ExpectedBound
from stages.bound.one_run import OneRunBound
from stages.bound.profiles import DPSGD, GaussianDP, PureDP
from stages.bound.pure_dp import PureDPBound
from stages.bound.theorems import count_bound, expected_count_bound, pure_dp_count_bound
from stages.mechanism.randomized_response import RandomizedResponse
from stages.metric import Exact, Within
from stages.prior.base import Prior
from stages.prior.uniform import UniformPrior
from stages.prior.zipf import ZipfPrior

LEVELS = [0.5, 0.95]


def brute_force_count(beta, confidence):
    """Smallest c with Pr[sum of Bernoulli(beta_i) >= c + 1] <= 1 - confidence, by enumerating outcomes."""
    n = len(beta)
    tail = np.zeros(n + 2)
    for outcome in itertools.product((0, 1), repeat=n):
        weight = np.prod([b if s else 1 - b for b, s in zip(beta, outcome)])
        tail[: sum(outcome) + 1] += weight
    return int(np.flatnonzero(tail <= 1 - confidence + 1e-12)[0]) - 1


def test_pure_dp_box_against_brute_force():
    prior = Prior(np.array([[0.5, 0.3, 0.2]] * 4 + [[0.1, 0.1, 0.8]] * 4))
    z = np.array([[0], [1], [2], [0], [2], [0], [1], [2]])
    eps = 1.2
    p = prior.probabilities[np.arange(8), z[:, 0]]
    beta = math.exp(eps) / (math.exp(eps) - 1 + 1 / p)
    result = PureDPBound().compute(PureDP(eps), prior, Exact(), z, LEVELS)
    assert result == {c: brute_force_count(beta, c) for c in LEVELS}
    assert result == {c: int(pure_dp_count_bound(eps, p, c)) for c in LEVELS}


def test_pure_dp_box_per_trial_and_max():
    prior = ZipfPrior(n_targets=6, domain_size=4, exponent=1.0)
    guesses = np.stack([np.zeros((6, 1), int), np.full((6, 1), 3)])
    box = PureDPBound()
    per_trial = box.compute_per_trial(PureDP(2.0), prior, Exact(), guesses, LEVELS)
    for c in LEVELS:
        expected = [int(pure_dp_count_bound(2.0, prior.probabilities[:, j], c)) for j in (0, 3)]
        assert per_trial[c] == expected
    assert box.compute(PureDP(2.0), prior, Exact(), guesses, LEVELS) == {c: max(v) for c, v in per_trial.items()}


def test_pure_dp_box_needs_pure_dp():
    prior = UniformPrior(n_targets=3, domain_size=4)
    with pytest.raises(ValueError, match="pure_dp"):
        PureDPBound().compute(GaussianDP(1.0), prior, Exact(), np.zeros((3, 1), int), 0.95)


def test_pure_dp_bound_holds_for_rr_bayes_optimal_in_simulation():
    """Theorem 3.1 at 95%: successes exceed the conditional bound in at most ~5% of trials."""
    eps, n, trials = 1.0, 60, 300
    rng = np.random.default_rng(4)
    prior = ZipfPrior(n_targets=n, domain_size=5, exponent=0.3, permutation_seed=1)
    mechanism, attack, metric, box = RandomizedResponse(epsilon=eps, domain_size=5), BayesOptimalAttack(), Exact(), PureDPBound()
    exceed = 0
    for _ in range(trials):
        X = prior.sample(rng)
        z = attack.guess(mechanism.release(X, rng), prior, mechanism, metric)
        bound = box.compute(mechanism.profile, prior, metric, z, 0.95)[0.95]
        exceed += metric.score(X, z).sum() > bound
    assert exceed / trials <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)


@pytest.mark.parametrize("metric", [Exact(), Within(distance=1)])
def test_one_run_box_uses_the_a_priori_guess_with_k_guesses(metric):
    prior = ZipfPrior(n_targets=5, domain_size=8, exponent=1.3, permutation_seed=2)
    guesses = np.zeros((3, 5, 2), int)  # 3 trials, 2 guesses per target: only k = 2 matters
    profile = GaussianDP(1.0)
    z_star = metric.best_guess(prior.probabilities, 2)
    p_star = metric.success_probability(prior.probabilities, z_star)
    result = OneRunBound().compute(profile, prior, metric, guesses, LEVELS)
    # two guesses make success set-valued: under approximate DP the one-run theorem is not valid there
    # (tests/stages/bound/test_set_success.py), so the box falls back to KGK per target + Markov
    assert result == {c: kgk_markov_count(profile, p_star, c) for c in LEVELS}


def test_expected_box_uses_each_trials_guesses():
    prior = ZipfPrior(n_targets=4, domain_size=3, exponent=1.0)
    guesses = np.array([[[0], [1], [2], [0]], [[2], [2], [1], [0]]])
    p_runs = np.array([prior.probabilities[np.arange(4), g[:, 0]] for g in guesses])
    profile = GaussianDP(0.8)
    result = ExpectedBound().compute(profile, prior, Exact(), guesses, LEVELS)
    # Theorem 2 on each trial's guesses, with the prior's whole distributions joining the minimum (one exact guess)
    expected = np.atleast_1d(expected_count_bound(profile, p_runs, np.asarray(LEVELS), distributions=prior.probabilities))
    assert result == {c: int(v) for c, v in zip(LEVELS, expected)}
    alone = np.atleast_1d(expected_count_bound(profile, p_runs, np.asarray(LEVELS)))
    assert np.all(expected <= alone)


def test_comparator_count_and_markov_bounds():
    prior = UniformPrior(n_targets=20, domain_size=10)
    z = np.zeros((20, 1), int)
    profile = GaussianDP(1.0)
    p_star = np.full(20, 0.1)
    mmc = ComparatorBound("mmc").compute(profile, prior, Exact(), z, LEVELS)
    tails = [prior_work.mmc_tail_bound(profile, p_star, v) for v in range(1, 22)]
    assert mmc == {c: next(v for v in range(21) if tails[v] <= 1 - c) for c in LEVELS}
    kgk = ComparatorBound("kgk").compute(profile, prior, Exact(), z, LEVELS)
    total = float(np.sum(prior_work.kgk_bound(profile, p_star)))
    assert kgk == {c: min(math.ceil(total / (1 - c)) - 1, 20) for c in LEVELS}  # capped at n
    # One target: the Markov count is "success <= s": at most 0 successes when s <= 1 - confidence.
    one = UniformPrior(n_targets=1, domain_size=1000)
    s = prior_work.narcissus_bound(0.5, 0.0, 1e-3)
    assert ComparatorBound("narcissus").compute(PureDP(0.5), one, Exact(), np.zeros((1, 1), int), 0.95) == {
        0.95: 0 if s <= 0.05 else 1
    }


@pytest.mark.parametrize("name", COMPARATORS)
def test_every_comparator_runs_or_explains(name):
    box = ComparatorBound(name)
    membership = UniformPrior(n_targets=10, domain_size=2)
    for profile in (PureDP(1.0), GaussianDP(1.0), DPSGD(noise_multiplier=1.0, sample_rate=1.0, steps=4)):
        try:
            result = box.compute(profile, membership, Exact(), np.zeros((10, 1), int), LEVELS)
        except ValueError as error:
            assert str(error).endswith(".")
            continue
        assert set(result) == set(LEVELS) and all(0 <= v <= 10 for v in result.values())


def test_bound_box_argument_errors():
    prior = UniformPrior(n_targets=3, domain_size=4)
    with pytest.raises(ValueError, match="confidences"):
        OneRunBound().compute(PureDP(1.0), prior, Exact(), np.zeros((3, 1), int), 1.5)
    with pytest.raises(ValueError, match="guesses"):
        ExpectedBound().compute(PureDP(1.0), prior, Exact(), np.zeros((1, 2, 3, 1), int), 0.95)
    with pytest.raises(ValueError, match="name"):
        ComparatorBound("nope")


def _random_trials(seed=3, trials=6, n=40, m=5, k=2):
    rng = np.random.default_rng(seed)
    prior = Prior(rng.dirichlet(np.ones(m), size=n))
    guesses = np.stack([np.stack([rng.choice(m, size=k, replace=False) for _ in range(n)]) for _ in range(trials)])
    return prior, guesses


@pytest.mark.parametrize("box", [ExpectedBound(), PureDPBound(), OneRunBound(), ComparatorBound("kgk")],
                         ids=lambda b: getattr(b, "comparator", b.name))
def test_grouped_trials_give_the_same_bounds_as_the_guesses(box):
    """What the game keeps of a trial (grouped prior successes, k) is a sufficient statistic for every box."""
    from stages.bound.box import PlayedTrials, played_trials

    prior, guesses = _random_trials()
    profile = PureDP(1.5)
    played = played_trials(prior, Exact(), guesses)
    assert isinstance(played, PlayedTrials) and len(played) == guesses.shape[0] and played.k == 2
    assert played.values.size < guesses.shape[0] * guesses.shape[1] + 1
    assert box.compute(profile, prior, Exact(), played, LEVELS) == box.compute(profile, prior, Exact(), guesses, LEVELS)
    if hasattr(box, "compute_per_trial"):
        assert (box.compute_per_trial(profile, prior, Exact(), played, LEVELS)
                == box.compute_per_trial(profile, prior, Exact(), guesses, LEVELS))


def test_played_trials_hold_each_trials_prior_successes():
    from stages.bound.box import PlayedTrials

    p = np.array([[0.1, 0.2, 0.1, 0.1], [0.3, 0.3, 0.3, 0.3]])
    played = PlayedTrials.from_prior_success(p, k=1)
    assert played.offsets.tolist() == [0, 2, 3] and played.counts.tolist() == [3, 1, 4]
    for r in range(2):
        assert sorted(played.prior_success(r).tolist()) == sorted(p[r].tolist())
    assert played.sums() == pytest.approx(p.sum(axis=1))
    with pytest.raises(ValueError, match="n_targets"):
        PlayedTrials(k=1, n_targets=5, values=played.values, counts=played.counts, offsets=played.offsets)
