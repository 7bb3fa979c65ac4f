"""Content-addressed, atomic, locked stage artifacts under outputs/cache/<stage>/<key>/.

A stage's artifact is a directory named by the SHA-256 of the canonical JSON of the config that
determines it (the idea of dora's hashed experiment folders). It is written into a temporary sibling
directory and renamed into place only when complete, so a reader never sees half an artifact and a
job killed inside a stage leaves only a temporary directory, which the next job for that key deletes.
A file lock per key makes parallel sweep jobs compute a shared stage once: the first computes, the
others wait and then read. The lock file goes when its holder is done (every job that takes a lock
looks for the artifact first), and a stage's folder is swept of what killed jobs left (temporary
directories and lock files nobody holds) when the stage is first used, so neither accumulates.

Numbers are keyed by value, not by spelling: `epsilon=3` and `epsilon=3.0` give the same key
(canonical_json writes an integral float as an integer), so an identical stage is never recomputed.

A stage that reads data files must key on their contents, not only their names, or an edited file
would silently reuse artifacts of the old one: `file_fingerprint(path)` gives the size and SHA-256 of
a file (hashed once per process and path while its size and modification time stay the same), and
`data_fingerprints(boxes)` those of every file a box says it reads (its `data_files()`).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
from filelock import FileLock, Timeout

from pipeline import boundary
from pipeline.io import plain

__all__ = ["StageCache", "canonical_json", "config_key", "save_arrays", "load_arrays", "file_fingerprint",
           "data_fingerprints"]

_TMP_PREFIX = ".tmp-"
_CONFIG_FILE = "config.json"


def _same_numbers(value):
    """Integral floats as ints (3.0 -> 3), so equal numbers hash equally whatever their spelling."""
    if isinstance(value, dict):
        return {k: _same_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_same_numbers(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def canonical_json(config: Mapping) -> str:
    """The canonical JSON of a config: sorted keys, no whitespace, integral floats as integers, so equal
    configs hash equally (epsilon=3 and epsilon=3.0 alike)."""
    return json.dumps(_same_numbers(plain(config, strict=True)), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True)


def config_key(config: Mapping) -> str:
    """SHA-256 hex digest of canonical_json(config): the name of the stage's artifact directory."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()


# Memo of file hashes: resolved path -> ((size, mtime_ns, ctime_ns, inode), sha256 hex digest).
_HASHES: dict[str, tuple[tuple[int, int, int, int], str]] = {}
_HASH_CHUNK = 1 << 20


def file_fingerprint(path: str | os.PathLike) -> dict[str, object]:
    """{"path", "size", "sha256"} of a data file: what a stage key needs to notice an edited file.

    The SHA-256 is computed once per process and resolved path, and again whenever the file's size,
    modification time, change time or inode differ from when it was hashed (an edit or a replacement).
    """
    resolved = Path(path).expanduser().resolve()
    st = resolved.stat()
    signature = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    memo = _HASHES.get(str(resolved))
    if memo is None or memo[0] != signature:
        digest = hashlib.sha256()
        with open(resolved, "rb") as f:
            while chunk := f.read(_HASH_CHUNK):
                digest.update(chunk)
        memo = (signature, digest.hexdigest())
        _HASHES[str(resolved)] = memo
    return {"path": str(resolved), "size": st.st_size, "sha256": memo[1]}


def data_fingerprints(boxes: Mapping[str, object]) -> dict[str, list[dict[str, object]]]:
    """{group: [file_fingerprint(f) for f in box.data_files()]} for every box that reads data files."""
    out = {}
    for group, box in boxes.items():
        files = boundary.data_files(box)
        if files:
            out[group] = [file_fingerprint(f) for f in files]
    return out


def save_arrays(directory: str | os.PathLike, **arrays) -> None:
    """Save named numpy arrays as <directory>/<name>.npy."""
    for name, array in arrays.items():
        np.save(Path(directory) / f"{name}.npy", np.asarray(array), allow_pickle=False)


def load_arrays(directory: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load every <name>.npy in directory into a dict name -> array."""
    return {p.stem: np.load(p, allow_pickle=False) for p in sorted(Path(directory).glob("*.npy"))}


@dataclass
class StageCache:
    """The stage cache rooted at `root` (normally <repo>/outputs/cache).

    `computed` and `reused` list the (stage, key) pairs this object computed or found already
    done, so a job can report which stages it reused.
    """

    root: Path
    lock_timeout_s: float = -1  # -1: wait as long as the job holding the lock needs
    computed: list[tuple[str, str]] = field(default_factory=list)
    reused: list[tuple[str, str]] = field(default_factory=list)
    _swept: set = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root).expanduser().resolve()

    def path(self, stage: str, config: Mapping) -> Path:
        """Where the artifact of `stage` for `config` lives (it may not exist yet)."""
        if not stage or "/" in stage or stage.startswith("."):
            raise ValueError(f"stage must be a plain directory name, got {stage!r}.")
        return self.root / stage / config_key(config)

    def exists(self, stage: str, config: Mapping) -> bool:
        return self.path(stage, config).is_dir()

    def sweep(self, stage: str) -> list[Path]:
        """Remove what killed jobs left in a stage's folder: temporary directories of keys nobody is computing
        and lock files nobody holds. A key is being computed exactly while its lock is held, so each key's
        lock is tried without waiting; a held one is left alone. Returns what was removed."""
        folder = self.root / stage
        removed: list[Path] = []
        if not folder.is_dir():
            return removed
        keys = {p.name[len(_TMP_PREFIX):len(_TMP_PREFIX) + 64] for p in folder.glob(f"{_TMP_PREFIX}*") if p.is_dir()}
        keys |= {p.name[:-len(".lock")] for p in folder.glob("*.lock")}
        for key in sorted(keys):
            lock_path = folder / f"{key}.lock"
            lock = FileLock(str(lock_path), timeout=0)
            try:
                lock.acquire()
            except Timeout:
                continue  # a live job computes this key
            try:
                for stale in folder.glob(f"{_TMP_PREFIX}{key}-*"):
                    shutil.rmtree(stale, ignore_errors=True)
                    removed.append(stale)
                _unlink(lock_path)
                removed.append(lock_path)
            finally:
                lock.release()
        return removed

    def get_or_compute(self, stage: str, config: Mapping, compute: Callable[[Path], None]) -> Path:
        """Return the artifact directory of `stage` for `config`, computing it first if missing.

        compute(tmp_dir) writes the artifact's files into tmp_dir; when it returns, tmp_dir is
        renamed to the final path in one step. If it raises (or the process dies), nothing is
        left at the final path.
        """
        final = self.path(stage, config)
        key = final.name
        if final.is_dir():
            self.reused.append((stage, key))
            return final
        final.parent.mkdir(parents=True, exist_ok=True)
        if stage not in self._swept:  # once per stage and process: what killed jobs left behind
            self._swept.add(stage)
            self.sweep(stage)
        lock_path = final.parent / f"{key}.lock"
        with FileLock(str(lock_path), timeout=self.lock_timeout_s):
            try:
                if final.is_dir():  # another job computed it while we waited for the lock
                    self.reused.append((stage, key))
                    return final
                # Temporary directories of this key left by killed jobs: nobody else can be writing
                # them since we hold the key's lock.
                for stale in final.parent.glob(f"{_TMP_PREFIX}{key}-*"):
                    shutil.rmtree(stale, ignore_errors=True)
                tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{key}-", dir=final.parent))
                try:
                    (tmp / _CONFIG_FILE).write_text(canonical_json(config) + "\n")
                    compute(tmp)
                    try:
                        os.replace(tmp, final)  # atomic on one filesystem; final does not exist here
                    except OSError:
                        if not final.is_dir():
                            raise
                        # Another job finished the same artifact first (possible only if it took the lock
                        # through a lock file unlinked meanwhile): equal content, keep theirs.
                        shutil.rmtree(tmp, ignore_errors=True)
                        self.reused.append((stage, key))
                        return final
                except BaseException:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise
            finally:
                # Unlinked while still held: a job waiting on it opens the path afresh and finds the
                # artifact (or computes it), so no empty lock file stays behind.
                _unlink(lock_path)
        self.computed.append((stage, key))
        return final


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
