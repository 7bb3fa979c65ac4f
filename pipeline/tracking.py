"""Experiment tracking: `logger=none` logs nothing, `logger=wandb` logs config, metrics and figures to W&B.

A logger is started before the game and always finished after it (pipeline.__main__ uses
`tracked`, a try/finally), with a non-zero exit code when the job failed, so a failing job never
leaves a W&B run open and one failure does not break a sweep. W&B runs are offline unless the user
sets WANDB_MODE (or logger.mode) otherwise;
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

if TYPE_CHECKING:
    from omegaconf import DictConfig

__all__ = ["NoLogger", "WandbLogger", "SweepFolder", "tracked", "flatten", "run_config", "build_logger",
           "RUN_SETTINGS"]

#: Top-level keys of the composed config that every run logs (the game's own settings).
RUN_SETTINGS = ("name", "seed", "trials", "confidences", "save_per_target")


def _mentions(value: Any, key: str) -> bool:
    """Whether a (resolved) config holds `key` anywhere in it."""
    if isinstance(value, Mapping):
        return key in value or any(_mentions(v, key) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_mentions(v, key) for v in value)
    return False


def run_config(cfg, groups, *, reads_data: bool | None = None) -> dict[str, Any]:
    """The part of the composed config a run used, for its W&B config (dashboard filters must not see
    keys the run never used, e.g. `model: smollm2` or `data_dir` on a synthetic game).

    groups: the config groups whose boxes ran (the game: prior, mechanism, attack, metric, bound; an
    experiment: what its task uses). Logged: those groups, the run settings (RUN_SETTINGS), `task` if
    the job is an experiment's task, `figure` if it is a point of an experiment's figure, `model` if a
    logged group names one (prior=pii, mechanism=dpsgd) or "model" is in groups, and `data_dir` if
    reads_data (None: if a logged group or the task has a data_dir key).
    """
    from omegaconf import OmegaConf

    resolved = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else dict(cfg)
    out: dict[str, Any] = {key: resolved[key] for key in RUN_SETTINGS if key in resolved}
    used = {group: resolved[group] for group in groups if group in resolved and group != "model"}
    out.update(used)
    for key in ("task", "figure"):  # an experiment's task, or the figure a game job is a point of
        if resolved.get(key) is not None:
            out[key] = resolved[key]
            used[key] = resolved[key]
    if "model" in resolved and ("model" in groups or _mentions(used, "model")):
        out["model"] = resolved["model"]
    if reads_data is None:
        reads_data = _mentions(used, "data_dir")
    if reads_data and "data_dir" in resolved:
        out["data_dir"] = resolved["data_dir"]
    return out


def flatten(metrics: Mapping, prefix: str = "") -> dict[str, Any]:
    """{"bound": {"0.95": 7}} -> {"bound/0.95": 7}: W&B summary keys for nested metrics."""
    flat: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}/"))
        else:
            flat[name] = value
    return flat


class NoLogger:
    """logger=none: every call does nothing."""

    name = "none"

    def start(self, *, config: Mapping, name: str, group: str, tags: list[str], directory: str | os.PathLike) -> None:
        pass

    def update_config(self, config: Mapping) -> None:
        pass

    def log_metrics(self, metrics: Mapping) -> None:
        pass

    def log_figures(self, figures: Mapping[str, str | os.PathLike]) -> None:
        pass

    def log_table(self, name: str, columns: list[str], rows: list[Mapping]) -> None:
        pass

    def finish(self, exit_code: int = 0) -> None:
        pass


class WandbLogger:
    """logger=wandb: one W&B run per job, in the job's directory, grouped by experiment, tagged by box."""

    name = "wandb"

    def __init__(self, project: str = "advbounds", entity: str | None = None, mode: str = "offline",
                 job_type: str = "attack_game") -> None:
        if mode not in ("offline", "online", "disabled", "shared"):
            raise ValueError(f"mode must be one of offline, online, disabled, got {mode!r}; e.g. logger.mode=offline.")
        self.project, self.entity, self.mode, self.job_type = project, entity, mode, job_type
        self.run = None

    def start(self, *, config: Mapping, name: str, group: str, tags: list[str], directory: str | os.PathLike) -> None:
        import wandb

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=self.project, entity=self.entity, mode=self.mode, job_type=self.job_type,
            dir=str(directory), config=dict(config), name=name, group=group, tags=list(tags),
            settings=wandb.Settings(quiet=True),
        )

    def update_config(self, config: Mapping) -> None:
        """Add keys to the run's config once the run knows it used them (e.g. data_dir after reading files)."""
        if self.run is None or not config:
            return
        self.run.config.update(dict(config), allow_val_change=True)

    def log_metrics(self, metrics: Mapping) -> None:
        if self.run is None:
            return
        # Per-trial successes become the run's history (one step per trial), the rest its summary.
        attack = metrics.get("attack_successes") or []
        baseline = metrics.get("prior_successes") or []
        for step, (a, b) in enumerate(zip(attack, baseline)):
            self.run.log({"trial/attack_successes": a, "trial/prior_successes": b}, step=step)
        for key, value in flatten(metrics).items():
            self.run.summary[key] = value

    def log_figures(self, figures: Mapping[str, str | os.PathLike]) -> None:
        if self.run is None:
            return
        import wandb

        self.run.log({f"figures/{name}": wandb.Image(str(path)) for name, path in figures.items()})

    def log_table(self, name: str, columns: list[str], rows: list[Mapping]) -> None:
        """An experiment's table as a W&B Table `tables/<name>` (missing cells as None)."""
        if self.run is None:
            return
        import wandb

        data = [[row.get(c) for c in columns] for row in rows]
        self.run.log({f"tables/{name}": wandb.Table(columns=list(columns), data=data)})

    def finish(self, exit_code: int = 0) -> None:
        if self.run is None:
            return
        import wandb

        try:
            self.run.finish(exit_code=exit_code)
        finally:
            self.run = None
            # finish() returns before W&B's service has written the run file to the end; shutting
            # the service down flushes it, so the job's folder is complete when the job returns.
            wandb.teardown()


@contextlib.contextmanager
def tracked(logger, *, config: Mapping, name: str, group: str, tags: list[str], directory) -> Iterator[Any]:
    """Start `logger`, yield it, and finish it whatever happens (exit code 1 if the body raised)."""
    logger.start(config=config, name=name, group=group, tags=tags, directory=directory)
    exit_code = 1
    try:
        yield logger
        exit_code = 0
    finally:
        logger.finish(exit_code=exit_code)


try:  # Hydra's callback base class (hydra-core >= 1.1)
    from hydra.experimental.callback import Callback as _Callback
except ImportError:  # pragma: no cover
    _Callback = object


class SweepFolder(_Callback):
    """hydra.callbacks entry of conf/config.yaml: when a -m sweep ends, print its folder and the report command."""

    def on_multirun_end(self, config, **kwargs: Any) -> None:
        folder = Path(str(config.hydra.sweep.dir)).resolve()
        print(f"sweep folder: {folder}\nreport: python -m pipeline.report {folder}", flush=True)


# Reading an offline run back without syncing: tests/wandb_offline.py (read_offline_run), a test helper.


def build_logger(cfg: DictConfig):
    """Instantiate the logger group (pipeline.tracking); a refused value raises ConfigError."""
    from hydra.utils import instantiate

    try:
        return instantiate(cfg.logger)
    except Exception as exc:  # noqa: BLE001
        from pipeline.errors import _box_error

        raise _box_error("logger", cfg, exc) from exc
