"""Helpers every test folder may import (`from clitools import ...`): run the real app, list config options.

They live here rather than in a folder's conftest.py because pytest keeps one module named `conftest`
at a time; a test importing from it at run time could get another folder's conftest.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pipeline

REPO = Path(__file__).resolve().parents[1]
CONF_DIR = Path(pipeline.CONF_DIR)
# Small games: 20 canaries (x 10 candidates), 10 trials.
SMALL = ("prior.n_targets=20", "trials=10")


def options(group: str) -> list[str]:
    """Every option of a config group: the yaml files in conf/<group>/."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


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
