"""The tightest applicable bound for one setting: ours and every prior-work comparator that applies.

``best_bound(profile, p)`` (one target) compares success-probability bounds; with a ``confidence``
it compares count bounds (the smallest c with Pr[#attacked >= c + 1] <= 1 - confidence, as in
``theorems.count_bound``: at most c attacked with that confidence) over the n targets of ``p``: ours,
MMC's one-run tail, and for the per-target comparators (KGK, ReRo, Narcissus, Cherubin, Stock) Markov's
inequality on E[#attacked] <= sum_i s(p_i). A comparator enters only where its paper's preconditions
hold; the others are listed in ``not_applicable`` with the reason, never as numbers. ``COMPARATORS`` is
the one registry of comparators (``applies`` and ``value``), used here and by the ``comparator`` bound
box; what a profile is (eps-DP, mu-GDP, its Renyi curve) comes from the profile itself
(``PrivacyProfile.pure_epsilon``, ``gdp_mu``, ``renyi``).

``game`` says what the secret is. In a "reconstruction" game (the default; attribute inference too)
changing target i's secret replaces its record, so every bound uses the replace-one profile
(an add/remove profile is converted first: ``profiles.for_game``). In a "membership" game the secret
is a membership bit and an add/remove profile applies as it is; there MMC counts only with k = 2
(its k > 2 game draws each canary from k candidates, a reconstruction game) and Steinke's Theorem
5.2 is in its own setting (canaries included with probability 1/2).

``set_valued`` says whether a target's success set can hold more than one value (k > 1 guesses, a
distance window). Ours is then the split theorem with its set-valued weights (``theorems.tail_bound``,
``collision`` the priors' collision probabilities, None for the worst case); the comparators whose
games score one exact guess among candidates (MMC, Steinke, Cherubin) are listed as not applicable.
What stays from prior work is valid for any success event E of prior probability p, because its proof
only compares Pr[E] on neighbouring datasets: KGK 1 - f(p) (the trade-off curve applied to the test
"E happened"), Narcissus e^eps p + delta, ReRo and Stock (Renyi DP applied to the same event). Their
counts over n targets use E[#attacked] <= sum_i s(p_i) (each target's success probability is bounded
with the others' records fixed, and expectation is linear) and Markov's inequality: the smallest c with
sum_i s(p_i) / (c + 1) <= 1 - confidence.

Steinke, Nasr & Jagielski's one-run count (Thm 5.2) is never reported as a count: exact (eps, delta)-DP
mechanisms beat it (``STEINKE_COUNT_REASON``); at one target (m = r = v = 1) it is q + 2 delta (1 - q),
above the exact single-target worst case, and stays as a probability bound.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from . import _validate, prior_work, registry, theorems
from .priors import Distributions

__all__ = ["BestBound", "best_bound", "SOURCES", "COMPARATORS", "Comparator", "Setting", "kgk_markov_count",
           "markov_count", "uniform_k", "STEINKE_COUNT_REASON", "RDP_ORDERS"]

#: Every name best_bound can report, ours first (ties go to the earlier name).
SOURCES = ("ours", "kgk", "mmc", "steinke", "rero", "narcissus", "cherubin", "stock")


@dataclass(frozen=True)
class BestBound:
    """The smallest applicable bound: ``value`` from ``source``; ``all`` maps every applicable name to
    its value; ``not_applicable`` maps the other names to why; ``kind`` is "probability" or "count";
    ``game`` is "reconstruction" or "membership" and ``profile`` the profile the bounds used
    (replace-one in a reconstruction game)."""

    value: float | int
    source: str
    all: dict = field(default_factory=dict)
    not_applicable: dict = field(default_factory=dict)
    kind: str = "probability"
    game: str = "reconstruction"
    profile: object = None
    set_valued: bool = False

    def as_dict(self) -> dict:
        """JSON-able dict (metrics.json)."""
        return {
            "value": self.value,
            "source": self.source,
            "kind": self.kind,
            "game": self.game,
            "set_valued": self.set_valued,
            "profile": None if self.profile is None else self.profile.params(),
            "all": dict(self.all),
            "not_applicable": dict(self.not_applicable),
        }


# ---------------------------------------------------------------- helpers


#: Renyi orders on which an RDP guarantee is evaluated (dense near 1, where small priors are decided).
RDP_ORDERS = np.unique(np.concatenate([1.0 + 2.0 ** (np.arange(-80, 1) / 8.0),
                                       np.arange(2.0, 64.5, 0.5), [80.0, 128.0, 256.0]]))


def _epsilon_grid(profile, top: float) -> np.ndarray:
    cap = getattr(profile, "max_useful_epsilon", math.inf)
    top = min(top, cap) if math.isfinite(cap) else top
    grid = np.unique(np.concatenate([np.linspace(0.0, top, 601), np.geomspace(1e-4, max(top, 1e-4), 300)]))
    return grid[grid <= top]


def _min_over_epsilon(profile, bound_at, top: float) -> float:
    """min over eps of bound_at(eps, delta(eps)): every eps gives a valid bound, so any minimiser is safe."""
    grid = _epsilon_grid(profile, top)
    values = np.asarray(bound_at(grid, np.asarray(profile.delta(grid), dtype=float)), dtype=float)
    j = int(np.argmin(values))
    best = float(values[j])
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, len(grid) - 1)]
    if hi > lo and prior_work._cheap_delta(profile):  # scalar refinement only where delta is a closed form
        res = optimize.minimize_scalar(
            lambda e: float(np.asarray(bound_at(np.array([e]), np.atleast_1d(profile.delta_upper(e))))[0]),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-10},
        )
        if res.success and np.isfinite(res.fun):
            best = min(best, float(res.fun))
    return best


def uniform_k(p, allowed=None) -> int | None:
    """k if every nonzero p_i is 1/k for one integer k >= 2 (and k in ``allowed``), else None (zeros abstain)."""
    try:
        k = prior_work.uniform_candidates(p, allowed=allowed)
    except ValueError:
        return None
    return k if np.any(np.asarray(p) > 0) else None


def markov_count(total: float, n: int, confidence: float) -> int:
    """Smallest c in 0..n with total / (c + 1) <= 1 - confidence: Markov on E[#attacked] <= total."""
    return int(np.clip(math.ceil(total / (1.0 - confidence)) - 1, 0, n))


def kgk_markov_count(profile, p, confidence: float) -> int:
    """Count bound from KGK, valid for any success metric: the smallest c in 0..n with
    sum_i (1 - f(p_i)) / (c + 1) <= 1 - confidence (E[#attacked] <= sum_i (1 - f(p_i)), then Markov)."""
    q = np.atleast_1d(_validate.probability("p", p)).astype(float).reshape(-1)
    conf = float(_validate.confidence("confidence", confidence))
    return COMPARATORS["kgk"].value(profile, q, Setting(kind="count"), conf)


# ---------------------------------------------------------------- the comparators, one registry


@dataclass(frozen=True)
class Setting:
    """What a comparator needs to know to say whether it applies: the game, the success notion, one target or n."""

    game: str = "reconstruction"
    set_valued: bool = False
    kind: str = "probability"  # or "count"


#: Why a comparator scoring one exact guess among candidates does not apply to set-valued success.
_EXACT_GUESS_ONLY = "its game scores one exact guess among candidates; success here is a set of values (set_valued=True)"
#: Why Steinke et al.'s one-run count is not reported (THEORY.md, section 5).
STEINKE_COUNT_REASON = (
    "Steinke, Nasr & Jagielski's one-run count (Thm 5.2, alpha 2 n delta) is beaten by exact (eps, delta)-DP "
    "mechanisms (n = 3 uniform bits, (0, 0.1)-DP: Pr[>= 1 correct] = 77/80 > 0.95): not a valid bound; see "
    "stages/bound/THEORY.md"
)


class Comparator(ABC):
    """A prior-work bound: ``applies`` says why not (a sentence) or None; ``value`` is its number.

    Per-target comparators bound one target's success probability s(p); over n targets their count is
    Markov's inequality on E[#attacked] <= sum_i s(p_i) (their papers say nothing about how successes on
    different targets combine). One-run comparators (MMC) have a tail bound of their own.
    """

    name = ""
    one_exact_guess = False  # its game scores one exact guess among candidates

    def applies(self, profile, p: np.ndarray, setting: Setting) -> str | None:
        if setting.set_valued and self.one_exact_guess:
            return _EXACT_GUESS_ONLY
        return self._applies(profile, p, setting)

    def _applies(self, profile, p: np.ndarray, setting: Setting) -> str | None:
        return None

    @abstractmethod
    def per_target(self, profile, p: np.ndarray) -> np.ndarray:
        """Bounds s(p_i) on each target's success probability."""

    def value(self, profile, p: np.ndarray, setting: Setting, confidence: float | None = None):
        """Success probability bound (setting.kind == "probability", p of size 1) or count at ``confidence``."""
        if setting.kind == "probability":
            return float(np.asarray(self.per_target(profile, p[:1]))[0])
        s = self.per_target(profile, p)  # a target with s = 0 (e.g. an abstention under eps-DP) is never attacked
        return markov_count(float(np.sum(s)), int(np.count_nonzero(s)), float(confidence))


class _KGK(Comparator):
    name = "kgk"

    def per_target(self, profile, p):
        return np.asarray(prior_work.kgk_bound(profile, p), dtype=float)


class _Narcissus(Comparator):
    name = "narcissus"

    def per_target(self, profile, p):
        values, inverse = np.unique(np.atleast_1d(p), return_inverse=True)
        out = []
        for q in values:
            top = max(0.0, math.log(1.0 / q)) + 1.0 if q > 0 else 60.0  # beyond log(1/p), e^eps p > 1
            out.append(_min_over_epsilon(profile, lambda e, d: np.minimum(1.0, np.exp(np.minimum(e, 700.0)) * q + d),
                                         top=top))
        return np.asarray(out)[inverse.ravel()]


class _Renyi(Comparator):
    """ReRo and Stock: from the profile's Renyi-DP curve (``PrivacyProfile.renyi``)."""

    def _applies(self, profile, p, setting):
        return None if profile.renyi(RDP_ORDERS[:1]) is not None else profile.renyi_missing()

    def per_target(self, profile, p):
        function = prior_work.rero_bound if self.name == "rero" else prior_work.stock_bound
        out = np.atleast_1d(np.asarray(function(p, rdp=(RDP_ORDERS, profile.renyi(RDP_ORDERS))), dtype=float))
        eps = profile.pure_epsilon()
        if self.name == "rero" and eps is not None:  # ReRo's eps-DP corollary, e^eps p (the limit of high orders)
            out = np.minimum(out, np.atleast_1d(prior_work.rero_bound(p, eps=eps)))
        return out


class _ReRo(_Renyi):
    name = "rero"


class _Stock(_Renyi):
    name = "stock"


class _Cherubin(Comparator):
    name = "cherubin"
    one_exact_guess = True

    def _applies(self, profile, p, setting):
        from .profiles import DPSGD

        if not isinstance(profile, DPSGD):
            return f"a closed form for DP-SGD only, got a {profile.name} profile"
        if uniform_k(p) is None:
            return f"applies only to uniform priors p = 1/k, got p = {float(np.max(p))!r}"
        if profile.sample_rate != 1.0:
            return ("exact only for full-batch DP-SGD (sample_rate = 1): for q < 1 the published closed form "
                    "drops an O(sqrt(qT)/sigma) term and is not a certified bound")
        if profile.neighboring != "replace_one":
            return "the closed form assumes replace-one neighbours (candidates' gradients differ by up to 2C)"
        return None

    def per_target(self, profile, p):
        return np.atleast_1d(np.asarray(prior_work.cherubin_bound(profile.noise_multiplier, profile.sample_rate,
                                                                   profile.steps, p), dtype=float))


class _MMC(Comparator):
    name = "mmc"
    one_exact_guess = True

    def _applies(self, profile, p, setting):
        # the theorems' own test (registry.MMC), without their limit on the guessed targets
        return registry.mmc_applies(p, game=setting.game, kind=setting.kind)

    def per_target(self, profile, p):
        return np.array([prior_work.mmc_bound(profile, float(q)) for q in np.atleast_1d(p)])

    def value(self, profile, p, setting, confidence=None):
        if setting.kind == "probability":
            return float(prior_work.mmc_bound(profile, float(p[0])))
        return int(prior_work.mmc_bound(profile, p, confidence=confidence))


class _Steinke(Comparator):
    name = "steinke"
    one_exact_guess = True

    def _applies(self, profile, p, setting):
        if setting.kind == "count" and p.size > 1:
            return STEINKE_COUNT_REASON
        if uniform_k(p, allowed=(2,)) is None:
            return f"applies only to membership inference, p = 1/2, got p = {float(p[0])!r}"
        return None

    def per_target(self, profile, p):
        # Theorem 5.2 at m = r = v = 1: q + 2 delta (1 - q), q = e^eps / (1 + e^eps), minimised over eps
        value = _min_over_epsilon(profile, lambda e, d: np.minimum(1.0, special.expit(e) + 2.0 * d * special.expit(-e)),
                                  top=60.0)
        return np.full(np.atleast_1d(p).shape, value)


#: Every prior-work comparator, by name (the order of SOURCES after "ours").
COMPARATORS: dict[str, Comparator] = {c.name: c for c in (_KGK(), _MMC(), _Steinke(), _ReRo(), _Narcissus(),
                                                           _Cherubin(), _Stock())}


def _bounds(profile, p: np.ndarray, setting: Setting, confidence: float | None, collision,
            distributions=None) -> tuple[dict, dict]:
    """{name: value} of ours and every comparator that applies, and {name: why not} of the others."""
    if setting.kind == "probability":
        one = None if distributions is None else np.asarray(list(distributions)[0], dtype=float)
        values: dict = {"ours": float(theorems.success_bound(profile, float(p[0]), distribution=one, game=setting.game,
                                                             set_valued=setting.set_valued, collision=collision))}
    else:
        values = {"ours": int(np.asarray(theorems.count_bound(
            profile, None if distributions is not None and not setting.set_valued else p, confidence,
            distributions=distributions, game=setting.game, set_valued=setting.set_valued,
            collision=None if distributions is not None else collision)))}
    skipped: dict = {}
    for name, comparator in COMPARATORS.items():
        why = comparator.applies(profile, p, setting)
        if why is None:
            values[name] = comparator.value(profile, p, setting, confidence)
        else:
            skipped[name] = why
    return values, skipped


# ---------------------------------------------------------------- the public function


def best_bound(
    profile, p=None, *, n: int | None = None, confidence: float | None = None, game: str = "reconstruction",
    set_valued: bool = False, collision=None, distributions=None,
) -> BestBound:
    """The smallest bound, over ours and every applicable comparator, for one setting.

    * ``confidence=None``: one target; ``p`` is the prior success of the a priori optimal guess (a
      scalar, or shape (1,)); the values are bounds on the success probability: ours
      (``theorems.success_bound``), kgk, mmc (p = 1/k), steinke (p = 1/2), rero and stock (pure DP,
      Gaussian DP or add/remove DP-SGD), narcissus, cherubin (full-batch replace-one DP-SGD, p = 1/k).
    * ``confidence`` given: ``p`` has shape (n,) (or is a scalar repeated ``n`` times); the values are
      count bounds (smallest c with Pr[#attacked >= c + 1] <= 1 - confidence): ours
      (``theorems.count_bound``), mmc and steinke where their uniform-prior conditions hold.

    * ``game="reconstruction"`` (default): the secret is a record (or an attribute of it), changing it
      replaces the record, and an add/remove profile is first converted to the replace-one profile of
      the same mechanism (``profiles.for_game``: DP-SGD is re-accounted); MMC's k-ary game and
      Steinke's binary game are then played with replaced records, as in the paper's encoding.
      ``game="membership"``: the secret is a membership bit, the profile is used as given (add/remove
      is the right relation), MMC applies only with k = 2 and Steinke in its own setting.

    * ``set_valued=True``: a target's success set can hold more than one value (k > 1 guesses, a
      distance window). Ours uses the split theorem's set-valued weights with the priors' collision
      probabilities ``collision`` (None: the worst case); of prior work only bounds valid for any success
      event remain (module docstring): kgk, narcissus, rero, stock, and for counts kgk summed over the
      targets with Markov's inequality. The others are in ``not_applicable`` with the reason.
    * Steinke's one-run count is in ``not_applicable`` for n > 1 targets (``STEINKE_COUNT_REASON``); at n = 1
      (one target, p = 1/2, with or without a confidence) its value q + 2 delta (1 - q) is at least the exact
      worst case and is reported.
    * ``distributions``: each target's whole prior (see ``theorems.count_bound``); ours then includes the
      whole-prior theorem (one exact guess), and ``p`` may be None (p_i = max pi_i).

    Returns a BestBound whose ``value`` is the minimum of ``all`` and ``source`` its name (ours wins
    ties). Raises ValueError for n > 1 targets without a confidence.

    Examples:
        >>> from stages.bound import GaussianDP
        >>> one = best_bound(GaussianDP(1.0), 0.5)   # one target, a binary secret: a probability
        >>> one.source, round(one.value, 4), sorted(one.not_applicable)
        ('ours', 0.6915, ['cherubin'])
        >>> many = best_bound(GaussianDP(1.0), [0.1] * 100, confidence=0.95)   # 100 targets: a count
        >>> many.kind, many.source, many.value
        ('count', 'ours', 62)
    """
    set_valued = theorems._check_set_valued(set_valued)
    profile = theorems._profile(profile, game)
    if distributions is not None:
        if _validate.ndim(distributions) == 1 and not isinstance(distributions, (list, tuple)) or (
                isinstance(distributions, (list, tuple)) and distributions and _validate.ndim(distributions[0]) == 0):
            distributions = [distributions]  # one target's prior
        grouped = Distributions.of(distributions)
        if p is None:
            if set_valued:
                raise _validate.ArgumentError("p", "p must be given for set-valued success (the prior mass of the best "
                                                   "success set depends on the metric), got None.")
            p = np.repeat(grouped.p, grouped.counts)
    if p is None:
        raise _validate.ArgumentError("p", "p must be given (the targets' prior successes) unless distributions= gives "
                                           "their whole priors, got None.")
    fix = {2: "for each target's whole prior pass distributions="}.get(_validate.ndim(p), "")
    arr = _validate.vector("p", p, _validate.probability, what="one prior success per target", allow_scalar=True, fix=fix)
    if distributions is not None and arr.ndim == 1 and n is None:
        _validate.same_targets("p", arr.size, "distributions", grouped.n)
    if n is not None:
        n = _validate.integer("n", n, minimum=1)
        if arr.ndim == 0:
            arr = np.full(n, float(arr))
        elif arr.size != n:
            raise ValueError(f"n must match the number of priors in p, got n = {n} and {arr.size} priors.")
    arr = np.atleast_1d(arr).astype(float)

    if confidence is None:
        if arr.size != 1:
            raise ValueError(
                f"best_bound over n = {arr.size} targets needs a confidence (e.g. confidence=0.95) for a count "
                "bound; without one it bounds one target's success probability."
            )
        kind = "probability"
        if collision is not None and np.size(_validate.elementwise("collision", collision)) != 1:
            raise _validate.shape_error("collision", collision, "the target's collision probability (one number)")
        values, skipped = _bounds(profile, arr, Setting(game, set_valued, kind), None,
                                  None if collision is None else float(np.ravel(collision)[0]), distributions)
    else:
        c = _validate.scalar("confidence", confidence, _validate.confidence,
                             fix="call best_bound once per confidence")
        kind = "count"
        values, skipped = _bounds(profile, arr, Setting(game, set_valued, kind), float(c), collision, distributions)

    source = min((name for name in SOURCES if name in values), key=lambda name: (values[name], SOURCES.index(name)))
    ordered = {name: values[name] for name in SOURCES if name in values}
    return BestBound(values[source], source, ordered, {k: skipped[k] for k in SOURCES if k in skipped}, kind, game,
                     profile, set_valued)
