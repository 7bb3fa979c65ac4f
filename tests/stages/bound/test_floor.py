"""The bracket's lower end (stages/bound/floor.py, THEORY.md section 11): a real mechanism with the profile and a real
attack on it. Checked here: its mechanisms meet their profiles (exactly, for (eps, delta)-DP; by construction and by
simulation for mu-GDP), its successes are what those mechanisms give (exact laws, Monte Carlo), it equals the exact
one-target worst case where that is known (two-valued priors: riskcal, the exact LP), and no theorem's count is ever
below it (a count below a real mechanism's would be a false bound)."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import lp_oracle
import numpy as np
import pytest

from stages.bound import tails
from stages.bound.accountants import DeltaTable
from stages.bound.floor import (MAX_CLASSES, floor_counts, floor_mechanism, floor_mixture_counts, floor_success,
                                floor_successes, rr_epsilon)
from stages.bound.profiles import ApproxDP, DPSGD, GaussianDP, PureDP
from stages.bound.theorems import count_bounds, success_bound
from stages.bound.whole_prior import Distributions

ZIPF10 = lp_oracle.zipf_prior(10, 1.84)


# ---- the exact one-target worst case where it is known --------------------------------------------------------------
@pytest.mark.parametrize("mu", (0.268, 0.5, 1.0, 2.0, 3.0))
def test_two_valued_priors_close_the_bracket_under_gdp(mu):
    """On (a, 1 - a) the floor is the exact worst case: riskcal's 1 - Bayes risk to 1e-9, and the whole-prior bound
    (an upper bound) within 1e-6 of it and never below it."""
    riskcal = pytest.importorskip("riskcal")
    from riskcal import analysis  # noqa: F401

    for a in (0.5, 0.55, 0.7, 0.9, 0.99):
        lo, m = floor_success(GaussianDP(mu), [a, 1 - a])
        ref = 1.0 - float(riskcal.analysis.get_bayes_risk_from_gdp(mu, a))
        assert m == (1 if lo > a else 0)
        assert lo == pytest.approx(ref, abs=1e-9), (mu, a)
        up = success_bound(GaussianDP(mu), distribution=[a, 1 - a])
        assert lo <= up + 1e-12 and up - lo < 1e-6, (mu, a, lo, up)


@pytest.mark.parametrize("eps, delta", [(0.5, 0.0), (1.0, 0.0), (1.0, 0.01), (2.0, 1e-3), (0.1, 0.05)])
@pytest.mark.parametrize("prior", [(0.7, 0.3), (0.55, 0.45), (0.9, 0.1), (0.6, 0.25, 0.15), (0.5, 0.2, 0.2, 0.1)])
def test_never_above_the_exact_worst_case_and_equal_on_two_values(eps, delta, prior):
    """n = 1 against the LP over every (eps, delta)-DP mechanism: never above it, equal (1e-7) on two values."""
    exact, _ = lp_oracle.worst_case_success(1, len(prior), prior, 1, [(eps, delta)])
    lo, _ = floor_success(ApproxDP(eps, delta), prior)
    assert lo <= exact + 1e-8, (eps, delta, prior, lo, exact)
    if len(prior) == 2:
        assert lo == pytest.approx(exact, abs=1e-7)


@pytest.mark.parametrize("mu", (0.268, 0.5, 1.0, 2.0))
@pytest.mark.parametrize("prior", [ZIPF10, lp_oracle.zipf_prior(5, 1.0), (0.6, 0.25, 0.15), (0.4, 0.3, 0.2, 0.1)])
def test_gdp_between_the_simplex_mechanism_and_the_whole_prior_bound(mu, prior):
    """k values under mu-GDP: at least the full simplex mechanism of the oracle (an independent implementation, one
    member of the family), never above the whole-prior bound."""
    lo, _ = floor_success(GaussianDP(mu), prior)
    assert lo >= lp_oracle.gaussian_simplex_success(mu, prior) - 1e-9
    assert lo >= max(prior) - 1e-12
    assert lo <= success_bound(GaussianDP(mu), distribution=list(prior)) + 1e-12


# ---- the mechanisms are real, and give what the floor says ----------------------------------------------------------
def _rr_component(prior, m, eps, delta):
    """One target's (eps, delta) class mechanism in Fractions: {value: {output: probability}} and the MAP guess of
    each output. Its e^-eps is a rational upper bound, so its ratios are at most the oracle's lower bound on e^eps."""
    order = sorted(range(len(prior)), key=lambda x: -prior[x])
    cls = {x: (order.index(x) if order.index(x) < m else m) for x in range(len(prior))}
    value_of = {c: order[c] for c in range(m + 1)}  # a class's guess: its value, or the likeliest of "rest"
    r = 1 / lp_oracle._exp_lower(eps)  # >= e^-eps
    d = Fraction(str(delta))  # the decimal, as the oracle reads its constraints
    right, wrong = 1 / (1 + m * r), r / (1 + m * r)
    rows = {}
    for x in range(len(prior)):
        row = {("rr", c): (1 - d) * (right if c == cls[x] else wrong) for c in range(m + 1)}
        if d:
            row[("reveal", cls[x])] = d
        rows[x] = row
    w = [Fraction(prior[value_of[c]]) for c in range(m + 1)]
    guess = {}
    for kind, c in {o for row in rows.values() for o in row}:
        if kind == "reveal":
            guess[(kind, c)] = value_of[c]
        else:  # posterior of class z's guess: w_z (right if z = c else wrong)
            guess[(kind, c)] = value_of[max(range(m + 1), key=lambda z: (w[z] * (right if z == c else wrong), -z))]
    return rows, guess


@pytest.mark.parametrize("eps, delta", [(1.0, 0.0), (1.0, 0.01), (2.0, 0.001)])
@pytest.mark.parametrize("prior", [(0.7, 0.3), (0.6, 0.25, 0.15)])
def test_the_randomized_response_product_is_dp_and_its_law_is_the_floors(eps, delta, prior):
    """n = 2: the product of two class mechanisms (the floor's best m for the prior) meets (eps, delta)-DP exactly
    (every neighbour pair, in Fractions), and Pr[N >= v] of its MAP guesses is the floor's Poisson-binomial tail."""
    _, m = floor_success(ApproxDP(eps, delta), prior)
    m = max(m, 1)
    rows, guess = _rr_component(prior, m, eps, delta)
    raw, guessed = {}, {}
    for x in itertools.product(range(len(prior)), repeat=2):
        raw[x] = {(o1, o2): p1 * p2 for o1, p1 in rows[x[0]].items() for o2, p2 in rows[x[1]].items()}
        g = {}
        for (o1, o2), p in raw[x].items():
            key = (guess[o1], guess[o2])
            g[key] = g.get(key, Fraction(0)) + p
        guessed[x] = g
    assert lp_oracle.check_mechanism(raw, [(eps, delta)])
    succ, _ = floor_successes(ApproxDP(eps, delta), [prior, prior])
    law = tails.distribution_grouped(succ, np.array([2])).dense()
    for v in (1, 2):
        exact = float(lp_oracle.success_probability(guessed, prior, v))
        assert exact == pytest.approx(float(law[v:].sum()), abs=1e-9), v
        assert exact <= lp_oracle.worst_case_success(2, len(prior), prior, v, [(eps, delta)])[0] + 1e-8


def test_the_gaussian_simplex_mechanism_by_simulation():
    """mu-GDP on a ternary prior: the class mechanism with the floor's m, simulated (vertices at distance mu, so
    mu-GDP; 400,000 draws, seed 0), gives the floor's success within 5 standard errors."""
    mu, prior = 1.0, np.array([0.6, 0.25, 0.15])
    lo, m = floor_success(GaussianDP(mu), prior)
    assert m == 2
    rng = np.random.default_rng(0)
    vertices = mu / math.sqrt(2.0) * np.eye(3)  # |e_a - e_b| = sqrt(2): edge mu
    assert np.allclose([np.linalg.norm(vertices[a] - vertices[b]) for a, b in ((0, 1), (0, 2), (1, 2))], mu)
    draws = 400_000
    x = rng.choice(3, size=draws, p=prior)
    y = vertices[x] + rng.standard_normal((draws, 3))
    score = np.log(prior)[None, :] - 0.5 * ((y[:, None, :] - vertices[None, :, :]) ** 2).sum(axis=2)
    hit = float(np.mean(np.argmax(score, axis=1) == x))
    assert abs(hit - lo) < 5 * math.sqrt(lo * (1 - lo) / draws), (hit, lo)


def test_classes_beyond_the_head_merge_into_rest():
    """Zipf over 10 values: the best m is found among 1 .. 9, and MAX_CLASSES caps the classes on larger domains
    (a 1,000-value Zipf prior is read through its 16 likeliest values, and still beats the prior-only guess)."""
    lo, m = floor_success(GaussianDP(2.0), ZIPF10)
    assert 1 <= m <= 9 and lo > ZIPF10[0] + 0.1
    big = np.arange(1, 1001, dtype=float) ** -1.1
    big /= big.sum()
    lo, m = floor_success(GaussianDP(2.0), big)
    assert m <= MAX_CLASSES - 1 and lo > big[0]


# ---- any other profile: randomized response certified below it ----------------------------------------------------
DPSGD_PROFILES = [DPSGD(1.0, 0.01, 100), DPSGD(0.8, 0.05, 1000), DPSGD(1.0, 0.01, 100, neighboring="add_remove")]


@pytest.mark.parametrize("profile", [
    # 1,000 steps: its accountant's curve alone ~8 s, so in the slow tier only (the fast tier samples the others)
    pytest.param(profile, id=repr(profile), marks=[pytest.mark.slow] if profile.steps >= 1000 else [])
    for profile in DPSGD_PROFILES])
@pytest.mark.parametrize("classes", (2, 16))
def test_randomized_response_meets_any_profile_and_is_nearly_the_largest(profile, classes):
    """rr_epsilon's eps0: randomized response's delta_RR(eps) is at most the (replace-one) profile's delta(eps) at
    50,000 points of [0, eps0] it was not certified on (an independent check of the grid argument), and 0.5% more
    eps0 breaks the profile somewhere (the certificate loses little)."""
    eps0 = rr_epsilon(profile, classes)
    replace = profile.replace_one()
    m = classes - 1
    rr = lambda e, at: -np.expm1(np.minimum(e - at, 0.0)) / (1.0 + m * math.exp(-at))
    eps = np.sort(np.random.default_rng(classes).uniform(0.0, eps0, 50_000))
    assert np.all(rr(eps, eps0) <= replace.delta(eps) * (1 + 1e-9) + 1e-15)
    grid = np.linspace(0.0, 1.005 * eps0, 20_001)
    assert np.any(rr(grid, 1.005 * eps0) > replace.delta(grid)), eps0
    # more classes spread the same probability: a larger eps0 meets the profile
    assert rr_epsilon(profile, classes + 1) >= eps0


def test_randomized_response_on_known_profiles():
    """On an eps-DP profile read as a delta table (the generic path) eps0 is eps less one grid step; on mu-GDP it is
    the two-class randomized response with delta(0) = tanh(eps0 / 2) where the Gaussian's curve binds first, within the
    grid's step; the floor names the member of its family it used."""
    table = DeltaTable([(0.0, 0.5), (0.5, 0.2), (1.0, 0.0)])  # the profile that three (eps, delta) pairs imply
    assert rr_epsilon(PureDP(1.0)) == pytest.approx(1.0, abs=1.1e-3) and rr_epsilon(PureDP(1.0)) <= 1.0
    e0 = rr_epsilon(GaussianDP(1.0))
    assert math.tanh(e0 / 2) <= GaussianDP(1.0).delta(0.0) and e0 == pytest.approx(0.8063, abs=2e-3)
    assert 0 < rr_epsilon(table) <= 1.0
    gdp = floor_mechanism(GaussianDP(0.5))
    assert "Gaussian simplex" in gdp and "mu = 0.5" in gdp and "randomized response over the m likeliest" in gdp
    assert "Gaussian simplex" in floor_mechanism(DPSGD(2.0, 1.0, 4))  # full batch: exactly mu-GDP, mu = 1
    assert "delta = 1e-05" in floor_mechanism(ApproxDP(1.0, 1e-5))
    label = floor_mechanism(DPSGD(1.0, 0.01, 100))
    assert "eps0 = 0.169" in label and "certified below DPSGD(" in label


@pytest.mark.parametrize("mu", (0.5, 1.0, 2.0))
@pytest.mark.parametrize("k", (3, 10))
def test_uniform_priors_under_gdp_reach_the_one_target_worst_case(mu, k):
    """On a uniform prior over k values, k-ary randomized response at the eps0 where its hockey-stick curve touches
    the Gaussian's reaches MMC's one-target value (the largest a with a + (k - 1) Phi(Phi^-1(a) - mu) <= 1, an upper
    bound on every mu-GDP mechanism), within the grid's step: the Gaussian simplex does not (0.2533 against 0.3290 at
    mu = 1, k = 10), so the floor takes randomized response there."""
    from scipy import optimize, stats

    exact = optimize.brentq(lambda a: a + (k - 1) * stats.norm.cdf(stats.norm.ppf(a) - mu) - 1, 1e-9, 1 - 1e-12)
    lo, m = floor_success(GaussianDP(mu), [1 / k] * k)
    assert exact - 2e-3 < lo <= exact + 1e-12 and m == k - 1, (lo, exact)
    assert lo > lp_oracle.gaussian_simplex_success(mu, [1 / k] * k) + 0.01


def test_the_generic_floor_is_the_randomized_response_products():
    """Under DP-SGD the floor is (m + 1)-ary randomized response at rr_epsilon(profile, m + 1), the best m: on two
    values exactly the two-class mechanism's Bayes success; the count is its Binomial's quantile."""
    prof = DPSGD(1.0, 0.01, 100)
    e0 = rr_epsilon(prof, 2)
    r = 1.0 / (1.0 + math.exp(-e0))  # the true class's probability
    for a in (0.5, 0.7, 0.95):
        s, m = floor_success(prof, [a, 1 - a])
        bayes = a * r + max(a * (1 - r), (1 - a) * r)  # output "0": guess 0; output "1": the larger posterior
        assert s == pytest.approx(bayes, abs=1e-9), a
        assert m == (1 if bayes > a + 1e-12 else 0)
    n = 50
    law = tails.distribution_grouped(np.array([floor_success(prof, [0.7, 0.3])[0]]), np.array([n])).dense()
    tail = np.append(np.cumsum(law[::-1])[::-1], 0.0)
    assert floor_counts(prof, [np.array([0.7, 0.3])] * n, [0.5, 0.95]) == [
        int(np.flatnonzero(tail[1:] <= 1 - c + 1e-12)[0]) for c in (0.5, 0.95)]


# ---- no theorem below a real mechanism ------------------------------------------------------------------------------
def _mixed_binary(n, seed=0):
    p = np.random.default_rng(seed).uniform(0.5, 0.95, n)
    return [np.array([a, 1 - a]) for a in p]


def _floor_cases():
    """Every (n, priors, profile). A case of more than a few seconds alone is in the slow tier only, so the fast tier's
    sample of the test (tests/tiers.py) is drawn among the others: a DP-SGD profile (its accountant's curve, ~7 s) and
    100 distinct priors (a convolution per column of the mixture: 4-5 s, 25 s under DP-SGD)."""
    profiles = [GaussianDP(0.268), GaussianDP(1.0), GaussianDP(2.0), ApproxDP(1.0, 1e-5), PureDP(2.0),
                DPSGD(1.0, 0.01, 100)]
    return [pytest.param(n, priors, profile, id=f"{n}-{priors}-{profile!r}",
                         marks=[pytest.mark.slow] if isinstance(profile, DPSGD) or (n, priors) == (100, "mixed") else [])
            for n in (10, 100) for priors in ("zipf", "binary", "mixed", "uniform10") for profile in profiles]


@pytest.mark.parametrize("n, priors, profile", _floor_cases())
def test_no_count_bound_below_the_floor(profile, priors, n):
    """count_bound's minimum over every theorem (Theorem 4 among them) is never below the floor at 0.05 / 0.5 / 0.95,
    and the floor is never below the prior-only attack's count."""
    dists = {"zipf": [ZIPF10] * n, "binary": [np.array([0.7, 0.3])] * n, "mixed": _mixed_binary(n),
             "uniform10": [np.full(10, 0.1)] * n}[priors]
    levels = [0.05, 0.5, 0.95]
    low = floor_counts(profile, dists, levels)
    up, _ = count_bounds(profile, None, levels, distributions=dists)
    assert all(a <= b for a, b in zip(low, up)), (low, list(up))
    p = np.array([max(d) for d in dists])
    prior_only = tails.distribution_grouped(p, np.ones(n, dtype=np.int64)).dense()
    tail = np.append(np.cumsum(prior_only[::-1])[::-1], 0.0)
    for c, lo in zip(levels, low):
        assert lo >= int(np.flatnonzero(tail[1:] <= 1 - c + 1e-9)[0]), (c, lo)


def test_quickstart_zipf_bracket_at_eps_1():
    """The quickstart's Zipf prior at eps = 1 (mu = 0.268, n = 100): the floor is 52 / 60 / 68 at 0.05 / 0.5 / 0.95
    (the floor's one-target success is 2e-8 above the prior's 0.60233 there: the prior-only attack's Binomial(100,
    0.6023) quantiles)."""
    assert floor_counts(GaussianDP(0.26805), [ZIPF10] * 100, [0.05, 0.5, 0.95]) == [52, 60, 68]


# ---- bad input ------------------------------------------------------------------------------------------------------
def test_refuses_what_it_cannot_build():
    with pytest.raises(ValueError, match=r"floor: profile must be a PrivacyProfile .* got 1.0"):
        floor_counts(1.0, [ZIPF10], [0.95])
    with pytest.raises(ValueError, match=r"confidences .*open interval \(0, 1\)"):
        floor_counts(GaussianDP(1.0), [ZIPF10], [1.0])
    coarse = Distributions.of([np.array([0.7, 0.3]), np.array([0.6, 0.4])] * 20).coarsened(1)
    with pytest.raises(ValueError, match="is not a prior"):
        floor_counts(GaussianDP(1.0), coarse, [0.95])


def test_the_mixture_of_trials_reads_the_mean_law():
    """floor_mixture_counts: one mixture for every trial, its law the mean of the trials' laws: between the trials'
    own floors, equal to them when the trials share a prior, at least the product mechanisms' mean law's quantile,
    refused for trials of different sizes."""
    a, b = [np.array([0.9, 0.1])] * 50, [np.array([0.6, 0.4])] * 50
    mu = GaussianDP(1.0)
    levels = [0.05, 0.5, 0.95]
    mixed = floor_mixture_counts(mu, [a, b], levels)
    lo, hi = floor_counts(mu, b, levels), floor_counts(mu, a, levels)
    assert all(x <= m <= y for x, m, y in zip(lo, mixed, hi))
    sa, sb = floor_success(mu, a[0])[0], floor_success(mu, b[0])[0]
    mean = 0.5 * (tails.distribution_grouped(np.array([sa]), np.array([50])).dense()
                  + tails.distribution_grouped(np.array([sb]), np.array([50])).dense())
    tail = np.append(np.cumsum(mean[::-1])[::-1], 0.0)
    product = [int(np.flatnonzero(tail[1:] <= 1 - c)[0]) for c in levels]
    assert all(m >= p for m, p in zip(mixed, product)) and mixed != product, (mixed, product)
    assert floor_mixture_counts(mu, [a, a], levels) == floor_counts(mu, a, levels)
    with pytest.raises(ValueError, match="same number of targets"):
        floor_mixture_counts(mu, [a, a[:10]], levels)


def test_a_function_given_profile_says_what_its_certificate_assumes():
    """A user's delta(eps) function is read on a grid: the floor's certificate between grid points assumes the curve
    does not rise there (THEORY.md section 11, Lemma 6), and the label says so; a table's curve needs no assumption."""
    import math

    from stages.bound import floor_mechanism, from_delta

    curve = from_delta(lambda e: min(1.0, 0.1 * math.exp(-e)))
    assert "on the assumption that it is non-increasing" in floor_mechanism(curve)
    assert "assumption" not in floor_mechanism(from_delta([(0.5, 1e-3), (1.0, 1e-5)]))
