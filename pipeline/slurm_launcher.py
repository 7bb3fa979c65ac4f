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

conf/hydra/launcher/slurm*.yaml select it through the structured config `advbounds_slurm` (hydra-submitit's
`submitit_slurm` plus the two settings); every submitit_slurm option still works. This module is what the launcher
knows about SLURM (squeue's reasons, sinfo's nodes, sbatch's refusals, scancel), without Hydra: the plugin class that
Hydra finds and runs, hydra_plugins.advbounds.launcher.SlurmLauncher (pipeline/hydra_plugins/advbounds/launcher.py),
calls it.
"""
from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Sequence

#: Settings the launcher reads itself (they are not passed on to submitit/sbatch).
OWN_KEYS = ("pending_check_s", "unavailable_timeout_min")
_COMMAND_TIMEOUT_S = 20


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


def cluster_nodes() -> list[Node]:
    """The nodes of the cluster (sinfo), none when sinfo cannot run."""
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


def unavailable(choice: str) -> Exception | None:
    """One sentence when this machine cannot submit to SLURM (submitit's own test: `srun` on PATH), else None.

    choice: the hydra/launcher option the sweep chose (slurm, slurm_gpu, slurm_local)."""
    import submitit

    if submitit.SlurmExecutor.affinity() > 0:
        return None
    return _config_error(
        f"hydra/launcher={choice} submits the sweep's jobs to SLURM, but this machine has no SLURM (no srun on PATH); "
        f"run the sweep where SLURM is (a cluster's login node, or the local test cluster that .ci/slurm_up.sh "
        f"starts), or pick hydra/launcher=submitit_local (local subprocesses) or hydra/launcher=basic (in this "
        f"process).")


# ---------------------------------------------------------------------------------------------------------
# One sentence for what SLURM said
# ---------------------------------------------------------------------------------------------------------
def refusal(params: dict, sbatch_error: str) -> Exception:
    """One sentence for a submission sbatch refused (params: the launcher's settings)."""
    said = [line.strip() for line in sbatch_error.splitlines() if line.strip()]
    said = [re.sub(r"^sbatch: error: (Batch job submission failed: )?", "", line) for line in said]
    said = [line for line in said if line and not line.startswith(("Traceback", "File "))]
    misfit = request_misfit(params, cluster_nodes())
    what = "; ".join(dict.fromkeys(said[:2])) or "no reason given"
    if misfit:
        return _config_error(f"{misfit[:-1]} (sbatch refused the sweep's jobs: {what}).")
    return _config_error(f"sbatch refused the sweep's jobs: {what}; check the hydra.launcher settings "
                         f"(partition, cpus_per_task, mem_gb, gpus_per_node, constraint, account, qos).")


def check_pending(params: dict, job_ids: Sequence[str], state: dict, unavailable_timeout_s: float | None) -> None:
    """Raise one sentence (marked `cancelling`) when SLURM will never start the given pending jobs (see
    classify_pending_reason), or has held them on unavailable nodes for unavailable_timeout_s (None: forever).

    state carries what earlier checks of the same sweep saw (when the jobs became unavailable, what was reported)."""
    if not job_ids:
        return
    pending = pending_reasons(job_ids)
    now = time.monotonic()
    unavailable = None
    for job, reason in pending:
        kind, setting = classify_pending_reason(reason)
        if kind == "never":
            raise _never(params, job, reason, setting)
        if kind == "unavailable":
            unavailable = (job, reason)
        elif reason.split(",")[0] == "Resources" and not state.get("fit_checked"):
            state["fit_checked"] = True  # the nodes do not change size: look once
            misfit = request_misfit(params, cluster_nodes())
            if misfit:
                raise cancelling(_config_error(
                    f"{misfit[:-1]} (SLURM kept job {_array(job)} pending: Resources; the sweep cancelled it)."))
    if unavailable is None:
        state.pop("unavailable_since", None)
        return
    job, reason = unavailable
    since = state.setdefault("unavailable_since", now)
    if state.get("reported") != reason:
        state["reported"] = reason
        wait = ("forever (hydra.launcher.unavailable_timeout_min=null)" if unavailable_timeout_s is None
                else f"up to {unavailable_timeout_s / 60:g} min (hydra.launcher.unavailable_timeout_min)")
        print(f"SLURM cannot start job {_array(job)} now (pending reason: {reason}); the sweep waits {wait}.",
              file=sys.stderr, flush=True)
    if unavailable_timeout_s is not None and now - since >= unavailable_timeout_s:
        raise cancelling(_config_error(
            f"SLURM could not start job {_array(job)} for {unavailable_timeout_s / 60:g} min (pending "
            f"reason: {reason}), so the sweep cancelled its jobs; pick another hydra.launcher.partition, ask the "
            f"cluster's administrators, or raise hydra.launcher.unavailable_timeout_min."))


def _never(params: dict, job: str, reason: str, setting: str | None) -> Exception:
    misfit = request_misfit(params, cluster_nodes())
    if misfit:
        return cancelling(_config_error(f"{misfit[:-1]} (SLURM kept job {_array(job)} pending: {reason}; the "
                                        f"sweep cancelled it)."))
    name = reason.split(",")[0].strip()
    if setting is not None:
        value = params.get(setting)
        return cancelling(_config_error(
            f"SLURM will never start job {_array(job)} as submitted (pending reason: {name}), so the sweep "
            f"cancelled it; change hydra.launcher.{setting} (now {value})."))
    where = params.get("partition") or "the default partition"
    return cancelling(_config_error(
        f"SLURM will never start job {_array(job)} as submitted (pending reason: {name}: the request exceeds "
        f"what {where} allows), so the sweep cancelled it; compare hydra.launcher.cpus_per_task, mem_gb, "
        f"nodes and timeout_min with `scontrol show partition`."))


def _array(job: str) -> str:
    """The job (array) id of a squeue %i: '12_[0-3%4]' -> '12', '12_3' -> '12_3'."""
    return re.sub(r"_\[.*\]$", "", job)


def cancelling(exc: Exception) -> Exception:
    """Mark an error after which the sweep cancels the jobs it submitted (the launcher reads `slurm_cancel`)."""
    exc.slurm_cancel = True  # type: ignore[attr-defined]
    return exc
