"""Progress of a long loop inside a box: a tqdm bar when stderr is a terminal, else log lines (at the start,
every PROGRESS_INTERVAL_S seconds and at the end), so a job's log file gets readable lines, not bar redraws."""
from __future__ import annotations

import logging
import sys
import time
from typing import Iterable, Iterator, TypeVar

__all__ = ["progress", "PROGRESS_INTERVAL_S"]

T = TypeVar("T")
PROGRESS_INTERVAL_S = 10.0


def progress(items: Iterable[T], what: str, unit: str, total: int | None = None,
             logger: logging.Logger | None = None) -> Iterator[T]:
    """Yield items, showing progress as a bar on a terminal and as log lines otherwise."""
    log = logger or logging.getLogger("stages")
    total = total if total is not None else (len(items) if hasattr(items, "__len__") else None)  # type: ignore[arg-type]
    if sys.stderr.isatty():
        from tqdm import tqdm

        yield from tqdm(items, desc=what, unit=unit, total=total, file=sys.stderr)
        return
    of = f"/{total}" if total is not None else ""
    log.info("%s: starting %s %ss", what, total if total is not None else "the", unit)
    start = last = time.monotonic()
    done = 0
    for item in items:
        yield item
        done += 1
        now = time.monotonic()
        if now - last >= PROGRESS_INTERVAL_S or done == total:
            last = now
            log.info("%s: %d%s %ss in %.1f s", what, done, of, unit, now - start)
