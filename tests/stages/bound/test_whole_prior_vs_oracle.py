"""The whole-prior theorem (THEORY.md Theorem 3; stages/bound/whole_prior.py) against the LP oracle (issue 21, item 3).

Grid: ``lp_oracle.whole_prior_grid()`` (uniform, skewed, Zipf and made-up conditional priors over 2..10 values at
n = 1, 2..5 values at n = 2; one exact guess).

* (eps, delta)-DP and pure eps-DP, where the oracle is the EXACT worst case over all mechanisms: the library's
  whole-prior bounds (``success_bound(..., distribution=)``, ``tail_bound`` / ``count_bounds`` with
  ``distributions=``, Theorem 3 on its own, and ``ExcessCurve`` at several thresholds q against the exact
  one-target excess max E[(rho - q)_+]) are never below it (TOL), and at n = 1 equal it (EQ_TOL).
* mu-GDP: the oracle imposes the profile at finitely many eps, so it is only an UPPER bound on the truth and
  "library below oracle" is no violation. The library is instead checked against CERTIFIED mu-GDP mechanisms:
  the Gaussian mechanism on two values (closed form, and riskcal's Bayes risk as an outside reference), the
  regular-simplex Gaussian mechanism on k values (k points at pairwise distance mu, unit isotropic noise; its
  Bayes success is a 1-d integral, ``lp_oracle.gaussian_simplex_success``, returned as a lower bound with the
  quadrature's error subtracted), and their coordinate-wise product at n = 2. The gap to the finite-eps oracle is
  printed (run with -s).

Cases marked ``slow`` in the grid run under ``@pytest.mark.slow``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import lp_oracle as L
from stages.bound import count_bound, success_bound, tail_bound
from stages.bound import whole_prior as W
from stages.bound.profiles import DPSGD, ApproxDP, GaussianDP, PureDP
from stages.bound.search import whole_prior_tail
from stages.bound.theorems import count_bounds

GRID = L.whole_prior_grid()
#: How far a certified library value may sit below the exact LP optimum (the LP is solved to 1e-10).
TOL = 1e-7
#: n = 1 and the exact kinds: the library equals the LP to this.
EQ_TOL = 1e-6
#: A library value may sit below a certified mechanism's success by float rounding only.
MECH_TOL = 1e-9
CONFIDENCES = (0.05, 0.5, 0.8, 0.95)


def _params(cases):
    return [pytest.param(c, id=c["name"], marks=(pytest.mark.slow,) if c["slow"] else ()) for c in cases]


def _select(n, kinds):
    return [c for c in GRID if c["n"] == n and c["kind"] in kinds]


def profile_of(case):
    if case["kind"] == "gdp":
        return GaussianDP(case["mu"])
    (eps, delta), = case["constraints"]
    return PureDP(eps) if case["kind"] == "pure" else ApproxDP(eps, delta)


def dists_of(case):
    return [np.asarray(pr, dtype=float) for pr in case["priors"]]


def oracle_at(case, v):
    return L.oracle_value({**case, "v": v})


def oracle_count(case, confidence):
    """The smallest c with oracle Pr[>= c + 1 successes] <= 1 - confidence (the exact count)."""
    for c in range(case["n"]):
        if oracle_at(case, c + 1) <= 1 - confidence:
            return c
    return case["n"]


def _report(kind, case, library, oracle):
    print(f"{kind:18s} {case['name']:60s} library {library:.7f} oracle {oracle:.7f} gap {library - oracle:+.2e}")


# --------------------------------------------------------------------------------------------
# the new oracle pieces on their own
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prior,cons", [((0.7, 0.3), [(1.0, 0.01)]), (L.zipf_prior(5, 1.5), [(0.5, 0.0)]),
                                        (L.zipf_prior(4, 1.0), L.gdp_constraints(1.0, 8))])
def test_threshold_lp_at_zero_is_the_success_lp(prior, cons):
    d = len(prior)
    assert L.threshold_excess(d, prior, 0.0, cons)[0] == pytest.approx(
        L.worst_case_success(1, d, prior, 1, cons)[0], abs=1e-9)


@pytest.mark.parametrize("q", [0.0, 0.3, 0.6, 0.8, 1.0])
def test_threshold_lp_mechanism_is_dp_and_attains_its_value(q):
    """The LP's mechanism meets the constraint (checked in fractions), and its own E[(rho - q)_+] (recomputed
    from the matrix, with the Bayes-optimal guess at every output) is >= the LP value."""
    prior, cons = L.zipf_prior(4, 1.5), [(1.0, 0.02)]
    value, mech = L.threshold_excess(4, prior, q, cons)
    assert L.dp_violation(mech, cons) <= 1e-8
    joint = np.asarray(prior)[:, None] * mech.matrix  # Pr[X = x, o]
    excess = float(np.sum(np.maximum(0.0, joint.max(axis=0) - q * joint.sum(axis=0))))
    assert excess >= value - 1e-9
    # phi is convex, non-increasing, 0 at q = 1, and phi(q) >= phi(0) - q
    phi0 = L.threshold_excess(4, prior, 0.0, cons)[0]
    assert phi0 - q - 1e-9 <= value <= phi0 + 1e-9
    if q == 1.0:
        assert value == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("mu,a", [(0.5, 0.7), (1.0, 0.5), (2.0, 0.9), (1.0, 0.99)])
def test_gaussian_binary_excess_matches_quadrature(mu, a):
    def integrand(y, q):
        A, B = a * stats.norm.pdf(y), (1 - a) * stats.norm.pdf(y - mu)
        return max(0.0, max(A, B) - q * (A + B))

    for q in (0.0, 0.2, 0.5, 0.7, 0.95):
        ref = integrate.quad(integrand, -12, 12 + mu, args=(q,), points=[0, mu / 2, mu], limit=200,
                             epsabs=1e-12)[0]
        assert L.gaussian_binary_excess(mu, a, q) == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("mu", [0.268, 1.0, 2.0])
def test_gaussian_simplex_success(mu):
    """k = 2: a Phi(b) + (1 - a) Phi(b'), the Gaussian trade-off's Bayes success; k = 3 against a Monte Carlo
    of the simplex mechanism itself (5 standard errors); and, being a certified mu-GDP mechanism, never above
    the finite-eps GDP relaxation."""
    a = 0.7
    b0 = mu / 2 + math.log(a / (1 - a)) / mu
    closed = a * stats.norm.cdf(b0) + (1 - a) * stats.norm.cdf(mu - b0)
    assert L.gaussian_simplex_success(mu, [a, 1 - a]) == pytest.approx(closed, abs=1e-10)
    prior = np.array([0.5, 0.3, 0.2])
    verts = mu * np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])  # pairwise distance mu
    rng = np.random.default_rng(0)
    m = 200_000
    x = rng.choice(3, size=m, p=prior)
    y = verts[x] + rng.standard_normal((m, 2))
    logpost = np.log(prior)[None, :] - 0.5 * ((y[:, None, :] - verts[None, :, :]) ** 2).sum(-1)
    post = np.exp(logpost - logpost.max(axis=1, keepdims=True))
    rho = post.max(axis=1) / post.sum(axis=1)  # E[max posterior] = the MAP success
    se = rho.std() / math.sqrt(m)
    assert abs(L.gaussian_simplex_success(mu, prior) - rho.mean()) <= 5 * se
    for pr in ([a, 1 - a], prior, L.zipf_prior(4, 1.5)):
        cons = L.gdp_constraints(mu, 12)
        assert L.gaussian_simplex_success(mu, pr) <= L.worst_case_success(1, len(pr), list(pr), 1, cons)[0] + 1e-9


def test_grid_shape():
    """The grid covers what issue 21 asks: up to 10 values at n = 1, Zipf exponents 1.0-2.0, every kind."""
    ones = [c for c in GRID if c["n"] == 1]
    assert max(c["domain"] for c in ones) == 10
    assert {c["family"] for c in ones} == {"uniform", "skewed", "zipf", "conditional"}
    assert {c["kind"] for c in GRID if c["n"] == 2} == {"approx", "pure", "gdp"}
    assert max(c["domain"] for c in GRID if c["n"] == 2) >= 4
    zipf = [lb for lb in L.WHOLE_PRIORS["zipf"] if lb.startswith("Z10")]
    assert {"Z10^1", "Z10^2"} <= set(zipf) and len(zipf) >= 4


# --------------------------------------------------------------------------------------------
# (eps, delta)-DP and pure DP: the oracle is exact
# --------------------------------------------------------------------------------------------
#: n = 1 cases where the library is valid but not equal to the exact LP (gap > EQ_TOL), by case name.
#: Empty: success_bound / tail_bound / count_bound equal the exact LP on every n = 1 case of the grid.
KNOWN_N1_GAPS: dict[str, str] = {}


def excess_expected_exact(case, q) -> bool:
    """Where ExcessCurve is expected to equal the exact one-target excess: at q = 0 (the worst-case success),
    and at every q for two-valued and uniform priors. Elsewhere (three or more distinct values, q > 0) the
    relaxation is valid but measured up to ~0.05 above the exact LP (e.g. Zipf(10, 2) at (2, 1e-5)-DP,
    q = p/2: 0.4353 vs 0.3890): only validity is asserted and the gap is printed."""
    nz = [x for x in case["priors"][0] if x > 0]
    return q == 0.0 or len(nz) == 2 or max(nz) - min(nz) < 1e-12


def _equal_or_known(case, library, oracle, what, expect_equal=True):
    assert library >= oracle - TOL, (what, case["name"], library, oracle)
    if abs(library - oracle) > EQ_TOL:
        _report(what + (" NOT EQUAL" if expect_equal else " (relaxed)"), case, library, oracle)
        assert not expect_equal or case["name"] in KNOWN_N1_GAPS, (what, case["name"], library, oracle,
                                                                    library - oracle)


@pytest.mark.parametrize("case", _params(_select(1, ("approx", "pure"))))
def test_one_target_equals_the_exact_lp(case):
    profile, (pr,) = profile_of(case), dists_of(case)
    worst = L.oracle_value(case)
    s = success_bound(profile, distribution=pr)
    _equal_or_known(case, s, worst, "success_bound")
    t = tail_bound(profile, None, 1, distributions=[pr])
    _equal_or_known(case, t, worst, "tail_bound")
    # counts: equal to the exact count, except where 1 - confidence is within EQ_TOL of the worst case
    counts = count_bound(profile, None, list(CONFIDENCES), distributions=[pr])
    for conf, c in zip(CONFIDENCES, np.atleast_1d(counts)):
        exact = oracle_count(case, conf)
        assert c >= exact, (case["name"], conf, c, exact)
        if abs(worst - (1 - conf)) > EQ_TOL:
            assert c == exact or case["name"] in KNOWN_N1_GAPS, (case["name"], conf, c, exact)


@pytest.mark.parametrize("case", _params(_select(1, ("approx", "pure"))))
def test_excess_curve_equals_the_exact_threshold_lp(case):
    """ExcessCurve(q) >= max over all mechanisms of E[(rho - q)_+] (exact LP with a "not counted" output), with
    equality where ``excess_expected_exact``."""
    curve = W.ExcessCurve(profile_of(case), W.prior_shape(dists_of(case)[0]))
    for q in case["thresholds"]:
        _equal_or_known(case, curve(q), L.threshold_value(case, q), f"ExcessCurve(q={q:.4g})",
                        expect_equal=excess_expected_exact(case, q))


@pytest.mark.parametrize("case", _params(_select(2, ("approx", "pure"))))
def test_two_targets_never_below_the_exact_lp(case):
    profile, dists, v = profile_of(case), dists_of(case), case["v"]
    worst = L.oracle_value(case)
    default = tail_bound(profile, None, v, distributions=dists)
    assert default >= worst - TOL, (case["name"], default, worst)
    alone, _ = whole_prior_tail(profile, W.Distributions.of(dists), v)  # Theorem 3 on its own
    assert alone >= worst - TOL, (case["name"], alone, worst)
    _report("tail n=2", case, default, worst)
    if v != 1:
        return  # the counts are checked once per prior and privacy
    # counts of every theorem at the usual confidences and just past each worst case
    confs = list(CONFIDENCES) + [1 - (oracle_at(case, u) - EQ_TOL) for u in range(1, case["n"] + 1)]
    counts, by = count_bounds(profile, None, confs, distributions=dists)
    for name, cs in {"min": counts, **by}.items():
        for conf, c in zip(confs, np.atleast_1d(cs)):
            assert c >= oracle_count(case, conf), (case["name"], name, conf, c, oracle_count(case, conf))


# --------------------------------------------------------------------------------------------
# mu-GDP: certified mechanisms from below, the finite-eps relaxation reported
# --------------------------------------------------------------------------------------------
def certified_success(case) -> float:
    """Pr[>= v successes] of the certified mu-GDP (product) simplex Gaussian mechanism with MAP guesses."""
    s = [L.gaussian_simplex_success(case["mu"], pr) for pr in case["priors"]]
    if case["n"] == 1:
        return s[0]
    s1, s2 = s
    return 1 - (1 - s1) * (1 - s2) if case["v"] == 1 else s1 * s2


@pytest.mark.parametrize("case", _params(_select(1, ("gdp",))))
def test_gdp_one_target_above_certified_mechanisms(case):
    profile, (pr,) = profile_of(case), dists_of(case)
    lib = success_bound(profile, distribution=pr)
    mech = certified_success(case)
    assert lib >= mech - MECH_TOL, (case["name"], lib, mech)
    assert tail_bound(profile, None, 1, distributions=[pr]) >= mech - MECH_TOL
    _report("GDP vs relaxation", case, lib, L.oracle_value(case))
    curve = W.ExcessCurve(profile, W.prior_shape(pr))
    nz = pr[pr > 0]
    for q in case["thresholds"] or (0.0, float(nz.max())):
        below = (L.gaussian_binary_excess(case["mu"], nz[0], q) if nz.size == 2
                 else max(0.0, mech - q))  # E[(rho - q)_+] >= E[rho] - q
        assert curve(q) >= below - MECH_TOL, (case["name"], q, curve(q), below)
        if case["thresholds"]:
            print(f"{'  excess q=' + format(q, '.3f'):18s} {case['name']:60s} library {curve(q):.7f} "
                  f"relaxation {L.threshold_value(case, q):.7f}")


@pytest.mark.parametrize("case", _params(_select(2, ("gdp",))))
def test_gdp_two_targets_above_certified_mechanisms(case):
    profile, dists, v = profile_of(case), dists_of(case), case["v"]
    mech = certified_success(case)
    default = tail_bound(profile, None, v, distributions=dists)
    alone, _ = whole_prior_tail(profile, W.Distributions.of(dists), v)
    assert min(default, alone) >= mech - MECH_TOL, (case["name"], default, alone, mech)
    _report("GDP n=2 vs relax.", case, default, L.oracle_value(case))
    if v == 1:
        s = [L.gaussian_simplex_success(case["mu"], pr) for pr in case["priors"]]
        tails = {1: 1 - (1 - s[0]) * (1 - s[1]), 2: s[0] * s[1]}
        confs = list(CONFIDENCES) + [1 - (tails[u] - 1e-6) for u in (1, 2)]
        counts, by = count_bounds(profile, None, confs, distributions=dists)
        for name, cs in {"min": counts, **by}.items():
            for conf, c in zip(confs, np.atleast_1d(cs)):
                if c < 2:
                    assert tails[c + 1] <= 1 - conf + MECH_TOL, (case["name"], name, conf, c, tails)


# --------------------------------------------------------------------------------------------
# riskcal (a test-only outside reference): the exact one-target worst case for two-valued priors
# --------------------------------------------------------------------------------------------
RISKCAL_A = (0.5, 0.55, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
RISKCAL_MU = (0.268, 0.5, 1.0, 2.0, 3.0)


@pytest.mark.parametrize("mu", RISKCAL_MU)
def test_two_valued_priors_equal_riskcal(mu):
    """success_bound(GaussianDP(mu), distribution=(a, 1 - a)) = 1 - riskcal's Bayes risk (Kulynych et al. 2025),
    to 1e-6, and never below it (beyond 1e-12 of float rounding)."""
    riskcal = pytest.importorskip("riskcal")
    from riskcal import analysis  # noqa: F401  (riskcal.analysis is a submodule)

    for a in RISKCAL_A:
        ref = 1.0 - float(riskcal.analysis.get_bayes_risk_from_gdp(mu, a))
        lib = success_bound(GaussianDP(mu), distribution=[a, 1 - a])
        assert lib >= ref - 1e-12, (mu, a, lib, ref)
        assert lib == pytest.approx(ref, abs=1e-6), (mu, a, lib, ref)


# --------------------------------------------------------------------------------------------
# Two values in closed form (issue 40, item 3): whole_prior.two_valued_success replaces the LP at n = 1
# --------------------------------------------------------------------------------------------
def _random_two_valued(seed: int, count: int):
    """(mu, a) pairs: mu log-uniform on [0.05, 5], a uniform on [0.5, 0.999] (either value may be the likelier)."""
    rng = np.random.default_rng(seed)
    mus = np.exp(rng.uniform(math.log(0.05), math.log(5.0), count))
    a = rng.uniform(0.5, 0.999, count)
    flip = rng.random(count) < 0.5
    return [(float(m), float(1 - x if f else x)) for m, x, f in zip(mus, a, flip)]


def test_two_valued_closed_form_equals_riskcal_on_random_cases():
    """44 seeded (mu, pi): the library's one-target whole-prior value (closed form) and success_bound equal
    riskcal's 1 - Bayes risk to 1e-6 and are never below it (beyond riskcal's own float rounding)."""
    riskcal = pytest.importorskip("riskcal")
    from riskcal import analysis  # noqa: F401

    for mu, a in _random_two_valued(40, 44):
        ref = 1.0 - float(riskcal.analysis.get_bayes_risk_from_gdp(mu, max(a, 1 - a)))
        closed = W.whole_prior_success(GaussianDP(mu), W.prior_shape([a, 1 - a]))
        assert ref - 1e-12 <= closed <= ref + 1e-6, (mu, a, closed, ref)
        assert closed >= ref + 0.5 * W._CLOSED_FORM_MARGIN, (mu, a)  # rounded up, not merely equal
        lib = success_bound(GaussianDP(mu), distribution=[a, 1 - a])
        assert ref - 1e-12 <= lib <= ref + 1e-6, (mu, a, lib, ref)


@pytest.mark.parametrize("profile", [GaussianDP(0.3), GaussianDP(1.0), GaussianDP(3.0), ApproxDP(1.0, 1e-5),
                                     ApproxDP(0.3, 0.05), PureDP(1.0), PureDP(0.2)], ids=repr)
def test_two_valued_closed_form_against_the_lp_it_replaces(profile):
    """The closed form against the relaxation's LP (closed_form=False, the value before issue 40): never below it by
    more than the LP's own gap to the exact value (1.4e-7 measured on GDP; 0 for (eps, delta)), and at most 1e-6
    above it."""
    for a in (0.5, 0.52, 0.6, 0.75, 0.9, 0.99, 0.9999):
        shape = W.prior_shape([1 - a, a])
        closed = W.whole_prior_success(profile, shape)
        lp = W.whole_prior_success(profile, shape, closed_form=False)
        gap = 1e-6 if profile.gdp_mu() is not None else 1e-9
        assert lp - gap <= closed <= lp + 1e-6, (a, closed, lp)
    # a prior summing to 1 + 8e-7 (prior_shape accepts 1e-6): the closed form reads both probabilities as given
    shape = W.prior_shape([0.7, 0.3000008])
    lp = W.whole_prior_success(profile, shape, closed_form=False)
    gap = 1e-6 if profile.gdp_mu() is not None else 1e-9
    assert lp - gap <= W.whole_prior_success(profile, shape) <= lp + 1e-6
    more = W.whole_prior_success(profile, shape) - W.two_valued_success(profile, 0.7)
    assert more > 0 if profile.gdp_mu() is not None else more >= 0  # (eps-DP with eps < eps*: delta(eps*) = 0)


@pytest.mark.parametrize("eps,delta", [(0.0, 0.1), (1.0, 0.01), (0.5, 0.05), (2.0, 1e-3), (1.0, 0.0), (3.0, 0.0)])
def test_two_valued_closed_form_never_below_the_exact_lp(eps, delta):
    """Against the exact LP over every (eps, delta)-DP mechanism on two values: never below it, equal to 1e-6."""
    profile = PureDP(eps) if delta == 0.0 else ApproxDP(max(eps, 1e-12), delta)
    for a in (0.5, 0.55, 0.7, 0.85, 0.95):
        exact, _ = L.worst_case_success(1, 2, [a, 1 - a], 1, [(eps, delta)])
        closed = W.two_valued_success(profile, a)
        assert exact - TOL <= closed <= exact + EQ_TOL, (a, closed, exact)


def test_two_valued_closed_form_on_a_privacy_loss_distribution():
    """Full-batch DP-SGD (mu-GDP in closed form) equals GaussianDP; a subsampled run reads delta_upper's table (a
    valid upper bound on its PLD's delta) and is never below p + (1 - p) delta(eps*) from the PLD itself."""
    full = DPSGD(2.0, 1.0, 4)
    for a in (0.5, 0.8):
        assert W.two_valued_success(full, a) == W.two_valued_success(GaussianDP(full.gdp_mu()), a)
    run = DPSGD(1.0, 0.05, 20)
    for a in (0.5, 0.6, 0.9):
        e = math.log(a / (1 - a))
        value = W.two_valued_success(run, a)
        assert a + (1 - a) * run.delta(e) <= value <= a + (1 - a) * run.delta(e) + 1e-6, a
