"""Bracket table: the worst case's lower end (``floor_counts``, a real mechanism's counts) against the default bound
(``count_bounds``, the minimum over every theorem that applies), n = 100, at 0.05 / 0.5 / 0.95 (THEORY.md section 11).

    .venv/bin/python tests/stages/bound/bracket_table.py

Not a test (no test_ prefix; pytest does not collect it): it prints the markdown table THEORY.md section 11 shows.
``test_floor.py`` checks the same pairs at n = 10 and 100 (the floor never above the bound).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from stages.bound import ApproxDP, GaussianDP, PureDP, floor_counts  # noqa: E402
from stages.bound.theorems import count_bounds  # noqa: E402

LEVELS = [0.05, 0.5, 0.95]
N = 100


def priors() -> list[tuple[str, list]]:
    zipf = np.arange(1, 11, dtype=float) ** -1.84
    zipf /= zipf.sum()
    mixed = [np.array([a, 1 - a]) for a in np.random.default_rng(0).uniform(0.5, 0.95, N)]
    return [("quickstart Zipf (10 values, 1.84)", [zipf] * N), ("binary (0.7, 0.3)", [np.array([0.7, 0.3])] * N),
            ("binary, p ~ U[0.5, 0.95] (seed 0)", mixed), ("uniform over 10", [np.full(10, 0.1)] * N),
            ("uniform over 2", [np.full(2, 0.5)] * N)]


def main() -> None:
    profiles = [("μ = 0.268 (ε = 1, δ = 10⁻⁵)", GaussianDP(0.268)), ("μ = 1", GaussianDP(1.0)), ("μ = 2", GaussianDP(2.0)),
                ("(1, 10⁻⁵)-DP", ApproxDP(1.0, 1e-5)), ("2-DP", PureDP(2.0))]
    print("| profile | prior | floor | bound |\n|---|---|---|---|")
    for pname, profile in profiles:
        for name, dists in priors():
            low = floor_counts(profile, dists, LEVELS)
            up, _ = count_bounds(profile, None, LEVELS, distributions=dists)
            print(f"| {pname} | {name} | {' / '.join(map(str, low))} | {' / '.join(str(int(u)) for u in up)} |",
                  flush=True)


if __name__ == "__main__":
    main()
