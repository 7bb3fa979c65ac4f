"""Benchmark: Theorem 6's count (Theorem 5 summed over M, stages/bound/marginal_run.py) against Theorem 4's, the count
it is searched below, in the same run: each one's time and counts, and the time ratio (Theorem 6 / Theorem 4).

    .venv/bin/python tests/benchmarks/bench_marginal_run.py [--sizes 100 200 1000] [--levels 0.5 0.95]
    .venv/bin/python tests/benchmarks/bench_marginal_run.py --scan 150 300 [--priors pii zipf]

Rows: n targets with issue 40's PII-like prior (0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01) at mu = 1,
and the quickstart's Zipf prior (10 values, exponent 1.84) at mu = 0.268 (eps = 1, delta = 1e-5), at the confidences
named: Theorem 4's ``prior_run_counts`` (no hint), then ``marginal_run_counts`` from those counts, as
``count_bounds(..., designated=True)`` runs it (no work budget), and above marginal_run.MARGINAL_RUN_DEFAULT_FROM
targets as the default minimum runs it (within marginal_run.WORK). The floor (the counts a real mechanism reaches,
THEORY.md section 11) is printed beside them: no valid count is below it.

``--scan LO HI``: the default ``count_bounds`` (Theorem 6 in the minimum above marginal_run.MARGINAL_RUN_DEFAULT_FROM
targets) at every n in [LO, HI], and the largest and smallest move from n to n + 1 (issue 40's no-cliff rule: at most
2 up), with each n's time and winner.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from stages.bound.floor import floor_counts  # noqa: E402
from stages.bound.marginal_run import MARGINAL_RUN_DEFAULT_FROM, WORK, marginal_run_counts  # noqa: E402
from stages.bound.prior_run import prior_run_counts  # noqa: E402
from stages.bound.profiles import GaussianDP  # noqa: E402
from stages.bound.whole_prior import Distributions  # noqa: E402

PII = np.array([0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01])
ZIPF = np.arange(1, 11.0) ** -1.84
ZIPF /= ZIPF.sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 1000])
    parser.add_argument("--levels", type=float, nargs="+", default=[0.5, 0.95])
    parser.add_argument("--priors", nargs="+", default=["pii", "zipf"], choices=["pii", "zipf"])
    parser.add_argument("--scan", type=int, nargs=2, metavar=("LO", "HI"))
    args = parser.parse_args()
    levels = np.asarray(args.levels)
    if args.scan:
        scan(args.priors, levels, *args.scan)
        return
    print("| prior | n | confidences | Theorem 4 | s | Theorem 6 | s | ratio (T6 / T4 time) | in the default (work <= "
          "WORK) | s | floor |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.priors:
        prior, mu = (PII, 1.0) if name == "pii" else (ZIPF, 0.268)
        for n in args.sizes:
            dists = Distributions.of(np.tile(prior, (n, 1)))
            t = time.perf_counter()
            t4 = prior_run_counts(GaussianDP(mu), dists, 1.0 - levels)
            s4 = time.perf_counter() - t
            t = time.perf_counter()
            t6 = marginal_run_counts(GaussianDP(mu), dists, 1.0 - levels, t4)
            s6 = time.perf_counter() - t
            fmt = lambda c: " / ".join(str(int(x)) for x in c)  # noqa: E731
            default, sd = "— (designated=True only)", ""
            if n > MARGINAL_RUN_DEFAULT_FROM:  # the default minimum's search: the same, within the work budget
                t = time.perf_counter()
                default = fmt(marginal_run_counts(GaussianDP(mu), dists, 1.0 - levels, t4, work=WORK))
                sd = f"{time.perf_counter() - t:.1f}"
            low = floor_counts(GaussianDP(mu), [prior] * n, levels)
            print(f"| {name} (mu = {mu}) | {n} | {fmt(levels * 100)}% | {fmt(t4)} | {s4:.2f} | {fmt(t6)} | {s6:.1f} | "
                  f"{s6 / s4:.1f}x | {default} | {sd} | {fmt(low)} |", flush=True)


def scan(priors, levels, lo: int, hi: int) -> None:
    """The default count at every n in [lo, hi]: its moves from n to n + 1 (up to 2 allowed, down where Theorem 6
    joins)."""
    from stages.bound.theorems import count_bounds, winner

    for name in priors:
        prior, mu = (PII, 1.0) if name == "pii" else (ZIPF, 0.268)
        last, ups, downs, times = None, [], [], []
        for n in range(lo, hi + 1):
            t = time.perf_counter()
            counts, by = count_bounds(GaussianDP(mu), None, list(levels), distributions=[prior] * n)
            times.append(time.perf_counter() - t)
            print(f"{name} n = {n}: {' / '.join(str(int(c)) for c in counts)} ({winner(by)[-1][:40]}), "
                  f"{times[-1]:.2f} s", flush=True)
            if last is not None:
                moves = np.asarray(counts) - last
                ups.append(int(moves.max()))
                downs.append((int(moves.min()), n))
            last = np.asarray(counts)
        print(f"| {name} (mu = {mu}) | [{lo}, {hi}] | largest move up {max(ups)}, largest down {min(downs)[0]} "
              f"(to n = {min(downs)[1]}) | {np.median(times):.2f} s median, {max(times):.2f} s max |", flush=True)


if __name__ == "__main__":
    main()
