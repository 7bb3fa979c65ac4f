"""The boxes' contracts, in one place: what the one game (pipeline/game.py, the paper's Algorithm 1) asks of
each box a config group builds. tests/pipeline/test_protocols.py instantiates every option of every group
(conf/<group>/*.yaml, discovered, not listed) and checks it against these.

Per trial the game does, for every combination of boxes:

    X   = prior.sample(rng, prior.n_targets)          # the targets' records
    law = prior.for_trial(X)                          # the prior the attacker holds in this trial (TrialLaw)
    a   = mechanism.release(X, rng)                   # a cached stage per trial (pipeline.game.release_stage)
    z   = attack.guess(a, law, mechanism, metric)     # for the attack and each of attack.variants()
    L   = law.score(X, z, metric).sum()               # successes; the baseline scores law.a_priori_guess

and the bound box turns mechanism.profile and the law into counts. A fixed prior (uniform, Zipf, PII) is
its own law in every trial; a prior whose law depends on what the attacker knows about each record (BayNet:
the known columns) gives a fresh law per trial, and the bound is computed per trial from it.

Optional hooks a box may add, each with its default when absent. The engine reads them only through
pipeline/boundary.py (one function per hook, HOOKS lists them), never off a box itself:
- every box: ``name`` (default the class name), ``params()`` (default: no params reported), ``data_files()``
  (default (): its stage keys then hold the files' hashes, not where they lie), class attribute
  ``STAGE_KEY_DEFAULTS`` (settings left out of stage keys at these values; default None).
- prior: ``use_cache(get_or_compute)`` (an expensive fit or scoring as a stage; default nothing),
  ``per_trial = True`` when ``for_trial`` depends on X (default False), ``domain_size`` (default None).
  A TrialLaw: ``key()`` (what identifies it in an attack's prepare stage; default None), ``probabilities`` (each
  target's whole prior, (n, candidates); default None: the bounds and the floor then see p_i = max pi_i only).
- mechanism: ``for_prior(prior)`` (a copy bound to what the prior's records look like, e.g. the table's
  domain and known columns; default itself), ``release_stage(config, X, seed, trial)`` (its own cache key;
  default its params, the records' hash, seed and trial), ``cache_release`` (default False),
  ``release_arrays(a)`` / ``release_from_arrays(arrays)`` (how a release is stored; default one array
  "release"), ``release_info(a)`` (per-trial numbers of the release; default {}), ``privacy()`` (its own
  accounting, or "reason" it is not private; default {}), ``delta`` (default None),
  ``trials_side_by_side(n)`` / ``release_side_by_side(Xs, rngs)`` (how many of n trials it releases together, and
  their releases: DP-SGD's trials trained as one stacked computation; each is cached as its own trial's release;
  default None: one trial at a time). A profile: ``params()`` (default {"profile": its class name}).
- attack: ``variants()`` (other attacks scored on the same release; default {}), ``prepare(a, law, mechanism)`` /
  ``prepare_key()`` / ``decide(prepared, law, metric)`` (an expensive, metric-free step cached per trial, then
  the guess; default: guess), ``observed()`` (per-trial numbers the attack reports, e.g. a fitted temperature;
  default {}), ``label`` (default its name), ``k`` (default None: the first trial's guesses tell).
- bound: ``theorem(...)`` (default None: no theorem record), ``compute_per_trial(...)`` (default None),
  ``mixes_trials`` (per-trial laws bounded once over their mixture, default False; under per-trial laws a box
  with it gets, as its ``prior``, every trial's law in trial order, a ``stages.bound.box.TrialLaws``).

Compatibility is declared on the classes, so the game refuses a combination before anything is built:
``Prior.provides`` (what its records are), ``Mechanism.needs_prior`` and ``Attack.needs_prior`` (what
they need of the records), ``Attack.needs_mechanism`` (attributes the mechanism class must have).
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

import numpy as np

__all__ = ["Prior", "TrialLaw", "Mechanism", "Attack", "Metric", "BoundBox", "RECORDS", "TABLE", "KINDS"]

#: Records of n targets, each an ordinal candidate 0..m-1 (uniform, Zipf, PII priors).
RECORDS = "records"
#: Records of a table: N rows of d categorical columns, some known to the attacker (the BayNet prior).
TABLE = "table"
#: What each kind of record is, in the sentence that refuses a combination.
KINDS = {
    RECORDS: "n targets with one candidate value each (prior=uniform, zipf, pii)",
    TABLE: "rows of a table with known and unknown columns (prior=baynet)",
}


@runtime_checkable
class TrialLaw(Protocol):
    """The prior the attacker holds in one trial: each target's law, its a-priori guess and its scoring."""

    n_targets: int

    def a_priori_guess(self, metric, k: int = 1) -> np.ndarray: ...

    def success_probability(self, z, metric) -> np.ndarray: ...

    def score(self, X, z, metric) -> np.ndarray: ...


@runtime_checkable
class Prior(Protocol):
    """The prior box: samples the targets' records and gives the law the attacker holds per trial."""

    name: str
    provides: str
    n_targets: int

    def sample(self, rng: np.random.Generator, n: int | None = None) -> np.ndarray: ...

    def for_trial(self, X) -> TrialLaw: ...

    def params(self) -> dict: ...


@runtime_checkable
class Mechanism(Protocol):
    """The mechanism box: releases a = M(X); its privacy profile (None: no privacy guarantee) feeds the bound.

    Whether there is a guarantee is decided by one rule for every mechanism, stages.mechanism.judge_privacy:
    no noise, an infinite epsilon or one above MAX_PRIVATE_EPSILON is not private (profile None, and
    ``privacy()`` says why)."""

    name: str
    needs_prior: tuple

    @property
    def profile(self) -> Any: ...

    def release(self, X, rng: np.random.Generator) -> Any: ...

    def params(self) -> dict: ...


@runtime_checkable
class Attack(Protocol):
    """The attack box: from the release, the trial's law, the mechanism and the metric, k guesses per target."""

    name: str
    needs_prior: tuple

    def guess(self, a, law: TrialLaw, mechanism, metric) -> np.ndarray: ...

    def params(self) -> dict: ...


@runtime_checkable
class Metric(Protocol):
    """The success metric l_i(X_i, z_i): whether a guess set attacks a record, and the best guess under a law."""

    name: str

    def score(self, X, z) -> np.ndarray: ...

    def success_probability(self, probabilities, z) -> np.ndarray: ...

    def best_guess(self, probabilities, k: int = 1) -> np.ndarray: ...

    def covered(self, z, domain_size: int) -> np.ndarray: ...

    def params(self) -> dict: ...


@runtime_checkable
class BoundBox(Protocol):
    """The bound box: {confidence: count} from the profile, a law, the metric and the played trials, and the
    theorem behind those numbers ({"theorem", "set_valued", "reason", ...}).

    The engine calls ``compute_theorems(profile, prior, metric, trials, confidences) -> ({confidence: count},
    {confidence: theorem name})``; ``theorem``, ``compute_per_trial`` and ``mixes_trials`` are optional (their
    defaults: pipeline.boundary.bound_theorem, compute_per_trial, mixes_trials)."""

    name: str

    def compute(self, profile, prior, metric, trials, confidences) -> Mapping[float, Any]: ...

    def theorem(self, profile, prior, metric, trials) -> dict: ...

    def params(self) -> dict: ...
