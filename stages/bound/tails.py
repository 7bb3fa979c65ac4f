"""Exact tails of sums of independent Bernoullis (the Poisson-binomial distribution).

The bounds of the paper all end in ``Pr[S_1 + ... + S_n >= v]`` with ``S_i ~ Bern(beta_i)``.
This module computes that distribution exactly (to floating point) for any ``n``:

* equal ``beta`` values are grouped and contribute one binomial each (a uniform prior is one
  binomial, computed in O(n) by scipy);
* distinct values go through a divide-and-conquer tree of FFT convolutions, batched level by level,
  whose partial distributions are trimmed to the window holding all but ``TRIM`` of their mass.

The mass trimmed away (summed from the dropped entries themselves) and a bound on the FFT's
round-off are tracked and returned, so callers that need a *valid upper bound* on a tail add them
(``PoissonBinomial.sf`` does): neither trimming nor rounding makes a bound smaller. Narrow partial
distributions are convolved directly, which keeps every entry accurate to a few ulps relative, so
small problems (a few dozen Bernoullis) get their far tails (1e-20 and below) to full precision.
"""
from __future__ import annotations

import math
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
#: Rows up to this width are convolved directly (relative accuracy in the far tails), wider ones by FFT.
_DIRECT_WIDTH = 64
#: Number of copies from which equal betas are treated as one binomial.
_GROUP_MIN = 8
#: From this many distinct Bernoullis the tree trades some of the far tails' accuracy for speed:
#: leaves of 15 (widths 16, 31, 61, ...: full convolutions that fill their power-of-two FFT, where
#: leaves of 16 give widths 2^k + 1 and FFTs twice as long) and the FFT from width 31 up (61 up from
#: _WIDER_FROM Bernoullis, where the bound on the FFT's round-off, which grows with the number of
#: rows, would otherwise pass 1e-8 at n = 1e6). That bound is carried like trimmed mass, so tails stay
#: valid upper bounds (within ~1.7x of the narrow tree's bound), for ~1.2-1.4x less time.
_WIDE_FROM = 1 << 15
_WIDER_FROM = 1 << 18
_LEAF_WIDE = 15
_DIRECT_WIDTH_WIDE = 16
_DIRECT_WIDTH_WIDER = 32
#: The exact fast paths of distribution_grouped and _binomial (False: their plain steps, for
#: tests/stages/bound/test_count_fast.py to compare against); both give the same numbers bit for bit.
_FAST = True


@dataclass(frozen=True)
class PoissonBinomial:
    """The law of a sum of independent Bernoullis, held as ``pmf[k] = Pr[S = offset + k]``.

    ``trimmed`` is an upper bound on the probability mass not represented by ``pmf`` (at most
    ``TRIM`` per trimmed partial distribution, summed from the dropped entries) plus a bound on the
    FFT round-off in the kept entries (see ``_convolve_rows``); ``n`` is the number of Bernoullis.
    """

    offset: int
    pmf: np.ndarray
    n: int
    trimmed: float = 0.0

    def __post_init__(self):
        offset = _validate.integer("offset", self.offset, minimum=0)
        pmf = _validate.vector("pmf", self.pmf, what="the probabilities of offset, offset + 1, ... (one per count)")
        n = _validate.integer("n", self.n, minimum=offset + pmf.size - 1)
        trimmed = _validate.positive("trimmed", self.trimmed, allow_zero=True)
        for name, value in (("offset", offset), ("pmf", pmf), ("n", n), ("trimmed", trimmed)):
            object.__setattr__(self, name, value)

    @classmethod
    def _of(cls, offset: int, pmf: np.ndarray, n: int, trimmed: float = 0.0) -> "PoissonBinomial":
        """The law as this module's convolutions build it (already valid): no checks in their inner loops."""
        out = object.__new__(cls)
        for name, value in (("offset", offset), ("pmf", pmf), ("n", n), ("trimmed", trimmed)):
            object.__setattr__(out, name, value)
        return out

    def dense(self) -> np.ndarray:
        """``pmf`` over every count 0 .. n (zeros outside the kept window; the FFT's round-off below 0 set to 0, which
        ``trimmed`` bounds)."""
        out = np.zeros(self.n + 1)
        out[self.offset: self.offset + len(self.pmf)] = np.maximum(self.pmf, 0.0)
        return out

    def tail(self) -> "Tail":
        """u -> Pr[S >= u] for every integer u, as a valid upper bound (see ``Tail``)."""
        rev = np.minimum(1.0, np.cumsum(self.pmf[::-1])[::-1] + self.trimmed)  # Pr[S >= offset + k] + trimmed
        rev[0] = 1.0  # T(offset) = 1 - (trimmed lower mass): 1 is a valid upper bound
        return Tail(self.offset, np.concatenate([[1.0], rev, [min(1.0, self.trimmed)]]), self.n)

    def sf_all(self) -> np.ndarray:
        """Return ``t`` of length ``n + 2`` with ``t[v] = Pr[S >= v]`` for ``v = 0..n+1``.

        Each entry is an upper bound: the trimmed mass is added to every ``v > offset``.
        """
        return self.tail()(np.arange(self.n + 2))

    def sf(self, v) -> np.ndarray:
        """``Pr[S >= v]`` for integer ``v`` (array or scalar), as a valid upper bound."""
        _validate.elementwise("v", v)
        return self.tail()(v)


class Tail:
    """u -> T(u) >= Pr[S >= u] for a sum S of n Bernoullis, held over its support only.

    The one implementation of the Poisson-binomial tail (``PoissonBinomial.tail``; the bounds'
    normal approximation and averaged tails use it too): ``ext[k] = T(offset - 1 + k)``, T = 1 below
    ``offset - 1`` and ``ext[-1]`` from the end of ``ext`` on, so a lookup is one clipped gather. ``ext``
    is non-increasing, which the searches below rely on.
    """

    def __init__(self, offset: int, ext: np.ndarray, n: int):
        self.offset, self.ext, self.n = int(offset), ext, int(n)

    def __call__(self, u) -> np.ndarray:
        """T(u) for an integer u or an integer array u (same shape)."""
        return self.ext[np.clip(np.asarray(u) - (self.offset - 1), 0, len(self.ext) - 1)]

    def value(self, u: int) -> float:
        """T(u) for one integer u."""
        k = min(max(u - (self.offset - 1), 0), len(self.ext) - 1)
        return float(self.ext[k])

    def first_below(self, t: float) -> int:
        """The smallest u >= 0 with T(u) <= t (``ext`` is non-increasing: a binary search); n + 1 if none."""
        if t >= 1.0:
            return 0
        k = int(np.searchsorted(self._negative(), -t, side="left"))  # first k with ext[k] <= t
        return int(self.offset - 1 + k) if k < len(self.ext) else self.n + 1

    def _negative(self) -> np.ndarray:
        if getattr(self, "_neg", None) is None or len(self._neg) != len(self.ext):
            self._neg = -self.ext
        return self._neg

    def _suffix(self) -> np.ndarray:
        """suffix[k] = sum of ext[k:] (0 at k = len(ext)), summed from the small end for accuracy."""
        if getattr(self, "_suf", None) is None or len(self._suf) != len(self.ext) + 1:
            self._suf = np.append(np.cumsum(self.ext[::-1])[::-1], 0.0)
        return self._suf

    def window_sum(self, lo: int, hi: int, exact: bool = False) -> float:
        """sum_{u=lo}^{hi} T(u), lo <= hi.

        From the suffix sums (O(1)) unless ``exact``, which sums the entries themselves (pairwise).
        """
        base, size = self.offset - 1, len(self.ext)
        k_lo, k_hi = lo - base, hi - base
        total = float(max(0, min(k_hi, -1) - k_lo + 1))  # terms below ext[0]: T = 1
        total += float(max(0, k_hi - max(k_lo, size) + 1)) * float(self.ext[-1])  # beyond the end
        a, b = max(k_lo, 0), min(k_hi, size - 1)
        if a <= b:
            if exact:
                total += float(np.sum(self.ext[a : b + 1]))
            else:
                suf = self._suffix()
                total += float(suf[a] - suf[b + 1])
        return total


def _trim_rows(p: np.ndarray, offsets: np.ndarray):
    """Trim each row of p to the window outside which its mass is below TRIM/2 on each side.

    Returns the trimmed rows, their offsets and the mass dropped, summed from the dropped entries
    themselves (never as ``sum(p) - sum(kept)``, which rounds away anything below ~1e-16).
    """
    left = np.cumsum(p, axis=1)
    right = np.cumsum(p[:, ::-1], axis=1)[:, ::-1]  # right[:, k] = sum of p[:, k:]
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
    r = np.arange(p.shape[0])
    below = np.where(start > 0, left[r, np.maximum(start - 1, 0)], 0.0)
    above = np.where(stop < p.shape[1], right[r, np.minimum(stop, p.shape[1] - 1)], 0.0)
    return kept, offsets + start, float(np.sum(below) + np.sum(above))


def _convolve_rows(a: np.ndarray, b: np.ndarray, direct_width: int = _DIRECT_WIDTH) -> tuple[np.ndarray, float]:
    """Row-wise full convolutions of a and b (same shape (rows, w)), and a bound on their round-off.

    Narrow rows are convolved directly: sums of products of non-negative numbers, exact to a few
    ulps *relative* to each entry, so far tails keep their digits. Wide rows go through the FFT,
    whose error is absolute; the second value bounds the sum over rows of the 1-norm of that error
    (Higham 2002, Thm 24.2: each FFT is accurate to 2-norm relative error (log2 N) eta with
    eta <= 6.7 u; propagated through the product and the inverse transform, the convolution's
    error has 2-norm <= (3 eta log2 N + u) (|a|_2 + |b|_2), and 1-norm <= sqrt(2w - 1) times that,
    doubled for margin). It is added to the tails like trimmed mass, so no tail is ever understated.
    """
    rows, w = a.shape
    if w <= direct_width:
        out = np.zeros((rows, 2 * w - 1))
        for j in range(w):
            out[:, j : j + w] += a[:, j : j + 1] * b
        return out, 0.0
    size = 1 << int(np.ceil(np.log2(2 * w - 1)))
    out = np.fft.irfft(np.fft.rfft(a, n=size, axis=1) * np.fft.rfft(b, n=size, axis=1), n=size, axis=1)
    out = out[:, : 2 * w - 1]
    np.maximum(out, 0.0, out=out)
    u = np.finfo(float).eps / 2
    norms = np.linalg.norm(a, axis=1) + np.linalg.norm(b, axis=1)
    per_norm = 2.0 * math.sqrt(2 * w - 1) * (3 * 6.7 * u * math.log2(size) + u)
    return out, float(per_norm * np.sum(norms))


def _leaf_pmfs(beta: np.ndarray, leaf_size: int = _LEAF) -> np.ndarray:
    """Distributions of the sums of consecutive blocks of ``leaf_size`` betas (rows), by direct recursion."""
    leaf = max(1, min(leaf_size, len(beta)))
    nb = -(-len(beta) // leaf)
    b = np.zeros(nb * leaf)
    b[: len(beta)] = beta
    b = b.reshape(nb, leaf).T.copy()  # (leaf, nb): each step works on contiguous rows
    p = np.zeros((leaf + 1, nb))
    p[0] = 1.0
    for t in range(leaf):
        bt, ct = b[t], 1.0 - b[t]
        moved = p[: t + 1] * bt  # mass that gains one success
        p[1 : t + 2] *= ct
        p[1 : t + 2] += moved
        p[0] *= ct
    return p.T.copy()


def _convolve_tree(beta: np.ndarray) -> PoissonBinomial:
    """Batched divide-and-conquer FFT convolution of distinct Bernoullis."""
    n = len(beta)
    wide = n >= _WIDE_FROM
    direct_width = (_DIRECT_WIDTH_WIDER if n >= _WIDER_FROM else _DIRECT_WIDTH_WIDE) if wide else _DIRECT_WIDTH
    p = _leaf_pmfs(beta, _LEAF_WIDE if wide else _LEAF)
    offsets = np.zeros(p.shape[0], dtype=np.int64)
    trimmed = 0.0
    while p.shape[0] > 1:
        if p.shape[0] % 2:
            pad = np.zeros((1, p.shape[1]))
            pad[0, 0] = 1.0
            p = np.vstack([p, pad])
            offsets = np.append(offsets, 0)
        p, error = _convolve_rows(p[0::2], p[1::2], direct_width)
        trimmed += error
        offsets = offsets[0::2] + offsets[1::2]
        if p.shape[1] > _TRIM_WIDTH:
            p, offsets, dropped = _trim_rows(p, offsets)
            trimmed += dropped
    off = int(offsets[0])
    return PoissonBinomial._of(off, p[0][: n + 1 - off], n, trimmed)


def _convolve(a: PoissonBinomial, b: PoissonBinomial) -> PoissonBinomial:
    if min(len(a.pmf), len(b.pmf)) <= _DIRECT_WIDTH:  # direct: exact to a few ulps per entry
        pmf, error = np.convolve(a.pmf, b.pmf), 0.0
    else:
        rows = np.zeros((2, max(len(a.pmf), len(b.pmf))))
        rows[0, : len(a.pmf)] = a.pmf
        rows[1, : len(b.pmf)] = b.pmf
        pmf, error = _convolve_rows(rows[:1], rows[1:])
        pmf = pmf[0, : len(a.pmf) + len(b.pmf) - 1]
    if len(pmf) <= _TRIM_WIDTH:  # narrow: keep every entry (far tails stay exact)
        return PoissonBinomial._of(a.offset + b.offset, pmf, a.n + b.n, a.trimmed + b.trimmed + error)
    out, off, dropped = _trim_rows(pmf[None, :], np.array([a.offset + b.offset]))
    return PoissonBinomial._of(int(off[0]), out[0], a.n + b.n, a.trimmed + b.trimmed + error + dropped)


class _ScipyBinom:
    """scipy.stats.binom's pmf, cdf, sf, ppf and isf at an integer count >= 1 and 0 < prob < 1."""

    pmf, cdf, sf = stats.binom.pmf, stats.binom.cdf, stats.binom.sf
    ppf, isf = stats.binom.ppf, stats.binom.isf


class _BoostBinom:
    """The same five functions as _ScipyBinom, with the same numbers, without scipy.stats' argument handling
    (~0.1 ms a call: _binomial takes 21 us instead of 98 at count 100, 83 instead of 590 at 1000): the Boost ufuncs
    scipy.stats.binom calls (scipy.stats._discrete_distns.binom_gen), with rv_discrete's edge cases for the
    arguments _binomial passes (k within or just outside 0..count, 0 < q < 1, 0 < prob < 1).
    tests/stages/bound/test_count_fast.py compares the two bit for bit."""

    @staticmethod
    def pmf(k, count, prob):  # k within 0..count
        return np.clip(_ufuncs._binom_pmf(k, count, prob), 0, 1)

    @staticmethod
    def cdf(k: int, count, prob):
        if k >= count:
            return 1.0
        return 0.0 if k < 0 else np.clip(_ufuncs._binom_cdf(float(k), count, prob), 0, 1)

    @staticmethod
    def sf(k: int, count, prob):
        if k >= count:
            return 0.0
        return 1.0 if k < 0 else np.clip(_ufuncs._binom_sf(float(k), count, prob), 0, 1)

    @staticmethod
    def ppf(q: float, count, prob):
        return _ufuncs._binom_ppf(q, count, prob) + 0

    @staticmethod
    def isf(q: float, count, prob):
        return _ufuncs._binom_isf(q, count, prob) + 0


try:  # scipy.stats.binom's own kernels (private names: scipy.stats is used wherever they are missing)
    from scipy.special import _ufuncs
    _BINOM = _BoostBinom if all(hasattr(_ufuncs, f"_binom_{f}") for f in ("pmf", "cdf", "sf", "ppf", "isf")) else _ScipyBinom
except ImportError:  # pragma: no cover
    _BINOM = _ScipyBinom


def _binomial(count: int, prob: float, binom=None) -> PoissonBinomial:
    """Binomial(count, prob) restricted to the window holding all but ~TRIM of its mass.

    The window comes from scipy's quantiles; the mass outside it is measured from the binomial's
    tails and carried as ``trimmed``, and if the quantiles were off (more than 1e-12 outside) the whole
    support is used instead. ``binom``: _BoostBinom or _ScipyBinom (the same numbers), _BINOM if None.
    """
    binom = (_BINOM if _FAST else _ScipyBinom) if binom is None else binom
    if count < _TRIM_WIDTH:  # narrow: the whole support, so far tails stay exact
        return PoissonBinomial._of(0, binom.pmf(np.arange(count + 1), count, prob), count, 0.0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy's quantile search may not bracket
        lo = binom.ppf(TRIM / 2, count, prob)
        hi = binom.isf(TRIM / 2, count, prob)
    if np.isfinite(lo) and np.isfinite(hi):
        lo, hi = max(int(lo) - 1, 0), min(int(hi) + 2, count)
        k = np.arange(lo, hi + 1)
        pmf = binom.pmf(k, count, prob)
        # the mass outside [lo, hi], from the binomial's own tails (not 1 - sum, which rounds it away)
        trimmed = float(binom.cdf(lo - 1, count, prob) + binom.sf(hi, count, prob))
        if trimmed <= 1e-12:
            return PoissonBinomial._of(lo, pmf, count, trimmed)
    return PoissonBinomial._of(0, binom.pmf(np.arange(count + 1), count, prob), count, 0.0)


def distribution(beta) -> PoissonBinomial:
    """The exact law of ``sum_i Bern(beta_i)`` for a 1-d array of probabilities ``beta``."""
    beta = _validate.vector("beta", beta, _validate.probability, what="one success probability per Bernoulli")
    values, counts = np.unique(beta, return_counts=True)
    return distribution_grouped(values, counts)


def distribution_grouped(values: np.ndarray, counts: np.ndarray) -> PoissonBinomial:
    """The law of a sum of ``counts[g]`` Bernoullis of parameter ``values[g]`` for every group g.

    Callers that evaluate many betas derived from the same priors (one per epsilon) group the
    priors once and call this directly; ``values`` must already be valid probabilities.
    """
    values = np.asarray(values, dtype=float)
    counts = np.asarray(counts, dtype=np.int64)
    if _FAST and values.shape == (1,) and counts[0] >= _GROUP_MIN and 0.0 < values[0] < 1.0:
        # one binomial (a uniform prior): the steps below without their overhead, the same numbers
        part = _binomial(int(counts[0]), float(values[0]))
        if len(part.pmf) > _TRIM_WIDTH:
            part = _convolve(PoissonBinomial._of(0, np.ones(1), 0, 0.0), part)
        return PoissonBinomial._of(part.offset, part.pmf, part.n, part.trimmed)
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
    parts.sort(key=lambda q: len(q.pmf))
    if _FAST and parts and len(parts[0].pmf) <= _TRIM_WIDTH:
        result = parts.pop(0)  # = _convolve(the law of 0, it): its pmf times 1.0, its trimmed mass plus 0.0
    else:
        result = PoissonBinomial._of(0, np.ones(1), 0, 0.0)
    for part in parts:
        result = _convolve(result, part)
    # Bernoullis with beta in {0, 1} shift the law and add to n.
    return PoissonBinomial._of(result.offset + ones, result.pmf, n, result.trimmed)


def poisson_binomial_pmf(beta) -> np.ndarray:
    """``pmf[k] = Pr[S = k]`` for ``k = 0..n``, ``S = sum_i Bern(beta_i)``."""
    return distribution(beta).dense()


def poisson_binomial_sf_all(beta) -> np.ndarray:
    """``t[v] = Pr[S >= v]`` for ``v = 0..n+1`` (an upper bound that includes trimmed mass)."""
    return distribution(beta).sf_all()


def poisson_binomial_tail(beta, v):
    """``Pr[sum_i Bern(beta_i) >= v]`` for an integer ``v`` (scalar or array)."""
    _validate.elementwise("v", v)
    v_arr = np.asarray(v)
    if not np.issubdtype(v_arr.dtype, np.integer):
        if not np.all(np.isfinite(v_arr)) or np.any(v_arr != np.round(v_arr)):
            raise _validate.ArgumentError("v", f"v must be an integer number of successes, got {v!r}.")
        v_arr = v_arr.astype(np.int64)
    out = distribution(beta).sf(v_arr)
    return float(out) if out.ndim == 0 else out
