"""hydra-submitit's SLURM launcher, plus two things a sweep needs on a real cluster (issue 14, item 12).

- A sweep whose jobs SLURM can never start does not pend forever in silence: while its jobs pend, the
  launcher asks `squeue` why (every `pending_check_s` seconds) and, when the reason means "never"
  (PartitionConfig, PartitionNodeLimit, BadConstraints, a per-job QOS limit, or Resources for a request
  larger than every node), cancels the jobs and fails in one sentence naming the setting to change, e.g.
  `hydra.launcher.cpus_per_task=64 exceeds every node of partition debug (at most 4 CPUs); lower it.`
  A request sbatch refuses outright (too much memory, an unknown partition) fails the same way. Jobs held
  by nodes that are down, drained or reserved (ReqNodeNotAvail, PartitionDown, ...) are reported at once
  and the sweep gives up after `unavailable_timeout_min` minutes.
- A sweep that is interrupted (Ctrl-C, SIGTERM) cancels the SLURM jobs it submitted (scancel).

conf/hydra/launcher/slurm*.yaml select it through the structured config `advbounds_slurm` registered
below (hydra-submitit's `submitit_slurm` plus the two settings); every submitit_slurm option still works.
"""
from __future__ import annotations

import contextlib
import io
import math
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra_plugins.hydra_submitit_launcher.config import SlurmQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher as _SubmititSlurmLauncher

# Settings this launcher reads itself (they are not passed on to submitit/sbatch).
_OWN_KEYS = ("pending_check_s", "unavailable_timeout_min")
_FIRST_CHECK_S = 1.0  # SLURM sets most "never" reasons at submission; look once right away
_COMMAND_TIMEOUT_S = 20


# Hydra instantiates a launcher only from a class registered under the `hydra_plugins.` prefix; the class
# lives here (so that submitit's jobs unpickle it from pipeline/) and is registered under this name
# (register_with_hydra, at import).
HYDRA_NAME = "hydra_plugins.advbounds_slurm.SlurmLauncher"


@dataclass
class AdvboundsSlurmQueueConf(SlurmQueueConf):
    """submitit_slurm plus the pending-job checks of pipeline.slurm_launcher.SlurmLauncher."""

    _target_: str = HYDRA_NAME
    # While jobs pend, ask squeue why every this many seconds; 0 turns the check off (the sweep then waits silently).
    pending_check_s: float = 10.0
    # Jobs waiting for nodes that are down, drained or reserved (ReqNodeNotAvail, PartitionDown, ...): give up
    # and cancel them after this many minutes; null waits forever.
    unavailable_timeout_min: Optional[float] = 10.0




# ---------------------------------------------------------------------------------------------------------
# Pending reasons
# ---------------------------------------------------------------------------------------------------------
# Reasons (squeue %r) after which SLURM will never start the job as submitted, with the setting to change.
_NEVER = {
    "PartitionConfig": None,  # the request exceeds the partition's nodes or limits: the node check names the setting
    "PartitionNodeLimit": "nodes",
    "PartitionTimeLimit": "timeout_min",
    "BadConstraints": "constraint",
    "InvalidAccount": "account",
    "InvalidQOS": "qos",
    "AccountNotAllowed": "account",
    "QOSNotAllowed": "qos",
    "PartitionAccountLimit": "account",
    "DependencyNeverSatisfied": None,
}
# Reasons that hold the job until an administrator (or time) changes the cluster: reported, then a timeout.
_UNAVAILABLE = ("ReqNodeNotAvail", "PartitionDown", "PartitionInactive", "NodeDown", "FrontEndDown",
                "JobHeldAdmin", "JobHeldUser", "SystemFailure", "launch failed requeued held")
# A per-job (or per-node) QOS/association limit, e.g. QOSMaxCpuPerJobLimit: the job itself exceeds it.
_PER_JOB_LIMIT = re.compile(r"^(QOS|Assoc)(Max\w*Per(Job|Node)\w*|Min\w+)$")
_LIMIT_SETTINGS = (("WallDuration", "timeout_min"), ("Cpu", "cpus_per_task"), ("Mem", "mem_gb"),
                   ("GRES", "gpus_per_node"), ("Gres", "gpus_per_node"), ("Node", "nodes"))


def classify_pending_reason(reason: str) -> tuple[str, str | None]:
    """(kind, setting) for a pending reason as squeue prints it (%r).

    kind is "never" (SLURM will not start the job as submitted), "unavailable" (it waits on nodes or a
    partition that are down, drained, reserved or held: an administrator can change that) or "waiting"
    (Priority, Resources, BeginTime, Dependency, JobArrayTaskLimit, per-user limits...: it starts later).
    setting is the hydra.launcher key to change for a "never" reason when the reason names one, else None.
    """
    name = reason.strip().split(",")[0].strip()  # "ReqNodeNotAvail, UnavailableNodes:n[1-2]" -> ReqNodeNotAvail
    if name in _NEVER:
        return "never", _NEVER[name]
    if _PER_JOB_LIMIT.match(name):
        return "never", next((setting for key, setting in _LIMIT_SETTINGS if key in name), None)
    if any(name == held or name.startswith(held) for held in _UNAVAILABLE):
        return "unavailable", None
    return "waiting", None


# ---------------------------------------------------------------------------------------------------------
# Does the request fit a node?
# ---------------------------------------------------------------------------------------------------------
@dataclass
class Node:
    name: str
    partition: str
    default: bool  # the partition is the cluster's default
    cpus: int
    mem_mb: int
    features: frozenset
    gpus: int


def _number(text: str) -> int:
    digits = re.match(r"\d+", text.strip())
    return int(digits.group()) if digits else 0


def _gpus(gres: str) -> int:
    """GPUs in a node's gres string (sinfo %G), e.g. 'gpu:a100:4(S:0-1),shard:8' -> 4."""
    total = 0
    for item in re.split(r",(?![^(]*\))", gres):
        item = re.sub(r"\(.*?\)", "", item.strip())
        if item.startswith("gpu"):
            parts = item.split(":")
            total += int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    return total


def parse_sinfo_nodes(text: str) -> list[Node]:
    """Nodes from `sinfo -h -N -o '%N|%P|%c|%m|%f|%G'` (one line per node and partition)."""
    nodes = []
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) < 6:
            continue
        name, partition, cpus, mem, features, gres = fields[:6]
        feats = frozenset() if features in ("", "(null)") else frozenset(f for f in features.split(",") if f)
        nodes.append(Node(name, partition.rstrip("*"), partition.endswith("*"), _number(cpus), _number(mem), feats,
                          0 if gres in ("", "(null)") else _gpus(gres)))
    return nodes


def _mem_mb(text: Any) -> int | None:
    """MB of an sbatch memory string ('4G', '500M', '2048' = MB)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*", str(text), re.IGNORECASE)
    if not match:
        return None
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 ** 2}[match.group(2).upper()]
    return math.ceil(float(match.group(1)) * scale)


def _constraint_features(constraint: str) -> tuple[list[str], bool] | None:
    """(features, all_needed) of a simple constraint ('a', 'a&b', 'a|b'); None for anything richer."""
    if re.search(r"[\[\]*()!]", constraint):
        return None
    if "|" in constraint and "&" not in constraint:
        return [f.strip() for f in constraint.split("|") if f.strip()], False
    return [f.strip() for f in constraint.replace(",", "&").split("&") if f.strip()], True


def request_misfit(params: dict, nodes: Sequence[Node]) -> str | None:
    """One sentence naming the launcher setting that no node of the job's partition can satisfy, else None.

    params are the launcher's settings (cpus_per_task, tasks_per_node, nodes, mem_gb, mem_per_cpu,
    gpus_per_node, gpus_per_task, constraint, partition); nodes the cluster's (parse_sinfo_nodes).
    """
    if not nodes:
        return None
    partition = params.get("partition")
    partitions = sorted({n.partition for n in nodes})
    if partition:
        wanted = {p.strip() for p in str(partition).split(",") if p.strip()}
        members = [n for n in nodes if n.partition in wanted]
        where = f"partition {partition}"
        if not members:
            return (f"hydra.launcher.partition={partition} is not a partition of this cluster "
                    f"(it has: {', '.join(partitions)}); set one of them.")
    else:
        members = [n for n in nodes if n.default]
        where = f"the default partition {members[0].partition}" if members else ""
        if not members:
            return (f"this cluster has no default partition; set hydra.launcher.partition to one of: "
                    f"{', '.join(partitions)}.")
    tasks = int(params.get("tasks_per_node") or 1)
    cpus_per_task = int(params.get("cpus_per_task") or 1)
    need_cpus = cpus_per_task * tasks
    need_mem = None
    if params.get("mem_gb"):
        need_mem = math.ceil(float(params["mem_gb"]) * 1024)
    elif params.get("mem_per_cpu") and _mem_mb(params["mem_per_cpu"]) is not None:
        need_mem = _mem_mb(params["mem_per_cpu"]) * need_cpus
    need_gpus = int(params.get("gpus_per_node") or 0) or int(params.get("gpus_per_task") or 0) * tasks
    if not need_gpus and params.get("gres"):
        need_gpus = _gpus(str(params["gres"]))
    constraint = _constraint_features(str(params["constraint"])) if params.get("constraint") else None
    n_nodes = len({n.name for n in members})

    if int(params.get("nodes") or 1) > n_nodes:
        return (f"hydra.launcher.nodes={params['nodes']} exceeds the {n_nodes} node{'s' * (n_nodes != 1)} of "
                f"{where}; lower it.")
    most_cpus = max(n.cpus for n in members)
    if need_cpus > most_cpus:
        asked = (f"hydra.launcher.cpus_per_task={cpus_per_task}" if tasks == 1 else
                 f"hydra.launcher.cpus_per_task={cpus_per_task} x tasks_per_node={tasks} ({need_cpus} CPUs)")
        return f"{asked} exceeds every node of {where} (at most {most_cpus} CPUs); lower it."
    most_mem = max(n.mem_mb for n in members)
    if need_mem is not None and most_mem > 1 and need_mem > most_mem:  # sinfo says 1 MB when memory is not configured
        key = (f"hydra.launcher.mem_gb={params['mem_gb']}" if params.get("mem_gb") else
               f"hydra.launcher.mem_per_cpu={params['mem_per_cpu']}")
        return f"{key} exceeds every node of {where} (at most {most_mem / 1024:.1f} GB); lower it."
    most_gpus = max(n.gpus for n in members)
    if need_gpus > most_gpus:
        key = ("gpus_per_node" if params.get("gpus_per_node") else "gpus_per_task" if params.get("gpus_per_task")
               else "gres")
        value = params.get(key)
        has = "no node has a GPU" if most_gpus == 0 else f"at most {most_gpus} GPUs a node"
        return (f"hydra.launcher.{key}={value} exceeds every node of {where} ({has}); lower it, or pick a "
                f"GPU partition with hydra.launcher.partition.")
    if constraint is not None:
        features, all_needed = constraint
        test = all if all_needed else any
        if not any(test(f in n.features for f in features) for n in members):
            have = sorted(set().union(*(n.features for n in members)))
            return (f"hydra.launcher.constraint={params['constraint']} matches no node of {where} (features: "
                    f"{', '.join(have) or 'none'}); change or drop it.")
    if not any(n.cpus >= need_cpus and (need_mem is None or n.mem_mb <= 1 or n.mem_mb >= need_mem)
               and n.gpus >= need_gpus for n in members):
        return (f"no node of {where} has {need_cpus} CPUs, {need_mem or 0} MB and {need_gpus} GPUs at once; lower "
                f"hydra.launcher.cpus_per_task, mem_gb or gpus_per_node.")
    return None


# ---------------------------------------------------------------------------------------------------------
# SLURM commands
# ---------------------------------------------------------------------------------------------------------
def _run(*command: str) -> str | None:
    """stdout of a SLURM command, or None when it fails or is missing (a check that cannot run is skipped)."""
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_COMMAND_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _cluster_nodes() -> list[Node]:
    return parse_sinfo_nodes(_run("sinfo", "-h", "-N", "-o", "%N|%P|%c|%m|%f|%G") or "")


def pending_reasons(job_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(job id, reason) of the given jobs (or arrays) that are still pending."""
    out = _run("squeue", "-h", "-t", "PENDING", "-j", ",".join(job_ids), "-o", "%i|%r")
    rows = []
    for line in (out or "").splitlines():
        job, _, reason = line.strip().partition("|")
        if job:
            rows.append((job, reason.strip()))
    return rows


def cancel(job_ids: Sequence[str]) -> bool:
    """scancel the given jobs (array ids cancel every task); whether scancel ran."""
    if not job_ids or shutil.which("scancel") is None:
        return False
    try:
        subprocess.run(["scancel", *job_ids], capture_output=True, text=True, timeout=_COMMAND_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


def _config_error(message: str) -> Exception:
    from pipeline.errors import ConfigError  # lazy: the game is heavy, and this module is imported by pipeline/

    return ConfigError(message)


# ---------------------------------------------------------------------------------------------------------
# The launcher
# ---------------------------------------------------------------------------------------------------------
class SlurmLauncher(_SubmititSlurmLauncher):
    """hydra-submitit's SlurmLauncher that fails on jobs SLURM can never start and cancels its jobs when
    the sweep is interrupted."""

    def __init__(self, **params: Any) -> None:
        own = {key: params.pop(key) for key in _OWN_KEYS if key in params}
        super().__init__(**params)
        self.pending_check_s = float(own.get("pending_check_s") or 0.0)
        timeout = own.get("unavailable_timeout_min")
        self.unavailable_timeout_s = None if timeout is None else float(timeout) * 60.0
        self._submitted: list[Any] = []

    # Submission: remember the jobs, and turn sbatch's refusal into one sentence.
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int):
        import submitit

        self._submitted = []
        original_map_array = submitit.AutoExecutor.map_array
        launcher = self

        def map_array(executor, *args, **kwargs):
            refusal = io.StringIO()
            try:
                with contextlib.redirect_stderr(refusal):  # submitit prints sbatch's stderr, then raises
                    jobs = original_map_array(executor, *args, **kwargs)
            except submitit.core.utils.FailedJobError as exc:
                raise launcher._refused(str(exc) or refusal.getvalue()) from None
            except BaseException:
                sys.stderr.write(refusal.getvalue())  # not sbatch's refusal: let what was said be seen
                raise
            launcher._submitted = list(jobs)
            return _Waiting(jobs, launcher)

        had_own = "map_array" in submitit.AutoExecutor.__dict__
        submitit.AutoExecutor.map_array = map_array
        previous_sigterm = None
        try:
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):  # outside `python -m pipeline`
                previous_sigterm = signal.signal(signal.SIGTERM, _raise_interrupt)
            return super().launch(job_overrides, initial_job_idx)
        except BaseException as exc:  # an interrupt, or this launcher's own refusal: no job is left behind
            if isinstance(exc, (KeyboardInterrupt, SystemExit)) or getattr(exc, "slurm_cancel", False):
                cancelled = self._cancel_submitted()
                if cancelled:  # `python -m pipeline` names them in its one line
                    exc.cancelled_slurm_jobs = cancelled  # type: ignore[attr-defined]
            raise
        finally:
            if had_own:
                submitit.AutoExecutor.map_array = original_map_array
            else:
                del submitit.AutoExecutor.map_array
            if previous_sigterm is not None:
                signal.signal(signal.SIGTERM, previous_sigterm)

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
            return ids if cancel(ids) else []
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)

    def _refused(self, sbatch_error: str) -> Exception:
        """One sentence for a submission sbatch refused."""
        said = [line.strip() for line in sbatch_error.splitlines() if line.strip()]
        said = [re.sub(r"^sbatch: error: (Batch job submission failed: )?", "", line) for line in said]
        said = [line for line in said if line and not line.startswith(("Traceback", "File "))]
        misfit = request_misfit(self.params, _cluster_nodes())
        what = "; ".join(dict.fromkeys(said[:2])) or "no reason given"
        if misfit:
            return _config_error(f"{misfit[:-1]} (sbatch refused the sweep's jobs: {what}).")
        return _config_error(f"sbatch refused the sweep's jobs: {what}; check the hydra.launcher settings "
                             f"(partition, cpus_per_task, mem_gb, gpus_per_node, constraint, account, qos).")

    # Waiting: what SLURM says about pending jobs.
    def check_pending(self, state: dict) -> None:
        """Raise one sentence when SLURM will never start the sweep's pending jobs (see classify_pending_reason)."""
        ids = self._job_ids()
        if not ids:
            return
        pending = pending_reasons(ids)
        now = time.monotonic()
        unavailable = None
        for job, reason in pending:
            kind, setting = classify_pending_reason(reason)
            if kind == "never":
                raise self._never(job, reason, setting)
            if kind == "unavailable":
                unavailable = (job, reason)
            elif reason.split(",")[0] == "Resources" and not state.get("fit_checked"):
                state["fit_checked"] = True  # the nodes do not change size: look once
                misfit = request_misfit(self.params, _cluster_nodes())
                if misfit:
                    raise _cancelling(_config_error(
                        f"{misfit[:-1]} (SLURM kept job {_array(job)} pending: Resources; the sweep cancelled it)."))
        if unavailable is None:
            state.pop("unavailable_since", None)
            return
        job, reason = unavailable
        since = state.setdefault("unavailable_since", now)
        if state.get("reported") != reason:
            state["reported"] = reason
            wait = ("forever (hydra.launcher.unavailable_timeout_min=null)" if self.unavailable_timeout_s is None
                    else f"up to {self.unavailable_timeout_s / 60:g} min (hydra.launcher.unavailable_timeout_min)")
            print(f"SLURM cannot start job {_array(job)} now (pending reason: {reason}); the sweep waits {wait}.",
                  file=sys.stderr, flush=True)
        if self.unavailable_timeout_s is not None and now - since >= self.unavailable_timeout_s:
            raise _cancelling(_config_error(
                f"SLURM could not start job {_array(job)} for {self.unavailable_timeout_s / 60:g} min (pending "
                f"reason: {reason}), so the sweep cancelled its jobs; pick another hydra.launcher.partition, ask the "
                f"cluster's administrators, or raise hydra.launcher.unavailable_timeout_min."))

    def _never(self, job: str, reason: str, setting: str | None) -> Exception:
        misfit = request_misfit(self.params, _cluster_nodes())
        if misfit:
            return _cancelling(_config_error(f"{misfit[:-1]} (SLURM kept job {_array(job)} pending: {reason}; the "
                                             f"sweep cancelled it)."))
        name = reason.split(",")[0].strip()
        if setting is not None:
            value = self.params.get(setting)
            return _cancelling(_config_error(
                f"SLURM will never start job {_array(job)} as submitted (pending reason: {name}), so the sweep "
                f"cancelled it; change hydra.launcher.{setting} (now {value})."))
        where = self.params.get("partition") or "the default partition"
        return _cancelling(_config_error(
            f"SLURM will never start job {_array(job)} as submitted (pending reason: {name}: the request exceeds "
            f"what {where} allows), so the sweep cancelled it; compare hydra.launcher.cpus_per_task, mem_gb, "
            f"nodes and timeout_min with `scontrol show partition`."))


def _array(job: str) -> str:
    """The job (array) id of a squeue %i: '12_[0-3%4]' -> '12', '12_3' -> '12_3'."""
    return re.sub(r"_\[.*\]$", "", job)


def _cancelling(exc: Exception) -> Exception:
    exc.slurm_cancel = True  # type: ignore[attr-defined]
    return exc


def _raise_interrupt(signum, frame) -> None:  # noqa: ARG001
    raise KeyboardInterrupt()


class _Waiting(list):
    """The submitted jobs, as hydra-submitit's launch iterates them (`[j.results()[0] for j in jobs]`):
    before the first result is asked for, wait until every job has left the queue's pending state, checking
    why they pend."""

    def __init__(self, jobs: Sequence[Any], launcher: SlurmLauncher) -> None:
        super().__init__(jobs)
        self._launcher = launcher

    def __iter__(self):
        self._wait()
        return super().__iter__()

    def _wait(self) -> None:
        launcher = self._launcher
        if launcher.pending_check_s <= 0:
            return
        state: dict = {}
        next_check = time.monotonic() + _FIRST_CHECK_S
        try:
            while True:
                if time.monotonic() >= next_check:
                    if not pending_reasons(launcher._job_ids()):
                        return  # every job runs or ran: submitit's own wait takes over
                    launcher.check_pending(state)
                    next_check = time.monotonic() + launcher.pending_check_s
                if all(job.done() for job in list.__iter__(self)):
                    return
                time.sleep(min(0.5, launcher.pending_check_s))
        except Exception as exc:  # the sweep stops waiting for its jobs: none may be left pending
            raise _cancelling(exc)


def register_with_hydra() -> None:
    """hydra/launcher=advbounds_slurm in Hydra's config store, and the launcher class under HYDRA_NAME."""
    from hydra.core.plugins import Plugins

    ConfigStore.instance().store(group="hydra/launcher", name="advbounds_slurm", node=AdvboundsSlurmQueueConf,
                                 provider="advbounds")
    plugins = Plugins.instance()
    if plugins.class_name_to_class.get(HYDRA_NAME) is not SlurmLauncher:
        plugins.register(SlurmLauncher)  # Hydra's public way: lists it among the launchers
        plugins.class_name_to_class[HYDRA_NAME] = SlurmLauncher


register_with_hydra()
