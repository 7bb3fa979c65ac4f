"""One job: play the game of a composed config (pipeline.game, the engine), then write what it produced —
metrics.json (created exclusively: a job never replaces another's), the per-target arrays when asked, the
histogram of the trials (pipeline.figures, drawn from the record) and, for a point of an experiment, its rows of
the experiment's table — and hand all of it to the logger (pipeline.tracking)."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Mapping

from omegaconf import DictConfig

from pipeline import boundary
from pipeline.cache import StageCache, save_arrays
from pipeline.errors import ConfigError
from pipeline.figures import plot_successes
from pipeline.game import BOX_GROUPS, compute_metrics
from pipeline.io import write_json_atomic
from pipeline.labels import baseline_label, bound_label, privacy_label

__all__ = ["check_output_dir", "run_game", "run_job"]

# the job's summary line is the game's: it keeps the engine's logger name (filters and tests select on it)
log = logging.getLogger("pipeline.game")


def check_output_dir(output_dir: str | os.PathLike) -> None:
    """Refuse a job folder that already holds another job's metrics.json (every job needs its own folder)."""
    existing = Path(output_dir) / "metrics.json"
    if existing.exists():
        raise ConfigError(
            f"job folder {Path(output_dir)} already holds a metrics.json of another job; every job needs its own "
            "folder: leave hydra.run.dir and hydra.sweep.dir at their defaults or point them at a new folder."
        )


def run_game(cfg: DictConfig, output_dir: str | os.PathLike, cache: StageCache | None = None, logger=None) -> dict:
    """Play the game of cfg and write metrics.json and figures/successes.png into output_dir.

    Everything is computed before anything is written, so a refused value leaves no metrics.json;
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
    try:
        write_json_atomic(output_dir / "metrics.json", metrics, exclusive=True)
    except FileExistsError:
        check_output_dir(output_dir)  # raises the ConfigError naming the folder
        raise
    figure = output_dir / "figures" / "successes.png"
    plot_successes(metrics, figure)
    if played.per_target:
        (output_dir / "per_target").mkdir(parents=True, exist_ok=True)
        save_arrays(output_dir / "per_target", guesses=played.guesses, attack_prior_success=played.attack_prior_success)
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
