"""Any accountant as a privacy profile: a dp_accounting DpEvent, a delta(eps) curve or (eps, delta) table, an opacus history.

Three factories turn what a user already has into a ``PrivacyProfile`` the theorems take:

```python
from_dp_event(event, neighboring="add_remove")   # dp_accounting's PLD accountant, pessimistic
from_delta([(1.0, 1e-3), (2.0, 1e-6)])           # the tightest profile a table (or a function) implies
from_opacus(accountant)                          # an opacus accountant's history, via from_dp_event
```

Each states its neighbouring relation. The theorems compare datasets that differ by *replacing* one
record (THEORY.md, Section 1), so in a reconstruction game an add/remove profile is replaced by
``profile.replace_one()`` (``profiles.for_game``), which for a DpEvent uses dp_accounting's own
REPLACE_ONE accounting where it has one, doubles the sensitivity of Laplace noise where dp_accounting
says that is exact, and otherwise applies group privacy over the two steps remove-then-add
(``ReplaceOneByGroupPrivacy``). Sources: Dong, Roth & Su, "Gaussian differential privacy" (arXiv:1905.02383)
for trade-off curves and group privacy; Zhu, Dong & Wang, "Optimal accounting of differential privacy via
characteristic function" (arXiv:2106.08567) for dominating pairs and their composition; Doroshenko et al.,
"Connect the dots" (arXiv:2207.04380) for the pessimistic PLD.

Imports numpy (and the profiles module); dp_accounting only inside the functions that need it, as
``profiles.DPSGD`` does, so ``import stages.bound`` stays light. opacus is never imported.
"""
from __future__ import annotations

import hashlib
import math
from functools import cached_property

import numpy as np

from . import _validate
from .profiles import ApproxDP, GaussianDP, PrivacyLossProfile, PrivacyProfile, gdp_delta, renyi_orders

__all__ = [
    "from_dp_event",
    "from_delta",
    "from_opacus",
    "DpEventProfile",
    "DeltaTable",
    "DeltaCurve",
    "ReplaceOneByGroupPrivacy",
]

NEIGHBORING = ("replace_one", "add_remove")
#: exp() overflows beyond this; a table's pair at a larger eps only bounds delta at eps >= eps_j (a step).
_EXP_LIMIT = 700.0


def _renyi_of_exact(pure: float | None, mu: float | None, orders) -> np.ndarray | None:
    """The Renyi-DP curve an exact eps-DP (ApproxDP.renyi) or mu-GDP (GaussianDP.renyi) guarantee gives, else None."""
    renyi_orders(orders)
    if pure is not None:
        return ApproxDP(pure).renyi(orders)
    if mu is not None:
        return GaussianDP(mu).renyi(orders)
    return None


def _neighboring(neighboring) -> str:
    if neighboring not in NEIGHBORING:
        raise ValueError(f"neighboring must be one of {list(NEIGHBORING)}, got {neighboring!r}; say which neighbouring "
                         "relation the guarantee is stated for ('add_remove' is dp_accounting's and opacus' default).")
    return neighboring


def _relation(neighboring: str):
    from dp_accounting import NeighboringRelation

    return NeighboringRelation.REPLACE_ONE if neighboring == "replace_one" else NeighboringRelation.ADD_OR_REMOVE_ONE


# --------------------------------------------------------------------------------------------
# dp_accounting events
# --------------------------------------------------------------------------------------------
def _event_json(value):
    """A DpEvent as nested JSON-able dicts ({"event": class name, field: value, ...}), from its public named tuple."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        fields = value._asdict()
        out = {"event": fields.pop("class_name")}
        fields.pop("module_name", None)
        out.update({k: _event_json(v) for k, v in fields.items()})
        return out
    if isinstance(value, (list, tuple)):
        return [_event_json(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


def _leaves(event, count: int = 1):
    """(leaf event, times it is applied) for every mechanism of a composed event."""
    from dp_accounting import dp_event as dpa

    if isinstance(event, dpa.SelfComposedDpEvent):
        yield from _leaves(event.event, count * event.count)
    elif isinstance(event, dpa.ComposedDpEvent):
        for e in event.events:
            yield from _leaves(e, count)
    else:
        yield event, count


def _is_non_private(leaf) -> bool:
    """Whether a leaf mechanism gives no guarantee: a NonPrivateDpEvent, or zero noise (as the accountant decides)."""
    from dp_accounting import dp_event as dpa

    if isinstance(leaf, dpa.NonPrivateDpEvent):
        return True
    if isinstance(leaf, dpa.PoissonSampledDpEvent):
        return leaf.sampling_probability > 0 and _is_non_private(leaf.event)
    if isinstance(leaf, dpa.RandomizedResponseDpEvent):
        return leaf.num_buckets > 1 and leaf.noise_parameter == 0
    if isinstance(leaf, dpa.MixtureOfGaussiansDpEvent):
        return leaf.standard_deviation == 0 and any(s != 0 for s in leaf.sensitivities)
    for noise in ("noise_multiplier", "noise_parameter"):
        if getattr(leaf, noise, None) == 0:
            return True
    return False


def _pure_epsilon(event, neighboring: str) -> float | None:
    """eps of the exact eps-DP guarantee the event has (composition adds eps), or None when it has none.

    Laplace of noise multiplier b: 1/b (add/remove); discrete Laplace a at sensitivity s: a s; randomized
    response p over k buckets (replace-one only): log(1 + k (1 - p) / p); Poisson subsampling at rate q of an
    eps-DP Laplace: log(1 + q (e^eps - 1)) (add/remove: the larger of the remove and add losses).
    Replace-one doubles the Laplace eps (dp_accounting's own rule at q = 1, see ``_replace_one_parts``).
    """
    from dp_accounting import dp_event as dpa

    c = 2.0 if neighboring == "replace_one" else 1.0
    total = 0.0
    for leaf, count in _leaves(event):
        if isinstance(leaf, dpa.NoOpDpEvent):
            eps = 0.0
        elif isinstance(leaf, dpa.LaplaceDpEvent):
            eps = c / leaf.noise_multiplier
        elif isinstance(leaf, dpa.DiscreteLaplaceDpEvent):
            eps = c * leaf.noise_parameter * leaf.sensitivity
        elif isinstance(leaf, dpa.RandomizedResponseDpEvent) and neighboring == "replace_one":
            p, k = leaf.noise_parameter, leaf.num_buckets
            eps = 0.0 if k == 1 or p == 1 else math.log1p(k * (1.0 - p) / p)
        elif (isinstance(leaf, dpa.PoissonSampledDpEvent) and isinstance(leaf.event, dpa.LaplaceDpEvent)
              and neighboring == "add_remove"):
            eps = math.log1p(leaf.sampling_probability * math.expm1(1.0 / leaf.event.noise_multiplier))
        else:
            return None
        total += count * eps
    return total


def _gdp_mu(event, neighboring: str) -> float | None:
    """mu of the exact mu-GDP guarantee of an event made of Gaussian mechanisms only (no subsampling below 1):
    mu^2 = sum over applications of (c / sigma)^2, c = 2 for replace-one (dp_accounting: twice the
    sensitivity), 1 for add/remove (Dong, Roth & Su, arXiv:1905.02383, Cor. 3.3)."""
    from dp_accounting import dp_event as dpa

    c = 2.0 if neighboring == "replace_one" else 1.0
    total = 0.0
    for leaf, count in _leaves(event):
        if isinstance(leaf, dpa.PoissonSampledDpEvent) and leaf.sampling_probability == 1.0:
            leaf = leaf.event
        if isinstance(leaf, dpa.NoOpDpEvent):
            continue
        if not isinstance(leaf, dpa.GaussianDpEvent):
            return None
        total += count * (c / leaf.noise_multiplier) ** 2
    return math.sqrt(total)


class _NoExactRule(Exception):
    """A leaf of the event has neither a REPLACE_ONE accounting in dp_accounting nor an exact rewrite."""


def _replace_one_parts(event):
    """The event split for replace-one accounting: (native, doubled), either None when empty.

    * native: the parts dp_accounting's PLD accountant supports under REPLACE_ONE itself (Gaussian,
      Poisson-subsampled Gaussian, randomized response, truncated subsampled Gaussian), kept as they are.
    * doubled: Laplace and discrete Laplace, which that accountant refuses under REPLACE_ONE. Replacing a record
      moves the released sum by at most twice the L1 bound C (triangle inequality, attained by +C and -C),
      so the replace-one pair is the add/remove pair at twice the sensitivity: LaplaceDpEvent(b) becomes
      LaplaceDpEvent(b / 2) (b is scale / C) and DiscreteLaplaceDpEvent(a, s) becomes (a, 2 s), accounted under
      ADD_OR_REMOVE_ONE. dp_accounting states the same rule (privacy_loss_mechanism.AdditiveNoisePrivacyLoss:
      "when q = 1 ... REPLACE adjacency corresponds to the same privacy loss distribution with twice the
      sensitivity"); this is how ``replace_one_from_add_remove`` treats a Gaussian's sensitivity too.
    Raises _NoExactRule for anything else (Poisson-subsampled Laplace, mixtures of Gaussians, ...).
    """
    from dp_accounting import dp_event as dpa
    from dp_accounting.pld import PLDAccountant

    if isinstance(event, dpa.NoOpDpEvent):
        return None, None
    if isinstance(event, dpa.SelfComposedDpEvent):
        native, doubled = _replace_one_parts(event.event)
        wrap = lambda e: None if e is None else dpa.SelfComposedDpEvent(e, event.count)
        return wrap(native), wrap(doubled)
    if isinstance(event, dpa.ComposedDpEvent):
        parts = [_replace_one_parts(e) for e in event.events]
        natives = [n for n, _ in parts if n is not None]
        doubles = [d for _, d in parts if d is not None]
        return (dpa.ComposedDpEvent(natives) if natives else None), (dpa.ComposedDpEvent(doubles) if doubles else None)
    if isinstance(event, dpa.LaplaceDpEvent):
        return None, dpa.LaplaceDpEvent(event.noise_multiplier / 2.0)
    if isinstance(event, dpa.DiscreteLaplaceDpEvent):
        return None, dpa.DiscreteLaplaceDpEvent(event.noise_parameter, 2 * event.sensitivity)
    if PLDAccountant(_relation("replace_one")).supports(event):
        return event, None
    raise _NoExactRule(event)


def _has_exact_replace_one(event) -> bool:
    try:
        _replace_one_parts(event)
    except _NoExactRule:
        return False
    return True


def _accounting_parts(event, neighboring: str) -> list:
    """[(event, relation)]: the accountants that together give the profile (one, or for replace-one the native
    part under REPLACE_ONE and the doubled Laplace part under ADD_OR_REMOVE_ONE; see ``_replace_one_parts``)."""
    if neighboring == "add_remove":
        return [(event, "add_remove")]
    native, doubled = _replace_one_parts(event)
    return [(e, r) for e, r in ((native, "replace_one"), (doubled, "add_remove")) if e is not None]


def _check_event(event, neighboring: str) -> None:
    """One sentence when the PLD accountant cannot account ``event`` under ``neighboring`` or it is not private."""
    from dp_accounting import dp_event as dpa
    from dp_accounting.pld import PLDAccountant

    if not isinstance(event, dpa.DpEvent):
        raise ValueError(f"event must be a dp_accounting DpEvent (e.g. dp_accounting.GaussianDpEvent(1.0)), got {event!r}.")
    bad = next((leaf for leaf, _ in _leaves(event) if _is_non_private(leaf)), None)
    if bad is not None:
        raise ValueError(f"event must give a privacy guarantee, got {event!r}, whose part {bad!r} has none (no noise); "
                         "a mechanism without a guarantee has no profile (its profile is None: NOT PRIVATE).")
    for part, relation in _accounting_parts(event, neighboring):
        if PLDAccountant(_relation(relation)).supports(part):
            continue
        leaf = next((leaf for leaf, _ in _leaves(part) if not PLDAccountant(_relation(relation)).supports(leaf)), part)
        other = "replace_one" if relation == "add_remove" else "add_remove"
        fix = (f"it can under {other}: give neighboring={other!r}" if PLDAccountant(_relation(other)).supports(leaf)
               else "describe the mechanism with events it supports (Gaussian, Laplace, Poisson-subsampled Gaussian, ...)")
        raise ValueError(f"event must be one that dp_accounting's PLD accountant supports under {neighboring} "
                         f"neighbours, got {event!r}, whose part {leaf!r} it cannot account; {fix}.")


class DpEventProfile(PrivacyLossProfile):
    """The profile of a dp_accounting ``DpEvent``: its PLD accountant's pessimistic privacy-loss distribution.

    ``delta(eps)`` is ``PLDAccountant(relation).get_delta(eps)`` after composing ``event`` (the same
    distribution, evaluated on a whole array at once; ``delta_upper`` is the table chord DPSGD uses).
    ``neighboring="add_remove"`` is ADD_OR_REMOVE_ONE; ``"replace_one"`` is REPLACE_ONE where dp_accounting
    supports it, with Laplace noise at twice its sensitivity where it does not (see ``_replace_one_parts``).
    An event with no such exact replace-one accounting is refused here: ``from_dp_event`` then applies group
    privacy instead (``ReplaceOneByGroupPrivacy``). ``pure_epsilon`` and ``gdp_mu`` are reported when the
    event is exactly eps-DP (Laplace, randomized response) or mu-GDP (Gaussians without subsampling); an
    eps-DP profile's delta is set to 0 from its eps on, where the pessimistic discretisation leaves ~1e-15.
    """

    def __init__(self, event, neighboring: str, value_discretization_interval: float = 1e-4):
        self.neighboring = _neighboring(neighboring)
        self.value_discretization_interval = _validate.positive(
            "value_discretization_interval", value_discretization_interval)
        if self.neighboring == "replace_one":
            try:
                _check_event(event, "replace_one")
            except _NoExactRule as exc:
                raise ValueError(
                    f"event must have an exact replace-one accounting for DpEventProfile(neighboring='replace_one'), "
                    f"got {event!r}, whose part {exc.args[0]!r} has none in dp_accounting; use from_dp_event(event, "
                    "neighboring='replace_one') (group privacy over an add/remove accounting) instead.") from None
        else:
            _check_event(event, "add_remove")
        self.event = event
        self._pure = _pure_epsilon(event, self.neighboring)
        self._mu = _gdp_mu(event, self.neighboring)
        if self._pure is not None:
            self.max_useful_epsilon = self._pure

    def params(self) -> dict:
        return {
            "profile": self.name,
            "event": _event_json(self.event.to_named_tuple()),
            "neighboring": self.neighboring,
            "value_discretization_interval": self.value_discretization_interval,
        }

    def __repr__(self) -> str:
        return f"{self.name}({self.event!r}, neighboring={self.neighboring!r})"

    def replace_one(self) -> PrivacyProfile:
        """The same event accounted for replace-one neighbours: exactly where dp_accounting (or the doubled
        Laplace sensitivity) allows, else by group privacy over this add/remove profile."""
        if self.neighboring == "replace_one":
            return self
        return self._replace_one

    @cached_property
    def _replace_one(self) -> PrivacyProfile:
        if _has_exact_replace_one(self.event):
            return DpEventProfile(self.event, "replace_one", self.value_discretization_interval)
        return ReplaceOneByGroupPrivacy(self)

    def pure_epsilon(self) -> float | None:
        return self._pure

    def gdp_mu(self) -> float | None:
        return self._mu

    def renyi(self, orders) -> np.ndarray | None:
        """From the exact eps-DP or mu-GDP guarantee when there is one (same neighbouring), else None."""
        return _renyi_of_exact(self._pure, self._mu, orders)

    @cached_property
    def _pld(self):
        # PLDAccountant keeps its distribution private and answers one eps at a time; the profile needs the
        # whole curve (and, for replace-one, two accountants' distributions composed), so it reads ``_pld``.
        # tests/stages/bound/test_accountants.py checks delta against the accountant's own get_delta, so a
        # dp_accounting upgrade that changes these attributes fails there.
        from dp_accounting.pld import PLDAccountant

        pld = None
        for part, relation in _accounting_parts(self.event, self.neighboring) or [(None, "add_remove")]:
            accountant = PLDAccountant(_relation(relation), self.value_discretization_interval)
            if part is not None:
                accountant.compose(part)
            if accountant._contains_non_dp_event:  # noqa: SLF001 (_check_event refuses these first)
                raise ValueError(f"event must give a privacy guarantee, got {self.event!r}: dp_accounting finds no noise in it.")
            pld = accountant._pld if pld is None else pld.compose(accountant._pld)  # noqa: SLF001
        return pld

    def _delta(self, eps):
        out = super()._delta(eps)
        return out if self._pure is None else np.where(eps >= self._pure, 0.0, out)

    def delta_upper(self, eps: float) -> float:
        if self._pure is not None and eps >= self._pure:
            return 0.0
        return super().delta_upper(eps)

    def epsilon(self, delta: float) -> float:
        eps = super().epsilon(delta)
        return eps if self._pure is None else min(eps, self._pure)


def from_dp_event(event, *, neighboring: str | None = None, value_discretization_interval: float = 1e-4) -> PrivacyProfile:
    """The privacy profile of a dp_accounting ``DpEvent`` (its PLD accountant, pessimistic estimate).

    ``neighboring`` must be given (None is refused): dp_accounting counts neighbours by adding or removing a record
    ("add_remove", ADD_OR_REMOVE_ONE) while the paper replaces one ("replace_one"), so say which the
    guarantee is for. With "replace_one" the event is accounted by dp_accounting's REPLACE_ONE where it has
    one (Gaussian, Poisson-subsampled Gaussian, randomized response), with Laplace noise at twice its
    sensitivity where that is exact (Laplace, discrete Laplace), and otherwise (Poisson-subsampled Laplace,
    mixtures of Gaussians) by group privacy over its add/remove accounting (``ReplaceOneByGroupPrivacy``).
    An add/remove profile used in a reconstruction game goes through the same conversion
    (``profile.replace_one()``, via ``for_game``).

    Examples:
        >>> import dp_accounting
        >>> profile = from_dp_event(dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(2.0), 3),
        ...                         neighboring="add_remove")
        >>> profile.pure_epsilon(), profile.replace_one().pure_epsilon()
        (1.5, 3.0)
    """
    from dp_accounting import dp_event as dpa

    neighboring = _neighboring(neighboring)
    if neighboring == "replace_one" and isinstance(event, dpa.DpEvent) and not _has_exact_replace_one(event):
        return DpEventProfile(event, "add_remove", value_discretization_interval).replace_one()
    return DpEventProfile(event, neighboring, value_discretization_interval)


# --------------------------------------------------------------------------------------------
# opacus
# --------------------------------------------------------------------------------------------
def _history(accountant) -> list:
    if isinstance(accountant, (list, tuple)):
        history = list(accountant)
    else:
        try:
            history = list(accountant.history)
        except (AttributeError, TypeError):
            raise ValueError(f"accountant must be an opacus accountant (RDPAccountant, PRVAccountant, GaussianAccountant) "
                             f"or its history, a list of (noise_multiplier, sample_rate, steps), got {accountant!r}.") from None
    if not history:
        raise ValueError("accountant must have recorded at least one step, got an empty history []; train with it "
                         "(or call accountant.step(noise_multiplier=..., sample_rate=...)) first.")
    out = []
    for i, entry in enumerate(history):
        try:
            sigma, q, steps = entry
        except (TypeError, ValueError):
            raise _validate.ArgumentError(f"accountant.history[{i}]", f"accountant.history[{i}] must be "
                                          f"(noise_multiplier, sample_rate, steps), got {entry!r}.") from None
        sigma = _validate.positive(f"accountant.history[{i}] noise_multiplier", sigma)
        q = _validate.positive(f"accountant.history[{i}] sample_rate", q)
        if q > 1:
            raise ValueError(f"accountant.history[{i}] sample_rate must be a probability in (0, 1], got {q!r}.")
        out.append((sigma, q, _validate.integer(f"accountant.history[{i}] steps", steps, minimum=1)))
    return out


def from_opacus(accountant, *, value_discretization_interval: float = 1e-4) -> DpEventProfile:
    """The profile of an opacus training run, from its accountant's history (add/remove, as opacus accounts).

    opacus' ``RDPAccountant``, ``PRVAccountant`` and ``GaussianAccountant`` keep ``history``, a list of
    (noise_multiplier, sample_rate, steps) in the order trained; the run is the composition over the list of
    ``steps`` Poisson-subsampled Gaussian mechanisms each, i.e. the dp_accounting event
    ``ComposedDpEvent([SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), steps), ...])``,
    accounted by ``from_dp_event`` under add/remove (opacus' relation). Its ``replace_one()`` is dp_accounting's
    exact REPLACE_ONE accounting of the same run (as ``DPSGD.replace_one``). ``accountant`` may also be the
    history itself. opacus is not imported: only ``accountant.history`` is read.
    """
    from dp_accounting import dp_event as dpa

    events = []
    for sigma, q, steps in _history(accountant):
        single = dpa.GaussianDpEvent(sigma) if q == 1.0 else dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma))
        events.append(dpa.SelfComposedDpEvent(single, steps))
    event = events[0] if len(events) == 1 else dpa.ComposedDpEvent(events)
    return from_dp_event(event, neighboring="add_remove", value_discretization_interval=value_discretization_interval)


# --------------------------------------------------------------------------------------------
# group privacy: replace-one from add/remove
# --------------------------------------------------------------------------------------------
class ReplaceOneByGroupPrivacy(PrivacyProfile):
    """Replace-one from an add/remove profile by group privacy over the two steps remove-then-add.

    Replacing x by x' is removing x (D -> D - x) and then adding x' (D - x -> D'), two add/remove neighbours.
    If P(E) <= e^eps1 Q(E) + delta(eps1) and Q(E) <= e^eps2 R(E) + delta(eps2) for every event E, then
    P(E) <= e^(eps1 + eps2) R(E) + delta(eps1) + e^eps1 delta(eps2), so

        delta_replace(eps) <= min over 0 <= eps1 <= eps of  delta(eps1) + e^eps1 delta(eps - eps1),

    the eps >= 0 lines of Dong, Roth & Su's group privacy (arXiv:1905.02383, Thm 2.14: f-DP gives
    1 - (1 - f)^(o2) for groups of two); both steps use the add/remove profile, which bounds both orders.
    It is evaluated with eps1 on a grid and delta(eps - eps1) at the grid point below (delta is non-increasing,
    so both are upper bounds: every value is valid, at most the grid's resolution above the minimum).
    An eps-DP profile gives 2 eps-DP; mu-GDP gives 2 mu-GDP (and that curve is used where lower).
    """

    neighboring = "replace_one"

    def __init__(self, add_remove: PrivacyProfile):
        if not isinstance(add_remove, PrivacyProfile) or add_remove.neighboring != "add_remove":
            raise ValueError(f"add_remove must be a PrivacyProfile stated for add/remove neighbours, got {add_remove!r}; "
                             "a replace-one profile needs no conversion.")
        self.add_remove = add_remove
        base_pure = add_remove.pure_epsilon()
        self._pure = None if base_pure is None else 2.0 * base_pure
        if self._pure is not None:
            self.max_useful_epsilon = self._pure

    def params(self) -> dict:
        return {"profile": self.name, "add_remove": self.add_remove.params()}

    def identity(self) -> tuple:
        return super().identity() + self.add_remove.identity()[1:]

    def __repr__(self) -> str:
        return f"{self.name}({self.add_remove!r})"

    def pure_epsilon(self) -> float | None:
        return self._pure

    def gdp_mu(self) -> float | None:
        mu = self.add_remove.gdp_mu()
        return None if mu is None else 2.0 * mu

    def renyi(self, orders) -> np.ndarray | None:
        return _renyi_of_exact(self._pure, self.gdp_mu(), orders)

    @cached_property
    def _table(self):
        """(grid, delta on it, made non-increasing): the add/remove profile, evaluated once."""
        base = self.add_remove
        top = max(min(base.max_useful_epsilon, 100.0), 1e-3)
        extra = [] if base.pure_epsilon() is None else [base.pure_epsilon()]
        grid = np.unique(np.concatenate([[0.0], np.linspace(0.0, top, 1001), np.geomspace(1e-4, top, 1001), extra]))
        return grid, np.minimum.accumulate(np.asarray(base.delta(grid), dtype=float))

    def _delta(self, eps):
        grid, table = self._table
        out = np.empty(len(eps))
        growth = np.exp(grid)
        for start in range(0, len(eps), 256):
            e = eps[start:start + 256, None]
            rest = np.maximum(e - grid[None, :], 0.0)
            below = np.searchsorted(grid, rest, side="right") - 1
            with np.errstate(over="ignore", invalid="ignore"):
                chain = table[None, :] + growth[None, :] * table[below]
            chain = np.where(grid[None, :] <= e, chain, np.inf)
            out[start:start + 256] = np.min(chain, axis=1)
        if self._pure is not None:
            out = np.where(eps >= self._pure, 0.0, out)
        mu = self.gdp_mu()
        if mu is not None:
            out = np.minimum(out, gdp_delta(eps, mu))
        return out


# --------------------------------------------------------------------------------------------
# a delta(eps) table or function
# --------------------------------------------------------------------------------------------
def _tradeoff_vertices(eps, deltas):
    """The vertices (alpha_v, g_v) of g = 1 - f on [0, 1], f = max_j f_{eps_j, delta_j}, and alpha = 0.

    1 - f(alpha) = min(1, min_j delta_j + e^eps_j alpha, min_j 1 - e^-eps_j (1 - delta_j - alpha)): the lower
    envelope of lines, written in the complement so that small deltas keep their digits. The envelope is
    found by the convex-hull trick (lines sorted by slope, O(J log J)).
    """
    intercept = np.concatenate([[1.0], deltas, -np.expm1(-eps) + np.exp(-eps) * deltas])
    slope = np.concatenate([[0.0], np.exp(eps), np.exp(-eps)])
    # the lower envelope of lines: at growing alpha the smallest slope wins, so walk slopes from largest down
    order = np.lexsort((intercept, -slope))
    hull: list[int] = []
    for k in order:
        if hull and slope[hull[-1]] == slope[k]:
            continue  # same slope, higher intercept: never below the kept line
        while len(hull) >= 2:
            i, j = hull[-2], hull[-1]
            # j is useless if k meets i no later than j does: (b_k - b_i)/(s_i - s_k) <= (b_j - b_i)/(s_i - s_j)
            if (intercept[k] - intercept[i]) * (slope[i] - slope[j]) <= (intercept[j] - intercept[i]) * (slope[i] - slope[k]):
                hull.pop()
            else:
                break
        hull.append(int(k))
    h = np.array(hull)
    a, b = h[:-1], h[1:]
    alpha = (intercept[b] - intercept[a]) / (slope[a] - slope[b])
    # 1 - f there: the larger of the two lines that meet (equal but for rounding; the larger keeps delta valid)
    value = np.maximum(intercept[a] + slope[a] * alpha, intercept[b] + slope[b] * alpha)
    inside = (alpha > 0) & (alpha < 1)
    return np.concatenate([[0.0], alpha[inside]]), np.concatenate([[float(np.min(deltas))], value[inside]])


class DeltaTable(PrivacyProfile):
    """The tightest privacy profile a table of (eps_j, delta_j) guarantees implies.

    A mechanism that is (eps_j, delta_j)-DP for every j is exactly f-DP with f = max_j f_{eps_j, delta_j}
    (Dong, Roth & Su, arXiv:1905.02383, Prop. 2.12; f_{eps, delta} as in ``ApproxDP``), and some pair of
    distributions has that trade-off curve exactly (their Prop. 2.2), so the tightest profile the table
    implies is that curve's, delta(eps) = 1 + f*(-e^eps) = sup over alpha of (1 - f(alpha) - e^eps alpha).
    1 - f is concave and piecewise linear, so the sup is attained at one of its vertices or at alpha = 0:

        delta(eps) = max over vertices v of (1 - f(alpha_v)) - e^eps alpha_v,

    a maximum of lines in e^eps (so convex and non-increasing in e^eps, as every hockey-stick curve is).
    It is never above min over eps_j <= eps of delta_j (alpha = 0 gives min_j delta_j, and each pair's own
    profile, ApproxDP(eps_j, delta_j), is above it), equals ApproxDP's profile for one pair, and is below the
    chord in e^eps between listed points: a pair at eps = 0 and one at eps = 2 bound every eps between them.
    Pairs with eps_j > 700 (where e^eps_j overflows) only bound delta <= delta_j from eps_j on.
    """

    def __init__(self, pairs, neighboring: str = "replace_one"):
        self.neighboring = _neighboring(neighboring)
        takes = "a table of (eps, delta) rows, shape (J, 2), e.g. [(1.0, 1e-5), (2.0, 1e-7)]"
        if _validate.ndim(pairs) != 2 or np.shape(pairs)[1] != 2 or np.shape(pairs)[0] == 0:
            raise _validate.shape_error("pairs", pairs, takes, "for one guarantee pass [(eps, delta)]"
                                        if _validate.ndim(pairs) == 1 else "")
        arr = _validate.elementwise("pairs", pairs)
        _validate.epsilon("pairs eps", arr[:, 0])
        if not np.all(np.isfinite(arr[:, 0])):
            raise ValueError(f"pairs eps must be finite, got {arr[:, 0].tolist()!r}; drop the pair at eps = inf "
                             "(it bounds nothing).")
        bad = ~((arr[:, 1] >= 0) & (arr[:, 1] < 1))
        if np.any(bad):
            raise ValueError(f"pairs delta must be in [0, 1) (a privacy parameter delta), got {float(arr[bad, 1][0])!r} at "
                             f"eps = {float(arr[bad, 0][0])!r}; drop the pair or give its delta.")
        order = np.lexsort((arr[:, 1], arr[:, 0]))
        self.eps_ = arr[order, 0]
        self.deltas_ = arr[order, 1]
        floor = float(np.min(self.deltas_))
        self.max_useful_epsilon = float(np.min(self.eps_[self.deltas_ == floor]))
        usable = self.eps_ <= _EXP_LIMIT
        self._vertices = _tradeoff_vertices(self.eps_[usable], self.deltas_[usable]) if np.any(usable) else None

    def params(self) -> dict:
        return {"profile": self.name, "pairs": [[float(e), float(d)] for e, d in zip(self.eps_, self.deltas_)],
                "neighboring": self.neighboring}

    def pure_epsilon(self) -> float | None:
        """The smallest eps_j listed with delta_j = 0 (delta is positive below it: alpha = 0 leaves 1 - f(0) > 0
        near it), else None."""
        return self.max_useful_epsilon if np.min(self.deltas_) == 0.0 else None

    def renyi(self, orders) -> np.ndarray | None:
        return _renyi_of_exact(self.pure_epsilon(), None, orders)

    def replace_one(self) -> PrivacyProfile:
        return self if self.neighboring == "replace_one" else ReplaceOneByGroupPrivacy(self)

    def _delta(self, eps):
        # the step: delta <= delta_j from eps_j on (the only use of pairs beyond e^700)
        idx = np.searchsorted(self.eps_, eps, side="right")
        running = np.concatenate([[1.0], np.minimum.accumulate(self.deltas_)])
        out = running[idx]
        if self._vertices is not None:
            alpha, value = self._vertices
            with np.errstate(over="ignore", invalid="ignore"):
                lines = value[None, :] - np.exp(np.minimum(eps, _EXP_LIMIT))[:, None] * alpha[None, :]
            lines[:, 0] = value[0]  # alpha = 0: no e^eps term (inf * 0 at eps = inf)
            out = np.minimum(out, np.max(lines, axis=1))
        return np.where(eps >= self.max_useful_epsilon, float(np.min(self.deltas_)), out)


class _ByIdentity:
    """An object compared and hashed by identity (a user's function in a profile's identity), held so that its id is
    never reused while a memo key holds it."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other) -> bool:
        return isinstance(other, _ByIdentity) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def _call(fn, eps: np.ndarray) -> np.ndarray:
    """fn at each eps (one float at a time), checked: a number in [0, 1] (above 1 means no guarantee: 1)."""
    out = np.empty(len(eps))
    for i, e in enumerate(eps):
        try:
            v = float(fn(float(e)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"fn must map one eps (a float) to one delta, but fn({float(e)!r}) failed: {exc}.") from None
        if not (v >= 0):
            raise ValueError(f"fn must return a delta in [0, 1] at every eps >= 0, got fn({float(e)!r}) = {v!r}; "
                             "fix the function (a privacy profile is never negative or NaN).")
        out[i] = min(v, 1.0)
    return out


class DeltaCurve(PrivacyProfile):
    """A user's delta(eps) function, tightened by what its values on a grid imply.

    The function claims (eps, fn(eps))-DP at every eps >= 0; the pairs on ``epsilons`` (default 0 and 800
    geometric points from 1e-3 to 100) imply the ``DeltaTable`` profile, so

        delta(eps) = min(fn(eps), DeltaTable([(e, fn(e)) for e in epsilons])(eps)),

    both valid wherever fn is. A true privacy profile (convex and non-increasing in e^eps) is returned as it
    is; a looser curve (an RDP conversion, a non-monotone or hand-written bound) comes back tighter.
    ``fn`` is called with one float at a time.
    """

    def __init__(self, fn, neighboring: str = "replace_one", epsilons=None):
        if not callable(fn):
            raise ValueError(f"fn must be a function of eps returning delta, or give a table to from_delta, got {fn!r}.")
        self.neighboring = _neighboring(neighboring)
        grid = (np.concatenate([[0.0], np.geomspace(1e-3, 100.0, 800)]) if epsilons is None
                else np.unique(_validate.vector("epsilons", epsilons, _validate.epsilon, what="a grid of eps >= 0")))
        grid = grid[np.isfinite(grid)]
        if grid.size == 0:
            raise ValueError(f"epsilons must hold at least one finite eps >= 0, got {epsilons!r}.")
        self.fn = fn
        values = _call(fn, grid)
        keep = values < 1.0
        self._table = DeltaTable(np.column_stack([grid[keep], values[keep]]), self.neighboring) if np.any(keep) else None
        self._fingerprint = hashlib.sha256(np.column_stack([grid, values]).tobytes()).hexdigest()[:16]
        pure = None if self._table is None else self._table.pure_epsilon()
        self._pure = pure
        if pure is not None:
            self.max_useful_epsilon = pure

    def params(self) -> dict:
        name = f"{getattr(self.fn, '__module__', None)}.{getattr(self.fn, '__qualname__', type(self.fn).__name__)}"
        return {"profile": self.name, "function": name, "values_sha256": self._fingerprint, "neighboring": self.neighboring}

    def identity(self) -> tuple:
        """params() name the function and fingerprint its values on the grid; delta(eps) off the grid is the function's
        own, so two curves are the same profile only with the same function object too."""
        return super().identity() + (_ByIdentity(self.fn),)

    def pure_epsilon(self) -> float | None:
        return self._pure

    def renyi(self, orders) -> np.ndarray | None:
        return _renyi_of_exact(self._pure, None, orders)

    def replace_one(self) -> PrivacyProfile:
        return self if self.neighboring == "replace_one" else ReplaceOneByGroupPrivacy(self)

    def _delta(self, eps):
        out = _call(self.fn, eps)
        if self._table is not None:
            out = np.minimum(out, self._table._delta(eps))
        return out if self._pure is None else np.where(eps >= self._pure, 0.0, out)


def from_delta(fn_or_pairs, *, neighboring: str = "replace_one", epsilons=None) -> PrivacyProfile:
    """A profile from a delta(eps) function or a table of (eps, delta) pairs: the tightest curve they imply.

    A table gives ``DeltaTable`` (the exact tightest profile: the trade-off curve max_j f_{eps_j, delta_j},
    never above min over eps_j <= eps of delta_j); a function gives ``DeltaCurve`` (the function, lowered to
    the table its values on ``epsilons`` imply). ``neighboring`` says which relation the numbers are for
    (default "replace_one", the paper's); an "add_remove" profile becomes replace-one by group privacy in a
    reconstruction game (``ReplaceOneByGroupPrivacy``).

    Examples:
        >>> round(from_delta([(0.0, 0.5), (2.0, 0.01)]).delta(1.0), 4)   # min over eps_j <= 1 of delta_j: 0.5
        0.3682
    """
    if callable(fn_or_pairs):
        return DeltaCurve(fn_or_pairs, neighboring, epsilons)
    if epsilons is not None:
        raise ValueError(f"epsilons must be None for a table of pairs (it is the grid a function is read on), got {epsilons!r}.")
    return DeltaTable(fn_or_pairs, neighboring)
