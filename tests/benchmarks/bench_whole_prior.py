"""Benchmark: count_bound with each target's whole prior (Theorem 3 joins the minimum) vs the p-only path.

    .venv/bin/python tests/benchmarks/bench_whole_prior.py [--sizes 100000 1000000] [--repeats 2]

For n targets sharing 10 distinct priors (Zipf over 10 values with exponents 1.0, 1.1, ..., 1.9; equal
counts) and mu = 1 GDP, it times in the same run:

* "p only": ``count_bound(profile, p, [0.05, 0.5, 0.95])`` with p_i = max pi_i (Theorem 1 alone), the baseline;
* "whole prior": ``count_bound(profile, None, [0.05, 0.5, 0.95], distributions=Distributions)`` (the minimum of
  Theorem 1 and Theorem 3, the relaxed one-target LPs solved from scratch: the memo of ExcessCurves is cleared
  before every run), and the time the grouping of an (n, 10) matrix into Distributions takes on top.

Prints a markdown table: times in seconds (best of --repeats), the ratio whole / p-only, and the counts of
both (the whole-prior counts are never above the p-only ones).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from stages.bound import GaussianDP, count_bound, theorems, whole_prior  # noqa: E402
from stages.bound.whole_prior import Distributions  # noqa: E402

CONFIDENCES = [0.05, 0.5, 0.95]


def zipf(k: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1) ** s
    return w / w.sum()


def best_of(fn, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        whole_prior._CURVES.clear()
        theorems._COUNTS_MEMO.clear()  # every run computes its counts (count_bounds memoises repeated calls)
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    profile = GaussianDP(1.0)
    shapes = [zipf(10, s) for s in np.arange(1.0, 2.0, 0.1)]
    print("| n | p only | whole prior | grouping (n, 10) | whole / p-only | counts p only | counts whole prior |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        rows = np.repeat(np.stack(shapes), n // len(shapes), axis=0)
        rows = rows[: n] if len(rows) >= n else np.concatenate([rows, np.repeat(shapes[:1], n - len(rows), axis=0)])
        start = time.perf_counter()
        dists = Distributions.of(rows)
        grouping = time.perf_counter() - start
        p = rows.max(axis=1)
        t_p, c_p = best_of(lambda: count_bound(profile, p, CONFIDENCES), args.repeats)
        t_w, c_w = best_of(lambda: count_bound(profile, None, CONFIDENCES, distributions=dists), args.repeats)
        assert np.all(np.asarray(c_w) <= np.asarray(c_p)), (c_w, c_p)
        print(f"| {n:,} | {t_p:.3f} s | {t_w:.3f} s | {grouping:.3f} s | {t_w / t_p:.2f}x | "
              f"{' / '.join(map(str, np.atleast_1d(c_p)))} | {' / '.join(map(str, np.atleast_1d(c_w)))} |")


if __name__ == "__main__":
    main()
