"""The targets' prior successes and what one eps makes of them: the n priors grouped (``Priors``), Theorem 3.1's
posterior cap ``beta``, the law of S*_eps = sum_i Bern(beta(eps, p_i)) (``pure_tail``) and the split theorem's
per-target budget weights (``budget_weights``); and each target's whole prior, grouped (``Distributions``, of
``PriorShape``s: ``prior_shape``), which the whole-prior theorems read (re-exported by ``whole_prior``).

The theorems (``theorems``) and their searches over eps (``search``) both build on these; ``theorems`` re-exports
the public names. Notation of Swanberg, Annamalai, Hayes, Balle, Smith, "A Unified Framework for Adversary-Aware
Differential Privacy Bounds" (arXiv:2507.08158) and stages/bound/THEORY.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from . import _validate
from .tails import Tail, distribution_grouped


def beta(eps, p):
    """Theorem 3.1's posterior cap: beta = e^eps / (e^eps - 1 + 1/p), with p = 0 -> 0, p = 1 -> 1.

    Computed as expit(eps + logit(p)), exact in the tails (no overflow for eps up to inf).
    """
    e = _validate.epsilon("eps", eps)
    q = _validate.probability("p", p)
    _validate.broadcast(eps=e, p=q)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = special.expit(e + special.logit(q))
    out = np.where(q == 0.0, 0.0, np.where(q == 1.0, 1.0, out))
    return float(out) if np.ndim(out) == 0 else out


def beta_unchecked(eps: float, p: np.ndarray) -> np.ndarray:
    """``beta`` without argument checks, for the searches' inner loops (eps a float, p a validated array)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = special.expit(eps + special.logit(p))
    return np.where(p == 0.0, 0.0, np.where(p == 1.0, 1.0, out))


def vector(name: str, p) -> np.ndarray:
    """``_validate.vector`` for the targets' prior successes (one per target, in [0, 1])."""
    fix = {2: "for each target's whole prior pass distributions=", 0: "for one target pass [p]"}
    return _validate.vector(name, p, _validate.probability, what="one prior success per target",
                            fix=fix.get(_validate.ndim(p), ""))


@dataclass(frozen=True, eq=False)
class Priors:
    """n targets' prior successes, grouped: ``counts[g]`` targets have prior success ``values[g]``.

    Every theorem here is a law of sum_i Bern(beta(eps, p_i)) and a budget linear in per-target
    weights, symmetric in the targets, so the groups are a sufficient statistic: each theorem takes a
    Priors wherever it takes the per-target prior successes ``p`` (shape (n,)), with the same result
    (an array is grouped once, ``Priors.of``). With few distinct values this skips all O(n) work.

    ``values`` come out distinct and ascending (duplicates are merged, zero counts dropped).
    ``collision[g]`` (None: unknown) is the mean collision probability sum_x D_i(x)^2 over group g's
    targets, which only set-valued success uses (the weights are linear in 1 - c_i, so the mean
    is all they need); a theorem given a Priors reads the collision probabilities from it, and
    refuses a second ``collision=`` argument.
    """

    values: np.ndarray
    counts: np.ndarray
    collision: np.ndarray | None = None
    n: int = field(init=False)

    def __post_init__(self):
        values = _validate.vector("p", self.values, _validate.probability, what="the groups' prior success values")
        counts = _validate.vector("counts", self.counts, what=f"one count per value of p (shape {values.shape})")
        if counts.shape != values.shape or np.any(~np.isfinite(counts) | (counts < 0) | (counts != np.round(counts))):
            raise _validate.ArgumentError("counts", f"counts must be integers >= 0, one per value of p (shape "
                                                    f"{values.shape}), got {self.counts!r}.")
        counts = counts.astype(np.int64)
        collision = None
        if self.collision is not None:
            collision = np.array(np.broadcast_to(_collision_shape(self.collision, values.size, "value of p"),
                                                 values.shape), dtype=float)
        if not np.all(counts > 0):
            keep = counts > 0
            values, counts = values[keep], counts[keep]
            collision = None if collision is None else collision[keep]
        if collision is not None:
            _check_collision(collision, values)
        if values.size > 1 and not np.all(values[1:] > values[:-1]):  # merge equal values (sorted)
            values, inverse = np.unique(values, return_inverse=True)
            merged = np.bincount(inverse, weights=counts, minlength=len(values)).astype(np.int64)
            if collision is not None:
                collision = np.bincount(inverse, weights=counts * collision, minlength=len(values)) / merged
            counts = merged
        n = int(np.sum(counts))
        if n < 1:
            raise _validate.ArgumentError("p", "p must hold at least one prior success probability, got no targets (counts sum to 0).")
        self._set(values, counts, collision, n)

    def _set(self, values: np.ndarray, counts: np.ndarray, collision, n: int) -> None:
        for name, value in (("values", values), ("counts", counts), ("collision", collision), ("n", n)):
            object.__setattr__(self, name, value)

    @classmethod
    def _unchecked(cls, values: np.ndarray, counts: np.ndarray, collision=None) -> "Priors":
        """From np.unique's output on validated priors (distinct ascending values, int64 counts >= 1): no
        second pass over them (n = 1e6 distinct priors would pay ~13 ms for it)."""
        out = object.__new__(cls)
        out._set(values, counts.astype(np.int64, copy=False), collision, int(np.sum(counts)))
        return out

    @classmethod
    def of(cls, p, collision=None, *, exact_guess: bool = False) -> "Priors":
        """The per-target prior successes p (n,) grouped, with each group's mean collision probability
        from the per-target (or one shared) ``collision``, None if unknown. ``exact_guess``: p_i is the mass of
        one value, the prior's largest (one exact a-priori guess), so the collision probability is also at least
        p_i^2 (checked)."""
        q = vector("p", p)
        if collision is None:
            return cls._unchecked(*np.unique(q, return_counts=True))
        c = _collision_shape(collision, q.size)
        _check_collision(np.broadcast_to(c.ravel(), q.shape), q, exact_guess)
        values, inverse, counts = np.unique(q, return_inverse=True, return_counts=True)
        sums = np.bincount(inverse.ravel(), weights=np.broadcast_to(c.ravel(), q.shape), minlength=len(values))
        return cls._unchecked(values, counts, np.minimum(sums / counts, 1.0))

    def numerator_sums(self, set_valued: bool) -> np.ndarray:
        """The split theorem's weight numerators summed over each group: count (1 - p) for one exact
        guess, count (1 - c) for set-valued success (count with c unknown), 0 where p = 0 (no success
        set of a p = 0 target has prior mass, so none has posterior mass: no extra successes)."""
        if not set_valued:
            sums = self.counts * (1.0 - self.values)
        elif self.collision is None:
            sums = self.counts.astype(float)
        else:
            sums = self.counts * (1.0 - self.collision)
        return np.where(self.values == 0.0, 0.0, sums)


def _collision_shape(collision, n: int, per: str = "target") -> np.ndarray:
    """``collision`` as probabilities: one for every target or one per target (n), any other shape refused."""
    c = _validate.elementwise("collision", collision, _validate.probability)
    if c.ndim > 1 or c.size not in (1, n):
        raise _validate.shape_error("collision", collision, f"one probability or one per {per} (shape ({n},))")
    return c


def _check_collision(collision: np.ndarray, p: np.ndarray, exact_guess: bool = False) -> None:
    """Refuse a collision probability no prior with prior success p has: c = sum_x pi(x)^2 <= max_x pi(x) <= p for
    every prior and every success family (a target the attack abstains on, p = 0, keeps its prior's c: its weight is
    0 anyway), and for one exact guess (p = max_x pi(x)) also c >= p^2."""
    above = (collision > p * (1.0 + 1e-9) + 1e-15) & (p > 0)
    if np.any(above):
        i = int(np.flatnonzero(above)[0])
        raise _validate.ArgumentError(
            "collision", f"collision must be at most p for every target (sum_x pi(x)^2 <= max_x pi(x) <= p for any "
                         f"prior), got collision {float(collision[i])!r} > p = {float(p[i])!r} at index {i}; pass the "
                         "prior's own collision probability, or None (0, valid for every prior).")
    below = exact_guess & (collision < p * p * (1.0 - 1e-9) - 1e-15)
    if np.any(below):
        i = int(np.flatnonzero(below)[0])
        raise _validate.ArgumentError(
            "collision", f"collision must be at least p^2 for every target with one exact guess (p = max_x pi(x), so "
                         f"sum_x pi(x)^2 >= p^2), got collision {float(collision[i])!r} < p^2 = {float(p[i]) ** 2!r} at "
                         f"index {i}; pass the prior's own collision probability, or None.")


def grouped(p, collision=None, *, exact_guess: bool = False) -> Priors:
    """p as Priors: a Priors as it is (its own collision probabilities), per-target arrays grouped once
    (``exact_guess`` as in ``Priors.of``)."""
    if isinstance(p, Priors):
        if collision is not None:
            raise _validate.ArgumentError("collision", "collision must be None when p is a Priors (a Priors carries its groups' collision "
                             f"probabilities), got {collision!r}; give it as Priors(values, counts, collision).")
        return p
    return Priors.of(p, collision, exact_guess=exact_guess)


def pure_tail(eps: float, priors: Priors) -> Tail:
    """The tail of sum_i Bern(beta(eps, p_i)) (Theorem 3.1), from the groups of the priors."""
    return distribution_grouped(beta_unchecked(eps, priors.values), priors.counts).tail()


def budget_weights(eps: float, p: np.ndarray, numerator: np.ndarray) -> np.ndarray:
    """w_i(eps) = numerator_i / (e^eps p_i + 1 - p_i), computed in log space (no overflow at any eps).

    The split theorem's per-target share of delta(eps) (stages/bound/THEORY.md, Lemma 2): numerator
    1 - p_i for one exact guess (then w_i = 1 - beta_i), 1 - c_i for set-valued success with c_i the
    collision probability sum_x D_i(x)^2 of target i's prior (0 when unknown, the safe side).
    """
    p = np.asarray(p, dtype=float)
    if np.ndim(eps) == 0 and 0.0 <= eps <= 700.0:  # e^eps is finite: 1 + p (e^eps - 1), a sum of non-negatives
        return np.asarray(numerator, dtype=float) / (1.0 + p * math.expm1(float(eps)))
    with np.errstate(divide="ignore"):
        log_den = np.logaddexp(eps + np.log(p), np.log1p(-p))
    return np.asarray(numerator, dtype=float) * np.exp(-log_den)


#: A prior with more distinct probabilities than this has its tail rounded up onto a geometric grid
#: (whole_prior.MAX_GROUPS).
SHAPE_MAX_GROUPS = 64
#: At most this many distinct priors enter Theorem 3's search (more are merged: Distributions.coarsened).
MAX_SHAPES = 16
#: Of those, the largest probabilities kept exactly.
_EXACT_TOP = 32
#: Relative tolerance on sum(distribution) = 1.
_SUM_RTOL = 1e-6


# --------------------------------------------------------------------------------------------
# Each target's whole prior (Theorems 3, 4, 5 read it): one target's prior reduced to its distinct
# probabilities (PriorShape), n targets' priors grouped (Distributions)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class PriorShape:
    """One target's prior as the bound sees it: distinct probabilities ``probs`` (descending) with
    multiplicities ``mult``; ``p`` the largest probability (the a-priori guess's success), ``collision``
    sum_x pi(x)^2, both of the prior as given; ``rounded`` says whether the tail was rounded up."""

    probs: np.ndarray
    mult: np.ndarray
    p: float
    collision: float
    rounded: bool
    key: bytes = field(repr=False)


def prior_shape(distribution, *, name: str = "distribution", max_groups: int = SHAPE_MAX_GROUPS) -> PriorShape:
    """A 1-d probability vector (summing to 1) as a ``PriorShape``.

    Beyond ``max_groups`` distinct probabilities, the largest ``_EXACT_TOP`` stay exact and the others
    are rounded up to the largest member of their bin of a geometric grid (valid: the whole-prior bound
    is non-decreasing in every probability, THEORY.md section 8).
    """
    arr = _validate.vector(name, distribution, _validate.probability, what="one target's prior, probabilities")
    total = float(np.sum(arr))
    if abs(total - 1.0) > _SUM_RTOL:
        raise _validate.ArgumentError(name, f"{name} must sum to 1 (one target's prior over its values), got a sum of {total!r}; "
                         "normalise it (divide by its sum).")
    collision = float(np.dot(arr, arr))
    pos = np.sort(arr[arr > 0])[::-1]
    probs, mult = _distinct_desc(pos)
    return _rounded(probs, mult, float(pos[0]), collision, max_groups)


def _rounded(probs: np.ndarray, mult: np.ndarray, p: float, collision: float, max_groups: int) -> PriorShape:
    """The PriorShape of distinct descending probabilities, the tail rounded up beyond ``max_groups`` groups."""
    rounded = False
    if probs.size > max_groups:
        top = min(_EXACT_TOP, max_groups // 2)
        rest, rest_mult = probs[top:], mult[top:]
        bins = max_groups - top
        ratio = (rest[0] / rest[-1]) ** (1.0 / bins) if rest[-1] > 0 else 2.0
        ratio = max(ratio, 1.0 + 1e-12)
        idx = np.minimum(np.floor(np.log(rest[0] / rest) / math.log(ratio)).astype(np.int64), bins - 1)
        first = np.flatnonzero(np.diff(np.concatenate([[-1], idx])) != 0)
        binned = rest[first]  # the largest member of each bin (rest is descending)
        counts = np.add.reduceat(rest_mult, first)
        probs = np.concatenate([probs[:top], binned])
        mult = np.concatenate([mult[:top], counts])
        rounded = True
    key = np.concatenate([probs, np.asarray(mult, dtype=float)]).tobytes()
    return PriorShape(probs=probs, mult=np.asarray(mult, dtype=np.int64), p=p, collision=collision,
                      rounded=rounded, key=key)


def _shape_unchecked(desc: np.ndarray, max_groups: int = SHAPE_MAX_GROUPS) -> PriorShape:
    """A PriorShape of a descending positive vector that may sum to more than 1 (a dominating vector)."""
    probs, mult = _distinct_desc(desc)
    return _rounded(probs, mult, float(desc[0]), float(np.dot(desc, desc)), max_groups)


def _distinct_desc(pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of a descending array and their multiplicities, descending."""
    change = np.flatnonzero(np.diff(pos) != 0) + 1
    starts = np.concatenate([[0], change])
    return pos[starts], np.diff(np.append(starts, pos.size))


@dataclass(frozen=True, eq=False)
class Distributions:
    """n targets' priors, grouped: ``counts[g]`` targets have prior ``shapes[g]`` (a ``PriorShape``).

    ``Distributions.of(rows)`` groups a 2-d array (n, d) or a sequence of 1-d arrays; targets whose
    priors are equal up to a permutation of the values share a group (the bounds depend on the
    multiset of probabilities only). Every theorem taking ``distributions=`` takes this too.
    """

    shapes: tuple
    counts: np.ndarray

    @classmethod
    def of(cls, rows, name: str = "distributions") -> "Distributions":
        if isinstance(rows, Distributions):
            return rows
        given, rows = rows, _validate.distributions(name, rows)
        if isinstance(given, np.ndarray):  # (a list of rows keeps the grouping in order of first appearance)
            sorted_rows = np.ascontiguousarray(-np.sort(-_validate.probability(name, rows), axis=1))
            # one opaque element per row: np.unique on bytes is much faster than on rows (axis=0)
            keys = sorted_rows.view(np.dtype((np.void, sorted_rows.dtype.itemsize * sorted_rows.shape[1]))).ravel()
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
            counts = np.bincount(inverse.ravel(), minlength=len(first))
            shapes = tuple(prior_shape(sorted_rows[i], name=f"{name}[{int(i)}]") for i in first)
            return cls(shapes, counts.astype(np.int64))
        groups: dict[bytes, int] = {}
        shapes, counts = [], []
        for i, r in enumerate(rows):
            s = prior_shape(r, name=f"{name}[{i}]")
            g = groups.get(s.key)
            if g is None:
                groups[s.key] = len(shapes)
                shapes.append(s)
                counts.append(1)
            else:
                counts[g] += 1
        return cls(tuple(shapes), np.asarray(counts, dtype=np.int64))

    @property
    def n(self) -> int:
        return int(np.sum(self.counts))

    def coarsened(self, max_shapes: int = MAX_SHAPES) -> "Distributions":
        """At most ``max_shapes`` groups: targets sorted by p are cut into runs of similar p, and each run's prior
        is replaced by the elementwise maximum of its members' descending probability vectors (a vector that
        dominates every member: the bound is non-decreasing in every probability, THEORY.md section 8, so
        every member's budget and threshold may be read from it). Unchanged when already small enough."""
        if len(self.shapes) <= max_shapes:
            return self
        order = np.argsort([s.p for s in self.shapes], kind="stable")
        runs = np.array_split(order, max_shapes)
        shapes, counts = [], []
        for run in runs:
            members = [self.shapes[i] for i in run]
            width = max(int(np.sum(s.mult)) for s in members)
            top = np.zeros(width)
            for s in members:
                vec = np.repeat(s.probs, s.mult)
                top[: vec.size] = np.maximum(top[: vec.size], vec)
            shapes.append(_shape_unchecked(top[top > 0]))
            counts.append(int(np.sum(self.counts[run])))
        return Distributions(tuple(shapes), np.asarray(counts, dtype=np.int64))

    @property
    def uniform(self) -> bool:
        """Every target's prior is uniform over its support. ``count_bounds`` then skips Theorem 3 (for speed):
        on uniform priors its count was never below Theorem 1's (mu-GDP, mu in {0.27, 0.5, 1, 2}, k in {2, 10},
        n in {10, 100}, confidences 0.05 / 0.5 / 0.95: equal or one above), since for (eps, delta)-DP Lemma 2
        is the exact one-target excess at beta(eps, p) on a uniform prior. ``tail_bound`` and
        ``success_bound`` still include it."""
        return all(s.probs.size == 1 and not s.rounded for s in self.shapes)

    @property
    def p(self) -> np.ndarray:
        """Each group's prior success of one exact a-priori guess, max pi."""
        return np.array([s.p for s in self.shapes])

    @property
    def collision(self) -> np.ndarray:
        return np.array([s.collision for s in self.shapes])
