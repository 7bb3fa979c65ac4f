"""What a job's record says, in words: the baseline, the theorem behind the bound, the privacy guarantee and the
game, for the log lines and every figure's title and legend. Each reads metrics.json's dict (the game's record),
never the boxes."""
from __future__ import annotations

from typing import Mapping

__all__ = ["BOUND_READING", "baseline_label", "bound_label", "game_label", "privacy_label", "theorem_name"]

#: How to read a bound line, printed on every figure that draws one.
BOUND_READING = ('"bound @ c": with probability >= c at most this many targets are attacked, so the attack may '
                 "exceed the line in up to 1 - c of the trials (a 0.05 line below the attack is no violation).")



def baseline_label(metrics: Mapping) -> str:
    """'prior baseline (z*, k=2, within)': what the baseline column is, for logs and figures."""
    baseline = metrics.get("baseline") or {}
    return f"prior baseline (z*, k={baseline.get('k', 1)}, {baseline.get('metric', metrics['boxes']['metric'])})"


def theorem_name(metrics: Mapping) -> str:
    """The name of the theorem that produced the bound's numbers ('' when there is no bound or no name)."""
    theorem = metrics.get("bound_theorem")
    if isinstance(theorem, Mapping):
        return str(theorem.get("theorem") or "")
    return str(theorem or "")


def bound_label(metrics: Mapping) -> str:
    """The bound box's name (the comparator's name for bound=comparator) and the theorem behind its numbers.

    E.g. 'one_run: kgk_markov' when set-valued success made the one_run box fall back; 'none (not
    private)' for a run without a privacy profile.
    """
    if not (metrics.get("privacy") or {}).get("private", True):
        return "none (not private)"
    name = metrics["boxes"]["bound"]
    comparator = (metrics.get("params", {}).get("bound") or {}).get("comparator")
    name = f"{name} ({comparator})" if comparator else name
    theorem = theorem_name(metrics)
    return f"{name}: {theorem}" if theorem else name


def privacy_label(metrics: Mapping) -> str:
    """'eps=1 at delta=1e-05' (the mechanism's own delta), or 'NOT PRIVATE (...)' without a privacy profile."""
    privacy = metrics.get("privacy") or {}
    if not privacy.get("private", True):
        return f"NOT PRIVATE ({privacy.get('reason', 'no privacy profile')})"
    return f"eps={privacy['epsilon']:.3g} at delta={privacy['delta']:g}"


def game_label(metrics: Mapping) -> str:
    """What game a job played, for a figure's title: 'uniform prior, gaussian, eps=1 at delta=1e-05, 200 trials,
    metric exact, k=1'; a tabular prior names its table and target columns."""
    prior = dict((metrics.get("params") or {}).get("prior") or {})
    name = f"{metrics['boxes']['prior']} prior"
    if prior.get("dataset") is not None:  # prior=baynet: the table and the column(s) attacked
        targets = prior.get("targets") or []
        known = prior.get("known")
        name += (f" (table {prior['dataset']}, target column{'s' if len(targets) > 1 else ''} {', '.join(targets)}"
                 + (f", {len(known)} columns known" if known is not None else "") + ")")
    return (f"{name}, {metrics['boxes']['mechanism']}, {privacy_label(metrics)}, {metrics['trials']} trials, "
            f"metric {metrics['boxes']['metric']}, k={metrics.get('k', 1)}")
