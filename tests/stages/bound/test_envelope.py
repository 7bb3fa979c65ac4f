"""Theorem 3's one-target relaxation solved in closed form (stages/bound/envelope.py; THEORY.md section 8).

Against an independent solve of the same relaxation, RP(q) with every line of the profile's grid as rows of one
LP (HiGHS at tight tolerances): the closed-form value is never below a feasible point of that LP (its solution
made exactly feasible: a rigorous lower bound on RP) and never above the LP's own certified dual bound by more
than 1e-11, on every case of a grid of profiles (mu-GDP, (eps, delta)-DP, eps-DP), priors (Zipf over 10 and 100
values, binary, ternary, uniform) and thresholds, for one exact guess (rows <= 1) and for success sets of at most 3
values (Lemma 4', rows <= 3). The dual bound D(nu) is checked to bound RP for arbitrary
multipliers, and the envelope to be the maximum of the lines.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, sparse

from stages.bound import ApproxDP, GaussianDP, PureDP
from stages.bound import envelope as E
from stages.bound import whole_prior as W


def zipf(k: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1) ** s
    return w / w.sum()


PROFILES = [GaussianDP(0.268), GaussianDP(1.0), GaussianDP(2.0), ApproxDP(1.0, 1e-5), ApproxDP(1.0, 0.01), PureDP(1.0)]
PRIORS = {"zipf10-1.0": zipf(10, 1.0), "zipf10-1.84": zipf(10, 1.84), "zipf100-1.3": zipf(100, 1.3),
          "binary": np.array([0.7, 0.3]), "ternary": np.array([0.5, 0.3, 0.2]), "uniform4": np.full(4, 0.25)}
THRESHOLDS = [0.0, 0.1, 0.3, 0.6, 0.8, 0.9, 0.97, 0.99, 0.999]


def grid_lines(curve: W.ExcessCurve) -> tuple[np.ndarray, np.ndarray]:
    n = len(curve._eps)
    s, c = curve._all_s[: 2 * n], curve._all_c[: 2 * n]
    ok = np.isfinite(s) & np.isfinite(c)
    return s[ok], c[ok]


def lp_with_every_line(curve: W.ExcessCurve, q: float) -> tuple[float, float]:
    """(a rigorous lower bound, the certified upper bound) on RP(q) (RP_k(q) for a curve of set_size k) with every
    grid line as a row of one LP."""
    pi, m = curve.shape.probs, curve.shape.mult.astype(float)
    k = curve.set_size
    G = pi.size
    s, c = grid_lines(curve)
    L = s.size
    cost = -np.concatenate([m * (1 - q / k) * pi, -m * (q / k) * (1 - pi)])
    rows = np.hstack([np.eye(G), np.tile(m, (G, 1)) - np.eye(G)])
    # row g * L + l: s_l P_g - y_g <= c_l (sparse: two entries a row)
    line_rows = np.repeat(np.arange(G * L), 2)
    line_cols = np.column_stack([np.repeat(np.arange(G), L), G + np.repeat(np.arange(G), L)]).ravel()
    line_vals = np.column_stack([np.tile(s, G), -np.ones(G * L)]).ravel()
    lines = sparse.csr_matrix((line_vals, (line_rows, line_cols)), shape=(G * L, 2 * G))
    A = sparse.vstack([sparse.csr_matrix(rows), lines], format="csr")
    b = np.concatenate([np.full(G, float(k)), np.tile(c, G)])
    # presolve off: it only slows this LP down (both bounds below hold whatever point the solver returns)
    res = optimize.linprog(cost, A_ub=A, b_ub=b, bounds=(0, 1), method="highs",
                           options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10,
                                    "presolve": False})
    assert res.status == 0
    lam = np.maximum(0.0, -res.ineqlin.marginals)
    upper = float(lam @ b - np.sum(np.minimum(0.0, cost + A.T @ lam)))
    # the solution made exactly feasible: y up to the envelope, then P down to the rows, then y again
    envelope = lambda P: np.maximum(0.0, np.max(s[None, :] * P[:, None] - c[None, :], axis=1))
    P, y = np.clip(res.x[:G], 0.0, 1.0), np.clip(res.x[G:], 0.0, 1.0)
    y = np.maximum(y, envelope(P))
    P = np.maximum(0.0, np.minimum(P, k + y - m @ y))
    y = np.minimum(1.0, np.maximum(y, envelope(P)))  # the envelope is <= 1 - delta on [0, 1] (up to rounding)
    assert np.all(P - y + m @ y <= k + 1e-15) and np.all(y <= 1.0)
    lower = float((m * (1 - q / k) * pi) @ P - (m * (q / k) * (1 - pi)) @ y)
    return lower, upper


@pytest.mark.parametrize("profile", PROFILES, ids=repr)
@pytest.mark.parametrize("name", sorted(PRIORS))
@pytest.mark.parametrize("set_size", [1, 3])
def test_closed_form_equals_the_lp_over_every_line_and_is_never_below_it(profile, name, set_size):
    shape = W.prior_shape(PRIORS[name])
    curve = W.ExcessCurve(profile, shape, set_size)
    for q in THRESHOLDS:
        a, b, m = curve._coefficients(q)
        value, nu = E.solve(curve._hull, a, b, m, set_size)
        lower, upper = lp_with_every_line(curve, q)
        assert value >= lower, (q, value, lower)
        assert value <= upper + 1e-11, (q, value, upper)
        assert np.all(nu >= 0.0)


@pytest.mark.parametrize("profile", [GaussianDP(1.0), ApproxDP(1.0, 1e-3), PureDP(0.7)], ids=repr)
def test_the_dual_bound_holds_for_any_multipliers(profile):
    rng = np.random.default_rng(0)
    shape = W.prior_shape(zipf(10, 1.3))
    curve = W.ExcessCurve(profile, shape)
    pi, m = shape.probs, shape.mult.astype(float)
    for q in (0.0, 0.4, 0.85):
        lower, _ = lp_with_every_line(curve, q)
        nu = rng.exponential(0.05, size=(200, pi.size)) * (rng.random((200, pi.size)) < 0.5)
        values = E.dual_bound(curve._hull, (1 - q) * pi, q * (1 - pi), m, nu)
        assert np.all(values >= lower)


@pytest.mark.parametrize("profile", PROFILES, ids=repr)
def test_the_hull_is_the_maximum_of_the_lines_on_the_unit_interval(profile):
    curve = W.ExcessCurve(profile, W.prior_shape([0.5, 0.5]))
    s, c = grid_lines(curve)
    hull = curve._hull
    P = np.concatenate([np.linspace(0, 1, 2001), np.logspace(-12, 0, 200), 1 - np.logspace(-12, 0, 200)])
    every = np.maximum(0.0, np.max(s[None, :] * P[:, None] - c[None, :], axis=1))
    kept = np.max(hull.s[None, :] * P[:, None] - hull.c[None, :], axis=1)
    assert np.all(kept <= every + 1e-15)  # a subset of the lines (and y >= 0)
    assert np.max(every - kept) <= 1e-9  # and the lines that matter on [0, 1]
    assert np.all(np.diff(hull.s) > 0) and hull.s[0] >= 0.0
