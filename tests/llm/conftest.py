"""Shared fixtures of the LLM case-study tests: the tiny random model (loaded once) and the Enron sample."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

# The pipeline tests' compose_config fixture (compose the real conf/ tree, outputs under tmp_path), reused.
_spec = importlib.util.spec_from_file_location("pipeline_tests_conftest",
                                               Path(__file__).resolve().parents[1] / "pipeline" / "conftest.py")
_pipeline_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_pipeline_conftest)
compose_config = _pipeline_conftest.compose_config

TEST_DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return TEST_DATA


@pytest.fixture(scope="session")
def tiny():
    """The tiny random Llama (byte tokenizer), on the CPU, loaded once for the whole session."""
    import torch

    torch.set_num_threads(1)
    from stages.model.tiny import TinyModel

    model = TinyModel(device="cpu")
    model.load()
    return model
