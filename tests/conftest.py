"""Test-wide settings.

- hypothesis runs derandomized, so a CI run replays exactly what passed here.
- Every test reads its data from tests/data (the small samples the repository carries, same layout as
  the full data folder; see tests/data/README.md), never from a folder outside the repository: a fresh
  clone with nothing beside it passes. `$ADVBOUNDS_DATA` is set here, before any test module is
  imported, so Hydra's `data_dir`, the prior boxes and the CLI subprocesses all see it.
"""
import os
from pathlib import Path

from hypothesis import settings

TEST_DATA = Path(__file__).resolve().parent / "data"
os.environ["ADVBOUNDS_DATA"] = str(TEST_DATA)

settings.register_profile("advbounds", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("advbounds")
