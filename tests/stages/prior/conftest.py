"""Fixtures of the prior tests (test_baynet): the small tables of tests/data."""
from __future__ import annotations

from pathlib import Path

import pytest

TEST_DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture
def test_data() -> Path:
    return TEST_DATA
