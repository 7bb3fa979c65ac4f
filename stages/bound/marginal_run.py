"""Theorem 6 (THEORY.md section 10, "Theorem 6"): Theorem 5 summed over M, so it runs at any n.

Theorem 5 (``designated_run``) sees the law of M (how many targets sit at their likeliest value x̂_i: the
Poisson-binomial of the p_i = pi_i(x̂_i), whatever the mechanism) through a state per pair (N, M), ~n x (the range of
M) of them: too many beyond 200 targets. Theorem 6 keeps one state per count j, in three variables

    p_j = Pr[N = j],   q_j = E[U; N = j] (U: right guesses on targets at x̂_i),   e_j = E[M; N = j],

and the constraints of Theorem 5 whose events read N alone (W = T' x every m'), which sum its coefficients over m' in
closed form: for every theta = (s1, s0, l1, l0) >= 0 and every set T' of counts,

    sum_{j' in T'} [ s1 q_{j'+1} + s0 ((j'+1) p_{j'+1} - q_{j'+1}) - l1 (e_j' - q_j') - l0 ((n - j') p_j' - e_j' + q_j') ]
        <= sum_i Psi_i(theta)                                                   (Lemma 5', summed over the targets),

with M's law seen from the events of N: for every set S of counts and every integer sigma,
sum_{j in S} (e_j - sigma p_j) <= E[(M - sigma)_+] and sum_{j in S} (sigma p_j - e_j) <= E[(sigma - M)_+], and
sum_j e_j = E[M]; and pointwise 0 <= q_j <= min(j p_j, e_j), q_j >= e_j - (n - j) p_j, e_j <= n p_j. theta =
(s, s, 1, 1) is Theorem 4's constraint, so the LP is never above Theorem 4's one-group LP on the same s; the whole
gain is M's law (the proof and what the library does: THEORY.md section 10, "Theorem 6").

The LP is solved by cutting planes in one HiGHS model per run (``_highs.Model``, warm started): the cuts are Theorem
5's grid of theta (``designated_run._theta_grid``) with _S4 more points of Theorem 4's family, and every integer
sigma in [0, n]; each cut enters with one slack per count of a window [j_from, j_to] from _NEAR sqrt(n) below the
count it was found at to _ABOVE sqrt(n) above it, and one per block of 1, 2, 4, ... counts beyond on either side
(the sets T' and S: unions of those: a subfamily, so a relaxation); the counts below the window are one variable each
of p and e (their sums), those above it one state of four sums (Pr, E[N; .], E[U; .], E[M; .]) under each count's
constraints summed (a relaxation too). The cuts do not depend on the count c asked, so a count search reuses them.
The value returned is the Lagrangian bound of the solution's multipliers (weak duality, each count's own constraints
kept), valid however few cuts were added and whatever the solver's accuracy. A count search's decisions stop early
on stall rules, but the decision that fixes the count runs until no cut is violated (or _MAX_ROUNDS), so the count is
the LP's, not a stall's.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import sparse

from stages._bisect import gallop_down
from . import _highs, tails
from .designated_run import _theta_grid, lemma5_conjugate
from .prior_run import Conjugate
from .profiles import PrivacyProfile
from .whole_prior import Distributions

__all__ = ["MARGINAL_RUN_DEFAULT_FROM", "WORK", "MARGINAL_RUN_THEOREM", "MARGINAL_RUN_VERSION", "MarginalRun",
           "marginal_run_tail",
           "marginal_run_counts"]

MARGINAL_RUN_THEOREM = "one-run count with the law of the likeliest values, summed over M (THEORY.md Thm 6)"
#: 1: the theorem as it joined the registry (opt-in with Theorem 5); 2: faster, the same theorem and certificate: the
#: cuts' sets above c + _ABOVE sqrt(n) are unions of blocks of 1, 2, 4, ... counts (a subfamily: a relaxation), two
#: thetas and one sigma per side a round (was 8 and 4), a run's first decision stalls after 14 rounds (was 3), a search
#: that reaches its window's bottom searches again with the window moved down and the binding cuts carried over; PII-like
#: prior at n = 1000 (0.5 / 0.95): 525 / 773 in 88 s -> 527 / 775 in 2.6 s (counts may move either way by a few: the
#: decisions that stop "above" early stop at other rounds). 3: the same theorem; the count's last decision runs to its
#: end (no stall rule: a count no longer moves with where a stall fell, so it moves by 0 or 1 from n to n + 1 where
#: measured), the cuts' sets are blocks below c - _NEAR sqrt(n) too, and the certificate keeps each count's own
#: constraints (p <= 1, q <= j p, q <= e <= (n - j) p + q, e <= n p) instead of weighing them by the solver's
#: multipliers (never looser), the counts above the search's start + _TOP sqrt(n) are one state (their sums: a
#: relaxation, the LP ~5 sqrt(n) counts wide at any n); PII-like prior at n = 1000: 525 / 773; n = 10^4: 5211 / 7719;
#: joins the default minimum above MARGINAL_RUN_DEFAULT_FROM targets.
MARGINAL_RUN_VERSION = 3

#: Theorem 6 joins every minimum above this many targets (Theorem 5's limit, designated_run.DESIGNATED_RUN_MAX_TARGETS:
#: there Theorem 4's count was the default's); at or below it, ``designated=True`` adds it (with Theorem 5), seconds
#: a count beside Theorem 4's.
MARGINAL_RUN_DEFAULT_FROM = 200

#: Theorem 4's constraints (s, s, 1, 1) on this many more log-spaced s in [1e-4, 1e4] (they bind most).
_S4 = 400
#: The window of counts the cuts' slacks live on starts _WINDOW sqrt(n) (at least _WINDOW_MIN) counts below the count a
#: search starts from (the counts below it are one sum: a relaxation, so any window gives a valid bound; N's spread
#: under the LP grows like sqrt(n)).
_WINDOW = 4.0
_WINDOW_MIN = 60
#: Above c + _ABOVE sqrt(n) (at least _ABOVE_MIN counts above c, the count a decision asks), a cut's sets are unions of
#: blocks of 1, 2, 4, ... counts (the LP's law puts little mass there): one slack per block, not per count.
_ABOVE = 0.5
_ABOVE_MIN = 10
#: ... and below c - _NEAR sqrt(n) (at least _NEAR_MIN counts below c) blocks of 1, 2, 4, ... counts downwards.
_NEAR = 1.0
_NEAR_MIN = 20
#: The counts above _TOP sqrt(n) (at least _TOP_MIN) above the count a search starts from are one state, their sums
#: (P, E[N; .], E[U; .], E[M; .]) under each count's constraints summed: a relaxation (the LP's law puts little mass
#: there), so the LP has ~(_WINDOW + _TOP) sqrt(n) counts, not n - j_from (10^4 targets: ~500, not ~4,000).
_TOP = 1.0
_TOP_MIN = 20
#: Cuts added per round: the most violated thetas, and sigmas of each of M's two sides (fewer cuts a round, more rounds
#: but smaller LPs: PII-like prior, n = 1000, both confidences 18 s at 8 / 4, 6 s at 2 / 2, 2.6 s at 2 / 1).
_THETAS_PER_ROUND = 2
_SIGMAS_PER_ROUND = 1
#: A cut is violated when its left-hand side exceeds its right-hand side by this fraction of it (at least 1e-9).
_CUT_TOL = 1e-6
_MAX_ROUNDS = 80
#: A new count first drops the cuts whose budget had no multiplier in the last _PRUNE_AGE solves (0: none): a rebuilt
#: model with the binding cuts solves faster than the warm one with every cut (PII-like prior, n = 1000, 0.95, a
#: window of 120 counts: 43 s against 107 s at 3, the same count).
_PRUNE_AGE = 1
#: A decision tail(c) <= target stops above the target once a round after the first _STALL_AFTER gains less than this
#: fraction of the bound (the LP with fewer cuts is a relaxation: its optimum only bounds the grid LP's from above, so
#: "above" is decided by the certificate's progress; a wrong "above" only makes a count larger).
_STALLED = 0.01
_STALL_AFTER = 3
#: ... after the first _STALL_FIRST rounds for a run's first decision (no cuts yet: its first rounds gain little)
_STALL_FIRST = 14
#: ... or, starting from cuts another count left, once a round after the second is still above _FAR times the target
#: (far above: the count is well below c).
_FAR = 3.0
#: The default minimum's budget for one count search (and one tail): simplex iterations x (rows + columns) of the LP,
#: summed over its solves (a count, not a time, so runs repeat exactly); past it the search keeps the smallest count
#: certified so far (~7 s a search here). The PII-like prior's search at n = 1000 spends ~1.4e8 a confidence, so it
#: binds above ~1000 targets only: n = 10^4 5215 / 7811 in ~15 s (no budget, ``designated=True``: 5211 / 7719 in 95 s).
WORK = 7e8
#: A budget that buys fewer simplex iterations than this of the LP solved stops.
_MIN_SOLVE = 200
#: ... and one that cannot buy this many of a run's first LP (about 7 (j_to + 1 - j_from) rows and columns, ~5 sqrt(n)
#: counts wide) does not start it: its count is the hint (only past ~4 x 10^6 targets).
_MIN_RUN = 10_000
#: Simplex iterations per solve (a count, not a time, so runs repeat exactly).
_ITERATIONS = 500_000
#: Absolute slack added to every certified value for the round-off of rebuilding the multipliers' bound.
_CERT_SLACK = 1e-12


class MarginalRun:
    """Theorem 6 for n targets with known priors (``Distributions``): ``tail(c)`` a certified bound on Pr[N >= c].

    ``j_from``: the first count of the window (the counts below are one state, p and e their sums); ``tail(c)`` is 1
    for c <= j_from. ``above`` / ``near``: the cuts found while deciding count c have single counts from c - near to
    c + above and blocks beyond on either side (None: single counts all the way up / down)."""

    def __init__(self, profile: PrivacyProfile, dists: Distributions, j_from: int = 0, above: int | None = None,
                 near: int | None = None, j_to: int | None = None):
        self.n = n = int(dists.n)
        self.near = near
        self.a = a = min(max(int(j_from), 0), max(n - 1, 0))
        self.b = n if j_to is None else min(max(int(j_to), a + 1), n)
        self.above = above
        self._geoms: dict = {}
        self._cold = False  # whether the model was rebuilt since its last solve (its first solve then starts cold)
        shapes, counts = dists.shapes, np.asarray(dists.counts, dtype=np.int64)
        conj = Conjugate(profile, dists)
        s = np.geomspace(1e-4, 1e4, _S4)
        th4 = np.stack([s, s, np.ones_like(s), np.ones_like(s)], axis=1)
        grid = np.concatenate([_theta_grid(), th4 / th4.max(axis=1, keepdims=True)])
        self.grid, self.rhs_grid = grid, lemma5_conjugate(conj, shapes, counts, grid)
        # M's law: E[(M - sigma)_+] and E[(sigma - M)_+] for every integer sigma, each raised by n times the mass the
        # convolution left out or rounded (``trimmed``: |M - sigma| <= n), E[M] = sum_i p_i exactly
        law = tails.distribution_grouped(np.array([sh.p for sh in shapes]), counts)
        pmf = law.dense()
        self.sig = np.arange(n + 1, dtype=float)
        slack = n * float(law.trimmed) + 1e-12 * max(n, 1)  # and the sums' round-off
        # E[(M - sigma)_+] = sum_{u > sigma} Pr[M >= u], E[(sigma - M)_+] = sum_{u < sigma} Pr[M <= u]: O(n) by cumsums
        at_least = np.cumsum(pmf[::-1])[::-1]  # Pr[M >= u], u = 0 .. n
        at_most = np.cumsum(pmf)  # Pr[M <= u]
        self.up = np.append(np.cumsum(at_least[:0:-1])[::-1], 0.0) + slack
        self.dn = np.concatenate([[0.0], np.cumsum(at_most[:-1])]) + slack
        self.mean = float(np.sum(np.array([sh.p for sh in shapes]) * counts))
        self._build()
        self._cuts: dict = {}  # key -> the cut's rows over the LP's columns, right-hand side, solves idle
        self._new_model()
        self._state: dict[int, dict] = {}
        self._last_c = None
        self.work = 0.0  # the simplex's work so far: iterations x (rows + columns) of the LP, summed over the solves

    # ---- the LP: columns p_j, q_j, e_j for j in [a, b] (J of each), then P_low, E_low (the counts below a, a > 0),
    # then P_hi, M_hi, Q_hi, E_hi (the counts above b, b < n: Pr, E[N; .], E[U; .], E[M; .]), then each cut's slacks
    def _build(self) -> None:
        n, a, b = self.n, self.a, self.b
        J = self.J = b + 1 - a
        self.j = np.arange(a, b + 1, dtype=float)
        self.low, self.high = a > 0, b < n
        lo = self._lo = 3 * J
        hi = self._hi = 3 * J + (2 if self.low else 0)
        nv = self.nv = hi + (4 if self.high else 0)
        P, Q, E = 0, J, 2 * J
        k = np.arange(J)
        j = self.j
        rows, cols, vals = [], [], []

        def put(r, c, v):
            rows.append(np.asarray(r))
            cols.append(np.asarray(c))
            vals.append(np.broadcast_to(np.asarray(v, dtype=float), np.shape(r)))
        # q <= j p; q <= e; e - (n - j) p - q <= 0; e <= n p
        put(k, Q + k, 1.0), put(k, P + k, -j)
        put(J + k, Q + k, 1.0), put(J + k, E + k, -1.0)
        put(2 * J + k, E + k, 1.0), put(2 * J + k, P + k, -(n - j)), put(2 * J + k, Q + k, -1.0)
        put(3 * J + k, E + k, 1.0), put(3 * J + k, P + k, -float(n))
        r = 4 * J
        lower, upper = [np.full(4 * J, -_highs.INF)], [np.zeros(4 * J)]
        if self.low:  # E_low <= n P_low
            put([r], [lo + 1], 1.0), put([r], [lo], -float(n))
            lower.append([-_highs.INF]), upper.append([0.0])
            r += 1
        if self.high:  # the counts above b summed: Q <= M_hi, Q <= E, E - n P + M_hi - Q <= 0, E <= n P, (b+1) P <= M_hi
            Ph, Mh, Qh, Eh = hi, hi + 1, hi + 2, hi + 3
            put([r, r], [Qh, Mh], [1.0, -1.0]), put([r + 1, r + 1], [Qh, Eh], [1.0, -1.0])
            put([r + 2] * 4, [Eh, Ph, Mh, Qh], [1.0, -float(n), 1.0, -1.0]), put([r + 3, r + 3], [Eh, Ph], [1.0, -float(n)])
            put([r + 4, r + 4], [Ph, Mh], [float(b + 1), -1.0]), put([r + 5, r + 5], [Mh, Ph], [1.0, -float(n)])
            lower.append(np.full(6, -_highs.INF)), upper.append(np.zeros(6))
            r += 6
        # sum p = 1, sum e = E[M]
        put(np.full(J, r), P + k, 1.0), put(np.full(J, r + 1), E + k, 1.0)
        if self.low:
            put([r], [lo], 1.0), put([r + 1], [lo + 1], 1.0)
        if self.high:
            put([r], [hi], 1.0), put([r + 1], [hi + 3], 1.0)
        lower.append([1.0, self.mean]), upper.append([1.0, self.mean])
        # E[M] is a float sum: the certificate gives its row this much either side
        self._mean_tol = 1e-12 * max(n, 1)
        r += 2
        A = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, nv))
        self.col_upper = np.concatenate([np.ones(J), j, np.full(J, float(n))] + ([[1.0, float(n)]] if self.low else [])
                                        + ([[1.0, float(n), float(n), float(n)]] if self.high else []))
        self.row_lower, self.row_upper = np.concatenate(lower), np.concatenate(upper)
        self.A = A
        self._sum_rows = np.array([r - 2, r - 1])  # sum p = 1, sum e = E[M]: the rows the certificate weighs
        # theta's four counts at j' in [a, b - 1] as maps of the columns: right at x̂ q_{j'+1}, right elsewhere
        # (j'+1) p_{j'+1} - q_{j'+1}, wrong at x̂ e_j' - q_j', wrong elsewhere (n - j') p_j' - e_j' + q_j'; with the
        # counts above b summed, one more row for j' in [b, n - 1] together (at N = n, U = M: e_n = q_n)
        T = J - 1 + (1 if self.high else 0)
        w = np.arange(J - 1)
        jp = j[:-1]
        parts = [[(np.ones(J - 1), w, Q + w + 1)],
                 [(jp + 1.0, w, P + w + 1), (-np.ones(J - 1), w, Q + w + 1)],
                 [(np.ones(J - 1), w, E + w), (-np.ones(J - 1), w, Q + w)],
                 [(n - jp, w, P + w), (-np.ones(J - 1), w, E + w), (np.ones(J - 1), w, Q + w)]]
        if self.high:
            last = J - 1
            extra = [[(1.0, Qh)],
                     [(1.0, Mh), (-1.0, Qh)],
                     [(1.0, E + last), (-1.0, Q + last), (1.0, Eh), (-1.0, Qh)],
                     [(float(n - b), P + last), (-1.0, E + last), (1.0, Q + last), (float(n), Ph), (-1.0, Mh),
                      (-1.0, Eh), (1.0, Qh)]]
            for t in range(4):
                parts[t] += [(np.array([v]), np.array([last]), np.array([c])) for v, c in extra[t]]
        self._maps = [sparse.csr_matrix((np.concatenate([v for v, _, _ in pt]),
                                         (np.concatenate([r_ for _, r_, _ in pt]), np.concatenate([c for _, _, c in pt]))),
                                        shape=(T, nv)) for pt in parts]
        self._sign = np.array([1.0, 1.0, -1.0, -1.0])
        # e_j - sigma p_j over the counts of the window and the sums below and above (one more set member each)
        self._pcol = np.concatenate([P + k] + ([[lo]] if self.low else []) + ([[hi]] if self.high else []))
        self._ecol = np.concatenate([E + k] + ([[lo + 1]] if self.low else []) + ([[hi + 3]] if self.high else []))
        self._vertices = _hull_vertices(n, b) if self.high else None
        self.cost = np.zeros(nv)
        self.fine = (a, b)

    def _geometry(self, fine: tuple):
        """The cuts' sets outside the counts ``fine`` = (lo, hi): unions of blocks of 1, 2, 4, ... counts away from
        them (a subfamily of the sets T' and S, so a relaxation: one slack per block, not per count): theta's four maps
        summed per block, and each count's block for M's sets (the sum below the window its own)."""
        if fine not in self._geoms:
            J, a = self.J, self.a
            lo, hi = fine[0] - a, fine[1] - a
            T = self._maps[0].shape[0]
            tb = _blocks(T, lo, hi)
            Bt = sparse.csr_matrix((np.ones(T), (tb, np.arange(T))), shape=(int(tb.max()) + 1, T))
            ids = _blocks(J, lo, hi)
            for _ in range(int(self.low) + int(self.high)):  # the sums below and above: one member each
                ids = np.append(ids, ids.max() + 1)
            Bc = sparse.csr_matrix((np.ones(ids.size), (ids, np.arange(ids.size))), shape=(int(ids.max()) + 1, ids.size))
            self._geoms[fine] = ([(Bt @ m).tocsr() for m in self._maps], Bc, ids)
        return self._geoms[fine]

    def _terms(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        f = np.stack([m @ x for m in self._geometry(self.fine)[0]])  # (4, blocks)
        return (theta * self._sign) @ f

    def _new_model(self) -> None:
        """A model of the fixed rows and the cuts kept (cold: its first solve starts from the slack basis)."""
        self.model = _highs.Model(np.zeros(self.nv), np.zeros(self.nv), self.col_upper, self.A, self.row_lower,
                                  self.row_upper, _ITERATIONS)
        self.upper = list(self.col_upper)
        self._rows, self._row_upper, self._budget = [], [], []
        for cut in self._cuts.values():
            self._put(cut["coef"], cut["rhs"])

    def _add_cut(self, key, coef: sparse.csr_matrix, rhs: float) -> None:
        """Add the cut sum_t (coef_t x)_+ <= rhs (``coef`` over the LP's own columns), known as ``key``."""
        self._cuts[key] = {"coef": coef, "rhs": rhs, "idle": 0}
        self._put(coef, rhs)

    def _put(self, coef: sparse.csr_matrix, rhs: float) -> None:
        """Into the model: a slack y_t >= coef_t x per row t, 0 <= y_t <= rhs, and sum_t y_t <= rhs."""
        m = coef.shape[0]
        nc = self.model.num_col
        self.model.add_cols(np.zeros(m), np.zeros(m), np.full(m, max(rhs, 0.0)))
        self.upper += [max(rhs, 0.0)] * m
        Y = sparse.csr_matrix((-np.ones(m), (np.arange(m), nc + np.arange(m))), shape=(m, nc + m))
        coef = sparse.hstack([coef, sparse.csr_matrix((m, nc + m - coef.shape[1]))]).tocsr()
        budget = sparse.csr_matrix((np.ones(m), (np.zeros(m, dtype=int), nc + np.arange(m))), shape=(1, nc + m))
        R = sparse.vstack([coef + Y, budget]).tocsr()
        self.model.add_rows(np.concatenate([np.full(m, -_highs.INF), [-_highs.INF]]),
                            np.concatenate([np.zeros(m), [rhs]]), R)
        self._budget.append(self.model.num_row - 1)
        self._rows.append(R)
        self._row_upper += [0.0] * m + [rhs]

    def _new_cuts(self, x: np.ndarray) -> int:
        """Add the most violated cuts at the LP point x (the grid's thetas, then M's sigmas); how many."""
        added = 0
        T = self._terms(x, self.grid)
        viol = np.maximum(T, 0.0).sum(axis=1) - self.rhs_grid
        for k in np.argsort(-viol)[:_THETAS_PER_ROUND]:
            if viol[k] > _CUT_TOL * max(self.rhs_grid[k], 1e-9) and ("t", int(k), self.fine) not in self._cuts:
                self._cut(("t", int(k), self.fine))
                added += 1
        Bc = self._geometry(self.fine)[1]
        pb, eb = Bc @ x[self._pcol], Bc @ x[self._ecol]  # per block
        for sgn, lim, tag in ((1.0, self.up, "u"), (-1.0, self.dn, "d")):
            viol = _positive_sums(sgn * eb, sgn * pb, self.sig) - lim
            for k in np.argsort(-viol)[:_SIGMAS_PER_ROUND]:
                if viol[k] > _CUT_TOL * max(lim[k], 1e-9) and (tag, int(k), self.fine) not in self._cuts:
                    self._cut((tag, int(k), self.fine))
                    added += 1
        return added

    def _cut(self, key) -> None:
        """Add the cut ``key`` = (tag, k, fine): tag "t" the grid's k-th theta, "u" / "d" M's law above / below
        sigma = k, single counts up to ``fine`` and blocks above (``_geometry``)."""
        tag, k, fine = key
        maps, Bc, ids = self._geometry(fine)
        if tag == "t":
            th = self.grid[k] * self._sign
            self._add_cut(key, sum(th[t] * maps[t] for t in range(4)).tocsr(), float(self.rhs_grid[k]))
            return
        sgn, lim = (1.0, self.up) if tag == "u" else (-1.0, self.dn)
        m = ids.size
        coef = sparse.csr_matrix((np.concatenate([np.full(m, sgn), np.full(m, -sgn * self.sig[k])]),
                                  (np.concatenate([ids, ids]), np.concatenate([self._ecol, self._pcol]))),
                                 shape=(Bc.shape[0], self.nv))
        self._add_cut(key, coef, float(lim[k]))

    def seed(self, keys) -> None:
        """Start from the cuts ``keys`` (another run's ``binding()``: the same constraints on this run's window)."""
        for tag, k, (lo, hi) in keys:
            key = (tag, k, (min(max(lo, self.a), self.b), min(max(hi, self.a), self.b)))
            if key not in self._cuts:
                self._cut(key)

    def binding(self) -> list:
        """The cuts whose budget had a multiplier in the last solve."""
        return [key for key, cut in self._cuts.items() if cut["idle"] == 0]

    def _aged(self, dual: np.ndarray) -> None:
        """Each cut's solves in a row with no multiplier on its budget."""
        for cut, row in zip(self._cuts.values(), self._budget):
            cut["idle"] = 0 if dual[row] != 0.0 else cut["idle"] + 1

    def _prune(self) -> None:
        """Drop the cuts idle for _PRUNE_AGE solves (a new model with the others: the simplex's cost per iteration
        grows with the slacks, and most cuts of a search's earlier counts stop binding)."""
        idle = [key for key, cut in self._cuts.items() if cut["idle"] >= _PRUNE_AGE]
        if idle:
            for key in idle:
                del self._cuts[key]
            self._new_model()
            self._cold = True

    def _certify(self, dual: np.ndarray) -> float:
        """The Lagrangian bound of the multipliers mu of the rows sum p = 1, sum e = E[M] and the cuts' (-HiGHS's row
        duals of the minimisation, each clipped to its row's sides), the other constraints kept: max over x of
        cost.x - mu.(A x - side), x in the product of each count's polytope (p <= 1, 0 <= q <= j p, q <= e <=
        (n - j) p + q, e <= n p: its maximum at p = 0 or at one of the four corners (q, e) = (0, 0), (0, n - j), (j, j),
        (j, n) of p = 1), the sum below's (E_low <= n P_low <= n) and the slacks' boxes [0, budget]."""
        d = -np.asarray(dual, dtype=float)
        nf, nv, J, n = self.A.shape[0], self.nv, self.J, self.n
        mu_sum = d[nf - 2: nf]  # equality rows: any sign
        mu_cut = np.maximum(d[nf:], 0.0)  # rows <= their upper side: mu >= 0
        cuts = sparse.vstack([sparse.hstack([R, sparse.csr_matrix((R.shape[0], self.model.num_col - R.shape[1]))])
                              for R in self._rows]).tocsr() if self._rows else None
        reduced = self._objective()
        reduced[:nv] -= self.A[self._sum_rows].T @ mu_sum
        side = mu_sum[0] + mu_sum[1] * self.mean + abs(mu_sum[1]) * self._mean_tol
        if cuts is not None:
            reduced -= cuts.T @ mu_cut
            side += mu_cut @ np.asarray(self._row_upper)
        rp, rq, re = reduced[:J], reduced[J: 2 * J], reduced[2 * J: 3 * J]
        j = self.j
        corner = np.maximum.reduce([np.zeros(J), (n - j) * re, j * (rq + re), j * rq + n * re])
        value = side + np.maximum(rp + corner, 0.0).sum()
        if self.low:
            lo = self._lo
            value += max(0.0, reduced[lo], reduced[lo] + n * reduced[lo + 1])
        if self.high:  # (P, M, Q, E) over the counts above b: a cone cut at P = 1, its corners there
            value += max(0.0, float(np.max(self._vertices @ reduced[self._hi: self._hi + 4])))
        value += np.asarray(self.upper[nv:]) @ np.maximum(reduced[nv:], 0.0)
        return float(value) + _CERT_SLACK

    def _objective(self) -> np.ndarray:
        out = np.zeros(self.model.num_col)
        out[: self.nv] = self.cost
        return out

    def settled(self, c: int) -> bool:
        """Whether the decision at count ``c`` ran to its end (no cut violated, or _MAX_ROUNDS), not a stall rule."""
        return self._state.get(int(c), {}).get("done", False)

    def spent(self, budget: float | None) -> bool:
        """Whether what is left of ``budget`` (None: no budget) buys no more than _MIN_SOLVE iterations of the LP."""
        return budget is not None and budget - self.work < _MIN_SOLVE * self._size()

    def _size(self) -> int:
        return self.model.num_row + self.model.num_col

    def tail(self, c: int, target: float | None = None, patient: bool = False, budget: float | None = None) -> float:
        """A certified bound on Pr[N >= c]; with ``target``, the rounds stop once it is at most the target, or above it
        once a round after the first _STALL_AFTER gains less than _STALLED of the bound, or, from cuts
        another count left, it is still above _FAR times the target after the second (a wrong "above" only makes a
        count larger). ``patient``: no stall rule (until the target, no violated cut or _MAX_ROUNDS); ``budget``: the
        rounds also stop once the run's work (``self.work``) leaves less than _MIN_SOLVE iterations of the LP."""
        c = int(c)
        if c <= self.a:
            return 1.0
        if c > self.n:
            return 0.0
        st = self._state.setdefault(c, {"bound": 1.0, "done": False, "rounds": 0})
        if st["done"] or (target is not None and st["bound"] <= target):
            return float(min(1.0, st["bound"]))
        if c != self._last_c and _PRUNE_AGE:
            self._prune()
        self._last_c = c
        self.fine = (self.a if self.near is None else max(c - self.near, self.a),
                     self.b if self.above is None else min(c + self.above, self.b))
        self.cost = np.zeros(self.nv)
        self.cost[min(c, self.b + 1) - self.a: self.J] = 1.0  # (c above b: Pr[N > b] bounds Pr[N >= c])
        if self.high:
            self.cost[self._hi] = 1.0
        self.model.set_cost(-self._objective())
        # the costs changed, the rows did not: the last basis is primal feasible (a rebuilt model has none)
        primal, cold, self._cold = True, self._cold, False
        far = bool(self._cuts)  # the _FAR rule needs cuts carried from another count: a cold start's first bounds are far
        while not st["done"] and not self.spent(budget):  # (a bound at most the target returned above)
            previous = st["bound"]
            cap = None if budget is None else int((budget - self.work) // self._size())
            optimal, x, objective = self.model.solve(primal=primal, cold=cold, cap=cap)
            self.work += float(self.model.iterations) * self._size()
            primal = cold = False
            dual = self.model.row_duals()
            st["rounds"] += 1
            if dual is not None:
                st["bound"] = min(st["bound"], self._certify(dual))
                self._aged(dual)
            if x is None and not st.get("rebuilt") and not self.spent(budget):  # no solution (not the budget's cap):
                # once more from a rebuilt model
                st["rebuilt"] = True
                self._new_model()
                cold = True
                continue
            if x is None or st["rounds"] >= _MAX_ROUNDS:
                st["done"] = True
                break
            if target is not None and st["bound"] <= target:
                break
            if target is not None and not patient and ((st["rounds"] > (_STALL_AFTER if far else _STALL_FIRST)
                                        and previous - st["bound"] < _STALLED * st["bound"])
                                       or (far and st["rounds"] > 2 and st["bound"] > _FAR * target)):
                break
            if not self._new_cuts(np.asarray(x)[: self.nv]):
                st["done"] = True
        return float(min(1.0, st["bound"]))


def _hull_vertices(n: int, b: int) -> np.ndarray:
    """The corners (1, m, q, e) of the counts above b summed, at P = 1: b + 1 <= m <= n, 0 <= q <= m, q <= e <=
    min(n, n - m + q) (each count's own constraints, summed; the set is a cone cut at P = 1, so a linear function's
    maximum over it is 0 or at one of these). Every point where three of the seven planes meet and the others hold."""
    # rows: g . (m, q, e) <= h
    G = np.array([[-1, 0, 0], [1, 0, 0], [0, -1, 0], [-1, 1, 0], [0, 1, -1], [1, -1, 1], [0, 0, 1]], dtype=float)
    h = np.array([-(b + 1), n, 0, 0, 0, n, n], dtype=float)
    out = []
    for i in range(7):
        for j in range(i + 1, 7):
            for k in range(j + 1, 7):
                M = G[[i, j, k]]
                if abs(np.linalg.det(M)) < 1e-12:
                    continue
                v = np.linalg.solve(M, h[[i, j, k]])
                if np.all(G @ v <= h + 1e-9 * max(n, 1)):
                    out.append(np.round(v))
    return np.unique(np.column_stack([np.ones(len(out)), np.array(out)]), axis=0)


def _positive_sums(e: np.ndarray, p: np.ndarray, sig: np.ndarray) -> np.ndarray:
    """sum_b (e_b - sigma p_b)_+ for each sigma of ``sig``, in O((blocks + sigmas) log): a block with p_b > 0 is positive
    for sigma < e_b / p_b (a suffix of the blocks sorted by that ratio), one with p_b < 0 for sigma > e_b / p_b (a
    prefix), one with p_b = 0 adds (e_b)_+."""
    out = np.full(sig.size, np.maximum(e[p == 0], 0.0).sum())
    for side in (1.0, -1.0):
        keep = side * p > 0
        if not np.any(keep):
            continue
        ratio = e[keep] / p[keep]
        order = np.argsort(ratio)
        ratio, ek, pk = ratio[order], e[keep][order], p[keep][order]
        if side > 0:  # ratio > sigma: the suffix from the first ratio above sigma
            E, P = np.append(np.cumsum(ek[::-1])[::-1], 0.0), np.append(np.cumsum(pk[::-1])[::-1], 0.0)
            at = np.searchsorted(ratio, sig, side="right")
        else:  # ratio < sigma: the prefix up to the last ratio below sigma
            E, P = np.concatenate([[0.0], np.cumsum(ek)]), np.concatenate([[0.0], np.cumsum(pk)])
            at = np.searchsorted(ratio, sig, side="left")
        out += np.maximum(E[at] - sig * P[at], 0.0)
    return out


def _top(n: int) -> int:
    """How far above the count a search starts from its LP keeps the counts one by one (the sum of those above)."""
    return max(_TOP_MIN, int(math.ceil(_TOP * math.sqrt(n))))


def _above(n: int) -> int:
    """How far above the count a decision asks its cuts keep single counts (blocks of 1, 2, 4, ... counts beyond)."""
    return max(_ABOVE_MIN, int(math.ceil(_ABOVE * math.sqrt(n))))


def _near(n: int) -> int:
    """How far below the count a decision asks its cuts keep single counts (blocks of 1, 2, 4, ... counts beyond)."""
    return max(_NEAR_MIN, int(math.ceil(_NEAR * math.sqrt(n))))


def _blocks(length: int, lo: int, hi: int) -> np.ndarray:
    """The block of each index 0 .. length - 1: its own from ``lo`` to ``hi``, then blocks of 1, 2, 4, ... indices
    away from them on each side (numbered in order)."""
    i = np.arange(length)
    up = np.floor(np.log2(np.maximum(i - hi, 1))).astype(np.int64)
    down = np.floor(np.log2(np.maximum(lo - i, 1))).astype(np.int64)
    label = np.where(i > hi, hi + 1 + up, np.where(i < lo, lo - 1 - down, i))
    return np.unique(label, return_inverse=True)[1].astype(np.int64)


def _below(n: int) -> int:
    """How far below the count a search starts from its window starts (_WINDOW sqrt(n), at least _WINDOW_MIN)."""
    return max(_WINDOW_MIN, int(math.ceil(_WINDOW * math.sqrt(n))))


def marginal_run_tail(profile: PrivacyProfile, dists: Distributions, v: int, work: float | None = None) -> float:
    """Theorem 6's bound on Pr[#correct >= v] (one exact guess per target, each target's prior known), its rounds
    stopping once the simplex's work reaches ``work`` (None: when no cut is violated)."""
    n = int(dists.n)
    a, b = max(int(v) - _below(n), 0), int(v) + _top(n)
    if _too_large(n, a, b, work):
        return 1.0
    return MarginalRun(profile, dists, j_from=a, above=_above(n), near=_near(n), j_to=b).tail(v, budget=work)


def _too_large(n: int, a: int, b: int, work: float | None) -> bool:
    """Whether ``work`` cannot buy _MIN_RUN iterations of a run's first LP (~7 (min(b, n) + 1 - a) rows and columns)."""
    return work is not None and 7.0 * (min(b, n) + 1 - a) * _MIN_RUN > work


def marginal_run_counts(profile: PrivacyProfile, dists: Distributions, targets, hint,
                        work: float | None = None) -> list[int]:
    """Theorem 6's count for each target tail probability, searched below ``hint`` (the other theorems' counts): the
    smallest c found with a certified tail(c + 1) <= target (galloping down from the hint, then bisecting), or the
    hint itself where tail(hint) is not certified below the target. Each target has its own run, its window starting
    ``_below(n)`` counts below its hint; a search that reaches a quarter of the window above its start searches again
    from there, the window moved down, from the cuts that bound (so no window caps the count). ``work``: each target's
    search stops once the simplex's work (iterations x (rows + columns), summed over its solves) reaches it, at the
    smallest count certified so far (None: no budget)."""
    n = int(dists.n)
    below = _below(n)
    out = []
    for t, h in zip(np.atleast_1d(np.asarray(targets, dtype=float)), np.atleast_1d(hint).astype(int)):
        h, c = int(h), None
        keys, spent = [], 0.0
        while not _too_large(n, max(h - below, 0), h + _top(n), None if work is None else work - spent):
            run = MarginalRun(profile, dists, j_from=max(h - below, 0), above=_above(n), near=_near(n),
                              j_to=h + _top(n))
            run.seed(keys)
            left = None if work is None else work - spent
            ok = lambda c: run.tail(c + 1, target=float(t), budget=left) <= t  # noqa: E731
            # gallop down no lower than a quarter of the window above its start (counts near the window's start are
            # bounded by the window, not the theorem), then bisect
            bottom = min(run.a + (below + 3) // 4, h - 1) if run.a > 0 else 0
            c = h if h <= 0 or not ok(h - 1) else gallop_down(ok, h - 1, bottom)
            # the decision that bounds c (tail(c) <= t) may have stopped on a stall rule: carry it to its end, and
            # search on below while it certifies
            while (c > bottom and not run.settled(c) and not run.spent(left)
                   and run.tail(c, target=float(t), patient=True, budget=left) <= t):
                c = c - 1 if c - 1 <= bottom or not ok(c - 2) else gallop_down(ok, c - 2, bottom)
            spent += run.work
            if c > bottom or bottom <= 0 or run.spent(left):
                break
            h, keys = c, run.binding()  # the search reached the window's bottom: again below, the window moved down
        out.append(h if c is None else c)
    return out
