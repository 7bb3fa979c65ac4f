"""Keep Hydra from rewriting the record of another job: a job folder that holds a metrics.json is never touched.

Hydra writes `<job folder>/.hydra/config.yaml`, `hydra.yaml` and `overrides.yaml` (hydra.core.utils.run_job
-> _save_config) *before* the task function runs, so a job pointed at a folder that already holds another
job's results (a fixed `hydra.run.dir` reused) used to replace that job's composed config with its own,
although the job itself was then refused (pipeline.__main__: check_output_dir). `install()` wraps
`_save_config` so that it writes nothing into the `.hydra/` folder of a job folder that already holds a
metrics.json; the job is then refused as before and the folder stays as it was (its game.log is opened
for appending but not written: the refusal is printed, not logged). Importing pipeline.__main__ installs
it, in the process that launches the jobs and in every submitit/SLURM job that unpickles the app.
"""
from __future__ import annotations

import logging
from pathlib import Path

__all__ = ["install", "holds_results"]

log = logging.getLogger(__name__)


def holds_results(job_folder: str | Path) -> bool:
    """Whether a job folder already holds another job's results (its metrics.json)."""
    return (Path(job_folder) / "metrics.json").exists()


def install() -> None:
    """Wrap hydra.core.utils._save_config (idempotent): skip writes into <job>/.hydra/ when <job> holds results."""
    import hydra.core.utils as hydra_utils

    original = hydra_utils._save_config
    if getattr(original, "_advbounds_guard", False):
        return

    def _save_config(cfg, filename, output_dir) -> None:
        folder = Path(output_dir)
        if folder.name == ".hydra" and holds_results(folder.parent):
            log.debug("not writing %s: %s holds another job's metrics.json", folder / filename, folder.parent)
            return
        original(cfg, filename, output_dir)

    _save_config._advbounds_guard = True  # type: ignore[attr-defined]
    hydra_utils._save_config = _save_config
