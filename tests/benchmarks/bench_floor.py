"""Benchmark: the worst case's floor (``stages.bound.floor``, THEORY.md section 11), which every game now computes
beside its bound.

    .venv/bin/python tests/benchmarks/bench_floor.py [--repeats 2]

Two cases, each against a baseline timed in the same run (best of --repeats):

* the quickstart's game at eps = 1 (100 Zipf targets, 10 values, exponent 1.84, mu = 0.268), confidences
  0.05 / 0.5 / 0.95: ``floor_counts`` against ``count_bounds`` (the default bound the game computes anyway), so the
  ratio is what the floor adds to a game's bound;
* 200 targets with different priors over 343 values (Dirichlet(0.05) draws, seed 0: the PII prior's shape) under
  GaussianDP(1): ``floor_counts`` (the best number of classes m chosen on a fixed grid, then one vectorised quad)
  against the first implementation, kept here as the baseline: every m integrated class by class with scipy's quad.
  The counts must agree.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import integrate, special

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stages.bound import GaussianDP  # noqa: E402
from stages.bound import _floor_product as F  # noqa: E402
from stages.bound import floor  # noqa: E402
from stages.bound import theorems  # noqa: E402
from stages.bound.theorems import count_bounds  # noqa: E402
from stages.bound.whole_prior import Distributions  # noqa: E402

LEVELS = [0.05, 0.5, 0.95]


def best_of(fn, repeats: int):
    best, out = math.inf, None
    for _ in range(repeats):
        theorems._COUNTS_MEMO.clear()
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def _per_class_quad(mu: float, w: np.ndarray) -> float:
    """The baseline: sum_x w_x Pr[MAP right | x], one scalar quad per class (the first implementation)."""
    total = 0.0
    for x in range(w.size):
        thr = math.sqrt(2.0) * (mu / 2.0 + np.log(w[x] / np.delete(w, x)) / mu)

        def f(t, thr=thr):
            return math.exp(-t * t / 2.0) / math.sqrt(2.0 * math.pi) * float(np.prod(special.ndtr(thr - t)))

        val, err = integrate.quad(f, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12, limit=200)
        total += w[x] * (val - err)
    return total - 1e-12


def baseline_counts(mu: float, dists: Distributions) -> list[int]:
    """The floor with its Gaussian simplex as first implemented (every m, class by class); randomized response certified
    below the curve (the floor's other member) as the floor computes it."""
    low = F._profile_low(GaussianDP(mu))
    succ = []
    for shape in dists.shapes:
        top = F._top_values(shape, F.MAX_CLASSES)
        rr = [F._randomized_response(F._rr_epsilon(low, m), 0.0, top[: m + 1]) for m in range(1, top.size)]
        succ.append(max([float(shape.p)] + [_per_class_quad(mu, top[: m + 1]) for m in range(1, top.size)] + rr))
    return floor.counts_at(F.low_tail(np.array(succ), dists.counts), LEVELS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print("| case | floor | baseline (same run) | ratio | counts floor (5 / 50 / 95%) | counts baseline |")
    print("| --- | --- | --- | --- | --- | --- |")
    zipf = np.arange(1, 11, dtype=float) ** -1.84
    zipf /= zipf.sum()
    quick = Distributions.of([zipf] * 100)
    profile = GaussianDP(0.26805)
    t_floor, low = best_of(lambda: floor.floor_counts(profile, quick, LEVELS), args.repeats)
    t_bound, (up, _) = best_of(lambda: count_bounds(profile, None, LEVELS, distributions=quick), args.repeats)
    print(f"| quickstart game at eps = 1 (100 Zipf targets) | {t_floor:.3f} s | {t_bound:.2f} s (the default bound) | "
          f"{t_floor / t_bound:.3f}× | {' / '.join(map(str, low))} | bound {' / '.join(str(int(u)) for u in up)} |",
          flush=True)
    rng = np.random.default_rng(0)
    pii = Distributions.of([rng.dirichlet(np.full(343, 0.05)) for _ in range(200)])
    mu = GaussianDP(1.0)
    t_new, new = best_of(lambda: floor.floor_counts(mu, pii, LEVELS), args.repeats)
    t_old, old = best_of(lambda: baseline_counts(1.0, pii), 1)
    # the mixture floor (issue 41) holds the product floor among its components: never below it
    assert all(a >= b for a, b in zip(new, old)), (new, old)
    print(f"| 200 different priors over 343 values, mu = 1 | {t_new:.2f} s | {t_old:.2f} s (per-class quad, every m) | "
          f"{t_old / t_new:.1f}× | {' / '.join(map(str, new))} | {' / '.join(map(str, old))} |", flush=True)


if __name__ == "__main__":
    main()
