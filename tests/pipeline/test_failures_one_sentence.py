"""Issue 14, items 10, 11 and 13: failures a user meets are one sentence on stderr, a non-zero exit and no
folder left behind; incompatible boxes and jobs too large for memory are refused before anything is
built; SIGTERM ends a run like Ctrl-C (exit 143)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from clitools import REPO, SMALL, cli_env, run_cli

pytestmark = pytest.mark.slow  # runs `python -m pipeline` in subprocesses: the slow tier (`pytest -m slow`)


def _refused(result, *needles):
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _no_job_folder(outputs):
    left = [p for p in outputs.rglob("*") if "cache" not in p.parts] if outputs.exists() else []
    assert not [p for p in left if p.is_file()], left


@pytest.mark.parametrize("args,needles", [
    # a mechanism for another kind of records: the pair is named before the interpolation ${prior.domain_size} fails
    (("prior=baynet", "mechanism=gaussian"), ("mechanism=gaussian cannot play with prior=baynet",)),
    # a prior far too large for memory: refused from its sizes, not a MemoryError
    (("prior.domain_size=1099511627776",), ("prior.n_targets x prior.domain_size", "memory")),
    # more trials than memory holds (each trial keeps a few hundred bytes)
    (("trials=1e13",), ("trials=10000000000000", "memory")),
    # an epsilon the Gaussian calibration cannot handle: not scipy's solver message
    (("mechanism.epsilon=1e308",), ("mechanism.epsilon must be at most",)),
    # the same level twice (issue 23, item 7): metrics.json kept both while the bound has one key
    (("confidences=[0.5,0.05,0.5]",), ("confidences must list each level once", "0.5 more than once")),
    # an attack that cannot read the mechanism's release: before the (expensive) DP-SGD training
    (("prior=zipf", "mechanism=dpsgd", "attack=bayes_optimal", "model=tiny"),
     ("attack=bayes_optimal cannot attack mechanism=dpsgd",)),
    (("attack=model_attack",), ("attack=model_attack cannot attack mechanism=gaussian",)),
])
def test_refused_in_one_sentence_and_no_folder_left(tmp_path, args, needles):
    outputs = tmp_path / "outputs"
    result = run_cli("trials=2", *args, f"outputs_dir={outputs}", cwd=tmp_path, timeout=120)
    _refused(result, *needles)
    assert "trials: starting" not in result.stdout  # nothing was played
    _no_job_folder(outputs)


def test_two_modes_at_once_is_one_sentence(tmp_path):
    """-m with --cfg made Hydra raise a ValueError traceback."""
    _refused(run_cli("-m", "--cfg", "job", "prior=zipf", cwd=tmp_path, timeout=60), "-m", "--cfg", "at once")


def test_an_outputs_dir_nothing_can_be_created_in(tmp_path):
    if not os.path.isdir("/proc"):
        pytest.skip("no /proc on this system")
    _refused(run_cli(*SMALL, "outputs_dir=/proc/advbounds-x", cwd=tmp_path, timeout=60),
             "outputs_dir /proc/advbounds-x cannot be created")
    assert not os.path.exists("/proc/advbounds-x")


def test_a_full_disk_is_one_sentence_and_leaves_no_job_folder(tmp_path):
    """np.save raising ENOSPC stands in for a small tmpfs filling up while the trials are stored."""
    outputs = tmp_path / "outputs"
    code = ("import errno, runpy, sys, numpy as np\n"
            "def full(*a, **k): raise OSError(errno.ENOSPC, 'No space left on device', str(a[0]))\n"
            "np.save = full\n"
            f"sys.argv = ['pipeline', 'prior.n_targets=20', 'trials=10', 'outputs_dir={outputs}']\n"
            "runpy.run_module('pipeline', run_name='__main__', alter_sys=True)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=cli_env(), capture_output=True, text=True,
                            timeout=120)
    line = _refused(result, "No space left on device", "outputs_dir")
    assert "run the same command again" in line
    assert not (outputs / "runs").exists()
    assert not list((outputs / "cache").rglob(".tmp-*"))


def test_sigterm_is_one_line_and_exit_143(tmp_path):
    env = cli_env()
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "prior.n_targets=1000", "trials=10000000",
                             f"outputs_dir={tmp_path / 'outputs'}"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    log = None
    while time.monotonic() < deadline and log is None:  # wait until the trials are being played
        found = [p for p in (tmp_path / "outputs").rglob("game.log") if "trials: starting" in p.read_text()]
        log = found[0] if found else None
        time.sleep(0.2)
    assert log is not None, "the game did not start"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("terminated (SIGTERM);") and "Traceback" not in err, err
    assert not list((tmp_path / "outputs" / "cache").rglob("*.lock"))
    assert not list((tmp_path / "outputs" / "cache").rglob(".tmp-*"))
