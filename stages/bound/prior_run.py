"""Theorem 4, the whole-prior one-run count: MMC's one-run argument with every target's whole prior (THEORY.md §9).

Mahloujifar, Melis & Chaudhuri ("Auditing f-Differential Privacy in One Run", ICML 2025, arXiv:2410.22235) bound the
number of correct guesses N when every secret is uniform over k candidates; their one-canary lemma (Lemma A.1) is the
only place the prior enters. THEORY.md §9 proves it for any prior pi: for every event E of the release and the other
targets' secrets,

    Pr[E, target i guessed right] = A   implies   Pr[E] - A >= G_i(A),
    G_i(A) = min { sum_x (1 - pi_i(x)) g(a_x) : sum_x pi_i(x) a_x = A, 0 <= a_x <= 1 },

g the profile's trade-off curve read as "the least mass another row can put on an event that row x puts a on". Averaged
over the targets (MMC's permutation step) this gives, for every set T of counts, B_T >= G(A_T), G the average of the
G_i's infimal convolution; written through G's convex conjugate, the whole family of 2^n constraints is

    for every s > 0:   sum_{j=1}^{n} (s j p_j - (n - j + 1) p_{j-1})_+  <=  Psi(s) = sum_i sum_x psi_{pi_i(x)}(s),
    psi_pi(s) = sup_{0 <= a <= 1} (s pi a - (1 - pi) g(a)),

on the law p_j = Pr[N = j]. The largest Pr[N >= c] under these constraints is a linear program in p (a finite set of s
only relaxes it). The library solves its dual on a grid of s (THEORY.md §9, "The dual the library solves"): a measure
lam on the grid and, per count j, the mass y_j of lam a multiplier may use, with Theorem 4's multipliers for every set T
reduced to "the top y_j of lam"; rows of that dual are generated as they break (and dropped once they stop binding)
and the counts a dual point leaves at zero are left out, so its size follows the law's window, not n x cuts; above 300
targets the counts far from the one decided share their y in blocks (Corollary 9.3: the constraints of the sets T made
of whole blocks), so its size barely grows with n. Every number returned is the objective of a dual-feasible point
rebuilt from the solution (weak duality): a valid upper bound on Pr[N >= c] for every mechanism
with the profile and every attack (one exact guess per target), whatever the solver's accuracy.

On uniform priors G is MMC's (k - 1) g, and the LP holds every one of MMC's constraints (Theorem 3.1 for all T, where
their recursion uses the tail sets only), so it is never above MMC's bound; on skewed priors it sees the whole prior.
The conjugate depends on the priors' distinct probabilities and their multiplicities only, so the LP's size does not
grow with the domain. On priors that differ, the LP keeps up to MAX_GROUPS groups of targets, each with its own
constraints (the same lemma per target, averaged within the group), so it sees how the priors differ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse, special

from . import _highs, envelope, tails
from .profiles import ApproxDP, PrivacyProfile
from .whole_prior import _EPS_LINES_MAX, Distributions, _profile_lines

__all__ = ["PRIOR_RUN_THEOREM", "PRIOR_RUN_VERSION", "PRIOR_RUN_MAX_TARGETS", "MAX_GROUPS", "Conjugate", "PriorRun",
           "prior_run_counts", "prior_run_tail", "pooled_conjugate", "expected_prior_run_counts", "check_groups"]

#: Name and version of Theorem 4 in every output.
PRIOR_RUN_THEOREM = "whole-prior one-run count (THEORY.md Thm 4)"
#: 1: the theorem as it joined the default minimum; 2: its count search inside the minimum looks only below the other
#: theorems' count, never below what the prior-only attack reaches, and hands an LP the simplex does not finish to the
#: interior point (the same theorem and certificate; a few tabular counts moved, THEORY.md section 9, "Counts");
#: 3: the LP is solved through its dual on a fixed grid of s (every grid point's constraint at once, where cutting
#: planes kept at most 64), in one HiGHS model per PriorRun with its rows generated as they break and a window of
#: counts, so it runs at any n (no PRIOR_RUN_MAX_TARGETS); the same theorem, counts the same or smaller at n <= 200;
#: 4: above 300 targets the dual's masses y are one per block of counts (Corollary 9.3: a relaxation of the LP, the
#: same certificate), so its size no longer grows with n; the same numbers at n <= 300;
#: 5: faster, the same theorem and certificate (issue 40): a dual simplex (devex pricing) that stalls hands over to a
#: primal one, rows are added two atoms either side and dropped once they stop binding, the window starts 20 counts
#: (not 100) below, and the count search interpolates the dual's optimum with a bounded step; the same counts on
#: every case measured, tails may differ in the last digits (the grid is refined along another path);
#: 6: with groups, single-count blocks reach at most _NEAR_MAX counts from c (2 sqrt(n) with one group; the same
#: layout at n <= 300), and a decision's rounds stop (or refine the grid) once _STALL_ROUNDS rounds moved neither the
#: certificate nor the dual's optimum by _STALL_GAIN of the target: n = 10^4 targets sharing 10 Zipf priors 89-458 s
#: -> 14 s, 10^5 minutes -> 2.5 s; the same counts at n <= 1000 on every case measured, 8945 -> 8942 at 10^4 (0.95).
PRIOR_RUN_VERSION = 6
#: Theorem 4's LP keeps at most this many groups of targets by default (runs of distinct priors of similar p, each group's
#: lemma averaged over its targets): more groups see more of how the priors differ, and cost more (``groups``).
MAX_GROUPS = 2
#: The most targets Theorem 4 runs on (None: any n; its dual's size follows the window of counts the law lives on).
PRIOR_RUN_MAX_TARGETS = None

#: Added to every conjugate value, relative to the objective's slope at the optimum: the floating-point vertex of the
#: trade-off curve's piecewise-linear lower bound may sit a few ulps off the true one.
_VERTEX_SLACK = 1e-13
#: The grid of s the dual's measure lives on: this geometric grid (ratio 1.03) and a piecewise-linear conjugate's
#: kinks (at most _MAX_KINKS, evenly thinned beyond), kept where the conjugate's slope (the success its tangent
#: touches) is inside (_SLOPE_LOW, its largest value - _SLOPE_LOW), one point more on each side.
_S_DENSE = np.geomspace(1e-6, 1e10, 1248)
#: ... which starts with every _COARSE-th point (ratio 1.16), refined where the measure lives (``PriorRun._refine``):
#: the dual's cost grows fast with its number of atoms.
_COARSE = 5
_MAX_KINKS = 3000
_SLOPE_LOW = 1e-6
#: Rounds (solve, rebuild the certificate, add the rows that break) at one count before it stops with its best bound.
_MAX_ROUNDS = 60
#: A decision's rounds count as converged once _STALL_ROUNDS rounds in a row moved neither the certified bound down nor
#: the dual's optimum up to the target by more than _STALL_GAIN times the target (``PriorRun._round``; three times as
#: many rounds while that optimum is below the target): the rows that still break then change the bound in its last
#: digits only, and a count had spent up to _MAX_ROUNDS rounds there.
_STALL_ROUNDS = 8
_STALL_GAIN = 1e-3
#: A threshold row is added where the solution's X_j exceeds the exact top-y_j moment by more than this (relative).
_ROW_TOL = 1e-7
#: The count window starts this fraction of n (at least _WINDOW_MIN counts) below the first count asked, and doubles
#: its width whenever the dual puts more than _EDGE (absolute) on y at its lowest count (_WINDOW_MIN was 100 up to
#: version 4: at n <= 100 every model then held every count, and its LPs were twice as slow).
_WINDOW = 0.25
_WINDOW_MIN = 20
_EDGE = 1e-9
#: A decision stops above its target once the dual's optimum with the rows so far exceeds it by this fraction (the
#: finer grid and the wider window could still lower it, by 0.5% where measured; else the rounds run to the end).
_ABOVE = 0.02
#: The count search's interpolated step reaches at most this many times the distance of the two counts it is drawn from.
_SECANT_REACH = 8
#: Count blocks (Corollary 9.3): counts within _BLOCK_NEAR sqrt(n) of the count decided are their own blocks; beyond,
#: each block is wider than the last by rho per count of distance, rho = _BLOCK_GROWTH (1 - _BLOCK_FROM / n)_+.
_BLOCK_NEAR = 2.0
_BLOCK_GROWTH = 0.25
_BLOCK_FROM = 300
#: With several groups, the counts that are their own blocks reach no farther than _NEAR_MAX from c (``_near``).
_NEAR_MAX = 20
#: The first round at a count deletes the generated rows that bound in none of the last _PRUNE_AGE solves (0: none):
#: the simplex's cost per iteration grows with the rows, and most rows of a search's earlier counts no longer bind.
_PRUNE_AGE = 3
#: Simplex iterations per solve (a count, not a time, so runs repeat exactly); a solve that stops short still gives a
#: certified (looser) bound.
_ITERATIONS = 200_000
#: Absolute slack added to every certified value for the round-off of rebuilding the dual point.
_CERT_SLACK = 1e-12


class Conjugate:
    """Psi(s) = sum over targets and values of psi_pi(s) = sup_a (s pi a - (1 - pi) g(a)): an upper bound, for a
    profile and the targets' priors (``Distributions``; rounded or merged priors only raise it, so stay valid).

    g is the profile's trade-off curve as the least mass b = Pr_Q[S] of an event with Pr_P[S] = a: for mu-GDP its closed
    form Phi(Phi^-1(a) - mu), else the upper envelope of the hockey-stick lines b >= e^-eps (a - delta(eps)) and
    b >= 1 - delta(eps) - e^eps (1 - a) on the profile's eps grid (a lower bound on g, so psi only grows)."""

    def __init__(self, profile: PrivacyProfile, dists: Distributions | None, groups=None, *, weights=None):
        """Groups of ``dists``' distinct priors (lists of indices; one group per prior by default), or ``weights`` =
        (probabilities, member, counts) given directly: row g of ``member`` the multiplicity of each probability per
        target of group g, averaged over the group, and ``counts[g]`` the group's size (``pooled_conjugate``)."""
        if weights is not None:
            self.probs, self.member, self.counts = (np.asarray(w, dtype=float) for w in weights)
        else:
            self.probs = np.concatenate([s.probs for s in dists.shapes])
            groups = [[i] for i in range(len(dists.shapes))] if groups is None else groups
            # (groups, probabilities): row g holds the multiplicities of the values, averaged over the targets of
            # group g (G_g* = the mean of its targets' G_i*: the conjugate of their averaged lemma, THEORY.md
            # section 9)
            self.member = np.zeros((len(groups), self.probs.size))
            self.counts = np.zeros(len(groups))
            starts = np.concatenate([[0], np.cumsum([s.probs.size for s in dists.shapes])])
            for g, members in enumerate(groups):
                for i in members:
                    self.member[g, starts[i]: starts[i + 1]] += dists.shapes[i].mult * dists.counts[i]
                self.counts[g] = float(np.sum(dists.counts[list(members)]))
                self.member[g] /= self.counts[g]
        mu = profile.gdp_mu()
        self.mu = None if mu is None else float(mu)
        if self.mu is None:
            self.a, self.g, self.slopes = _envelope(profile)

    def __call__(self, s) -> np.ndarray:
        """Psi(s), summed over every target."""
        return self.counts @ self.per_target(s)

    def per_target(self, s) -> np.ndarray:
        """(groups, len(s)): psi summed over the values of one target of each group, G_g*(s) in THEORY.md section 9."""
        s = np.atleast_1d(np.asarray(s, dtype=float))
        pi = self.probs[None, :]
        return self.member @ self.psi(s[:, None] * pi, 1.0 - pi).T

    def psi(self, gain, cost) -> np.ndarray:
        """sup_{0<=a<=1} (gain a - cost g(a)) elementwise, an upper bound (gain, cost >= 0; cost = 0 gives gain):
        psi_pi(s) is gain = s pi, cost = 1 - pi; Theorem 5's Lemma 5' uses other pairs (designated_run)."""
        gain, cost = np.broadcast_arrays(np.asarray(gain, dtype=float), np.asarray(cost, dtype=float))
        if self.mu is not None and self.mu > 0:
            return self._gdp(gain, cost)
        return self._lines(gain, cost)

    def kinks(self, group: int) -> np.ndarray:
        """The s where some psi_pi of the group has a kink (g piecewise linear: s = slope (1 - pi) / pi for every slope
        of g and every probability): the constraints of a piecewise-linear profile bind there, between grid points."""
        if self.mu is not None:
            return np.empty(0)
        probs = self.probs[self.member[group] > 0]
        pi = np.unique(probs[(probs > 0) & (probs < 1)])
        return np.unique((self.slopes[:, None] * ((1.0 - pi) / pi)[None, :]).ravel())

    def _gdp(self, gain: np.ndarray, cost: np.ndarray) -> np.ndarray:
        """sup_a (gain a - cost Phi(Phi^-1(a) - mu)): the stationary point g'(a) = gain / cost, g' = e^{mu z - mu^2/2}."""
        mu = self.mu
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (np.log(gain) - np.log(cost) + 0.5 * mu * mu) / mu
            val = gain * special.ndtr(z) - cost * special.ndtr(z - mu)
        val = np.where(cost <= 0.0, gain, val)  # pi = 1: a = 1, nothing to pay
        # the closed form is exact up to rounding; a relative slack covers Phi's last bits
        return np.maximum(val, 0.0) * (1.0 + 1e-12) + 1e-15

    def _lines(self, gain: np.ndarray, cost: np.ndarray) -> np.ndarray:
        """sup over the envelope's vertices: the objective is concave piecewise linear, its maximum at the vertex where
        g's slope passes gain / cost."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(cost > 0, gain / cost, np.inf)
        # slopes[v] is the slope right of vertex v (ascending); the optimum is the first vertex whose right slope >= ratio
        v = np.searchsorted(self.slopes, ratio, side="left")
        v = np.minimum(v, self.a.size - 1)
        a, gv = self.a[v], self.g[v]
        val = gain * a - cost * gv
        left = np.where(v > 0, self.slopes[np.maximum(v - 1, 0)], 0.0)
        right = np.where(v < self.slopes.size, self.slopes[np.minimum(v, self.slopes.size - 1)], 0.0)
        lip = np.abs(gain) + cost * np.maximum(left, right)
        return np.maximum(val, 0.0) + _VERTEX_SLACK * (1.0 + lip)


def _envelope(profile: PrivacyProfile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The vertices a of g_lines = max(0, the profile's hockey-stick lines) on [0, 1], g_lines there, and the slope
    right of each vertex but the last (ascending): ``envelope.hull_of`` on Theorem 3's lines, with an ApproxDP's own
    two lines added (its whole curve)."""
    eps, deltas = _profile_lines(profile)  # Theorem 3's lines (eps <= _EPS_LINES_MAX)
    if isinstance(profile, ApproxDP) and profile.eps <= _EPS_LINES_MAX:
        eps, deltas = np.append(eps, float(profile.eps)), np.append(deltas, float(profile.delta_))
    # the lines b >= s a - c: b >= e^-eps (a - delta) and b >= e^eps a - (e^eps - 1 + delta)
    hull = envelope.hull_of(np.concatenate([np.exp(-eps), np.exp(eps)]),
                            np.concatenate([np.exp(-eps) * deltas, np.expm1(eps) + deltas]))
    return hull.P, hull.g, hull.s


#: One target: the log-spaced s where (1 + Psi(s)) / (1 + s) is searched before its refinement.
_ONE_TARGET_S = np.geomspace(1e-8, 1e8, 321)


def one_target_success(psi: "Conjugate") -> float:
    """Theorem 4 at n = 1: p_1 <= (1 + Psi(s)) / (1 + s) for every s > 0 (its one constraint, s p_1 - p_0 <= Psi(s),
    with p_0 = 1 - p_1), so its LP's value over every s is the infimum over s. Searched on a log grid, then refined
    between the best point's neighbours (the ratio is quasi-convex: 1 + Psi(s) - a (1 + s) is convex in s); every s
    evaluated is a valid bound (Psi an upper bound on the conjugate), and the least is returned, capped at 1."""
    from scipy import optimize

    ratio = lambda s: float((1.0 + psi(np.atleast_1d(s))[0]) / (1.0 + s))  # noqa: E731
    values = (1.0 + psi(_ONE_TARGET_S)) / (1.0 + _ONE_TARGET_S)
    i = int(np.argmin(values))
    best = float(values[i])
    lo, hi = _ONE_TARGET_S[max(i - 1, 0)], _ONE_TARGET_S[min(i + 1, _ONE_TARGET_S.size - 1)]
    res = optimize.minimize_scalar(lambda u: ratio(math.exp(u)), bounds=(math.log(lo), math.log(hi)), method="bounded",
                                   options={"xatol": 1e-10})
    if res.success:
        best = min(best, ratio(math.exp(float(res.x))))
    return float(min(1.0, best))


@dataclass
class _CountState:
    """One count c's rounds: the best certified bound so far, the dual LP's best optimum (where it is a lower bound on
    the grid LP's: ``PriorRun.tail``), its last optimum whatever the grid and window (the count search's estimate of
    the LP's value), the rounds, and whether they stopped (no row left to add, or _MAX_ROUNDS)."""

    bound: float = math.inf
    lower: float = -math.inf
    value: float = math.nan
    rounds: int = 0
    done: bool = False
    #: (bound, lower) at the last round that moved either by more than _STALL_GAIN of the target, and that round
    mark: tuple = (math.inf, -math.inf)
    since: int = 0


class PriorRun:
    """Theorem 4 for n targets: ``tail(c)`` = a certified bound on the largest Pr[N >= c] under the conjugate
    constraints at every s of a grid (THEORY.md section 9).

    The targets fall into at most MAX_GROUPS groups (runs of similar p; one group per distinct prior when there are
    few). The primal LP's variables are p_j = Pr[N = j] and r_gj = Pr[N = j, target i right] averaged over the targets
    i of group g, with sum_g n_g r_gj = j p_j, r_gj <= p_j, sum_j p_j = 1 and, for each group and each s of its grid,
    sum_j (s r_gj - (p_{j-1} - r_{g,j-1}))_+ <= G_g*(s): Lemma 5 for every target and every set T at once, averaged over
    the group's targets. ``_Dual`` holds its dual (one HiGHS model, kept across counts: the constraints do not depend
    on c); the value returned is the objective of a dual-feasible point rebuilt from each solution (``_Dual.certify``),
    valid whatever the solver's accuracy and however few of the dual's rows were generated."""

    def __init__(self, profile: PrivacyProfile, dists: Distributions | None, psi: "Conjugate | None" = None, *,
                 groups: int = MAX_GROUPS):
        if psi is None:
            # at most ``groups`` groups: the distinct priors in runs of similar p, each run's lemma averaged over its
            # targets
            order = np.argsort([sh.p for sh in dists.shapes], kind="stable")
            runs = [list(run) for run in np.array_split(order, min(check_groups(groups), len(order)))]
            psi = Conjugate(profile, dists, runs)
            self._prior_tail = _prior_tail(np.array([sh.p for sh in dists.shapes]),
                                           np.asarray(dists.counts, dtype=np.int64))
        else:
            self._prior_tail = None  # a pooled conjugate: no law of a real attack at hand
        self.psi = psi
        self.sizes = self.psi.counts
        self.n = int(round(float(np.sum(self.sizes))))
        # each group's fine grid and G_g* on it (``_grids``)
        self._fine, self._fine_gstar = _grids(self.psi)
        self._start()

    def fresh(self) -> "PriorRun":
        """A PriorRun for the same targets with no rows, counts or refinements yet (a new search's, as a new PriorRun
        would be), sharing this one's conjugate, fine grids and prior-attack law."""
        run = object.__new__(PriorRun)
        run.psi, run.sizes, run.n, run._prior_tail = self.psi, self.sizes, self.n, self._prior_tail
        run._fine, run._fine_gstar = self._fine, self._fine_gstar
        run._start()
        return run

    def _start(self) -> None:
        # the dual's grids start coarse (every _COARSE-th point of the fine grid, its ends kept) and are refined to the
        # fine grid around the atoms the dual's measure uses (``_refine``)
        keep = [np.unique(np.append(np.arange(0, f.size, _COARSE), f.size - 1)) for f in self._fine]
        self.atoms = [f[k] for f, k in zip(self._fine, keep)]
        self.gstar = [v[k] for v, k in zip(self._fine_gstar, keep)]
        self._below = max(_WINDOW_MIN, int(_WINDOW * self.n))  # how far below a count the window reaches
        self._dual: _Dual | None = None
        self._state: dict[int, _CountState] = {}

    def unreachable(self, target: float) -> int:
        """The largest c whose tail(c + 1) no grid can certify at or below ``target`` (-1 if none is known): the law of
        N under the attack that guesses every target's likeliest value (a real attack, so a point of the LP with every
        constraint of Theorem 4) puts more than ``target`` (by 1e-3 of it) on N >= c + 1. Only a lower bound on the
        LP's optimum is used, so the count search may start above it without losing a certifiable count."""
        if self._prior_tail is None:
            return -1
        above = np.flatnonzero(self._prior_tail[1:] > target * (1.0 + 1e-3))  # index c: Pr[N >= c + 1]
        return int(above[-1]) if above.size else -1

    def tail(self, c: int, target: float | None = None) -> float:
        """A certified bound on Pr[N >= c]: the best over rounds that solve the dual, rebuild its certificate and add
        the rows the solution breaks, until none breaks. With ``target``, the rounds also stop once the bound is at most
        the target, or once the dual's optimum (with every row generated so far: a lower bound on the grid LP's, up to
        the solver's tolerance and the window) is above it: enough to decide ``tail(c) <= target`` (a wrong "above"
        only makes a count larger, never invalid)."""
        c = int(c)
        if c <= 0:
            return 1.0
        if c > self.n:
            return 0.0
        state = self._state.setdefault(c, _CountState())
        if self.n == 1 and not state.done:  # one target: the LP in closed form (THEORY.md section 9, "One target")
            state.bound = state.lower = one_target_success(self.psi)
            state.done = True
        decided = lambda: target is not None and (state.bound <= target or state.lower > target * (1.0 + _ABOVE))
        while not state.done and not decided():
            self._round(c, state, target)
        return float(min(1.0, max(0.0, state.bound)))

    def estimate(self, c: int, target: float) -> float:
        """``tail(c, target)``, or the dual's last optimum where that is below it and on the same side of the target
        (the LP's value, nearer than the certificate the rounds stopped at, which stops as soon as it is below the
        target): the count search interpolates these, and decides on ``tail`` alone."""
        bound = self.tail(c, target)
        state = self._state.get(int(c))
        if state is None or not 0.0 < state.value < bound or (state.value <= target) != (bound <= target):
            return bound
        return float(state.value)

    def _round(self, c: int, state: _CountState, target: float | None = None) -> None:
        """One round at c: solve the dual, keep the best certified bound, add the rows it breaks, and widen the window
        of counts (a new model with the same rows) when the dual puts mass on its lowest count. With ``target``, rows
        that still break but moved neither the bound nor the dual's optimum by _STALL_GAIN of the target in
        _STALL_ROUNDS rounds count as none: the grid is refined (or the window widened), else the count stops."""
        dual = self._window(c)
        if not state.rounds and _PRUNE_AGE:
            dual.prune(_PRUNE_AGE)  # rows other counts generated that have not bound for a while
        dual.set_count(c)
        optimal, x, objective = dual.model.solve()
        dual.aged()
        state.rounds += 1
        if x is None:  # no solution at all: the bound stays (1 if no round gave one)
            state.done = True
            return
        state.bound = min(state.bound, dual.certify(x, c))
        if optimal:  # a lower bound on the dual with these atoms and window (so with any subset of its rows)
            state.lower = max(state.lower, objective)
            state.value = objective
        rows = dual.refine(x)
        stalled = False
        if target is not None:
            gain = _STALL_GAIN * target
            # the dual's optimum rising above the target is no progress: it decides "above" only past _ABOVE
            if state.bound < state.mark[0] - gain or target >= state.lower > state.mark[1] + gain:
                state.mark, state.since = (state.bound, state.lower), state.rounds
            # where the dual's optimum is still below the target the certificate may yet reach it: three times longer
            stalled = state.rounds - state.since >= _STALL_ROUNDS * (1 if state.lower > target else 3)
        added = rows and not stalled
        if not added and dual.edge(x) > _EDGE and dual.a > 1:
            self._below *= 2  # the next round's window reaches twice as far below
            added = True
            state.mark, state.since = (state.bound, -math.inf), state.rounds
        elif not added:
            added = self._refine(dual, x)
            if added:
                state.mark, state.since = (state.bound, -math.inf), state.rounds
        if added and not dual.rows_only:
            for st in self._state.values():
                st.lower = -math.inf  # optima of a smaller dual
        state.done = not added or state.rounds >= _MAX_ROUNDS

    def _refine(self, dual: "_Dual", x: np.ndarray) -> bool:
        """Add the fine grid's points between the neighbours of every atom the solution's measure uses; whether any
        was added (the next round builds the dual anew, with the rows it had)."""
        grew = False
        for g in range(self.sizes.size):
            atoms, fine = self.atoms[g], self._fine[g]
            used = np.flatnonzero(x[dual.lam[g]: dual.lam[g] + atoms.size] > 0.0)
            lo = atoms[np.maximum(used - 1, 0)]
            hi = atoms[np.minimum(used + 1, atoms.size - 1)]
            near = np.any((fine[:, None] >= lo[None, :]) & (fine[:, None] <= hi[None, :]), axis=1)
            new = np.union1d(np.searchsorted(fine, atoms), np.flatnonzero(near))  # indices into the fine grid
            if new.size > atoms.size:
                self.atoms[g], self.gstar[g] = fine[new], self._fine_gstar[g][new]
                grew = True
        if grew:
            dual.rows_only = False
            self._dual = _Dual(self.sizes, self.atoms, self.gstar, dual.a, dual.rows(), dual.starts)
        return grew

    def _window(self, c: int) -> "_Dual":
        """The dual whose window of counts reaches _below below c, on c's count blocks (``_layout``): built, or rebuilt
        (wider, or on c's blocks) with the rows it had."""
        a = max(1, c - self._below)
        wider = self._dual is not None and self._dual.a > a
        a = a if self._dual is None or wider else self._dual.a
        starts = _layout(self.n, a, c, _near(self.n, self.sizes.size))
        if self._dual is None or wider or not np.array_equal(self._dual.starts, starts):
            rows = None if self._dual is None else self._dual.rows()
            self._dual = _Dual(self.sizes, self.atoms, self.gstar, a, rows, starts)
            if wider:
                for st in self._state.values():
                    st.lower = -math.inf  # optima of a narrower window's dual
        self._dual.rows_only = True
        return self._dual


def _near(n: int, groups: int) -> int | None:
    """How far from c ``_layout`` keeps every count its own block: its default (None), ceil(_BLOCK_NEAR sqrt(n)), with
    one group, else no farther than _NEAR_MAX (the same layout at n <= 300, where every block is one count). With
    groups the dual's rows and solves grow fast with the blocks (10 Zipf priors, n = 10^4: ~460 blocks by default,
    89 s a call; ~100 blocks, 14 s, the same counts); single counts next to c are what its value needs (blocks of
    1-2 counts there cost 3-4 counts at n = 2000), more of them did not help where measured."""
    default = int(math.ceil(_BLOCK_NEAR * math.sqrt(n)))
    return None if groups <= 1 or default <= _NEAR_MAX else _NEAR_MAX


def _layout(n: int, a: int, c: int, near: int | None = None) -> np.ndarray:
    """The first counts of the blocks that cut the window [a, n] (Corollary 9.3): one count each within ``near``
    (by default _BLOCK_NEAR sqrt(n)) of c, then blocks whose width grows by rho per count of distance beyond, rho =
    _BLOCK_GROWTH (1 - _BLOCK_FROM / n)_+ (0, every count its own block, at n <= _BLOCK_FROM: the exact dual; then
    growing smoothly with n). c starts a block."""
    rho = _BLOCK_GROWTH * max(0.0, 1.0 - _BLOCK_FROM / n)
    near = int(math.ceil(_BLOCK_NEAR * math.sqrt(n))) if near is None else int(near)
    c = min(max(int(c), a), n)
    starts = list(range(max(a, c - near), min(n, c + near) + 1))
    j = c + near + 1
    while j <= n:
        starts.append(j)
        j += 1 + int(rho * (j - c - near))
    j = c - near - 1  # the last count of the next block down
    while j >= a:
        start = max(a, j - int(rho * (c - near - j)))
        starts.append(start)
        j = start - 1
    return np.unique(np.asarray(starts, dtype=np.int64))


class _Dual:
    """The dual of Theorem 4's LP on the grids ``atoms`` (THEORY.md section 9, "The dual the library solves"), for
    counts j in the window [a, n] (y_j = 0 below it: a restriction of the dual, so still a valid bound), as one HiGHS
    model. The window is cut into blocks of counts (``starts``; one count each by default): y_gj and X_gj are one
    column per block, e_j and kappa_gj one per block's counts below its last and one at its last, and only the p_j
    and r_gj rows at each block's first and last counts are kept (the others follow: Corollary 9.3).

    Columns: nu; per group g a measure lam_g on its atoms with its suffix sums L_gk = sum_{k' >= k} lam_gk' and
    T_gk = sum_{k' > k} (s_k' - s_k) lam_gk'; per count j of the window y_gj (the mass of lam_g a multiplier at j may
    use), X_gj (its moment) and, with several groups, e_j (-n times the multiplier of sum_g n_g r_gj = j p_j) and
    kappa_gj (of r_gj <= p_j). Rows: one per p_j (its reduced cost), one per r_gj (several groups), the suffix sums,
    and the rows generated as they break: X_gj <= s_k y_gj + T_gk (the moment of lam's top y_gj is the least of these
    over k) and y_gj <= L_g0. Objective: nu + sum_g lam_g . G_g*."""

    def __init__(self, sizes: np.ndarray, atoms: list, gstar: list, a: int, carried=None, starts=None):
        self.sizes, self.atoms, self.gstar, self.a = np.asarray(sizes, dtype=float), atoms, gstar, int(a)
        m = self.sizes.size
        n = self.n = int(round(float(self.sizes.sum())))
        self.m, self.K = m, [s.size for s in atoms]
        self.j = np.arange(self.a, n + 1)
        # count blocks (Corollary 9.3): y_gj and X_gj are one variable per block; every count its own block by default
        self.starts = self.j.copy() if starts is None else np.asarray(starts, dtype=np.int64)
        self.ends = np.append(self.starts[1:] - 1, n)
        self.block = np.searchsorted(self.starts, self.j, side="right") - 1  # each count's block
        W = B = self.starts.size
        # the p_j rows kept: each block's first count where it has more than one (its other counts but the last have
        # the same row less (j - a_b)/n times a column >= 0) and its last; each with the block of y_{g,j+1}
        inner = np.flatnonzero(self.ends > self.starts)
        order = np.argsort(np.concatenate([self.starts[inner], self.ends]), kind="stable")
        self.rep = np.concatenate([self.starts[inner], self.ends])[order]
        rep_b = np.concatenate([inner, np.arange(B)])[order]
        rep_next = np.concatenate([inner, np.arange(B) + 1])[order]  # B: y_{g,n+1} = 0
        V = self.rep.size
        col = 1  # nu at 0
        self.lam, self.L, self.T = [], [], []
        for K in self.K:
            self.lam.append(col)
            self.L.append(col + K)
            self.T.append(col + 2 * K)
            col += 3 * K
        self.e = col if m > 1 else None
        col += V if m > 1 else 0
        self.kap, self.y, self.X = [], [], []
        for g in range(m):
            if m > 1:
                self.kap.append(col)
                col += V
            self.y.append(col)
            self.X.append(col + W)
            col += 2 * W
        cost = np.zeros(col)
        cost[0] = 1.0
        for g in range(m):
            cost[self.lam[g]: self.lam[g] + self.K[g]] = gstar[g]
        rows, cols, vals, lower, upper = [], [], [], [], []

        def put(r, c_, v):
            rows.append(np.asarray(r))
            cols.append(np.asarray(c_))
            vals.append(np.broadcast_to(np.asarray(v, dtype=float), np.shape(r)))

        # p_j, j = a - 1 and the kept counts (row 0, then 1 + v): nu + (j/n) X_j - ((n-j)/n) y_{j+1} >= [j >= c]
        # (one group), or nu + (j/n) e_j - sum_g kappa_gj - sum_g y_{g,j+1} >= [j >= c]
        P = V + 1
        put(np.arange(P), np.zeros(P, dtype=np.int64), 1.0)
        v = np.arange(V)
        has_next = rep_next < B
        for g in range(m):
            if m == 1:
                put(v + 1, self.X[g] + rep_b, self.rep / n)
                put(v[has_next] + 1, self.y[g] + rep_next[has_next], -(n - self.rep[has_next]) / n)
                put([0], [self.y[g]], -(n - (self.a - 1)) / n)
            else:
                put(v + 1, self.kap[g] + v, -1.0)
                put(v[has_next] + 1, self.y[g] + rep_next[has_next], -1.0)
                put([0], [self.y[g]], -1.0)
        if m > 1:
            put(v + 1, self.e + v, self.rep / n)
        lower.append(np.zeros(P))
        upper.append(np.full(P, _highs.INF))
        r = P
        if m > 1:  # r_gj at the kept counts: kappa_gj + X_gj + y_{g,j+1} - (n_g/n) e_j >= 0
            for g in range(m):
                put(r + v, self.kap[g] + v, 1.0)
                put(r + v, self.X[g] + rep_b, 1.0)
                put(r + v[has_next], self.y[g] + rep_next[has_next], 1.0)
                put(r + v, self.e + v, -self.sizes[g] / n)
                lower.append(np.zeros(V))
                upper.append(np.full(V, _highs.INF))
                r += V
        for g in range(m):  # L_k - L_{k+1} - lam_k = 0 and T_k - T_{k+1} - (s_{k+1} - s_k) L_{k+1} = 0
            K = self.K[g]
            k = np.arange(K)
            put(r + k, self.L[g] + k, 1.0)
            put(r + k[:-1], self.L[g] + k[1:], -1.0)
            put(r + k, self.lam[g] + k, -1.0)
            put(r + K + k, self.T[g] + k, 1.0)
            put(r + K + k[:-1], self.T[g] + k[1:], -1.0)
            put(r + K + k[:-1], self.L[g] + k[1:], -np.diff(atoms[g]))
            lower.append(np.zeros(2 * K))
            upper.append(np.zeros(2 * K))
            r += 2 * K
        A = sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, col))
        self.model = _highs.Model(cost, np.zeros(col), np.full(col, _highs.INF), A, np.concatenate(lower),
                                  np.concatenate(upper), _ITERATIONS)
        self.has = [np.zeros((W, K), dtype=bool) for K in self.K]
        self.capped = [np.zeros(W, dtype=bool) for _ in range(m)]
        # the generated rows, from model row ``base`` on: (group, block, atom; -1 for a cap y_gj <= L_g0) and how many
        # solves in a row each has not bound (``age``, ``prune``)
        self.base = r
        self.gen = np.zeros((0, 3), dtype=np.int64)
        self.age = np.zeros(0, dtype=np.int64)
        w = np.arange(W)
        for g in range(m):
            # the top atom (X_gj <= s_max y_gj bounds every X) and those around (n - j + 1)/j, where a smooth law's
            # term j changes sign
            near = np.searchsorted(atoms[g], (n - self.starts + 1) / self.starts)
            self._add(g, np.tile(w, 4), np.concatenate([np.full(W, self.K[g] - 1), near - 1, near, near + 1]))
        for g, j, s_k in carried or ():
            keep = j >= self.a
            self._add(g, np.searchsorted(self.starts, j[keep], side="right") - 1, np.searchsorted(atoms[g], s_k[keep]))

    def rows(self) -> list:
        """The generated rows (g, counts j, their atoms' s) that bound in one of the last _PRUNE_AGE solves (all with
        _PRUNE_AGE = 0), to carry into a wider window, a finer grid or another count's blocks."""
        out = []
        for g in range(self.m):
            mine = self.gen[:, 0] == g
            if _PRUNE_AGE:
                mine &= self.age < _PRUNE_AGE
            w, k = self.gen[mine, 1], self.gen[mine, 2]
            out.append((g, self.starts[w[k >= 0]], self.atoms[g][k[k >= 0]]))
        return out

    def _add(self, g: int, w: np.ndarray, k: np.ndarray) -> int:
        """Add the rows X_gj <= s_k y_gj + T_gk not yet there (block w, atom k); how many."""
        k = np.clip(k, 0, self.K[g] - 1)
        key = np.unique(w * self.K[g] + k)
        w, k = key // self.K[g], key % self.K[g]
        new = ~self.has[g][w, k]
        w, k = w[new], k[new]
        if w.size:
            self.has[g][w, k] = True
            self._generated(g, w, k)
            q = np.arange(w.size)
            R = sparse.coo_matrix((np.concatenate([self.atoms[g][k], np.ones(w.size), -np.ones(w.size)]),
                                   (np.tile(q, 3), np.concatenate([self.y[g] + w, self.T[g] + k, self.X[g] + w]))),
                                  shape=(w.size, self.model.num_col))
            self.model.add_rows(np.zeros(w.size), np.full(w.size, _highs.INF), R)
        return int(w.size)

    def _cap(self, g: int, w: np.ndarray) -> int:
        """Add the rows y_gj <= L_g0 not yet there; how many."""
        w = w[~self.capped[g][w]]
        if w.size:
            self.capped[g][w] = True
            self._generated(g, w, np.full(w.size, -1))
            q = np.arange(w.size)
            R = sparse.coo_matrix((np.concatenate([np.ones(w.size), -np.ones(w.size)]),
                                   (np.tile(q, 2), np.concatenate([np.full(w.size, self.L[g]), self.y[g] + w]))),
                                  shape=(w.size, self.model.num_col))
            self.model.add_rows(np.zeros(w.size), np.full(w.size, _highs.INF), R)
        return int(w.size)

    def _generated(self, g: int, w: np.ndarray, k: np.ndarray) -> None:
        self.gen = np.concatenate([self.gen, np.stack([np.full(w.size, g), w, k], axis=1)])
        self.age = np.append(self.age, np.zeros(w.size, dtype=np.int64))

    def aged(self) -> None:
        """After a solve: one more solve for every generated row that did not bind (its slack basic), 0 for the
        others."""
        basic = self.model.basic_rows()
        if basic is None:
            self.age[:] = 0
        else:
            self.age = np.where(basic[self.base:], self.age + 1, 0)

    def prune(self, age: int) -> int:
        """Delete the generated rows that bound in none of the last ``age`` solves (the basis stays valid: their slacks
        are basic); a later round adds back any that break. How many."""
        drop = np.flatnonzero(self.age >= age)
        if drop.size:
            self.model.delete_rows(self.base + drop)
            for g, w, k in self.gen[drop]:
                if k < 0:
                    self.capped[g][w] = False
                else:
                    self.has[g][w, k] = False
            keep = np.ones(self.age.size, dtype=bool)
            keep[drop] = False
            self.gen, self.age = self.gen[keep], self.age[keep]
        return int(drop.size)

    def set_count(self, c: int) -> None:
        """The right-hand sides [j >= c] of the p_j rows (nothing else depends on c)."""
        j = np.append(self.a - 1, self.rep)
        self.model.set_row_bounds(np.arange(j.size), (j >= c).astype(float), np.full(j.size, _highs.INF))

    def _measure(self, x: np.ndarray, g: int):
        """(lam_g >= 0, y_g per block clipped to [0, lam_g's mass]) of a solution."""
        lam = np.maximum(x[self.lam[g]: self.lam[g] + self.K[g]], 0.0)
        y = np.clip(x[self.y[g]: self.y[g] + self.starts.size], 0.0, lam.sum())
        return lam, y

    def certify(self, x: np.ndarray, c: int) -> float:
        """The objective of a dual-feasible point of the full LP (every count, every group, the grid's s) built from
        the solution's lam and y alone: X_gj := the exact moment of lam_g's top y_gj (``_top_moment``), e_j and kappa_gj
        the best for them, nu the least that makes every p_j's reduced cost <= 0 (THEORY.md section 9)."""
        n, m = self.n, self.m
        W = self.j.size
        # counts a - 1 .. n: X (0 at a - 1) and y_{g,j+1} (0 at n)
        Z, ynext, cost = np.zeros((m, W + 1)), np.zeros((m, W + 1)), 0.0
        for g in range(m):
            lam, y = self._measure(x, g)
            ynext[g, :-1] = y[self.block]  # a block's y at each of its counts
            Z[g, 1:] = _top_moment(self.atoms[g], lam, y)[0][self.block]
            cost += float(lam @ self.gstar[g])
        Z += ynext  # X_gj + y_{g,j+1}
        j = np.arange(self.a - 1, n + 1)
        # the largest (j/n) e - sum_g ((n_g/n) e - Z_gj)_+ - sum_g y_{g,j+1} over e >= 0: concave piecewise linear in
        # e, so at e = 0 or a breakpoint n Z_gj / n_g
        best = np.zeros(j.size)
        for g in range(m):
            e = n * Z[g] / self.sizes[g]
            value = (j / n) * e - np.maximum(self.sizes[:, None] / n * e[None, :] - Z, 0.0).sum(axis=0)
            best = np.maximum(best, value)
        nu = max(0.0, float(np.max((j >= c) - best + ynext.sum(axis=0))))
        return nu + cost + _CERT_SLACK

    def refine(self, x: np.ndarray) -> int:
        """Add the rows the solution breaks: for every count where X_gj exceeds the moment of lam_g's top y_gj, the
        row of the atom where that top ends and two neighbours on each side (fewer rounds than one: measured); the caps
        y_gj <= L_g0 it breaks. How many."""
        added = 0
        for g in range(self.m):
            lam, _ = self._measure(x, g)
            y = np.maximum(x[self.y[g]: self.y[g] + self.starts.size], 0.0)
            added += self._cap(g, np.flatnonzero(y > lam.sum() * (1.0 + 1e-9) + 1e-12))
            moment, k = _top_moment(self.atoms[g], lam, np.minimum(y, lam.sum()))
            bad = np.flatnonzero(x[self.X[g]: self.X[g] + self.starts.size] > moment * (1.0 + _ROW_TOL) + 1e-12)
            added += self._add(g, np.tile(bad, 5), np.concatenate([k[bad] + d for d in (0, -1, 1, -2, 2)]))
        return added

    def edge(self, x: np.ndarray) -> float:
        """The dual's mass at the window's lowest count (sum_g y_ga): above _EDGE, a wider window may do better."""
        return float(sum(max(x[self.y[g]], 0.0) for g in range(self.m)))


def _top_moment(s: np.ndarray, lam: np.ndarray, y: np.ndarray):
    """(X, k): the largest sum_k s_k mu_k over 0 <= mu <= lam with sum_k mu_k = y (0 <= y <= sum lam, s ascending),
    i.e. the moment of lam's top y of mass, rounded down; and the atom k where that top ends."""
    L = np.append(np.cumsum(lam[::-1])[::-1], 0.0)  # L[k] = sum_{k' >= k} lam_k'
    S = np.append(np.cumsum((s * lam)[::-1])[::-1], 0.0)
    i = np.searchsorted(L[::-1], y, side="right")
    k = np.clip(s.size - i, 0, s.size - 1)
    X = np.where(y >= L[0], S[0], S[k + 1] + s[k] * (y - L[k + 1]))
    # the cumulative sums' round-off: a relative 1e-12 of the whole moment, taken off
    return np.maximum(X - 1e-12 * (S[0] + s[-1] * L[0]), 0.0), k


def _grids(psi: "Conjugate") -> tuple[list, list]:
    """Each group's fine grid of s and G_g* on it: _S_DENSE and the conjugate's kinks, where its slope is inside
    (_SLOPE_LOW, its largest slope - _SLOPE_LOW) and one point beyond on each side (outside, the constraints are slack
    or the conjugate is the line s * A_max; restricting the dual's measure to a grid only loosens the bound, never
    invalidates it). Groups with the same dense grid (every group of a mu-GDP profile) share one evaluation."""
    fine, values, evaluated = [], [], {}
    for g in range(psi.counts.size):
        kinks = psi.kinks(g)
        kinks = kinks[(kinks > _S_DENSE[0]) & (kinks < _S_DENSE[-1])]
        if kinks.size > _MAX_KINKS:
            kinks = kinks[np.linspace(0, kinks.size - 1, _MAX_KINKS).astype(np.int64)]
        dense = np.union1d(_S_DENSE, kinks)
        key = dense.tobytes()
        if key not in evaluated:
            evaluated[key] = psi.per_target(dense)
        v = evaluated[key][g]
        slope = np.gradient(v, dense)
        inside = np.flatnonzero((slope > _SLOPE_LOW) & (slope < slope.max() - _SLOPE_LOW))
        if inside.size < 2:
            f = np.geomspace(1e-2, 1e4, 9)
            fine.append(f)
            values.append(psi.per_target(f)[g])
        else:
            fine.append(dense[max(inside[0] - 1, 0): inside[-1] + 2])
            values.append(v[max(inside[0] - 1, 0): inside[-1] + 2])
    return fine, values


def _prior_tail(p: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """A lower bound on Pr[N >= c], c = 0 .. n + 1, under the attack that guesses each target's likeliest value: N is
    the Poisson-binomial of the p's (its kept entries summed less ``trimmed``, which bounds both the mass the convolution
    drops and the round-off of what it keeps)."""
    pmf, trimmed = _law(p, counts)
    return np.maximum(np.cumsum(np.append(pmf, 0.0)[::-1])[::-1] - trimmed, 0.0)


def _law(q: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, float]:
    """(Pr[N = j] for j = 0 .. n, the convolution's ``trimmed`` bound) for independent successes of probability q[k]
    on counts[k] targets (n = the total of ``counts``; none left: N = 0)."""
    d = tails.distribution_grouped(q[counts > 0], counts[counts > 0])
    return d.dense(), float(d.trimmed)


def pooled_conjugate(profile: PrivacyProfile, runs: list[Distributions], groups: int = MAX_GROUPS) -> Conjugate:
    """The conjugate of Theorem 4 over the mixture of R runs (THEORY.md section 9, "Over the trials"): in every run the
    targets sorted by p are cut into ``groups`` blocks of the same sizes (np.array_split of n), and block g's G_g* is
    the mean over the runs of the mean over the block's targets of their conjugates. The LP with it bounds the mean
    over the runs of Pr_r[N >= c]."""
    n = runs[0].n
    sizes = np.array([len(b) for b in np.array_split(np.arange(n), min(groups, n))], dtype=np.int64)
    edges = np.concatenate([[0], np.cumsum(sizes)])
    probs, blocks = [], []
    for dists in runs:
        order = np.argsort([sh.p for sh in dists.shapes], kind="stable")
        start = 0
        for i in order:  # shape i's targets occupy ranks [start, start + counts[i]) of the run
            sh, count = dists.shapes[i], int(dists.counts[i])
            # how many of them fall in each block
            share = np.clip(np.minimum(edges[1:], start + count) - np.maximum(edges[:-1], start), 0, None)
            probs.append(sh.probs)
            blocks.append(share[:, None] * sh.mult[None, :])
            start += count
    member = np.concatenate(blocks, axis=1).astype(float) / (len(runs) * sizes[:, None])
    return Conjugate(profile, None, weights=(np.concatenate(probs), member, sizes))


def expected_prior_run_counts(profile: PrivacyProfile, runs: list[Distributions], targets, hint=None,
                              groups: int = MAX_GROUPS, at_most: bool = False) -> list[int]:
    """Theorem 4 over the mixture of the runs (``pooled_conjugate`` with ``groups`` blocks): the smallest c with
    mean_r Pr_r[N >= c + 1] bounded by the target, for each target (``at_most``: as in ``prior_run_counts``)."""
    psi = pooled_conjugate(profile, runs, check_groups(groups))
    return _counts(lambda: PriorRun(profile, None, psi), targets, hint,
                   at_most)


def prior_run_tail(profile: PrivacyProfile, dists: Distributions, v: int, groups: int = MAX_GROUPS) -> float:
    """Theorem 4's bound on Pr[#correct >= v] (one exact guess per target)."""
    return PriorRun(profile, dists, groups=groups).tail(v)


def prior_run_counts(profile: PrivacyProfile, dists: Distributions, targets, hint=None,
                     groups: int = MAX_GROUPS, at_most: bool = False) -> list[int]:
    """Theorem 4's count for each target tail probability: the smallest c with tail(c + 1) <= target.

    ``hint`` (one count per target, e.g. the other theorems' counts) is where the search starts: it gallops from
    there, so a count near the hint costs a few LPs. ``groups``: at most this many groups of targets with their own
    constraints (more: tighter on priors that differ, and slower). ``at_most=True`` (what a minimum over theorems
    needs, ``count_bounds``): the search looks only below the hint and returns the hint itself where Theorem 4
    certifies no smaller count, as Theorem 5's search does; the LPs of the far tail above the hint (the slowest, and
    the least stable numerically) are not solved."""
    return _counts(lambda: PriorRun(profile, dists, groups=groups), targets, hint, at_most)


def check_groups(groups) -> int:
    """``groups`` as an int >= 1, or one sentence naming it and the fix."""
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"groups (Theorem 4's most groups of targets) must be a whole number >= 1, got {groups!r}; "
                         f"use {MAX_GROUPS} (the default; bound.groups in a config) or more for a tighter, slower count.")
    return int(groups)


def _counts(make_run, targets, hint, at_most: bool = False) -> list[int]:
    """The count for each target, each searched on its own ``make_run()`` (a fresh PriorRun: a confidence's count does
    not depend on which other confidences the call asks, and one search's wide window of counts does not slow the next
    one's LPs), from its hint (n / 2 without one); with ``at_most``, no larger than the hint."""
    targets = np.atleast_1d(np.asarray(targets, dtype=float))
    if at_most and hint is None:
        raise ValueError("at_most=True needs a hint: the count it may not exceed (the other theorems' count).")
    out, first = [], None
    for i, t in enumerate(targets):
        run = make_run() if first is None else first.fresh()
        first = first or run
        h = run.n // 2 if hint is None else np.atleast_1d(hint)[i]
        out.append(_smallest_count(run, float(t), int(min(max(h, 0), run.n)), at_most))
    return out


def _smallest_count(run: PriorRun, target: float, start: int, at_most: bool = False) -> int:
    """The smallest c in [0, n] with run.tail(c + 1) <= target (tail(n + 1) = 0): a bracketed search from ``start``
    whose next point is the crossing of log tail - log target interpolated from the two points nearest to it (the
    tail is smooth in c, so a count a few steps from the hint costs three or four LPs). With ``at_most``: the same
    search, ended with ``start`` as soon as the count is known to be above it (its first step, tail(start + 1), is
    the search's own, so wherever Theorem 4 certifies ``start`` the search and its cuts are those without it)."""
    f = lambda c: math.log(max(run.estimate(c + 1, target), 1e-300)) - math.log(target)
    # f(lo) > 0: tail(0) = 1 > target, and below ``unreachable`` a real attack's law is above the target (the search
    # used to spend minutes there, on LPs whose optimum is 1); f(hi) <= 0 (tail(n + 1) = 0)
    lo, hi = run.unreachable(target), run.n
    seen: dict[int, float] = {}
    c, step = start, 1
    while hi - lo > 1:
        if at_most and lo >= start:  # no count at or below start: the hint stands
            return start
        c = min(max(c, lo + 1), hi - 1)
        seen[c] = f(c)
        if seen[c] <= 0:
            hi = c
        else:
            lo = c
        if hi - lo <= 1:
            break
        informative = [k for k in seen if seen[k] < -math.log(target)]  # where the tail is 1 it says nothing of the slope
        near = sorted(informative, key=lambda k: abs(seen[k]))[:2]
        if len(near) < 2 or seen[near[0]] == seen[near[1]]:
            # no slope to interpolate: a step from the count just decided, doubled at each such step (the count is
            # usually near; ``lo`` may be far below it, where a bisection's LPs have optimum 1 and are the slowest)
            c = hi - step if seen[c] <= 0 else lo + step
            step *= 2
            if not lo < c < hi:
                c = (lo + hi) // 2
            continue
        (c1, f1), (c2, f2) = ((k, seen[k]) for k in near)
        guess = math.ceil(c1 - f1 * (c2 - c1) / (f2 - f1))
        # at most _SECANT_REACH times the two points' distance from the nearer one (two near-equal estimates close to
        # the target give a flat secant that reaches far, into the slowest LPs)
        reach = _SECANT_REACH * abs(c2 - c1)
        guess = min(max(guess, c1 - reach), c1 + reach)
        c = guess if guess not in seen else guess - 1
        if not lo < c < hi or c in seen:
            c = (lo + hi) // 2
    return hi
