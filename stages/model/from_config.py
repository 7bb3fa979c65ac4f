"""A full-size causal LM with random weights, built from its config alone (no weights, no tokenizer, no network).

For benchmarks of DP-SGD on a GPU machine that holds neither checkpoints nor tokenizers: the cost of a
training step depends on the architecture and its shape, not on the weights. Two shapes:

  gpt2-config     transformers' `GPT2Config()` (GPT-2 small, 124M parameters, vocabulary 50257)
  smollm2-config  a LlamaConfig of SmolLM2-135M's shape: hidden 576, intermediate 1536, 30 layers,
                  9 heads (3 key/value heads, head_dim 64), vocabulary 49152, rms_norm_eps 1e-5,
                  rope_theta 100000, tied embeddings, max_position_embeddings 8192

There is no tokenizer (load() returns (model, None)), so the PII prior, which scores text, cannot use
it; DP-SGD on new-token canaries needs none.
"""
from __future__ import annotations

from stages.bound import _validate
from stages.model.base import LanguageModel

__all__ = ["ConfigModel", "SHAPES"]

SHAPES = ("gpt2-config", "smollm2-config")


class ConfigModel(LanguageModel):
    """shape gpt2-config | smollm2-config, weights drawn by transformers' initialisation from torch seed `seed`."""

    name = "config"

    def __init__(self, shape: str = "gpt2-config", seed: int = 0, device: str = "auto", dtype: str = "float32") -> None:
        super().__init__(device, dtype)
        if shape not in SHAPES:
            raise ValueError(f"shape must be one of {list(SHAPES)}, got {shape!r}.")
        self.shape = shape
        self.seed = _validate.integer("seed", seed, minimum=0)

    def identity(self) -> dict:
        return {"shape": self.shape, "seed": self.seed, "dtype": self.dtype}

    def config(self):
        """The transformers config of this shape."""
        from transformers import GPT2Config, LlamaConfig

        if self.shape == "gpt2-config":
            return GPT2Config()
        return LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                           num_attention_heads=9, num_key_value_heads=3, head_dim=64, rms_norm_eps=1e-5,
                           rope_theta=100000.0, tie_word_embeddings=True, max_position_embeddings=8192)

    def _build(self):
        import torch
        from transformers import AutoModelForCausalLM

        state = torch.random.get_rng_state()
        try:  # transformers initialises weights from the global generator: seed it, then restore it
            torch.manual_seed(self.seed)
            model = AutoModelForCausalLM.from_config(self.config())
        finally:
            torch.random.set_rng_state(state)
        return model, None
