"""Set-valued success (k > 1 guesses, distance windows) against a real mu-GDP Gaussian mechanism.

The secret X of one target is uniform on k values and the mechanism releases
Y = (mu / sqrt 2) e_X + N(0, I_k): replacing the record moves the mean by mu in L2, so it is mu-GDP
(replace-one). The attacker guesses the m coordinates of Y that are largest, i.e. its success set is
m values and the prior success is p = m/k. By symmetry X = 0 is simulated (N = 1e5 draws, float32,
seeded); the attack's success rate is compared with each bound up to 5 standard errors.

* The paper's single-target form beta + (1 - beta) delta (thm:eps_bound_approx_comp / f_comp at n = 1)
  is below this attack for m > 1 (mu = 1, k = 100, m = 40: attack 0.672 vs 0.626, 30 standard errors).
* The split theorem with set-valued weights (1 - c) / (e^eps p + 1 - p), c = 1/k the uniform prior's
  collision probability (stages/bound/THEORY.md), holds for every m and is within 1.2x of the attack.
* KGK 1 - f(p) holds for every m too (a comparator in best_bound).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from stages.bound import best_bound, count_bound, kgk_bound, success_bound, tail_bound
from stages.bound.box import prior_collision, success_set_size
from stages.bound import prior_run as R
from stages.bound import whole_prior as W
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


def paper_single_target(mu: float, p: float) -> float:
    """The paper's n = 1 form min_eps beta + (1 - beta) delta_mu(eps), computed here (bounded search)."""
    def f(e):
        b = special.expit(e + special.logit(p))
        d = special.ndtr(-e / mu + mu / 2) - math.exp(e) * special.ndtr(-e / mu - mu / 2)
        return b + (1 - b) * d
    return float(optimize.minimize_scalar(f, bounds=(0.0, 20.0), method="bounded", options={"xatol": 1e-10}).fun)


def test_paper_single_target_form_is_beaten_by_set_valued_success():
    """The documented numbers: mu = 1, k = 100, m = 40 (p = 0.4): attack ~0.672, the paper's form 0.626."""
    rate, se = top_m_attack(1.0, 100, 40, seed=100 * 1000 + 40)
    assert rate == pytest.approx(0.672, abs=5 * se)
    assert paper_single_target(1.0, 0.4) == pytest.approx(0.6264, abs=1e-4)
    assert rate - paper_single_target(1.0, 0.4) > 20 * se
    assert kgk_bound(GaussianDP(1.0), 0.4) == pytest.approx(0.7724, abs=1e-4)


@pytest.mark.parametrize("mu,k,m", SET_CASES + SINGLE_CASES)
def test_split_theorem_holds_for_set_valued_success(mu, k, m):
    rate, se = top_m_attack(mu, k, m, seed=k * 1000 + m)
    bound = success_bound(GaussianDP(mu), m / k, set_valued=m > 1, collision=1.0 / k)
    assert bound >= rate - 5 * se, (bound, rate, se)
    if m > 1:  # within 1.2x of this attack (issue 13); for one exact guess the bound is the LP's exact worst
        assert bound <= 1.2 * rate  # case for uniform priors, reached by other mechanisms than this one
    # the worst case over priors (collision unknown) is larger, never smaller
    assert success_bound(GaussianDP(mu), m / k, set_valued=True) >= bound - 1e-12
    assert kgk_bound(GaussianDP(mu), m / k) >= rate - 5 * se, (rate, se)
    got = best_bound(GaussianDP(mu), m / k, set_valued=True, collision=1.0 / k)
    assert got.all["ours"] == pytest.approx(success_bound(GaussianDP(mu), m / k, set_valued=True, collision=1.0 / k))
    assert got.value >= rate - 5 * se and "mmc" in got.not_applicable


def test_the_documented_set_valued_numbers():
    """mu = 1, top 40 of 100: the exact constructed attack reaches 0.6730 (issue 13); the split theorem gives
    0.7062 with c = 1/100 (ratio 1.05), KGK 0.7724."""
    assert success_bound(GaussianDP(1.0), 0.4, set_valued=True, collision=0.01) == pytest.approx(0.70620, abs=1e-4)
    assert success_bound(GaussianDP(1.0), 0.4, set_valued=True, collision=0.01) >= 0.6730


@pytest.mark.parametrize("mu,k,m", SINGLE_CASES)
def test_split_theorem_holds_for_one_exact_guess(mu, k, m):
    rate, se = top_m_attack(mu, k, m, seed=k * 1000 + m)
    assert success_bound(GaussianDP(mu), m / k) >= rate - 5 * se, (rate, se)
    # one exact guess at n = 1: the split theorem is the paper's single-target form (tight, THEORY.md)
    assert success_bound(GaussianDP(mu), m / k) == pytest.approx(paper_single_target(mu, m / k), abs=1e-7)


@pytest.mark.parametrize("profile", [GaussianDP(1.0), ApproxDP(1.0, 1e-5), DPSGD(1.0, 1.0, 4)])
def test_set_valued_weights_are_never_below_the_exact_guess_ones(profile):
    for call in (lambda sv: success_bound(profile, 0.4, set_valued=sv),
                 lambda sv: tail_bound(profile, [0.4] * 5, 3, set_valued=sv),
                 lambda sv: count_bound(profile, [0.4] * 5, 0.9, set_valued=sv)):
        assert call(True) >= call(False)
    with pytest.raises(ValueError, match=r"^set_valued must be True or False, got 'yes'\.$"):
        success_bound(profile, 0.4, set_valued="yes")
    with pytest.raises(ValueError, match=r"^collision must be"):
        success_bound(profile, 0.4, set_valued=True, collision=1.5)


def test_pure_dp_keeps_theorem_3_1_for_set_valued_success():
    assert success_bound(PureDP(1.0), 0.9, set_valued=True) == pytest.approx(math.e * 0.9 / (math.e * 0.9 + 0.1), rel=1e-12)
    got = best_bound(PureDP(1.0), 0.9, set_valued=True)
    assert got.source == "ours" and "mmc" in got.not_applicable
    counts = best_bound(PureDP(1.0), [0.3] * 40, confidence=0.9, set_valued=True)
    assert counts.all["ours"] == count_bound(PureDP(1.0), [0.3] * 40, 0.9)


def test_set_valued_counts_ours_and_kgk_markov():
    """n targets, set-valued, Gaussian: ours is the split theorem; KGK + Markov stays as a comparator."""
    from stages.bound.best import kgk_markov_count

    p = np.array([0.01] * 30 + [0.05] * 10)
    total = float(np.sum(kgk_bound(GaussianDP(0.5), p)))
    c = kgk_markov_count(GaussianDP(0.5), p, 0.5)
    assert total / (c + 1) <= 0.5 < total / c
    got = best_bound(GaussianDP(0.5), p, confidence=0.5, set_valued=True)
    assert got.all["kgk"] == c and got.all["ours"] == count_bound(GaussianDP(0.5), p, 0.5, set_valued=True)


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
def test_boxes_use_the_set_valued_weights(box_name):
    from stages.bound.expected import ExpectedBound
    from stages.bound.one_run import OneRunBound
    from stages.bound.theorems import expected_count_bound
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
            assert info["set_valued"] and "set-valued" in info["reason"]
            assert info["version"] == (4 if box_name == "one_run" else 3)
            got = box.compute(profile, prior, metric, guesses, levels)
            if box_name == "one_run":
                want = count_bound(profile, p_star, levels, set_valued=True, collision=prior_collision(prior))
            else:
                p_runs = np.stack([metric.success_probability(prior.probabilities, g) for g in guesses])
                want = expected_count_bound(profile, p_runs, levels, set_valued=True)
            assert got == {c: int(w) for c, w in zip(levels, want)}
        pure = box.theorem(PureDP(1.0), prior, metric, guesses)
        assert pure["set_valued"] and pure["theorem"].startswith("Theorem 3.1")
    single = box.theorem(GaussianDP(0.3), prior, Exact(), np.zeros((4, 50, 1), int))
    assert not single["set_valued"] and "1 - beta_i" in single["reason"]


@pytest.mark.parametrize("metric,k,set_valued", [("within", 1, True), ("exact", 2, True), ("exact", 1, False)])
def test_pipeline_records_the_theorem_used(compose_config, metric, k, set_valued):
    from pipeline.game import compute_metrics

    cfg = compose_config("mechanism=gaussian", "bound=one_run", "prior=zipf", "prior.n_targets=30", "trials=5",
                         f"metric={metric}", f"attack.k={k}")
    metrics, _, _ = compute_metrics(cfg)
    record = metrics["bound_theorem"]
    if set_valued:  # the split theorem with set-valued weights, and Theorem 3 with the sets' largest size (Lemma 4')
        assert record["candidates"] == ["split one-run theorem (THEORY.md Thm 1), a-priori guesses z*, set-valued weights",
                                        "whole-prior theorem (THEORY.md Thm 3)"]
        from pipeline.game import build_boxes

        metric_box = build_boxes(cfg).metric
        assert record["set_size"] == success_set_size(metric_box, k, cfg.prior.domain_size) >= 2
        assert record["whole_prior_version"] == W.WHOLE_PRIOR_VERSION
        winners = set(record["by_confidence"].values())
        assert winners <= set(record["candidates"])
    else:  # one exact guess on a prior with distributions: the minimum of the split and whole-prior theorems
        assert record["candidates"] == ["split one-run theorem (THEORY.md Thm 1), a-priori guesses z*",
                                        "whole-prior theorem (THEORY.md Thm 3)",
                                        "MMC one-run count (ICML 2025 Thm 3.2)",
                                        "whole-prior one-run count (THEORY.md Thm 4)"]
        assert record["whole_prior_version"] == W.WHOLE_PRIOR_VERSION == 3 and record["prior_run_version"] == R.PRIOR_RUN_VERSION == 6
        winners = set(record["by_confidence"].values())
        assert winners <= set(record["candidates"])
        assert record["theorem"] == (winners.pop() if len(winners) == 1 else record["theorem"])
        assert all(name in record["theorem"] for name in set(record["by_confidence"].values()))
    assert record["set_valued"] == set_valued
    assert metrics["bound_theorem"]["version"] == 4  # the one_run box: the minimum over the theorems that apply


def test_comparator_box_says_whether_its_game_covers_set_valued_success():
    from stages.bound.comparator import ComparatorBound
    from stages.metric import Exact, Within
    from stages.prior.uniform import UniformPrior

    prior = UniformPrior(n_targets=10, domain_size=10)
    one = ComparatorBound("mmc").theorem(GaussianDP(1.0), prior, Exact(), np.zeros((2, 10, 1), int))
    assert one["theorem"] == "comparator mmc" and not one["set_valued"] and "one-run tail" in one["reason"]
    mmc = ComparatorBound("mmc").theorem(GaussianDP(1.0), prior, Within(distance=1), np.zeros((2, 10, 1), int))
    assert mmc["set_valued"] and "refused" in mmc["reason"]
    with pytest.raises(ValueError, match=r"^bound.name=mmc does not apply to this game .*one exact guess"):
        ComparatorBound("mmc").compute(GaussianDP(1.0), prior, Within(distance=1), np.zeros((2, 10, 1), int), [0.5])
    kgk = ComparatorBound("kgk").theorem(GaussianDP(1.0), prior, Exact(), np.zeros((2, 10, 2), int))
    assert kgk["set_valued"] and "any success event" in kgk["reason"]
