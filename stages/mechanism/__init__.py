"""Mechanisms M that release something about the targets X; each knows its privacy profile."""
from __future__ import annotations

import numpy as np

__all__ = ["check_records", "gaussian_mu", "MAX_GAUSSIAN_EPSILON"]

# The largest epsilon Gaussian noise is calibrated to (mu = 1.4e50 there; the solver overflows from ~1e150).
MAX_GAUSSIAN_EPSILON = 1e100


def gaussian_mu(epsilon: float, delta: float, name: str = "epsilon") -> float:
    """The smallest mu whose mu-GDP profile is (epsilon, delta)-DP, or one sentence naming `name` when the
    calibration cannot be done: epsilon above MAX_GAUSSIAN_EPSILON (the solver overflows from about 1e150)."""
    from stages.bound.profiles import GaussianDP

    if np.isfinite(epsilon) and epsilon > MAX_GAUSSIAN_EPSILON:
        mu = float("nan")
    else:
        mu = None
    try:
        if mu is None:
            mu = float(GaussianDP.from_epsilon_delta(epsilon, delta).mu)
    except (ValueError, ArithmeticError, RuntimeError) as exc:
        if str(exc).startswith(("eps", "delta")):  # the profile refused the value itself
            raise
        mu = float("nan")
    if not np.isfinite(mu) or mu <= 0:
        raise ValueError(f"{name} must be at most {MAX_GAUSSIAN_EPSILON:g} to calibrate Gaussian noise to (epsilon, delta) = "
                         f"({epsilon:g}, {delta:g}), got {epsilon:g} (the calibration overflows); give a smaller "
                         f"{name}, or the noise directly (mu).")
    return mu


def check_records(X, domain_size: int, name: str = "X") -> np.ndarray:
    """Return X as an int array (n,) of candidate indices in 0..m-1, raising a ValueError otherwise."""
    x = np.asarray(X)
    if x.ndim != 1 or (x.size and (not np.issubdtype(x.dtype, np.integer) or x.min() < 0 or x.max() >= domain_size)):
        raise ValueError(
            f"{name} must be a 1-d integer array of candidate indices in 0..{domain_size - 1}, "
            f"got shape {x.shape} and dtype {x.dtype}; check that the mechanism's domain_size matches the prior's."
        )
    return x.astype(np.int64)
