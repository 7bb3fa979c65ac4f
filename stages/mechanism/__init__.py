"""Mechanisms M that release something about the targets X; each knows its privacy profile."""
from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

__all__ = ["check_records", "gaussian_mu", "MAX_GAUSSIAN_EPSILON", "MAX_PRIVATE_EPSILON", "DEFAULT_DELTA",
           "judge_privacy", "privacy_record"]

# The largest epsilon Gaussian noise is calibrated to (mu = 1.4e50 there; the solver overflows from ~1e150).
MAX_GAUSSIAN_EPSILON = 1e100

#: The largest epsilon that is still a privacy guarantee (judge_privacy, the one rule): ln of the largest double,
#: about 709.78. e^epsilon overflows above it, and an (epsilon, delta)-DP guarantee that weak allows a release
#: that shows every secret unchanged except with probability below e^-epsilon < 1e-308: the bounds it gives
#: are the trivial count (every target), so it is no guarantee at all.
MAX_PRIVATE_EPSILON = math.log(sys.float_info.max)

#: The delta at which a profile without a delta of its own (the Gaussian mechanism given by mu) is judged and
#: its epsilon reported (pipeline.game.privacy_of).
DEFAULT_DELTA = 1e-5


def judge_privacy(profile: Any, delta: float | None = None, *, stated_epsilon: float | None = None,
                  no_profile: str = "the mechanism has no privacy profile") -> tuple[Any, str | None]:
    """The one rule for "is this mechanism private", used by every mechanism's `profile` (docs/pages/running.md,
    "When is a game private"): (profile, None) when it is a privacy guarantee, (None, why not) when it is not.

    A mechanism is private when it has a privacy profile and the profile's epsilon is finite and at most
    MAX_PRIVATE_EPSILON (ln of the largest double, about 709.78). That epsilon is, in this order: the epsilon
    the mechanism's noise was calibrated to (`stated_epsilon`, at the mechanism's own delta), the epsilon of
    an eps-DP profile, or the profile's epsilon(delta) at the run's delta (`delta`, DEFAULT_DELTA without
    one). Anything else -- no profile (no noise: epsilon = inf, DP-SGD with clipping=none; `no_profile`
    says why), an infinite epsilon, or one so large that e^epsilon overflows -- is NOT PRIVATE: the
    mechanism's profile is None, the game computes no bound and every output says NOT PRIVATE and why.
    """
    if profile is None:
        return None, no_profile
    at = ""
    if stated_epsilon is not None:
        epsilon = float(stated_epsilon)
        at = f" at delta = {delta:g}" if delta else ""
    else:
        pure = profile.pure_epsilon()
        if pure is not None:
            epsilon = float(pure)
        else:
            d = DEFAULT_DELTA if delta is None else float(delta)
            at = f" at delta = {d:g}"
            try:
                epsilon = float(profile.epsilon(d))
            except (ValueError, ArithmeticError, MemoryError):  # the accountant overflows: epsilon is that large
                epsilon = math.inf
    if math.isnan(epsilon) or epsilon > MAX_PRIVATE_EPSILON:
        size = "infinite" if math.isinf(epsilon) or math.isnan(epsilon) else f"{epsilon:.4g}"
        return None, (f"epsilon{at} is {size}, above {MAX_PRIVATE_EPSILON:.2f} where e^epsilon overflows: a "
                      f"guarantee that weak bounds nothing")
    return profile, None


def privacy_record(reason: str | None, **private: Any) -> dict:
    """A mechanism's privacy() record under judge_privacy: {"private": False, "reason": ...} or
    {"private": True, **private}."""
    if reason is not None:
        return {"private": False, "reason": reason}
    return {"private": True, **private}


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
    if (not np.isfinite(mu) or mu <= 0) and epsilon <= MAX_GAUSSIAN_EPSILON:  # a small epsilon with a small delta
        raise ValueError(f"{name} = {epsilon:g} with delta = {delta:g} cannot be calibrated to Gaussian noise (the "
                         f"calibration underflows); give a larger {name} or delta, or the noise directly (mu).")
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
