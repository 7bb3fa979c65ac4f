"""What every bound box shares: guesses per trial, confidence levels, and {confidence: count} results."""
from __future__ import annotations

import numpy as np

from stages.bound import _validate

__all__ = ["guesses_per_trial", "as_confidences", "count_dict"]


def guesses_per_trial(guesses) -> np.ndarray:
    """Guesses as an int array (R, n, k): one (n, k) array per trial; (n, k) or (n,) is one trial."""
    arr = np.asarray(guesses)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or 0 in arr.shape:
        raise ValueError(f"guesses must have shape (trials, n_targets, k) or (n_targets, k), got shape {np.shape(guesses)}.")
    return arr.astype(np.int64)


def as_confidences(confidences) -> np.ndarray:
    """Confidences as a 1-d float array, each in (0, 1)."""
    return np.atleast_1d(_validate.confidence("confidences", confidences)).reshape(-1)


def count_dict(confidences: np.ndarray, counts) -> dict[float, int]:
    """{confidence: count} with plain Python numbers (JSON-able)."""
    counts = np.broadcast_to(np.asarray(counts), confidences.shape)
    return {float(c): int(v) for c, v in zip(confidences, counts)}
