"""The stage cache: content-addressed keys, reuse without recomputation, atomicity under kill, one computation under concurrency."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import pipeline.game
from pipeline.cache import StageCache, canonical_json, config_key, load_arrays, save_arrays
from pipeline.job import run_game


def test_key_is_the_hash_of_the_canonical_config():
    a = {"prior": {"n_targets": 10, "domain_size": 5}, "seed": 1, "eps": [1.0, float("inf")]}
    b = {"seed": 1, "eps": [1.0, float("inf")], "prior": {"domain_size": 5, "n_targets": 10}}
    assert canonical_json(a) == canonical_json(b)
    assert config_key(a) == config_key(b)
    assert config_key(a) != config_key({**a, "seed": 2})
    assert len(config_key(a)) == 64


def test_artifact_is_computed_once_and_reused(tmp_path):
    cache = StageCache(tmp_path / "cache")
    calls = []

    def compute(directory: Path) -> None:
        calls.append(directory)
        save_arrays(directory, x=np.arange(3))

    first = cache.get_or_compute("demo", {"a": 1}, compute)
    second = cache.get_or_compute("demo", {"a": 1}, compute)
    assert first == second == tmp_path / "cache" / "demo" / config_key({"a": 1})
    assert len(calls) == 1
    assert load_arrays(first)["x"].tolist() == [0, 1, 2]
    assert json.loads((first / "config.json").read_text()) == {"a": 1}
    assert cache.computed == [("demo", first.name)] and cache.reused == [("demo", first.name)]


def test_failed_compute_leaves_nothing(tmp_path):
    cache = StageCache(tmp_path / "cache")

    def compute(directory: Path) -> None:
        (directory / "half.npy").write_bytes(b"partial")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        cache.get_or_compute("demo", {"a": 1}, compute)
    assert not cache.exists("demo", {"a": 1})
    assert [p.name for p in (tmp_path / "cache" / "demo").iterdir() if not p.name.endswith(".lock")] == []


def test_second_identical_run_replays_no_trial(compose_config, tmp_path, monkeypatch):
    """Counting calls of the trial player: the second identical job reads the cached trials."""
    calls = []
    real = pipeline.game.play_trials

    def counting(*args, **kwargs):
        calls.append(args[1:])
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline.game, "play_trials", counting)
    small = ("prior.n_targets=20", "trials=8")
    cfg = compose_config(*small)
    cache = StageCache(cfg.cache_dir)
    first = run_game(cfg, tmp_path / "job1", cache=cache)
    second = run_game(compose_config(*small), tmp_path / "job2", cache=StageCache(cfg.cache_dir))
    assert len(calls) == 1
    assert first["stages"]["trials"]["reused"] is False and second["stages"]["trials"]["reused"] is True
    assert first["attack_successes"] == second["attack_successes"] and first["bound"] == second["bound"]
    # A different bound or confidence reuses the same trials; a different epsilon plays new ones.
    run_game(compose_config(*small, "bound=expected", "confidences=[0.9]"), tmp_path / "job3", cache=cache)
    assert len(calls) == 1
    run_game(compose_config(*small, "mechanism.epsilon=3"), tmp_path / "job4", cache=cache)
    assert len(calls) == 2


_KILLED_STAGE = textwrap.dedent("""
    import sys, time
    from pipeline.cache import StageCache

    def compute(directory):
        (directory / "first_half.txt").write_text("written")
        print("inside", flush=True)
        time.sleep(120)
        (directory / "second_half.txt").write_text("never written")

    StageCache(sys.argv[1]).get_or_compute("slow", {"a": 1}, compute)
""")


@pytest.mark.slow
def test_job_killed_inside_a_stage_leaves_no_artifact_and_the_next_job_resumes(tmp_path):
    root = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_STAGE, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "inside"
    finally:
        proc.kill()  # SIGKILL: no cleanup handler runs
        proc.wait(timeout=30)
    cache = StageCache(root)
    assert not cache.exists("slow", {"a": 1})
    assert list((root / "slow").glob(".tmp-*")), "the killed job's work lies only in a temporary folder"

    def compute(directory: Path) -> None:
        (directory / "first_half.txt").write_text("written")
        (directory / "second_half.txt").write_text("written")

    path = cache.get_or_compute("slow", {"a": 1}, compute)
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "first_half.txt", "second_half.txt"]
    assert not list((root / "slow").glob(".tmp-*")), "the stale temporary folder is cleaned up"


def _compute_in_worker(args: tuple[str, str]) -> str:
    root, log = args

    def compute(directory: Path) -> None:
        with open(log, "a") as f:
            f.write("computed\n")
        time.sleep(1.0)  # long enough for the other workers to arrive and wait on the lock
        (directory / "value.txt").write_text("42")

    return str(StageCache(root).get_or_compute("shared", {"a": 1}, compute))


def test_parallel_jobs_compute_a_shared_stage_once(tmp_path):
    root, log = str(tmp_path / "cache"), str(tmp_path / "log.txt")
    with ProcessPoolExecutor(max_workers=3) as pool:
        paths = list(pool.map(_compute_in_worker, [(root, log)] * 3))
    assert len(set(paths)) == 1
    assert Path(log).read_text().count("computed") == 1
    assert (Path(paths[0]) / "value.txt").read_text() == "42"


def test_file_fingerprint_follows_the_contents(tmp_path):
    from pipeline.cache import file_fingerprint

    path = tmp_path / "counts.csv"
    path.write_text("count\n10\n5\n")
    first = file_fingerprint(path)
    assert first["size"] == path.stat().st_size and len(first["sha256"]) == 64
    assert file_fingerprint(path) == first
    # Same size, and the old modification time put back: the content still decides.
    stat = path.stat()
    path.write_text("count\n10\n6\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file_fingerprint(path)["sha256"] != first["sha256"]


def _write_counts(path, counts) -> None:
    path.write_text("count\n" + "".join(f"{c}\n" for c in counts))


@pytest.mark.slow
def test_edited_data_file_plays_the_trials_again(compose_config, tmp_path):
    """Issue: editing prior.counts_file reused the old trials under the new prior's bound."""
    data = tmp_path / "data"
    data.mkdir()
    counts = data / "my.csv"
    _write_counts(counts, [4000, 900, 300, 120, 60, 30, 15, 8, 4, 2])  # steep: a large exponent
    game = ("prior=zipf", "prior.counts_file=my.csv", f"data_dir={data}", "prior.n_targets=30", "trials=12",
            "mechanism.epsilon=2")
    cache = StageCache(tmp_path / "cache")
    first = run_game(compose_config(*game), tmp_path / "job1", cache=cache)
    again = run_game(compose_config(*game), tmp_path / "job2", cache=cache)
    assert again["stages"]["trials"]["reused"] is True  # unchanged data: the trials are reused

    _write_counts(counts, [100, 99, 98, 97, 96, 95, 94, 93, 92, 91])  # flat: an exponent near 0
    edited = run_game(compose_config(*game), tmp_path / "job3", cache=cache)
    assert edited["stages"]["trials"]["reused"] is False
    assert edited["stages"]["trials"]["key"] != first["stages"]["trials"]["key"]
    # The fitted exponent is recorded, and the trials are those a fresh cache plays.
    assert first["params"]["prior"]["exponent"] > 1.0 > edited["params"]["prior"]["exponent"]
    fresh = run_game(compose_config(*game), tmp_path / "job4", cache=StageCache(tmp_path / "fresh"))
    assert edited["attack_successes"] == fresh["attack_successes"] and edited["bound"] == fresh["bound"]
    assert first["attack_successes"] != fresh["attack_successes"]
    assert edited["data_files"]["prior"][0]["path"] == str(counts.resolve())


def test_moving_the_data_folder_keeps_the_trials(compose_config, tmp_path):
    """The key holds what the files contain, not where they lie."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        _write_counts(tmp_path / name / "my.csv", [50, 20, 10, 5])
    cache = StageCache(tmp_path / "cache")
    game = ("prior=zipf", "prior.counts_file=my.csv", "prior.n_targets=10", "trials=4")
    run_game(compose_config(*game, f"data_dir={tmp_path / 'a'}"), tmp_path / "job1", cache=cache)
    moved = run_game(compose_config(*game, f"data_dir={tmp_path / 'b'}"), tmp_path / "job2", cache=cache)
    assert moved["stages"]["trials"]["reused"] is True
