"""What every bound box shares: the played trials, confidence levels, and {confidence: count} results.

A bound box is called as `compute(profile, prior, metric, trials, confidences)` (and, for bounds
conditional on the release, `compute_per_trial(...)` with the same arguments). `trials` is either
the attack's guesses, an int array (R, n, k) (or (n, k), (n,) for one trial), or a `PlayedTrials`:
what the game keeps of each trial so that memory does not grow with trials x targets, namely the
number of guesses per target k and the prior success p_i = Pr_{X ~ D_i}[l_i(X, z_i) = 1] of the
attack's guesses grouped into distinct values with their multiplicities. Every theorem is a law of
sum_i Bern(f(p_i)), symmetric in the targets, so the groups are a sufficient statistic: the count
bounds from PlayedTrials equal those from the full guesses, and the boxes hand each trial's groups
to the theorems as they are (``PlayedTrials.priors``, stages.bound.theorems.Priors), never expanded.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from stages.bound import _validate
from stages.bound.theorems import Priors

__all__ = ["PlayedTrials", "TrialLaws", "played_trials", "group_prior_success", "guesses_per_trial", "guesses_per_target", "as_confidences",
           "count_dict", "set_valued_success", "success_set_size", "prior_collision", "prior_distributions", "distributions_of",
           "bound_theorem", "record_candidates", "BOX_CODE_VERSION", "theorem_versions"]

#: The version of the bound numbers that have no version of their own: Theorem 3.1 (pure eps-DP), MMC, the comparators
#: (stages.bound.prior_work), the floor (stages.bound.floor) and the boxes' own code. Bump it when any of them gives
#: another number for the same inputs, so bounds cached by the pipeline's `bound` stage are not reused.
BOX_CODE_VERSION = 2  # 2: the floor is the certified mixture (stages.bound.floor_mixture, issue 41)


@dataclass(frozen=True)
class PlayedTrials:
    """The attack's prior success per trial, grouped: trial r has counts[j] targets with p = values[j] for
    j in offsets[r]:offsets[r + 1]; k guesses per target; n_targets targets per trial."""

    k: int
    n_targets: int
    values: np.ndarray
    counts: np.ndarray
    offsets: np.ndarray

    def __post_init__(self) -> None:
        offsets = np.asarray(self.offsets, dtype=np.int64)
        counts = np.asarray(self.counts, dtype=np.int64)
        if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0 or offsets[-1] != counts.size or np.any(np.diff(offsets) < 1):
            raise ValueError(f"offsets must run from 0 to len(counts) = {counts.size} in steps >= 1, got {offsets.tolist()[:8]}.")
        sums = np.add.reduceat(counts, offsets[:-1])
        if np.any(sums != self.n_targets):
            raise ValueError(f"every trial must group its n_targets = {self.n_targets} targets, got trial sums {sums.tolist()[:8]}.")

    @classmethod
    def from_prior_success(cls, p_per_trial, k: int) -> "PlayedTrials":
        """Group each row of p_per_trial (R, n): the prior success of each trial's guesses."""
        rows = [np.asarray(p, dtype=float).reshape(-1) for p in p_per_trial]
        groups = [group_prior_success(row) for row in rows]
        return cls.from_groups(groups, k, rows[0].size)

    @classmethod
    def from_groups(cls, groups: list[tuple[np.ndarray, np.ndarray]], k: int, n_targets: int) -> "PlayedTrials":
        """From one (values, counts) pair per trial, as group_prior_success returns them."""
        if not groups:
            raise ValueError("trials must hold at least one trial, got none.")
        sizes = [len(v) for v, _ in groups]
        return cls(
            k=int(k), n_targets=int(n_targets),
            values=np.concatenate([v for v, _ in groups]).astype(float),
            counts=np.concatenate([c for _, c in groups]).astype(np.int64),
            offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        )

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    def groups(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        """(values, counts) of trial r."""
        lo, hi = int(self.offsets[r]), int(self.offsets[r + 1])
        return self.values[lo:hi], self.counts[lo:hi]

    def priors(self, r: int) -> Priors:
        """Trial r's prior successes as the theorems take them, grouped (stages.bound.theorems.Priors)."""
        return Priors(*self.groups(r))

    def prior_success(self, r: int) -> np.ndarray:
        """Trial r's prior successes as an array (n,) in grouped order (the bounds do not depend on the order)."""
        values, counts = self.groups(r)
        return np.repeat(values, counts)

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self.prior_success(r) for r in range(len(self)))

    def sums(self) -> np.ndarray:
        """sum_i p_i per trial: the expected successes of each trial's guesses under the prior, array (R,)."""
        return np.add.reduceat(self.values * self.counts, self.offsets[:-1])


@dataclass(frozen=True)
class TrialLaws:
    """Every trial's law, in trial order: what a box whose bound is over the mixture of the trials (``mixes_trials``)
    gets as its ``prior`` when the laws differ per trial (prior.per_trial, e.g. BayNet given each trial's known
    columns). ``first`` is the law the trials share their domain and guess count with."""

    laws: tuple

    def __post_init__(self) -> None:
        if not self.laws:
            raise ValueError("TrialLaws needs at least one trial's law, got none.")

    @property
    def first(self):
        return self.laws[0]

    def __len__(self) -> int:
        return len(self.laws)


def group_prior_success(p) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values, multiplicities) of one trial's prior successes p (n,)."""
    values, counts = np.unique(np.asarray(p, dtype=float).reshape(-1), return_counts=True)
    return values, counts.astype(np.int64)


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


def guesses_per_target(trials) -> int:
    """k, the number of guesses per target, of PlayedTrials or of guesses (R, n, k)."""
    if isinstance(trials, PlayedTrials):
        return trials.k
    return int(guesses_per_trial(trials).shape[2])


def played_trials(prior, metric, trials) -> PlayedTrials:
    """PlayedTrials as they are, or computed from guesses (R, n, k) with the prior (or each trial's law, TrialLaws)
    and the metric."""
    if isinstance(trials, PlayedTrials):
        return trials
    guesses = guesses_per_trial(trials)
    if isinstance(prior, TrialLaws):
        if len(prior) != len(guesses):
            raise ValueError(f"trials must hold one trial per law ({len(prior)} laws), got {len(guesses)} trials.")
        laws = prior.laws
    else:
        laws = [prior] * len(guesses)
    return PlayedTrials.from_groups([group_prior_success(law.success_probability(z, metric))
                                     for law, z in zip(laws, guesses)], guesses.shape[2], guesses.shape[1])


def as_confidences(confidences) -> np.ndarray:
    """Confidences as a 1-d float array, each in (0, 1)."""
    return np.atleast_1d(_validate.confidence("confidences", confidences)).reshape(-1)


def count_dict(confidences: np.ndarray, counts) -> dict[float, int]:
    """{confidence: count} with plain Python numbers (JSON-able)."""
    counts = np.broadcast_to(np.asarray(counts), confidences.shape)
    return {float(c): int(v) for c, v in zip(confidences, counts)}


def set_valued_success(metric, k: int, domain_size: int | None = None) -> bool:
    """Whether one target's success set can hold more than one candidate value.

    True with k > 1 guesses per target, or when one guess covers more than one candidate (a distance
    window, e.g. metric=within with distance >= 1); False for one exact guess, or a domain of one value.
    One guess is probed at the first, middle and last candidate with ``metric.covered`` (the metrics
    here cover the same window shape everywhere, clipped at the ends); a metric without ``covered``
    counts as set-valued, the safe side. ``domain_size`` None: probed on 3 candidates.

    The split theorem (stages/bound/THEORY.md) weighs delta differently for set-valued success.
    """
    m = 3 if domain_size is None else int(domain_size)
    if m < 2:
        return False
    if int(k) > 1:
        return True
    covered = getattr(metric, "covered", None)
    if covered is None:
        return True
    probes = np.array([[0], [m // 2], [m - 1]], dtype=np.int64)
    return bool(np.max(np.count_nonzero(covered(probes, m), axis=1)) > 1)


def success_set_size(metric, k: int, domain_size: int | None) -> int | None:
    """The most candidate values one target's success set can hold: k guesses, each covering at most w values
    (``metric.covered`` at every candidate), so min(domain, k w); None when it cannot be known (no domain size, or
    a metric without ``covered``). Theorem 3 reads the whole prior for set-valued success only with it (THEORY.md,
    Lemma 4')."""
    covered = getattr(metric, "covered", None)
    if domain_size is None or covered is None:
        return None
    m = int(domain_size)
    if m < 1:
        return None
    width = int(np.max(np.count_nonzero(covered(np.arange(m, dtype=np.int64)[:, None], m), axis=1)))
    return max(1, min(m, int(k) * max(width, 1)))


def prior_collision(prior) -> np.ndarray | None:
    """c_i = sum_x D_i(x)^2 per target (the prior's collision probability), or None if the prior has no
    probability matrix (the split theorem then uses c_i = 0, valid for every prior)."""
    probabilities = getattr(prior, "probabilities", None)
    if probabilities is None:
        return None
    arr = np.asarray(probabilities, dtype=float)
    return np.einsum("ij,ij->i", arr, arr) if arr.ndim == 2 else None


def prior_distributions(prior):
    """Each target's whole prior (stages.bound.priors.Distributions) from the prior's probability matrix
    (n, domain), or None when the prior has none (the theorems then see p_i = max pi_i only). For TrialLaws, one per
    trial (a list), or None when a trial's law has none."""
    if isinstance(prior, TrialLaws):
        out = [prior_distributions(law) for law in prior.laws]
        return None if any(d is None for d in out) else out
    return distributions_of(getattr(prior, "probabilities", None))


def distributions_of(probabilities):
    """A prior's probability matrix (n, domain) as Distributions, each row normalised; None for none (or not a
    non-empty 2-d matrix)."""
    if probabilities is None:
        return None
    arr = np.asarray(probabilities, dtype=float)
    if arr.ndim != 2 or arr.shape[0] == 0:
        return None
    from stages.bound.priors import Distributions

    return Distributions.of(arr / arr.sum(axis=1, keepdims=True), name="prior.probabilities")


def bound_theorem(profile, metric, k: int, domain_size: int | None, default: str, pure: str | None = None) -> dict:
    """Which theorem a box uses and why, for the run's log and metrics.json (and every output showing the bound).

    ``default`` is the box's own theorem, ``pure`` what it becomes for an eps-DP profile (the theorems
    use Theorem 3.1 at the profile's eps there: stages.bound.theorems.pure_epsilon_of), None if the
    same. For set-valued success the split theorem uses the set-valued weights (1 - c_i) / (e^eps p_i
    + 1 - p_i) instead of 1 - beta_i. ``version`` is the split theorem's version
    (stages.bound.theorems.SPLIT_THEOREM_VERSION): results from before version 2 used the paper's
    one-run theorem, which exact DP mechanisms beat.
    """
    from stages.bound.profiles import for_game
    from stages.bound.registry import SET_VALUED_WEIGHTS
    from stages.bound.theorems import SPLIT_THEOREM_VERSION, pure_epsilon_of

    set_valued = set_valued_success(metric, k, domain_size)
    is_pure = pure_epsilon_of(for_game(profile, "reconstruction")) is not None
    name = pure if (is_pure and pure is not None) else default
    if is_pure:
        reason = ("the mechanism is eps-DP: Theorem 3.1 at its eps holds for every success metric"
                  + (" (success is set-valued here)" if set_valued else ""))
    elif set_valued:
        name = f"{name}{SET_VALUED_WEIGHTS}"
        reason = (f"success is set-valued (k = {int(k)} guesses, metric {getattr(metric, 'name', metric)!s}): delta(eps) "
                  "weighted by (1 - c_i) / (e^eps p_i + 1 - p_i), c_i the prior's collision probability")
    else:
        reason = "one exact guess per target: delta(eps) weighted by 1 - beta_i"
    return {"theorem": name, "set_valued": set_valued, "reason": reason, "version": SPLIT_THEOREM_VERSION}


def record_candidates(out: dict, theorems: list, name, groups: int) -> dict:
    """A box's theorem record ``out`` with the theorems that may join its minimum (``registry.Registry.candidates``):
    ``candidates`` (their names in the record, ``name(theorem)``; left out when the box's own theorem is the only
    one), the version of each beside the record's own ``version`` (``<version_key>_version``; the split theorem's
    is that one) and, with Theorem 4 among them, its ``prior_run_groups``."""
    from stages.bound import registry

    if len(theorems) < 2:
        return out
    out["candidates"] = [name(t) for t in theorems]
    for t in theorems:
        if t.version_key is not None and t is not registry.SPLIT:
            out[f"{t.version_key}_version"] = t.version
    if registry.PRIOR_RUN in theorems:
        out["prior_run_groups"] = groups
    return out


def theorem_versions() -> dict[str, int]:
    """The version of every theorem a bound box may use (the registry's, by ``version_key``), of the boxes' minima
    and BOX_CODE_VERSION for the numbers without one: part of the key of the pipeline's `bound` stage
    (pipeline.game.bound_stage_config), so a new version of any of them computes its bounds afresh."""
    from stages.bound import registry, theorems

    out = {t.version_key: t.version for t in registry.REGISTRY if t.version_key is not None}
    return {**out, "default": theorems.DEFAULT_BOUND_VERSION, "expected": theorems.EXPECTED_BOUND_VERSION,
            "boxes": BOX_CODE_VERSION}
