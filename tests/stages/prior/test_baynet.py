"""BayNet prior: exact conditionals and joint MAP against enumeration, the fit, sampling, the prior box."""
from __future__ import annotations

import json

import numpy as np
import pytest
from tabular_helpers import joint_table, random_network

from stages.metric import Exact, Within
from stages.prior.baynet import BayesNet, BayNetPrior, fit_network, greedy_structure
from stages.prior.tabular import load_table


def _brute_conditional(joint, known, values, query):
    """Pr[query columns | known = values] from the full joint: array over the query columns' values."""
    index = [slice(None)] * joint.ndim
    for k, v in zip(known, values):
        index[k] = v
    sub = joint[tuple(index)]  # axes: the unknown columns in order
    unknown = [j for j in range(joint.ndim) if j not in known]
    drop = tuple(a for a, j in enumerate(unknown) if j not in query)
    table = sub.sum(axis=drop)
    kept = [j for j in unknown if j in query]
    table = np.transpose(table, [kept.index(q) for q in query])
    return table / table.sum()


@pytest.mark.parametrize("known,targets", [([0, 2], [4]), ([4], [0, 1]), ([1], [2, 3, 4]), ([0, 3], [1, 2, 4]),
                                           ([2, 3], [1])])
def test_conditionals_and_map_match_enumeration(known, targets):
    net = random_network(seed=len(known) * 10 + len(targets))
    joint = joint_table(net)
    records = net.sample(np.random.default_rng(1), 40)
    evidence = records[:, known]
    unknown = [j for j in range(net.n_columns) if j not in known]
    marginals = net.conditional_marginals(known, evidence, unknown)
    z, p = net.joint_map(known, evidence, targets)
    for i in range(records.shape[0]):
        for q in unknown:
            np.testing.assert_allclose(marginals[q][i], _brute_conditional(joint, known, evidence[i], [q]), atol=1e-12)
        table = _brute_conditional(joint, known, evidence[i], targets)
        assert p[i] == pytest.approx(table.max(), abs=1e-12)
        assert table[tuple(z[i])] == pytest.approx(table.max(), abs=1e-12)  # a maximiser (ties allowed)


def test_map_is_not_the_product_of_per_column_maxima():
    """Joint (a, b): (0,0) .3, (0,1) .3, (1,0) .4, (1,1) 0. Per-column maxima give (0, 0) (.3); the mode is (1, 0)."""
    cpts = [np.array([0.6, 0.4]), np.array([[0.5, 0.5], [1.0, 0.0]])]
    net = BayesNet(("a", "b"), (2, 2), ((), (0,)), (0, 1), cpts)
    none = np.zeros((1, 0), dtype=np.int64)
    marg = net.conditional_marginals([], none, [0, 1])
    assert (int(np.argmax(marg[0][0])), int(np.argmax(marg[1][0]))) == (0, 0)
    z, p = net.joint_map([], none, [0, 1])
    assert tuple(z[0]) == (1, 0) and p[0] == pytest.approx(0.4)


def test_sampling_follows_the_cpts():
    net = random_network(seed=3)
    x = net.sample(np.random.default_rng(0), 40_000)
    freq = np.bincount(x[:, 0], minlength=2) / x.shape[0]
    np.testing.assert_allclose(freq, net.cpts[0], atol=0.015)
    for v in range(2):  # Pr[c1 | c0 = v], where c0 = v occurs
        rows = x[x[:, 0] == v, 1]
        if rows.size < 1000:
            assert net.cpts[0][v] < 0.05
            continue
        np.testing.assert_allclose(np.bincount(rows, minlength=3) / rows.size, net.cpts[1][v], atol=0.03)


def test_greedy_fit_on_the_test_table(test_data, tmp_path):
    table = load_table("acs", test_data)
    net = fit_network(table, "greedy", degree=2, root="AGEP", seed=0)
    assert net.order[0] == table.columns.index("AGEP") and sorted(net.order) == list(range(16))
    seen = set()
    for j in net.order:  # every column after its parents, at most `degree` of them
        assert set(net.parents[j]) <= seen and len(net.parents[j]) <= 2
        seen.add(j)
    for j, cpt in enumerate(net.cpts):
        assert cpt.shape == (*(table.domain[p] for p in net.parents[j]), table.domain[j])
        np.testing.assert_allclose(cpt.sum(axis=-1), 1.0)
    # Maximum likelihood: a CPT row equals the empirical conditional frequencies where the parents occur.
    j = net.order[2]
    pa = net.parents[j]
    values = table.values
    first = values[0, list(pa)]
    rows = np.all(values[:, list(pa)] == first, axis=1)
    np.testing.assert_allclose(net.cpts[j][tuple(first)], np.bincount(values[rows, j], minlength=table.domain[j]) / rows.sum())
    # Save / load round trip; a seeded root is reproducible.
    net.save(tmp_path)
    again = BayesNet.load(tmp_path)
    assert again.parents == net.parents and all(np.array_equal(a, b) for a, b in zip(again.cpts, net.cpts))
    assert greedy_structure(table, 2, None, seed=5) == greedy_structure(table, 2, None, seed=5)


def test_greedy_picks_the_most_informative_parent():
    """b copies a, c is independent noise: the first parent chosen after root a is for b."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 2000)
    from stages.prior.tabular import table_from_arrays

    t = table_from_arrays("toy", ["a", "b", "c"], [3, 3, 3], np.stack([a, a, rng.integers(0, 3, 2000)], axis=1))
    parents, order = greedy_structure(t, degree=1, root=0)
    assert order[:2] == (0, 1) and parents[1] == (0,)


def test_hill_climb_option(test_data):
    table = load_table("fire", test_data)
    net = fit_network(table, "hill_climb", degree=2)
    position = {j: i for i, j in enumerate(net.order)}
    for j, pa in enumerate(net.parents):
        assert len(pa) <= 2 and all(position[p] < position[j] for p in pa)
    np.testing.assert_allclose([c.sum(axis=-1).min() for c in net.cpts], 1.0)


def test_prior_box_guess_and_success(test_data):
    prior = BayNetPrior("acs", str(test_data), targets=["AGEP"], n_records=50)
    x = prior.sample(np.random.default_rng(0))
    assert x.shape == (50, 16)
    exact = prior.for_trial(x, Exact())
    cond = prior.network.conditional_marginals(prior.known, x[:, prior.known], prior.targets)[prior.targets[0]]
    np.testing.assert_allclose(exact.prior_success, cond.max(axis=1))
    within = prior.for_trial(x, Within(2))
    for i in range(50):  # the best window of width 5, by brute force over its centre
        best = max(cond[i, max(c - 2, 0):c + 3].sum() for c in range(10))
        assert within.prior_success[i] == pytest.approx(best)
        assert cond[i, max(within.guess[i, 0] - 2, 0):within.guess[i, 0] + 3].sum() == pytest.approx(best)
    multi = BayNetPrior("acs", str(test_data), targets=["SEX", "EDU"], known=["AGEP", "MSP", "RAC1P"], n_records=50)
    trial = multi.for_trial(x, Exact())
    z, p = multi.network.joint_map(multi.known, x[:, multi.known], multi.targets)
    np.testing.assert_array_equal(trial.guess, z)
    np.testing.assert_allclose(trial.prior_success, p)
    assert set(trial.marginals) == set(multi.unknown) and len(multi.unknown) == 13


@pytest.mark.parametrize("kwargs,message", [
    ({"targets": ["NOPE"]}, "targets names column 'NOPE'"),
    ({"targets": ["SEX"], "known": ["SEX", "AGEP"]}, "known and targets must not share a column"),
    ({"dataset": "adult"}, "dataset must be one of"),
    ({"structure": "chow_liu"}, "structure must be one of"),
])
def test_prior_box_refuses_bad_input(test_data, kwargs, message):
    with pytest.raises(ValueError, match=message):
        BayNetPrior(data_dir=str(test_data), **kwargs)


def test_table_codes_outside_the_domain(test_data, tmp_path):
    folder = tmp_path / "acs" / "sdnist"
    folder.mkdir(parents=True)
    src = test_data / "acs" / "sdnist"
    (folder / "national2019_16attr_prepared.csv").write_text((src / "national2019_16attr_prepared.csv").read_text())
    domain = json.loads((src / "national2019_16attr_prepared-domain.json").read_text())
    domain["EDU"] = 3
    (folder / "national2019_16attr_prepared-domain.json").write_text(json.dumps(domain))
    with pytest.raises(ValueError, match=r"column 'EDU' of acs holds code \d+ outside its domain 0..2"):
        load_table("acs", tmp_path)
    with pytest.raises(FileNotFoundError, match="fire_prepared.csv does not exist"):
        load_table("fire", tmp_path)


def test_the_law_is_per_trial(test_data):
    """Issue 15: a BayNet prior has no law before the records are drawn; the game takes it from for_trial(X)."""
    prior = BayNetPrior("acs", str(test_data), targets=["SEX"])
    assert prior.provides == "table" and prior.per_trial
    with pytest.raises(ValueError, match=r"for_trial\(X\)"):
        prior.a_priori_guess(Exact())


@pytest.mark.parametrize("known,targets", [([4], [0, 1]), ([1], [2, 3, 4]), ([0, 3], [1, 2, 4])])
def test_law_success_probability_of_any_guess_matches_enumeration(known, targets):
    """p_i of an arbitrary joint guess (the attack's, not only z*) = Pr[targets = z_i | known_i], by enumeration."""
    net = random_network(seed=11 + len(targets))
    joint = joint_table(net)
    prior = BayNetPrior.from_network(net, 25, targets=[net.columns[t] for t in targets],
                                     known=[net.columns[k] for k in known])
    x = prior.sample(np.random.default_rng(4))
    law = prior.for_trial(x)
    z = np.random.default_rng(5).integers(0, [net.domain[t] for t in targets], size=(25, len(targets)))
    p = law.success_probability(z, Exact())
    for i in range(25):
        fixed = {**{k: x[i, k] for k in known}, **{t: z[i, j] for j, t in enumerate(targets)}}
        sel = tuple(fixed.get(j, slice(None)) for j in range(len(net.domain)))
        cond = tuple(x[i, j] if j in known else slice(None) for j in range(len(net.domain)))
        assert p[i] == pytest.approx(joint[sel].sum() / joint[cond].sum(), abs=1e-12)
    assert law.score(x, z, Exact()).tolist() == [int(all(x[i, t] == z[i, j] for j, t in enumerate(targets)))
                                                  for i in range(25)]
    # the a-priori guess's own probability is the joint MAP's
    np.testing.assert_allclose(law.success_probability(law.a_priori_guess(Exact()), Exact()), law.prior_success)


@pytest.mark.parametrize("known,targets", [([4], [0, 1]), ([1], [2, 3, 4]), ([0, 3], [1, 2, 4]), ([], [0, 3])])
def test_joint_map_with_soft_evidence_matches_enumeration(known, targets):
    """joint_map(soft_evidence=L): the mode of Pr[targets | known] x Pi_j L_j(x_j), nuisance summed out."""
    net = random_network(seed=7 + len(targets))
    joint = joint_table(net)
    rng = np.random.default_rng(2)
    records = net.sample(rng, 30)
    evidence = records[:, known]
    unknown = [j for j in range(net.n_columns) if j not in known]
    soft = {j: rng.gamma(0.5, size=(30, net.domain[j])) for j in unknown}
    z, p = net.joint_map(known, evidence, targets, soft)
    for i in range(30):
        tilted = joint.copy()
        for j, likelihood in soft.items():
            shape = [1] * joint.ndim
            shape[j] = net.domain[j]
            tilted = tilted * likelihood[i].reshape(shape)
        table = _brute_conditional(tilted, known, evidence[i], targets)
        assert table[tuple(z[i])] == pytest.approx(table.max(), abs=1e-12)
        assert p[i] == pytest.approx(table.max(), abs=1e-9)
    flat = {j: np.ones((30, net.domain[j])) for j in unknown}  # no evidence: the prior's joint MAP
    np.testing.assert_array_equal(net.joint_map(known, evidence, targets, flat)[0], net.joint_map(known, evidence, targets)[0])


def test_soft_evidence_is_checked():
    net = random_network()
    with pytest.raises(ValueError, match="soft_evidence must be on unknown columns"):
        net.joint_map([0], np.zeros((2, 1), dtype=np.int64), [1], {0: np.ones((2, 2))})
    with pytest.raises(ValueError, match=r"soft_evidence\[1\] must be a non-negative array of shape \(2, 3\)"):
        net.joint_map([0], np.zeros((2, 1), dtype=np.int64), [1], {1: np.ones((2, 2))})
