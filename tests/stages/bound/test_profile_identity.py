"""A profile's identity (params(), ==, hash and every memo keyed by a profile) holds every parameter that changes
delta(eps) (issue 39, item 2: DPSGD.params() left out value_discretization_interval, so two DP-SGD profiles that
differ only there compared equal and count_bound's memo gave the second one the first one's count)."""
from __future__ import annotations

import inspect
import math

import dp_accounting
import numpy as np
import pytest

import stages.bound as bound
from stages.bound import (DPSGD, ApproxDP, ComposedGaussian, GaussianDP, PrivacyProfile, PureDP, count_bound,
                          from_delta, from_dp_event, from_opacus, theorems, whole_prior)
from stages.bound.accountants import DeltaCurve, DeltaTable, DpEventProfile, ReplaceOneByGroupPrivacy

GAUSS = dp_accounting.GaussianDpEvent(1.0)
LAPLACE = dp_accounting.LaplaceDpEvent(1.0)
SUBSAMPLED = dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.LaplaceDpEvent(1.0))  # group privacy for replace-one


def curve(mu):
    return lambda e: float(GaussianDP(mu).delta(e))


CURVE_1, CURVE_2 = curve(1.0), curve(2.0)

# class or factory -> (the arguments of a base profile, {argument: another value}); every constructor argument of a
# class is varied (checked below), one at a time
VARIANTS = {
    PureDP: ({"eps": 1.0}, {"eps": 2.0}),
    ApproxDP: ({"eps": 1.0, "delta": 1e-5}, {"eps": 2.0, "delta": 1e-6}),
    GaussianDP: ({"mu": 1.0}, {"mu": 2.0}),
    ComposedGaussian: ({"noise_multiplier": 1.0, "compositions": 1, "sensitivity": 1.0},
                       {"noise_multiplier": 2.0, "compositions": 4, "sensitivity": 2.0}),
    DPSGD: ({"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 100, "neighboring": "replace_one",
             "value_discretization_interval": 1e-4},
            {"noise_multiplier": 2.0, "sample_rate": 0.02, "steps": 200, "neighboring": "add_remove",
             "value_discretization_interval": 1e-3}),
    DpEventProfile: ({"event": GAUSS, "neighboring": "add_remove", "value_discretization_interval": 1e-4},
                     {"event": LAPLACE, "neighboring": "replace_one", "value_discretization_interval": 1e-3}),
    DeltaTable: ({"pairs": [(1.0, 1e-5)], "neighboring": "replace_one"},
                 {"pairs": [(1.0, 1e-6)], "neighboring": "add_remove"}),
    DeltaCurve: ({"fn": CURVE_1, "neighboring": "replace_one", "epsilons": None},
                 {"fn": CURVE_2, "neighboring": "add_remove", "epsilons": [0.0, 1.0, 2.0]}),
    ReplaceOneByGroupPrivacy: ({"add_remove": DeltaTable([(1.0, 1e-5)], "add_remove")},
                               {"add_remove": DeltaTable([(1.0, 1e-6)], "add_remove")}),
    from_dp_event: ({"event": SUBSAMPLED, "neighboring": "replace_one", "value_discretization_interval": 1e-4},
                    {"event": GAUSS, "neighboring": "add_remove", "value_discretization_interval": 1e-3}),
    from_opacus: ({"accountant": [(1.0, 0.01, 100)], "value_discretization_interval": 1e-4},
                  {"accountant": [(1.0, 0.01, 200)], "value_discretization_interval": 1e-3}),
    from_delta: ({"fn_or_pairs": CURVE_1, "neighboring": "replace_one", "epsilons": None},
                 {"fn_or_pairs": CURVE_2, "neighboring": "add_remove", "epsilons": [0.0, 1.0, 2.0]}),
}


def _pairs():
    for maker, (base, other) in VARIANTS.items():
        for arg, value in other.items():
            yield pytest.param(maker, base, arg, value, id=f"{maker.__name__}-{arg}")


@pytest.mark.parametrize("maker,base,arg,value", list(_pairs()))
def test_profiles_that_differ_in_one_argument_differ_in_identity(maker, base, arg, value):
    a, b = maker(**base), maker(**{**base, arg: value})
    assert a.params() != b.params() and a != b and hash(a) != hash(b), (a, b)
    assert a == maker(**base) and hash(a) == hash(maker(**base))  # and the same arguments are the same profile


def test_every_class_and_every_argument_is_varied():
    """A new profile class or constructor argument must be added to VARIANTS (and to its params())."""
    classes = {getattr(bound, n) for n in bound.__all__ if isinstance(getattr(bound, n), type)
               and issubclass(getattr(bound, n), PrivacyProfile) and not inspect.isabstract(getattr(bound, n))}
    assert classes <= set(VARIANTS), classes - set(VARIANTS)
    for maker, (base, other) in VARIANTS.items():
        args = set(inspect.signature(maker).parameters) - {"self"}
        assert set(base) == args and set(other) == args, (maker, args)


def test_a_function_curve_is_itself_too():
    """Two functions that agree on the grid a DeltaCurve reads but not between its points: same params() (the name and
    the grid's values), different profiles (delta(1.5) differs), so no memo mixes them."""
    grid = [0.0, 1.0, 2.0]
    f = lambda e: float(GaussianDP(1.0).delta(e))  # noqa: E731
    g = lambda e: float(GaussianDP(1.0).delta(e)) if e in grid else 1.0  # noqa: E731
    a, b = DeltaCurve(f, epsilons=grid), DeltaCurve(g, epsilons=grid)
    assert a.delta(1.5) != b.delta(1.5)
    assert a != b and hash(a) != hash(b) and a.identity() != b.identity()
    assert a == a and DeltaCurve(f, epsilons=grid) == a


# ---- the memos: the same call gives the same number whatever ran before -----------------------------------------------
SIBLINGS = (DPSGD(1.0, 0.01, 100, value_discretization_interval=1e-3),
            DPSGD(1.0, 0.01, 100, value_discretization_interval=1e-1))
P = [0.1] * 100


def _clear():
    theorems._COUNTS_MEMO.clear()
    whole_prior._CURVES.clear()
    whole_prior._HULLS.clear()


@pytest.fixture
def fresh_memos():
    _clear()
    yield
    _clear()


def test_dpsgd_count_is_the_same_in_either_order(fresh_memos):
    """The issue's case, small: the coarse discretization's count is 27 alone and was 21 after its sibling's (the
    memo was keyed by repr, which left value_discretization_interval out)."""
    fresh = []
    for profile in SIBLINGS:
        _clear()
        fresh.append(count_bound(profile, P, 0.95))
    assert fresh[0] != fresh[1]  # the parameter changes the count, so a shared memo entry would be wrong
    for order in (SIBLINGS, SIBLINGS[::-1]):
        _clear()
        got = {id(p): count_bound(p, P, 0.95) for p in order}
        assert [got[id(p)] for p in SIBLINGS] == fresh


def test_whole_prior_curve_is_the_same_in_either_order(fresh_memos):
    """Theorem 3's memoised one-target curves (whole_prior._CURVES, _HULLS) are keyed by the profile's identity."""
    shape = whole_prior.prior_shape([0.5, 0.3, 0.2])
    fresh = []
    for profile in SIBLINGS:
        _clear()
        fresh.append(whole_prior.excess_curve(profile, shape)(0.2, fine=False))
    assert not math.isclose(fresh[0], fresh[1], rel_tol=1e-9)
    for order in (SIBLINGS, SIBLINGS[::-1]):
        _clear()
        got = {id(p): whole_prior.excess_curve(p, shape)(0.2, fine=False) for p in order}
        assert np.allclose([got[id(p)] for p in SIBLINGS], fresh, rtol=0, atol=0)
