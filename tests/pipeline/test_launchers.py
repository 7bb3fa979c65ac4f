"""`-m` sweeps on each launcher (in process, submitit_local, SLURM) and the sweep report."""
from __future__ import annotations

import csv
import json
import shutil
import subprocess

import pytest
from clitools import SMALL, run_cli

SWEEP = ("-m", "mechanism.epsilon=1,4", *SMALL)


def _check_sweep(sweep_dir, result):
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = {}
    for number in ("0", "1"):
        metrics = json.loads((sweep_dir / number / "metrics.json").read_text())
        config = (sweep_dir / number / ".hydra" / "overrides.yaml").read_text()
        jobs[number] = (metrics, config)
    assert "mechanism.epsilon=1" in jobs["0"][1] and "mechanism.epsilon=4" in jobs["1"][1]
    eps = [jobs[n][0]["privacy"]["epsilon"] for n in ("0", "1")]
    assert eps[0] < eps[1] <= 4 + 1e-6
    for metrics, _ in jobs.values():
        assert metrics["n_targets"] == 20 and len(metrics["attack_successes"]) == 10
    # More privacy budget, a larger bound.
    assert jobs["0"][0]["bound"]["0.95"] <= jobs["1"][0]["bound"]["0.95"]


@pytest.mark.slow
def test_basic_sweep_and_its_report(tmp_path):
    sweep_dir = tmp_path / "sweep"
    _check_sweep(sweep_dir, run_cli(*SWEEP, f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path))
    report = run_cli(str(sweep_dir), module="pipeline.report", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    rows = list(csv.DictReader((sweep_dir / "report.csv").open()))
    assert [float(r["epsilon"]) for r in rows] == [1.0, 4.0]
    for column in ("attack_success_mean", "prior_success_mean", "bound_0.05", "bound_0.5", "bound_0.95"):
        assert all(r[column] != "" for r in rows), column
    assert (sweep_dir / "figures" / "report.png").stat().st_size > 0


@pytest.mark.slow
def test_report_of_a_folder_without_jobs_says_so(tmp_path):
    result = run_cli(str(tmp_path), module="pipeline.report", cwd=tmp_path)
    assert result.returncode == 2 and "no metrics.json" in result.stderr


@pytest.mark.slow
def test_submitit_local_sweep(tmp_path):
    sweep_dir = tmp_path / "sweep"
    result = run_cli(*SWEEP, "hydra/launcher=submitit_local", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    _check_sweep(sweep_dir, result)
    assert (sweep_dir / ".submitit").is_dir()


def _slurm_unreachable() -> str | None:
    """Why no SLURM job can run here (None when one can): no client, no controller, or no responding node.

    Having `sinfo` is not enough: with SLURM installed and its controller down, sbatch fails with
    "Unable to contact slurm controller", which is a missing cluster, not a failing test.
    """
    start = "`sudo bash .ci/slurm_up.sh` starts a local cluster"
    missing = [tool for tool in ("sbatch", "scontrol", "sinfo") if shutil.which(tool) is None]
    if missing:
        return f"no SLURM client ({', '.join(missing)} not on PATH); {start}"
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return f"SLURM is installed but `scontrol ping` did not answer within 20 s; {start}"
    if "UP" not in ping.stdout:
        said = [line.strip() for line in (ping.stdout + ping.stderr).splitlines() if line.strip().strip("*")]
        said = [line for line in said if "DOWN" in line] or said  # e.g. "Slurmctld(primary) at vm is DOWN"
        return f"SLURM is installed but its controller is not reachable ({said[0] if said else 'no answer'}); {start}"
    try:
        states = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=20).stdout.split()
    except subprocess.TimeoutExpired:
        return f"SLURM's controller is up but `sinfo` did not answer within 20 s; {start}"
    if not any(state.rstrip("*~#!%$@^-").startswith(("idle", "mix", "alloc", "comp")) and not state.endswith("*")
               for state in states):
        return f"SLURM's controller is up but no node is responding (sinfo states: {' '.join(states) or 'none'}); {start}"
    return None


@pytest.fixture
def slurm_cluster():
    reason = _slurm_unreachable()
    if reason is not None:
        pytest.skip(reason)


def test_slurm_profile_asks_for_no_gpu_and_modest_memory(compose_config):
    """A sweep on a CPU partition must not fail on a gres request: the GPU is asked for explicitly."""
    launcher = compose_config("hydra/launcher=slurm", return_hydra_config=True).hydra.launcher
    assert launcher.gpus_per_node is None and launcher.gpus_per_task is None
    assert launcher.mem_gb <= 16 and launcher.cpus_per_task <= 4


@pytest.mark.slow
@pytest.mark.slurm
def test_slurm_sweep_on_the_local_cluster(tmp_path, slurm_cluster):
    sweep_dir = tmp_path / "sweep"
    result = run_cli(*SWEEP, "hydra/launcher=slurm_local", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path, timeout=400)
    _check_sweep(sweep_dir, result)
    submitted = list((sweep_dir / ".submitit").rglob("*_submission.sh"))
    assert submitted and "#SBATCH --partition=debug" in submitted[0].read_text()


@pytest.mark.slow
@pytest.mark.slurm
def test_the_slurm_profile_runs_on_a_cpu_partition(tmp_path, slurm_cluster):
    """conf/hydra/launcher/slurm.yaml as the README uses it, on the GPU-less local node: no gres error."""
    sweep_dir = tmp_path / "sweep"
    result = run_cli(*SWEEP, "hydra/launcher=slurm", "hydra.launcher.partition=debug", "hydra.launcher.cpus_per_task=1",
                     "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10", f"hydra.sweep.dir={sweep_dir}",
                     cwd=tmp_path, timeout=400)
    _check_sweep(sweep_dir, result)
    script = next((sweep_dir / ".submitit").rglob("*_submission.sh")).read_text()
    assert "--gpus" not in script and "--gres" not in script
