"""Causal language models shared by the PII prior and the DP-SGD mechanism: one module per config option.

`conf/model/<option>.yaml` builds a LanguageModel (a description: loading is lazy, on first use);
`load()` returns the torch model and its tokenizer on the chosen device and dtype.
"""
from stages.model.base import LanguageModel, resolve_device

__all__ = ["LanguageModel", "resolve_device"]
