"""The project's Hydra sweeper: Hydra's basic sweeper, plus the points of an experiment's figure.

A `-m` sweep first forms the cartesian product of its sweep values (`hydra.sweeper.params` and the
command line), exactly as Hydra's basic sweeper does. Then, for each combination whose composed config has a
`figure` (conf/experiment/<name>.yaml), it asks the figure for its points (`figure.points(cfg)`: a list of
{override key: value}) and launches one ordinary game job per point: the combination's overrides with the
point's on top. That is how a figure whose points depend on the data becomes a sweep: the single-column
figure plays every column of the table that `prior.dataset` names, the multi-column figure the first m
columns of the fitted network's visit order, Figure llm adds the idealized Gaussian game beside each DP-SGD
game. A combination without a figure is one job, as with the basic sweeper.

* A point's `key=value` replaces the combination's override of that key.
* A point that switches a config group (`mechanism=gaussian`) drops the combination's overrides inside
  that group (`mechanism.learning_rate=...`) and deletes (`~mechanism.clip_norm`) the keys the experiment
  file set in the group that the new option does not have, so the switched box gets only its own settings
  (a key whose value is null is first given one, `mechanism.batch_size=''`: Hydra deletes only a set key).
* Jobs with the same overrides are launched once (Figure llm's idealized game is the same for every
  DP-SGD hyperparameter setting of a (prior, epsilon)).

A sweep folder holds one sweep (check_sweep_folder): a sweep whose `hydra.sweep.dir` already holds job folders is
refused before anything is written or run, unless the folder's jobs.yaml lists exactly its jobs (the same sweep run
again, to finish its missing jobs).

Every job's `.hydra/overrides.yaml` holds its whole override list, so `python -m pipeline <those overrides>`
replays any one point. conf/config.yaml selects this sweeper (`hydra/sweeper: points`); it takes the basic
sweeper's settings (`max_batch_size`, `params`).

This module is the sweep's logic, without Hydra's plugin machinery: the plugin class that Hydra finds and runs,
hydra_plugins.advbounds.sweeper.PointsSweeper (pipeline/hydra_plugins/advbounds/sweeper.py), calls it.
"""
from __future__ import annotations

import itertools
import logging
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import yaml
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, OmegaConf

from pipeline.io import JOBS_FILE, SWEEP_FILES  # the sweep folder's files (re-exported)


log = logging.getLogger(__name__)

#: The config groups a point may switch (their overrides are a choice of option, not a value): the game's box
#: groups (pipeline.game.BOX_GROUPS, not imported here: `import pipeline` stays light) plus logger and model.
GROUPS = ("prior", "mechanism", "attack", "metric", "bound", "logger", "model")


def combinations(overrides: Sequence[Override]) -> list[list[str]]:
    """The combinations of a sweep's values, as Hydra's basic sweeper forms them: the cartesian product over the keys
    in the order they first appear (a key given twice keeps its last value), one override list per combination.

    overrides: the parsed `hydra.sweeper.params` followed by the command line's (hydra.core.override_parser)."""
    values: dict[str, list[str]] = {}
    for override in overrides:
        key = override.get_key_element()
        if not override.is_sweep_override():
            values[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            values[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            from pipeline.errors import ConfigError

            raise ConfigError(f"{override.input_line} is an interval, which this sweeper cannot enumerate; give the "
                              f"values as a list ({key}=1,2,4) or a range ({key}=range(1,5)).")
    return [list(combination) for combination in itertools.product(*values.values())]


def batches(jobs: Sequence[Sequence[str]], max_batch_size: Optional[int]) -> Iterator[tuple[int, list[list[str]]]]:
    """(number of the first job, jobs) of each batch the launcher gets: every job at once when max_batch_size is
    None or -1 (as with Hydra's basic sweeper)."""
    size = len(jobs) if max_batch_size in (None, -1) else int(max_batch_size)  # type: ignore[arg-type]
    if size <= 0:
        from pipeline.errors import ConfigError

        raise ConfigError(f"hydra.sweeper.max_batch_size={max_batch_size} launches no job; give a positive number, "
                          f"or null to launch every job at once.")
    for start in range(0, len(jobs), size):
        yield start, [list(job) for job in jobs[start:start + size]]


def override_value(value: Any) -> str:
    """A Python value as the value of a Hydra override (strings quoted, lists and dicts in Hydra's syntax)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # Hydra's quoted strings: a backslash escapes only a quote (or the backslashes before one, and before the
        # closing quote), so only those runs are doubled
        escaped = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, value).replace("'", "\\'")
        return "'" + escaped + "'"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{override_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    raise TypeError(f"a figure's point gives {value!r} ({type(value).__name__}), which has no override syntax.")


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def point_overrides(combination: Sequence[str], point: Mapping[str, Any]) -> list[str]:
    """The combination's overrides with the point's on top (see the module docstring; deletions come later)."""
    switched = [k for k in point if k in GROUPS]
    kept = [o for o in combination
            if _key(o) not in point and not any(_key(o).startswith(f"{group}.") for group in switched)]
    added = []
    for key, value in point.items():
        if key in GROUPS or key.startswith("~"):
            added.append(f"{key}={value}" if not key.startswith("~") else key)
        else:
            added.append(f"{key}={override_value(value)}")
    return [*kept, *added]


def group_deletions(compose: Callable[[list[str]], DictConfig], job: list[str], point: Mapping[str, Any]) -> list[str]:
    """`~group.key` for each key an experiment file set in a group the point switched that the new option lacks."""
    switched = [k for k in point if k in GROUPS]
    if not switched:
        return []
    cfg = compose(job)
    deletions = []
    for group in switched:
        own = compose([f"{group}={point[group]}"]).get(group) or {}  # the option's own keys
        node = cfg.get(group) or {}
        for key in node:
            if key not in own:
                if OmegaConf.select(node, str(key), throw_on_missing=False) is None:
                    # Hydra deletes only a key whose value is not null: give it a value first
                    deletions.append(f"{group}.{key}=''")
                deletions.append(f"~{group}.{key}")
    return deletions


def figure_jobs(compose: Callable[[list[str]], DictConfig], combination: Sequence[str]) -> list[list[str]]:
    """The jobs of one sweep combination: one per point of its figure, or the combination alone.

    compose: overrides -> the composed config (Hydra's config loader in a sweep; tests pass their compose)."""
    from pipeline.experiments import build_figure
    from pipeline.preflight import check_data

    cfg = compose(list(combination))
    check_data(cfg)  # a job whose data is absent stops the sweep before any job runs, in one sentence
    if cfg.get("figure") is None:
        return [list(combination)]
    figure = build_figure(cfg)
    try:
        figure.check(cfg)  # boxes the figure cannot read: refused before its points are asked for
        points = figure.points(cfg)
    except (ValueError, FileNotFoundError) as exc:
        from pipeline.errors import ConfigError

        raise ConfigError(str(exc).strip().splitlines()[0]) from exc
    jobs = []
    for point in points:
        job = point_overrides(combination, point)
        jobs.append(job + group_deletions(compose, job, point) if job != list(combination) else job)
    log.info("%s: %d points for %s", figure.name, len(jobs), " ".join(combination) or "the defaults")
    return jobs


def sweep_jobs(compose: Callable[[list[str]], DictConfig], combinations: Sequence[Sequence[str]]) -> list[list[str]]:
    """Every job of a sweep, in launch order: each combination's `figure_jobs`, a repeated job once."""
    jobs: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for combination in combinations:
        for job in figure_jobs(compose, combination):
            if tuple(job) not in seen:
                seen.add(tuple(job))
                jobs.append(job)
    return jobs


def listed_jobs(sweep_dir: str | os.PathLike) -> list[list[str]] | None:
    """The job list a sweep wrote into its folder (JOBS_FILE), or None when there is none (or it is unreadable)."""
    path = Path(sweep_dir) / JOBS_FILE
    if not path.is_file():
        return None
    try:
        listed = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(listed, list) or not all(isinstance(job, list) for job in listed):
        return None
    return [[str(o) for o in job] for job in listed]


def job_folders(sweep_dir: str | os.PathLike) -> list[Path]:
    """The job folders in a sweep folder: its sub- and sub-subfolders holding a job's .hydra/ or metrics.json
    (the default hydra.sweep.subdir is the job number; submitit's own .submitit/ is not a job)."""
    root = Path(sweep_dir)
    if not root.is_dir():
        return []
    found = set()
    for pattern in ("*/.hydra", "*/metrics.json", "*/*/.hydra", "*/*/metrics.json"):
        found.update(p.parent for p in root.glob(pattern) if ".submitit" not in p.relative_to(root).parts)
    return sorted(found)


def check_sweep_folder(sweep_dir: str | os.PathLike, jobs: Sequence[Sequence[str]]) -> None:
    """The rule for a reused sweep folder (docs/pages/running.md, "Sweeping"): a folder holds one sweep.

    A -m sweep whose folder (hydra.sweep.dir) already holds a job folder is refused, before anything is
    written or run, unless the folder's jobs.yaml lists exactly this sweep's jobs: that is the same sweep run
    again, whose jobs that have no metrics.json run (each finished one finds its own metrics.json and is done:
    pipeline.job.check_output_dir). A folder without job folders (new, empty, or left by a sweep refused before
    its first job) is free to use.
    """
    folders = job_folders(sweep_dir)
    if not folders:
        return
    listed = listed_jobs(sweep_dir)
    if listed == [list(job) for job in jobs]:
        return
    from pipeline.errors import ConfigError

    root = Path(sweep_dir)
    if listed is None:
        held = f"{len(folders)} job folder(s) of a sweep without a {JOBS_FILE} (e.g. {folders[0].relative_to(root)})"
    else:
        first = next((i for i, (a, b) in enumerate(zip(listed, jobs)) if list(a) != list(b)), min(len(listed), len(jobs)))
        theirs = " ".join(listed[first]) if first < len(listed) else "nothing"
        held = (f"{len(folders)} job folder(s) of another sweep, whose {JOBS_FILE} lists {len(listed)} jobs against this "
                f"sweep's {len(jobs)} (job {first}: {theirs or 'the defaults'} there, "
                f"{' '.join(jobs[first]) if first < len(jobs) else 'nothing'} here)")
    raise ConfigError(
        f"hydra.sweep.dir {root} already holds {held}, and a sweep folder holds one sweep; point hydra.sweep.dir at "
        f"a new folder (or leave it at its default), or run exactly that sweep's command again to finish its "
        f"missing jobs.")


#: What a sweep writes into its folder before its first job: all a folder holds when the sweep failed before any job.


def first_existing(path: str | os.PathLike) -> Path:
    """The path itself if it exists, else its nearest existing parent: where a sweep's new folders begin."""
    path = Path(os.path.abspath(path))
    return next(p for p in (path, *path.parents) if p.exists())


def remove_unstarted_sweep(sweep_dir: str | os.PathLike, existed: str | os.PathLike) -> bool:
    """After a sweep failed: remove its folder if it holds no file but SWEEP_FILES (no job started: a job folder,
    submitit's logs, a report would be files), then the folders it created up to `existed` (first_existing before
    the sweep wrote anything; a folder that existed stays). Returns whether anything was removed."""
    root = Path(os.path.abspath(sweep_dir))
    if not root.is_dir() or any(p.is_symlink() or (not p.is_dir() and p.parent != root) or
                                (not p.is_dir() and p.name not in SWEEP_FILES) for p in root.rglob("*")):
        return False
    for name in SWEEP_FILES:
        (root / name).unlink(missing_ok=True)
    stop = Path(os.path.abspath(existed))
    folder = root
    while folder != stop and stop in folder.parents:
        try:
            shutil.rmtree(folder) if folder == root else folder.rmdir()  # the sweep folder's empty subfolders go too
        except OSError:
            break
        folder = folder.parent
    return True


def write_job_list(sweep_dir: str | os.PathLike, jobs: Sequence[Sequence[str]]) -> None:
    """Write the sweep's job list (JOBS_FILE) into its folder, atomically; pipeline.report.missing_jobs reads it to
    name the jobs that never ran."""
    folder = Path(sweep_dir)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{JOBS_FILE}.tmp"
    tmp.write_text(yaml.safe_dump([list(job) for job in jobs], width=1000))
    os.replace(tmp, folder / JOBS_FILE)


__all__ = ["combinations", "batches", "figure_jobs", "sweep_jobs", "group_deletions", "override_value", "point_overrides",
           "check_sweep_folder", "listed_jobs", "job_folders", "write_job_list", "first_existing", "remove_unstarted_sweep",
           "SWEEP_FILES"]
