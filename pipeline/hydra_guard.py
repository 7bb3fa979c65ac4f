"""Keep Hydra from rewriting the record of another job: a job folder that holds a metrics.json keeps its `.hydra/`.

Hydra writes `<job folder>/<hydra.output_subdir>/` (config.yaml, hydra.yaml, overrides.yaml) *before* the task
function runs, so a job pointed at a folder that already holds another job's results (a fixed `hydra.run.dir`
reused, or a finished job of a sweep run again to finish its missing jobs) would replace that job's composed config
with its own, although the job itself is then refused (check_output_dir, in pipeline.__main__'s app). conf/config.yaml therefore
sets `hydra.output_subdir: ${record_subdir:.hydra}`: the resolver below gives `.hydra`, or null (Hydra's documented
"write no record") when the job folder already holds a metrics.json. Hydra resolves output_subdir when it writes the
record, after it has set the job's folder (hydra.runtime.output_dir), in run and sweep jobs alike, in process or
under submitit/SLURM. The job is then refused as before and the folder stays as it was (its game.log is opened for
appending but not written: the refusal is printed, not logged). pipeline/__init__.py registers the resolver.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

__all__ = ["holds_results", "record_subdir"]


def holds_results(job_folder: str | Path) -> bool:
    """Whether a job folder already holds another job's results (its metrics.json)."""
    return (Path(job_folder) / "metrics.json").exists()


def record_subdir(subdir: str, *, _parent_: Any) -> str | None:
    """${record_subdir:.hydra} as `hydra.output_subdir`: subdir, or None when the job folder holds results.

    _parent_ is the `hydra` node (OmegaConf passes it); before a job has a folder (composing, printing the config)
    the subdir is given as is."""
    job_folder = OmegaConf.select(_parent_, "runtime.output_dir", default=None, throw_on_missing=False)
    if job_folder is not None and holds_results(str(job_folder)):
        return None
    return subdir
