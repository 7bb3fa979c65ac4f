"""Noisy k-way marginals: every k-way marginal that touches an unknown column, plus Gaussian noise per cell.

The paper's tabular mechanism (Appendix "Bounding Tabular Data Reconstruction from Noisy Marginals"):
for each set V of k = 3 columns, the full normalised table Q_V(X)[v] = |{x in X : x_V = v}| / N over
every value combination v, plus i.i.d. N(0, s^2) per cell. Marginals over known columns only are
constants to the attacker and are not released, so K = C(d, 3) - C(d - d', 3) tables go out when d' of
the d columns are unknown. Under replace-one neighbouring a record moves two cells of a table by 1/N:
L2 sensitivity sqrt(2)/N per table, so the K tables compose to mu-GDP with mu = sqrt(K) sqrt(2)/(N s).
Given (epsilon, delta) we take mu(epsilon, delta) from GaussianDP.from_epsilon_delta and set
s = sqrt(K) sqrt(2) / (N mu); the profile for the bound is GaussianDP(mu) whatever K and N are.
epsilon = inf releases the exact marginals (s = 0); no finite bound applies then (the bound is N).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

import numpy as np

from stages.bound import _validate
from stages.bound.profiles import GaussianDP

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

    def __init__(self, epsilon: float = 1.0, delta: float = 1e-5, way: int = 3) -> None:
        self.epsilon = _epsilon(epsilon)
        self.delta = _validate.delta("delta", delta)
        if self.delta == 0.0:
            raise ValueError("delta must be in (0, 1) for Gaussian noise, got 0.0; no finite noise gives delta = 0.")
        self.way = _validate.integer("way", way, minimum=1)
        self.mu = math.inf if math.isinf(self.epsilon) else float(GaussianDP.from_epsilon_delta(self.epsilon, self.delta).mu)

    @property
    def exact(self) -> bool:
        """epsilon = inf: the marginals go out without noise."""
        return math.isinf(self.mu)

    @property
    def profile(self) -> GaussianDP:
        """GaussianDP(mu(epsilon, delta)); at epsilon = inf there is none (every record can be reconstructed)."""
        if self.exact:
            raise ValueError("epsilon is inf: exact marginals have no privacy profile, and the bound is every record.")
        return GaussianDP(self.mu)

    def n_marginals(self, n_columns: int, n_known: int) -> int:
        """K = C(d, way) - C(d - d', way) with d' = d - n_known unknown columns."""
        return math.comb(n_columns, self.way) - math.comb(n_known, self.way)

    def noise_scale(self, n_marginals: int, n_records: int) -> float:
        """Per-cell standard deviation s = sqrt(K) sqrt(2) / (N mu) (0 at epsilon = inf)."""
        if self.exact:
            return 0.0
        return math.sqrt(n_marginals) * math.sqrt(2.0) / (n_records * self.mu)

    def release(self, X, rng: np.random.Generator, domain: Sequence[int] | None = None,
                known: Sequence[int] = ()) -> MarginalRelease:
        """The noisy marginals of the table X (N, d) whose column j takes values 0..domain[j]-1."""
        x = np.asarray(X)
        if domain is None or x.ndim != 2:
            from stages.prior.baynet import GENERIC_GAME_MESSAGE

            raise ValueError(f"mechanism=noisy_marginals releases marginals of a table: {GENERIC_GAME_MESSAGE}")
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
        return {"mechanism": self.name, "epsilon": self.epsilon, "delta": self.delta, "way": self.way, "mu": self.mu}
