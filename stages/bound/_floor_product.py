"""The single product mechanisms of the floor (THEORY.md section 11, Lemma 6), which ``floor.py`` (the public entry
points) and ``floor_mixture.py`` (the mixture, Lemma 7) both read: the members a profile gets, randomized response
certified below a profile on a grid, the Gaussian simplex, the best member per prior (``_product``), the priors'
check and the count's certified low tail.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import integrate, special

from stages._bisect import bisect

from . import _validate, tails
from .profiles import ApproxDP, PrivacyProfile, for_game
from .whole_prior import _EXACT_TOP, Distributions

#: At most this many classes per target in the Gaussian simplex (the m likeliest values and "rest"; randomized
#: response reads every value, floor_mixture.MAX_VALUES).
MAX_CLASSES = 16
assert MAX_CLASSES <= _EXACT_TOP  # the values read are a rounded prior's exact head
#: Slack subtracted from every numerical success (beyond quad's own error estimate) and from every tail, so that
#: rounding never puts a count above the mechanism's true one.
_SLACK = 1e-12


#: Where ``floor.rr_epsilon`` compares randomized response's hockey-stick curve with a profile's: steps of 0.0002 up to
#: eps = 0.2, 0.001 up to 2, 0.01 up to 20 (eps0 is capped at 20: randomized response there is all but exact). Each
#: step costs eps0 at most the profile's fall over one step (0.05% of eps0 for DP-SGD at eps0 = 0.17).
_RR_GRID = np.unique(np.concatenate([np.linspace(0.0, 0.2, 1001), np.linspace(0.2, 2.0, 1801),
                                     np.linspace(2.0, 20.0, 1801)]))
#: A relative margin on the comparison (the profile's delta is computed in floating point).
_RR_MARGIN = 1e-9


def _replace_one(profile: PrivacyProfile) -> PrivacyProfile:
    """The game's replace-one profile (``profiles.for_game``, as the bounds use it), or one sentence naming it."""
    if not isinstance(profile, PrivacyProfile):
        raise ValueError(f"floor: profile must be a PrivacyProfile (GaussianDP, ApproxDP, PureDP, DPSGD, ...), got "
                         f"{profile!r}.")
    return for_game(profile, "reconstruction")


class _Members(NamedTuple):
    """The members of the family a profile gets: randomized response certified below it (``low``: its
    ``_profile_low``) always, the Gaussian simplex where it is exactly mu-GDP (``mu``), (eps, delta)'s own randomized
    response where it is (eps, delta)-DP (``approx``)."""
    profile: PrivacyProfile  # the replace-one profile
    low: np.ndarray
    mu: float | None
    approx: tuple[float, float] | None


def _members(profile: PrivacyProfile) -> _Members:
    profile = _replace_one(profile)
    mu = profile.gdp_mu()
    approx = (float(profile.eps), float(profile.delta_)) if mu is None and isinstance(profile, ApproxDP) else None
    return _Members(profile, _profile_low(profile), None if mu is None else float(mu), approx)


def _rr_delta(grid: np.ndarray, eps0: float, m: int) -> np.ndarray:
    """The hockey-stick curve of (m + 1)-ary randomized response at eps0 between two classes: the true class has
    probability r = 1 / (1 + m e^-eps0) and every other e^-eps0 r, so delta(eps) = r (1 - e^(eps - eps0))_+."""
    return -np.expm1(np.minimum(grid - eps0, 0.0)) / (1.0 + m * math.exp(-eps0))


#: The last few profiles' ``_profile_low``, by object (a profile's identity would do as well: it holds every parameter
#: of delta, PrivacyProfile.identity), so a game's trials and its label read a privacy-loss profile once.
_LOWS: list[tuple[PrivacyProfile, np.ndarray]] = []


def _profile_low(profile: PrivacyProfile) -> np.ndarray:
    """low[k] <= the profile's delta at every eps in [g_k, g_{k+1}] (g = _RR_GRID): a valid profile is non-increasing
    in eps (a hockey-stick divergence is), so its value at g_{k+1} is the least there; the smaller end is taken, which
    is the same for a monotone profile and covers the round-off wobbles of a computed one."""
    for seen, low in _LOWS:
        if seen is profile:
            return low
    d = np.asarray(profile.delta(_RR_GRID), dtype=float)
    low = np.minimum(d[:-1], d[1:]) / (1.0 + _RR_MARGIN)
    _LOWS[:] = [(profile, low), *_LOWS[:7]]
    return low


def _rr_epsilon(low: np.ndarray, m: int) -> float:
    """``floor.rr_epsilon`` for m + 1 classes against a profile's ``_profile_low``."""
    grid, top = _RR_GRID, float(_RR_GRID[-1])

    def breaks(eps0: float) -> bool:
        below = grid[:-1] < eps0
        return not bool(np.all(_rr_delta(grid[:-1][below], eps0, m) <= low[below]))

    if not breaks(top):
        return top
    return float(bisect(breaks, 0.0, top, rtol=1e-12)[0])  # its lo: 0 (eps0 = 0 meets any profile) or a point that met


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



def _product(mem: _Members, shapes) -> tuple[np.ndarray, np.ndarray, list, np.ndarray]:
    """Per prior shape: the best member's success, its m, the member ((kind, params) as floor_mixture names them;
    ("nothing", {}) for the prior-only guess) and the Gaussian simplex's own success at mu (nan without one)."""
    rr_eps = {}  # randomized response's certified eps0 per number of classes
    succ, best_m = np.zeros(len(shapes)), np.zeros(len(shapes), dtype=np.int64)
    members, simplex = [], np.full(len(shapes), np.nan)
    for g, shape in enumerate(shapes):
        top = _top_values(shape, MAX_CLASSES)
        best, arg, member = float(shape.p), 0, ("nothing", {})
        if mem.mu is not None:
            mu = mem.mu
            if mu > 0 and top.size > 1:
                m = 1 + int(np.argmax(_simplex_estimates(mu, top)))
                val = _gaussian_simplex(mu, top[: m + 1])  # the value kept: quad, its error subtracted
                simplex[g] = max(val, float(shape.p))
                if val > best:
                    best, arg, member = val, m, ("gaussian_simplex", {"mu": mu})
        for m in range(1, top.size):  # every profile: randomized response certified below it (and (eps, delta)'s own)
            if m not in rr_eps:
                rr_eps[m] = _rr_epsilon(mem.low, m)
            val = _randomized_response(rr_eps[m], 0.0, top[: m + 1])
            if val > best:
                best, arg, member = val, m, ("randomized_response", {"eps0": rr_eps[m]})
            if mem.approx is not None:
                val = _randomized_response(*mem.approx, top[: m + 1])
                if val > best:
                    best, arg, member = val, m, ("revealing_randomized_response", {"eps0": mem.approx[0],
                                                                                   "d": mem.approx[1]})
        succ[g], best_m[g] = min(best, 1.0), arg
        members.append(member)
    return succ, best_m, members, simplex


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



def _confidences(confidences) -> np.ndarray:
    """The confidences of a floor: a 1-d array (a list of counts comes back, one per confidence)."""
    return _validate.vector("confidences", confidences, _validate.confidence, what="a list of confidences",
                            fix="for one confidence c pass [c]")
