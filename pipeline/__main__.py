"""`python -m pipeline`: the Hydra app that plays one attack game (or runs one experiment task) per job (no arguments: the quickstart)."""
from __future__ import annotations

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

import pipeline  # noqa: F401  (registers the ${original_cwd:} resolver)
from pipeline.game import ConfigError, run_job

# Exit status for a config value that a box or the game refused (Hydra itself exits 1 on an unknown option).
BAD_INPUT = 2


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def app(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    # An experiment (conf/experiment/*.yaml) names its task; otherwise the job plays one game.
    run = run_job
    if cfg.get("task") is not None:
        from pipeline.experiments import run_task as run
    try:
        run(cfg, hydra_cfg.runtime.output_dir, choices=dict(hydra_cfg.runtime.choices),
            run_name=hydra_cfg.job.override_dirname or "defaults")
    except ConfigError as exc:
        # One sentence, no traceback; the game computes everything before writing, so no metrics.json.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(BAD_INPUT)


def main() -> None:
    if len(sys.argv) == 1:
        from pipeline.quickstart import main as quickstart

        sys.exit(quickstart())
    app()


if __name__ == "__main__":
    main()
