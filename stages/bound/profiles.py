"""Privacy profiles: each mechanism's exact curve delta(eps), its inverse and its trade-off curve.

A privacy profile ``delta(eps)`` says the mechanism is (eps, delta(eps))-DP for every eps >= 0
simultaneously; by Dong, Roth and Su (2019, "Gaussian Differential Privacy", arXiv:1905.02383, Prop. 2.12) this
is the same information as the f-DP trade-off curve, with ``delta_f(eps) = 1 + f*(-e^eps)``. The bounds of the paper take the whole
profile and optimise over eps, so each class below gives the *tightest* profile of its guarantee:

* ``PureDP(eps)`` and ``ApproxDP(eps, delta)``: the profile of the tightest trade-off curve
  ``f_{eps,delta}(a) = max(0, 1 - delta - e^eps a, e^-eps (1 - delta - a))``, which is
  ``delta + (1 - delta) (e^eps - e^eps') / (1 + e^eps)`` below the nominal eps (positive there: an
  (eps, delta)-DP mechanism is also (eps', delta(eps'))-DP for eps' < eps).
* ``GaussianDP(mu)``: ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``.
* ``ComposedGaussian``: k Gaussian mechanisms of noise multiplier sigma and L2 sensitivity s, which is
  ``mu``-GDP with ``mu = sqrt(k) s / sigma``.
* ``DPSGD``: Poisson-subsampled Gaussian composed over steps, from ``dp_accounting``'s privacy-loss
  distributions (pessimistic, so every delta is an upper bound), add/remove or replace-one
  neighbouring; full-batch training (sample rate 1) uses the GDP closed form. Its reading of a
  privacy-loss distribution (vectorised delta, a fast valid ``delta_upper``) is ``PrivacyLossProfile``,
  which ``accountants.DpEventProfile`` shares (any dp_accounting event; ``accountants`` also turns a
  delta(eps) table or function and an opacus accountant into profiles).
"""
from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from functools import cached_property

import numpy as np
from scipy import optimize, special, stats

from . import _validate


class PrivacyProfile(ABC):
    """A mechanism's privacy profile. Subclasses implement ``_delta`` on a float array and ``params``."""

    #: Largest eps worth considering: beyond it delta(eps) no longer decreases (inf if it always does).
    max_useful_epsilon: float = math.inf
    #: The neighbouring relation the guarantee is stated for: "replace_one" (the paper's convention,
    #: and what every class here but DPSGD(neighboring="add_remove") states) or "add_remove" (also
    #: possible for the profiles of ``accountants``: a DpEvent, a delta table or curve, an opacus run).
    neighboring: str = "replace_one"

    def replace_one(self) -> "PrivacyProfile":
        """The profile of the same mechanism for replace-one neighbours (itself if it already is one).

        The theorems of the paper compare datasets that differ by replacing target i's record, so a
        reconstruction game needs this profile (see ``for_game``).
        """
        if self.neighboring == "replace_one":
            return self
        raise NotImplementedError(f"{self!r} does not say how to turn its {self.neighboring} guarantee into a replace-one one.")

    @property
    def name(self) -> str:
        return type(self).__name__

    @abstractmethod
    def params(self) -> dict:
        """The parameters that define the profile, JSON-able, with key ``profile``: every parameter that changes
        delta(eps) (tests/stages/bound/test_profile_identity.py checks each class)."""

    def identity(self) -> tuple:
        """The profile's identity: ``params()`` as canonical JSON (they may nest: a DpEvent, a wrapped profile), and
        whatever else decides delta(eps) that JSON cannot hold (a user's function: ``accountants.DeltaCurve``).
        ``__eq__``, ``__hash__`` and every memo keyed by a profile use it, so two profiles share a cached number only
        when they have the same delta(eps)."""
        return (json.dumps(self.params(), sort_keys=True),)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items() if k != "profile")
        return f"{self.name}({args})"

    def __eq__(self, other) -> bool:
        return isinstance(other, PrivacyProfile) and self.identity() == other.identity()

    def __hash__(self) -> int:
        return hash(self.identity())

    @abstractmethod
    def _delta(self, eps: np.ndarray) -> np.ndarray:
        """delta at each entry of a 1-d float array of eps >= 0."""

    def delta(self, eps):
        """delta(eps) for eps >= 0 (scalar or array, vectorised)."""
        if isinstance(eps, float) and eps >= 0.0:  # one checked float (NaN fails >=): the theorems' searches' call
            value = self._delta_one(eps)
            return min(max(value, 0.0), 1.0) if value == value else value
        arr = _validate.epsilon("eps", eps)
        out = np.clip(self._delta(np.atleast_1d(arr).astype(float).ravel()), 0.0, 1.0)
        return float(out[0]) if arr.ndim == 0 else out.reshape(arr.shape)

    def _delta_one(self, eps: float) -> float:
        """``_delta`` at one float eps >= 0 (a profile with a cheaper scalar form overrides it: the same value)."""
        return float(self._delta(np.array([eps], dtype=float))[0])

    def delta_upper(self, eps: float) -> float:
        """A fast valid upper bound on delta(eps) for the theorems' searches (exact unless overridden)."""
        return float(self.delta(eps))

    # ---- what the guarantee is, in each paper's terms (one place, used by best_bound and the boxes)
    def pure_epsilon(self) -> float | None:
        """eps if the profile is eps-DP (delta = 0 at some finite eps), else None."""
        return None

    def gdp_mu(self) -> float | None:
        """mu if the profile is exactly mu-GDP (Gaussian, composed Gaussian, full-batch DP-SGD), else None."""
        return None

    def renyi(self, orders) -> np.ndarray | None:
        """A valid Renyi-DP curve eps_alpha at each order alpha > 1 (replace-one, like the profile), or None
        when no Renyi guarantee of this mechanism is known (``renyi_missing`` says why)."""
        renyi_orders(orders)
        return None

    def renyi_missing(self) -> str:
        """Why ``renyi`` is None, for the comparators that need it."""
        return f"needs a Renyi-DP or zCDP guarantee, which a {self.name} profile does not give"

    def epsilon(self, delta: float) -> float:
        """The smallest eps >= 0 with delta(eps) <= delta (inf if there is none)."""
        d = _validate.delta("delta", delta)
        if self.delta(0.0) <= d:
            return 0.0
        if d == 0.0 and not np.isfinite(self.max_useful_epsilon):
            return math.inf  # the profile is positive at every finite eps
        hi = min(1.0, self.max_useful_epsilon)
        while self.delta(hi) > d:
            if hi >= self.max_useful_epsilon or hi > 1e4:
                return math.inf
            hi = min(hi * 2, self.max_useful_epsilon)
        lo = 0.0 if hi <= 1.0 else hi / 2
        return float(optimize.brentq(lambda e: self.delta(e) - d, lo, hi, xtol=1e-12, rtol=1e-12))

    def tradeoff(self, alpha):
        """The f-DP trade-off curve f(alpha): the smallest type-II error at type-I error alpha.

        Computed as the upper envelope of the lines given by the profile on a fine eps grid
        (each line is a valid lower bound on f, so the envelope never overstates privacy).
        """
        a = _validate.probability("alpha", alpha)
        flat = np.atleast_1d(a).astype(float)[:, None]
        eps = self._tradeoff_grid
        d = self._tradeoff_deltas[None, :]
        lines = np.maximum(1.0 - d - np.exp(eps)[None, :] * flat, np.exp(-eps)[None, :] * (1.0 - d - flat))
        out = np.clip(np.max(lines, axis=1), 0.0, 1.0)
        return float(out[0]) if a.ndim == 0 else out.reshape(a.shape)

    def one_minus_tradeoff(self, alpha):
        """1 - f(alpha), the power of the best test at type-I error alpha, computed without cancellation.

        ``1 - tradeoff(alpha)`` loses every digit below ~1e-16 (at small alpha, 1 - f(alpha) is tiny);
        here each line of the envelope is complemented exactly: 1 - (1 - d - e^eps a) = d + e^eps a
        and 1 - e^-eps (1 - d - a) = -expm1(-eps) + e^-eps (d + a); the minimum over the grid is the
        complement of the envelope, so it is never below the true 1 - f.
        """
        a = _validate.probability("alpha", alpha)
        flat = np.atleast_1d(a).astype(float)[:, None]
        eps = self._tradeoff_grid[None, :]
        d = self._tradeoff_deltas[None, :]
        with np.errstate(over="ignore"):
            lines = np.minimum(d + np.exp(eps) * flat, -np.expm1(-eps) + np.exp(-eps) * (d + flat))
        out = np.clip(np.min(lines, axis=1), 0.0, 1.0)
        return float(out[0]) if a.ndim == 0 else out.reshape(a.shape)

    @cached_property
    def _tradeoff_deltas(self) -> np.ndarray:
        return self.delta(self._tradeoff_grid)

    @cached_property
    def _tradeoff_grid(self) -> np.ndarray:
        top = self.max_useful_epsilon
        if not np.isfinite(top):
            top = self.epsilon(1e-300) if self.delta(700.0) <= 1e-300 else 700.0
            top = min(top, 700.0)
        return np.unique(np.concatenate([np.linspace(0.0, top, 4001), np.geomspace(1e-6, max(top, 1e-6), 2001)]))


class ApproxDP(PrivacyProfile):
    """(eps, delta)-DP, as the profile of its tightest trade-off curve f_{eps, delta}.

    Examples:
        >>> profile = ApproxDP(1.0, 1e-5)
        >>> float(profile.delta(1.0)), round(float(profile.delta(0.5)), 4)   # positive below the nominal eps
        (1e-05, 0.2877)
        >>> profile.pure_epsilon(), PureDP(1.0).pure_epsilon()
        (None, 1.0)
    """

    def __init__(self, eps: float, delta: float = 0.0):
        self.eps = _validate.positive("eps", eps, allow_zero=True)
        self.delta_ = _validate.delta("delta", delta)
        self.max_useful_epsilon = self.eps

    def params(self) -> dict:
        return {"profile": self.name, "eps": self.eps, "delta": self.delta_}

    def _delta(self, eps):
        e0 = self.eps
        # (e^e0 - e^eps)_+ / (1 + e^e0), computed without overflow
        gap = -np.expm1(np.minimum(eps, e0) - e0) / (1.0 + np.exp(-e0))
        return self.delta_ + (1.0 - self.delta_) * gap

    def tradeoff(self, alpha):
        a = _validate.probability("alpha", alpha)
        e, d = self.eps, self.delta_
        out = np.maximum.reduce([np.zeros_like(a, dtype=float), 1 - d - math.exp(e) * a, math.exp(-e) * (1 - d - a)])
        return float(out) if np.ndim(out) == 0 else out

    def pure_epsilon(self) -> float | None:
        return float(self.eps) if self.delta_ == 0.0 else None

    def renyi(self, orders) -> np.ndarray | None:
        """eps-DP: the Renyi divergence of binary randomized response at eps, the largest any eps-DP pair has
        (Bun & Steinke 2016, arXiv:1605.02065): eps_alpha = log((e^(alpha eps) + e^((1 - alpha) eps)) / (1 + e^eps)) / (alpha - 1),
        below both eps and alpha eps^2 / 2 (equal to dp_accounting's RandomizedResponseDpEvent, a test checks)."""
        a = renyi_orders(orders)
        if self.delta_ != 0.0:
            return None
        e = self.eps
        log_sum = np.logaddexp(a * e, (1.0 - a) * e) - np.logaddexp(0.0, e)
        return np.minimum(log_sum / (a - 1.0), e)

    def renyi_missing(self) -> str:
        return (f"needs a Renyi-DP or zCDP guarantee, which (eps, delta)-DP with delta = {self.delta_!r} > 0 does not give"
                if self.delta_ else super().renyi_missing())

    def one_minus_tradeoff(self, alpha):
        """1 - f_{eps, delta}(alpha) = min(1, delta + e^eps alpha, 1 - e^-eps (1 - delta - alpha)), without cancellation."""
        a = _validate.probability("alpha", alpha)
        e, d = self.eps, self.delta_
        with np.errstate(over="ignore"):
            out = np.minimum.reduce([np.ones_like(a, dtype=float), d + math.exp(min(e, 709.0)) * a,
                                     -math.expm1(-e) + math.exp(-e) * (d + a)])
        return float(out) if np.ndim(out) == 0 else out


class PureDP(ApproxDP):
    """eps-DP (delta = 0)."""

    def __init__(self, eps: float):
        super().__init__(eps, 0.0)

    def params(self) -> dict:
        return {"profile": self.name, "eps": self.eps}


class GaussianDP(PrivacyProfile):
    """mu-Gaussian DP: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).

    Dong, Roth, Su, "Gaussian Differential Privacy" (arXiv:1905.02383); its trade-off curve is
    f(alpha) = Phi(Phi^-1(1 - alpha) - mu).

    Examples:
        >>> gauss = GaussianDP(1.0)
        >>> round(float(gauss.delta(1.0)), 4), round(gauss.epsilon(1e-5), 3)
        (0.1269, 4.377)
        >>> round(float(gauss.tradeoff(0.05)), 4)
        0.7405
    """

    def __init__(self, mu: float):
        self.mu = _validate.positive("mu", mu)

    def params(self) -> dict:
        return {"profile": self.name, "mu": self.mu}

    @classmethod
    def from_epsilon_delta(cls, eps: float, delta: float) -> "GaussianDP":
        """The largest mu (weakest GDP guarantee) that still satisfies (eps, delta)-DP.

        Examples:
            >>> round(GaussianDP.from_epsilon_delta(1.0, 1e-5).mu, 4)   # the noisy marginals' mu at eps = 1
            0.2681
        """
        eps = _validate.positive("eps", eps)
        delta = _validate.delta("delta", delta)
        if delta <= 0:
            raise ValueError("delta must be > 0 to calibrate a Gaussian mechanism, got 0.0.")
        f = lambda log_mu: gdp_delta(np.array([eps]), math.exp(log_mu))[0] - delta
        lo, hi = -20.0, 5.0
        if not np.isfinite(f(lo)):
            raise ValueError(f"eps must be small enough for delta(eps) to be computed in floating point to calibrate a "
                             f"Gaussian mechanism, got {eps!r}; an eps that large guarantees nothing (e^eps overflows "
                             "from eps = 710), so pass a smaller eps or mu itself.")
        while f(hi) < 0:
            hi += 5.0
        log_mu = optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-14)
        mu = math.exp(log_mu)
        while gdp_delta(np.array([eps]), mu)[0] > delta:  # stay on the safe side of the root
            mu = math.nextafter(mu, 0.0)
        return cls(mu)

    def _delta(self, eps):
        return gdp_delta(eps, self.mu)

    def _delta_one(self, eps: float) -> float:
        # gdp_delta's ufuncs on one float64: the same value bit for bit, a tenth of the array call's time (the
        # one-target relaxation's tangent search calls it thousands of times); only where _delta is this class's own
        if type(self)._delta is GaussianDP._delta and math.isfinite(eps):
            return gdp_delta_scalar(eps, self.mu)
        return super()._delta_one(eps)

    def gdp_mu(self) -> float | None:
        return float(self.mu)

    def renyi(self, orders) -> np.ndarray | None:
        """mu-GDP (a Gaussian mechanism) is (alpha, alpha mu^2 / 2)-RDP: (mu^2 / 2)-zCDP."""
        return renyi_orders(orders) * self.mu**2 / 2.0

    def epsilon(self, delta: float) -> float:
        return super().epsilon(delta)

    def tradeoff(self, alpha):
        """f(alpha) = Phi(Phi^{-1}(1 - alpha) - mu), with Phi^{-1}(1 - alpha) taken as isf(alpha) (exact at small alpha)."""
        a = _validate.probability("alpha", alpha)
        out = stats.norm.cdf(stats.norm.isf(a) - self.mu)
        return float(out) if np.ndim(out) == 0 else out

    def one_minus_tradeoff(self, alpha):
        """1 - f(alpha) = Phi(Phi^{-1}(alpha) + mu), as the survival function (no cancellation at small alpha)."""
        a = _validate.probability("alpha", alpha)
        out = stats.norm.sf(stats.norm.isf(a) - self.mu)
        return float(out) if np.ndim(out) == 0 else out


def renyi_orders(orders) -> np.ndarray:
    """Renyi orders alpha > 1 (a number or an array, vectorised), checked, as a float array."""
    a = _validate.elementwise("orders", orders)
    bad = ~(a > 1.0)
    if np.any(bad):
        raise _validate.ArgumentError("orders", f"orders must be Renyi orders > 1, got {_validate._bad_entry(a, bad)}.")
    return a


def gdp_delta(eps: np.ndarray, mu: float) -> np.ndarray:
    """Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), evaluated in log space (no cancellation to < 0)."""
    eps = np.asarray(eps, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_a = special.log_ndtr(-eps / mu + mu / 2)
        log_b = eps + special.log_ndtr(-eps / mu - mu / 2)
        diff = log_b - log_a  # <= 0
        out = np.exp(log_a) * -np.expm1(np.minimum(diff, 0.0))
    return np.where(np.isinf(eps), 0.0, np.maximum(out, 0.0))


def gdp_delta_scalar(eps: float, mu: float) -> float:
    """``gdp_delta`` at one finite eps >= 0: the same ufuncs on one float64, so the same value bit for bit, at a tenth
    of an array call's time (the one-target relaxation's tangent search; tests/stages/bound/test_whole_prior_fast.py)."""
    e = np.float64(eps)
    log_a = special.log_ndtr(-e / mu + mu / 2)
    log_b = e + special.log_ndtr(-e / mu - mu / 2)
    return float(np.exp(log_a) * -np.expm1(min(log_b - log_a, 0.0)))


class ComposedGaussian(GaussianDP):
    """``compositions`` Gaussian mechanisms with noise multiplier sigma and L2 sensitivity s: mu-GDP with mu = sqrt(k) s / sigma.

    Examples:
        >>> ComposedGaussian(noise_multiplier=2.0, compositions=4).mu
        1.0
    """

    def __init__(self, noise_multiplier: float, compositions: int = 1, sensitivity: float = 1.0):
        self.noise_multiplier = _validate.positive("noise_multiplier", noise_multiplier)
        self.compositions = _validate.integer("compositions", compositions, minimum=1)
        self.sensitivity = _validate.positive("sensitivity", sensitivity)
        super().__init__(math.sqrt(self.compositions) * self.sensitivity / self.noise_multiplier)

    def params(self) -> dict:
        return {
            "profile": self.name,
            "noise_multiplier": self.noise_multiplier,
            "compositions": self.compositions,
            "sensitivity": self.sensitivity,
        }


#: Below this, PrivacyLossProfile.delta_upper asks the distribution directly instead of its table's chord.
_TABLE_RELIABLE = 1e-12


class PrivacyLossProfile(PrivacyProfile):
    """A profile read off a ``dp_accounting`` privacy-loss distribution (pessimistic, so every delta is an
    upper bound): DPSGD and ``accountants.DpEventProfile``. Subclasses give ``_pld``, built on first use."""

    @property
    @abstractmethod
    def _pld(self):
        """The dp_accounting PrivacyLossDistribution whose hockey-stick divergences are the profile."""

    @cached_property
    def _delta_table(self):
        """delta on a fine eps grid, for delta_upper: one vectorised call of the distribution."""
        # The pessimistic PLD keeps some mass at infinity, so delta has a floor: end the table
        # where delta reaches 1e-25 or that floor, whichever comes first.
        probe = np.concatenate([[0.0], np.geomspace(1e-3, 500.0, 400)])
        probe_delta = np.asarray(self._pld.get_delta_for_epsilon(probe), dtype=float)
        floor = max(float(probe_delta[-1]), 1e-25)
        top = float(probe[int(np.argmax(probe_delta <= floor * (1 + 1e-9)))]) if np.any(probe_delta <= floor * (1 + 1e-9)) else 500.0
        top = max(top, 1e-3)
        grid = np.unique(np.concatenate([np.linspace(0.0, top, 8001), np.geomspace(1e-6, top, 2001)]))
        vals = np.maximum(np.asarray(self._pld.get_delta_for_epsilon(grid), dtype=float), 0.0)
        # delta is non-increasing, so the running minimum of upper bounds is still an upper bound
        return grid, np.minimum.accumulate(vals)

    def delta_upper(self, eps: float) -> float:
        """delta(eps) <= the chord of the table in e^eps: the hockey-stick divergence is convex in
        e^eps, so linear interpolation in e^eps between grid points is a valid upper bound."""
        grid, vals = self._delta_table
        e = float(eps)
        if e >= grid[-1]:
            chord = float(vals[-1])
        else:
            i = int(np.searchsorted(grid, e, side="right")) - 1
            g0, g1 = grid[i], grid[i + 1]
            w = -math.expm1(e - g1) / -math.expm1(g0 - g1)  # (e^g1 - e^e) / (e^g1 - e^g0)
            chord = float(min(1.0, w * vals[i] + (1.0 - w) * vals[i + 1]))
        if chord < _TABLE_RELIABLE:
            # the table's far end has lost its digits (the accountant's sums cancel to 0 there, and the
            # running minimum keeps them at 0): sum the pessimistic PLD's tail directly instead
            chord = max(chord, self._delta_far_tail(e))
        return chord

    def _delta_far_tail(self, eps: float) -> float:
        """delta(eps) = inf mass + sum_{l > eps} Pr[L = l] (1 - e^(eps - l)) over the pessimistic privacy-loss
        distribution(s), summed term by term with each probability raised by the composition's round-off.

        The FFT self-composition leaves entries off by up to ~1e-19 (some come out negative), which is why
        the accountant's own get_delta_for_epsilon returns 0 where delta is below ~1e-14. Here every entry
        counts as max(p, 0) + nu, nu the size of the most negative entry (the round-off level the
        composition shows), so the sum stays an upper bound on the accountant's pessimistic delta."""
        out = 0.0
        pmfs = [self._pld._pmf_remove] if self._pld._symmetric else [self._pld._pmf_remove, self._pld._pmf_add]
        for pmf in (pmf.to_dense_pmf() for pmf in pmfs):
            probs = np.asarray(pmf._probs, dtype=float)
            nu = max(0.0, -float(np.min(probs)))
            losses = (pmf._lower_loss + np.arange(pmf.size)) * pmf._discretization
            above = losses > eps
            tail = float(np.sum((np.maximum(probs[above], 0.0) + nu) * -np.expm1(eps - losses[above])))
            out = max(out, float(pmf._infinity_mass) + tail)
        return min(1.0, out)

    def _delta(self, eps):
        finite = np.where(np.isinf(eps), 1e300, eps)
        order = np.argsort(finite, kind="stable")  # the accountant wants ascending eps
        out = np.empty(len(finite))
        out[order] = np.asarray(self._pld.get_delta_for_epsilon(finite[order]), dtype=float)
        return np.where(np.isinf(eps), 0.0, out)

    def epsilon(self, delta: float) -> float:
        d = _validate.delta("delta", delta)
        return float(self._pld.get_epsilon_for_delta(d))


class DPSGD(PrivacyLossProfile):
    """DP-SGD: Poisson-subsampled Gaussian (rate q, noise multiplier sigma) composed over ``steps``.

    Backed by ``dp_accounting``'s pessimistic privacy-loss distribution. ``neighboring`` is
    ``"replace_one"`` (one example replaced by another: the clipped sum moves by up to 2C) or
    ``"add_remove"``. With ``sample_rate == 1`` the mechanism is exactly mu-GDP with
    ``mu = c sqrt(steps) / sigma`` (c = 2 for replace-one, 1 for add/remove) and that closed form is used.

    An add/remove profile bounds membership inference (adding or removing a record) only; in a
    reconstruction game the theorems use ``replace_one()``: the same training run accounted for
    replace-one neighbours (exact, from the accountant; about twice the add/remove mu or eps).

    Examples:
        >>> full_batch = DPSGD(noise_multiplier=1.0, sample_rate=1.0, steps=1, neighboring="add_remove")
        >>> full_batch.gdp_mu(), full_batch.replace_one().gdp_mu()   # the closed form mu = c sqrt(steps) / sigma
        (1.0, 2.0)
    """

    NEIGHBORING = ("replace_one", "add_remove")

    def __init__(
        self,
        noise_multiplier: float,
        sample_rate: float,
        steps: int,
        neighboring: str = "replace_one",
        value_discretization_interval: float = 1e-4,
    ):
        self.noise_multiplier = _validate.positive("noise_multiplier", noise_multiplier)
        self.sample_rate = _validate.scalar("sample_rate", sample_rate, _validate.probability, open_low=True)
        self.steps = _validate.integer("steps", steps, minimum=1)
        if neighboring not in self.NEIGHBORING:
            raise ValueError(f"neighboring must be one of {list(self.NEIGHBORING)}, got {neighboring!r}.")
        self.neighboring = neighboring
        self.value_discretization_interval = _validate.positive(
            "value_discretization_interval", value_discretization_interval
        )

    def params(self) -> dict:
        return {
            "profile": self.name,
            "noise_multiplier": self.noise_multiplier,
            "sample_rate": self.sample_rate,
            "steps": self.steps,
            "neighboring": self.neighboring,
            "value_discretization_interval": self.value_discretization_interval,
        }

    def replace_one(self) -> "DPSGD":
        """The same DP-SGD run accounted for replace-one neighbours (itself if it already is)."""
        if self.neighboring == "replace_one":
            return self
        return self._replace_one

    @cached_property
    def _replace_one(self) -> "DPSGD":
        return DPSGD(self.noise_multiplier, self.sample_rate, self.steps, "replace_one", self.value_discretization_interval)

    @property
    def full_batch_mu(self) -> float | None:
        """mu of the exact GDP guarantee when every step uses the whole batch, else None."""
        if self.sample_rate < 1.0:
            return None
        c = 2.0 if self.neighboring == "replace_one" else 1.0
        return c * math.sqrt(self.steps) / self.noise_multiplier

    def gdp_mu(self) -> float | None:
        return self.full_batch_mu

    def renyi(self, orders) -> np.ndarray | None:
        """Full batch: (alpha, alpha mu^2 / 2)-RDP. Add/remove with q < 1: dp_accounting's RDP accountant
        (orders whose series does not converge come back as inf). Replace-one with q < 1: None."""
        a = renyi_orders(orders)
        if self.full_batch_mu is not None:
            return a * self.full_batch_mu**2 / 2.0
        if self.neighboring != "add_remove":
            return None
        import logging

        import dp_accounting
        from dp_accounting import rdp as rdp_lib

        accountant = rdp_lib.RdpAccountant(orders=list(a))
        event = dp_accounting.PoissonSampledDpEvent(self.sample_rate, dp_accounting.GaussianDpEvent(self.noise_multiplier))
        absl_log = logging.getLogger("absl")
        level = absl_log.level
        absl_log.setLevel(logging.ERROR)  # orders whose series does not converge come back as inf: harmless
        try:
            accountant.compose(dp_accounting.SelfComposedDpEvent(event, self.steps))
        finally:
            absl_log.setLevel(level)
        out = np.asarray(accountant._rdp, dtype=float)
        return np.where(np.isfinite(out) & (out >= 0), out, np.inf)

    def renyi_missing(self) -> str:
        return "no Renyi-DP accountant for replace-one Poisson-subsampled DP-SGD (dp_accounting supports add/remove only)"

    @cached_property
    def _pld(self):
        from dp_accounting.pld import privacy_loss_distribution as pld_lib
        from dp_accounting import NeighboringRelation

        relation = (
            NeighboringRelation.REPLACE_ONE if self.neighboring == "replace_one" else NeighboringRelation.ADD_OR_REMOVE_ONE
        )
        single = pld_lib.from_gaussian_mechanism(
            self.noise_multiplier,
            sensitivity=1.0,
            sampling_prob=self.sample_rate,
            value_discretization_interval=self.value_discretization_interval,
            neighboring_relation=relation,
        )
        return single.self_compose(self.steps)

    def delta_upper(self, eps: float) -> float:
        if self.full_batch_mu is not None:
            return float(gdp_delta(np.array([eps]), self.full_batch_mu)[0])
        return super().delta_upper(eps)

    def _delta(self, eps):
        mu = self.full_batch_mu
        if mu is not None:
            return gdp_delta(eps, mu)
        return super()._delta(eps)

    def epsilon(self, delta: float) -> float:
        if self.full_batch_mu is not None:
            return GaussianDP(self.full_batch_mu).epsilon(delta)
        return super().epsilon(delta)

    def tradeoff(self, alpha):
        if self.full_batch_mu is not None:
            return GaussianDP(self.full_batch_mu).tradeoff(alpha)
        return super().tradeoff(alpha)

    def one_minus_tradeoff(self, alpha):
        if self.full_batch_mu is not None:
            return GaussianDP(self.full_batch_mu).one_minus_tradeoff(alpha)
        return super().one_minus_tradeoff(alpha)


def pure_epsilon_of(profile) -> float | None:
    """eps of an eps-DP profile, where the theorems use Theorem 3.1, else None.

    The one answer to "do the bounds treat this profile as eps-DP?", asked by the theorems, their searches and the
    bound boxes alike: the profile's own ``pure_epsilon`` (PureDP, ApproxDP with delta = 0, and the eps-DP profiles
    an accountant gives, e.g. composed Laplace events through ``from_dp_event``), the same number the game reports
    as its epsilon at delta = 0 and best_bound's ReRo takes its eps-DP corollary from.

    For such a profile every bound uses Theorem 3.1 (``theorems.pure_dp_tail``: Bern(beta_i(eps)) dominance,
    the posterior argument) at the profile's own eps, never the (eps', delta(eps')) points of its curve
    below eps: the one-run theorem at eps' < eps goes below beta(eps, p) for p > 1/2, and an eps-DP
    mechanism attains beta(eps, p) exactly when success is a set of values (release an m-subset S of k
    values with Pr[S | x] proportional to e^eps if x in S, else 1, and guess S: e.g. eps = 1, p = 0.9
    attains 0.96073 while the eps' scan gave 0.94621). Theorem 3.1 holds for every success metric.
    """
    return profile.pure_epsilon()


#: The attack games the theorems cover, by what the secret X_i of target i is.
GAMES = ("reconstruction", "membership")


def for_game(profile: PrivacyProfile, game: str = "reconstruction") -> PrivacyProfile:
    """The profile the theorems may use in ``game``.

    * ``"reconstruction"`` (attribute inference and reconstruction too): X_i is target i's record,
      and changing it *replaces* a record, so the profile must be a replace-one guarantee: an
      add/remove profile is converted with ``profile.replace_one()`` (DP-SGD: the same run under
      replace-one accounting; the profiles of ``accountants``: dp_accounting's REPLACE_ONE accounting,
      Laplace at twice its sensitivity, or else group privacy over remove-then-add).
    * ``"membership"``: X_i is target i's membership bit, and changing it adds or removes i's record,
      so an add/remove profile applies as it is (a replace-one profile applies when a non-member's
      slot holds a fixed filler record, the paper's encoding of membership inference).

    Examples:
        >>> add_remove = DPSGD(1.0, 1.0, 1, "add_remove")
        >>> for_game(add_remove).gdp_mu(), for_game(add_remove, "membership").gdp_mu()
        (2.0, 1.0)
    """
    if game not in GAMES:
        raise ValueError(f"game must be one of {list(GAMES)}, got {game!r}; use 'membership' only when X_i is a membership bit.")
    return profile.replace_one() if game == "reconstruction" else profile


def replace_one_from_add_remove(profile: PrivacyProfile) -> PrivacyProfile:
    """The replace-one guarantee implied by ``profile`` read as an *add/remove* guarantee.

    Replacing a record is removing it and adding another, so by group privacy for two steps:
    mu-GDP -> 2 mu-GDP (Dong, Roth, Su 2019, arXiv:1905.02383, Thm 2.14); eps-DP -> 2 eps-DP;
    (eps, delta)-DP -> (2 eps, (1 + e^eps) delta)-DP; a Gaussian mechanism's add/remove L2
    sensitivity s -> 2 s (triangle inequality, exact). DP-SGD is re-accounted exactly
    (``DPSGD.replace_one``). Use it for a guarantee quoted under add/remove, e.g. ``GaussianDP(mu)``
    from a paper that counts neighbours by addition or removal.

    Examples:
        >>> replace_one_from_add_remove(GaussianDP(1.0)).mu, replace_one_from_add_remove(PureDP(1.0)).eps
        (2.0, 2.0)
        >>> replace_one_from_add_remove(ApproxDP(1.0, 1e-6))   # (2 eps, (1 + e^eps) delta)
        ApproxDP(eps=2.0, delta=3.718281828459045e-06)
    """
    if isinstance(profile, DPSGD):
        return DPSGD(profile.noise_multiplier, profile.sample_rate, profile.steps, "add_remove",
                     profile.value_discretization_interval).replace_one()
    if isinstance(profile, ComposedGaussian):
        return ComposedGaussian(profile.noise_multiplier, profile.compositions, 2.0 * profile.sensitivity)
    if isinstance(profile, GaussianDP):
        return GaussianDP(2.0 * profile.mu)
    if isinstance(profile, PureDP):
        return PureDP(2.0 * profile.eps)
    if isinstance(profile, ApproxDP):
        e, d = profile.eps, profile.delta_
        d2 = (1.0 + math.exp(e)) * d if e < 700 else (math.inf if d > 0 else 0.0)
        if d2 >= 1.0:
            raise ValueError(
                f"profile {profile!r} read as add/remove gives replace-one delta (1 + e^eps) delta = {d2}, "
                "which is >= 1 and guarantees nothing; use a smaller eps or delta."
            )
        return ApproxDP(2.0 * e, d2)
    raise ValueError(f"profile must be a PureDP, ApproxDP, GaussianDP, ComposedGaussian or DPSGD, got {profile!r}.")
