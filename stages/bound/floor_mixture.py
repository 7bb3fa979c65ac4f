"""The floor as the best certified mixture of product mechanisms (THEORY.md section 11, Lemma 7).

A coin j with probability w_j is drawn and released, then component j (a product of per-target class mechanisms, the
same kind and parameters for every target) is applied to every target independently. For one target's neighbouring
pair the released coin separates the outputs, so the mixture's hockey-stick curve is at most sum_j w_j delta_j(eps)
(delta_j: component j's curve, the worst pair of classes of any target); the mixture has the profile when that sum is
at most delta(eps) at every eps >= 0, which rows of the form sum_j w_j delta_j(g_k) <= min(delta(g_k), delta(g_{k+1}))
certify between grid points (each delta_j and delta non-increasing). The MAP attack reads the coin; given it, the
count is component j's Poisson-binomial, so Pr[N >= v] = sum_j w_j Pr_j[N >= v], and for each v the best weights are a
linear program. The floor at c is the largest v at which certified weights give Pr[N >= v] > 1 - c.

Components (``KINDS``): randomized response over the m likeliest values and "rest" (m up to every value read) at a
grid of eps0; the same revealing the class with probability d (profiles with delta(inf) > 0); the Gaussian simplex at a
grid of mu' <= mu (mu-GDP profiles); the release of every secret (weight at most delta(inf)); and the release of nothing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

from . import _floor_product as _single  # the single product mechanisms (Lemma 6)
from .profiles import ApproxDP, PrivacyProfile
from .whole_prior import _EXACT_TOP

__all__ = ["KINDS", "MixtureFloor", "component_delta", "mixture_floor", "mixture_mechanism"]

#: The kinds of component, with what each releases per target (its class map: the m likeliest values, and "rest").
KINDS = {
    "nothing": "nothing (the attack guesses the likeliest value)",
    "randomized_response": "the class through (m + 1)-ary randomized response at eps0",
    "revealing_randomized_response": "the class outright with probability d, else (m + 1)-ary randomized response at eps0",
    "gaussian_simplex": "the class's vertex of a regular simplex with edge mu plus N(0, I)",
    "reveal": "every secret outright",
    "product": "each target through its own best single member (Lemma 6), the product of section 11's first part",
}
#: The eps0 of the randomized-response components (besides each m's largest certified eps0, ``floor.rr_epsilon``).
_EPS0 = np.unique(np.concatenate([np.linspace(0.01, 2.0, 200), np.geomspace(2.0, 20.0, 81)[1:]]))
#: Beyond this many distinct priors (over all runs) every third eps0 of the grid is read.
_FULL_GRID_GROUPS = 4
#: The Gaussian simplex components' mu' / mu.
_MU_FRACTIONS = (1.0, 0.97, 0.93, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.35)
#: At most this many values of one prior are read by randomized response (its likeliest; beyond, the others join
#: "rest", a coarser class map, still a real mechanism; the successes cost eps0-grid x values).
MAX_VALUES = 4096
#: Relative inflation of every component's computed curve (its round-off), on top of the profile's margin.
_CURVE_MARGIN = 1e-12
#: The linear program reads at most this many columns (those whose pair with nothing gains most at the count tried).
_MAX_COLUMNS = 200
#: The cutting planes' tolerance on a row (relative to the profile's delta there), before the weights are certified.
_ROW_TOL = 1e-9


@dataclass
class _Column:
    kind: str
    params: dict
    m: np.ndarray  # per group of the union of the runs' priors: its number of singleton classes
    success: np.ndarray  # per group: the MAP attack's success on one target (a lower bound)
    curve: np.ndarray  # per row: an upper bound on delta_j at the row's left end; the last row [g_K, inf)
    per_group: list | None = None  # a product's member per group: (kind, params)


@dataclass
class MixtureFloor:
    """``mixture_floor``'s answer: per confidence the count, the certified Pr[N >= count] and the mixture reaching it."""

    confidences: list
    counts: list
    mixtures: list = field(default_factory=list)  # per confidence: dict (see ``record``)

    def record(self) -> dict:
        """{confidence: {"count", "tail" (certified Pr[N >= count]), "components": [{"kind", its parameters, "fewest_classes"
        (which sets its curve), "weight", "count" (its own, alone), "tail_at_floor", and per prior "classes", "targets",
        "success" (up to _RECORD_GROUPS priors)}]}} as JSON holds it (metrics.json's worst_case_floor.mixtures)."""
        return {f"{float(c):g}": mix for c, mix in zip(self.confidences, self.mixtures)}


def component_delta(kind: str, params: dict, classes: int, eps) -> np.ndarray:
    """The hockey-stick curve delta_j(eps) of one target's component over its worst pair of classes (both orders),
    for ``classes`` classes (m + 1): randomized response r (1 - e^(eps - eps0))_+ with r = 1 / (1 + m e^-eps0), the
    revealing one d + (1 - d) times that, the simplex the mu-GDP curve, "reveal" 1, "nothing" 0."""
    eps = np.asarray(eps, dtype=float)
    m = classes - 1
    if kind == "nothing":
        return np.zeros_like(eps)
    if kind == "reveal":
        return np.ones_like(eps)
    if kind == "gaussian_simplex":
        from .profiles import gdp_delta
        return gdp_delta(eps, float(params["mu"]))
    e0 = float(params["eps0"])
    rr = -np.expm1(np.minimum(eps - e0, 0.0)) / (1.0 + m * math.exp(-e0))
    if kind == "randomized_response":
        return rr
    d = float(params["d"])
    return d + (1.0 - d) * rr


# ---- the priors' values ---------------------------------------------------------------------------------------------
def _values(shape) -> np.ndarray:
    """The probabilities the components read, descending (at least two: a one-value prior's "rest" has weight 0):
    every value of an exact shape, the exact head of a rounded one, at most MAX_VALUES."""
    head = len(shape.probs) if not shape.rounded else min(_EXACT_TOP, len(shape.probs))
    reps = np.minimum(np.asarray(shape.mult[:head], dtype=np.int64), MAX_VALUES)
    top = np.repeat(np.asarray(shape.probs[:head], dtype=float), reps)[:MAX_VALUES]
    return np.pad(top, (0, max(0, 2 - top.size)))


def _rr_successes(top: np.ndarray, eps0: np.ndarray) -> np.ndarray:
    """s[e, m - 1] for m = 1 .. len(top) - 1: (m + 1)-ary randomized response at eps0[e] on the classes top[0..m]:
    r (w_0 + sum_{c=1}^{m} max(w_c, w_0 e^-eps0)), r = 1 / (1 + m e^-eps0) (_floor_product._randomized_response's
    sum)."""
    k = top.size
    m = np.arange(1, k)
    a = top[0] * np.exp(-eps0)[:, None]
    summed = np.cumsum(np.maximum(top[None, 1:], a), axis=1)
    r = 1.0 / (1.0 + m[None, :] * np.exp(-eps0)[:, None])
    return r * (top[0] + summed)


# ---- the columns ----------------------------------------------------------------------------------------------------
def _rr_curve_rows(eps0: float, m: int, d: float = 0.0) -> np.ndarray:
    grid = _single._RR_GRID
    # rows [g_k, g_k+1] read the curve at g_k; the last row [g_K, inf) reads it at g_K (d once eps0 <= g_K)
    return component_delta("revealing_randomized_response", {"eps0": eps0, "d": d}, m + 1, grid) * (1.0 + _CURVE_MARGIN)


def _columns(members: "_single._Members", shapes: list) -> list[_Column]:
    """Every component for the union of the runs' priors (``shapes``: one PriorShape per group)."""
    tops = [_values(s) for s in shapes]
    kmax = max(t.size for t in tops)
    p = np.array([s.p for s in shapes])
    rows = _single._RR_GRID.size  # K interval rows and the row [g_K, inf)
    cols = [_Column("nothing", {}, np.zeros(len(shapes), dtype=np.int64), p, np.zeros(rows))]
    d_inf = _delta_inf(members.profile)
    if d_inf > 0:
        cols.append(_Column("reveal", {}, np.zeros(len(shapes), dtype=np.int64), np.ones(len(shapes)),
                            np.ones(rows) * (1.0 + _CURVE_MARGIN)))
    # randomized response (and the revealing one): the grid of eps0 and each m's largest certified one
    certified = {m: _single._rr_epsilon(members.low, m) for m in _m_probe(kmax)}
    grid = _EPS0 if len(shapes) <= _FULL_GRID_GROUPS else _EPS0[::3]  # many priors: each column costs a convolution
    eps0 = np.unique(np.concatenate([grid, list(certified.values())]))
    eps0 = eps0[eps0 > 0]
    reveal = [0.0] + ([d_inf] if d_inf > 0 else [])
    if members.approx is not None:
        eps0 = np.unique(np.append(eps0, members.approx[0]))
    succ_rr = succ = [_rr_successes(t, eps0) for t in tops]  # per group: (eps0, k_g - 1)
    ksz = np.array([t.size for t in tops])
    ms = np.array(_m_probe(kmax))
    mg_common = np.minimum(ms[:, None], ksz[None, :] - 1)  # (m, groups): one m for every target
    common = np.stack([sg[:, mg_common[:, g] - 1] for g, sg in enumerate(succ)], axis=2)  # (eps0, m, groups)
    best_m = np.stack([1 + np.argmax(sg, axis=1) for sg in succ], axis=1)  # (eps0, groups): each target's best m
    # a common m is dropped where a larger one (a smaller curve) does as well on every target
    after = np.maximum.accumulate(common[:, ::-1, :], axis=1)[:, ::-1, :]
    after = np.concatenate([after[:, 1:, :], np.full((eps0.size, 1, len(tops)), -np.inf)], axis=1)
    useful = ~np.all(after >= common, axis=2)  # (eps0, m)
    for d in reveal:
        kind = "revealing_randomized_response" if d > 0 else "randomized_response"
        for e, e0 in enumerate(eps0):
            if d == 0 and e0 > _single._RR_GRID[-1]:
                continue
            params = {"eps0": float(e0)} | ({"d": float(d)} if d > 0 else {})
            choices = [mg_common[i] for i in np.flatnonzero(useful[e])]
            if not any(np.array_equal(best_m[e], c) for c in choices):
                choices.append(best_m[e])
            for mg in choices:
                s = np.array([sg[e, g - 1] for sg, g in zip(succ, mg)])
                if d > 0:
                    s = d * np.array([float(np.sum(t[: g + 1])) for t, g in zip(tops, mg)]) + (1 - d) * s
                cols.append(_Column(kind, params, mg.astype(np.int64), np.clip(s - _single._SLACK, 0.0, 1.0),
                                    _rr_curve_rows(float(e0), int(np.min(mg)), d)))
    # the product of the best single members per target (Lemma 6: each meets the profile, so their worst does)
    succ, best_m, chosen, simplex = _single._product(members, shapes)
    analytic = np.append(members.low, d_inf)  # a curve below delta(eps) everywhere: its rows' own right-hand sides
    cols.append(_Column("product", {"members": _distinct_members(chosen, best_m)}, best_m, succ, analytic, chosen))
    if members.approx is not None:  # exactly (eps, delta)-DP: (revealing) randomized response at its own (eps, delta)
        e, d = members.approx
        kind = "revealing_randomized_response" if d > 0 else "randomized_response"
        for m in ms:
            mg = np.minimum(m, ksz - 1)
            s = np.array([d * float(np.sum(t[: g + 1])) + (1 - d) * sg[np.searchsorted(eps0, e), g - 1]
                          for t, sg, g in zip(tops, succ_rr, mg)])
            cols.append(_Column(kind, {"eps0": e} | ({"d": d} if d > 0 else {}), mg.astype(np.int64),
                                np.clip(s - _single._SLACK, 0.0, 1.0), analytic))
    if members.mu is not None and members.mu > 0:
        cols.extend(_simplex_columns(members, shapes, simplex, analytic))
    return cols


def _distinct_members(chosen: list, m: np.ndarray) -> list:
    """The product's members, each once: {"kind", its parameters, "classes"}."""
    out = []
    for (kind, params), mg in zip(chosen, m):
        entry = {"kind": kind, **params, "classes": int(mg) + 1}
        if entry not in out:
            out.append(entry)
    return out


def _m_probe(kmax: int) -> list[int]:
    """The m read (one for every target; each target's best m is read too) and whose largest certified eps0 joins
    the grid: every m up to 16, then a geometric sample up to every value."""
    small = list(range(1, min(kmax, 17)))
    big = np.unique(np.geomspace(17, max(kmax - 1, 17), 8).astype(int)) if kmax > 17 else []
    return sorted(set(small) | {int(b) for b in big if b <= kmax - 1} | {kmax - 1})


def _simplex_columns(members, shapes, at_mu: np.ndarray, analytic: np.ndarray) -> list[_Column]:
    """The Gaussian simplex at mu' = mu (its successes ``at_mu``, from ``_floor_product._product``) and, for a few
    priors, at smaller mu' (``_MU_FRACTIONS``)."""
    mu = members.mu
    grid = _single._RR_GRID
    out = []
    for frac in _MU_FRACTIONS if len(shapes) <= _FULL_GRID_GROUPS else (1.0,):
        mu_j = mu * frac
        s, mg = np.zeros(len(shapes)), np.zeros(len(shapes), dtype=np.int64)
        for g, shape in enumerate(shapes):
            top = _single._top_values(shape, _single.MAX_CLASSES)
            if top.size < 2:
                s[g] = shape.p
                continue
            m = 1 + int(np.argmax(_single._simplex_estimates(mu_j, top)))
            s[g] = at_mu[g] if frac == 1.0 else _single._gaussian_simplex(mu_j, top[: m + 1])
            mg[g] = m
        if frac == 1.0:  # exactly the profile's curve (THEORY.md, Lemma 7)
            curve = analytic
        else:
            curve = np.append(component_delta("gaussian_simplex", {"mu": mu_j}, 2, grid[:-1]), 0.0) * (1 + _CURVE_MARGIN)
        out.append(_Column("gaussian_simplex", {"mu": float(mu_j)}, mg, np.clip(s, 0.0, 1.0), curve))
    return out


def _delta_inf(profile: PrivacyProfile) -> float:
    """A lower bound on delta(eps) for every eps >= g_K: an (eps, delta) profile's delta, else 0."""
    if isinstance(profile, ApproxDP):
        return float(profile.delta_) / (1.0 + _single._RR_MARGIN)
    return 0.0


# ---- the tails ------------------------------------------------------------------------------------------------------
class _Tails:
    """low(v)[j] <= Pr_j[N >= v] for every column j, v = 0 .. n + 1, the mean over the runs: one prior per run read
    through Binomial survival functions at the v asked for, several through each column's Poisson-binomial law
    (``floor.low_tail``: the convolution's trimmed mass and _SLACK off)."""

    def __init__(self, success: np.ndarray, dists: list, spans: list):
        self.n = dists[0].n
        self.parts = []  # per run: ("binomial", s) or ("matrix", low)
        for d, (a, b) in zip(dists, spans):
            sub = np.clip(success[:, a:b], 0.0, 1.0)
            if sub.shape[1] == 1:
                self.parts.append(("binomial", sub[:, 0]))
            else:
                self.parts.append(("matrix", np.maximum(np.array([_single.low_tail(row, d.counts) for row in sub]), 0.0)))
        self._memo: dict[int, np.ndarray] = {}

    def __call__(self, v: int) -> np.ndarray:
        if v not in self._memo:
            out = []
            for kind, x in self.parts:
                if kind == "matrix":
                    out.append(x[:, v])
                elif v == 0:
                    out.append(np.ones(x.size))
                elif v > self.n:
                    out.append(np.zeros(x.size))
                else:  # scipy's bdtrc, relative error ~1e-14 here: _SLACK covers it
                    out.append(np.maximum(stats.binom.sf(v - 1, self.n, x) - _single._SLACK, 0.0))
            self._memo[v] = np.mean(out, axis=0)
        return self._memo[v]

    def quantile(self, j: int, c: float) -> int:
        """Column j alone: the smallest v with low(v + 1)[j] <= 1 - c."""
        lo, hi = 0, self.n  # low(n + 1) = 0
        while lo < hi:
            mid = (lo + hi) // 2
            if self(mid + 1)[j] <= 1.0 - c:
                hi = mid
            else:
                lo = mid + 1
        return lo


# ---- the linear program ---------------------------------------------------------------------------------------------
class _Program:
    """max_w sum_j w_j T_j subject to sum_j w_j = 1, w >= 0 and D^T w <= b, by cutting planes over the rows (each row
    scaled by 1 / b_k for the solver; the certificate reads the unscaled rows)."""

    def __init__(self, curves: np.ndarray, rhs: np.ndarray):
        self.D, self.b = curves, rhs  # (J, rows), (rows,)
        k = rhs.size
        self.rows = set(range(0, k - 1, 40)) | {k - 1}
        self.probe = np.unique(np.append(np.arange(0, k, 8), k - 1))
        with np.errstate(divide="ignore", invalid="ignore"):  # each column alone beside nothing: its largest weight
            ratio = np.where(curves[:, self.probe] > 0, rhs[self.probe] / curves[:, self.probe], np.inf)
        self.single = np.minimum(np.min(ratio, axis=1), 1.0)  # on every 8th row: a start, certified when used

    def solve(self, T: np.ndarray) -> np.ndarray:
        """Certified weights (every row holds in floating point with the margins); the null column is column 0. The
        program reads the _MAX_COLUMNS columns whose pair with nothing gains most (dropping columns only lowers it)."""
        gain = (T - T[0]) * self.single
        keep = np.flatnonzero((gain > 1e-15) & (self.single > 1e-10))
        keep = keep[keep != 0]
        keep = np.concatenate([[0], keep[np.argsort(-gain[keep])][:_MAX_COLUMNS]])
        if keep.size == 1:
            return _unit(T.size, 0)
        D = self.D[keep]
        zero = self.b <= 0
        fixed = np.any(D[:, zero] > 0, axis=1)  # a column breaking a row with b = 0 keeps weight 0
        bounds = [(0, 0) if f else (0, None) for f in fixed]
        w = None
        for _ in range(40):
            rows = np.array(sorted(r for r in self.rows if not zero[r]))
            A = D[:, rows] / self.b[rows]
            A[A < 1e-12] = 0.0  # (the certificate reads the exact rows)
            res = optimize.linprog(-T[keep], A_ub=A.T, b_ub=np.ones(rows.size), A_eq=np.ones((1, keep.size)),
                                   b_eq=[1.0], bounds=bounds, method="highs",
                                   options={"presolve": False})  # (HiGHS's presolve costs 50x on these)
            if res.status != 0:
                break
            w = np.maximum(res.x, 0.0)
            on = np.flatnonzero(w > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                viol = np.where(zero, 0.0, (D[on].T @ w[on]) / self.b - 1.0)
            bad = np.setdiff1d(np.flatnonzero(viol > _ROW_TOL), rows)  # (a row in the program holds to HiGHS's tolerance)
            if bad.size == 0:
                break
            self.rows.update(int(r) for r in bad[np.argsort(-viol[bad])][:60])
        if w is None:
            return _unit(T.size, 0)
        full = np.zeros(T.size)
        full[keep] = w
        return certify(full, self.D, self.b)


def _unit(size: int, j: int) -> np.ndarray:
    w = np.zeros(size)
    w[j] = 1.0
    return w


def certify(w: np.ndarray, D: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Weights that meet every row in floating point: w's non-null part (columns 1..) scaled down until D^T w <= b,
    the rest moved to the null column 0 (whose curve is 0)."""
    w = np.maximum(np.asarray(w, dtype=float), 0.0)
    w[0] = 0.0
    total = float(np.sum(w))
    if total > 1.0:
        w /= total
    on = np.flatnonzero(w)
    load = D[on].T @ w[on]
    over = load > b
    if np.any(over):
        with np.errstate(divide="ignore", invalid="ignore"):
            f = float(np.min(np.where(load[over] > 0, b[over] / load[over], 1.0)))
        w *= max(f, 0.0) * (1.0 - 1e-12)
    w[0] = max(0.0, 1.0 - float(np.sum(w[1:])))
    on = np.flatnonzero(w)
    if not np.all(D[on].T @ w[on] <= b):  # the scaled weights did not hold (round-off): the release of nothing
        return _unit(w.size, 0)
    return w


# ---- the floor ------------------------------------------------------------------------------------------------------
def mixture_floor(profile: PrivacyProfile, runs, confidences) -> MixtureFloor:
    """The best certified mixture's floor for each confidence: ``runs`` is one ``distributions`` per trial (the count's
    law the mean of the trials', one set of weights for all: ``floor_mixture_counts``), or a single one in a list."""
    return _solve(profile, runs, confidences)[0]


def mixture_mechanism(profile: PrivacyProfile, distributions, confidence: float):
    """What ``mechanism.worst_case`` plays: (the floor at ``confidence``, the priors' grouping, and per component with
    positive weight (weight, per group its member (kind, params, classes)))."""
    found, dists, cols, weights = _solve(profile, [distributions], [confidence])
    w = weights[0]
    comps = []
    for j in np.flatnonzero(w > 0):
        col = cols[j]
        per = col.per_group or [(col.kind, col.params)] * len(col.m)
        comps.append((float(w[j]), [(kind, dict(params), int(m) + 1) for (kind, params), m in zip(per, col.m)]))
    return found, dists[0], comps


def _solve(profile: PrivacyProfile, runs, confidences):
    members = _single._members(profile)
    levels = _single._confidences(confidences)
    dists = [_single._true_priors(d) for d in runs]
    if len({d.n for d in dists}) != 1:
        raise ValueError(f"runs must have the same number of targets in every trial, got {sorted({d.n for d in dists})}; "
                         "pass one trial's priors per entry.")
    shapes, spans = [], []
    for d in dists:
        spans.append((len(shapes), len(shapes) + len(d.shapes)))
        shapes.extend(d.shapes)
    cols = _columns(members, shapes)
    tails = _Tails(np.array([c.success for c in cols]), dists, spans)
    program = _Program(np.array([c.curve for c in cols]), np.append(members.low, _delta_inf(members.profile)))
    counts, mixtures, weights = [], [], []
    for c in levels:
        best_v, best_w = _search(program, tails, 1.0 - c)
        counts.append(best_v)
        weights.append(best_w)
        mixtures.append(_describe(cols, best_w, tails, best_v, c, dists, spans))
    return MixtureFloor([float(c) for c in levels], counts, mixtures), dists, cols, weights


def _search(program: _Program, tails: _Tails, level: float) -> tuple[int, np.ndarray]:
    """The largest v with certified weights giving sum_j w_j low_j(v) > level, and those weights."""
    single, n = program.single, tails.n

    def pair(v):  # each column alone beside nothing, at its largest weight
        vals = single * tails(v) + (1.0 - single) * tails(v)[0]
        j = int(np.argmax(vals))
        w = _unit(single.size, 0)
        if j:
            w[j], w[0] = single[j], 1.0 - single[j]
            w = certify(w, program.D, program.b)
        return w, float(w @ tails(v))

    good, bad = 0, n + 1  # bisect on the pairs (their value falls with v), then certify
    while bad - good > 1:
        mid = (good + bad) // 2
        if pair(mid)[1] > level:
            good = mid
        else:
            bad = mid
    w, value = pair(good)
    while good > 0 and value <= level:  # certification cost the pair its count
        good -= 1
        w, value = pair(good)
    # then the linear program: one step above the pairs' count, doubling the step while it holds, then bisecting
    step, bad = 1, n + 1
    while good + step < bad:
        v = good + step
        cand = program.solve(tails(v))
        if float(cand @ tails(v)) > level:
            good, w, step = v, cand, 2 * step
        else:
            bad, step = v, 1
    return good, w


#: A component's record lists its classes and successes per prior up to this many priors (beyond, their extremes).
_RECORD_GROUPS = 64


def _describe(cols, w, tails, v, c, dists, spans) -> dict:
    comps = []
    for j in np.flatnonzero(w > 0):
        col = cols[j]
        comp = {"kind": col.kind, **col.params, "fewest_classes": int(np.min(col.m)) + 1, "weight": float(w[j]),
                "count": tails.quantile(int(j), c), "tail_at_floor": float(tails(v)[j])}
        if spans[-1][1] <= _RECORD_GROUPS:
            comp.update({"classes": [[int(m) + 1 for m in col.m[a:b]] for a, b in spans],
                         "targets": [[int(x) for x in d.counts] for d in dists],
                         "success": [[float(s) for s in col.success[a:b]] for a, b in spans]})
        else:
            comp.update({"most_classes": int(np.max(col.m)) + 1, "success_range": [float(np.min(col.success)),
                                                                                 float(np.max(col.success))]})
        comps.append(comp)
    comps.sort(key=lambda x: -x["weight"])
    return {"confidence": float(c), "count": int(v), "tail": float(w @ tails(v)), "components": comps}
