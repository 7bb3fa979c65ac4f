"""BayNet prior: a Bayesian network fitted to a raw table, and each record's exact conditional prior.

The paper's tabular case study (Appendix "Bounding Tabular Data Reconstruction from Noisy
Marginals") fits a Bayesian network to a raw table and samples the n = 100 "original" records from
it, so the prior of every record is explicit: given its `known` columns, record i's `target`
columns follow the network's exact conditional D_i = Pr[targets | known = x_i^known], summing out
every column that is neither known nor target. Records differ in their known columns, so the priors
are not uniform and not identical across records: that is the point of the case study.

* Structure: the PrivBayes-style greedy degree-k network (what recon-synth uses through
  DataSynthesizer, without the privacy noise): start from a root column (seeded), then repeatedly
  add the column and parent set (k columns already in the network) of highest mutual information.
  Its insertion order is the "visit order" of the paper's multi-column figure. Or pgmpy's
  `HillClimbSearch` (BIC, in-degree <= k), visited in a topological order.
* Parameters: maximum likelihood with pgmpy (`DiscreteBayesianNetwork`, explicit `state_names`);
  a parent configuration the table never shows gets a uniform conditional.
* Inference: batched variable elimination in numpy over all records at once (an einsum per
  eliminated column). Per-column conditionals sum out everything else; the joint MAP of the
  targets is max-product after summing out the other unknown columns (not the product of the
  per-column maxima). pgmpy's own `map_query` / `query(joint=True)` build the full joint over the
  query columns, which for 13 ACS targets does not fit in memory.
"""
from __future__ import annotations

import inspect
import json
import math
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from stages.bound import _validate
from stages.metric import Exact, Within
from stages.prior.tabular import Table, column_indices, load_table

__all__ = [
    "BayesNet", "BayNetPrior", "TrialPrior", "greedy_structure", "hill_climb_structure", "fit_network",
    "STRUCTURES", "PER_TRIAL_MESSAGE", "FIT_STAGE_VERSION", "network_key",
]

STRUCTURES = ("greedy", "hill_climb")
#: Bump when the fit changes, so old cached networks are not reused.
FIT_STAGE_VERSION = 1
PER_TRIAL_MESSAGE = (
    "prior=baynet has no law before the records are drawn (each record's prior is conditional on its known "
    "columns): the game takes it per trial from prior.for_trial(X)"
)


# ---------------------------------------------------------------------------------------------
# The network
# ---------------------------------------------------------------------------------------------
@dataclass
class BayesNet:
    """A discrete Bayesian network: cpts[j] has shape (*domain of parents[j], domain[j]), rows sum to 1."""

    columns: tuple[str, ...]
    domain: tuple[int, ...]
    parents: tuple[tuple[int, ...], ...]
    order: tuple[int, ...]  # visit order: every column after its parents
    cpts: list[np.ndarray] = field(repr=False)

    @property
    def n_columns(self) -> int:
        return len(self.columns)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n records drawn from the network (forward sampling in visit order): int array (n, d)."""
        n = _validate.integer("n", n, minimum=1)
        x = np.zeros((n, self.n_columns), dtype=np.int64)
        for j in self.order:
            probs = self.cpts[j][tuple(x[:, p] for p in self.parents[j])] if self.parents[j] else np.broadcast_to(
                self.cpts[j], (n, self.domain[j]))
            u = rng.random(n)
            x[:, j] = np.minimum((np.cumsum(probs, axis=1) < u[:, None]).sum(axis=1), self.domain[j] - 1)
        return x

    def log_probability(self, x) -> np.ndarray:
        """log Pr[record] under the network for each row of x (n, d)."""
        x = np.asarray(x, dtype=np.int64)
        out = np.zeros(x.shape[0])
        with np.errstate(divide="ignore"):
            for j in range(self.n_columns):
                out += np.log(self.cpts[j][tuple(x[:, p] for p in self.parents[j]) + (x[:, j],)])
        return out

    # -- the cached artifact --------------------------------------------------------------
    def save(self, directory) -> None:
        """Write network.json (columns, domain, parents, order) and cpt_<j>.npy into directory."""
        directory = Path(directory)
        meta = {"columns": list(self.columns), "domain": list(self.domain),
                "parents": [list(p) for p in self.parents], "order": list(self.order)}
        (directory / "network.json").write_text(json.dumps(meta) + "\n")
        for j, cpt in enumerate(self.cpts):
            np.save(directory / f"cpt_{j}.npy", cpt, allow_pickle=False)

    @classmethod
    def load(cls, directory) -> "BayesNet":
        directory = Path(directory)
        meta = json.loads((directory / "network.json").read_text())
        cpts = [np.load(directory / f"cpt_{j}.npy", allow_pickle=False) for j in range(len(meta["columns"]))]
        return cls(tuple(meta["columns"]), tuple(meta["domain"]), tuple(tuple(p) for p in meta["parents"]),
                   tuple(meta["order"]), cpts)

    # -- exact inference --------------------------------------------------------------------
    def _factors(self, known: Sequence[int], evidence: np.ndarray,
                 soft_evidence: Mapping[int, np.ndarray] | None = None) -> list[tuple[tuple[int, ...], np.ndarray]]:
        """The CPTs reduced by each record's known values: (free columns, array (n or 1, *their domains)).

        soft_evidence {j: array (n, domain[j]) >= 0}: one more factor per unknown column j, a per-record
        likelihood of its values (virtual evidence), multiplied into the network.
        """
        known_pos = {v: i for i, v in enumerate(known)}
        factors = []
        for j in range(self.n_columns):
            scope = (*self.parents[j], j)
            fixed = [v for v in scope if v in known_pos]
            free = tuple(v for v in scope if v not in known_pos)
            arr = np.transpose(self.cpts[j], [scope.index(v) for v in (*fixed, *free)])
            arr = arr[tuple(evidence[:, known_pos[v]] for v in fixed)] if fixed else arr[None]
            factors.append((free, arr))
        for j, likelihood in (soft_evidence or {}).items():
            j = int(j)
            if j in known_pos or not 0 <= j < self.n_columns:
                raise ValueError(f"soft_evidence must be on unknown columns, got column {j}.")
            arr = np.asarray(likelihood, dtype=float)
            if arr.shape != (evidence.shape[0], self.domain[j]) or not np.all(arr >= 0):
                raise ValueError(f"soft_evidence[{j}] must be a non-negative array of shape "
                                 f"({evidence.shape[0]}, {self.domain[j]}), got shape {arr.shape}.")
            factors.append(((j,), arr))
        return factors

    def _eliminate(self, factors, variables: Sequence[int], mode: str, trace: list | None = None):
        """Sum ("sum") or maximise ("max") the variables out of the factor list, cheapest first.

        With mode "max" and a trace list, every (variable, scope, product table) is appended so the
        maximising values can be read back in reverse order.
        """
        factors = list(factors)
        remaining = set(variables)
        while remaining:
            def cost(v):
                scope = set().union(*(s for s, _ in factors if v in s))
                return math.prod(self.domain[u] for u in scope)
            v = min(sorted(remaining), key=cost)
            remaining.discard(v)
            involved = [f for f in factors if v in f[0]]
            factors = [f for f in factors if v not in f[0]]
            scope = tuple(sorted(set().union(*(s for s, _ in involved))))
            keep = tuple(u for u in scope if u != v) if mode == "sum" else scope
            product = _einsum_product(involved, keep)
            if mode == "max":
                axis = 1 + keep.index(v)
                if trace is not None:
                    trace.append((v, keep, product))
                product = product.max(axis=axis)
                keep = tuple(u for u in keep if u != v)
            factors.append((keep, product))
        return factors

    def evidence_probability(self, known: Sequence[int], evidence: np.ndarray,
                             soft_evidence: Mapping[int, np.ndarray] | None = None) -> np.ndarray:
        """Pr[known columns = each record's values] (times the soft evidence, summed over the rest): array (n,)."""
        unknown = [j for j in range(self.n_columns) if j not in set(known)]
        factors = self._eliminate(self._factors(known, evidence, soft_evidence), unknown, "sum")
        return _scalar_product(factors, evidence.shape[0])

    def conditional_marginals(self, known: Sequence[int], evidence, columns: Sequence[int]) -> dict[int, np.ndarray]:
        """Pr[column = v | known = record's values] for each requested unknown column: {j: array (n, domain[j])}."""
        evidence = _as_evidence(evidence, known)
        base = self._factors(known, evidence)
        unknown = [j for j in range(self.n_columns) if j not in set(known)]
        out = {}
        for q in columns:
            factors = self._eliminate(base, [u for u in unknown if u != q], "sum")
            over_q = [f for f in factors if f[0] == (q,)]
            scalars = [f for f in factors if f[0] == ()]
            table = _einsum_product(over_q + scalars, (q,))
            table = np.broadcast_to(table, (evidence.shape[0], self.domain[q]))
            out[q] = table / table.sum(axis=1, keepdims=True)
        return out

    def joint_map(self, known: Sequence[int], evidence, targets: Sequence[int],
                  soft_evidence: Mapping[int, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The most probable joint value of the targets given each record's known values, and its probability.

        Max-product variable elimination after summing out the columns that are neither known nor
        target (marginal MAP, exact). Returns (z (n, len(targets)) int, Pr[targets = z | known] (n,)).
        With soft_evidence {j: L_j (n, domain[j])} the distribution is the network's conditional times
        Pi_j L_ij(x_j), renormalised (a posterior under per-column likelihoods), and the probability
        returned is under that distribution.
        """
        evidence = _as_evidence(evidence, known)
        n = evidence.shape[0]
        nuisance = [j for j in range(self.n_columns) if j not in set(known) and j not in set(targets)]
        factors = self._eliminate(self._factors(known, evidence, soft_evidence), nuisance, "sum")
        trace: list = []
        factors = self._eliminate(factors, targets, "max", trace)
        joint = _scalar_product(factors, n)
        value = {}
        rows = np.arange(n)
        for v, scope, product in reversed(trace):
            table = np.broadcast_to(product, (n, *product.shape[1:]))
            index = tuple(rows if a == 0 else (slice(None) if scope[a - 1] == v else value[scope[a - 1]])
                          for a in range(len(scope) + 1))
            value[v] = np.argmax(table[index], axis=1)
        z = np.stack([value[t] for t in targets], axis=1).astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = joint / self.evidence_probability(known, evidence, soft_evidence)
        return z, np.clip(np.nan_to_num(p), 0.0, 1.0)


def _as_evidence(evidence, known) -> np.ndarray:
    """Known values as an int array (n, len(known)), one row per record."""
    arr = np.asarray(evidence, dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != len(known):
        raise ValueError(f"evidence must have shape (n_records, {len(known)}) (one value per known column), got {arr.shape}.")
    return arr


def _einsum_product(factors, keep: tuple[int, ...]) -> np.ndarray:
    """Product of batched factors, summed down to the columns in keep: array (n or 1, *domains of keep)."""
    letters = {}
    def subscript(scope):
        return "..." + "".join(letters.setdefault(v, chr(ord("a") + len(letters))) for v in scope)
    for scope, _ in factors:
        subscript(scope)
    spec = ",".join(subscript(s) for s, _ in factors) + "->" + subscript(keep)
    return np.einsum(spec, *(a for _, a in factors), optimize=len(factors) > 2)


def _scalar_product(factors, n: int) -> np.ndarray:
    out = np.ones(n)
    for scope, arr in factors:
        assert scope == (), "every variable must be eliminated"
        out = out * arr.reshape(-1)
    return out


# ---------------------------------------------------------------------------------------------
# Fitting: structure, then parameters
# ---------------------------------------------------------------------------------------------
def _entropy_table(values: np.ndarray, domain: Sequence[int]):
    """H(columns) of the empirical joint, memoised by column set."""
    memo: dict[frozenset, float] = {}
    n = values.shape[0]

    def entropy(cols) -> float:
        key = frozenset(cols)
        if key not in memo:
            code = np.zeros(n, dtype=np.int64)
            for c in sorted(key):
                code = code * domain[c] + values[:, c]
            counts = np.bincount(code)
            p = counts[counts > 0] / n
            memo[key] = float(-(p * np.log(p)).sum())
        return memo[key]

    return entropy


def greedy_structure(table: Table, degree: int = 2, root: int | None = None, seed: int = 0):
    """PrivBayes-style greedy network: (parents per column, insertion order).

    The root is `root` (a column index) or drawn from `seed`. Each step adds the column x outside
    the network and the set of min(degree, |network|) network columns Pi maximising the empirical
    mutual information I(x; Pi) = H(x) + H(Pi) - H(x, Pi) (ties: the first in column order).
    """
    d = table.n_columns
    degree = _validate.integer("degree", degree, minimum=0)
    if root is None:
        root = int(np.random.default_rng(_validate.integer("seed", seed, minimum=0)).integers(d))
    entropy = _entropy_table(table.values, table.domain)
    order, parents = [root], {root: ()}
    while len(order) < d:
        best = None
        size = min(degree, len(order))
        for x in range(d):
            if x in parents:
                continue
            for pa in combinations(sorted(order), size):
                mi = entropy([x]) + entropy(pa) - entropy((x, *pa)) if pa else 0.0
                if best is None or mi > best[0] + 1e-12:
                    best = (mi, x, pa)
        _, x, pa = best
        order.append(x)
        parents[x] = pa
    return tuple(parents[j] for j in range(d)), tuple(order)


def hill_climb_structure(table: Table, degree: int = 2, max_iter: int = 1000):
    """pgmpy HillClimbSearch (BIC, in-degree <= degree): (parents per column, a topological order)."""
    import networkx as nx
    import pandas as pd
    from pgmpy.estimators import HillClimbSearch

    # Categorical columns, so pgmpy scores them as discrete (its integer columns count as continuous).
    df = pd.DataFrame({c: pd.Categorical(table.values[:, j], categories=range(table.domain[j]))
                       for j, c in enumerate(table.columns)})
    search = HillClimbSearch(df)
    options = {"scoring_method": "bic-d", "max_indegree": degree, "max_iter": max_iter, "show_progress": False}
    if "return_type" in inspect.signature(search.estimate).parameters:  # newer pgmpy; 1.1.2 always returns a DAG
        options["return_type"] = "dag"
    dag = search.estimate(**options)
    index = {c: j for j, c in enumerate(table.columns)}
    graph = nx.DiGraph()
    graph.add_nodes_from(range(table.n_columns))
    graph.add_edges_from((index[a], index[b]) for a, b in dag.edges())
    order = tuple(nx.lexicographical_topological_sort(graph))
    parents = tuple(tuple(sorted(graph.predecessors(j))) for j in range(table.n_columns))
    return parents, order


def fit_network(table: Table, structure: str = "greedy", degree: int = 2, root: str | None = None,
                seed: int = 0) -> BayesNet:
    """Learn the structure, then maximum-likelihood CPTs with pgmpy (explicit state names 0..m-1)."""
    import pandas as pd
    from pgmpy.estimators import MaximumLikelihoodEstimator
    from pgmpy.models import DiscreteBayesianNetwork

    if structure not in STRUCTURES:
        raise ValueError(f"structure must be one of {list(STRUCTURES)}, got {structure!r}.")
    root_index = None if root is None else column_indices(table.columns, [root], "root")[0]
    if structure == "greedy":
        parents, order = greedy_structure(table, degree, root_index, seed)
    else:
        parents, order = hill_climb_structure(table, degree)
    names = table.columns
    model = DiscreteBayesianNetwork([(names[p], names[j]) for j in range(len(names)) for p in parents[j]])
    model.add_nodes_from(names)
    df = pd.DataFrame(table.values, columns=list(names))
    state_names = {c: list(range(m)) for c, m in zip(names, table.domain)}
    estimator = MaximumLikelihoodEstimator(model, df, state_names=state_names)
    cpts = []
    for j, column in enumerate(names):
        cpd = estimator.estimate_cpd(column)
        evidence = [names.index(v) for v in cpd.variables[1:]]
        if list(cpd.state_names[column]) != state_names[column]:
            raise RuntimeError(f"pgmpy reordered the states of {column!r}")  # pragma: no cover
        values = np.asarray(cpd.get_values(), dtype=float)  # (m_j, prod of evidence domains)
        table_j = values.reshape(table.domain[j], *(table.domain[e] for e in evidence))
        table_j = np.moveaxis(table_j, 0, -1)  # (*evidence domains, m_j)
        table_j = np.transpose(table_j, [evidence.index(p) for p in parents[j]] + [len(evidence)])
        sums = table_j.sum(axis=-1, keepdims=True)
        unseen = ~np.isfinite(sums) | (sums <= 0)
        table_j = np.where(unseen, 1.0 / table.domain[j], np.nan_to_num(table_j) / np.where(unseen, 1.0, sums))
        cpts.append(np.ascontiguousarray(table_j))
    return BayesNet(names, table.domain, parents, order, cpts)


# ---------------------------------------------------------------------------------------------
# The prior box
# ---------------------------------------------------------------------------------------------
class TrialPrior:
    """One trial's law (stages.protocols.TrialLaw): each record's prior is the network's conditional of its
    unknown columns given its known ones, so it depends on the records the trial drew.

    marginals[j]: Pr[column j = v | known] (n, domain[j]) for every unknown column j; guess: the a-priori
    guess z* (n, len(targets)) for ``metric``; prior_success: p_i = Pr[l_i(X_i, z*) = 1] (n,). For one target
    column the law also has ``probabilities`` (its conditional, (n, domain)), so the bound boxes see the
    per-record law as they see a fixed prior's (its collision probability included).
    """

    def __init__(self, prior: "BayNetPrior", X, metric=None) -> None:
        x = np.asarray(X, dtype=np.int64)
        self.network, self.columns = prior.network, prior.columns
        self.targets, self.known, self.unknown = list(prior.targets), list(prior.known), list(prior.unknown)
        self.known_values = x[:, self.known]
        self.n_targets = int(x.shape[0])
        self.domain = tuple(int(m) for m in self.network.domain)
        # the widest target's domain: what the bound's theorem choice probes a metric's window on
        self.domain_size = max(self.domain[t] for t in self.targets)
        self.marginals = self.network.conditional_marginals(self.known, self.known_values, self.unknown)
        if len(self.targets) == 1:
            self.probabilities = self.marginals[self.targets[0]]
        self._guesses: dict = {}
        self._map_success = None
        metric = metric if metric is not None else Exact()
        self.guess = self.a_priori_guess(metric)
        self.prior_success = self.success_probability(self.guess, metric)

    def _check(self, metric, k: int) -> None:
        if isinstance(metric, Within) and len(self.targets) > 1:
            raise ValueError(f"metric=within scores one target column, got targets "
                             f"{[self.columns[t] for t in self.targets]}; use metric=exact for several columns.")
        if int(k) != 1 and len(self.targets) > 1:
            raise ValueError(f"k must be 1 for several target columns (one joint guess per record), got {k}.")

    def a_priori_guess(self, metric, k: int = 1) -> np.ndarray:
        """z*: the joint MAP of the targets given the known columns (one target: the metric's best k guesses)."""
        self._check(metric, k)
        key = (repr(metric.params()) if hasattr(metric, "params") else repr(metric), int(k))
        if key not in self._guesses:
            if len(self.targets) == 1:
                self._guesses[key] = np.asarray(metric.best_guess(self.probabilities, int(k)))
            else:
                self._guesses[key], self._map_success = self.network.joint_map(self.known, self.known_values,
                                                                               self.targets)
        return self._guesses[key]

    def success_probability(self, z, metric) -> np.ndarray:
        """p_i = Pr[l_i(X_i, z_i) = 1 | record i's known columns] for guesses z (n, k) or (n, len(targets))."""
        if len(self.targets) == 1:
            return np.clip(metric.success_probability(self.probabilities, z), 0.0, 1.0)
        self._check(metric, 1)
        z = np.asarray(z, dtype=np.int64).reshape(self.n_targets, len(self.targets))
        if self._map_success is not None and np.array_equal(z, self.a_priori_guess(metric)):
            return self._map_success  # the joint MAP's own probability, as joint_map computed it
        evidence = np.concatenate([self.known_values, z], axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = (self.network.evidence_probability(self.known + self.targets, evidence)
                 / self.network.evidence_probability(self.known, self.known_values))
        return np.clip(np.nan_to_num(p), 0.0, 1.0)

    def score(self, X, z, metric) -> np.ndarray:
        return score_records(self.targets, X, z, metric)

    def key(self) -> dict:
        """What the law depends on besides the records: the network and the known columns."""
        return {"network": network_key(self.network), "known": self.known}


def score_records(targets: Sequence[int], X, z, metric) -> np.ndarray:
    """l_i: 1 where every target column of record i is hit by z_i (exact, or within for one column; one target
    may have k guesses, z of shape (n, k))."""
    x = np.asarray(X, dtype=np.int64)[:, list(targets)]
    z = np.asarray(z, dtype=np.int64)
    if x.shape[1] == 1:
        return np.asarray(metric.score(x[:, 0], z if z.ndim > 1 else z[:, None]), dtype=np.int64)
    z = z.reshape(x.shape)
    hits = np.stack([metric.score(x[:, c], z[:, c]) for c in range(x.shape[1])], axis=1)
    return hits.min(axis=1).astype(np.int64)


def network_key(network: BayesNet) -> str:
    """SHA-256 of a fitted network (structure, domain and every conditional table)."""
    import hashlib

    h = hashlib.sha256(repr((network.columns, network.domain, network.parents, network.order)).encode())
    for cpt in network.cpts:
        h.update(np.ascontiguousarray(cpt).tobytes())
    return h.hexdigest()


_FITS: dict[tuple, BayesNet] = {}


class BayNetPrior:
    """A BayNet fitted to `dataset`; records sampled from it, priors conditional on the `known` columns.

    dataset: a name of stages.prior.tabular.DATASETS: the stand-ins `acs`, `fire` or the paper's tables
    `acs/recon-synth`, `fire/recon-synth` (from `python -m pipeline.data fetch`); an unknown name is refused
    with the list. The columns targets and known may name are those of the dataset's domain file.

    targets: the columns the attack reconstructs (success = all of them right, or within
    `metric.distance` for a single target); known: the columns the attacker holds (null: every
    column that is not a target); columns in neither are unknown nuisance, summed out.
    """

    name = "baynet"
    #: stages.protocols: the records are rows of a table, and the law depends on each trial's known columns.
    provides = "table"
    per_trial = True
    #: The stage cache fits the network once per table and settings (use_cache); None: fit in process.
    _get_or_compute = None

    def __init__(self, dataset: str = "acs", data_dir: str | None = None, structure: str = "greedy",
                 degree: int = 2, root: str | None = None, seed: int = 0, n_records: int = 100,
                 targets: Sequence[str] = ("SEX",), known: Sequence[str] | None = None) -> None:
        if structure not in STRUCTURES:
            raise ValueError(f"structure must be one of {list(STRUCTURES)}, got {structure!r}.")
        self.dataset, self.structure, self.degree, self.root, self.seed = dataset, structure, degree, root, seed
        self._table = load_table(dataset, data_dir)
        self.data_dir = data_dir
        if root is not None:
            column_indices(self._table.columns, [root], "root")
        self._network = None  # fitted on first use (the generic game refuses this prior before that)
        self._setup(self._table.columns, n_records, targets, known)

    @classmethod
    def from_network(cls, network: BayesNet, n_records: int = 100, targets: Sequence[str] = ("SEX",),
                     known: Sequence[str] | None = None) -> "BayNetPrior":
        self = cls.__new__(cls)
        self.dataset, self.structure, self.degree, self.root, self.seed = None, None, None, None, None
        self._table, self._network, self.data_dir = None, network, None
        self._setup(network.columns, n_records, targets, known)
        return self

    @property
    def network(self) -> BayesNet:
        if self._network is None:
            settings = {"structure": self.structure, "degree": int(self.degree), "root": self.root,
                        "seed": int(self.seed)}
            key = (self._table.content_hash(), *settings.values())
            if key not in _FITS:  # in-process memo; with use_cache the fit is a stage on disk too
                if self._get_or_compute is None:
                    _FITS[key] = fit_network(self._table, **settings)
                else:
                    config = {"stage": "baynet", "version": FIT_STAGE_VERSION, "table": self._table.content_hash(),
                              **settings}
                    path = self._get_or_compute(
                        "baynet", config, lambda directory: fit_network(self._table, **settings).save(directory))
                    _FITS[key] = BayesNet.load(path)
            self._network = _FITS[key]
        return self._network

    def use_cache(self, get_or_compute) -> "BayNetPrior":
        """Fit the network through the stage cache (stage `baynet`, keyed by the table's content and the fit)."""
        self._get_or_compute = get_or_compute
        return self

    def data_files(self) -> list:
        """The table and domain files the network is fitted to (their hashes key the game's stages)."""
        if self.dataset is None:
            return []
        from stages.prior.tabular import _dataset_file

        return [_dataset_file(self.dataset, 0, self.data_dir), _dataset_file(self.dataset, 1, self.data_dir)]

    def _setup(self, columns: Sequence[str], n_records, targets, known) -> None:
        self._columns = tuple(columns)
        self.n_records = _validate.integer("n_records", n_records, minimum=1)
        targets = [targets] if isinstance(targets, str) else list(targets)
        if not targets:
            raise ValueError("targets must name at least one column, got [].")
        self.targets = column_indices(columns, targets, "targets")
        if known is None:
            self.known = [j for j in range(len(columns)) if j not in self.targets]
        else:
            known = [known] if isinstance(known, str) else list(known)
            self.known = column_indices(columns, known, "known")
            both = [columns[j] for j in self.known if j in self.targets]
            if both:
                raise ValueError(f"known and targets must not share a column, got {both} in both; drop it from one of them.")
        self.unknown = [j for j in range(len(columns)) if j not in set(self.known)]

    @property
    def n_targets(self) -> int:
        """The game's targets are the records (one secret = the record's target columns)."""
        return self.n_records

    @property
    def columns(self) -> tuple[str, ...]:
        return self._columns

    @property
    def domain(self) -> tuple[int, ...]:
        return self.network.domain

    def sample(self, rng: np.random.Generator, n: int | None = None) -> np.ndarray:
        """n_records fresh "original" records from the network: int array (n_records, d)."""
        if n is not None and _validate.integer("n", n, minimum=1) != self.n_records:
            raise ValueError(f"n must equal the prior's n_records ({self.n_records}), got {n}.")
        return self.network.sample(rng, self.n_records)

    @property
    def domain_size(self) -> int:
        """The widest target column's number of values."""
        return max(self.domain[t] for t in self.targets)

    def for_trial(self, X, metric=None) -> TrialPrior:
        """The trial's law: each record's exact prior given its known columns (stages.protocols.TrialLaw)."""
        return TrialPrior(self, X, metric)

    def score(self, X, z, metric) -> np.ndarray:
        return score_records(self.targets, X, z, metric)

    # A BayNet prior's z* and p_i depend on each trial's known columns: they come from for_trial(X), and a box
    # that needs one law for every trial (a bound without per-trial laws) is told so.
    def a_priori_guess(self, metric, k: int = 1):
        raise ValueError(PER_TRIAL_MESSAGE)

    def success_probability(self, z, metric):
        raise ValueError(PER_TRIAL_MESSAGE)

    def params(self) -> dict:
        return {"prior": self.name, "dataset": self.dataset, "structure": self.structure, "degree": self.degree,
                "root": self.root, "seed": self.seed, "n_records": self.n_records,
                "targets": [self.columns[t] for t in self.targets], "known": [self.columns[k] for k in self.known]}
