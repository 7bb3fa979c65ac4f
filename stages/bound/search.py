"""The searches behind the theorems: each theorem's bound minimised over its free parameters (eps and the
budget's J for the split theorem, the threshold t for the whole prior), and count_bound's search over (v, eps).

``theorems`` states the theorems and calls these; nothing here is a bound on its own until evaluated: every
value a search returns is the theorem's objective evaluated exactly at the point it returns (the normal
approximations only steer). Objectives:

* ``OneRun``          the split theorem's B(v, eps) = min_J (sum_{i<=J} Pr[S*_eps >= v - i] + m(eps)) / (J + 1)
                      (stages/bound/THEORY.md, Theorem 1; J's minimum is ``budget_value``, Lemma 3).
* ``ExpectedRun``     Theorem 3.2 of Swanberg et al. (arXiv:2507.08158; THEORY.md, Theorem 2): the tails averaged
                      over R runs of the mechanism.
* ``WholePriorRun``   THEORY.md's Theorem 3 at the threshold parameter t (``whole_prior`` computes its budgets).

Searches: ``minimise_over_eps`` (every valley of B(v, .) refined: B is not unimodal in eps), ``count_search``
(the smallest v certified at some eps, for each confidence), ``split_counts`` (count_bound's choice between the
exact search and the normal approximation certified exactly), ``whole_prior_tail`` / ``whole_prior_counts``.
The one-run argument the split theorem builds on is Steinke, Nasr & Jagielski's (arXiv:2305.08846); a profile
enters through delta(eps), the same information as its f-DP trade-off curve (Dong, Roth & Su, arXiv:1905.02383).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from stages._bisect import smallest_true

from . import whole_prior
from .priors import Priors, beta_unchecked, budget_weights, pure_tail
from .profiles import PrivacyProfile, pure_epsilon_of
from .tails import Tail, distribution_grouped
from .whole_prior import Distributions

#: The exact fast paths (False: the plain search, for tests/stages/bound/test_count_fast.py to compare against);
#: both return the same numbers bit for bit.
_FAST = True
#: budget_value evaluates its test at every a at once (``_budget_value_whole``) on ranges shorter than this.
_WHOLE_TEST = 4096
#: 0, 1, 2, ... as floats (grown as needed): _budget_value_whole's multipliers v - a, read as views.
_INTEGERS = np.arange(1024, dtype=float)
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
#: Theorem 3's search over its threshold parameter t (``WholePriorRun``): points of the coarse grid of t
#: (q_i = expit(t + logit p_i)) and the lowest t.
_WP_GRID = 48
_WP_T_LOW = -8.0
#: Points of the node grid at which phi is solved (the chords between them bound phi everywhere else).
_WP_NODES = 8
#: Refinement rounds around the best grid point (each halves the step, 4 points a side).
_WP_REFINE = 4


# --------------------------------------------------------------------------------------------
# The split theorem's objective B(v, eps) and its minimum over eps (THEORY.md, Theorem 1)
# --------------------------------------------------------------------------------------------
def _normal_tail(mean: float, var: float, n: int) -> Tail:
    """A normal approximation of the tail of S* (mean, variance, n Bernoullis): steers searches, never a result."""
    sd = math.sqrt(max(var, 1e-12))
    lo = max(0, int(math.floor(mean - 12 * sd)))
    hi = min(n + 1, int(math.ceil(mean + 12 * sd)) + 1)
    rev = special.ndtr((mean - (np.arange(lo, hi + 1) - 0.5)) / sd)
    rev[0] = 1.0
    return Tail(lo, np.concatenate([[1.0], rev, [0.0]]), n)


def budget_value(tail: Tail, v: int, m: float, j_hint: int | None = None) -> float:
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
    if _FAST:
        out = _budget_value_whole(tail, v, m, j_hint)
        if out is not None:
            return out
    return _budget_value_chunks(tail, v, m, j_hint)


def _budget_value_chunks(tail: Tail, v: int, m: float, j_hint: int | None = None) -> float:
    """budget_value with its test evaluated in chunks around the guess (the plain path; long supports)."""
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


def _budget_value_whole(tail: Tail, v: int, m: float, j_hint: int | None) -> float | None:
    """budget_value with its test evaluated at every a in [a_lo, a_hi] at once (one vectorised pass); None (nothing
    done) where that range is _WHOLE_TEST long or more.

    Each entry of the test is the same floating-point expression as in _budget_value_chunks (the ints are exact
    as floats), and the chunked scans' outcome is read off the whole array: above the first chunk [lo, hi], the
    first failing a less one (a_hi if none); in it, its last passing a; below it, the last passing a (-2 if
    none). The value is summed as Tail.window_sum(exact=True) sums it. So a_star, the value and the J left on the
    tail for the next call are bit for bit the chunked search's, whatever the rounding.
    """
    global _INTEGERS
    pre = tail.__dict__.get("_whole")
    if pre is None or pre[0] is not tail.ext:
        ext = tail.ext
        # front[j] = ext[max(j - 1, 0)] for j = k + 1, k = a - base in [-1, size - 1]
        pre = tail._whole = (ext, tail._suffix(), np.concatenate([ext[:1], ext]), tail.offset - 1, len(ext), float(ext[-1]))
    ext, suf, front, base, size, last = pre
    k_v = v - base
    g0 = float(ext[min(max(k_v, 0), size - 1)])  # Tail.value(v)
    if m <= 0.0 or g0 >= 1.0:
        return min(1.0, g0)
    a_lo, a_hi = max(-2, base - 1), min(v - 1, base + size - 1)
    if a_hi - a_lo >= _WHOLE_TEST:
        return None
    a_star = -2
    if a_lo <= a_hi:
        upper = suf[k_v + 1] if k_v + 1 <= size else -last * (k_v + 1 - size)
        guess = min(max(v - 1 - getattr(tail, "_last_j", j_hint or 0), a_lo), a_hi)
        lo, hi = max(a_lo, guess - 24), min(a_hi, guess + 24)
        j0, j1 = a_lo - base + 1, a_hi - base + 2
        if len(_INTEGERS) <= v - a_lo:
            _INTEGERS = np.arange(2 * (v - a_lo) + 2, dtype=float)
        # v - a for a = a_lo..a_hi (as floats, exact): a view, where the chunks compute v - (k + base)
        ok = (front[j0:j1] * _INTEGERS[v - a_lo : v - a_hi - 1 : -1] > (suf[j0:j1] - upper) + m).tobytes()
        i_lo, i_hi = lo - a_lo, hi - a_lo
        if ok[i_hi] and hi < a_hi:  # the upward scan: the first failing a above the chunk
            first = ok.find(b"\x00", i_hi + 1)
            a_star = a_hi if first < 0 else a_lo + first - 1
        else:
            last_ok = ok.rfind(b"\x01", i_lo, i_hi + 1)
            if last_ok < 0:  # the downward scan
                last_ok = ok.rfind(b"\x01", 0, i_lo)
            if last_ok >= 0:
                a_star = a_lo + last_ok
    tail._last_j = v - 1 - a_star
    k_lo = a_star + 1 - base  # Tail.window_sum(a_star + 1, v, exact=True):
    total = float(max(0, min(k_v, -1) - k_lo + 1))  # terms below ext[0]: T = 1
    total += float(max(0, k_v - max(k_lo, size) + 1)) * last  # beyond the end
    a, b = max(k_lo, 0), min(k_v, size - 1)
    if a <= b:
        total += float(np.add.reduce(ext[a : b + 1]))  # = np.sum
    return float(min(1.0, (total + m) / (v - a_star)))


@dataclass
class OneRun:
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

    def pooled(self) -> OneRun:
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
            memo[key] = budget_value(tail, int(v), m, self.__dict__.get("_last_j"))
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


def minimise_over_eps(run: OneRun, v: int, rtol: float = 1e-7) -> tuple[float, float]:
    """(min over eps of run.objective(eps, v), the eps attaining it), every valley refined.

    The objective is not unimodal in eps, so its valleys are found on a lattice
    (``OneRun.scan_grid``; a coarse grid for one target, which has no steps) and Brent's method runs
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


# --------------------------------------------------------------------------------------------
# count_bound's search over (v, eps)
# --------------------------------------------------------------------------------------------
def count_search(
    run: OneRun,
    targets: np.ndarray,
    seeds,
    brackets: dict | None = None,
    hints: dict | None = None,
    scan: OneRun | None = None,
    top: float = EPS_CEILING,
    shared: bool = True,
    xtol: float = 1e-4,
) -> list[int]:
    """For each target t, the smallest v - 1 such that some evaluated eps has B(v, eps) <= t.

    Starting from the seed eps values, alternates Brent's method on eps -> B(v - 1, eps) with a jump
    to the smallest v that passes at any evaluated eps, until v no longer improves. Brent runs to
    ``xtol`` (1e-4) relative in eps, which puts B within ~1e-8 relative of its minimum (the valley is smooth).
    B(v - 1, .) is not unimodal in eps, so when the valley next to the certifying eps does not pass,
    every other valley of B(v - 1, .) is looked for on ``scan``'s grid (``OneRun.scan_grid``; ``scan``
    is ``run`` itself, or a cheap normal approximation of it for large n) and those whose grid value
    is within _VALLEY_RTOL of t are refined on ``run``.
    Records the eps that certified each target in ``run.best_eps``. With ``shared=False`` a target
    only examines the seeds and the eps evaluated while searching for it, not those of the targets
    before it (cheaper; for a search that only steers, like _count_fast's on the normal approximation).
    ``brackets`` and ``hints`` (by target) start a target's first Brent bracket and its first v.
    """
    for e in seeds:
        run.at(float(min(max(e, 0.0), EPS_CEILING)))
    search = _CountSearch(run, run if scan is None else scan, top, xtol)
    out = []
    run.best_eps = {}
    seed_set = {float(min(max(e, 0.0), EPS_CEILING)) for e in seeds}
    for t in targets:
        if not shared:  # each target examines only the seeds and the eps evaluated for it
            search.checked[t] = set(run.cache) - seed_set
        v, e = search.count(t, (hints or {}).get(float(t)), (brackets or {}).get(float(t)))
        run.best_eps[float(t)] = e
        out.append(v - 1)
    return out


class _CountSearch:
    """count_search's state across its targets: B(v, eps) memoised, the eps each target has examined (an eps
    examined once cannot improve that target's v again) and the brackets Brent's method ran on for each v."""

    def __init__(self, run: OneRun, scan: OneRun, top: float, xtol: float):
        self.run, self.scan, self.n, self.top, self.xtol = run, scan, run.n, top, xtol
        self.memo: dict = {}
        self.checked: dict = {}
        self.brents: dict = {}  # v -> the brackets Brent's method ran on for B(v, .)

    def objective(self, eps: float, v: int) -> float:
        if (eps, v) not in self.memo:
            self.memo[(eps, v)] = self.run.objective(eps, v)
        return self.memo[(eps, v)]

    def count(self, t: float, hint: int | None, bracket) -> tuple[int, float | None]:
        """(the smallest v found for target t, the eps certifying it): Brent's method on B(v - 1, .) near the
        certifying eps (first in ``bracket`` if given), a jump to the smallest v passing at any evaluated eps,
        the other valleys of B(v - 1, .) when that does not improve v, until nothing does."""
        v, e = self.improve(t, self.n + 1, None, hint)
        while v > 1:
            self.minimise(v - 1, e, bracket)
            bracket = None
            new_v, new_e = self.improve(t, v, e)
            if new_v >= v and self.other_valleys(v - 1, e, t):
                new_v, new_e = self.improve(t, v, e)
            if new_v >= v:
                break
            v, e = new_v, new_e
        return v, e

    def improve(self, t: float, v: int, e, hint: int | None = None):
        """The smallest passing v over all evaluated eps, starting from a known passing (v, e).

        An eps already checked for this target cannot improve v again (v only decreases), so only
        eps values evaluated since the last call are examined.
        The result does not depend on the order in which they are examined, only the cost does: the
        most promising eps go first (the lowest B(v - 1, .), or while nothing passes yet the lowest
        count certified by the J = 0 term T(v) + m), so that the others are ruled out by one evaluation.
        """
        run = self.run
        seen = self.checked.setdefault(t, set())
        pending = sorted(set(run.cache) - seen)
        seen.update(pending)
        queue = None  # while nothing passes: pending by _first_pass, sorted once (stable: min's choice first)
        while pending:
            if v > self.n:  # nothing known yet: search from the hint (or the last answer)
                if not _FAST:
                    queue = [min(pending, key=lambda x: self._first_pass(x, t))]
                elif queue is None:
                    queue = sorted(pending, key=lambda x: self._first_pass(x, t))
                eps = queue.pop(0)
                pending.remove(eps)
                v, e = run.smallest_passing(eps, t, hint), eps
                hint = v
                continue
            if v <= 1:
                break
            # B is non-increasing in v: an eps with B(v - 1, eps) > t can never beat v (nor any smaller v)
            # (B >= T: the tail alone rules most of them out without the budget's minimum over J)
            pending = [x for x in pending if run.at(x)[0].value(v - 1) <= t and self.objective(x, v - 1) <= t]
            if not pending:
                break
            eps = min(pending, key=lambda x: self.objective(x, v - 1))
            pending.remove(eps)
            v, e = run.smallest_passing(eps, t, hint=v - 1), eps
        return v, e

    def _first_pass(self, eps: float, t: float):
        """While nothing passes: the count the J = 0 term T(v) + m certifies at eps (then T's alone)."""
        tail, m = self.run.at(eps)
        return (tail.first_below(t - m) if m < t else self.n + 1, tail.first_below(t))

    def minimise(self, v: int, centre, bracket=None) -> None:
        """Brent's method on eps -> B(v, eps) near ``centre`` (the eps certifying the current v), in ``bracket``
        if given, else in ``_bracket_near``'s; moved on (at most 4 runs) while the minimum sits at an edge."""
        run = self.run
        lo, hi = self._bracket_near(v, centre) if bracket is None else bracket
        for _ in range(4):  # a minimum at an edge of the bracket: the valley goes on beyond it
            if not hi > lo:
                return
            tol = max(1e-12, self.xtol * hi)
            self.brents.setdefault(v, []).append((lo, hi))
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

    def _bracket_near(self, v: int, centre) -> tuple[float, float]:
        """The neighbours of the best of the few cached eps around ``centre`` (the valley of B(v, .) lies next to
        where v + 1 passes), widened at the ends of the cache."""
        run = self.run
        eps_sorted = sorted(run.cache)
        c = eps_sorted.index(centre) if centre in run.cache else len(eps_sorted) // 2
        window = range(max(c - 3, 0), min(c + 4, len(eps_sorted)))
        k = min(window, key=lambda i: run.search_objective(eps_sorted[i], v))
        lo, hi = eps_sorted[max(k - 1, 0)], eps_sorted[min(k + 1, len(eps_sorted) - 1)]
        if k == len(eps_sorted) - 1 and hi < EPS_CEILING:  # the valley may lie beyond
            hi = min(2 * hi + 1e-3, EPS_CEILING)
        if k == 0 and lo > 0:
            lo = lo / 2
        return lo, hi

    def other_valleys(self, v: int, centre, t: float) -> bool:
        """Brent's method in every valley of B(v, .) that may reach t and was not refined yet.

        A valley counts as refined when Brent's method already ran on a bracket inside it: a wider
        bracket (Brent's first one around ``centre`` may span several valleys) can miss its minimum.
        """
        refined = False
        scan = self.scan
        for value, lo, hi in scan.valleys(scan.scan_grid(v, self.top), v):
            margin = _VALLEY_RTOL if scan is self.run else _APPROX_VALLEY_RTOL
            if value >= 1.0 or value > t * (1.0 + margin):
                continue
            if any(lo <= a and b <= hi for a, b in self.brents.get(v, ())):
                continue
            self.minimise(v, centre, (lo, hi))
            refined = True
        return refined


def _count_exact(run: OneRun, targets: np.ndarray) -> list[int]:
    """count_bound's search with the exact distribution of S* at every eps it evaluates."""
    if run.n >= _APPROXIMATE_FROM:
        # Locate each target's eps on a normal approximation of S* (cheap), then search exactly
        # from there: every count returned is still certified by an exact evaluation.
        approx = run.pooled()
        top = approx.eps_max(float(np.min(targets)))
        guess = count_search(approx, targets, seeds=approx.grid(top, 10), top=top)
        return _count_exact_from(run, approx, targets, guess, top)
    top = run.eps_max(float(np.min(targets)))
    scan = run.pooled() if run.n >= _SCAN_APPROXIMATE_FROM else None
    return count_search(run, targets, seeds=run.grid(top, 10), top=top, scan=scan)


def _count_exact_from(run: OneRun, approx: OneRun, targets, guess, top: float) -> list[int]:
    """The exact search seeded with the eps and counts ``approx``'s search found for ``targets``."""
    targets = np.asarray(targets, dtype=float)
    found = {float(t): e for t, e in approx.best_eps.items() if e is not None}
    seeds = list(found.values()) or list(approx.grid(top, 10))
    brackets = {t: (e / 1.02, e * 1.02) for t, e in found.items()}
    hints = {float(t): c + 1 for t, c in zip(targets, guess)}
    return count_search(run, targets, seeds=seeds, brackets=brackets, hints=hints, scan=approx, top=top)


def _count_fast(run: OneRun, targets: np.ndarray) -> list[int]:
    """count_bound for large n: search on the normal approximation, certify each count exactly.

    The whole search over (v, eps) runs on the pooled normal approximation of S* (``OneRun.pooled``,
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
    guess = count_search(approx, targets, seeds=approx.grid(top, 10), top=top, shared=False, xtol=1e-3)
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


def split_counts(run: OneRun, targets: np.ndarray) -> list[int]:
    """count_bound's split-theorem counts, one per target tail probability: the exact search up to _FAST_FROM - 1
    targets (``_count_exact``), beyond it the normal approximation's, certified exactly (``_count_fast``)."""
    return (_count_fast if run.n >= _FAST_FROM else _count_exact)(run, targets)


# --------------------------------------------------------------------------------------------
# Theorem 3: the whole prior (stages/bound/THEORY.md, section 8; whole_prior.py computes phi)
# --------------------------------------------------------------------------------------------
class WholePriorRun:
    """Theorem 3's objective at the threshold parameter t: the tail of S_t = sum_i Bern(q_i(t)),
    q_i(t) = expit(t + logit p_i), and the budget m(t) = sum_i phi_i(q_i(t)) (whole_prior.budgets).

    t = -inf is q = 0 (the bound is then E[successes] / v, Markov with the one-target worst cases);
    t = eps >= 0 is q_i = beta(eps, p_i), where phi_i <= Lemma 2's delta(eps) (1 - beta_i) also holds.
    """

    def __init__(self, profile: PrivacyProfile, dists: Distributions, set_size: int = 1):
        dists = dists.coarsened()
        self.profile, self.dists, self.n, self.set_size = profile, dists, dists.n, int(set_size)
        self.p, self.counts = whole_prior.threshold_priors(dists, self.set_size), dists.counts
        self.cache: dict = {}
        # from _FAST_FROM targets the search reads S_t's normal approximation (only to steer it: every count and
        # bound returned is evaluated with the exact law, ``exact=True``), as the split theorem's _count_fast does
        self.approximate = self.n >= _FAST_FROM

    def at(self, t: float, exact: bool = True):
        """(tail of S_t, budget m(t)); ``exact=False`` may read the budget from chords (valid, cheaper) and, from
        _FAST_FROM targets, the tail from S_t's normal approximation (not a bound: for the search only)."""
        t = float(t)
        hit = self.cache.get(t)
        if hit is None or (exact and not hit[2]):
            q = whole_prior.thresholds(t, self.p)
            if hit is not None and (hit[3] or not exact):
                tail, tail_exact = hit[0], hit[3]
            elif exact or not self.approximate:
                tail, tail_exact = distribution_grouped(q, self.counts).tail(), True
            else:
                tail, tail_exact = _normal_tail(float(q @ self.counts), float((q * (1.0 - q)) @ self.counts), self.n), False
            m = float(self.counts @ whole_prior.budgets(self.profile, self.dists, t, exact=exact, set_size=self.set_size))
            hit = self.cache[t] = (tail, m, exact, tail_exact)
        return hit[:2]

    def objective(self, t: float, v: int, exact: bool = True) -> float:
        if v <= 0:
            return 1.0
        if v > self.n:
            return 0.0
        tail, m = self.at(t, exact)
        return budget_value(tail, int(v), m)

    def smallest_passing(self, t: float, target: float, exact: bool = True) -> int:
        """The smallest v with objective(t, v) <= target (non-increasing in v: a binary search)."""
        tail, m = self.at(t, exact)
        lo = max(1, tail.first_below(target)) - 1  # objective(lo) > target (it is >= T); objective(n + 1) = 0
        return smallest_true(lambda v: self.objective(t, v, exact) <= target, lo, self.n + 1)

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
                whole_prior.excess_curve(self.profile, shape, self.set_size)(qq, fine=False)

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


def whole_prior_tail(profile: PrivacyProfile, dists: Distributions, v: int, set_size: int = 1) -> tuple[float, float]:
    """(Theorem 3's bound on Pr[successes >= v], the t attaining it); ``set_size`` k > 1: success sets of at most
    k values (Lemma 4')."""
    if dists.n == 1 and v == 1:
        # one target: q + phi(q) >= phi(0) (phi's slope is >= -1) and the J >= 1 terms are larger, so
        # the minimum is at q = 0: the one-target worst case
        return whole_prior.whole_prior_success(profile, dists.shapes[0], set_size), -math.inf
    run = WholePriorRun(profile, dists, set_size)
    t = run.minimise(lambda t, exact: run.objective(t, v, exact))
    return run.objective(t, v), t


def whole_prior_counts(profile: PrivacyProfile, dists: Distributions, targets: np.ndarray,
                       set_size: int = 1) -> list[int]:
    """Theorem 3's count for each target tail probability: the smallest c with bound(c + 1) <= target."""
    return _whole_prior_counts(WholePriorRun(profile, dists, set_size), targets)


def _whole_prior_counts(run: "WholePriorRun", targets: np.ndarray) -> list[int]:
    """The counts of a WholePriorRun (or its average over trials): t searched per target, then solved there."""
    out = []
    for target in targets:
        t = run.minimise(lambda t, exact: run.smallest_passing(t, float(target), exact))
        out.append(run.smallest_passing(t, float(target)) - 1)  # phi solved at the t found: <= the chords
    return out


class ExpectedWholePriorRun(WholePriorRun):
    """Theorem 3 over the mixture of R trials, each with its own priors (THEORY.md section 8, "Over the trials"):
    at every t the trials' tails of S_t and budgets m(t) averaged, so that min over (t, J) of
    (sum_{i<=J} mean_r T_r(v - i) + mean_r m_r) / (J + 1) bounds the mean over the trials of Pr_r[N >= v]."""

    def __init__(self, profile: PrivacyProfile, runs: list[Distributions], set_size: int = 1):
        self.parts = [WholePriorRun(profile, d, set_size) for d in runs]
        self.profile, self.n, self.cache = profile, self.parts[0].n, {}

    def at(self, t: float, exact: bool = True):
        t = float(t)
        hit = self.cache.get(t)
        if hit is None or (exact and not hit[2]):
            parts = [part.at(t, exact) for part in self.parts]
            hit = self.cache[t] = (mean_tail([tail for tail, _ in parts], self.n),
                                   float(np.mean([m for _, m in parts])), exact, exact)
        return hit[:2]

    def solve_nodes(self) -> None:
        for part in self.parts:
            part.solve_nodes()


def expected_whole_prior_counts(profile: PrivacyProfile, runs: list[Distributions], targets: np.ndarray,
                                set_size: int = 1) -> list[int]:
    """Theorem 3 averaged over the trials (``ExpectedWholePriorRun``): the smallest c with bound(c + 1) <= target."""
    return _whole_prior_counts(ExpectedWholePriorRun(profile, runs, set_size), targets)


def expected_whole_prior_tail(profile: PrivacyProfile, runs: list[Distributions], v: int,
                              set_size: int = 1) -> tuple[float, float, float]:
    """(Theorem 3 averaged over the trials' priors: a bound on the mean of Pr_r[successes >= v], the t attaining it,
    the standard error over the trials of their own values at that t and J)."""
    run = ExpectedWholePriorRun(profile, runs, set_size)
    t = run.minimise(lambda t, exact: run.objective(t, v, exact))
    value = run.objective(t, v)
    own = [budget_value(tail, int(v), m) for tail, m in (part.at(t) for part in run.parts)]
    se = float(np.std(own, ddof=1) / math.sqrt(len(own))) if len(own) > 1 else math.nan
    return value, t, se


def mean_tail(tails: list[Tail], n: int) -> Tail:
    """The mean of tails of laws on 0..n: every tail is 1 up to its offset and constant from its end on, so is
    their mean (the mean of valid upper bounds on Pr[S_r >= .] bounds the mixture's)."""
    lo = min(t.offset for t in tails)
    u = np.arange(lo - 1, max(t.offset + len(t.ext) - 2 for t in tails) + 1)
    mean = np.minimum(1.0, np.array([t(u) for t in tails]).mean(axis=0))
    return Tail(lo, mean, n)


# --------------------------------------------------------------------------------------------
# Theorem 3.2: the tails averaged over R runs of the mechanism
# --------------------------------------------------------------------------------------------
class ExpectedRun(OneRun):
    """Theorem 3.2's objective: the per-run tails of S*_eps(A(a)) averaged over R runs, budget n delta(eps).

    Each run's guesses give beta_i(eps) = beta(eps, p_i) with p_i the prior success of the guess
    the attack actually made; E[extra successes] <= n delta(eps) (THEORY.md, Theorem 2). Each run is
    held as its groups (``Priors``) and the average is taken over the runs' supports only.
    """

    def __init__(self, profile: PrivacyProfile, runs: list[Priors]):
        self.profile, self.runs, self.n, self.cache, self.approximate = profile, runs, runs[0].n, {}, False

    def per_run(self, eps: float) -> list[Tail]:
        """Pr[S*_eps(run r) >= .] for every run r."""
        return [pure_tail(eps, run) for run in self.runs]

    def mean(self, eps: float) -> float:
        return float(np.mean([beta_unchecked(float(eps), run.values) @ run.counts for run in self.runs]))

    def at(self, eps: float):
        eps = float(eps)
        if eps not in self.cache:
            d = self.profile.delta_upper(eps)
            self.cache[eps] = (mean_tail(self.per_run(eps), self.n), self.n * d)
        return self.cache[eps]

