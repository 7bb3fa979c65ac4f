"""Bound box `one_run`: the worst-case-prior bound, one count for all releases (Appendix C, thm:eps_bound_f_comp).

The flipping probabilities use z*, the a-priori Bayes-optimal guesses (as many per target as the
attack makes), so the bound holds over the draw of the data and the release without looking at it.
This module also holds the argument handling that every bound box shares.
"""
from __future__ import annotations

import numpy as np

from stages.bound import _validate
from stages.bound.theorems import count_bound

__all__ = ["OneRunBound", "guesses_per_trial", "as_confidences", "count_dict"]


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


class OneRunBound:
    """count_bound(profile, p*, confidence) with p*_i the prior success of the a-priori guess z*."""

    name = "one_run"

    def compute(self, profile, prior, metric, guesses, confidences) -> dict[float, int]:
        """{confidence: c}: with probability >= confidence at most c targets are attacked (guesses give only k)."""
        k = guesses_per_trial(guesses).shape[2]
        levels = as_confidences(confidences)
        p_star = prior.success_probability(prior.a_priori_guess(metric, k), metric)
        return count_dict(levels, count_bound(profile, p_star, levels))

    def params(self) -> dict:
        return {"bound": self.name}
