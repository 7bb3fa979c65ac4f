"""The paper's experiments: figures that are sweeps of games, and tasks that compute bound tables (conf/experiment/).

* A **figure** (`figure:` in conf/experiment/<name>.yaml; a `Figure` class of a family module: tabular, llm,
  synthetic) plays nothing itself. A `-m` sweep of the experiment is a sweep of ordinary game jobs: the
  project's sweeper (pipeline.sweeper) asks the figure for the points of each combination of
  `hydra.sweeper.params` and the command line, each point's game job (pipeline.job.run_game) adds its rows of
  the figure's table to its metrics.json (`figure_metrics`), and at the end of the sweep the `ExperimentReport`
  callback (or `python -m pipeline.report <sweep dir>`) joins the jobs' rows (`Figure.combine`) into
  `<sweep dir>/<name>.csv` and draws `<sweep dir>/figures/<name>.png`. A single run of a figure's experiment is
  one point (its rows also go to `<name>.csv` in its job folder).
* A **task** (`task:`; a `Task` class) computes a table that is not a game (bound curves, eps_protect, the
  PII law, the Zipf fit) in one job: `run_task` writes metrics.json (the rows under "table"), `<name>.csv` and
  `figures/<name>.png`; a `-m` sweep of a task concatenates its jobs' tables the same way.

Shared helpers live in `pipeline.experiments.common`.
"""
from __future__ import annotations

import csv
import importlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Mapping

from omegaconf import DictConfig, OmegaConf

from pipeline.experiments.common import Figure, Task, canary_probability
from pipeline.io import write_json_atomic

__all__ = [
    "Figure", "Task", "canary_probability", "build_figure", "figure_metrics", "build_task", "run_task", "write_report", "has_experiment_jobs", "table_columns",
    "ExperimentReport",
]

log = logging.getLogger(__name__)


def _import(target: str):
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _build(cfg: DictConfig, key: str, kind: type):
    """Instantiate cfg.<key> (task or figure); a refused value raises the game's ConfigError naming <key>.<argument>."""
    from hydra.utils import instantiate

    from pipeline.errors import ConfigError, _box_error

    try:
        built = instantiate(cfg[key], _convert_="all")
    except Exception as exc:  # noqa: BLE001 - every construction failure is a config problem
        raise _box_error(key, cfg, exc) from exc
    if not isinstance(built, kind):
        raise ConfigError(f"{key}._target_ must name a {kind.__name__} class of pipeline.experiments.<family>, got "
                          f"{cfg[key].get('_target_')!r}.")
    return built


def build_task(cfg: DictConfig) -> Task:
    """Instantiate cfg.task (ConfigError naming task.<argument> if refused)."""
    return _build(cfg, "task", Task)


def build_figure(cfg: DictConfig) -> Figure:
    """Instantiate cfg.figure (ConfigError naming figure.<argument> if refused)."""
    return _build(cfg, "figure", Figure)


def figure_metrics(figure: Figure, cfg: DictConfig, metrics: Mapping) -> dict:
    """What a figure's game job adds to its metrics.json: its rows of the table, the columns, the experiment."""
    from pipeline.errors import ConfigError

    try:
        rows = figure.rows(cfg, metrics)
    except ValueError as exc:
        raise ConfigError(str(exc).strip().splitlines()[0]) from exc
    return {"table": rows, "columns": list(figure.columns),
            "experiment": {"name": figure.name, "target": f"{type(figure).__module__}.{type(figure).__name__}"}}


def _data_files(paths) -> list[dict]:
    """{"path", "size", "sha256"} of every file read (a folder: each file under it, sorted)."""
    from pipeline.cache import file_fingerprint

    files: list = []
    for path in dict.fromkeys(Path(p) for p in paths):  # each file once, in the order first read
        path = Path(path)
        members = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        files.extend(file_fingerprint(p) for p in members if p.exists())
    return files


def run_task(cfg: DictConfig, output_dir: str | os.PathLike, *, choices: Mapping[str, str] | None = None,
             run_name: str = "defaults", cache=None) -> dict:
    """One experiment job: compute the task's table inside the logger's run, then write and log its outputs.

    metrics.json gets {"experiment": {name, target}, "columns", "table", "headline"}; nothing is written
    before every number is computed. (choices: the chosen option per config group, unused by a task.)
    """
    from pipeline.cache import StageCache
    from pipeline.errors import ConfigError
    from pipeline.tracking import build_logger
    from pipeline.tracking import tracked

    output_dir = Path(output_dir)
    task = build_task(cfg)
    tags = [f"experiment:{task.name}"]
    logger = build_logger(cfg)
    cache = cache if cache is not None else StageCache(cfg.cache_dir)
    from pipeline.tracking import run_config

    # The W&B config holds the task, the boxes it used and the run settings, not every key of the tree.
    from stages.prior.base import RESOLVED_DATA

    read_before = len(RESOLVED_DATA)
    with tracked(logger, config=run_config(cfg, task.config_groups(cfg), reads_data=task.reads_data(cfg)), name=run_name, group=str(cfg.name),
                 tags=tags, directory=output_dir):
        try:
            result = task.run(cfg, output_dir, cache, logger)
        except ConfigError:
            raise
        except ValueError as exc:
            raise ConfigError(str(exc).strip().splitlines()[0]) from exc
        metrics = {**result, "experiment": {"name": task.name, "target": f"{type(task).__module__}.{type(task).__name__}"},
                   "columns": list(task.columns)}
        # Like a game's metrics.json: the data files the job read (size and SHA-256), the stages it computed
        # or reused, and the number of trials as a number.
        metrics.setdefault("data_files", _data_files(RESOLVED_DATA[read_before:]))
        metrics["stages"] = {**(metrics.get("stages") or {}), "computed": [[s, k] for s, k in cache.computed],
                             "reused": [[s, k] for s, k in cache.reused]}
        if "trials" in cfg and "trials" not in metrics:
            metrics["trials"] = int(cfg.trials)
        write_json_atomic(output_dir / "metrics.json", metrics)
        table, figure, rows = write_report(output_dir)
        # A task plays no game (a figure's games are game jobs of their own): it logs its headline numbers.
        logger.log_metrics({f"headline/{k}": v for k, v in metrics.get("headline", {}).items()})
        logger.log_figures({task.name: figure})
        if hasattr(logger, "log_table"):
            logger.log_table(task.name, table_columns(rows), rows)
    log.info("%s: %d rows -> %s, %s", task.name, len(rows), table, figure)
    return metrics


def _experiment_jobs(root: Path) -> list[tuple[Path, dict]]:
    paths = sorted((p for p in root.rglob("metrics.json") if ".submitit" not in p.parts),
                   key=lambda p: [int(s) if s.isdigit() else s for s in p.parent.relative_to(root).parts])
    jobs = []
    for path in paths:
        try:
            metrics = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):  # unreadable: pipeline.report names it
            continue
        if isinstance(metrics, Mapping) and isinstance(metrics.get("experiment"), Mapping):
            jobs.append((path.parent, metrics))
    return jobs


def has_experiment_jobs(root: str | os.PathLike) -> bool:
    """Whether some job under root (or root itself) was an experiment task."""
    root = Path(root)
    return root.is_dir() and bool(_experiment_jobs(root))


def _overrides(job: Path) -> dict[str, str]:
    path = job / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return {}
    out = {}
    for item in OmegaConf.to_container(OmegaConf.load(path)) or []:
        key, _, value = str(item).partition("=")
        out[key.lstrip("+~")] = value
    return out


def table_columns(rows: list[dict]) -> list[str]:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    return columns


def write_report(root: str | os.PathLike) -> tuple[Path, Path, list[dict]]:
    """Concatenate the experiment tables of the jobs under root into <root>/<name>.csv and figures/<name>.png.

    Sweep overrides that vary between jobs and that no column already shows become extra columns.
    Returns (csv path, figure path, rows).
    """
    root = Path(root)
    jobs = _experiment_jobs(root)
    if not jobs:
        raise FileNotFoundError(f"no experiment metrics.json under {root}; did the experiment's jobs finish?")
    names = {metrics["experiment"]["name"] for _, metrics in jobs}
    if len(names) > 1:
        raise ValueError(f"{root} holds jobs of several experiments ({sorted(names)}); report each folder separately.")
    target = jobs[0][1]["experiment"]["target"]
    task_class = _import(target)
    overrides = [_overrides(job) for job, _ in jobs]
    keys = sorted({k for o in overrides for k in o})
    varying = [k for k in keys if len({o.get(k) for o in overrides}) > 1 and k not in task_class.represented]
    rows = [{**row, **{k: o.get(k) for k in varying}} for (_, metrics), o in zip(jobs, overrides) for row in metrics["table"]]
    if hasattr(task_class, "combine"):  # a figure's table joins its games' rows (Figure llm: the idealized game's)
        rows = task_class.combine(rows)
    columns = [*jobs[0][1].get("columns", task_class.columns), *varying]
    name = task_class.name
    path = root / f"{name}.csv"
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)
    figure = task_class.plot(rows, root / "figures" / f"{name}.png")
    return path, figure, rows


try:  # Hydra's callback base class (hydra-core >= 1.1)
    from hydra.experimental.callback import Callback as _Callback
except ImportError:  # pragma: no cover
    _Callback = object


class ExperimentReport(_Callback):
    """hydra.callbacks entry of every experiment: after a -m sweep, write the sweep's table and figure.

    With logger=wandb the combined table and figure also go to a W&B run `report` in the sweep folder.
    """

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        root = Path(config.hydra.sweep.dir)
        try:
            table, figure, rows = write_report(root)
        except FileNotFoundError as exc:  # every job failed: nothing to report, the jobs said why
            log.warning("%s", exc)
            return
        print(f"{len(rows)} rows -> {table}\nfigure -> {figure}")
        if str(config.get("logger", {}).get("_target_", "")).endswith("WandbLogger"):
            from pipeline.tracking import build_logger
            from pipeline.tracking import tracked

            logger = build_logger(config)
            name = table.stem
            with tracked(logger, config={"sweep_dir": str(root)}, name="report", group=str(config.name),
                         tags=[f"experiment:{name}", "report"], directory=root):
                logger.log_figures({name: figure})
                if hasattr(logger, "log_table"):
                    logger.log_table(name, table_columns(rows), rows)
