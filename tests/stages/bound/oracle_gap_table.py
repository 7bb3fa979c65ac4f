"""Gap table: the library's bounds minus the LP oracle's optimum over ``lp_oracle.whole_prior_grid()`` (issue 21).

    .venv/bin/python tests/stages/bound/oracle_gap_table.py [--fast]

Not a test (no test_ prefix; pytest does not collect it). For every case of the grid (one exact guess; n = 1
with priors over 2..10 values, n = 2 over 2..5 values; v = 1..n) it computes

* the oracle's optimum Pr[>= v successes] over all mechanisms (exact for (eps, delta)-DP and pure DP; for mu-GDP
  the finite-eps relaxation, an UPPER bound on the truth, so a GDP gap may be negative);
* "default": ``tail_bound(profile, None, v, distributions=priors)``, the minimum over the theorems that apply
  (split theorem or Theorem 3.1, and the whole-prior theorem);
* "p only": ``tail_bound(profile, p, v)`` with p_i = max pi_i (the split theorem; Theorem 3.1 for pure DP);
* for GDP also the success of a certified mu-GDP mechanism (regular-simplex Gaussian, product over targets), a
  LOWER bound on the truth: "default - mechanism" is the width of the bracket the library leaves.

It prints a markdown table of the gaps (bound - oracle), mean and max, by n, privacy kind and prior family,
with totals. ``--fast`` keeps only the cases the fast test run uses.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import lp_oracle as L  # noqa: E402
from stages.bound import tail_bound  # noqa: E402
from stages.bound.profiles import ApproxDP, GaussianDP, PureDP  # noqa: E402

FAMILIES = ("uniform", "skewed", "zipf", "conditional", "mixed")
KINDS = ("approx", "pure", "gdp")
KIND_NAME = {"approx": "(eps, delta)", "pure": "pure eps", "gdp": "mu-GDP*"}


def profile_of(case):
    if case["kind"] == "gdp":
        return GaussianDP(case["mu"])
    (eps, delta), = case["constraints"]
    return PureDP(eps) if case["kind"] == "pure" else ApproxDP(eps, delta)


def mechanism(case) -> float:
    s = [L.gaussian_simplex_success(case["mu"], pr) for pr in case["priors"]]
    if case["n"] == 1:
        return s[0]
    return 1 - (1 - s[0]) * (1 - s[1]) if case["v"] == 1 else s[0] * s[1]


def measure(case) -> dict:
    profile = profile_of(case)
    dists = [np.asarray(pr, dtype=float) for pr in case["priors"]]
    oracle = L.oracle_value(case)
    default = tail_bound(profile, None, case["v"], distributions=dists)
    p_only = tail_bound(profile, [float(np.max(d)) for d in dists], case["v"])
    row = {"default": default - oracle, "p_only": p_only - oracle}
    if case["kind"] == "gdp":
        row["bracket"] = default - mechanism(case)
    return row


def stats(rows, key) -> str:
    vals = [r[key] for r in rows if key in r]
    if not vals:
        return "– | –"
    fmt = lambda x: f"{x:.4f}".replace("-0.0000", "0.0000")
    return f"{fmt(np.mean(vals))} | {fmt(np.max(vals))}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="only the fast test run's cases")
    parser.add_argument("--worst", type=int, default=10, help="also list the cases with the largest default gap")
    args = parser.parse_args()
    grid = [c for c in L.whole_prior_grid() if not (args.fast and c["slow"])]
    start = time.perf_counter()
    groups: dict[tuple, list] = defaultdict(list)
    every = []
    for case in grid:
        r = measure(case)
        every.append((r["default"], r["p_only"], case["name"]))
        for key in ((case["n"], case["kind"], case["family"]), (case["n"], case["kind"], "all"),
                    ("all", case["kind"], "all"), ("all", "exact", "all") if case["kind"] != "gdp" else None):
            if key is not None:
                groups[key].append(r)
    print(f"Gap = bound - LP oracle optimum (Pr[>= v of n succeed]) over lp_oracle.whole_prior_grid(): "
          f"{len(grid)} cases, {time.perf_counter() - start:.0f} s.\n")
    print("| n | privacy | priors | cases | default: mean | default: max | p only: mean | p only: max "
          "| GDP bracket: mean | GDP bracket: max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    order = [(n, k, f) for n in (1, 2) for k in KINDS for f in FAMILIES + ("all",)]
    order += [("all", k, "all") for k in KINDS] + [("all", "exact", "all")]
    for key in order:
        rows = groups.get(key)
        if not rows:
            continue
        n, kind, fam = key
        kname = "(eps, delta) + pure" if kind == "exact" else KIND_NAME[kind]
        bold = "**" if fam == "all" else ""
        print(f"| {n} | {kname} | {bold}{fam}{bold} | {len(rows)} | {stats(rows, 'default')} | "
              f"{stats(rows, 'p_only')} | {stats(rows, 'bracket')} |")
    print("\n*mu-GDP: the oracle imposes delta_mu(eps) at finitely many eps (16 at n = 1, 12 at n = 2), an upper bound "
          "on the true worst case, so its gaps may be negative and understate the distance to the truth. "
          "\"GDP bracket\" = default - the success of a certified mu-GDP mechanism (regular-simplex Gaussian, "
          "product at n = 2), which over-states it: the truth lies in between.")
    if args.worst:
        print(f"\nThe {args.worst} largest default gaps:\n\n| case | default - oracle | p only - oracle |\n|---|---|---|")
        for d, p, name in sorted(every, reverse=True)[: args.worst]:
            print(f"| {name} | {d:.4f} | {p:.4f} |")


if __name__ == "__main__":
    main()
