"""Benchmark: the tabular case study's costly steps, each against a baseline measured in the same run.

    nice -n 10 .venv/bin/python tests/benchmarks/bench_rap.py [--steps 2000] [--baseline-steps 5]

* RAP, single column (ACS, target EDU, K = 105 marginals) and 13 target columns (ACS, 3 visit-order
  columns known, K = 559): the jitted attack (one lax.fori_loop over all steps, one compile per schema)
  against a straightforward implementation of the same objective: JAX without jit, one einsum per
  marginal, jax.grad and optax.adam step by step. The baseline runs --baseline-steps steps and its
  per-step time (after a warm-up step, since eager JAX compiles every op once) is scaled to --steps
  (marked "(est.)"). Compile time = first call - the faster of two later calls.
* BayNet fit (greedy degree-2 structure + pgmpy MLE on the 27,253-row ACS stand-in) and the exact
  conditionals of 100 records (every unknown column's marginal + the joint MAP of the targets), for
  1 and 13 targets, against pgmpy's VariableElimination queried per record and per column (the
  per-variable route; pgmpy's joint map_query is not run: it builds the full joint of the targets).
Prints a markdown table for the docs' Performance page (docs/pages/performance.md).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stages.attack.rap import RAPAttack  # noqa: E402
from stages.mechanism.noisy_marginals import NoisyMarginals  # noqa: E402
from stages.prior.baynet import BayNetPrior, fit_network  # noqa: E402
from stages.prior.tabular import load_table  # noqa: E402


def naive_attack(release, known, known_values, domain, marginals, steps, learning_rate, noise_aware):
    """The same objective without jit: per-column softmax, one einsum per marginal, step by step."""
    import jax
    import jax.numpy as jnp
    import optax

    n, d, width = known_values.shape[0], len(domain), max(domain)
    unknown = [j for j in range(d) if j not in set(known)]
    onehot = np.zeros((n, d, width), dtype=np.float32)
    for pos, j in enumerate(known):
        onehot[np.arange(n), j, known_values[:, pos]] = 1.0
    log_prior = {j: jnp.asarray(np.log(np.maximum(marginals[j], 1e-8)), dtype=jnp.float32) for j in unknown}
    subsets = [tuple(int(c) for c in s) for s in release.subsets]
    tables = [jnp.asarray(t, dtype=jnp.float32) for t in release.tables]
    kl_weight = 2.0 * release.noise_scale ** 2 if noise_aware else 0.0

    def loss(params):
        p = {j: jnp.asarray(onehot[:, j, :domain[j]]) for j in known}
        p.update({j: jax.nn.softmax(params[j], axis=-1) for j in unknown})
        total = 0.0
        for (a, b, c), y in zip(subsets, tables):
            total = total + jnp.sum((jnp.einsum("na,nb,nc->abc", p[a], p[b], p[c]) / n - y) ** 2)
        for j in unknown:
            log_p = jax.nn.log_softmax(params[j], axis=-1)
            total = total + kl_weight * jnp.sum(jnp.exp(log_p) * (log_p - log_prior[j]))
        return total

    optimizer = optax.adam(learning_rate)
    params = dict(log_prior)
    state = optimizer.init(params)
    for _ in range(steps):
        updates, state = optimizer.update(jax.grad(loss)(params), state, params)
        params = optax.apply_updates(params, updates)
    return params


def time_call(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def rap_rows(network, prior, label, steps, baseline_steps, epsilon=1.0):
    rng = np.random.default_rng(0)
    x = prior.sample(rng)
    release = NoisyMarginals(epsilon=epsilon).release(x, np.random.default_rng(1), network.domain, prior.known)
    marginals = network.conditional_marginals(prior.known, x[:, prior.known], prior.unknown)
    attack = RAPAttack(steps=steps, learning_rate=0.1, objective="noise_aware")
    args = (release, prior.known, x[:, prior.known], network.domain, marginals)
    first, _ = time_call(attack.relaxed, *args)
    second, _ = time_call(attack.relaxed, *args)
    # Another trial's release (new records and noise, same schema) reuses the compiled function.
    x2 = prior.sample(np.random.default_rng(7))
    release2 = NoisyMarginals(epsilon=3.0).release(x2, np.random.default_rng(8), network.domain, prior.known)
    marginals2 = network.conditional_marginals(prior.known, x2[:, prior.known], prior.unknown)
    third, _ = time_call(attack.relaxed, release2, prior.known, x2[:, prior.known], network.domain, marginals2)
    naive_attack(*args, steps=1, learning_rate=0.1, noise_aware=True)  # eager JAX compiles each op once: warm up
    base, _ = time_call(naive_attack, *args, steps=baseline_steps, learning_rate=0.1, noise_aware=True)
    base_full = base / baseline_steps * steps
    per_trial = min(second, third)
    return [
        (f"RAP {label}, K = {release.n_marginals}, {steps} steps: per trial", f"{per_trial:.2f} s",
         f"{base_full:.1f} s (est. from {baseline_steps} steps)", f"{base_full / per_trial:.0f}x"),
        (f"RAP {label}: one-off compile", f"{first - per_trial:.1f} s", "-", "-"),
    ]


def pgmpy_conditionals(network, known, evidence, unknown):
    """pgmpy VariableElimination, one query per record and unknown column (the per-variable route)."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.inference import VariableElimination
    from pgmpy.models import DiscreteBayesianNetwork

    names = network.columns
    model = DiscreteBayesianNetwork([(names[p], names[j]) for j in range(len(names)) for p in network.parents[j]])
    model.add_nodes_from(names)
    for j, cpt in enumerate(network.cpts):
        pa = network.parents[j]
        values = np.moveaxis(cpt, -1, 0).reshape(network.domain[j], -1)
        model.add_cpds(TabularCPD(names[j], network.domain[j], values, evidence=[names[p] for p in pa] or None,
                                  evidence_card=[network.domain[p] for p in pa] or None,
                                  state_names={names[v]: list(range(network.domain[v])) for v in (j, *pa)}))
    infer = VariableElimination(model)
    for row in evidence:
        ev = {names[k]: int(v) for k, v in zip(known, row)}
        for q in unknown:
            infer.query([names[q]], evidence=ev, show_progress=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--baseline-steps", type=int, default=5)
    parser.add_argument("--pgmpy-records", type=int, default=5)
    args = parser.parse_args()

    import pgmpy.estimators  # noqa: F401 - imported before timing: the import alone takes 10-20 s here
    import pgmpy.models  # noqa: F401

    table = load_table("acs")
    rows = []
    fit_time, network = time_call(fit_network, table, "greedy", 2, None, 0)
    rows.append(("BayNet fit (greedy, degree 2, pgmpy MLE), 27,253 x 16", f"{fit_time:.2f} s", "-", "-"))
    order = [network.columns[j] for j in network.order]
    single = BayNetPrior.from_network(network, 100, ["EDU"])
    multi = BayNetPrior.from_network(network, 100, order[3:], order[:3])
    for label, prior in (("1 target", single), ("13 targets", multi)):
        x = prior.sample(np.random.default_rng(0))
        evidence = x[:, prior.known]

        def ours():
            prior.network.conditional_marginals(prior.known, evidence, prior.unknown)
            prior.network.joint_map(prior.known, evidence, prior.targets)

        ours_time, _ = time_call(ours)
        k = args.pgmpy_records
        base, _ = time_call(pgmpy_conditionals, network, prior.known, evidence[:k], prior.unknown)
        base_full = base / k * 100
        rows.append((f"exact conditionals + joint MAP, 100 records, {label}", f"{ours_time:.3f} s",
                     f"{base_full:.1f} s (pgmpy VE per record, est. from {k})", f"{base_full / ours_time:.0f}x"))
    rows += rap_rows(network, single, "1 target (EDU)", args.steps, args.baseline_steps)
    rows += rap_rows(network, multi, "13 targets", args.steps, args.baseline_steps)
    print("| step | ours | baseline | speed-up |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
