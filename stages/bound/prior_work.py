"""Prior-work bounds on attack success, each where its paper says it applies, for comparison with ours.

One function per paper; each docstring states the formula, the paper and the setting it covers, and
each raises ValueError (naming the argument) outside that setting:

* ``kgk_bound``       Kulynych, Gomez, Kaissis et al. 2025 (arXiv:2507.06969): 1 - f(kappa), one target, any f-DP
  profile.
* ``mmc_bound``       Mahloujifar, Melis, Chaudhuri 2024 (arXiv:2410.22235): f-DP one-run reconstruction, uniform
  priors 1/k.
* ``steinke_bound``   Steinke, Nasr, Jagielski 2023 (arXiv:2305.08846), Theorem 5.2: (eps, delta)-DP membership,
  priors 1/2.
* ``rero_bound``      Balle, Cherubin, Hayes 2022 (arXiv:2201.04845): ReRo from eps-DP, Renyi DP or zCDP, one target.
* ``narcissus_bound`` Cohen et al. 2025, Theorem F.1: e^eps p + delta, one target.
* ``cherubin_bound``  Cherubin, Koepf, Paverd et al. 2024 (arXiv:2402.14397): closed-form Bayes security of DP-SGD.
* ``stock_bound``     Stock, Shilov, Mironov, Sablayrolles 2022 (arXiv:2202.07623): Renyi-DP reconstruction bound.

In our notation (the paper's generic attack game) ``p`` is the prior success probability of the a
priori optimal guess, i.e. the baseline ``kappa`` of KGK and ReRo. The one-run bounds (MMC, Steinke)
take the whole vector ``p`` of shape (n,): a guessed canary has ``p_i = 1/k`` (MMC) or ``1/2``
(Steinke), an abstention has ``p_i = 0`` (a target the attack does not guess is never attacked).

Count bounds follow ``stages.bound.theorems.count_bound``: the smallest ``c`` whose tail bound
``Pr[#attacked >= c + 1]`` is at most ``1 - confidence`` ("with probability >= confidence, at most
c targets are attacked").
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy import optimize, special, stats

from stages._bisect import bisect, smallest_true

from . import _validate

__all__ = [
    "kgk_bound",
    "mmc_bound",
    "mmc_tail_bound",
    "steinke_bound",
    "steinke_tail_bound",
    "rero_bound",
    "narcissus_bound",
    "cherubin_bound",
    "stock_bound",
    "uniform_candidates",
]

#: Relative tolerance when deciding that a prior is exactly 1/k.
_UNIFORM_RTOL = 1e-9


def _as_output(arr: np.ndarray):
    arr = np.asarray(arr, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def _prior_vector(name: str, p) -> np.ndarray:
    return np.atleast_1d(_validate.vector(name, p, _validate.probability, what="one prior success per target",
                                          allow_scalar=True))


def uniform_candidates(p, *, allowed: tuple[int, ...] | None = None, name: str = "p", bound: str = "this bound") -> int:
    """Return k if every nonzero entry of p equals 1/k for one integer k >= 2, else raise ValueError.

    Zeros are abstentions. ``allowed`` restricts k (Steinke's membership game has k = 2).
    """
    arr = _prior_vector(name, p)
    guessed = arr[arr > 0]
    if guessed.size == 0:
        return 2 if allowed is None else allowed[0]
    k = float(np.round(1.0 / guessed[0]))
    ok = k >= 2 and np.all(np.abs(guessed * k - 1.0) <= _UNIFORM_RTOL)
    if ok and allowed is not None:
        ok = int(k) in allowed
    if not ok:
        bad = guessed[np.argmax(np.abs(guessed * max(k, 1.0) - 1.0))]
        want = "1/2" if allowed == (2,) else "1/k for one integer k >= 2"
        raise ValueError(
            f"{bound} applies only to uniform priors: every entry of {name} must be {want} "
            f"(or 0 for an abstention), got {float(bad)!r}."
        )
    return int(k)


def _one_target(arr: np.ndarray, bound: str) -> None:
    """Refuse n > 1 priors where ``bound`` without a confidence bounds one target's success probability."""
    if arr.size != 1:
        raise ValueError(
            f"{bound} without a confidence bounds one target's success probability, so p must be a single "
            f"prior, got {arr.size} priors; pass confidence=... for a count bound over {arr.size} targets."
        )


def _confidences(confidence) -> np.ndarray:
    return _validate.confidence("confidence", confidence)


def _count_from_tail(tail, n: int, confidence: np.ndarray):
    """The count bound c = (smallest v with tail(v) <= 1 - confidence) - 1, per confidence.

    Same convention as ``theorems.count_bound``: with probability >= confidence at most c of the n
    targets are attacked. Binary search over v in 1..n+1 (tail(n + 1) = 0); the v found always
    satisfies tail(v) <= 1 - confidence, so the count is valid even if the bound were not monotone.
    """
    cache: dict[int, float] = {0: 1.0, n + 1: 0.0}

    def t(v: int) -> float:
        if v not in cache:
            cache[v] = tail(v)
        return cache[v]

    out = np.empty(confidence.shape, dtype=np.int64)
    for idx, c in np.ndenumerate(confidence):
        out[idx] = smallest_true(lambda v: t(v) <= 1.0 - c, 0, n + 1) - 1  # t(0) = 1 > 1 - c, t(n + 1) = 0
    return int(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------------------------
# KGK+: Kulynych, Gomez, Kaissis, Hayes, Balle, du Pin Calmon, Raisaro (2025), arXiv:2507.06969
# --------------------------------------------------------------------------------------------


def kgk_bound(profile, p):
    """Kulynych et al. 2025 ("Unifying re-identification, attribute inference, and data
    reconstruction risks in differential privacy", arXiv:2507.06969): success <= 1 - f(kappa).

    ``f`` is the profile's trade-off curve and ``kappa = p`` the baseline (a priori optimal)
    success probability. Applies to one target, any f-DP mechanism and any prior, and to any
    success event: a single guess, k guesses or a distance window (kappa is then the prior
    probability of the best such set), since the proof only applies f to the test "success happened";
    for mu-GDP it equals Phi(Phi^{-1}(kappa) + mu). ``1 - f`` comes from the profile's
    ``one_minus_tradeoff``, computed without cancellation, so tiny priors keep their digits.
    Vectorised over ``p``.
    """
    kappa = _validate.probability("p", p)
    if hasattr(profile, "one_minus_tradeoff"):
        power = np.asarray(profile.one_minus_tradeoff(kappa), dtype=float)
    else:  # a duck-typed profile with a trade-off curve only
        power = 1.0 - np.asarray(profile.tradeoff(kappa), dtype=float)
    return _as_output(np.clip(np.maximum(power, kappa), 0.0, 1.0))


# --------------------------------------------------------------------------------------------
# MMC: Mahloujifar, Melis, Chaudhuri (2024), "Auditing f-Differential Privacy in One Run", arXiv:2410.22235
# --------------------------------------------------------------------------------------------


def _inverse_blow_up(profile, *, refine: bool = False):
    """Return g^{-1} where g(x) = 1 - f(x) is the blow-up of the trade-off curve f.

    g^{-1}(y) = inf{x : 1 - f(x) >= y}: if an event has probability y under one neighbour, it has
    probability at least g^{-1}(y) under the other. Closed forms for GDP and (eps, delta)-DP (what the
    profile is comes from the profile: ``gdp_mu``, or an ``ApproxDP``); any other profile goes through
    its delta(eps) curve (``_inverse_blow_up_from_delta``).
    """
    from .profiles import ApproxDP

    mu = profile.gdp_mu() if hasattr(profile, "gdp_mu") else None
    if mu is not None:
        mu = float(mu)
        return lambda y: float(special.ndtr(special.ndtri(y) - mu)) if 0.0 < y < 1.0 else float(y >= 1.0)
    if isinstance(profile, ApproxDP):
        eps, delta = float(profile.eps), float(profile.delta_)
        e_eps = math.exp(eps) if eps < 700 else math.inf
        return lambda y: max(0.0, (y - delta) / e_eps, 1.0 - delta - e_eps * (1.0 - y)) if y < 1.0 else 1.0
    return _inverse_blow_up_from_delta(profile, refine=refine and _cheap_delta(profile))


def _cheap_delta(profile) -> bool:
    """Whether a scalar delta(eps) call is cheap (closed form) rather than a PLD evaluation."""
    from .profiles import DPSGD

    return not isinstance(profile, DPSGD) or profile.gdp_mu() is not None


def _inverse_blow_up_from_delta(profile, *, refine: bool):
    """g^{-1} from the privacy profile delta(eps) on an eps grid (one vectorised delta call).

    Each (eps, delta(eps)) guarantee says an event of probability y under one neighbour has
    probability >= max((y - delta) e^-eps, 1 - delta - e^eps (1 - y)) under the other, so
    g^{-1}(y) = max(0, max_eps of those). A finite grid gives a smaller value (a weaker curve), so
    this never overstates privacy; ``refine`` maximises over eps near the best grid point (every eps
    is a valid guarantee, so refining can only tighten; it calls delta on scalars, so it is used only
    where that is cheap). Needs only ``delta``, not ``tradeoff``.
    """
    top = float(min(getattr(profile, "max_useful_epsilon", math.inf), 60.0))
    eps = np.unique(np.concatenate([np.linspace(0.0, top, 2001), np.geomspace(1e-6, max(top, 1e-6), 1001)]))
    eps = eps[eps <= top]
    delta = np.clip(np.asarray(profile.delta(eps), dtype=float), 0.0, 1.0)
    exp_eps, exp_neg = np.exp(eps), np.exp(-eps)

    def term(e: float, d: float, y: float) -> float:
        return max((y - d) * math.exp(-e), 1.0 - d - math.exp(e) * (1.0 - y))

    def ginv(y: float) -> float:
        if y >= 1.0:
            return 1.0
        values = np.maximum((y - delta) * exp_neg, 1.0 - delta - exp_eps * (1.0 - y))
        j = int(np.argmax(values))
        best = float(values[j])
        if refine and len(eps) > 1:
            lo, hi = float(eps[max(j - 1, 0)]), float(eps[min(j + 1, len(eps) - 1)])
            res = optimize.minimize_scalar(
                lambda e: -term(e, profile.delta_upper(e), y), bounds=(lo, hi), method="bounded",
                options={"xatol": 1e-12},
            )
            if res.success and np.isfinite(res.fun):
                best = max(best, term(float(res.x), profile.delta_upper(float(res.x)), y))
        return min(max(best, 0.0), y)

    return ginv


def _mmc_excess(ginv, tau: float, m: int, guesses: int, v: int, k: int, *, stop_above: bool = False) -> float:
    """r_0 + h_0 - guesses/m of MMC's recursion started at Pr[#correct >= v] = tau.

    r_v = tau v / m, h_v = tau (guesses - v) / m; for i = v-1..0:
    h_i = max(h_{i+1}, (k-1) g^{-1}(r_{i+1})), r_i = r_{i+1} + i / (guesses - i) (h_i - h_{i+1}).
    MMC show r_0 + h_0 <= guesses/m whenever Pr[#correct >= v] >= tau.

    ``stop_above``: return r_i + h_i - guesses/m as soon as it is > 0 (only its sign is then exact). Every step
    adds non-negative amounts to r and h, so r + h never decreases along the recursion (in floating point too:
    rounded addition of a non-negative number never decreases), and r_0 + h_0 > guesses/m follows.
    """
    r = tau * v / m
    h = tau * (guesses - v) / m
    cap = guesses / m
    for i in range(v - 1, -1, -1):
        h_new = max(h, (k - 1) * ginv(min(r, 1.0)))
        r = r + (i / (guesses - i)) * (h_new - h)
        h = h_new
        if stop_above and r + h > cap:
            break
    return r + h - cap


def _mmc_tail(ginv, m: int, guesses: int, v: int, k: int) -> float:
    if v <= 0:
        return 1.0
    if v > guesses:
        return 0.0
    if _mmc_excess(ginv, 1.0, m, guesses, v, k) <= 0:
        return 1.0
    # Any tau where the constraint fails bounds the probability from above (Pr >= tau would
    # contradict it), so the bisection keeps hi infeasible and returns hi: valid by construction.
    fails = lambda log_tau: _mmc_excess(ginv, math.exp(log_tau), m, guesses, v, k) > 0
    if fails(_LOG_TAU_FLOOR):
        return math.exp(_LOG_TAU_FLOOR)
    return min(1.0, math.exp(_bisect_log_tau(fails)[1]))


#: _mmc_tail's bisection on log tau: its floor (exp(-745) is the smallest positive double), tolerance and steps.
_LOG_TAU_FLOOR, _LOG_TAU_ATOL, _LOG_TAU_STEPS = -745.0, 1e-13, 60


def _bisect_log_tau(pred):
    return bisect(pred, _LOG_TAU_FLOOR, 0.0, atol=_LOG_TAU_ATOL, iterations=_LOG_TAU_STEPS)


@functools.lru_cache(maxsize=256)
def _decision_tau(confidence: float) -> float:
    """exp(x_c), x_c the largest point of _mmc_tail's bisection grid with exp(x_c) <= 1 - confidence (``_mmc_count``):
    the grid replayed with the predicate exp(x) > 1 - confidence, whose false end is x_c."""
    one_minus_c = 1.0 - confidence
    return math.exp(_bisect_log_tau(lambda x: math.exp(x) > one_minus_c)[0])


def mmc_tail_bound(profile, p, v) -> float:
    """MMC's bound on Pr[#correct guesses >= v] in their one-run reconstruction game.

    Mahloujifar, Melis, Chaudhuri 2024 ("Auditing f-Differential Privacy in One Run"), the
    reconstruction (k-ary) analysis: m = len(p) canaries, each drawn uniformly from k candidates,
    an f-DP mechanism, an attack that guesses ``guesses = #(p > 0)`` canaries and abstains on the
    rest. The bound is the smallest tau at which their recursion (see ``_mmc_excess``) fails.
    Applies only when every nonzero p_i is 1/k for one integer k >= 2.
    """
    arr = _prior_vector("p", p)
    k = uniform_candidates(arr, bound="mmc_bound")
    v = _validate.integer("v", v)
    guesses = int(np.count_nonzero(arr))
    return _mmc_tail(_inverse_blow_up(profile), arr.size, guesses, v, k)


def mmc_bound(profile, p, *, confidence=None):
    """MMC one-run bound (Mahloujifar, Melis, Chaudhuri 2024, arXiv:2410.22235) for uniform priors p_i in {0, 1/k}.

    * ``confidence=None``: p is one target (a scalar or shape (1,)); returns the success probability
      bound tau*, the root of tau + (k - 1) g^{-1}(tau) = 1 with g(x) = 1 - f(x). For mu-GDP this
      is the MMC curve of the paper's Figure compare_bounds.
    * ``confidence`` given: n = len(p) canaries; returns the count bound, the smallest c with
      ``mmc_tail_bound(profile, p, c + 1) <= 1 - confidence`` (int, or an int array shaped like
      ``confidence``): with that confidence at most c guesses are correct.

    Raises ValueError unless every nonzero p_i equals 1/k for one integer k >= 2 ("uniform priors
    p = 1/k, k candidates per canary").

    The profile is used as given: MMC's proof needs the guarantee between inputs that differ in one canary's
    secret, i.e. replace-one in a reconstruction game, so pass ``profiles.for_game(profile, "reconstruction")``
    for an add/remove profile (``count_bound``, ``best_bound`` and the comparator box do; with an add/remove
    DP-SGD profile as given the value can fall below a real attack: stages/bound/MMC_CHECK.md).
    """
    arr = _prior_vector("p", p)
    k = uniform_candidates(arr, bound="mmc_bound")
    ginv = _inverse_blow_up(profile, refine=confidence is None)
    guesses = int(np.count_nonzero(arr))
    if confidence is None:
        _one_target(arr, "mmc_bound")
        return _mmc_tail(ginv, 1, guesses, 1, k)
    levels = _confidences(confidence)
    return _mmc_count(ginv, arr.size, guesses, k, levels)


def _mmc_count(ginv, m: int, guesses: int, k: int, confidence: np.ndarray):
    """MMC's count in decision form: per confidence c, (smallest v with "Pr[#correct >= v] < 1 - c" shown) - 1.

    ``_count_from_tail`` on ``_mmc_tail`` bisects log tau for every v it visits (about 53 recursions each) and
    asks whether the tau found (the bracket's failing end) is <= 1 - c. Here each visited v costs one
    recursion, at one tau per confidence: tau_c = exp(x_c), x_c the largest point of that same bisection
    grid with exp(x_c) <= 1 - c (the grid replayed with the cheap predicate exp(x) > 1 - c). The excess
    increases along tau (MMC's Lemma A.5, stages/bound/MMC_CHECK.md step 7), so _mmc_tail's bisection ends
    at or below x_c exactly when the excess is > 0 at x_c: the same decision, hence the same count
    (test_mmc_vs_oracle.py::test_decision_form_counts_equal_the_bisected_ones); and an excess > 0 at
    tau_c <= 1 - c proves Pr[#correct >= v] < 1 - c on its own (Theorem 3.2). Taking tau = 1 - c itself
    would sometimes count one fewer (where the failing tau lies within the grid's 1e-13 of 1 - c, e.g.
    (eps, delta) = (0.3, 0.05) at c = 0.95). The recursion stops as soon as its excess is positive
    (``stop_above``). Binary search on v over 1..guesses + 1, as in ``_count_from_tail``.
    """
    out = np.empty(confidence.shape, dtype=np.int64)
    for idx, c in np.ndenumerate(confidence):
        tau = _decision_tau(float(c))
        shown = lambda v: _mmc_excess(ginv, tau, m, guesses, v, k, stop_above=True) > 0  # v in 1..guesses only
        out[idx] = smallest_true(shown, 0, guesses + 1) - 1
    return int(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------------------------
# Steinke, Nasr, Jagielski (2023), "Privacy Auditing with One (1) Training Run" (arXiv:2305.08846), Theorem 5.2
# --------------------------------------------------------------------------------------------


def _steinke_f(eps: float, r: int) -> np.ndarray:
    """f[v] = Pr[Binomial(r, e^eps / (e^eps + 1)) >= v] for v = 0..r+1."""
    f = stats.binom.sf(np.arange(-1, r + 1), r, float(special.expit(eps)))
    f[0] = 1.0
    return f


def _steinke_tail(f: np.ndarray, m: int, delta: float, v: int) -> float:
    """Theorem 5.2's bound f(v) + 2 m delta alpha on Pr[W >= v], from the binomial tails f."""
    r = len(f) - 2
    if v <= 0:
        return 1.0
    if v > r:
        return 0.0
    if delta == 0.0:
        return float(min(f[v], 1.0))
    # alpha = max_{i=1..v} (f[v-i] - f[v]) / i; i > v adds nothing (f[v - i] = 1 there)
    i = np.arange(1, v + 1)
    alpha = float(np.max((f[v - i] - f[v]) / i))
    return float(min(f[v] + alpha * 2.0 * m * delta, 1.0))


def steinke_tail_bound(eps, delta, p, v) -> float:
    """Steinke, Nasr, Jagielski 2023, Theorem 5.2: Pr[W >= v] <= f(v) + 2 m delta alpha.

    An (eps, delta)-DP mechanism; m = len(p) canaries, each included independently with probability
    1/2 (p_i = 1/2); the attack guesses r = #(p_i > 0) memberships and abstains on the rest (p_i = 0);
    W counts correct guesses. f(v) = Pr[Binomial(r, e^eps / (e^eps + 1)) >= v] and
    alpha = max_{i = 1..m} (f(v - i) - f(v)) / i. Applies only to p_i in {0, 1/2}.
    """
    arr = _prior_vector("p", p)
    uniform_candidates(arr, allowed=(2,), bound="steinke_bound (membership inference)")
    eps = _validate.scalar("eps", eps, _validate.epsilon)
    delta = _validate.delta("delta", delta)
    v = _validate.integer("v", v)
    r = int(np.count_nonzero(arr))
    return _steinke_tail(_steinke_f(eps, r), arr.size, delta, v)


def steinke_bound(eps, delta, p, *, confidence=None):
    """Steinke, Nasr, Jagielski 2023 (arXiv:2305.08846), Theorem 5.2, for membership inference in one run.

    * ``confidence=None``: one target (p = 1/2); returns the success bound
      q + 2 delta (1 - q), q = e^eps / (e^eps + 1) (Theorem 5.2 at m = r = v = 1).
    * ``confidence`` given: m = len(p) canaries; returns the smallest c with
      ``steinke_tail_bound(eps, delta, p, c + 1) <= 1 - confidence`` (at most c correct guesses).

    Raises ValueError unless every p_i is 1/2 (a guess) or 0 (an abstention).
    """
    arr = _prior_vector("p", p)
    uniform_candidates(arr, allowed=(2,), bound="steinke_bound (membership inference)")
    eps = _validate.scalar("eps", eps, _validate.epsilon)
    delta = _validate.delta("delta", delta)
    r = int(np.count_nonzero(arr))
    if confidence is None:
        _one_target(arr, "steinke_bound")
        return _steinke_tail(_steinke_f(eps, r), 1, delta, 1)
    levels = _confidences(confidence)
    f = _steinke_f(eps, r)
    return _count_from_tail(lambda v: _steinke_tail(f, arr.size, delta, v), r, levels)


# --------------------------------------------------------------------------------------------
# ReRo: Balle, Cherubin, Hayes (2022), "Reconstructing Training Data with Informed Adversaries", arXiv:2201.04845
# --------------------------------------------------------------------------------------------


def _rdp_pairs(rdp) -> tuple[np.ndarray, np.ndarray]:
    try:
        orders, epsilons = rdp
    except (TypeError, ValueError):
        raise ValueError(f"rdp must be a pair (orders, epsilons) of equal-length arrays, got {rdp!r}.") from None
    orders = np.atleast_1d(_validate.vector("rdp orders", orders, allow_scalar=True))
    epsilons = np.atleast_1d(_validate.vector("rdp epsilons", epsilons, _validate.epsilon, allow_scalar=True))
    if orders.shape != epsilons.shape:
        raise _validate.ArgumentError("rdp", f"rdp must be a pair (orders, epsilons) of equal-length 1-d arrays, got shapes "
                         f"{orders.shape} and {epsilons.shape}.")
    if np.any(~(orders > 1.0)):
        raise ValueError(f"rdp orders must be > 1, got {float(orders[~(orders > 1.0)][0])!r}.")
    return orders, epsilons


def rero_bound(p, *, eps=None, rdp=None, rho=None):
    """Balle, Cherubin, Hayes 2022 (arXiv:2201.04845) ReRo bound on reconstruction success, one target.

    Exactly one privacy description:

    * ``eps`` (eps-DP, their Corollary 3):          gamma = e^eps kappa;
    * ``rdp=(orders, epsilons)`` ((alpha, eps_alpha)-RDP, their RDP theorem):
      gamma = min_alpha (kappa e^{eps_alpha})^{(alpha - 1) / alpha};
    * ``rho`` (rho-zCDP, i.e. (alpha, rho alpha)-RDP for all alpha, at the optimal order):
      gamma = exp(-(sqrt(log(1/kappa)) - sqrt(rho))^2) if log(1/kappa) > rho, else 1.

    kappa = p is the prior success of the a priori optimal guess. Capped at 1; vectorised over p.
    """
    given = [name for name, val in (("eps", eps), ("rdp", rdp), ("rho", rho)) if val is not None]
    if len(given) != 1:
        raise ValueError(f"rero_bound needs exactly one of eps, rdp or rho, got {given or 'none'}.")
    kappa = _validate.probability("p", p)
    with np.errstate(divide="ignore"):
        log_kappa = np.log(kappa)
    if eps is not None:
        e = _validate.scalar("eps", eps, _validate.epsilon)
        return _as_output(np.minimum(1.0, np.exp(np.minimum(log_kappa + e, 0.0))))
    if rho is not None:
        rho = _validate.positive("rho", rho, allow_zero=True)
        gap = np.sqrt(np.maximum(-log_kappa, 0.0)) - math.sqrt(rho)
        return _as_output(np.where(-log_kappa > rho, np.exp(-np.square(np.maximum(gap, 0.0))), 1.0))
    orders, epsilons = _rdp_pairs(rdp)
    expo = ((orders - 1.0) / orders)[:, None] * (log_kappa.reshape(1, -1) + epsilons[:, None])
    out = np.minimum(1.0, np.exp(np.min(expo, axis=0)))
    return _as_output(out.reshape(kappa.shape))


# --------------------------------------------------------------------------------------------
# Narcissus resiliency: Cohen et al. (2025), Theorem F.1
# --------------------------------------------------------------------------------------------


def narcissus_bound(eps, delta, p):
    """Cohen et al. 2025 (Narcissus resiliency), Theorem F.1: success <= e^eps p + delta, capped at 1.

    An (eps, delta)-DP mechanism, one target and one guess, p the prior success probability of the
    predicate. Our pure-DP beta = e^eps / (e^eps - 1 + 1/p) is never larger than e^eps p.
    Vectorised over p.
    """
    p = _validate.probability("p", p)
    e = _validate.scalar("eps", eps, _validate.epsilon)
    d = _validate.delta("delta", delta)
    with np.errstate(over="ignore"):
        return _as_output(np.minimum(1.0, np.exp(e) * p + d))


# --------------------------------------------------------------------------------------------
# Cherubin, Koepf, Paverd, Tople, Wutschitz, Zanella-Beguelin (2024), arXiv:2402.14397
# --------------------------------------------------------------------------------------------


def cherubin_bound(noise_multiplier, sample_rate, steps, p, *, allow_approximation: bool = False):
    """Cherubin et al. 2024 ("Closed-Form Bounds for DP-SGD against Record-level Inference", arXiv:2402.14397).

    Their closed-form Bayes security of DP-SGD, beta* >= 1 - erf(q sqrt(T) / (sqrt(2) sigma)), bounds
    the advantage (success - p) / (1 - p) <= 1 - beta* of any membership or attribute inference with
    a uniform prior over k candidates (p = 1/k), so success <= p + (1 - p) erf(q sqrt(T) / (sqrt(2) sigma)).
    sigma = noise_multiplier, q = sample_rate, T = steps. For q < 1 the published closed form drops an
    O(sqrt(qT)/sigma) approximation term; at q = 1 (full batch) it is exact (1 - beta* is then the total
    variation of mu-GDP with mu = 2 sqrt(T) / sigma). Vectorised over p. Because only the full-batch
    value is a proven bound, q < 1 raises unless ``allow_approximation=True`` (then the number is the
    paper's approximation, not a guarantee).
    """
    sigma = _validate.positive("noise_multiplier", noise_multiplier)
    q = _validate.scalar("sample_rate", sample_rate, _validate.probability, open_low=True)
    if q < 1.0 and not allow_approximation:
        raise ValueError(
            f"cherubin_bound is a proven bound only for full-batch DP-SGD (sample_rate = 1), got sample_rate = {q!r}; "
            "pass allow_approximation=True to get the paper's approximate value."
        )
    t = _validate.integer("steps", steps, minimum=1)
    arr = _validate.probability("p", p)
    k = np.round(1.0 / np.maximum(arr, 1e-300))
    bad = (arr <= 0) | (k < 2) | (np.abs(arr * k - 1.0) > _UNIFORM_RTOL)
    if np.any(bad):
        raise ValueError(
            "cherubin_bound applies only to uniform priors p = 1/k with k >= 2 an integer "
            f"(a uniform prior over k candidates), got p = {float(np.ravel(arr)[np.argmax(np.ravel(bad))])!r}."
        )
    leak = math.erf(q * math.sqrt(t) / (math.sqrt(2.0) * sigma))
    return _as_output(np.minimum(1.0, arr + (1.0 - arr) * leak))


# --------------------------------------------------------------------------------------------
# Stock, Shilov, Mironov, Sablayrolles (2022), "Defending against Reconstruction Attacks with RDP", arXiv:2202.07623
# --------------------------------------------------------------------------------------------


def _binary_renyi_max(p: float, orders: np.ndarray, epsilons: np.ndarray) -> float:
    """min over orders of the largest s in [p, 1] with D_alpha(Bern(s) || Bern(p)) <= eps_alpha."""
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    a = orders
    target = (a - 1.0) * epsilons  # log of e^{(alpha - 1) eps}
    lp, lq = math.log(p), math.log1p(-p)

    def log_h(s: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.logaddexp(a * np.log(s) + (1.0 - a) * lp, a * np.log1p(-s) + (1.0 - a) * lq)

    # s = 1 is feasible where log h(1) = (1 - alpha) log p <= target
    full = (1.0 - a) * lp <= target
    # h is increasing on [p, 1]: lo stays feasible, hi infeasible, every order bisected at once
    _, hi = bisect(lambda s: ~(log_h(s) <= target), np.full(a.shape, p), np.ones(a.shape), iterations=100)
    hi = np.where(full, 1.0, hi)
    return float(np.min(hi))


def stock_bound(p, *, rdp=None, rho=None):
    """Stock, Shilov, Mironov, Sablayrolles 2022 (arXiv:2202.07623): reconstruction success under Renyi DP, one target.

    For an (alpha, eps_alpha)-RDP mechanism and a secret whose a priori optimal guess succeeds with
    probability p (2^-b for a uniform b-bit secret), Renyi data processing on the success event gives
    D_alpha(Bern(s) || Bern(p)) <= eps_alpha, i.e.
        s^alpha p^(1 - alpha) + (1 - s)^alpha (1 - p)^(1 - alpha) <= e^{(alpha - 1) eps_alpha};
    the bound is the largest such s, minimised over the orders. Dropping the (1 - s) term gives
    ReRo's RDP form (rero_bound), which is never smaller. Give ``rdp=(orders, epsilons)`` or ``rho``
    (rho-zCDP, evaluated on orders 1 + 2^(j/8)). Vectorised over p.
    """
    given = [name for name, val in (("rdp", rdp), ("rho", rho)) if val is not None]
    if len(given) != 1:
        raise ValueError(f"stock_bound needs exactly one of rdp or rho, got {given or 'none'}.")
    arr = _validate.probability("p", p)
    if rho is not None:
        rho = _validate.positive("rho", rho, allow_zero=True)
        orders = 1.0 + 2.0 ** (np.arange(-80, 81) / 8.0)
        epsilons = rho * orders
    else:
        orders, epsilons = _rdp_pairs(rdp)
    out = np.array([_binary_renyi_max(float(x), orders, epsilons) for x in np.atleast_1d(arr).ravel()])
    return _as_output(out.reshape(arr.shape))
