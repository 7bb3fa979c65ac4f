"""The worst case's floor as a mechanism: the certified mixture that stages.bound.floor builds for a profile and a
prior (THEORY.md section 11, Lemma 7), released so that a game plays a real attack up to the floor.

A coin j (probability w_j) is drawn and released; then every target's secret goes through component j's class
mechanism (its m likeliest values are classes of their own, the others "rest"): randomized response, randomized
response revealing the class, the Gaussian simplex, the secret itself or nothing. The bayes_optimal attack given the
coin is the floor's MAP attack.
"""
from __future__ import annotations

import math

import numpy as np

from stages.bound import _validate
from stages.bound.profiles import ApproxDP, GaussianDP, PureDP
from stages.bound.whole_prior import prior_shape
from stages.mechanism import check_records, judge_privacy, privacy_record

__all__ = ["WorstCaseMechanism"]


def _is_inf(value) -> bool:
    try:
        return math.isinf(float(value)) and float(value) > 0
    except (TypeError, ValueError):
        return False


class WorstCaseMechanism:
    """The floor's mixture for mu-GDP (``mu``) or (``epsilon``, ``delta``)-DP (``delta`` = 0: pure), at ``confidence``.

    Bound to a prior by ``for_prior`` (the mixture depends on each target's prior); its release is a float vector:
    [coin, width, then per target (revealed flag, class, simplex coordinates padded to width)].
    """

    name = "worst_case"
    needs_prior = ("records",)  # stages.protocols: one candidate value per target

    def __init__(self, mu: float | None = None, epsilon: float | None = None, delta: float = 1e-5,
                 confidence: float = 0.95, domain_size: int = 10) -> None:
        self.domain_size = _validate.integer("domain_size", domain_size, minimum=2)
        self.confidence = float(_validate.confidence("confidence", confidence))
        if mu is not None:
            if epsilon is not None:
                raise ValueError(f"give either mu or epsilon (with delta), got mu={mu} and epsilon={epsilon}; set one "
                                 "of them to null.")
            self.mu, self.epsilon, self.delta = float(_validate.positive("mu", mu)), None, None
            self._profile = GaussianDP(self.mu)
        elif epsilon is not None:
            self.mu = None
            # epsilon = inf is taken (and judged not private, as every mechanism's is): no mixture is built for it
            self.epsilon = math.inf if _is_inf(epsilon) else float(_validate.positive("epsilon", epsilon))
            self.delta = float(_validate.delta("delta", delta))
            self._profile = (None if math.isinf(self.epsilon) else
                             PureDP(self.epsilon) if self.delta == 0.0 else ApproxDP(self.epsilon, self.delta))
        else:
            raise ValueError("mu must be given (or epsilon and delta), got mu=None and epsilon=None.")
        self.components: list | None = None  # per component (weight, per target (kind, params, classes))
        self.order: np.ndarray | None = None  # per target, its values by decreasing probability
        self.floor = None

    # ---- the guarantee ------------------------------------------------------------------------------------------
    def _judged(self):
        return judge_privacy(self._profile, self.delta, stated_epsilon=self.epsilon,
                             no_profile="epsilon = inf: no guarantee, so there is no worst case to release")

    @property
    def profile(self):
        """GaussianDP(mu), ApproxDP(epsilon, delta) or PureDP(epsilon): the mixture meets it (certified)."""
        return self._judged()[0]

    def privacy(self) -> dict:
        return privacy_record(self._judged()[1], mu=self.mu, epsilon=self.epsilon, delta=self.delta)

    def params(self) -> dict:
        return {"mechanism": self.name, "mu": self.mu, "epsilon": self.epsilon, "delta": self.delta,
                "confidence": self.confidence, "domain_size": self.domain_size}

    # ---- bound to a prior ---------------------------------------------------------------------------------------
    def for_prior(self, prior) -> "WorstCaseMechanism":
        """A copy holding the floor's mixture for the prior's targets (prior.probabilities, (n, domain_size))."""
        probs = getattr(prior, "probabilities", None)
        if probs is None:
            raise ValueError("mechanism=worst_case needs a prior with each target's probabilities (prior=uniform, zipf, "
                             "pii), got one without them.")
        return self.bound_to(np.asarray(probs, dtype=float))

    def bound_to(self, probabilities: np.ndarray) -> "WorstCaseMechanism":
        """``for_prior`` on a probability matrix (n, domain_size)."""
        from stages.bound.floor_mixture import mixture_mechanism

        probs = np.asarray(probabilities, dtype=float)
        if probs.ndim != 2 or probs.shape[1] != self.domain_size:
            raise ValueError(f"probabilities must be (n_targets, {self.domain_size}), got shape {probs.shape}.")
        rows = list(probs)
        found, dists, comps = mixture_mechanism(self._profile, rows, self.confidence)
        group = {s.key: g for g, s in enumerate(dists.shapes)}
        of_target = np.array([group[prior_shape(r).key] for r in rows])
        out = WorstCaseMechanism.__new__(WorstCaseMechanism)
        out.__dict__.update(self.__dict__)
        out.floor = found
        out.order = np.argsort(-probs, axis=1, kind="stable")
        out.components = [(w, [per[g] for g in of_target]) for w, per in comps]
        return out

    def _bound(self) -> None:
        if self.components is None:
            raise ValueError("mechanism=worst_case is not bound to a prior yet; the game binds it (for_prior), or call "
                             "bound_to(probabilities).")

    # ---- the release --------------------------------------------------------------------------------------------
    def _width(self, j: int) -> int:
        return max([c for kind, _, c in self.components[j][1] if kind == "gaussian_simplex"] or [0])

    def release(self, X, rng: np.random.Generator) -> np.ndarray:
        """[coin j, width, then per target (flag, class, simplex coordinates)]: component j applied to every target."""
        self._bound()
        x = check_records(X, self.domain_size)
        n = x.shape[0]
        weights = np.array([w for w, _ in self.components])
        j = int(rng.choice(len(weights), p=weights / weights.sum()))
        width = self._width(j)
        out = np.zeros((n, 2 + width))
        rank = np.argsort(self.order, axis=1)[np.arange(n), x]  # the secret's rank in its target's prior
        for i, (kind, params, classes) in enumerate(self.components[j][1]):
            cls = min(int(rank[i]), classes - 1)
            if kind == "nothing":
                out[i, :2] = (0.0, -1.0)
            elif kind == "reveal":
                out[i, :2] = (1.0, x[i])
            elif kind == "gaussian_simplex":
                out[i, 1] = -1.0
                out[i, 2 + cls] += params["mu"] / math.sqrt(2.0)  # vertices (mu / sqrt 2) e_c: edge mu
                out[i, 2:2 + classes] += rng.standard_normal(classes)
            else:
                d = float(params.get("d", 0.0))
                if d > 0 and rng.random() < d:
                    out[i, :2] = (1.0, cls)
                    continue
                keep = 1.0 / (1.0 + (classes - 1) * math.exp(-params["eps0"]))
                if rng.random() >= keep:
                    cls = (cls + int(rng.integers(1, classes))) % classes
                out[i, :2] = (0.0, cls)
        return np.concatenate([[j, width], out.ravel()])

    def log_likelihood(self, a) -> np.ndarray:
        """log Pr[release_i | X_i = v] given the released coin, up to terms constant in v: array (n, domain_size)."""
        self._bound()
        arr = np.asarray(a, dtype=float)
        j, width = int(arr[0]), int(arr[1])
        n = len(self.order)
        rows = arr[2:].reshape(n, 2 + width)
        out = np.zeros((n, self.domain_size))
        ranks = np.argsort(self.order, axis=1)  # ranks[i, v]: value v's rank in target i's prior
        for i, (kind, params, classes) in enumerate(self.components[j][1]):
            cls_of = np.minimum(ranks[i], classes - 1)  # every value's class
            flag, seen = rows[i, 0], int(rows[i, 1])
            if kind == "nothing":
                continue
            if kind == "reveal":
                out[i] = np.where(np.arange(self.domain_size) == seen, 0.0, -np.inf)
            elif kind == "gaussian_simplex":
                y = rows[i, 2:2 + classes]
                vert = params["mu"] / math.sqrt(2.0)
                out[i] = vert * y[cls_of]  # -|y - v_c|^2 / 2 up to a constant
            elif flag == 1.0:
                out[i] = np.where(cls_of == seen, 0.0, -np.inf)
            else:
                out[i] = np.where(cls_of == seen, 0.0, -params["eps0"])
        return out
