"""Benchmark: Theorem 4's count (MMC's argument with the whole prior, an LP over the law of the count) vs Theorem 3's.

    .venv/bin/python tests/benchmarks/bench_prior_run.py [--sizes 100 200] [--repeats 2] [--designated | --groups 2 4
        | --search 1 2 4]

For n targets with the quickstart's Zipf prior (10 values, exponent 1.84) under the quickstart's Gaussian mechanism
at eps = 1, delta = 1e-5, it times in the same run, for confidences 0.05 / 0.5 / 0.95:

* "Theorem 3": ``search.whole_prior_counts`` (the split at per-target thresholds, relaxed one-target LPs), the
  baseline, its memo of ExcessCurves cleared before every run;
* "Theorem 4": ``prior_run.prior_run_counts`` searched below Theorem 3's counts (``at_most=True``, as
  ``count_bounds`` does);
* with ``--designated``, "Theorem 5": ``designated_run.designated_run_counts`` searched below Theorem 4's counts (as
  ``count_bounds(..., designated=True)`` does; THEORY.md section 10), its ratio taken against Theorem 4.

Prints a markdown table: times in seconds (best of --repeats), the ratio Theorem 4 / Theorem 3 (or Theorem 5 /
Theorem 4), and the counts.

With ``--groups G [G ...]``: n targets with *different* binary priors (p_i evenly spaced from 0.5 to 0.9, as the
tabular games' per-record conditionals differ), Theorem 4 with at most G groups of targets (``bound.groups``) against
the default 2 groups, in the same run.

With ``--search G [G ...]``: the count search as it is (a decision takes only cuts that break by more than
``_DECIDE_FLOOR``, absolute, and stops once a point of the LP with every grid cut is above its target: ``_inner``)
against the search before both (the floor 0, no such stop), in the same run, on the same binary priors at G groups
(1: the quickstart's Zipf prior shared by every target, one group whatever G).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_whole_prior import best_of  # noqa: E402  (clears the memos before every run)
from stages.bound import GaussianDP  # noqa: E402
from stages.bound import prior_run  # noqa: E402
from stages.bound.designated_run import designated_run_counts  # noqa: E402
from stages.bound.prior_run import prior_run_counts  # noqa: E402
from stages.bound.search import whole_prior_counts  # noqa: E402
from stages.bound.whole_prior import Distributions  # noqa: E402

CONFIDENCES = np.array([0.05, 0.5, 0.95])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--designated", action="store_true", help="time Theorem 5 against Theorem 4")
    parser.add_argument("--groups", type=int, nargs="+", help="different binary priors: Theorem 4 with these many "
                        "groups against the default 2")
    parser.add_argument("--search", type=int, nargs="+", help="the count search as it is against the search with "
                        "every cut and no proven stop, at these many groups (1: the Zipf prior)")
    args = parser.parse_args()
    if args.groups:
        return groups_table(args)
    if args.search:
        return search_table(args)
    profile = GaussianDP.from_epsilon_delta(1.0, 1e-5)
    prior = np.arange(1, 11.0) ** -1.84
    prior /= prior.sum()
    a, b = ("Theorem 4", "Theorem 5") if args.designated else ("Theorem 3", "Theorem 4")
    print(f"| n | {a} | {b} | {b} / {a} | counts {a} | counts {b} |")
    print("|---|---|---|---|---|---|")
    for n in args.sizes:
        dists = Distributions.of(np.tile(prior, (n, 1)))
        t3, c3 = best_of(lambda: whole_prior_counts(profile, dists, 1 - CONFIDENCES), args.repeats)
        t4, c4 = best_of(lambda: prior_run_counts(profile, dists, 1 - CONFIDENCES, hint=c3, at_most=True), args.repeats)
        if args.designated:
            t5, c5 = best_of(lambda: designated_run_counts(profile, dists, 1 - CONFIDENCES, c4), args.repeats)
            (t3, c3), (t4, c4) = (t4, c4), (t5, c5)
        print(f"| {n:,} | {t3:.2f} s | {t4:.2f} s | {t4 / t3:.1f}x | {' / '.join(map(str, c3))} | "
              f"{' / '.join(map(str, c4))} |", flush=True)


def groups_table(args) -> None:
    profile = GaussianDP.from_epsilon_delta(1.0, 1e-5)
    print("| n | groups | 2 groups (default) | G groups | G / 2 | counts 2 groups | counts G groups |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        p = np.linspace(0.5, 0.9, n)
        dists = Distributions.of(np.stack([p, 1 - p], axis=1))
        hint = whole_prior_counts(profile, dists, 1 - CONFIDENCES)
        t2, c2 = best_of(lambda: prior_run_counts(profile, dists, 1 - CONFIDENCES, hint=hint, groups=2), args.repeats)
        for g in args.groups:
            tg, cg = best_of(lambda: prior_run_counts(profile, dists, 1 - CONFIDENCES, hint=hint, groups=g),
                             args.repeats)
            print(f"| {n:,} | {g} | {t2:.2f} s | {tg:.2f} s | {tg / t2:.1f}x | {' / '.join(map(str, c2))} | "
                  f"{' / '.join(map(str, cg))} |", flush=True)

def search_table(args) -> None:
    profile = GaussianDP.from_epsilon_delta(1.0, 1e-5)
    print("| n | priors | groups | before (every cut, no proven stop) | now | before / now | counts before | counts now |")
    print("|---|---|---|---|---|---|---|---|")
    zipf = np.arange(1, 11.0) ** -1.84
    zipf /= zipf.sum()
    floor, margin = prior_run._DECIDE_FLOOR, prior_run._INNER_MARGIN
    for n in args.sizes:
        p = np.linspace(0.5, 0.9, n)
        for g in args.search:
            rows = np.tile(zipf, (n, 1)) if g == 1 else np.stack([p, 1 - p], axis=1)
            dists = Distributions.of(rows)
            hint = whole_prior_counts(profile, dists, 1 - CONFIDENCES)
            run = lambda: prior_run_counts(profile, dists, 1 - CONFIDENCES, hint=hint, groups=max(g, 1))
            prior_run._DECIDE_FLOOR, prior_run._INNER_MARGIN = 0.0, float("inf")
            try:
                t0, c0 = best_of(run, args.repeats)
            finally:
                prior_run._DECIDE_FLOOR, prior_run._INNER_MARGIN = floor, margin
            tf, cf = best_of(run, args.repeats)
            what = "Zipf, shared" if g == 1 else "binary, 0.5-0.9"
            print(f"| {n:,} | {what} | {g} | {t0:.2f} s | {tf:.2f} s | {t0 / tf:.1f}x | {' / '.join(map(str, c0))} | "
                  f"{' / '.join(map(str, cf))} |", flush=True)


if __name__ == "__main__":
    main()
