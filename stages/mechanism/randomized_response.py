"""k-ary randomized response applied to each target's secret independently (pure epsilon-DP)."""
from __future__ import annotations

import numpy as np

from stages.bound import _validate
from stages.bound.profiles import PureDP
from stages.mechanism import check_records, judge_privacy, privacy_record

__all__ = ["RandomizedResponse"]


class RandomizedResponse:
    """RR_eps on candidates 0..m-1: report X_i with probability e^eps / (e^eps + m - 1), else a uniform other value.

    Each target's record enters only its own report, so the release is eps-DP under replace-one
    (paper, Appendix A.1, Proposition A.2).
    """

    name = "randomized_response"
    needs_prior = ("records",)  # stages.protocols: one candidate value per target

    def __init__(self, epsilon: float = 1.0, domain_size: int = 10) -> None:
        self.epsilon = float(_validate.epsilon("epsilon", epsilon))
        self.domain_size = _validate.integer("domain_size", domain_size, minimum=2)

    @property
    def keep_probability(self) -> float:
        """Pr[RR(x) = x] = e^eps / (e^eps + m - 1), written to stay finite for eps = inf."""
        return 1.0 / (1.0 + (self.domain_size - 1) * np.exp(-self.epsilon))

    def _judged(self) -> tuple[PureDP | None, str | None]:
        """The profile and why it is not private (stages.mechanism.judge_privacy, the one rule)."""
        return judge_privacy(None if np.isinf(self.epsilon) else PureDP(self.epsilon),
                             no_profile="epsilon = inf: randomized response reports every secret unchanged")

    @property
    def profile(self) -> PureDP | None:
        """PureDP(epsilon); None when that is no guarantee (epsilon = inf or above MAX_PRIVATE_EPSILON)."""
        return self._judged()[0]

    def privacy(self) -> dict:
        """{"private": True, "epsilon": ...} or {"private": False, "reason": ...} (stages.mechanism.judge_privacy)."""
        return privacy_record(self._judged()[1], epsilon=self.epsilon)

    def release(self, X, rng: np.random.Generator) -> np.ndarray:
        """The per-target reports a (n,): X_i kept, or replaced by one of the m - 1 other values."""
        x = check_records(X, self.domain_size)
        flip = rng.random(x.shape[0]) >= self.keep_probability
        # A uniform value among the m - 1 others: draw from 1..m-1 and add it to x modulo m.
        shift = rng.integers(1, self.domain_size, size=x.shape[0])
        return np.where(flip, (x + shift) % self.domain_size, x).astype(np.int64)

    def log_likelihood(self, a) -> np.ndarray:
        """log Pr[RR(j) = a_i] for every target i and candidate j: array (n, m)."""
        reports = check_records(a, self.domain_size, name="a")
        # log of e^eps / (e^eps + m - 1) and of 1 / (e^eps + m - 1), stable for large and infinite eps.
        log_keep = -np.log1p((self.domain_size - 1) * np.exp(-self.epsilon))
        log_other = -self.epsilon + log_keep
        same = reports[:, None] == np.arange(self.domain_size)[None, :]
        return np.where(same, log_keep, log_other)

    def params(self) -> dict:
        return {"mechanism": self.name, "epsilon": self.epsilon, "domain_size": self.domain_size}

