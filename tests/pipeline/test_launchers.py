"""`-m` sweeps on each launcher (in process, submitit_local, SLURM) and the sweep report."""
from __future__ import annotations

import csv
import json
import shutil

import pytest
from conftest import SMALL, run_cli

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


def test_report_of_a_folder_without_jobs_says_so(tmp_path):
    result = run_cli(str(tmp_path), module="pipeline.report", cwd=tmp_path)
    assert result.returncode == 2 and "no metrics.json" in result.stderr


def test_submitit_local_sweep(tmp_path):
    sweep_dir = tmp_path / "sweep"
    result = run_cli(*SWEEP, "hydra/launcher=submitit_local", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path)
    _check_sweep(sweep_dir, result)
    assert (sweep_dir / ".submitit").is_dir()


@pytest.mark.slurm
@pytest.mark.skipif(shutil.which("sinfo") is None,
                    reason="no SLURM client (sinfo) on PATH; `sudo bash .ci/slurm_up.sh` starts a local cluster")
def test_slurm_sweep_on_the_local_cluster(tmp_path):
    sweep_dir = tmp_path / "sweep"
    result = run_cli(*SWEEP, "hydra/launcher=slurm_local", f"hydra.sweep.dir={sweep_dir}", cwd=tmp_path, timeout=400)
    _check_sweep(sweep_dir, result)
    submitted = list((sweep_dir / ".submitit").rglob("*_submission.sh"))
    assert submitted and "#SBATCH --partition=debug" in submitted[0].read_text()
