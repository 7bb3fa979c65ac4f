"""Decomposable success metrics L(X, z) = sum_i l_i(X_i, z_i): exact match and within a distance.

Candidates of target i are the ordinal values 0..m-1 and the attack makes k guesses per target
(z has shape (n, k)); target i counts as attacked if any of its k guesses hits (paper, Section 3.3:
l_i(X_i, z) = 1{min_j |X_i - z_ij| <= E}). Every metric can also say, for a distribution over the
candidates (the prior D_i, or a posterior), how likely a guess is to succeed and which k guesses are
the most likely to succeed: that is the a-priori Bayes-optimal guess z* on the prior and the
Bayes-optimal attack on a posterior.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from stages.bound import _validate

__all__ = ["Metric", "Exact", "Within", "as_guesses"]


def as_guesses(z, n: int | None = None) -> np.ndarray:
    """Return guesses as an int array (n, k); a 1-d array is one guess per target."""
    arr = np.asarray(z)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ValueError(f"guesses must be an array of shape (n_targets, k), got shape {np.shape(z)}.")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError("guesses must be integer candidate indices, got non-integer values.")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"guesses must have one row per target ({n}), got {arr.shape[0]} rows.")
    return arr.astype(np.int64)


def _check_weights(weights) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2 or w.shape[1] < 1:
        raise ValueError(f"probabilities must be an array of shape (n_targets, domain_size), got shape {w.shape}.")
    return w


class Metric(ABC):
    """A decomposable 0/1 success metric over ordinal candidates 0..m-1 with k guesses per target."""

    name = "metric"

    @abstractmethod
    def hit(self, values: np.ndarray, z: np.ndarray) -> np.ndarray:
        """l_i(values, z_i) for values of shape (n, c) against guesses z (n, k): bool (n, c)."""

    def score(self, X, z) -> np.ndarray:
        """Per-target success l_i(X_i, z_i) as an int array (n,) of 0/1; summing it gives L(X, z)."""
        x = np.asarray(X, dtype=np.int64).reshape(-1)
        g = as_guesses(z, x.shape[0])
        return self.hit(x[:, None], g)[:, 0].astype(np.int64)

    def covered(self, z, domain_size: int) -> np.ndarray:
        """Which candidates count as attacked by z: bool (n, m), entry [i, j] = l_i(j, z_i)."""
        g = as_guesses(z)
        candidates = np.broadcast_to(np.arange(domain_size), (g.shape[0], domain_size))
        return self.hit(candidates, g)

    def success_probability(self, probabilities, z) -> np.ndarray:
        """p_i = Pr_{X ~ D_i}[l_i(X, z_i) = 1] for a distribution D_i per row of probabilities (n, m)."""
        w = _check_weights(probabilities)
        g = as_guesses(z, w.shape[0])
        p = np.where(self.covered(g, w.shape[1]), w, 0.0).sum(axis=1)
        return np.clip(p, 0.0, 1.0)

    @abstractmethod
    def best_guess(self, probabilities, k: int = 1) -> np.ndarray:
        """The k guesses per row that maximise success_probability under probabilities (n, m)."""

    def params(self) -> dict:
        return {"metric": self.name}


class Exact(Metric):
    """Exact match: l_i(X_i, z_i) = 1 if X_i is one of the k guesses z_i1..z_ik."""

    name = "exact"

    def hit(self, values, z):
        return np.any(values[:, :, None] == z[:, None, :], axis=2)

    def best_guess(self, probabilities, k: int = 1) -> np.ndarray:
        """The k most likely candidates per row (ties go to the smaller index), most likely first."""
        w = _check_weights(probabilities)
        k = _validate.integer("k", k, minimum=1)
        order = np.argsort(-w, axis=1, kind="stable")
        top = order[:, : min(k, w.shape[1])]
        return _pad(top, k)


class Within(Metric):
    """Approximate match: l_i(X_i, z_i) = 1 if some guess is within `distance` of X_i (|X_i - z_ij| <= E)."""

    name = "within"

    def __init__(self, distance: float = 1) -> None:
        self.distance = _validate.positive("distance", distance, allow_zero=True)
        # Candidates are integers, so a guess covers the candidates within floor(E) of it.
        self.radius = int(np.floor(self.distance))

    def hit(self, values, z):
        return np.any(np.abs(values[:, :, None] - z[:, None, :]) <= self.distance, axis=2)

    def best_guess(self, probabilities, k: int = 1) -> np.ndarray:
        """The k guesses per row whose union of windows [z - E, z + E] holds the most mass (exact DP)."""
        w = _check_weights(probabilities)
        k = _validate.integer("k", k, minimum=1)
        if k == 1:
            # One window per row: the mass in [c - r, c + r] for every centre c at once.
            m = w.shape[1]
            prefix = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(w, axis=1)], axis=1)
            centres = np.arange(m)
            mass = prefix[:, np.minimum(centres + self.radius + 1, m)] - prefix[:, np.maximum(centres - self.radius, 0)]
            return np.argmax(mass, axis=1)[:, None].astype(np.int64)
        return np.stack([_best_windows(row, self.radius, k) for row in w]) if w.shape[0] else np.zeros((0, k), np.int64)

    def params(self) -> dict:
        return {"metric": self.name, "distance": self.distance}


def _pad(top: np.ndarray, k: int) -> np.ndarray:
    """Repeat the last guess when the domain has fewer than k candidates (a repeat changes nothing)."""
    if top.shape[1] >= k:
        return top.astype(np.int64)
    return np.concatenate([top, np.repeat(top[:, -1:], k - top.shape[1], axis=1)], axis=1).astype(np.int64)


def _best_windows(weights: np.ndarray, radius: int, k: int) -> np.ndarray:
    """Centres of k windows of half-width `radius` on 0..m-1 maximising the covered weight.

    A window centred at c covers [c - r, c + r] clipped to the domain. If k windows of length
    L = 2r + 1 can tile the domain (k L >= m) they cover everything. Otherwise some optimum uses
    k disjoint full-length windows (shift overlapping ones apart; they fit since k L < m), found by
    dp[c][e] = max(dp[c][e-1], dp[c-1][e-L] + W(e-L+1..e)) over the right end e of the last window.
    """
    m = weights.shape[0]
    length = 2 * radius + 1
    if k * length >= m:
        centres = [min(radius + j * length, m - 1) for j in range(k)]
        return np.asarray(centres, dtype=np.int64)
    prefix = np.concatenate([[0.0], np.cumsum(weights)])
    window = prefix[length:] - prefix[:-length]  # window[s] = W(s..s+L-1), s = 0..m-L
    dp = np.zeros((k + 1, m + 1))  # dp[c][e] = best with c windows inside candidates 0..e-1
    take = np.zeros((k + 1, m + 1), dtype=bool)
    for c in range(1, k + 1):
        for e in range(1, m + 1):
            best, took = dp[c][e - 1], False
            if e >= length:
                cand = dp[c - 1][e - length] + window[e - length]
                if cand > best:
                    best, took = cand, True
            dp[c][e], take[c][e] = best, took
    centres, c, e = [], k, m
    while c > 0 and e > 0:
        if take[c][e]:
            centres.append(e - 1 - radius)
            c, e = c - 1, e - length
        else:
            e -= 1
    covered = set()
    for s in centres:
        covered.update(range(s - radius, s + radius + 1))
    # Leftover guesses (zero-weight windows) go to uncovered candidates; they change nothing.
    spare = [j for j in range(m) if j not in covered]
    while len(centres) < k:
        centres.append(spare.pop(0) if spare else centres[-1] if centres else radius)
    return np.asarray(sorted(centres[:k]), dtype=np.int64)
