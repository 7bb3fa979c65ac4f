"""Tests of the exact worst-case oracle (tests/stages/bound/lp_oracle.py, issue 13 item 2) on its own.

The oracle is a linear program over all mechanisms meeting the hockey-stick (eps, delta)-DP
constraints between every pair of replace-one neighbours; these tests check it against

* the issue's two explicit (0, 0.1)-DP mechanisms (n = 2, 3), verified in exact fractions;
* the one-target closed form beta + (1 - beta) delta (one exact guess; tight);
* Theorem 3.1 for pure eps-DP (Poisson-binomial tail, brute force), tight for uniform binary secrets
  (randomized response);
* Phi(mu/2) for mu-GDP at n = 1 (the eps = 0 constraint of the profile is exactly the TV bound);
* the certified GDP mechanisms of the issue (the relaxation must be above them);
* its own output: every LP mechanism is re-checked in exact arithmetic (DP and success probability).
"""
from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import lp_oracle as L

F = Fraction
UNIFORM2 = [0.5, 0.5]


# --------------------------------------------------------------------------------------------
# The issue's counterexamples, in exact fractions
# --------------------------------------------------------------------------------------------
def issue_mechanism_n2() -> dict:
    t = F(1, 10)
    return {
        (0, 0): {(0, 0): t, (0, 1): 8 * t, (1, 0): t},
        (0, 1): {(0, 0): t, (0, 1): 8 * t, (1, 1): t},
        (1, 0): {(0, 0): t, (0, 1): 7 * t, (1, 0): t, (1, 1): t},
        (1, 1): {(0, 1): 8 * t, (1, 0): t, (1, 1): t},
    }


def issue_mechanism_n3() -> dict:
    t = F(1, 10)
    allz = list(itertools.product((0, 1), repeat=3))
    M = {}
    for x in allz:
        comp = tuple(1 - a for a in x)
        if x == (0, 0, 0):  # 1/10 on the 7 vectors other than (1,1,1), 3/10 on (1,1,1)
            M[x] = {z: (3 * t if z == (1, 1, 1) else t) for z in allz}
        else:  # 1/10 on each vector except its complement, 2/5 on (1,1,1)
            M[x] = {z: (F(2, 5) if z == (1, 1, 1) else t) for z in allz if z != comp}
    return M


def tv(P: dict, Q: dict) -> Fraction:
    return sum((abs(P.get(o, 0) - Q.get(o, 0)) for o in set(P) | set(Q)), F(0)) / 2


@pytest.mark.parametrize("M, value", [(issue_mechanism_n2(), F(33, 40)), (issue_mechanism_n3(), F(77, 80))],
                         ids=["n2", "n3"])
def test_issue_mechanisms_exact(M, value):
    for row in M.values():
        assert sum(row.values()) == 1 and all(p >= 0 for p in row.values())
    neighbours = [(x, y) for x, y in itertools.permutations(M, 2) if sum(a != b for a, b in zip(x, y)) == 1]
    assert neighbours and max(tv(M[x], M[y]) for x, y in neighbours) == F(1, 10)
    assert L.check_mechanism(M, [(0, F(1, 10))])
    assert L.dp_violation(M, [(0, F(1, 10))]) == 0  # TV exactly 1/10 for some pair
    assert not L.check_mechanism(M, [(0, F(99, 1000))])
    assert L.success_probability(M, [F(1, 2), F(1, 2)], 1) == value
    # the LP optimum is at least (in fact exactly) the mechanism's success
    n = len(next(iter(M)))
    opt, _ = L.worst_case_success(n, 2, UNIFORM2, 1, [(0.0, 0.1)])
    assert opt >= float(value) - 1e-9
    assert opt == pytest.approx(float(value), abs=1e-7)


# --------------------------------------------------------------------------------------------
# The oracle's own output, re-checked exactly
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, d, prior, v, cons, succ", [
    (2, 2, UNIFORM2, 1, [(0.0, 0.1)], "exact"),
    (3, 2, [[0.5, 0.5], [0.7, 0.3], [0.9, 0.1]], 2, [(1.0, 0.01)], "exact"),
    (2, 3, [0.5, 0.3, 0.2], 1, [(1.0, 0.01), (0.0, 0.3)], "exact"),
    (2, 3, [1 / 3] * 3, 2, [(0.5, 0.05)], ("sets", L.subsets(3, 2))),
    (2, 2, UNIFORM2, 1, L.gdp_constraints(1.0, 10), "exact"),
    (3, 2, UNIFORM2, 2, [(1.0, 0.0)], "exact"),
])
def test_lp_mechanism_is_feasible_and_attains_value(n, d, prior, v, cons, succ):
    value, mech = L.worst_case_success(n, d, prior, v, cons, succ)
    assert mech.matrix.shape == (d ** n, len(mech.outputs))
    assert np.allclose(mech.matrix.sum(axis=1), 1.0) and (mech.matrix >= 0).all()
    # exact re-check of the float mechanism: only the solver's slack may show
    assert L.dp_violation(mech, cons) <= 1e-8
    pr = [[F(repr(q)) for q in p] for p in (prior if isinstance(prior[0], list) else [prior] * n)]
    pr = [[q / sum(p) for q in p] for p in pr]  # 1/3 as a float, normalised to sum to 1 exactly
    assert float(L.success_probability(mech, pr, v)) == pytest.approx(value, abs=1e-7)


def test_trivial_constraints():
    # no information (0, 0): the best fixed guess, i.e. Pr[sum Bern(p_i) >= v]
    pri = [[0.7, 0.3], [0.6, 0.4], [0.5, 0.5]]
    for v in (1, 2, 3):
        val, _ = L.worst_case_success(3, 2, pri, v, [(0.0, 0.0)])
        assert val == pytest.approx(L.pure_dp_tail([0.7, 0.6, 0.5], v), abs=1e-9)
    # delta = 1 and no constraints: certainty
    assert L.worst_case_success(2, 3, [0.5, 0.3, 0.2], 2, [(0.0, 1.0)])[0] == pytest.approx(1.0)
    assert L.worst_case_success(2, 2, UNIFORM2, 2, [])[0] == pytest.approx(1.0)
    # more constraints can only lower the optimum
    a = L.worst_case_success(2, 2, [0.7, 0.3], 1, [(1.0, 0.05)])[0]
    b = L.worst_case_success(2, 2, [0.7, 0.3], 1, [(1.0, 0.05), (0.0, 0.2)])[0]
    assert b <= a + 1e-9


# --------------------------------------------------------------------------------------------
# n = 1, one exact guess: beta + (1 - beta) delta (tight for uniform priors and at eps = 0)
# --------------------------------------------------------------------------------------------
ONE_TARGET = [
    (0.0, 0.1, [0.5, 0.5]), (1.0, 0.1, [0.5, 0.5]), (1.0, 1e-3, [0.7, 0.3]), (2.0, 0.05, [0.9, 0.1]),
    (0.5, 0.2, [0.1, 0.9]), (1.0, 0.01, [1 / 3] * 3), (0.3, 0.1, [0.5, 0.3, 0.2]),
    (2.5, 0.02, [0.2, 0.2, 0.6]), (1.0, 0.0, [0.7, 0.3]), (4.0, 0.3, [0.5, 0.3, 0.2]),
    (0.0, 0.1, [0.7, 0.3]), (0.0, 0.05, [0.5, 0.3, 0.2]), (2.0, 0.05, [1 / 3] * 3), (3.0, 0.0, [0.5, 0.5]),
]


@pytest.mark.parametrize("eps, delta, prior", ONE_TARGET)
def test_one_target_closed_form(eps, delta, prior):
    """beta + (1 - beta) delta bounds the one-target optimum, and is attained for a uniform prior and
    at eps = 0. For a skewed prior and eps > 0 it is not: with two values the optimum is
    max(p + (1 - p) delta, (e^eps + delta) / (e^eps + 1)) (two vertices of the 2x2 LP: always guess
    the likelier value and spend delta on the other; or randomized response with delta on top)."""
    p = max(prior)
    b = math.exp(eps) * p / (math.exp(eps) * p + 1 - p)
    closed = b + (1 - b) * delta
    val, _ = L.worst_case_success(1, len(prior), prior, 1, [(eps, delta)])
    assert val <= closed + 1e-7
    if eps == 0 or len(set(prior)) == 1:
        assert val == pytest.approx(closed, abs=1e-7)
    if len(prior) == 2:
        e = math.exp(eps)
        assert val == pytest.approx(max(p + (1 - p) * delta, (e + delta) / (e + 1)), abs=1e-7)


# --------------------------------------------------------------------------------------------
# Pure eps-DP: Theorem 3.1
# --------------------------------------------------------------------------------------------
def poisson_binomial_tail(ps, v):
    """Independent brute force (not lp_oracle.pure_dp_tail): sum over subsets of size >= v."""
    n, tot = len(ps), 0.0
    for k in range(v, n + 1):
        for S in itertools.combinations(range(n), k):
            tot += math.prod(ps[i] if i in S else 1 - ps[i] for i in range(n))
    return tot


PURE_PRIORS = [
    [[0.5, 0.5]] * 3, [[0.7, 0.3]] * 3, [[0.5, 0.5], [0.8, 0.2], [0.95, 0.05]],
    [[0.5, 0.3, 0.2]] * 2, [[1 / 3] * 3, [0.6, 0.3, 0.1]],
]


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("priors", PURE_PRIORS, ids=lambda p: f"{len(p)}x{len(p[0])}")
def test_pure_dp_theorem_3_1(priors, eps):
    n, d = len(priors), len(priors[0])
    betas = [L.beta(eps, max(pr)) for pr in priors]
    for v in range(1, n + 1):
        val, _ = L.worst_case_success(n, d, priors, v, [(eps, 0.0)])
        tail = poisson_binomial_tail(betas, v)
        assert val <= tail + 1e-8
        if d == 2 and all(pr == [0.5, 0.5] for pr in priors):  # randomized response attains it
            assert val == pytest.approx(tail, abs=1e-8)


# --------------------------------------------------------------------------------------------
# GDP helper and its n = 1 sanity check
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gdp_delta(mu):
    Phi = stats.norm.cdf
    for eps in (0.0, 0.3, 1.0, 3.0):
        ref = Phi(-eps / mu + mu / 2) - math.exp(eps) * Phi(-eps / mu - mu / 2)
        assert L.gdp_delta(mu, eps) == pytest.approx(ref, rel=1e-9, abs=1e-15)
    assert L.gdp_delta(mu, 0.0) == pytest.approx(2 * Phi(mu / 2) - 1, rel=1e-12)
    cons = L.gdp_constraints(mu, 40)
    assert len(cons) == 40 and cons[0][0] == 0.0
    assert all(d1 >= d2 for (_, d1), (_, d2) in zip(cons, cons[1:]))  # delta decreasing in eps


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gdp_one_target(mu):
    target = stats.norm.cdf(mu / 2)
    val, _ = L.worst_case_success(1, 2, UNIFORM2, 1, L.gdp_constraints(mu, 40))
    assert val >= target - 1e-6
    assert val <= target + 1e-3


# --------------------------------------------------------------------------------------------
# Recorded optima
# --------------------------------------------------------------------------------------------
# (label, n, prior, v, constraints, known lower bound: an explicit mechanism, recorded LP value)
RECORDED = [
    ("n=2 (0,0.1) v=1", 2, UNIFORM2, 1, [(0.0, 0.1)], 33 / 40, 0.825),
    ("n=3 (0,0.1) v=1", 3, UNIFORM2, 1, [(0.0, 0.1)], 77 / 80, 0.9625),
    ("n=2 GDP(1) v=1", 2, UNIFORM2, 1, L.gdp_constraints(1.0, 30), 0.950226, 0.950238),
    ("n=2 GDP(0.5) v=1", 2, UNIFORM2, 1, L.gdp_constraints(0.5, 30), 0.867717, 0.867785),
    ("n=3 GDP(2) v=2", 3, UNIFORM2, 2, L.gdp_constraints(2.0, 30), 0.990799, 0.990852),
]


@pytest.mark.parametrize("label, n, prior, v, cons, lower, recorded", RECORDED, ids=[r[0] for r in RECORDED])
def test_recorded_optima(label, n, prior, v, cons, lower, recorded):
    val, _ = L.worst_case_success(n, 2, prior, v, cons)
    print(f"\n{label}: LP optimum {val:.6f} (mechanism {lower:.6f})")
    assert val >= lower - 1e-9
    assert val == pytest.approx(recorded, abs=2e-6)


# --------------------------------------------------------------------------------------------
# Set-valued success
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps, delta", [(0.0, 0.1), (1.0, 0.01), (1.0, 0.0), (0.5, 0.2)])
def test_set_valued_two_of_three(eps, delta):
    succ = ("sets", L.subsets(3, 2))
    p = 2 / 3
    v1, m1 = L.worst_case_success(1, 3, [1 / 3] * 3, 1, [(eps, delta)], succ)
    v2, _ = L.worst_case_success(2, 3, [1 / 3] * 3, 1, [(eps, delta)], succ)
    v22, _ = L.worst_case_success(2, 3, [1 / 3] * 3, 2, [(eps, delta)], succ)
    print(f"\nsets of 2 of 3, ({eps}, {delta}): n=1 {v1:.6f}, n=2 v=1 {v2:.6f}, n=2 v=2 {v22:.6f}")
    assert p - 1e-9 <= v1 <= 1 + 1e-9
    assert 1 - (1 - p) ** 2 - 1e-9 <= v2 <= 1 + 1e-9
    assert p * p - 1e-9 <= v22 <= v2 + 1e-9
    b = L.beta(eps, p)
    # pure DP: Theorem 3.1 holds for set-valued success too (and is attained at n = 1)
    if delta == 0:
        assert v1 == pytest.approx(b, abs=1e-8)
        assert v2 <= 1 - (1 - b) ** 2 + 1e-8
    # n = 1 is beta + delta (1 - sum pi^2) / (e^eps p + 1 - p): above beta + (1 - beta) delta
    w = (1 - 1 / 3) / (math.exp(eps) * p + 1 - p)
    assert v1 == pytest.approx(b + delta * w, abs=1e-7)
    assert all(all(isinstance(s, frozenset) and len(s) == 2 for s in o) for o in m1.outputs)


def test_windows_and_subsets_outputs():
    assert L.subsets(3, 2) == (frozenset({0, 1}), frozenset({0, 2}), frozenset({1, 2}))
    assert L.windows(3, 2) == (frozenset({0, 1}), frozenset({1, 2}))
    # windows are a subset of the attacker's options: never above subsets
    a = L.worst_case_success(2, 3, [0.5, 0.3, 0.2], 1, [(1.0, 0.01)], ("sets", L.windows(3, 2)))[0]
    b = L.worst_case_success(2, 3, [0.5, 0.3, 0.2], 1, [(1.0, 0.01)], ("sets", L.subsets(3, 2)))[0]
    assert a <= b + 1e-9
    # sets of size 1 are exact guesses
    c = L.worst_case_success(2, 3, [0.5, 0.3, 0.2], 1, [(1.0, 0.01)], ("sets", L.subsets(3, 1)))[0]
    e = L.worst_case_success(2, 3, [0.5, 0.3, 0.2], 1, [(1.0, 0.01)])[0]
    assert c == pytest.approx(e, abs=1e-9)


# --------------------------------------------------------------------------------------------
# The grid the library's bounds are compared with
# --------------------------------------------------------------------------------------------
def test_oracle_grid():
    grid = L.oracle_grid()
    assert 40 <= len(grid) <= 80
    assert len({c["name"] for c in grid}) == len(grid)
    assert {c["n"] for c in grid} == {1, 2, 3, 4}
    assert {c["domain"] for c in grid} == {2, 3}
    assert {c["kind"] for c in grid} == {"pure", "approx", "gdp"}
    assert {c["mu"] for c in grid if c["kind"] == "gdp"} == {0.5, 1.0, 2.0}
    assert any(c["success"] != "exact" for c in grid)
    assert any(len(set(c["priors"])) > 1 for c in grid)
    # every v in 1..n for each n and domain
    for n, d in {(c["n"], c["domain"]) for c in grid}:
        assert {c["v"] for c in grid if (c["n"], c["domain"]) == (n, d)} == set(range(1, n + 1))
    t0 = time.perf_counter()
    rows, vals = [], []
    for c in grid:
        val = L.oracle_value(c)
        vals.append(val)
        assert 0.0 <= val <= 1.0 + 1e-9
        # never below the best guess without any information (Pr[sum Bern(p_i) >= v])
        assert val >= L.pure_dp_tail(c["p"], c["v"]) - 1e-9
        if c["kind"] == "pure":
            betas = [L.beta(c["constraints"][0][0], p) for p in c["p"]]
            assert val <= L.pure_dp_tail(betas, c["v"]) + 1e-8
        rows.append(f"{val:.6f}  {c['name']}")
    elapsed = time.perf_counter() - t0
    print(f"\noracle grid: {len(grid)} cases in {elapsed:.1f} s\n" + "\n".join(rows))
    assert elapsed < 120
    # cached: a second pass is free and identical
    t1 = time.perf_counter()
    assert [L.oracle_value(c) for c in grid] == vals
    assert time.perf_counter() - t1 < 1.0
