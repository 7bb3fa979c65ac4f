"""A randomly initialised small causal LM (GPT-2 or Llama architecture, a few layers) for tests and CI.

Its tokenizer is byte-level (one token per byte, plus <|endoftext|> as BOS/EOS), built in code so the
tests need no data file, or the GPT-2 BPE tokenizer from a folder holding vocab.json and merges.txt
(e.g. `gpt2-tokenizer` under data_dir). The PII prior and DP-SGD run the same code path as with a
pretrained model; only the weights are random (seeded).
"""
from __future__ import annotations

from pathlib import Path

from stages.bound import _validate
from stages.model.base import LanguageModel, gpt2_bpe_tokenizer

__all__ = ["TinyModel", "byte_tokenizer"]

ARCHITECTURES = ("gpt2", "llama")


def byte_tokenizer():
    """A byte-level tokenizer: the 256 byte symbols of GPT-2's byte-level alphabet and <|endoftext|> (id 256)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {symbol: i for i, symbol in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab["<|endoftext|>"] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<|endoftext|>", eos_token="<|endoftext|>")


class TinyModel(LanguageModel):
    """architecture gpt2 | llama with `layers` blocks of width `hidden`, weights drawn from torch seed `seed`."""

    name = "tiny"

    def __init__(self, architecture: str = "llama", layers: int = 2, hidden: int = 64, heads: int = 4, seed: int = 0,
                 tokenizer: str = "bytes", data_dir: str | None = None, device: str = "auto",
                 dtype: str = "float32") -> None:
        super().__init__(device, dtype)
        if architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {list(ARCHITECTURES)}, got {architecture!r}.")
        self.architecture = architecture
        self.layers = _validate.integer("layers", layers, minimum=1)
        self.hidden = _validate.integer("hidden", hidden, minimum=1)
        self.heads = _validate.integer("heads", heads, minimum=1)
        if self.hidden % self.heads:
            raise ValueError(f"hidden must be a multiple of heads ({self.heads}), got {self.hidden}.")
        self.seed = _validate.integer("seed", seed, minimum=0)
        self.tokenizer = str(tokenizer)
        self.tokenizer_dir = None
        if self.tokenizer != "bytes":
            from stages.prior.base import data_path

            # both GPT-2 BPE files must be there (relative to data_dir, or absolute)
            self.tokenizer_dir = data_path(Path(tokenizer).expanduser() / "vocab.json", data_dir).parent.absolute()
            data_path(self.tokenizer_dir / "merges.txt")

    def identity(self) -> dict:
        return {"architecture": self.architecture, "layers": self.layers, "hidden": self.hidden, "heads": self.heads,
                "seed": self.seed, "tokenizer": self.tokenizer, "dtype": self.dtype}

    def _build(self):
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

        if self.tokenizer_dir is None:
            tokenizer = byte_tokenizer()
        else:
            tokenizer = gpt2_bpe_tokenizer(self.tokenizer_dir)
        vocab = len(tokenizer)
        state = torch.random.get_rng_state()
        try:  # transformers initialises weights from the global generator: seed it, then restore it
            torch.manual_seed(self.seed)
            if self.architecture == "gpt2":
                config = GPT2Config(vocab_size=vocab, n_positions=512, n_embd=self.hidden, n_layer=self.layers,
                                    n_head=self.heads, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
                model = GPT2LMHeadModel(config)
            else:
                config = LlamaConfig(vocab_size=vocab, hidden_size=self.hidden, intermediate_size=2 * self.hidden,
                                     num_hidden_layers=self.layers, num_attention_heads=self.heads,
                                     num_key_value_heads=self.heads, max_position_embeddings=512, tie_word_embeddings=True,
                                     bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
                model = LlamaForCausalLM(config)
        finally:
            torch.random.set_rng_state(state)
        return model, tokenizer
