"""Set-valued success (k > 1 guesses, distance windows) against a real mu-GDP Gaussian mechanism.

The secret X of one target is uniform on k values and the mechanism releases
Y = (mu / sqrt 2) e_X + N(0, I_k): replacing the record moves the mean by mu in L2, so it is mu-GDP
(replace-one). The attacker guesses the m coordinates of Y that are largest, i.e. its success set is
m values and the prior success is p = m/k. By symmetry X = 0 is simulated (N = 1e5 draws, float32,
seeded); the attack's success rate is compared with each bound up to 5 standard errors.

* The one-run theorem for f-DP profiles (success_bound, Thm. eps_bound_approx_comp / f_comp) is below
  this attack for m > 1 (mu = 1, k = 100, m = 40: attack 0.672 vs bound 0.626, 30 standard errors):
  a strict xfail that records the known limitation.
* For one exact guess (m = 1) the same bound holds in the same setup (at k = 2 it is Phi(mu/2), which
  the attack attains).
* KGK 1 - f(p) holds for every m, and best_bound(..., set_valued=True) falls back to it.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from stages.bound import best_bound, count_bound, kgk_bound, success_bound, tail_bound
from stages.bound.best import kgk_markov_count
from stages.bound.profiles import ApproxDP, DPSGD, GaussianDP, PureDP

N = 100_000
SET_CASES = [(1.0, 100, 40), (1.0, 100, 30), (1.0, 10, 4), (2.0, 10, 4), (0.5, 100, 50)]
SINGLE_CASES = [(1.0, 2, 1), (1.0, 100, 1), (2.0, 10, 1), (4.0, 10, 1)]


def top_m_attack(mu: float, k: int, m: int, seed: int) -> tuple[float, float]:
    """(success rate, standard error) of guessing the top-m coordinates of Y = (mu/sqrt 2) e_0 + N(0, I_k)."""
    rng = np.random.default_rng(seed)
    y = rng.standard_normal((N, k), dtype=np.float32)
    y[:, 0] += np.float32(mu / math.sqrt(2.0))
    rank = np.count_nonzero(y > y[:, :1], axis=1)  # how many coordinates beat the secret's
    rate = float(np.mean(rank < m))
    return rate, math.sqrt(rate * (1.0 - rate) / N)


@pytest.mark.xfail(strict=True, reason="known limitation: the one-run theorem for f-DP profiles is not valid for "
                                       "set-valued success; a mu-GDP Gaussian mechanism beats it (see module docstring)")
@pytest.mark.parametrize("mu,k,m", SET_CASES)
def test_one_run_theorem_holds_for_set_valued_success(mu, k, m):
    rate, se = top_m_attack(mu, k, m, seed=k * 1000 + m)
    assert success_bound(GaussianDP(mu), m / k) >= rate - 5 * se, (rate, se)


@pytest.mark.parametrize("mu,k,m", SET_CASES + SINGLE_CASES)
def test_kgk_holds_for_set_valued_success(mu, k, m):
    rate, se = top_m_attack(mu, k, m, seed=k * 1000 + m)
    assert kgk_bound(GaussianDP(mu), m / k) >= rate - 5 * se, (rate, se)
    got = best_bound(GaussianDP(mu), m / k, set_valued=True)
    # the fallback is KGK or an any-metric comparator that is (up to its eps grid) no larger
    assert got.source in ("kgk", "narcissus") and got.value <= kgk_bound(GaussianDP(mu), m / k) * (1 + 1e-6)
    assert "ours" in got.not_applicable and "ours" not in got.all and got.value >= rate - 5 * se


@pytest.mark.parametrize("mu,k,m", SINGLE_CASES)
def test_one_run_theorem_holds_for_one_exact_guess(mu, k, m):
    rate, se = top_m_attack(mu, k, m, seed=k * 1000 + m)
    assert success_bound(GaussianDP(mu), m / k) >= rate - 5 * se, (rate, se)


def test_the_violation_is_large():
    """The documented numbers: mu = 1, k = 100, m = 40 (p = 0.4): attack ~0.672, one-run bound 0.626, KGK 0.772."""
    rate, se = top_m_attack(1.0, 100, 40, seed=100 * 1000 + 40)
    assert rate == pytest.approx(0.672, abs=5 * se)
    assert success_bound(GaussianDP(1.0), 0.4) == pytest.approx(0.6264, abs=1e-4)
    assert rate - success_bound(GaussianDP(1.0), 0.4) > 20 * se
    assert kgk_bound(GaussianDP(1.0), 0.4) == pytest.approx(0.7724, abs=1e-4)


@pytest.mark.parametrize("profile", [GaussianDP(1.0), ApproxDP(1.0, 1e-5), DPSGD(1.0, 1.0, 4)])
def test_theorems_refuse_set_valued_success_without_pure_dp(profile):
    """The one-run theorem is refused, in one sentence naming the function and the fallback, not a silent number."""
    for call in (lambda: success_bound(profile, 0.4, set_valued=True),
                 lambda: tail_bound(profile, [0.4] * 5, 3, set_valued=True),
                 lambda: count_bound(profile, [0.4] * 5, 0.9, set_valued=True)):
        with pytest.raises(ValueError, match=r"cannot bound set-valued success for .*kgk_bound"):
            call()
    with pytest.raises(ValueError, match=r"^set_valued must be True or False, got 'yes'\.$"):
        success_bound(profile, 0.4, set_valued="yes")


def test_pure_dp_keeps_theorem_3_1_for_set_valued_success():
    assert success_bound(PureDP(1.0), 0.9, set_valued=True) == pytest.approx(math.e * 0.9 / (math.e * 0.9 + 0.1), rel=1e-12)
    got = best_bound(PureDP(1.0), 0.9, set_valued=True)
    assert got.source == "ours" and "mmc" in got.not_applicable
    counts = best_bound(PureDP(1.0), [0.3] * 40, confidence=0.9, set_valued=True)
    assert counts.all["ours"] == count_bound(PureDP(1.0), [0.3] * 40, 0.9)


def test_kgk_markov_count_for_set_valued_counts():
    """n targets, set-valued, Gaussian: the count is the smallest c with sum_i (1 - f(p_i)) / (c + 1) <= 1 - confidence."""
    p = np.array([0.01] * 30 + [0.05] * 10)
    total = float(np.sum(kgk_bound(GaussianDP(0.5), p)))
    c = kgk_markov_count(GaussianDP(0.5), p, 0.5)
    assert total / (c + 1) <= 0.5 < total / c
    got = best_bound(GaussianDP(0.5), p, confidence=0.5, set_valued=True)
    assert got.source == "kgk" and got.value == c and "ours" in got.not_applicable


# --------------------------------------------------------------------------------------------
# the bound boxes and the pipeline: set-valued metrics fall back, and say so
# --------------------------------------------------------------------------------------------
def test_set_valued_success_of_the_metrics():
    from stages.bound.box import set_valued_success
    from stages.metric import Exact, Within

    assert not set_valued_success(Exact(), 1, 10)
    assert set_valued_success(Exact(), 2, 10)
    assert set_valued_success(Within(distance=1), 1, 10)
    assert not set_valued_success(Within(distance=0.5), 1, 10)  # integer candidates: the window is one value
    assert not set_valued_success(Within(distance=3), 1, 1)  # one candidate: nothing to choose


@pytest.mark.parametrize("box_name", ["one_run", "expected"])
def test_boxes_fall_back_to_kgk_markov_for_set_valued_success(box_name):
    from stages.bound.expected import ExpectedBound
    from stages.bound.one_run import OneRunBound
    from stages.metric import Exact, Within
    from stages.prior.zipf import ZipfPrior

    box = OneRunBound() if box_name == "one_run" else ExpectedBound()
    prior = ZipfPrior(n_targets=50, domain_size=20, exponent=1.0, permutation_seed=3)
    levels = [0.5, 0.9]
    for metric, k in ((Within(distance=1), 1), (Exact(), 3)):
        guesses = np.zeros((4, 50, k), int)
        p_star = metric.success_probability(prior.probabilities, metric.best_guess(prior.probabilities, k))
        for profile in (GaussianDP(0.3), DPSGD(2.0, 1.0, 4)):
            info = box.theorem(profile, prior, metric, guesses)
            assert info["theorem"] == "kgk_markov" and info["set_valued"] and "Gaussian mechanism beats it" in info["reason"]
            got = box.compute(profile, prior, metric, guesses, levels)
            assert got == {c: kgk_markov_count(profile, p_star, c) for c in levels}
        pure = box.theorem(PureDP(1.0), prior, metric, guesses)
        assert pure["set_valued"] and pure["theorem"].startswith("Theorem 3.1")
    single = box.theorem(GaussianDP(0.3), prior, Exact(), np.zeros((4, 50, 1), int))
    assert single == {"theorem": box.theorem(GaussianDP(0.3), prior, Exact(), np.zeros((1, 50, 1), int))["theorem"],
                      "set_valued": False, "reason": "one exact guess per target"}
    assert single["theorem"] != "kgk_markov"


@pytest.mark.parametrize("metric,k,theorem", [("within", 1, "kgk_markov"), ("exact", 2, "kgk_markov"),
                                              ("exact", 1, "one_run (thm:eps_bound_f_comp)")])
def test_pipeline_records_the_theorem_used(compose_config, metric, k, theorem):
    from pipeline.game import compute_metrics

    cfg = compose_config("mechanism=gaussian", "bound=one_run", "prior=zipf", "prior.n_targets=30", "trials=5",
                         f"metric={metric}", f"attack.k={k}")
    metrics, _, _ = compute_metrics(cfg)
    assert metrics["bound_theorem"]["theorem"] == theorem
    assert metrics["bound_theorem"]["set_valued"] == (theorem == "kgk_markov")


def test_comparator_box_says_whether_its_game_covers_set_valued_success():
    from stages.bound.comparator import ComparatorBound
    from stages.metric import Exact, Within
    from stages.prior.uniform import UniformPrior

    prior = UniformPrior(n_targets=10, domain_size=10)
    one = ComparatorBound("mmc").theorem(GaussianDP(1.0), prior, Exact(), np.zeros((2, 10, 1), int))
    assert one == {"theorem": "comparator mmc", "set_valued": False, "reason": "one exact guess per target"}
    mmc = ComparatorBound("mmc").theorem(GaussianDP(1.0), prior, Within(distance=1), np.zeros((2, 10, 1), int))
    assert mmc["set_valued"] and "not shown" in mmc["reason"]
    kgk = ComparatorBound("kgk").theorem(GaussianDP(1.0), prior, Exact(), np.zeros((2, 10, 2), int))
    assert kgk["set_valued"] and "any success event" in kgk["reason"]
