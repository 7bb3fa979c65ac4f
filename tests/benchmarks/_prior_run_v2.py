"""Version 2 of stages/bound/prior_run.py (cutting planes in s, scipy linprog rebuilt every round), frozen as the
baseline of bench_prior_run.py. Not used by the library.

Theorem 4, the whole-prior one-run count: MMC's one-run argument with every target's whole prior (THEORY.md §9).

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
only relaxes it), solved with cutting planes in s and certified by weak duality: every number returned is a valid
upper bound on Pr[N >= c] for every mechanism with the profile and every attack (one exact guess per target).

On uniform priors G is MMC's (k - 1) g, and the LP holds every one of MMC's constraints (Theorem 3.1 for all T, where
their recursion uses the tail sets only), so it is never above MMC's bound; on skewed priors it sees the whole prior.
The conjugate depends on the priors' distinct probabilities and their multiplicities only, so the LP's size is n,
not the domain's. On priors that differ, the LP keeps up to MAX_GROUPS groups of targets, each with its own
constraints (the same lemma per target, averaged within the group), so it sees how the priors differ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse

from stages.bound import _solve
from stages.bound.profiles import PrivacyProfile
from stages.bound.whole_prior import Distributions
# the parts version 3 kept unchanged: the conjugate, the prior-only attack's laws, the pooled conjugate
from stages.bound.prior_run import Conjugate, _envelope, _law, _prior_tail, check_groups, pooled_conjugate  # noqa: F401

__all__ = ["PRIOR_RUN_THEOREM", "PRIOR_RUN_VERSION", "PRIOR_RUN_MAX_TARGETS", "MAX_GROUPS", "Conjugate", "PriorRun",
           "prior_run_counts", "prior_run_tail", "pooled_conjugate", "expected_prior_run_counts", "check_groups"]

#: Name and version of Theorem 4 in every output.
PRIOR_RUN_THEOREM = "whole-prior one-run count (THEORY.md Thm 4)"
#: 1: the theorem as it joined the default minimum; 2: its count search inside the minimum looks only below the other
#: theorems' count, never below what the prior-only attack reaches, and hands an LP the simplex does not finish to the
#: interior point (the same theorem and certificate; a few tabular counts moved, THEORY.md section 9, "Counts").
PRIOR_RUN_VERSION = 2
#: Theorem 4's LP keeps at most this many groups of targets by default (runs of distinct priors of similar p, each group's
#: lemma averaged over its targets): more groups see more of how the priors differ, and cost more (``groups``; the ACS
#: SEX column's 100 binary priors at eps = 1, 5 trials: 2 groups 78.6 at 0.95 in 34 s, 4 groups 76.0 in 93 s).
MAX_GROUPS = 2
#: The most targets Theorem 4 runs on: its LP has ~ n (cuts + 2) variables per group (three counts take 1.3 s at n = 100, 13 s at n = 300).
PRIOR_RUN_MAX_TARGETS = 200

#: Added to every conjugate value, relative to the objective's slope at the optimum: the floating-point vertex of the
#: trade-off curve's piecewise-linear lower bound may sit a few ulps off the true one.
_VERTEX_SLACK = 1e-13
#: Cutting planes: the dense grid of s searched for violated constraints, the starting cuts, the rounds, the tolerance.
_S_DENSE = np.geomspace(1e-6, 1e10, 3000)
_S_START = np.geomspace(1e-2, 1e4, 9)
_MAX_ROUNDS = 40
#: ... and at most this many cuts per group (the LP grows with them; stopping early only loosens the bound).
_MAX_CUTS = 64
_DECIDED = 0.3
_STALLED = 0.05
_CUT_TOL = 1e-5
#: The same when only a decision tail(c) <= target is needed (the count search).
_DECIDE_TOL = 1e-3
#: ... where a cut must also break by more than this much (absolute, on the conjugate's scale): where the conjugate is
#: ~0 (small s, at the law's edges) constraints break by 1e-11 to 1e-9 round after round while the bound does not move.
_DECIDE_FLOOR = 1e-9
_CUTS_PER_ROUND = 4
_START_CUTS = 6
#: A decision also stops above its target once a point that meets every constraint of the dense grid (``_inner``) has
#: Pr[N >= c] above the target by this fraction: no set of the grid's cuts can bring the bound below it. The point mixes
#: the LP's law (its counts above the last _INNER_TOP of mass dropped) with laws of real attacks (each target guessed a
#: priori with probability theta, else abstained: _INNER_THETAS), checked to _INNER_ROOM (absolute) for round-off.
_INNER_MARGIN = 1e-3
_INNER_TOP = 1e-6
_INNER_THETAS = np.linspace(0.0, 1.0, 21)
_INNER_ROOM = 1e-12
#: The simplex's iterations before an LP goes to the interior point instead (a count, not a time, so runs repeat exactly):
#: on ACS AGEP at 4 groups the simplex solved every LP it solved within 40,000 and spent 103 s and 220,000 on one it
#: then failed.
_SIMPLEX_ITERATIONS = 50_000
#: At most this many kinks of a piecewise-linear conjugate join the dense grid (evenly thinned beyond).
_MAX_KINKS = 3000
_START_LOW = 1e-6


@dataclass
class _CutState:
    """The cutting planes at one count c: each group's cuts, the best certified bound so far, the bound before the last
    round, the rounds, and whether they stopped (no violated cut, or a limit reached)."""

    cuts: list
    bound: float = math.inf
    previous: float = math.inf
    inner: float = 0.0
    rounds: int = 0
    converged: bool = False


class PriorRun:
    """Theorem 4 for n targets: ``tail(c)`` = the largest Pr[N >= c] under the conjugate constraints (certified).

    The targets fall into at most MAX_GROUPS groups (runs of similar p; one group per distinct prior when there are
    few). The LP's variables are p_j = Pr[N = j], r_gj = Pr[N = j, target i right] averaged over the targets i of
    group g, and slacks w. Its constraints: sum_g n_g r_gj = j p_j, r_gj <= p_j, sum_j p_j = 1, and
    for each group g and each cut s of its finite set (a relaxation: fewer s, fewer constraints)
    sum_j w_gj <= G_g*(s) with w_gj >= s r_gj - (p_{j-1} - r_{g,j-1}), w >= 0: Lemma 5 for every target and every
    set T at once, averaged over the group's targets (THEORY.md section 9). The cuts start where the constraints bind and grow by cutting planes; the
    value returned is the Lagrangian bound of the solution's multipliers (weak duality with the implied box
    p, r <= 1, w <= G_g*(s)), valid whatever the solver's accuracy and however few cuts were used."""

    def __init__(self, profile: PrivacyProfile, dists: Distributions | None, psi: "Conjugate | None" = None, *,
                 groups: int = MAX_GROUPS):
        if psi is None:
            # at most ``groups`` groups: the distinct priors in runs of similar p, each run's lemma averaged over its
            # targets
            order = np.argsort([sh.p for sh in dists.shapes], kind="stable")
            runs = [list(run) for run in np.array_split(order, min(check_groups(groups), len(order)))]
            psi = Conjugate(profile, dists, runs)
            self._attacks = (np.array([sh.p for sh in dists.shapes]), np.asarray(dists.counts, dtype=np.int64), runs)
            self._prior_tail = _prior_tail(*self._attacks[:2])
        else:
            self._attacks = None  # a pooled conjugate: no law of a real attack at hand, so no ``_inner``
            self._prior_tail = None
        self._x0 = None
        self.psi = psi
        self.sizes = self.psi.counts
        self.n = int(round(float(np.sum(self.sizes))))
        self._dense, self._psi_dense, self._start = [], [], []
        for g in range(self.sizes.size):
            kinks = self.psi.kinks(g)
            kinks = kinks[(kinks > _S_DENSE[0]) & (kinks < _S_DENSE[-1])]
            if kinks.size > _MAX_KINKS:
                kinks = kinks[np.linspace(0, kinks.size - 1, _MAX_KINKS).astype(np.int64)]
            dense = np.union1d(_S_DENSE, kinks)
            psi = self.psi.per_target(dense)[g]
            self._dense.append(dense)
            self._psi_dense.append(psi)
            self._start.append(_start(dense, psi))
        # where ``_inner_point`` is checked: every s a decision's LP can hold (the dense grid and the starting cuts)
        self._check = [np.union1d(d, st) for d, st in zip(self._dense, self._start)]
        self._psi_check = [self.psi.per_target(s)[g] for g, s in enumerate(self._check)]
        self._binding: dict[int, list] = {}  # per c solved, each group's cuts with a positive multiplier
        self._state: dict[int, _CutState] = {}

    def unreachable(self, target: float) -> int:
        """The largest c whose tail(c + 1) no set of cuts can certify at or below ``target`` (-1 if none is known): the
        law of N under the attack that guesses every target's likeliest value (a real attack, so a point of the LP with
        every constraint of Theorem 4) puts more than ``target`` on N >= c + 1. Only a lower bound on the LP's optimum
        is used, so the count search may start above it without losing a certifiable count."""
        if self._prior_tail is None:
            return -1
        above = np.flatnonzero(self._prior_tail[1:] > target * (1.0 + _INNER_MARGIN))  # index c: Pr[N >= c + 1]
        return int(above[-1]) if above.size else -1

    def tail(self, c: int, target: float | None = None) -> float:
        """A certified bound on Pr[N >= c]; with ``target``, the cutting planes stop as soon as the bound is below it,
        or above it by _DECIDED of min(target, 1 - target) while a round gains less than _STALLED of it: enough to
        decide ``tail(c) <= target``
        (a wrong "above" only makes a count larger, never invalid)."""
        c = int(c)
        if c <= 0:
            return 1.0
        if c > self.n:
            return 0.0
        state = self._state.get(c)
        if state is None:
            cuts = list(self._start)
            if self._binding:
                near = self._binding[min(self._binding, key=lambda k: abs(k - c))]
                cuts = [np.union1d(a, b) for a, b in zip(cuts, near)]
            state = self._state[c] = _CutState(cuts)
        # decided: below the target, or above it by _DECIDED of min(target, 1 - target) with the last round's gain
        # under _STALLED of the bound, or a point of the LP with every cut of the dense grid above it (``_inner``)
        decided = lambda: target is not None and (state.bound <= target or state.inner > target * (1 + _INNER_MARGIN)
                                                  or (state.bound > target + _DECIDED * min(target, 1.0 - target)
                                                      and state.previous - state.bound < _STALLED * state.bound))
        while not state.converged and not decided():
            # the stop's point from the second round at this c on (a decision the first round settles never builds it)
            self._round(c, state, _CUT_TOL if target is None else _DECIDE_TOL,
                        inner=target is not None and state.bound < math.inf)
        return float(min(1.0, max(0.0, state.bound)))

    def _round(self, c: int, state: "_CutState", tol: float, inner: bool = False) -> None:
        """One cutting-plane round at c: solve with the state's cuts, keep the best certified bound, add the violated
        cuts; every round's bound is certified on its own, and the best is kept. With ``inner``, also the largest
        Pr[N >= c] found so far of a point that meets every cut of the dense grid (``_inner``)."""
        cuts = state.cuts
        certified, p, r, z = self._lp(c, cuts)
        state.previous = state.bound
        state.rounds += 1
        if certified < state.bound:
            state.bound = certified
            self._binding[c] = [s[zg > 0] for s, zg in zip(cuts, z)]
        if inner and p is not None and self._attacks is not None:
            state.inner = max(state.inner, self._inner(c, p, r))
        added = False
        if p is not None:
            for g in range(len(cuts)):
                new = self._violated(g, p, r[g], tol)
                new = new[~np.isin(new, cuts[g])]
                if new.size:
                    cuts[g] = np.union1d(cuts[g], new)
                    added = True
        state.converged = not added or state.rounds >= _MAX_ROUNDS or max(len(cg) for cg in cuts) >= _MAX_CUTS

    def _lp(self, c: int, cuts: list):
        """max Pr[N >= c] with the cuts: (the certified bound, p, r (groups, n + 1) with r[:, 0] = 0, each group's
        multipliers of its cuts' budget rows)."""
        n, m = self.n, self.sizes.size
        P = n + 1
        j = np.arange(1, n + 1)
        psis = [self.psi.per_target(s)[g] for g, s in enumerate(cuts)]
        K = np.array([s.size for s in cuts])
        r0 = P  # r_gj at r0 + g n + j - 1
        w0 = P + m * n  # w of group g, cut k, count j at w0 + (offset_g + k) n + j - 1
        offset = np.concatenate([[0], np.cumsum(K)[:-1]])
        nv = w0 + int(K.sum()) * n
        rows, cols, vals, b = [], [], [], []
        row = 0
        # r_gj - p_j <= 0
        for g in range(m):
            idx = row + j - 1
            rows += [idx, idx]
            cols += [r0 + g * n + j - 1, j]
            vals += [np.ones(n), -np.ones(n)]
            row += n
        b.append(np.zeros(m * n))
        for g in range(m):
            s = cuts[g]
            for k in range(K[g]):
                sig = max(1.0, s[k])
                idx = row + j - 1
                # s r_gj - p_{j-1} + r_{g,j-1} - w <= 0 (scaled by 1 / sig)
                rows += [idx, idx, idx, idx[1:]]
                cols += [r0 + g * n + j - 1, j - 1, w0 + (offset[g] + k) * n + j - 1, r0 + g * n + j[:-1] - 1]
                vals += [np.full(n, s[k] / sig), np.full(n, -1.0 / sig), np.full(n, -1.0 / sig),
                         np.full(n - 1, 1.0 / sig)]
                b.append(np.zeros(n))
                row += n
                rows.append(np.full(n, row))
                cols.append(w0 + (offset[g] + k) * n + j - 1)
                vals.append(np.ones(n))
                b.append(np.array([psis[g][k]]))
                row += 1
        A = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(row, nv))
        b = np.concatenate(b)
        # equalities: sum_g n_g r_gj - j p_j = 0 (j = 1..n), sum_j p_j = 1
        erows = [np.repeat(j - 1, m), j - 1, np.full(P, n)]
        ecols = [(r0 + np.arange(m)[None, :] * n + (j - 1)[:, None]).ravel(), j, np.arange(P)]
        evals = [np.tile(self.sizes, n), -j.astype(float), np.ones(P)]
        Aeq = sparse.csr_matrix((np.concatenate(evals), (np.concatenate(erows), np.concatenate(ecols))),
                                shape=(n + 1, nv))
        beq = np.zeros(n + 1)
        beq[n] = 1.0
        obj = np.zeros(nv)
        obj[c:P] = 1.0
        upper = np.ones(nv)
        upper[w0:] = np.concatenate([np.repeat(np.maximum(psi, 0.0), n) for psi in psis])
        # the simplex ends "unknown" on a few badly scaled cut sets, or runs past its iterations: the interior point
        # solves most of them (where it fails too, the round's bound is 1: valid, and the decision ends above its target)
        res = _solve.linprog([("highs", {"maxiter": _SIMPLEX_ITERATIONS}), ("highs-ipm", {})], -obj, A_ub=A, b_ub=b,
                             A_eq=Aeq, b_eq=beq, bounds=(0, None))
        zero = [np.zeros(k) for k in K]
        if res.status != 0:
            return 1.0, None, None, zero
        lam = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0)
        nu = -np.asarray(res.eqlin.marginals)
        # for lam >= 0, any nu and every feasible x in the box [0, upper]:
        # obj.x <= lam.b + nu.beq + sum_v upper_v max(0, (obj - A' lam - Aeq' nu)_v)
        reduced = obj - A.T @ lam - Aeq.T @ nu
        certified = float(lam @ b + nu @ beq + upper @ np.maximum(reduced, 0.0))
        x = np.maximum(res.x, 0.0)
        r = np.zeros((m, P))
        r[:, 1:] = x[r0: w0].reshape(m, n)
        budget = [m * n + offset[g] * (n + 1) + np.arange(K[g]) * (n + 1) + n for g in range(m)]
        return certified, x[:P], r, [lam[ix] for ix in budget]

    def _meets(self, p: np.ndarray, r: np.ndarray, *, dense: bool = False) -> bool:
        """Whether (p, r) meets every group's constraint at every s a decision's LP can hold (its dense grid and its
        starting cuts), to _INNER_ROOM. The left sides sum_j (s up_j - down_j)_+ at every s come from the sorted
        breakpoints (``_positive_part_sums``); ``dense=True`` forms the (grid x n) array of terms instead (the same
        sums to ~1e-15, kept for tests/stages/bound/test_prior_run.py)."""
        for g in range(self.sizes.size):
            up, down = r[g, 1:], p[:-1] - r[g, :-1]
            if dense:
                lhs = np.maximum(self._check[g][:, None] * up[None, :] - down[None, :], 0.0).sum(axis=1)
            else:
                lhs = _positive_part_sums(self._check[g], up, down)
            if np.any(lhs > self._psi_check[g] + _INNER_ROOM):
                return False
        return True

    def _inner(self, c: int, p: np.ndarray, r: np.ndarray) -> float:
        """Pr[N >= c] at ``_inner_point`` (0 without one): no set of the grid's cuts certifies a bound below it (the point
        is checked at every s of the grid itself, so this holds whatever x0 is)."""
        point = self._inner_point(p, r)
        return 0.0 if point is None else float(point[0][c:].sum())

    def _inner_point(self, p: np.ndarray, r: np.ndarray):
        """(p, r) of the largest mix a x + (1 - a) x0 that meets every constraint of the dense grid, or None.

        x is the LP's law (p, r) with its counts above the last _INNER_TOP of its mass dropped (a law on fewer counts:
        the top constraint terms only lose), x0 the mean of the laws of real attacks (``_attack_laws``), which meet
        every constraint. The LP's equalities and r <= p are linear, so every mix keeps them, and each conjugate
        constraint is convex in (p, r): the mix is a point of the LP with every cut of the grid, so no set of the
        grid's cuts certifies a bound below its Pr[N >= c] (THEORY.md section 9, "Counts")."""
        if self._x0 is None:  # built once, on the first decision that needs it, and checked once
            x0 = _attack_laws(*self._attacks)
            self._x0 = x0 if self._meets(*x0) else False
        total = float(p.sum())
        if self._x0 is False or total <= 0.0:
            return None
        p0, r0 = self._x0
        p, r = p / total, np.minimum(r / total, p[None, :] / total)
        above = np.cumsum(p[::-1])[::-1]  # above[j] = the mass at counts >= j
        top = int(np.max(np.flatnonzero(above >= _INNER_TOP)))
        p, r = p.copy(), r.copy()
        p[top + 1:], r[:, top + 1:] = 0.0, 0.0
        kept = float(p.sum())
        p, r = p / kept, r / kept
        lo, hi = 0.0, 1.0
        if self._meets(p, r):
            lo = 1.0
        else:
            for _ in range(20):
                mid = 0.5 * (lo + hi)
                if self._meets(mid * p + (1.0 - mid) * p0, mid * r + (1.0 - mid) * r0):
                    lo = mid
                else:
                    hi = mid
        return lo * p + (1.0 - lo) * p0, lo * r + (1.0 - lo) * r0

    def _violated(self, g: int, p: np.ndarray, r: np.ndarray, tol: float) -> np.ndarray:
        """Group g's s whose constraint (p, r) breaks by more than ``tol`` of G_g*(s): the largest local maxima of the
        violation on the dense grid, each refined to the continuous maximum between its neighbours (not for a
        decision)."""
        up, down = r[1:], p[:-1] - r[:-1]
        dense, psi = self._dense[g], self._psi_dense[g]
        lhs = np.maximum(dense[:, None] * up[None, :] - down[None, :], 0.0).sum(axis=1)
        viol = lhs - psi
        floor = _DECIDE_FLOOR if tol >= _DECIDE_TOL else 0.0
        peaks = np.flatnonzero((viol > tol * (1e-9 + psi)) & (viol > floor) & (viol >= np.roll(viol, 1))
                               & (viol >= np.roll(viol, -1)))
        peaks = peaks[np.argsort(viol[peaks])[::-1][:_CUTS_PER_ROUND]]
        if tol >= _DECIDE_TOL:  # a decision: the grid's points are enough
            return dense[peaks]
        out = []
        for i in peaks:
            lo, hi = dense[max(i - 1, 0)], dense[min(i + 1, dense.size - 1)]
            minus = lambda s: -(np.maximum(s * up - down, 0.0).sum() - float(self.psi.per_target(s)[g, 0]))
            res = optimize.minimize_scalar(minus, bounds=(lo, hi), method="bounded", options={"xatol": 1e-9 * hi})
            out.append(float(res.x) if res.success and -res.fun > viol[i] else dense[i])
        return np.asarray(out, dtype=float)


def _attack_laws(p: np.ndarray, counts: np.ndarray, groups: list) -> tuple[np.ndarray, np.ndarray]:
    """(p0, r0): the mean over theta in _INNER_THETAS of the law of N and of each group's mean Pr[N = j, target i right]
    for the attack that guesses each target's likeliest value with probability theta (its own coin) and abstains
    otherwise: independent successes of probability theta p_k for the counts[k] targets of distinct prior k
    (``groups``: lists of k). Each is a real attack, so its law meets every constraint of Theorem 4, and so does the
    mean (the constraints are convex); the mix covers every count from 0 up."""
    n = int(counts.sum())
    p0, r0 = np.zeros(n + 1), np.zeros((len(groups), n + 1))
    for theta in _INNER_THETAS:
        q = theta * p
        p0 += _law(q, counts)[0]
        for g, members in enumerate(groups):
            size = float(counts[list(members)].sum())
            for k in members:
                rest = counts.copy()
                rest[k] -= 1
                r0[g, 1:] += counts[k] * q[k] * _law(q, rest)[0] / size  # the others: j = 0 .. n - 1
    return p0 / _INNER_THETAS.size, r0 / _INNER_THETAS.size


def expected_prior_run_counts(profile: PrivacyProfile, runs: list[Distributions], targets, hint=None,
                              groups: int = MAX_GROUPS, at_most: bool = False) -> list[int]:
    """Theorem 4 over the mixture of the runs (``pooled_conjugate`` with ``groups`` blocks): the smallest c with
    mean_r Pr_r[N >= c + 1] bounded by the target, for each target (``at_most``: as in ``prior_run_counts``)."""
    return _counts(PriorRun(profile, None, pooled_conjugate(profile, runs, check_groups(groups))), targets, hint,
                   at_most)


def _positive_part_sums(s: np.ndarray, up: np.ndarray, down: np.ndarray) -> np.ndarray:
    """sum_j max(s up_j - down_j, 0) at every entry of s, in O((len(s) + n) log n) instead of a (len(s), n) array.

    The sum is piecewise linear in s with a breakpoint at t_j = down_j / up_j per term: a term with up_j > 0 is
    s up_j - down_j for s > t_j (0 below), one with up_j < 0 is so for s < t_j, one with up_j = 0 is the constant
    max(-down_j, 0). With the breakpoints sorted, the active terms at s are a prefix (up_j > 0) or a suffix (up_j < 0),
    so the sum is s U - D with U, D prefix (suffix) sums of up and down. A term at its breakpoint is 0 either way.
    """
    s = np.asarray(s, dtype=float)
    out = np.full(s.shape, float(np.sum(np.maximum(-down[up == 0.0], 0.0))))
    for rising in (True, False):
        pick = up > 0.0 if rising else up < 0.0
        if not np.any(pick):
            continue
        t = down[pick] / up[pick]
        order = np.argsort(t, kind="stable")
        t, u, d = t[order], up[pick][order], down[pick][order]
        if rising:  # active where t_j < s: the first k terms
            k = np.searchsorted(t, s, side="left")
            su, sd = np.concatenate([[0.0], np.cumsum(u)]), np.concatenate([[0.0], np.cumsum(d)])
        else:  # active where t_j > s: the terms from k on
            k = np.searchsorted(t, s, side="right")
            su = np.concatenate([np.cumsum(u[::-1])[::-1], [0.0]])
            sd = np.concatenate([np.cumsum(d[::-1])[::-1], [0.0]])
        out += np.maximum(s * su[k] - sd[k], 0.0)
    return out


def _start(s_dense: np.ndarray, psi_dense: np.ndarray) -> np.ndarray:
    """Starting cuts of one group: _START_CUTS values of s, log-spaced over where the conjugate's slope (the success
    probability its tangent touches) is between _START_LOW and its largest value less _START_LOW: outside, the
    constraints hold for every law of N."""
    slope = np.gradient(psi_dense, s_dense)
    inside = np.flatnonzero((slope > _START_LOW) & (slope < slope.max() - _START_LOW))
    if inside.size < 2:
        return np.array(_S_START)
    return np.geomspace(s_dense[inside[0]], s_dense[inside[-1]], _START_CUTS)


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
    return _counts(PriorRun(profile, dists, groups=groups), targets, hint, at_most)


def _counts(run: "PriorRun", targets, hint, at_most: bool = False) -> list[int]:
    """``run``'s count for each target, each search started from its hint (n / 2 without one); with ``at_most``, no
    larger than the hint."""
    targets = np.atleast_1d(np.asarray(targets, dtype=float))
    if at_most and hint is None:
        raise ValueError("at_most=True needs a hint: the count it may not exceed (the other theorems' count).")
    hints = np.full(targets.shape, run.n // 2) if hint is None else np.atleast_1d(hint)
    return [_smallest_count(run, float(t), int(min(max(h, 0), run.n)), at_most) for t, h in zip(targets, hints)]


def _smallest_count(run: PriorRun, target: float, start: int, at_most: bool = False) -> int:
    """The smallest c in [0, n] with run.tail(c + 1) <= target (tail(n + 1) = 0): a bracketed search from ``start``
    whose next point is the crossing of log tail - log target interpolated from the two points nearest to it (the
    tail is smooth in c, so a count a few steps from the hint costs three or four LPs). With ``at_most``: the same
    search, ended with ``start`` as soon as the count is known to be above it (its first step, tail(start + 1), is
    the search's own, so wherever Theorem 4 certifies ``start`` the search and its cuts are those without it)."""
    f = lambda c: math.log(max(run.tail(c + 1, target), 1e-300)) - math.log(target)
    # f(lo) > 0: tail(0) = 1 > target, and below ``unreachable`` a real attack's law is above the target (the search
    # used to spend minutes there, on LPs whose optimum is 1); f(hi) <= 0 (tail(n + 1) = 0)
    lo, hi = run.unreachable(target), run.n
    seen: dict[int, float] = {}
    c = start
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
            c = (c - 1 if seen[c] <= 0 else c + 1) if len(seen) == 1 else (lo + hi) // 2
            continue
        (c1, f1), (c2, f2) = ((k, seen[k]) for k in near)
        guess = math.ceil(c1 - f1 * (c2 - c1) / (f2 - f1))
        c = guess if guess not in seen else guess - 1
        if not lo < c < hi or c in seen:
            c = (lo + hi) // 2
    return hi
