"""stages.bound.audit: the certificate, the nesting, the peers (MMC, Steinke et al.), validity on the Gaussian
mechanism with the Bayes-optimal attack (a small fixed-seed run here; 200 runs under -m slow), bad inputs."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from stages.bound import audit as A
from stages.bound._validate import ArgumentError
from stages.bound.profiles import GaussianDP
from stages.bound.theorems import MMC_THEOREM, count_bounds

PII = np.array([0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01])


def zipf(s=1.84, k=10):
    w = np.arange(1, k + 1, dtype=float) ** -s
    return w / w.sum()


def gaussian_bayes_successes(prior, n, mu, runs, seed):
    """Successes of the Bayes-optimal attack on the idealized Gaussian mechanism (one-hot canaries, noise sqrt(2)/mu
    per coordinate: mu-GDP for replacing one canary), one count per run."""
    rng = np.random.default_rng(seed)
    sigma = np.sqrt(2.0) / mu
    out = np.empty(runs, dtype=int)
    for r in range(runs):
        x = rng.choice(prior.size, size=n, p=prior)
        y = rng.normal(0.0, sigma, size=(n, prior.size))
        y[np.arange(n), x] += 1.0
        guess = np.argmax(np.log(prior) + y / sigma ** 2, axis=1)
        out[r] = int(np.sum(guess == x))
    return out


def binomial_tolerance(runs, level, alpha=1e-3):
    """The largest share of runs a correct audit exceeds the truth in, but with probability alpha."""
    return stats.binom.ppf(1 - alpha, runs, level) / runs


def test_certificate_and_next_point_recomputed():
    p = np.full(300, 0.1)
    a = A.audit(150, p, family="gdp", confidence=0.95)
    assert a.refutes and not a.at_cap
    counts, _ = count_bounds(GaussianDP(a.theta), p, 0.95)
    assert counts < 150 and counts == a.count
    nxt, _ = count_bounds(GaussianDP(a.next_theta), p, 0.95)
    assert nxt >= 150 and np.isclose(a.next_theta / a.theta, 1 + A.DEFAULT_RTOL)
    # nesting: every stronger guarantee below theta_hat is refuted too (checked at a few points)
    for f in (0.9, 0.5, 0.1):
        assert count_bounds(GaussianDP(a.theta * f), p, 0.95)[0] < 150
    assert "not mu-GDP for any mu <= " in a.statement


def test_audit_grows_with_the_count_and_falls_with_the_confidence():
    au = A.Auditor(np.full(200, 0.1), confidences=[0.5, 0.95])
    low, high = au.audit(60, 0.95), au.audit(90, 0.95)
    assert low.theta <= high.theta
    assert au.audit(90, 0.5).theta >= high.theta
    # the prior alone reaches ~20: 15 successes refute nothing
    none = au.audit(15, 0.95)
    assert not none.refutes and none.theta == 0.0 and none.next_count >= 15


@pytest.mark.parametrize("prior", ["uniform", "zipf"])
def test_many_counts_are_each_the_single_audit(prior):
    """audit_counts (the distinct counts searched together, sharing the grid's count bounds) gives every count the
    audit ``audit`` gives it alone, on MMC's fast path (uniform) and without it (Zipf), in the input's order."""
    p = np.full(40, 0.1 if prior == "uniform" else zipf()[0])
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 41, size=12).tolist() + [0, 40, 40]
    together = A.Auditor(p, confidences=[0.5, 0.95], rtol=1e-2)
    for c in (0.5, 0.95):
        many = together.audit_counts(counts, c, start=0.7, detail=False)
        alone = A.Auditor(p, confidences=[0.5, 0.95], rtol=1e-2)
        assert [a.successes for a in many] == counts
        for a in many:
            single = alone.audit(a.successes, c, start=0.7)
            assert (a.theta, a.refutes, a.next_count) == (single.theta, single.refutes, single.next_count)
            full = together.detailed(a)
            assert (full.count, full.theorem) == (single.count, single.theorem)
            if a.refutes:  # certified: refuted at theta_hat, not at the next grid point
                assert full.count < a.successes <= a.next_count


@pytest.mark.parametrize("m", [40, 70])
def test_at_least_mmc_and_equal_where_mmc_wins_uniform(m):
    p = np.full(150, 0.1)
    ours = A.audit(m, p, family="gdp")
    mmc = A.mmc_audit(m, 150, k=10, family="gdp")
    assert ours.theta >= mmc.theta
    if ours.theorem == MMC_THEOREM:
        assert ours.theta == mmc.theta


@pytest.mark.parametrize("m", [120, 170])
def test_membership_with_abstentions_against_the_peers(m):
    n, r = 1000, 200
    # eps-DP: Theorem 3.1 on the guessed targets is Steinke et al.'s binomial (their delta = 0)
    pure = A.audit(m, np.full(n, 0.5), family="pure", guesses=r, game="membership")
    steinke = A.steinke_audit(m, n, delta=0.0, guesses=r)
    mmc = A.mmc_audit(m, n, k=2, guesses=r, family="pure", game="membership")
    assert pure.theta >= steinke.theta and pure.theta >= mmc.theta
    # (eps, delta): at least MMC's (with the same 200 guesses), which it contains
    approx = A.audit(m, np.full(n, 0.5), family="approx", delta=1e-5, guesses=r, game="membership")
    mmc = A.mmc_audit(m, n, k=2, guesses=r, family="approx", delta=1e-5, game="membership")
    assert approx.theta >= mmc.theta
    assert approx.guesses == r


def test_full_batch_dpsgd_is_gdp():
    """DP-SGD at sample rate 1 is mu-GDP with mu = 2 sqrt(steps) / sigma (replace-one): the two audits agree."""
    p = np.full(200, 0.1)
    mu = A.audit(80, p, family="gdp")
    sigma = A.audit(80, p, family="dpsgd", sample_rate=1.0, steps=4)
    assert sigma.refutes and "for any sigma >= " in sigma.statement
    assert np.isclose(2 * np.sqrt(4) / sigma.theta, mu.theta, rtol=2.5e-3)


def test_whole_prior_and_per_target_outcomes():
    d = np.tile(PII, (20, 1))
    outcomes = np.zeros(20, dtype=int)
    outcomes[:15] = 1
    a = A.audit(outcomes, None, distributions=d)
    assert a.successes == 15 and a.refutes
    assert count_bounds(GaussianDP(a.theta), None, 0.95, distributions=d)[0] < 15


def test_claimed_family():
    fam, theta = A.claimed_family(GaussianDP(1.5))
    assert (fam.name, theta) == ("gdp", 1.5)
    from stages.bound.profiles import DPSGD, ApproxDP, PureDP

    assert A.claimed_family(PureDP(2.0))[0].name == "pure"
    assert A.claimed_family(ApproxDP(1.0, 1e-5))[0].delta == 1e-5
    fam, sigma = A.claimed_family(DPSGD(3.0, 0.1, 10))
    assert (fam.name, sigma, fam.steps) == ("dpsgd", 3.0, 10)


def test_gaussian_bayes_attack_small_run():
    """Fast tier: 30 runs, n = 100, mu = 1, uniform over 10: the audit at 0.95 exceeds the true mu in at most 5% of
    the runs (with a binomial tolerance) and its median is at least MMC's."""
    prior = np.full(10, 0.1)
    s = gaussian_bayes_successes(prior, 100, 1.0, 30, seed=7)
    au = A.Auditor(np.full(100, 0.1), confidences=0.95, rtol=1e-2)
    audits = np.array([au.audit(int(m)).theta for m in s])
    assert np.mean(audits > 1.0) <= binomial_tolerance(30, 0.05)
    mmc = np.array([A.mmc_audit(int(m), 100, k=10, rtol=1e-2).theta for m in s])
    assert np.median(audits) >= np.median(mmc)
    assert np.all(audits >= mmc)


@pytest.mark.parametrize("kwargs, argument", [
    (dict(family="foo"), "family"),
    (dict(family="approx"), "delta"),
    (dict(family="gdp", delta=1e-5), "delta"),
    (dict(family="dpsgd", sample_rate=0.1), "steps"),
    (dict(rtol=0.5), "rtol"),
    (dict(confidence=1.0), "confidence"),
    (dict(guesses=0), "guesses"),
])
def test_bad_inputs_one_sentence(kwargs, argument):
    with pytest.raises(ArgumentError) as err:
        A.audit(10, np.full(50, 0.1), **kwargs)
    message = str(err.value)
    assert err.value.argument == argument and message.endswith(".") and "\n" not in message


def test_bad_observations():
    with pytest.raises(ArgumentError, match="at most the number of targets"):
        A.audit(51, np.full(50, 0.1))
    with pytest.raises(ArgumentError, match="one outcome"):
        A.audit(np.ones(10), np.full(50, 0.1))
    with pytest.raises(ArgumentError, match="0 or 1"):
        A.audit(np.full(50, 2), np.full(50, 0.1))
    with pytest.raises(ArgumentError, match="number of guesses"):
        A.audit(20, np.full(50, 0.1), guesses=10)


# --------------------------------------------------------------------------------------------
# the targets: 200 runs, n = 1000, mu = 2, the Bayes attack (slow)
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", ["uniform", "zipf", "pii"])
def test_gaussian_bayes_attack_200_runs(name):
    prior = {"uniform": np.full(10, 0.1), "zipf": zipf(), "pii": PII / PII.sum()}[name]
    n, mu, runs = 1000, 2.0, 200
    s = gaussian_bayes_successes(prior, n, mu, runs, seed=2026)
    lower_median = int(np.sort(s)[(runs - 1) // 2])
    if name == "uniform":
        au = A.Auditor(np.full(n, 0.1), confidences=0.95)
        audits = {int(m): au.audit(int(m)).theta for m in np.unique(s)}
        share = np.mean([audits[int(m)] > mu for m in s])
        mmc = {int(m): A.mmc_audit(int(m), n, k=10).theta for m in np.unique(s)}
        assert np.median([audits[int(m)] for m in s]) >= np.median([mmc[int(m)] for m in s])
        assert all(audits[m] >= mmc[m] for m in audits)
    else:
        # the audit grows with the count: a run's audit is above mu exactly when its count refutes mu, and the largest
        # count refutes wherever any does (one count bound at mu: each step of a whole audit is a count search of
        # Theorem 6 at n = 1000, 35-100 s an audit here; audit_table.py runs the audits themselves)
        au = A.Auditor(None, distributions=np.tile(prior, (n, 1)), confidences=0.95)
        assert lower_median <= s.max()
        share = float(au.refutes(int(s.max()), mu, 0.95))
    assert share <= binomial_tolerance(runs, 0.05)
