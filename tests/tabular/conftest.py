"""Fixtures of the tabular tests: the small tables of tests/data."""
from __future__ import annotations

from pathlib import Path

import pytest

TEST_DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def test_data() -> Path:
    return TEST_DATA
