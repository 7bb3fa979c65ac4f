"""Every public function of ``stages.bound`` refuses a shape it does not take with one ArgumentError sentence that
names the argument, the shape received and the shapes taken, never a number (issue 39, item 1: a 2-d ``p`` was
flattened into n * d targets and gave a count for 1,000 targets instead of 100).

The table holds, for every callable of ``stages.bound.__all__``, each array argument with the kind of shape it takes
and a call that puts a wrong shape there; a public name missing from the table fails ``test_every_public_name_is_in_
the_table``, so a new function cannot be left out."""
from __future__ import annotations

import re

import numpy as np
import pytest

import stages.bound as bound
from stages.bound import (DPSGD, ApproxDP, ArgumentError, ComposedGaussian, GaussianDP, PoissonBinomial, Priors, PureDP,
                          theorems)
from stages.bound.accountants import DeltaCurve, DeltaTable, DpEventProfile

G = GaussianDP(1.0)
P = [0.1, 0.2, 0.3]
D = [[0.5, 0.5], [0.25, 0.75], [0.3, 0.7]]  # three targets' whole priors
RUNS = [[0.1, 0.2], [0.2, 0.3]]
CURVE = lambda e: float(G.delta(e))  # noqa: E731 (a delta(eps) function for from_delta)

# the wrong shapes, by what the argument takes
RAGGED = [[0.1], [0.1, 0.2]]
WRONG = {
    # one entry per target (1-D): a number, a 2-d array, nothing, rows of different lengths
    "vector": {"scalar": 0.1, "2-d": [[0.1, 0.2], [0.1, 0.2]], "empty": [], "ragged": RAGGED},
    # a number or one per target: the same but the number
    "scalar or vector": {"2-d": [[0.1, 0.2], [0.1, 0.2]], "empty": [], "ragged": RAGGED},
    # a single number: an array of any shape
    "scalar": {"1-d": [0.1, 0.2], "2-d": [[0.1], [0.2]], "empty": [], "ragged": RAGGED},
    "integer": {"1-d": [1, 2], "2-d": [[1], [2]], "empty": [], "ragged": [[1], [1, 2]]},
    # vectorised over any rectangular shape (a confidence or a list of them too, but not none)
    "elementwise": {"ragged": RAGGED},
    "confidences": {"ragged": [[0.5], [0.5, 0.9]], "empty": []},
    # each target's whole prior: a 2-d array or a sequence of 1-d arrays
    "distributions": {"scalar": 0.5, "one prior": [0.5, 0.5], "3-d": [[[0.5, 0.5]]], "empty": [],
                      "empty prior": [[0.5, 0.5], []], "2-d row": [[0.5, 0.5], [[1.0]]]},
    "distributions or one prior": {"scalar": 0.5, "3-d": [[[0.5, 0.5]]], "empty": [], "empty prior": [[0.5, 0.5], []],
                                   "2-d row": [[0.5, 0.5], [[1.0]]]},
    # one target's whole prior: a 1-d array
    "distribution": {"scalar": 0.5, "2-d": [[0.5, 0.5]], "empty": [], "ragged": [[0.5], [0.25, 0.25]]},
    # a trial per row: (R, n) or (n,)
    "p_runs": {"scalar": 0.1, "3-d": [[[0.1, 0.2]]], "empty": [], "trials of different n": [[0.1, 0.2], [0.1]]},
    # (eps, delta) rows
    "pairs": {"scalar": 1.0, "one pair flat": [1.0, 1e-5], "three columns": [[1.0, 1e-5, 0.0]], "empty": [],
              "ragged": [[1.0, 1e-5], [2.0]]},
}

# name -> [(argument as the error names it, kind, builder of the call with the wrong value x)]
TABLE: dict[str, list] = {
    "PureDP": [("eps", "scalar", lambda x: PureDP(x))],
    "ApproxDP": [("eps", "scalar", lambda x: ApproxDP(x, 1e-5)), ("delta", "scalar", lambda x: ApproxDP(1.0, x))],
    "GaussianDP": [("mu", "scalar", lambda x: GaussianDP(x))],
    "ComposedGaussian": [("noise_multiplier", "scalar", lambda x: ComposedGaussian(x)),
                         ("compositions", "integer", lambda x: ComposedGaussian(1.0, x)),
                         ("sensitivity", "scalar", lambda x: ComposedGaussian(1.0, 1, x))],
    "DPSGD": [("noise_multiplier", "scalar", lambda x: DPSGD(x, 0.1, 10)),
              ("sample_rate", "scalar", lambda x: DPSGD(1.0, x, 10)),
              ("steps", "integer", lambda x: DPSGD(1.0, 0.1, x)),
              ("value_discretization_interval", "scalar", lambda x: DPSGD(1.0, 0.1, 10, value_discretization_interval=x))],
    "from_dp_event": [("value_discretization_interval", "scalar",
                       lambda x: bound.from_dp_event(_gaussian_event(), neighboring="add_remove",
                                                     value_discretization_interval=x))],
    "DpEventProfile": [("value_discretization_interval", "scalar",
                        lambda x: DpEventProfile(_gaussian_event(), "add_remove", x))],
    "from_delta": [("pairs", "pairs", lambda x: bound.from_delta(x)),
                   ("epsilons", "vector", lambda x: bound.from_delta(CURVE, epsilons=x))],
    "DeltaTable": [("pairs", "pairs", lambda x: DeltaTable(x))],
    "DeltaCurve": [("epsilons", "vector", lambda x: DeltaCurve(CURVE, epsilons=x))],
    "from_opacus": [("accountant.history[0] noise_multiplier", "scalar", lambda x: bound.from_opacus([(x, 0.1, 10)])),
                    ("accountant.history[0] steps", "integer", lambda x: bound.from_opacus([(1.0, 0.1, x)])),
                    ("value_discretization_interval", "scalar",
                     lambda x: bound.from_opacus([(1.0, 0.1, 10)], value_discretization_interval=x))],
    "PoissonBinomial": [("pmf", "vector", lambda x: PoissonBinomial(0, x, 3)),
                        ("offset", "integer", lambda x: PoissonBinomial(x, [0.5, 0.5], 3)),
                        ("n", "integer", lambda x: PoissonBinomial(0, [0.5, 0.5], x)),
                        ("trimmed", "scalar", lambda x: PoissonBinomial(0, [0.5, 0.5], 3, x))],
    "poisson_binomial_pmf": [("beta", "vector", lambda x: bound.poisson_binomial_pmf(x))],
    "poisson_binomial_sf_all": [("beta", "vector", lambda x: bound.poisson_binomial_sf_all(x))],
    "poisson_binomial_tail": [("beta", "vector", lambda x: bound.poisson_binomial_tail(x, 1)),
                              ("v", "elementwise", lambda x: bound.poisson_binomial_tail(P, x))],
    "Priors": [("p", "vector", lambda x: Priors(x, [1, 1])),
               ("counts", "vector", lambda x: Priors([0.1, 0.2], x)),
               ("collision", "elementwise", lambda x: Priors([0.1, 0.2], [1, 1], x))],
    "beta": [("eps", "elementwise", lambda x: bound.beta(x, 0.5)), ("p", "elementwise", lambda x: bound.beta(1.0, x))],
    "pure_dp_tail": [("eps", "scalar", lambda x: bound.pure_dp_tail(x, P, 1)),
                     ("p", "vector", lambda x: bound.pure_dp_tail(1.0, x, 1)),
                     ("v", "integer", lambda x: bound.pure_dp_tail(1.0, P, x)),
                     ("distributions", "distributions", lambda x: bound.pure_dp_tail(1.0, None, 1, distributions=x))],
    "pure_dp_count_bound": [("eps", "scalar", lambda x: bound.pure_dp_count_bound(x, P)),
                            ("p", "vector", lambda x: bound.pure_dp_count_bound(1.0, x)),
                            ("confidence", "confidences", lambda x: bound.pure_dp_count_bound(1.0, P, x)),
                            ("distributions", "distributions",
                             lambda x: bound.pure_dp_count_bound(1.0, None, distributions=x))],
    "tail_bound": [("p", "vector", lambda x: bound.tail_bound(G, x, 1)),
                   ("v", "integer", lambda x: bound.tail_bound(G, P, x)),
                   ("distributions", "distributions", lambda x: bound.tail_bound(G, None, 1, distributions=x)),
                   ("collision", "elementwise", lambda x: bound.tail_bound(G, P, 1, set_valued=True, collision=x)),
                   ("set_size", "integer", lambda x: bound.tail_bound(G, P, 1, set_valued=True, set_size=x))],
    "tail_bound_at": [("p", "vector", lambda x: bound.tail_bound_at(G, x, 1, 1.0)),
                      ("v", "integer", lambda x: bound.tail_bound_at(G, P, x, 1.0)),
                      ("eps", "scalar", lambda x: bound.tail_bound_at(G, P, 1, x))],
    "count_bound": [("p", "vector", lambda x: bound.count_bound(G, x)),
                    ("confidence", "confidences", lambda x: bound.count_bound(G, P, x)),
                    ("distributions", "distributions", lambda x: bound.count_bound(G, None, distributions=x)),
                    ("collision", "elementwise", lambda x: bound.count_bound(G, P, set_valued=True, collision=x))],
    "expected_tail": [("p_runs", "p_runs", lambda x: bound.expected_tail(G, x, 1)),
                      ("v", "integer", lambda x: bound.expected_tail(G, RUNS, x)),
                      ("eps", "scalar", lambda x: bound.expected_tail(G, RUNS, 1, eps=x))],
    "expected_count_bound": [("p_runs", "p_runs", lambda x: bound.expected_count_bound(G, x)),
                             ("confidence", "confidences", lambda x: bound.expected_count_bound(G, RUNS, x))],
    "success_bound": [("p", "scalar", lambda x: bound.success_bound(G, x)),
                      ("distribution", "distribution", lambda x: bound.success_bound(G, distribution=x)),
                      ("collision", "scalar", lambda x: bound.success_bound(G, 0.5, set_valued=True, collision=x))],
    "advantage_bound": [("p", "scalar", lambda x: bound.advantage_bound(G, x)),
                        ("distribution", "distribution", lambda x: bound.advantage_bound(G, distribution=x)),
                        ("collision", "scalar", lambda x: bound.advantage_bound(G, 0.5, set_valued=True, collision=x))],
    "eps_protect": [("p", "scalar", lambda x: bound.eps_protect(x)),
                    ("threshold", "scalar", lambda x: bound.eps_protect(0.1, x)),
                    ("delta", "scalar", lambda x: bound.eps_protect(0.1, 0.05, x)),
                    ("collision", "scalar", lambda x: bound.eps_protect(0.1, set_valued=True, collision=x))],
    "calibrate_noise": [("p", "scalar or vector", lambda x: bound.calibrate_noise(x, 0.1)),
                        ("target", "scalar", lambda x: bound.calibrate_noise(P, x)),
                        ("confidence", "scalar", lambda x: bound.calibrate_noise(P, 1, kind="count", confidence=x))],
    "best_bound": [("p", "scalar or vector", lambda x: bound.best_bound(G, x, confidence=0.9)),
                   ("confidence", "scalar", lambda x: bound.best_bound(G, P, confidence=x)),
                   ("n", "integer", lambda x: bound.best_bound(G, 0.1, n=x, confidence=0.9)),
                   ("distributions", "distributions or one prior",
                    lambda x: bound.best_bound(G, None, confidence=0.9, distributions=x)),
                   ("collision", "scalar", lambda x: bound.best_bound(G, 0.5, set_valued=True, collision=x))],
    "floor_counts": [("distributions", "distributions", lambda x: bound.floor_counts(G, x, [0.9])),
                     ("confidences", "vector", lambda x: bound.floor_counts(G, D, x))],
    "floor_success": [("distribution", "distribution", lambda x: bound.floor_success(G, x))],
    "kgk_bound": [("p", "elementwise", lambda x: bound.kgk_bound(G, x))],
    "mmc_bound": [("p", "scalar or vector", lambda x: bound.mmc_bound(G, x, confidence=0.9)),
                  ("confidence", "confidences", lambda x: bound.mmc_bound(G, [0.5] * 3, confidence=x))],
    "mmc_tail_bound": [("p", "scalar or vector", lambda x: bound.mmc_tail_bound(G, x, 1)),
                       ("v", "integer", lambda x: bound.mmc_tail_bound(G, [0.5] * 3, x))],
    "steinke_bound": [("eps", "scalar", lambda x: bound.steinke_bound(x, 1e-5, [0.5] * 3, confidence=0.9)),
                      ("delta", "scalar", lambda x: bound.steinke_bound(1.0, x, [0.5] * 3, confidence=0.9)),
                      ("p", "scalar or vector", lambda x: bound.steinke_bound(1.0, 1e-5, x, confidence=0.9)),
                      ("confidence", "confidences", lambda x: bound.steinke_bound(1.0, 1e-5, [0.5] * 3, confidence=x))],
    "steinke_tail_bound": [("eps", "scalar", lambda x: bound.steinke_tail_bound(x, 1e-5, [0.5] * 3, 1)),
                           ("p", "scalar or vector", lambda x: bound.steinke_tail_bound(1.0, 1e-5, x, 1)),
                           ("v", "integer", lambda x: bound.steinke_tail_bound(1.0, 1e-5, [0.5] * 3, x))],
    "rero_bound": [("p", "elementwise", lambda x: bound.rero_bound(x, eps=1.0)),
                   ("eps", "scalar", lambda x: bound.rero_bound(0.1, eps=x)),
                   ("rho", "scalar", lambda x: bound.rero_bound(0.1, rho=x)),
                   ("rdp orders", "scalar or vector", lambda x: bound.rero_bound(0.1, rdp=(x, [0.5, 0.5]))),
                   ("rdp epsilons", "scalar or vector", lambda x: bound.rero_bound(0.1, rdp=([2.0, 3.0], x)))],
    "narcissus_bound": [("eps", "scalar", lambda x: bound.narcissus_bound(x, 1e-5, 0.1)),
                        ("delta", "scalar", lambda x: bound.narcissus_bound(1.0, x, 0.1)),
                        ("p", "elementwise", lambda x: bound.narcissus_bound(1.0, 1e-5, x))],
    "cherubin_bound": [("noise_multiplier", "scalar", lambda x: bound.cherubin_bound(x, 1.0, 10, 0.5)),
                       ("sample_rate", "scalar", lambda x: bound.cherubin_bound(1.0, x, 10, 0.5)),
                       ("steps", "integer", lambda x: bound.cherubin_bound(1.0, 1.0, x, 0.5)),
                       ("p", "elementwise", lambda x: bound.cherubin_bound(1.0, 1.0, 10, x))],
    "stock_bound": [("p", "elementwise", lambda x: bound.stock_bound(x, rho=0.5)),
                    ("rho", "scalar", lambda x: bound.stock_bound(0.1, rho=x)),
                    ("rdp orders", "scalar or vector", lambda x: bound.stock_bound(0.1, rdp=(x, [0.5, 0.5])))],
    "uniform_candidates": [("p", "scalar or vector", lambda x: bound.uniform_candidates(x))],
}
# the whole prior per trial of expected_*: one 2-d prior for every trial, or a 3-d array (R, n, d)
TABLE["expected_count_bound"].append(("distributions", "distributions",
                                      lambda x: bound.expected_count_bound(G, [[0.5, 0.75, 0.7]], distributions=x)))
TABLE["expected_tail"].append(("distributions", "distributions",
                               lambda x: bound.expected_tail(G, [[0.5, 0.75, 0.7]], 1, distributions=x)))

#: Public callables that take no array (the reason is the entry), checked to stay so by their signatures.
NO_ARRAYS = {
    "ArgumentError": "the error itself",
    "PrivacyProfile": "abstract; its array methods are in METHODS for every concrete profile",
    "PrivacyLossProfile": "abstract (DPSGD and DpEventProfile are its profiles)",
    "for_game": "a profile and a game name",
    "replace_one_from_add_remove": "a profile",
    "ReplaceOneByGroupPrivacy": "a profile (its array methods are in METHODS)",
    "floor_mechanism": "a profile",
    "BestBound": "best_bound's result (its fields are set by best_bound)",
}


def _gaussian_event():
    import dp_accounting

    return dp_accounting.GaussianDpEvent(1.0)


def _profiles():
    """One of each concrete profile class, cheap to build (full-batch DP-SGD: its closed form)."""
    return [PureDP(1.0), ApproxDP(1.0, 1e-5), G, ComposedGaussian(2.0, 4), DPSGD(2.0, 1.0, 4), DPSGD(1.0, 0.01, 10),
            DpEventProfile(_gaussian_event(), "add_remove"),
            DeltaTable([(1.0, 1e-5), (2.0, 1e-7)]), DeltaCurve(CURVE, epsilons=[0.0, 1.0, 2.0]),
            bound.ReplaceOneByGroupPrivacy(DeltaTable([(1.0, 1e-5)], "add_remove"))]


#: Profile methods that take arrays: (method, argument, kind).
METHODS = [("delta", "eps", "elementwise"), ("tradeoff", "alpha", "elementwise"),
           ("one_minus_tradeoff", "alpha", "elementwise"), ("epsilon", "delta", "scalar"),
           ("renyi", "orders", "elementwise")]


def _cases():
    for name, args in TABLE.items():
        for arg, kind, build in args:
            for label, value in WRONG[kind].items():
                yield pytest.param(arg, build, value, id=f"{name}-{arg}-{label}")
    for profile in _profiles():
        for method, arg, kind in METHODS:
            for label, value in WRONG[kind].items():
                build = lambda x, profile=profile, method=method: getattr(profile, method)(x)  # noqa: E731
                yield pytest.param(arg, build, value, id=f"{profile.name}.{method}-{label}")
    extra = [("Priors.of", "p", "vector", lambda x: Priors.of(x)),
             ("Priors.of", "collision", "elementwise", lambda x: Priors.of(P, x)),
             ("PoissonBinomial.sf", "v", "elementwise", lambda x: PoissonBinomial(0, [0.5, 0.5], 1).sf(x)),
             ("count_bounds", "p", "vector", lambda x: theorems.count_bounds(G, x)),
             ("count_bounds", "distributions", "distributions", lambda x: theorems.count_bounds(G, None, distributions=x))]
    for name, arg, kind, build in extra:
        for label, value in WRONG[kind].items():
            yield pytest.param(arg, build, value, id=f"{name}-{arg}-{label}")


@pytest.mark.parametrize("arg,build,value", list(_cases()))
def test_a_wrong_shape_is_refused_in_one_sentence(arg, build, value):
    with pytest.raises(ArgumentError) as info:
        out = build(value)
        pytest.fail(f"returned {out!r} for {arg} = {value!r}")
    msg = str(info.value)
    assert info.value.argument.startswith(arg) or info.value.argument == arg.split()[0], (info.value.argument, msg)
    assert msg.startswith(info.value.argument) and msg.endswith(".") and not re.search(r"\. [A-Z]", msg), msg
    assert "got" in msg, msg


def test_every_public_name_is_in_the_table():
    """A callable of stages.bound.__all__ is either fed wrong shapes above or listed as taking no array."""
    callables = {name for name in bound.__all__ if callable(getattr(bound, name))}
    assert callables - set(TABLE) - set(NO_ARRAYS) == set(), "add these to TABLE (or NO_ARRAYS with the reason)"
    assert set(TABLE) | set(NO_ARRAYS) <= set(bound.__all__)
    concrete = {type(p) for p in _profiles()}
    profile_classes = {getattr(bound, n) for n in callables if isinstance(getattr(bound, n), type)
                       and issubclass(getattr(bound, n), bound.PrivacyProfile) and not getattr(bound, n).__abstractmethods__}
    assert profile_classes <= concrete, profile_classes - concrete


def test_a_2d_p_points_to_distributions_and_the_1d_count_is_unchanged():
    """The issue's call: 100 targets' priors over 10 values passed as p (gave [334, 403, 623], 1,000 targets)."""
    with pytest.raises(ArgumentError, match=r"^p must be one prior success per target \(1-D\); got shape \(100, 10\): "
                                            r"for each target's whole prior pass distributions=\.$"):
        bound.count_bound(G, [[0.1] * 10] * 100, [0.05, 0.5, 0.95])
    assert bound.count_bound(G, [0.1] * 100, [0.05, 0.5, 0.95]).tolist() == [33, 40, 62]


def test_right_shapes_still_work():
    """The shapes each function takes: a number where it is vectorised, a list of rows of different lengths for
    distributions, a 3-d array of a prior per trial."""
    assert bound.beta(np.ones((2, 2)), 0.5).shape == (2, 2)
    assert bound.count_bound(G, P, [[0.5, 0.9]]).shape == (1, 2)
    assert bound.tail_bound(G, None, 1, distributions=[[0.5, 0.5], [0.2, 0.3, 0.5]]) <= 1.0
    per_trial = np.array([D, D[::-1]])
    assert bound.expected_count_bound(G, [[0.5, 0.75, 0.7], [0.7, 0.75, 0.5]], 0.9, distributions=per_trial) >= 0
    assert bound.floor_success(G, [0.5, 0.5])[0] > 0.5
    assert G.delta([[0.5, 1.0]]).shape == (1, 2)
