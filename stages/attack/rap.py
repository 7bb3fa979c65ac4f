"""The paper's multi-attribute-inference (M-AI) attack: RAP on noisy marginals, in JAX + optax.

Relaxed Adaptive Projection (Aydore et al. 2021; Dick et al. 2023's reconstruction attack), adapted
as in the paper's tabular appendix: one relaxed row per record; the known columns are fixed one-hot
and never trained; every unknown column is a softmax over its values, with logits initialised to the
log of the record's BayNet conditional given its known columns; Adam minimises
Sigma_V ||Q_V(relaxed) - noisy_V||^2 over the released marginals, where
Q_V(relaxed)[a, b, c] = (1/N) Sigma_i P_i,V1[a] P_i,V2[b] P_i,V3[c].

decode (how the relaxed table becomes the guess):
* `joint` (default): the joint MAP of the target columns under the BayNet conditional given the
  record's known columns, with every unknown column's relaxed row as soft evidence: the likelihood
  ratio L_ij = P_ij / prior_ij (the relaxed row over the per-column prior it started from, which the
  noise-aware objective's KL term pulls it towards) multiplies the network, the nuisance columns are
  summed out and the targets maximised (`BayesNet.joint_map`). Where the release says nothing, L is
  flat and the guess is the prior-only guess z* (the joint MAP); where it pins a column, L follows it.
  A single target with every other column known decodes to the argmax of its relaxed row, as before.
* `per_column`: the argmax of each target column on its own (the paper's projection; for several
  targets it ignores their dependence and falls below the prior-only joint MAP from m = 3 on).
For `within` (one target, a window of values) both are the window holding the most relaxed mass.

objective:
* `plain`: the paper's attack, the squared error above. With much noise (small epsilon) it fits
  the noise and can land below the prior-only guess.
* `noise_aware`: the same error plus 2 s^2 Sigma_i Sigma_j KL(P_ij || prior_ij), s the per-cell noise
  scale. Up to the factor 2 s^2 this is the negative mean-field ELBO of the Gaussian likelihood
  exp(-||Q - noisy||^2 / (2 s^2)) with the squared error of the mean in place of its expectation:
  the prior holds the guess where the marginals carry little signal. At epsilon = inf (s = 0) it is
  the plain loss.

One jitted function runs all the steps (lax.fori_loop). The released tables, the index tensors and
the initial logits are its arguments, so one compilation serves every trial and every epsilon of a
schema (columns, domains, which are known). The marginals with one unknown column are evaluated
through a constant n x n Gram matrix of the known pairs, the others as one einsum (see Prepared): no
per-marginal ops, no gathers or scatters, so XLA compiles the graph in seconds. The
attack uses no randomness: the initial point is the prior, so it is deterministic.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from stages.attack.decode import _PRIOR_FLOOR, DECODES, decode_relaxed
from stages.bound import _validate

__all__ = ["RAPAttack", "OBJECTIVES", "DECODES", "prepare", "relaxed_loss_numpy"]

OBJECTIVES = ("plain", "noise_aware")


@dataclass
class Prepared:
    """The attack's inputs as arrays for the jitted loss.

    The relaxed table is flat: record i's row is the concatenation over columns j of P_ij (one-hot
    for a known column, a softmax for an unknown one), W = Sigma_j domain[j] features; U (n, W_u)
    is its unknown part. The released marginals split in two:

    * one unknown column c, known pair (a, b): all of them are Q = A^T U / n with A (n, F) the
      constant one-hot features of the known pairs, and every such cell is released, so
      Sigma ||Q - Y||^2 = Sigma U * (G U) / n^2 - 2 Sigma U * B / n + Sigma Y^2 with the constant
      n x n matrix G = A A^T (how many known pairs two records share) and B = A Y (n x W_u).
      Single-column attacks cost O(n^2 W_u) per step instead of O(n F W_u).
    * two or three unknown columns: with b < c its last two unknown columns and a the third column,
      Q = row^T @ V / n, V (n, F_u) the outer products P_ib (x) P_ic of every unknown pair (b, c);
      `target` holds each released cell's noisy value at (a's values, the (b, c) block), `mask` marks it.
    """

    domain: tuple[int, ...]
    unknown_columns: tuple[int, ...]
    known_flat: np.ndarray     # (n, W) float32: one-hot of the known columns, zero elsewhere
    log_prior: np.ndarray      # (n, W) float32: log conditional of the unknown columns (floored), 0 elsewhere
    gram: np.ndarray           # (n, n) float32
    gram_target: np.ndarray    # (n, W_u) float32: B
    gram_constant: float       # Sigma Y^2 of the single-unknown marginals
    target: np.ndarray         # (W, F_u) float32, F_u the cells of all unknown pairs (empty if < 2 unknown)
    mask: np.ndarray           # same shape
    kl_weight: float
    subsets: np.ndarray        # (K, 3) the released column sets (for the numpy reference)
    tables: list               # the released noisy tables

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.domain)])

    def per_column(self, flat: np.ndarray) -> np.ndarray:
        """A flat relaxed table (n, W) as (n, d, max domain), zero-padded."""
        out = np.zeros((flat.shape[0], len(self.domain), max(self.domain)))
        for j, (lo, hi) in enumerate(zip(self.offsets[:-1], self.offsets[1:])):
            out[:, j, :hi - lo] = flat[:, lo:hi]
        return out


def prepare(release, known: Sequence[int], known_values: np.ndarray, domain: Sequence[int],
            prior_marginals: Mapping[int, np.ndarray]) -> Prepared:
    """Arrange a MarginalRelease, the known columns and the per-column priors for the jitted optimiser."""
    domain = tuple(int(m) for m in domain)
    d = len(domain)
    known = [int(k) for k in known]
    known_values = np.asarray(known_values, dtype=np.int64).reshape(-1, len(known))
    value = {j: known_values[:, pos] for pos, j in enumerate(known)}
    n = known_values.shape[0]
    offsets = np.concatenate([[0], np.cumsum(domain)])
    width = int(offsets[-1])
    unknown = [j for j in range(d) if j not in value]
    known_flat = np.zeros((n, width), dtype=np.float32)
    for j in known:
        known_flat[np.arange(n), offsets[j] + value[j]] = 1.0
    log_prior = np.zeros((n, width), dtype=np.float32)
    for j in unknown:
        if j not in prior_marginals:
            raise ValueError(f"prior_marginals must give every unknown column's conditional, column {j} is missing.")
        p = np.asarray(prior_marginals[j], dtype=float).reshape(n, domain[j])
        log_prior[:, offsets[j]:offsets[j + 1]] = np.log(np.maximum(p, _PRIOR_FLOOR))
    unknown_offsets = np.concatenate([[0], np.cumsum([domain[j] for j in unknown])])
    u_offset = {j: int(unknown_offsets[k]) for k, j in enumerate(unknown)}
    width_u = int(unknown_offsets[-1])
    gram_target = np.zeros((n, width_u))
    gram_constant = 0.0
    known_pairs = set()
    # Pair features of the unknown pairs (b < c): block (b, c) starts at pair_offset[(b, c)], cell vb * m_c + vc.
    pair_offset, size = {}, 0
    for k, b in enumerate(unknown):
        for c in unknown[k + 1:]:
            pair_offset[(b, c)] = size
            size += domain[b] * domain[c]
    target = np.zeros((width, size), dtype=np.float32)
    mask = np.zeros_like(target)
    for subset, table in zip(release.subsets, release.tables):
        subset = [int(c) for c in subset]
        if len(subset) != 3:
            raise ValueError(f"attack=rap reads 3-way marginals, got a {len(subset)}-way one; set mechanism.way=3.")
        free = sorted(col for col in subset if col in u_offset)
        table = np.asarray(table, dtype=float)
        if not free:
            continue  # a known-only marginal carries nothing the attack can use
        if len(free) == 1:
            c = free[0]
            a, b = sorted(col for col in subset if col != c)
            known_pairs.add((a, b))
            block = np.transpose(table, [subset.index(a), subset.index(b), subset.index(c)])
            gram_target[:, u_offset[c]:u_offset[c] + domain[c]] += block[value[a], value[b]]
            gram_constant += float(np.sum(block ** 2))
        else:
            b, c = free[-2:]
            (a,) = [col for col in subset if col not in (b, c)]
            block = np.transpose(table, [subset.index(a), subset.index(b), subset.index(c)])
            start = pair_offset[(b, c)]
            cells = (slice(offsets[a], offsets[a + 1]), slice(start, start + domain[b] * domain[c]))
            target[cells] = block.reshape(domain[a], -1)
            mask[cells] = 1.0
    singles = sum(1 for subset in release.subsets if sum(int(col) in u_offset for col in subset) == 1)
    if singles != len(known_pairs) * len(unknown):
        raise ValueError("the release must hold every 3-way marginal that touches an unknown column (as "
                         "mechanism=noisy_marginals releases them); some are missing.")
    # G[i, i'] = the number of released known pairs on which records i and i' agree.
    gram = np.zeros((n, n))
    for a, b in known_pairs:
        code = value[a] * domain[b] + value[b]
        gram += code[:, None] == code[None, :]
    return Prepared(domain, tuple(unknown), known_flat, log_prior, gram.astype(np.float32),
                    gram_target.astype(np.float32), gram_constant, target, mask,
                    float(2.0 * release.noise_scale ** 2), np.asarray(release.subsets), list(release.tables))


def relaxed_loss_numpy(probabilities: np.ndarray, prepared: Prepared) -> float:
    """Sigma_V ||Q_V(relaxed) - noisy_V||^2 over the released marginals, one einsum each, in plain numpy.

    probabilities: (n, d, max domain) per column.
    """
    n = probabilities.shape[0]
    total = 0.0
    for (a, b, c), y in zip(prepared.subsets, prepared.tables):
        if not {int(a), int(b), int(c)} & set(prepared.unknown_columns):
            continue
        y = np.asarray(y)
        q = np.einsum("na,nb,nc->abc", probabilities[:, a, :y.shape[0]], probabilities[:, b, :y.shape[1]],
                      probabilities[:, c, :y.shape[2]]) / n
        total += float(np.sum((q - y) ** 2))
    return total


def _make_runner():
    import functools

    import jax
    import jax.numpy as jnp
    import optax

    def relaxed(logits, data, domain, unknown):
        offsets = np.concatenate([[0], np.cumsum(domain)])
        parts = []
        for j in range(len(domain)):
            lo, hi = int(offsets[j]), int(offsets[j + 1])
            parts.append(jax.nn.softmax(logits[:, lo:hi], axis=-1) if j in unknown else data["known_flat"][:, lo:hi])
        return jnp.concatenate(parts, axis=1)

    def loss(logits, data, domain, unknown):
        offsets = np.concatenate([[0], np.cumsum(domain)])
        flat = relaxed(logits, data, domain, unknown)
        n = flat.shape[0]
        u = jnp.concatenate([flat[:, int(offsets[j]):int(offsets[j + 1])] for j in unknown], axis=1)
        total = (jnp.sum(u * (data["gram"] @ u)) / n**2 - 2.0 * jnp.sum(u * data["gram_target"]) / n
                 + data["gram_constant"])
        if len(unknown) >= 2:  # marginals with two or three unknown columns
            pairs = [(flat[:, int(offsets[b]):int(offsets[b + 1]), None] * flat[:, None, int(offsets[c]):int(offsets[c + 1])]
                      ).reshape(n, -1) for k, b in enumerate(unknown) for c in unknown[k + 1:]]
            q = flat.T @ jnp.concatenate(pairs, axis=1) / n
            total = total + jnp.sum(data["mask"] * (q - data["target"]) ** 2)
        # The KL term always runs (weight 0 for the plain objective): one compile serves both objectives.
        kl = 0.0
        for j in unknown:
            lo, hi = int(offsets[j]), int(offsets[j + 1])
            log_p = jax.nn.log_softmax(logits[:, lo:hi], axis=-1)
            kl = kl + jnp.sum(jnp.exp(log_p) * (log_p - data["log_prior"][:, lo:hi]))
        return total + data["kl_weight"] * kl

    @functools.partial(jax.jit, static_argnames=("domain", "unknown"))
    def run(logits, data, steps, learning_rate, domain, unknown):
        optimizer = optax.adam(learning_rate)
        grad = jax.grad(loss)

        def body(_, state):
            params, opt_state = state
            updates, opt_state = optimizer.update(grad(params, data, domain, unknown), opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        params, _ = jax.lax.fori_loop(0, steps, body, (logits, optimizer.init(logits)))
        return relaxed(params, data, domain, unknown), loss(params, data, domain, unknown)

    return run, jax.jit(loss, static_argnames=("domain", "unknown"))


_RUNNER = None


def _runner():
    global _RUNNER
    if _RUNNER is None:
        _RUNNER = _make_runner()
    return _RUNNER


def _data(prepared: Prepared, kl_weight: float) -> dict:
    return {"known_flat": prepared.known_flat, "log_prior": prepared.log_prior, "kl_weight": np.float32(kl_weight),
            "gram": prepared.gram, "gram_target": prepared.gram_target,
            "gram_constant": np.float32(prepared.gram_constant), "target": prepared.target, "mask": prepared.mask}


class RAPAttack:
    """RAP M-AI: Adam on softmax logits of the unknown columns against the released marginals."""

    name = "rap"
    #: stages.protocols: it reconstructs a table's unknown columns from noisy marginals of that table.
    needs_prior = ("table",)
    needs_mechanism = ("n_marginals",)
    #: One joint guess per record (its columns are the target columns, not several guesses).
    k = 1
    fits_mechanisms = "noisy marginals of a table (mechanism=noisy_marginals)"

    def __init__(self, steps: int = 2000, learning_rate: float = 0.1, objective: str = "noise_aware",
                 decode: str = "joint", compare: Sequence[str] = (), posterior: Mapping | None = None) -> None:
        self.steps = _validate.integer("steps", steps, minimum=0)
        self.learning_rate = _validate.positive("learning_rate", learning_rate)
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {list(OBJECTIVES)}, got {objective!r}.")
        self.objective = objective
        if decode not in DECODES:
            raise ValueError(f"decode must be one of {list(DECODES)}, got {decode!r}.")
        self.decode_mode = decode
        # Other attacks scored on the same release (the game's variants): RAP's other objective, or the Gibbs
        # Bayes-posterior reference attack (stages.attack.posterior; its settings in `posterior`).
        self.compare = [str(c) for c in (compare or ())]
        allowed = [o for o in OBJECTIVES if o != objective] + ["posterior"]
        bad = [c for c in self.compare if c not in allowed]
        if bad or len(set(self.compare)) != len(self.compare):
            raise ValueError(f"compare must list distinct attacks among {allowed} (the objective itself is the "
                             f"attack), got {list(compare)}.")
        self.posterior_settings = {str(k): v for k, v in dict(posterior or {}).items()}
        self._variants = {}
        for name in self.compare:
            if name == "posterior":
                from stages.attack.posterior import PosteriorAttack

                self._variants[name] = PosteriorAttack(**self.posterior_settings, decode=decode)
            else:
                self._variants[name] = RAPAttack(steps, learning_rate, name, decode)

    @property
    def label(self) -> str:
        """The name its successes go under beside its variants: its objective."""
        return self.objective

    def variants(self) -> dict:
        """{label: attack} of the attacks in `compare`, scored by the game on the same release."""
        return dict(self._variants)

    def prepare(self, release, law, mechanism=None) -> np.ndarray:
        """The optimised relaxed table (n, d, max domain) of the trial: metric-free, so the game caches it."""
        relaxed, _ = self.relaxed(release, law.known, law.known_values, law.domain, law.marginals)
        return relaxed

    def prepare_key(self) -> dict:
        """What prepare depends on besides the release and the law (decode only reads its result)."""
        return {k: v for k, v in self.params().items() if k not in ("decode", "compare")}

    def decide(self, relaxed, law, metric) -> np.ndarray:
        """The guesses (n, len(targets)) of the relaxed table for the law's targets (see `decode`)."""
        return self.decode(relaxed, law.targets, metric, network=law.network, known=law.known,
                           known_values=law.known_values, prior_marginals=law.marginals)

    def relaxed(self, release, known: Sequence[int], known_values, domain: Sequence[int],
                prior_marginals: Mapping[int, np.ndarray]) -> tuple[np.ndarray, float]:
        """The optimised relaxed table P (n, d, max domain) and its final loss."""
        prepared = prepare(release, known, known_values, domain, prior_marginals)
        run, _ = _runner()
        kl_weight = prepared.kl_weight if self.objective == "noise_aware" else 0.0
        flat, final = run(prepared.log_prior, _data(prepared, kl_weight), self.steps, np.float32(self.learning_rate),
                          domain=prepared.domain, unknown=prepared.unknown_columns)
        flat = np.asarray(flat, dtype=float)
        # Known columns come back exactly as given: they were never parameters.
        known_cols = [int(k) for k in known]
        for j in known_cols:
            lo, hi = prepared.offsets[j], prepared.offsets[j + 1]
            flat[:, lo:hi] = prepared.known_flat[:, lo:hi]
        return prepared.per_column(flat), float(final)

    def reconstruct(self, release, known: Sequence[int], known_values, domain: Sequence[int],
                    prior_marginals: Mapping[int, np.ndarray], targets: Sequence[int], metric,
                    network=None) -> np.ndarray:
        """Guesses z (n, len(targets)) from the optimised relaxed table (see `decode`)."""
        if set(targets) & set(int(k) for k in known):
            raise ValueError("targets must not include a known column.")
        p, _ = self.relaxed(release, known, known_values, domain, prior_marginals)
        return self.decode(p, targets, metric, network=network, known=known, known_values=known_values,
                           prior_marginals=prior_marginals)

    def decode(self, relaxed: np.ndarray, targets: Sequence[int], metric, *, network=None,
               known: Sequence[int] = (), known_values=None,
               prior_marginals: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
        """Guesses z (n, len(targets)) from a relaxed table by `self.decode_mode` (stages.attack.decode)."""
        return decode_relaxed(relaxed, targets, metric, self.decode_mode, network=network, known=known,
                              known_values=known_values, prior_marginals=prior_marginals)

    def guess(self, a, law, mechanism, metric) -> np.ndarray:
        """Guesses of the trial's law's target columns from the release a (stages.protocols.Attack)."""
        return self.decide(self.prepare(a, law, mechanism), law, metric)

    def params(self) -> dict:
        return {"attack": self.name, "steps": self.steps, "learning_rate": self.learning_rate,
                "objective": self.objective, "decode": self.decode_mode, "compare": list(self.compare)}
