"""The theorems (stages/bound/theorems.py) against independent computations.

* beta: the formula e^eps / (e^eps - 1 + 1/p) evaluated directly;
* pure_dp_tail (Theorem 3.1): brute-force enumeration of all 2^n Bernoulli outcomes;
* tail_bound_at: the primal LP of the approximate-DP appendix (proof of thm:eps_bound_approx_comp),
  solved by scipy.optimize.linprog, and exactly by enumerating the LP's vertices;
* tail_bound: a dense brute-force eps grid of tail_bound_at;
* count_bound: its defining property against tail_bound;
* known values: Phi(mu/2) (n = 1, p = 1/2, mu-GDP), eps_protect(1e-9) = 17.8 (paper, Section 4);
* Monte Carlo: randomized response (tightness proposition, appendix "Pure DP Proofs") and a
  Gaussian-mechanism attack game (validity of count_bound), both simulated directly with numpy.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from stages.bound import theorems as T
from stages.bound.profiles import DPSGD, ApproxDP, ComposedGaussian, GaussianDP, PureDP

Phi = stats.norm.cdf


# --------------------------------------------------------------------------------------------
# Independent helpers
# --------------------------------------------------------------------------------------------
def beta_formula(eps: float, p: float) -> float:
    """Theorem 3.1's beta, as written in the paper (with the limits p = 0 -> 0, p = 1 -> 1)."""
    if p == 0.0:
        return 0.0
    if p == 1.0 or eps == math.inf:
        return 1.0
    return math.exp(eps) / (math.exp(eps) - 1.0 + 1.0 / p)


def sf_recursion(beta) -> np.ndarray:
    """t[u] = Pr[sum Bern(beta_i) >= u], u = 0..n+1, by the O(n^2) recursion."""
    beta = np.asarray(beta, dtype=float)
    pmf = np.zeros(len(beta) + 1)
    pmf[0] = 1.0
    for t, b in enumerate(beta):
        pmf[1 : t + 2] = pmf[1 : t + 2] * (1 - b) + pmf[: t + 1] * b
        pmf[0] *= 1 - b
    return np.append(np.cumsum(pmf[::-1])[::-1], 0.0)


def tail_at(sf: np.ndarray, u) -> np.ndarray:
    u = np.asarray(u)
    return np.where(u <= 0, 1.0, sf[np.clip(u, 0, len(sf) - 1)])


def lp_linprog(sf: np.ndarray, n: int, v: int, m: float) -> float:
    """max Pr[S* + F >= v] over every joint law y[s, f] of (S*, F) with S*'s law fixed, F in 0..n and
    E[F] <= m: no independence between S* and the extra successes F (stages/bound/THEORY.md, Lemma 3)."""
    pmf = -np.diff(np.append(sf[: n + 1], 0.0))
    s, f = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    c = -((s + f) >= v).astype(float).ravel()
    A_eq = np.kron(np.eye(n + 1), np.ones((1, n + 1)))  # sum_f y[s, f] = Pr[S* = s]
    res = optimize.linprog(c, A_ub=f.ravel()[None, :].astype(float), b_ub=[m], A_eq=A_eq, b_eq=pmf,
                           bounds=[(0, None)] * c.size, method="highs",
                           options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0, res.message
    return float(-res.fun)


def lp_vertices(sf: np.ndarray, n: int, v: int, m: float) -> float:
    """The same LP solved greedily: F fills the shortfall v - S* cheapest first (cost j per unit of
    Pr[S* = v - j]), a fractional knapsack whose greedy solution is optimal."""
    pmf = -np.diff(np.append(sf[: n + 1], 0.0))
    best, budget = float(tail_at(sf, np.array([v]))[0]), m
    for j in range(1, v + 1):
        take = min(pmf[v - j], budget / j)
        best += take
        budget -= take * j
        if budget <= 0:
            break
    return min(1.0, best)


def profile_delta(profile, eps: float) -> float:
    """delta(eps) computed here for the profiles used below (closed forms)."""
    if isinstance(profile, ApproxDP):
        e0, d0 = profile.eps, profile.delta_
        return d0 + (1 - d0) * math.exp(eps) * math.expm1(max(e0 - eps, 0.0)) / (1 + math.exp(e0))
    mu = profile.mu
    return float(Phi(-eps / mu + mu / 2) - math.exp(eps) * Phi(-eps / mu - mu / 2))


# --------------------------------------------------------------------------------------------
# beta
# --------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(eps=st.one_of(st.floats(0, 50), st.just(math.inf)), p=st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0, 1e-300])))
def test_beta_formula(eps, p):
    got = T.beta(eps, p)
    want = beta_formula(eps, p)
    # relative 1e-12 where the direct formula is well conditioned (1/p finite, e^eps finite)
    if 1.0 / max(p, 1e-308) < 1e300 and eps < 700:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-300)
    assert 0.0 <= got <= 1.0
    # eps >= 0 never lowers the prior (expit(logit(p)) rounds ~1e-14; subnormal p may flush to 0)
    assert got >= p * (1 - 1e-13) - 1e-300


def test_beta_edge_cases():
    assert T.beta(3.0, 0.0) == 0.0
    assert T.beta(math.inf, 0.0) == 0.0
    assert T.beta(0.0, 1.0) == 1.0
    assert T.beta(math.inf, 1e-9) == 1.0
    assert T.beta(0.0, 0.3) == pytest.approx(0.3, rel=1e-15)
    np.testing.assert_allclose(T.beta(1.0, np.array([0.0, 0.5, 1.0])), [0.0, math.e / (math.e + 1), 1.0], rtol=1e-15)
    np.testing.assert_allclose(T.beta(np.array([0.0, 1.0]), 0.5), [0.5, math.e / (math.e + 1)], rtol=1e-15)


# --------------------------------------------------------------------------------------------
# Theorem 3.1 by brute force
# --------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    eps=st.floats(0, 10),
    p=st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0, 0.5])), min_size=1, max_size=10),
    v=st.integers(-1, 12),
)
def test_pure_dp_tail_brute_force(eps, p, v):
    """Sum over all 2^n outcomes of prod_i beta_i^s_i (1 - beta_i)^(1 - s_i) with sum s >= v: 1e-12."""
    b = [beta_formula(eps, q) for q in p]
    want = 0.0
    for s in itertools.product([0, 1], repeat=len(p)):
        if sum(s) >= v:
            want += math.prod(bi if si else 1 - bi for bi, si in zip(b, s))
    assert T.pure_dp_tail(eps, p, v) == pytest.approx(min(want, 1.0), abs=1e-12)


def sf_60_digits(eps: float, p) -> list:
    """t[u] = Pr[sum Bern(beta_i) >= u], u = 0..n+1, by the recursion in 60-digit arithmetic, with
    beta_i = e^eps / (e^eps - 1 + 1/p_i) from the same float eps and p_i (mpmath, independent of numpy)."""
    import mpmath

    with mpmath.workdps(60):
        e = mpmath.exp(mpmath.mpf(eps))
        pmf = [mpmath.mpf(1)]
        for q in p:
            q = mpmath.mpf(float(q))
            b = mpmath.mpf(0) if q == 0 else e / (e - 1 + 1 / q)
            pmf = [(pmf[k] if k < len(pmf) else 0) * (1 - b) + (pmf[k - 1] * b if k > 0 else 0) for k in range(len(pmf) + 1)]
        sf = [mpmath.fsum(pmf[u:]) for u in range(len(pmf))] + [mpmath.mpf(0)]
    return sf


@pytest.mark.parametrize("seed", range(4))
def test_pure_dp_tail_far_tails_never_below_60_digit_recursion(seed):
    """Far tails (down to 1e-300) are kept: the tail is never below the exact value (1e-12 relative)
    and within 1e-9 relative of it, on random small cases with priors down to 1e-20."""
    rng = np.random.default_rng(seed)
    pairs = 0
    for _ in range(12):
        n = int(rng.integers(1, 31))
        eps = float(rng.uniform(0, 6))
        p = 10.0 ** rng.uniform(-20, 0, n) if rng.random() < 0.5 else rng.beta(0.5, 3, n)
        if rng.random() < 0.3:  # a few repeated values: equal priors are grouped into binomials
            p = rng.choice(p[:2], n)
        exact = sf_60_digits(eps, p)
        for v in range(1, n + 1):
            want = float(exact[v])
            got = T.pure_dp_tail(eps, p, v)
            assert got >= want * (1 - 1e-12), (n, eps, v, got, want)
            assert got <= want * (1 + 1e-9) + 1e-300, (n, eps, v, got, want)
            pairs += 1
    assert pairs > 100


def test_far_tail_examples_from_the_audit():
    """pure_dp_tail(2, [1e-20], 1) is beta = e^2 1e-20 (it was 0); n = 29, eps = 2.851, v = 25 was 0 vs 5.8e-17."""
    assert T.pure_dp_tail(2.0, [1e-20], 1) == pytest.approx(math.exp(2.0) * 1e-20, rel=1e-12)
    assert T.success_bound(PureDP(2.0), 1e-20) >= math.exp(2.0) * 1e-20 / (1 + math.exp(2.0) * 1e-20) * (1 - 1e-12)
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, 29)
    exact = float(sf_60_digits(2.851, p)[25])
    assert T.pure_dp_tail(2.851, p, 25) == pytest.approx(exact, rel=1e-9)


@settings(max_examples=20, deadline=None)
@given(eps=st.floats(0, 6), seed=st.integers(0, 2**31), n=st.integers(1, 300))
def test_pure_dp_count_bound_is_smallest(eps, seed, n):
    p = np.random.default_rng(seed).beta(0.5, 3, n)
    confs = np.array([0.05, 0.5, 0.95, 0.999])
    c = T.pure_dp_count_bound(eps, p, confs)
    sf = sf_recursion([beta_formula(eps, q) for q in p])
    for ci, conf in zip(c, confs):
        assert sf[ci + 1] <= 1 - conf + 1e-9
        assert ci == 0 or sf[ci] > 1 - conf - 1e-9
        assert T.pure_dp_count_bound(eps, p, conf) == ci


# --------------------------------------------------------------------------------------------
# tail_bound_at vs the primal LP of the approximate-DP appendix
# --------------------------------------------------------------------------------------------
profiles_st = st.one_of(
    st.builds(ApproxDP, st.floats(0.0, 6.0), st.one_of(st.just(0.0), st.floats(1e-8, 0.08))),
    st.builds(GaussianDP, st.floats(0.1, 5.0)),
)


@settings(max_examples=120, deadline=None)
@given(
    profile=profiles_st,
    p=st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0, 0.1, 0.5])), min_size=1, max_size=30),
    data=st.data(),
    eps=st.one_of(st.floats(0, 12), st.sampled_from([0.0, 0.5, 1.0])),
)
def test_tail_bound_at_equals_primal_lp(profile, p, data, eps):
    n = len(p)
    v = data.draw(st.integers(0, n), label="v")
    b = [beta_formula(eps, q) for q in p]
    sf = sf_recursion(b)
    # one exact guess: w_i = 1 - beta_i, and 0 for p_i = 0 (no success set has prior or posterior mass)
    m = profile_delta(profile, eps) * sum(1 - x for x, q in zip(b, p) if q > 0)
    lp = lp_linprog(sf, n, v, m)
    exact = lp_vertices(sf, n, v, m)
    if T.pure_epsilon_of(profile) is not None and eps < profile.eps:
        # eps-DP: below its own eps the one-run point is no valid bound (Theorem 3.1 is used instead)
        with pytest.raises(ValueError, match=r"^eps must be >= the profile's eps"):
            T.tail_bound_at(profile, p, v, eps)
        return
    got = T.tail_bound_at(profile, p, v, eps)
    assert abs(lp - exact) <= 1e-8  # the two LP solutions agree (sanity of the reference)
    assert got == pytest.approx(exact, abs=1e-9)  # min over J of the averages = the coupling LP's optimum
    assert got >= exact - 1e-12  # a valid bound: never below the LP optimum
    # v > n: at most n targets can be attacked, so the bound is 0
    assert T.tail_bound_at(profile, p, n + 1, eps) == 0.0


def test_tail_bound_at_set_valued_weights():
    """Set-valued success: the budget is delta(eps) sum_i (1 - c_i) / (e^eps p_i + 1 - p_i); c = None is c = 0."""
    p, c, eps = np.array([0.4, 0.2, 0.3]), np.array([0.01, 0.1, 0.05]), 1.3
    prof = GaussianDP(1.0)
    b = [beta_formula(eps, q) for q in p]
    sf = sf_recursion(b)
    for coll in (c, None):
        w = (1 - (np.zeros(3) if coll is None else coll)) / (math.exp(eps) * p + 1 - p)
        m = profile_delta(prof, eps) * float(np.sum(w))
        for v in range(1, 4):
            got = T.tail_bound_at(prof, p, v, eps, set_valued=True, collision=coll)
            assert got == pytest.approx(lp_vertices(sf, 3, v, m), abs=1e-9)


# --------------------------------------------------------------------------------------------
# tail_bound: minimum over eps vs a dense grid of tail_bound_at
# --------------------------------------------------------------------------------------------
CASES = [
    (GaussianDP(1.0), np.random.default_rng(1).beta(0.5, 5, 20), 5, 25.0),
    (GaussianDP(0.3), np.full(25, 0.1), 6, 15.0),
    (ApproxDP(2.0, 1e-4), np.random.default_rng(2).uniform(0, 0.3, 15), 6, 2.0),
    (DPSGD(1.0, 0.05, 100, "add_remove"), np.random.default_rng(3).beta(1, 10, 30), 6, 20.0),
]


@pytest.mark.parametrize("profile,p,v,top", CASES, ids=["gdp1", "gdp0.3-uniform", "approx", "dpsgd"])
def test_tail_bound_not_above_dense_grid(profile, p, v, top):
    """value <= min over 20000 eps points of the bound (one_run_reference) * (1 + 1e-6), and the value
    is attained at the returned eps (a valid bound, never interpolated)."""
    grid = np.unique(np.concatenate([np.linspace(0.0, top, 15000), np.geomspace(1e-6, top, 5000)]))
    vals = one_run_reference(profile.replace_one(), p, grid, vs=[v])[:, v]  # the game replaces records
    value, eps = T.split_tail_bound(profile, p, v, return_eps=True)
    assert value <= vals.min() * (1 + 1e-6)
    assert value == T.tail_bound_at(profile, p, v, eps)
    assert T.split_tail_bound(profile, p, v) == value
    assert T.tail_bound(profile, p, v) <= value  # the default: the minimum over the theorems (MMC on 1/k priors)
    assert 0.0 <= value <= 1.0


def one_run_reference(profile, p, eps_grid, vs=None) -> np.ndarray:
    """B[e, v] = the split theorem's bound at eps_grid[e] for v = 0..n+1, computed independently and
    vectorised over the grid: beta from the paper's formula, Pr[S* >= u] by the O(n^2) recursion, the
    budget m = delta(eps) sum_i (1 - beta_i) (one exact guess), and min over every J of the average
    (sum_{i <= J} Pr[S* >= v - i] + m) / (J + 1) (stages/bound/THEORY.md, Theorem 1)."""
    p = np.asarray(p, dtype=float)
    n, G = len(p), len(eps_grid)
    ee = np.exp(np.asarray(eps_grid))[:, None]
    b = ee / (ee - 1 + 1 / p[None, :])
    pmf = np.zeros((G, n + 1))
    pmf[:, 0] = 1.0
    for t in range(n):
        moved = pmf[:, :-1] * b[:, t : t + 1]
        pmf *= 1 - b[:, t : t + 1]
        pmf[:, 1:] += moved
    sf = np.concatenate([np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1], np.zeros((G, 1))], axis=1)
    m = np.array([profile.delta_upper(float(e)) for e in eps_grid]) * np.sum(np.where(p[None, :] > 0, 1.0 - b, 0.0), axis=1)
    out = np.ones((G, n + 2))
    out[:, n + 1] = 0.0
    for v in range(1, n + 1) if vs is None else vs:
        J = np.arange(v + 1)  # beyond J = v every term is 1, which cannot lower an average that is < 1
        terms = sf[:, v - J]
        averages = (np.cumsum(terms, axis=1) + m[:, None]) / (J + 1)[None, :]
        out[:, v] = np.minimum(1.0, averages.min(axis=1))
    return out


def random_one_run_case(seed: int):
    """A small case with heterogeneous priors: GDP or approximate DP, n in 3..12, a dense eps grid."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 13))
    profile = GaussianDP(float(rng.uniform(0.3, 3.0))) if seed % 2 else ApproxDP(float(rng.uniform(0.3, 4.0)), float(10 ** rng.uniform(-6, -2)))
    p = rng.beta(float(rng.uniform(0.3, 2.0)), float(rng.uniform(0.5, 5.0)), n)
    top = 12.0 if isinstance(profile, GaussianDP) else profile.eps
    grid = np.unique(np.concatenate([np.linspace(0.0, top, 1500), np.geomspace(1e-4, top, 500)]))
    return profile, p, one_run_reference(profile, p, grid).min(axis=0)


@pytest.mark.parametrize("seed", range(6))
def test_tail_bound_finds_the_deepest_valley(seed):
    """The objective is not unimodal in eps: tail_bound must reach the minimum over a dense grid
    (2000 points, independent computation) to 1e-6 relative for every v, on random small cases."""
    profile, p, best = random_one_run_case(seed)
    for v in range(1, len(p) + 1):
        assert T.tail_bound(profile, p, v) <= best[v] * (1 + 1e-6), (profile, v)


@pytest.mark.parametrize("seed", range(6))
def test_count_bound_matches_its_definition_on_a_dense_grid(seed):
    """count_bound = the smallest c with min_eps B(c + 1, eps) <= 1 - confidence, the minimum taken on
    the dense grid (never larger), and every count is certified by tail_bound."""
    profile, p, best = random_one_run_case(seed)
    confs = np.array([0.05, 0.3, 0.5, 0.8, 0.95, 0.99])
    counts = T.count_bound(profile, p, confs)
    for c, conf in zip(counts, confs):
        want = int(np.argmax(best <= 1 - conf)) - 1
        assert c <= want, (profile, conf, c, want)
        assert T.tail_bound(profile, p, int(c) + 1) <= (1 - conf) * (1 + 1e-9)


@pytest.mark.slow
def test_tail_bound_finds_the_deepest_valley_dpsgd():
    """DP-SGD (the audit's profile): the old search missed the minimum by 0.8% at v = 22, n = 25."""
    profile = DPSGD(0.8, 0.1, 50)
    p = np.random.default_rng(2).beta(0.7, 2.0, 25)
    grid = np.unique(np.concatenate([np.linspace(0, 30, 1500), np.geomspace(1e-4, 30, 700)]))
    best = one_run_reference(profile, p, grid, vs=[15, 22]).min(axis=0)
    for v in (15, 22):
        assert T.tail_bound(profile, p, v) <= best[v] * (1 + 1e-6)


@pytest.mark.slow
def test_second_valley_examples_from_the_audit():
    """Two cases where the paper-theorem search once stopped in the wrong valley: tail_bound and
    count_bound must reach the minimum over a dense eps grid of tail_bound_at (every point is valid)."""
    grid = np.linspace(0.0, 8.0, 1601)
    profile, p = GaussianDP(1.193), [0.782, 0.398, 0.863, 0.289, 0.424]
    for v in (1, 2, 3):
        assert T.tail_bound(profile, p, v) <= min(T.tail_bound_at(profile, p, v, e) for e in grid) * (1 + 1e-7)
    p = [0.007798386229600695, 0.024213932186566606, 0.0008844541637666743, 0.03924643618753395,
         0.47527121858203275, 0.03715268152659451, 0.14062956686299613, 0.05977580562359271,
         0.26144701163168194, 0.5544052432878208]
    best = {v: min(T.tail_bound_at(GaussianDP(0.3), p, v, e) for e in grid) for v in range(1, 11)}
    for conf in (0.05, 0.5, 0.95):
        c = T.count_bound(GaussianDP(0.3), p, conf)
        assert T.tail_bound(GaussianDP(0.3), p, c + 1) <= 1 - conf  # certified
        assert c == 0 or best[c] > 1 - conf  # and no smaller count passes on the grid


def test_tail_bound_trivial_v():
    g = GaussianDP(1.0)
    assert T.tail_bound(g, [0.1, 0.2], 0) == 1.0
    assert T.tail_bound(g, [0.1, 0.2], -3) == 1.0
    assert T.tail_bound(g, [0.1, 0.2], 3) == 0.0


# --------------------------------------------------------------------------------------------
# count_bound: the smallest c with tail_bound(c + 1) <= 1 - confidence
# --------------------------------------------------------------------------------------------
CONFS = np.array([0.05, 0.5, 0.95])


def check_count(profile, p, confs=CONFS):
    c = T.count_bound(profile, p, confs)
    assert c.shape == confs.shape
    for ci, conf in zip(c, confs):
        t = 1 - conf
        assert T.tail_bound(profile, p, int(ci) + 1) <= t * (1 + 1e-6)
        assert ci == 0 or T.tail_bound(profile, p, int(ci)) > t * (1 - 1e-6)
    assert [T.count_bound(profile, p, float(x)) for x in confs] == list(c)
    assert np.all(np.diff(c) >= 0)  # more confidence, larger count
    return c


@pytest.mark.parametrize(
    "profile", [GaussianDP(0.5), GaussianDP(2.0), DPSGD(1.0, 0.01, 200), ApproxDP(1.0, 1e-7)], ids=repr
)
@pytest.mark.parametrize("n", [50, 3000])
def test_count_bound_consistent(profile, n):
    p = np.random.default_rng(n).beta(0.5, 20, n)
    check_count(profile, p)


@pytest.mark.parametrize("profile", [GaussianDP(0.5), DPSGD(1.0, 0.01, 200, "add_remove")], ids=repr)
@pytest.mark.parametrize("n", [25_000, 50_000])
def test_count_bound_consistent_large_n(profile, n):
    """n >= 20000 seeds the search with a normal approximation; the counts must still be exact."""
    rng = np.random.default_rng(n + 1)
    p = np.concatenate([rng.beta(0.5, 20, n - 100), np.full(100, 0.2)])  # heterogeneous + a group
    check_count(profile, p)


def test_count_bound_uniform_prior_and_scalar():
    c = T.count_bound(GaussianDP(1.0), np.full(1000, 1e-3), 0.95)
    assert isinstance(c, int)
    assert T.tail_bound(GaussianDP(1.0), np.full(1000, 1e-3), c + 1) <= 0.05 * (1 + 1e-6)
    _, by = T.count_bounds(GaussianDP(1.0), np.full(1000, 1e-3), 0.95)
    assert c == min(by.values()) and T.MMC_THEOREM in by  # uniform priors 1/k: MMC's count joins


# --------------------------------------------------------------------------------------------
# Known values
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0, 4.0])
def test_success_bound_gdp_half_prior_is_phi_mu_half(mu):
    """mu-GDP, n = 1, p = 1/2: the bound is Phi(mu/2), the optimal MIA accuracy (issue 2; 1e-9)."""
    assert T.success_bound(GaussianDP(mu), 0.5) == pytest.approx(Phi(mu / 2), abs=1e-9)


def test_success_bound_pure_dp():
    """eps-DP, n = 1: success_bound is Theorem 3.1's beta(eps, p) at the profile's own eps, for every p
    (1e-12 relative). For p <= 1/2 that is also the minimum over eps' <= eps of the one-run objective
    beta(eps', p) + (1 - beta(eps', p)) delta(eps') on a 200001-point grid (so nothing changed there);
    for p > 1/2 that scan dips below beta(eps, p) (e.g. p = 0.9, eps = 0.1), which an eps-DP mechanism
    attains for set-valued success (test_success_bound_is_at_least_what_an_eps_dp_mechanism_attains)."""
    for eps, p, scan_equal in [(1.0, 0.5, True), (3.0, 1e-3, True), (0.5, 0.3, True), (0.1, 0.9, False)]:
        got = T.success_bound(PureDP(eps), p)
        assert got == pytest.approx(beta_formula(eps, p), rel=1e-12)
        assert T.success_bound(ApproxDP(eps, 0.0), p) == got
        e = np.linspace(0, eps, 200_001)
        b = np.exp(e) * p / (np.exp(e) * p + 1 - p)
        d = (math.exp(eps) - np.exp(e)) / (1 + math.exp(eps))
        scan = float(np.min(b + (1 - b) * d))
        if scan_equal:
            assert got == pytest.approx(scan, rel=1e-8)
        else:
            assert scan < got - 1e-3


@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0])
def test_pure_dp_bounds_use_the_profile_eps(eps):
    """Every bound of an eps-DP profile is Theorem 3.1 at its own eps: tail_bound = pure_dp_tail,
    count_bound = pure_dp_count_bound, expected_* at eps only; an eps below the profile's is refused."""
    rng = np.random.default_rng(3)
    p = rng.uniform(0.0, 1.0, 30)
    prof = PureDP(eps)
    for v in (1, 10, 20, 30):
        value, at = T.tail_bound(prof, p, v, return_eps=True)
        assert value == T.pure_dp_tail(eps, p, v) and at == eps
    assert T.count_bound(prof, p, [0.5, 0.95]).tolist() == T.pure_dp_count_bound(eps, p, [0.5, 0.95]).tolist()
    runs = rng.uniform(0.0, 1.0, (5, 30))
    assert T.expected_tail(prof, runs, 15)[0] == pytest.approx(np.mean([T.pure_dp_tail(eps, r, 15) for r in runs]), abs=1e-12)
    mean_tail = [np.mean([T.pure_dp_tail(eps, r, v) for r in runs]) for v in range(32)]
    assert T.expected_count_bound(prof, runs, 0.9) == next(c for c in range(31) if mean_tail[c + 1] <= 0.1 + 1e-15)
    with pytest.raises(ValueError, match=r"^eps must be >= the profile's eps"):
        T.expected_tail(prof, runs, 15, eps=eps / 2)
    with pytest.raises(ValueError, match=r"^eps must be >= the profile's eps"):
        T.tail_bound_at(prof, p, 15, eps / 2)
    assert T.tail_bound_at(prof, p, 15, eps) == pytest.approx(T.pure_dp_tail(eps, p, 15), abs=1e-12)


def test_eps_protect_paper_value():
    """Paper, Section 4 ("Calibrating Epsilon"/Fig. eps_protect): a uniform 9-digit canary
    (p = 1e-9) at delta = 1e-5 is protected (Adv <= 0.05) up to eps = 17.8 (tolerance 0.05)."""
    e = T.eps_protect(1e-9, threshold=0.05, delta=1e-5)
    assert e == pytest.approx(17.8, abs=0.05)
    assert T.advantage_bound(ApproxDP(e, 1e-5), 1e-9) <= 0.05
    assert T.advantage_bound(ApproxDP(e * (1 + 1e-6), 1e-5), 1e-9) > 0.05


def _largest_protecting_on_grid(p: float, threshold: float, delta: float, grid: np.ndarray) -> tuple[float, float]:
    """Brute force: (last, first) grid eps with advantage_bound <= threshold and the next one above it."""
    ok = np.array([T.advantage_bound(ApproxDP(float(e), delta), p) <= threshold for e in grid])
    i = int(np.flatnonzero(ok)[-1])
    assert ok[: i + 1].all() and not ok[i + 1:].any()  # one crossing: the bound is monotone in eps
    return float(grid[i]), float(grid[i + 1])


@pytest.mark.parametrize("p", [1e-9, 1e-3, 0.3, 0.6, 0.9, 0.999])
def test_eps_protect_inverts_the_advantage_bound(p):
    """At eps_protect(p) the advantage bound meets the threshold (to the bisection's 1e-9) and 1e-4 more eps
    breaks it."""
    thr, delta = 0.05, 1e-5
    e = T.eps_protect(p, thr, delta)
    assert 0 < e < math.inf
    assert T.advantage_bound(ApproxDP(e, delta), p) <= thr
    assert T.advantage_bound(ApproxDP(e, delta), p) == pytest.approx(thr, rel=1e-6)
    assert T.advantage_bound(ApproxDP(e * (1 + 1e-4), delta), p) > thr


@pytest.mark.parametrize("p", [1e-9, 0.3, 0.9])
def test_eps_protect_against_a_brute_force_eps_grid(p):
    """A scan of advantage_bound over eps (30 log-spaced points in [1e-3, 50], then twice 16 linear points
    inside the bracket found: a final spacing ~1e-3 of eps) brackets eps_protect(p)."""
    thr, delta = 0.05, 1e-5
    e = T.eps_protect(p, thr, delta)
    lo, hi = _largest_protecting_on_grid(p, thr, delta, np.geomspace(1e-3, 50, 30))
    for _ in range(2):
        lo, hi = _largest_protecting_on_grid(p, thr, delta, np.linspace(lo, hi, 16))
    assert lo <= e < hi and hi - lo < 2e-3 * e


def test_eps_protect_above_one_half_is_the_total_variation_plateau():
    """For p >= 1/2 the single-target bound is smallest at eps' = 0, where the advantage is the total variation
    delta + (1 - delta) tanh(eps/2) of f_{eps,delta} whatever p: eps_protect = 2 artanh((thr - delta)/(1 - delta)).
    Below 1/2 the bound's minimum sits elsewhere and eps_protect grows as p shrinks."""
    thr, delta = 0.05, 1e-5
    plateau = 2 * math.atanh((thr - delta) / (1 - delta))
    for p in (0.5, 0.6, 0.9, 0.999):
        assert T.eps_protect(p, thr, delta) == pytest.approx(plateau, rel=1e-8)
    below = [T.eps_protect(p, thr, delta) for p in (0.45, 0.3, 0.1)]
    assert plateau < below[0] < below[1] < below[2]


def test_eps_protect_boundary_cases():
    """threshold == delta: only eps = 0 keeps the bound (= delta at eps = 0) at the threshold, so exactly 0;
    threshold < delta: no eps protects, refused in one sentence naming threshold and delta."""
    assert T.advantage_bound(ApproxDP(0.0, 1e-3), 0.9) == pytest.approx(1e-3, rel=1e-12)
    assert T.eps_protect(0.9, threshold=1e-3, delta=1e-3) == 0.0
    assert T.eps_protect(0.01, threshold=1e-3, delta=1e-3) == 0.0
    with pytest.raises(ValueError, match=r"^threshold must be >= delta = 0\.001: .* lower delta or raise the threshold\.$"):
        T.eps_protect(0.3, threshold=1e-4, delta=1e-3)


@pytest.mark.parametrize("eps,k,m", [(0.1, 10, 9), (1.0, 10, 6), (1.0, 10, 9), (3.0, 10, 6), (0.5, 8, 2), (2.0, 6, 3), (0.3, 12, 1)])
def test_success_bound_is_at_least_what_an_eps_dp_mechanism_attains(eps, k, m):
    """One target, secret X uniform on k values; success: X lies in the attacker's set of m values (an
    'any of m guesses' or ring-distance metric), so the prior success is p = m/k. The mechanism releases a
    set S of m values with Pr[S | x] proportional to e^eps if x in S, else 1: every likelihood ratio is at
    most e^eps (eps-DP under replacing the target), and guessing S succeeds with probability
    beta(eps, m/k) exactly (computed here by enumerating the sets). A valid bound cannot be below it."""
    sets = list(itertools.combinations(range(k), m))
    weight = np.array([[math.exp(eps) if x in s else 1.0 for s in sets] for x in range(k)])
    release = weight / weight.sum(axis=1, keepdims=True)  # Pr[S | X = x]
    ratios = release[:, None, :] / release[None, :, :]
    assert ratios.max() <= math.exp(eps) * (1 + 1e-12)
    attained = float(np.mean([sum(release[x, j] for j, s in enumerate(sets) if x in s) for x in range(k)]))
    assert attained == pytest.approx(beta_formula(eps, m / k), rel=1e-12)
    assert T.success_bound(PureDP(eps), m / k) >= attained - 1e-12


@pytest.mark.parametrize("p", [0.01, 0.3, 0.5, 0.6, 0.9, 0.999])
@pytest.mark.parametrize("eps", [0.01, 0.1, 1.0, 3.0, 8.0])
def test_pure_dp_bounds_hold_for_the_set_mechanism_in_closed_form(eps, p):
    """The set mechanism above attains beta(eps, p) for every p = m/k; in closed form, so any p: the
    success, tail (n = 3 targets, v = 3: beta^3 for independent targets) and count bounds of PureDP(eps)
    and ApproxDP(eps, 0) are never below it."""
    attained = beta_formula(eps, p)
    for prof in (PureDP(eps), ApproxDP(eps, 0.0)):
        assert T.success_bound(prof, p) >= attained - 1e-12
        assert T.success_bound(prof, p, set_valued=True) >= attained - 1e-12
        assert T.tail_bound(prof, [p] * 3, 3) >= attained**3 - 1e-12
        assert T.advantage_bound(prof, p) >= (attained - p) / (1 - p) - 1e-12


@settings(max_examples=10, deadline=None)
@given(p=st.floats(1e-9, 0.9), delta=st.sampled_from([0.0, 1e-8, 1e-5, 1e-3]))
def test_advantage_bound_monotone_in_eps(p, delta):
    eps = np.linspace(0, 12, 25)
    adv = [T.advantage_bound(ApproxDP(e, delta), p) for e in eps]
    assert all(0.0 <= a <= 1.0 for a in adv)
    assert all(b >= a - 1e-12 for a, b in zip(adv, adv[1:]))
    mus = [0.05, 0.2, 0.5, 1, 2, 4]
    adv = [T.advantage_bound(GaussianDP(mu), p) for mu in mus]
    assert all(b >= a - 1e-12 for a, b in zip(adv, adv[1:]))


def test_advantage_bound_formula():
    for prof, p in [(GaussianDP(1.0), 0.01), (ApproxDP(2.0, 1e-5), 0.3)]:
        s = T.success_bound(prof, p)
        assert T.advantage_bound(prof, p) == pytest.approx((s - p) / (1 - p), abs=1e-15)


# --------------------------------------------------------------------------------------------
# Randomized response: the tightness proposition (appendix "Pure DP Proofs")
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps,m", [(1.0, 4), (2.0, 10)])
def test_randomized_response_bayes_attacker_reaches_beta(eps, m):
    """k-ary RR_eps, prior D with D(a) <= e^eps D(b) for all a, b: the Bayes-optimal attacker (argmax
    of the posterior, computed here from Bayes' rule) succeeds given output a with probability
    beta(eps, D(a)) -- checked within 3 standard errors per output -- and, over n targets, the number
    of successes given the releases is never above Theorem 3.1's pure_dp_tail (3 SE)."""
    rng = np.random.default_rng(int(eps * 100) + m)
    D = rng.uniform(1.0, math.exp(eps) * 0.95, m)
    D /= D.sum()
    assert D.max() <= math.exp(eps) * D.min()
    N = 240_000
    X = rng.choice(m, size=N, p=D)
    keep = rng.random(N) < math.exp(eps) / (math.exp(eps) - 1 + m)  # report truthfully w.p. e^eps/(e^eps-1+m)
    other = (X + rng.integers(1, m, N)) % m  # else a uniformly random *other* value
    out = np.where(keep, X, other)
    # Bayes-optimal guess: argmax_b Pr[out | X = b] D(b)
    lik = np.full((m, m), 1.0 / (math.exp(eps) - 1 + m))
    np.fill_diagonal(lik, math.exp(eps) / (math.exp(eps) - 1 + m))
    guess_for = np.argmax(lik * D[None, :], axis=1)  # row: output a, column: b
    guess = guess_for[out]
    success = guess == X
    for a in range(m):
        sel = out == a
        rate = success[sel].mean()
        se = math.sqrt(rate * (1 - rate) / sel.sum())
        b = T.beta(eps, D[a])
        assert abs(rate - b) <= 3 * se, (a, rate, b, se)
    # n targets per game, R games: successes >= v vs pure_dp_tail(eps, D(release), v)
    n, v = 12, 6
    R = N // n
    succ = success[: R * n].reshape(R, n).sum(axis=1)
    rel = out[: R * n].reshape(R, n)
    # the bound depends on the release only through the multiset of D(a_i): group identical ones
    keys, inverse = np.unique(np.sort(rel, axis=1), axis=0, return_inverse=True)
    bounds = np.array([T.pure_dp_tail(eps, D[k], v) for k in keys])[inverse.ravel()]
    hit = (succ >= v).astype(float)
    diff = hit - bounds
    se = diff.std(ddof=1) / math.sqrt(R)
    assert diff.mean() <= 3 * se  # never above the bound
    assert abs(diff.mean()) <= 3 * se  # and tight


# --------------------------------------------------------------------------------------------
# Validity Monte Carlo: a Gaussian-mechanism attack game against count_bound
# --------------------------------------------------------------------------------------------
def test_count_bound_valid_for_gaussian_one_hot_game():
    """n targets X_i ~ D (m values); release y_i = onehot(X_i) + N(0, sigma^2 I_m) for every i.
    Replacing one record moves the release by sqrt(2) in L2, so the mechanism is (sqrt(2)/sigma)-GDP.
    The Bayes-optimal attacker guesses argmax_b log D(b) + y_ib / sigma^2; the a-priori Bayes-optimal
    guess succeeds with p* = max D. Check Pr[successes >= c + 1] <= 0.05 + 3 SE, c = count_bound(0.95)."""
    rng = np.random.default_rng(11)
    n, m, sigma, R = 60, 8, 2.0, 4000
    D = rng.dirichlet(np.ones(m) * 2)
    profile = GaussianDP(math.sqrt(2) / sigma)
    c = T.count_bound(profile, np.full(n, D.max()), 0.95)
    hits = np.zeros(R, dtype=bool)
    successes = np.zeros(R, dtype=int)
    for r in range(0, R, 500):
        X = rng.choice(m, size=(500, n), p=D)
        y = np.eye(m)[X] + sigma * rng.standard_normal((500, n, m))
        guess = np.argmax(np.log(D)[None, None, :] + y / sigma**2, axis=2)
        s = (guess == X).sum(axis=1)
        successes[r : r + 500] = s
        hits[r : r + 500] = s >= c + 1
    rate = hits.mean()
    se = math.sqrt(max(rate * (1 - rate), 0.05 * 0.95) / R)
    assert rate <= 0.05 + 3 * se, (rate, c, successes.mean())
    assert c < n  # the bound says something here


# --------------------------------------------------------------------------------------------
# expected_tail (Theorem 3.2) and its standard error
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("profile,eps", [(GaussianDP(1.0), 1.5), (ApproxDP(1.0, 1e-4), 0.7), (PureDP(0.5), 0.5)])
def test_expected_tail_value_and_standard_error(profile, eps):
    rng = np.random.default_rng(5)
    R, n, v = 50, 15, 4
    p_runs = rng.beta(0.5, 5, (R, n))
    p_runs[0, :3] = [0.0, 1.0, 0.5]
    value, se = T.expected_tail(profile, p_runs, v, eps=eps)
    sfs = np.array([sf_recursion([beta_formula(eps, q) for q in row]) for row in p_runs])
    per_run = sfs[:, v]
    mean_sf = sfs.mean(axis=0)
    m = n * profile_delta(profile, eps)
    # Theorem 2: min over J of (sum_{i <= J} E[T(v - i)] + n delta) / (J + 1); J = 0 is the paper's form
    want = min(1.0, min((sum(mean_sf[v - i] for i in range(J + 1)) + m) / (J + 1) for J in range(v + 1)))
    assert value == pytest.approx(want, abs=1e-9)
    assert value <= min(1.0, per_run.mean() + m) + 1e-12
    assert se == pytest.approx(np.std(per_run, ddof=1) / math.sqrt(R), rel=1e-9)
    # np.std's default (ddof = 0) differs only by sqrt(R / (R - 1))
    assert se == pytest.approx(np.std(per_run) / math.sqrt(R) * math.sqrt(R / (R - 1)), rel=1e-9)


@pytest.mark.slow
def test_expected_tail_minimised_and_count():
    rng = np.random.default_rng(6)
    prof = GaussianDP(1.0)
    p_runs = rng.beta(0.5, 5, (20, 40))
    value, se = T.expected_tail(prof, p_runs, 10)
    assert 0 <= value <= 1 and se >= 0
    # the minimum over eps is at most the value at any fixed eps
    for e in (0.5, 1.0, 2.0, 4.0):
        assert value <= T.expected_tail(prof, p_runs, 10, eps=e)[0] + 1e-12
    c = T.expected_count_bound(prof, p_runs, [0.5, 0.95])
    for ci, conf in zip(c, [0.5, 0.95]):
        assert T.expected_tail(prof, p_runs, int(ci) + 1)[0] <= 1 - conf + 1e-12
        assert ci == 0 or T.expected_tail(prof, p_runs, int(ci))[0] > 1 - conf - 1e-12


# --------------------------------------------------------------------------------------------
# calibrate_noise
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p,target,comp", [(1e-3, 0.05, 1), (0.1, 0.2, 4), (1e-6, 0.01, 10)])
def test_calibrate_noise_advantage(p, target, comp):
    sigma = T.calibrate_noise([p, p / 2], target, compositions=comp)
    assert T.advantage_bound(ComposedGaussian(sigma, comp), p) <= target
    # the smallest such sigma, up to the function's rtol (1e-4): 1e-3 less noise violates the target
    assert T.advantage_bound(ComposedGaussian(sigma * (1 - 1e-3), comp), p) > target


def test_calibrate_noise_count_and_dpsgd():
    p = np.random.default_rng(9).beta(0.5, 30, 200)
    sigma = T.calibrate_noise(p, 10, kind="count", confidence=0.95)
    assert T.count_bound(ComposedGaussian(sigma), p, 0.95) <= 10
    assert T.count_bound(ComposedGaussian(sigma * (1 - 1e-3)), p, 0.95) > 10
    sigma = T.calibrate_noise(0.01, 0.1, mechanism="dpsgd", sample_rate=1.0, steps=4)
    assert T.advantage_bound(DPSGD(sigma, 1.0, 4), 0.01) <= 0.1
    assert T.advantage_bound(DPSGD(sigma * (1 - 1e-3), 1.0, 4), 0.01) > 0.1


@pytest.mark.parametrize("mu", [1.01 ** -265, 1.01 ** -41])
def test_a_confidences_count_does_not_depend_on_the_others_asked(mu):
    """One question, one answer: the split theorem's count at 0.95 is the same asked alone or with 0.05 and 0.5 (its
    search's eps seeds came from the smallest target asked: 904 alone and 905 together at the second mu)."""
    from stages.bound import theorems as T

    zipf = np.arange(1, 11) ** -1.84
    p = np.full(1000, zipf[0] / zipf.sum())
    T._COUNTS_MEMO.clear()
    together = [int(c) for c in T.count_bounds(GaussianDP(mu), p, [0.05, 0.5, 0.95])[1][T.SPLIT_THEOREM]]
    alone = []
    for c in (0.05, 0.5, 0.95):
        T._COUNTS_MEMO.clear()
        alone.append(int(T.count_bounds(GaussianDP(mu), p, [c])[1][T.SPLIT_THEOREM][0]))
    assert together == alone
