"""Offline GPT-2 tokenizers (issue 14, item 9): the shipped vocab.json + merges.txt give the real GPT-2 BPE.

Under transformers 5.x, `GPT2TokenizerFast(vocab_file=..., merges_file=...)` ignores the files and builds an
empty tokenizer (length 1, every string encodes to nothing), and `AutoTokenizer.from_pretrained(<folder>)`
raises ValueError for a folder without tokenizer.json. Both boxes must load the files in tests/data.
"""
from __future__ import annotations

from pathlib import Path

import pytest

TOKENIZER = Path(__file__).resolve().parents[2] / "data" / "gpt2-tokenizer"
GPT2_HELLO_WORLD = [15496, 995]  # the ids every GPT-2 tokenizer gives "Hello world"


def _check_gpt2(tokenizer):
    assert len(tokenizer) == 50257
    assert tokenizer("Hello world")["input_ids"] == GPT2_HELLO_WORLD
    assert tokenizer(" Alice Smith")["input_ids"] and tokenizer.decode(tokenizer(" Alice Smith")["input_ids"]) == " Alice Smith"
    assert tokenizer.bos_token_id == tokenizer.eos_token_id == 50256


def test_tiny_model_with_the_gpt2_tokenizer_folder():
    from stages.model.tiny import TinyModel

    # relative to data_dir (tests/data, as the config's data_dir) and absolute
    for spec, data_dir in (("gpt2-tokenizer", TOKENIZER.parent), (str(TOKENIZER), None)):
        model, tokenizer = TinyModel(tokenizer=spec, data_dir=data_dir and str(data_dir), hidden=8, heads=2,
                                     layers=1, device="cpu").load()
        _check_gpt2(tokenizer)
        assert model.get_input_embeddings().weight.shape[0] == 50257


def test_hub_model_with_a_separate_tokenizer_folder(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel

    from stages.model.gpt2 import HubModel

    GPT2LMHeadModel(GPT2Config(vocab_size=50257, n_positions=16, n_embd=8, n_layer=1, n_head=2)).save_pretrained(
        tmp_path / "ckpt")
    _, tokenizer = HubModel(str(tmp_path / "ckpt"), tokenizer=str(TOKENIZER), device="cpu").load()
    _check_gpt2(tokenizer)


def test_an_empty_tokenizer_folder_is_refused_in_one_sentence(tmp_path):
    from stages.model.base import gpt2_bpe_tokenizer

    with pytest.raises(FileNotFoundError, match=r"has no vocab\.json") as err:
        gpt2_bpe_tokenizer(tmp_path)
    assert "\n" not in str(err.value)
