"""Playing an experiment's figure in process, as `python -m pipeline -m <overrides>` does with Hydra's basic
launcher: the sweeper's jobs for the combinations (pipeline.sweeper.sweep_jobs), each an ordinary game job
(pipeline.job.run_game, which adds the figure's rows), then the sweep's report (write_report)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import yaml


def figure_jobs(compose: Callable, *combinations: Sequence[str]) -> list[list[str]]:
    """The override lists of the jobs the sweeper launches for these combinations (duplicates once)."""
    from pipeline.sweeper import sweep_jobs

    return sweep_jobs(lambda overrides: compose(*overrides), [list(c) for c in combinations])


def play_figure(compose: Callable, root: Path, *combinations: Sequence[str], cache=None):
    """Run every job of the sweep under root/<n>/ (with its .hydra/overrides.yaml); returns (csv, figure, rows)."""
    from pipeline.experiments import write_report
    from pipeline.job import run_game

    root = Path(root)
    for number, job in enumerate(figure_jobs(compose, *combinations)):
        folder = root / str(number)
        (folder / ".hydra").mkdir(parents=True)
        (folder / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(list(job)))
        run_game(compose(*job), folder, cache=cache)
    return write_report(root)
