"""Job folders as a user on a shared machine sees them: one folder per run, never another job's metrics.json
replaced, nothing left behind by a refused value, and one line (no traceback) for what is not a bug."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from clitools import SMALL, cli_env, run_cli

from pipeline.io import write_json_atomic


def _popen(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipeline", *args], cwd=cwd, env=cli_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.strip().splitlines() if line.strip()]


@pytest.mark.slow
def test_two_runs_started_together_get_two_folders(tmp_path):
    """Issue: two runs started in the same second shared runs/<date>/<H-M-S>; one metrics.json was lost."""
    procs = [_popen(*SMALL, f"seed={seed}", cwd=tmp_path) for seed in (1, 2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    found = sorted((tmp_path / "outputs" / "runs").rglob("metrics.json"))
    assert len(found) == 2 and found[0].parent != found[1].parent
    assert sorted(json.loads(p.read_text())["seed"] for p in found) == [1, 2]
    # Each run says where its folder is, and each folder's log holds only its own job.
    printed = sorted(line.split(": ", 1)[1] for out, _ in outputs for line in out.splitlines()
                     if line.startswith("job folder: "))
    assert printed == sorted(str(p.parent) for p in found)
    for path in found:
        assert (path.parent / "game.log").read_text().count("trials: 10/10 trials") == 1


@pytest.mark.slow
def test_two_sweeps_started_together_get_two_folders(tmp_path):
    procs = [_popen("-m", *SMALL, f"seed={seed}", "mechanism.epsilon=1,2", cwd=tmp_path) for seed in (1, 2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    sweeps = sorted(p.parent for p in (tmp_path / "outputs" / "multirun").rglob("multirun.yaml"))
    assert len(sweeps) == 2
    for sweep in sweeps:
        assert len(list(sweep.rglob("metrics.json"))) == 2
    printed = sorted(line.split(": ", 1)[1] for out, _ in outputs for line in out.splitlines()
                     if line.startswith("sweep folder: "))
    assert printed == [str(s) for s in sweeps]


def _write_exclusive(args: tuple[str, int]) -> str:
    path, value = args
    try:
        write_json_atomic(path, {"job": value}, exclusive=True)
        return "wrote"
    except FileExistsError:
        return "refused"


def test_exclusive_write_lets_exactly_one_of_many_processes_win(tmp_path):
    path = str(tmp_path / "metrics.json")
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_write_exclusive, [(path, i) for i in range(6)]))
    assert results.count("wrote") == 1 and results.count("refused") == 5
    assert json.loads(Path(path).read_text())["job"] == results.index("wrote")
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # no temporary file left


@pytest.mark.slow
def test_a_second_job_in_a_used_folder_is_refused_and_changes_nothing(tmp_path):
    folder = tmp_path / "fixed"
    first = run_cli(*SMALL, f"hydra.run.dir={folder}", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = (folder / "metrics.json").read_bytes()
    # Issue 14 item 4: Hydra wrote the refused job's .hydra/config.yaml (seed 5) beside the first job's
    # metrics.json (seed 0); now no file of the folder changes, .hydra/ and game.log included.
    files = {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert Path(".hydra/config.yaml") in files and Path("game.log") in files
    second = run_cli(*SMALL, "seed=5", f"hydra.run.dir={folder}", cwd=tmp_path)
    assert second.returncode == 2
    lines = _error_lines(second.stderr)
    assert len(lines) == 1 and "already holds a metrics.json" in lines[0] and str(folder) in lines[0], second.stderr
    assert (folder / "metrics.json").read_bytes() == before and (folder / "figures" / "successes.png").is_file()
    after = {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert after == files, sorted(k for k in set(after) | set(files) if after.get(k) != files.get(k))
    # The same job again (issue 39 item 3): it is done, so it exits 0 and changes nothing but its log.
    same = run_cli(*SMALL, f"hydra.run.dir={folder}", cwd=tmp_path)
    assert same.returncode == 0 and f"job folder: {folder}" in same.stdout, same.stderr
    assert "already holds this job's metrics.json, so the job is done" in (folder / "game.log").read_text()
    again = {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert {k: v for k, v in again.items() if k.name != "game.log"} == {k: v for k, v in files.items()
                                                                         if k.name != "game.log"}


@pytest.mark.slow
def test_refused_value_leaves_no_job_folder(tmp_path):
    """Issue: a refused value left .hydra/ and an empty game.log behind."""
    result = run_cli(*SMALL, "mechanism.epsilon=-1", cwd=tmp_path)
    assert result.returncode == 2 and len(_error_lines(result.stderr)) == 1, result.stderr
    assert not list(tmp_path.rglob(".hydra")) and not (tmp_path / "outputs" / "runs").exists()


@pytest.mark.slow
def test_refused_job_in_a_sweep_is_named_and_the_others_finish(tmp_path):
    sweep = tmp_path / "sweep"
    result = run_cli("-m", *SMALL, "mechanism.epsilon=-1,2", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 2
    assert _error_lines(result.stderr)[-1].startswith("error: mechanism.epsilon"), result.stderr
    assert "Traceback" not in result.stderr
    assert not (sweep / "0").exists() and (sweep / "1" / "metrics.json").is_file()


@pytest.mark.slow
def test_failing_submitit_job_ends_with_its_error_then_its_log(tmp_path):
    """Also: under submitit the jobs land in the sweep folder the sweep's process named (${unique:} is resolved once)."""
    result = run_cli("-m", *SMALL, "mechanism.epsilon=-1,2", "hydra/launcher=submitit_local", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    error, log = _error_lines(result.stderr)[-2:]
    assert error.startswith("error: mechanism.epsilon") and "-1" in error, result.stderr
    assert log.startswith("log: ") and ".submitit" in log and "Traceback" not in result.stderr
    log_path = Path(log.split(": ", 1)[1])
    assert error in log_path.read_text()
    (sweep,) = [p.parent for p in (tmp_path / "outputs" / "multirun").rglob("multirun.yaml")]
    assert sweep in log_path.parents
    assert not (sweep / "0").exists() and (sweep / "1" / "metrics.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("what", ["file", "under_a_file"])
def test_outputs_dir_that_is_a_file_gets_one_line(what, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    target = blocker if what == "file" else blocker / "sub"
    result = run_cli(*SMALL, f"outputs_dir={target}", cwd=tmp_path)
    assert result.returncode == 2
    lines = _error_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: outputs_dir") and str(blocker) in lines[0], result.stderr
    assert blocker.read_text() == "not a folder"


@pytest.mark.slow
def test_missing_task_counts_file_gets_one_line_and_no_folder(tmp_path):
    result = run_cli("experiment=zipf_calibration", "task.counts_file=passwords/nope.csv", cwd=tmp_path)
    assert result.returncode == 2
    lines = _error_lines(result.stderr)
    assert len(lines) == 1 and "nope.csv" in lines[0] and "data_dir=" in lines[0], result.stderr
    assert not list(tmp_path.rglob(".hydra"))


@pytest.mark.slow
def test_ctrl_c_gets_one_line(tmp_path):
    # A job started in the background (`nohup ... &`, some CI runners) inherits SIGINT ignored, and then
    # Python never raises KeyboardInterrupt: give the child the default disposition, as a terminal does.
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "prior.n_targets=200", "trials=1000000"], cwd=tmp_path,
                            env=cli_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for line in proc.stdout:  # the job logs "trials: starting 1000000 trials" as it starts playing
            if "trials: starting 1000000 trials" in line:
                break
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    lines = _error_lines(stderr)
    assert len(lines) == 1 and lines[0].startswith("interrupted") and "Traceback" not in stderr, stderr
    assert not list(tmp_path.rglob("metrics.json"))


_CRASHING_PRIOR = '''
from stages.prior.uniform import UniformPrior


class CrashingPrior(UniformPrior):
    def sample(self, rng, n=None):
        raise RuntimeError("boom in a trial")
'''


@pytest.mark.slow
def test_crashing_submitit_job_ends_with_its_error_then_its_log(tmp_path):
    """A bug in a box (not a refused value): the sweep's process names the error and the log with the traceback."""
    (tmp_path / "crashing_box.py").write_text(_CRASHING_PRIOR)
    env = {**cli_env(), "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "-m", *SMALL, "prior._target_=crashing_box.CrashingPrior",
         "hydra/launcher=submitit_local", f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    error, log = _error_lines(result.stderr)[-2:]
    assert error == "error: RuntimeError: boom in a trial", result.stderr
    assert log.startswith("log: ") and "Traceback" not in result.stderr
    written = Path(log.split(": ", 1)[1]).read_text()
    assert "Traceback" in written and "boom in a trial" in written
