"""Benchmark: MMC's count in decision form against the bisected count it replaces, on the issue's 36 cells.

    .venv/bin/python tests/benchmarks/bench_mmc.py [--repeats 3]

Cells: mu in {0.5, 1, 2, 4} (mu-GDP) x k in {2, 10, 100} candidates x n in {10, 100, 1000} targets, all guessed
(p_i = 1/k), confidences 0.05, 0.5 and 0.95. For each cell:

* "old": ``prior_work._count_from_tail`` on ``prior_work._mmc_tail`` (tau bisected to 1e-13 in log tau for every
  v the search visits): the count as ``mmc_bound(..., confidence=...)`` computed it before issue 40;
* "new": ``prior_work.mmc_bound(profile, p, confidence=...)`` (``_mmc_count``: one recursion per visited v and
  confidence, stopped once its excess is positive).

Both run in this process, interleaved, best of --repeats each; the counts must be equal (the script exits 1
otherwise). Prints one row per cell and the total ratio old / new, with the machine's load average.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stages.bound import prior_work  # noqa: E402
from stages.bound.profiles import GaussianDP  # noqa: E402

CONFIDENCES = np.array([0.05, 0.5, 0.95])
CELLS = list(itertools.product([0.5, 1.0, 2.0, 4.0], [2, 10, 100], [10, 100, 1000]))


def old_counts(profile, p):
    k, guesses = prior_work.uniform_candidates(p), int(np.count_nonzero(p))
    ginv = prior_work._inverse_blow_up(profile)
    return prior_work._count_from_tail(lambda v: prior_work._mmc_tail(ginv, p.size, guesses, v, k), guesses,
                                       CONFIDENCES)


def new_counts(profile, p):
    return prior_work.mmc_bound(profile, p, confidence=CONFIDENCES)


def best_of(fn, repeats: int):
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, [int(c) for c in np.atleast_1d(out)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3, help="runs of each path per cell (the best is reported)")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| mu | k | n | counts (0.05 / 0.5 / 0.95) | old s | new s | speed-up |")
    print("|---|---|---|---|---|---|---|")
    total_old = total_new = 0.0
    mismatches = 0
    for mu, k, n in CELLS:
        profile, p = GaussianDP(mu), np.full(n, 1.0 / k)
        t_old, c_old = best_of(lambda: old_counts(profile, p), args.repeats)
        t_new, c_new = best_of(lambda: new_counts(profile, p), args.repeats)
        total_old, total_new = total_old + t_old, total_new + t_new
        same = c_old == c_new
        mismatches += not same
        counts = " / ".join(map(str, c_new)) + ("" if same else f" (old {' / '.join(map(str, c_old))})")
        print(f"| {mu:g} | {k} | {n} | {counts} | {t_old:.4f} | {t_new:.5f} | {t_old / t_new:.1f}x |", flush=True)
    print(f"\ntotal over {len(CELLS)} cells: old {total_old:.3f} s, new {total_new:.3f} s, "
          f"ratio {total_old / total_new:.1f}x; counts differ on {mismatches} cells")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
