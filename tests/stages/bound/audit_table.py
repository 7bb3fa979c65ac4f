"""The tables of docs/pages/audit.md, "Checked": audits of simulated runs, n = 1000 (THEORY.md section 12).

    .venv/bin/python tests/stages/bound/audit_table.py [--runs 200] [--seed 2026] [--only checked abstentions floor]

Not a test (no test_ prefix; pytest does not collect it). It prints

* "checked": the Gaussian mechanism with one-hot canaries (mu = 2) and the Bayes-optimal attack, ``runs`` runs
  (``test_audit.gaussian_bayes_successes``, the slow test's runs at its seed 2026), the audits at 0.95: on uniform
  priors from p (Theorem 1, MMC's count, Theorem 3.1) beside ``mmc_audit``, on Zipf and PII from each target's whole
  prior (every theorem ``count_bounds`` applies);
* "abstentions": membership, 1000 canaries, 200 guessed, the audits at 0.95 beside Steinke et al.'s and MMC's;
* "floor": the floor's product mechanism (each target attacked independently with ``floor_success``), the
  lower-median run's audit at 0.5 and 0.95, each target's whole prior given.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
sys.path.insert(0, str(HERE))

from stages.bound import audit as A  # noqa: E402
from stages.bound.floor import floor_success  # noqa: E402
from stages.bound.profiles import GaussianDP  # noqa: E402
from test_audit import PII, gaussian_bayes_successes, zipf  # noqa: E402

N = 1000


def priors() -> dict[str, np.ndarray]:
    return {"uniform over 10": np.full(10, 0.1), "Zipf 1.84 over 10": zipf(), "PII": PII / PII.sum()}


def short(theorem: str | None) -> str:
    if theorem is None:
        return "none"
    for words, name in (("MMC", "MMC's count"), ("Thm 4", "Theorem 4"), ("Thm 3", "Theorem 3"),
                        ("Thm 1", "Theorem 1"), ("Theorem 3.1", "Theorem 3.1")):
        if words in theorem:
            return name
    return theorem


def checked(runs: int, seed: int) -> None:
    mu = 2.0
    print(f"Gaussian mechanism, Bayes-optimal attack, n = {N}, mu = {mu:g}, {runs} runs (seed {seed}), "
          "confidence 0.95\n")
    print("| prior | successes: median (min – max) | audit: median (theorem) | largest run's audit "
          "| runs with audit > 2 | MMC's median |\n| --- | --- | --- | --- | --- | --- |")
    for name, prior in priors().items():
        t0 = time.perf_counter()
        s = gaussian_bayes_successes(prior, N, mu, runs, seed=seed)
        lower = int(np.sort(s)[(runs - 1) // 2])
        if name.startswith("uniform"):
            au = A.Auditor(np.full(N, 0.1), confidences=0.95)
            mmc = np.median([A.mmc_audit(int(m), N, k=10).theta for m in s])
            mmc_text = f"{mmc:.3f}"
        else:
            au = A.Auditor(None, distributions=np.tile(prior, (N, 1)), confidences=0.95)
            mmc_text = "none (not uniform)"
        # the audit is non-decreasing in the count: the lower median count's audit is the (lower) median audit
        med, top = au.audit(lower), au.audit(int(s.max()))
        above = 0 if top.theta <= mu else sum(au.audit(int(m)).theta > mu for m in s)
        print(f"| {name} | {lower} ({s.min()} – {s.max()}) | μ̂ = {med.theta:.3f} ({short(med.theorem)}) | "
              f"{top.theta:.3f} | {above} | {mmc_text} |  <!-- {time.perf_counter() - t0:.0f} s -->", flush=True)


def abstentions() -> None:
    n, r = N, 200
    print(f"\nMembership, {n} canaries, {r} guessed, confidence 0.95: audit / Steinke et al. / MMC\n")
    print("| family | successes | audit (theorem) | Steinke et al. | MMC |\n| --- | --- | --- | --- | --- |")
    for fam, delta in (("pure", 0.0), ("approx", 1e-5)):
        for m in (120, 150, 180):
            extra = {} if fam == "pure" else {"delta": delta}
            ours = A.audit(m, np.full(n, 0.5), family=fam, guesses=r, game="membership", **extra)
            st = A.steinke_audit(m, n, delta=delta, guesses=r)
            mmc = A.mmc_audit(m, n, k=2, guesses=r, family=fam, game="membership", **extra)
            print(f"| {fam} | {m} | {ours.theta:.3f} ({short(ours.theorem)}) | {st.theta:.3f} | {mmc.theta:.3f} |",
                  flush=True)


def floor(runs: int, seed: int) -> None:
    print(f"\nThe floor's product mechanism, n = {N}, {runs} runs (seed {seed}), the lower-median run's audit\n")
    print("| prior | true μ | per-target success | median count | audit @ 0.5 | audit @ 0.95 |\n"
          "| --- | --- | --- | --- | --- | --- |")
    rng = np.random.default_rng(seed)
    for name in ("uniform over 10", "PII"):
        prior = priors()[name]
        au = A.Auditor(None, distributions=np.tile(prior, (N, 1)), confidences=[0.5, 0.95])
        for mu in (0.5, 1.0, 2.0):
            t0 = time.perf_counter()
            success, _ = floor_success(GaussianDP(mu), prior)
            s = rng.binomial(N, success, size=runs)
            lower = int(np.sort(s)[(runs - 1) // 2])
            cells = []
            for c in (0.5, 0.95):
                theta = au.audit(lower, c).theta
                cells.append(f"{theta:.3f} ({theta / mu:.0%})" if theta > 0 else "0")
            print(f"| {name} | {mu:g} | {success:.3f} | {lower} | {cells[0]} | {cells[1]} |  "
                  f"<!-- {time.perf_counter() - t0:.0f} s -->", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--only", nargs="+", choices=("checked", "abstentions", "floor"),
                        default=["checked", "abstentions", "floor"])
    args = parser.parse_args()
    if "checked" in args.only:
        checked(args.runs, args.seed)
    if "abstentions" in args.only:
        abstentions()
    if "floor" in args.only:
        floor(args.runs, args.seed)


if __name__ == "__main__":
    main()
