"""Every search or calibration loop of stages/bound ends on extreme inputs (eps = 1e9, 1e300, mu = 1e6, p = 1e-300)
with a result or one sentence (issue 23). A SIGALRM guard turns a loop that never ends into a failure; nothing is
timed."""
from __future__ import annotations

import signal

import numpy as np
import pytest

from stages.bound import (ApproxDP, GaussianDP, PureDP, calibrate_noise, count_bound, eps_protect, success_bound,
                          tail_bound)

CASES = {
    "from_epsilon_delta 1e9": lambda: GaussianDP.from_epsilon_delta(1e9, 1e-5),
    "GaussianDP(1e6).epsilon": lambda: GaussianDP(1e6).epsilon(1e-5),
    "count_bound GaussianDP(1e6)": lambda: count_bound(GaussianDP(1e6), np.full(50, 0.1), [0.5, 0.95]),
    "count_bound whole prior GaussianDP(1e6)": lambda: count_bound(GaussianDP(1e6), None, [0.5],
                                                                   distributions=np.tile([0.7, 0.3], (20, 1))),
    "count_bound whole prior GaussianDP(1e-6)": lambda: count_bound(GaussianDP(1e-6), None, [0.5],
                                                                    distributions=np.tile([0.7, 0.3], (20, 1))),
    "count_bound ApproxDP(1e9)": lambda: count_bound(ApproxDP(1e9, 1e-5), np.full(50, 0.1), 0.9),
    "count_bound PureDP(1e300)": lambda: count_bound(PureDP(1e300), np.full(50, 0.1), 0.9),
    "success_bound PureDP(1e300) whole prior": lambda: success_bound(PureDP(1e300), distribution=[0.7, 0.3]),
    "tail_bound GaussianDP(1e6)": lambda: tail_bound(GaussianDP(1e6), np.full(20, 1e-300), 3),
    "eps_protect p = 1e-300": lambda: eps_protect(1e-300, 0.05, 1e-5),
    "calibrate_noise advantage 0.999": lambda: calibrate_noise(np.full(10, 0.5), 0.999),
    "calibrate_noise count n - 1": lambda: calibrate_noise(np.full(10, 0.5), 9, kind="count"),
}


def _alarm(*_):
    raise TimeoutError("did not end within 120 s")


@pytest.mark.parametrize("name", sorted(CASES))
def test_ends_with_a_result(name):
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(120)
    try:
        CASES[name]()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("build, match", [
    (lambda: GaussianDP.from_epsilon_delta(1e300, 1e-5), r"^eps must be small enough"),
    (lambda: GaussianDP.from_epsilon_delta(float("inf"), 1e-5), r"^eps must be a number > 0, finite"),
])
def test_or_one_sentence(build, match):
    with pytest.raises(ValueError, match=match):
        build()
