"""The prior box: independent per-target distributions D_1..D_n over ordinal candidates 0..m-1."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from stages.bound import _validate

__all__ = ["Prior", "validate_probabilities", "data_path", "missing_data", "ORIGINALS", "SAMPLES_DIR",
           "default_data_dir", "resolve_data_dir", "DATA_ENV", "REPO_ROOT"]

DATA_ENV = "ADVBOUNDS_DATA"
REPO_ROOT = Path(__file__).resolve().parents[2]
_ROW_SUM_TOLERANCE = 1e-9


def validate_probabilities(probabilities, name: str = "probabilities") -> np.ndarray:
    """Return an (n, m) float array whose rows are distributions, raising a ValueError otherwise."""
    arr = np.asarray(probabilities, dtype=float)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be an array of shape (n_targets, domain_size), got shape {arr.shape}.")
    _validate.probability(name, arr)
    sums = arr.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > _ROW_SUM_TOLERANCE)
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"{name} row {i} must sum to 1 (within {_ROW_SUM_TOLERANCE:g}), got {float(sums[i])!r}; normalise each target's distribution."
        )
    return arr


def default_data_dir() -> Path:
    """The default data folder, the one definition every part of the project uses: $ADVBOUNDS_DATA if set,
    else ../shared/data next to the repository root (whatever the working directory).

    conf/config.yaml's `data_dir` (via the ${default_data_dir:} resolver), `python -m pipeline.data` and every
    box that reads data files resolve it here.
    """
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser().absolute() if env else (REPO_ROOT.parent / "shared" / "data")


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """data_dir as given (a config's `data_dir`), else default_data_dir()."""
    return Path(data_dir).expanduser() if data_dir not in (None, "") else default_data_dir()


#: Every data file or folder resolved in this process, in order (data_path and the folder readers add to it):
#: what a job read, so its metrics.json can list the files' hashes (pipeline.experiments.run_task).
RESOLVED_DATA: list[Path] = []


def note_data(path: str | os.PathLike) -> Path:
    """Record that a data file or folder was read (see RESOLVED_DATA) and return it."""
    path = Path(path)
    # every read is appended (a job lists what it read since it started: RESOLVED_DATA[start:], deduplicated)
    RESOLVED_DATA.append(path)
    return path


#: The small samples the repository carries (tests/data, same layout as a full data folder).
SAMPLES_DIR = REPO_ROOT / "tests" / "data"
#: Where the original of each data file comes from (by its path under data_dir; the first prefix that matches):
#: the source `python -m pipeline.data fetch <source>` downloads, and, where the fetched original has another
#: name than the sample (a stand-in), the box argument that reads the original instead.
ORIGINALS = (
    ("passwords/rockyou-top100k", "rockyou", None),  # the files `fetch rockyou` writes, not any passwords/ file
    ("acs/recon-synth/", "acs", None), ("acs/", "acs", "dataset=acs/recon-synth"),
    ("fire/recon-synth/", "fire", None), ("fire/", "fire", "dataset=fire/recon-synth"),
    ("enron/maildir", "enron", None), ("enron/", "enron", "enron=enron/maildir"),
    ("gpt2/", "gpt2", None), ("gpt2-tokenizer/", "gpt2", "tokenizer=gpt2"),
)
_KINDS = {"file": Path.is_file, "any": Path.exists}


def missing_data(relative: str | os.PathLike, data_dir: str | os.PathLike | None = None, *, what: str = "data file",
                 key_prefix: str = "") -> str:
    """The one sentence for a data file (or folder) that is not there: the file, the data_dir it was looked for
    in, and both fixes (`python -m pipeline.data fetch <source> --data-dir <data_dir>` for the original, or
    data_dir=<repository>/tests/data for the samples the repository carries), as far as each applies.

    key_prefix goes before a box argument the fix names (the pipeline passes "prior.", so: prior.dataset=...).
    """
    path = Path(relative).expanduser()
    if path.is_absolute():
        return f"{what} {path} does not exist; give the path of an existing one, or a path relative to data_dir."
    root = resolve_data_dir(data_dir).absolute()
    rel = path.as_posix()
    fixes = []
    original = next(((source, then) for prefix, source, then in ORIGINALS if rel.startswith(prefix)), None)
    if original is not None:
        source, then = original
        fixes.append(f"get the original with `python -m pipeline.data fetch {source} --data-dir {root}`"
                     + (f" and set {key_prefix}{then}" if then else ""))
    if root != SAMPLES_DIR.absolute() and (SAMPLES_DIR / path).exists():
        fixes.append(f"run on the small samples the repository carries with data_dir={SAMPLES_DIR.absolute()}")
    fixes = fixes or [f"set data_dir=<folder that holds {rel}> (or ${DATA_ENV})"]
    return (f"{what} {rel} does not exist in data_dir {root} (the config's data_dir, else ${DATA_ENV}, else "
            f"../shared/data beside the repository); {', or '.join(fixes)}.")


def data_path(relative: str | os.PathLike, data_dir: str | os.PathLike | None = None, *, what: str = "data file",
              kind: str = "file", key_prefix: str = "", record: bool = True) -> Path:
    """Resolve a data file (kind="file", or "any": a file or a folder): an absolute path as is, else under data_dir
    (default: default_data_dir()).

    The one check every box and the pipeline's pre-flight (pipeline.preflight.check_data) use: a missing file
    raises a FileNotFoundError whose message is missing_data's one sentence. The path is recorded in RESOLVED_DATA
    (unless record=False: a check before the box reads it).
    """
    path = Path(relative).expanduser()
    full = path if path.is_absolute() else resolve_data_dir(data_dir) / path
    if not _KINDS[kind](full):
        raise FileNotFoundError(missing_data(relative, data_dir, what=what, key_prefix=key_prefix))
    return note_data(full) if record else full


class Prior:
    """Independent priors D_i given as a matrix: probabilities[i, j] = Pr_{X_i ~ D_i}[X_i = j]."""

    name = "prior"
    #: What its records are (stages.protocols): one ordinal candidate per target.
    provides = "records"
    #: The law is the same in every trial (for_trial returns the prior itself).
    per_trial = False

    def __init__(self, probabilities) -> None:
        self.probabilities = validate_probabilities(probabilities)
        self._cdf = np.cumsum(self.probabilities, axis=1)

    @property
    def n_targets(self) -> int:
        return int(self.probabilities.shape[0])

    @property
    def domain_size(self) -> int:
        return int(self.probabilities.shape[1])

    def sample(self, rng: np.random.Generator, n: int | None = None) -> np.ndarray:
        """Draw X_i ~ D_i independently for every target: int array (n_targets,).

        n, if given, must equal n_targets (one record per target is what the attack game samples).
        """
        if n is not None and _validate.integer("n", n, minimum=1) != self.n_targets:
            raise ValueError(f"n must equal the prior's n_targets ({self.n_targets}), got {n}.")
        u = rng.random(self.n_targets)
        # Inverse CDF; the clip guards against a last cumulative sum that rounds below 1.
        x = (self._cdf < u[:, None]).sum(axis=1)
        return np.minimum(x, self.domain_size - 1).astype(np.int64)

    def for_trial(self, X) -> "Prior":
        """The law the attacker holds in a trial: a fixed prior is the same whatever the records are."""
        return self

    def score(self, X, z, metric) -> np.ndarray:
        """l_i(X_i, z_i) per target: 1 where the guesses z attack the record X_i."""
        return metric.score(X, z)

    def success_probability(self, z, metric) -> np.ndarray:
        """p_i = Pr_{X ~ D_i}[l_i(X, z_i) = 1]: the chance a fresh record from D_i counts as attacked by z."""
        return metric.success_probability(self.probabilities, z)

    def a_priori_guess(self, metric, k: int = 1) -> np.ndarray:
        """z*: the k guesses per target with the highest prior success, shape (n_targets, k)."""
        return metric.best_guess(self.probabilities, k)

    def params(self) -> dict:
        return {"prior": self.name, "n_targets": self.n_targets, "domain_size": self.domain_size}
