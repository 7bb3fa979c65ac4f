"""hydra/sweeper=points: Hydra's basic sweep (the cartesian product of the sweep values), plus each combination's
figure points as game jobs (pipeline.sweeper has the rules; this module is the Hydra plugin that runs them).

Built on Hydra's public Sweeper interface (hydra.plugins.sweeper): setup() gets the launcher from Hydra's plugin
registry, sweep() lists every job, refuses a folder that holds another sweep, writes jobs.yaml and multirun.yaml,
then launches the jobs in batches of `max_batch_size` (null: all at once), as the basic sweeper does. A sweep that
fails before any of its jobs left a file (every job refused, a launcher that cannot start) removes what it wrote.
"""
# No `from __future__ import annotations`: Hydra's scan runs this module before it is in sys.modules, where
# dataclasses look string annotations up.
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.plugins import Plugins
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from pipeline import sweeper as points

log = logging.getLogger(__name__)


@dataclass
class PointsSweeperConf:
    _target_: str = "hydra_plugins.advbounds.sweeper.PointsSweeper"
    # Jobs handed to the launcher at once (null: every job of the sweep).
    max_batch_size: Optional[int] = None
    # Sweep values, as on the command line: {key: "1,2,4"}; an experiment file's `hydra.sweeper.params`.
    params: Optional[Dict[str, str]] = None


ConfigStore.instance().store(group="hydra/sweeper", name="points", node=PointsSweeperConf, provider="advbounds")


class PointsSweeper(Sweeper):
    """The basic sweep, whose combinations expand into their figure's points (pipeline.sweeper)."""

    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[Dict[str, str]] = None) -> None:
        self.max_batch_size = max_batch_size
        self.params = dict(params or {})
        self.hydra_context: Optional[HydraContext] = None
        self.config: Optional[DictConfig] = None
        self.launcher: Optional[Launcher] = None
        self._composed: dict[tuple[str, ...], DictConfig] = {}

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context = hydra_context
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(hydra_context=hydra_context,
                                                                task_function=task_function, config=config)

    def _compose(self, overrides: Sequence[str]) -> DictConfig:
        """The job config of these overrides, composed once per sweep (a figure's repeated points, e.g. Figure
        llm's idealized game for every hyperparameter setting, and the validation of the jobs reuse it)."""
        assert self.hydra_context is not None and self.config is not None
        key = tuple(overrides)
        if key not in self._composed:
            self._composed[key] = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        return self._composed[key]

    def jobs(self, arguments: Sequence[str]) -> List[List[str]]:
        """Every job of the sweep (override lists, in job-number order): `params`, then the command line's
        arguments, as combinations, each expanded into its figure's points."""
        assert self.hydra_context is not None
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        overrides = parser.parse_overrides([f"{key}={value}" for key, value in self.params.items()] + list(arguments))
        return points.sweep_jobs(self._compose, points.combinations(overrides))

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Every job is composed before launching (a composition error fails the sweep early): the jobs
        composed while listing the points are not composed again."""
        super().validate_batch_is_legal([job for job in batch if tuple(job) not in self._composed])

    def sweep(self, arguments: List[str]) -> Any:
        assert self.config is not None and self.launcher is not None
        jobs = self.jobs(arguments)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        points.check_sweep_folder(sweep_dir, jobs)  # one sweep per folder: refused before anything is written or run
        existed = points.first_existing(sweep_dir)
        try:
            points.write_job_list(sweep_dir, jobs)
            OmegaConf.save(self.config, sweep_dir / "multirun.yaml")  # the sweep's config, as the basic sweeper saves it
            returns = []
            for first, batch in points.batches(jobs, self.max_batch_size):
                self.validate_batch_is_legal(batch)
                results = self.launcher.launch(batch, initial_job_idx=first)
                for result in results:
                    _ = result.return_value  # raises the exception of a job that failed
                returns.append(results)
        except BaseException:
            # failed (or interrupted) before any job left a file: no folder stays (a started job's folder does)
            points.remove_unstarted_sweep(sweep_dir, existed)
            raise
        return returns
