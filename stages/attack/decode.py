"""Guesses from a relaxed table (n records x d columns x values): per column, or the joint MAP of the target columns
under the prior's network given the known columns (the decode RAP and the Bayes-posterior attack share)."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

__all__ = ["DECODES", "decode_relaxed"]

DECODES = ("joint", "per_column")
#: Prior probabilities are floored here before the relaxed table is divided by them.
_PRIOR_FLOOR = 1e-8


def decode_relaxed(relaxed: np.ndarray, targets: Sequence[int], metric, mode: str = "joint", *, network=None,
                   known: Sequence[int] = (), known_values=None,
                   prior_marginals: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
    """Guesses z (n, len(targets)) from a relaxed table (n, d, max domain), by ``mode``.

    `joint` needs the prior's network (a `BayesNet`), the known columns and values and the per-column
    priors the attack started from (prior_marginals, every unknown column); a set-valued metric
    (`within`) or a missing network decodes per column.
    """
    targets = [int(t) for t in targets]
    domain = [int(m) for m in (network.domain if network is not None else [relaxed.shape[2]] * relaxed.shape[1])]
    if mode == "per_column" or network is None or not _exact(metric):
        return np.stack([np.asarray(metric.best_guess(relaxed[:, t, :domain[t]], 1))[:, 0] for t in targets],
                        axis=1).astype(np.int64)
    if prior_marginals is None:
        raise ValueError("decode=joint needs prior_marginals, the per-column priors the attack started from.")
    known = [int(k) for k in known]
    soft = {}
    for j, prior in prior_marginals.items():
        j = int(j)
        if j in known:
            continue
        q = np.asarray(relaxed[:, j, :domain[j]], dtype=float)
        ratio = np.maximum(q, 0.0) / np.maximum(np.asarray(prior, dtype=float), _PRIOR_FLOOR)
        soft[j] = ratio / np.maximum(ratio.max(axis=1, keepdims=True), 1e-300)  # per-record scale: no overflow
    z, _ = network.joint_map(known, np.asarray(known_values, dtype=np.int64).reshape(-1, len(known)), targets, soft)
    return z


def _exact(metric) -> bool:
    from stages.metric import Exact

    return isinstance(metric, Exact)
