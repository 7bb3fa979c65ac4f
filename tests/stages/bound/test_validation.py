"""Bad input raises ValueError naming the argument, the value and the allowed range (issue 2,
Acceptance), for every public function of stages/bound/{tails,profiles,theorems}.py."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from stages.bound import tails
from stages.bound import theorems as T
from stages.bound.profiles import DPSGD, ApproxDP, ComposedGaussian, GaussianDP, PureDP

G = GaussianDP(1.0)
P = [0.1, 0.2, 0.3]
RUNS = np.full((4, 3), 0.1)

# allowed-range phrases: a message must contain one of these for the argument's kind
RANGE = {
    "p": [r"\[0, 1\]", r"\[0, 1\)", r"\(0, 1\)"],  # closed, or open where the function needs it
    "eps": [r">= 0", r"> 0"],
    "delta": [r"\[0, 1\)"],
    "confidence": [r"\(0, 1\)"],
    "v": [r"integer"],
}


def value_text(value) -> list[str]:
    """Acceptable spellings of the bad value in a message."""
    if isinstance(value, float) and math.isnan(value):
        return ["nan"]
    return [repr(value), str(value), repr(float(value)) if isinstance(value, (int, float)) else str(value)]


def check(fn, name: str, kind: str, value):
    with pytest.raises(ValueError) as info:
        fn()
    msg = str(info.value)
    assert re.search(rf"\b{re.escape(name)}\b", msg), f"argument {name!r} not named in: {msg}"
    assert any(t in msg for t in value_text(value)), f"value {value!r} not in: {msg}"
    assert any(re.search(r, msg) for r in RANGE[kind]), f"allowed range for {kind} not in: {msg}"


BAD_P = [1.5, -0.1, float("nan")]
BAD_EPS = [-1.0, -1e-9, float("nan")]
BAD_DELTA = [1.0, 1.5, -0.1, float("nan")]
BAD_CONF = [0.0, 1.0, 1.5, -0.5, float("nan")]
BAD_V = [2.5, float("nan"), float("inf")]

# (function name, argument, kind, builder taking the bad value and returning a thunk)
CASES = []


def case(fn_name, arg, kind, values, build):
    for value in values:
        CASES.append(pytest.param(arg, kind, value, build, id=f"{fn_name}-{arg}={value}"))


# p: priors
case("beta", "p", "p", BAD_P, lambda x: lambda: T.beta(1.0, x))
case("pure_dp_tail", "p", "p", BAD_P, lambda x: lambda: T.pure_dp_tail(1.0, [0.1, x], 1))
case("pure_dp_count_bound", "p", "p", BAD_P, lambda x: lambda: T.pure_dp_count_bound(1.0, [x], 0.9))
case("tail_bound", "p", "p", BAD_P, lambda x: lambda: T.tail_bound(G, [0.2, x], 1))
case("tail_bound_at", "p", "p", BAD_P, lambda x: lambda: T.tail_bound_at(G, [x], 1, 1.0))
case("count_bound", "p", "p", BAD_P, lambda x: lambda: T.count_bound(G, [0.1, x, 0.2], 0.95))
case("success_bound", "p", "p", BAD_P, lambda x: lambda: T.success_bound(G, x))
case("advantage_bound", "p", "p", BAD_P + [1.0], lambda x: lambda: T.advantage_bound(G, x))
case("eps_protect", "p", "p", BAD_P + [0.0, 1.0], lambda x: lambda: T.eps_protect(x))
case("calibrate_noise", "p", "p", BAD_P, lambda x: lambda: T.calibrate_noise([0.1, x], 0.1))
case("expected_tail", "p_runs", "p", BAD_P, lambda x: lambda: T.expected_tail(G, [[0.1, x]], 1))
case("expected_count_bound", "p_runs", "p", BAD_P, lambda x: lambda: T.expected_count_bound(G, [[x, 0.1]], 0.9))
case("poisson_binomial_tail", "beta", "p", BAD_P, lambda x: lambda: tails.poisson_binomial_tail([x], 1))
case("poisson_binomial_pmf", "beta", "p", BAD_P, lambda x: lambda: tails.poisson_binomial_pmf([0.3, x]))
case("poisson_binomial_sf_all", "beta", "p", BAD_P, lambda x: lambda: tails.poisson_binomial_sf_all([x]))
case("tradeoff", "alpha", "p", BAD_P, lambda x: lambda: G.tradeoff(x))
case("ApproxDP.tradeoff", "alpha", "p", BAD_P, lambda x: lambda: ApproxDP(1.0, 1e-5).tradeoff(x))

# eps
case("beta", "eps", "eps", BAD_EPS, lambda x: lambda: T.beta(x, 0.5))
case("pure_dp_tail", "eps", "eps", BAD_EPS, lambda x: lambda: T.pure_dp_tail(x, P, 1))
case("pure_dp_count_bound", "eps", "eps", BAD_EPS, lambda x: lambda: T.pure_dp_count_bound(x, P, 0.9))
case("tail_bound_at", "eps", "eps", BAD_EPS, lambda x: lambda: T.tail_bound_at(G, P, 1, x))
case("expected_tail", "eps", "eps", BAD_EPS, lambda x: lambda: T.expected_tail(G, RUNS, 1, eps=x))
case("PureDP", "eps", "eps", BAD_EPS, lambda x: lambda: PureDP(x))
case("ApproxDP", "eps", "eps", BAD_EPS, lambda x: lambda: ApproxDP(x, 1e-5))
case("GaussianDP.from_epsilon_delta", "eps", "eps", BAD_EPS, lambda x: lambda: GaussianDP.from_epsilon_delta(x, 1e-5))
case("GaussianDP.delta", "eps", "eps", BAD_EPS, lambda x: lambda: G.delta(x))
case("ApproxDP.delta", "eps", "eps", BAD_EPS, lambda x: lambda: ApproxDP(1.0, 1e-5).delta([0.5, x]))

# delta
case("ApproxDP", "delta", "delta", BAD_DELTA, lambda x: lambda: ApproxDP(1.0, x))
case("eps_protect", "delta", "delta", BAD_DELTA, lambda x: lambda: T.eps_protect(1e-3, delta=x))
case("GaussianDP.from_epsilon_delta", "delta", "delta", BAD_DELTA, lambda x: lambda: GaussianDP.from_epsilon_delta(1.0, x))
case("GaussianDP.epsilon", "delta", "delta", BAD_DELTA, lambda x: lambda: G.epsilon(x))
case("ApproxDP.epsilon", "delta", "delta", BAD_DELTA, lambda x: lambda: ApproxDP(1.0, 1e-5).epsilon(x))
case("DPSGD.epsilon", "delta", "delta", BAD_DELTA, lambda x: lambda: DPSGD(1.0, 0.5, 2).epsilon(x))

# confidence
case("count_bound", "confidence", "confidence", BAD_CONF, lambda x: lambda: T.count_bound(G, P, x))
case("count_bound[list]", "confidence", "confidence", BAD_CONF, lambda x: lambda: T.count_bound(G, P, [0.5, x]))
case("pure_dp_count_bound", "confidence", "confidence", BAD_CONF, lambda x: lambda: T.pure_dp_count_bound(1.0, P, x))
case("expected_count_bound", "confidence", "confidence", BAD_CONF, lambda x: lambda: T.expected_count_bound(G, RUNS, x))
case("calibrate_noise", "confidence", "confidence", BAD_CONF,
     lambda x: lambda: T.calibrate_noise(P, 1, kind="count", confidence=x))

# v
case("pure_dp_tail", "v", "v", BAD_V, lambda x: lambda: T.pure_dp_tail(1.0, P, x))
case("tail_bound", "v", "v", BAD_V, lambda x: lambda: T.tail_bound(G, P, x))
case("tail_bound_at", "v", "v", BAD_V, lambda x: lambda: T.tail_bound_at(G, P, x, 1.0))
case("expected_tail", "v", "v", BAD_V, lambda x: lambda: T.expected_tail(G, RUNS, x, eps=1.0))
case("poisson_binomial_tail", "v", "v", BAD_V, lambda x: lambda: tails.poisson_binomial_tail(P, x))


@pytest.mark.parametrize("arg,kind,value,build", CASES)
def test_bad_input_message(arg, kind, value, build):
    check(build(value), arg, kind, value)


# --------------------------------------------------------------------------------------------
# Other arguments: a ValueError naming the argument
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "thunk,name",
    [
        (lambda: GaussianDP(0.0), "mu"),
        (lambda: GaussianDP(-1.0), "mu"),
        (lambda: GaussianDP(float("nan")), "mu"),
        (lambda: ComposedGaussian(0.0), "noise_multiplier"),
        (lambda: ComposedGaussian(1.0, 0), "compositions"),
        (lambda: ComposedGaussian(1.0, 2.5), "compositions"),
        (lambda: DPSGD(-1.0, 0.1, 10), "noise_multiplier"),
        (lambda: DPSGD(1.0, 0.0, 10), "sample_rate"),
        (lambda: DPSGD(1.0, 1.5, 10), "sample_rate"),
        (lambda: DPSGD(1.0, 0.1, 0), "steps"),
        (lambda: DPSGD(1.0, 0.1, 2.5), "steps"),
        (lambda: DPSGD(1.0, 0.1, 10, "swap"), "neighboring"),
        (lambda: T.tail_bound("not a profile", P, 1), "profile"),
        (lambda: T.count_bound(None, P), "profile"),
        (lambda: T.tail_bound(G, [], 1), "p"),
        (lambda: T.success_bound(G, [0.1, 0.2]), "p"),
        (lambda: T.eps_protect(1e-3, threshold=1.5), "threshold"),
        (lambda: T.eps_protect(1e-3, threshold=0.0), "threshold"),
        (lambda: T.calibrate_noise(P, 1.5), "target"),
        (lambda: T.calibrate_noise(P, 2.5, kind="count"), "target"),
        (lambda: T.calibrate_noise(P, 0.1, kind="risk"), "kind"),
        (lambda: T.calibrate_noise(P, 0.1, mechanism="laplace"), "mechanism"),
        (lambda: T.expected_tail(G, np.zeros((2, 2, 2)), 1), "p_runs"),
    ],
)
def test_other_bad_arguments(thunk, name):
    with pytest.raises(ValueError) as info:
        thunk()
    assert re.search(rf"\b{re.escape(name)}\b", str(info.value)), str(info.value)


def test_good_edge_inputs_accepted():
    """Boundary values inside the allowed ranges do not raise."""
    assert T.beta(0.0, 0.0) == 0.0 and T.beta(math.inf, 1.0) == 1.0
    assert T.tail_bound(G, [0.0, 1.0], 1) == 1.0
    T.tail_bound(G, P, 2.0)  # an integer-valued float is an integer
    T.tail_bound(G, P, np.int64(2))
    ApproxDP(0.0, 0.0)
    T.count_bound(G, P, [1e-9, 1 - 1e-9])
    T.tail_bound_at(G, P, 1, math.inf)
