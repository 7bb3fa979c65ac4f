"""Time count_bound of another checkout of stages/ beside this one, on the same priors, in fresh interpreters.

    git archive <commit> stages | tar -x -C /tmp/old
    .venv/bin/python tests/benchmarks/bench_count_bound_versions.py /tmp/old

Prints one line per (code, profile, n): the time of count_bound(profile, p, [0.05, 0.5, 0.95]) for
p ~ Beta(0.5, 5) (seed 0) and the counts, which must agree between the two versions.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = """
import sys, time, numpy as np
sys.path.insert(0, sys.argv[1])
from stages.bound.profiles import GaussianDP, DPSGD
from stages.bound.theorems import count_bound
n, which = int(sys.argv[2]), sys.argv[3]
profile = GaussianDP(1.0) if which == "gdp" else DPSGD(1.0, 0.01, 1000)
p = np.random.default_rng(0).beta(0.5, 5, n)
start = time.perf_counter()
counts = count_bound(profile, p, [0.05, 0.5, 0.95])
print(f"{which} n={n}: {time.perf_counter() - start:.2f} s, counts {[int(c) for c in np.atleast_1d(counts)]}")
"""


def main() -> None:
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "stages" / "bound").is_dir():
        sys.exit("usage: bench_count_bound_versions.py <folder holding another version's stages/>")
    this = str(Path(__file__).resolve().parents[2])
    for n in (100_000, 1_000_000):
        for which in ("gdp", "dpsgd"):
            for label, root in (("other", sys.argv[1]), ("this", this)):
                out = subprocess.run([sys.executable, "-c", CHILD, root, str(n), which], capture_output=True, text=True)
                print(f"{label:5s} {out.stdout.strip() or out.stderr.strip().splitlines()[-1]}", flush=True)


if __name__ == "__main__":
    main()
