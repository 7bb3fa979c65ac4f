"""Every calibration or search loop of the mechanisms (and the priors' fits) ends on extreme inputs, with a
result or one sentence naming the argument (issue 23 item 2: `mechanism=dpsgd mechanism.epsilon=1e9` looped
forever in calibrate_noise_multiplier's `while epsilon_of(sigma) > eps: sigma *= 1 + 1e-9`).

Nothing is timed: SIGALRM stops a case that has not returned after HANG_S seconds (a loop that never ends),
far above what any case takes. The loops of stages/bound (PrivacyProfile.epsilon, GaussianDP.from_epsilon_delta,
eps_protect, calibrate_noise, ...) are stages/bound's own tests' to cover.
"""
from __future__ import annotations

import math
import signal
from contextlib import contextmanager

import pytest

from stages.mechanism.dpsgd import DPSGDFineTuning, calibrate_noise_multiplier
from stages.mechanism.gaussian import GaussianMechanism
from stages.mechanism.noisy_marginals import NoisyMarginals
from stages.mechanism.randomized_response import RandomizedResponse
from stages.prior.zipf import fit_zipf_exponent, zipf_exponent_interval, zipf_median_rank

#: A case still running after this many seconds is a loop that never ends (each takes about a second).
HANG_S = 120


@contextmanager
def returns_at_all():
    def hang(signum, frame):  # noqa: ARG001
        raise AssertionError(f"still running after {HANG_S} s: a calibration or search loop that never ends")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


class _Model:  # DP-SGD's calibration and profile need no model
    def params(self):
        return {"model": "stub"}


def _result_or_one_sentence(call, names: tuple[str, ...]):
    """call()'s result, or None after a ValueError whose message is one line that starts with one of names."""
    with returns_at_all():
        try:
            return call()
        except ValueError as exc:
            message = str(exc)
            assert "\n" not in message.strip() and message.strip().endswith("."), message
            assert message.split(" ", 1)[0].rstrip(",:") in names, message
            return None


EXTREME_EPSILONS = [1e9, 1e300, math.inf, 1e-300]


@pytest.mark.parametrize("sample_rate", [1.0, 0.1])
@pytest.mark.parametrize("epsilon", EXTREME_EPSILONS)
def test_dpsgd_noise_calibration_ends(epsilon, sample_rate):
    sigma = _result_or_one_sentence(lambda: calibrate_noise_multiplier(epsilon, 1e-5, sample_rate, 10), ("epsilon",))
    if sigma is not None:  # a result is a noise multiplier the accountant certifies for epsilon
        from stages.bound.profiles import DPSGD

        assert math.isfinite(sigma) and sigma > 0
        assert DPSGD(sigma, sample_rate, 10, "replace_one").epsilon(1e-5) <= epsilon


def test_dpsgd_calibration_of_the_issue_is_one_sentence_with_the_fix():
    with returns_at_all(), pytest.raises(ValueError) as refused:
        calibrate_noise_multiplier(1e9, 1e-5, 1.0, 10)
    assert str(refused.value).startswith("epsilon = 1e+09 cannot be calibrated for DP-SGD")
    assert "give a smaller epsilon" in str(refused.value) and "noise_multiplier" in str(refused.value)


@pytest.mark.parametrize("delta,steps", [(1e-300, 10**12), (1e-5, 10**9)])
def test_dpsgd_calibration_at_extreme_delta_and_steps_ends(delta, steps):
    _result_or_one_sentence(lambda: calibrate_noise_multiplier(1e-300, delta, 1.0, steps), ("epsilon",))
    _result_or_one_sentence(lambda: calibrate_noise_multiplier(1e9, delta, 1.0, steps), ("epsilon",))


@pytest.mark.parametrize("kwargs", [{"epsilon": e} for e in EXTREME_EPSILONS]
                         + [{"epsilon": None, "noise_multiplier": s} for s in (1e6, 1e-6)])
def test_dpsgd_mechanism_builds_and_judges_its_privacy_or_says_why_not(kwargs):
    def build():
        mechanism = DPSGDFineTuning(_Model(), n_targets=4, domain_size=2, epochs=1, **kwargs)
        return mechanism.profile, mechanism.privacy()

    _result_or_one_sentence(build, ("epsilon", "noise_multiplier"))


@pytest.mark.parametrize("kwargs", [{"epsilon": e} for e in EXTREME_EPSILONS]
                         + [{"mu": mu, "epsilon": None} for mu in (1e6, 1e-300, math.inf)])
def test_gaussian_mechanism_calibration_ends(kwargs):
    def build():
        mechanism = GaussianMechanism(**kwargs)
        return mechanism.profile, mechanism.privacy()

    _result_or_one_sentence(build, ("epsilon", "mu"))


@pytest.mark.parametrize("epsilon", EXTREME_EPSILONS)
def test_noisy_marginals_calibration_ends(epsilon):
    def build():
        mechanism = NoisyMarginals(epsilon=epsilon)
        return mechanism.profile, mechanism.privacy()

    _result_or_one_sentence(build, ("epsilon",))


@pytest.mark.parametrize("epsilon", EXTREME_EPSILONS)
def test_randomized_response_ends(epsilon):
    def build():
        mechanism = RandomizedResponse(epsilon=epsilon, domain_size=10)
        return mechanism.profile, mechanism.privacy()

    _result_or_one_sentence(build, ("epsilon",))


@pytest.mark.parametrize("counts", [[1e300, 1.0], [1.0, 1.0, 1.0], [1e-300, 1e-300, 1.0], [1e6] + [1.0] * 1000])
def test_zipf_fits_end(counts):
    _result_or_one_sentence(lambda: fit_zipf_exponent(counts), ("counts",))
    _result_or_one_sentence(lambda: zipf_exponent_interval(counts), ("counts", "level"))


@pytest.mark.parametrize("domain_size,exponent", [(10**15, 0.0), (10**15, 1e6), (10**15, 1.0), (1, 1e300)])
def test_zipf_median_rank_search_ends(domain_size, exponent):
    rank = _result_or_one_sentence(lambda: zipf_median_rank(domain_size, exponent), ("domain_size", "exponent"))
    assert rank is None or 1 <= rank <= domain_size
