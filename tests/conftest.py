"""Test-wide settings.

- hypothesis runs derandomized, so a CI run replays exactly what passed here.
- Two tiers (docs/pages/testing.md): the default run is the fast tier, `-m slow` the slow one. A test of more than a
  few seconds carries `@pytest.mark.slow`; a parametrized test whose cases add up to that (the exact-LP oracles, the
  long Theorem 4/5 searches) is listed in tests/tiers.py (SAMPLED): the fast tier runs a fixed sample of its cases, the slow tier
  every other one.
- Every test reads its data from tests/data (the small samples the repository carries, same layout as
  the full data folder; see tests/data/README.md), never from a folder outside the repository: a fresh
  clone with nothing beside it passes. `$ADVBOUNDS_DATA` is set here, before any test module is
  imported, so Hydra's `data_dir`, the prior boxes and the CLI subprocesses all see it.
"""
import os
import random
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import settings
from tiers import SAMPLED

TEST_DATA = Path(__file__).resolve().parent / "data"
os.environ["ADVBOUNDS_DATA"] = str(TEST_DATA)

settings.register_profile("advbounds", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("advbounds")


@pytest.fixture(scope="session")
def hydra_app():
    """The Hydra app over conf/, initialised once per session (config search path, repository, version base).

    GlobalHydra is left as it was found (cleared): tests that call `initialize*` themselves or run the CLI
    in-process (`@hydra.main`) start from a clean GlobalHydra, as they would without this fixture.
    """
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from clitools import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return GlobalHydra.instance().hydra


@pytest.fixture
def compose_config(hydra_app, tmp_path):
    """compose(overrides) -> the real composed config, with outputs (and the stage cache) under tmp_path.

    Each call installs the session's Hydra app in GlobalHydra for the composition only and puts back
    whatever was there before (usually nothing), so nothing leaks between tests.
    """
    from hydra import compose, version
    from hydra.core.global_hydra import GlobalHydra

    def _compose(*overrides: str, return_hydra_config: bool = False):
        gh = GlobalHydra.instance()
        previous, gh.hydra = gh.hydra, hydra_app
        version.setbase("1.3")
        try:
            return compose("config", overrides=[f"outputs_dir={tmp_path / 'outputs'}", *overrides],
                           return_hydra_config=return_hydra_config)
        finally:
            gh.hydra = previous

    return _compose


@pytest.hookimpl(tryfirst=True)  # before the -m filter deselects by marker
def pytest_collection_modifyitems(config, items):
    cases = defaultdict(list)
    for item in items:
        function = item.nodeid.split("[", 1)[0]
        if function in SAMPLED and "[" in item.nodeid and item.get_closest_marker("slow") is None:
            cases[function].append(item)
    for function, group in cases.items():
        ids = sorted(item.nodeid for item in group)
        keep = set(random.Random(function).sample(ids, min(SAMPLED[function], len(ids))))
        for item in group:
            if item.nodeid not in keep:
                item.add_marker(pytest.mark.slow)
