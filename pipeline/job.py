"""One job: play the game of a composed config (pipeline.game, the engine), then write what it produced —
metrics.json (created exclusively: a job never replaces another's), the per-target arrays when asked, the
histogram of the trials (pipeline.figures, drawn from the record) and, for a point of an experiment, its rows of
the experiment's table — and hand all of it to the logger (pipeline.tracking).

A job folder is whole or absent: a job's outputs are written into a staging folder inside the job folder
(`.staging-*`, removed whatever happens) and moved into place together, metrics.json last, as the commit marker,
under a lock, so a folder that holds a metrics.json holds everything its job wrote, and an interrupted job leaves
only Hydra's `.hydra/` and its log. A job whose folder already holds the metrics.json of the same job (the same
overrides and composed config, as its `.hydra/` records them) is done: `check_output_dir` says so and
`complete_job` draws what an older, interrupted run of it left undrawn; the metrics.json of another job is refused.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from filelock import FileLock
from omegaconf import DictConfig, OmegaConf

from pipeline import boundary
from pipeline.cache import StageCache, save_arrays
from pipeline.errors import ConfigError
from pipeline.figures import plot_successes
from pipeline.game import BOX_GROUPS, compute_metrics
from pipeline.io import write_json_atomic, write_trials_csv
from pipeline.labels import baseline_label, bound_label, privacy_label

__all__ = ["check_output_dir", "complete_job", "folder_contents", "run_game", "run_job"]

# the job's summary line is the game's: it keeps the engine's logger name (filters and tests select on it)
log = logging.getLogger("pipeline.game")


#: Prefix of the staging folder a job writes its outputs into before they move into place (run_game).
STAGING_PREFIX = ".staging-"
_COMMIT_LOCK = ".commit.lock"
# metrics.json while staged: not under its own name, so no scan for metrics.json (a report, job_folders) finds it there
_STAGED_METRICS = "metrics.json.staged"
#: One row per attack and trial: successes, the bound it is held to, exceeded or not, its audit (pipeline.io.trials_rows).
TRIALS_CSV = "trials.csv"


def folder_contents(folder: str | os.PathLike) -> str:
    """What a folder holds, for a message about it: '.hydra/, game.log and figures/' (folders with a slash; a
    staging folder or commit lock of a job still writing is left out), 'nothing' when empty or missing."""
    try:
        names = sorted(f"{p.name}/" if p.is_dir() else p.name for p in Path(folder).iterdir()
                       if not p.name.startswith((STAGING_PREFIX, _COMMIT_LOCK)))
    except OSError:
        names = []
    if len(names) > 1:
        return f"{', '.join(names[:-1])} and {names[-1]}"
    return names[0] if names else "nothing"


def _record(folder: Path, name: str):
    """The plain value of <folder>/.hydra/<name> (what Hydra recorded for the job that ran there), else None."""
    try:  # read as Hydra wrote it (OmegaConf's YAML), so every value compares equal to the composed one
        return OmegaConf.to_container(OmegaConf.load(folder / ".hydra" / name), resolve=False)
    except Exception:  # noqa: BLE001 - missing, unreadable or not YAML: no record
        return None


def check_output_dir(output_dir: str | os.PathLike, cfg: DictConfig | None = None,
                     overrides: Sequence[str] | None = None) -> bool:
    """Whether the job folder already holds this job's metrics.json (the job is done); False when it holds none.

    cfg and overrides identify the job (its composed config and Hydra's override list, as `.hydra/config.yaml`
    and `.hydra/overrides.yaml` record them; pipeline.hydra_guard keeps a finished job's record). A metrics.json
    of another job, or of a job these do not identify (none given, no record), is refused with a ConfigError
    naming what the folder holds: every job needs its own folder."""
    folder = Path(output_dir)
    if not (folder / "metrics.json").exists():
        return False
    theirs, recorded = _record(folder, "overrides.yaml"), _record(folder, "config.yaml")
    if cfg is None or overrides is None:  # a job that does not say which it is (pipeline.job called directly)
        differs = ""
    elif theirs is None or recorded is None:
        differs = "; its .hydra/ does not record which job wrote it"
    elif [str(o) for o in theirs] != list(overrides):
        differs = (f"; it ran {' '.join(str(o) for o in theirs) or 'the defaults'}, this job "
                   f"{' '.join(overrides) or 'the defaults'}")
    elif recorded != OmegaConf.to_container(cfg, resolve=False):
        differs = "; it ran the same overrides on another composed config (its .hydra/config.yaml differs)"
    else:
        return True
    raise ConfigError(
        f"job folder {folder} already holds a metrics.json of another job (it holds {folder_contents(folder)}"
        f"{differs}); every job needs its own folder: leave hydra.run.dir and hydra.sweep.dir at their defaults or "
        "point them at a new folder."
    )


def complete_job(cfg: DictConfig, output_dir: str | os.PathLike) -> list[str]:
    """Finish what a done job's folder lacks (an older run, interrupted after its metrics.json, left its figure
    undrawn, or ran before trials.csv was written): the histogram and trials.csv of a game, the table and figure of
    an experiment's task. Returns what it wrote."""
    import json

    folder = Path(output_dir)
    if cfg.get("task") is not None:
        from pipeline.experiments import write_report

        table, figure, _ = write_report(folder)
        return [str(table), str(figure)]
    figure, table = folder / "figures" / "successes.png", folder / TRIALS_CSV
    wrote = []
    if not figure.exists():
        plot_successes(json.loads((folder / "metrics.json").read_text()), figure)
        wrote.append(str(figure))
    if not table.exists():
        staged = table.with_name(f".{TRIALS_CSV}.staged")
        write_trials_csv(json.loads((folder / "metrics.json").read_text()), staged)
        os.replace(staged, table)
        wrote.append(str(table))
    return wrote


def _commit(staging: Path, output_dir: Path) -> None:
    """Move a job's staged outputs into its folder, metrics.json last (the commit marker), under the folder's lock,
    unless another job committed there first (then a ConfigError, and nothing of this job is moved)."""
    lock_path = output_dir / _COMMIT_LOCK
    with FileLock(str(lock_path)):
        try:
            check_output_dir(output_dir)  # raises the ConfigError naming the folder
            for path in sorted(staging.rglob("*")):
                if path.is_file() and path != staging / _STAGED_METRICS:
                    target = output_dir / path.relative_to(staging)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(path, target)
            os.link(staging / _STAGED_METRICS, output_dir / "metrics.json")  # atomic, and never replaces one
        finally:
            lock_path.unlink(missing_ok=True)


def run_game(cfg: DictConfig, output_dir: str | os.PathLike, cache: StageCache | None = None, logger=None) -> dict:
    """Play the game of cfg and write metrics.json, trials.csv and figures/successes.png into output_dir.

    Everything is computed before anything is written, so a refused value leaves no metrics.json; the outputs are
    staged and moved into place together, metrics.json last (the folder is whole or holds none of them), and
    metrics.json is created exclusively, so a job never replaces another job's (ConfigError instead).
    With save_per_target the trials' guesses and prior successes go to output_dir/per_target/*.npy.
    The logger (pipeline.tracking) receives the metrics and the figure.
    """
    output_dir = Path(output_dir)
    check_output_dir(output_dir)
    experiment_figure = None
    if cfg.get("figure") is not None:  # a point of an experiment's figure: the game, then its rows of the table
        from pipeline.experiments import build_figure, figure_metrics

        experiment_figure = build_figure(cfg)
        try:
            experiment_figure.check(cfg)
            experiment_figure.check_point(cfg)
        except ValueError as exc:
            raise ConfigError(str(exc).strip().splitlines()[0]) from exc
        experiment_figure.setup(cfg)
    metrics, played, _ = compute_metrics(cfg, cache)
    if experiment_figure is not None:
        metrics.update(figure_metrics(experiment_figure, cfg, metrics))
    if played.per_target:
        metrics["per_target"] = str(output_dir / "per_target")
    output_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=output_dir))
    try:
        plot_successes(metrics, staging / "figures" / "successes.png")
        write_trials_csv(metrics, staging / TRIALS_CSV)
        if played.per_target:
            (staging / "per_target").mkdir()
            save_arrays(staging / "per_target", guesses=played.guesses,
                        attack_prior_success=played.attack_prior_success)
        write_json_atomic(staging / _STAGED_METRICS, metrics)
        _commit(staging, output_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    figure = output_dir / "figures" / "successes.png"
    if logger is not None:
        logger.log_metrics({k: v for k, v in metrics.items() if k not in ("table", "columns", "experiment")})
        logger.log_figures({"successes": figure})
        if metrics.get("table") and boundary.logs_tables(logger):
            from pipeline.experiments import table_columns

            logger.log_table(metrics["experiment"]["name"], table_columns(metrics["table"]), metrics["table"])
    bound_text = f"bound {bound_label(metrics)} {metrics['bound']}" if metrics["bound"] is not None else "no bound"
    floor_counts = (metrics.get("worst_case_floor") or {}).get("counts")
    if floor_counts is not None:  # the bracket's other end (THEORY.md section 11)
        bound_text += f", floor (a real mechanism's counts) {floor_counts}"
    log.info("attack %.2f, %s %.2f, %s (of %d targets, %d trials, %s)%s",
             metrics["attack_success_mean"], baseline_label(metrics), metrics["prior_success_mean"],
             bound_text, metrics["n_targets"], metrics["trials"], privacy_label(metrics),
             f"; WARNING: {metrics['unusable_canaries']} canary guesses had no usable likelihood (see above)"
             if metrics.get("unusable_canaries") else "")
    return metrics


def run_job(cfg: DictConfig, output_dir: str | os.PathLike, *, choices: Mapping[str, str] | None = None,
            run_name: str = "defaults", cache: StageCache | None = None) -> dict:
    """One job: run_game inside the chosen logger's run, which is closed whatever happens.

    choices are the chosen option per config group (Hydra's runtime.choices): they tag the W&B run.
    """
    from pipeline.tracking import tracked

    choices = dict(choices or {})
    tags = [f"{group}:{choices[group]}" for group in BOX_GROUPS if choices.get(group)]
    if cfg.get("figure") is not None:  # a point of an experiment's figure: the experiment's tag, as its report has
        tags.append(f"experiment:{cfg.name}")
    from pipeline.preflight import check_config

    check_config(cfg)  # boxes that cannot play together, a config that does not resolve: before anything is built
    from pipeline.tracking import build_logger

    logger = build_logger(cfg)
    if cache is None:
        cache = StageCache(cfg.cache_dir)
    check_output_dir(output_dir)
    from pipeline.tracking import run_config

    # The W&B config holds the boxes that ran and the game's settings; data_dir once files were read.
    with tracked(logger, config=run_config(cfg, BOX_GROUPS, reads_data=False), name=run_name, group=str(cfg.name),
                 tags=tags, directory=output_dir):
        metrics = run_game(cfg, output_dir, cache=cache, logger=logger)
        if metrics.get("data_files") and "data_dir" in cfg and boundary.updates_config(logger):
            logger.update_config({"data_dir": str(cfg.data_dir)})
        return metrics
