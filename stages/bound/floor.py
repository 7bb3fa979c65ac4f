"""The other end of the bracket: counts that a real mechanism with the profile lets a real attack reach.

Every bound in this package is an upper bound on the worst case over all mechanisms with a privacy profile. This
module computes a lower bound on that same worst case: a concrete mechanism that satisfies the profile, an attack on
it, and the exact law of the attack's count. The worst case lies between the two, so a researcher sees how much of a
bound is the theorem's slack and how much is the mechanism's reach (THEORY.md section 11).

The mechanism is a product of one mechanism per target, each reading only that target's secret, so replace-one
neighbours differ in one component and the product has that component's trade-off. Each component sends the
target's value through a class map: the m likeliest values are classes of their own, and every other value joins one
class "rest". It then releases the class through:
- mu-GDP: the Gaussian simplex mechanism, c_class + N(0, I), with any two vertices at distance mu (exactly mu-GDP);
- (eps, delta)-DP (delta >= 0): the class outright with probability delta, else (m + 1)-ary randomized response at
  eps ((eps, delta)-DP; for two classes its trade-off is f_{eps, delta} exactly).
The attack guesses the value of largest posterior: a class's own value, or the likeliest value of "rest". m runs over
1 .. min(k - 1, ``MAX_CLASSES`` - 1); the best m is kept per target. On two-valued priors m = 1 is the exact
one-target worst case (the trade-off's Bayes success), so at n = 1 the bracket closes there.

The count at confidence c is the smallest k with Pr[N >= k + 1] <= 1 - c under the Poisson-binomial law of the
targets' successes: any bound at confidence c that holds for every mechanism with the profile is at least it.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

from . import _validate, tails
from .profiles import ApproxDP, GaussianDP, PrivacyProfile
from .whole_prior import _EXACT_TOP, Distributions

__all__ = ["FLOOR_MECHANISM", "counts_at", "floor_counts", "floor_mixture_counts", "floor_success", "floor_successes", "low_tail",
           "unsupported"]

#: The name of the mechanism and attack in every output.
FLOOR_MECHANISM = ("a product of per-target class mechanisms (Gaussian simplex for mu-GDP, randomized response for "
                   "(eps, delta)-DP) with the MAP attack (THEORY.md section 11)")
#: At most this many classes per target (the m likeliest values and "rest").
MAX_CLASSES = 16
assert MAX_CLASSES <= _EXACT_TOP  # the values read are a rounded prior's exact head
#: Slack subtracted from every numerical success (beyond quad's own error estimate) and from every tail, so that
#: rounding never puts a count above the mechanism's true one.
_SLACK = 1e-12


def unsupported(profile: PrivacyProfile) -> str | None:
    """Why the floor cannot be built for ``profile`` (one sentence), or None where it can: it needs the profile's
    exact trade-off curve (mu-GDP or (eps, delta)-DP); a mechanism built on a curve below the profile's would not
    satisfy it."""
    if isinstance(profile, (GaussianDP, ApproxDP)):
        return None
    return (f"the profile {profile!r} has no exact trade-off curve to build a mechanism from (a mechanism with a "
            "curve below it would not satisfy it); the floor is built for GaussianDP(mu), ApproxDP(eps, delta) and "
            "PureDP(eps)")


def _supported(profile: PrivacyProfile) -> str:
    """'gdp' or 'approx', or one sentence naming the profile and the fix."""
    reason = unsupported(profile)
    if reason is not None:
        raise ValueError(f"floor: {reason}.")
    return "gdp" if isinstance(profile, GaussianDP) else "approx"


def _top_values(shape, size: int) -> np.ndarray:
    """The ``size`` largest probabilities of a prior shape (descending; its exact head)."""
    reps = np.minimum(np.asarray(shape.mult, dtype=np.int64), size)
    return np.repeat(np.asarray(shape.probs, dtype=float), reps)[:size]


def _gaussian_simplex(mu: float, w: np.ndarray) -> float:
    """sum_x w_x Pr[the MAP class is x | class x]: classes with weights w (a prior's probabilities, not normalised)
    at the vertices of a regular simplex with edge mu plus N(0, I); a lower bound (quad's error subtracted).

    Given class x the MAP is right iff for every z != x, W_z < b_xz = mu/2 + log(w_x/w_z)/mu, where the
    W_z = N.(c_z - c_x)/mu are standard normals with pairwise correlation 1/2, W_z = (Z_0 + Z_z)/sqrt(2):
    Pr[right | x] = int phi(t) prod_z Phi(sqrt(2) b_xz - t) dt."""
    if w.size == 2:  # closed form: the Gaussian trade-off's Bayes success
        r = math.log(w[0] / w[1]) / mu
        return float(w[0] * special.ndtr(mu / 2 + r) + w[1] * special.ndtr(mu / 2 - r)) - _SLACK
    logw = np.log(w)
    thr = math.sqrt(2.0) * (mu / 2.0 + (logw[:, None] - logw[None, :]) / mu)  # row x: sqrt(2) b_xz, z != x
    np.fill_diagonal(thr, np.inf)

    def f(t):
        return math.exp(-t * t / 2.0) / math.sqrt(2.0 * math.pi) * np.prod(special.ndtr(thr - t), axis=1)

    # every class's integral at once; err bounds each one's error (the max norm)
    val, err = integrate.quad_vec(f, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12, norm="max")
    return float(w @ val) - float(np.sum(w)) * float(err) - _SLACK


#: The grid on which ``_simplex_estimates`` integrates (only to choose m; the value kept is ``_gaussian_simplex``'s).
_T = np.linspace(-10.0, 10.0, 801)


def _simplex_estimates(mu: float, top: np.ndarray) -> np.ndarray:
    """``_gaussian_simplex(mu, top[:m + 1])`` for m = 1 .. len(top) - 1, estimated at once on a fixed grid (to pick
    the best m; the trapezoid rule on [-10, 10] is within ~1e-12 of the integral for these smooth integrands)."""
    k = top.size
    logw = np.log(top)
    phi = np.exp(-_T ** 2 / 2.0) / math.sqrt(2.0 * math.pi)
    dt = _T[1] - _T[0]
    out = np.zeros(k - 1)
    # log Phi(sqrt(2) b_xz - t) for every pair (x, z), on the grid
    b = math.sqrt(2.0) * (mu / 2.0 + (logw[:, None] - logw[None, :]) / mu)
    logphi = special.log_ndtr(b[:, :, None] - _T[None, None, :])  # (x, z, t)
    idx = np.arange(k)
    logphi[idx, idx, :] = 0.0
    # classes 0 .. m: for each x <= m the product over z <= m, z != x: a cumulative sum over z
    cum = np.cumsum(logphi, axis=1)  # cum[x, m, t] = sum_{z <= m} log Phi(...)
    for m in range(1, k):
        inner = np.exp(cum[: m + 1, m, :]) * phi[None, :]
        out[m - 1] = float(top[: m + 1] @ (inner.sum(axis=1) * dt))
    return out


def _randomized_response(eps: float, delta: float, w: np.ndarray) -> float:
    """sum over outputs of the largest w_x Pr[output | x]: the class outright with probability delta, else
    len(w)-ary randomized response at eps (the true class with probability 1 / (1 + m e^-eps), each other with
    e^-eps / (1 + m e^-eps))."""
    m = w.size - 1
    right = 1.0 / (1.0 + m * math.exp(-eps))
    wrong = math.exp(-eps) * right
    others = np.array([np.max(np.delete(w, o)) for o in range(w.size)])
    rr = float(np.sum(np.maximum(w * right, others * wrong)))
    return delta * float(np.sum(w)) + (1.0 - delta) * rr - _SLACK


def floor_success(profile: PrivacyProfile, distribution) -> tuple[float, int]:
    """(success, m): the MAP attack's success on one target with prior ``distribution`` against the best class
    mechanism of the module's family (m: its number of singleton classes), at least the prior's largest
    probability (the attack that ignores the release)."""
    succ, best_m = floor_successes(profile, Distributions.of([distribution], name="distribution"))
    return float(succ[0]), int(best_m[0])


def floor_successes(profile: PrivacyProfile, distributions) -> tuple[np.ndarray, np.ndarray]:
    """(success, m) per group of ``Distributions.of(distributions)`` (see ``floor_success``)."""
    return _successes(profile, _true_priors(distributions))


def _successes(profile: PrivacyProfile, dists: Distributions) -> tuple[np.ndarray, np.ndarray]:
    """``floor_successes`` of priors already checked by ``_true_priors``."""
    kind = _supported(profile)
    succ, best_m = np.zeros(len(dists.shapes)), np.zeros(len(dists.shapes), dtype=np.int64)
    for g, shape in enumerate(dists.shapes):
        top = _top_values(shape, MAX_CLASSES)
        best, arg = float(shape.p), 0
        if kind == "gdp":
            mu = float(profile.mu)
            if mu > 0 and top.size > 1:
                m = 1 + int(np.argmax(_simplex_estimates(mu, top)))
                val = _gaussian_simplex(mu, top[: m + 1])  # the value kept: quad, its error subtracted
                if val > best:
                    best, arg = val, m
        else:
            for m in range(1, top.size):
                val = _randomized_response(float(profile.eps), float(profile.delta_), top[: m + 1])
                if val > best:
                    best, arg = val, m
        succ[g], best_m[g] = min(best, 1.0), arg
    return succ, best_m


def _true_priors(distributions) -> Distributions:
    """``Distributions.of`` of the argument, refused where a group is not a prior: a dominating vector (as
    ``Distributions.coarsened`` makes) sums to more than 1 and would overstate what the attack reaches. A prior whose
    tail ``prior_shape`` rounded up keeps its largest ``whole_prior._EXACT_TOP`` distinct probabilities exact, and
    only those (at most MAX_CLASSES values) are read, so it is taken; its exact head must sum to at most 1."""
    dists = Distributions.of(distributions)
    for g, shape in enumerate(dists.shapes):
        head = len(shape.probs) if not shape.rounded else min(_EXACT_TOP, len(shape.probs))
        total = float(np.dot(shape.probs[:head], shape.mult[:head]))
        if total > 1.0 + 1e-6:
            raise ValueError(f"distributions: group {g} is not a prior (its probabilities sum to {total:.6g}); pass "
                             "each target's own prior, not a coarsened one (Distributions.coarsened).")
    return dists


def low_tail(successes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """low[k] <= Pr[N >= k], k = 0 .. n + 1, for N the sum of counts[g] Bernoullis of parameter successes[g]: the kept
    entries of the Poisson-binomial summed from the top, less what trimming and round-off may have added (and
    _SLACK)."""
    law = tails.distribution_grouped(np.asarray(successes, dtype=float), np.asarray(counts, dtype=np.int64))
    low = np.cumsum(law.dense()[::-1])[::-1] - law.trimmed - _SLACK
    return np.append(low, 0.0)


def counts_at(low: np.ndarray, confidences) -> list[int]:
    """For each confidence c the smallest k with low[k + 1] <= 1 - c (``low`` as ``low_tail`` gives it)."""
    levels = _validate.confidence("confidences", confidences)
    return [int(np.flatnonzero(low[1:] <= 1.0 - c)[0]) for c in levels]


def _floor_tail(profile: PrivacyProfile, distributions) -> np.ndarray:
    dists = _true_priors(distributions)
    return low_tail(_successes(profile, dists)[0], dists.counts)


def floor_counts(profile: PrivacyProfile, distributions, confidences) -> list[int]:
    """For each confidence c, the smallest k with Pr[N >= k + 1] <= 1 - c for N the count of right guesses of the
    module's attack on its mechanism (a real mechanism with ``profile``): a lower bound on every valid count bound at
    c. The law is computed on the low side (the convolution's trimmed mass and _SLACK off every tail)."""
    _validate.confidence("confidences", confidences)  # refused before any work
    return counts_at(_floor_tail(profile, distributions), confidences)


def floor_mixture_counts(profile: PrivacyProfile, runs, confidences) -> list[int]:
    """``floor_counts`` for the mixture of R trials, each with its own targets' priors (``runs``: one
    ``distributions`` per trial, the same number of targets): the law of N is the mean of the trials' laws, as for the
    bounds over the trials (Theorem 2, Corollaries 3.1 and 4.1), so no bound on the mixture's count is below it."""
    _validate.confidence("confidences", confidences)
    lows = [_floor_tail(profile, d) for d in runs]
    if len({low.size for low in lows}) != 1:
        raise ValueError(f"runs must have the same number of targets in every trial, got {sorted({low.size - 2 for low in lows})}; "
                         "pass one trial's priors per entry.")
    return counts_at(np.mean(lows, axis=0), confidences)
