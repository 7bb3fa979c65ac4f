"""Progress of a long loop (the game's trials, a box's scoring): a tqdm bar when stderr is a terminal, else log lines
(at the start, after the first step with the loop's time estimate, every PROGRESS_INTERVAL_S seconds and at the end),
so a job's log file gets readable lines, not bar redraws. The one progress display of the project."""
from __future__ import annotations

import logging
import sys
import time
from typing import Iterable, Iterator, TypeVar

__all__ = ["Progress", "progress", "PROGRESS_INTERVAL_S"]

T = TypeVar("T")
PROGRESS_INTERVAL_S = 10.0


class Progress:
    """Progress of a loop of `total` steps (None: unknown): call step() after each, close() at the end.

    The first and the last step are always logged, so a job's log says what it did; the first step's time gives
    the loop's estimate.
    """

    def __init__(self, total: int | None, what: str, unit: str = "trial", logger: logging.Logger | None = None) -> None:
        self.total = None if total is None else int(total)
        self.what, self.unit = what, unit
        self.log = logger or logging.getLogger("stages")
        self.done = 0
        self.start = self.last = time.monotonic()
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, desc=what, unit=unit, leave=False, file=sys.stderr)
        self.log.info("%s: starting %s %ss", what, self.total if self.total is not None else "the", self.unit)

    def step(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        now = time.monotonic()
        if self.done == 1 and self.total is not None and self.total > 1:  # the loop's estimate, from its first step
            self.log.info("%s: the first %s took %.2g s; about %.3g s for all %d", self.what, self.unit,
                          now - self.start, (now - self.start) * self.total, self.total)
        if self.done == self.total or now - self.last >= PROGRESS_INTERVAL_S:
            self.last = now
            if self.total is None:
                self.log.info("%s: %d %ss in %.1f s", self.what, self.done, self.unit, now - self.start)
            else:
                self.log.info("%s: %d/%d %ss (%.0f%%) in %.1f s", self.what, self.done, self.total, self.unit,
                              100.0 * self.done / max(self.total, 1), now - self.start)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def progress(items: Iterable[T], what: str, unit: str, total: int | None = None,
             logger: logging.Logger | None = None) -> Iterator[T]:
    """Yield items, showing their progress (``Progress``)."""
    total = total if total is not None else (len(items) if hasattr(items, "__len__") else None)  # type: ignore[arg-type]
    shown = Progress(total, what, unit, logger)
    try:
        for item in items:
            yield item
            shown.step()
    finally:
        shown.close()
