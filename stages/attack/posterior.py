"""A reference attack: the Bayes posterior of one unknown column given the noisy marginals and the BayNet prior.

Issue 16 item 4: how much does the release say? For a single target column t with every other column
known (the single-column setting), the records' target values z = (z_1 .. z_n) have the posterior

    Pr[z | release] ∝ Π_i prior_i(z_i) · Π_V Π_cells exp(-(Y_V[cell] - Q_V(z)[cell])^2 / (2 s^2)),

prior_i the record's BayNet conditional given its known columns (`network.conditional_marginals`), Y_V
the released noisy 3-way marginals and s the per-cell noise scale. Every released table touching t is
(a, b, t) with a, b known, so record i adds 1/N to the cell (x_ia, x_ib, z_i) of each. Writing
S_i(v) = Σ_{(a,b)} Y_(a,b,t)[x_ia, x_ib, v] and G_ij = the number of known pairs (a, b) on which records
i and j agree (the Gram matrix of stages.attack.rap.prepare), the Gibbs conditional of one record is

    log Pr[z_i = v | z_-i, release] = log prior_i(v) + (S_i(v) - Σ_{j≠i} G_ij [z_j = v] / N) / (N s^2) + const

exactly (the squared terms in 1/N^2 do not depend on v). The sampler keeps M = G · onehot(z) (n, m), so a
single-site update costs O(n). Systematic scans over the records, `burn_in` sweeps discarded, then the
Rao-Blackwellised estimate: the average over `sweeps` sweeps of each record's full conditional. The guess is
the argmax of that estimated posterior marginal (`decode` as RAP's on the relaxed table: with one target and
every other column known both decodes are that argmax). Seeded rng: deterministic.

epsilon = inf (s = 0): the posterior is the prior restricted to the assignments whose marginals equal the
release exactly, which single-site moves cannot explore (every move changes a count). The attack then uses the
surrogate noise scale s = `exact_scale` / N (default 1: one record's weight per cell), i.e. it reads the exact
marginals as a soft constraint; at that scale the marginals dominate the prior. This is an approximation, and
it is said so in docs/pages/tabular.md; the measurement reports finite epsilon.

Scope: one unknown column (the target), every other column known; anything else is refused (the multi-column
figure would need nuisance columns sampled too).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from stages.attack.decode import DECODES, decode_relaxed
from stages.bound import _validate

__all__ = ["PosteriorAttack", "gibbs_marginals", "exact_posterior_marginals", "single_column_terms"]

_PRIOR_FLOOR = 1e-12


def single_column_terms(release, known: Sequence[int], known_values: np.ndarray, domain: Sequence[int],
                        target: int) -> tuple[np.ndarray, np.ndarray]:
    """S (n, m): Σ over the released (a, b, target) tables of Y[x_ia, x_ib, :]; G (n, n) the shared-pair counts."""
    domain = [int(m) for m in domain]
    known = [int(k) for k in known]
    known_values = np.asarray(known_values, dtype=np.int64).reshape(-1, len(known))
    value = {j: known_values[:, pos] for pos, j in enumerate(known)}
    n, m = known_values.shape[0], domain[target]
    S = np.zeros((n, m))
    G = np.zeros((n, n))
    pairs = set()
    for subset, table in zip(release.subsets, release.tables):
        subset = [int(c) for c in subset]
        if len(subset) != 3:
            raise ValueError(f"attack=posterior reads 3-way marginals, got a {len(subset)}-way one; set mechanism.way=3.")
        if target not in subset:
            continue
        a, b = sorted(c for c in subset if c != target)
        if a not in value or b not in value:
            raise ValueError("attack=posterior handles one unknown column (the target), every other column known; "
                             f"the release has a marginal over {subset} with another unknown column.")
        block = np.transpose(np.asarray(table, dtype=float), [subset.index(a), subset.index(b), subset.index(target)])
        S += block[value[a], value[b]]
        if (a, b) not in pairs:
            pairs.add((a, b))
            code = value[a] * domain[b] + value[b]
            G += code[:, None] == code[None, :]
    if not pairs:
        raise ValueError(f"the release holds no marginal over the target column {target}.")
    return S, G


def gibbs_marginals(log_prior: np.ndarray, S: np.ndarray, G: np.ndarray, n_records: int, noise_scale: float,
                    sweeps: int, burn_in: int, rng: np.random.Generator) -> np.ndarray:
    """Rao-Blackwellised Gibbs estimate of Pr[z_i = v | release] (n, m), see the module docstring."""
    n, m = log_prior.shape
    scale = 1.0 / (n_records * noise_scale ** 2)
    z = np.argmax(log_prior, axis=1)  # start at the prior-only guess
    onehot = np.zeros((n, m))
    onehot[np.arange(n), z] = 1.0
    M = G @ onehot  # M[i, v] = Σ_j G_ij [z_j = v] (self included)
    diag = np.diag(G).copy()
    base = log_prior + scale * S  # the part of the conditional that does not move
    weight = scale / n_records
    total = np.zeros((n, m))
    for sweep in range(burn_in + sweeps):
        u = rng.random(n)
        keep = sweep >= burn_in
        for i in range(n):
            zi = z[i]
            others = M[i].copy()
            others[zi] -= diag[i]
            logits = base[i] - weight * others
            p = np.exp(logits - logits.max())
            p /= p.sum()
            if keep:
                total[i] += p
            new = min(int(np.searchsorted(np.cumsum(p), u[i], side="right")), m - 1)
            if new != zi:
                M[:, zi] -= G[:, i]
                M[:, new] += G[:, i]
                z[i] = new
    return total / max(sweeps, 1)


def exact_posterior_marginals(log_prior: np.ndarray, release, known, known_values, domain, target: int,
                              noise_scale: float | None = None) -> np.ndarray:
    """Pr[z_i = v | release] (n, m) by enumerating every assignment (m^n of them: tiny tables only).

    Independent of the sampler: the likelihood is computed from the full marginal tables (marginal_table).
    """
    import itertools

    from stages.mechanism.noisy_marginals import marginal_table

    n, m = log_prior.shape
    s = release.noise_scale if noise_scale is None else noise_scale
    known = [int(k) for k in known]
    X = np.zeros((n, len(domain)), dtype=np.int64)
    X[:, known] = np.asarray(known_values, dtype=np.int64).reshape(n, len(known))
    logs, configs = [], []
    for z in itertools.product(range(m), repeat=n):
        X[:, target] = z
        sse = sum(float(np.sum((marginal_table(X, subset, domain) - np.asarray(y)) ** 2))
                  for subset, y in zip(release.subsets, release.tables))
        logs.append(float(log_prior[np.arange(n), list(z)].sum()) - sse / (2 * s ** 2))
        configs.append(z)
    logs = np.asarray(logs)
    w = np.exp(logs - logs.max())
    w /= w.sum()
    configs = np.asarray(configs)
    return np.stack([np.bincount(configs[:, i], weights=w, minlength=m) for i in range(n)])


class PosteriorAttack:
    """Gibbs sampling of the target column's Bayes posterior given the noisy marginals and the BayNet prior."""

    name = "posterior"
    label = "posterior"
    needs_prior = ("table",)
    needs_mechanism = ("n_marginals",)
    #: One joint guess per record (its columns are the target columns, not several guesses).
    k = 1
    fits_mechanisms = "noisy marginals of a table (mechanism=noisy_marginals)"

    def __init__(self, sweeps: int = 200, burn_in: int = 50, seed: int = 0, exact_scale: float = 1.0,
                 decode: str = "joint") -> None:
        self.sweeps = _validate.integer("sweeps", sweeps, minimum=1)
        self.burn_in = _validate.integer("burn_in", burn_in, minimum=0)
        self.seed = _validate.integer("seed", seed, minimum=0)
        self.exact_scale = _validate.positive("exact_scale", exact_scale)
        if decode not in DECODES:
            raise ValueError(f"decode must be one of {list(DECODES)}, got {decode!r}.")
        self.decode_mode = decode

    def posterior(self, release, known: Sequence[int], known_values, domain: Sequence[int],
                  prior_marginals: Mapping[int, np.ndarray]) -> tuple[int, np.ndarray]:
        """(target column, estimated posterior marginals (n, domain[target]))."""
        domain = [int(m) for m in domain]
        known = [int(k) for k in known]
        unknown = [j for j in range(len(domain)) if j not in known]
        if len(unknown) != 1:
            raise ValueError("attack=posterior handles one unknown column (a single target, every other column "
                             f"known), got {len(unknown)} unknown columns {unknown}.")
        (target,) = unknown
        n = np.asarray(known_values).reshape(-1, len(known)).shape[0]
        prior = np.asarray(prior_marginals[target], dtype=float).reshape(n, domain[target])
        log_prior = np.log(np.maximum(prior, _PRIOR_FLOOR))
        S, G = single_column_terms(release, known, known_values, domain, target)
        s = float(release.noise_scale)
        if s <= 0:  # eps = inf: exact marginals read as a soft constraint (module docstring)
            s = self.exact_scale / release.n_records
        rng = np.random.default_rng(self.seed)
        return target, gibbs_marginals(log_prior, S, G, int(release.n_records), s, self.sweeps, self.burn_in, rng)

    def relaxed(self, release, known: Sequence[int], known_values, domain: Sequence[int],
                prior_marginals: Mapping[int, np.ndarray]) -> tuple[np.ndarray, float]:
        """As RAPAttack.relaxed: a table (n, d, max domain), known columns one-hot, the target its posterior."""
        target, post = self.posterior(release, known, known_values, domain, prior_marginals)
        known = [int(k) for k in known]
        known_values = np.asarray(known_values, dtype=np.int64).reshape(-1, len(known))
        n = known_values.shape[0]
        out = np.zeros((n, len(domain), max(int(m) for m in domain)))
        for pos, j in enumerate(known):
            out[np.arange(n), j, known_values[:, pos]] = 1.0
        out[:, target, :post.shape[1]] = post
        return out, float("nan")

    def decode(self, relaxed: np.ndarray, targets: Sequence[int], metric, **kwargs) -> np.ndarray:
        """RAP's decode of the relaxed table (the argmax of the posterior marginal for one target)."""
        return decode_relaxed(relaxed, targets, metric, self.decode_mode, **kwargs)

    def reconstruct(self, release, known, known_values, domain, prior_marginals, targets, metric,
                    network=None) -> np.ndarray:
        p, _ = self.relaxed(release, known, known_values, domain, prior_marginals)
        return self.decode(p, targets, metric, network=network, known=known, known_values=known_values,
                           prior_marginals=prior_marginals)

    def prepare(self, release, law, mechanism=None) -> np.ndarray:
        """The relaxed table of the trial (the target's estimated posterior): metric-free, cached by the game."""
        relaxed, _ = self.relaxed(release, law.known, law.known_values, law.domain, law.marginals)
        return relaxed

    def prepare_key(self) -> dict:
        return {k: v for k, v in self.params().items() if k != "decode"}

    def decide(self, relaxed, law, metric) -> np.ndarray:
        return self.decode(relaxed, law.targets, metric, network=law.network, known=law.known,
                           known_values=law.known_values, prior_marginals=law.marginals)

    def guess(self, a, law, mechanism, metric) -> np.ndarray:
        """Guesses of the trial's law's target column from the release a (stages.protocols.Attack)."""
        return self.decide(self.prepare(a, law, mechanism), law, metric)

    def params(self) -> dict:
        return {"attack": self.name, "sweeps": self.sweeps, "burn_in": self.burn_in, "seed": self.seed,
                "exact_scale": self.exact_scale, "decode": self.decode_mode}
