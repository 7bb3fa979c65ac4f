"""Poisson-binomial pmf and tails (stages/bound/tails.py) against independent computations.

Sources and tolerances:
* the O(n^2) textbook recursion pmf_k <- pmf_k (1 - b) + pmf_{k-1} b, run here in float64:
  exact to 1e-9 absolute (the issue's contract for "exact");
* scipy.stats.binom for equal betas (a uniform prior is one binomial): 1e-9 absolute;
* normalisation at n = 10^6: the pmf sums to 1 within 1e-9.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from stages.bound import tails

ABS = 1e-9  # the "exact to 1e-9 absolute"
FAST = settings(max_examples=40, deadline=None)


def pmf_recursion(beta) -> np.ndarray:
    """Pr[S = k], k = 0..n, by the O(n^2) recursion over the Bernoullis (independent of tails.py)."""
    beta = np.asarray(beta, dtype=float).ravel()
    pmf = np.zeros(len(beta) + 1)
    pmf[0] = 1.0
    for t, b in enumerate(beta):
        # S_{t+1} = S_t + Bern(b): new[k] = old[k] (1 - b) + old[k - 1] b, k = 0..t+1
        pmf[1 : t + 2] = pmf[1 : t + 2] * (1.0 - b) + pmf[0 : t + 1] * b
        pmf[0] *= 1.0 - b
    return pmf


def sf_from_pmf(pmf: np.ndarray) -> np.ndarray:
    """t[v] = Pr[S >= v] for v = 0..n+1."""
    return np.append(np.cumsum(pmf[::-1])[::-1], 0.0)


@st.composite
def betas(draw, max_n: int = 2000):
    """A beta vector built from a mix of: exact 0s and 1s, a few repeated values (several of them
    repeated often enough to be grouped into binomials), and fresh continuous values, including
    values very close to 0 and 1; shuffled."""
    n = draw(st.integers(1, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    frac_exact = draw(st.sampled_from([0.0, 0.0, 0.05, 0.3, 1.0]))
    n_distinct = draw(st.sampled_from([1, 2, 3, 10, 50, None]))  # None: all continuous
    shape = draw(st.sampled_from(["uniform", "small", "large", "beta"]))
    if shape == "uniform":
        cont = rng.uniform(0, 1, n)
    elif shape == "small":
        cont = 10.0 ** rng.uniform(-12, -1, n)
    elif shape == "large":
        cont = 1 - 10.0 ** rng.uniform(-12, -1, n)
    else:
        cont = rng.beta(0.3, 0.3, n)
    if n_distinct is not None:
        cont = rng.choice(cont[: max(1, min(n_distinct, n))], size=n)
    exact = rng.random(n) < frac_exact
    cont[exact] = rng.integers(0, 2, int(exact.sum())).astype(float)
    # A few hand-picked values drawn by hypothesis itself, so shrinking finds simple counterexamples.
    extra = draw(st.lists(st.sampled_from([0.0, 1.0, 0.5, 1e-300, 1 - 1e-16, 0.25]), max_size=5))
    out = np.concatenate([cont, np.asarray(extra, dtype=float)])
    rng.shuffle(out)
    return out


# --------------------------------------------------------------------------------------------
# pmf and tails vs the O(n^2) recursion
# --------------------------------------------------------------------------------------------
@FAST
@given(beta=betas())
def test_pmf_matches_quadratic_recursion(beta):
    expected = pmf_recursion(beta)
    got = tails.poisson_binomial_pmf(beta)
    assert got.shape == (len(beta) + 1,)
    np.testing.assert_allclose(got, expected, rtol=0, atol=ABS)


@FAST
@given(beta=betas())
def test_sf_all_and_tail_match_quadratic_recursion(beta):
    n = len(beta)
    expected = sf_from_pmf(pmf_recursion(beta))
    sf = tails.poisson_binomial_sf_all(beta)
    assert sf.shape == (n + 2,)
    np.testing.assert_allclose(sf, expected, rtol=0, atol=ABS)
    # The tail is documented as an upper bound (it adds the trimmed mass): never below by > rounding.
    assert np.all(sf >= expected - 1e-12)
    v = np.arange(-2, n + 4)
    got = tails.poisson_binomial_tail(beta, v)
    want = expected[np.clip(v, 0, n + 1)]
    np.testing.assert_allclose(got, want, rtol=0, atol=ABS)
    # scalar v gives a Python float, also for float-typed integers
    k = n // 2
    assert isinstance(tails.poisson_binomial_tail(beta, k), float)
    assert tails.poisson_binomial_tail(beta, float(k)) == pytest.approx(expected[k], abs=ABS)


@settings(max_examples=30, deadline=None)
@given(
    beta=st.lists(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1)), min_size=1, max_size=40),
    v=st.integers(-3, 45),
)
def test_small_lists_match_recursion(beta, v):
    """Plain hypothesis lists (shrinkable): exact 0/1, subnormals, repeated values."""
    sf = sf_from_pmf(pmf_recursion(beta))
    got = tails.poisson_binomial_tail(beta, v)
    assert got == pytest.approx(sf[min(max(v, 0), len(beta) + 1)], abs=ABS)


def sf_exact(beta) -> list:
    """Pr[S >= u], u = 0..n+1, in exact rational arithmetic from the float betas (fractions)."""
    from fractions import Fraction

    pmf = [Fraction(1)]
    for b in beta:
        b = Fraction(float(b))
        pmf = [(pmf[k] if k < len(pmf) else 0) * (1 - b) + (pmf[k - 1] * b if k > 0 else 0) for k in range(len(pmf) + 1)]
    return [sum(pmf[u:], Fraction(0)) for u in range(len(pmf))] + [Fraction(0)]


@pytest.mark.parametrize("seed", range(5))
def test_far_tails_never_below_exact_rational_arithmetic(seed):
    """Every tail, down to 1e-300, is >= the exact value (1e-12 relative) and within 1e-9 relative of it:
    random small cases (n <= 30) with betas down to 1e-20, distinct or repeated (binomial groups)."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(8):
        n = int(rng.integers(1, 31))
        beta = 10.0 ** rng.uniform(-20, 0, n) if rng.random() < 0.5 else rng.uniform(0, 1, n)
        if rng.random() < 0.3:
            beta = np.repeat(beta[:2], [n // 2, n - n // 2])
        exact = sf_exact(beta)
        got = tails.poisson_binomial_sf_all(beta)
        for u in range(1, n + 1):
            want = float(exact[u])
            assert want * (1 - 1e-12) <= got[u] <= want * (1 + 1e-9) + 1e-300, (n, u, got[u], want)


def test_trimmed_mass_is_summed_not_subtracted():
    """Mass dropped from a law is measured from the dropped entries: a 1e-20 tail is not lost (it was
    measured as 1 - sum and came out 0)."""
    assert tails.poisson_binomial_tail([1e-20], 1) == 1e-20
    assert tails.poisson_binomial_tail([1e-20, 0.3], 2) == pytest.approx(0.3e-20, rel=1e-12)
    beta = np.concatenate([np.full(300, 0.5), [1e-20]])
    d = tails.distribution(beta)
    assert d.trimmed > 0.0
    # Pr[S >= 301] = 0.5^300 * 1e-20: tiny, but the bound on it must not be 0
    assert tails.poisson_binomial_tail(beta, 301) >= 0.5**300 * 1e-20


def test_distribution_grouped_matches_recursion():
    """distribution_grouped(values, counts) is the law of counts[g] copies of values[g]."""
    values = np.array([0.0, 0.013, 0.5, 0.91, 1.0, 0.2])
    counts = np.array([3, 40, 7, 9, 2, 1])
    d = tails.distribution_grouped(values, counts)
    assert d.n == counts.sum()
    expected = pmf_recursion(np.repeat(values, counts))
    got = np.zeros(d.n + 1)
    got[d.offset : d.offset + len(d.pmf)] = d.pmf
    np.testing.assert_allclose(got, expected, atol=ABS, rtol=0)
    np.testing.assert_allclose(d.sf_all(), sf_from_pmf(expected), atol=ABS, rtol=0)


# --------------------------------------------------------------------------------------------
# One tail implementation (PoissonBinomial.tail): the same numbers as the two it replaced
# --------------------------------------------------------------------------------------------
def old_sf_all(d: tails.PoissonBinomial) -> np.ndarray:
    """PoissonBinomial.sf_all as it was before Tail (the trimmed mass added to every v > 0)."""
    tail = np.zeros(d.n + 2)
    rev = np.cumsum(d.pmf[::-1])[::-1]
    hi = d.offset + len(d.pmf)
    tail[: d.offset + 1] = 1.0
    tail[d.offset : hi] = rev
    tail[1:] = np.minimum(1.0, tail[1:] + d.trimmed)
    tail[0] = 1.0
    return tail


def old_theorems_ext(d: tails.PoissonBinomial) -> np.ndarray:
    """theorems._Tail.ext as it was: ext[k] = T(offset - 1 + k), T(offset) = 1."""
    rev = np.minimum(1.0, np.cumsum(d.pmf[::-1])[::-1] + d.trimmed)
    rev[0] = 1.0
    return np.concatenate([[1.0], rev, [min(1.0, d.trimmed)]])


def old_first_below(ext: np.ndarray, offset: int, n: int, t: float) -> int:
    if t >= 1.0:
        return 0
    k = int(np.searchsorted(-ext, -t, side="left"))
    return int(offset - 1 + k) if k < len(ext) else n + 1


@pytest.mark.parametrize("seed", range(6))
def test_tail_gives_the_old_sf_all_and_theorems_tail(seed):
    """Tail (tails.py) replaced PoissonBinomial.sf_all's own computation and theorems._Tail: the same
    ext bit for bit, hence every lookup, first_below and window sum of theorems._Tail; sf_all equal to
    the old one except at v = offset > 0, where it is now 1 (old: the kept mass plus the trimmed mass,
    1 up to rounding), as theorems._Tail always had it."""
    rng = np.random.default_rng(seed)
    cases = [rng.beta(0.5, 2.0, n) for n in (1, 9, 70, 400, 3000)]  # 400, 3000: trimmed, offset > 0
    cases += [np.repeat(rng.uniform(0, 1, 3), [500, 40, 5]), np.concatenate([np.ones(7), np.zeros(3)]),
              np.concatenate([np.full(300, 0.5), [1e-20]])]
    for beta in cases:
        d = tails.distribution(beta)
        t = d.tail()
        ext = old_theorems_ext(d)
        assert t.offset == d.offset and t.n == d.n and np.array_equal(t.ext, ext)
        u = np.arange(-3, d.n + 5)
        want = ext[np.clip(u - (d.offset - 1), 0, len(ext) - 1)]
        assert np.array_equal(t(u), want) and [t.value(int(x)) for x in u] == want.tolist()
        for thr in (0.0, 1e-300, 1e-12, 0.05, 0.5, 0.95, 1.0):
            assert t.first_below(thr) == old_first_below(ext, d.offset, d.n, thr)
        for lo, hi in ((-2, 3), (0, d.n + 1), (d.offset, d.offset + len(d.pmf) // 2), (d.n - 2, d.n + 6)):
            lo = min(lo, hi)
            k = np.arange(lo, hi + 1) - (d.offset - 1)
            assert t.window_sum(lo, hi, exact=True) == pytest.approx(float(np.sum(ext[np.clip(k, 0, len(ext) - 1)])),
                                                                    rel=1e-13, abs=1e-300)
        old, new = old_sf_all(d), d.sf_all()
        differs = np.flatnonzero(old != new)
        assert set(differs.tolist()) <= {d.offset}, (differs, d.offset)
        if differs.size:
            assert new[d.offset] == 1.0 and old[d.offset] >= 1.0 - 1e-12
        assert np.array_equal(d.sf(np.array([-1, 0, d.n // 2, d.n + 3])), new[[0, 0, d.n // 2, d.n + 1]])


def test_all_zero_and_all_one():
    assert np.array_equal(tails.poisson_binomial_pmf(np.zeros(5)), [1, 0, 0, 0, 0, 0])
    assert np.array_equal(tails.poisson_binomial_pmf(np.ones(5)), [0, 0, 0, 0, 0, 1])
    sf = tails.poisson_binomial_sf_all(np.ones(5))
    assert np.array_equal(sf, [1, 1, 1, 1, 1, 1, 0])
    sf = tails.poisson_binomial_sf_all(np.zeros(5))
    assert np.array_equal(sf, [1, 0, 0, 0, 0, 0, 0])


# --------------------------------------------------------------------------------------------
# Equal betas: one binomial (scipy.stats.binom)
# --------------------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
# (scipy's own binom overflows for p below ~1e-300, so the reference stops there)
@given(
    n=st.integers(1, 5000),
    b=st.one_of(st.floats(0, 1).filter(lambda x: x == 0 or x > 1e-300), st.sampled_from([1e-9, 0.5, 1 - 1e-9])),
)
def test_uniform_prior_is_binomial(n, b):
    beta = np.full(n, b)
    k = np.arange(n + 1)
    np.testing.assert_allclose(tails.poisson_binomial_pmf(beta), stats.binom.pmf(k, n, b), atol=ABS, rtol=0)
    v = np.arange(0, n + 2)
    np.testing.assert_allclose(tails.poisson_binomial_tail(beta, v), stats.binom.sf(v - 1, n, b), atol=ABS, rtol=0)


# --------------------------------------------------------------------------------------------
# n = 10^6
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("law", ["uniform", "skewed"])
def test_million_heterogeneous_is_normalised(law):
    rng = np.random.default_rng(7)
    beta = rng.uniform(0, 1, 10**6) if law == "uniform" else rng.beta(0.5, 20, 10**6)
    pmf = tails.poisson_binomial_pmf(beta)
    assert pmf.shape == (10**6 + 1,)
    assert np.all(pmf >= 0)
    assert abs(pmf.sum() - 1.0) <= 1e-9
    # mean and variance of the law match sum(beta), sum(beta(1-beta)) (relative 1e-9)
    k = np.arange(10**6 + 1, dtype=float)
    mean = pmf @ k
    assert mean == pytest.approx(beta.sum(), rel=1e-9)
    assert pmf @ (k - mean) ** 2 == pytest.approx(np.sum(beta * (1 - beta)), rel=1e-6)
    sf = tails.poisson_binomial_sf_all(beta)
    # sf[n + 1] = Pr[S >= n + 1] = 0 up to what the documented upper bound adds: the trimmed mass and
    # the bound on the FFT's round-off (Higham's, for ~4000 FFT convolutions: < 1e-8 at n = 10^6)
    assert sf[0] == 1.0 and 0.0 < sf[-1] <= 1e-8 and np.all(np.diff(sf) <= 1e-15)


@pytest.mark.parametrize("b", [1e-6, 0.3, 0.999])
def test_million_equal_betas_matches_binom_sf(b):
    n = 10**6
    beta = np.full(n, b)
    pmf = tails.poisson_binomial_pmf(beta)
    assert abs(pmf.sum() - 1.0) <= 1e-9
    v = np.unique(np.concatenate([np.arange(0, 50), np.linspace(0, n + 1, 2001).astype(int),
                                  int(n * b) + np.arange(-5000, 5000, 7)]))
    v = v[(v >= 0) & (v <= n + 1)]
    np.testing.assert_allclose(tails.poisson_binomial_tail(beta, v), stats.binom.sf(v - 1, n, b), atol=ABS, rtol=0)


@pytest.mark.slow
def test_million_mixture_of_equal_and_distinct():
    """10^6 Bernoullis: 4 large groups (binomials) plus 2000 distinct values, vs scipy convolution
    of the binomials with the recursion of the distinct ones (exact to 1e-9)."""
    rng = np.random.default_rng(3)
    groups = {0.001: 400_000, 0.01: 300_000, 0.2: 200_000, 0.75: 98_000}
    distinct = rng.uniform(0, 1, 2000)
    beta = np.concatenate([np.full(c, b) for b, c in groups.items()] + [distinct])
    rng.shuffle(beta)
    n = len(beta)
    assert n == 10**6
    # independent: the exact law, by direct convolution of windowed binomial pmfs (mean +- 40 sd,
    # outside which a binomial of these sizes has < 1e-30 of its mass) with the recursion of the
    # distinct ones
    part, offset = pmf_recursion(distinct), 0
    for b, c in groups.items():
        sd = (c * b * (1 - b)) ** 0.5
        lo, hi = max(0, int(c * b - 40 * sd)), min(c, int(c * b + 40 * sd) + 1)
        part = np.convolve(stats.binom.pmf(np.arange(lo, hi + 1), c, b), part)
        offset += lo
    expected = np.zeros(n + 1)
    expected[offset : offset + len(part)] = part
    got = tails.poisson_binomial_pmf(beta)
    np.testing.assert_allclose(got, expected, atol=ABS, rtol=0)


# --------------------------------------------------------------------------------------------
# v must be an integer
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("v", [2.5, np.array([1, 2.5]), float("nan"), float("inf"), -0.5])
def test_non_integer_v_raises(v):
    with pytest.raises(ValueError, match="v"):
        tails.poisson_binomial_tail([0.2, 0.5, 0.7], v)


def test_integer_valued_float_v_accepted():
    assert tails.poisson_binomial_tail([0.5, 0.5], 1.0) == pytest.approx(0.75, abs=1e-15)
    np.testing.assert_allclose(tails.poisson_binomial_tail([0.5, 0.5], np.array([0.0, 1.0, 2.0, 3.0])),
                               [1, 0.75, 0.25, 0], atol=1e-15)


@pytest.mark.parametrize("beta", [[0.5, 1.5], [-0.1], [0.2, float("nan")]])
def test_bad_beta_raises(beta):
    for fn in (tails.poisson_binomial_pmf, tails.poisson_binomial_sf_all, tails.distribution):
        with pytest.raises(ValueError, match="beta"):
            fn(beta)
    with pytest.raises(ValueError, match="beta"):
        tails.poisson_binomial_tail(beta, 1)
