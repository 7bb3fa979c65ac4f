"""The whole-prior theorem: bounds that read each target's full prior, not only p = max pi (THEORY.md, Theorem 3).

Theorem 1 (the split theorem) sees target i only through p_i = max_x pi_i(x), so it bounds the worst
prior with that p, a uniform one. Theorem 3 splits target i's success at any threshold q_i and pays

    phi_i(q) = sup over mechanisms satisfying the profile of E[(rho_i - q)_+]

(rho_i the posterior success of target i given the release and X_{<i}); phi_i depends on the whole
prior pi_i. ``ExcessCurve`` computes a certified upper bound on phi_i(q) from a linear program over
one target's mechanisms, relaxed so that its size grows with the number of *distinct* prior
probabilities only:

* outputs reduce to "guess x, counted" for each value x plus one "not counted" output (post-processing);
* the mechanism's row for x is described by P_x = Pr[guess x | X = x] and, for every other row x',
  Pr[guess x | X = x'] >= y_x >= g(P_x), where g is the profile's trade-off curve (f-DP: Dong, Roth & Su,
  "Gaussian Differential Privacy", arXiv:1905.02383) read as "the least
  mass another row can put on an event that row x puts P_x on" (the hockey-stick constraints of the
  profile at finitely many eps: every eps adds valid lines, so fewer eps only loosen the bound);
* rows sum to at most 1: P_x' + sum_{x != x'} y_x <= 1.

The relaxation is convex and symmetric in values of equal probability, so one variable pair per
distinct probability suffices. Its value is always a dual bound (weak duality), so rounding never makes it
smaller than the relaxation's optimum. With the lines of the dense grid of ``PrivacyProfile.tradeoff`` it is
solved in closed form (``envelope``: one multiplier for the coupling, each group's problem explicit, the
value certified by the rows' Lagrangian dual); the one-target worst case (``fine=True``) adds, by cutting
planes through an LP, tangent lines at continuous eps between the grid's. For (eps, delta)-DP and eps-DP
the relaxation equals the exact LP over all mechanisms on every case of the test grid; for mu-GDP it is
exact on two-valued priors (riskcal's Bayes risk) and within ~1e-4 of the finite-eps LP for mu <= 1 on the
grid, looser for mu = 2 (THEORY.md, section 8, gives the numbers). Success sets of at most k values (k guesses,
a window) use the same relaxation with rows <= k (THEORY.md, Lemma 4'; ``set_size``).

Large domains are made small by rounding probabilities up (``prior_shape``): the relaxation's value
can only grow when a probability grows, so rounding the tail of a prior up onto a geometric grid of at
most ``MAX_GROUPS`` distinct values keeps the bound valid.

Everything here is numpy/scipy; the theorems' public entry points live in ``theorems`` (``count_bound``,
``tail_bound``, ``success_bound`` ... take ``distributions=``), the search over the thresholds q_i(t) in
``search`` (``WholePriorRun``).
"""
from __future__ import annotations

import math
from functools import cached_property

import numpy as np
from scipy import optimize, special

from . import _solve, _validate, envelope
# each target's whole prior, grouped, lives in priors; re-exported here (floor reads _EXACT_TOP, tests _shape_unchecked)
from .priors import _EXACT_TOP, MAX_SHAPES, Distributions, PriorShape, _shape_unchecked, prior_shape  # noqa: F401
from .priors import SHAPE_MAX_GROUPS as MAX_GROUPS  # noqa: F401
from .profiles import PrivacyProfile

__all__ = ["PriorShape", "prior_shape", "Distributions", "ExcessCurve", "excess_curve", "whole_prior_success",
           "WHOLE_PRIOR_THEOREM", "WHOLE_PRIOR_VERSION"]

#: Name and version of Theorem 3 in every output.
WHOLE_PRIOR_THEOREM = "whole-prior theorem (THEORY.md Thm 3)"
# 2: a cut on a tangent line (at continuous eps, added for another group or threshold) is added instead of ending the
#    cutting planes early; phi at q > 0 is tighter for GDP / f-DP profiles (e.g. Zipf(10, 1.0), mu = 1, q = 0.8:
#    0.00168 -> 0.00137) where the cuts used to stop early.
# 3: phi at q > 0 (the thresholds of the search over t) is the relaxation over every line of the grid, solved in
#    closed form (envelope.py) instead of by cutting planes through an LP: the same optimum to 1e-13 where the cuts
#    converged, lower by up to 1.2e-7 where twelve rounds of cuts had not (Zipf over 343 values, mu = 1).
WHOLE_PRIOR_VERSION = 3

#: Largest eps whose lines enter the relaxation (beyond it a line constrains only P within e^-20 of 1,
#: and its coefficients would strain the LP solver's scaling); dropping lines only loosens the bound.
_EPS_LINES_MAX = 20.0
#: delta values below this are rounded up to it (a larger delta is a weaker, still valid, constraint).
_DELTA_FLOOR = 1e-13
#: Lines the relaxation starts from (before the cutting planes).
_SEED_LINES = 8
#: Cutting-plane rounds per solve, and the violation below which a line is not added.
_CUT_ROUNDS = 12
_CUT_TOL = 1e-11
#: Rounds of tangent lines at continuous eps (after the grid's lines), for priors of at most _POLISH_GROUPS
#: distinct probabilities.
_POLISH_ROUNDS = 3
_POLISH_GROUPS = 16
#: The Lagrangian dual bound reads the multipliers of the relaxations solved at the nearest thresholds.
_DUAL_NEAREST = 4
#: A cut adds the violated line and this many neighbours on each side (on the eps grid).
_CUT_SPREAD = 4
#: At most this many eps of the profile's trade-off grid make lines (a thinned grid only loosens the bound).
_MAX_LINES = 1500


# --------------------------------------------------------------------------------------------
# phi(q): the relaxed one-target LP, certified by its dual
# --------------------------------------------------------------------------------------------
class ExcessCurve:
    """q -> a certified upper bound on phi(q) = sup_M E[(rho - q)_+] for one prior shape and profile.

    phi(0) is the worst-case success of one exact guess over every mechanism with the profile (the
    relaxation's optimum). phi is convex and non-increasing in q, and 0 from q = 1 on.

    ``set_size`` k > 1: success is a set of at most k values (k guesses, a distance window), rho the posterior
    mass of the set; the relaxation is THEORY.md's Lemma 4' (rows <= k, coefficients (1 - q/k) pi and
    (q/k) (1 - pi)); k = 1 is Lemma 4.
    """

    def __init__(self, profile: PrivacyProfile, shape: PriorShape, set_size: int = 1):
        self.profile, self.shape = profile, shape
        self.set_size = int(set_size)
        if self.set_size < 1:
            raise ValueError(f"set_size must be a positive integer (the most values a success set holds), got {set_size!r}.")
        eps, deltas = _profile_lines(profile)
        # every line y >= s P - c of the trade-off relaxation, both families (THEORY.md section 8)
        self._eps = eps
        with np.errstate(over="ignore"):
            self._all_s = np.concatenate([np.exp(-eps), np.exp(eps)])
            self._all_c = np.concatenate([np.exp(-eps) * deltas, np.expm1(eps) + deltas])
        seed = np.unique(np.linspace(0, len(eps) - 1, _SEED_LINES).astype(int))
        seed = np.concatenate([seed, seed + len(eps)])
        # the lines each group's rows use (a line only matters near the group's own P)
        self._seed = set(seed.tolist())
        self._support = int(np.sum(shape.mult))
        # the row multipliers of every LP solved (for ``dual``: a valid bound at every q)
        self._multipliers: list[np.ndarray] = [np.zeros(shape.probs.size)]
        self._multiplier_q: list[float] = [math.nan]
        self._active = [set(self._seed) for _ in range(shape.probs.size)]
        self._bound: list[set] = [set() for _ in range(shape.probs.size)]
        self._cache: dict[float, float] = {}
        self._fine: set[float] = set()
        self._nodes = None

    @cached_property
    def _hull(self) -> envelope.Hull:
        """The envelope of the grid's lines (shared by every prior shape of the profile), built on first use: the
        one-target worst case (q = 0, cutting planes) never needs it."""
        half = len(self._eps)
        return _hull(self.profile, self._all_s[: 2 * half], self._all_c[: 2 * half])

    def __call__(self, q, fine: bool = True) -> float:
        """The certified relaxation's value at q (memoised). ``fine=False``: the grid's lines, in closed form
        (``envelope.solve``); ``fine=True`` adds tangent lines at continuous eps by cutting planes through an LP
        (a tighter value, for the one-target worst case)."""
        q = max(float(q), 0.0)
        if q >= 1.0:
            return 0.0
        if q not in self._cache or (fine and q not in self._fine):
            if 0.0 < q <= 1.0 / self._support and self.set_size == 1:
                # below 1/|support| the best guess's posterior (>= 1/|support|) is never under q, so
                # phi(q) = sup E[rho*] - q = phi(0) - q exactly (THEORY.md section 8): nothing to solve at q
                value = self(0.0, fine) - q
            elif fine:
                value = self._solve(q, fine)
            else:
                value = self._solve_envelope(q)
            self._cache[q] = min(value, self._cache.get(q, 1.0))
            if fine:
                self._fine.add(q)
            self._nodes = None
        return self._cache[q]

    def upper(self, q) -> float:
        """A valid upper bound on phi(q) without a new LP where possible: the chord between the nearest
        solved points around q (phi is convex, and each solved value is >= phi there, so the chord is >= phi;
        phi(1) = 0). Solves the LP at q when no solved point lies at or below q."""
        q = max(float(q), 0.0)
        if q >= 1.0:
            return 0.0
        if q in self._cache:
            return self._cache[q]
        if self._nodes is None:
            keys = np.array(sorted(self._cache) + [1.0])
            self._nodes = (keys, np.array([self._cache[k] for k in keys[:-1]] + [0.0]))
        keys, vals = self._nodes
        i = int(np.searchsorted(keys, q))
        if i == 0:
            return self(q)
        w = (q - keys[i - 1]) / (keys[i] - keys[i - 1])
        return float(min(1.0, (1.0 - w) * vals[i - 1] + w * vals[i], self.dual(q)))

    def dual(self, q: float) -> float:
        """The Lagrangian dual bound at q for each stored row multiplier nu >= 0, minimised over them.

        Dualising only the rows P_g - y_g + Y <= k (k = set_size, 1 for one exact guess; one multiplier nu_g per row
        of group g, Lambda = sum_g m_g nu_g) leaves D(nu) = k Lambda + sum_g m_g psi(a_g - nu_g, b_g + Lambda - nu_g),
        a_g = (1 - q/k) pi_g, b_g = (q/k) (1 - pi_g), psi(alpha, beta) = max over P in [0, 1], g(P) <= y <= 1 of alpha P - beta y. By weak
        duality D(nu) >= RP(q) for every nu >= 0 and every q (``envelope.dual_bound`` evaluates psi through two
        of the grid's lines, valid whatever the rounding), so a multiplier found at a nearby q gives a certified
        value at q without solving there.
        """
        a, b, m = self._coefficients(q)
        # any multipliers are valid: those of the LPs solved nearest q (and nu = 0) are the ones that fit
        near = sorted(range(1, len(self._multipliers)), key=lambda j: abs(self._multiplier_q[j] - q))[:_DUAL_NEAREST]
        nu = np.stack([self._multipliers[0]] + [self._multipliers[j] for j in near])  # (J, G)
        values = envelope.dual_bound(self._hull, a, b, m, nu, self.set_size)
        return float(min(1.0, max(0.0, float(np.min(values)))))

    def _solve_envelope(self, q: float) -> float:
        """RP(q) over every line of the grid, solved in closed form and certified by its dual (``envelope.solve``);
        its row multipliers are kept for ``dual``."""
        a, b, m = self._coefficients(q)
        value, nu = envelope.solve(self._hull, a, b, m, self.set_size)
        self._multipliers.append(nu)
        self._multiplier_q.append(q)
        return float(min(1.0, max(0.0, value)))

    def _coefficients(self, q: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(a, b, m): the relaxation's objective sum_g m_g (a_g P_g - b_g y_g) at q (Lemma 4, or Lemma 4' for
        success sets of at most k values: a = (1 - q/k) pi, b = (q/k) (1 - pi))."""
        pi, m = self.shape.probs, self.shape.mult.astype(float)
        r = q / self.set_size
        return (1.0 - r) * pi, r * (1.0 - pi), m

    def _solve(self, q: float, fine: bool = True) -> float:
        """The relaxation by cutting planes over the grid's lines, then (fine) tangent lines at continuous eps."""
        a, b_obj, m = self._coefficients(q)
        G = a.size
        # variables x = (P_1..P_G, y_1..y_G) in [0, 1]; the LP minimises c.x
        c = -np.concatenate([m * a, -m * b_obj])
        value = 1.0
        polish = _POLISH_ROUNDS if (fine and G <= _POLISH_GROUPS) else 0
        for _ in range(_CUT_ROUNDS + polish):
            groups, lines, x, lam, slack, certified = self._round(c, m)
            value = min(value, certified)
            rows_nu = lam[:G] / np.maximum(m, 1.0)  # per row of each group
            P, y = x[:G], x[G:]
            # the most violated line at each group's P (cutting planes)
            with np.errstate(over="ignore", invalid="ignore"):
                viol = self._all_s[None, :] * P[:, None] - self._all_c[None, :] - y[:, None]
            viol = np.where(np.isfinite(viol), viol, -np.inf)
            worst = np.argmax(viol, axis=1)
            added = False
            half = len(self._eps)
            for g, j in enumerate(worst):
                if viol[g, j] > _CUT_TOL and int(j) not in self._active[g]:
                    if j < 2 * half:
                        # the line and its neighbours on the eps grid (the tangent point moves with q)
                        fam = (j // half) * half
                        self._active[g] |= {fam + k for k in range(j - fam - _CUT_SPREAD, j - fam + _CUT_SPREAD + 1)
                                            if 0 <= k < half}
                    else:  # a tangent line at continuous eps (added for another group or q)
                        self._active[g].add(int(j))
                    added = True
            if not added and polish:
                polish -= 1
                added = any([self._tangent(g, float(P[g]), float(y[g]), int(worst[g])) for g in range(G)])
            if not added:
                break
        # keep the lines that bind at this solution (and the seeds): the next q starts from a small LP, and
        # any line it needs comes back as a cut (a subset of the lines is always a valid relaxation)
        binding = slack <= 1e-9
        kept = [set(self._seed) | self._bound[g] for g in range(G)]
        half = len(self._eps)
        for g, j in zip(groups[binding], lines[binding]):
            kept[int(g)].add(int(j))
            if j < 2 * half:  # and its neighbours on the grid: the tangent point moves little with q
                fam = (j // half) * half
                kept[int(g)].update(fam + k for k in range(j - fam - _CUT_SPREAD, j - fam + _CUT_SPREAD + 1)
                                    if 0 <= k < half)
        # lines that bound at some q stay (the solution's tangent points drift with q; keeping them saves cuts)
        for g, j in zip(groups[binding], lines[binding]):
            self._bound[int(g)].add(int(j))
        self._active = kept
        self._multipliers.append(rows_nu)
        self._multiplier_q.append(q)
        return float(min(1.0, max(0.0, value)))

    def _round(self, c: np.ndarray, m: np.ndarray):
        """One round's LP over the active lines, built anew: (groups, lines, x, lam, slack of the line rows, certified
        value)."""
        G = m.size
        groups = np.concatenate([np.full(len(a), g) for g, a in enumerate(self._active)])
        lines = np.concatenate([np.fromiter(a, dtype=np.int64) for a in self._active])
        R = lines.size
        # rows: P_g - y_g + sum_h m_h y_h <= set_size (1 for one exact guess)
        row_block = np.hstack([np.eye(G), np.tile(m, (G, 1)) - np.eye(G)])
        # y_g >= s_l P_g - c_l for the group's lines l:  s_l P_g - y_g <= c_l (dense: the LP is small)
        A_lines = np.zeros((R, 2 * G))
        A_lines[np.arange(R), groups] = self._all_s[lines]
        A_lines[np.arange(R), G + groups] = -1.0
        A = np.vstack([row_block, A_lines])
        b = np.concatenate([np.full(G, float(self.set_size)), self._all_c[lines]])
        # presolve costs more than it saves on an LP this small (a third of the time at 10 groups); with or
        # without it the value used is the certified dual bound below
        # (numerical trouble without presolve: solve again with it)
        solved = _linprog_core(c, A, b) if _FAST else None
        if solved is None:
            res = _solve.linprog([("highs", {"presolve": False}), ("highs", {})], c, A_ub=A, b_ub=b, bounds=(0.0, 1.0))
            if res.status != 0:  # pragma: no cover - the LP is always feasible (x = 0) and bounded
                raise RuntimeError(f"the whole-prior LP failed: {res.message}")
            solved = res.x, np.asarray(res.ineqlin.marginals), np.asarray(res.ineqlin.residual)
        x, marginals, residual = solved
        lam = np.maximum(0.0, -marginals)
        reduced = c + A.T @ lam
        certified = float(lam @ b - np.sum(np.minimum(0.0, reduced)))  # >= the LP's maximum
        return groups, lines, x, lam, residual[G:], certified

    def _tangent(self, g: int, P: float, y: float, j: int) -> bool:
        """Add to group g the line of the profile at the eps (between the grid's neighbours of line j) that is
        highest at P, if it cuts the solution (P, y) off: the grid's lines only sample the trade-off curve."""
        half = len(self._eps)
        if not 0.0 < P < 1.0 or j >= 2 * half:
            return False
        family, k = divmod(j, half)
        lo, hi = self._eps[max(k - 1, 0)], self._eps[min(k + 1, half - 1)]
        if not hi > lo:
            return False
        profile = self.profile
        def delta(e: float) -> float:
            d = float(profile.delta(float(e)))
            return max(d, _DELTA_FLOOR if d > 0 else 0.0)
        if family == 0:
            height = lambda e: math.exp(-e) * (P - delta(e))
        else:
            height = lambda e: 1.0 - delta(e) - math.exp(e) * (1.0 - P)
        if _FAST:
            e = _bounded_minimum(lambda e: -height(e), float(lo), float(hi), 1e-10)
        else:
            e = float(optimize.minimize_scalar(lambda e: -height(e), bounds=(lo, hi), method="bounded",
                                               options={"xatol": 1e-10}).x)
        if height(e) <= y + _CUT_TOL:
            return False
        d = delta(e)
        s_new, c_new = (math.exp(-e), math.exp(-e) * d) if family == 0 else (math.exp(e), math.expm1(e) + d)
        self._all_s = np.append(self._all_s, s_new)
        self._all_c = np.append(self._all_c, c_new)
        self._active[g].add(len(self._all_s) - 1)
        return True


#: The exact fast paths of the one-target relaxation (False: scipy's linprog and minimize_scalar, for
#: tests/stages/bound/test_whole_prior_fast.py to compare against): each round's LP handed to the HiGHS that scipy's
#: linprog runs, without linprog's wrapper; the tangent's bounded search run in plain floats (mu-GDP's delta on one
#: float is GaussianDP._delta_one). Each takes the same steps on the same numbers, so the values are the same bit for
#: bit (not a warm-started model kept across rounds: another optimal vertex changes the cuts, and the values by up to
#: ~2e-6).
_FAST = True

try:  # the HiGHS build scipy's linprog(method="highs") runs (a private module: without it, linprog itself)
    from scipy.optimize._highspy import _core as _scipy_highs
except ImportError:  # pragma: no cover - scipy without its HiGHS module
    _scipy_highs = None
#: linprog's feasibility check of a solution (scipy's _check_result: sqrt(tol) * 10 with tol = 1e-9).
_FEASIBLE_TOL = math.sqrt(1e-9) * 10

_OPTIONS = []


def _core_options():
    """The options linprog(method="highs", options={"presolve": False}) passes (every other one at HiGHS's default),
    made once (passOptions copies them)."""
    if not _OPTIONS:
        h = _scipy_highs
        options = h.HighsOptions()
        options.presolve = "off"
        options.highs_debug_level = h.HighsDebugLevel.kHighsDebugLevelNone
        options.log_to_console = False
        options.output_flag = False
        options.simplex_strategy = h.simplex_constants.SimplexStrategy.kSimplexStrategyDual
        _OPTIONS.append(options)
    return _OPTIONS[0]


def _linprog_core(c: np.ndarray, A: np.ndarray, b: np.ndarray):
    """min c.x subject to A x <= b, 0 <= x <= 1, as ``linprog(c, A_ub=A, b_ub=b, bounds=(0, 1), method="highs",
    options={"presolve": False})`` solves it (the same HiGHS, model and options): (x, row duals, b - A x), or None
    where that call would not end with status 0 (the caller then runs linprog itself)."""
    if _scipy_highs is None:  # pragma: no cover
        return None
    h = _scipy_highs
    n, rows = c.size, b.size
    # A in compressed columns, as scipy.sparse.csc_array(A) stores it (rows ascending in each column, zeros dropped);
    # lists: HiGHS's bindings take them faster than numpy arrays
    nonzero = A.T != 0
    lp = h.HighsLp()
    lp.num_col_, lp.num_row_ = n, rows
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, rows
    lp.a_matrix_.format_ = h.MatrixFormat.kColwise
    lp.col_cost_ = c.tolist()
    lp.col_lower_, lp.col_upper_ = [0.0] * n, [1.0] * n
    lp.row_lower_, lp.row_upper_ = [-h.kHighsInf] * rows, b.tolist()
    lp.a_matrix_.start_ = [0] + np.cumsum(np.count_nonzero(nonzero, axis=1)).tolist()
    lp.a_matrix_.index_ = np.nonzero(nonzero)[1].tolist()
    lp.a_matrix_.value_ = A.T[nonzero].tolist()
    highs = h._Highs()
    if highs.passOptions(_core_options()) == h.HighsStatus.kError or highs.passModel(lp) == h.HighsStatus.kError:
        return None  # pragma: no cover
    if highs.run() == h.HighsStatus.kError or highs.getModelStatus() != h.HighsModelStatus.kOptimal:
        return None
    solution = highs.getSolution()
    x = np.array(solution.col_value)
    residual = b - solution.row_value
    if (np.isnan(x).any() or np.isnan(residual).any() or np.any(x < -_FEASIBLE_TOL) or np.any(x > 1.0 + _FEASIBLE_TOL)
            or np.any(residual < -_FEASIBLE_TOL)):
        return None  # linprog would report status 4 here and try with presolve
    return x, np.array(solution.row_dual), residual


def _bounded_minimum(f, x1: float, x2: float, xatol: float, maxiter: int = 500) -> float:
    """The x that ``scipy.optimize.minimize_scalar(f, bounds=(x1, x2), method="bounded", options={"xatol": xatol}).x``
    returns: the same Brent steps as scipy's ``_minimize_scalar_bounded`` (scipy.optimize._optimize, BSD-3-Clause,
    Copyright (c) 2001-2002 Enthought, Inc. and 2003- SciPy Developers), transcribed to plain floats."""
    sqrt_eps = math.sqrt(2.2e-16)
    golden_mean = 0.5 * (3.0 - math.sqrt(5.0))
    a, b = x1, x2
    fulc = a + golden_mean * (b - a)
    nfc, xf = fulc, fulc
    rat = e = 0.0
    x = xf
    fx = float(f(x))
    num = 1
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = sqrt_eps * abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while abs(xf - xm) > (tol2 - 0.5 * (b - a)):
        golden = 1
        if abs(e) > tol1:  # a parabolic fit
            golden = 0
            r = (xf - nfc) * (fx - ffulc)
            q = (xf - fulc) * (fx - fnfc)
            p = (xf - fulc) * q - (xf - nfc) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            r = e
            e = rat
            if abs(p) < abs(0.5 * q * r) and p > q * (a - xf) and p < q * (b - xf):
                rat = (p + 0.0) / q
                x = xf + rat
                if (x - a) < tol2 or (b - x) < tol2:
                    rat = tol1 * (_sign(xm - xf) + float((xm - xf) == 0))
            else:
                golden = 1
        if golden:  # a golden-section step
            e = (a - xf) if xf >= xm else (b - xf)
            rat = golden_mean * e
        x = xf + (_sign(rat) + float(rat == 0)) * max(abs(rat), tol1)
        fu = float(f(x))
        num += 1
        if fu <= fx:
            if x >= xf:
                a = xf
            else:
                b = xf
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = xf, fx
            xf, fx = x, fu
        else:
            if x < xf:
                a = x
            else:
                b = x
            if fu <= fnfc or nfc == xf:
                fulc, ffulc = nfc, fnfc
                nfc, fnfc = x, fu
            elif fu <= ffulc or fulc == xf or fulc == nfc:
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = sqrt_eps * abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if num >= maxiter:
            break
    return xf


def _sign(v: float) -> float:
    return 1.0 if v > 0 else (-1.0 if v < 0 else 0.0)


def _profile_lines(profile: PrivacyProfile) -> tuple[np.ndarray, np.ndarray]:
    """The eps grid of the profile's trade-off curve (``PrivacyProfile.tradeoff``) and delta there,
    up to _EPS_LINES_MAX."""
    eps = np.asarray(profile._tradeoff_grid)
    deltas = np.asarray(profile._tradeoff_deltas)
    if eps.size > _MAX_LINES:
        pick = np.unique(np.linspace(0, eps.size - 1, _MAX_LINES).astype(np.int64))
        eps, deltas = eps[pick], deltas[pick]
    keep = eps <= _EPS_LINES_MAX
    eps, deltas = eps[keep], np.maximum(deltas[keep], np.where(deltas[keep] > 0, _DELTA_FLOOR, 0.0))
    # past the first eps with delta = 0 every further line is implied by that one
    zero = np.flatnonzero(deltas <= 0.0)
    if zero.size:
        eps, deltas = eps[: zero[0] + 1], deltas[: zero[0] + 1]
    return eps, deltas


_HULLS: dict = {}


def _hull(profile: PrivacyProfile, s: np.ndarray, c: np.ndarray) -> envelope.Hull:
    """The envelope of a profile's grid lines (memoised per profile: every prior shape shares it)."""
    key = (profile.identity(), s.size)
    hit = _HULLS.get(key)
    if hit is None:
        if len(_HULLS) >= _CURVES_MAX:
            _HULLS.clear()
        hit = _HULLS[key] = envelope.hull_of(s, c)
    return hit


_CURVES: dict = {}
_CURVES_MAX = 4096


def excess_curve(profile: PrivacyProfile, shape: PriorShape, set_size: int = 1) -> ExcessCurve:
    """The (memoised) ExcessCurve of a profile, a prior shape and a largest success set."""
    key = (profile.identity(), shape.key, int(set_size))
    curve = _CURVES.get(key)
    if curve is None:
        if len(_CURVES) >= _CURVES_MAX:
            _CURVES.clear()
        curve = _CURVES[key] = ExcessCurve(profile, shape, set_size)
    return curve


def whole_prior_success(profile: PrivacyProfile, shape: PriorShape, set_size: int = 1, *, closed_form: bool = True) -> float:
    """Theorem 3 at n = 1: the worst-case success of one exact guess (or of a success set of at most ``set_size``
    values), phi(0) (certified relaxation). A prior on two values with one exact guess takes the exact worst case
    in closed form (``two_valued_success``); ``closed_form=False`` solves the relaxation there too (the LP the
    closed form replaced, kept for the tests and tests/benchmarks/bench_one_target.py)."""
    if closed_form and set_size == 1 and int(np.sum(shape.mult)) == 2:
        return two_valued_success(profile, float(shape.probs[0]), float(shape.probs[-1]))
    return excess_curve(profile, shape, set_size)(0.0)


#: Added to the closed form of ``two_valued_success`` (and then capped at 1): covers its float rounding (a few
#: 1e-16, THEORY.md section 8), so the value is never below the exact worst case; far below the 1e-6 it may sit above.
_CLOSED_FORM_MARGIN = 1e-12


def two_valued_success(profile: PrivacyProfile, p: float, q: float | None = None) -> float:
    """The exact one-target worst case of one exact guess on a prior (p, q = 1 - p), p >= q: p + q delta(eps*),
    eps* = log(p / q), rounded up by ``_CLOSED_FORM_MARGIN`` (THEORY.md section 8, "Two values"). ``q`` is the other
    value's probability as given (``prior_shape`` accepts sums within 1e-6 of 1; the bound grows with both). delta is
    ``profile.delta_upper``: delta itself for closed-form profiles, a valid upper bound read from a table for a
    privacy-loss distribution (DP-SGD: 0.03 ms where a PLD evaluation of delta takes 0.5 s).

    The attack guesses the likelier value on an output event A: its success is p P(A) + q (1 - Q(A)) =
    p + q (Q(A^c) - e^eps* P(A^c)) <= p + q H_{e^eps*}(Q || P) <= p + q delta(eps*), and a pair
    (P, Q) whose hockey-stick divergences are the profile (every tight profile: GDP, (eps, delta), the pessimistic
    PLD of DP-SGD) attains it with A = {dP/dQ > e^-eps*}. One profile line, the one at eps*: the relaxed LP's value
    with every line (riskcal's 1 - Bayes risk for mu-GDP, Kulynych et al. 2025, Prop. D.1).
    """
    p, q = float(p), 1.0 - float(p) if q is None else float(q)
    p, q = max(p, q), min(p, q)
    if q <= 0.0:
        return min(1.0, p)
    eps_star = math.log(p) - math.log(q)
    value = p + q * float(profile.delta_upper(eps_star))  # exact delta, or a valid upper bound (a PLD's)
    return min(1.0, value + _CLOSED_FORM_MARGIN)


def threshold_priors(dists: Distributions, set_size: int = 1) -> np.ndarray:
    """Per group, the p that places the thresholds q(t) = expit(t + logit p): max pi for one exact guess; for
    success sets of at most k values the mass of the k largest probabilities (the largest prior mass any such set
    can hold). Theorem 3 holds for any thresholds; this only chooses the family searched."""
    if set_size == 1:
        return dists.p
    return np.array([min(1.0, float(np.sum(np.repeat(s.probs, np.minimum(s.mult, set_size))[:set_size])))
                     for s in dists.shapes])


# --------------------------------------------------------------------------------------------
# Theorem 3 over n targets: thresholds q_i(t) = expit(t + logit p_i), one parameter t
# --------------------------------------------------------------------------------------------
def thresholds(t: float, p: np.ndarray) -> np.ndarray:
    """q_i(t) = expit(t + logit p_i): beta(t, p_i) for t >= 0, and below p_i for t < 0; t = -inf gives 0."""
    if t == -math.inf:
        return np.zeros_like(p)
    with np.errstate(divide="ignore"):
        out = special.expit(t + special.logit(p))
    return np.where(p >= 1.0, 1.0, np.where(p <= 0.0, 0.0, out))


def budgets(profile: PrivacyProfile, dists: Distributions, t: float, exact: bool = True, set_size: int = 1) -> np.ndarray:
    """Per group, a bound on E[(rho - q(t))_+]: the relaxation's phi(q), and for t >= 0 also Lemma 2's
    delta(t) (1 - beta(t, p)) (the split theorem's budget at eps = t, valid at threshold beta(t, p)).
    ``exact=True`` solves phi at q(t) over the profile's grid of lines (without the tangents at continuous eps,
    which only the one-target worst case adds); ``exact=False`` reads it from the chords and dual bounds between
    solved points (``ExcessCurve.upper``). Every value is a valid bound. ``set_size`` k > 1: success sets of at
    most k values (Lemma 4'), thresholds from ``threshold_priors``, and no Lemma 2 term (Lemma 2 is for one exact
    guess)."""
    p = threshold_priors(dists, set_size)
    q = thresholds(t, p)
    curves = [excess_curve(profile, s, set_size) for s in dists.shapes]
    phi = np.array([c(qq, fine=False) if exact else c.upper(qq) for c, qq in zip(curves, q)])
    if t >= 0 and np.isfinite(t) and set_size == 1:
        d = profile.delta_upper(float(t))
        phi = np.minimum(phi, d * (1.0 - q))
    return phi
