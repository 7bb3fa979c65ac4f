"""The Bayes-optimal attack: guess what maximises the posterior chance of success given the release.

For a mechanism with an exact likelihood (randomized response, the idealized Gaussian) the posterior
of target i is Pr[X_i = j | a] proportional to D_i(j) Pr[a | X_i = j]; targets are independent and
the release factorises over them, so each posterior needs only target i's part of a. The attack then
plays the metric's best guess on the posterior: the top-k posterior candidates for `exact`, the k
windows holding the most posterior mass for `within` (paper, Proposition A.2 and Appendix D).
"""
from __future__ import annotations

import numpy as np
from scipy import special

from stages.bound import _validate

__all__ = ["BayesOptimalAttack", "posterior"]


def posterior(probabilities, log_likelihood) -> np.ndarray:
    """Rows of D_i(j) exp(log_likelihood[i, j]), normalised in log space: array (n, m)."""
    with np.errstate(divide="ignore"):
        log_joint = np.log(np.asarray(probabilities, dtype=float)) + np.asarray(log_likelihood, dtype=float)
    log_norm = special.logsumexp(log_joint, axis=1, keepdims=True)
    if not np.all(np.isfinite(log_norm)):
        raise ValueError("the release has probability 0 under the prior for some target; check the prior and mechanism match.")
    return np.exp(log_joint - log_norm)


class BayesOptimalAttack:
    """k guesses per target maximising the posterior success probability, for mechanisms with a likelihood."""

    name = "bayes_optimal"
    needs_prior = ("records",)  # stages.protocols
    # What the game checks before anything is built: the mechanism class must give an exact likelihood.
    needs_mechanism = ("log_likelihood",)
    fits_mechanisms = "a mechanism with an exact likelihood (mechanism=gaussian or randomized_response)"

    def __init__(self, k: int = 1) -> None:
        self.k = _validate.integer("k", k, minimum=1)

    def posterior(self, a, prior, mechanism) -> np.ndarray:
        """Pr[X_i = j | a] for every target i and candidate j: array (n_targets, domain_size)."""
        if not hasattr(mechanism, "log_likelihood"):
            raise ValueError(
                f"attack=bayes_optimal needs a mechanism with an exact likelihood (randomized_response, gaussian), "
                f"got {type(mechanism).__name__}; use another attack for this mechanism."
            )
        log_likelihood = mechanism.log_likelihood(a)
        if log_likelihood.shape != prior.probabilities.shape:
            raise ValueError(
                f"the release covers {log_likelihood.shape} (targets, candidates) but the prior has "
                f"{prior.probabilities.shape}; set the mechanism's domain_size to the prior's."
            )
        return posterior(prior.probabilities, log_likelihood)

    def guess(self, a, prior, mechanism, metric) -> np.ndarray:
        """z of shape (n_targets, k): the metric's best guess under the posterior."""
        return metric.best_guess(self.posterior(a, prior, mechanism), self.k)

    def params(self) -> dict:
        return {"attack": self.name, "k": self.k}
