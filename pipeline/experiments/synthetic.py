"""The paper's synthetic experiments: bound comparison, advantage by prior, eps_protect, the idealized Gaussian game, RR tightness, Zipf calibration.

* analytic (no game): `CompareBounds`, `AdvantageByPrior`, `EpsProtect`, `ZipfCalibration`;
  priors over huge domains are given as laws (`{law: uniform | zipf, domain_size, exponent}`),
  never as arrays: a Zipf law over 10^9 passwords uses the generalized harmonic number. The PII
  rows of AdvantageByPrior and EpsProtect come from a `{law: pii, ...}` law (the PII prior scored by
  the job's `model`, its stage-cached scores shared with experiment=pii_law) or a `{law: given,
  probabilities: {max: .., median: .., p10: ..}, source: ..}` law (numbers from a pii_law run).
* games (Algorithm 1, stage-cached): the figures `IdealizedGaussian` (sweep prior x epsilon) and
  `RRTightness` (sweep Zipf exponent x epsilon, with the closed forms beside each game): each point is an
  ordinary game job of a `-m` sweep, which adds its row of the table to metrics.json (`Figure.rows`).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from omegaconf import DictConfig, OmegaConf

from pipeline.experiments.common import (
    CANARIES, PII_PAPER_EPS_PROTECT, Figure, Task, canary_probability, finish, grid, group_rows, law_canaries, laws,
    mean_interval, panel, resolve_laws, subplots,
)

__all__ = ["CompareBounds", "AdvantageByPrior", "EpsProtect", "IdealizedGaussian", "RRTightness", "ZipfCalibration"]


def _law_record(resolved: dict[str, dict], cache) -> dict:
    """metrics.json keys for the laws of a job: each law's numbers and source; the stages when a pii law ran."""
    out: dict[str, Any] = {"laws": resolved}
    if any(law.get("resolved_from") == "pii" for law in resolved.values()) and cache is not None:
        out["stages"] = {"computed": [list(x) for x in cache.computed], "reused": [list(x) for x in cache.reused]}
    return out


class CompareBounds(Task):
    """Figure compare_bounds: one target, one guess, mu-GDP: ours, KGK+, MMC (p = 1/m only) and the best bound."""

    name = "compare_bounds"
    columns = ("mu", "prior", "ours", "kgk", "mmc", "best", "best_source")
    represented = ("task.mus",)

    def __init__(self, mus: Sequence[float] = (0.5, 1.0, 2.0, 4.0), prior_low: float = 1e-4, prior_high: float = 0.5,
                 prior_points: int = 41, reciprocal_points: int = 25) -> None:
        self.mus = [float(m) for m in mus]
        if not self.mus or any(not (m > 0 and math.isfinite(m)) for m in self.mus):
            raise ValueError(f"mus must list numbers > 0, got {list(mus)!r}.")
        if not 0 < float(prior_high) < 1:
            raise ValueError(f"prior_high must be in (0, 1), got {prior_high!r}.")
        # MMC applies only at p = 1/m: add such priors (m on a log grid from 2 to 1/prior_low).
        ms = np.unique(np.round(np.geomspace(2, 1.0 / float(prior_low), int(reciprocal_points)))) if reciprocal_points else []
        self.priors = grid("prior", prior_low, prior_high, prior_points)
        self.priors = np.unique(np.concatenate([self.priors, [1.0 / m for m in ms if prior_low <= 1.0 / m <= prior_high]]))

    def run(self, cfg, output_dir, cache, logger) -> dict:
        from stages.bound.best import best_bound
        from stages.bound.profiles import GaussianDP
        from stages.bound.theorems import SPLIT_THEOREM

        rows = []
        for mu in self.mus:
            profile = GaussianDP(mu)
            for p in self.priors:
                best = best_bound(profile, float(p))
                # ours_theorem is for the figure's label (metrics.json keeps it, the csv not): best_bound's "ours"
                # at one target is theorems.success_bound, the split theorem with n = 1
                rows.append({"mu": mu, "prior": float(p), "ours": best.all["ours"], "kgk": best.all.get("kgk"),
                             "mmc": best.all.get("mmc"), "best": best.value, "best_source": best.source,
                             "ours_theorem": SPLIT_THEOREM})
        with_mmc = [r for r in rows if r["mmc"] is not None]
        headline = {
            "ours_best_fraction": float(np.mean([r["best_source"] == "ours" for r in rows])),
            "ours_over_kgk_max": float(max(r["ours"] - r["kgk"] for r in rows)),
            "ours_minus_mmc_max_abs": float(max((abs(r["ours"] - r["mmc"]) for r in with_mmc), default=math.nan)),
        }
        return {"table": rows, "headline": headline}

    @staticmethod
    def plot(rows, path) -> Path:
        by_mu = group_rows(rows, "mu")
        theorem = next((str(r["ours_theorem"]) for r in rows if r.get("ours_theorem")), "")
        ours = ("ours: " + (f"{theorem} at one target, " if theorem else "")
                + "min over eps of beta(eps, p) + (1 - beta) delta_mu(eps), the whole mu-GDP delta curve")
        fig, axes = subplots(len(by_mu), sharey=True)
        for ax, (mu, members) in zip(axes, sorted(by_mu.items(), key=lambda kv: float(kv[0]))):
            members = sorted(members, key=lambda r: float(r["prior"]))
            p = [float(r["prior"]) for r in members]
            ax.plot(p, p, color="0.6", linewidth=0.8, label="prior (no release)")
            ax.plot(p, [float(r["kgk"]) for r in members], "--", label="KGK+ (prior work)")
            ax.plot(p, [float(r["ours"]) for r in members], "-", label=ours)
            mmc = [(float(r["prior"]), float(r["mmc"])) for r in members if r["mmc"] not in (None, "")]
            if mmc:
                ax.plot(*zip(*mmc), "x", markersize=4, label="MMC (prior work; p = 1/m only)")
            ax.plot(p, [float(r["best"]) for r in members], ":", color="k", label="best valid bound (smallest of all)")
            panel(ax, "prior success probability p", f"mu = {float(mu):g}")
        return finish(fig, axes, "bound on success probability", path,
                      title="One target, one guess, mu-GDP: bounds on the attack's success probability")


class AdvantageByPrior(Task):
    """Figure novel_bounds: generalised advantage bound vs eps for the min / median / max canary of each prior.

    `canaries` apply to the uniform and zipf laws; a pii law has its own (default max, median, p10: the
    paper's footnote), a given law the ones its probabilities name.
    """

    name = "advantage_by_prior"

    def config_groups(self, cfg) -> tuple[str, ...]:
        """A pii law loads the job's language model and reads the Enron sample; the other laws use no box."""
        return ("model",) if any(law.get("law") == "pii" for law in self.laws.values()) else ()

    def reads_data(self, cfg) -> bool:
        return any(law.get("law") == "pii" for law in self.laws.values())
    columns = ("prior_name", "canary", "prior_probability", "eps", "advantage")

    def __init__(self, priors: Mapping, canaries: Sequence[str] = ("min", "median", "max"), delta: float = 1e-5,
                 eps_low: float = 0.1, eps_high: float = 100.0, eps_points: int = 31) -> None:
        from stages.bound import _validate

        self.laws = laws(priors)
        self.canaries = [str(c) for c in canaries]
        for c in self.canaries:
            if c not in CANARIES:
                raise ValueError(f"canaries must be among {list(CANARIES)}, got {c!r}.")
        self.delta = _validate.delta("delta", delta)
        self.eps = grid("eps", eps_low, eps_high, eps_points, extra=[e for e in (1.0, 10.0) if eps_low <= e <= eps_high])

    def run(self, cfg, output_dir, cache, logger) -> dict:
        from stages.bound.profiles import ApproxDP
        from stages.bound.theorems import SPLIT_THEOREM, advantage_bound

        memo: dict[tuple[float, float], float] = {}
        rows = []
        resolved = resolve_laws(self.laws, cfg, cache)
        for prior_name, law in resolved.items():
            for canary in law_canaries(law, self.canaries):
                p = canary_probability(law, canary)
                for eps in self.eps:
                    key = (p, float(eps))
                    if key not in memo:
                        memo[key] = float(advantage_bound(ApproxDP(float(eps), self.delta), p))
                    # delta and theorem are for the figure (metrics.json keeps them, the csv not): advantage_bound
                    # is the split theorem at one target (theorems.success_bound)
                    rows.append({"prior_name": prior_name, "canary": canary, "prior_probability": p,
                                 "eps": float(eps), "advantage": memo[key], "delta": self.delta,
                                 "theorem": SPLIT_THEOREM})
        headline = {f"advantage/{r['prior_name']}/{r['canary']}/eps={r['eps']:g}": r["advantage"]
                    for r in rows if r["eps"] in (1.0, 10.0)}
        return {"table": rows, "headline": headline, **_law_record(resolved, cache)}

    @staticmethod
    def plot(rows, path) -> Path:
        by_prior = group_rows(rows, "prior_name")
        fig, axes = subplots(len(by_prior), sharey=True)
        title = draw_advantage(dict(zip(by_prior, axes)), rows)
        return finish(fig, axes, "advantage bound", path, title=title)


#: A canary's color and marker in every advantage figure (the same canary looks the same in every panel).
_CANARY_STYLE = {"max": ("C3", "o"), "median": ("C0", "s"), "p10": ("C2", "^"), "min": ("C1", "v"),
                 "typical": ("C4", "D")}


def draw_advantage(panels: Mapping[Any, Any], rows: list[dict], threshold: float = 0.05) -> str:
    """Draw the advantage bound over eps of every canary of each prior into its panel (panels: prior name -> ax);
    return the figure's title, which states delta and the theorem the rows name. Canaries of equal prior
    probability (a uniform law's min, median and max) are one line that names them all; a canary has the same
    color and marker in every panel."""
    for prior_name, members in group_rows(rows, "prior_name").items():
        ax = panels[prior_name]
        by_canary = group_rows(members, "canary")
        curves: dict[float, list[str]] = {}
        for canary, curve in by_canary.items():
            curves.setdefault(float(curve[0]["prior_probability"]), []).append(str(canary))
        for p, canaries in sorted(curves.items(), reverse=True):
            curve = sorted(by_canary[canaries[0]], key=lambda r: float(r["eps"]))
            color, marker = _CANARY_STYLE.get(canaries[0], (None, "."))
            ax.plot([float(r["eps"]) for r in curve], [float(r["advantage"]) for r in curve], marker=marker,
                    markersize=3.5, color=color, label=f"{prior_name}: {' = '.join(canaries)} canary (p = {p:.3g})")
        ax.axhline(threshold, color="k", linestyle=":", linewidth=0.8,
                   label=f"advantage {threshold:g} (eps_protect's threshold)")
        panel(ax, "epsilon", f"{prior_name} prior")
    deltas = "/".join(sorted({f"{float(r['delta']):g}" for r in rows if r.get("delta") not in (None, "")}))
    theorems = "; ".join(sorted({str(r["theorem"]) for r in rows if r.get("theorem")}))
    return (f"Advantage bound (posterior - prior) / (1 - prior) of one canary under (eps, delta = {deltas or '?'})-DP"
            + (f"; bound: {theorems} at one target, beta(eps, p) + (1 - beta) delta" if theorems else ""))


class EpsProtect(Task):
    """Figure eps_protect: the largest eps keeping the advantage bound <= threshold, vs the prior probability.

    Rows with prior_name `any` are the curve; one row per prior gives its most probable canary (the marker).
    A pii law's row is its most probable PII, reported beside the paper's 2.37 (headline
    eps_protect/<name>/paper); a given law must give `max`.
    """

    name = "eps_protect"

    def config_groups(self, cfg) -> tuple[str, ...]:
        """A pii law loads the job's language model and reads the Enron sample; the other laws use no box."""
        return ("model",) if any(law.get("law") == "pii" for law in self.laws.values()) else ()

    def reads_data(self, cfg) -> bool:
        return any(law.get("law") == "pii" for law in self.laws.values())
    columns = ("prior_name", "prior_probability", "eps_protect", "delta", "threshold")

    def __init__(self, priors: Mapping, threshold: float = 0.05, delta: float = 1e-5, prior_low: float = 1e-10,
                 prior_high: float = 0.9, prior_points: int = 31) -> None:
        from stages.bound import _validate

        self.laws = laws(priors)
        for name, law in self.laws.items():
            if law.get("law") == "given" and "max" not in law["probabilities"]:
                raise ValueError(f"priors.{name}.probabilities must give max (the most probable canary: eps_protect's "
                                 f"row), got {sorted(law['probabilities'])}.")
        self.threshold = float(_validate.probability("threshold", threshold, open_low=True, open_high=True))
        self.delta = _validate.delta("delta", delta)
        if not float(prior_high) < 1:
            raise ValueError(f"prior_high must be < 1, got {prior_high!r}.")
        # p = 1/2 on the curve: eps_protect is flat from there on (THEORY.md; theorems.eps_protect), a kink that a
        # log grid steps over
        self.priors = grid("prior", prior_low, prior_high, prior_points,
                           extra=[0.5] if float(prior_low) <= 0.5 <= float(prior_high) else [])

    def run(self, cfg, output_dir, cache, logger) -> dict:
        from stages.bound.theorems import eps_protect

        rows = [{"prior_name": "any", "prior_probability": float(p),
                 "eps_protect": float(eps_protect(float(p), self.threshold, self.delta)), "delta": self.delta,
                 "threshold": self.threshold} for p in self.priors]
        resolved = resolve_laws({name: {**law, "canaries": ["max"]} if law.get("law") == "pii" else law
                                 for name, law in self.laws.items()}, cfg, cache)
        for prior_name, law in resolved.items():
            p = canary_probability(law, "max")
            row = {"prior_name": prior_name, "prior_probability": p,
                   "eps_protect": float(eps_protect(p, self.threshold, self.delta)), "delta": self.delta,
                   "threshold": self.threshold}
            if law.get("resolved_from") == "pii":  # for the figure's label (metrics.json keeps it, the csv not)
                row["paper_eps_protect"] = PII_PAPER_EPS_PROTECT
            rows.append(row)
        headline = {f"eps_protect/{r['prior_name']}": r["eps_protect"] for r in rows if r["prior_name"] != "any"}
        headline.update({f"eps_protect/{name}/paper": PII_PAPER_EPS_PROTECT for name, law in resolved.items()
                         if law.get("resolved_from") == "pii"})
        return {"table": rows, "headline": headline, **_law_record(resolved, cache)}

    @staticmethod
    def plot(rows, path) -> Path:
        fig, (ax,) = subplots(1, width=5.6)
        draw_eps_protect(ax, rows)
        deltas = "/".join(sorted({f"{float(r['delta']):g}" for r in rows if r.get("delta") not in (None, "")}))
        thresholds = "/".join(sorted({f"{float(r['threshold']):g}" for r in rows if r.get("threshold") not in (None, "")}))
        return finish(fig, [ax], ax.get_ylabel(), path,
                      title=f"eps_protect: the largest eps at which (eps, delta = {deltas or '?'})-DP keeps the advantage "
                            f"bound <= {thresholds or '?'}, by the prior probability of the canary",
                      note="eps_protect is flat for p >= 1/2: there the bound's minimum sits at eps' = 0, where the "
                           "advantage is the total variation delta + (1 - delta) tanh(eps / 2) whatever p is.")


def draw_eps_protect(ax, rows: list[dict], curve_label: str = "eps_protect(p)") -> None:
    """eps_protect over the prior probability (rows prior_name `any`, and the markers' rows: every row is a point
    of the same function, so the markers lie on the curve), and one marker per prior at its most probable canary
    (a pii law's with the paper's value beside it)."""
    points = sorted({float(r["prior_probability"]): float(r["eps_protect"]) for r in rows}.items())
    ax.plot([p for p, _ in points], [e for _, e in points], "-", color="k", linewidth=1.0, label=curve_label)
    markers = ("o", "s", "D", "^", "v", "P")
    for i, row in enumerate(r for r in rows if r["prior_name"] != "any"):
        paper = (f"; paper {float(row['paper_eps_protect']):g} with GPT-2's scores" if row.get("paper_eps_protect")
                 else "")
        ax.plot(float(row["prior_probability"]), float(row["eps_protect"]), markers[i % len(markers)], color=f"C{i}",
                label=f"{row['prior_name']}: most probable canary, p = {float(row['prior_probability']):.3g} "
                      f"(eps_protect = {float(row['eps_protect']):.3g}{paper})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("prior probability p of the canary")
    thresholds = "/".join(sorted({f"{float(r['threshold']):g}" for r in rows if r.get("threshold") not in (None, "")}))
    ax.set_ylabel(f"eps_protect: largest eps with\nadvantage bound <= {thresholds or 'threshold'}")
    ax.grid(alpha=0.3, which="both")


class IdealizedGaussian(Figure):
    """Appendix "Idealized Gaussian Attack": a sweep of prior x mechanism.epsilon, one game per job."""

    name = "idealized_gaussian"
    columns = ("prior_name", "eps", "delta", "trials", "attack_mean", "attack_ci_low", "attack_ci_high", "prior_mean",
               "bound_theorem", "bound_0.95", "exceed_0.95")
    represented = ("prior", "mechanism.epsilon")

    def __init__(self, ci_level: float = 0.95) -> None:
        from stages.bound import _validate

        self.ci_level = float(_validate.probability("ci_level", ci_level, open_low=True, open_high=True))

    levels = (0.95,)

    def rows(self, cfg: DictConfig, metrics: Mapping[str, Any]) -> list[dict]:
        mean, low, high = mean_interval(metrics["attack_successes"], self.ci_level, bounds=(0, metrics["n_targets"]))
        eps = cfg.mechanism.get("epsilon")
        return [{
            "prior_name": metrics["boxes"]["prior"],
            "eps": float(eps) if eps is not None else float(metrics["privacy"]["epsilon"]),
            "delta": metrics["privacy"]["delta"], "trials": metrics["trials"],
            "attack_mean": mean, "attack_ci_low": low, "attack_ci_high": high,
            "prior_mean": float(metrics["prior_success_mean"]),
            "bound_theorem": (metrics.get("bound_theorem") or {}).get("theorem"),
            "bound_0.95": metrics["bound"]["0.95"], "exceed_0.95": metrics["exceed"]["0.95"],
        }]

    @staticmethod
    def plot(rows, path) -> Path:
        by_prior = group_rows(rows, "prior_name")
        fig, axes = subplots(len(by_prior), sharey=True)
        for ax, (prior_name, members) in zip(axes, by_prior.items()):
            members = sorted(members, key=lambda r: float(r["eps"]))
            eps = [float(r["eps"]) for r in members]
            mean = np.array([float(r["attack_mean"]) for r in members])
            low = np.array([float(r["attack_ci_low"]) for r in members])
            high = np.array([float(r["attack_ci_high"]) for r in members])
            ax.errorbar(eps, mean, yerr=[mean - low, high - mean], fmt="o-", capsize=3, label="Bayes-optimal attack (95% CI)")
            ax.plot(eps, [float(r["prior_mean"]) for r in members], "s--", label="prior baseline")
            ax.plot(eps, [float(r["bound_0.95"]) for r in members], "k-", label="bound @ 0.95")
            deltas = "/".join(sorted({f"{float(r['delta']):g}" for r in members if r.get("delta") not in (None, "")}))
            panel(ax, f"epsilon (delta = {deltas or '-'})", str(prior_name), log_x=len(eps) > 1 and max(eps) / min(eps) > 8)
        theorems = "; ".join(sorted({str(r["bound_theorem"]) for r in rows if r.get("bound_theorem")}))
        trials = "/".join(sorted({str(r.get("trials")) for r in rows}))
        return finish(fig, axes, "targets reconstructed", path,
                      note=f"bound: {theorems or '-'}; {trials} trials a point, 95% t-intervals")


class RRTightness(Figure):
    """Proposition "pure_bnd_tight": randomized response, Bayes-optimal attack, Zipf priors of several exponents.

    A sweep of prior.exponent x mechanism.epsilon, one game per job (bound=pure_dp). Beside each game two
    closed forms are computed per target: the Bayes-optimal attack's expected successes
    sum_a max_b Pr[RR(b) = a] D(b), and Theorem 3.1's bound on them, sum_a Pr[a] beta(eps, D(R(a))) with
    R(a) the attack's guess. The proposition says they are equal when max D / min D <= e^eps
    (`condition_holds`). `bound_empirical` is the game's own: sum_i beta(eps, p_i) over the prior successes
    p_i of the attack's guesses, averaged over the trials (the pure_dp box's `bound_theorem.expected`).
    """

    name = "rr_tightness"
    columns = ("exponent", "eps", "max_prior_ratio", "condition_holds", "attack_mean", "attack_ci_low",
               "attack_ci_high", "attack_exact", "bound_exact", "bound_empirical", "tightness")
    represented = ("prior.exponent", "mechanism.epsilon")

    def __init__(self, ci_level: float = 0.95) -> None:
        from stages.bound import _validate

        self.ci_level = float(_validate.probability("ci_level", ci_level, open_low=True, open_high=True))

    @staticmethod
    def closed_forms(probabilities: np.ndarray, eps: float) -> tuple[float, float]:
        """(expected successes of the Bayes-optimal attack, Theorem 3.1's bound on them), summed over targets."""
        from stages.bound.theorems import beta

        d = np.asarray(probabilities, dtype=float)  # (n, m)
        m = d.shape[1]
        keep = 1.0 / (1.0 + (m - 1) * math.exp(-eps))
        likelihood = np.full((m, m), (1.0 - keep) / (m - 1))  # likelihood[a, b] = Pr[RR(b) = a]
        np.fill_diagonal(likelihood, keep)
        joint = likelihood[None, :, :] * d[:, None, :]  # (n, a, b)
        guess = np.argmax(joint, axis=2)  # (n, a): the posterior argmax
        attack = float(np.sum(np.max(joint, axis=2)))
        p_release = joint.sum(axis=2)  # (n, a)
        guessed_prior = np.take_along_axis(d, guess, axis=1)  # D_i(R(a))
        bound = float(np.sum(p_release * beta(eps, guessed_prior)))
        return attack, bound

    def boxes(self, cfg: DictConfig):
        return {"prior": ("ZipfPrior", "zipf"), "mechanism": ("RandomizedResponse", "randomized_response"),
                "bound": ("PureDPBound", "pure_dp")}

    def rows(self, cfg: DictConfig, metrics: Mapping[str, Any]) -> list[dict]:
        from hydra.utils import instantiate

        prior = instantiate(cfg.prior, _convert_="all")  # cheap: the (n, m) Zipf law the game played
        eps = float(cfg.mechanism.epsilon)
        d = np.asarray(prior.probabilities, dtype=float)
        attack_exact, bound_exact = self.closed_forms(d, eps)
        mean, low, high = mean_interval(metrics["attack_successes"], self.ci_level, bounds=(0, metrics["n_targets"]))
        ratio = float(np.max(d) / np.min(d))
        return [{
            "exponent": float(prior.exponent), "eps": eps, "max_prior_ratio": ratio,
            "condition_holds": bool(ratio <= math.exp(eps) * (1 + 1e-12)),
            "attack_mean": mean, "attack_ci_low": low, "attack_ci_high": high,
            "attack_exact": attack_exact, "bound_exact": bound_exact,
            "bound_empirical": float(metrics["bound_theorem"]["expected"]),
            "tightness": attack_exact / bound_exact if bound_exact > 0 else math.nan,
        }]

    @classmethod
    def combine(cls, rows: list[dict]) -> list[dict]:
        """The table by exponent, then eps (whatever the order of the sweep's values)."""
        return sorted(rows, key=lambda r: (float(r["exponent"]), float(r["eps"])))

    @staticmethod
    def plot(rows, path) -> Path:
        import matplotlib.ticker

        fig, (left, right) = subplots(2)
        groups = sorted(group_rows(rows, "exponent").items(), key=lambda kv: float(kv[0]))
        markers, styles = ("o", "s", "^", "D", "v", "P", "X"), ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1)))
        for index, (s, members) in enumerate(groups):
            members = sorted(members, key=lambda r: float(r["eps"]))
            # equal curves (s = 0 and s = 0.2 are both tight everywhere) would hide each other: a small
            # multiplicative x offset per exponent, a marker and a line style of its own
            shift = 2 ** (0.06 * (index - (len(groups) - 1) / 2))
            eps = [float(r["eps"]) * shift for r in members]
            marker, style = markers[index % len(markers)], styles[index % len(styles)]
            line, = left.plot(eps, [float(r["tightness"]) for r in members], linestyle=style, label=f"Zipf s = {float(s):g}")
            for x, r in zip(eps, members):
                holds = str(r["condition_holds"]) in ("True", "true", "1")
                left.plot(x, float(r["tightness"]), marker, color=line.get_color(),
                          markerfacecolor=line.get_color() if holds else "white")
            mean = np.array([float(r["attack_mean"]) for r in members])
            err = [mean - np.array([float(r["attack_ci_low"]) for r in members]),
                   np.array([float(r["attack_ci_high"]) for r in members]) - mean]
            right.errorbar(eps, mean, yerr=err, fmt=marker, color=line.get_color(), capsize=2)
            right.plot(eps, [float(r["bound_exact"]) for r in members], linestyle=style, color=line.get_color(),
                       label=f"Zipf s = {float(s):g}")
        left.set_ylabel("attack / bound (exact expectations)")
        left.set_title("filled: max D / min D <= e^eps (tight by the proposition)", fontsize=8)
        right.set_ylabel("targets reconstructed")
        right.set_title("dots: game mean (95% CI); lines: Theorem 3.1 bound", fontsize=8)
        for ax in (left, right):
            ax.set_xlabel("epsilon (randomized response)")
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.grid(alpha=0.3)
        return finish(fig, [left, right], left.get_ylabel(), path,
                      note="Each exponent has its own marker and line style, and its points are shifted slightly in eps "
                           "so that equal values (s = 0 and s = 0.2 are both tight) do not hide each other.")


class ZipfCalibration(Task):
    """The Zipf exponent of 9-digit passwords: MLE on RockYou counts, its uncertainty and its sensitivity.

    One row per fit: the maximum-likelihood exponent on a window of observed ranks with its
    profile-likelihood interval, a multinomial bootstrap interval (whole window only), and a log-log
    least-squares slope for reference; each with what it implies for a Zipf law over `domain_size`
    secrets: the most probable secret's prior, its eps_protect and its advantage bound at eps = 1.
    """

    name = "zipf_calibration"

    def reads_data(self, cfg) -> bool:
        return True  # the RockYou counts file
    columns = ("fit", "first_rank", "last_rank", "exponent", "ci_low", "ci_high", "p_max", "eps_protect",
               "advantage_eps1")

    def __init__(self, counts_file: str = "passwords/rockyou-top100k-9digit-withcount.csv",
                 windows: Sequence[Sequence[int]] = ((1, 157), (1, 10), (1, 50), (2, 157)), level: float = 0.95,
                 bootstrap: int = 200, domain_size: int = 1_000_000_000, threshold: float = 0.05,
                 delta: float = 1e-5) -> None:
        self.counts_file = str(counts_file)
        self.windows = [(int(a), int(b)) for a, b in windows]
        if any(not 1 <= a < b for a, b in self.windows):
            raise ValueError(f"windows must be [first_rank, last_rank] pairs with 1 <= first < last, got {list(windows)}.")
        self.level, self.bootstrap, self.domain_size = float(level), int(bootstrap), int(domain_size)
        self.threshold, self.delta = float(threshold), float(delta)

    def run(self, cfg, output_dir, cache, logger) -> dict:
        from stages.bound.profiles import ApproxDP
        from stages.bound.theorems import advantage_bound, eps_protect
        from stages.prior.base import data_path
        from stages.prior.zipf import fit_zipf_exponent, read_counts, zipf_exponent_interval, zipf_rank_probability

        path = data_path(self.counts_file, cfg.get("data_dir"))
        counts = np.sort(read_counts(path))[::-1]
        data = _counts_read(path, counts)

        def implied(s: float) -> dict:
            p = float(zipf_rank_probability(1, self.domain_size, s))
            return {"p_max": p, "eps_protect": float(eps_protect(p, self.threshold, self.delta)),
                    "advantage_eps1": float(advantage_bound(ApproxDP(1.0, self.delta), p))}

        rows = []
        for first, last in self.windows:
            window = counts[first - 1:last]
            if window.size < 2:
                raise ValueError(f"windows must cover at least two observed ranks (the file has {counts.size}), got [{first}, {last}].")
            s, low, high = zipf_exponent_interval(window, self.level)
            rows.append({"fit": "mle_profile", "first_rank": first, "last_rank": first + window.size - 1,
                         "exponent": s, "ci_low": low, "ci_high": high, **implied(s)})
        if self.bootstrap > 0:
            rng = np.random.default_rng(np.random.SeedSequence([int(cfg.seed), 1]))
            draws = [fit_zipf_exponent(rng.multinomial(int(counts.sum()), counts / counts.sum()))
                     for _ in range(self.bootstrap)]
            low, high = np.quantile(draws, [(1 - self.level) / 2, (1 + self.level) / 2])
            s = fit_zipf_exponent(counts)
            rows.append({"fit": "mle_bootstrap", "first_rank": 1, "last_rank": int(counts.size), "exponent": s,
                         "ci_low": float(low), "ci_high": float(high), **implied(s)})
        ranks = np.arange(1, counts.size + 1)
        slope = -float(np.polyfit(np.log(ranks), np.log(counts), 1)[0])
        rows.append({"fit": "loglog_least_squares", "first_rank": 1, "last_rank": int(counts.size), "exponent": slope,
                     "ci_low": None, "ci_high": None, **implied(slope)})
        headline = {"exponent_mle": rows[0]["exponent"], "exponent_ci_low": rows[0]["ci_low"],
                    "exponent_ci_high": rows[0]["ci_high"], "observed_ranks": int(counts.size),
                    "observed_top_share": float(counts[0] / counts.sum())}
        for row in rows:  # what the fits were made on, for the figure (not a column of the table)
            row["data"] = data
        return {"table": rows, "headline": headline}

    @staticmethod
    def plot(rows, path) -> Path:
        fig, (ax,) = subplots(1, width=6.4, height=0.55 * len(rows) + 1.2)
        interval = lambda r, key: float(r[key]) if r.get(key) not in (None, "") else np.nan  # noqa: E731
        s = np.array([float(r["exponent"]) for r in rows])
        low = np.array([interval(r, "ci_low") for r in rows])
        high = np.array([interval(r, "ci_high") for r in rows])
        y = np.arange(len(rows))[::-1]  # the table's first fit on top
        ax.errorbar(s, y, xerr=[np.nan_to_num(s - low), np.nan_to_num(high - s)], fmt="o", capsize=3,
                    label="fitted exponent (95% interval where the fit gives one)")
        labels = [f"{r['fit']}, ranks {r['first_rank']}-{r['last_rank']}\ns = {float(r['exponent']):.3f}"
                  + (f" [{interval(r, 'ci_low'):.3f}, {interval(r, 'ci_high'):.3f}]" if r.get("ci_low") not in (None, "")
                     else "") for r in rows]
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        configured = _configured_zipf_exponent()
        if configured is not None:
            ax.axvline(configured, color="firebrick", linestyle="--", linewidth=1.0,
                       label=f"s = {configured:g}: prior.exponent of every experiment's Zipf prior (conf/prior/zipf.yaml)")
        ax.set_xlabel("Zipf exponent s")
        ax.grid(alpha=0.3)
        return finish(fig, [ax], "", path,
                      title=f"Zipf exponent of 9-digit passwords, fitted to {rows[0].get('data') or 'the counts file'} "
                            f"(maximum likelihood, bootstrap, log-log slope)")


def _counts_read(path: Path, counts: np.ndarray) -> str:
    """What a counts file held, as the figure says it: 'tests/data/passwords/x.csv (157 ranks, 1,234 passwords
    counted)', the path from the repository root where it lies inside it."""
    from stages.prior.base import REPO_ROOT

    path = Path(path).resolve()
    shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    return f"{shown} ({counts.size} ranks, {int(counts.sum()):,} passwords counted)"


def _configured_zipf_exponent() -> float | None:
    """conf/prior/zipf.yaml's exponent (the fit every experiment's Zipf prior uses), None if it cannot be read."""
    try:
        import pipeline

        return float(OmegaConf.load(Path(pipeline.CONF_DIR) / "prior" / "zipf.yaml").exponent)
    except Exception:  # noqa: BLE001 - a figure without the mark rather than no figure
        return None
