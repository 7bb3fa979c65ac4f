"""Issue 14, item 13: the stage cache keys numbers by value (epsilon=3 and 3.0 alike) and does not collect
empty lock files or stale temporary folders; long loops draw a tqdm bar only on a terminal."""
from __future__ import annotations

import io
import logging
import os

from filelock import FileLock

from pipeline.cache import StageCache, config_key


def test_integral_floats_and_ints_give_the_same_key():
    assert config_key({"mechanism": {"epsilon": 3}}) == config_key({"mechanism": {"epsilon": 3.0}})
    assert config_key({"epsilon": [1, 2.0]}) == config_key({"epsilon": [1.0, 2]})
    assert config_key({"epsilon": 3}) != config_key({"epsilon": 3.5})
    assert config_key({"flag": True}) != config_key({"flag": 1})


def test_the_same_stage_at_epsilon_3_and_3_0_is_computed_once(tmp_path):
    cache = StageCache(tmp_path)
    calls = []

    def compute(directory):
        calls.append(directory)
        (directory / "x.txt").write_text("x")

    first = cache.get_or_compute("dpsgd_release", {"epsilon": 3, "seed": 0}, compute)
    second = cache.get_or_compute("dpsgd_release", {"epsilon": 3.0, "seed": 0.0}, compute)
    assert first == second and len(calls) == 1


def test_no_lock_file_stays_after_a_stage_or_a_failed_stage(tmp_path):
    cache = StageCache(tmp_path)
    cache.get_or_compute("s", {"a": 1}, lambda d: (d / "x").write_text("1"))

    def fail(directory):
        raise KeyboardInterrupt

    try:
        cache.get_or_compute("s", {"a": 2}, fail)
    except KeyboardInterrupt:
        pass
    assert not list((tmp_path / "s").glob("*.lock"))
    assert not list((tmp_path / "s").glob(".tmp-*"))


def test_what_killed_jobs_left_is_swept_but_a_held_lock_is_kept(tmp_path):
    stage = tmp_path / "s"
    stage.mkdir()
    dead, live = "a" * 64, "b" * 64
    (stage / f".tmp-{dead}-x1").mkdir()           # a killed job's half-written artifact
    (stage / f"{dead}.lock").touch()               # and its lock file
    (stage / f"{'c' * 64}.lock").touch()           # an empty lock of a finished stage (older versions)
    (stage / f".tmp-{live}-x2").mkdir()            # a job computing right now holds its lock
    held = FileLock(str(stage / f"{live}.lock"))
    held.acquire()
    try:
        StageCache(tmp_path).get_or_compute("s", {"k": 1}, lambda d: (d / "x").write_text("1"))
        names = sorted(p.name for p in stage.iterdir())
        assert f".tmp-{live}-x2" in names and f"{live}.lock" in names
        assert f".tmp-{dead}-x1" not in names and f"{dead}.lock" not in names and f"{'c' * 64}.lock" not in names
    finally:
        held.release()
        os.unlink(stage / f"{live}.lock")


def test_progress_draws_no_bar_without_a_terminal(caplog, monkeypatch):
    """Redirected to a file (a job's log, a SLURM .err), a loop logs lines instead of tqdm's redraws."""
    from stages._progress import progress

    stderr = io.StringIO()  # not a terminal
    monkeypatch.setattr("sys.stderr", stderr)
    with caplog.at_level(logging.INFO):
        assert list(progress(range(3), "scoring", "context")) == [0, 1, 2]
    assert stderr.getvalue() == ""
    assert any("scoring: 3/3 contexts" in r.getMessage() for r in caplog.records)
