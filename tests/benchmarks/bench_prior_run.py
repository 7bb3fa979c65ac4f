"""Benchmark: Theorem 4's count (MMC's argument with the whole prior) as it is (version 3: its dual on a grid of s, one
HiGHS model per PriorRun) against version 2 (cutting planes in s, scipy's linprog rebuilt every round: the frozen copy
``_prior_run_v2.py``), in the same run; and the issue-40 targets at large n.

    .venv/bin/python tests/benchmarks/bench_prior_run.py [--sizes 100 200] [--repeats 1] [--large 1000 10000]
        [--no-baseline]

Rows, each timed best of --repeats (seconds) with the counts at the confidences named:

* "PII": n targets with the prior (0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01) at mu = 1, confidences
  0.5 / 0.95, each count searched from n / 2 (``prior_run_counts`` without a hint);
* "quickstart": the quickstart's Zipf prior (10 values, exponent 1.84) at eps = 1 (mu = 0.268), 0.05 / 0.5 / 0.95,
  searched below Theorem 3's counts (``at_most=True``, as ``count_bounds`` does);
* "Dirichlet": 100 targets, each its own prior (seeded Dirichlet(1) over 10 values), mu = 1, 0.5 / 0.95, two groups;
* with --large, the current version alone on the PII prior at those n (version 2 stops at 200 targets) and on priors
  uniform over 10 at 0.95 against MMC's count; at n <= --exact-up-to also with every count its own block (the exact
  dual on the grid, version 3's LP) for the count blocks' speed-up (Corollary 9.3), same run.

The ratio is version 2's time / the current version's (exact dual / count blocks in the --large rows).

With --family N [N ...], the current version alone on tests/benchmarks/bench_whole_prior.py's case through
``count_bounds`` (the whole call's time, Theorem 4 searched below the other theorems' counts, default groups): N targets
sharing 10 Zipf priors (exponents 1.0, 1.1, ..., 1.9; target i has shape i % 10) at mu = 1, 0.05 / 0.5 / 0.95, with
Theorem 3's counts; --groups sets Theorem 4's groups (two by default: ``_near`` keeps its LPs small above n = 1024).

With --issue, the current version alone on issue 40's cases, through ``count_bounds`` (Theorem 4 searched below the
other theorems' counts, as the default does; the time is the whole call's): 100 targets each with its own prior
(Dirichlet(1) over 10 values, seed 0) at mu = 1, 0.05 / 0.5 / 0.95; the PII prior, n = 1000, 0.5 / 0.95; priors
uniform over 10, n = 1000, 0.95; the quickstart's uniform game at eps = 8 (n = 100, 0.05 / 0.5 / 0.95).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _prior_run_v2 as old  # noqa: E402
from stages.bound import GaussianDP  # noqa: E402
from stages.bound import prior_run as new  # noqa: E402
from stages.bound.prior_work import mmc_bound  # noqa: E402
from stages.bound.search import whole_prior_counts  # noqa: E402
from stages.bound.whole_prior import Distributions  # noqa: E402

PII = np.array([0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01])


def timed(fn, repeats: int):
    best, out = np.inf, None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def cases(sizes):
    zipf = np.arange(1, 11.0) ** -1.84
    zipf /= zipf.sum()
    quick = GaussianDP.from_epsilon_delta(1.0, 1e-5)
    rng = np.random.default_rng(40)
    for n in sizes:
        dists = Distributions.of(np.tile(PII, (n, 1)))
        yield f"PII, n = {n}", GaussianDP(1.0), dists, np.array([0.5, 0.05]), None
    dists = Distributions.of(np.tile(zipf, (100, 1)))
    targets = np.array([0.95, 0.5, 0.05])
    yield "quickstart, n = 100", quick, dists, targets, whole_prior_counts(quick, dists, targets)
    dists = Distributions.of(rng.dirichlet(np.ones(10), size=100))
    yield "Dirichlet, n = 100", GaussianDP(1.0), dists, np.array([0.5, 0.05]), None


def issue(repeats: int) -> None:
    from stages.bound import theorems
    rng = np.random.default_rng(0)
    own = [rng.dirichlet(np.ones(10)) for _ in range(100)]
    rows = [("100 targets, own Dirichlet priors, mu = 1", GaussianDP(1.0), own, [0.05, 0.5, 0.95]),
            ("PII, n = 1,000, mu = 1", GaussianDP(1.0), [PII] * 1000, [0.5, 0.95]),
            ("uniform over 10, n = 1,000, mu = 1", GaussianDP(1.0), [np.full(10, 0.1)] * 1000, [0.95]),
            ("quickstart uniform, eps = 8, n = 100", GaussianDP.from_epsilon_delta(8.0, 1e-5),
             [np.full(10, 0.1)] * 100, [0.05, 0.5, 0.95])]
    print(f"| case (count_bounds, version {new.PRIOR_RUN_VERSION}) | time | Theorem 4's counts | minimum |")
    print("|---|---|---|---|")
    for name, profile, dists, confs in rows:
        def call():
            theorems._COUNTS_MEMO.clear()  # count_bounds keeps every theorem's counts: each repeat computes them anew
            return theorems.count_bounds(profile, None, confs, distributions=dists)

        t, (counts, by) = timed(call, repeats)
        print(f"| {name} | {t:.2f} s | {' / '.join(map(str, by[new.PRIOR_RUN_THEOREM]))} | "
              f"{' / '.join(map(str, counts))} |", flush=True)


def family(sizes, repeats: int, groups: int) -> None:
    from stages.bound import theorems, whole_prior
    from stages.bound.whole_prior import WHOLE_PRIOR_THEOREM
    zipf = [np.arange(1, 11.0) ** -s for s in np.arange(1.0, 2.0, 0.1)]
    zipf = [w / w.sum() for w in zipf]
    print(f"| n (10 Zipf priors, mu = 1, {groups} groups, version {new.PRIOR_RUN_VERSION}) | time | Theorem 4 | "
          f"Theorem 3 |")
    print("|---|---|---|---|")
    for n in sizes:
        dists = Distributions.of(np.array([zipf[i % 10] for i in range(n)]))

        def call():
            theorems._COUNTS_MEMO.clear()
            whole_prior._CURVES.clear()
            return theorems.count_bounds(GaussianDP(1.0), None, [0.05, 0.5, 0.95], distributions=dists, groups=groups)

        t, (_, by) = timed(call, repeats)
        print(f"| {n:,} | {t:.2f} s | {' / '.join(map(str, by[new.PRIOR_RUN_THEOREM]))} | "
              f"{' / '.join(map(str, by[WHOLE_PRIOR_THEOREM]))} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--large", type=int, nargs="*", default=[])
    parser.add_argument("--no-baseline", action="store_true", help="time the current version only")
    parser.add_argument("--issue", action="store_true", help="time issue 40's cases through count_bounds only")
    parser.add_argument("--family", type=int, nargs="+", default=[],
                        help="time count_bounds on n targets sharing 10 Zipf priors at these n only")
    parser.add_argument("--groups", type=int, default=new.MAX_GROUPS, help="Theorem 4's groups in the --family rows")
    parser.add_argument("--exact-up-to", type=int, default=2000,
                        help="in the --large rows, also time the exact dual (no count blocks) up to this n")
    args = parser.parse_args()
    if args.issue:
        issue(args.repeats)
        return
    if args.family:
        family(args.family, args.repeats, args.groups)
        return
    v = new.PRIOR_RUN_VERSION
    print(f"| case | version 2 | version {v} | v2 / v{v} | counts v2 | counts v{v} |")
    print("|---|---|---|---|---|---|")
    for name, profile, dists, targets, hint in cases(args.sizes):
        run = lambda module: timed(lambda: module.prior_run_counts(profile, dists, targets, hint=hint,
                                                                   at_most=hint is not None), args.repeats)
        t3, c3 = run(new)
        t2, c2 = (np.nan, ["-"]) if args.no_baseline else run(old)
        print(f"| {name} | {t2:.2f} s | {t3:.2f} s | {t2 / t3:.1f}x | {' / '.join(map(str, c2))} | "
              f"{' / '.join(map(str, c3))} |", flush=True)
    for n in args.large:
        pii = lambda: new.prior_run_counts(GaussianDP(1.0), Distributions.of(np.tile(PII, (n, 1))), [0.5, 0.05])
        uniform = lambda: new.prior_run_counts(GaussianDP(1.0), Distributions.of(np.full((n, 10), 0.1)), [0.05])
        mmc = mmc_bound(GaussianDP(1.0), np.full(n, 0.1), confidence=[0.95])[0]
        for name, fn in ((f"PII, n = {n:,}", pii), (f"uniform over 10, n = {n:,}, 0.95 (MMC {mmc})", uniform)):
            t, c = timed(fn, args.repeats)
            t0, c0 = np.nan, ["-"]
            if n <= args.exact_up_to:
                layout = new._layout
                new._layout = lambda m, a, c_, near=None: np.arange(a, m + 1)  # every count its own block
                try:
                    t0, c0 = timed(fn, args.repeats)
                finally:
                    new._layout = layout
            print(f"| {name} (exact dual / blocks) | {t0:.2f} s | {t:.2f} s | {t0 / t:.1f}x | {' / '.join(map(str, c0))} "
                  f"| {' / '.join(map(str, c))} |", flush=True)


if __name__ == "__main__":
    main()
