"""The language-model box: a lazily loaded causal LM (transformers) with its tokenizer, device and dtype."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

__all__ = ["LanguageModel", "resolve_device", "DTYPES", "gpt2_bpe_tokenizer", "check_tokenizer"]

DTYPES = ("float32", "float16", "bfloat16")


def resolve_device(device: str) -> str:
    """`auto` is CUDA when torch sees a GPU, else CPU; any other value (cpu, cuda, cuda:1, mps) is kept."""
    if not isinstance(device, str) or not device:
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:<index>', got {device!r}.")
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def gpt2_bpe_tokenizer(folder):
    """The GPT-2 byte-level BPE tokenizer from a folder holding vocab.json and merges.txt, offline.

    Built with the `tokenizers` library itself (BPE model, byte-level pre-tokenizer and decoder) and
    wrapped in a PreTrainedTokenizerFast, so it does not depend on how a transformers version reads
    vocabulary files: under transformers 5.x `GPT2TokenizerFast(vocab_file=..., merges_file=...)`
    silently ignores the files and builds an empty tokenizer, and `AutoTokenizer.from_pretrained`
    refuses a folder without tokenizer.json.
    """
    from pathlib import Path

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    folder = Path(folder)
    vocab, merges = folder / "vocab.json", folder / "merges.txt"
    for path in (vocab, merges):
        if not path.is_file():
            raise FileNotFoundError(f"tokenizer folder {folder} has no {path.name}; a GPT-2 BPE tokenizer needs vocab.json "
                                    f"and merges.txt (e.g. python -m pipeline.data fetch gpt2).")
    core = Tokenizer(models.BPE.from_file(str(vocab), str(merges)))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    end = "<|endoftext|>"
    if core.token_to_id(end) is None:
        raise ValueError(f"tokenizer folder {folder}: vocab.json has no {end} token, so it is not a GPT-2 vocabulary.")
    return check_tokenizer(PreTrainedTokenizerFast(tokenizer_object=core, bos_token=end, eos_token=end,
                                                   unk_token=end), str(folder))


def check_tokenizer(tokenizer, source: str):
    """Refuse a tokenizer that cannot encode text (an empty vocabulary): one sentence naming where it came from."""
    try:
        ids = tokenizer("Hello world")["input_ids"]
    except Exception as exc:  # noqa: BLE001 - any failure to encode means the tokenizer is unusable
        raise ValueError(f"tokenizer {source} cannot encode text ({exc}); point tokenizer at a folder with "
                         f"tokenizer.json, or vocab.json and merges.txt.") from exc
    if len(tokenizer) < 2 or not ids:
        raise ValueError(f"tokenizer {source} is empty (vocabulary of {len(tokenizer)}, 'Hello world' encodes to "
                         f"{list(ids)}); point tokenizer at a folder with tokenizer.json, or vocab.json and merges.txt.")
    return tokenizer


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
