"""The two tiers (docs/pages/testing.md): every sampled test exists, and each tier gets what it is promised."""
from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from clitools import REPO
from tiers import SAMPLED


def _collected(marker: str) -> list[str]:
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             "-m", marker, "tests"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


@pytest.mark.slow  # collects the suite twice
def test_every_sampled_test_runs_its_sample_fast_and_the_rest_slow():
    fast = Counter(node.split("[", 1)[0] for node in _collected("not slow") if "[" in node)
    slow = Counter(node.split("[", 1)[0] for node in _collected("slow") if "[" in node)
    for function, size in SAMPLED.items():
        assert fast[function] + slow[function] > 0, f"SAMPLED names {function}, which is no parametrized test"
        assert fast[function] == min(size, fast[function] + slow[function]), (function, fast[function], size)
