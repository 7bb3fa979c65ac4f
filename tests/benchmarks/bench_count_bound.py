"""Benchmark: count_bound at three confidences vs a straightforward implementation, same run.

    .venv/bin/python tests/benchmarks/bench_count_bound.py [--max-n 1000000] [--baseline-max-n 10000]

For each profile (mu = 1 GDP and a DP-SGD run) and n in {1e2, 1e4, 1e5, 1e6} heterogeneous priors
p_i ~ Beta(0.5, 5) (all distinct), it times ``count_bound(profile, p, [0.05, 0.5, 0.95])`` and the
straightforward way to compute the same numbers: the O(n^2) Poisson-binomial recursion, the paper's
dual alpha by brute force over j, a 100-point eps grid and a linear scan over v. The baseline
runs up to --baseline-max-n (it is quadratic); beyond that its time is extrapolated as n^2 from
the largest measured n and marked "(est.)". Prints a markdown table for the README.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stages.bound.profiles import DPSGD, GaussianDP  # noqa: E402
from stages.bound.theorems import beta, count_bound  # noqa: E402

CONFIDENCES = [0.05, 0.5, 0.95]


def naive_pmf(b: np.ndarray) -> np.ndarray:
    p = np.zeros(len(b) + 1)
    p[0] = 1.0
    for k, x in enumerate(b):
        p[1 : k + 2] = p[1 : k + 2] * (1 - x) + p[: k + 1] * x
        p[0] *= 1 - x
    return p


def naive_count_bound(profile, p: np.ndarray, confidences) -> list[int]:
    """Grid over eps; for each eps the full tail and the paper's alpha for every v; linear scan."""
    n = len(p)
    top = min(profile.epsilon(1e-12 / n), 200.0)
    best = np.ones(n + 2)
    for eps in np.linspace(0.0, top, 100):
        pmf = naive_pmf(beta(eps, p))
        tail = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]])  # tail[v] = Pr[S >= v]
        d = float(profile.delta(eps))
        bound = np.ones(n + 2)
        for v in range(1, n + 2):
            j = np.arange(1, n + 1)
            alpha = max(0.0, float(np.max((tail[np.maximum(v - j, 0)] - tail[v]) / j)))
            bound[v] = min(1.0, tail[v] + alpha * n * d)
        best = np.minimum(best, bound)
    return [int(np.argmax(best <= 1 - c)) - 1 for c in confidences]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-n", type=int, default=10**6)
    ap.add_argument("--baseline-max-n", type=int, default=10**3)
    args = ap.parse_args()
    profiles = {
        "GaussianDP(mu=1)": GaussianDP(1.0),
        "DPSGD(sigma=1, q=0.01, T=1000)": DPSGD(1.0, 0.01, 1000),
    }
    sizes = [n for n in (10**2, 10**3, 10**4, 10**5, 10**6) if n <= args.max_n]
    rows = []
    for name, profile in profiles.items():
        profile.delta_upper(1.0)  # build accountant tables outside the timed region
        last_baseline = None
        for n in sizes:
            p = np.random.default_rng(n).beta(0.5, 5.0, n)
            t0 = time.perf_counter()
            ours = count_bound(profile, p, CONFIDENCES)
            t_ours = time.perf_counter() - t0
            if n <= args.baseline_max_n:
                t0 = time.perf_counter()
                theirs = naive_count_bound(profile, p, CONFIDENCES)
                t_base = time.perf_counter() - t0
                last_baseline = (n, t_base)
                base_txt = f"{t_base:.2f} s"
                agree = "yes" if all(a <= b for a, b in zip(ours, theirs)) else "NO"
            else:
                n0, t0b = last_baseline
                t_base = t0b * (n / n0) ** 2
                base_txt = f"{t_base:.3g} s (est.)"
                agree = "-"
            rows.append((name, n, f"{t_ours:.2f} s", base_txt, f"{t_base / t_ours:.3g}x", [int(x) for x in ours], agree))
            print(rows[-1], flush=True)
    print()
    print("| profile | n | count_bound (3 confidences) | straightforward | speed-up | counts (5%, 50%, 95%) | ours <= baseline |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")


if __name__ == "__main__":
    main()
