"""Exact tails of sums of independent Bernoullis (the Poisson-binomial distribution).

The bounds of the paper all end in ``Pr[S_1 + ... + S_n >= v]`` with ``S_i ~ Bern(beta_i)``.
This module computes that distribution exactly (to floating point) for any ``n``:

* equal ``beta`` values are grouped and contribute one binomial each (a uniform prior is one
  binomial, computed in O(n) by scipy);
* distinct values go through a divide-and-conquer tree of FFT convolutions, batched level by level,
  whose partial distributions are trimmed to the window holding all but ``TRIM`` of their mass.

The mass trimmed away is tracked and returned, so callers that need a *valid upper bound* on a tail
add it (``PoissonBinomial.sf`` does): trimming never makes a bound smaller.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from . import _validate

#: Mass below which a partial distribution's outer entries are dropped (and accounted for). It sits
#: above the FFT round-off floor (~1e-16 per entry) so that trimming actually removes the noise tails.
TRIM = 1e-14
#: Partial distributions wider than this are trimmed (few enough that the trimmed mass stays < 1e-10).
_TRIM_WIDTH = 128
#: Leaf block size of the convolution tree (direct recursion below it).
_LEAF = 16
#: Number of copies from which equal betas are treated as one binomial.
_GROUP_MIN = 8


@dataclass(frozen=True)
class PoissonBinomial:
    """The law of a sum of independent Bernoullis, held as ``pmf[k] = Pr[S = offset + k]``.

    ``trimmed`` is an upper bound on the probability mass not represented by ``pmf`` (at most
    ``TRIM`` per trimmed partial distribution); ``n`` is the number of Bernoullis.
    """

    offset: int
    pmf: np.ndarray
    n: int
    trimmed: float = 0.0

    def sf_all(self) -> np.ndarray:
        """Return ``t`` of length ``n + 2`` with ``t[v] = Pr[S >= v]`` for ``v = 0..n+1``.

        Each entry is an upper bound: the trimmed mass is added to every ``v > 0``.
        """
        tail = np.zeros(self.n + 2)
        rev = np.cumsum(self.pmf[::-1])[::-1]  # rev[k] = Pr[S >= offset + k]
        hi = self.offset + len(self.pmf)
        tail[: self.offset + 1] = 1.0
        tail[self.offset : hi] = rev
        tail[1:] = np.minimum(1.0, tail[1:] + self.trimmed)
        tail[0] = 1.0
        return tail

    def sf(self, v) -> np.ndarray:
        """``Pr[S >= v]`` for integer ``v`` (array or scalar), as a valid upper bound."""
        v = np.asarray(v)
        return self.sf_all()[np.clip(v, 0, self.n + 1)]


def _trim_rows(p: np.ndarray, offsets: np.ndarray, width_cap: int | None = None):
    """Trim each row of p to the window outside which its mass is below TRIM/2 on each side."""
    left = np.cumsum(p, axis=1)
    right = np.cumsum(p[:, ::-1], axis=1)[:, ::-1]
    # first index whose cumulative mass exceeds TRIM/2, last index whose reverse cumsum does
    start = np.argmax(left > TRIM / 2, axis=1)
    stop = p.shape[1] - np.argmax(right[:, ::-1] > TRIM / 2, axis=1)  # exclusive
    width = int(np.max(stop - start))
    if width >= p.shape[1]:
        return p, offsets, 0.0
    rows = np.arange(p.shape[0])[:, None]
    cols = start[:, None] + np.arange(width)[None, :]
    inside = cols < stop[:, None]
    kept = np.where(inside, p[rows, np.minimum(cols, p.shape[1] - 1)], 0.0)
    dropped = float(np.sum(p) - np.sum(kept))
    return kept, offsets + start, max(dropped, 0.0)


def _leaf_pmfs(beta: np.ndarray) -> np.ndarray:
    """Distributions of the sums of consecutive blocks of _LEAF betas (rows), by direct recursion."""
    nb = -(-len(beta) // _LEAF)
    b = np.zeros(nb * _LEAF)
    b[: len(beta)] = beta
    b = b.reshape(nb, _LEAF).T.copy()  # (LEAF, nb): each step works on contiguous rows
    p = np.zeros((_LEAF + 1, nb))
    p[0] = 1.0
    for t in range(_LEAF):
        bt, ct = b[t], 1.0 - b[t]
        moved = p[: t + 1] * bt  # mass that gains one success
        p[1 : t + 2] *= ct
        p[1 : t + 2] += moved
        p[0] *= ct
    return p.T.copy()


def _convolve_tree(beta: np.ndarray) -> PoissonBinomial:
    """Batched divide-and-conquer FFT convolution of distinct Bernoullis."""
    n = len(beta)
    p = _leaf_pmfs(beta)
    offsets = np.zeros(p.shape[0], dtype=np.int64)
    trimmed = 0.0
    while p.shape[0] > 1:
        if p.shape[0] % 2:
            pad = np.zeros((1, p.shape[1]))
            pad[0, 0] = 1.0
            p = np.vstack([p, pad])
            offsets = np.append(offsets, 0)
        w = p.shape[1]
        size = 1 << int(np.ceil(np.log2(2 * w - 1)))
        f = np.fft.rfft(p, n=size, axis=1)
        prod = f[0::2] * f[1::2]
        p = np.fft.irfft(prod, n=size, axis=1)[:, : 2 * w - 1]
        np.maximum(p, 0.0, out=p)
        offsets = offsets[0::2] + offsets[1::2]
        if p.shape[1] > _TRIM_WIDTH:
            p, offsets, dropped = _trim_rows(p, offsets)
            trimmed += dropped
    off = int(offsets[0])
    return PoissonBinomial(off, p[0][: n + 1 - off], n, trimmed)


def _convolve(a: PoissonBinomial, b: PoissonBinomial) -> PoissonBinomial:
    if len(a.pmf) < 64 or len(b.pmf) < 64:
        pmf = np.convolve(a.pmf, b.pmf)
    else:
        size = 1 << int(np.ceil(np.log2(len(a.pmf) + len(b.pmf) - 1)))
        pmf = np.fft.irfft(np.fft.rfft(a.pmf, size) * np.fft.rfft(b.pmf, size), size)
        pmf = np.maximum(pmf[: len(a.pmf) + len(b.pmf) - 1], 0.0)
    out, off, dropped = _trim_rows(pmf[None, :], np.array([a.offset + b.offset]))
    return PoissonBinomial(int(off[0]), out[0], a.n + b.n, a.trimmed + b.trimmed + dropped)


def _binomial(count: int, prob: float) -> PoissonBinomial:
    """Binomial(count, prob) restricted to the window holding all but ~TRIM of its mass.

    The window comes from scipy's quantiles; the mass outside it is measured (1 - sum) and
    carried as ``trimmed``, and if the quantiles were off (more than 1e-12 outside) the whole
    support is used instead.
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy's quantile search may not bracket
        lo = stats.binom.ppf(TRIM / 2, count, prob)
        hi = stats.binom.isf(TRIM / 2, count, prob)
    if np.isfinite(lo) and np.isfinite(hi):
        lo, hi = max(int(lo) - 1, 0), min(int(hi) + 2, count)
        k = np.arange(lo, hi + 1)
        pmf = stats.binom.pmf(k, count, prob)
        trimmed = max(0.0, 1.0 - float(np.sum(pmf))) if (lo > 0 or hi < count) else 0.0
        if trimmed <= 1e-12:
            return PoissonBinomial(lo, pmf, count, trimmed)
    return PoissonBinomial(0, stats.binom.pmf(np.arange(count + 1), count, prob), count, 0.0)


def distribution(beta) -> PoissonBinomial:
    """The exact law of ``sum_i Bern(beta_i)`` for a 1-d array of probabilities ``beta``."""
    beta = _validate.probability("beta", beta).ravel()
    values, counts = np.unique(beta, return_counts=True)
    return distribution_grouped(values, counts)


def distribution_grouped(values: np.ndarray, counts: np.ndarray) -> PoissonBinomial:
    """The law of a sum of ``counts[g]`` Bernoullis of parameter ``values[g]`` for every group g.

    Callers that evaluate many betas derived from the same priors (one per epsilon) group the
    priors once and call this directly; ``values`` must already be valid probabilities.
    """
    values = np.asarray(values, dtype=float)
    counts = np.asarray(counts, dtype=np.int64)
    n = int(np.sum(counts))
    ones = int(np.sum(counts[values >= 1.0]))
    inner = (values > 0.0) & (values < 1.0)
    values, counts = values[inner], counts[inner]
    parts: list[PoissonBinomial] = []
    grouped = counts >= _GROUP_MIN
    for value, count in zip(values[grouped], counts[grouped]):
        parts.append(_binomial(int(count), float(value)))
    if np.any(~grouped):
        parts.append(_convolve_tree(np.repeat(values[~grouped], counts[~grouped])))
    result = PoissonBinomial(0, np.ones(1), 0, 0.0)
    for part in sorted(parts, key=lambda q: len(q.pmf)):
        result = _convolve(result, part)
    # Bernoullis with beta in {0, 1} shift the law and add to n.
    return PoissonBinomial(result.offset + ones, result.pmf, n, result.trimmed)


def poisson_binomial_pmf(beta) -> np.ndarray:
    """``pmf[k] = Pr[S = k]`` for ``k = 0..n``, ``S = sum_i Bern(beta_i)``."""
    d = distribution(beta)
    out = np.zeros(d.n + 1)
    out[d.offset : d.offset + len(d.pmf)] = d.pmf
    return out


def poisson_binomial_sf_all(beta) -> np.ndarray:
    """``t[v] = Pr[S >= v]`` for ``v = 0..n+1`` (an upper bound that includes trimmed mass)."""
    return distribution(beta).sf_all()


def poisson_binomial_tail(beta, v):
    """``Pr[sum_i Bern(beta_i) >= v]`` for an integer ``v`` (scalar or array)."""
    v_arr = np.asarray(v)
    if not np.issubdtype(v_arr.dtype, np.integer):
        if not np.all(np.isfinite(v_arr)) or np.any(v_arr != np.round(v_arr)):
            raise ValueError(f"v must be an integer number of successes, got {v!r}.")
        v_arr = v_arr.astype(np.int64)
    out = distribution(beta).sf(v_arr)
    return float(out) if out.ndim == 0 else out
