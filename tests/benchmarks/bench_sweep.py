"""Benchmark: listing a figure's jobs before a sweep starts (pipeline.sweeper), against a baseline in the same run.

    nice -n 10 .venv/bin/python tests/benchmarks/bench_sweep.py [--epochs 1] [--full]

The project's sweeper composes each combination's config to ask the experiment's figure for its points, and
Hydra then composes every job once more to validate it before launching. The sweeper keeps the configs it
composed for the whole sweep, so a repeated point (Figure llm's idealized game, the same for every
hyperparameter setting of a (prior, epsilon)) and the validation of the jobs already composed cost nothing.
Measured on Figure llm's grid (experiment=llm_canaries: prior x eps x clip x lr, epochs {--epochs}, or the whole
540-combination grid with --full): the sweeper's way (one composition per distinct configuration) against
composing as Hydra's basic sweeper would without the cache (every combination, every repeated point and every
job's validation composed again). Both list the same jobs (checked). Prints a markdown table for
the docs' Performance page (docs/pages/performance.md).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", default="1", help="mechanism.epochs sweep values (default 1: 108 combinations)")
    parser.add_argument("--full", action="store_true", help="the paper's whole grid (540 combinations)")
    args = parser.parse_args()

    from hydra import compose, initialize_config_dir
    from hydra.core.override_parser.overrides_parser import OverridesParser

    import pipeline
    from pipeline.sweeper import combinations as sweep_combinations, sweep_jobs

    command = ["experiment=llm_canaries", *([] if args.full else [f"mechanism.epochs={args.epochs}"])]
    counts = {"cached": 0, "uncached": 0}

    def composer(kind: str, memo: dict | None):
        def run(overrides):
            key = tuple(overrides)
            if memo is not None and key in memo:
                return memo[key]
            counts[kind] += 1
            cfg = compose("config", overrides=list(overrides))
            if memo is not None:
                memo[key] = cfg
            return cfg
        return run

    with initialize_config_dir(config_dir=pipeline.CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=command, return_hydra_config=True)
        params = [f"{k}={v}" for k, v in (cfg.hydra.sweeper.get("params") or {}).items()]
        parser_ = OverridesParser.create()
        combinations = sweep_combinations(parser_.parse_overrides(params + command))
        results = {}
        for kind, memo in (("uncached", None), ("cached", {})):
            run = composer(kind, memo)
            start = time.perf_counter()
            jobs = sweep_jobs(run, combinations)
            for job in jobs:  # Hydra's validation of every job before launching
                if memo is None or tuple(job) not in memo:
                    run(job)
            results[kind] = (time.perf_counter() - start, jobs)
    assert results["cached"][1] == results["uncached"][1], "both ways must list the same jobs"
    n_jobs = len(results["cached"][1])
    new, old = results["cached"][0], results["uncached"][0]
    print("| sweep | combinations | jobs | compositions (cached / uncached) | cached | uncached | speed-up |")
    print("|---|---|---|---|---|---|---|")
    print(f"| `{' '.join(command)}` | {len(combinations)} | {n_jobs} | {counts['cached']} / {counts['uncached']} | "
          f"{new:.1f} s | {old:.1f} s | {old / new:.1f}× |")


if __name__ == "__main__":
    main()
