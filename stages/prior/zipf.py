"""Zipf prior: the r-th most common secret has probability proportional to r^-s (numerical passwords).

Section 4.1 of the paper models 9-digit numerical passwords with Zipf's law and scales the prior down
to m candidates per canary. Candidate j (ordinal value j) is the secret of rank j + 1, so candidate 0
is the most likely one, unless `permutation_seed` is set: then each target's ranks are assigned to
its candidates by an independent random permutation drawn from that seed, so the most likely secret
differs between canaries (which matters for the `within` metric, whose windows are ordinal).
"""
from __future__ import annotations

import csv
import os
import re

import numpy as np
from scipy import optimize, special

from stages.bound import _validate
from stages.prior.base import Prior, data_path

__all__ = ["ZipfPrior", "zipf_probabilities", "fit_zipf_exponent", "read_counts"]

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


def read_counts(path) -> np.ndarray:
    """Counts from a CSV with a `count` column, or from `uniq -c` text lines '<count> <item>'."""
    path = os.fspath(path)
    if path.endswith(".csv"):
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.DictReader(f)
            if "count" not in (reader.fieldnames or []):
                raise ValueError(f"counts_file {path} must have a 'count' column, got columns {reader.fieldnames}.")
            return np.asarray([float(row["count"]) for row in reader])
    pattern = re.compile(rb"^\s*(\d+) ")
    with open(path, "rb") as f:
        return np.asarray([float(m.group(1)) for line in f if (m := pattern.match(line))])


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
        if counts_file is not None:
            # The fit replaces `exponent`; params() reports the fitted value.
            exponent = fit_zipf_exponent(read_counts(data_path(counts_file, data_dir)))
        self.exponent = _validate.positive("exponent", exponent, allow_zero=True)
        self.permutation_seed = permutation_seed
        by_rank = zipf_probabilities(m, self.exponent)
        probabilities = np.broadcast_to(by_rank, (n, m)).copy()
        if permutation_seed is not None:
            rng = np.random.default_rng(_validate.integer("permutation_seed", permutation_seed, minimum=0))
            ranks = rng.permuted(np.broadcast_to(np.arange(m), (n, m)), axis=1)  # ranks[i, j]: rank of candidate j
            probabilities = by_rank[ranks]
        super().__init__(probabilities)

    def params(self) -> dict:
        return {
            **super().params(),
            "exponent": self.exponent,
            "counts_file": self.counts_file,
            "permutation_seed": self.permutation_seed,
        }
