"""Shared helpers for the pipeline tests: compose the real config tree, run the real app."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pipeline

REPO = Path(__file__).resolve().parents[2]
CONF_DIR = Path(pipeline.CONF_DIR)
# Small games: 20 canaries (x 10 candidates), 10 trials.
SMALL = ("prior.n_targets=20", "trials=10")


def pytest_configure(config):
    config.addinivalue_line("markers", "slurm: needs a reachable SLURM cluster (skipped with the reason otherwise); .ci/run starts one")


def options(group: str) -> list[str]:
    """Every option of a config group: the yaml files in conf/<group>/."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


@pytest.fixture
def compose_config(tmp_path):
    """compose(overrides) -> the real composed config, with outputs (and the stage cache) under tmp_path."""
    from hydra import compose, initialize_config_dir

    def _compose(*overrides: str, return_hydra_config: bool = False):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose("config", overrides=[f"outputs_dir={tmp_path / 'outputs'}", *overrides],
                           return_hydra_config=return_hydra_config)

    return _compose


def cli_env() -> dict[str, str]:
    env = os.environ.copy()
    env.setdefault("WANDB_MODE", "offline")
    env.setdefault("ADVBOUNDS_DATA", str(REPO / "tests" / "data"))  # tests/conftest.py sets it already
    env["HYDRA_FULL_ERROR"] = "0"
    return env


def run_cli(*args: str, cwd: Path, module: str = "pipeline", timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m <module> args...` in cwd (its outputs/ go there) and capture what it prints."""
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=cli_env(), capture_output=True,
                          text=True, timeout=timeout)
