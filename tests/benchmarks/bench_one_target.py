"""Benchmark: one target with its whole prior on two values, ours against riskcal (and the LP it replaced).

    .venv/bin/python tests/benchmarks/bench_one_target.py [--cases 44] [--seed 0]

For --cases seeded pairs (mu, pi) (mu log-uniform on [0.05, 5], pi uniform on [0.5, 0.999]), each with a mu of its
own (nothing memoised between cases), times in this process:

* "riskcal": ``1 - riskcal.analysis.get_bayes_risk_from_gdp(mu, pi)`` (riskcal 1.5.1, a test dependency: the peer);
* "theorem 3": ``search.whole_prior_tail(GaussianDP(mu), Distributions.of([[pi, 1 - pi]]), 1)``, the whole-prior
  theorem at one target (``whole_prior.two_valued_success``, the closed form);
* "LP": the same with the relaxation's LP (``whole_prior_success(..., closed_form=False)``), the value before;
* "success_bound": ``success_bound(GaussianDP(mu), distribution=[pi, 1 - pi])``, the public call: the minimum over
  every theorem that applies (Theorem 1's search over eps and Theorem 4's LP run too, in theorems.tail_bound).

Prints the median time of each per case, the ratio to riskcal's, and the largest difference of the values from
riskcal's (ours is rounded up: never below). Times are medians over the cases, each timed once (cold).

Then the whole-prior case of issue 40: ``success_bound(GaussianDP(mu), distribution=z)``, z Zipf over 10 values
(z_i proportional to 1/i), for 12 mu in [0.5, 2] (a profile of its own each time), with the relaxation's exact fast
path (``whole_prior._FAST``) on and off: median wall and CPU time per call, and the largest difference of the values
(0: the fast path gives the same numbers bit for bit).
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stages.bound import success_bound  # noqa: E402
from stages.bound import whole_prior as W  # noqa: E402
from stages.bound.profiles import GaussianDP  # noqa: E402
from stages.bound.search import whole_prior_tail  # noqa: E402


def cases(count: int, seed: int):
    rng = np.random.default_rng(seed)
    mus = np.exp(rng.uniform(math.log(0.05), math.log(5.0), count))
    return [(float(m), float(a)) for m, a in zip(mus, rng.uniform(0.5, 0.999, count))]


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, float(value)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=44)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from riskcal import analysis

    analysis.get_bayes_risk_from_gdp(1.0, 0.7)  # imports and first-call set-up outside the timed region
    success_bound(GaussianDP(0.9), distribution=[0.7, 0.3])
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    times = {"riskcal": [], "theorem 3": [], "LP": [], "success_bound": []}
    diffs = {"theorem 3": [], "LP": [], "success_bound": []}
    for i, (mu, a) in enumerate(cases(args.cases, args.seed)):
        mu_lp, mu_sb = mu * (1 + 1e-9), mu * (1 + 2e-9)  # a profile of its own for each path: nothing memoised
        prior = [a, 1.0 - a]
        t, ref = timed(lambda: 1.0 - analysis.get_bayes_risk_from_gdp(mu, a))
        times["riskcal"].append(t)
        t, ours = timed(lambda: whole_prior_tail(GaussianDP(mu), W.Distributions.of([prior]), 1)[0])
        times["theorem 3"].append(t)
        diffs["theorem 3"].append(ours - ref)
        t, lp = timed(lambda: W.whole_prior_success(GaussianDP(mu_lp), W.prior_shape(prior), closed_form=False))
        times["LP"].append(t)
        diffs["LP"].append(lp - (1.0 - analysis.get_bayes_risk_from_gdp(mu_lp, a)))
        t, sb = timed(lambda: success_bound(GaussianDP(mu_sb), distribution=prior))
        times["success_bound"].append(t)
        diffs["success_bound"].append(sb - (1.0 - analysis.get_bayes_risk_from_gdp(mu_sb, a)))
    base = statistics.median(times["riskcal"])
    print(f"{args.cases} cases (seed {args.seed}); median time per call, ratio to riskcal's (same run)")
    print("| path | median ms | ratio to riskcal | value - riskcal: min / max |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        d = diffs.get(name)
        span = "0 (the reference)" if d is None else f"{min(d):.1e} / {max(d):.1e}"
        print(f"| {name} | {1e3 * statistics.median(ts):.3f} | {statistics.median(ts) / base:.1f}x | {span} |")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    zipf_table()
    below = [name for name, d in diffs.items() if name != "LP" and min(d) < -1e-12]
    if below:
        print("BELOW riskcal:", below)
    return 1 if below else 0


def zipf_table(count: int = 12) -> None:
    """success_bound on a Zipf prior over 10 values, the relaxation's fast path on and off (alternating per mu)."""
    z = 1.0 / np.arange(1, 11)
    z = z / z.sum()
    wall, cpu, values = {True: [], False: []}, {True: [], False: []}, {True: [], False: []}
    for i, mu in enumerate(np.linspace(0.5, 2.0, count)):
        for fast in ((True, False) if i % 2 else (False, True)):
            W._FAST = fast
            profile = GaussianDP(float(mu) * (1 + 1e-9 * (1 + fast)))  # nothing memoised between the two
            start, start_cpu = time.perf_counter(), time.process_time()
            values[fast].append(success_bound(profile, distribution=z))
            wall[fast].append(time.perf_counter() - start)
            cpu[fast].append(time.process_time() - start_cpu)
    W._FAST = True
    diff = 0.0
    for i, mu in enumerate(np.linspace(0.5, 2.0, count)):  # the plain path's profiles again, on the fast path
        W._CURVES.clear()
        diff = max(diff, abs(success_bound(GaussianDP(float(mu) * (1 + 1e-9)), distribution=z) - values[False][i]))
    print(f"\nsuccess_bound(GaussianDP(mu), distribution=Zipf over 10 values), {count} mu in [0.5, 2]; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| whole_prior._FAST | median ms | median CPU ms |")
    print("|---|---|---|")
    for fast in (False, True):
        print(f"| {fast} | {1e3 * statistics.median(wall[fast]):.2f} | {1e3 * statistics.median(cpu[fast]):.2f} |")
    print(f"largest |fast - plain| at the same mu: {diff:.1e}")


if __name__ == "__main__":
    sys.exit(main())
