"""The bracket over 180 cells (docs/pages/bounds.md, "Bracket"; THEORY.md section 11): the worst case's floor
(``floor_counts``, the best certified mixture) against the default bound (``count_bounds``, the minimum over every
theorem), for 4 priors x mu in {0.5, 1, 2, 4, 8} x n in {10, 100, 1000} x c in {0.05, 0.5, 0.95}, under mu-GDP.

    .venv/bin/python tests/benchmarks/bracket_map.py [--out bracket_map.json] [--markdown]

Not a test (pytest does not collect it): each cell's floor and bound (and their seconds) go to the JSON file as they
are computed, so a run can be stopped and resumed; --markdown prints the table from that file.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stages.bound import GaussianDP, floor_counts  # noqa: E402
from stages.bound.theorems import count_bounds  # noqa: E402

LEVELS = [0.05, 0.5, 0.95]
MUS = [0.5, 1.0, 2.0, 4.0, 8.0]
NS = [10, 100, 1000]


def priors() -> dict[str, np.ndarray]:
    zipf = np.arange(1, 11, dtype=float) ** -1.84
    pii = np.array([0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01])
    return {"uniform over 2": np.full(2, 0.5), "uniform over 10": np.full(10, 0.1),
            "quickstart Zipf (10 values, 1.84)": zipf / zipf.sum(), "PII-like (10 values)": pii}


def compute(out: Path) -> None:
    done = json.loads(out.read_text()) if out.exists() else {}
    for n in NS:  # the small cells first (the bound at n = 1000 takes minutes per cell)
        for name, prior in priors().items():
            for mu in MUS:
                key = f"{name}|{mu:g}|{n}"
                if key in done:
                    continue
                dists = [prior] * n
                t0 = time.perf_counter()
                low = floor_counts(GaussianDP(mu), dists, LEVELS)
                t1 = time.perf_counter()
                up, _ = count_bounds(GaussianDP(mu), None, LEVELS, distributions=dists)
                t2 = time.perf_counter()
                done[key] = {"floor": [int(x) for x in low], "bound": [int(u) for u in up],
                             "floor_s": round(t1 - t0, 2), "bound_s": round(t2 - t1, 2)}
                out.write_text(json.dumps(done, indent=1))
                print(key, done[key], flush=True)


def markdown(out: Path) -> None:
    done = json.loads(out.read_text())
    print("| prior | mu | n | floor 0.05 / 0.5 / 0.95 | bound 0.05 / 0.5 / 0.95 | bound - floor | within max(1, 0.05 n) |")
    print("|---|---|---|---|---|---|---|")
    for name in priors():
        for mu in MUS:
            for n in NS:
                cell = done.get(f"{name}|{mu:g}|{n}")
                if cell is None:
                    continue
                gap = [b - f for f, b in zip(cell["floor"], cell["bound"])]
                ok = "yes" if max(gap) <= max(1, 0.05 * n) else "no"
                print(f"| {name} | {mu:g} | {n} | {' / '.join(map(str, cell['floor']))} | "
                      f"{' / '.join(map(str, cell['bound']))} | {' / '.join(map(str, gap))} | {ok} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bracket_map.json"))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    markdown(args.out) if args.markdown else compute(args.out)


if __name__ == "__main__":
    main()
