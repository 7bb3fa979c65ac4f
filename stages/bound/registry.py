"""Every theorem the library takes a minimum over, each one object in one place (``REGISTRY``).

A ``Theorem`` holds its name (the exact string of every output: metrics.json, ``count_bounds``' keys), its
version, its numbers in THEORY.md and in the paper, the base of its short id (what ``pipeline.labels`` prints),
``applies(setting)`` (None, or the one sentence saying why it does not apply) and the operations it supports:
``tail`` (a bound on Pr[successes >= v]) and ``counts`` (the smallest count per confidence). A ``Setting`` carries
what ``applies`` and the operations read: the profile, the targets' prior successes and whole priors, the success
notion, the game and, for the bounds over the trials, each trial's priors.

``Registry.minimum(setting, op, ...)`` is the one loop behind ``theorems.tail_bound``, ``count_bounds``,
``expected_tail`` and ``expected_count_bounds`` (and so ``success_bound``, ``count_bound`` ...): every registered
theorem that applies, in the registry's order, and their minimum; a tie goes to the theorem listed first. With
``at=eps`` it is the loop behind ``theorems.tail_bound_at``, ``pure_dp_tail`` and ``pure_dp_count_bound``: every
theorem that evaluates at a fixed eps (``Theorem.at_eps``: Theorems 3.1, 1 and 3), at that eps, no search over it.
``Registry.candidates`` is what the bound boxes list as the theorems that may join (``one_run``, ``expected``);
``numbering_table`` is the table of THEORY.md and docs/pages/bounds.md.

Adding a theorem is one object: build a ``Theorem`` (its ``applies`` and its ``tail`` / ``counts``, and ``at_eps``
where it evaluates at a fixed eps) and add it to ``REGISTRY`` (``Registry.with_theorem`` for a copy); every minimum,
the boxes' candidates, the labels and the numbering table then read it (tests/stages/bound/test_registry.py registers
a toy theorem and checks each of these).
Its place in the list decides ties and what a theorem searched below a hint sees: a ``hinted`` theorem (4, 5 and
Corollary 4.1, whose count searches only below the others') gets the minimum of the theorems of its ``family``
listed before it (the theorems of one release, or those over the trials).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from . import _validate, designated_run, marginal_run, prior_run, prior_work, whole_prior
from .priors import Distributions, Priors, pure_tail
from .profiles import ApproxDP, PrivacyProfile, pure_epsilon_of
from .search import (ExpectedRun, OneRun, WholePriorRun, count_search, expected_whole_prior_counts,
                     expected_whole_prior_tail, minimise_over_eps, split_counts, whole_prior_counts, whole_prior_tail)

__all__ = ["Setting", "Theorem", "Registry", "Minimum", "REGISTRY", "ANY", "mmc_applies", "numbering_table",
           "variant_codes", "SPLIT_THEOREM_VERSION", "Z_STAR", "SET_VALUED_WEIGHTS", "AVERAGED", "VARIANTS",
           "MMC_MAX_TARGETS",
           "EXPECTED", "PURE", "SPLIT", "WHOLE_PRIOR", "EXPECTED_WHOLE_PRIOR", "MMC", "PRIOR_RUN",
           "EXPECTED_PRIOR_RUN", "DESIGNATED_RUN", "MARGINAL_RUN"]

#: What the boxes add to a theorem's name (composed, never a second name): the a-priori guesses z* the one-release
#: theorems read, the split theorem's set-valued weights, the average over the trials.
Z_STAR = ", a-priori guesses z*"
SET_VALUED_WEIGHTS = ", set-valued weights"
AVERAGED = ", averaged over the trials"
#: (words in a name, what they add to its short id).
VARIANTS = ((SET_VALUED_WEIGHTS, "-sv"), ("averaged over the trials", "-avg"))
#: The split theorem's version (theorems.SPLIT_THEOREM_VERSION): 2 = THEORY.md's Theorem 1, which replaced the paper's
#: one-run theorem (exact DP mechanisms beat that one); 3 = each confidence's count searched on its own (a count no
#: longer depends on the other confidences asked; the same theorem, a count may move by one).
SPLIT_THEOREM_VERSION = 3
#: The most guessed targets MMC's count runs on (its recursion is O(n) Python steps an evaluation: 0.26 s at n = 1e3,
#: 3.5 s at 1e4).
MMC_MAX_TARGETS = 2000


class _Any:
    """``ANY``: an input known only when the bound is computed (the boxes' candidates): every theorem that may read
    it stays a candidate."""

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()


@dataclass(frozen=True, eq=False)
class Setting:
    """What the theorems' ``applies`` and operations read.

    ``profile``: made valid for ``game`` (``profiles.for_game``); None only at a fixed eps (``Registry.minimum``'s
    ``at``): an eps-DP mechanism known by that eps alone (``theorems.pure_dp_tail``). ``p``: the targets' prior
    successes, grouped (for one release: the a-priori guesses z*; a target the attack abstains on has p = 0; for
    set-valued success the groups carry the collision probabilities the split theorem reads). ``distributions``: each
    target's whole prior (for the bounds over the trials: one prior shared by every trial). ``set_valued``: a success
    set may hold more than one value (k > 1 guesses, a window); ``set_size`` the most values it holds (1 for one exact
    guess, None unknown). ``runs``: each trial's prior successes of the guesses made (the bounds over the trials);
    ``per_run``: a whole prior per trial. ``designated``: Theorem 5 asked for; ``groups``: Theorem 4's most groups of
    targets. Any input may be ``ANY`` (known later: ``Registry.candidates``); ``n_targets``: the number of targets where
    the priors are ANY but it is known (Theorem 6 joins by default above MARGINAL_RUN_DEFAULT_FROM of them).
    """

    profile: PrivacyProfile | None
    p: Priors | None = None
    distributions: Distributions | None = None
    set_valued: bool = False
    set_size: int | None = 1
    game: str = "reconstruction"
    runs: tuple | None = None
    per_run: tuple | None = None
    designated: bool = False
    groups: int = prior_run.MAX_GROUPS
    n_targets: int | None = None

    @cached_property
    def pure(self) -> float | None:
        """The profile's eps if it is eps-DP (``profiles.pure_epsilon_of``), else None."""
        return pure_epsilon_of(self.profile)

    @property
    def prospective(self) -> bool:
        """Some input is ANY: only what is known decides (the boxes' candidates)."""
        return any(x is ANY for x in (self.p, self.distributions, self.runs, self.per_run))

    def key(self, family: str) -> tuple:
        """What a theorem of ``family`` reads, hashable (the memo of ``Registry.minimum``)."""
        out = (self.profile.identity(), self.set_valued, self.set_size, self.game, self.designated, self.groups,
               _priors_key(self.p), _dists_key(self.distributions))
        if family == "trials":
            out += (tuple(_priors_key(r) for r in self.runs or ()), tuple(_dists_key(d) for d in self.per_run or ()))
        return out


def _priors_key(g):
    return None if g is None else (g.values.tobytes(), g.counts.tobytes(),
                                   None if g.collision is None else g.collision.tobytes())


def _dists_key(d):
    return None if d is None else (tuple(s.key for s in d.shapes), d.counts.tobytes())


@dataclass(frozen=True)
class Theorem:
    """One theorem: ``name`` (in every output), ``short`` (its short id's base; the id adds what ``VARIANTS`` words
    in a name add: ``label``), ``theory`` / ``paper`` (its numbers there), ``code`` and ``needs`` (the numbering
    table), ``version_of`` (its version, read when asked: ``version``; None: no version of its own,
    box.BOX_CODE_VERSION keys its numbers) and ``version_key`` (its key in box.theorem_versions), ``applies``, the
    operations ``tail(setting, v, **options) -> (value, parameter, standard error)`` and ``counts(setting,
    confidences, hint) -> counts`` (None: not supported), ``skips`` ({operation: setting -> reason or None}: where
    an operation is not run although the theorem holds), ``family`` ("release": a bound on one release; "trials":
    over the trials), ``hinted`` (its count is searched only below ``hint``, the minimum of its family's theorems
    before it), ``aliases`` (names older records use), ``at_eps`` ({operation: its value at a fixed eps,
    ``tail(setting, v, eps) -> (value, parameter, standard error)`` and ``counts(setting, confidences, eps) ->
    counts``}; empty: it does not evaluate at a fixed eps) and ``applies_at`` (``(setting, eps) -> reason or None``
    there; None: ``applies``)."""

    name: str
    short: str
    theory: str
    paper: str
    code: str
    needs: str
    applies: Callable[[Setting], str | None]
    tail: Callable | None = None
    counts: Callable | None = None
    version_of: Callable[[], int] | None = None
    version_key: str | None = None
    skips: dict = field(default_factory=dict)
    family: str = "release"
    hinted: bool = False
    aliases: tuple = ()
    at_eps: dict = field(default_factory=dict)
    applies_at: Callable[[Setting, float], str | None] | None = None

    @property
    def version(self) -> int | None:
        """Its version now (its module's constant: a new version keys the pipeline's cached bounds afresh)."""
        return None if self.version_of is None else self.version_of()

    @property
    def label(self) -> str:
        """The short id its own name prints as ('T2-avg' for Theorem 2, whose name is averaged over the trials)."""
        return self.short + variant_codes(self.name)

    def why_not(self, setting: Setting, op: str) -> str | None:
        """None if ``op`` runs on ``setting``, else why not (one sentence)."""
        if getattr(self, op) is None:
            return f"{self.name} has no {op} operation"
        why = self.applies(setting)
        if why is None and op in self.skips:
            why = self.skips[op](setting)
        return why

    def why_not_at(self, setting: Setting, op: str, eps: float) -> str | None:
        """None if ``op`` runs on ``setting`` at the fixed ``eps``, else why not (one sentence)."""
        if op not in self.at_eps:
            return f"{self.name} has no {op} at a fixed eps"
        return self.applies(setting) if self.applies_at is None else self.applies_at(setting, eps)


def variant_codes(name: str) -> str:
    """What the words of ``VARIANTS`` in ``name`` add to a short id ('-sv-avg', '')."""
    return "".join(code for words, code in VARIANTS if words in name)


@dataclass(frozen=True)
class Minimum:
    """``value``: the minimum (an array over the confidences for counts); ``winner``: the theorem that gave it (one
    per confidence for counts; the first listed wins a tie); ``by``: every applicable theorem's value, in the
    registry's order; ``parameter`` / ``standard_error``: the winner's (tails only: its eps, t or nan, and the
    standard error of an estimate over the trials, 0 for a bound)."""

    value: object
    winner: object
    by: dict
    parameter: float = math.nan
    standard_error: float = 0.0


#: Entries of a memo dict handed to ``Registry.minimum`` before it is emptied.
_MEMO_MAX = 1024


class Registry:
    """An ordered list of theorems with distinct names and ids: the minimum over those that apply, the boxes'
    candidates, the short ids of names and the numbering table."""

    def __init__(self, theorems) -> None:
        self.theorems = tuple(theorems)
        for what, values in (("name", [t.name for t in self.theorems]), ("id", [t.label for t in self.theorems])):
            twice = sorted({x for x in values if values.count(x) > 1})
            if twice:
                raise ValueError(f"every registered theorem needs its own {what}, got {twice} twice.")

    def __iter__(self):
        return iter(self.theorems)

    def __len__(self) -> int:
        return len(self.theorems)

    def get(self, name: str) -> Theorem:
        for t in self.theorems:
            if t.name == name:
                return t
        raise KeyError(f"no registered theorem is named {name!r}; registered: {[t.name for t in self.theorems]}.")

    def with_theorem(self, theorem: Theorem, *, before: str | None = None) -> "Registry":
        """A copy with ``theorem`` added at the end, or just before the theorem named ``before``."""
        names = [t.name for t in self.theorems]
        i = len(names) if before is None else names.index(before)
        return Registry(self.theorems[:i] + (theorem,) + self.theorems[i:])

    def candidates(self, setting: Setting) -> list[Theorem]:
        """The theorems that apply (or, where an input is ANY, may apply) to ``setting``, in order."""
        return [t for t in self.theorems if t.applies(setting) is None]

    def reasons(self, setting: Setting, op: str, at: float | None = None) -> dict[str, str]:
        """{name: why not} of the theorems ``op`` does not run (at the fixed eps ``at``, if given)."""
        why_not = (lambda t: t.why_not(setting, op)) if at is None else (lambda t: t.why_not_at(setting, op, at))
        return {t.name: why for t in self.theorems if (why := why_not(t)) is not None}

    def minimum(self, setting: Setting, op: str, *args, at: float | None = None, memo: dict | None = None,
                **options) -> Minimum:
        """The minimum of ``op`` over the theorems that apply, in order (ties: the first listed).

        ``op="tail"``: ``args = (v,)``, ``options`` passed to every tail (``rtol``, Theorem 2's ``eps``).
        ``op="counts"``: ``args = (confidences,)`` (1-d); a ``hinted`` theorem gets the minimum of its family's counts
        before it; ``memo`` (a dict) keeps each theorem's counts by what it reads (the same call gives the same
        numbers: a key holds every input of the theorem's family).
        ``at``: a fixed eps: the theorems with ``op`` in their ``at_eps`` that apply there (``applies_at``), each
        evaluated at that eps (no hint, memo or options)."""
        if op not in ("tail", "counts"):
            raise ValueError(f"op must be 'tail' or 'counts', got {op!r}.")
        if at is None:
            used = [t for t in self.theorems if t.why_not(setting, op) is None]
        else:
            at = float(at)
            used = [t for t in self.theorems if t.why_not_at(setting, op, at) is None]
        if not used:
            where = "" if at is None else f" at eps = {at!r}"
            raise ValueError(f"no registered theorem gives a {op}{where} here: {self.reasons(setting, op, at)}.")
        if at is not None and op == "tail":
            return _tail_minimum(used, lambda t: t.at_eps["tail"](setting, args[0], at))
        if at is not None:
            confs = _confs(args[0])
            return _counts_of({t.name: np.asarray(t.at_eps["counts"](setting, confs, at), dtype=int).reshape(-1)
                               for t in used})
        if op == "tail":
            return _tail_minimum(used, lambda t: t.tail(setting, args[0], **options))
        return _counts_minimum(used, setting, _confs(args[0]), memo)

    def theorem_of(self, name: str) -> Theorem | None:
        """The registered theorem an output's theorem name is (the boxes add ``Z_STAR`` ... to a name): the one whose
        name or alias it starts with, the longest; None if none."""
        best, size = None, -1
        for t in self.theorems:
            for known in (t.name, *t.aliases):
                if name.startswith(known) and len(known) > size:
                    best, size = t, len(known)
        return best

    def label_id(self, name: str) -> str | None:
        """The short id of an output's theorem name: its theorem's ``short`` (``theorem_of``) plus what ``VARIANTS``
        words in the name add; None if it names no registered theorem."""
        t = self.theorem_of(name)
        return None if t is None else t.short + variant_codes(name)

    def table(self) -> str:
        """The numbering table (markdown), one row per theorem in order."""
        rows = ["| THEORY.md | paper | id | name in outputs | code | needs |", "| --- | --- | --- | --- | --- | --- |"]
        for t in self.theorems:
            rows.append(f"| {t.theory} | {t.paper} | `{t.label}` | {t.name} | {t.code} | {t.needs} |")
        return "\n".join(rows) + "\n"


def _confs(confidences) -> np.ndarray:
    return np.asarray(confidences, dtype=float)


def _tail_minimum(used: list[Theorem], evaluate: Callable) -> Minimum:
    """The minimum of ``evaluate(theorem) -> (value, parameter, standard error)`` over ``used`` (ties: the first)."""
    by: dict[str, float] = {}
    best = None
    for t in used:
        value, parameter, se = evaluate(t)
        by[t.name] = value
        if best is None or value < best[0]:
            best = (value, parameter, se, t.name)
    return Minimum(best[0], best[3], by, best[1], best[2])


def _counts_minimum(used: list[Theorem], setting: Setting, confs: np.ndarray, memo: dict | None) -> Minimum:
    by: dict[str, np.ndarray] = {}
    for t in used:
        hint = None
        if t.hinted:
            before = [by[u.name] for u in used[:used.index(t)] if u.family == t.family]
            hint = np.min(np.stack(before), axis=0) if before else None
        key = None if memo is None else (t.name, setting.key(t.family), confs.tobytes(),
                                         None if hint is None else hint.tobytes())
        counts = None if memo is None else memo.get(key)
        if counts is None:
            counts = np.asarray(t.counts(setting, confs, hint), dtype=int).reshape(-1)
            if memo is not None:
                if len(memo) >= _MEMO_MAX:
                    memo.clear()
                memo[key] = counts
        by[t.name] = counts.copy()
    return _counts_of(by)


def _counts_of(by: dict[str, np.ndarray]) -> Minimum:
    """The minimum per confidence of every theorem's counts ``by`` (ties: the first listed)."""
    values = np.stack(list(by.values()))
    names = list(by)
    return Minimum(np.min(values, axis=0), [names[i] for i in np.argmin(values, axis=0)], by)


# --------------------------------------------------------------------------------------------
# What the theorems need (each returns None, or why not)
# --------------------------------------------------------------------------------------------
def _not_pure(s: Setting) -> str | None:
    if s.pure is not None:
        return "the profile is eps-DP: Theorem 3.1 at its eps holds for every success metric and takes this one's place"
    return None


def _pure_only(s: Setting) -> str | None:
    return None if s.pure is not None else "the profile is not eps-DP"


def _needs_p(s: Setting) -> str | None:
    if s.p is None:
        return ("needs the targets' prior successes of one release (p, or for one exact guess each target's whole "
                "prior, shared by every trial)")
    return None


def _exact_guess(s: Setting) -> str | None:
    return "holds for one exact guess per target only; success here is set-valued" if s.set_valued else None


def _needs_whole_prior(s: Setting) -> str | None:
    if s.distributions is None:
        return "needs each target's whole prior (distributions=; over the trials: one prior shared by every trial)"
    if s.set_valued and s.set_size is None:
        return "reads the whole prior for set-valued success only with the success sets' largest size (Lemma 4')"
    return None


def _eps_alone(s: Setting, eps: float) -> str | None:
    if s.profile is not None:
        return ("at a fixed eps of a profile the split theorem evaluates there (Theorem 3.1 at eps >= an eps-DP "
                "profile's eps: delta(eps) = 0)")
    return None


def _profile_at(s: Setting, eps: float) -> str | None:
    if s.profile is None:
        return "needs the profile's delta(eps) (an eps-DP mechanism known by its eps alone gets Theorem 3.1)"
    if s.pure is not None and eps < s.pure:
        return f"the one-run point at eps = {eps!r} below the eps-DP profile's eps = {s.pure!r} is not a valid bound"
    return None


def _finite_eps(s: Setting, eps: float) -> str | None:
    return None if math.isfinite(eps) else f"evaluates at a finite eps only, got eps = {eps!r}"


def _needs_runs(s: Setting) -> str | None:
    return None if s.runs is not None else "needs each trial's prior successes of the guesses made (p_runs)"


def _needs_per_run(s: Setting) -> str | None:
    if s.per_run is None:
        return "needs a whole prior per trial (distributions= with one prior per run)"
    if s.set_valued and s.set_size is None:
        return "reads the whole priors for set-valued success only with the success sets' largest size (Lemma 4')"
    return None


def _first(*checks) -> Callable[[Setting], str | None]:
    """applies(setting): the first reason of ``checks``, in order."""
    def applies(s: Setting) -> str | None:
        for check in checks:
            why = check(s)
            if why is not None:
                return why
        return None
    return applies


def _first_at(applies, *checks) -> Callable[[Setting, float], str | None]:
    """applies_at(setting, eps): the reason of ``applies(setting)``, else the first of ``checks(setting, eps)``."""
    def applies_at(s: Setting, eps: float) -> str | None:
        why = applies(s)
        for check in checks:
            if why is None:
                why = check(s, eps)
        return why
    return applies_at


def _known(check, *inputs) -> Callable[[Setting], str | None]:
    """``check`` where the inputs it reads are known (not ANY)."""
    return lambda s: None if any(getattr(s, name) is ANY for name in inputs) else check(s)


def _theorem_4_cap(n: int) -> str | None:
    """Theorem 4's limit on the number of targets (prior_run.PRIOR_RUN_MAX_TARGETS; None: no limit), the one place it
    is read (Corollary 4.1 runs Theorem 4's LP)."""
    cap = prior_run.PRIOR_RUN_MAX_TARGETS
    if cap is not None and n > cap:
        return f"Theorem 4's LP runs on at most prior_run.PRIOR_RUN_MAX_TARGETS = {cap} targets, got {n}"
    return None


def _theorem_5_cap(s: Setting) -> str | None:
    cap, n = designated_run.DESIGNATED_RUN_MAX_TARGETS, s.distributions.n
    if n > cap:
        return f"Theorem 5's LP runs on at most designated_run.DESIGNATED_RUN_MAX_TARGETS = {cap} targets, got {n}"
    return None


def _asked(s: Setting) -> str | None:
    return None if s.designated else "not asked for (designated=True adds Theorems 5 and 6: seconds to minutes a count)"


def _asked_or_many(s: Setting) -> str | None:
    """Theorem 6 runs by default above marginal_run.MARGINAL_RUN_DEFAULT_FROM targets (where Theorem 5 does not run),
    and wherever designated=True asks for it."""
    d, start = s.distributions, marginal_run.MARGINAL_RUN_DEFAULT_FROM
    n = s.n_targets if d is ANY else (None if d is None else d.n)
    if s.designated or (d is ANY and n is None) or (n is not None and n > start):
        return None
    n = "no prior" if n is None else f"{n} targets"
    return (f"runs by default above marginal_run.MARGINAL_RUN_DEFAULT_FROM = {start} targets, got {n} "
            f"(designated=True adds it: seconds a count)")


def _two_values(s: Setting) -> str | None:
    """One target on two values with its prior known: Theorem 3's closed form is the exact worst case (THEORY.md section
    8, "Two values in closed form"); every other theorem's tail is at least that, less its 1e-12 rounding margin."""
    d = s.distributions
    if d is not None and d is not ANY and not s.set_valued and d.n == 1 and int(np.sum(d.shapes[0].mult)) == 2:
        return "one target on two values: Theorem 3's closed form is the exact worst case there"
    return None


def _uniform(s: Setting) -> str | None:
    """Theorem 3's count on uniform priors: never below Theorem 1's where measured, so skipped
    (Distributions.uniform)."""
    d = s.distributions
    if d is not None and d is not ANY and d.uniform:
        return "every prior is uniform: Theorem 3's count was never below Theorem 1's there (skipped for speed)"
    return None


# --------------------------------------------------------------------------------------------
# MMC's conditions (stages/bound/MMC_CHECK.md): one function for the theorems and best_bound
# --------------------------------------------------------------------------------------------
_MMC_MEMBERSHIP = (
    "in a membership game only MMC's k = 2 game applies (p = 1/2); its k > 2 game draws each canary from k "
    "candidates, a reconstruction game: pass game='reconstruction'"
)


def mmc_applies(p, *, game: str = "reconstruction", kind: str = "count", max_targets: int | None = None) -> str | None:
    """Why MMC's one-run bound (arXiv:2410.22235) does not apply to the prior successes ``p`` (an array, or Priors), or
    None: every guessed target's p_i is 1/k for one integer k >= 2 (0: an abstention; MMC_CHECK.md C2), k = 2 in a
    membership game, and at most ``max_targets`` guessed targets (None: no limit). One exact guess per target and a
    replace-one profile are the caller's (``Theorem.applies``, best's Comparator). ``kind``: "probability" (one
    target) or "count" words the reason."""
    if isinstance(p, Priors):
        values, counts = p.values, p.counts
    else:
        values = np.atleast_1d(np.asarray(p, dtype=float)).reshape(-1)
        counts = np.ones(values.shape, dtype=np.int64)
    try:
        k = prior_work.uniform_candidates(values, bound="mmc")
    except ValueError:
        k = None
    if k is None or not np.any(values > 0):
        if kind == "probability":
            return f"applies only to uniform priors p = 1/k (k >= 2 candidates), got p = {float(values[0])!r}"
        return "applies only to uniform priors: every p_i must be 1/k for one k >= 2 (or 0, an abstention)"
    if game == "membership" and k != 2:
        return _MMC_MEMBERSHIP + (f", got p = {float(values[0])!r}" if kind == "probability" else "")
    guessed = int(np.sum(counts[values > 0]))
    if max_targets is not None and guessed > max_targets:
        return f"its recursion runs on at most {max_targets} guessed targets (MMC_MAX_TARGETS), got {guessed}"
    return None


# --------------------------------------------------------------------------------------------
# The operations
# --------------------------------------------------------------------------------------------
def _pure_tail_at(s: Setting, v: int, eps: float) -> tuple:
    return pure_tail(eps, s.p).value(v), eps, 0.0


def _pure_counts_at(s: Setting, confs: np.ndarray, eps: float) -> np.ndarray:
    tail = pure_tail(eps, s.p)
    return np.array([tail.first_below(1.0 - c) - 1 for c in confs])


def _pure_tail(s: Setting, v: int, **_) -> tuple:
    return _pure_tail_at(s, v, s.pure)


def _pure_counts(s: Setting, confs: np.ndarray, hint=None) -> np.ndarray:
    return _pure_counts_at(s, confs, s.pure)


def _split_tail(s: Setting, v: int, rtol: float = 1e-7, **_) -> tuple:
    value, eps = minimise_over_eps(OneRun(s.profile, s.p, s.set_valued), v, rtol)
    return value, eps, 0.0


def _split_counts(s: Setting, confs: np.ndarray, hint=None) -> list[int]:
    # each confidence on its own OneRun: the search's eps seeds (from the smallest target asked) and its state depend
    # on the targets searched together, so a count depended on which other confidences were asked (Zipf's p*, 1000
    # targets, mu = 0.665: 904 at 0.95 alone, 905 with 0.05 and 0.5)
    return [split_counts(OneRun(s.profile, s.p, s.set_valued), np.array([1.0 - c]))[0] for c in confs]


def _split_tail_at(s: Setting, v: int, eps: float) -> tuple:
    return float(OneRun(s.profile, s.p, s.set_valued).objective(eps, v)), eps, 0.0


def _split_counts_at(s: Setting, confs: np.ndarray, eps: float) -> list[int]:
    # a fresh OneRun per confidence, as _split_counts (the J-search keeps state between calls)
    return [OneRun(s.profile, s.p, s.set_valued).smallest_passing(eps, 1.0 - c) - 1 for c in confs]


def _whole_tail(s: Setting, v: int, **_) -> tuple:
    value, t = whole_prior_tail(s.profile, s.distributions, v, s.set_size)
    return value, t, 0.0


def _whole_counts(s: Setting, confs: np.ndarray, hint=None) -> list[int]:
    return whole_prior_counts(s.profile, s.distributions, 1.0 - confs, s.set_size)


def _whole_tail_at(s: Setting, v: int, eps: float) -> tuple:
    """Theorem 3 at the thresholds q_i = beta(eps, p_i) (t = eps) of the profile's budgets; with no profile (an eps-DP
    mechanism known by its eps) Theorem 3 for ApproxDP(eps, 0), its threshold searched."""
    if s.profile is not None:
        return WholePriorRun(s.profile, s.distributions, s.set_size).objective(eps, v), eps, 0.0
    if not 0 < v <= s.distributions.n:
        return (1.0 if v <= 0 else 0.0), eps, 0.0
    return _whole_tail(Setting(ApproxDP(eps, 0.0), s.p, s.distributions, s.set_valued, s.set_size, s.game), v)


def _whole_counts_at(s: Setting, confs: np.ndarray, eps: float) -> list[int]:
    if s.profile is not None:
        run = WholePriorRun(s.profile, s.distributions, s.set_size)
        return [run.smallest_passing(eps, 1.0 - c) - 1 for c in confs]
    return whole_prior_counts(ApproxDP(eps, 0.0), s.distributions, 1.0 - confs, s.set_size)


def _guessed(s: Setting) -> np.ndarray:
    return np.repeat(s.p.values, s.p.counts)


def _mmc_tail(s: Setting, v: int, **_) -> tuple:
    return prior_work.mmc_tail_bound(s.profile, _guessed(s), v), math.nan, 0.0  # no eps parameter


def _mmc_counts(s: Setting, confs: np.ndarray, hint=None) -> np.ndarray:
    return np.atleast_1d(prior_work.mmc_bound(s.profile, _guessed(s), confidence=confs)).astype(int)


def _prior_run_tail(s: Setting, v: int, **_) -> tuple:
    return prior_run.prior_run_tail(s.profile, s.distributions, v, groups=s.groups), math.nan, 0.0


def _prior_run_counts(s: Setting, confs: np.ndarray, hint=None) -> list[int]:
    return prior_run.prior_run_counts(s.profile, s.distributions, 1.0 - confs, hint=hint, groups=s.groups,
                                      at_most=True)


def _designated_tail(s: Setting, v: int, **_) -> tuple:
    return designated_run.designated_run_tail(s.profile, s.distributions, v), math.nan, 0.0


def _designated_counts(s: Setting, confs: np.ndarray, hint=None) -> list[int]:
    return designated_run.designated_run_counts(s.profile, s.distributions, 1.0 - confs, hint)


def _marginal_work(s: Setting) -> float | None:
    """Theorem 6's work budget: marginal_run.WORK in the default minimum, none where designated=True asks for it."""
    return None if s.designated else marginal_run.WORK


def _marginal_tail(s: Setting, v: int, **_) -> tuple:
    return marginal_run.marginal_run_tail(s.profile, s.distributions, v, work=_marginal_work(s)), math.nan, 0.0


def _marginal_counts(s: Setting, confs: np.ndarray, hint=None) -> list[int]:
    return marginal_run.marginal_run_counts(s.profile, s.distributions, 1.0 - confs, hint, work=_marginal_work(s))


def _expected_tail(s: Setting, v: int, eps=None, **_) -> tuple:
    """Theorem 2's value, eps and standard error (Theorem 3.1 averaged for an eps-DP profile)."""
    pure = s.pure
    run = ExpectedRun(s.profile, list(s.runs))
    if eps is not None:
        best = float(_validate.positive("eps", eps, allow_zero=True, allow_inf=True))
        if pure is not None and best < pure:
            raise ValueError(f"eps must be >= the profile's eps = {pure!r} for {s.profile!r} (Theorem 3.1 holds at "
                             f"the profile's eps, the one-run point below it is not a valid bound), got {best!r}.")
        value = run.objective(best, v)
    elif pure is not None:
        best = pure
        value = run.objective(best, v)
    else:
        value, best = minimise_over_eps(run, v)
    per_run = np.array([t.value(v) for t in run.per_run(best)])
    se = float(np.std(per_run, ddof=1) / math.sqrt(len(per_run))) if len(per_run) > 1 else math.nan
    return float(value), best, se


def _expected_counts(s: Setting, confs: np.ndarray, hint=None) -> np.ndarray:
    run = ExpectedRun(s.profile, list(s.runs))
    if s.pure is not None:
        return np.array([run.smallest_passing(s.pure, 1.0 - c) - 1 for c in confs], dtype=int)
    targets = 1.0 - confs
    top = run.eps_max(float(np.min(targets)))
    return np.array(count_search(run, targets, seeds=run.grid(top, 10), top=top), dtype=int)


def _expected_whole_tail(s: Setting, v: int, **_) -> tuple:
    value, t, se = expected_whole_prior_tail(s.profile, list(s.per_run), v, s.set_size)
    return value, t, se


def _expected_whole_counts(s: Setting, confs: np.ndarray, hint=None) -> list[int]:
    return expected_whole_prior_counts(s.profile, list(s.per_run), 1.0 - confs, s.set_size)


def _expected_prior_run_tail(s: Setting, v: int, **_) -> tuple:
    pooled = prior_run.pooled_conjugate(s.profile, list(s.per_run), s.groups)
    return prior_run.PriorRun(s.profile, None, pooled).tail(v), math.nan, 0.0  # a bound on the mixture: no estimate


def _expected_prior_run_counts(s: Setting, confs: np.ndarray, hint=None) -> list[int]:
    return prior_run.expected_prior_run_counts(s.profile, list(s.per_run), 1.0 - confs, hint=hint, groups=s.groups,
                                               at_most=True)


# --------------------------------------------------------------------------------------------
# The theorems, in the order of every minimum (ties go to the earlier)
# --------------------------------------------------------------------------------------------
_NOT_BELOW_T3 = {"tail": _two_values}

EXPECTED = Theorem(
    name="Theorem 3.2 with the split budget (THEORY.md Thm 2), averaged over the trials", short="T2",
    theory="Thm 2 (§4)", paper="3.2, budget spread over the shortfall",
    code="`theorems.expected_tail`, `search.ExpectedRun`",
    needs="each trial's prior successes of the guesses made (`p_runs`); any profile (eps-DP: Theorem 3.1 averaged "
          "over the trials); any success metric; an estimate over the trials",
    applies=_needs_runs, tail=_expected_tail, counts=_expected_counts, family="trials")
PURE = Theorem(
    name="Theorem 3.1 at the profile's eps (eps-DP)", short="P3.1", theory="§7", paper="3.1",
    code="`theorems.pure_dp_tail`, `priors.pure_tail`",
    needs="an eps-DP profile (at its own eps); the prior successes p; any success metric",
    applies=_first(_pure_only, _needs_p), tail=_pure_tail, counts=_pure_counts, skips=_NOT_BELOW_T3,
    aliases=("Theorem 3.1 (eps-DP, the posterior argument)",),
    at_eps={"tail": _pure_tail_at, "counts": _pure_counts_at}, applies_at=_first_at(_needs_p, _eps_alone))
SPLIT = Theorem(
    name="split one-run theorem (THEORY.md Thm 1)", short="T1", theory="Thm 1 (§3)",
    paper="— (replaces thm:eps_bound_approx_comp / f_comp)",
    code="`theorems.split_tail_bound`, `search.OneRun`",
    needs="a profile that is not eps-DP; the prior successes p (set-valued success: with the collision "
          "probabilities)",
    applies=_first(_not_pure, _needs_p), tail=_split_tail, counts=_split_counts, skips=_NOT_BELOW_T3,
    version_of=lambda: SPLIT_THEOREM_VERSION, version_key="split",
    at_eps={"tail": _split_tail_at, "counts": _split_counts_at}, applies_at=_first_at(_needs_p, _profile_at))
WHOLE_PRIOR = Theorem(
    name=whole_prior.WHOLE_PRIOR_THEOREM, short="T3", theory="Thm 3 (§8)", paper="—",
    code="`search.whole_prior_tail` / `whole_prior_counts`, `whole_prior.py`",
    needs="each target's whole prior; one exact guess, or set-valued with the sets' largest size (Lemma 4'); "
          "counts skip uniform priors",
    applies=_needs_whole_prior, tail=_whole_tail, counts=_whole_counts, skips={"counts": _uniform},
    version_of=lambda: whole_prior.WHOLE_PRIOR_VERSION, version_key="whole_prior",
    at_eps={"tail": _whole_tail_at, "counts": _whole_counts_at},
    applies_at=_first_at(_needs_whole_prior, _finite_eps))
EXPECTED_WHOLE_PRIOR = Theorem(
    name=f"{whole_prior.WHOLE_PRIOR_THEOREM}{AVERAGED}", short="T3", theory="Cor. 3.1 (§8)", paper="—",
    code="`search.expected_whole_prior_tail` / `expected_whole_prior_counts`",
    needs="a whole prior per trial; one exact guess, or set-valued with the sets' largest size",
    applies=_needs_per_run, tail=_expected_whole_tail, counts=_expected_whole_counts, family="trials",
    version_of=lambda: whole_prior.WHOLE_PRIOR_VERSION, version_key="whole_prior")
MMC = Theorem(
    name="MMC one-run count (ICML 2025 Thm 3.2)", short="MMC", theory="§5, MMC_CHECK.md",
    paper="— (Mahloujifar, Melis & Chaudhuri, Thm 3.2)",
    code="`prior_work.mmc_tail_bound` / `mmc_bound`, `registry.mmc_applies`",
    needs="one exact guess; a profile that is not eps-DP; every guessed p_i = 1/k for one k (0: abstains; k = 2 in "
          "a membership game; MMC_CHECK.md's Proposition M would allow max π_i ≤ 1/k, not used); at most "
          "`MMC_MAX_TARGETS` guessed",
    applies=_first(_exact_guess, _not_pure, _needs_p,
                   _known(lambda s: mmc_applies(s.p, game=s.game, max_targets=MMC_MAX_TARGETS), "p")),
    tail=_mmc_tail, counts=_mmc_counts, skips=_NOT_BELOW_T3)
PRIOR_RUN = Theorem(
    name=prior_run.PRIOR_RUN_THEOREM, short="T4", theory="Thm 4 (§9)", paper="—", code="`prior_run.py`",
    needs="one exact guess; each target's whole prior; any n (count blocks above 300 targets, Corollary 9.3)",
    applies=_first(_exact_guess, _needs_whole_prior, _known(lambda s: _theorem_4_cap(s.distributions.n),
                                                            "distributions")),
    tail=_prior_run_tail, counts=_prior_run_counts, skips=_NOT_BELOW_T3, hinted=True,
    version_of=lambda: prior_run.PRIOR_RUN_VERSION, version_key="prior_run")
EXPECTED_PRIOR_RUN = Theorem(
    name=f"{prior_run.PRIOR_RUN_THEOREM}{AVERAGED}", short="T4", theory="Cor. 4.1 (§9)", paper="—",
    code="`prior_run.pooled_conjugate` / `expected_prior_run_counts`",
    needs="one exact guess; a whole prior per trial; n within Theorem 4's limit",
    applies=_first(_exact_guess, _needs_per_run, _known(lambda s: _theorem_4_cap(s.per_run[0].n), "per_run")),
    tail=_expected_prior_run_tail, counts=_expected_prior_run_counts, family="trials", hinted=True,
    version_of=lambda: prior_run.PRIOR_RUN_VERSION, version_key="prior_run")
DESIGNATED_RUN = Theorem(
    name=designated_run.DESIGNATED_RUN_THEOREM, short="T5", theory="Thm 5 (§10)", paper="—",
    code="`designated_run.py`",
    needs="asked for (`designated=True`); one exact guess; each target's whole prior; n ≤ "
          "`designated_run.DESIGNATED_RUN_MAX_TARGETS`",
    applies=_first(_asked, _exact_guess, _needs_whole_prior, _known(_theorem_5_cap, "distributions")),
    tail=_designated_tail, counts=_designated_counts, skips=_NOT_BELOW_T3, hinted=True,
    version_of=lambda: designated_run.DESIGNATED_RUN_VERSION, version_key="designated_run")
MARGINAL_RUN = Theorem(
    name=marginal_run.MARGINAL_RUN_THEOREM, short="T6", theory="Thm 6 (§10)", paper="—",
    code="`marginal_run.py`",
    needs="more than `marginal_run.MARGINAL_RUN_DEFAULT_FROM` targets, or asked for (`designated=True`); one exact "
          "guess; each target's whole prior; any n",
    applies=_first(_asked_or_many, _exact_guess, _needs_whole_prior),
    tail=_marginal_tail, counts=_marginal_counts, skips=_NOT_BELOW_T3, hinted=True,
    version_of=lambda: marginal_run.MARGINAL_RUN_VERSION, version_key="marginal_run")

#: Every theorem, in the order of every minimum. The families never meet out of order: Theorem 2 before the theorems
#: of one release (it wins their ties over the trials, as before), and count_bounds' order (Theorem 3.1 or 1, 3, MMC,
#: 4, 5, 6) and expected_count_bounds' (2, then those, or Corollaries 3.1 and 4.1) kept.
REGISTRY = Registry((EXPECTED, PURE, SPLIT, WHOLE_PRIOR, EXPECTED_WHOLE_PRIOR, MMC, PRIOR_RUN, EXPECTED_PRIOR_RUN,
                     DESIGNATED_RUN, MARGINAL_RUN))


def numbering_table() -> str:
    """The numbering table of THEORY.md and docs/pages/bounds.md (markdown; the versions are the theorems', read when
    asked, not the table's)."""
    return REGISTRY.table()
