"""Read an offline W&B run back into plain Python (test helper: the tests check what a job logged).

Moved here from pipeline.tracking, which only the tests used (issue 15: test-only code leaves the package).
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any, Iterator

# W&B's LevelDB-style log: 32 KiB blocks, 7-byte record headers (crc32, length, type).
_BLOCK = 32768
_HEADER = 7


def _records(path: Path) -> Iterator[bytes]:
    buf = path.read_bytes()
    if buf[:4] != b":W&B":
        raise ValueError(f"{path} is not a W&B run file (it must start with ':W&B').")
    pos, pending = _HEADER, b""
    while pos + _HEADER <= len(buf):
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER:  # block trailer padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", buf[pos:pos + _HEADER])
        if kind == 0 and length == 0:  # zero padding to the end of the block
            pos += left
            continue
        data = buf[pos + _HEADER:pos + _HEADER + length]
        pos += _HEADER + length
        if kind == 1:
            yield data
        elif kind == 2:
            pending = data
        elif kind == 3:
            pending += data
        elif kind == 4:
            yield pending + data
            pending = b""


def read_offline_run(run_dir: str | os.PathLike) -> dict[str, Any]:
    """Read an offline W&B run directory (wandb/offline-run-*) back into plain Python.

    Returns {"config", "summary", "history" (list of rows), "group", "tags", "files", "exit_code"};
    values are decoded from the JSON that W&B stores.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    run_dir = Path(run_dir)
    files = sorted(run_dir.glob("run-*.wandb"))
    if not files:
        raise FileNotFoundError(f"no run-*.wandb file in {run_dir}; is it a W&B run directory?")

    def key(item) -> str:
        return item.key or "/".join(item.nested_key)

    out: dict[str, Any] = {"config": {}, "summary": {}, "history": [], "group": None, "tags": [], "files": [],
                           "exit_code": None}
    for data in _records(files[0]):
        record = pb.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["group"] = record.run.run_group
            out["tags"] = list(record.run.tags)
            out["config"].update({i.key: json.loads(i.value_json) for i in record.run.config.update})
        elif kind == "config":
            out["config"].update({i.key: json.loads(i.value_json) for i in record.config.update})
        elif kind == "summary":
            out["summary"].update({key(i): json.loads(i.value_json) for i in record.summary.update})
        elif kind == "history":
            out["history"].append({key(i): json.loads(i.value_json) for i in record.history.item})
        elif kind == "files":
            out["files"].extend(f.path for f in record.files.files)
        elif kind == "exit":
            out["exit_code"] = record.exit.exit_code
    out["config"].pop("_wandb", None)
    return out
