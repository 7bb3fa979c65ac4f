"""Mechanisms M that release something about the targets X; each knows its privacy profile."""
from __future__ import annotations

import numpy as np

__all__ = ["check_records"]


def check_records(X, domain_size: int, name: str = "X") -> np.ndarray:
    """Return X as an int array (n,) of candidate indices in 0..m-1, raising a ValueError otherwise."""
    x = np.asarray(X)
    if x.ndim != 1 or (x.size and (not np.issubdtype(x.dtype, np.integer) or x.min() < 0 or x.max() >= domain_size)):
        raise ValueError(
            f"{name} must be a 1-d integer array of candidate indices in 0..{domain_size - 1}, "
            f"got shape {x.shape} and dtype {x.dtype}; check that the mechanism's domain_size matches the prior's."
        )
    return x.astype(np.int64)
