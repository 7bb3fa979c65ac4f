"""Any accountant as a profile (stages/bound/accountants.py) against dp_accounting's own accountant, closed forms,
a brute-force vertex enumeration, numerical integration and opacus.

Sources and tolerances are stated at each test. The PLD profiles are built once per module (~0.5 s each).
"""
from __future__ import annotations

import itertools
import json
import math

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting import NeighboringRelation as NR
from dp_accounting.dp_event import DiscreteLaplaceDpEvent
from dp_accounting.pld import PLDAccountant
from scipy import integrate

from stages.bound import (
    DPSGD,
    ApproxDP,
    DeltaCurve,
    DeltaTable,
    DpEventProfile,
    GaussianDP,
    PrivacyProfile,
    ReplaceOneByGroupPrivacy,
    count_bound,
    for_game,
    from_delta,
    from_dp_event,
    from_opacus,
)

EPS = np.array([0.0, 0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0])
#: Laplace (noise multipliers 2, 2, 2 and 4): 1.75-DP under add/remove.
LAPLACE = dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(2.0), 3), dpa.LaplaceDpEvent(4.0)])
#: DP-SGD-like: Poisson-subsampled Gaussian, composed 300 times.
SUBSAMPLED = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 300)
PRIORS = np.full(20, 0.1)


#: A coarser discretisation where a test builds several distributions (the accountant is asked at the same one).
COARSE = 1e-3


def accountant_deltas(event, relation, value_discretization_interval=1e-4) -> np.ndarray:
    """dp_accounting's own answer: PLDAccountant(relation).compose(event).get_delta, one eps at a time."""
    accountant = PLDAccountant(relation, value_discretization_interval)
    accountant.compose(event)
    return np.clip([accountant.get_delta(float(e)) for e in EPS], 0.0, 1.0)


@pytest.fixture(scope="module")
def profiles():
    return {(name, nb): from_dp_event(event, neighboring=nb)
            for name, event in (("laplace", LAPLACE), ("subsampled", SUBSAMPLED))
            for nb in ("add_remove", "replace_one")}


# --------------------------------------------------------------------------------------------
# from_dp_event: the accountant's own get_delta, to 1e-9
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,event", [("laplace", LAPLACE), ("subsampled", SUBSAMPLED)])
def test_add_remove_profile_is_the_accountants_delta(profiles, name, event):
    prof = profiles[(name, "add_remove")]
    assert isinstance(prof, DpEventProfile) and prof.neighboring == "add_remove"
    np.testing.assert_allclose(prof.delta(EPS), accountant_deltas(event, NR.ADD_OR_REMOVE_ONE), rtol=0, atol=1e-9)


def test_replace_one_subsampled_gaussian_is_dp_accountings_replace_one(profiles):
    prof = profiles[("subsampled", "replace_one")]
    assert isinstance(prof, DpEventProfile) and prof.neighboring == "replace_one"
    np.testing.assert_allclose(prof.delta(EPS), accountant_deltas(SUBSAMPLED, NR.REPLACE_ONE), rtol=0, atol=1e-9)
    # and the add/remove profile converts to the same, as DPSGD.replace_one re-accounts
    assert profiles[("subsampled", "add_remove")].replace_one() == prof
    assert for_game(profiles[("subsampled", "add_remove")], "reconstruction") == prof


def test_replace_one_laplace_doubles_the_sensitivity(profiles):
    """dp_accounting refuses Laplace under REPLACE_ONE; the profile accounts it at twice the sensitivity
    (noise multiplier halved) under add/remove: equal to that accountant to 1e-9, 2 x 1.75 = 3.5-DP."""
    prof = profiles[("laplace", "replace_one")]
    halved = dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(1.0), 3), dpa.LaplaceDpEvent(2.0)])
    np.testing.assert_allclose(prof.delta(EPS), accountant_deltas(halved, NR.ADD_OR_REMOVE_ONE), rtol=0, atol=1e-9)
    assert prof.pure_epsilon() == pytest.approx(3.5, rel=1e-15)
    assert profiles[("laplace", "add_remove")].replace_one() == prof


@pytest.mark.parametrize("b", [0.5, 2.0])
def test_replace_one_laplace_matches_its_closed_form(b):
    """One Laplace of scale b, L1 bound 1: replacing moves the sum by 2, Lap(0, b) vs Lap(2, b) has
    delta(eps) = 1 - exp((eps - 2/b) / 2) below 2/b and 0 from there (closed form; 1e-9)."""
    prof = from_dp_event(dpa.LaplaceDpEvent(b), neighboring="replace_one")
    eps = np.linspace(0.0, 3.0 / b, 31)
    want = np.where(eps < 2.0 / b, -np.expm1((eps - 2.0 / b) / 2.0), 0.0)
    np.testing.assert_allclose(prof.delta(eps), want, rtol=0, atol=1e-9)
    dlap = from_dp_event(DiscreteLaplaceDpEvent(0.7, 1), neighboring="replace_one")
    assert dlap.pure_epsilon() == pytest.approx(1.4)
    assert dlap.delta(1.4) == 0.0 and dlap.delta(1.3) > 0


def test_replace_one_of_gaussian_and_laplace_composes_both_accountings():
    """A Gaussian (REPLACE_ONE in dp_accounting) composed with a Laplace (doubled sensitivity): the composition of
    the two parts' distributions, i.e. each part's replace-one profile composed (1e-12); never below either part."""
    gauss, lap = dpa.GaussianDpEvent(3.0), dpa.LaplaceDpEvent(4.0)
    mixed = from_dp_event(dpa.ComposedDpEvent([gauss, lap]), neighboring="replace_one",
                          value_discretization_interval=COARSE)
    parts = [from_dp_event(e, neighboring="replace_one", value_discretization_interval=COARSE) for e in (gauss, lap)]
    want = np.clip(parts[0]._pld.compose(parts[1]._pld).get_delta_for_epsilon(EPS), 0.0, 1.0)
    np.testing.assert_allclose(mixed.delta(EPS), want, rtol=1e-12, atol=1e-15)
    assert np.all(mixed.delta(EPS) >= np.maximum(parts[0].delta(EPS), parts[1].delta(EPS)) - 1e-12)
    assert mixed.pure_epsilon() is None and mixed.gdp_mu() is None
    assert parts[0].gdp_mu() == pytest.approx(2 / 3) and parts[1].pure_epsilon() == pytest.approx(0.5)


def test_pure_and_gdp_only_where_exact(profiles):
    lap = profiles[("laplace", "add_remove")]
    assert lap.pure_epsilon() == pytest.approx(3 / 2 + 1 / 4) and lap.gdp_mu() is None
    assert lap.max_useful_epsilon == lap.pure_epsilon() and lap.delta(lap.pure_epsilon()) == 0.0
    assert lap.delta(lap.pure_epsilon() - 1e-3) > 0
    orders = np.array([1.5, 2.0, 8.0])
    np.testing.assert_array_equal(lap.renyi(orders), ApproxDP(1.75).renyi(orders))
    sub = profiles[("subsampled", "add_remove")]
    assert sub.pure_epsilon() is None and sub.gdp_mu() is None and sub.max_useful_epsilon == math.inf
    assert sub.renyi(orders) is None
    # Gaussians without subsampling: exactly mu-GDP, mu^2 = sum k / sigma^2 (x 2 for replace-one)
    gauss = dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(4.0), 4), dpa.GaussianDpEvent(2.0)])
    for nb, c in (("add_remove", 1.0), ("replace_one", 2.0)):
        prof = from_dp_event(gauss, neighboring=nb, value_discretization_interval=COARSE)
        mu = c * math.sqrt(4 / 16.0 + 1 / 4.0)
        assert prof.gdp_mu() == pytest.approx(mu, rel=1e-15) and prof.pure_epsilon() is None
        np.testing.assert_allclose(prof.renyi(orders), orders * mu**2 / 2, rtol=1e-14)
        exact = GaussianDP(mu).delta(EPS)  # the pessimistic PLD is above the closed form, and close to it
        assert np.all(prof.delta(EPS) >= exact - 1e-12)
        np.testing.assert_allclose(prof.delta(EPS), exact, rtol=1e-3, atol=1e-9)


def test_group_privacy_when_dp_accounting_has_no_replace_one():
    """Poisson-subsampled Laplace: no REPLACE_ONE accounting in dp_accounting, so from_dp_event(..., "replace_one")
    is group privacy over add/remove. Checked against the exact replace-one hockey-stick divergence of
    q Lap(-1, b) + (1 - q) Lap(0, b) vs q Lap(1, b) + (1 - q) Lap(0, b), integrated numerically (1e-10):
    never below it; and 2 eps-DP from the add/remove eps = log(1 + q (e^(1/b) - 1))."""
    q, b = 0.2, 0.5
    event = dpa.PoissonSampledDpEvent(q, dpa.LaplaceDpEvent(b))
    prof = from_dp_event(event, neighboring="replace_one")
    assert isinstance(prof, ReplaceOneByGroupPrivacy) and prof.neighboring == "replace_one"
    lap = lambda x: np.exp(-np.abs(x) / b) / (2 * b)
    p = lambda x: q * lap(x + 1) + (1 - q) * lap(x)
    r = lambda x: q * lap(x - 1) + (1 - q) * lap(x)
    eps = np.array([0.0, 0.1, 0.3, 0.6, 1.0, 1.5])
    exact = [integrate.quad(lambda x: max(p(x) - math.exp(e) * r(x), 0.0), -40, 40, points=[-1, 0, 1],
                            limit=400, epsabs=1e-13)[0] for e in eps]
    ours = prof.delta(eps)
    assert np.all(ours >= np.array(exact) - 1e-10), (ours, exact)
    assert prof.pure_epsilon() == pytest.approx(2 * math.log1p(q * math.expm1(1 / b)), rel=1e-12)
    assert prof.delta(prof.pure_epsilon()) == 0.0
    # the chain at eps is min over splits: never above the split eps1 = 0, eps2 = eps rounded down to its grid
    # (steps of top / 1000, top = the add/remove eps here)
    base = prof.add_remove
    assert np.all(ours <= base.delta(0.0) + base.delta(np.maximum(eps - base.pure_epsilon() / 1000, 0.0)) + 1e-12)


# --------------------------------------------------------------------------------------------
# from_opacus
# --------------------------------------------------------------------------------------------
def test_from_opacus_rdp_accountant_history():
    """opacus' RDPAccountant history -> the composed Poisson-subsampled Gaussian event: equal to dp_accounting's
    accountant on that event (1e-9), and its (PLD) epsilon never above opacus' own RDP epsilon (RDP is looser)."""
    accountants = pytest.importorskip("opacus.accountants")
    accountant = accountants.RDPAccountant()
    for _ in range(200):
        accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    for _ in range(50):
        accountant.step(noise_multiplier=1.5, sample_rate=0.02)
    assert accountant.history == [(1.0, 0.01, 200), (1.5, 0.02, 50)]
    prof = from_opacus(accountant, value_discretization_interval=COARSE)
    assert isinstance(prof, DpEventProfile) and prof.neighboring == "add_remove"
    event = dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 200),
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.02, dpa.GaussianDpEvent(1.5)), 50),
    ])
    want = accountant_deltas(event, NR.ADD_OR_REMOVE_ONE, COARSE)
    np.testing.assert_allclose(prof.delta(EPS), want, rtol=0, atol=1e-9)
    ours, theirs = prof.epsilon(1e-5), accountant.get_epsilon(1e-5)
    assert 0.5 * theirs <= ours <= theirs


def test_from_opacus_one_phase_is_dpsgd():
    """A history of one (sigma, q, steps) is DP-SGD: the same deltas as DPSGD(..., "add_remove"), built from
    dp_accounting's from_gaussian_mechanism directly (1e-12), and its replace_one() as DPSGD's replace-one."""
    prof = from_opacus([(0.8, 0.05, 40)], value_discretization_interval=COARSE)
    for nb, p in (("add_remove", prof), ("replace_one", prof.replace_one())):
        want = DPSGD(0.8, 0.05, 40, nb, value_discretization_interval=COARSE).delta(EPS)
        np.testing.assert_allclose(p.delta(EPS), want, rtol=1e-12, atol=1e-15)
    full = from_opacus([(2.0, 1.0, 9)])  # full batch: exactly mu-GDP, mu = sqrt(9) / 2
    assert full.gdp_mu() == pytest.approx(1.5) and full.replace_one().gdp_mu() == pytest.approx(3.0)


# --------------------------------------------------------------------------------------------
# from_delta: a table
# --------------------------------------------------------------------------------------------
def brute_force_profile(pairs, eps):
    """sup over alpha of 1 - e^eps alpha - max_j f_{eps_j, delta_j}(alpha), over every pairwise intersection
    of the trade-off curves' lines (and alpha in {0, 1}): the maximum of a concave piecewise-linear function."""
    lines = [(0.0, 0.0)]
    for e, d in pairs:
        lines += [(-math.exp(e), 1 - d), (-math.exp(-e), math.exp(-e) * (1 - d))]
    alphas = [0.0, 1.0]
    for (m1, b1), (m2, b2) in itertools.combinations(lines, 2):
        if m1 != m2 and 0 <= (b2 - b1) / (m1 - m2) <= 1:
            alphas.append((b2 - b1) / (m1 - m2))
    a = np.array(alphas)
    f = np.max([m * a + b for m, b in lines], axis=0)
    return np.maximum([np.max(1 - math.exp(x) * a - f) for x in eps], 0.0)


def test_table_is_the_tightest_profile_by_brute_force():
    rng = np.random.default_rng(7)
    for trial in range(60):
        n = int(rng.integers(1, 6))
        pairs = np.column_stack([rng.uniform(0, 5, n), 10 ** rng.uniform(-9, -0.3, n)])
        if trial % 4 == 0:
            pairs[0, 1] = 0.0
        eps = np.concatenate([[0.0], rng.uniform(0, 6, 15), pairs[:, 0]])
        prof = from_delta(pairs)
        assert isinstance(prof, DeltaTable)
        np.testing.assert_allclose(prof.delta(eps), brute_force_profile(pairs, eps), rtol=0, atol=1e-12)
        # never above the step min over eps_j <= eps of delta_j
        step = np.array([min([d for e_j, d in pairs if e_j <= e], default=1.0) for e in eps])
        assert np.all(prof.delta(eps) <= step + 1e-15)


def test_table_one_pair_is_approx_dp_and_the_chord_tightens():
    eps = np.linspace(0, 4, 41)
    np.testing.assert_allclose(from_delta([(1.3, 1e-4)]).delta(eps), ApproxDP(1.3, 1e-4).delta(eps), rtol=0, atol=1e-15)
    # (0, 0.5) and (2, 0.01): the min rule gives 0.5 at eps = 1; the tight value is the chord in e^eps
    assert from_delta([(0.0, 0.5), (2.0, 0.01)]).delta(1.0) == pytest.approx(0.5 - 0.49 / (math.e + 1), rel=1e-12)


def test_table_of_a_true_profile_is_valid_and_exact_at_its_points():
    """Sampled from GaussianDP(1): never below the Gaussian curve (the mechanism meets every pair), equal at the
    listed eps (1e-15), and the floor beyond the last pair."""
    g = GaussianDP(1.0)
    points = np.linspace(0.0, 5.0, 11)
    prof = from_delta(np.column_stack([points, g.delta(points)]))
    fine = np.linspace(0.0, 7.0, 701)
    assert np.all(prof.delta(fine) >= g.delta(fine) - 1e-15)
    np.testing.assert_allclose(prof.delta(points), g.delta(points), rtol=0, atol=1e-15)
    assert prof.max_useful_epsilon == 5.0 and prof.delta(7.0) == g.delta(5.0)
    assert prof.pure_epsilon() is None
    pure = from_delta([(0.5, 0.1), (2.0, 0.0)])
    assert pure.pure_epsilon() == 2.0 and pure.delta(2.0) == 0.0 and pure.delta(1.99) > 0


# --------------------------------------------------------------------------------------------
# from_delta: a function
# --------------------------------------------------------------------------------------------
def test_function_of_a_true_profile_comes_back_as_it_is():
    g = GaussianDP(0.8)
    prof = from_delta(g.delta)
    assert isinstance(prof, DeltaCurve)
    fine = np.linspace(0.0, 8.0, 401)
    np.testing.assert_allclose(prof.delta(fine), g.delta(fine), rtol=1e-13, atol=1e-16)


def test_function_is_tightened_to_what_it_implies():
    """A non-monotone scalar function: at eps = 1.5 it claims 0.5, but its own value 0.1 at eps = 0.9 implies
    delta <= 0.1 there, and its values at 0 and 3 bound it by the chord in e^eps."""
    fn = lambda e: 0.3 if e < 1.0 else (0.5 if e < 2.0 else 0.001)
    prof = from_delta(fn)
    assert prof.delta(1.5) <= 0.3
    x0, x1 = 1.0, math.exp(2.05)  # points (0, 0.3) and (2.05, 0.001) in e^eps (the grid has a point in [2, 2.05])
    chord = 0.3 + (math.exp(1.5) - x0) / (x1 - x0) * (0.001 - 0.3)
    assert prof.delta(1.5) <= chord
    decay = from_delta(lambda e: 0.2 * math.exp(-e))  # math, not numpy: called one float at a time
    assert decay.delta(1.0) == pytest.approx(0.2 * math.exp(-1.0))


def test_add_remove_tables_convert_by_group_privacy():
    prof = from_delta([(1.0, 0.0)], neighboring="add_remove")
    two = for_game(prof, "reconstruction")
    assert isinstance(two, ReplaceOneByGroupPrivacy)
    assert two.pure_epsilon() == 2.0 and two.delta(2.0) == 0.0
    # (1, 0)-DP add/remove: replace-one eps' < 2 keeps delta(eps') <= the chain at eps1 = 1, eps2 = eps' - 1
    assert two.delta(1.5) <= ApproxDP(1.0, 0.0).delta(0.5) + 1e-12
    assert for_game(prof, "membership") is prof


# --------------------------------------------------------------------------------------------
# every profile: the interface, JSON params and count_bound
# --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_every_profile_has_json_params_and_counts(profiles):
    """Every kind of profile (an add/remove DpEventProfile is counted through its replace_one(), as for_game
    does: the opacus one here; the fixture's add/remove distributions are not rebuilt)."""
    built = [
        profiles[("laplace", "add_remove")],
        profiles[("laplace", "replace_one")],
        profiles[("subsampled", "replace_one")],
        from_opacus([(1.0, 0.02, 100)], value_discretization_interval=COARSE),
        from_dp_event(dpa.PoissonSampledDpEvent(0.2, dpa.LaplaceDpEvent(0.5)), neighboring="replace_one"),
        from_delta([(0.5, 1e-2), (2.0, 1e-6)]),
        from_delta(GaussianDP(1.0).delta),
        from_delta([(1.0, 1e-3)], neighboring="add_remove").replace_one(),
    ]
    for prof in [*built, profiles[("subsampled", "add_remove")]]:
        assert isinstance(prof, PrivacyProfile)
        params = json.loads(json.dumps(prof.params()))
        assert params["profile"] == prof.name and prof == prof and isinstance(hash(prof), int)
    for prof in built:
        count = count_bound(prof, PRIORS, 0.95)
        assert isinstance(count, int) and 0 <= count <= len(PRIORS), (prof, count)


# --------------------------------------------------------------------------------------------
# bad input: one sentence naming the argument, the value and the fix
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,match", [
    (lambda: from_dp_event(dpa.GaussianDpEvent(1.0)), r"neighboring must be one of .* got None; say which"),
    (lambda: from_dp_event(dpa.GaussianDpEvent(1.0), neighboring="replace"), r"neighboring must be .* got 'replace'"),
    (lambda: from_dp_event("gaussian", neighboring="add_remove"), r"event must be a dp_accounting DpEvent"),
    (lambda: from_dp_event(dpa.NonPrivateDpEvent(), neighboring="add_remove"), r"event must give a privacy guarantee"),
    (lambda: from_dp_event(dpa.GaussianDpEvent(0.0), neighboring="replace_one"), r"has none \(no noise\)"),
    (lambda: from_dp_event(dpa.RandomizedResponseDpEvent(0.5, 4), neighboring="add_remove"),
     r"cannot account; it can under replace_one: give neighboring='replace_one'"),
    (lambda: from_dp_event(dpa.ZCDpEvent(0.5), neighboring="add_remove"), r"cannot account; describe the mechanism"),
    (lambda: DpEventProfile(dpa.PoissonSampledDpEvent(0.1, dpa.LaplaceDpEvent(1.0)), "replace_one"),
     r"has none in dp_accounting; use from_dp_event"),
    (lambda: from_delta([(-1.0, 1e-5)]), r"pairs eps must be a number >= 0"),
    (lambda: from_delta([(1.0, 1.0)]), r"pairs delta must be in \[0, 1\).* got 1.0"),
    (lambda: from_delta([1.0, 1e-5]), r"pairs must be a table of \(eps, delta\) rows"),
    (lambda: from_delta([]), r"pairs must be a table"),
    (lambda: from_delta([(1.0, 1e-5)], epsilons=[1.0]), r"epsilons must be None for a table"),
    (lambda: from_delta(lambda e: float("nan")), r"fn must return a delta in \[0, 1\].* got fn\(0.0\) = nan"),
    (lambda: from_delta(lambda e: -0.1), r"fn must return a delta in \[0, 1\]"),
    (lambda: from_opacus(object()), r"accountant must be an opacus accountant"),
    (lambda: from_opacus([]), r"accountant must have recorded at least one step"),
    (lambda: from_opacus([(1.0, 1.5, 10)]), r"sample_rate must be a probability in \(0, 1\], got 1.5"),
    (lambda: from_opacus([(0.0, 0.1, 10)]), r"noise_multiplier must be a number > 0"),
    (lambda: from_opacus([(1.0, 0.1)]), r"accountant.history\[0\] must be \(noise_multiplier, sample_rate, steps\)"),
])
def test_bad_input_is_refused_in_one_sentence(call, match):
    with pytest.raises(ValueError, match=match) as info:
        call()
    assert "\n" not in str(info.value)
