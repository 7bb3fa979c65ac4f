"""The one-target relaxation of Theorem 3 solved in closed form over every line of the profile's grid.

``whole_prior.ExcessCurve`` bounds phi(q) = sup over mechanisms of E[(rho - q)_+] by the relaxation
(THEORY.md, section 8)

    RP(q) = max  sum_g m_g [a_g P_g - b_g y_g],   a_g = (1 - q) pi_g,  b_g = q (1 - pi_g),
            s.t. y_g >= g(P_g),   P_g - y_g + Y <= 1,   Y = sum_h m_h y_h,   0 <= P_g <= 1,

where g(P) = max(0, max_l s_l P - c_l) is the upper envelope of the profile's trade-off lines. Cutting planes
through a general LP solver cost a dozen solver calls per threshold; here the structure is used instead:

* dualising Y = sum_h m_h y_h with one multiplier lambda and writing u = 1 - Y (rhs - Y for set-valued success,
  whose rows read <= k: THEORY.md, Lemma 4'), every group solves
  max_P a_g P - (b_g + lambda) max(g(P), P - u) on its own, in closed form (``_group_values``); the
  Lagrangian is concave and piecewise linear in u with breakpoints at the values of P - g(P) at the
  envelope's kinks, so its maximum over u is a maximum over those points, and lambda is found by a
  one-dimensional cutting-plane (Kelley) search on the convex function G(lambda) (``solve``);
* the value returned is not G(lambda) but the Lagrangian dual bound D(nu) of the rows (``dual_bound``) at
  row multipliers read from the solution (each group's shadow price of u). D(nu) is evaluated with the
  grid's lines themselves, as a convex combination of two adjacent lines of the envelope for each group,
  so it is an upper bound on RP(q) for every nu >= 0 whatever the rounding of the envelope's breakpoints:
  the breakpoints only steer the search, the certificate never reads them.

Every line used is one of the grid's (or y >= 0), so any subset of them gives a valid relaxation, and
D(nu) >= RP(q) by weak duality for any nu >= 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Hull", "hull_of", "dual_bound", "solve"]

#: Kelley iterations on lambda, and the relative gap at which they stop.
_KELLEY_ITERATIONS = 60
_KELLEY_RTOL = 1e-12
#: Envelope pieces shorter than this (in P) are dropped with their line (lines meeting in one point, up to rounding).
_MIN_PIECE = 1e-15
#: Candidate values of u closer than this are merged (the slopes between them would be rounding noise).
_MIN_GAP_U = 1e-12
#: Added to every dual value returned (the rounding of a dozen floating-point operations per group).
_SLACK = 1e-15


@dataclass(frozen=True, eq=False)
class Hull:
    """The upper envelope of the lines y = s P - c (and y = 0) on [0, 1].

    ``s``, ``c``: the lines maximal somewhere in [0, 1], slopes increasing (s[0] = 0, c[0] = 0: y >= 0);
    ``P``: 0, their consecutive crossings, 1; ``g``: the envelope there; ``u``: the candidate values of
    u = 1 - Y (0, 1 and P - g(P) at every kink); ``p_low``, ``p_high``: the smallest and largest P with
    P - g(P) = u at each candidate (where P - g(P) > u, the row P - y <= u binds)."""

    s: np.ndarray
    c: np.ndarray
    P: np.ndarray
    g: np.ndarray
    u: np.ndarray
    p_low: np.ndarray
    p_high: np.ndarray


def hull_of(s: np.ndarray, c: np.ndarray) -> Hull:
    """The Hull of the lines y = s_l P - c_l (finite s, c) together with y = 0."""
    s = np.concatenate([[0.0], np.asarray(s, dtype=float)])
    c = np.concatenate([[0.0], np.asarray(c, dtype=float)])
    ok = np.isfinite(s) & np.isfinite(c)
    s, c = s[ok], c[ok]
    order = np.lexsort((c, s))  # by slope; among equal slopes the highest line (smallest c) first
    s, c = s[order], c[order]
    first = np.concatenate([[True], np.diff(s) > 0])
    s, c = s[first], c[first]
    hull: list[int] = []
    for j in range(len(s)):  # upper envelope of y = s P - c over the whole line, slopes increasing
        while len(hull) >= 2:
            i1, i2 = hull[-2], hull[-1]
            if (c[j] - c[i1]) * (s[i2] - s[i1]) <= (c[i2] - c[i1]) * (s[j] - s[i1]):
                hull.pop()  # j overtakes i1 no later than i2 does: i2 is never the maximum
            else:
                break
        hull.append(j)
    s, c = s[hull], c[hull]
    cross = (c[1:] - c[:-1]) / (s[1:] - s[:-1])  # line j is the maximum on [cross[j - 1], cross[j]]
    lo = np.concatenate([[-math.inf], cross])
    hi = np.concatenate([cross, [math.inf]])
    # the lines that are the maximum on a piece of [0, 1] longer than _MIN_PIECE (many lines of an (eps, delta)
    # profile meet in one point; dropping a line only loosens the relaxation, here by < slope * _MIN_PIECE)
    keep = (np.minimum(hi, 1.0) - np.maximum(lo, 0.0) > _MIN_PIECE) | ((hi > 0.0) & (lo <= 0.0))
    s, c = s[keep], c[keep]
    while s.size > 1:
        cross = (c[1:] - c[:-1]) / (s[1:] - s[:-1])
        short = np.flatnonzero(np.diff(cross) <= _MIN_PIECE) + 1  # a line squeezed between its neighbours
        if short.size == 0:
            break
        s, c = np.delete(s, short[:1]), np.delete(c, short[:1])
    cross = (c[1:] - c[:-1]) / (s[1:] - s[:-1])
    P = np.concatenate([[0.0], np.clip(cross, 0.0, 1.0), [1.0]])
    g = np.clip(np.max(s[None, :] * P[:, None] - c[None, :], axis=1), 0.0, 1.0)
    d = P - g  # concave in P: rises while the slope is below 1, then falls
    top = int(np.argmax(d))
    u = np.unique(np.clip(np.concatenate([[0.0, 1.0], d]), 0.0, 1.0))
    u = u[np.concatenate([[True], np.diff(u) > _MIN_GAP_U])]  # breakpoints that coincide up to rounding: one
    rising_d, rising_P = np.maximum.accumulate(d[: top + 1]), P[: top + 1]
    falling_d, falling_P = d[top:][::-1], P[top:][::-1]
    falling_d = np.maximum.accumulate(falling_d)
    p_low = np.interp(u, rising_d, rising_P)
    p_high = np.interp(u, falling_d, falling_P)
    return Hull(s=s, c=c, P=P, g=g, u=u, p_low=p_low, p_high=p_high)


def _group_values(hull: Hull, a: np.ndarray, b: np.ndarray, lam: float):
    """For every group g and candidate u: the value f and the y of max_P a_g P - (b_g + lam) max(g(P), P - u),
    both (G, U). Between consecutive candidates f is linear in u."""
    beta = b + lam
    with np.errstate(divide="ignore"):
        r = np.where(beta > 0.0, a / np.where(beta > 0.0, beta, 1.0), math.inf)
    # the unconstrained maximiser of a P - beta g(P): the kink where the envelope's slope passes r
    k = np.searchsorted(hull.s, r, side="left")  # [P_j, P_j+1] runs along line j: the first j with s_j >= r
    P_free, g_free = hull.P[k], hull.g[k]
    f_free = a * P_free - beta * g_free
    u = hull.u[None, :]
    binds = (P_free - g_free)[:, None] > u  # the row P - y <= u cuts the free maximiser off
    # then the maximiser is where P - u meets g: its left end when r < 1, its right end when r >= 1
    P_row = np.where((r < 1.0)[:, None], hull.p_low[None, :], hull.p_high[None, :])
    f = np.where(binds, a[:, None] * P_row - beta[:, None] * (P_row - u), f_free[:, None])
    y = np.where(binds, P_row - u, g_free[:, None])
    return f, y


def _lagrangian(hull: Hull, a, b, m, lam: float, rhs: float):
    """G(lam) = max over u of lam (rhs - u) + sum_g m_g f_g(u) (approximately: the breakpoints' rounding), its
    slope in lam, the index of the u attaining it and the groups' values."""
    f, y = _group_values(hull, a, b, lam)
    H = lam * (rhs - hull.u) + m @ f
    j = int(np.argmax(H))
    return float(H[j]), float((rhs - hull.u[j]) - m @ y[:, j]), j, f


def dual_bound(hull: Hull, a: np.ndarray, b: np.ndarray, m: np.ndarray, nu: np.ndarray, rhs: float = 1.0) -> np.ndarray:
    """D(nu) = rhs Lambda + sum_g m_g psi(a_g - nu_g, b_g + Lambda - nu_g), Lambda = sum_g m_g nu_g, for each row of
    nu (J, G) >= 0: an upper bound on the relaxation whose rows read P_g - y_g + Y <= rhs (weak duality; THEORY.md
    section 8; rhs = 1 for one exact guess, the largest success set's size for set-valued success).

    psi(alpha, beta) = max over P in [0, 1], y in [0, 1] with y >= every line of alpha P - beta y is bounded, for
    beta > 0, through the convex combination of the two envelope lines whose slopes enclose r = alpha / beta
    (weights making the combined slope r): y >= s_theta P - c_theta gives alpha P - beta y <= beta c_theta +
    max(0, alpha - beta s_theta) on [0, 1], valid for any two lines and weights, tight for these; for beta <= 0,
    psi <= max(0, alpha) + max(0, -beta)."""
    nu = np.atleast_2d(np.maximum(np.asarray(nu, dtype=float), 0.0))
    Lam = nu @ m
    alpha = a[None, :] - nu
    beta = b[None, :] + Lam[:, None] - nu
    pos = beta > 0.0
    r = np.where(pos, alpha / np.where(pos, beta, 1.0), 0.0)
    s, c = hull.s, hull.c
    j = np.clip(np.searchsorted(s, r, side="right") - 1, 0, s.size - 1)  # s[j] <= r < s[j + 1]
    j2 = np.minimum(j + 1, s.size - 1)
    span = s[j2] - s[j]
    theta = np.where(span > 0.0, np.clip((s[j2] - r) / np.where(span > 0.0, span, 1.0), 0.0, 1.0), 1.0)
    s_theta = theta * s[j] + (1.0 - theta) * s[j2]
    c_theta = theta * c[j] + (1.0 - theta) * c[j2]
    psi = np.where(pos, beta * c_theta + np.maximum(0.0, alpha - beta * s_theta),
                   np.maximum(0.0, alpha) + np.maximum(0.0, -beta))
    return rhs * Lam + psi @ m + _SLACK


def solve(hull: Hull, a: np.ndarray, b: np.ndarray, m: np.ndarray, rhs: float = 1.0) -> tuple[float, np.ndarray]:
    """(an upper bound on the relaxation max sum_g m_g (a_g P_g - b_g y_g) s.t. y_g >= g(P_g),
    P_g - y_g + sum_h m_h y_h <= rhs, 0 <= P_g <= 1; the row multipliers nu (G,) certifying it): Kelley's search on
    lambda, then the best of a few nu read from the groups' slopes in u at the u found (``dual_bound``). RP(q) is
    a = (1 - q / k) pi, b = (q / k) (1 - pi), rhs = k, with k = 1 for one exact guess."""
    lo = (0.0,) + _lagrangian(hull, a, b, m, 0.0, rhs)
    best = lo
    if lo[2] < 0.0:
        lam = max(float(np.max(a)), 1e-12)
        hi = (lam,) + _lagrangian(hull, a, b, m, lam, rhs)
        for _ in range(200):
            if hi[2] >= 0.0:
                break
            lam *= 2.0
            hi = (lam,) + _lagrangian(hull, a, b, m, lam, rhs)
        best = min(lo, hi, key=lambda x: x[1])
        for _ in range(_KELLEY_ITERATIONS):
            if hi[2] <= lo[2] or best[2] == 0.0:
                break
            # the tangent lines of the convex G at lo and hi cross at lam, where their value bounds min G below
            lam = (hi[1] - lo[1] + lo[2] * lo[0] - hi[2] * hi[0]) / (lo[2] - hi[2])
            lam = min(max(lam, lo[0]), hi[0])
            floor = lo[1] + lo[2] * (lam - lo[0])
            new = (lam,) + _lagrangian(hull, a, b, m, lam, rhs)
            if new[1] < best[1]:
                best = new
            if best[1] - floor <= _KELLEY_RTOL * max(abs(best[1]), 1e-300) or new[0] in (lo[0], hi[0]):
                break
            if new[2] < 0.0:
                lo = new
            else:
                hi = new
    lam, _, _, j, f = best
    # each group's shadow price of u: its value's slope in u left and right of the u found
    u = hull.u
    # (below u = 0 the row binds for every P, and a group's value is (b + lam) u + max(0, a - b - lam))
    left = (f[:, j] - f[:, j - 1]) / (u[j] - u[j - 1]) if j > 0 else b + lam
    right = (f[:, j + 1] - f[:, j]) / (u[j + 1] - u[j]) if j + 1 < u.size else np.zeros(f.shape[0])
    left, right = np.maximum(left, 0.0), np.maximum(right, 0.0)
    low, high = float(m @ right), float(m @ left)
    theta = min(1.0, max(0.0, (lam - low) / (high - low))) if high > low else 0.0
    nus = np.stack([right + theta * (left - right), right, left, np.zeros_like(left)])
    values = dual_bound(hull, a, b, m, nus, rhs)
    i = int(np.argmin(values))
    return float(values[i]), nus[i]
