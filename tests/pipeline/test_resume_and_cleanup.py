"""Issue 39, items 3, 4, 6 and part of 9: a job folder is whole or absent, an interrupted sweep resumes to the end
while another job's folder is still refused, a sweep that fails before any job leaves no folder, a SLURM launcher
on a machine without SLURM is one sentence, and a misspelt key names the nearest real one (both steps of it)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clitools import SMALL, cli_env, run_cli
from omegaconf import OmegaConf

from pipeline.errors import ConfigError
from pipeline.job import check_output_dir, complete_job, folder_contents, run_game
from pipeline.sweeper import first_existing, remove_unstarted_sweep


def _lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def _record(folder: Path, cfg, overrides: list[str]) -> None:
    """What Hydra writes into a job folder before the job runs (.hydra/config.yaml and overrides.yaml)."""
    (folder / ".hydra").mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, folder / ".hydra" / "config.yaml")
    OmegaConf.save(OmegaConf.create(overrides), folder / ".hydra" / "overrides.yaml")


# ---------------------------------------------------------------------------------------------------------------
# Whole or absent, in process

def test_a_job_that_fails_while_writing_leaves_no_metrics_and_no_staging(compose_config, tmp_path):
    """The outputs move into place before metrics.json, the commit marker: a figure that cannot be put in place
    (a file named figures/ is in the way) leaves the folder without a metrics.json, and without the staging folder."""
    job = tmp_path / "job"
    job.mkdir()
    (job / "figures").write_text("in the way")
    with pytest.raises(OSError):
        run_game(compose_config("prior.n_targets=10", "trials=3"), job)
    assert sorted(p.name for p in job.iterdir()) == ["figures"]
    run_game(compose_config("prior.n_targets=10", "trials=3", "save_per_target=true"), tmp_path / "whole")
    assert sorted(str(p.relative_to(tmp_path / "whole")) for p in (tmp_path / "whole").rglob("*")) == [
        "figures", "figures/successes.png", "metrics.json", "per_target", "per_target/attack_prior_success.npy",
        "per_target/guesses.npy", "trials.csv"]


def test_the_same_job_is_done_and_another_job_is_refused_naming_what_the_folder_holds(compose_config, tmp_path):
    overrides = ["prior.n_targets=10", "trials=3"]
    cfg = compose_config(*overrides)
    job = tmp_path / "job"
    assert check_output_dir(job, cfg, overrides) is False  # nothing there yet
    _record(job, cfg, overrides)
    run_game(cfg, job)
    assert check_output_dir(job, cfg, overrides) is True
    other = ["prior.n_targets=10", "trials=4"]
    with pytest.raises(ConfigError) as refused:
        check_output_dir(job, compose_config(*other), other)
    message = str(refused.value)
    assert "already holds a metrics.json of another job" in message and str(job) in message
    assert "it holds .hydra/, figures/, metrics.json and trials.csv" in message, message
    assert "it ran prior.n_targets=10 trials=3, this job prior.n_targets=10 trials=4" in message, message
    # the same overrides on another composed config (a config file edited between the runs) are another job
    with pytest.raises(ConfigError, match="another composed config"):
        check_output_dir(job, compose_config(*overrides, "seed=3"), overrides)


def test_a_done_job_gets_the_figure_an_interrupted_run_left_undrawn(compose_config, tmp_path):
    cfg = compose_config("prior.n_targets=10", "trials=3")
    run_game(cfg, tmp_path / "job")
    figure = tmp_path / "job" / "figures" / "successes.png"
    figure.unlink()
    assert complete_job(cfg, tmp_path / "job") == [str(figure)]
    assert figure.stat().st_size > 0
    assert complete_job(cfg, tmp_path / "job") == []  # a whole folder: nothing to draw
    # a folder of a run from before trials.csv was written gets it, the same as a new run's
    table = tmp_path / "job" / "trials.csv"
    written = table.read_text()
    table.unlink()
    assert complete_job(cfg, tmp_path / "job") == [str(table)]
    assert table.read_text() == written


def test_folder_contents_lists_what_is_there(tmp_path):
    assert folder_contents(tmp_path / "missing") == "nothing"
    (tmp_path / ".hydra").mkdir()
    assert folder_contents(tmp_path) == ".hydra/"
    (tmp_path / "game.log").write_text("")
    (tmp_path / ".staging-x1").mkdir()  # a job still writing: not something the folder holds
    assert folder_contents(tmp_path) == ".hydra/ and game.log"


# ---------------------------------------------------------------------------------------------------------------
# A sweep that failed before any job: no folder

def test_an_unstarted_sweep_is_removed_with_the_folders_it_created(tmp_path):
    sweep = tmp_path / "outputs" / "multirun" / "day" / "time"
    existed = first_existing(sweep)
    assert existed == tmp_path
    sweep.mkdir(parents=True)
    (sweep / "jobs.yaml").write_text("- []\n")
    (sweep / "multirun.yaml").write_text("{}\n")
    assert remove_unstarted_sweep(sweep, existed)
    assert list(tmp_path.iterdir()) == []  # outputs/ was made by the sweep too


@pytest.mark.parametrize("left", ["0/.hydra/config.yaml", ".submitit/1/1_0_log.err", "report.csv"])
def test_a_sweep_with_anything_else_stays(tmp_path, left):
    sweep = tmp_path / "sweep"
    (sweep / left).parent.mkdir(parents=True, exist_ok=True)
    (sweep / left).write_text("x")
    (sweep / "jobs.yaml").write_text("- []\n")
    assert not remove_unstarted_sweep(sweep, tmp_path)
    assert (sweep / left).is_file() and (sweep / "jobs.yaml").is_file()


def test_a_folder_that_existed_before_the_sweep_stays(tmp_path):
    (tmp_path / "jobs.yaml").write_text("- []\n")
    assert remove_unstarted_sweep(tmp_path, first_existing(tmp_path))
    assert tmp_path.is_dir() and not (tmp_path / "jobs.yaml").exists()


# ---------------------------------------------------------------------------------------------------------------
# A misspelt key, and what Hydra's "+" advice led to

def test_a_misspelt_key_names_the_nearest_real_one(compose_config):
    from hydra.errors import ConfigCompositionException

    from pipeline.hydra_guard import unknown_key

    sentences = {}
    for argument in ("mechanism.epsilom=2", "trialz=3", "prior.zzz=1"):
        with pytest.raises(ConfigCompositionException) as raised:
            compose_config(argument)
        sentences[argument] = unknown_key(raised.value, [argument])
    assert sentences["mechanism.epsilom=2"] == (
        "mechanism.epsilom is not a setting of the config (mechanism has mu, epsilon, delta, domain_size); did you "
        "mean mechanism.epsilon=2?")
    assert sentences["trialz=3"].endswith("did you mean trials=3?") and "hydra" not in sentences["trialz=3"]
    assert sentences["prior.zzz=1"].startswith("prior.zzz is not a setting of the config (prior has n_targets, "
                                               "domain_size); check its spelling")
    assert unknown_key(ValueError("not Hydra's"), []) is None


def test_an_added_argument_the_box_does_not_take_names_its_real_arguments(compose_config):
    from pipeline.game import build_boxes

    with pytest.raises(ConfigError) as refused:
        build_boxes(compose_config("+mechanism.epsilom=2"))
    assert str(refused.value) == (
        "mechanism.epsilom is not an argument of the mechanism box stages.mechanism.gaussian.GaussianMechanism, which "
        "takes mu, epsilon, delta, domain_size; remove it, or did you mean mechanism.epsilon?")
    assert refused.value.key == "mechanism.epsilom"


def test_an_added_top_level_key_nothing_reads_is_refused(compose_config):
    """`+trialz=3` appends a key Hydra accepts and nothing reads (the game ran with trials unchanged): refused in one
    sentence before any box is built; every key of conf/config.yaml and of the experiments stays accepted."""
    from pipeline.preflight import check_config, check_top_level, top_level_keys

    with pytest.raises(ConfigError) as refused:
        check_config(compose_config("+trialz=3"))
    assert str(refused.value).startswith("trialz is not a setting of the config (the top level has ")
    assert str(refused.value).endswith("so nothing would read it; did you mean trials?")
    assert {"trials", "seed", "prior", "mechanism", "bound", "task", "figure", "pii"} <= top_level_keys()
    check_top_level(compose_config())
    check_top_level(compose_config("experiment=eps_protect"))


# ---------------------------------------------------------------------------------------------------------------
# SLURM without SLURM

def _path_without_slurm() -> str:
    """A PATH holding only this Python's folder (no srun, no sbatch): a machine without SLURM."""
    path = str(Path(sys.executable).parent)
    if shutil.which("srun", path=path) or shutil.which("sbatch", path=path):
        pytest.skip(f"srun or sbatch lies beside this Python ({path})")
    return path


def test_no_srun_is_one_sentence_naming_the_launcher(tmp_path, monkeypatch):
    from pipeline.slurm_launcher import unavailable

    monkeypatch.setenv("PATH", _path_without_slurm())
    problem = unavailable("slurm_gpu")
    assert isinstance(problem, ConfigError)
    assert str(problem).startswith("hydra/launcher=slurm_gpu submits the sweep's jobs to SLURM, but this machine has "
                                   "no SLURM (no srun on PATH)")
    assert "hydra/launcher=submitit_local" in str(problem) and "hydra/launcher=basic" in str(problem)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "srun").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert unavailable("slurm") is None


@pytest.mark.slow
def test_a_slurm_sweep_without_slurm_is_one_sentence_and_no_folder(tmp_path):
    env = {**cli_env(), "PATH": _path_without_slurm()}
    result = subprocess.run([sys.executable, "-m", "pipeline", "-m", "hydra/launcher=slurm",
                             "hydra.launcher.partition=debug", "mechanism.epsilon=1,2"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    (line,) = _lines(result.stderr)
    assert line.startswith("error: hydra/launcher=slurm submits the sweep's jobs to SLURM"), line
    assert "Traceback" not in result.stdout + result.stderr
    assert not (tmp_path / "outputs").exists()


# ---------------------------------------------------------------------------------------------------------------
# End to end: python -m pipeline in subprocesses

@pytest.mark.slow
@pytest.mark.parametrize("arguments, says", [
    (("mechanism.epsilon=",), "error: mechanism.epsilon must be a number"),
    (("prior=baynet", "mechanism=noisy_marginals", "attack=rap", "trials=2", "data_dir=/nonexistent"),
     "does not exist in data_dir /nonexistent"),
], ids=["empty-value", "missing-data"])
def test_a_sweep_that_fails_before_any_job_leaves_no_folder(tmp_path, arguments, says):
    result = run_cli("-m", *arguments, cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert says in _lines(result.stderr)[-1] and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "outputs" / "multirun").exists(), sorted(tmp_path.rglob("*"))


@pytest.mark.slow
def test_a_misspelt_key_and_the_plus_it_suggested_are_each_one_sentence(tmp_path):
    first = run_cli("mechanism.epsilom=2", cwd=tmp_path, timeout=120)
    assert first.returncode == 2 and _lines(first.stderr) == [
        "error: mechanism.epsilom is not a setting of the config (mechanism has mu, epsilon, delta, domain_size); "
        "did you mean mechanism.epsilon=2?"], first.stderr
    second = run_cli("+mechanism.epsilom=2", "trials=2", cwd=tmp_path, timeout=120)
    assert second.returncode == 2, second.stderr
    (line,) = _lines(second.stderr)
    assert line.startswith("error: mechanism.epsilom is not an argument of the mechanism box") and \
        "takes mu, epsilon, delta, domain_size" in line and "__init__" not in line, line
    assert not (tmp_path / "outputs" / "runs").exists()


def _whole(job: Path) -> bool:
    return ((job / "metrics.json").is_file() and (job / "figures" / "successes.png").is_file()
            and not list(job.glob(".staging-*")))


@pytest.mark.slow
def test_an_interrupted_sweep_resumes_to_the_end_and_every_job_folder_is_whole(tmp_path):
    """A real Ctrl-C in the middle of a real sweep, then the same command again: exit 0, every job folder whole,
    the finished jobs untouched; the interrupt's message says truly what the job folder it names holds."""
    sweep = tmp_path / "sweep"
    arguments = ["-m", "prior.n_targets=50", "trials=2000", "mechanism.epsilon=1,2,4", f"hydra.sweep.dir={sweep}"]
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", *arguments], cwd=tmp_path, env=cli_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while not (sweep / "1" / "game.log").is_file() or "trials: starting" not in (sweep / "1" / "game.log").read_text():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "job 1 did not start"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    (line,) = _lines(stderr)
    job = next(folder for folder in (sweep / "0", sweep / "1", sweep / "2") if f"job folder {folder} " in line)
    if (job / "metrics.json").exists():  # the signal came after its commit
        assert f"job folder {job} is finished (it holds {folder_contents(job)})" in line, line
    else:
        assert f"job folder {job} holds {folder_contents(job)} but no metrics.json" in line, line
        assert not (job / "figures").exists()
    assert f"the same command with hydra.sweep.dir={sweep} finishes" in line, line
    for folder in sweep.iterdir():
        if folder.is_dir():
            assert _whole(folder) or not (folder / "metrics.json").exists(), sorted(folder.rglob("*"))
    assert _whole(sweep / "0")
    finished = {p.parent.name: p.read_bytes() for p in sweep.glob("*/metrics.json")}

    again = run_cli(*arguments, cwd=tmp_path, timeout=300)
    assert again.returncode == 0, again.stderr
    assert all(_whole(sweep / str(number)) for number in range(3))
    assert {name: (sweep / name / "metrics.json").read_bytes() for name in finished} == finished
    assert "already holds this job's metrics.json, so the job is done" in again.stdout + again.stderr
    eps = [json.loads((sweep / str(n) / "metrics.json").read_text())["privacy"]["epsilon"] for n in range(3)]
    assert eps == sorted(eps) and len(set(eps)) == 3


@pytest.mark.slow
def test_a_folder_holding_another_jobs_metrics_is_still_refused(tmp_path):
    """The same sweep run again whose job folders were swapped: each holds the other job's metrics.json."""
    sweep = tmp_path / "sweep"
    arguments = ("-m", *SMALL, "mechanism.epsilon=1,2", f"hydra.sweep.dir={sweep}")
    assert run_cli(*arguments, cwd=tmp_path).returncode == 0
    os.rename(sweep / "0", sweep / "swap")
    os.rename(sweep / "1", sweep / "0")
    os.rename(sweep / "swap", sweep / "1")
    before = {p.relative_to(sweep): p.read_bytes() for p in sorted(sweep.rglob("*")) if p.is_file() and
              p.name != "game.log"}
    again = run_cli(*arguments, cwd=tmp_path)
    assert again.returncode == 2, again.stderr
    last = _lines(again.stderr)[-1]
    assert last.startswith(f"error: job folder {sweep / '0'} already holds a metrics.json of another job (it holds "
                           ".hydra/, figures/, game.log, metrics.json and trials.csv; it ran prior.n_targets=20 trials=10 "
                           "mechanism.epsilon=2, this job prior.n_targets=20 trials=10 mechanism.epsilon=1)"), last
    after = {p.relative_to(sweep): p.read_bytes() for p in sorted(sweep.rglob("*")) if p.is_file() and
             p.name != "game.log"}
    assert after == before
