"""Benchmark: the expected box's count with a prior per trial (Theorems 3 and 4 over the trials) vs Theorem 2 alone.

    .venv/bin/python tests/benchmarks/bench_expected_whole_prior.py [--trials 5] [--n 100] [--mu 0.268] [--per-trial]

R trials of n targets, each target with a Zipf prior over 10 values whose exponent is drawn uniformly from [1.2, 2.2]
(seed 0; a fresh draw per trial, as BayNet gives each trial's records their own conditionals), the prior successes of
the MAP guesses as Theorem 2's p_runs, mu-GDP (0.268: the quickstart's Gaussian at eps = 1, delta = 1e-5). It times,
in the same run, ``expected_count_bounds`` without the priors (Theorem 2 alone, the baseline) and with them (the
minimum of Theorem 2, Theorem 3 over the trials and Theorem 4 over the trials: THEORY.md sections 8 and 9), and prints
each theorem's counts at 0.05 / 0.5 / 0.95. ``--per-trial`` adds each trial's own one-run counts (``count_bounds`` on
its priors: what bound=one_run reports per trial), for comparison.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench_whole_prior import CONFIDENCES, best_of, zipf  # noqa: E402  (best_of clears the memos before every run)
from stages.bound import GaussianDP, theorems  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--mu", type=float, default=0.268)
    parser.add_argument("--per-trial", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    runs = [np.stack([zipf(10, s) for s in rng.uniform(1.2, 2.2, args.n)]) for _ in range(args.trials)]
    p_runs = np.stack([r.max(axis=1) for r in runs])
    profile = GaussianDP(args.mu)
    fmt = lambda c: " / ".join(str(int(x)) for x in np.atleast_1d(c))
    t_alone, (alone, _) = best_of(lambda: theorems.expected_count_bounds(profile, p_runs, CONFIDENCES), 1)
    t_whole, (counts, by) = best_of(lambda: theorems.expected_count_bounds(profile, p_runs, CONFIDENCES,
                                                                            distributions=runs), 1)
    print(f"{args.trials} trials x {args.n} targets, GaussianDP({args.mu}), counts at 0.05 / 0.5 / 0.95\n")
    print("| theorem | counts | time |\n|---|---|---|")
    print(f"| Theorem 2 alone (baseline) | {fmt(alone)} | {t_alone:.2f} s |")
    for name, value in by.items():
        print(f"| {name} | {fmt(value)} | |")
    print(f"| minimum (the expected box) | {fmt(counts)} | {t_whole:.2f} s ({t_whole / t_alone:.0f}x the baseline) |")
    if args.per_trial:
        for r, priors in enumerate(runs):
            start = time.perf_counter()
            own = theorems.count_bounds(profile, None, CONFIDENCES, distributions=priors)[0]
            print(f"| trial {r}'s own one-run count | {fmt(own)} | {time.perf_counter() - start:.2f} s |")


if __name__ == "__main__":
    main()
