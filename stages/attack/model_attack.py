"""The "Model Attack" (Hayes et al. 2024): guess argmax over the candidates of prior(s) * p_model(s | prefix).

The release of `mechanism=dpsgd` is, per canary, the fine-tuned model's log-probabilities of its m
candidate secrets given the prefix. The attack treats them as a likelihood and plays the metric's
best guess on prior x model (the same posterior as the Bayes-optimal attack, whose code it reuses:
on the idealized Gaussian the two coincide). The product is only as good as the model's calibration,
so `model_only_guess` (the model's own ranking, the prior ignored) is offered beside it, and
`temperature` divides the log-probabilities before the product (1: as the model says).

`temperature: fit` fits it to the release without looking at the secrets: each canary's centred
log-probabilities x_i are modelled as b (e_{X_i} - 1/m) + N(0, s^2 I) — the idealized Gaussian's
model of a noisy one-hot canary — and b, s^2 are fitted by EM over all canaries with the prior as
the mixing weights. The Bayes-optimal posterior under that model is prior(j) exp(b x_ij / s^2), i.e.
temperature s^2 / b. Under heavy DP noise the raw log-probabilities are far too confident (their
spread is noise), and the fitted temperature lets the prior weigh in as it should.
"""
from __future__ import annotations

import numpy as np

from stages.attack.bayes_optimal import posterior
from stages.bound import _validate

__all__ = ["ModelAttack", "ModelOnlyAttack", "fit_temperature", "VARIANTS"]

#: Log-probability a candidate of probability exactly 0 is given (so a canary's posterior stays defined).
LOG_FLOOR = -1e4
#: The variants the Model Attack can have the game score on the same release beside itself.
VARIANTS = ("model_only", "fitted")


def fit_temperature(log_probs, probabilities, iterations: int = 200) -> float:
    """s^2 / b of the model x_i = b (e_{X_i} - 1/m) + N(0, s^2 I), fitted by EM (the secrets are not used).

    x_i are the log-probabilities of canary i centred over its m candidates; the prior gives the mixing
    weights of X_i. Returns a temperature in [1e-6, 1e6].
    """
    x = np.asarray(log_probs, dtype=float)
    x = x - x.mean(axis=1, keepdims=True)
    n, m = x.shape
    prior = np.asarray(probabilities, dtype=float)
    r = posterior(prior, x)  # start from the model as it is (temperature 1)
    b, s2 = 1.0, 1.0
    for _ in range(iterations):
        b = max(float(np.sum(r * x)) / (n * (1.0 - 1.0 / m)), 1e-12)
        # E||x_i - b (e_j - 1/m)||^2 under r; centring leaves m - 1 dimensions of noise per canary
        sq = np.sum(x * x, axis=1, keepdims=True) - 2.0 * b * x + b * b * (1.0 - 1.0 / m)
        s2 = max(float(np.sum(r * sq)) / (n * (m - 1)), 1e-12)
        new = posterior(prior, x * (b / s2))
        if np.max(np.abs(new - r)) < 1e-10:
            r = new
            break
        r = new
    return float(np.clip(s2 / b, 1e-6, 1e6))


class ModelAttack:
    """k guesses per canary maximising the success probability under prior(s) * p_model(s | prefix)^(1 / temperature)."""

    name = "model_attack"
    # What the game checks before anything is built: the release is each canary's candidate log-probabilities.
    needs_prior = ("records",)
    needs_mechanism = ("releases_candidate_log_probs",)
    fits_mechanisms = "a release of the model's log-probabilities of each canary's candidates (mechanism=dpsgd)"

    def __init__(self, k: int = 1, temperature: float | str = 1.0, variants=()) -> None:
        self.k = _validate.integer("k", k, minimum=1)
        if temperature == "fit":
            self.temperature = "fit"
        elif isinstance(temperature, str):
            raise ValueError(f"temperature must be a number > 0 or 'fit', got {temperature!r}.")
        else:
            self.temperature = _validate.positive("temperature", temperature)
        self.last_temperature: float | None = None
        self.last_unusable = 0
        # Beside the attack, on the same release: the model's own ranking (model_only) and the attack with its
        # temperature fitted to the release without the secrets (fitted).
        self.variant_names = [str(v) for v in (variants or ())]
        bad = [v for v in self.variant_names if v not in VARIANTS]
        if bad or len(set(self.variant_names)) != len(self.variant_names):
            raise ValueError(f"variants must list distinct names among {list(VARIANTS)}, got {list(variants)}.")

    def variants(self) -> dict:
        """{label: attack} scored by the game on the same release beside this one."""
        made = {"model_only": lambda: ModelOnlyAttack(self.k), "fitted": lambda: ModelAttack(self.k, "fit")}
        return {name: made[name]() for name in self.variant_names}

    def observed(self) -> dict:
        """The temperature the last guess used (the fitted one for temperature: fit)."""
        return {"temperature": self.last_temperature, "unusable_canaries": self.last_unusable}

    def _log_probs(self, a, prior) -> np.ndarray:
        """The release as log-probabilities (n, m). A canary whose log-probabilities are not usable (NaN, +inf, or
        -inf for every candidate: a training that diverged, e.g. lr x clip too large) tells the attack nothing:
        its row becomes 0 (a flat likelihood, so the guess is the prior's), and `observed()["unusable_canaries"]`
        counts them, so a diverged run is reported as such instead of failing the job."""
        arr = np.asarray(a, dtype=float)
        shape = prior.probabilities.shape
        if arr.shape != shape:
            raise ValueError(f"the release must hold one log-probability per (canary, candidate) {shape}, got shape "
                             f"{arr.shape}; attack=model_attack needs mechanism=dpsgd with the prior's n_targets and domain_size.")
        unusable = np.any(np.isnan(arr) | (arr == np.inf), axis=1) | np.all(arr == -np.inf, axis=1)
        self.last_unusable = int(unusable.sum())
        if self.last_unusable or np.any(arr == -np.inf):
            arr = arr.copy()
            arr[unusable] = 0.0
            arr = np.maximum(arr, LOG_FLOOR)  # a candidate of probability 0 (underflow): a very small one instead
        return arr

    def posterior(self, a, prior) -> np.ndarray:
        """prior(s) p_model(s | prefix)^(1/T), normalised per canary: array (n_targets, domain_size)."""
        log_probs = self._log_probs(a, prior)
        t = fit_temperature(log_probs, prior.probabilities) if self.temperature == "fit" else self.temperature
        self.last_temperature = float(t)
        return posterior(prior.probabilities, log_probs / t)

    def guess(self, a, prior, mechanism, metric) -> np.ndarray:
        """z of shape (n_targets, k): the metric's best guess under prior x model."""
        return metric.best_guess(self.posterior(a, prior), self.k)

    def model_only_guess(self, a, prior, metric) -> np.ndarray:
        """The model's own best guess, the prior ignored (uniform weights): shape (n_targets, k)."""
        log_probs = self._log_probs(a, prior)
        return metric.best_guess(posterior(np.ones_like(log_probs), log_probs), self.k)

    def params(self) -> dict:
        return {"attack": self.name, "k": self.k, "temperature": self.temperature,
                "fitted_temperature": self.last_temperature, "variants": list(self.variant_names)}


class ModelOnlyAttack(ModelAttack):
    """The model's own k best guesses per canary, the prior ignored (a variant of the Model Attack)."""

    name = "model_only"

    def __init__(self, k: int = 1) -> None:
        super().__init__(k, 1.0)

    def guess(self, a, prior, mechanism, metric) -> np.ndarray:
        return self.model_only_guess(a, prior, metric)

    def observed(self) -> dict:
        return {"unusable_canaries": self.last_unusable}  # no temperature: the prior is not used
