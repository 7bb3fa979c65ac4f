"""The idealized Gaussian mechanism: the noisy sum of orthogonal one-hot canary vectors (Appendix D).

Target i with secret j contributes the unit vector e_{i m + j} in R^{n m}; the release is
a = sum_i e_{i m + X_i} + N(0, sigma^2 I). Replacing one target's record moves the sum by
e_{i m + j} - e_{i m + j'}, of L2 norm sqrt(2), so the release is mu-GDP with sigma = sqrt(2) / mu.
"""
from __future__ import annotations

import math

import numpy as np

from stages.bound import _validate
from stages.bound.profiles import GaussianDP
from stages.mechanism import check_records, gaussian_mu, judge_privacy, privacy_record

__all__ = ["GaussianMechanism"]

SENSITIVITY = math.sqrt(2.0)


class GaussianMechanism:
    """Noisy sum of one-hot canaries; noise set by `mu` (sigma = sqrt(2) / mu) or by (`epsilon`, `delta`).

    Give either mu, or epsilon and delta: then mu is the smallest one whose Gaussian-DP profile
    satisfies (epsilon, delta)-DP (GaussianDP.from_epsilon_delta). epsilon = inf (or mu = inf) adds no
    noise; that, or an epsilon above MAX_PRIVATE_EPSILON, is not private: `profile` is None
    (stages.mechanism.judge_privacy, the one rule for every mechanism).
    """

    name = "gaussian"
    needs_prior = ("records",)  # stages.protocols: one candidate value per target

    def __init__(
        self,
        mu: float | None = None,
        epsilon: float | None = None,
        delta: float | None = 1e-5,
        domain_size: int = 10,
    ) -> None:
        self.domain_size = _validate.integer("domain_size", domain_size, minimum=1)
        if mu is not None:
            if epsilon is not None:
                raise ValueError(f"give either mu or epsilon (with delta), got mu={mu} and epsilon={epsilon}; set one of them to null.")
            self.mu = _validate.positive("mu", mu, allow_inf=True)
            self.epsilon, self.delta = None, None
        elif epsilon is not None:
            if delta is None:
                raise ValueError("delta must be a number in (0, 1) when the noise is calibrated from epsilon, got None.")
            self.epsilon = _validate.positive("epsilon", epsilon, allow_inf=True)
            self.delta = _validate.delta("delta", delta)
            if self.delta == 0.0:
                raise ValueError("delta must be in (0, 1) for the Gaussian mechanism, got 0.0; no finite noise gives delta = 0.")
            # epsilon = inf: no noise (the sum itself goes out), not private
            self.mu = math.inf if math.isinf(self.epsilon) else gaussian_mu(self.epsilon, self.delta)
        else:
            raise ValueError("mu must be given (or epsilon and delta), got mu=None and epsilon=None.")
        self.sigma = SENSITIVITY / self.mu

    def _judged(self) -> tuple[GaussianDP | None, str | None]:
        """The profile and why it is not private (stages.mechanism.judge_privacy, the one rule)."""
        noiseless = math.isinf(self.mu)
        return judge_privacy(None if noiseless else GaussianDP(self.mu), self.delta, stated_epsilon=self.epsilon,
                             no_profile=f"{'epsilon' if self.epsilon is not None else 'mu'} = inf: the one-hot sum "
                                        f"goes out without noise")

    @property
    def profile(self) -> GaussianDP | None:
        """GaussianDP(mu); None when that is no guarantee (mu or epsilon infinite, epsilon above MAX_PRIVATE_EPSILON)."""
        return self._judged()[0]

    def privacy(self) -> dict:
        """{"private": True, "mu": ...} or {"private": False, "reason": ...} (stages.mechanism.judge_privacy)."""
        return privacy_record(self._judged()[1], mu=self.mu)

    def release(self, X, rng: np.random.Generator) -> np.ndarray:
        """a = sum_i e_{i m + X_i} + N(0, sigma^2 I): a float vector of length n m."""
        x = check_records(X, self.domain_size)
        n, m = x.shape[0], self.domain_size
        a = self.sigma * rng.standard_normal(n * m)
        a[np.arange(n) * m + x] += 1.0
        return a

    def log_likelihood(self, a) -> np.ndarray:
        """log Pr[a | X_i = j] up to a term constant in j: a_{i m + j} / sigma^2, array (n, m).

        Blocks of a that belong to different targets are independent given X, so target i's
        posterior depends on its own block only: ||a_i - e_j||^2 = ||a_i||^2 + 1 - 2 a_{ij}.
        """
        arr = np.asarray(a, dtype=float)
        if arr.ndim != 1 or arr.shape[0] % self.domain_size:
            raise ValueError(f"a must be a release vector of length n_targets * {self.domain_size}, got shape {arr.shape}.")
        if self.sigma == 0.0:  # no noise: a_i is the one-hot e_{X_i} itself, every other candidate impossible
            return np.where(arr.reshape(-1, self.domain_size) == 1.0, 0.0, -np.inf)
        return arr.reshape(-1, self.domain_size) / self.sigma**2

    def params(self) -> dict:
        return {
            "mechanism": self.name,
            "mu": self.mu,
            "sigma": self.sigma,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "domain_size": self.domain_size,
        }
