"""Exact worst-case oracle for the many-target attack game (issue 13, item 2). Test support only.

Independent of the library's bound code: it imports nothing from `stages`, and takes plain numbers.

The game. n targets hold secrets X_1..X_n, independent, X_i ~ prior_i on the domain {0, .., d-1}
(any d >= 2; the priors may differ per target, and a zero-padded prior is a smaller domain). The LP has
d^n datasets and d^n outputs (guess vectors), so (d^n)^2 mechanism entries and, per (eps, delta) with
delta > 0, n (d - 1) d^n * d^n auxiliaries: n = 1 with d <= 10 and n = 2 with d <= 5 ((eps, delta): ~1 s
at d = 5, ~15 s at d = 6) or d <= 3 under a dozen GDP constraints are fast. A mechanism M maps the dataset x = (x_1..x_n) to a
random output. It is constrained, for every ordered pair (x, x') of replace-one neighbours (x and x'
differ in exactly one coordinate) and every (eps_k, delta_k) in `constraints`, by the exact
hockey-stick form of (eps, delta)-DP:

    sum_o max(0, M(o|x) - e^{eps_k} M(o|x')) <= delta_k.

By post-processing the output is WLOG the attacker's guess:

* exact success: the output is a guess vector z in X^n; target i succeeds iff z_i = x_i;
* set-valued success ("sets", allowed_sets): the output is a tuple (S_1..S_n) of allowed sets;
  target i succeeds iff x_i in S_i.

`worst_case_success` maximises Pr[at least v of the n targets succeed] over ALL such mechanisms: a
linear program in the variables M(o|x) (rows sum to 1) and, for each (pair, k, o) with delta_k > 0,
an auxiliary t >= 0, t >= M(o|x) - e^eps M(o|x'), sum_o t <= delta_k (for delta_k = 0 the constraint
is M(o|x) <= e^eps M(o|x') directly). It is solved with scipy's HiGHS. The value is exact up to the
solver's tolerances (about 1e-9 here); it is the true worst case for (eps, delta)-DP and, for a
profile delta(eps) (f-DP, GDP) imposed at finitely many eps, a relaxation that upper-bounds the true
worst case over mechanisms satisfying the whole profile.

Exact checks (`check_mechanism`, `dp_violation`, `success_probability`) work in Fractions. A float
probability or delta is read as the decimal it prints as (0.1 -> 1/10); e^eps for eps != 0 is replaced
by a rational *lower* bound, so a mechanism that passes `check_mechanism` is (eps, delta)-DP for the
true e^eps (a smaller multiplier only makes the hockey-stick divergence larger).

`oracle_grid()` lists ~60 small cases and `oracle_value(case)` solves one (cached), so that every
library bound can be compared with the exact worst case. `whole_prior_grid()` (issue 21) adds skewed,
Zipf and made-up conditional priors over up to 10 values at n = 1 and up to 5 at n = 2, for the
whole-prior theorem; at n = 1 `threshold_excess` / `threshold_value` give the exact one-target excess
phi(q) = max E[(rho - q)_+]. For mu-GDP, where the finite-eps LP is only an upper bound on the truth,
`gaussian_simplex_success` and `gaussian_binary_excess` give what certified mu-GDP mechanisms attain
(lower bounds on the truth). Tests in tests/stages/bound import it as
`import lp_oracle` (pytest puts the test file's folder on sys.path; tests/stages/bound has no __init__.py).
"""
from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
from scipy import optimize, sparse

__all__ = [
    "Mechanism", "worst_case_success", "check_mechanism", "dp_violation", "success_probability",
    "subsets", "windows", "gdp_delta", "gdp_eps_grid", "gdp_constraints", "beta",
    "pure_dp_tail", "oracle_grid", "oracle_value", "oracle_solve", "case_name",
    "threshold_excess", "zipf_prior", "gaussian_simplex_success", "gaussian_binary_excess",
    "WHOLE_PRIORS", "whole_prior_grid", "threshold_value",
]


# --------------------------------------------------------------------------------------------
# Mechanisms and helpers
# --------------------------------------------------------------------------------------------
class Mechanism(NamedTuple):
    """A mechanism as a row-stochastic matrix: matrix[i, j] = M(outputs[j] | datasets[i])."""

    datasets: list[tuple[int, ...]]
    outputs: list[tuple]  # guess vectors (exact) or tuples of frozensets (set-valued)
    matrix: np.ndarray

    def as_dict(self, cutoff: float = 0.0) -> dict[tuple, dict[tuple, float]]:
        """{x: {o: M(o|x)}} keeping entries > cutoff."""
        return {x: {o: float(p) for o, p in zip(self.outputs, row) if p > cutoff}
                for x, row in zip(self.datasets, self.matrix)}


def _domain_size(domain: int | Sequence[Any]) -> int:
    d = domain if isinstance(domain, int) else len(domain)
    if d < 2:
        raise ValueError("the domain needs at least two values")
    return d


def _priors(prior, n: int, d: int) -> list[np.ndarray]:
    """One prior for all targets (a length-d array) or one per target (n arrays)."""
    arr = np.asarray(prior, dtype=float)
    rows = [arr] * n if arr.ndim == 1 else list(arr)
    if len(rows) != n or any(r.shape != (d,) for r in rows):
        raise ValueError(f"prior must be a length-{d} array or {n} of them")
    for r in rows:
        if np.any(r < 0) or abs(r.sum() - 1.0) > 1e-9:
            raise ValueError(f"not a probability vector: {r}")
    return rows


def subsets(d: int, k: int) -> tuple[frozenset, ...]:
    """All k-element subsets of {0..d-1} (the attacker names any k values)."""
    return tuple(frozenset(c) for c in itertools.combinations(range(d), k))


def windows(d: int, w: int) -> tuple[frozenset, ...]:
    """Contiguous windows {a, .., a+w-1} in {0..d-1} (within-distance success on an ordered domain)."""
    return tuple(frozenset(range(a, a + w)) for a in range(d - w + 1))


def _outputs(n: int, d: int, success) -> list[tuple]:
    if success == "exact":
        return list(itertools.product(range(d), repeat=n))
    kind, allowed = success
    if kind != "sets":
        raise ValueError(f"unknown success notion {success!r}")
    allowed = [frozenset(s) for s in allowed]
    if not allowed or any(not s or not s <= set(range(d)) for s in allowed):
        raise ValueError(f"allowed sets must be non-empty subsets of the domain: {allowed}")
    return list(itertools.product(allowed, repeat=n))


def _hits(x: tuple, o: tuple) -> int:
    """Number of targets that succeed when the dataset is x and the output (guess) is o."""
    return sum((xi in oi) if isinstance(oi, (set, frozenset)) else (xi == oi) for xi, oi in zip(x, o))


def _neighbours(n: int, d: int) -> list[tuple[int, int]]:
    """Ordered replace-one neighbour pairs (index of x, index of x'), datasets in product order."""
    pairs = []
    for ix, x in enumerate(itertools.product(range(d), repeat=n)):
        for i in range(n):
            for a in range(d):
                if a != x[i]:
                    y = x[:i] + (a,) + x[i + 1:]
                    pairs.append((ix, sum(c * d ** (n - 1 - j) for j, c in enumerate(y))))
    return pairs


# --------------------------------------------------------------------------------------------
# The linear program
# --------------------------------------------------------------------------------------------
def worst_case_success(n: int, domain: int | Sequence[Any], prior, v: int,
                       constraints: Sequence[tuple[float, float]], success="exact",
                       ) -> tuple[float, Mechanism]:
    """max Pr[>= v of n targets succeed] over all mechanisms meeting every (eps, delta) in constraints.

    prior: one length-d probability vector, or n of them (per target). success: "exact" or
    ("sets", allowed_sets). Returns (optimal value, optimal mechanism). Constraints with delta >= 1
    are vacuous and dropped; eps = inf likewise.
    """
    d = _domain_size(domain)
    if not 0 <= v <= n:
        raise ValueError("need 0 <= v <= n")
    priors = _priors(prior, n, d)
    datasets = list(itertools.product(range(d), repeat=n))
    outputs = _outputs(n, d, success)
    px = np.array([math.prod(priors[i][xi] for i, xi in enumerate(x)) for x in datasets])
    win = np.array([[_hits(x, o) >= v for o in outputs] for x in datasets], dtype=float)
    return _solve_lp(n, d, datasets, outputs, px[:, None] * win, constraints)


def threshold_excess(domain: int | Sequence[Any], prior, q: float,
                     constraints: Sequence[tuple[float, float]]) -> tuple[float, Mechanism]:
    """One target (n = 1): max E[(rho - q)_+] over ALL mechanisms meeting every (eps, delta) in constraints,
    rho = max_z Pr[X = z | output] the posterior success of the Bayes-optimal guess.

    By post-processing the output is WLOG "guess z, counted" (z in the domain) or one "not counted"
    output (index d): an output o with rho(o) > q is mapped to (argmax posterior, counted), every other
    one to "not counted" (merging outputs whose terms are all positive, or all dropped, changes nothing,
    and post-processing keeps the constraints). The LP maximises

        sum_z [pi(z) M(z|z) - q sum_x pi(x) M(z|x)]   (z over the counted outputs),

    which is <= E[(rho - q)_+] for the mechanism it describes ((rho(z) - q) Pr[z] >= Pr[X = z, z] - q Pr[z])
    and >= it for every mechanism after the post-processing above: the optimum is exactly
    phi(q) = sup_M E[(rho - q)_+]. At q = 0 it is worst_case_success(1, domain, prior, 1, constraints).
    Outputs of the returned Mechanism: (z,) for "guess z, counted" and (None,) for "not counted".
    """
    d = _domain_size(domain)
    q = float(q)
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"need 0 <= q <= 1, got {q}")
    (pi,) = _priors(prior, 1, d)
    datasets = [(x,) for x in range(d)]
    outputs = [(z,) for z in range(d)] + [(None,)]
    gain = np.zeros((d, d + 1))
    for x in range(d):
        for z in range(d):
            gain[x, z] = pi[x] * ((x == z) - q)
    return _solve_lp(1, d, datasets, outputs, gain, constraints)


def _solve_lp(n: int, d: int, datasets: list, outputs: list, gain: np.ndarray,
              constraints: Sequence[tuple[float, float]]) -> tuple[float, Mechanism]:
    """max sum_{x, o} gain[x, o] M(o|x) over row-stochastic M meeting the hockey-stick constraints between
    every ordered replace-one neighbour pair of datasets (product order over {0..d-1}^n)."""
    D, O = len(datasets), len(outputs)
    nm = D * O
    c_m = -np.asarray(gain, dtype=float).ravel()

    pairs = np.array(_neighbours(n, d))
    P = len(pairs)
    # (pair, o) grid: the M-variable indices of M(o|x) and M(o|x').
    idx_x = (pairs[:, 0][:, None] * O + np.arange(O)[None, :]).ravel()
    idx_y = (pairs[:, 1][:, None] * O + np.arange(O)[None, :]).ravel()

    rows, cols, vals, rhs = [], [], [], []
    n_rows, n_t = 0, 0
    for eps, delta in constraints:
        eps, delta = float(eps), float(delta)
        if delta >= 1.0 or eps == math.inf:
            continue
        if eps < 0 or delta < 0:
            raise ValueError(f"invalid (eps, delta) = ({eps}, {delta})")
        c = math.exp(eps)
        # at eps = 0 the divergence is the total variation, symmetric in (x, x') because both rows sum
        # to 1: one direction per unordered pair suffices
        keep = pairs[:, 0] < pairs[:, 1] if eps == 0.0 else np.ones(P, dtype=bool)
        Pk = int(keep.sum())
        kk = np.repeat(keep, O)
        ix, iy, Rk = idx_x[kk], idx_y[kk], Pk * O
        r = n_rows + np.arange(Rk)
        if delta == 0.0:  # M(o|x) - e^eps M(o|x') <= 0
            rows += [r, r]
            cols += [ix, iy]
            vals += [np.ones(Rk), np.full(Rk, -c)]
            rhs.append(np.zeros(Rk))
            n_rows += Rk
            continue
        t = nm + n_t + np.arange(Rk)  # t[pair, o]
        rows += [r, r, r]
        cols += [ix, iy, t]
        vals += [np.ones(Rk), np.full(Rk, -c), -np.ones(Rk)]
        rhs.append(np.zeros(Rk))
        n_rows += Rk
        # sum_o t[pair, o] <= delta
        rows.append(n_rows + np.repeat(np.arange(Pk), O))
        cols.append(t)
        vals.append(np.ones(Rk))
        rhs.append(np.full(Pk, delta))
        n_rows += Pk
        n_t += Rk

    nv = nm + n_t
    c_all = np.concatenate([c_m, np.zeros(n_t)])
    if n_rows:
        A_ub = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                 shape=(n_rows, nv))
        b_ub = np.concatenate(rhs)
    else:
        A_ub = b_ub = None
    A_eq = sparse.csr_matrix((np.ones(nm), (np.repeat(np.arange(D), O), np.arange(nm))), shape=(D, nv))
    res = optimize.linprog(c_all, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(D),
                           bounds=(0, None), method="highs",
                           options={"primal_feasibility_tolerance": 1e-10,
                                    "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:
        raise RuntimeError(f"linprog failed: {res.message}")
    M = np.clip(res.x[:nm].reshape(D, O), 0.0, None)
    M /= M.sum(axis=1, keepdims=True)
    return float(-res.fun), Mechanism(datasets, outputs, M)


# --------------------------------------------------------------------------------------------
# Exact checks in Fractions
# --------------------------------------------------------------------------------------------
def _frac(x) -> Fraction:
    """A float is read as the decimal it prints as (0.1 -> 1/10); Fractions and ints are exact."""
    if isinstance(x, float):
        return Fraction(repr(x))
    return Fraction(x)


def _exp_lower(eps) -> Fraction:
    """A rational lower bound on e^eps (exact 1 at eps = 0)."""
    if eps == 0:
        return Fraction(1)
    # math.exp is within 1 ulp (relative 2^-52); shave 2^-50 so the result is surely <= e^eps.
    return Fraction(math.exp(float(eps))) * (1 - Fraction(1, 2 ** 50))


def _as_dict(M) -> dict[tuple, dict[tuple, Fraction]]:
    """{x: {o: Fraction}}. Rows with float entries (LP output) are read at their exact binary values and
    divided by their exact sum, so they sum to 1; rows given in Fractions/ints are taken as they are."""
    if isinstance(M, Mechanism):
        M = {x: dict(zip(M.outputs, row)) for x, row in zip(M.datasets, M.matrix)}
    out = {}
    for x, row in M.items():
        floats = any(isinstance(p, (float, np.floating)) for p in row.values())
        r = {o: Fraction(float(p)) if floats else Fraction(p) for o, p in row.items() if p != 0}
        if floats:
            tot = sum(r.values(), Fraction(0))
            r = {o: p / tot for o, p in r.items()}
        out[tuple(x)] = r
    return out


def _are_neighbours(x: tuple, y: tuple) -> bool:
    return len(x) == len(y) and sum(a != b for a, b in zip(x, y)) == 1


def dp_violation(M, constraints: Sequence[tuple[Any, Any]]) -> Fraction:
    """max over ordered neighbour pairs and constraints of (hockey-stick divergence - delta), exactly.

    M: a Mechanism or {dataset tuple: {output: probability}} (Fractions/ints exactly; a row of floats,
    e.g. LP output, at its binary values renormalised exactly, so the solver's slack shows). Datasets missing
    from M are not checked (pass every dataset of X^n). <= 0 means M meets every constraint.
    """
    Md = _as_dict(M)
    for x, row in Md.items():
        if sum(row.values()) != 1:
            raise ValueError(f"row {x} sums to {sum(row.values())}, not 1")
        if any(p < 0 for p in row.values()):
            raise ValueError(f"row {x} has a negative entry")
    worst = None
    cons = [(_exp_lower(e), _frac(dl)) for e, dl in constraints]
    for x, y in itertools.permutations(Md, 2):
        if not _are_neighbours(x, y):
            continue
        P, Q = Md[x], Md[y]
        for c, delta in cons:
            hs = sum((max(Fraction(0), p - c * Q.get(o, 0)) for o, p in P.items()), Fraction(0))
            worst = hs - delta if worst is None else max(worst, hs - delta)
    if worst is None:
        raise ValueError("no neighbouring datasets in M")
    return worst


def check_mechanism(M, constraints: Sequence[tuple[Any, Any]]) -> bool:
    """True iff M satisfies every (eps, delta) in constraints for every neighbour pair (exact)."""
    return dp_violation(M, constraints) <= 0


def success_probability(M, prior, v: int) -> Fraction:
    """Pr[>= v targets succeed] exactly. prior: one vector or one per target (floats read as decimals).

    Success of target i at output o: x_i in o_i if o_i is a set, x_i == o_i otherwise.
    """
    Md = _as_dict(M)
    n = len(next(iter(Md)))
    arr = list(prior)
    per = [arr] * n if not isinstance(arr[0], (list, tuple, np.ndarray)) else arr
    per = [[_frac(float(p)) if isinstance(p, np.floating) else _frac(p) for p in pr] for pr in per]
    if any(sum(pr) != 1 for pr in per):
        raise ValueError("prior does not sum to 1 exactly")
    total = Fraction(0)
    for x in itertools.product(*(range(len(pr)) for pr in per)):
        px = math.prod((per[i][xi] for i, xi in enumerate(x)), start=Fraction(1))
        if px == 0:
            continue
        total += px * sum((p for o, p in Md[x].items() if _hits(x, o) >= v), Fraction(0))
    return total


# --------------------------------------------------------------------------------------------
# Reference formulas (independent of the library)
# --------------------------------------------------------------------------------------------
def _Phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def gdp_delta(mu: float, eps: float) -> float:
    """delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Dong, Roth & Su, Cor. 2.13)."""
    return max(0.0, _Phi(-eps / mu + mu / 2) - math.exp(eps) * _Phi(-eps / mu - mu / 2))


def gdp_eps_grid(mu: float, k: int = 30, eps_max: float | None = None) -> tuple[float, ...]:
    """k eps values from 0 (where delta = 2 Phi(mu/2) - 1, i.e. the TV constraint) to eps_max.

    Default eps_max = min(mu (mu/2 + 5), 9) (delta below ~3e-7 or e^eps <= 8103, to keep the LP
    well conditioned; any subset of the profile's constraints still gives a valid relaxation).
    """
    if eps_max is None:
        eps_max = min(mu * (mu / 2 + 5.0), 9.0)
    return tuple(float(e) for e in np.linspace(0.0, eps_max, k))


def gdp_constraints(mu: float, eps_grid: Sequence[float] | int = 30) -> list[tuple[float, float]]:
    """[(eps, delta_mu(eps))] on eps_grid (or on gdp_eps_grid(mu, k) for an int k)."""
    grid = gdp_eps_grid(mu, eps_grid) if isinstance(eps_grid, int) else eps_grid
    return [(float(e), gdp_delta(mu, float(e))) for e in grid]


def beta(eps: float, p: float) -> float:
    """e^eps p / (e^eps p + 1 - p)."""
    if p == 0.0:
        return 0.0
    return math.exp(eps) * p / (math.exp(eps) * p + 1.0 - p)


def pure_dp_tail(betas: Sequence[float], v: int) -> float:
    """Pr[sum_i Bernoulli(beta_i) >= v] by enumerating all 2^n outcomes."""
    total = 0.0
    for bits in itertools.product((0, 1), repeat=len(betas)):
        if sum(bits) >= v:
            total += math.prod(b if s else 1.0 - b for s, b in zip(bits, betas))
    return total


def gaussian_simplex_success(mu: float, prior) -> float:
    """Bayes-optimal success of one exact guess against a certified mu-GDP mechanism on k values: a *lower*
    bound, accurate to ~1e-12.

    The mechanism releases c_x + N(0, I_{k-1}), c_0..c_{k-1} the vertices of a regular simplex with edge mu
    in R^{k-1}: every pair of rows is a Gaussian shift by exactly mu, so it is mu-GDP (Dong, Roth & Su) for any
    two values, i.e. for every pair of neighbours at n = 1 (and, applied coordinate-wise, at every n).
    Given X = x the MAP guess is right iff for every z != x with pi(z) > 0,
    N.(c_z - c_x)/mu < b_xz := mu/2 + log(pi(x)/pi(z))/mu. The k - 1 projections W_z = N.(c_z - c_x)/mu
    are standard normals with pairwise correlation 1/2 (|c_z - c_w|^2 = mu^2), W_z = (Z_0 + Z_z)/sqrt(2)
    with Z's iid N(0, 1), so

        Pr[right | x] = int phi(t) prod_{z != x} Phi(sqrt(2) b_xz - t) dt,

    a one-dimensional integral (scipy quad). The value returned subtracts quad's error estimate (and 1e-12),
    so it is at most the mechanism's true success. For k = 2 this is a Phi(b_01) + (1 - a) Phi(b_10), the
    Gaussian trade-off's Bayes success (riskcal's 1 - Bayes risk).
    """
    from scipy import integrate, special as sp

    pi = np.asarray(prior, dtype=float)
    pi = pi[pi > 0]
    if mu <= 0:
        return float(pi.max())
    total, err = 0.0, 0.0
    for x, px in enumerate(pi):
        others = np.delete(pi, x)
        if others.size == 0:
            total += px
            continue
        thr = math.sqrt(2.0) * (mu / 2.0 + np.log(px / others) / mu)

        def f(t, thr=thr):
            return math.exp(-t * t / 2.0) / math.sqrt(2.0 * math.pi) * float(np.prod(sp.ndtr(thr - t)))

        val, e = integrate.quad(f, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12, limit=200)
        total += px * val
        err += px * e
    return float(total - err - 1e-12)


def gaussian_binary_excess(mu: float, a: float, q: float) -> float:
    """E[(rho - q)_+] for the Gaussian mechanism N(0, 1) vs N(mu, 1) (exactly mu-GDP) on a prior (a, 1 - a),
    rho = the posterior of the MAP guess; closed form (A = a phi(y), B = (1 - a) phi(y - mu)):

    * q <= 1/2: rho >= 1/2 >= q everywhere, so it is success - q, success = a Phi(y0) + (1 - a) Phi(mu - y0),
      y0 = mu/2 + log(a/(1 - a))/mu;
    * q >= 1/2: at most one of (1 - q) A - q B, (1 - q) B - q A is positive, and
      int ((1 - q) A - q B)_+ = (1 - q) a Phi(y1) - q (1 - a) Phi(y1 - mu), y1 = mu/2 + log((1 - q) a / (q (1 - a)))/mu,
      int ((1 - q) B - q A)_+ = (1 - q)(1 - a) Phi(mu - y2) - q a Phi(-y2), y2 = mu/2 + log(q a / ((1 - q)(1 - a)))/mu.

    A lower bound on the true worst case phi(q) for mu-GDP (this is one mu-GDP mechanism).
    """
    a, q = float(a), float(q)
    if q >= 1.0:
        return 0.0
    if a in (0.0, 1.0):
        return max(0.0, 1.0 - q)
    if q <= 0.5:
        y0 = mu / 2 + math.log(a / (1 - a)) / mu
        return a * _Phi(y0) + (1 - a) * _Phi(mu - y0) - q
    y1 = mu / 2 + math.log((1 - q) * a / (q * (1 - a))) / mu
    y2 = mu / 2 + math.log(q * a / ((1 - q) * (1 - a))) / mu
    first = (1 - q) * a * _Phi(y1) - q * (1 - a) * _Phi(y1 - mu)
    second = (1 - q) * (1 - a) * _Phi(mu - y2) - q * a * _Phi(-y2)
    return max(0.0, first) + max(0.0, second)


# --------------------------------------------------------------------------------------------
# The oracle grid
# --------------------------------------------------------------------------------------------
def _case(n, d, priors, v, *, constraints=None, mu=None, eps_grid=None, success="exact", kind=None):
    priors = tuple(tuple(float(q) for q in pr) for pr in priors)
    if success == "exact":
        succ, k, sets = "exact", 1, None
        p = tuple(max(pr) for pr in priors)
    else:
        sets = tuple(tuple(sorted(s)) for s in success[1])
        succ, k = ("sets", sets), len(sets[0])
        p = tuple(max(sum(pr[a] for a in s) for s in sets) for pr in priors)
    case = {"n": n, "domain": d, "priors": priors, "v": v, "success": succ, "k": k, "p": p}
    if mu is not None:
        eps_grid = tuple(eps_grid)
        case.update(kind="gdp", mu=mu, eps_grid=eps_grid,
                    constraints=tuple(gdp_constraints(mu, eps_grid)))
    else:
        constraints = tuple((float(e), float(dl)) for e, dl in constraints)
        if kind is None:
            kind = "pure" if all(dl == 0 for _, dl in constraints) else "approx"
        case.update(kind=kind, constraints=constraints)
    case["name"] = case_name(case)
    return case


def case_name(case: Mapping) -> str:
    pr = case["priors"]
    prior = case.get("label") or (
        "u" if len(set(pr)) == 1 and len(set(pr[0])) == 1 else
        "/".join(",".join(f"{q:g}" for q in t) for t in (sorted(set(pr), key=pr.index))))
    succ = "exact" if case["success"] == "exact" else "sets" + "".join(
        "{" + "".join(map(str, s)) + "}" for s in case["success"][1])
    if case["kind"] == "gdp":
        priv = f"GDP(mu={case['mu']:g}, {len(case['eps_grid'])} eps)"
    else:
        priv = "+".join(f"({e:g},{dl:g})" for e, dl in case["constraints"])
    return f"n={case['n']} d={case['domain']} prior={prior} v={case['v']} {succ} {priv}"


def oracle_grid() -> list[dict]:
    """Small cases spanning n = 1..3 (4 binary), binary/ternary, uniform/skewed/mixed priors, exact and
    set-valued success, pure, approximate and GDP privacy, every v in 1..n.

    Each case is a dict: n, domain, priors (one tuple per target), v, success ("exact" or
    ("sets", sets)), k (size of a success set), p (per target: the largest prior mass of one guess),
    kind ("pure" | "approx" | "gdp"), constraints ((eps, delta) pairs the LP imposes), and for GDP mu
    and eps_grid; name. `oracle_value(case)` is the exact worst case (GDP: a relaxation >= it).
    """
    U2, S2, U3, S3 = (0.5, 0.5), (0.7, 0.3), (1 / 3, 1 / 3, 1 / 3), (0.5, 0.3, 0.2)
    g = []

    def add(n, d, pr, vs, **kw):
        priors = [pr] * n if not isinstance(pr[0], tuple) else pr
        for v in vs:
            g.append(_case(n, d, priors, v, **kw))

    A1, A2, A3 = [(0.0, 0.1)], [(1.0, 1e-2)], [(0.5, 0.05)]
    P1 = [(1.0, 0.0)]
    # binary, exact guess
    for cons in (A1, A2, P1):
        add(1, 2, S2, [1], constraints=cons)
    for n in (2, 3):
        add(n, 2, U2, range(1, n + 1), constraints=A1)
    add(2, 2, S2, [1, 2], constraints=A2)
    add(3, 2, S2, [1, 2, 3], constraints=A3)
    add(3, 2, [U2, S2, (0.9, 0.1)], [1, 2], constraints=A2)
    add(3, 2, U2, [1, 2, 3], constraints=P1)
    add(4, 2, U2, [1, 2, 3, 4], constraints=A1)
    add(4, 2, S2, [2], constraints=A2)
    # binary, GDP relaxations
    for mu in (0.5, 1.0, 2.0):
        add(1, 2, U2, [1], mu=mu, eps_grid=gdp_eps_grid(mu, 30))
        add(2, 2, U2, [1, 2], mu=mu, eps_grid=gdp_eps_grid(mu, 30))
    add(2, 2, S2, [1], mu=1.0, eps_grid=gdp_eps_grid(1.0, 30))
    add(3, 2, U2, [1, 2, 3], mu=2.0, eps_grid=gdp_eps_grid(2.0, 20))
    add(3, 2, U2, [1], mu=1.0, eps_grid=gdp_eps_grid(1.0, 20))
    # ternary, exact guess
    for cons in (A1, A2, P1):
        add(1, 3, S3, [1], constraints=cons)
    add(1, 3, U3, [1], constraints=A2)
    add(2, 3, U3, [1, 2], constraints=A1)
    add(2, 3, S3, [1, 2], constraints=A2)
    add(3, 3, U3, [1], constraints=A1)
    add(3, 3, S3, [2], constraints=A2)
    add(1, 3, U3, [1], mu=1.0, eps_grid=gdp_eps_grid(1.0, 20))
    add(2, 3, S3, [1], mu=1.0, eps_grid=gdp_eps_grid(1.0, 12))
    # ternary, set-valued success (two of three values)
    pairs3, win3 = ("sets", subsets(3, 2)), ("sets", windows(3, 2))
    add(1, 3, U3, [1], constraints=A1, success=pairs3)
    add(1, 3, S3, [1], constraints=A2, success=pairs3)
    add(1, 3, S3, [1], constraints=P1, success=pairs3)
    add(1, 3, S3, [1], constraints=A2, success=win3)
    add(2, 3, U3, [1, 2], constraints=A1, success=pairs3)
    add(2, 3, S3, [1, 2], constraints=A2, success=pairs3)
    add(2, 3, S3, [1], constraints=A3, success=win3)
    add(3, 3, U3, [1, 2, 3], constraints=A1, success=pairs3)
    add(1, 3, U3, [1], mu=1.0, eps_grid=gdp_eps_grid(1.0, 20), success=pairs3)
    add(2, 3, U3, [1, 2], mu=1.0, eps_grid=gdp_eps_grid(1.0, 12), success=pairs3)
    return g


def _key(case: Mapping) -> tuple:
    return (case["n"], case["domain"], tuple(map(tuple, case["priors"])), case["v"],
            tuple((float(e), float(dl)) for e, dl in case["constraints"]),
            "exact" if case["success"] == "exact" else
            ("sets", tuple(tuple(sorted(s)) for s in case["success"][1])))


_CACHE: dict[tuple, tuple[float, Mechanism]] = {}


def oracle_solve(case: Mapping) -> tuple[float, Mechanism]:
    """(value, mechanism) of worst_case_success for a grid case, cached."""
    key = _key(case)
    if key not in _CACHE:
        n, d, priors, v, cons, succ = key
        if succ != "exact":
            succ = ("sets", [frozenset(s) for s in succ[1]])
        _CACHE[key] = worst_case_success(n, d, [list(p) for p in priors], v, cons, succ)
    return _CACHE[key]


def oracle_value(case: Mapping) -> float:
    """The oracle's optimum for a grid case (cached across calls)."""
    return oracle_solve(case)[0]


# --------------------------------------------------------------------------------------------
# The whole-prior grid (issue 21, item 3): skewed, Zipf and conditional priors over up to 10 values
# --------------------------------------------------------------------------------------------
def zipf_prior(d: int, s: float) -> tuple[float, ...]:
    """Zipf over d values with exponent s: pi(r) proportional to r^-s, r = 1..d (descending)."""
    w = np.arange(1, d + 1, dtype=float) ** -float(s)
    return tuple(float(x) for x in w / w.sum())


def _normalised(*w) -> tuple[float, ...]:
    arr = np.asarray(w, dtype=float)
    return tuple(float(x) for x in arr / arr.sum())


#: Named priors of the whole-prior grid: family -> {label: prior}. "conditional" ones are made up to look like
#: the ACS-style conditionals of a Bayesian network (a column given its parents); none comes from data.
WHOLE_PRIORS: dict[str, dict[str, tuple[float, ...]]] = {
    "uniform": {f"U{d}": tuple([1.0 / d] * d) for d in (2, 3, 4, 5, 10)},
    "skewed": {
        "B.55": (0.55, 0.45), "B.7": (0.7, 0.3), "B.9": (0.9, 0.1), "B.99": (0.99, 0.01),
        "T.5/.3/.2": (0.5, 0.3, 0.2), "T.8/.15/.05": (0.8, 0.15, 0.05), "T.45/.45/.1": (0.45, 0.45, 0.1),
        "Q.6/.2/.1/.1": (0.6, 0.2, 0.1, 0.1),
        "heavy10": (0.6,) + tuple([0.4 / 9] * 9),  # one value with 0.6, nine tied
    },
    "zipf": {
        **{f"Z10^{s:g}": zipf_prior(10, s) for s in (1.0, 1.25, 1.5, 1.84, 2.0)},
        "Z3^1.5": zipf_prior(3, 1.5), "Z4^1.0": zipf_prior(4, 1.0), "Z4^2.0": zipf_prior(4, 2.0),
        "Z5^1.84": zipf_prior(5, 1.84),
    },
    "conditional": {
        "sex|occ": (0.61, 0.39),
        "marital|age": _normalised(0.52, 0.36, 0.08, 0.04),
        "marital5|age": _normalised(0.52, 0.33, 0.08, 0.05, 0.02),
        "edu|occ": _normalised(0.34, 0.27, 0.19, 0.11, 0.06, 0.03),
        "race|county": _normalised(0.71, 0.12, 0.08, 0.05, 0.02, 0.01, 0.01),
        "income|edu": _normalised(0.15, 0.14, 0.13, 0.12, 0.10, 0.10, 0.08, 0.08, 0.06, 0.04),
        "class|occ": _normalised(0.74, 0.08, 0.07, 0.06, 0.03, 0.02),
        "hours|age": _normalised(0.48, 0.22, 0.15, 0.09, 0.04, 0.02),
    },
}

#: Privacy of the grid: (eps, delta)-DP, pure eps-DP, mu-GDP (finite-eps relaxation).
WP_APPROX_1 = ((1.0, 1e-2), (0.5, 1e-3), (2.0, 1e-5))
WP_PURE_1 = (0.5, 1.0, 2.0)
WP_GDP_1 = (0.268, 1.0, 2.0)
WP_GDP_EPS_1 = 16  # as in issue 21's measurement; d = 10 under 30 eps takes ~6 s an LP
WP_APPROX_2 = ((1.0, 1e-2), (0.5, 0.05))
WP_PURE_2 = (1.0,)
WP_GDP_2 = (1.0,)
WP_GDP_EPS_2 = 12
#: n = 2 priors (label -> the two targets' priors, padded with zeros to a common domain).
_PAIRS_2 = {
    "U2": ("U2", "U2"), "U3": ("U3", "U3"), "U4": ("U4", "U4"),
    "B.7": ("B.7", "B.7"), "B.9": ("B.9", "B.9"), "T.5/.3/.2": ("T.5/.3/.2", "T.5/.3/.2"),
    "Q.6/.2/.1/.1": ("Q.6/.2/.1/.1", "Q.6/.2/.1/.1"),
    "Z3^1.5": ("Z3^1.5", "Z3^1.5"), "Z4^1.0": ("Z4^1.0", "Z4^1.0"), "Z4^2.0": ("Z4^2.0", "Z4^2.0"),
    "Z5^1.84": ("Z5^1.84", "Z5^1.84"),
    "sex|occ": ("sex|occ", "sex|occ"), "marital|age": ("marital|age", "marital|age"),
    "marital5|age": ("marital5|age", "marital5|age"),
    "Z4^1.0+U4": ("Z4^1.0", "U4"), "B.9+Z4^2.0": ("B.9", "Z4^2.0"), "B.7+T.5/.3/.2": ("B.7", "T.5/.3/.2"),
}
#: Thresholds of the n = 1 excess check, as functions of p = max pi.
_THRESHOLDS = (lambda p: 0.0, lambda p: p / 2, lambda p: p, lambda p: (p + 1) / 2, lambda p: 0.95)


def _family(label: str) -> str:
    for fam, table in WHOLE_PRIORS.items():
        if label in table:
            return fam
    raise KeyError(label)


def whole_prior_grid() -> list[dict]:
    """Cases for the whole-prior theorem (one exact guess): n = 1 over every prior of WHOLE_PRIORS (2..10
    values) and n = 2 over _PAIRS_2 (2..5 values; GDP only up to 3), v in 1..n; each privacy kind.

    Each case is an ``oracle_grid`` case (``oracle_value`` solves it: exact for "approx"/"pure", a relaxation
    >= the truth for "gdp") with also: ``family`` (uniform/skewed/zipf/conditional; n = 2 pairs of different
    families are "mixed"), ``label`` (the prior's name in WHOLE_PRIORS, also in ``name``), ``slow`` (left to
    the slow test run: the fast run keeps one privacy setting per kind), and for n = 1 ``thresholds`` (the q at which phi(q) is
    checked, ``threshold_value(case, q)``).
    """
    out = []

    def add(n, labels, v, slow, **kw):
        pri = [WHOLE_PRIORS[_family(lb)][lb] for lb in labels]
        d = max(len(p) for p in pri)
        pri = [tuple(p) + (0.0,) * (d - len(p)) for p in pri]
        fams = {_family(lb) for lb in labels}
        case = _case(n, d, pri, v, **kw)
        case["family"] = fams.pop() if len(fams) == 1 else "mixed"
        case["label"] = labels[0] if len(set(labels)) == 1 else "+".join(labels)
        case["slow"] = slow
        if n == 1:  # (GDP: the threshold LPs only for d <= 5, as they are only reported there)
            p = max(pri[0])
            case["thresholds"] = (tuple(sorted({round(float(f(p)), 12) for f in _THRESHOLDS}))
                                  if case["kind"] != "gdp" or d <= 5 else ())
        case["name"] = case_name(case)
        out.append(case)

    for fam, table in WHOLE_PRIORS.items():
        for lb, pr in table.items():
            d = len(pr)
            for i, (e, dl) in enumerate(WP_APPROX_1):
                add(1, [lb], 1, i > 0, constraints=[(e, dl)])
            for i, e in enumerate(WP_PURE_1):
                add(1, [lb], 1, i != 1, constraints=[(e, 0.0)])
            for mu in WP_GDP_1:
                add(1, [lb], 1, mu != 1.0 or d > 5, mu=mu, eps_grid=gdp_eps_grid(mu, WP_GDP_EPS_1))
    for label, labels in _PAIRS_2.items():
        d = max(len(WHOLE_PRIORS[_family(lb)][lb]) for lb in labels)
        for v in (1, 2):
            for i, (e, dl) in enumerate(WP_APPROX_2):
                add(2, list(labels), v, i > 0 or d >= 5, constraints=[(e, dl)])
            for e in WP_PURE_2:
                add(2, list(labels), v, d >= 5, constraints=[(e, 0.0)])
            if d <= 3:
                for mu in WP_GDP_2:
                    add(2, list(labels), v, d > 2, mu=mu, eps_grid=gdp_eps_grid(mu, WP_GDP_EPS_2))
    return out


_TCACHE: dict[tuple, float] = {}


def threshold_value(case: Mapping, q: float) -> float:
    """``threshold_excess`` for an n = 1 grid case at q (cached): phi(q) exactly ("approx"/"pure"), or the
    finite-eps relaxation's value (>= the truth) for "gdp"."""
    if case["n"] != 1:
        raise ValueError("threshold_value is for one-target cases")
    key = _key(case) + (float(q),)
    if key not in _TCACHE:
        _TCACHE[key] = threshold_excess(case["domain"], list(case["priors"][0]), float(q), case["constraints"])[0]
    return _TCACHE[key]
