"""Benchmark: one audit (stages.bound.audit.audit) against one count bound (theorems.count_bounds) at the audit's
answer, measured in the same run, at n = 1e3 and 1e5 targets.

    .venv/bin/python tests/benchmarks/bench_audit.py [--repeats 3] [--only "whole prior"]

Cells: uniform priors 1/10 (n = 1e3: MMC's count and Theorem 1; n = 1e5: Theorem 1 alone) and the Zipf (1.84, 10
values) and PII priors given whole (n = 1e3: Theorems 1 and 3), mu-GDP, confidence 0.95, the observed count 0.45 n
(0.75 n for Zipf, 0.55 n for PII). Prints per cell the audit's seconds, one count bound's seconds and their ratio
(how many count bounds an audit costs), best of --repeats, with the load average; the issue's targets are <= 1 s at
n = 1e3 and <= 5 s at 1e5.

Then a game's audits (pipeline.game.audit_of with audit=all): 200 trials' counts (fixed seed, Binomial(n, p* + 0.1)),
every trial at confidences 0.05 / 0.5 / 0.95 on the game's 1% grid, uniform 1/10 and Zipf's p* at n = 100 and 1000,
mu-GDP claimed at 1: Auditor.audit_table (every grid point's bounds at every confidence, bracketing every pair)
against the same auditor's one-at-a-time ``audit`` per distinct count and confidence (its own memo of grid points),
with the grid points each computed and whether every answer agrees.

``--only WORDS``: only the cells whose name holds WORDS (e.g. "whole prior": the issue's whole-prior cells at
n = 1e3), in both parts.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stages.bound import audit as A  # noqa: E402
from stages.bound import theorems  # noqa: E402
from stages.bound.profiles import GaussianDP  # noqa: E402

PII = np.array([0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01])
ZIPF = np.arange(1, 11, dtype=float) ** -1.84
ZIPF /= ZIPF.sum()


def cells():
    for n in (1000, 100_000):
        yield f"uniform 1/10, n={n}", dict(p=np.full(n, 0.1)), int(0.45 * n)
    yield "zipf whole prior, n=1000", dict(p=None, distributions=np.tile(ZIPF, (1000, 1))), 750
    yield "pii whole prior, n=1000", dict(p=None, distributions=np.tile(PII, (1000, 1))), 550


def best(f, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        theorems._COUNTS_MEMO.clear()  # every repeat computes its bounds afresh
        start = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="only the cells whose name holds these words")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'cell':32s} {'audit s':>8s} {'count s':>8s} {'ratio':>6s}  theta_hat (theorem)")
    for name, prior, m in cells():
        if args.only not in name:
            continue
        t_audit, a = best(lambda: A.audit(m, prior["p"], distributions=prior.get("distributions")), args.repeats)
        t_count, _ = best(lambda: theorems.count_bounds(GaussianDP(a.theta), prior["p"], 0.95,
                                                         distributions=prior.get("distributions")), args.repeats)
        print(f"{name:32s} {t_audit:8.3f} {t_count:8.3f} {t_audit / t_count:6.1f}  {a.theta:.4f} ({a.theorem})")
    print(f"\n{'per-trial audits, 200 trials':32s} {'table s':>8s} {'single s':>8s} {'ratio':>6s}  points table / single")
    for label, p0 in (("uniform", 0.1), ("zipf", float(ZIPF[0]))):
        for n in (100, 1000):
            if args.only not in f"{label}, n={n}":
                continue
            counts = np.random.default_rng(0).binomial(n, p0 + 0.1, size=200)
            make = lambda: A.Auditor(np.full(n, p0), confidences=[0.05, 0.5, 0.95], rtol=1e-2)  # noqa: E731
            table_auditor, single_auditor = make(), make()

            def singles():
                return [[single_auditor.audit(int(m), c, start=1.0) for m in counts] for c in (0.05, 0.5, 0.95)]

            t_table, tab = best(lambda: table_auditor.audit_table(counts, start=1.0, detail=False), 1)
            t_single, one = best(singles, 1)
            same = all(x.theta == y.theta for row_x, row_y in zip(tab, one) for x, y in zip(row_x, row_y))
            print(f"{label + f', n={n}':32s} {t_table:8.3f} {t_single:8.3f} {t_single / t_table:6.1f}  "
                  f"{len(table_auditor._counts)} / {len(single_auditor._counts)}{'' if same else '  ANSWERS DIFFER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
