"""Helpers of the tabular tests: small hand-made networks and their joint by enumeration."""
from __future__ import annotations

import itertools

import numpy as np

from stages.prior.baynet import BayesNet


def random_network(seed: int = 0, domain=(2, 3, 2, 3, 2), parents=((), (0,), (0, 1), (1,), (2, 3))) -> BayesNet:
    """A small network with random CPTs (some entries zero) over the given structure."""
    rng = np.random.default_rng(seed)
    cpts = []
    for j, pa in enumerate(parents):
        table = rng.gamma(0.7, size=(*(domain[p] for p in pa), domain[j]))
        table[table < 0.05] = 0.0
        table = table + (table.sum(axis=-1, keepdims=True) == 0)
        cpts.append(table / table.sum(axis=-1, keepdims=True))
    order = tuple(range(len(domain)))
    return BayesNet(tuple(f"c{j}" for j in range(len(domain))), tuple(domain), tuple(parents), order, cpts)


def joint_table(net: BayesNet) -> np.ndarray:
    """The full joint of a small network by enumeration: array with one axis per column."""
    joint = np.zeros(net.domain)
    for x in itertools.product(*(range(m) for m in net.domain)):
        joint[x] = np.exp(net.log_probability(np.asarray([x]))[0])
    return joint
