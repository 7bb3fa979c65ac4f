"""The quickstart (`python -m pipeline` with no arguments): the idealized Gaussian game at a few epsilons.

100 canaries with 10 candidate secrets each, a uniform and a Zipf prior, the Gaussian mechanism
calibrated to (epsilon, 1e-5)-DP, the Bayes-optimal attack, exact match, the one-run bound, and the median
trial's audit (audit=median; a game's default audits every trial). Each
game is composed from the real config tree (conf/) exactly as `python -m pipeline prior=... ` would
compose it, played by the same code, and written to outputs/quickstart/<time>/<job>/ like a sweep's
job folder, so `python -m pipeline.report` reads it. The played trials go through the stage cache:
a second quickstart replays nothing.
"""
from __future__ import annotations

import copy
import sys
import time
from datetime import datetime
from pathlib import Path

from omegaconf import OmegaConf

import pipeline
from pipeline.cache import StageCache
from pipeline.game import ConfigError
from pipeline.job import run_game
from pipeline.report import collect, plot, report_table, write_csv
from pipeline.sweeper import write_job_list

PRIORS = ("uniform", "zipf")
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
TRIALS = 200


def quickstart_overrides(prior: str, epsilon: float, trials: int = TRIALS) -> list[str]:
    return [
        f"prior={prior}", "prior.n_targets=100", "prior.domain_size=10",
        "mechanism=gaussian", f"mechanism.epsilon={epsilon}", "mechanism.delta=1e-5",
        "attack=bayes_optimal", "metric=exact", "bound=one_run", "logger=none", "audit=median",
        f"trials={trials}", "name=quickstart",
    ]


def epsilon_variant(cfg, epsilon: float):
    """A copy of a composed config with mechanism.epsilon set to epsilon (what the override does)."""
    out = copy.deepcopy(cfg)
    out.mechanism.epsilon = float(epsilon)
    return out


def run(out_dir: str | Path | None = None, priors=PRIORS, epsilons=EPSILONS, trials: int = TRIALS) -> list[dict]:
    """Play every (prior, epsilon) game, write the job folders and the report; return the report rows."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=pipeline.CONF_DIR, version_base="1.3"):
        grid = [(prior, epsilon) for prior in priors for epsilon in epsilons]
        jobs = [quickstart_overrides(prior, epsilon, trials) for prior, epsilon in grid]
        # one compose per prior: a job at another epsilon is that config with mechanism.epsilon set (the override
        # sets a plain float that nothing in conf/ interpolates or selects by; tests/pipeline/test_quickstart_configs
        # checks every job's config against its own compose)
        composed = {}

        def config(job: int):
            prior, epsilon = grid[job]
            if prior not in composed:
                composed[prior] = compose("config", overrides=jobs[job])
                return composed[prior]
            return epsilon_variant(composed[prior], epsilon)

        # the first job's config gives outputs_dir and cache_dir (no job overrides them)
        first = config(0)
        # Its own folder even when two quickstarts start in the same instant (pipeline's ${unique:} suffix).
        stamp = f"{datetime.now().strftime('%Y-%m-%d_%H-%M-%S-%f')}-{pipeline._unique()}"
        root = Path(out_dir) if out_dir else Path(first.outputs_dir) / "quickstart" / stamp
        cache = StageCache(first.cache_dir)
        # the job list a -m sweep writes, so `python -m pipeline.report <root>` reads the folder
        write_job_list(root, jobs)
        for job, overrides in enumerate(jobs):
            cfg = first if job == 0 else config(job)
            job_dir = root / str(job)
            (job_dir / ".hydra").mkdir(parents=True, exist_ok=True)
            OmegaConf.save(cfg, job_dir / ".hydra" / "config.yaml", resolve=True)
            OmegaConf.save(OmegaConf.create(overrides), job_dir / ".hydra" / "overrides.yaml")
            run_game(cfg, job_dir, cache=cache)
    rows = collect(root)
    write_csv(rows, root / "report.csv")
    plot(rows, root / "figures" / "report.png")
    return rows, root


def main() -> int:
    start = time.perf_counter()
    print(f"Quickstart: idealized Gaussian mechanism, 100 canaries x 10 candidates, Bayes-optimal attack, exact match,\n"
          f"one-run bound; {TRIALS} trials per game. The table: mean targets attacked by the attack and by the\n"
          f"prior-only guess z* (the prior baseline), the bound and the floor at each confidence (legend below it).\n")
    from pipeline.io import command

    return command(lambda: _print(*run(), start), (ConfigError,), 2,
                   "interrupted; finished games are cached, so `python -m pipeline` resumes where it stopped.")


def _print(rows, root, start: float) -> int:
    print(report_table(rows))  # the columns and legend of `python -m pipeline.report`
    print(f"\n{len(rows)} games in {time.perf_counter() - start:.1f}s; job folders, report.csv and figures/report.png "
          f"in\n  {root}")
    print("Next: `python -m pipeline --help`, or one game: `python -m pipeline prior=zipf mechanism.epsilon=2`.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
