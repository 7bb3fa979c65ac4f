"""SLURM sweeps that can never start fail in one sentence; interrupted sweeps cancel their jobs (issue 14, item 12).

The reason classification and the node-size check run without SLURM; the rest runs on the local cluster
(.ci/slurm_up.sh) and is skipped with the reason when none is reachable.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from clitools import SMALL, cli_env, run_cli
from test_launchers import _slurm_unreachable

from hydra_plugins.advbounds.launcher import SlurmLauncher
from pipeline.slurm_launcher import Node, classify_pending_reason, parse_sinfo_nodes, request_misfit

SWEEP = ("-m", "mechanism.epsilon=1,4", *SMALL, "hydra/launcher=slurm_local")


@pytest.fixture
def slurm_cluster():
    reason = _slurm_unreachable()
    if reason is not None:
        pytest.skip(reason)


@pytest.mark.parametrize("reason, kind, setting", [
    ("PartitionConfig", "never", None),
    ("PartitionNodeLimit", "never", "nodes"),
    ("PartitionTimeLimit", "never", "timeout_min"),
    ("BadConstraints", "never", "constraint"),
    ("InvalidQOS", "never", "qos"),
    ("InvalidAccount", "never", "account"),
    ("QOSMaxCpuPerJobLimit", "never", "cpus_per_task"),
    ("QOSMaxMemoryPerJob", "never", "mem_gb"),
    ("QOSMaxGRESPerJob", "never", "gpus_per_node"),
    ("QOSMaxWallDurationPerJobLimit", "never", "timeout_min"),
    ("AssocMaxNodesPerJobLimit", "never", "nodes"),
    ("DependencyNeverSatisfied", "never", None),
    ("ReqNodeNotAvail, UnavailableNodes:node[01-04]", "unavailable", None),
    ("ReqNodeNotAvail, Reserved for maintenance", "unavailable", None),
    ("PartitionDown", "unavailable", None),
    ("JobHeldAdmin", "unavailable", None),
    ("Resources", "waiting", None),
    ("Priority", "waiting", None),
    ("None", "waiting", None),
    ("BeginTime", "waiting", None),
    ("JobArrayTaskLimit", "waiting", None),
    ("QOSMaxJobsPerUserLimit", "waiting", None),
    ("AssocGrpCpuLimit", "waiting", None),
])
def test_pending_reasons_are_classified(reason, kind, setting):
    assert classify_pending_reason(reason) == (kind, setting)


NODES = parse_sinfo_nodes("cpu1|debug*|4|16000|(null)|(null)\n"
                          "cpu2|debug*|4|16000|avx512|(null)\n"
                          "gpu1|gpu|16|64000|a100,ib|gpu:a100:2(S:0-1)\n")


def test_sinfo_lines_are_parsed():
    assert NODES[0] == Node("cpu1", "debug", True, 4, 16000, frozenset(), 0)
    assert NODES[2].gpus == 2 and NODES[2].features == {"a100", "ib"} and not NODES[2].default


@pytest.mark.parametrize("params, says", [
    ({"cpus_per_task": 4, "mem_gb": 8}, None),
    ({"partition": "gpu", "cpus_per_task": 16, "gpus_per_node": 2, "constraint": "a100"}, None),
    ({"cpus_per_task": 64}, "hydra.launcher.cpus_per_task=64 exceeds every node of the default partition debug "
                            "(at most 4 CPUs); lower it."),
    ({"cpus_per_task": 2, "tasks_per_node": 4}, "hydra.launcher.cpus_per_task=2 x tasks_per_node=4 (8 CPUs) exceeds"),
    ({"mem_gb": 100}, "hydra.launcher.mem_gb=100 exceeds every node"),
    ({"mem_per_cpu": "8G", "cpus_per_task": 4}, "hydra.launcher.mem_per_cpu=8G exceeds every node"),
    ({"gpus_per_node": 1}, "hydra.launcher.gpus_per_node=1 exceeds every node of the default partition debug "
                           "(no node has a GPU)"),
    ({"partition": "gpu", "gpus_per_node": 4}, "(at most 2 GPUs a node)"),
    ({"nodes": 3}, "hydra.launcher.nodes=3 exceeds the 2 nodes of the default partition debug; lower it."),
    ({"partition": "nope"}, "hydra.launcher.partition=nope is not a partition of this cluster (it has: debug, gpu)"),
    ({"constraint": "a100"}, "hydra.launcher.constraint=a100 matches no node of the default partition debug "
                             "(features: avx512)"),
    ({"constraint": "avx512"}, None),
])
def test_a_request_no_node_can_hold_names_the_setting(params, says):
    misfit = request_misfit(params, NODES)
    if says is None:
        assert misfit is None
    else:
        assert misfit is not None and (misfit.startswith(says) or says in misfit), misfit
        assert misfit.count(". ") == 0 and misfit.endswith(".")


def test_the_launcher_keeps_its_own_settings_from_sbatch(compose_config):
    launcher_cfg = compose_config("hydra/launcher=slurm", return_hydra_config=True).hydra.launcher
    assert launcher_cfg.pending_check_s > 0 and launcher_cfg.unavailable_timeout_min > 0
    params = {k: v for k, v in launcher_cfg.items() if k != "_target_"}
    launcher = SlurmLauncher(**params)
    assert "pending_check_s" not in launcher.params and "unavailable_timeout_min" not in launcher.params
    assert launcher.pending_check_s == launcher_cfg.pending_check_s
    assert launcher.unavailable_timeout_s == 60 * launcher_cfg.unavailable_timeout_min


def _queued(job_ids: list[str]) -> list[str]:
    """squeue lines (id state reason) of the given jobs that are still in the queue."""
    out = subprocess.run(["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i %T %r"], capture_output=True,
                         text=True, timeout=20).stdout
    return [line for line in out.splitlines() if line.strip()]


def _submitted(sweep_dir) -> list[str]:
    """The SLURM job (array) ids a sweep submitted, from its .submitit/<id>_<task> folders."""
    folders = (sweep_dir / ".submitit").glob("*") if (sweep_dir / ".submitit").is_dir() else []
    return sorted({p.name.split("_")[0] for p in folders if p.name.split("_")[0].isdigit()})


def _gone(job_ids: list[str], within: float = 20) -> list[str]:
    deadline = time.monotonic() + within
    while (left := _queued(job_ids)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


@pytest.mark.slow
@pytest.mark.slurm
def test_more_cpus_than_any_node_fails_at_once_and_leaves_no_job(tmp_path, slurm_cluster):
    sweep_dir = tmp_path / "sweep"
    start = time.monotonic()
    result = run_cli(*SWEEP, "hydra.launcher.cpus_per_task=4096", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path,
                     timeout=120)
    took = time.monotonic() - start
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(errors) == 1 and errors[0].startswith("error: hydra.launcher.cpus_per_task=4096 exceeds every node"), \
        result.stderr
    assert "lower it" in errors[0] and "Traceback" not in result.stdout + result.stderr
    assert took < 30, f"took {took:.0f} s"
    ids = _submitted(sweep_dir)  # none where sbatch refuses the request outright (EnforcePartLimits)
    assert not (ids and _gone(ids)), "the sweep left its jobs in the queue"


@pytest.mark.slow
@pytest.mark.slurm
def test_more_memory_than_any_node_is_refused_in_one_sentence(tmp_path, slurm_cluster):
    result = run_cli(*SWEEP, "hydra.launcher.mem_gb=100000", f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path,
                     timeout=120)
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(errors) == 1, result.stderr
    assert errors[0].startswith("error: hydra.launcher.mem_gb=100000 exceeds every node"), errors


@pytest.mark.slow
@pytest.mark.slurm
@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_sweep_cancels_its_jobs(tmp_path, slurm_cluster, signum, status):
    sweep_dir = tmp_path / "sweep"
    # --begin=now+600: the jobs pend (reason BeginTime, which is no reason to give up) until the signal.
    command = [sys.executable, "-m", "pipeline", *SWEEP, "+hydra.launcher.additional_parameters.begin=now+600",
               f"hydra.sweep.dir={sweep_dir}"]
    # A run started in the background (`nohup ... &`, some CI runners) inherits SIGINT ignored, and Python then never
    # raises KeyboardInterrupt: give the sweep the default disposition, as a terminal's Ctrl-C finds it.
    process = subprocess.Popen(command, cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 90
        while not (ids := _submitted(sweep_dir)) or not _queued(ids):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the sweep submitted no job within 90 s"
            time.sleep(0.5)
        time.sleep(3)  # the sweep is now waiting on its pending jobs
        assert process.poll() is None, process.communicate()
        assert all("PENDING" in line for line in _queued(ids))
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == status, out + err
    assert "Traceback" not in err and f"its SLURM job {ids[0]} cancelled" in err, err
    left = _gone(ids)
    if left:
        subprocess.run(["scancel", *ids], capture_output=True)
    assert not left, f"the interrupted sweep left {left} in the queue"


def _launcher(monkeypatch, queue, nodes=(), **settings):
    """A launcher whose squeue says `queue` ((job, reason) pairs) and whose cluster has `nodes`."""
    import pipeline.slurm_launcher as slurm_launcher

    monkeypatch.setattr(slurm_launcher, "pending_reasons", lambda ids: list(queue))
    monkeypatch.setattr(slurm_launcher, "cluster_nodes", lambda: list(nodes))
    launcher = SlurmLauncher(**{"partition": "debug", "cpus_per_task": 1, "timeout_min": 99999, **settings})
    launcher._submitted = [type("Job", (), {"job_id": "7_0"})(), type("Job", (), {"job_id": "7_1"})()]
    return launcher


def test_a_never_reason_fails_naming_the_setting(monkeypatch):
    from pipeline.game import ConfigError

    launcher = _launcher(monkeypatch, [("7_[0-1%2]", "PartitionTimeLimit")], pending_check_s=1)
    with pytest.raises(ConfigError, match=r"^SLURM will never start job 7 as submitted \(pending reason: "
                                          r"PartitionTimeLimit\), so the sweep cancelled it; change "
                                          r"hydra.launcher.timeout_min \(now 99999\)\.$") as raised:
        launcher.check_pending({})
    assert raised.value.slurm_cancel
    # PartitionConfig with the node sizes at hand: the setting that exceeds them.
    launcher = _launcher(monkeypatch, [("7_[0-1%2]", "PartitionConfig")], NODES[:2], cpus_per_task=8)
    with pytest.raises(ConfigError, match=r"^hydra.launcher.cpus_per_task=8 exceeds every node of partition debug "
                                          r"\(at most 4 CPUs\); lower it \(SLURM kept job 7 pending"):
        launcher.check_pending({})


def test_waiting_reasons_wait_and_unavailable_nodes_time_out(monkeypatch, capsys):
    from pipeline.game import ConfigError

    for reason in ("Priority", "Resources", "BeginTime", "JobArrayTaskLimit"):
        _launcher(monkeypatch, [("7_[0-1%2]", reason)], NODES[:2]).check_pending({})
    held = [("7_[0-1%2]", "ReqNodeNotAvail, UnavailableNodes:cpu[1-2]")]
    state: dict = {}
    launcher = _launcher(monkeypatch, held, NODES[:2], unavailable_timeout_min=None)
    launcher.check_pending(state)
    launcher.check_pending(state)
    said = capsys.readouterr().err.splitlines()
    assert said == ["SLURM cannot start job 7 now (pending reason: ReqNodeNotAvail, UnavailableNodes:cpu[1-2]); "
                    "the sweep waits forever (hydra.launcher.unavailable_timeout_min=null)."]
    launcher = _launcher(monkeypatch, held, NODES[:2], unavailable_timeout_min=0)
    with pytest.raises(ConfigError, match=r"^SLURM could not start job 7 for 0 min \(pending reason: ReqNodeNotAvail"):
        launcher.check_pending({})
    # Resources for a request larger than every node: never.
    launcher = _launcher(monkeypatch, [("7_[0-1%2]", "Resources")], NODES[:2], mem_gb=64)
    with pytest.raises(ConfigError, match=r"^hydra.launcher.mem_gb=64 exceeds every node of partition debug"):
        launcher.check_pending({})
