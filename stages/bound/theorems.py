"""The theorems of the paper, turning (privacy guarantee, prior success) into bounds on attack success.

Notation follows the paper: ``p[i]`` is the prior success probability of target i (the chance that
a fresh record from D_i counts as attacked by the guess), ``beta`` the per-target posterior cap,
``v`` a number of successes, ``S = sum_i Bern(beta_i)``.

* ``beta``                Theorem 3.1's flipping probability e^eps / (e^eps - 1 + 1/p).
* ``pure_dp_tail``        Theorem 3.1 (pure DP, conditional on the release).
* ``tail_bound``          the one-run theorem for (eps, delta)/f-DP with the a-priori Bayes-optimal
                          guess (appendix generalisations of Steinke et al.'s Thm 5.2):
                          Pr[S* >= v] + alpha n delta(eps), minimised over eps.
* ``expected_tail``       Theorem 3.2 (and Cor. "approx_simple"): beta from R runs of the mechanism.
* ``count_bound``         at most c successes with probability >= confidence.
* ``success_bound``, ``advantage_bound``, ``eps_protect``, ``calibrate_noise``: single-target views.
* ``Priors``              the n targets' prior successes grouped (distinct values, counts, collision
                          probabilities per group): every theorem taking ``p`` (n,) takes it too.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from . import _validate
from .profiles import DPSGD, GAMES, ApproxDP, ComposedGaussian, PrivacyProfile, for_game
from . import whole_prior
from .tails import Tail, distribution_grouped
from .whole_prior import Distributions

#: Beyond this eps every beta with p >= 1e-80 is 1 to machine precision: no need to search further.
EPS_CEILING = 200.0
#: The eps lattice on which the searches look for every valley of the bound: geometric points per
#: octave (over 14 octaves below the top of the search) and linear points up to the top.
_SCAN_PER_OCTAVE = 8
_SCAN_LINEAR = 64
#: A valley of the bound is refined when its grid value is within this (relative) of the best grid
#: value (tail_bound) or of the target (count_bound): a margin, so that a valley whose grid point sits a
#: little above the best one (the lattice only samples it) is still refined.
_VALLEY_RTOL = 0.02
#: Points of the zoomed grid tail_bound lays across each lattice bracket it refines.
_ZOOM_POINTS = 17


# --------------------------------------------------------------------------------------------
# beta and argument handling
# --------------------------------------------------------------------------------------------
def beta(eps, p):
    """Theorem 3.1's posterior cap: beta = e^eps / (e^eps - 1 + 1/p), with p = 0 -> 0, p = 1 -> 1.

    Computed as expit(eps + logit(p)), exact in the tails (no overflow for eps up to inf).
    """
    e = _validate.epsilon("eps", eps)
    q = _validate.probability("p", p)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = special.expit(e + special.logit(q))
    out = np.where(q == 0.0, 0.0, np.where(q == 1.0, 1.0, out))
    return float(out) if np.ndim(out) == 0 else out


def _beta_unchecked(eps: float, p: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        out = special.expit(eps + special.logit(p))
    return np.where(p == 0.0, 0.0, np.where(p == 1.0, 1.0, out))


def _priors(p) -> np.ndarray:
    arr = _validate.probability("p", p)
    arr = np.atleast_1d(arr).ravel()
    if arr.size == 0:
        raise ValueError("p must hold at least one prior success probability, got an empty array.")
    return arr


@dataclass(frozen=True, eq=False)
class Priors:
    """n targets' prior successes, grouped: ``counts[g]`` targets have prior success ``values[g]``.

    Every theorem here is a law of sum_i Bern(beta(eps, p_i)) and a budget linear in per-target
    weights, symmetric in the targets, so the groups are a sufficient statistic: each theorem takes a
    Priors wherever it takes the per-target prior successes ``p`` (shape (n,)), with the same result
    (an array is grouped once, ``Priors.of``). With few distinct values this skips all O(n) work.

    ``values`` come out distinct and ascending (duplicates are merged, zero counts dropped).
    ``collision[g]`` (None: unknown) is the mean collision probability sum_x D_i(x)^2 over group g's
    targets, which only set-valued success uses (the weights are linear in 1 - c_i, so the mean
    is all they need); a theorem given a Priors reads the collision probabilities from it, and
    refuses a second ``collision=`` argument.
    """

    values: np.ndarray
    counts: np.ndarray
    collision: np.ndarray | None = None
    n: int = field(init=False)

    def __post_init__(self):
        values = _validate.probability("p", self.values)
        if values.ndim != 1:
            raise ValueError(f"p must be a 1-d array of distinct prior success values, got shape {values.shape}.")
        counts = np.asarray(self.counts)
        if counts.shape != values.shape or not np.issubdtype(counts.dtype, np.number) or np.any(
                ~np.isfinite(counts) | (counts < 0) | (counts != np.round(counts))):
            raise ValueError(f"counts must be integers >= 0, one per value of p (shape {values.shape}), got {self.counts!r}.")
        counts = counts.astype(np.int64)
        collision = None
        if self.collision is not None:
            collision = np.array(np.broadcast_to(_validate.probability("collision", self.collision), values.shape),
                                 dtype=float)
        if not np.all(counts > 0):
            keep = counts > 0
            values, counts = values[keep], counts[keep]
            collision = None if collision is None else collision[keep]
        if collision is not None:
            _check_collision(collision, values)
        if values.size > 1 and not np.all(values[1:] > values[:-1]):  # merge equal values (sorted)
            values, inverse = np.unique(values, return_inverse=True)
            merged = np.bincount(inverse, weights=counts, minlength=len(values)).astype(np.int64)
            if collision is not None:
                collision = np.bincount(inverse, weights=counts * collision, minlength=len(values)) / merged
            counts = merged
        n = int(np.sum(counts))
        if n < 1:
            raise ValueError("p must hold at least one prior success probability, got no targets (counts sum to 0).")
        self._set(values, counts, collision, n)

    def _set(self, values: np.ndarray, counts: np.ndarray, collision, n: int) -> None:
        for name, value in (("values", values), ("counts", counts), ("collision", collision), ("n", n)):
            object.__setattr__(self, name, value)

    @classmethod
    def _unchecked(cls, values: np.ndarray, counts: np.ndarray, collision=None) -> "Priors":
        """From np.unique's output on validated priors (distinct ascending values, int64 counts >= 1): no
        second pass over them (n = 1e6 distinct priors would pay ~13 ms for it)."""
        out = object.__new__(cls)
        out._set(values, counts.astype(np.int64, copy=False), collision, int(np.sum(counts)))
        return out

    @classmethod
    def of(cls, p, collision=None) -> "Priors":
        """The per-target prior successes p (n,) grouped, with each group's mean collision probability
        from the per-target (or one shared) ``collision``, None if unknown."""
        q = _priors(p)
        if collision is None:
            return cls._unchecked(*np.unique(q, return_counts=True))
        c = _validate.probability("collision", collision)
        if c.ndim > 1 or c.size not in (1, q.size):
            raise ValueError(f"collision must be one probability or one per target (shape ({q.size},)), "
                             f"got shape {c.shape}.")
        _check_collision(np.broadcast_to(c.ravel(), q.shape), q)
        values, inverse, counts = np.unique(q, return_inverse=True, return_counts=True)
        sums = np.bincount(inverse.ravel(), weights=np.broadcast_to(c.ravel(), q.shape), minlength=len(values))
        return cls._unchecked(values, counts, np.minimum(sums / counts, 1.0))

    def numerator_sums(self, set_valued: bool) -> np.ndarray:
        """The split theorem's weight numerators summed over each group: count (1 - p) for one exact
        guess, count (1 - c) for set-valued success (count with c unknown), 0 where p = 0 (no success
        set of a p = 0 target has prior mass, so none has posterior mass: no extra successes)."""
        if not set_valued:
            sums = self.counts * (1.0 - self.values)
        elif self.collision is None:
            sums = self.counts.astype(float)
        else:
            sums = self.counts * (1.0 - self.collision)
        return np.where(self.values == 0.0, 0.0, sums)


def _check_collision(collision: np.ndarray, p: np.ndarray) -> None:
    """Refuse a collision probability above p: c = sum_x pi(x)^2 <= max_x pi(x) <= p for every prior and every
    success family (a target the attack abstains on, p = 0, keeps its prior's c: its weight is 0 anyway)."""
    above = (collision > p * (1.0 + 1e-9) + 1e-15) & (p > 0)
    if np.any(above):
        i = int(np.flatnonzero(above)[0])
        raise ValueError(f"collision must be at most p for every target (sum_x pi(x)^2 <= max_x pi(x) <= p for any "
                         f"prior), got collision {float(collision[i])!r} > p = {float(p[i])!r} at index {i}; pass the "
                         "prior's own collision probability, or None (0, valid for every prior).")


def _grouped(p, collision=None) -> Priors:
    """p as Priors: a Priors as it is (its own collision probabilities), per-target arrays grouped once."""
    if isinstance(p, Priors):
        if collision is not None:
            raise ValueError("collision must be None when p is a Priors (a Priors carries its groups' collision "
                             f"probabilities), got {collision!r}; give it as Priors(values, counts, collision).")
        return p
    return Priors.of(p, collision)


def pure_epsilon_of(profile) -> float | None:
    """eps of an eps-DP profile (PureDP, or ApproxDP with delta = 0), else None.

    For such a profile every bound here uses Theorem 3.1 (``pure_dp_tail``: Bern(beta_i(eps)) dominance,
    the posterior argument) at the profile's own eps, never the (eps', delta(eps')) points of its curve
    below eps: the one-run theorem at eps' < eps goes below beta(eps, p) for p > 1/2, and an eps-DP
    mechanism attains beta(eps, p) exactly when success is a set of values (release an m-subset S of k
    values with Pr[S | x] proportional to e^eps if x in S, else 1, and guess S: e.g. eps = 1, p = 0.9
    attains 0.96073 while the eps' scan gave 0.94621). Theorem 3.1 holds for every success metric.
    """
    # ApproxDP's own answer (PureDP is one); other profiles that are eps-DP (composed Laplace events) keep the
    # theorems of their whole curve
    return profile.pure_epsilon() if isinstance(profile, ApproxDP) else None


#: The name and version of the theorem behind every non-pure bound here, recorded in metrics.json so
#: results computed under the paper's (invalid) one-run theorem can be told apart.
SPLIT_THEOREM = "split one-run theorem (THEORY.md Thm 1)"
SPLIT_THEOREM_VERSION = 2
#: The version of the default bound (the one_run box, count_bound): 2 = Theorem 1 alone; 3 = the minimum over
#: Theorem 1 (version 2), Theorem 3 (the whole prior, whole_prior.WHOLE_PRIOR_VERSION) and Theorem 3.1.
DEFAULT_BOUND_VERSION = 3


def _check_set_valued(set_valued) -> bool:
    if not isinstance(set_valued, (bool, np.bool_)):
        raise ValueError(f"set_valued must be True or False, got {set_valued!r}.")
    return bool(set_valued)


def _profile(profile, game: str = "reconstruction") -> PrivacyProfile:
    """The profile checked and made valid for ``game`` (an add/remove profile becomes replace-one
    in a reconstruction game: see ``profiles.for_game``)."""
    if not isinstance(profile, PrivacyProfile):
        raise ValueError(
            f"profile must be a PrivacyProfile (PureDP, ApproxDP, GaussianDP, DPSGD, ComposedGaussian), got {profile!r}."
        )
    return for_game(profile, game)


# --------------------------------------------------------------------------------------------
# Theorem 3.1: pure DP, conditional on the release
# --------------------------------------------------------------------------------------------
def pure_dp_tail(eps, p=None, v=None, *, distributions=None) -> float:
    """Theorem 3.1: Pr[successes >= v | release] <= Pr[sum_i Bern(beta_i(eps, p_i)) >= v].

    With ``distributions`` (each target's whole prior; p may then be None for one exact guess) the
    whole-prior theorem for PureDP(eps) (THEORY.md, Theorem 3) joins and the smaller bound is returned
    (that one is over the release, not conditional on it).

    ``p`` is the prior success of the attack's *actual* guesses for this release (an array (n,), or
    ``Priors``). ``eps`` is the
    mechanism's replace-one eps (the theorem replaces target i's record); an eps quoted for add/remove
    neighbours implies replace-one 2 eps (``profiles.replace_one_from_add_remove``).
    """
    e = float(_validate.positive("eps", eps, allow_zero=True, allow_inf=True))
    if v is None:
        raise ValueError("v must be given (a number of successes), got None.")
    g, dists = _targets_priors(p, distributions, False)
    v = _validate.integer("v", v)
    value = _pure_tail(e, g).value(v)
    if dists is not None and np.isfinite(e) and 0 < v <= dists.n:
        value = min(value, _whole_prior_tail(ApproxDP(e, 0.0), dists, v)[0])
    return value


def _pure_tail(eps: float, priors: Priors) -> Tail:
    """The tail of sum_i Bern(beta(eps, p_i)) (Theorem 3.1), from the groups of the priors."""
    return distribution_grouped(_beta_unchecked(eps, priors.values), priors.counts).tail()


def pure_dp_count_bound(eps, p=None, confidence=0.95, *, distributions=None):
    """Theorem 3.1 as a count: the smallest c with pure_dp_tail(eps, p, c + 1) <= 1 - confidence.

    With ``distributions`` the whole-prior theorem's count for PureDP(eps) joins and the smaller is returned.
    """
    e = float(_validate.positive("eps", eps, allow_zero=True, allow_inf=True))
    g, dists = _targets_priors(p, distributions, False)
    conf = _validate.confidence("confidence", confidence)
    tail = _pure_tail(e, g)
    out = np.array([tail.first_below(1.0 - c) - 1 for c in np.atleast_1d(conf)])
    if dists is not None and np.isfinite(e):
        out = np.minimum(out, _whole_prior_counts(ApproxDP(e, 0.0), dists, 1.0 - np.atleast_1d(conf)))
    return int(out[0]) if conf.ndim == 0 else out.reshape(conf.shape)


# --------------------------------------------------------------------------------------------
# The one-run theorem for (eps, delta) / f-DP profiles
# --------------------------------------------------------------------------------------------
def _normal_tail(mean: float, var: float, n: int) -> Tail:
    """A normal approximation of the tail of S* (mean, variance, n Bernoullis): steers searches, never a result."""
    sd = math.sqrt(max(var, 1e-12))
    lo = max(0, int(math.floor(mean - 12 * sd)))
    hi = min(n + 1, int(math.ceil(mean + 12 * sd)) + 1)
    rev = special.ndtr((mean - (np.arange(lo, hi + 1) - 0.5)) / sd)
    rev[0] = 1.0
    return Tail(lo, np.concatenate([[1.0], rev, [0.0]]), n)


def _budget_value(tail: Tail, v: int, m: float, j_hint: int | None = None) -> float:
    """The split theorem's value at one eps: min_{J >= 0} (sum_{i=0}^{J} T(v - i) + m) / (J + 1), capped at 1.

    ``T`` is (an upper bound on) the tail of S*, ``m`` the budget delta(eps) sum_i w_i(eps) of extra
    successes. For every J, 1[s + f >= v] <= (sum_{i=0}^{J} 1[s >= v - i] + f) / (J + 1) for integers
    s, f >= 0, so taking expectations with s <= S* coupled and E[f] <= m gives a valid bound
    (stages/bound/THEORY.md, Lemma 3); the minimum over J equals the LP max Pr[S* + F >= v] over
    all joint laws of (S*, F) with E[F] <= m (F filling the shortfall v - S* cheapest first).
    The average f(J) over J + 1 consecutive tail values plus m is unimodal in J (T(v - i) grows with
    i): f(J + 1) <= f(J) exactly when T(v - J - 1) <= f(J), and once T(v - J - 1) > f(J) it stays so
    (f(J + 1) is then a weighted mean of f(J) and T(v - J - 1), below the next term). So the minimiser
    is the first J with T(v - J - 1) (J + 1) > sum_{i<=J} T(v - i) + m. Writing a = v - J - 1, that test
    is evaluated for every a on T's support at once (window sums from suffix sums; below the support
    T = 1 and the test does not depend on a, above it T is constant and the test fails), and the value
    is re-summed term by term at the J found: every J gives a valid bound, so a rounding slip in the
    test can only cost optimality, never validity.
    """
    g0 = tail.value(v)
    if m <= 0.0 or g0 >= 1.0:  # T(v - i) >= T(v) = 1: every average is >= 1
        return min(1.0, g0)
    ext, suf = tail.ext, tail._suffix()
    base, size = tail.offset - 1, len(tail.ext)  # ext[k] = T(base + k)
    a_lo, a_hi = max(-2, base - 1), min(v - 1, base + size - 1)
    k_v = v - base
    upper = suf[k_v + 1] if k_v + 1 <= size else -float(ext[-1]) * (k_v + 1 - size)
    a_star = -2  # J = v + 1 when the test holds nowhere

    def holds(lo: int, hi: int) -> np.ndarray:  # the test for a = lo..hi
        k = np.arange(lo - base, hi - base + 1)  # k of a; k + 1 of a + 1 (both within [-1, size])
        window = suf[np.minimum(k + 1, size)] - upper  # sum_{u=a+1}^{v} T(u)
        return ext[np.maximum(k, 0)] * (v - (k + base)) > window + m

    # The test holds exactly for a <= a_star (up to rounding): look first around the a_star of the
    # previous call on this tail (nearby v have nearby J), else around ``j_hint`` (e.g. the J at a
    # nearby eps), then scan outwards in chunks of growing length: O(J) work at worst, one short
    # chunk when J barely moves.
    if a_lo <= a_hi:
        guess = min(max(v - 1 - getattr(tail, "_last_j", j_hint or 0), a_lo), a_hi)
        lo, hi = max(a_lo, guess - 24), min(a_hi, guess + 24)
        ok = holds(lo, hi)
        if ok[-1] and hi < a_hi:  # a_star lies above the chunk: scan upwards
            a_star, chunk = hi, 64
            while a_star < a_hi:
                lo, hi = a_star + 1, min(a_hi, a_star + chunk)
                ok = holds(lo, hi)
                if not ok.all():
                    false = np.flatnonzero(~ok)
                    a_star = lo + int(false[0]) - 1
                    break
                a_star, chunk = hi, chunk * 4
        elif ok.any():
            a_star = lo + int(np.flatnonzero(ok)[-1])
        else:  # a_star lies below the chunk (or nowhere): scan downwards
            top, chunk = lo - 1, 64
            while top >= a_lo:
                bottom = max(a_lo, top - chunk + 1)
                rises = np.flatnonzero(holds(bottom, top))
                if rises.size:
                    a_star = int(rises[-1] + bottom)
                    break
                top, chunk = bottom - 1, chunk * 4
    tail._last_j = v - 1 - a_star
    return float(min(1.0, (tail.window_sum(a_star + 1, v, exact=True) + m) / (v - a_star)))


def budget_weights(eps: float, p: np.ndarray, numerator: np.ndarray) -> np.ndarray:
    """w_i(eps) = numerator_i / (e^eps p_i + 1 - p_i), computed in log space (no overflow at any eps).

    The split theorem's per-target share of delta(eps) (stages/bound/THEORY.md, Lemma 2): numerator
    1 - p_i for one exact guess (then w_i = 1 - beta_i), 1 - c_i for set-valued success with c_i the
    collision probability sum_x D_i(x)^2 of target i's prior (0 when unknown, the safe side).
    """
    p = np.asarray(p, dtype=float)
    if np.ndim(eps) == 0 and 0.0 <= eps <= 700.0:  # e^eps is finite: 1 + p (e^eps - 1), a sum of non-negatives
        return np.asarray(numerator, dtype=float) / (1.0 + p * math.expm1(float(eps)))
    with np.errstate(divide="ignore"):
        log_den = np.logaddexp(eps + np.log(p), np.log1p(-p))
    return np.asarray(numerator, dtype=float) * np.exp(-log_den)


@dataclass
class _OneRun:
    """Evaluates the split theorem's objective B(v, eps) at m = delta(eps) sum_i w_i(eps), caching by eps.

    Works on the priors' groups throughout (``Priors``): the weights w_i are linear in their
    numerators (1 - p_i for one exact guess, 1 - c_i for set-valued success), so each group holds one
    summed numerator (``Priors.numerator_sums``).
    """

    profile: PrivacyProfile
    priors: Priors
    set_valued: bool = False
    approximate: bool = False
    n: int = field(init=False)
    cache: dict = field(default_factory=dict)

    def __post_init__(self):
        self.n = self.priors.n
        self.values, self.counts = self.priors.values, self.priors.counts
        self.numerator_sums = self.priors.numerator_sums(self.set_valued)
        self.weight_p = self.values
        self.weights = self.counts.astype(float)
        with np.errstate(divide="ignore"):
            self.logits = special.logit(self.values)
        if self.approximate:
            self._pool()

    def pooled(self) -> "_OneRun":
        """This run's normal approximation (``approximate=True``), built from its grouped priors."""
        out = copy.copy(self)
        out.approximate, out.cache, out._values = True, {}, {}
        out._pool()
        return out

    def _pool(self) -> None:
        if len(self.logits) > _APPROXIMATE_BINS:
            # The normal approximation only steers the search, so the priors may be pooled: one
            # weighted logit per narrow bin keeps the mean and variance of S* to ~1e-6 relative and
            # makes an evaluation cost O(bins), not O(n).
            finite = np.isfinite(self.logits)
            lg, w = self.logits[finite], self.weights[finite]
            edges = np.linspace(lg.min(), lg.max(), _APPROXIMATE_BINS + 1)
            idx = np.clip(np.searchsorted(edges, lg, side="right") - 1, 0, _APPROXIMATE_BINS - 1)
            total = np.bincount(idx, weights=w, minlength=_APPROXIMATE_BINS)
            moment = np.bincount(idx, weights=w * lg, minlength=_APPROXIMATE_BINS)
            nums = np.bincount(idx, weights=self.numerator_sums[finite], minlength=_APPROXIMATE_BINS)
            used = total > 0
            self.logits = np.concatenate([moment[used] / total[used], self.logits[~finite]])
            self.weights = np.concatenate([total[used], self.weights[~finite]])
            self.weight_p = special.expit(self.logits)
            self.numerator_sums = np.concatenate([nums[used], self.numerator_sums[~finite]])

    def at(self, eps: float):
        """(tail of S*_eps, budget m(eps) = delta(eps) sum_i w_i(eps)) at one eps."""
        eps = float(eps)
        if eps not in self.cache:
            b = special.expit(eps + self.logits)  # = beta(eps, p), exact at p in {0, 1} too
            if self.approximate:
                tail = _normal_tail(float(b @ self.weights), float((b * (1 - b)) @ self.weights), self.n)
            else:
                tail = distribution_grouped(b, self.counts).tail()
            d = self.profile.delta_upper(eps)
            m = d * float(np.sum(budget_weights(eps, self.weight_p, self.numerator_sums))) if d > 0 else 0.0
            self.cache[eps] = (tail, m)
        return self.cache[eps]

    def objective(self, eps: float, v: int) -> float:
        """B(v, eps) = min_J (sum_{i<=J} Pr[S*_eps >= v - i] + m(eps)) / (J + 1), capped at 1."""
        if v <= 0:
            return 1.0
        if v > self.n:
            return 0.0
        key = (float(eps), int(v))
        memo = self.__dict__.setdefault("_values", {})  # B(v, eps) by (eps, v): searches revisit points
        if key not in memo:
            tail, m = self.at(eps)
            memo[key] = _budget_value(tail, int(v), m, self.__dict__.get("_last_j"))
            self._last_j = getattr(tail, "_last_j", None)
        return memo[key]

    def search_objective(self, eps: float, v: int) -> float:
        """B(v, eps), tilted where it saturates at 1 so a minimiser sees which way the valley lies.

        The bound saturates for small eps (the budget m(eps) covers the shortfall to v) and for large
        eps (S*'s mass lies at or above v). The tilt grows with m on the left and with the mean of S*
        (and its support) above v on the right; it only steers the search, never a result.
        """
        value = self.objective(eps, v)
        if value < 1.0:
            return value
        tail, m = self.at(eps)
        return 1.0 + 1e-3 * (max(0.0, self.mean(eps) - v) + max(0, tail.offset + 1 - v) + min(m, self.n)) / self.n

    def mean(self, eps: float) -> float:
        """E[S*_eps] = sum_i beta(eps, p_i) (steers the search where the bound saturates)."""
        return float(special.expit(float(eps) + self.logits) @ self.weights)

    def smallest_passing(self, eps: float, t: float, hint: int | None = None) -> int:
        """The smallest v with B(v, eps) <= t (B is non-increasing in v: every T(v - i) is).

        The bracket starts from the lower bound where T alone drops to t (B >= T) and, with a
        ``hint`` (a nearby answer, e.g. at a neighbouring eps), from the hint and its neighbour, which
        settles an exact hint in two evaluations. Inside the bracket an interpolation search on
        log B (the Illinois variant of regula falsi; bisection where B saturates at 1 or is 0) finds
        the crossing in a few evaluations where plain bisection takes log2 of the bracket's width.
        """
        tail, m = self.at(eps)
        lo, hi = max(1, tail.first_below(t)) - 1, self.n + 1  # B(lo) > t (B >= T), B(hi) = 0 <= t
        b_lo, b_hi = None, 0.0
        if hint is not None and lo < hint < hi:
            b = self.objective(eps, hint)
            if b <= t:
                hi, b_hi = hint, b
                if hi - 1 > lo:
                    b = self.objective(eps, hi - 1)
                    if b > t:
                        return hi
                    hi, b_hi = hi - 1, b
            else:
                lo, b_lo = hint, b
                if lo + 1 < hi:
                    b = self.objective(eps, lo + 1)
                    if b <= t:
                        return lo + 1
                    lo, b_lo = lo + 1, b
        elif m < t:  # B(v) <= T(v) + m (the J = 0 term)
            cand = max(lo + 1, tail.first_below(t - m))
            if cand < hi:
                b = self.objective(eps, cand)
                if b <= t:
                    hi, b_hi = cand, b
        if b_lo is None:
            b_lo = self.objective(eps, lo) if lo >= 1 else 1.0
        log_t = math.log(t) if t > 0 else -math.inf
        w_lo = w_hi = 1.0  # Illinois weights: an end kept twice in a row has its weight halved
        last = 0
        steps, budget = 0, 2 * max(1, (hi - lo).bit_length()) + 4
        while hi - lo > 1:  # invariant: B(lo) > t (or lo = 0), B(hi) <= t
            mid = (lo + hi) // 2
            if 0.0 < b_hi and b_lo < 1.0 and t > 0 and steps < budget:
                g_lo, g_hi = (math.log(b_lo) - log_t) * w_lo, (math.log(b_hi) - log_t) * w_hi  # > 0, <= 0
                if g_lo - g_hi > 0:
                    mid = min(max(int(round(lo + (hi - lo) * g_lo / (g_lo - g_hi))), lo + 1), hi - 1)
            steps += 1
            b = self.objective(eps, mid)
            if b <= t:
                hi, b_hi, w_hi = mid, b, 1.0
                w_lo = w_lo / 2 if last == 1 else 1.0
                last = 1
            else:
                lo, b_lo, w_lo = mid, b, 1.0
                w_hi = w_hi / 2 if last == -1 else 1.0
                last = -1
        return hi

    def eps_max(self, scale: float) -> float:
        """Beyond this eps the objective cannot drop below (1 - 1e-9) of its value here."""
        top = min(self.profile.max_useful_epsilon, EPS_CEILING)
        target = max(1e-9 * scale / self.n, 1e-300)
        try:
            e = self.profile.epsilon(target)
        except (ValueError, OverflowError):
            e = math.inf
        return float(min(top, e)) if np.isfinite(min(top, e)) else top

    def grid(self, top: float, k: int = 10) -> np.ndarray:
        if top <= 0:
            return np.array([0.0])
        return np.unique(np.concatenate([[0.0], np.geomspace(top / 2 ** (k - 2), top, k - 1)]))

    def scan_grid(self, v: int, top: float) -> np.ndarray:
        """eps values on which every valley of B(v, .) shows as a local minimum of the grid.

        B(v, .) is not unimodal in eps (the LP's tangent point moves in steps), so refining around the
        best point of a coarse grid can miss a deeper valley. The coarse geometric grid up to ``top``
        finds the span where B(v, .) < 1 (outside it the bound saturates at 1); inside the span the
        grid is the points of a fixed lattice (_SCAN_PER_OCTAVE geometric points per octave and
        _SCAN_LINEAR linear ones up to ``top``), shared by every v so that their distributions of S*
        are computed once.
        """
        coarse = self.grid(top, 16)
        vals = np.array([self.search_objective(e, v) for e in coarse])
        inside = np.flatnonzero(vals < 1.0)
        if inside.size == 0:  # saturated on the whole coarse grid: look around the tilt's minimum
            inside = np.array([int(np.argmin(vals))])
        lo = float(coarse[max(inside[0] - 1, 0)])
        hi = float(coarse[min(inside[-1] + 1, len(coarse) - 1)])
        if top <= 0:
            return coarse
        octaves = np.arange(0, 14 * _SCAN_PER_OCTAVE + 1) / _SCAN_PER_OCTAVE
        lattice = np.concatenate([top * 2.0**-octaves, np.linspace(0.0, top, _SCAN_LINEAR + 1)])
        grid = np.unique(np.concatenate([coarse, lattice[(lattice >= lo) & (lattice <= hi)]]))
        # merge points that coincide up to rounding (the two lattices share top / 2^k): a valley's
        # bracket must reach its real neighbours
        return grid[np.concatenate([[True], np.diff(grid) > 1e-9 * grid[1:]])]

    def valleys(self, grid: np.ndarray, v: int) -> list[tuple[float, float, float]]:
        """(grid value, lo, hi) for every local minimum of B(v, .) on the grid, lo and hi its neighbours."""
        vals = np.array([self.search_objective(e, v) for e in grid])
        out = []
        for i in range(len(grid)):
            left = vals[i - 1] if i > 0 else math.inf
            right = vals[i + 1] if i + 1 < len(grid) else math.inf
            if vals[i] < left and vals[i] <= right:  # strict on the left: a plateau counts once
                out.append((float(vals[i]), float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])))
        return out


def tail_bound_at(profile, p, v, eps, *, distributions=None, game: str = "reconstruction", set_valued: bool = False,
                  collision=None) -> float:
    """The split one-run theorem at a fixed eps (no minimisation over eps):

    min_{J >= 0} (sum_{i=0}^{J} Pr[S*_eps >= v - i] + delta(eps) sum_i w_i(eps)) / (J + 1).

    For an eps-DP profile only eps >= the profile's eps is allowed (there delta(eps) = 0 and this is
    Theorem 3.1); below it the point is not a valid bound (see ``pure_epsilon_of``).
    ``p``, ``set_valued``, ``collision`` and ``distributions`` as in tail_bound; with ``distributions`` (one
    exact guess) the whole-prior theorem at thresholds q_i = beta(eps, p_i) joins (the smaller is returned).
    """
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    g, dists = _targets_priors(p, distributions, set_valued, collision)
    v = _validate.integer("v", v)
    e = float(_validate.positive("eps", eps, allow_zero=True, allow_inf=True))
    pure = pure_epsilon_of(profile)
    if pure is not None and e < pure:
        raise ValueError(f"eps must be >= the profile's eps = {pure!r} for {profile!r} (Theorem 3.1 holds at the "
                         f"profile's eps, the one-run point below it is not a valid bound), got {e!r}.")
    value = float(_OneRun(profile, g, set_valued).objective(e, v))
    if dists is not None and np.isfinite(e):
        value = min(value, _WholePriorRun(profile, dists).objective(e, v))
    return value


def tail_bound(profile, p=None, v=None, *, distributions=None, return_eps: bool = False, rtol: float = 1e-7,
               game: str = "reconstruction", set_valued: bool = False, collision=None):
    """The split one-run theorem (stages/bound/THEORY.md, Theorem 1): for every attack,

    Pr[successes >= v] <= min_{eps >= 0} min_{J >= 0} (sum_{i=0}^{J} Pr[S*_eps >= v - i] + m(eps)) / (J + 1)

    with S*_eps = sum_i Bern(beta(eps, p_i)), p_i the prior success of the a-priori Bayes-optimal
    guess z* (the largest prior mass of a success set of target i), and the budget
    m(eps) = delta(eps) sum_i w_i(eps) of "extra" successes: w_i = (1 - p_i) / (e^eps p_i + 1 - p_i)
    = 1 - beta_i for one exact guess, w_i = (1 - c_i) / (e^eps p_i + 1 - p_i) when success is
    set-valued (k > 1 guesses, a distance window), c_i = sum_x D_i(x)^2 the prior's collision
    probability (``collision``; None means 0, valid for every prior).

    ``p`` is the per-target array (n,) or the same grouped, ``Priors`` (which then carries the
    collision probabilities); a per-target array is grouped once, so both give the same bound.

    This replaces the paper's thm:eps_bound_approx_comp / f_comp and Steinke, Nasr & Jagielski's
    Thm 5.2, which exact DP mechanisms beat (THEORY.md, section 5). The J = 0 term is the additive
    form Pr[S* >= v] + m(eps); larger J spread the budget over the shortfall, which is the exact LP
    max Pr[S* + F >= v] over all couplings of S* with extra successes F, E[F] <= m.

    The objective is not unimodal in eps, so the outer minimum is found on a grid that resolves every
    valley (``_OneRun.scan_grid``) and Brent's method in each valley, to ``rtol`` relative; the value
    returned is attained at the returned eps (a valid bound, never an interpolation).

    ``game``: "reconstruction" (the default; also attribute inference) or "membership" (X_i is a
    membership bit); in a reconstruction game an add/remove profile is replaced by the replace-one
    profile of the same mechanism (``profiles.for_game``), as the theorem compares datasets that
    differ by replacing target i's record.

    An eps-DP profile (PureDP, ApproxDP with delta = 0) gets Theorem 3.1 at its own eps instead
    (``pure_dp_tail``; returned eps = the profile's): valid for every success metric, whereas the scan
    over its curve's eps' < eps is not (``pure_epsilon_of``).

    ``distributions``: each target's whole prior (a 2-d array (n, d), a sequence of 1-d arrays, or
    ``whole_prior.Distributions``). With them, for one exact guess, p may be None (p_i = max pi_i) and
    the whole-prior theorem (THEORY.md, Theorem 3) joins: the smaller bound is returned, and
    ``return_eps`` returns the winning theorem's parameter (eps for Theorems 1 and 3.1, the threshold
    parameter t for Theorem 3, nan for MMC's tail bound, which joins for one exact guess on priors 1/k:
    stages/bound/MMC_CHECK.md).
    """
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    pure = pure_epsilon_of(profile)
    if v is None:
        raise ValueError("v must be given (a number of successes), got None.")
    # Theorem 3.1 needs no collision
    g, dists = _targets_priors(p, distributions, set_valued, collision if pure is None else None)
    v = _validate.integer("v", v)
    if v <= 0:
        return (1.0, 0.0) if return_eps else 1.0
    if v > g.n:
        return (0.0, 0.0) if return_eps else 0.0
    value, best = _split_tail(profile, g, v, pure, set_valued, rtol)
    if dists is not None:
        whole, t = _whole_prior_tail(profile, dists, v)
        if whole < value:
            value, best = whole, t
    if not set_valued and pure is None and _mmc_applies(g):
        from . import prior_work

        mmc = prior_work.mmc_tail_bound(profile, np.repeat(g.values, g.counts), v)
        if mmc < value:
            value, best = mmc, math.nan  # MMC's bound has no eps parameter
    return (value, best) if return_eps else value


def split_tail_bound(profile, p, v, *, return_eps: bool = False, rtol: float = 1e-7, game: str = "reconstruction",
                     set_valued: bool = False, collision=None):
    """Theorem 1 (the split theorem; Theorem 3.1 for an eps-DP profile) alone: ``tail_bound`` without the
    whole-prior theorem and MMC. Arguments as in tail_bound; the eps returned certifies the value
    (``tail_bound_at(profile, p, v, eps)`` gives it back)."""
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    pure = pure_epsilon_of(profile)
    g = _grouped(p, collision if set_valued and pure is None else None)
    v = _validate.integer("v", v)
    if v <= 0:
        return (1.0, 0.0) if return_eps else 1.0
    if v > g.n:
        return (0.0, 0.0) if return_eps else 0.0
    value, best = _split_tail(profile, g, v, pure, set_valued, rtol)
    return (value, best) if return_eps else value


def _split_tail(profile, g: Priors, v: int, pure, set_valued: bool, rtol: float) -> tuple[float, float]:
    if pure is not None:
        return _pure_tail(pure, g).value(v), pure
    return _minimise_over_eps(_OneRun(profile, g, set_valued), v, rtol)


def _minimise_over_eps(run: "_OneRun", v: int, rtol: float = 1e-7) -> tuple[float, float]:
    """(min over eps of run.objective(eps, v), the eps attaining it), every valley refined.

    The objective is not unimodal in eps, so its valleys are found on a lattice
    (``_OneRun.scan_grid``; a coarse grid for one target, which has no steps) and Brent's method runs
    in every valley within _VALLEY_RTOL of the best, after one zoom into each lattice bracket.
    """
    f = lambda e: run.search_objective(e, v)
    scale = max(run.at(0.0)[0].value(v), 1e-300)  # the objective is >= T_0(v)
    top = run.eps_max(scale)
    lattice = run.n > 1
    valleys = run.valleys(run.scan_grid(v, top) if lattice else run.grid(top, 16), v)
    best_grid = min(value for value, _, _ in valleys)
    for value, lo, hi in valleys:
        if value > best_grid * (1.0 + _VALLEY_RTOL) or hi <= lo:
            continue
        # the lattice bracket may still hold several teeth of the objective: zoom in once, and run
        # Brent's method in every local minimum of the zoomed grid
        zoom = np.linspace(lo, hi, _ZOOM_POINTS if lattice else 2)
        zoomed = run.valleys(zoom, v)
        best_zoom = min(z for z, _, _ in zoomed)
        for z, zlo, zhi in zoomed:
            if z <= best_zoom * (1.0 + _VALLEY_RTOL) and zhi > zlo:
                optimize.minimize_scalar(
                    f, bounds=(zlo, zhi), method="bounded",
                    options={"xatol": max(1e-12, rtol * max(zhi, 1e-9)), "maxiter": 200},
                )
    best = min(run.cache, key=lambda e: run.objective(e, v))
    return run.objective(best, v), best


#: From this many targets count_bound seeds its exact search with a normal approximation.
_APPROXIMATE_FROM = 20000
#: From this many targets count_bound searches on the normal approximation and certifies exactly only
#: the count found for each target (``_count_fast``); up to 10^4 every eps it tries is exact.
_FAST_FROM = 10**4 + 1
#: _count_fast falls back to the exact search for a target whose exact count at the approximation's
#: eps differs from the approximation's count by more than this.
_FAST_SLACK = 1
#: The normal approximation pools the priors into this many bins of logit(p).
_APPROXIMATE_BINS = 4096
#: From this many targets count_bound looks for the valleys of the bound on a normal approximation
#: (cheap), and refines exactly those whose approximate value is within _APPROX_VALLEY_RTOL of the target.
_SCAN_APPROXIMATE_FROM = 2000
_APPROX_VALLEY_RTOL = 0.1




def _count_search(
    run: "_OneRun",
    targets: np.ndarray,
    seeds,
    brackets: dict | None = None,
    hints: dict | None = None,
    scan: "_OneRun | None" = None,
    top: float = EPS_CEILING,
    shared: bool = True,
    xtol: float = 1e-4,
) -> list[int]:
    """For each target t, the smallest v - 1 such that some evaluated eps has B(v, eps) <= t.

    Starting from the seed eps values, alternates Brent's method on eps -> B(v - 1, eps) with a jump
    to the smallest v that passes at any evaluated eps, until v no longer improves. Brent runs to
    ``xtol`` (1e-4) relative in eps, which puts B within ~1e-8 relative of its minimum (the valley is smooth).
    B(v - 1, .) is not unimodal in eps, so when the valley next to the certifying eps does not pass,
    every other valley of B(v - 1, .) is looked for on ``scan``'s grid (``_OneRun.scan_grid``; ``scan``
    is ``run`` itself, or a cheap normal approximation of it for large n) and those whose grid value
    is within _VALLEY_RTOL of t are refined on ``run``.
    Records the eps that certified each target in ``run.best_eps``. With ``shared=False`` a target
    only examines the seeds and the eps evaluated while searching for it, not those of the targets
    before it (cheaper; for a search that only steers, like _count_fast's on the normal approximation).
    ``xtol``: Brent's relative tolerance in eps.
    """
    n = run.n
    scan = run if scan is None else scan
    for e in seeds:
        run.at(float(min(max(e, 0.0), EPS_CEILING)))
    memo: dict = {}

    def objective(eps: float, v: int) -> float:
        if (eps, v) not in memo:
            memo[(eps, v)] = run.objective(eps, v)
        return memo[(eps, v)]

    checked: dict = {}
    brents: dict = {}  # v -> the brackets Brent's method ran on for B(v, .)

    def improve(t: float, v: int, e, hint: int | None = None):
        """The smallest passing v over all evaluated eps, starting from a known passing (v, e).

        An eps already checked for this target cannot improve v again (v only decreases), so only
        eps values evaluated since the last call are examined.
        The result does not depend on the order in which they are examined, only the cost does: the
        most promising eps go first (the lowest B(v - 1, .), or while nothing passes yet the lowest
        count certified by the J = 0 term T(v) + m), so that the others are ruled out by one evaluation.
        """
        seen = checked.setdefault(t, set())
        pending = sorted(set(run.cache) - seen)
        seen.update(pending)

        def first_pass(eps: float):  # while nothing passes: the count the J = 0 term T(v) + m certifies
            tail, m = run.at(eps)
            return (tail.first_below(t - m) if m < t else n + 1, tail.first_below(t))

        while pending:
            if v > n:  # nothing known yet: search from the hint (or the last answer)
                eps = min(pending, key=first_pass)
                pending.remove(eps)
                v, e = run.smallest_passing(eps, t, hint), eps
                hint = v
                continue
            if v <= 1:
                break
            # B is non-increasing in v: an eps with B(v - 1, eps) > t can never beat v (nor any smaller v)
            # (B >= T: the tail alone rules most of them out without the budget's minimum over J)
            pending = [x for x in pending if run.at(x)[0].value(v - 1) <= t and objective(x, v - 1) <= t]
            if not pending:
                break
            eps = min(pending, key=lambda x: objective(x, v - 1))
            pending.remove(eps)
            v, e = run.smallest_passing(eps, t, hint=v - 1), eps
        return v, e

    def minimise(v: int, centre: float, bracket=None) -> None:
        """Brent's method on eps -> B(v, eps) near ``centre`` (the eps certifying the current v).

        The bracket is the given one, else the neighbours of the best of the few cached eps around
        the centre (the valley of B(v, .) lies next to where v + 1 passes), widened at the ends.
        """
        if bracket is None:
            eps_sorted = sorted(run.cache)
            c = eps_sorted.index(centre) if centre in run.cache else len(eps_sorted) // 2
            window = range(max(c - 3, 0), min(c + 4, len(eps_sorted)))
            k = min(window, key=lambda i: run.search_objective(eps_sorted[i], v))
            lo, hi = eps_sorted[max(k - 1, 0)], eps_sorted[min(k + 1, len(eps_sorted) - 1)]
            if k == len(eps_sorted) - 1 and hi < EPS_CEILING:  # the valley may lie beyond
                hi = min(2 * hi + 1e-3, EPS_CEILING)
            if k == 0 and lo > 0:
                lo = lo / 2
        else:
            lo, hi = bracket
        for _ in range(4):  # a minimum at an edge of the bracket: the valley goes on beyond it
            if not hi > lo:
                return
            tol = max(1e-12, xtol * hi)
            brents.setdefault(v, []).append((lo, hi))
            x = float(optimize.minimize_scalar(
                lambda e: run.search_objective(e, v),
                bounds=(lo, hi),
                method="bounded",
                options={"xatol": tol, "maxiter": 100},
            ).x)
            if x >= hi - 4 * tol and hi < EPS_CEILING and run.search_objective(hi, v) <= run.search_objective(x, v):
                above = [e for e in run.cache if e > hi * (1 + 1e-9)]
                lo, hi = hi, min(min(above) if above else 2 * hi + 1e-3, EPS_CEILING)
            elif x <= lo + 4 * tol and lo > 0 and run.search_objective(lo, v) <= run.search_objective(x, v):
                below = [e for e in run.cache if e < lo * (1 - 1e-9)]
                lo, hi = (max(below) if below else lo / 2), lo
            else:
                return

    def other_valleys(v: int, centre: float, t: float) -> bool:
        """Brent's method in every valley of B(v, .) that may reach t and was not refined yet.

        A valley counts as refined when Brent's method already ran on a bracket inside it: a wider
        bracket (Brent's first one around ``centre`` may span several valleys) can miss its minimum.
        """
        refined = False
        for value, lo, hi in scan.valleys(scan.scan_grid(v, top), v):
            margin = _VALLEY_RTOL if scan is run else _APPROX_VALLEY_RTOL
            if value >= 1.0 or value > t * (1.0 + margin):
                continue
            if any(lo <= a and b <= hi for a, b in brents.get(v, ())):
                continue
            minimise(v, centre, (lo, hi))
            refined = True
        return refined

    out = []
    run.best_eps = {}
    seed_set = {float(min(max(e, 0.0), EPS_CEILING)) for e in seeds}
    for t in targets:
        if not shared:  # each target examines only the seeds and the eps evaluated for it
            checked[t] = set(run.cache) - seed_set
        v, e = improve(t, n + 1, None, (hints or {}).get(float(t)))
        bracket = (brackets or {}).get(float(t))
        while v > 1:
            minimise(v - 1, e, bracket)
            bracket = None
            new_v, new_e = improve(t, v, e)
            if new_v >= v and other_valleys(v - 1, e, t):
                new_v, new_e = improve(t, v, e)
            if new_v >= v:
                break
            v, e = new_v, new_e
        run.best_eps[float(t)] = e
        out.append(v - 1)
    return out


def _count_exact(run: "_OneRun", targets: np.ndarray) -> list[int]:
    """count_bound's search with the exact distribution of S* at every eps it evaluates."""
    if run.n >= _APPROXIMATE_FROM:
        # Locate each target's eps on a normal approximation of S* (cheap), then search exactly
        # from there: every count returned is still certified by an exact evaluation.
        approx = run.pooled()
        top = approx.eps_max(float(np.min(targets)))
        guess = _count_search(approx, targets, seeds=approx.grid(top, 10), top=top)
        return _count_exact_from(run, approx, targets, guess, top)
    top = run.eps_max(float(np.min(targets)))
    scan = run.pooled() if run.n >= _SCAN_APPROXIMATE_FROM else None
    return _count_search(run, targets, seeds=run.grid(top, 10), top=top, scan=scan)


def _count_exact_from(run: "_OneRun", approx: "_OneRun", targets, guess, top: float) -> list[int]:
    """The exact search seeded with the eps and counts ``approx``'s search found for ``targets``."""
    targets = np.asarray(targets, dtype=float)
    found = {float(t): e for t, e in approx.best_eps.items() if e is not None}
    seeds = list(found.values()) or list(approx.grid(top, 10))
    brackets = {t: (e / 1.02, e * 1.02) for t, e in found.items()}
    hints = {float(t): c + 1 for t, c in zip(targets, guess)}
    return _count_search(run, targets, seeds=seeds, brackets=brackets, hints=hints, scan=approx, top=top)


def _count_fast(run: "_OneRun", targets: np.ndarray) -> list[int]:
    """count_bound for large n: search on the normal approximation, certify each count exactly.

    The whole search over (v, eps) runs on the pooled normal approximation of S* (``_OneRun.pooled``,
    O(bins) per eps); then, for each target, the exact law of S* at the eps it found gives the
    smallest v with B(v, eps) <= t (``smallest_passing``): the count returned is certified exactly, as
    every count here is. Only where the exact count at that eps differs from the approximation's by
    more than _FAST_SLACK (the approximation is off there) does the exact search run, seeded as in
    ``_count_exact``. Against the exact search this costs at most a target or so (the certifying eps
    is the approximation's optimum, not the exact one's; tests/benchmarks/bench_count_bound.py measures
    it) and saves all but one exact evaluation of S* per target (~0.25 s each at n = 1e6).
    """
    approx = run.pooled()
    top = approx.eps_max(float(np.min(targets)))
    # eps to 1e-3 relative: the count is flat at its optimum (the loss is ~1e-3^2 c'' / 2, < 0.1 target
    # at n = 1e6), and the exact certification below does not depend on the search's precision
    guess = _count_search(approx, targets, seeds=approx.grid(top, 10), top=top, shared=False, xtol=1e-3)
    out, redo = [], []
    for i, (t, g) in enumerate(zip(targets, guess)):
        e = approx.best_eps.get(float(t))
        if e is None:
            out.append(run.n)
            redo.append(i)
            continue
        v = run.smallest_passing(e, float(t), hint=g + 1)
        out.append(v - 1)
        if abs((v - 1) - g) > _FAST_SLACK:
            redo.append(i)
    if redo:
        exact = _count_exact_from(run, approx, targets[redo], [guess[i] for i in redo], top)
        for i, c in zip(redo, exact):
            out[i] = min(out[i], c)  # both certified
    return out


def count_bound(profile, p=None, confidence=0.95, *, distributions=None, game: str = "reconstruction",
                set_valued: bool = False, collision=None):
    """The smallest c with tail_bound(profile, p, c + 1) <= 1 - confidence, for each confidence: the smallest
    count over every theorem that applies (``count_bounds``, which also says which theorem gave each count).

    "With probability >= confidence, the attack succeeds on at most c of the n targets." Every
    count returned is certified by a point at which a proven bound is <= 1 - confidence (evaluated
    exactly), so it is valid whatever the searches do. The split theorem (Theorem 1): up to n = 1e4
    targets its search over eps (see _count_search) evaluates the bound exactly and visits every valley
    tail_bound does, so c agrees with the definition; beyond, it runs on a normal approximation of S*
    and only the eps it ends at is evaluated exactly (``_count_fast``), which may return c up to about
    one target above the definition (measured: at most 1 on Beta and uniform priors, n = 2e4 - 1e6;
    0.2 s at n = 1e5, 1-1.5 s at 1e6 for three confidences). ``p``, ``game``, ``set_valued`` and
    ``collision`` as in tail_bound (an add/remove profile is made replace-one for reconstruction; an
    eps-DP profile gets Theorem 3.1, ``pure_dp_count_bound``, at its own eps).

    ``distributions``: each target's whole prior (a 2-d array (n, d), a sequence of 1-d arrays, or
    ``whole_prior.Distributions``); with them, for one exact guess, ``p`` may be None (p_i = max pi_i)
    and the whole-prior theorem (THEORY.md, Theorem 3) joins the minimum.
    """
    counts, _ = count_bounds(profile, p, confidence, distributions=distributions, game=game, set_valued=set_valued,
                             collision=collision)
    return counts


def count_bounds(profile, p=None, confidence=0.95, *, distributions=None, game: str = "reconstruction",
                 set_valued: bool = False, collision=None):
    """(counts, {theorem name: counts}): ``count_bound``'s counts and every applicable theorem's own.

    The theorems: Theorem 3.1 (eps-DP profiles), the split theorem (Theorem 1, every other profile), with
    ``distributions`` for one exact guess the whole-prior theorem (Theorem 3, skipped on uniform priors), and for
    one exact guess on priors 1/k (abstentions 0) MMC's one-run count (checked step by step in
    stages/bound/MMC_CHECK.md; up to MMC_MAX_TARGETS guessed targets). ``counts`` is their
    minimum, per confidence; ``winner(by_theorem)`` names the theorem that gave it. Shapes follow
    ``confidence`` (an int for a scalar).
    """
    profile = _profile(profile, game)
    set_valued = _check_set_valued(set_valued)
    pure = pure_epsilon_of(profile)
    g, dists = _targets_priors(p, distributions, set_valued, None if pure is not None else collision)
    conf = _validate.confidence("confidence", confidence)
    confs = np.atleast_1d(conf)
    targets = 1.0 - confs
    # the same targets bounded again (an attack's variants share the prior and the release's profile): memoised
    key = (repr(profile), set_valued, g.values.tobytes(), g.counts.tobytes(),
           None if g.collision is None else g.collision.tobytes(),
           None if dists is None else (tuple(s.key for s in dists.shapes), dists.counts.tobytes()), confs.tobytes())
    if key in _COUNTS_MEMO:
        out, by = _COUNTS_MEMO[key]
    else:
        out, by = _count_bounds(profile, g, dists, pure, set_valued, confs, targets)
        if len(_COUNTS_MEMO) >= 256:
            _COUNTS_MEMO.clear()
        _COUNTS_MEMO[key] = (out, by)
    shape = lambda a: int(a[0]) if conf.ndim == 0 else np.array(a).reshape(conf.shape)  # a copy: the memo stays
    return shape(out), {name: shape(v) for name, v in by.items()}


_COUNTS_MEMO: dict = {}


def _count_bounds(profile, g: Priors, dists, pure, set_valued: bool, confs: np.ndarray, targets: np.ndarray):
    """count_bounds' work: each applicable theorem's counts and their minimum (arrays over the confidences)."""
    by: dict[str, np.ndarray] = {}
    if pure is not None:
        by[PURE_THEOREM] = np.atleast_1d(pure_dp_count_bound(pure, g, confs))
    else:
        run = _OneRun(profile, g, set_valued)
        by[SPLIT_THEOREM] = np.array((_count_fast if g.n >= _FAST_FROM else _count_exact)(run, targets), dtype=int)
    if dists is not None and not dists.uniform:
        by[whole_prior.WHOLE_PRIOR_THEOREM] = np.array(_whole_prior_counts(profile, dists, targets), dtype=int)
    if not set_valued and pure is None:
        mmc = _mmc_counts(profile, g, confs)
        if mmc is not None:
            by[MMC_THEOREM] = mmc
    return np.min(np.stack(list(by.values())), axis=0), by


def winner(by_theorem: dict) -> list[str] | str:
    """The theorem giving the smallest value (per entry for arrays; the first listed wins a tie)."""
    names = list(by_theorem)
    vals = np.stack([np.atleast_1d(np.asarray(v, dtype=float)) for v in by_theorem.values()])
    best = [names[i] for i in np.argmin(vals, axis=0)]
    return best[0] if np.ndim(next(iter(by_theorem.values()))) == 0 else best


#: MMC's count in the theorem records, and the most guessed targets it runs on (its recursion is O(n) Python steps
#: an evaluation: 0.26 s at n = 1e3, 3.5 s at 1e4).
MMC_THEOREM = "MMC one-run count (ICML 2025 Thm 3.2)"
MMC_MAX_TARGETS = 2000


def _mmc_counts(profile: PrivacyProfile, g: Priors, confs: np.ndarray):
    """MMC's count where its conditions hold (stages/bound/MMC_CHECK.md: one exact guess, independent priors, every
    guessed target's prior success 1/k for one k, a replace-one profile, which the caller has made it), else None."""
    from . import prior_work

    if not _mmc_applies(g):
        return None
    return np.atleast_1d(prior_work.mmc_bound(profile, np.repeat(g.values, g.counts), confidence=confs)).astype(int)


def _mmc_applies(g: Priors) -> bool:
    """Every guessed target's prior success is 1/k for one k (abstentions 0), at most MMC_MAX_TARGETS guessed."""
    from . import prior_work

    n_guessed = int(np.sum(g.counts[g.values > 0]))
    if n_guessed == 0 or n_guessed > MMC_MAX_TARGETS:
        return False
    try:
        prior_work.uniform_candidates(g.values, bound="mmc")
    except ValueError:
        return False
    return True


#: Theorem 3.1's name in the theorem records.
PURE_THEOREM = "Theorem 3.1 (eps-DP, the posterior argument)"


# --------------------------------------------------------------------------------------------
# Theorem 3: the whole prior (stages/bound/THEORY.md, section 8; whole_prior.py computes phi)
# --------------------------------------------------------------------------------------------
#: Points of the coarse grid of the threshold parameter t (q_i = expit(t + logit p_i)) and the lowest t.
_WP_GRID = 48
_WP_T_LOW = -8.0
#: Points of the node grid at which phi is solved (the chords between them bound phi everywhere else).
_WP_NODES = 8
#: Refinement rounds around the best grid point (each halves the step, 4 points a side).
_WP_REFINE = 4


def _targets_priors(p, distributions, set_valued: bool, collision=None, name: str = "p"):
    """(the split theorem's Priors, the targets' whole priors as whole_prior.Distributions or None).

    Without ``distributions`` this is ``_grouped(p, collision)``. With them, for one exact guess p may be
    None (p_i = max pi_i is derived) or must agree with it; for set-valued success p is required (it
    depends on the success sets) and the collision probabilities come from the distributions.
    """
    if distributions is None:
        if p is None:
            raise ValueError(f"{name} must be given (the targets' prior successes) unless distributions= gives "
                             "their whole priors, got None.")
        return _grouped(p, collision if set_valued else None), None
    if collision is not None:
        raise ValueError(f"collision must be None when distributions are given (it is derived from them), got {collision!r}.")
    dists = Distributions.of(distributions)
    if set_valued:
        if p is None:
            raise ValueError(f"{name} must be given for set-valued success (the prior mass of the best success set "
                             "depends on the metric), got None; pass p with distributions=.")
        g = _grouped(p)
        if g.n != dists.n:
            raise ValueError(f"{name} and distributions must describe the same targets, got {g.n} prior successes "
                             f"and {dists.n} distributions.")
        # the split theorem's set-valued weights need only the mean of 1 - c_i over each p-group; without the
        # pairing of p_i to distributions the safe choice is the smallest collision probability of any target
        c = float(np.min(dists.collision))
        return Priors._unchecked(g.values, g.counts, np.full(g.values.shape, c)), None
    derived = Priors._unchecked(*_merge(dists.p, dists.counts))
    if p is not None:
        g = _grouped(p)
        if g.n != derived.n or g.values.shape != derived.values.shape or not (
                np.allclose(g.values, derived.values, rtol=1e-9, atol=1e-12) and np.array_equal(g.counts, derived.counts)):
            raise ValueError(f"{name} must be the largest probability of each target's distribution (one exact guess), "
                             f"got prior successes that differ from max(distribution); pass p=None to derive them.")
    return derived, dists


def _merge(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, np.bincount(inverse, weights=counts, minlength=len(uniq)).astype(np.int64)


class _WholePriorRun:
    """Theorem 3's objective at the threshold parameter t: the tail of S_t = sum_i Bern(q_i(t)),
    q_i(t) = expit(t + logit p_i), and the budget m(t) = sum_i phi_i(q_i(t)) (whole_prior.budgets).

    t = -inf is q = 0 (the bound is then E[successes] / v, Markov with the one-target worst cases);
    t = eps >= 0 is q_i = beta(eps, p_i), where phi_i <= Lemma 2's delta(eps) (1 - beta_i) also holds.
    """

    def __init__(self, profile: PrivacyProfile, dists: Distributions):
        dists = dists.coarsened()
        self.profile, self.dists, self.n = profile, dists, dists.n
        self.p, self.counts = dists.p, dists.counts
        self.cache: dict = {}

    def at(self, t: float, exact: bool = True):
        """(tail of S_t, budget m(t)); ``exact=False`` may read the budget from chords (valid, cheaper)."""
        t = float(t)
        hit = self.cache.get(t)
        if hit is None or (exact and not hit[2]):
            q = whole_prior.thresholds(t, self.p)
            tail = hit[0] if hit is not None else distribution_grouped(q, self.counts).tail()
            m = float(self.counts @ whole_prior.budgets(self.profile, self.dists, t, exact=exact))
            hit = self.cache[t] = (tail, m, exact)
        return hit[:2]

    def objective(self, t: float, v: int, exact: bool = True) -> float:
        if v <= 0:
            return 1.0
        if v > self.n:
            return 0.0
        tail, m = self.at(t, exact)
        return _budget_value(tail, int(v), m)

    def smallest_passing(self, t: float, target: float, exact: bool = True) -> int:
        """The smallest v with objective(t, v) <= target (non-increasing in v: a binary search)."""
        tail, m = self.at(t, exact)
        lo, hi = max(1, tail.first_below(target)) - 1, self.n + 1  # objective(lo) > target (it is >= T)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.objective(t, mid, exact) <= target:
                hi = mid
            else:
                lo = mid
        return hi

    def grid(self, points: int = _WP_GRID) -> np.ndarray:
        """-inf and ``points`` points from _WP_T_LOW to where delta(t) stops mattering."""
        pure = pure_epsilon_of(self.profile)
        if pure is not None:
            top = pure
        else:
            try:
                top = self.profile.epsilon(1e-14 / max(self.n, 1))
            except (ValueError, OverflowError):
                top = math.inf
            top = min(top, self.profile.max_useful_epsilon, 60.0) if np.isfinite(top) else 60.0
        return np.concatenate([[-math.inf], np.linspace(_WP_T_LOW, max(top, 1.0), points)])

    def solve_nodes(self) -> None:
        """Solve every target's phi at the thresholds of the node grid (the chords' end points)."""
        for t in self.grid(_WP_NODES):
            q = whole_prior.thresholds(t, self.p)
            for shape, qq in zip(self.dists.shapes, q):
                whole_prior.excess_curve(self.profile, shape)(qq, fine=False)

    def minimise(self, score) -> float:
        """The t minimising ``score(t, exact)`` (a bound, or a count) on a grid, refined, with phi read from the
        solved nodes (chords and Lagrangian dual bounds, ``ExcessCurve.upper``: no new LP); the caller evaluates
        the t found with phi solved there (never above what the search saw)."""
        self.solve_nodes()
        grid = self.grid()
        values = [score(t, False) for t in grid]
        best = int(np.argmin(values))
        t_best, v_best = float(grid[best]), values[best]
        if not np.isfinite(t_best):
            return t_best
        step = float(grid[2] - grid[1])
        for _ in range(_WP_REFINE):
            step /= 2
            for t in t_best + step * np.array([-3, -2, -1, 1, 2, 3]) / 2:
                v = score(t, False)
                if v < v_best:
                    t_best, v_best = float(t), v
        return t_best


def _whole_prior_tail(profile: PrivacyProfile, dists: Distributions, v: int) -> tuple[float, float]:
    """(Theorem 3's bound on Pr[successes >= v], the t attaining it)."""
    if dists.n == 1 and v == 1:
        # one target: q + phi(q) >= phi(0) (phi's slope is >= -1) and the J >= 1 terms are larger, so
        # the minimum is at q = 0: the one-target worst case
        return whole_prior.whole_prior_success(profile, dists.shapes[0]), -math.inf
    run = _WholePriorRun(profile, dists)
    t = run.minimise(lambda t, exact: run.objective(t, v, exact))
    return run.objective(t, v), t


def _whole_prior_counts(profile: PrivacyProfile, dists: Distributions, targets: np.ndarray) -> list[int]:
    """Theorem 3's count for each target tail probability: the smallest c with bound(c + 1) <= target."""
    run = _WholePriorRun(profile, dists)
    out = []
    for target in targets:
        t = run.minimise(lambda t, exact: run.smallest_passing(t, float(target), exact))
        out.append(run.smallest_passing(t, float(target)) - 1)  # phi solved at the t found: <= the chords
    return out


# --------------------------------------------------------------------------------------------
# Theorem 3.2: beta estimated from R runs of the mechanism
# --------------------------------------------------------------------------------------------
def _runs(p_runs) -> list[Priors]:
    """One Priors per run: from a sequence of Priors (or one), or an array (R, n) (or (n,), one run)."""
    if isinstance(p_runs, Priors):
        runs = [p_runs]
    elif isinstance(p_runs, (list, tuple)) and p_runs and all(isinstance(r, Priors) for r in p_runs):
        runs = list(p_runs)
    else:
        arr = _validate.probability("p_runs", p_runs)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
            raise ValueError(f"p_runs must have shape (R, n) with R, n >= 1, got shape {arr.shape}.")
        return [Priors._unchecked(*np.unique(row, return_counts=True)) for row in arr]
    sizes = sorted({r.n for r in runs})
    if len(sizes) > 1:
        raise ValueError(f"p_runs must give every run the same number of targets n, got runs of {sizes} targets.")
    return runs


class _ExpectedRun(_OneRun):
    """Theorem 3.2's objective: the per-run tails of S*_eps(A(a)) averaged over R runs, budget n delta(eps).

    Each run's guesses give beta_i(eps) = beta(eps, p_i) with p_i the prior success of the guess
    the attack actually made; E[extra successes] <= n delta(eps) (THEORY.md, Theorem 2). Each run is
    held as its groups (``Priors``) and the average is taken over the runs' supports only.
    """

    def __init__(self, profile: PrivacyProfile, runs: list[Priors]):
        self.profile, self.runs, self.n, self.cache, self.approximate = profile, runs, runs[0].n, {}, False

    def per_run(self, eps: float) -> list[Tail]:
        """Pr[S*_eps(run r) >= .] for every run r."""
        return [_pure_tail(eps, run) for run in self.runs]

    def mean(self, eps: float) -> float:
        return float(np.mean([_beta_unchecked(float(eps), run.values) @ run.counts for run in self.runs]))

    def at(self, eps: float):
        eps = float(eps)
        if eps not in self.cache:
            d = self.profile.delta_upper(eps)
            tails = self.per_run(eps)
            # every run's tail is 1 up to its offset and constant from its end on, so is their mean
            lo = min(t.offset for t in tails)
            u = np.arange(lo - 1, max(t.offset + len(t.ext) - 2 for t in tails) + 1)
            mean = np.minimum(1.0, np.array([t(u) for t in tails]).mean(axis=0))
            self.cache[eps] = (Tail(lo, mean, self.n), self.n * d)
        return self.cache[eps]


def expected_tail(profile, p_runs, v, *, eps=None, game: str = "reconstruction", set_valued: bool = False):
    """Theorem 3.2 (THEORY.md, Theorem 2), estimated from R runs of the mechanism:

    Pr[successes >= v] <= min_J (sum_{i=0}^{J} E_a[Pr[S*_eps(a) >= v - i]] + n delta(eps)) / (J + 1)

    with S*_eps(a) = sum_i Bern(beta(eps, p_i(a))), p_i(a) the prior success of the guess the attack
    made on target i for release a. The J = 0 term is the paper's form E[...] + n delta(eps). Valid for
    one exact guess and for set-valued success alike (the extra-success budget of each target is at
    most delta(eps) for every success metric).

    ``p_runs[r, i]`` is the prior success of the guess of run r on target i (or ``p_runs`` is one
    ``Priors`` per run, the same n targets each: the runs grouped); the expectation is
    replaced by the mean over runs, and ``(value, standard_error)`` is returned, the standard error
    that of the mean of the J = 0 tail at the eps found. eps is minimised like tail_bound's (every
    valley refined) unless given (the minimum of a noisy estimate is slightly optimistic; fix eps in
    advance for a strict test). An eps-DP profile uses its own eps only (Theorem 3.1 averaged over
    the runs); an ``eps`` below it is refused (see ``pure_epsilon_of``).
    """
    profile = _profile(profile, game)
    _check_set_valued(set_valued)
    runs = _runs(p_runs)
    n = runs[0].n
    v = _validate.integer("v", v)
    if v <= 0:
        return 1.0, 0.0
    if v > n:
        return 0.0, 0.0
    pure = pure_epsilon_of(profile)
    run = _ExpectedRun(profile, runs)
    if eps is not None:
        best = float(_validate.positive("eps", eps, allow_zero=True, allow_inf=True))
        if pure is not None and best < pure:
            raise ValueError(f"eps must be >= the profile's eps = {pure!r} for {profile!r} (Theorem 3.1 holds at "
                             f"the profile's eps, the one-run point below it is not a valid bound), got {best!r}.")
        value = run.objective(best, v)
    elif pure is not None:
        best = pure
        value = run.objective(best, v)
    else:
        value, best = _minimise_over_eps(run, v)
    per_run = np.array([t.value(v) for t in run.per_run(best)])
    se = float(np.std(per_run, ddof=1) / math.sqrt(len(per_run))) if len(per_run) > 1 else math.nan
    return float(value), se


def expected_count_bound(profile, p_runs, confidence=0.95, *, game: str = "reconstruction", set_valued: bool = False):
    """The smallest c with expected_tail(profile, p_runs, c + 1) <= 1 - confidence (an estimate).

    ``game`` and ``set_valued`` as in expected_tail; an eps-DP profile uses its own eps only.
    """
    profile = _profile(profile, game)
    _check_set_valued(set_valued)
    runs = _runs(p_runs)
    conf = _validate.confidence("confidence", confidence)
    confs = np.atleast_1d(conf)
    run = _ExpectedRun(profile, runs)
    pure = pure_epsilon_of(profile)
    if pure is not None:
        out = [run.smallest_passing(pure, 1.0 - c) - 1 for c in confs]
    else:
        targets = 1.0 - confs
        top = run.eps_max(float(np.min(targets)))
        out = _count_search(run, targets, seeds=run.grid(top, 10), top=top)
    out = np.array(out, dtype=int)
    return int(out[0]) if conf.ndim == 0 else out.reshape(conf.shape)


# --------------------------------------------------------------------------------------------
# Single-target views
# --------------------------------------------------------------------------------------------
def success_bound(profile, p=None, *, distribution=None, game: str = "reconstruction", set_valued: bool = False,
                  collision=None) -> float:
    """n = 1 posterior bound: min_eps beta(eps, p) + delta(eps) w(eps) (tail_bound with one target, v = 1).

    w = 1 - beta(eps, p) for one exact guess, which makes this the paper's single-target bound and
    tight (an exact LP over all (eps, delta)-DP mechanisms attains it); for p = 1/2 and mu-GDP it
    equals Phi(mu / 2), the optimal membership-inference accuracy. For set-valued success (``set_valued``)
    w = (1 - c) / (e^eps p + 1 - p), c the prior's collision probability (``collision``, None: 0).
    An eps-DP profile gives beta(eps, p) at its own eps (Theorem 3.1), attained by an eps-DP mechanism
    when success is a set. ``game`` as in tail_bound.

    ``distribution``: the target's whole prior (a 1-d array summing to 1). With it, for one exact guess,
    p may be None (p = max pi) and the result is the smaller of the above and the whole-prior theorem's
    one-target worst case (THEORY.md, Theorem 3 at n = 1: the relaxed LP over every mechanism with the
    profile, exact for (eps, delta)-DP and eps-DP, and for two-valued priors under f-DP).
    """
    if distribution is not None:
        _check_set_valued(set_valued)
        if np.ndim(distribution) != 1:
            raise ValueError(f"distribution must be one target's prior, a 1-d array of probabilities, got shape "
                             f"{np.shape(distribution)}; use count_bound(..., distributions=...) for many targets.")
        return tail_bound(profile, None if p is None else [p], 1, distributions=[np.asarray(distribution, dtype=float)],
                          game=game, set_valued=set_valued,
                          collision=None if collision is None else [float(collision)])
    if p is None:
        raise ValueError("p must be given (the target's prior success) unless distribution= gives its whole prior, got None.")
    q = _validate.probability("p", p)
    if q.ndim != 0:
        raise ValueError(f"p must be a single prior success probability, got an array of shape {q.shape}.")
    if collision is not None and np.ndim(collision) != 0:
        raise ValueError(f"collision must be a single collision probability, got an array of shape {np.shape(collision)}.")
    return tail_bound(profile, [float(q)], 1, game=game, set_valued=set_valued,
                      collision=None if collision is None else [float(collision)])


def advantage_bound(profile, p=None, *, distribution=None, game: str = "reconstruction", set_valued: bool = False,
                    collision=None) -> float:
    """Generalised advantage bound (posterior - prior) / (1 - prior) (Cherubin et al. 2017); arguments as in success_bound
    (with ``distribution`` and p None, the prior success is max pi)."""
    if p is None and distribution is not None and not set_valued:
        p = float(np.max(_validate.probability("distribution", distribution)))
    if p is None:
        raise ValueError("p must be given (the target's prior success) unless distribution= gives its whole prior, got None.")
    q = float(_validate.probability("p", p, open_high=True))
    bound = success_bound(profile, q, distribution=distribution, game=game, set_valued=set_valued, collision=collision)
    return max(0.0, (bound - q) / (1.0 - q))


def eps_protect(p, threshold: float = 0.05, delta: float = 1e-5, *, set_valued: bool = False, collision=None) -> float:
    """The largest eps at which (eps, delta)-DP keeps the advantage bound <= threshold for prior p.

    eps_protect(p) = max{eps >= 0 : advantage_bound(ApproxDP(eps, delta), p, set_valued=...) <= threshold}
    (paper, Fig. eps_protect). The advantage bound is continuous and non-decreasing in eps and at
    least delta at eps = 0 (exactly delta for one exact guess), so:

    * delta > threshold: no eps protects (the set is empty): ValueError.
    * delta == threshold: 0.0, exactly (eps = 0 is the only protecting value).
    * otherwise a bracket lo < hi with bound(lo) <= threshold < bound(hi) is found by doubling hi from 1
      and bisected to 1e-9 relative; lo, which meets the threshold, is returned. inf if the bound stays
      <= threshold up to eps = 1e4 (it tends to 1, so only a threshold close to 1 can get there).

    One exact guess (the default): for p >= 1/2 the bound's minimum over eps' sits at eps' = 0, where
    the advantage is the total variation delta + (1 - delta) tanh(eps / 2) of f_{eps,delta}, whatever
    p, so eps_protect(p) = 2 artanh((threshold - delta) / (1 - delta)) for every p >= 1/2 (0.10006 at
    the defaults). That is valid but very conservative for large p: the exact worst case over all
    (eps, delta)-DP mechanisms (an LP over a two-value prior) allows eps = 0.4895 at p = 0.6, 2.254 at
    0.9, 4.647 at 0.99 (issue 13's LP). Set-valued success (k > 1 guesses, windows): the split theorem's
    weight (1 - c) / (e^eps p + 1 - p) replaces 1 - beta, and there is no plateau (an eps-DP subset
    mechanism reaches advantage 0.0865 at eps = 0.10006, p = 0.9, so the plateau would be wrong there).
    With delta = 0 the profile is eps-DP and Theorem 3.1's beta(eps, p) is used for every metric.
    """
    q = float(_validate.probability("p", p, open_low=True, open_high=True))
    thr = float(_validate.probability("threshold", threshold, open_low=True, open_high=True))
    d = _validate.delta("delta", delta)
    set_valued = _check_set_valued(set_valued)
    if d > thr:
        raise ValueError(f"threshold must be >= delta = {d!r}: the advantage bound of (eps, delta)-DP is at least "
                         f"delta at every eps, so no eps keeps it <= {thr!r}; lower delta or raise the threshold.")
    if d == thr and not set_valued:
        return 0.0
    adv = lambda e: advantage_bound(ApproxDP(e, d), q, set_valued=set_valued, collision=collision)
    if adv(0.0) > thr:
        raise ValueError(f"threshold {thr!r} is below the advantage bound at eps = 0 ({adv(0.0)!r}) for p = {q!r} with "
                         "set-valued success: no eps protects; lower delta or raise the threshold.")
    lo, hi = 0.0, 1.0
    while adv(hi) <= thr:
        lo, hi = hi, hi * 2
        if hi > 1e4:
            return math.inf
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        if adv(mid) <= thr:
            lo = mid
        else:
            hi = mid
    return lo


def calibrate_noise(
    p,
    target: float,
    *,
    kind: str = "advantage",
    mechanism: str = "gaussian",
    confidence: float = 0.95,
    sensitivity: float = 1.0,
    compositions: int = 1,
    sample_rate: float = 1.0,
    steps: int = 1,
    neighboring: str = "replace_one",
    rtol: float = 1e-4,
    game: str = "reconstruction",
) -> float:
    """The smallest noise multiplier whose bound keeps the risk under ``target`` for prior ``p``.

    kind="advantage": advantage_bound(profile, max(p)) <= target (the most exposed target decides).
    kind="count": count_bound(profile, p, confidence) <= target successes.
    mechanism="gaussian": ComposedGaussian(sigma, compositions, sensitivity);
    mechanism="dpsgd": DPSGD(sigma, sample_rate, steps, neighboring); in a reconstruction ``game`` (the
    default) its replace-one accounting is what the bound uses, whatever ``neighboring`` says.
    Bounds only weaken as noise shrinks, so a bisection on log sigma finds the threshold; the sigma
    returned satisfies the target (it is the upper end of the final bracket). ``p``: an array (n,)
    or ``Priors``, grouped once for all the bounds the bisection evaluates.
    """
    q = _grouped(p)
    if kind not in ("advantage", "count"):
        raise ValueError(f"kind must be 'advantage' or 'count', got {kind!r}.")
    if game not in GAMES:
        raise ValueError(f"game must be one of {list(GAMES)}, got {game!r}.")
    if mechanism not in ("gaussian", "dpsgd"):
        raise ValueError(f"mechanism must be 'gaussian' or 'dpsgd', got {mechanism!r}.")
    if kind == "advantage":
        tgt = float(_validate.probability("target", target, open_low=True, open_high=True))
    else:
        tgt = _validate.integer("target", target, minimum=0)

    def profile_for(sigma: float) -> PrivacyProfile:
        if mechanism == "gaussian":
            return ComposedGaussian(sigma, compositions, sensitivity)
        return DPSGD(sigma, sample_rate, steps, neighboring)

    def ok(sigma: float) -> bool:
        prof = profile_for(sigma)
        if kind == "advantage":
            return advantage_bound(prof, float(q.values[-1]), game=game) <= tgt
        return count_bound(prof, q, confidence, game=game) <= tgt

    if kind == "count" and tgt >= q.n:
        raise ValueError(f"target must be < n = {q.n} successes to constrain anything, got {tgt}.")
    lo, hi = 0.05, 1.0
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > 1e6:
            raise ValueError(f"target {target!r} cannot be met by any noise multiplier up to 1e6.")
    while ok(lo) and lo > 1e-6:
        lo, hi = lo / 2, lo
    while hi / lo > 1 + rtol:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
