"""The Laplace mechanism on the one-hot canaries, released `releases` times: a mechanism whose privacy profile comes
from an accountant (dp_accounting, through `stages.bound.from_dp_event`) rather than from the project's own classes.

Target i with secret j contributes the unit vector e_{i m + j} in R^{n m}; each of the R releases is
a_r = sum_i e_{i m + X_i} + Lap(b)^{n m}, independently. Replacing one target's record moves the sum by
e_{i m + j} - e_{i m + j'}, of L1 norm 2, so one release is (2 / b)-DP and R of them are (2 R / b)-DP under
replace-one. The profile is dp_accounting's own accounting of `SelfComposedDpEvent(LaplaceDpEvent(b), R)` with the
replace-one relation (Laplace noise at twice its add/remove sensitivity), the same pure epsilon: the game and every
bound read it as any other profile, so this box is the recipe for a game under an accountant's profile.
"""
from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from stages.bound import _validate
from stages.mechanism import check_records, judge_privacy, privacy_record

__all__ = ["LaplaceMechanism"]

#: L1 distance between two neighbouring sums (replace one target's one-hot vector by another).
SENSITIVITY = 2.0


class LaplaceMechanism:
    """R releases of the one-hot canary sum with Laplace(`scale`) noise per coordinate; give `scale`, or `epsilon`
    (the total over the R releases: scale = 2 R / epsilon). epsilon = inf (or scale = 0) adds no noise: not private."""

    name = "laplace"
    needs_prior = ("records",)  # stages.protocols: one candidate value per target

    def __init__(self, epsilon: float | None = 1.0, scale: float | None = None, releases: int = 1,
                 domain_size: int = 10) -> None:
        self.domain_size = _validate.integer("domain_size", domain_size, minimum=1)
        self.releases = _validate.integer("releases", releases, minimum=1)
        if scale is not None:
            if epsilon is not None:
                raise ValueError(f"give either scale or epsilon, got scale={scale} and epsilon={epsilon}; set one of "
                                 "them to null.")
            self.scale = _validate.positive("scale", scale, allow_zero=True)
            self.epsilon = math.inf if self.scale == 0.0 else SENSITIVITY * self.releases / self.scale
        elif epsilon is not None:
            self.epsilon = _validate.positive("epsilon", epsilon, allow_inf=True)
            self.scale = 0.0 if math.isinf(self.epsilon) else SENSITIVITY * self.releases / self.epsilon
        else:
            raise ValueError("epsilon must be given (or scale), got epsilon=None and scale=None.")

    def dp_event(self):
        """The dp_accounting event of the R releases (sensitivity 1 under add/remove, as dp_accounting counts)."""
        import dp_accounting

        return dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(self.scale), self.releases)

    @cached_property
    def _judged(self):
        """The accountant's profile and why it is not private (stages.mechanism.judge_privacy, the one rule); built
        once, so every reader of ``profile`` shares one accountant (and its PLD, computed when first evaluated)."""
        if self.scale == 0.0:
            return judge_privacy(None, no_profile="epsilon = inf: the one-hot sums go out without noise")
        from stages.bound import from_dp_event

        return judge_privacy(from_dp_event(self.dp_event(), neighboring="replace_one"))

    @property
    def profile(self):
        """dp_accounting's replace-one profile of the R releases (eps-DP at 2 R / scale); None without noise."""
        return self._judged[0]

    def privacy(self) -> dict:
        """{"private": True, "epsilon": ..., "accountant": ...} or {"private": False, "reason": ...}."""
        return privacy_record(self._judged[1], epsilon=self.epsilon, scale=self.scale, releases=self.releases,
                              accountant="dp_accounting PLD, SelfComposedDpEvent(LaplaceDpEvent), replace-one")

    def release(self, X, rng: np.random.Generator) -> np.ndarray:
        """The R noisy sums, an array (R, n m)."""
        x = check_records(X, self.domain_size)
        n, m = x.shape[0], self.domain_size
        a = rng.laplace(0.0, self.scale, size=(self.releases, n * m)) if self.scale > 0 else np.zeros((self.releases, n * m))
        a[:, np.arange(n) * m + x] += 1.0
        return a

    def log_likelihood(self, a) -> np.ndarray:
        """log Pr[a | X_i = j] up to a term constant in j, array (n, m): sum_r (|a_r,ij| - |a_r,ij - 1|) / scale.

        Each release's coordinates are independent Laplace given X; candidate j of target i moves only
        coordinate (i, j), from |a| to |a - 1| in the exponent, so the rest of the density cancels across j."""
        arr = np.asarray(a, dtype=float)
        if arr.ndim != 2 or arr.shape[0] != self.releases or arr.shape[1] % self.domain_size:
            raise ValueError(f"a must be the releases, an array ({self.releases}, n_targets * {self.domain_size}), "
                             f"got shape {arr.shape}.")
        if self.scale == 0.0:  # no noise: the one-hot itself, every other candidate impossible
            return np.where(arr[0].reshape(-1, self.domain_size) == 1.0, 0.0, -np.inf)
        gain = (np.abs(arr) - np.abs(arr - 1.0)).sum(axis=0) / self.scale
        return gain.reshape(-1, self.domain_size)

    def params(self) -> dict:
        return {"mechanism": self.name, "epsilon": self.epsilon, "scale": self.scale, "releases": self.releases,
                "domain_size": self.domain_size}
