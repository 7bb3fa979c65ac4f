"""Benchmark: the floor as a certified mixture (``stages.bound.floor_mixture``, THEORY.md section 11, Lemma 7) on the
quickstart's game and on issue 41's cells, against the default bound (``count_bounds``) timed in the same run.

    .venv/bin/python tests/benchmarks/bench_floor_mixture.py [--repeats 2]

Prints seconds (best of --repeats) and the ratio floor / bound; the floor of a quickstart game (100 Zipf targets, 10
values, exponent 1.84, mu = 0.268, confidences 0.05 / 0.5 / 0.95) is the issue's budget (<= 1 s).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_floor import LEVELS, best_of  # noqa: E402  (the floor benchmark's timing: best of, memo cleared)
from stages.bound import GaussianDP, floor_counts  # noqa: E402
from stages.bound.theorems import count_bounds  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    zipf = np.arange(1, 11, dtype=float) ** -1.84
    zipf /= zipf.sum()
    pii = np.array([0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01])
    cases = [("quickstart game (Zipf 1.84 over 10, mu = 0.268, n = 100)", GaussianDP(0.26805), [zipf] * 100),
             ("uniform over 10, mu = 1, n = 1000", GaussianDP(1.0), [np.full(10, 0.1)] * 1000),
             ("PII-like, mu = 1, n = 1000", GaussianDP(1.0), [pii] * 1000),
             ("uniform over 100, mu = 4, n = 1000", GaussianDP(4.0), [np.full(100, 0.01)] * 1000)]
    print("| case | floor (s) | bound (s) | floor / bound | floor 0.05 / 0.5 / 0.95 | bound |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, profile, dists in cases:
        t_floor, low = best_of(lambda: floor_counts(profile, dists, LEVELS), args.repeats)
        t_bound, (up, _) = best_of(lambda: count_bounds(profile, None, LEVELS, distributions=dists), 1)
        print(f"| {name} | {t_floor:.2f} | {t_bound:.2f} | {t_floor / t_bound:.2f} | {' / '.join(map(str, low))} | "
              f"{' / '.join(str(int(u)) for u in up)} |", flush=True)


if __name__ == "__main__":
    main()
