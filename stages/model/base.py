"""The language-model box: a lazily loaded causal LM (transformers) with its tokenizer, device and dtype."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["LanguageModel", "resolve_device", "DTYPES"]

DTYPES = ("float32", "float16", "bfloat16")


def resolve_device(device: str) -> str:
    """`auto` is CUDA when torch sees a GPU, else CPU; any other value (cpu, cuda, cuda:1, mps) is kept."""
    if not isinstance(device, str) or not device:
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:<index>', got {device!r}.")
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class LanguageModel(ABC):
    """A causal LM described by its config; `load()` builds it once and returns (model, tokenizer).

    The model comes back in eval mode with every parameter frozen (requires_grad False): the PII prior
    only scores, and DP-SGD trains new rows of its own (stages.mechanism.dpsgd).
    """

    name = "model"

    def __init__(self, device: str = "auto", dtype: str = "float32") -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}.")
        resolve_device(device)  # validates the spelling without importing torch for 'auto'
        self.device = device
        self.dtype = dtype
        self._loaded: tuple[Any, Any] | None = None

    @abstractmethod
    def _build(self) -> tuple[Any, Any]:
        """Create (model, tokenizer) on the CPU in float32; raise ValueError/FileNotFoundError when impossible."""

    @abstractmethod
    def identity(self) -> dict:
        """What determines the weights and the tokenizer (for stage-cache keys); device is left out."""

    def load(self) -> tuple[Any, Any]:
        """(model, tokenizer): built on first call, moved to the resolved device and dtype, eval mode, frozen."""
        if self._loaded is None:
            import torch

            model, tokenizer = self._build()
            model.to(device=resolve_device(self.device), dtype=getattr(torch, self.dtype))
            model.eval()
            model.requires_grad_(False)
            self._loaded = (model, tokenizer)
        return self._loaded

    @property
    def torch_device(self):
        import torch

        return torch.device(resolve_device(self.device))

    def params(self) -> dict:
        return {"model": self.name, **self.identity(), "device": self.device}
