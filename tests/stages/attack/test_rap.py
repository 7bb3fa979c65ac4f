"""The RAP M-AI attack: its loss against numpy, known columns untouched, exact recovery at eps = inf."""
from __future__ import annotations

import numpy as np
import pytest

from stages.attack.rap import RAPAttack, prepare, relaxed_loss_numpy
from stages.mechanism.noisy_marginals import NoisyMarginals
from stages.metric import Exact
from stages.prior.tabular import table_from_arrays


def _uniform_marginals(domain, unknown, n):
    return {j: np.full((n, domain[j]), 1.0 / domain[j]) for j in unknown}


@pytest.mark.parametrize("known", [[0, 1, 2], [0, 1], [4]])
def test_jitted_loss_equals_numpy(known):
    import jax.numpy as jnp

    from stages.attack.rap import _data, _runner

    rng = np.random.default_rng(0)
    domain = [3, 2, 4, 2, 3]
    x = np.stack([rng.integers(0, m, 30) for m in domain], axis=1)
    unknown = [j for j in range(5) if j not in known]
    release = NoisyMarginals(epsilon=2.0).release(x, rng, domain, known)
    priors = {j: rng.dirichlet(np.ones(domain[j]), 30) for j in unknown}
    prepared = prepare(release, known, x[:, known], domain, priors)
    _, loss = _runner()
    logits = rng.normal(size=prepared.log_prior.shape).astype(np.float32)
    got = float(loss(jnp.asarray(logits), _data(prepared, 0.0), prepared.domain, prepared.unknown_columns))
    flat = np.zeros_like(logits, dtype=float)
    for j, (lo, hi) in enumerate(zip(prepared.offsets[:-1], prepared.offsets[1:])):
        e = np.exp(logits[:, lo:hi] - logits[:, lo:hi].max(axis=1, keepdims=True))
        flat[:, lo:hi] = e / e.sum(axis=1, keepdims=True) if j in unknown else prepared.known_flat[:, lo:hi]
    assert got == pytest.approx(relaxed_loss_numpy(prepared.per_column(flat), prepared), rel=1e-4)


@pytest.mark.parametrize("objective", ["plain", "noise_aware"])
def test_known_columns_never_change_and_runs_are_deterministic(objective):
    rng = np.random.default_rng(3)
    domain = [4, 3, 2, 3]
    x = np.stack([rng.integers(0, m, 40) for m in domain], axis=1)
    known = [0, 2]
    release = NoisyMarginals(epsilon=1.0).release(x, rng, domain, known)
    priors = _uniform_marginals(domain, [1, 3], 40)
    attack = RAPAttack(steps=50, learning_rate=0.1, objective=objective)
    p, _ = attack.relaxed(release, known, x[:, known], domain, priors)
    for j in known:
        np.testing.assert_array_equal(np.argmax(p[:, j, :domain[j]], axis=1), x[:, j])
        np.testing.assert_array_equal(p[:, j, :domain[j]].max(axis=1), 1.0)
    again, _ = attack.relaxed(release, known, x[:, known], domain, priors)
    np.testing.assert_array_equal(p, again)
    z = attack.reconstruct(release, known, x[:, known], domain, priors, [1, 3], Exact())
    assert z.shape == (40, 2) and z.min() >= 0 and np.all(z < np.array([3, 3]))


@pytest.mark.parametrize("objective", ["plain", "noise_aware"])
def test_exact_marginals_recover_the_target_column(objective):
    """eps = inf, every known row distinct: the (known, known, target) marginal pins each record's target."""
    rng = np.random.default_rng(5)
    known_rows = np.array([(a, b) for a in range(6) for b in range(4)])  # 24 distinct rows
    n = known_rows.shape[0]
    target = rng.integers(0, 3, n)
    x = np.concatenate([known_rows, target[:, None]], axis=1)
    domain = [6, 4, 3]
    table_from_arrays("toy", list("abt"), domain, x)  # a valid table
    release = NoisyMarginals(epsilon="inf").release(x, rng, domain, [0, 1])
    priors = {2: np.tile([0.6, 0.3, 0.1], (n, 1))}  # a prior that is wrong for most records
    z = RAPAttack(steps=1000, learning_rate=0.1, objective=objective).reconstruct(
        release, [0, 1], x[:, :2], domain, priors, [2], Exact())
    np.testing.assert_array_equal(z[:, 0], target)


def test_bad_objective():
    with pytest.raises(ValueError, match="objective must be one of"):
        RAPAttack(objective="adversarial")


def _decode_setting(seed=0, n=200):
    from tabular_helpers import random_network

    net = random_network(seed=seed)
    x = net.sample(np.random.default_rng(seed), n)
    known, targets = [0], [1, 2, 3, 4]
    unknown = [1, 2, 3, 4]
    marginals = net.conditional_marginals(known, x[:, known], unknown)
    relaxed = np.zeros((n, 5, max(net.domain)))
    relaxed[np.arange(n), 0, x[:, 0]] = 1.0
    return net, x, known, targets, unknown, marginals, relaxed


def test_joint_decode_without_signal_is_the_prior_only_guess():
    """A relaxed table equal to the prior (the release said nothing): joint decode returns z*, the joint MAP,
    so it is never worse than knowing nothing; per-column argmax returns the product of the per-column maxima,
    which scores below z* on several targets."""
    net, x, known, targets, unknown, marginals, relaxed = _decode_setting()
    for j in unknown:
        relaxed[:, j, :net.domain[j]] = marginals[j]
    z_star, _ = net.joint_map(known, x[:, known], targets)
    joint = RAPAttack(decode="joint").decode(relaxed, targets, Exact(), network=net, known=known,
                                             known_values=x[:, known], prior_marginals=marginals)
    np.testing.assert_array_equal(joint, z_star)
    per_column = RAPAttack(decode="per_column").decode(relaxed, targets, Exact(), network=net, known=known,
                                                       known_values=x[:, known], prior_marginals=marginals)
    np.testing.assert_array_equal(per_column, np.stack([marginals[t].argmax(axis=1) for t in targets], axis=1))
    assert np.any(per_column != z_star)
    # expected successes Pr[all targets right | known]: z* is the maximiser, the per-column guess is not
    p_joint = np.exp(net.log_probability(np.concatenate([x[:, known], joint], axis=1)))
    p_columns = np.exp(net.log_probability(np.concatenate([x[:, known], per_column], axis=1)))
    assert p_joint.sum() > p_columns.sum()


def test_joint_decode_follows_a_confident_release():
    """Relaxed rows one-hot on the true values (exact marginals that pin the records): both decodes recover them."""
    net, x, known, targets, unknown, marginals, relaxed = _decode_setting(seed=1)
    for j in unknown:
        relaxed[np.arange(x.shape[0]), j, x[:, j]] = 1.0
    for decode in ("joint", "per_column"):
        z = RAPAttack(decode=decode).decode(relaxed, targets, Exact(), network=net, known=known,
                                            known_values=x[:, known], prior_marginals=marginals)
        np.testing.assert_array_equal(z, x[:, targets])


def test_bad_decode():
    with pytest.raises(ValueError, match=r"decode must be one of \['joint', 'per_column'\], got 'mean'"):
        RAPAttack(decode="mean")
