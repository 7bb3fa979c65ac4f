"""hydra/launcher=slurm*: hydra-submitit's SLURM launcher that fails in one sentence on jobs SLURM can never start
and cancels its jobs when the sweep is interrupted (pipeline.slurm_launcher has the SLURM side; this module is the
Hydra plugin).

It implements the launcher interface's `launch` itself, so that it holds the submitted jobs between submission and
results: it builds the submitit executor and the jobs' arguments exactly as hydra-submitit's
BaseSubmititLauncher.launch does (`_executor_and_jobs`; tests/pipeline/test_hydra_plugins.py fails when
hydra-submitit builds them differently), submits them, waits while they pend (asking squeue why), then collects
the results. Running a job (`__call__`, in the SLURM job) and `checkpoint` are hydra-submitit's own.
"""
# No `from __future__ import annotations`: Hydra's scan runs this module before it is in sys.modules, where
# dataclasses look string annotations up.
import contextlib
import io
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, filter_overrides
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf, SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as SubmititSlurmLauncher
from omegaconf import OmegaConf

from pipeline import slurm_launcher as slurm

log = logging.getLogger(__name__)

_FIRST_CHECK_S = 1.0  # SLURM sets most "never" reasons at submission; look once right away


@dataclass
class AdvboundsSlurmQueueConf(SlurmQueueConf):
    """submitit_slurm plus the pending-job checks of the project's SlurmLauncher."""

    _target_: str = "hydra_plugins.advbounds.launcher.SlurmLauncher"
    # While jobs pend, ask squeue why every this many seconds; 0 turns the check off (the sweep then waits silently).
    pending_check_s: float = 10.0
    # Jobs waiting for nodes that are down, drained or reserved (ReqNodeNotAvail, PartitionDown, ...): give up
    # and cancel them after this many minutes; null waits forever.
    unavailable_timeout_min: Optional[float] = 10.0


ConfigStore.instance().store(group="hydra/launcher", name="advbounds_slurm", node=AdvboundsSlurmQueueConf,
                             provider="advbounds")


class SlurmLauncher(SubmititSlurmLauncher):
    """hydra-submitit's SlurmLauncher that fails on jobs SLURM can never start and cancels its jobs when
    the sweep is interrupted."""

    def __init__(self, **params: Any) -> None:
        own = {key: params.pop(key) for key in slurm.OWN_KEYS if key in params}
        super().__init__(**params)
        self.pending_check_s = float(own.get("pending_check_s") or 0.0)
        timeout = own.get("unavailable_timeout_min")
        self.unavailable_timeout_s = None if timeout is None else float(timeout) * 60.0
        self._submitted: list[Any] = []

    def setup(self, *, hydra_context: Any, task_function: Any, config: Any) -> None:
        """hydra-submitit's setup, then the one check that needs no job: a machine without SLURM is refused in one
        sentence here, before the sweeper writes anything (submitit would raise when the sweep is launched)."""
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)
        choice = OmegaConf.select(config, "hydra.runtime.choices", default=None) or {}
        problem = slurm.unavailable(str(choice.get("hydra/launcher") or "slurm"))
        if problem is not None:
            raise problem

    def _executor_and_jobs(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Tuple[Any, List[tuple]]:
        """The submitit executor and each job's arguments, as hydra-submitit's BaseSubmititLauncher.launch builds
        them before its `executor.map_array(self, *zip(*job_params))` (the sweep folder made on the way)."""
        import submitit

        assert self.config is not None and len(job_overrides) > 0
        init_keys = {"max_num_timeout"}  # executor arguments; the other settings are parameters
        executor = submitit.AutoExecutor(cluster=self._EXECUTOR, folder=self.params["submitit_folder"],
                                         **{f"{self._EXECUTOR}_{key}": value for key, value in self.params.items()
                                            if key in init_keys})
        shared = set(OmegaConf.structured(BaseQueueConf).keys())  # submitit's own names; the rest is slurm_<key>
        executor.update_parameters(**{key if key in shared else f"{self._EXECUTOR}_{key}": value
                                      for key, value in self.params.items()
                                      if key not in init_keys | {"submitit_folder"}})
        log.info(f"Submitit '{self._EXECUTOR}' sweep output dir : {self.config.hydra.sweep.dir}")
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if "mode" in self.config.hydra.sweep:
            os.chmod(sweep_dir, mode=int(str(self.config.hydra.sweep.mode), 8))
        job_params = []
        for number, overrides in enumerate(job_overrides, start=initial_job_idx):
            log.info(f"\t#{number} : {' '.join(filter_overrides(overrides))}")
            job_params.append((list(overrides), "hydra.sweep.dir", number, f"job_id_for_{number}",
                               Singleton.get_state()))
        return executor, job_params

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        executor, job_params = self._executor_and_jobs(job_overrides, initial_job_idx)
        self._submitted = []
        previous_sigterm = None
        try:
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):  # outside `python -m pipeline`
                previous_sigterm = signal.signal(signal.SIGTERM, _raise_interrupt)
            jobs = self._submit(executor, job_params)
            self._wait_while_pending(jobs)
            return [job.results()[0] for job in jobs]
        except BaseException as exc:  # an interrupt, or this launcher's own refusal: no job is left behind
            if isinstance(exc, (KeyboardInterrupt, SystemExit)) or getattr(exc, "slurm_cancel", False):
                cancelled = self._cancel_submitted()
                if cancelled:  # `python -m pipeline` names them in its one line
                    exc.cancelled_slurm_jobs = cancelled  # type: ignore[attr-defined]
            raise
        finally:
            if previous_sigterm is not None:
                signal.signal(signal.SIGTERM, previous_sigterm)

    def _submit(self, executor: Any, job_params: List[tuple]) -> list:
        """Submit the jobs as one array (sbatch); a refusal becomes one sentence naming the setting."""
        import submitit

        said = io.StringIO()
        try:
            with contextlib.redirect_stderr(said):  # submitit prints sbatch's stderr, then raises
                jobs = executor.map_array(self, *zip(*job_params))
        except submitit.core.utils.FailedJobError as exc:
            raise slurm.refusal(self.params, str(exc) or said.getvalue()) from None
        except BaseException:
            sys.stderr.write(said.getvalue())  # not sbatch's refusal: let what was said be seen
            raise
        self._submitted = list(jobs)
        return self._submitted

    def _wait_while_pending(self, jobs: list) -> None:
        """Until every job has left the queue's pending state, check every pending_check_s why they pend
        (check_pending); submitit's own wait for the results takes over then."""
        if self.pending_check_s <= 0:
            return
        state: dict = {}
        next_check = time.monotonic() + _FIRST_CHECK_S
        try:
            while True:
                if time.monotonic() >= next_check:
                    if not slurm.pending_reasons(self._job_ids()):
                        return  # every job runs or ran
                    self.check_pending(state)
                    next_check = time.monotonic() + self.pending_check_s
                if all(job.done() for job in jobs):
                    return
                time.sleep(min(0.5, self.pending_check_s))
        except Exception as exc:  # the sweep stops waiting for its jobs: none may be left pending
            raise slurm.cancelling(exc)

    def check_pending(self, state: dict) -> None:
        """Raise one sentence when SLURM will never start the sweep's pending jobs (pipeline.slurm_launcher)."""
        slurm.check_pending(self.params, self._job_ids(), state, self.unavailable_timeout_s)

    def _job_ids(self) -> list[str]:
        return sorted({str(job.job_id).split("_")[0] for job in self._submitted}, key=lambda j: (len(j), j))

    def _cancel_submitted(self) -> list[str]:
        """scancel this sweep's SLURM jobs; the job (array) ids it cancelled."""
        ids = self._job_ids()
        if not ids:
            return []
        # A second Ctrl-C must not stop the cancel half way.
        handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            return ids if slurm.cancel(ids) else []
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)


def _raise_interrupt(signum, frame) -> None:  # noqa: ARG001
    raise KeyboardInterrupt()
