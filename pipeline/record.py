"""The played game as a typed record: what `pipeline.game.play_trials` returns and the `trials` stage stores.

Meaning and storage are kept apart (as dp_accounting keeps its PLD representation apart from its
interpretation): the engine, the bound and the report read `PlayedGame` and its `AttackPlay`s; only
`to_arrays` / `from_arrays` know the flat name -> array layout the stage cache writes (`pipeline.cache.save_arrays`).
That layout is the one the cache has always held, so trials cached before the record existed are read back
unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from stages.bound.box import PlayedTrials

__all__ = ["AttackPlay", "PlayedGame"]

# The storage layout (to_arrays / from_arrays only): the attack's arrays under their plain names, a variant's
# under variant__<label>__<name>, an attack's per-trial reports under observed__<label>__<name>, the release's
# under release__<name>.
_VARIANT, _OBSERVED, _RELEASE, _SEP = "variant", "observed", "release", "__"
_ATTACK_ARRAYS = ("attack_successes", "p_values", "p_counts", "p_offsets")


@dataclass(frozen=True)
class AttackPlay:
    """One attack's (or variant's) trials: its successes per trial, the prior success of its guesses grouped per
    trial (`PlayedTrials`) and the per-trial numbers it reports (`observed`, e.g. unusable_canaries)."""

    label: str
    successes: np.ndarray
    trials: PlayedTrials
    observed: Mapping[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class PlayedGame:
    """R trials of one game: every attack (the configured attack first, then its variants) on the same releases,
    the prior baseline (z*) successes and expected successes per trial, what the release reported per trial,
    the records of every trial for a per-trial law (the bound rebuilds each law), and, with save_per_target, the
    attack's guesses (R, n, k) and their prior successes (R, n)."""

    attacks: tuple[AttackPlay, ...]
    prior_successes: np.ndarray
    prior_expected: np.ndarray
    k: int
    n_targets: int
    release: Mapping[str, np.ndarray] = field(default_factory=dict)
    records: np.ndarray | None = None
    guesses: np.ndarray | None = None
    attack_prior_success: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not self.attacks:
            raise ValueError("a played game must hold at least one attack, got none.")
        labels = [a.label for a in self.attacks]
        if len(set(labels)) != len(labels):
            raise ValueError(f"attack labels must be distinct, got {labels}.")

    @property
    def attack(self) -> AttackPlay:
        """The configured attack (the first of `attacks`)."""
        return self.attacks[0]

    @property
    def labels(self) -> list[str]:
        return [a.label for a in self.attacks]

    @property
    def per_trial_law(self) -> bool:
        """Whether each trial had its own law (its records are kept)."""
        return self.records is not None

    @property
    def per_target(self) -> bool:
        """Whether the per-target guesses were kept (save_per_target)."""
        return self.guesses is not None

    def of(self, label: str) -> AttackPlay:
        for attack in self.attacks:
            if attack.label == label:
                return attack
        raise KeyError(f"no attack labelled {label!r}; the game has {self.labels}.")

    # ---------------------------------------------------------------------------------------- storage
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The flat name -> array layout of the `trials` stage."""
        out: dict[str, np.ndarray] = {
            "attack_labels": np.asarray(self.labels), "prior_successes": np.asarray(self.prior_successes),
            "prior_expected": np.asarray(self.prior_expected), "k": np.asarray(self.k, dtype=np.int64),
            "n_targets": np.asarray(self.n_targets, dtype=np.int64)}
        for index, attack in enumerate(self.attacks):
            arrays = dict(zip(_ATTACK_ARRAYS, (np.asarray(attack.successes), attack.trials.values,
                                               attack.trials.counts, attack.trials.offsets)))
            out.update(arrays if index == 0 else {_SEP.join((_VARIANT, attack.label, name)): v
                                                  for name, v in arrays.items()})
            out.update({_SEP.join((_OBSERVED, attack.label, name)): np.asarray(v, dtype=float)
                        for name, v in attack.observed.items()})
        out.update({_SEP.join((_RELEASE, name)): np.asarray(v) for name, v in self.release.items()})
        optional = {"records": self.records, "guesses": self.guesses, "attack_prior_success": self.attack_prior_success}
        out.update({name: np.asarray(v) for name, v in optional.items() if v is not None})
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "PlayedGame":
        """The record of a `trials` stage's arrays (as `to_arrays` wrote them)."""
        labels = [str(v) for v in arrays["attack_labels"]] if "attack_labels" in arrays else ["attack"]
        k, n = int(arrays["k"]), int(arrays["n_targets"])
        attacks = []
        for index, label in enumerate(labels):
            prefix = "" if index == 0 else _SEP.join((_VARIANT, label, ""))
            own = [arrays[prefix + name] for name in _ATTACK_ARRAYS]
            observed_prefix = _SEP.join((_OBSERVED, label, ""))
            observed = {name[len(observed_prefix):]: v for name, v in arrays.items() if name.startswith(observed_prefix)}
            attacks.append(AttackPlay(label=label, successes=np.asarray(own[0]),
                                      trials=PlayedTrials(k=k, n_targets=n, values=own[1], counts=own[2], offsets=own[3]),
                                      observed=observed))
        release_prefix = _SEP.join((_RELEASE, ""))
        return cls(attacks=tuple(attacks), prior_successes=np.asarray(arrays["prior_successes"]),
                   prior_expected=np.asarray(arrays["prior_expected"]), k=k, n_targets=n,
                   release={name[len(release_prefix):]: v for name, v in arrays.items() if name.startswith(release_prefix)},
                   records=arrays.get("records"), guesses=arrays.get("guesses"),
                   attack_prior_success=arrays.get("attack_prior_success"))
