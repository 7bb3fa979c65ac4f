"""The tightest applicable bound for one setting: ours and every prior-work comparator that applies.

``best_bound(profile, p)`` (one target) compares success-probability bounds; with a ``confidence``
it compares count bounds (the smallest c with Pr[#attacked >= c + 1] <= 1 - confidence, as in
``theorems.count_bound``: at most c attacked with that confidence) over the n
targets of ``p``, where only ours and the one-run comparators (MMC, Steinke) give counts. A
comparator enters only where its paper's preconditions hold (see ``stages.bound.prior_work``);
the others are listed in ``not_applicable`` with the reason, never as numbers.

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
"E happened"), Narcissus e^eps p + delta, ReRo and Stock (Renyi DP applied to the same event). For
counts over n targets KGK gives E[#attacked] <= sum_i (1 - f(p_i)) (each target's success probability
is bounded with the others' records fixed, and expectation is linear), turned into a count with
Markov's inequality: the smallest c with sum_i (1 - f(p_i)) / (c + 1) <= 1 - confidence.

Steinke, Nasr & Jagielski's one-run count (Thm 5.2) is never reported as a count: exact (eps, delta)-DP
mechanisms beat it (``STEINKE_COUNT_REASON``); at one target (m = r = v = 1) it is q + 2 delta (1 - q),
above the exact single-target worst case, and stays as a probability bound.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from . import _validate, prior_work, theorems

__all__ = ["BestBound", "best_bound", "SOURCES", "kgk_markov_count", "STEINKE_COUNT_REASON"]

#: Every name best_bound can report, ours first (ties go to the earlier name).
SOURCES = ("ours", "kgk", "mmc", "steinke", "rero", "narcissus", "cherubin", "stock")
#: Renyi orders on which an RDP accountant is evaluated.
_RDP_ORDERS = np.concatenate([[1.125, 1.25, 1.5, 1.75], np.arange(2.0, 64.5, 0.5), [80.0, 128.0, 256.0]])


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


# ---------------------------------------------------------------- what a profile is, in each paper's terms


def _kind(profile) -> tuple[str, dict]:
    params = dict(profile.params())
    return str(params.get("profile", type(profile).__name__)), params


def _gdp_mu(profile) -> float | None:
    """mu if the profile is exactly mu-GDP (Gaussian, composed Gaussian, full-batch DP-SGD)."""
    kind, _ = _kind(profile)
    if kind in ("GaussianDP", "ComposedGaussian"):
        return float(profile.mu)
    if kind == "DPSGD":
        mu = getattr(profile, "full_batch_mu", None)
        return None if mu is None else float(mu)
    return None


def _pure_eps(profile) -> float | None:
    kind, params = _kind(profile)
    if kind == "PureDP" or (kind == "ApproxDP" and float(params.get("delta", 0.0)) == 0.0):
        return float(params["eps"])
    return None


def _renyi(profile) -> tuple[dict | None, str]:
    """(description for rero_bound / stock_bound, reason if None)."""
    eps = _pure_eps(profile)
    if eps is not None:
        return {"eps": eps}, ""
    mu = _gdp_mu(profile)
    if mu is not None:
        return {"rho": mu * mu / 2.0}, ""  # mu-GDP is (alpha, alpha mu^2 / 2)-RDP: (mu^2 / 2)-zCDP
    kind, params = _kind(profile)
    if kind == "DPSGD" and params.get("neighboring") == "add_remove":
        import dp_accounting
        from dp_accounting import rdp as rdp_lib

        accountant = rdp_lib.RdpAccountant(orders=list(_RDP_ORDERS))
        event = dp_accounting.PoissonSampledDpEvent(profile.sample_rate, dp_accounting.GaussianDpEvent(profile.noise_multiplier))
        absl_log = logging.getLogger("absl")
        level = absl_log.level
        absl_log.setLevel(logging.ERROR)  # orders whose series does not converge come back as inf: harmless
        try:
            accountant.compose(dp_accounting.SelfComposedDpEvent(event, profile.steps))
        finally:
            absl_log.setLevel(level)
        rdp = np.asarray(accountant._rdp, dtype=float)
        rdp = np.where(np.isfinite(rdp) & (rdp >= 0), rdp, np.inf)
        return {"rdp": (_RDP_ORDERS, rdp)}, ""
    if kind == "DPSGD":
        return None, "no Renyi-DP accountant for replace-one Poisson-subsampled DP-SGD (dp_accounting supports add/remove only)"
    return None, f"needs a Renyi-DP or zCDP guarantee, which a {kind} profile does not give"


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


# ---------------------------------------------------------------- one target: success probabilities


def _is_reciprocal(p: float, allowed=None) -> bool:
    if not 0.0 < p <= 0.5:
        return False
    k = round(1.0 / p)
    return abs(p * k - 1.0) <= 1e-9 and (allowed is None or k in allowed)


_MMC_MEMBERSHIP = (
    "in a membership game only MMC's k = 2 game applies (p = 1/2); its k > 2 game draws each canary from k "
    "candidates, a reconstruction game: pass game='reconstruction'"
)


#: Why Steinke et al.'s one-run count is not reported (THEORY.md, section "What the paper's theorem gets wrong").
STEINKE_COUNT_REASON = (
    "Steinke, Nasr & Jagielski's one-run count (Thm 5.2, alpha 2 n delta) is beaten by exact (eps, delta)-DP "
    "mechanisms (n = 3 uniform bits, (0, 0.1)-DP: Pr[>= 1 correct] = 77/80 > 0.95): not a valid bound; see "
    "stages/bound/THEORY.md"
)

#: Why a comparator scoring one exact guess among candidates does not apply to set-valued success.
_EXACT_GUESS_ONLY = "its game scores one exact guess among candidates; success here is a set of values (set_valued=True)"


def _set_valued_skips(kind: str) -> dict:
    """What set-valued success rules out (module docstring): MMC, Steinke, Cherubin."""
    skipped = {name: _EXACT_GUESS_ONLY for name in ("mmc", "steinke")}
    if kind == "probability":
        skipped["cherubin"] = _EXACT_GUESS_ONLY
    return skipped


def kgk_markov_count(profile, p, confidence: float) -> int:
    """Count bound from KGK, valid for any success metric: the smallest c in 0..n with
    sum_i (1 - f(p_i)) / (c + 1) <= 1 - confidence (E[#attacked] <= sum_i (1 - f(p_i)), then Markov)."""
    q = np.atleast_1d(_validate.probability("p", p)).astype(float).reshape(-1)
    conf = float(_validate.confidence("confidence", confidence))
    total = float(np.sum(prior_work.kgk_bound(profile, q)))
    return int(np.clip(math.ceil(total / (1.0 - conf)) - 1, 0, q.size))


def _probability_bounds(profile, p: float, game: str, set_valued: bool = False, collision=None) -> tuple[dict, dict]:
    values: dict = {}
    skipped: dict = _set_valued_skips("probability") if set_valued else {}
    values["ours"] = float(theorems.success_bound(profile, p, game=game, set_valued=set_valued, collision=collision))
    values["kgk"] = float(prior_work.kgk_bound(profile, p))

    if "mmc" in skipped:
        pass
    elif _is_reciprocal(p) and (game == "reconstruction" or _is_reciprocal(p, allowed=(2,))):
        values["mmc"] = float(prior_work.mmc_bound(profile, p))
    elif _is_reciprocal(p):
        skipped["mmc"] = _MMC_MEMBERSHIP + f", got p = {p!r}"
    else:
        skipped["mmc"] = f"applies only to uniform priors p = 1/k (k >= 2 candidates), got p = {p!r}"

    if "steinke" in skipped:
        pass
    elif _is_reciprocal(p, allowed=(2,)):
        # Theorem 5.2 at m = r = v = 1: q + 2 delta (1 - q), q = e^eps / (1 + e^eps)
        values["steinke"] = _min_over_epsilon(
            profile, lambda e, d: np.minimum(1.0, special.expit(e) + 2.0 * d * special.expit(-e)), top=60.0
        )
    else:
        skipped["steinke"] = f"applies only to membership inference, p = 1/2, got p = {p!r}"

    renyi, why = _renyi(profile)
    if renyi is None:
        skipped["rero"] = why
        skipped["stock"] = why
    else:
        values["rero"] = float(prior_work.rero_bound(p, **renyi))
        if "eps" in renyi:  # eps-DP is (alpha, eps)-RDP for every alpha
            orders = _RDP_ORDERS
            values["stock"] = float(prior_work.stock_bound(p, rdp=(orders, np.full(orders.shape, renyi["eps"]))))
        else:
            values["stock"] = float(prior_work.stock_bound(p, **renyi))

    top = max(0.0, math.log(1.0 / p)) + 1.0 if p > 0 else 60.0  # beyond log(1/p), e^eps p > 1
    values["narcissus"] = _min_over_epsilon(
        profile, lambda e, d: np.minimum(1.0, np.exp(np.minimum(e, 700.0)) * p + d), top=top
    )

    kind, params = _kind(profile)
    if "cherubin" in skipped:
        pass
    elif kind == "DPSGD" and params.get("sample_rate") == 1.0 and params.get("neighboring") == "replace_one" and _is_reciprocal(p):
        values["cherubin"] = float(
            prior_work.cherubin_bound(profile.noise_multiplier, profile.sample_rate, profile.steps, p)
        )
    elif kind != "DPSGD":
        skipped["cherubin"] = f"a closed form for DP-SGD only, got a {kind} profile"
    elif not _is_reciprocal(p):
        skipped["cherubin"] = f"applies only to uniform priors p = 1/k, got p = {p!r}"
    elif params.get("sample_rate") != 1.0:
        skipped["cherubin"] = (
            "exact only for full-batch DP-SGD (sample_rate = 1): for q < 1 the published closed form "
            "drops an O(sqrt(qT)/sigma) term and is not a certified bound"
        )
    else:
        skipped["cherubin"] = "the closed form assumes replace-one neighbours (candidates' gradients differ by up to 2C)"
    return values, skipped


# ---------------------------------------------------------------- n targets: count bounds


def _count_bounds(profile, p: np.ndarray, confidence: float, game: str, set_valued: bool = False,
                  collision=None) -> tuple[dict, dict]:
    skipped: dict = {name: "bounds one target's success probability, not a count over n targets"
                     for name in ("kgk", "rero", "narcissus", "cherubin", "stock")}
    values: dict = {"ours": int(np.asarray(theorems.count_bound(profile, p, confidence, game=game, set_valued=set_valued,
                                                                collision=collision)))}
    if set_valued:
        skipped.update(_set_valued_skips("count"))
        # the any-metric fallback: KGK per target, summed, with Markov (module docstring)
        del skipped["kgk"]
        values["kgk"] = kgk_markov_count(profile, p, confidence)
        return values, skipped
    guessed = p[p > 0]
    try:
        prior_work.uniform_candidates(p, bound="mmc")
        uniform = guessed.size > 0
    except ValueError:
        uniform = False
    binary = uniform and _is_reciprocal(float(guessed[0]), allowed=(2,))
    if uniform and (game == "reconstruction" or binary):
        values["mmc"] = int(prior_work.mmc_bound(profile, p, confidence=confidence))
    elif uniform:
        skipped["mmc"] = _MMC_MEMBERSHIP
    else:
        skipped["mmc"] = "applies only to uniform priors: every p_i must be 1/k for one k >= 2 (or 0, an abstention)"
    skipped["steinke"] = STEINKE_COUNT_REASON
    return values, skipped


# ---------------------------------------------------------------- the public function


def best_bound(
    profile, p, *, n: int | None = None, confidence: float | None = None, game: str = "reconstruction",
    set_valued: bool = False, collision=None,
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
    * Steinke's one-run count is always in ``not_applicable`` (``STEINKE_COUNT_REASON``).

    Returns a BestBound whose ``value`` is the minimum of ``all`` and ``source`` its name (ours wins
    ties). Raises ValueError for n > 1 targets without a confidence.
    """
    if not isinstance(set_valued, (bool, np.bool_)):
        raise ValueError(f"set_valued must be True or False, got {set_valued!r}.")
    set_valued = bool(set_valued)
    profile = theorems._profile(profile, game)
    arr = _validate.probability("p", p)
    if arr.ndim > 1:
        raise ValueError(f"p must be a number or a 1-d array of prior success probabilities, got shape {arr.shape}.")
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
        values, skipped = _probability_bounds(profile, float(arr[0]), game, set_valued,
                                              None if collision is None else float(np.ravel(collision)[0]))
        kind = "probability"
    else:
        c = _validate.confidence("confidence", confidence)
        if c.ndim != 0:
            raise ValueError(f"confidence must be a single number in (0, 1), got {confidence!r}.")
        values, skipped = _count_bounds(profile, arr, float(c), game, set_valued, collision)
        kind = "count"

    source = min((name for name in SOURCES if name in values), key=lambda name: (values[name], SOURCES.index(name)))
    ordered = {name: values[name] for name in SOURCES if name in values}
    return BestBound(values[source], source, ordered, {k: skipped[k] for k in SOURCES if k in skipped}, kind, game,
                     profile, set_valued)
