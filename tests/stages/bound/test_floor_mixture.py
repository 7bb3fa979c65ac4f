"""The floor as a certified mixture of product mechanisms (stages/bound/floor_mixture.py, THEORY.md section 11,
Lemma 7). Checked here from the record alone, with formulas written here: the mixture's hockey-stick curve
sum_j w_j delta_j(eps) stays below the profile at 10^5 random eps, and its count law gives Pr[N >= count] > 1 - c; the
mixture is never below the single product mechanism, never above the exact worst case (LP over every mechanism, n = 2)
nor any theorem's bound, and reaches the issue's targets."""
from __future__ import annotations

import math

import lp_oracle
import numpy as np
import pytest
from scipy import special, stats

from stages.bound.floor import counts_at, floor_counts, floor_mixture, floor_successes, low_tail
from stages.bound.profiles import DPSGD, ApproxDP, GaussianDP, PureDP
from stages.bound.theorems import count_bounds
from stages.bound.whole_prior import Distributions

PII = np.array([0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01])
LEVELS = [0.05, 0.5, 0.95]


def _log_gdp(eps, mu):
    """The mu-GDP curve, in log space (no cancellation)."""
    a = special.log_ndtr(-eps / mu + mu / 2)
    b = eps + special.log_ndtr(-eps / mu - mu / 2)
    return np.exp(a) * -np.expm1(np.minimum(b - a, 0.0))


def _member_curve(kind, params, classes, eps):
    """One per-target class mechanism's curve over its worst pair of classes (both orders)."""
    if kind == "nothing":
        return np.zeros_like(eps)
    if kind == "reveal":
        return np.ones_like(eps)
    if kind == "gaussian_simplex":
        return _log_gdp(eps, params["mu"])
    e0 = params["eps0"]
    rr = np.where(eps < e0, (1 - np.exp(eps - e0)) / (1 + (classes - 1) * math.exp(-e0)), 0.0)
    return rr if kind == "randomized_response" else params["d"] + (1 - params["d"]) * rr


def _component_curve(comp, eps):
    """A component's curve: its worst member's (a product: each target's own member; else one kind, whose fewest
    classes decide)."""
    if comp["kind"] == "product":
        return np.max([_member_curve(m["kind"], m, m["classes"], eps) for m in comp["members"]], axis=0)
    classes = comp["fewest_classes"]
    assert classes == min(min(run) for run in comp["classes"])
    return _member_curve(comp["kind"], comp, classes, eps)


def _tail(comp, n, v):
    """Pr[N >= v] under one component: the Poisson-binomial of its per-prior successes (mean over runs)."""
    out = []
    for succ, counts in zip(comp["success"], comp["targets"]):
        law = np.ones(1)
        for s, k in zip(succ, counts):
            law = np.convolve(law, stats.binom.pmf(np.arange(k + 1), k, min(s, 1.0)))
        out.append(float(law[v:].sum()))
    return float(np.mean(out))


CASES = [(GaussianDP(1.0), "uniform10"), (GaussianDP(4.0), "pii"), (ApproxDP(1.0, 1e-3), "pii"),
         (ApproxDP(0.5, 0.02), "uniform10"), (PureDP(1.0), "mixed"), (DPSGD(1.0, 0.01, 100), "uniform10")]


def _priors(name, n, seed=0):
    if name == "uniform10":
        return [np.full(10, 0.1)] * n
    if name == "pii":
        return [PII] * n
    p = np.random.default_rng(seed).uniform(0.5, 0.95, 3)  # three binary priors, several groups
    return [np.array([p[i % 3], 1 - p[i % 3]]) for i in range(n)]


@pytest.mark.parametrize("profile, prior", CASES, ids=lambda x: repr(x) if not isinstance(x, str) else x)
def test_the_record_meets_the_profile_and_reaches_its_count(profile, prior):
    """From floor_mixture's record only: sum_j w_j delta_j(eps) <= the profile's (replace-one) delta(eps) at 10^5
    random eps in [0, 30] (relative 1e-9), the weights sum to 1, and the components' count laws give
    Pr[N >= count] > 1 - c, at least the single product mechanism's count."""
    n = 60
    dists = _priors(prior, n)
    record = floor_mixture(profile, dists, LEVELS).record()
    replace = profile.replace_one()
    rng = np.random.default_rng(1)
    eps = np.concatenate([rng.uniform(0.0, 30.0, 50_000), np.exp(rng.uniform(-12, math.log(30.0), 50_000))])
    limit = replace.delta(eps)
    succ, _ = floor_successes(profile, dists)
    product = counts_at(low_tail(succ, Distributions.of(dists).counts), LEVELS)
    for (key, mix), c, prod in zip(record.items(), LEVELS, product):
        assert float(key) == c and mix["confidence"] == c
        comps = mix["components"]
        assert abs(sum(x["weight"] for x in comps) - 1.0) < 1e-12 and all(x["weight"] > 0 for x in comps)
        curve = sum(x["weight"] * _component_curve(x, eps) for x in comps)
        assert np.all(curve <= limit * (1 + 1e-9)), (c, float(np.max(curve - limit)))
        v = mix["count"]
        tail = sum(x["weight"] * _tail(x, n, v) for x in comps)
        assert tail > 1 - c and tail == pytest.approx(mix["tail"], abs=1e-9), (c, v, tail)
        assert v >= prod, (c, v, prod)


def test_the_mixture_is_a_coin_over_components():
    """Uniform over 10 under 1-GDP at n = 100: at 0.95 a strong randomized response (eps0 above the one it could use
    alone) with a small weight beside a weak remainder; its count is far above the product's 41 (the issue's
    prototype: 57, the bound 60)."""
    res = floor_mixture(GaussianDP(1.0), [np.full(10, 0.1)] * 100, [0.95])
    mix = res.mixtures[0]
    assert res.counts == [mix["count"]] and mix["count"] >= 56
    strong = [x for x in mix["components"] if x["kind"] == "randomized_response" and x["weight"] < 0.2]
    assert strong and all(x["eps0"] > 1.49 and x["classes"] == [[10]] for x in strong)


@pytest.mark.parametrize("eps, delta", [(1.0, 0.0), (0.5, 0.05), (1.0, 0.01)])
@pytest.mark.parametrize("prior", [(0.5, 0.5), (0.7, 0.3), (0.6, 0.25, 0.15)])
def test_never_above_the_exact_worst_case(eps, delta, prior):
    """n = 2: the mixture's certified Pr[N >= count] is at most the LP over every (eps, delta)-DP mechanism's."""
    res = floor_mixture(ApproxDP(eps, delta), [np.array(prior)] * 2, LEVELS)
    for mix in res.mixtures:
        if mix["count"] == 0:
            continue
        exact, _ = lp_oracle.worst_case_success(2, len(prior), prior, mix["count"], [(eps, delta)])
        assert mix["tail"] <= exact + 1e-8, (mix, exact)


def test_the_issues_targets():
    """Uniform over 100 at mu = 4, n = 1000, 0.95: at least 860 (issue 41; the 16-class product read 166); the PII-like
    prior at mu = 1: at least 616."""
    assert floor_counts(GaussianDP(4.0), [np.full(100, 0.01)] * 1000, [0.95])[0] >= 860
    assert floor_counts(GaussianDP(1.0), [PII] * 1000, [0.95])[0] >= 616


def _random_case(rng):
    kind = rng.integers(4)
    profile = [GaussianDP(float(rng.uniform(0.3, 3.0))), ApproxDP(float(rng.uniform(0.2, 2.0)), float(10 ** rng.uniform(-6, -2))),
               PureDP(float(rng.uniform(0.2, 2.0))), GaussianDP(float(rng.uniform(0.3, 3.0)))][kind]
    k = int(rng.integers(2, 8))
    shape = rng.choice(["uniform", "dirichlet"])
    prior = np.full(k, 1 / k) if shape == "uniform" else rng.dirichlet(np.ones(k) * 0.7)
    n = int(rng.integers(2, 40))
    return profile, [prior] * n


def _check_below_bound(seed):
    profile, dists = _random_case(np.random.default_rng(seed))
    low = floor_counts(profile, dists, LEVELS)
    up, _ = count_bounds(profile, None, LEVELS, distributions=dists)
    assert all(a <= b for a, b in zip(low, up)), (seed, profile, dists[0], len(dists), low, list(up))


@pytest.mark.parametrize("seed", range(3))
def test_never_above_the_bound_random_cases(seed):
    """A random profile, prior and n: count_bounds (the minimum over every theorem) is never below the floor."""
    _check_below_bound(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 40))
def test_never_above_the_bound_more_random_cases(seed):
    _check_below_bound(seed)
