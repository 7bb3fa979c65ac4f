"""Audits: the privacy parameter an attack's successes refute (THEORY.md section 12).

A count bound says: if the mechanism is theta-DP, with probability >= c at most count(theta) targets are attacked.
Read the other way it is a test: an attack that got m > count(theta) targets right refutes theta-DP at confidence c
(the chance of that under theta-DP is at most 1 - c). ``audit`` returns the largest theta so refuted, through the
minimum over every theorem ``theorems.count_bounds`` applies (any prior, k guesses, many targets), so it is the
strongest audit those theorems give: "with confidence c, the mechanism is not theta-DP for any theta <= theta_hat".

Every family is nested (a theta-DP mechanism is theta'-DP for every weaker theta'), so one certified refutation at
theta_hat refutes every stronger guarantee: the returned theta_hat is a grid point at which the count bound (certified
as ``count_bounds`` certifies its counts) is below the observed count; the next grid point up is not refuted.

* ``family``          the guarantees audited: "gdp" (mu), "approx" ((eps, delta) at a fixed delta), "pure" (eps),
                      "dpsgd" (the noise multiplier at a fixed sample rate and number of steps).
* ``audit``           one observation (a count of n targets, or per-target outcomes) at one or more confidences.
* ``Auditor``         the same for many observations in one setting (a game's trials), sharing the count bounds.
* ``mmc_audit``       the peer: Mahloujifar, Melis & Chaudhuri's recursion alone (arXiv:2410.22235), priors 1/k.
* ``steinke_audit``   the peer: Steinke, Nasr & Jagielski's Theorem 5.2 (arXiv:2305.08846), membership (priors 1/2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import _validate, prior_work
from .priors import Priors
from .profiles import DPSGD, ApproxDP, GaussianDP, PrivacyProfile, PureDP, for_game, pure_epsilon_of
from .theorems import MMC_MAX_TARGETS, MMC_THEOREM, count_bounds, winner

__all__ = ["FAMILIES", "Family", "family", "claimed_family", "Audit", "Auditor", "audit", "mmc_audit", "steinke_audit",
           "AUDIT_VERSION", "DEFAULT_RTOL"]

#: The audits' version (recorded with every audit; bump when the same inputs give another number).
AUDIT_VERSION = 1
#: The grid's spacing: theta_j = (1 + DEFAULT_RTOL)^j, so theta_hat is exact to this relative resolution.
DEFAULT_RTOL = 1e-3
FAMILIES = ("gdp", "approx", "pure", "dpsgd")


# --------------------------------------------------------------------------------------------
# families of guarantees
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Family:
    """A nested family of guarantees indexed by one parameter (THEORY.md section 12).

    ``loss_grows``: True where a larger parameter is a weaker guarantee (mu, eps); False for the noise multiplier
    (a larger one is stronger). ``low`` and ``high`` bound the parameters searched."""

    name: str
    parameter: str
    loss_grows: bool
    low: float
    high: float
    delta: float | None = None
    sample_rate: float | None = None
    steps: int | None = None
    neighboring: str = "replace_one"

    def profile(self, theta: float) -> PrivacyProfile:
        if self.name == "gdp":
            return GaussianDP(theta)
        if self.name == "approx":
            return ApproxDP(theta, self.delta)
        if self.name == "pure":
            return PureDP(theta)
        return DPSGD(theta, self.sample_rate, self.steps, self.neighboring)

    def guarantee(self) -> str:
        """The family's guarantee in words, e.g. "mu-GDP"."""
        if self.name == "gdp":
            return "mu-GDP"
        if self.name == "approx":
            return f"(eps, {self.delta:g})-DP"
        if self.name == "pure":
            return "eps-DP"
        return (f"DP-SGD-private at noise multiplier sigma (sample rate {self.sample_rate:g}, {self.steps} steps, "
                f"{self.neighboring.replace('_', '-')} accounting)")

    def refuted(self, theta: float) -> str:
        """"mu-GDP for any mu <= theta" (the noise multiplier: ">= theta")."""
        symbol = {"mu": "mu", "eps": "eps", "noise_multiplier": "sigma"}[self.parameter]
        return f"{self.guarantee()} for any {symbol} {'<=' if self.loss_grows else '>='} {theta:.6g}"

    def as_dict(self) -> dict:
        out = {"family": self.name, "parameter": self.parameter}
        if self.delta is not None:
            out["delta"] = self.delta
        if self.name == "dpsgd":
            out.update(sample_rate=self.sample_rate, steps=self.steps, neighboring=self.neighboring)
        return out


def family(name, *, delta=None, sample_rate=None, steps=None, neighboring: str = "replace_one") -> Family:
    """The family ``name`` ("gdp", "approx" with ``delta``, "pure", "dpsgd" with ``sample_rate`` and ``steps``)."""
    if isinstance(name, Family):
        return name
    if name not in FAMILIES:
        raise _validate.ArgumentError("family", f"family must be one of {', '.join(FAMILIES)}, got {name!r}; e.g. "
                                                "family='gdp' to audit mu-GDP.")
    extra = {"delta": delta, "sample_rate": sample_rate, "steps": steps}
    wants = {"approx": ("delta",), "dpsgd": ("sample_rate", "steps")}.get(name, ())
    for key, value in extra.items():
        if key in wants and value is None:
            raise _validate.ArgumentError(key, f"{key} must be given for family {name!r}, got None; e.g. "
                                               f"{ {'delta': 'delta=1e-5', 'sample_rate': 'sample_rate=0.01'}.get(key, 'steps=1000')}.")
        if key not in wants and value is not None:
            raise _validate.ArgumentError(key, f"{key} must be None for family {name!r} (it takes "
                                               f"{', '.join(wants) or 'no other parameter'}), got {value!r}.")
    if name == "gdp":
        return Family("gdp", "mu", True, 1e-4, 100.0)
    if name == "pure":
        return Family("pure", "eps", True, 1e-4, 200.0)
    if name == "approx":
        d = _validate.delta("delta", delta)
        if d == 0.0:
            raise _validate.ArgumentError("delta", "delta must be > 0 for family 'approx', got 0.0; use "
                                                   "family='pure' for eps-DP.")
        return Family("approx", "eps", True, 1e-4, 200.0, delta=d)
    q = _validate.scalar("sample_rate", sample_rate, _validate.probability, open_low=True)
    t = _validate.integer("steps", steps, minimum=1)
    if neighboring not in DPSGD.NEIGHBORING:
        raise _validate.ArgumentError("neighboring", f"neighboring must be one of {list(DPSGD.NEIGHBORING)}, got "
                                                     f"{neighboring!r}.")
    return Family("dpsgd", "noise_multiplier", False, 0.2, 1000.0, sample_rate=float(q), steps=t,
                  neighboring=neighboring)


_family = family


def claimed_family(profile: PrivacyProfile, delta: float | None = None) -> tuple[Family, float] | None:
    """(the family, the parameter) a mechanism's profile claims: DPSGD its noise multiplier, an eps-DP profile its eps,
    a GDP profile its mu, (eps, delta) its eps at its delta; another profile its eps at ``delta`` (family "approx"),
    None without a delta."""
    if isinstance(profile, DPSGD):
        return family("dpsgd", sample_rate=profile.sample_rate, steps=profile.steps,
                      neighboring=profile.neighboring), float(profile.noise_multiplier)
    pure = profile.pure_epsilon()
    if pure is not None:
        return family("pure"), float(pure)
    if isinstance(profile, GaussianDP) and profile.gdp_mu() is not None:
        return family("gdp"), float(profile.gdp_mu())
    if isinstance(profile, ApproxDP):
        return family("approx", delta=profile.delta_), float(profile.eps)
    if delta is None or not 0.0 < delta < 1.0:
        return None
    return family("approx", delta=float(delta)), float(profile.epsilon(float(delta)))


# --------------------------------------------------------------------------------------------
# the result
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Audit:
    """What ``successes`` of ``targets`` refute at ``confidence``.

    ``theta``: the largest parameter refuted (for the noise multiplier: the smallest); 0 (inf) where nothing on the
    grid is refuted. ``refutes``: whether anything is. ``at_cap``: refuted even at the grid's end (theta is then only
    a lower bound on what the observation refutes). ``count``/``theorem``: the certified count bound at theta and the
    theorem that gave it (the observation exceeds it). ``next_theta``/``next_count``: the grid point beyond, not
    refuted. ``statement``: the claim in words."""

    theta: float
    refutes: bool
    at_cap: bool
    confidence: float
    successes: int
    targets: int
    guesses: int
    family: Family
    count: int | None
    theorem: str | None
    next_theta: float | None
    next_count: int | None
    rtol: float
    statement: str
    by: str = "every theorem count_bounds applies (the minimum)"
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"theta": self.theta, "refutes": self.refutes, "at_cap": self.at_cap, "confidence": self.confidence,
                "successes": self.successes, "targets": self.targets, "guesses": self.guesses,
                **self.family.as_dict(), "count": self.count, "theorem": self.theorem, "next_theta": self.next_theta,
                "next_count": self.next_count, "rtol": self.rtol, "by": self.by, "statement": self.statement,
                "version": AUDIT_VERSION, **self.extra}


# --------------------------------------------------------------------------------------------
# the search: the largest grid index at which the decision certifies a refutation
# --------------------------------------------------------------------------------------------
class _Grid:
    """theta_j = (1 + rtol)^j (loss_grows) or (1 + rtol)^-j (the noise multiplier), j in [lo, hi]: j grows with the
    privacy loss, so refutation is non-increasing in j (THEORY.md section 12)."""

    def __init__(self, fam: Family, rtol: float):
        self.fam = fam
        self.h = math.log1p(rtol)
        sign = 1 if fam.loss_grows else -1
        ends = sorted(sign * math.log(x) / self.h for x in (fam.low, fam.high))
        self.lo, self.hi = math.ceil(ends[0]), math.floor(ends[1])
        self.sign = sign

    def theta(self, j: int) -> float:
        return math.exp(self.sign * j * self.h)

    def index(self, theta: float) -> int:
        return min(max(int(round(self.sign * math.log(theta) / self.h)), self.lo), self.hi)

    def steps(self, factor: float) -> int:
        return max(1, int(round(math.log(factor) / self.h)))


def _largest_refuted(count, m: int, grid: _Grid, start: int, first_step: int | None = None) -> int | None:
    """The largest j in [grid.lo, grid.hi] with count(j) < m found by a bracketing and a bisection guided by the
    counts (alternating an interpolation step with a halving step), assuming count non-decreasing in j; None when
    count(grid.lo) >= m (nothing refuted). The bracketing steps by a factor 4 in theta, then 16, 256, ...; by
    ``first_step`` grid points first where given (a start known to lie near the answer)."""
    refuted = lambda j: count(j) < m  # noqa: E731
    j = min(max(start, grid.lo), grid.hi)
    steps = iter(([first_step] if first_step else []) + [grid.steps(4.0) * 2 ** i for i in range(64)])
    if refuted(j):
        lo, hi = j, None
        while hi is None:
            if lo == grid.hi:
                return lo
            nxt = min(lo + next(steps), grid.hi)
            if refuted(nxt):
                lo = nxt
            else:
                hi = nxt
    else:
        lo, hi = None, j
        while lo is None:
            if hi == grid.lo:
                return None
            nxt = max(hi - next(steps), grid.lo)
            if refuted(nxt):
                lo = nxt
            else:
                hi = nxt
    interpolate = True
    while hi - lo > 1:
        c_lo, c_hi = count(lo), count(hi)
        if interpolate and c_hi > c_lo:
            # linear in theta (the counts are flat near theta = 0 on a log scale)
            t_lo, t_hi = grid.theta(lo), grid.theta(hi)
            mid = grid.index(t_lo + (m - 0.5 - c_lo) / (c_hi - c_lo) * (t_hi - t_lo))
        else:
            mid = (lo + hi) // 2
        mid = min(max(mid, lo + 1), hi - 1)
        width = hi - lo
        if refuted(mid):
            lo = mid
        else:
            hi = mid
        # interpolate again only after a step that at least halved the bracket (grid.index clamps to the grid)
        interpolate = not interpolate or (hi - lo) * 2 <= width
    return lo


def _inward_order(distinct: list[int]) -> list[int]:
    """The sorted distinct counts in the order the extremes first, then each middle of what is left (so every count
    is searched between two answered ones)."""
    out, spans = [], [(0, len(distinct) - 1)] if distinct else []
    if distinct:
        out = [distinct[0]] + ([distinct[-1]] if len(distinct) > 1 else [])
    while spans:
        a, b = spans.pop(0)
        if b - a < 2:
            continue
        mid = (a + b) // 2
        out.append(distinct[mid])
        spans += [(a, mid), (mid, b)]
    return out


# --------------------------------------------------------------------------------------------
# the auditor: one setting (priors, guesses, family), many observations and confidences
# --------------------------------------------------------------------------------------------
def _successes(successes, targets: int) -> int:
    """A count, or per-target outcomes (0/1 or booleans, one per target) summed."""
    if np.ndim(successes) == 0:
        m = _validate.integer("successes", successes, minimum=0)
    else:
        arr = np.asarray(successes)
        if arr.ndim != 1 or arr.size != targets:
            raise _validate.ArgumentError("successes", f"successes must be a count or one outcome (0 or 1) per target "
                                                       f"({targets} targets), got shape {arr.shape}.")
        if arr.dtype != bool and not np.all(np.isin(arr, (0, 1))):
            raise _validate.ArgumentError("successes", "successes given per target must be 0 or 1 (attacked or not), "
                                                       f"got {arr[~np.isin(arr, (0, 1))][0]!r}.")
        m = int(np.sum(arr.astype(bool)))
    if m > targets:
        raise _validate.ArgumentError("successes", f"successes must be at most the number of targets ({targets}), "
                                                   f"got {m}.")
    return m


class Auditor:
    """Audits in one setting: the targets' priors ``p`` (as ``count_bounds`` takes them, the prior success of the
    a-priori best guess of each target; 0 for a target the attack never guesses) and/or their whole priors
    ``distributions``, at most ``guesses`` targets guessed at any release (the attack may choose which after seeing
    it: an abstention is a guess that is never right; None: every target with p > 0), the ``family``, the
    ``confidences``. ``game``, ``set_valued``, ``collision``, ``set_size``: as in ``count_bounds`` (k > 1 guesses
    per target is set-valued success with p = the prior mass of the k likeliest values). ``designated`` and
    ``groups`` are passed to ``count_bounds``.

    Every count bound is computed once per grid point for all confidences and kept for this auditor's lifetime only
    (no state is shared between auditors)."""

    def __init__(self, p=None, *, distributions=None, family="gdp", confidences=0.95, guesses=None,
                 game: str = "reconstruction", set_valued: bool = False, collision=None, set_size=None,
                 rtol: float = DEFAULT_RTOL, designated: bool = False, groups=None, **family_args):
        self.family = family if isinstance(family, Family) else _family(family, **family_args)
        if isinstance(family, Family) and family_args:
            raise _validate.ArgumentError(next(iter(family_args)), f"{next(iter(family_args))} must not be given "
                                                                   "with a Family (it carries its own parameters).")
        self.rtol = _validate.positive("rtol", rtol)
        if not self.rtol <= 0.1:
            raise _validate.ArgumentError("rtol", f"rtol must be in (0, 0.1] (the grid's relative spacing), got "
                                                  f"{self.rtol!r}.")
        self.confidences = np.atleast_1d(_validate.confidence("confidences", confidences)).reshape(-1)
        self.kwargs = dict(distributions=distributions, game=game, set_valued=set_valued, collision=collision,
                           set_size=set_size, designated=designated)
        if groups is not None:
            self.kwargs["groups"] = groups
        self.p = p
        self.grid = _Grid(self.family, self.rtol)
        self.targets = self._n_targets(p, distributions, set_valued)
        self.guesses = self.targets if guesses is None else _validate.integer("guesses", guesses, minimum=1,
                                                                                maximum=self.targets)
        self.adaptive = self._abstaining(p)
        self._uniform = self._mmc_priors(p, distributions)
        self._counts: dict = {}
        self._cheaps: dict = {}

    def _reference(self) -> float:
        return 1.0 if self.family.name != "dpsgd" else 10.0

    @staticmethod
    def _n_targets(p, distributions, set_valued) -> int:
        """The number of targets, p and distributions checked (count_bounds checks the rest at the first point)."""
        from .priors import grouped
        from .whole_prior import Distributions

        n = None if distributions is None else Distributions.of(distributions).n
        if p is not None:
            g = p if isinstance(p, Priors) else grouped(p, exact_guess=not _validate.boolean("set_valued", set_valued))
            if n is not None:
                _validate.same_targets("p", g.n, "distributions", n)
            n = g.n
        if n is None:
            raise _validate.ArgumentError("p", "p must be given (each target's prior success) unless distributions= "
                                               "gives each target's whole prior, got None.")
        return int(n)

    def _mmc_priors(self, p, distributions) -> np.ndarray | None:
        """Every target's prior success as an array where MMC's count applies to them (each nonzero one 1/k, at most
        MMC_MAX_TARGETS guessed), else None."""
        if p is None:
            from .whole_prior import Distributions

            d = Distributions.of(distributions)
            arr = np.repeat(d.p, d.counts)
        else:
            arr = np.repeat(p.values, p.counts) if isinstance(p, Priors) else np.asarray(p, dtype=float).reshape(-1)
        if not 0 < np.count_nonzero(arr) <= MMC_MAX_TARGETS:
            return None
        try:
            prior_work.uniform_candidates(arr)
        except ValueError:
            return None
        return arr

    def _abstaining(self, p) -> np.ndarray | None:
        """The priors of the ``guesses`` likeliest guessed targets, the rest 0 (the worst case over which targets the
        attack picks after the release), where fewer targets are guessed than have p > 0; else None."""
        if self.guesses == self.targets or p is None:
            return None
        arr = np.repeat(p.values, p.counts) if isinstance(p, Priors) else np.asarray(p, dtype=float).reshape(-1)
        if np.count_nonzero(arr) <= self.guesses:
            return None
        out = np.zeros_like(arr)
        top = np.argsort(-arr, kind="stable")[: self.guesses]
        out[top] = arr[top]
        return out

    # the decision at a grid point: counts per confidence, and the theorem that gave each
    def _at(self, j, i: int | None = None) -> tuple[np.ndarray, list]:
        """(counts, theorems) at grid index j (or ("exact", theta)): at every confidence, or at confidence i alone
        (then an array of one), from what is known at every confidence where it is."""
        if (j, None) in self._counts:
            counts, names = self._counts[(j, None)]
            return (counts, names) if i is None else (counts[i:i + 1], names[i:i + 1])
        if (j, i) not in self._counts:
            theta = self.grid.theta(j) if isinstance(j, int) else j[1]
            profile = self.family.profile(theta)
            confs = self.confidences if i is None else self.confidences[i:i + 1]
            self._counts[(j, i)] = self._decide(profile, count_bounds(profile, self.p, confs, **self.kwargs), confs)
        return self._counts[(j, i)]

    def _decide(self, profile, counted, confs) -> tuple[np.ndarray, list]:
        """(the smallest count per confidence, the theorem that gave it) from count_bounds' answer and, with
        abstentions, the theorems that see them."""
        by = {name: np.atleast_1d(v) for name, v in counted[1].items()}
        if self.adaptive is not None:
            by.update(self._abstention_counts(profile, confs))
        best = np.min(np.stack(list(by.values())), axis=0)
        return best.astype(int), [str(name) for name in np.atleast_1d(winner(by))]

    def _abstention_counts(self, profile, confs) -> dict[str, np.ndarray]:
        """The theorems that see abstentions chosen after the release (THEORY.md section 12): MMC's count with
        ``guesses`` guesses (one exact guess, priors 1/k), Theorem 3.1 conditional on the release (eps-DP) with the
        ``guesses`` largest priors."""
        game = self.kwargs["game"]
        if pure_epsilon_of(for_game(profile, game)) is not None:
            counts, _ = count_bounds(profile, self.adaptive, confs, game=game)
            return {f"Theorem 3.1 (eps-DP), {self.guesses} guesses": np.atleast_1d(counts)}
        if self.kwargs["set_valued"]:
            return {}
        _, by = count_bounds(profile, self.adaptive, confs, game=game)
        if MMC_THEOREM not in by:
            return {}
        return {f"{MMC_THEOREM}, {self.guesses} guesses": np.atleast_1d(by[MMC_THEOREM])}

    def _cheap(self, i: int):
        """MMC's count alone at confidence i, a function of the grid index (at most the minimum's count), where it
        applies (one exact guess, every guessed target's prior 1/k, a profile that is not eps-DP); else None."""
        if self.kwargs["set_valued"] or self.family.name == "pure" or self._uniform is None:
            return None
        if i in self._cheaps:
            return self._cheaps[i]
        c = float(self.confidences[i])
        game = self.kwargs["game"]
        priors = [q for q in (self._uniform, self.adaptive) if q is not None]
        memo: dict[int, int] = {}

        def count(j: int) -> int:
            if j not in memo:
                profile = for_game(self.family.profile(self.grid.theta(j)), game)
                memo[j] = min(int(prior_work.mmc_bound(profile, q, confidence=c)) for q in priors)
            return memo[j]

        self._cheaps[i] = count
        return count

    def count(self, theta: float, confidence: float) -> int:
        """The certified count bound at ``theta`` (a grid point nearest it) and ``confidence`` (one of this
        auditor's)."""
        i = self._level(confidence)
        return int(self._at(self.grid.index(theta), i)[0][0])

    def _level(self, confidence) -> int:
        c = float(np.atleast_1d(_validate.confidence("confidence", confidence))[0])
        hit = np.flatnonzero(np.isclose(self.confidences, c, rtol=0, atol=1e-12))
        if hit.size == 0:
            raise _validate.ArgumentError("confidence", f"confidence must be one of this auditor's confidences "
                                                        f"{self.confidences.tolist()}, got {c!r}.")
        return int(hit[0])

    def refutes(self, successes, theta: float, confidence: float) -> bool:
        """Whether ``successes`` refute the guarantee at ``theta`` (exactly theta, not a grid point) at
        ``confidence``: the certified count bound there is below the observed count."""
        m = _successes(successes, self.targets)
        i = self._level(confidence)
        return bool(m > self._at(("exact", float(theta)))[0][i])

    def _observed(self, successes) -> int:
        m = _successes(successes, self.targets)
        if m > self.guesses:
            raise _validate.ArgumentError("successes", f"successes must be at most the number of guesses "
                                                       f"({self.guesses}), got {m}.")
        return m

    def _begin(self, start: float | None) -> int:
        return self.grid.index(start) if start is not None else self.grid.index(self._reference())

    def _full(self, i: int):
        return lambda jj: int(self._at(jj, i)[0][0])  # noqa: E731

    def _index(self, m: int, i: int, begin: int, full=None, first_step: int | None = None) -> int | None:
        """The largest grid index the minimum refutes with m successes at confidence i (None: none), searched
        outward from ``begin`` (``full``: the count at a grid index, default the count at confidence i alone)."""
        grid, full = self.grid, full or self._full(i)
        cheap = self._cheap(i)
        # MMC's count alone first where it applies (milliseconds a point): the minimum refutes wherever it does, so
        # the full search starts at its answer, one grid point at a time (the answer itself where MMC wins)
        found = None if cheap is None else _largest_refuted(cheap, m, grid, begin)
        return (_largest_refuted(full, m, grid, begin, first_step) if found is None else
                _largest_refuted(full, m, grid, found, first_step=1))

    def audit(self, successes, confidence=None, *, start: float | None = None) -> Audit:
        """The audit of one observation at ``confidence`` (default: the auditor's first). ``start``: where the
        search begins (e.g. the claimed parameter; only the speed depends on it, the answer is the grid's)."""
        m = self._observed(successes)
        i = 0 if confidence is None else self._level(confidence)
        return self._result(m, i, self._index(m, i, self._begin(start)))

    def audit_counts(self, successes, confidence=None, *, start: float | None = None,
                     detail: bool = True) -> list[Audit]:
        """The audits of many observations at one ``confidence`` (default: the auditor's first), in their order:
        each the one ``audit`` gives (the same grid index), found together (``audit_table``)."""
        i = 0 if confidence is None else self._level(confidence)
        return self.audit_table(successes, start=start, detail=detail, levels=[i])[0]

    def audit_table(self, successes, *, start: float | None = None, detail: bool = True,
                    levels=None) -> list[list[Audit]]:
        """The audits of many observations at every confidence (``levels``: the indices of some), [confidence]
        [observation]: each the one ``audit`` gives (the same grid index), found together. The audit is
        non-decreasing in the count and the count bound non-decreasing in the parameter (THEORY.md section 12), so
        every grid point's count bound at a confidence brackets the answer of every count there (computing every
        confidence at once cost about twice one: they are computed one at a time), and each count's search starts
        from the tightest bracket the points computed so far give: the distinct counts from the extremes inward, an
        interpolated step alternating with a halving one. ``detail=False``: each audit's ``count`` and
        ``theorem`` (the bound at theta_hat) are left None unless that grid point was computed anyway (the search
        certifies theta_hat without them: refuted there, not at the next point)."""
        ms = [self._observed(m) for m in np.asarray(successes).reshape(-1).tolist()]
        levels = range(len(self.confidences)) if levels is None else levels
        distinct = sorted(set(ms))
        begin = self._begin(start)
        table = []
        for i in levels:
            if distinct:
                # the grid's end of the least privacy loss (nothing below it refuted: what the prior alone allows)
                # and the start: every count's first bracket, or its answer "refutes nothing" at once
                for j in (self.grid.lo, begin):
                    self._at(j, i)
            found: dict[int, int | None] = {}
            for m in _inward_order(distinct):
                found[m] = self._bracketed(m, i, begin)
            table.append([self._result(m, i, found[m], detail) for m in ms])
        return table

    def _known(self, i: int):
        """The grid points whose count at confidence i is computed, sorted, and those counts."""
        points = sorted({j for (j, c) in self._counts if (c is None or c == i) and isinstance(j, int)})
        return points, [int(self._at(j, i)[0][0]) for j in points]

    def _bracketed(self, m: int, i: int, begin: int) -> int | None:
        """The largest grid index the minimum refutes with m successes at confidence i (None: none), searched
        within the bracket the computed points give (``_index`` where they give no bracket)."""
        grid, full = self.grid, self._full(i)
        points, counts = self._known(i)
        below = [j for j, c in zip(points, counts) if c < m]
        above = [j for j, c in zip(points, counts) if c >= m]
        if not above and not below:
            return self._index(m, i, begin, full)
        lo = max(below) if below else None
        hi = min(above) if above else None
        cheap = self._cheap(i)
        if cheap is not None:  # MMC's answer is refuted by the minimum too: the answer where MMC wins
            known = _largest_refuted(cheap, m, grid, lo if lo is not None else (hi if hi is not None else begin))
            if known is not None and (lo is None or known > lo) and (hi is None or known < hi):
                lo = known
            if lo is not None and (hi is None or hi > lo + 1) and lo < grid.hi:
                if full(lo + 1) >= m:
                    return lo
                lo += 1
        if lo is None or hi is None:  # one side open: the outward search from the side known
            return self._index(m, i, lo if lo is not None else hi, full, first_step=1)
        interpolate = True
        while hi - lo > 1:
            c_lo, c_hi = full(lo), full(hi)
            mid = (lo + hi) // 2
            if interpolate and c_hi > c_lo:
                t_lo, t_hi = grid.theta(lo), grid.theta(hi)
                mid = grid.index(t_lo + (m - 0.5 - c_lo) / (c_hi - c_lo) * (t_hi - t_lo))
            mid = min(max(mid, lo + 1), hi - 1)
            width = hi - lo
            if full(mid) < m:
                lo = mid
            else:
                hi = mid
            interpolate = not interpolate or (hi - lo) * 2 <= width
        return lo

    def detailed(self, one: Audit) -> Audit:
        """``one`` (an audit of this auditor's, e.g. from ``audit_table(detail=False)``) with its count bound and
        theorem at theta_hat."""
        j = self.grid.index(one.theta) if one.refutes else None
        return self._result(one.successes, self._level(one.confidence), j, True)

    def _result(self, m: int, i: int, j: int | None, detail: bool = True) -> Audit:
        c = float(self.confidences[i])
        grid, full = self.grid, self._full(i)
        fam = self.family
        what = f"{m} successes of {self.guesses} guesses on {self.targets} targets"
        if j is None:
            edge = grid.theta(grid.lo)
            theta = 0.0 if fam.loss_grows else math.inf
            side = "above" if fam.loss_grows else "below"
            statement = (f"With confidence {c:g}, {what} refute no {fam.parameter} {side} {edge:.6g}: the count bound "
                         f"there ({full(grid.lo)}) is not exceeded.")
            return Audit(theta, False, False, c, m, self.targets, self.guesses, fam, None, None, edge,
                         full(grid.lo), self.rtol, statement)
        theta = grid.theta(j)
        if detail or (j, i) in self._counts or (j, None) in self._counts:
            count, names = self._at(j, i)
        else:
            count, names = [None], [None]
        at_cap = j == grid.hi
        nxt = None if at_cap else grid.theta(j + 1)
        by = "" if count[0] is None else f" (the count bound at {theta:.6g} is {int(count[0])}, {names[0]})"
        statement = (f"With confidence {c:g}, {what}: the mechanism is not {fam.refuted(theta)}{by}"
                     + ("; the grid ends there, so it may refute more" if at_cap else "") + ".")
        return Audit(theta, True, at_cap, c, m, self.targets, self.guesses, fam,
                     None if count[0] is None else int(count[0]), names[0], nxt,
                     None if at_cap else full(j + 1), self.rtol, statement)

    def audits(self, successes, *, start: float | None = None) -> list[list[Audit]]:
        """For every observation (a sequence of counts) the audit at every confidence: [observation][confidence]."""
        return [[self.audit(m, c, start=start) for c in self.confidences] for m in np.asarray(successes).reshape(-1)]


def audit(successes, p=None, *, distributions=None, family="gdp", confidence=0.95, guesses=None,
          game: str = "reconstruction", set_valued: bool = False, collision=None, set_size=None,
          rtol: float = DEFAULT_RTOL, start: float | None = None, **family_args):
    """The largest parameter of ``family`` that ``successes`` refute at ``confidence``: "with confidence c, the
    mechanism is not theta-DP for any theta <= theta_hat" (for the noise multiplier: >= sigma_hat).

    ``successes``: a count, or one outcome (0/1) per target. ``p``: each target's prior success (the a-priori best
    guess's, with k guesses the mass of the k likeliest values and ``set_valued=True``; 0 for a target never
    guessed), or ``distributions`` (each target's whole prior, one exact guess; p may then be None). ``guesses``: at
    most this many targets guessed, chosen after the release (abstentions; MMC's count and Theorem 3.1 use it, the
    other theorems every target). ``family``: "gdp", "approx" (``delta=``), "pure" or "dpsgd" (``sample_rate=``,
    ``steps=``, ``neighboring=``). One ``Audit`` for a scalar confidence, a list for several.

    Examples:
        >>> a = audit(650, [0.1] * 1000, family="gdp", confidence=0.95)
        >>> a.refutes, round(a.theta, 3), a.theorem
        (True, 1.041, 'MMC one-run count (ICML 2025 Thm 3.2)')
    """
    _validate.confidence("confidence", confidence)
    auditor = Auditor(p, distributions=distributions, family=family, confidences=confidence, guesses=guesses,
                      game=game, set_valued=set_valued, collision=collision, set_size=set_size, rtol=rtol,
                      **family_args)
    out = [auditor.audit(successes, c, start=start) for c in auditor.confidences]
    return out[0] if np.ndim(confidence) == 0 else out


# --------------------------------------------------------------------------------------------
# the peers, written from their papers: each one theorem, on its own priors
# --------------------------------------------------------------------------------------------
def _peer_audit(count, m: int, fam: Family, rtol: float, confidence: float, targets: int, guesses: int, by: str,
                start: float | None = None) -> Audit:
    grid = _Grid(fam, rtol)
    memo: dict[int, int] = {}

    def at(j: int) -> int:
        if j not in memo:
            memo[j] = int(count(grid.theta(j)))
        return memo[j]

    begin = grid.index(start if start is not None else (1.0 if fam.loss_grows else 10.0))
    j = _largest_refuted(at, m, grid, begin)
    if j is None:
        theta = 0.0 if fam.loss_grows else math.inf
        return Audit(theta, False, False, confidence, m, targets, guesses, fam, None, None, grid.theta(grid.lo),
                     at(grid.lo), rtol, f"{by}: nothing refuted at confidence {confidence:g}.", by=by)
    at_cap = j == grid.hi
    return Audit(grid.theta(j), True, at_cap, confidence, m, targets, guesses, fam, at(j), by,
                 None if at_cap else grid.theta(j + 1), None if at_cap else at(j + 1), rtol,
                 f"{by}: with confidence {confidence:g} not {fam.refuted(grid.theta(j))}.", by=by)


def _canaries(successes, canaries, guesses, k: int) -> tuple[int, int, np.ndarray]:
    n = _validate.integer("canaries", canaries, minimum=1)
    g = n if guesses is None else _validate.integer("guesses", guesses, minimum=1, maximum=n)
    m = _successes(successes, n)
    if m > g:
        raise _validate.ArgumentError("successes", f"successes must be at most the number of guesses ({g}), got {m}.")
    p = np.zeros(n)
    p[:g] = 1.0 / k
    return m, g, p


def mmc_audit(successes, canaries, *, k: int = 2, guesses=None, family="gdp", confidence: float = 0.95,
              game: str = "reconstruction", rtol: float = DEFAULT_RTOL, start=None, **family_args) -> Audit:
    """Mahloujifar, Melis & Chaudhuri's audit (arXiv:2410.22235, Algorithm 3 / Theorem 3.2; checked in MMC_CHECK.md):
    ``canaries`` secrets each uniform over ``k`` candidates, ``guesses`` of them guessed (chosen after the release),
    ``successes`` right; the largest parameter of ``family`` at which their recursion's count
    (``prior_work.mmc_bound`` on the replace-one profile, add/remove for membership with k = 2) is below the
    observation. On the same grid as ``audit``."""
    fam = family if isinstance(family, Family) else _family(family, **family_args)
    k = _validate.integer("k", k, minimum=2)
    m, g, p = _canaries(successes, canaries, guesses, k)
    c = float(np.atleast_1d(_validate.confidence("confidence", confidence))[0])
    count = lambda theta: prior_work.mmc_bound(for_game(fam.profile(theta), game), p, confidence=c)  # noqa: E731
    return _peer_audit(count, m, fam, _validate.positive("rtol", rtol), c, int(p.size), g, MMC_THEOREM, start)


def steinke_audit(successes, canaries, *, delta: float, guesses=None, confidence: float = 0.95,
                  rtol: float = DEFAULT_RTOL, start=None) -> Audit:
    """Steinke, Nasr & Jagielski's audit (arXiv:2305.08846, Theorem 5.2; ``prior_work.steinke_bound``): ``canaries``
    each included with probability 1/2, ``guesses`` membership guesses (chosen after the release), ``successes``
    right; the largest eps at which (eps, ``delta``)-DP's count by their theorem is below the observation. For
    delta > 0 and more than one guess the theorem is not valid (THEORY.md section 5: exact DP mechanisms beat it), so
    this audit can claim more than the data show; at delta = 0 it is Theorem 3.1's."""
    d = _validate.delta("delta", delta)
    fam = family("approx", delta=d) if d > 0 else family("pure")
    m, g, p = _canaries(successes, canaries, guesses, 2)
    c = float(np.atleast_1d(_validate.confidence("confidence", confidence))[0])
    count = lambda eps: prior_work.steinke_bound(eps, d, p, confidence=c)  # noqa: E731
    return _peer_audit(count, m, fam, _validate.positive("rtol", rtol), c, int(p.size), g,
                       "Steinke, Nasr & Jagielski Thm 5.2", start)
