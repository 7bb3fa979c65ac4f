"""GPT-2 (the paper's model) or any causal-LM checkpoint: a Hugging Face hub name or a local folder."""
from __future__ import annotations

from pathlib import Path

from stages.model.base import LanguageModel, check_tokenizer, gpt2_bpe_tokenizer

__all__ = ["HubModel"]


class HubModel(LanguageModel):
    """`AutoModelForCausalLM.from_pretrained(name_or_path)`: a local checkpoint folder, else the hub's copy.

    A local folder is read offline; a hub name is looked up in the local Hugging Face cache first and
    downloaded only if missing. tokenizer (optional) is a folder or hub name for the tokenizer when the
    checkpoint folder has none (e.g. ../shared/data/gpt2-tokenizer for GPT-2 weights).
    """

    name = "hub"

    def __init__(self, name_or_path: str = "gpt2", tokenizer: str | None = None, device: str = "auto",
                 dtype: str = "float32") -> None:
        super().__init__(device, dtype)
        if not isinstance(name_or_path, str) or not name_or_path:
            raise ValueError(f"name_or_path must be a hub model name or a checkpoint folder, got {name_or_path!r}.")
        looks_like_path = name_or_path.startswith((".", "/", "~")) or Path(name_or_path).expanduser().exists()
        if looks_like_path and not (Path(name_or_path).expanduser() / "config.json").is_file():
            raise FileNotFoundError(
                f"name_or_path {name_or_path} is not a checkpoint folder (no config.json there); point it at a folder "
                f"written by save_pretrained, or use a hub name such as gpt2.")
        self.name_or_path = name_or_path
        self.tokenizer = tokenizer

    def identity(self) -> dict:
        return {"name_or_path": self.name_or_path, "tokenizer": self.tokenizer, "dtype": self.dtype}

    def _build(self):
        from transformers import AutoModelForCausalLM

        source = str(Path(self.name_or_path).expanduser()) if Path(self.name_or_path).expanduser().exists() else self.name_or_path
        try:
            try:
                model = AutoModelForCausalLM.from_pretrained(source, local_files_only=True)
            except OSError:
                model = AutoModelForCausalLM.from_pretrained(source)
            tokenizer = self._tokenizer(source)
        except OSError as exc:
            raise ValueError(
                f"name_or_path {self.name_or_path!r} could not be loaded: it is neither a local checkpoint nor reachable "
                f"on the Hugging Face hub from this machine; download it where the hub is reachable "
                f"(save_pretrained to a folder and pass that folder) or use model=smollm2, which works offline.") from exc
        return model, tokenizer

    def _tokenizer(self, source: str):
        """The tokenizer of `tokenizer` (else of the checkpoint): a folder with only GPT-2's vocab.json and
        merges.txt is read with the tokenizers library (transformers 5.x's AutoTokenizer refuses it)."""
        from transformers import AutoTokenizer

        where = self.tokenizer or source
        folder = Path(where).expanduser()
        if folder.is_dir():
            has_fast = (folder / "tokenizer.json").is_file()
            has_bpe = (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file()
            if not has_fast and has_bpe:
                return gpt2_bpe_tokenizer(folder)
            where = str(folder)
        try:
            tokenizer = AutoTokenizer.from_pretrained(where)
        except ValueError as exc:
            raise ValueError(f"tokenizer {where} could not be loaded ({str(exc).splitlines()[0]}); point tokenizer at a "
                             f"folder with tokenizer.json, or with GPT-2's vocab.json and merges.txt.") from exc
        return check_tokenizer(tokenizer, where)
