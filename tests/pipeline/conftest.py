"""Pipeline-test settings (the compose_config fixture is in tests/conftest.py, helpers in tests/clitools.py)."""
from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line("markers", "slurm: needs a reachable SLURM cluster (skipped with the reason otherwise); .ci/run starts one")
