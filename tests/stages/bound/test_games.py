"""Reconstruction vs membership games: an add/remove profile is made replace-one where records are replaced.

The theorems compare datasets that differ by *replacing* target i's record. Checked here against the
exact success of Bayes-optimal attackers on full-batch DP-SGD (a linear model whose per-example
gradient is the record itself, clipped to norm C = 1), computed by numerical integration:

* reconstruction of a binary secret: the two candidate records have gradients +e and -e, so the
  T released noisy sums (noise N(0, sigma^2)) differ by 2 per step; the Bayes attacker succeeds with
  Phi(sqrt(T) / sigma);
* membership: the record (gradient e) is in the batch or not, the sums differ by 1 per step; the
  Bayes attacker succeeds with Phi(sqrt(T) / (2 sigma)).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from stages.bound import prior_work
from stages.bound.best import best_bound
from stages.bound.profiles import (
    DPSGD,
    ApproxDP,
    ComposedGaussian,
    GaussianDP,
    PureDP,
    for_game,
    replace_one_from_add_remove,
)
from stages.bound.theorems import count_bound, success_bound, tail_bound

Phi = stats.norm.cdf


def bayes_success(shift: float) -> float:
    """Success of the Bayes attacker between N(+shift/2, 1) and N(-shift/2, 1), prior 1/2 each:
    the integral of max(pdf_0, pdf_1) / 2 (one observation: a sufficient statistic of the T sums)."""
    f = lambda y: 0.5 * max(stats.norm.pdf(y - shift / 2), stats.norm.pdf(y + shift / 2))
    value, _ = integrate.quad(f, -15, 15, points=[0.0], epsabs=1e-14, epsrel=1e-13, limit=200)
    return value


@pytest.mark.parametrize("sigma,steps", [(1.0, 1), (2.0, 4), (1.5, 2)])
def test_add_remove_dpsgd_bounds_the_bayes_reconstruction_attack(sigma, steps):
    """success_bound(DPSGD(1, 1, 1, "add_remove"), 1/2) was 0.6915 = Phi(1/2) while the Bayes attacker
    reconstructing a binary secret gets Phi(1) = 0.8413: the add/remove mu is half the replace-one one."""
    bayes = bayes_success(2.0 * math.sqrt(steps) / sigma)
    assert bayes == pytest.approx(Phi(math.sqrt(steps) / sigma), abs=1e-10)
    profile = DPSGD(sigma, 1.0, steps, "add_remove")
    got = success_bound(profile, 0.5)
    assert got >= bayes - 1e-12
    assert got == pytest.approx(bayes, abs=1e-9)  # the replace-one bound is tight here
    # every bound best_bound reports for the reconstruction game holds against that attacker
    result = best_bound(profile, 0.5)
    assert result.game == "reconstruction" and result.profile.neighboring == "replace_one"
    for name, value in result.all.items():
        assert value >= bayes - 1e-9, (name, value, bayes)


@pytest.mark.parametrize("sigma,steps", [(1.0, 1), (2.0, 4)])
def test_membership_game_keeps_the_add_remove_profile(sigma, steps):
    bayes = bayes_success(math.sqrt(steps) / sigma)
    profile = DPSGD(sigma, 1.0, steps, "add_remove")
    got = success_bound(profile, 0.5, game="membership")
    assert got >= bayes - 1e-12 and got == pytest.approx(bayes, abs=1e-9)
    result = best_bound(profile, 0.5, game="membership")
    assert result.profile is profile
    for name, value in result.all.items():
        assert value >= bayes - 1e-9, (name, value, bayes)


def test_reconstruction_uses_the_replace_one_accounting():
    """The one-run count of an add/remove DP-SGD run is that of the same run accounted replace-one."""
    p = np.random.default_rng(0).beta(0.5, 5, 60)
    add_remove, replace_one = DPSGD(2.0, 1.0, 4, "add_remove"), DPSGD(2.0, 1.0, 4, "replace_one")
    assert add_remove.replace_one() == replace_one and add_remove.replace_one() is add_remove.replace_one()
    assert replace_one.replace_one() is replace_one and GaussianDP(1.0).replace_one() == GaussianDP(1.0)
    confs = [0.05, 0.5, 0.95]
    assert list(count_bound(add_remove, p, confs)) == list(count_bound(replace_one, p, confs))
    assert list(count_bound(replace_one, p, confs)) == list(count_bound(GaussianDP(2.0), p, confs))
    # in a membership game the add/remove profile (mu = 1) gives a smaller count
    assert np.all(count_bound(add_remove, p, confs, game="membership") <= count_bound(replace_one, p, confs))
    assert tail_bound(add_remove, p, 12, game="membership") == tail_bound(GaussianDP(1.0), p, 12)


def test_replace_one_from_add_remove_is_group_privacy():
    assert replace_one_from_add_remove(GaussianDP(0.7)) == GaussianDP(1.4)
    assert replace_one_from_add_remove(PureDP(1.5)) == PureDP(3.0)
    converted = replace_one_from_add_remove(ApproxDP(1.0, 1e-6))
    assert converted.eps == 2.0 and converted.delta_ == pytest.approx((1 + math.e) * 1e-6, rel=1e-15)
    # a Gaussian mechanism: add/remove L2 sensitivity 1 is replace-one sensitivity 2, i.e. mu doubles
    gauss = replace_one_from_add_remove(ComposedGaussian(2.0, 3, 1.0))
    assert gauss.mu == pytest.approx(2 * math.sqrt(3) / 2.0, rel=1e-15)
    dpsgd = replace_one_from_add_remove(DPSGD(1.0, 1.0, 1, "add_remove"))
    assert dpsgd.neighboring == "replace_one" and dpsgd.full_batch_mu == 2.0
    with pytest.raises(ValueError, match="delta"):
        replace_one_from_add_remove(ApproxDP(5.0, 0.01))


def test_game_argument_is_checked():
    for call in (
        lambda: for_game(GaussianDP(1.0), "attribute"),
        lambda: success_bound(GaussianDP(1.0), 0.5, game="attribute"),
        lambda: count_bound(GaussianDP(1.0), [0.5, 0.5], 0.9, game="mia"),
        lambda: best_bound(GaussianDP(1.0), 0.5, game="mia"),
    ):
        with pytest.raises(ValueError, match="game must be one of"):
            call()


def test_best_bound_says_where_mmc_and_steinke_apply():
    """In a membership game MMC counts only with k = 2; its k-ary game is a reconstruction game."""
    k4 = best_bound(GaussianDP(1.0), 0.25, game="membership")
    assert "mmc" not in k4.all and "membership" in k4.not_applicable["mmc"]
    assert "mmc" in best_bound(GaussianDP(1.0), 0.25).all
    counts = best_bound(GaussianDP(1.0), np.full(30, 0.25), confidence=0.9, game="membership")
    assert "mmc" not in counts.all and "reconstruction" in counts.not_applicable["mmc"]
    binary = best_bound(DPSGD(1.0, 1.0, 1, "add_remove"), np.full(30, 0.5), confidence=0.9, game="membership")
    assert {"ours", "mmc"} <= set(binary.all) and "steinke" in binary.not_applicable
    assert binary.as_dict()["game"] == "membership"
    # MMC itself, given the add/remove profile directly, is the membership (k = 2) number
    assert prior_work.mmc_bound(DPSGD(1.0, 1.0, 1, "add_remove"), 0.5) == pytest.approx(Phi(0.5), abs=1e-9)


def test_comparator_box_refuses_steinke_counts():
    """Steinke et al.'s one-run count is beaten by exact DP mechanisms (issue 13): refused in one sentence."""
    from stages.bound.comparator import ComparatorBound
    from stages.metric import Exact
    from stages.prior.uniform import UniformPrior

    prior, guesses = UniformPrior(n_targets=30, domain_size=2), np.zeros((30, 1), int)
    with pytest.raises(ValueError, match=r"^bound.name=steinke does not apply to this game .*n = 30.*beaten"):
        ComparatorBound("steinke").compute(GaussianDP(1.0), prior, Exact(), guesses, [0.5])
    one = UniformPrior(n_targets=1, domain_size=2)
    assert ComparatorBound("steinke").compute(GaussianDP(1.0), one, Exact(), np.zeros((1, 1), int), [0.5]) is not None


@pytest.mark.parametrize("name", ["mmc"])
def test_comparator_box_plays_a_reconstruction_game(name):
    """The comparator box (the pipeline's games replace records) gives an add/remove DP-SGD run the
    counts of its replace-one accounting: the add/remove numbers were below what a Bayes attacker gets."""
    from stages.bound.comparator import ComparatorBound
    from stages.metric import Exact
    from stages.prior.uniform import UniformPrior

    prior, guesses = UniformPrior(n_targets=30, domain_size=2), np.zeros((30, 1), int)
    box = ComparatorBound(name)
    add_remove = box.compute(DPSGD(1.0, 1.0, 1, "add_remove"), prior, Exact(), guesses, [0.5, 0.95])
    replace_one = box.compute(DPSGD(1.0, 1.0, 1, "replace_one"), prior, Exact(), guesses, [0.5, 0.95])
    assert add_remove == replace_one
