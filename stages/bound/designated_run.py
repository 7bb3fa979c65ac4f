"""Theorem 5 (THEORY.md section 10): Theorem 4 with the law of the likeliest values.

Theorem 4 sees the targets only through Lemma 5, one target at a time; it does not know that whether target i's
secret is its likeliest value x̂_i is decided by the prior alone. With m_i = 1[X_i = x̂_i] and M = sum_i m_i, the law of
M is the Poisson-binomial of the p_i = pi_i(x̂_i) whatever the mechanism and the attack, and a right guess on a target
whose secret is not its likeliest value costs far more failures than one on the likeliest (Lemma 5'). The LP's
variables are the joint law P(j, m) = Pr[N = j, M = m] and Q(j, m) = E[U; N = j, M = m], U the right guesses on targets
at their likeliest value; its constraints are the law of M, 0 <= Q <= min(j, m) P (and Q >= (j + m - n) P), and for
each cut theta = (s1, s0, l1, l0) >= 0 and each interval I of m' (a relaxation: a finite family of the theorem's
events E = {(N_-i, M_-i) in W})

    sum_j' ( sum_{m' in I} coef_{j', m'}(theta) )_+ <= sum_i Psi_i(theta),

coef the four kinds of target (right or wrong, at x̂ or not) counted on the states next to (j', m') and Psi_i the
conjugate of Lemma 5' (closed form for mu-GDP, the vertices of the trade-off envelope otherwise, as Theorem 4's).
States with Pr[M = m] <= _TRUNCATE are left out and their mass added to the bound (valid: the constraints read only the
states kept). The value returned is the Lagrangian bound of the LP's multipliers (weak duality), so it holds however
few cuts were used and whatever the solver's accuracy.

Its LP has ~2 (n + 1 - j_from) x (the range of M) variables (A, B with P = A + B, Q = min(j, m) A + max(0, j + m - n) B:
the bounds on Q need no rows), so it is slower than Theorem 4's (56 s for three counts at n = 100 on this 2-core
machine, 30x Theorem 4; tests/benchmarks/bench_prior_run.py --designated): it is not in the
default minimum, and ``count_bounds(..., designated=True)`` or the ``one_run``
box's ``designated: true`` add it.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from stages._bisect import gallop_down
from . import _solve, tails
from .prior_run import Conjugate
from .profiles import PrivacyProfile
from .whole_prior import Distributions

__all__ = ["DESIGNATED_RUN_THEOREM", "DESIGNATED_RUN_VERSION", "DESIGNATED_RUN_MAX_TARGETS", "DesignatedRun",
           "designated_run_tail", "designated_run_counts", "check_designated", "lemma5_conjugate"]

DESIGNATED_RUN_THEOREM = "one-run count with the law of the likeliest values (THEORY.md Thm 5)"
DESIGNATED_RUN_VERSION = 3
#: The LP grows with n times the range of M; beyond this many targets it is not offered.
DESIGNATED_RUN_MAX_TARGETS = 200

#: States (j, m) with Pr[M = m] at most this are left out; their mass is added to the bound.
_TRUNCATE = 1e-13
#: The cut grid: s1, s0 on a log grid (the conjugates are homogeneous, so theta is normalised to max 1), l1 / l0
#: on angles in [0, pi / 2].
_S_GRID = np.geomspace(1e-2, 10 ** 2.5, 19)
_ANGLES = np.linspace(0.0, np.pi / 2, 7)
_CUTS_PER_ROUND = 8
_MAX_ROUNDS = 30
#: A round stops the search once no cut is violated by more than this fraction of its right-hand side.
_CUT_TOL = 1e-4
#: A decision tail(c) <= target stops above the target once a round gains less than this fraction of the bound.
_STALLED = 0.01
#: The dual simplex, where HiGHS's interior point ends in a solve error, stops after this many iterations.
_SIMPLEX_ITERATIONS = 200_000
#: ``designated_run_counts`` keeps the states with N at least this far below the smallest hint, and one sum per m
#: for those below (``DesignatedRun``'s ``j_from``): the LP is ~half the size, the quickstart prior's counts within one
#: of the full LP's (either side: the decisions' stall rule), and any ``j_from`` gives a certified bound (THEORY.md
#: section 10, "States below j_from").
_BELOW_HINT = 20


def _theta_grid() -> np.ndarray:
    s1, s0, ang = np.meshgrid(_S_GRID, _S_GRID, _ANGLES, indexing="ij")
    th = np.stack([s1.ravel(), s0.ravel(), np.cos(ang).ravel(), np.sin(ang).ravel()], axis=1)
    th[np.abs(th) < 1e-15] = 0.0
    # Theorem 4's own constraints (s1 = s0, l1 = l0) on a finer s grid
    s = np.geomspace(1e-3, 1e3, 49)
    th4 = np.stack([s, s, np.ones_like(s), np.ones_like(s)], axis=1)
    th = np.concatenate([th, th4])
    return th / th.max(axis=1, keepdims=True)


def lemma5_conjugate(conj: Conjugate, shapes, counts, theta: np.ndarray) -> np.ndarray:
    """sum_i Psi_i(theta) for thetas (K, 4) = (s1, s0, l1, l0): the conjugate of Lemma 5' (THEORY.md section 10)
    summed over the targets (``shapes[g]`` the prior of ``counts[g]`` of them), an upper bound (``conj.psi`` is);
    Theorems 5 and 6 read their cuts' right-hand sides here."""
    theta = np.atleast_2d(theta)
    s1, s0, l1, l0 = (theta[:, k][:, None] for k in range(4))
    out = np.zeros(theta.shape[0])
    for sh, cnt in zip(shapes, counts):
        p = float(sh.p)
        # the likeliest value: gain s1 p a, cost l0 (1 - p) g(a)
        val = conj.psi(s1 * p, l0 * (1.0 - p))[:, 0]
        # every other value x (the top's other copies included): gain s0 pi_x a, cost (l1 p + l0 (1 - p - pi_x)) g(a)
        probs, mult = np.asarray(sh.probs, float), np.asarray(sh.mult, float).copy()
        mult[0] -= 1.0
        use = (mult > 0) & (probs > 0)
        if use.any():
            px, mx = probs[use][None, :], mult[use]
            cost = np.maximum(l1 * p + l0 * (1.0 - p - px), 0.0)
            val = val + conj.psi(s0 * px, cost) @ mx
        out += cnt * val
    return out


class DesignatedRun:
    """Theorem 5 for n targets with known priors (``Distributions``): ``tail(c)`` a certified bound on Pr[N >= c].

    ``j_from`` > 0 keeps the states (j, m) with j >= j_from and one variable per m for the mass below (the events W
    are then those with j' >= j_from, a subfamily, so the LP is a relaxation of the full one); ``tail(c)`` is then
    bounded only for c > j_from and is 1 below."""

    def __init__(self, profile: PrivacyProfile, dists: Distributions, j_from: int = 0):
        self.conj = Conjugate(profile, dists)
        self.n = n = int(dists.n)
        # the LP keeps the states with N >= j_from, those below one variable per m (their sum); see _BELOW_HINT
        self.j0 = min(max(int(j_from), 0), max(n - 1, 0))
        shapes, counts = dists.shapes, np.asarray(dists.counts, dtype=np.int64)
        # the law of M: the Poisson-binomial of the likeliest values' probabilities (its mass left out by the
        # convolution's own trimming, ``trimmed``, joins eta below)
        law = tails.distribution_grouped(np.array([sh.p for sh in shapes]), counts)
        pmf = law.dense()
        keep = np.flatnonzero(pmf > _TRUNCATE)
        self.m_lo, self.m_hi = int(keep[0]), int(keep[-1])
        inside = np.zeros(n + 1, dtype=bool)
        inside[self.m_lo: self.m_hi + 1] = True
        # ``trimmed`` also bounds the round-off of the kept entries (tails.PoissonBinomial): _lp pays for it too
        self.trimmed = float(law.trimmed)
        self.eta = float(pmf[~inside].sum()) + self.trimmed
        self.pmf = pmf[inside]
        self.shapes, self.counts = shapes, counts
        self.nm = self.m_hi - self.m_lo + 1
        self.nw = n - self.j0  # the rows j' = j_from .. n - 1 of the events
        self.ns = (n + 1 - self.j0) * self.nm
        self.nlow = self.nm if self.j0 > 0 else 0
        self.nv = 2 * self.ns + self.nlow
        self._build()
        self.grid = _theta_grid()
        self.rhs_grid = self.rhs(self.grid)
        self._state: dict[int, dict] = {}

    # ---- the conjugate of Lemma 5', summed over the targets
    def rhs(self, theta: np.ndarray) -> np.ndarray:
        """sum_i Psi_i(theta) for thetas (K, 4) = (s1, s0, l1, l0) (``lemma5_conjugate``)."""
        return lemma5_conjugate(self.conj, self.shapes, self.counts, theta)

    # ---- the LP's fixed part and the maps from its variables (A, B, the states below) to each w's four counts
    def _build(self) -> None:
        n, nm, ns = self.n, self.nm, self.ns
        sidx = lambda j, m: (j - self.j0) * nm + (m - self.m_lo)
        # w = (j', m'): the other targets' state, j' in [j_from, n - 1], m' in [m_lo, min(m_hi, n) - 1] with m' + 1 kept
        top = min(self.m_hi - 1, n - 1)
        self.L = max(top - self.m_lo + 1, 0)
        jp, mp = np.meshgrid(np.arange(self.j0, n), np.arange(self.m_lo, self.m_lo + self.L), indexing="ij")
        jp, mp = jp.ravel(), mp.ravel()
        W = jp.size
        w = np.arange(W)
        P = lambda j, m: sidx(j, m)
        Q = lambda j, m: ns + sidx(j, m)

        def mat(vals, cols):
            return sparse.csr_matrix((np.concatenate(vals), (np.concatenate([w] * len(vals)), np.concatenate(cols))),
                                     shape=(W, self.nv))
        # right at x̂: Q(j'+1, m'+1); right elsewhere: (j'+1) P(j'+1, m') - Q(j'+1, m');
        # wrong at x̂: (m'+1) P(j', m'+1) - Q(j', m'+1); wrong elsewhere: (n - m' - j') P(j', m') + Q(j', m')
        maps = [mat([np.ones(W)], [Q(jp + 1, mp + 1)]),
                     mat([jp + 1.0, -np.ones(W)], [P(jp + 1, mp), Q(jp + 1, mp)]),
                     mat([mp + 1.0, -np.ones(W)], [P(jp, mp + 1), Q(jp, mp + 1)]),
                     mat([(n - mp - jp).astype(float), np.ones(W)], [P(jp, mp), Q(jp, mp)])]
        self.W = W
        k = np.arange(ns)
        jj, mm = self.j0 + k // nm, self.m_lo + k % nm
        self.jj = jj
        # The LP's own variables: max(0, j + m - n) P <= Q <= min(j, m) P holds iff P = A + B and
        # Q = min(j, m) A + max(0, j + m - n) B for some A, B >= 0 (A = (Q - lo P) / (hi - lo), B = P - A; A = P, B = 0
        # where hi = lo), so the LP runs on (A, B, the states below) with no row for these bounds: (P, Q) = T (A, B).
        hi_q, lo_q = np.minimum(jj, mm).astype(float), np.maximum(0, jj + mm - n).astype(float)
        low = np.arange(self.nlow)
        rows = np.concatenate([k, k, ns + k, ns + k, 2 * ns + low])
        cols = np.concatenate([k, ns + k, k, ns + k, 2 * ns + low])
        vals = np.concatenate([np.ones(ns), np.ones(ns), hi_q, lo_q, np.ones(self.nlow)])
        T = sparse.csr_matrix((vals, (rows, cols)), shape=(self.nv, self.nv))
        self.maps = [(m @ T).tocsr() for m in maps]  # each w's four counts, read off the LP's x = (A, B, below)
        # the law of M: sum_j P(j, m) (+ the states below j_from, one variable per m) = PB(m)
        A_eq = sparse.csr_matrix((np.ones(ns + self.nlow), (np.concatenate([k % nm, low]),
                                                             np.concatenate([k, 2 * ns + low]))), shape=(nm, self.nv))
        self.A_eq = (A_eq @ T).tocsr()

    def _coefs(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """(K, n - j_from, L): coef_{j', m'}(theta) at the LP point x."""
        f = np.stack([m @ x for m in self.maps])
        sign = np.array([1.0, 1.0, -1.0, -1.0])
        return ((theta * sign) @ f).reshape(theta.shape[0], self.nw, self.L)

    def _violations(self, x: np.ndarray):
        """For every grid theta: the largest left-hand side over the intervals of m' (the whole range, the tails
        [a, L), the heads [0, b), first found first on ties) minus the right-hand side, and that interval."""
        co = self._coefs(x, self.grid)
        K, L = co.shape[0], self.L
        if L == 0:  # no state (j', m') with m' + 1 kept: every interval is empty
            return -self.rhs_grid, np.zeros(K, dtype=np.int64), np.zeros(K, dtype=np.int64)
        cs = np.cumsum(co, axis=2)  # cs[..., b - 1] = the head [0, b)'s sum
        heads = np.maximum(cs, 0.0).sum(axis=1)  # (K, L): heads [0, b) for b = 1 .. L, the last the whole range
        tails = np.maximum(cs[:, :, -1:] - cs[:, :, :-1], 0.0).sum(axis=1)  # (K, L - 1): tails [a, L), a = 1 .. L - 1
        cand = np.concatenate([heads[:, -1:], tails, heads[:, :-1]], axis=1)
        lo = np.concatenate([[0], np.arange(1, L), np.zeros(L - 1, dtype=np.int64)])
        hi = np.concatenate([[L], np.full(L - 1, L), np.arange(1, L)])
        k = np.argmax(cand, axis=1)
        return cand[np.arange(K), k] - self.rhs_grid, lo[k], hi[k]

    def _lp(self, c: int, cuts: list):
        """max Pr[N >= c, M kept] with the cuts: (the certified bound (the truncated mass added), x, which cuts bind
        (a positive multiplier))."""
        nw, K, L = self.nw, len(cuts), self.L
        nt = self.nv + K * nw
        obj = np.zeros(nt)
        obj[: self.ns] = (self.jj >= c).astype(float)  # P(j, m) = A + B: the same weight on both
        obj[self.ns: 2 * self.ns] = obj[: self.ns]
        sign = np.array([1.0, 1.0, -1.0, -1.0])
        blocks, b = [], []
        # the box the constraints imply: A, B <= P <= 1, the states below j_from <= 1, y <= its cut's right-hand side
        upper = np.concatenate([np.ones(2 * self.ns + self.nlow), np.zeros(K * nw)])
        for k, (th, a, bb, rhs) in enumerate(cuts):
            coef = sum(sign[t] * th[t] * self.maps[t] for t in range(4)).tocsr()
            cols = (np.arange(nw)[:, None] * L + np.arange(a, bb)[None, :]).ravel()
            rows = np.repeat(np.arange(nw), bb - a)
            pick = sparse.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(nw, self.W))
            y = sparse.csr_matrix((-np.ones(nw), (np.arange(nw), self.nv + k * nw + np.arange(nw))), shape=(nw, nt))
            blocks.append(sparse.hstack([pick @ coef, sparse.csr_matrix((nw, K * nw))]).tocsr() + y)
            row = np.zeros((1, nt))
            row[0, self.nv + k * nw: self.nv + (k + 1) * nw] = 1.0
            blocks.append(sparse.csr_matrix(row))
            b += [np.zeros(nw), [rhs]]
            upper[self.nv + k * nw: self.nv + (k + 1) * nw] = max(rhs, 0.0)
        A = sparse.vstack(blocks).tocsr() if blocks else sparse.csr_matrix((0, nt))
        b = np.concatenate(b) if b else np.zeros(0)
        Aeq = sparse.hstack([self.A_eq, sparse.csr_matrix((self.nm, K * nw))]).tocsr()
        # the interior point's rare "solve error": the dual simplex, capped (a count, not a time)
        res = _solve.linprog([("highs-ipm", {}), ("highs-ds", {"maxiter": _SIMPLEX_ITERATIONS})], -obj, A_ub=A,
                             b_ub=b, A_eq=Aeq, b_eq=self.pmf, bounds=(0, None))
        if res.status != 0:
            return 1.0, None, np.zeros(K, dtype=bool)
        lam = np.maximum(-np.asarray(res.ineqlin.marginals), 0.0)
        nu = -np.asarray(res.eqlin.marginals)
        # weak duality on the box above
        reduced = obj - A.T @ lam - Aeq.T @ nu
        certified = float(lam @ b + nu @ self.pmf + upper @ np.maximum(reduced, 0.0)) + self.eta
        # the law of M's kept entries are within ``trimmed`` (in sum) of the true ones: nu . pmf moves by at most this
        certified += float(np.max(np.abs(nu), initial=0.0)) * self.trimmed
        budget = np.arange(K) * (nw + 1) + nw  # each cut's row sum_j' y_j' <= rhs
        return min(1.0, certified), np.maximum(res.x[: self.nv], 0.0), lam[budget] > 0.0

    def tail(self, c: int, target: float | None = None) -> float:
        """A certified bound on Pr[N >= c]; with ``target``, the rounds stop once it is below the target, or above it
        while a round gains less than _STALLED of the bound (a wrong "above" only makes a count larger)."""
        c = int(c)
        if c <= self.j0:  # the states below j_from are one sum per m: the LP cannot split them at c
            return 1.0
        if c > self.n:
            return 0.0
        st = self._state.setdefault(c, {"c": c, "cuts": [], "binding": [], "bound": 1.0, "done": False, "rounds": 0})
        if not st["cuts"]:
            donor = [s for s in self._state.values() if s["binding"]]
            if donor:  # start from the cuts that bound at the nearest c solved (all of them would only grow the LP)
                st["cuts"] = list(min(donor, key=lambda s: abs(s["c"] - c))["binding"])
        while not st["done"]:
            if target is not None and st["bound"] <= target:
                break
            previous = st["bound"]
            certified, x, binding = self._lp(c, st["cuts"])
            st["rounds"] += 1
            if certified < st["bound"]:
                st["bound"] = certified
                st["binding"] = [cut for cut, used in zip(st["cuts"], binding) if used]
            if x is None or st["rounds"] >= _MAX_ROUNDS:
                st["done"] = True
                break
            viol, lo, hi = self._violations(x)
            order = np.argsort(-viol)
            order = order[viol[order] > _CUT_TOL * np.maximum(self.rhs_grid[order], 1e-9)][:_CUTS_PER_ROUND]
            if order.size == 0:
                st["done"] = True
                break
            st["cuts"] += [(self.grid[k], int(lo[k]), int(hi[k]), float(self.rhs_grid[k])) for k in order]
            if (target is not None and st["bound"] > target and st["rounds"] > 3
                    and previous - st["bound"] < _STALLED * st["bound"]):
                break
        return float(st["bound"])


def check_designated(designated) -> bool:
    """A box's ``designated`` setting as a bool, or one sentence naming it and the fix."""
    if not isinstance(designated, bool):
        raise ValueError(f"designated must be true or false, got {designated!r}; set bound.designated=true to add "
                         "Theorem 5 or leave it false.")
    return designated


def designated_run_tail(profile: PrivacyProfile, dists: Distributions, v: int) -> float:
    """Theorem 5's bound on Pr[#correct >= v] (one exact guess per target, each target's prior known)."""
    return DesignatedRun(profile, dists).tail(v)


def designated_run_counts(profile: PrivacyProfile, dists: Distributions, targets, hint) -> list[int]:
    """Theorem 5's count for each target tail probability, searched below ``hint`` (the other theorems' counts): the
    smallest c found with a certified tail(c + 1) <= target (galloping down from the hint, then bisecting), or the
    hint itself where tail(hint) is not certified below the target."""
    hints = np.atleast_1d(hint).astype(int)
    run = DesignatedRun(profile, dists, j_from=max(int(hints.min()) - _BELOW_HINT, 0))
    out = []
    for t, h in zip(np.atleast_1d(np.asarray(targets, dtype=float)), np.atleast_1d(hint)):
        h = int(h)
        ok = lambda c: run.tail(c + 1, target=float(t)) <= t
        out.append(h if h <= 0 or not ok(h - 1) else gallop_down(ok, h - 1))
    return out
