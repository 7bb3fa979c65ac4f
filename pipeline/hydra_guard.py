"""Guards around Hydra: a job folder that holds a metrics.json keeps its `.hydra/`, and a misspelt key is one sentence.

A misspelt key (`mechanism.epsilom=2`) makes Hydra say "Could not override 'mechanism.epsilom'. To append to your
config use +mechanism.epsilom=2", advice that ends in a box refusing an argument it does not take; `unknown_key` turns
it into one sentence naming the keys that node has and the nearest one (pipeline.__main__ prints it, exit 2).

Keep Hydra from rewriting the record of another job: a job folder that holds a metrics.json keeps its `.hydra/`.

Hydra writes `<job folder>/<hydra.output_subdir>/` (config.yaml, hydra.yaml, overrides.yaml) *before* the task
function runs, so a job pointed at a folder that already holds a job's results (a fixed `hydra.run.dir` reused, or a
finished job of a sweep run again to finish its missing jobs) would replace that job's composed config with its own;
and that record is what tells the same job (done: skipped) from another job (refused) in pipeline.job.check_output_dir,
called in pipeline.__main__'s app. conf/config.yaml therefore sets `hydra.output_subdir: ${record_subdir:.hydra}`: the
resolver below gives `.hydra`, or null (Hydra's documented "write no record") when the job folder already holds a
metrics.json. Hydra resolves output_subdir when it writes the record, after it has set the job's folder
(hydra.runtime.output_dir), in run and sweep jobs alike, in process or under submitit/SLURM. The record stays as it was
(the folder's game.log is opened for appending: a refusal is printed, not logged; a done job logs that it is done).
pipeline/__init__.py registers the resolver.
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf

__all__ = ["holds_results", "record_subdir", "unknown_key"]


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


def unknown_key(exc: BaseException, arguments: Sequence[str]) -> str | None:
    """One sentence for Hydra's refusal of an override whose key the config does not have, else None.

    It names the key, the settings of the node it would go in and the nearest of them with the value given
    (`mechanism.epsilom is not a setting of the config (mechanism has mu, epsilon, delta, domain_size); did you mean
    mechanism.epsilon=2?`). exc is Hydra's ConfigCompositionException, whose cause (omegaconf's error) carries the key
    and its parent node; arguments are the command line's, for the value as the user typed it."""
    from hydra.errors import ConfigCompositionException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    cause = exc.__cause__
    if not (isinstance(exc, ConfigCompositionException) and isinstance(cause, (ConfigAttributeError, ConfigKeyError))
            and cause.full_key and isinstance(cause.parent_node, DictConfig)):
        return None
    full_key = str(cause.full_key)
    parent, _, name = full_key.rpartition(".")
    settings = [str(k) for k in cause.parent_node.keys() if not str(k).startswith("_") and (parent or k != "hydra")]
    value = next((a.partition("=")[2] for a in arguments if a.partition("=")[0] == full_key), None)
    near = difflib.get_close_matches(name, settings, n=1, cutoff=0.6)
    node = parent or "the config's top level"
    has = f"{node} has {', '.join(settings)}" if settings else f"{node} has no settings below it"
    if near:
        advice = f"did you mean {parent + '.' if parent else ''}{near[0]}{'' if value is None else '=' + value}?"
    else:
        advice = "check its spelling (`python -m pipeline --cfg job` prints every key of the config)"
    return f"{full_key} is not a setting of the config ({has}); {advice}"
