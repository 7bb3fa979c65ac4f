"""Fixtures shared by tests/stages/<group>/: the tiny random model (loaded once) and the test data."""
from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def tiny_gpt2():
    """The tiny random GPT-2 (Conv1D layers, LayerNorm with bias, position embeddings, dropout 0.1 in train mode),
    loaded once."""
    from stages.model.tiny import TinyModel

    model = TinyModel(architecture="gpt2", device="cpu")
    model.load()
    return model


@pytest.fixture(params=["llama", "gpt2"])
def tiny_any(request, tiny, tiny_gpt2):
    return tiny if request.param == "llama" else tiny_gpt2
