"""Zipf prior: the r-th most common secret has probability proportional to r^-s (numerical passwords).

Section 4.1 of the paper models 9-digit numerical passwords with Zipf's law and scales the prior down
to m candidates per canary. Candidate j (ordinal value j) is the secret of rank j + 1, so candidate 0
is the most likely one, unless `permutation_seed` is set: then each target's ranks are assigned to
its candidates by an independent random permutation drawn from that seed, so the most likely secret
differs between canaries (which matters for the `within` metric, whose windows are ordinal).
"""
from __future__ import annotations

import csv
import math
import os

import numpy as np
from scipy import optimize, special

from stages._bisect import smallest_true
from stages.bound import _validate
from stages.prior.base import Prior, data_path

__all__ = [
    "ZipfPrior", "zipf_probabilities", "fit_zipf_exponent", "read_counts",
    "generalized_harmonic", "zipf_rank_probability", "zipf_median_rank", "zipf_exponent_interval",
]

_MAX_EXPONENT = 50.0


def zipf_probabilities(domain_size: int, exponent: float) -> np.ndarray:
    """Truncated Zipf law on ranks 1..m: Pr[rank r] = r^-s / sum_{q<=m} q^-s, as an array (m,)."""
    log_w = -exponent * np.log(np.arange(1, domain_size + 1))
    return np.exp(log_w - special.logsumexp(log_w))


def fit_zipf_exponent(counts) -> float:
    """Maximum-likelihood exponent s of a Zipf law truncated to the observed ranks 1..K.

    counts are how often each of K items occurred; they are sorted into ranks (largest first) and
    the log-likelihood sum_r c_r (-s log r) - C log H(K, s), concave in s, is maximised on
    [0, 50] (a uniform sample gives s = 0).
    """
    c = np.sort(np.asarray(counts, dtype=float).reshape(-1))[::-1]
    if c.size < 2 or np.any(~np.isfinite(c)) or np.any(c < 0) or c.sum() <= 0:
        raise ValueError(f"counts must hold at least two non-negative finite counts with a positive total, got {c.size} values.")
    log_r = np.log(np.arange(1, c.size + 1))
    total = c.sum()
    mean_log_r = float(c @ log_r) / total

    def score(s: float) -> float:
        # d/ds of the mean log-likelihood: E_s[log r] - mean observed log r.
        log_w = -s * log_r
        return float(np.exp(log_w - special.logsumexp(log_w)) @ log_r) - mean_log_r

    if score(0.0) <= 0.0:
        return 0.0
    if score(_MAX_EXPONENT) >= 0.0:
        return _MAX_EXPONENT
    return float(optimize.brentq(score, 0.0, _MAX_EXPONENT, xtol=1e-12))


def _count(text: str, where: str) -> float:
    """One count: a finite non-negative number, else a ValueError naming where it came from and the value."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value < 0:
        raise ValueError(f"{where} must be a non-negative number, got {_short(text)}; fix or remove that line.")
    return value


_FORMATS = "give a CSV with a 'count' column or `uniq -c` text lines '<count> <item>'"


def _short(text: str, limit: int = 40) -> str:
    """repr(text), cut to about `limit` characters (a line of a wrong file can be very long)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def _check_text_file(path: str) -> None:
    """Refuse an empty file, and a binary one before its bytes reach an error message: one sentence each, naming
    the file. Binary, judged on the first 64 KiB: a NUL byte, more than 5% control characters, or bytes that are
    not UTF-8 with more than 30% of them above 127 (Latin-1 text, e.g. `uniq -c` of passwords, is still text)."""
    import codecs

    with open(path, "rb") as f:
        head = f.read(1 << 16)
    if not head.strip():
        raise ValueError(f"counts_file {path} is empty; {_FORMATS}.")
    data = np.frombuffer(head, dtype=np.uint8)
    control = ((data < 32) & ~np.isin(data, list(b"\t\n\r\f\v"))) | (data == 127)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)  # a character cut at the end is fine
        utf8 = True
    except UnicodeDecodeError:
        utf8 = False
    if b"\x00" in head or control.mean() > 0.05 or (not utf8 and (data > 127).mean() > 0.3):
        raise ValueError(f"counts_file {path} is not a text file (it holds binary data); {_FORMATS}.")


def read_counts(path) -> np.ndarray:
    """Counts from a CSV with a `count` column, or from `uniq -c` text lines '<count> <item>'.

    A count that is not a finite non-negative number (text, NaN, a negative value), a file with no
    counts, an empty or a binary file raises a ValueError naming the file (and the line and the value).
    """
    path = os.fspath(path)
    _check_text_file(path)
    counts = []
    if path.endswith(".csv"):
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.DictReader(f)
            if "count" not in (reader.fieldnames or []):
                columns = ", ".join(_short(name, 20) for name in (reader.fieldnames or [])[:8])
                more = f" and {len(reader.fieldnames) - 8} more" if len(reader.fieldnames or []) > 8 else ""
                raise ValueError(f"counts_file {path} must have a 'count' column in its first line, got columns "
                                 f"{columns}{more}; {_FORMATS}.")
            for row in reader:
                text = (row.get("count") or "").strip()
                counts.append(_count(text, f"counts_file {path} line {reader.line_num}: the count"))
    else:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                line = raw.decode("utf-8", errors="replace").strip()
                if line:  # blank lines carry nothing
                    counts.append(_count(line.split(maxsplit=1)[0], f"counts_file {path} line {number}: the count"))
    if not counts:
        raise ValueError(f"counts_file {path} holds no counts; {_FORMATS}.")
    return np.asarray(counts, dtype=float)


class ZipfPrior(Prior):
    """n targets, each with a Zipf(exponent) prior over m candidates (exponent fitted to counts_file if given)."""

    name = "zipf"

    def __init__(
        self,
        n_targets: int = 100,
        domain_size: int = 10,
        exponent: float = 1.0,
        counts_file: str | None = None,
        data_dir: str | None = None,
        permutation_seed: int | None = None,
    ) -> None:
        n = _validate.integer("n_targets", n_targets, minimum=1)
        m = _validate.integer("domain_size", domain_size, minimum=1)
        self.counts_file = counts_file
        self.counts_path = None
        if counts_file is not None:
            # The fit replaces `exponent`; params() reports the fitted value.
            self.counts_path = data_path(counts_file, data_dir)
            counts = read_counts(self.counts_path)
            try:
                exponent = fit_zipf_exponent(counts)
            except ValueError as exc:
                raise ValueError(f"counts_file {self.counts_path}: {exc}") from exc
        self.exponent = _validate.positive("exponent", exponent, allow_zero=True)
        self.permutation_seed = permutation_seed
        by_rank = zipf_probabilities(m, self.exponent)
        probabilities = np.broadcast_to(by_rank, (n, m)).copy()
        if permutation_seed is not None:
            rng = np.random.default_rng(_validate.integer("permutation_seed", permutation_seed, minimum=0))
            ranks = rng.permuted(np.broadcast_to(np.arange(m), (n, m)), axis=1)  # ranks[i, j]: rank of candidate j
            probabilities = by_rank[ranks]
        super().__init__(probabilities)

    def data_files(self) -> list:
        """The data files this prior read (the counts file), for the stage keys."""
        return [self.counts_path] if self.counts_path is not None else []

    def params(self) -> dict:
        return {
            **super().params(),
            "exponent": self.exponent,
            "counts_file": self.counts_file,
            "permutation_seed": self.permutation_seed,
        }


# ---------------------------------------------------------------------------------------------
# Zipf laws over domains too large for an array (10^9 nine-digit passwords), and the fit's uncertainty.

#: Below this many ranks the generalized harmonic number is summed term by term.
_EXACT_TERMS = 10_000


def generalized_harmonic(domain_size, exponent: float) -> float:
    """H_N(s) = sum_{r=1}^{N} r^-s, for any N >= 1 and s >= 0 without an N-wide array.

    The first 10^4 terms are summed exactly; the rest by Euler-Maclaurin with three correction
    terms (error below 1e-16 relative for s >= 0). For s > 1 this equals zeta(s) - zeta(s, N + 1).
    """
    n = _validate.integer("domain_size", domain_size, minimum=1)
    s = float(_validate.positive("exponent", exponent, allow_zero=True))
    head = np.arange(1, min(n, _EXACT_TERMS) + 1, dtype=float)
    total = float(np.sum(np.exp(-s * np.log(head))[::-1]))  # smallest terms first
    if n <= _EXACT_TERMS:
        return total
    m = float(_EXACT_TERMS + 1)  # the tail sums f(r) = r^-s over r = m..n
    f = lambda x: x ** -s  # noqa: E731
    d1 = lambda x: -s * x ** (-s - 1.0)  # noqa: E731
    d3 = lambda x: -s * (s + 1.0) * (s + 2.0) * x ** (-s - 3.0)  # noqa: E731
    log_ratio = math.log(n / m)
    # integral_m^n x^-s dx = m^(1-s) (e^{(1-s) log(n/m)} - 1) / (1 - s), written to stay exact near s = 1
    integral = log_ratio if s == 1.0 else m ** (1.0 - s) * math.expm1((1.0 - s) * log_ratio) / (1.0 - s)
    tail = integral + (f(m) + f(float(n))) / 2.0 + (d1(float(n)) - d1(m)) / 12.0 - (d3(float(n)) - d3(m)) / 720.0
    return total + tail


def zipf_rank_probability(rank, domain_size, exponent: float):
    """Pr[rank r] = r^-s / H_N(s) of a Zipf law on ranks 1..N (N may be 10^9 or more); vectorised over rank."""
    n = _validate.integer("domain_size", domain_size, minimum=1)
    r = np.asarray(rank, dtype=float)
    if np.any(~np.isfinite(r)) or np.any(r < 1) or np.any(r > n) or np.any(r != np.floor(r)):
        raise ValueError(f"rank must be an integer in [1, domain_size = {n}], got {rank!r}.")
    s = float(_validate.positive("exponent", exponent, allow_zero=True))
    out = np.exp(-s * np.log(r) - math.log(generalized_harmonic(n, s)))
    return float(out) if out.ndim == 0 else out


def zipf_median_rank(domain_size, exponent: float) -> int:
    """The rank of a typical secret: the smallest r with Pr[rank <= r] >= 1/2 (bisection on H_r / H_N)."""
    n = _validate.integer("domain_size", domain_size, minimum=1)
    half = generalized_harmonic(n, exponent) / 2.0
    return smallest_true(lambda r: generalized_harmonic(r, exponent) >= half, 0, n)  # H_0 = 0 < half <= H_n


def zipf_exponent_interval(counts, level: float = 0.95) -> tuple[float, float, float]:
    """(MLE, low, high): the profile-likelihood interval of fit_zipf_exponent's exponent.

    Treats the counts as independent draws of a Zipf law truncated to the observed ranks 1..K and
    keeps every s whose log-likelihood is within chi2_1(level) / 2 of the maximum (Wilks). This is
    the sampling uncertainty only; it says nothing about whether a Zipf law fits (see docs/pages/reproducing.md, "Zipf calibration").
    """
    from scipy import stats

    conf = float(_validate.probability("level", level, open_low=True, open_high=True))
    c = np.sort(np.asarray(counts, dtype=float).reshape(-1))[::-1]
    s_hat = fit_zipf_exponent(c)
    log_r = np.log(np.arange(1, c.size + 1))
    total = c.sum()

    def log_likelihood(s: float) -> float:
        return float(-s * (c @ log_r) - total * special.logsumexp(-s * log_r))

    drop = log_likelihood(s_hat) - stats.chi2.ppf(conf, 1) / 2.0
    gap = lambda s: log_likelihood(s) - drop  # noqa: E731  (positive inside the interval)
    low = 0.0 if gap(0.0) >= 0 else float(optimize.brentq(gap, 0.0, s_hat, xtol=1e-12))
    high = _MAX_EXPONENT if gap(_MAX_EXPONENT) >= 0 else float(optimize.brentq(gap, s_hat, _MAX_EXPONENT, xtol=1e-12))
    return s_hat, low, high
