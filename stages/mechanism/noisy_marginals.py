"""Noisy k-way marginals: every k-way marginal that touches an unknown column, plus Gaussian noise per cell.

The paper's tabular mechanism (Appendix "Bounding Tabular Data Reconstruction from Noisy Marginals"):
for each set V of k = 3 columns, the full normalised table Q_V(X)[v] = |{x in X : x_V = v}| / N over
every value combination v, plus i.i.d. N(0, s^2) per cell. Marginals over known columns only are
constants to the attacker and are not released, so K = C(d, 3) - C(d - d', 3) tables go out when d' of
the d columns are unknown. Under replace-one neighbouring a record moves two cells of a table by 1/N:
L2 sensitivity sqrt(2)/N per table, so the K tables compose to mu-GDP with mu = sqrt(K) sqrt(2)/(N s).
Given (epsilon, delta) we take mu(epsilon, delta) from GaussianDP.from_epsilon_delta and set
s = sqrt(K) sqrt(2) / (N mu); the profile for the bound is GaussianDP(mu) whatever K and N are.
epsilon = inf releases the exact marginals (s = 0): not private, no bound (stages.mechanism.judge_privacy, which
also rules an epsilon above MAX_PRIVATE_EPSILON not private).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

import numpy as np

from stages.bound import _validate
from stages.bound.profiles import GaussianDP
from stages.mechanism import gaussian_mu, judge_privacy, privacy_record

__all__ = ["NoisyMarginals", "MarginalRelease", "marginal_subsets", "marginal_table"]


def marginal_subsets(n_columns: int, known: Sequence[int], way: int = 3) -> np.ndarray:
    """Every `way`-subset of the columns (sorted, lexicographic) with at least one column outside `known`: (K, way)."""
    known = set(int(k) for k in known)
    subsets = [s for s in combinations(range(n_columns), way) if not set(s) <= known]
    return np.asarray(subsets, dtype=np.int64).reshape(-1, way)


def marginal_table(X: np.ndarray, subset: Sequence[int], domain: Sequence[int]) -> np.ndarray:
    """Q_V(X): the fraction of records taking each value combination of the columns V, shape (m_V1, ..., m_Vk)."""
    shape = tuple(int(domain[c]) for c in subset)
    code = np.zeros(X.shape[0], dtype=np.int64)
    for c, m in zip(subset, shape):
        code = code * m + X[:, c]
    return (np.bincount(code, minlength=math.prod(shape)) / X.shape[0]).reshape(shape)


@dataclass
class MarginalRelease:
    """What the mechanism publishes: subsets[k] are the columns of tables[k]; noise_scale is s per cell."""

    subsets: np.ndarray
    tables: list[np.ndarray]
    noise_scale: float
    n_records: int

    @property
    def n_marginals(self) -> int:
        return int(self.subsets.shape[0])

    def arrays(self) -> dict[str, np.ndarray]:
        """The release as named arrays (how the game's release stage stores it)."""
        return {"subsets": self.subsets, "cells": np.concatenate([t.reshape(-1) for t in self.tables]),
                "noise_scale": np.float64(self.noise_scale), "n_records": np.int64(self.n_records)}

    @classmethod
    def from_arrays(cls, arrays, domain: Sequence[int]) -> "MarginalRelease":
        subsets = np.asarray(arrays["subsets"], dtype=np.int64)
        cells, tables, at = np.asarray(arrays["cells"], dtype=float), [], 0
        for subset in subsets:
            shape = tuple(int(domain[c]) for c in subset)
            size = math.prod(shape)
            tables.append(cells[at:at + size].reshape(shape))
            at += size
        return cls(subsets=subsets, tables=tables, noise_scale=float(arrays["noise_scale"]),
                   n_records=int(arrays["n_records"]))


def _epsilon(value) -> float:
    if isinstance(value, str) and value.strip().lower() in ("inf", "+inf", ".inf", "infinity"):
        return math.inf
    try:
        eps = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a number > 0 or inf, got {value!r}.") from None
    if not eps > 0:
        raise ValueError(f"epsilon must be > 0 (or inf for exact marginals), got {value!r}.")
    return eps


class NoisyMarginals:
    """All `way`-way marginals touching an unknown column, Gaussian noise calibrated to (epsilon, delta)."""

    name = "noisy_marginals"
    #: stages.protocols: it releases marginals of a table (prior=baynet), bound to its domain and known columns.
    needs_prior = ("table",)
    #: The game caches each trial's release, and the attack's relaxed table keyed by it (pipeline.game).
    cache_release = True

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-5, way: int = 3) -> None:
        self.epsilon = _epsilon(epsilon)
        self.delta = _validate.delta("delta", delta)
        if self.delta == 0.0:
            raise ValueError("delta must be in (0, 1) for Gaussian noise, got 0.0; no finite noise gives delta = 0.")
        self.way = _validate.integer("way", way, minimum=1)
        self.mu = math.inf if math.isinf(self.epsilon) else gaussian_mu(self.epsilon, self.delta)
        self.domain: tuple[int, ...] | None = None
        self.known: tuple[int, ...] = ()

    def for_prior(self, prior) -> "NoisyMarginals":
        """A copy bound to the prior's table: its column domains and the columns the attacker knows."""
        bound = NoisyMarginals(self.epsilon, self.delta, self.way)
        bound.domain = tuple(int(m) for m in prior.domain)
        bound.known = tuple(int(k) for k in prior.known)
        return bound

    def release_info(self, release: "MarginalRelease") -> dict:
        """What a trial's release says about itself: the noise per cell and the number of tables."""
        return {"noise_scale": float(release.noise_scale), "n_marginals": int(release.n_marginals)}

    def release_arrays(self, release: "MarginalRelease") -> dict[str, np.ndarray]:
        return release.arrays()

    def release_from_arrays(self, arrays) -> "MarginalRelease":
        return MarginalRelease.from_arrays(arrays, self.domain)

    @property
    def exact(self) -> bool:
        """epsilon = inf: the marginals go out without noise."""
        return math.isinf(self.mu)

    def _judged(self) -> tuple[GaussianDP | None, str | None]:
        """The profile and why it is not private (stages.mechanism.judge_privacy, the one rule)."""
        return judge_privacy(None if self.exact else GaussianDP(self.mu), self.delta, stated_epsilon=self.epsilon,
                             no_profile="epsilon = inf: the exact marginals have no privacy guarantee (every record "
                                        "can be reconstructed)")

    @property
    def profile(self) -> GaussianDP | None:
        """GaussianDP(mu(epsilon, delta)); None when that is no guarantee: epsilon = inf (exact marginals) or
        above MAX_PRIVATE_EPSILON."""
        return self._judged()[0]

    def privacy(self) -> dict:
        """{"private": True, ...} or why not (the game's "not private" reason; stages.mechanism.judge_privacy)."""
        return privacy_record(self._judged()[1], epsilon=self.epsilon, delta=self.delta, mu=self.mu)

    def n_marginals(self, n_columns: int, n_known: int) -> int:
        """K = C(d, way) - C(d - d', way) with d' = d - n_known unknown columns."""
        return math.comb(n_columns, self.way) - math.comb(n_known, self.way)

    def noise_scale(self, n_marginals: int, n_records: int) -> float:
        """Per-cell standard deviation s = sqrt(K) sqrt(2) / (N mu) (0 at epsilon = inf)."""
        if self.exact:
            return 0.0
        return math.sqrt(n_marginals) * math.sqrt(2.0) / (n_records * self.mu)

    def release(self, X, rng: np.random.Generator, domain: Sequence[int] | None = None,
                known: Sequence[int] | None = None) -> MarginalRelease:
        """The noisy marginals of the table X (N, d) whose column j takes values 0..domain[j]-1.

        domain and known default to the prior's (for_prior); one of the two must give them."""
        x = np.asarray(X)
        domain = self.domain if domain is None else domain
        known = self.known if known is None else known
        if domain is None or x.ndim != 2:
            raise ValueError("mechanism=noisy_marginals releases marginals of a table: it needs prior=baynet (a table "
                             "with known and unknown columns), got records of another kind.")
        domain = [int(m) for m in domain]
        if x.shape[1] != len(domain) or not np.issubdtype(x.dtype, np.integer) or x.min() < 0 or np.any(x.max(axis=0) >= domain):
            raise ValueError(f"X must be an integer table of shape (N, {len(domain)}) with codes inside domain {domain}, "
                             f"got shape {x.shape}; pass the table the prior sampled.")
        subsets = marginal_subsets(len(domain), known, self.way)
        if subsets.shape[0] == 0:
            raise ValueError(f"known lists every column ({list(known)}): nothing is unknown, so no marginal is released.")
        s = self.noise_scale(subsets.shape[0], x.shape[0])
        tables = []
        for subset in subsets:
            table = marginal_table(x, subset, domain)
            if s > 0:
                table = table + s * rng.standard_normal(table.shape)
            tables.append(table)
        return MarginalRelease(subsets=subsets, tables=tables, noise_scale=s, n_records=int(x.shape[0]))

    def params(self) -> dict:
        out = {"mechanism": self.name, "epsilon": self.epsilon, "delta": self.delta, "way": self.way, "mu": self.mu}
        if self.domain is not None:
            out.update(domain=list(self.domain), known=list(self.known))
        return out
