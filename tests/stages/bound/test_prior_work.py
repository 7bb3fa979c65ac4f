"""Prior-work comparators against independent computations: closed forms, an LP, exact attack success."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

from stages.bound import prior_work as C
from stages.bound.profiles import DPSGD, ApproxDP, GaussianDP, PrivacyProfile, PureDP

Phi, Phi_inv = stats.norm.cdf, stats.norm.ppf
FAST = settings(max_examples=25, deadline=None)


class ViaDelta:
    """A profile known only through delta(eps): sends the comparators down their generic path."""

    def __init__(self, inner):
        self.inner = inner
        self.max_useful_epsilon = getattr(inner, "max_useful_epsilon", math.inf)

    def delta(self, eps):
        return self.inner.delta(eps)

    def delta_upper(self, eps):
        return float(self.inner.delta(eps))

    def tradeoff(self, alpha):
        return self.inner.tradeoff(alpha)

    def params(self):
        return {"profile": "SomethingElse"}


def gdp_delta(eps, mu):
    return Phi(-eps / mu + mu / 2) - np.exp(eps) * Phi(-eps / mu - mu / 2)


def ours_n1_gdp(mu, p):
    """Our n = 1 bound for mu-GDP, computed here: min_eps beta + (1 - beta) delta_mu(eps)."""
    def objective(e):
        b = np.exp(e) * p / (np.exp(e) * p + 1 - p)
        return b + (1 - b) * gdp_delta(e, mu)

    grid = np.linspace(0, 40, 4001)
    j = int(np.argmin(objective(grid)))
    res = optimize.minimize_scalar(objective, bounds=(grid[max(j - 1, 0)], grid[min(j + 1, 4000)]),
                                   method="bounded", options={"xatol": 1e-13})
    return float(min(res.fun, objective(grid[j])))


def argmax_success(mu, k):
    """Exact success of the argmax attack on one k-ary canary under a mu-GDP Gaussian mechanism.

    One-hot canary plus N(0, sigma^2 I) noise with sigma = sqrt(2)/mu (replace-one sensitivity
    sqrt(2)): correct iff Z_true + 1/sigma > max of the k - 1 other Z's.
    """
    shift = mu / math.sqrt(2)
    value, _ = integrate.quad(lambda z: stats.norm.pdf(z) * Phi(z + shift) ** (k - 1), -12, 12, epsabs=1e-13)
    return value


# ------------------------------------------------------------------------------------------ KGK


@FAST
@given(mu=st.floats(0.05, 6.0), p=st.floats(1e-6, 1 - 1e-6))
def test_kgk_gdp_known_value(mu, p):
    assert C.kgk_bound(GaussianDP(mu), p) == pytest.approx(Phi(Phi_inv(p) + mu), abs=1e-9)


@FAST
@given(eps=st.floats(0.0, 8.0), delta=st.floats(0.0, 0.1), p=st.floats(0.0, 1.0))
def test_kgk_approx_dp_closed_form(eps, delta, p):
    expected = min(1.0, delta + math.exp(eps) * p, 1 - math.exp(-eps) * (1 - delta - p))
    assert C.kgk_bound(ApproxDP(eps, delta), p) == pytest.approx(max(expected, p), abs=1e-12)
    if delta == 0.0:
        assert C.kgk_bound(PureDP(eps), p) == pytest.approx(max(expected, p), abs=1e-12)


def phi_shift_60_digits(p: float, mu: float) -> float:
    """Phi(Phi^{-1}(p) + mu) with 60 significant digits (mpmath, independent of scipy; 1 - 2p needs
    as many more digits as p has leading zeros)."""
    import mpmath

    with mpmath.workdps(60 - int(math.log10(p))):
        z = -mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * mpmath.mpf(p))
        return float(mpmath.ncdf(z + mu))


@pytest.mark.parametrize("p", [1e-8, 1e-15, 1e-17, 1e-30, 1e-100])
@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_kgk_small_prior_keeps_its_digits(mu, p):
    """1 - f(p) at tiny p without cancellation: Phi(Phi^{-1}(p) + mu) to 1e-9 relative (it was
    1.9406e-12 vs 1.9419e-12 at p = 1e-15, and fell back to the prior at 1e-17)."""
    want = phi_shift_60_digits(p, mu)
    assert C.kgk_bound(GaussianDP(mu), p) == pytest.approx(want, rel=1e-9)
    # the generic envelope (any profile known through delta(eps)) is never below it, and close
    generic = PrivacyProfile.one_minus_tradeoff(GaussianDP(mu), p)
    assert want * (1 - 1e-9) <= generic <= want * 1.01


@pytest.mark.parametrize("eps,delta", [(2.0, 0.0), (1.0, 1e-30), (0.5, 0.0)])
def test_kgk_approx_dp_tiny_prior(eps, delta):
    p = 1e-20
    want = min(1.0, delta + math.exp(eps) * p)
    assert C.kgk_bound(ApproxDP(eps, delta), p) == pytest.approx(want, rel=1e-12)


def test_best_bound_no_longer_picks_the_prior_at_tiny_p():
    from stages.bound.best import best_bound

    got = best_bound(GaussianDP(1.0), 1e-17)
    want = phi_shift_60_digits(1e-17, 1.0)
    assert got.all["kgk"] == pytest.approx(want, rel=1e-9)
    assert got.value >= want * (1 - 1e-9)
    got = best_bound(PureDP(2.0), 1e-20)
    assert got.value >= math.exp(2.0) * 1e-20 / (1 + math.expm1(2.0) * 1e-20) * (1 - 1e-12)


def test_kgk_vectorised_over_p():
    p = np.array([0.01, 0.1, 0.5])
    np.testing.assert_allclose(C.kgk_bound(GaussianDP(1.0), p), Phi(Phi_inv(p) + 1.0), atol=1e-12)


# ------------------------------------------------------------------------------------------ MMC


@FAST
@given(mu=st.floats(0.1, 6.0), k=st.integers(2, 10_000))
def test_mmc_matches_ours_for_uniform_priors(mu, k):
    """Paper: "for uniform priors, our bounds closely align with the MMC bound". For n = 1 they are
    the same number (the eps-minimum of beta + (1 - beta) delta(eps) is the root of MMC's
    tau + (k - 1) g^{-1}(tau) = 1); we observe agreement below 1e-12 and test 1e-9."""
    assert C.mmc_bound(GaussianDP(mu), 1.0 / k) == pytest.approx(ours_n1_gdp(mu, 1.0 / k), abs=1e-9)


@pytest.mark.parametrize("mu,k", [(0.5, 2), (1.0, 4), (2.0, 10), (3.0, 100)])
def test_mmc_matches_theorems_success_bound(mu, k):
    from stages.bound import theorems
    assert C.mmc_bound(GaussianDP(mu), 1.0 / k) == pytest.approx(theorems.success_bound(GaussianDP(mu), 1.0 / k), abs=1e-8)


@FAST
@given(eps=st.floats(0.0, 10.0), k=st.integers(2, 1000))
def test_mmc_pure_dp_closed_form(eps, k):
    """For eps-DP MMC's root is e^eps / (e^eps + k - 1) = our beta at p = 1/k."""
    expected = math.exp(eps) / (math.exp(eps) + k - 1)
    assert C.mmc_bound(PureDP(eps), 1.0 / k) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("mu,k", [(0.5, 2), (1.0, 4), (2.0, 10)])
def test_mmc_at_least_the_argmax_attack_and_at_most_kgk(mu, k):
    achieved = argmax_success(mu, k)
    mmc = C.mmc_bound(GaussianDP(mu), 1.0 / k)
    assert achieved <= mmc + 1e-9
    assert mmc <= C.kgk_bound(GaussianDP(mu), 1.0 / k) + 1e-12
    if k == 2:  # membership: the argmax attack is optimal, Phi(mu / 2)
        assert mmc == pytest.approx(Phi(mu / 2), abs=1e-9)


def test_mmc_generic_path_matches_closed_form():
    g = GaussianDP(1.3)
    for k in (2, 5, 50):
        exact = C.mmc_bound(g, 1.0 / k)
        generic = C.mmc_bound(ViaDelta(g), 1.0 / k)
        assert exact - 1e-12 <= generic <= exact + 1e-9
    p = np.full(60, 0.25)
    assert C.mmc_bound(ViaDelta(g), p, confidence=0.95) >= C.mmc_bound(g, p, confidence=0.95)


@pytest.mark.parametrize("mu,k,m", [(1.0, 4, 100), (0.5, 2, 200), (2.0, 10, 50)])
def test_mmc_count_holds_for_the_argmax_attack(mu, k, m):
    """#correct of the argmax attack is Binomial(m, s) exactly; MMC's tail must dominate it."""
    s = argmax_success(mu, k)
    p = np.full(m, 1.0 / k)
    for v in (1, int(m * s), int(m * s) + 5, m):
        assert stats.binom.sf(v - 1, m, s) <= C.mmc_tail_bound(GaussianDP(mu), p, v) + 1e-12
    c = C.mmc_bound(GaussianDP(mu), p, confidence=0.95)
    assert stats.binom.sf(c, m, s) <= 0.05  # Pr[#correct >= c + 1] under the real attack
    assert C.mmc_tail_bound(GaussianDP(mu), p, c + 1) <= 0.05
    assert c == m or C.mmc_tail_bound(GaussianDP(mu), p, c) > 0.05  # smallest such c


@pytest.mark.parametrize("eps,k,m", [(0.5, 2, 20), (1.0, 3, 10), (2.0, 10, 30), (4.0, 2, 5)])
def test_mmc_tail_holds_for_randomized_response(eps, k, m):
    """k-ary randomized response on each canary is eps-DP; #correct ~ Binomial(m, e^eps/(e^eps + k - 1))."""
    s = math.exp(eps) / (math.exp(eps) + k - 1)
    p = np.full(m, 1.0 / k)
    for v in range(1, m + 1):
        assert stats.binom.sf(v - 1, m, s) <= C.mmc_tail_bound(PureDP(eps), p, v) + 1e-12


def test_mmc_abstentions_and_array_confidence():
    p = np.concatenate([np.full(30, 0.25), np.zeros(70)])
    counts = C.mmc_bound(GaussianDP(1.0), p, confidence=np.array([0.5, 0.9, 0.99]))
    assert counts.shape == (3,) and np.all(np.diff(counts) >= 0) and counts[-1] <= 30
    assert C.mmc_tail_bound(GaussianDP(1.0), p, 31) == 0.0


def test_mmc_count_compared_with_ours():
    """Recorded, not claimed by the paper: for n > 1 MMC and our one-run count are close."""
    from stages.bound import theorems
    p = np.full(100, 0.25)
    mmc = C.mmc_bound(GaussianDP(1.0), p, confidence=0.95)
    ours = theorems.count_bound(GaussianDP(1.0), p, 0.95)
    assert abs(mmc - ours) <= 0.1 * 100


# ------------------------------------------------------------------------------------------ Steinke


def steinke_lp(eps, delta, m, r, v):
    """Primal LP behind Theorem 5.2: max over laws of F in {0..m} with E[F] <= 2 m delta of
    sum_j Pr[F = j] Pr[Binomial(r, q) >= v - j]."""
    q = 1 / (1 + math.exp(-eps))
    j = np.arange(m + 1)
    f = np.where(v - j <= 0, 1.0, stats.binom.sf(v - j - 1, r, q))
    res = optimize.linprog(-f, A_ub=[j], b_ub=[2 * m * delta], A_eq=[np.ones(m + 1)], b_eq=[1.0],
                           bounds=(0, None), method="highs")
    return -res.fun


@pytest.mark.parametrize("eps,delta,m,r,v", [
    (1.0, 1e-3, 100, 100, 70), (2.0, 1e-4, 1000, 200, 180), (0.5, 5e-3, 50, 20, 15), (1.0, 0.0, 100, 50, 40),
])
def test_steinke_equals_its_lp(eps, delta, m, r, v):
    """Theorem 5.2's f(v) + 2 m delta alpha is the LP's dual value; with 2 m delta <= 1 it is exact."""
    p = np.concatenate([np.full(r, 0.5), np.zeros(m - r)])
    assert 2 * m * delta <= 1
    assert C.steinke_tail_bound(eps, delta, p, v) == pytest.approx(steinke_lp(eps, delta, m, r, v), abs=1e-9)


@FAST
@given(eps=st.floats(0.0, 4.0), delta=st.floats(0.0, 0.05), r=st.integers(1, 40), extra=st.integers(0, 40),
       v=st.integers(0, 45))
def test_steinke_at_least_its_lp(eps, delta, r, extra, v):
    m = r + extra
    p = np.concatenate([np.full(r, 0.5), np.zeros(extra)])
    lp = min(1.0, steinke_lp(eps, delta, m, r, v)) if v <= r else 0.0
    assert C.steinke_tail_bound(eps, delta, p, v) >= lp - 1e-9


def test_steinke_pure_dp_is_binomial_and_single_target_form():
    p = np.full(100, 0.5)
    q = 1 / (1 + math.exp(-1.0))
    assert C.steinke_tail_bound(1.0, 0.0, p, 80) == pytest.approx(stats.binom.sf(79, 100, q), rel=1e-12)
    assert C.steinke_bound(1.0, 1e-3, 0.5) == pytest.approx(q + 2e-3 * (1 - q), rel=1e-12)
    c = C.steinke_bound(1.0, 0.0, p, confidence=0.95)
    assert stats.binom.sf(c, 100, q) <= 0.05 < stats.binom.sf(c - 1, 100, q)


# ------------------------------------------------------------------------------------------ ReRo, Stock


@FAST
@given(eps=st.floats(0.0, 20.0), p=st.floats(0.0, 1.0))
def test_rero_pure_is_e_eps_kappa(eps, p):
    assert C.rero_bound(p, eps=eps) == pytest.approx(min(1.0, math.exp(eps) * p), rel=1e-12)


@FAST
@given(rho=st.floats(0.001, 5.0), p=st.floats(1e-12, 0.5))
def test_rero_zcdp_is_the_optimal_rdp_order(rho, p):
    alphas = 1 + np.geomspace(1e-4, 1e4, 200_001)
    brute = float(np.min(np.exp(np.minimum(0.0, (alphas - 1) / alphas * (np.log(p) + rho * alphas)))))
    zcdp = C.rero_bound(p, rho=rho)
    assert zcdp <= brute + 1e-12
    assert zcdp == pytest.approx(brute, rel=1e-5, abs=1e-12)
    assert C.rero_bound(p, rdp=(alphas[::1000], rho * alphas[::1000])) >= zcdp - 1e-12


@pytest.mark.parametrize("alpha,eps,p", [(2.0, 0.5, 0.01), (8.0, 2.0, 1e-3), (1.5, 0.1, 0.3), (32.0, 4.0, 1e-6)])
def test_stock_solves_the_binary_renyi_constraint(alpha, eps, p):
    s = np.linspace(p, 1, 2_000_001)
    ok = s**alpha * p ** (1 - alpha) + (1 - s) ** alpha * (1 - p) ** (1 - alpha) <= math.exp((alpha - 1) * eps)
    brute = float(s[ok].max())
    value = C.stock_bound(p, rdp=([alpha], [eps]))
    assert brute - 1e-12 <= value <= brute + 1e-6
    assert value <= C.rero_bound(p, rdp=([alpha], [eps])) + 1e-12  # dropping the (1 - s) term loosens it


@pytest.mark.parametrize("eps,k", [(0.5, 2), (1.0, 4), (3.0, 100)])
def test_stock_and_rero_hold_for_randomized_response(eps, k):
    """k-ary randomized response is eps-DP and its best attack succeeds with e^eps / (e^eps + k - 1)."""
    achieved = math.exp(eps) / (math.exp(eps) + k - 1)
    orders = np.arange(2.0, 200.0)
    assert C.stock_bound(1.0 / k, rdp=(orders, np.full(orders.shape, eps))) >= achieved - 1e-12
    assert C.rero_bound(1.0 / k, eps=eps) >= achieved - 1e-12


# ------------------------------------------------------------------------------------------ Narcissus, Cherubin


@FAST
@given(eps=st.floats(0.0, 10.0), delta=st.floats(0.0, 0.5), p=st.floats(0.0, 1.0))
def test_narcissus_never_below_our_pure_beta_plus_delta(eps, delta, p):
    """Appendix "Narcissus Resiliency": e^eps p + delta >= e^eps / (e^eps - 1 + 1/p) + delta."""
    beta = 0.0 if p == 0 else math.exp(eps) / (math.exp(eps) - 1 + 1 / p)
    assert C.narcissus_bound(eps, delta, p) >= min(1.0, beta + delta) - 1e-12
    assert C.narcissus_bound(eps, delta, p) == pytest.approx(min(1.0, math.exp(eps) * p + delta), rel=1e-12)


@pytest.mark.parametrize("sigma,steps", [(1.0, 1), (2.0, 4), (5.0, 100)])
def test_cherubin_full_batch_is_exact_membership_accuracy(sigma, steps):
    """At q = 1 and p = 1/2 the closed form is Phi(sqrt(T)/sigma) = Phi(mu/2), mu = 2 sqrt(T)/sigma."""
    mu = 2 * math.sqrt(steps) / sigma
    value = C.cherubin_bound(sigma, 1.0, steps, 0.5)
    assert value == pytest.approx(Phi(mu / 2), abs=1e-12)
    assert value == pytest.approx(C.mmc_bound(DPSGD(sigma, 1.0, steps), 0.5), abs=1e-9)
    for k in (4, 10):  # k-ary: at least what the argmax attack achieves, at least MMC
        assert C.cherubin_bound(sigma, 1.0, steps, 1.0 / k) >= C.mmc_bound(GaussianDP(mu), 1.0 / k) - 1e-12
        assert C.cherubin_bound(sigma, 1.0, steps, 1.0 / k) >= argmax_success(mu, k) - 1e-9


# ------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("call,words", [
    (lambda: C.mmc_bound(GaussianDP(1.0), 0.3), ["mmc_bound applies only to uniform priors", "1/k", "0.3"]),
    (lambda: C.mmc_bound(GaussianDP(1.0), np.full(5, 0.25)), ["confidence"]),
    (lambda: C.mmc_bound(GaussianDP(1.0), [0.25, 0.5], confidence=0.9), ["uniform priors"]),
    (lambda: C.steinke_bound(1.0, 1e-5, 0.25), ["steinke_bound", "1/2", "0.25"]),
    (lambda: C.steinke_bound(-1.0, 1e-5, 0.5), ["eps", "-1.0"]),
    (lambda: C.steinke_bound(1.0, 1.0, 0.5), ["delta", "1.0"]),
    (lambda: C.steinke_tail_bound(1.0, 0.0, [0.5], 1.5), ["v", "integer"]),
    (lambda: C.kgk_bound(GaussianDP(1.0), 1.5), ["p", "1.5"]),
    (lambda: C.rero_bound(0.1), ["exactly one of eps, rdp or rho"]),
    (lambda: C.rero_bound(0.1, eps=1.0, rho=1.0), ["exactly one"]),
    (lambda: C.rero_bound(0.1, rdp=([0.5], [1.0])), ["orders", "> 1"]),
    (lambda: C.stock_bound(0.1), ["exactly one of rdp or rho"]),
    (lambda: C.narcissus_bound(1.0, 1e-5, -0.1), ["p", "-0.1"]),
    (lambda: C.cherubin_bound(1.0, 1.0, 1, 0.3), ["cherubin_bound applies only to uniform priors", "0.3"]),
    (lambda: C.cherubin_bound(0.0, 1.0, 1, 0.5), ["noise_multiplier"]),
    (lambda: C.cherubin_bound(1.0, 0.0, 1, 0.5), ["sample_rate"]),
    (lambda: C.cherubin_bound(1.0, 0.01, 100, 0.5), ["sample_rate = 0.01", "allow_approximation"]),
    (lambda: C.cherubin_bound(1.0, 1.0, 0, 0.5), ["steps"]),
])
def test_errors_name_the_argument(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for word in words:
        assert word in str(info.value)
