"""What the machine can still give this process (one answer, read by the pipeline's job-size check and by the
mechanisms that size their own batches)."""
from __future__ import annotations

import resource

__all__ = ["available_memory"]


def available_memory() -> int | None:
    """Bytes this process may still allocate on the CPU: the least of MemAvailable, the cgroup's limit left and
    RLIMIT_AS left (None when none of them is known)."""
    limits = []
    try:
        with open("/proc/meminfo") as f:
            limits += [int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")]
    except OSError:
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as f:
                raw = f.read().strip()
            if raw != "max" and int(raw) < 2**60:
                with open(usage_file) as f:
                    limits.append(max(0, int(raw) - int(f.read().strip())))
            break
        except (OSError, ValueError):
            continue
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1):
        try:
            with open("/proc/self/status") as f:
                used = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
        except (OSError, StopIteration):
            used = 0
        limits.append(max(0, int(soft) - used))
    return min(limits) if limits else None
