"""Benchmark: count_bound at three confidences, this code vs a committed version and vs its own exact path.

    .venv/bin/python tests/benchmarks/bench_count_bound.py [--max-n 1000000] [--baseline eb9898d] [--repeats 3]

For each profile (mu = 1 GDP and a DP-SGD run) and n in {1e3, 1e4, 1e5, 1e6}, heterogeneous priors
p_i ~ Beta(0.5, 5) (all distinct; seed n), it times ``count_bound(profile, p, [0.05, 0.5, 0.95])``:

* "new": this checkout (best of --repeats runs). For n > 1e4 this is the fast path (the search runs
  on a normal approximation of S*, each count is certified by one exact evaluation of the split
  theorem, search._count_fast);
* "exact": this checkout with the fast path switched off (search._FAST_FROM raised), every eps the
  search tries evaluated exactly: the reference for "lost", the targets the fast path gives away
  (new count - exact count, per confidence; never negative: every count is certified, and the exact
  search's count is the smallest it finds);
* "baseline": ``stages/`` of the --baseline commit (``git archive``; default eb9898d, the split theorem
  before the fast path), in a fresh interpreter, one run.

The accountant tables of the DP-SGD profile are built outside the timed region in every case.
Prints a markdown table (times in seconds, speed-up = baseline / new).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from stages.bound import search, theorems  # noqa: E402
from stages.bound.profiles import DPSGD, GaussianDP  # noqa: E402

CONFIDENCES = [0.05, 0.5, 0.95]
#: The last commit before count_bound's fast path (issue 13 item 7): the split theorem, exact search.
BASELINE = "eb9898d"
PROFILES = {"gdp": ("GaussianDP(mu=1)", lambda: GaussianDP(1.0)),
            "dpsgd": ("DPSGD(sigma=1, q=0.01, T=1000)", lambda: DPSGD(1.0, 0.01, 1000))}

CHILD = """
import json, sys, time, numpy as np
sys.path.insert(0, sys.argv[1])
from stages.bound.profiles import GaussianDP, DPSGD
from stages.bound.theorems import count_bound
n, which = int(sys.argv[2]), sys.argv[3]
profile = GaussianDP(1.0) if which == "gdp" else DPSGD(1.0, 0.01, 1000)
profile.delta_upper(1.0)
p = np.random.default_rng(n).beta(0.5, 5.0, n)
start = time.perf_counter()
counts = count_bound(profile, p, [0.05, 0.5, 0.95])
print(json.dumps({"time": time.perf_counter() - start, "counts": [int(c) for c in np.atleast_1d(counts)]}))
"""


def timed(profile, p, repeats: int):
    best, counts = float("inf"), None
    for _ in range(repeats):
        theorems._COUNTS_MEMO.clear()  # every run computes its counts (count_bounds memoises repeated calls)
        start = time.perf_counter()
        counts = [int(c) for c in theorems.count_bound(profile, p, CONFIDENCES)]
        best = min(best, time.perf_counter() - start)
    return best, counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-n", type=int, default=10**6)
    ap.add_argument("--baseline", default=BASELINE, help="commit whose stages/ is the baseline")
    ap.add_argument("--repeats", type=int, default=3, help="runs of the new code (the best is reported)")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()
    sizes = [n for n in (10**3, 10**4, 10**5, 10**6) if n <= args.max_n]
    rows = []
    with tempfile.TemporaryDirectory() as old:
        archive = subprocess.run(["git", "archive", args.baseline, "stages"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
        for which, (name, make) in PROFILES.items():
            profile = make()
            profile.delta_upper(1.0)  # build accountant tables outside the timed region
            for n in sizes:
                p = np.random.default_rng(n).beta(0.5, 5.0, n)
                t_new, new = timed(profile, p, args.repeats)
                fast_from = search._FAST_FROM
                search._FAST_FROM = 10**18
                try:
                    t_exact, exact = timed(profile, p, 1)
                finally:
                    search._FAST_FROM = fast_from
                out = subprocess.run([sys.executable, "-c", CHILD, old, str(n), which], capture_output=True, text=True)
                if out.returncode:
                    sys.exit(f"baseline failed for {which} n={n}:\n{out.stderr}")
                base = json.loads(out.stdout.strip().splitlines()[-1])
                lost = [a - b for a, b in zip(new, exact)]
                rows.append((name, n, f"{t_new:.3f}", f"{t_exact:.2f}", f"{base['time']:.2f}",
                             f"{base['time'] / t_new:.1f}x", new, exact, lost, base["counts"]))
                print(rows[-1], flush=True)
    print()
    print(f"baseline: stages/ at {args.baseline} ({commit}); new: this checkout; exact: this checkout, fast path off")
    print()
    print("| profile | n | new (s) | exact path (s) | baseline (s) | speed-up vs baseline | counts (5%, 50%, 95%) "
          "| exact counts | targets lost vs exact | baseline counts |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")


if __name__ == "__main__":
    main()
