"""mechanism=worst_case (stages/mechanism/worst_case.py): the floor's mixture played. The MAP attack given the released
coin (the bayes_optimal attack's posterior) gets at least the floor's count with the probability the floor certifies,
within the binomial confidence interval of the trials; the box's bad input is refused in one sentence."""
from __future__ import annotations

import math

import numpy as np
import pytest

from stages.attack.bayes_optimal import posterior
from stages.bound.profiles import ApproxDP, GaussianDP
from stages.mechanism.worst_case import WorstCaseMechanism


def _play(mech, probs, trials, seed=0):
    """N per trial: the MAP guess of every target from the release and the prior."""
    rng = np.random.default_rng(seed)
    n, k = probs.shape
    cdf = np.cumsum(probs, axis=1)
    counts = np.zeros(trials, dtype=int)
    for t in range(trials):
        x = np.minimum((rng.random(n)[:, None] > cdf).sum(axis=1), k - 1)
        a = mech.release(x, rng)
        guess = np.argmax(posterior(probs, mech.log_likelihood(a)), axis=1)
        counts[t] = int(np.sum(guess == x))
    return counts


ZIPF = np.arange(1, 11, dtype=float) ** -1.84
ZIPF /= ZIPF.sum()


@pytest.mark.parametrize("kwargs, prior, n, confidence", [
    ({"mu": 1.0}, np.full(10, 0.1), 100, 0.95),
    ({"mu": 0.5}, ZIPF, 40, 0.5),
    ({"epsilon": 1.0, "delta": 0.02}, ZIPF, 40, 0.95),
], ids=["gdp-uniform-0.95", "gdp-zipf-0.5", "approx-zipf-0.95"])
def test_playing_the_box_reaches_the_floor(kwargs, prior, n, confidence):
    """2,000 trials: the empirical Pr[N >= floor] is within 4.5 binomial standard errors of the mixture's certified
    Pr[N >= floor] (> 1 - c), and so is Pr[N >= floor + 1] of the mixture's law there (at most 1 - c + its error)."""
    probs = np.tile(prior, (n, 1))
    mech = WorstCaseMechanism(domain_size=prior.size, confidence=confidence, **kwargs).bound_to(probs)
    expected = GaussianDP(kwargs["mu"]) if "mu" in kwargs else ApproxDP(1.0, 0.02)
    assert mech.profile.identity() == expected.identity()
    mix = mech.floor.mixtures[0]
    v, tail = mix["count"], mix["tail"]
    assert tail > 1 - confidence
    trials = 2000
    counts = _play(mech, probs, trials)
    emp = float(np.mean(counts >= v))
    se = math.sqrt(tail * (1 - tail) / trials)
    assert abs(emp - tail) <= 4.5 * se + 1e-3, (emp, tail, v)
    # the law one count up, from the record's components (their per-target successes are exact up to 1e-12)
    from scipy import stats
    up = sum(c["weight"] * stats.binom.sf(v, n, c["success"][0][0]) for c in mix["components"])
    emp_up = float(np.mean(counts >= v + 1))
    assert abs(emp_up - up) <= 4.5 * math.sqrt(max(up * (1 - up), 1e-4) / trials) + 1e-3, (emp_up, up)


def test_the_box_refuses_what_it_cannot_play():
    with pytest.raises(ValueError, match="either mu or epsilon"):
        WorstCaseMechanism(mu=1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="not bound to a prior"):
        WorstCaseMechanism(mu=1.0).release(np.zeros(3, dtype=int), np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"probabilities must be \(n_targets, 10\)"):
        WorstCaseMechanism(mu=1.0).bound_to(np.full((3, 4), 0.25))
    assert WorstCaseMechanism(epsilon=1.0, delta=0.0).profile.pure_epsilon() == 1.0
