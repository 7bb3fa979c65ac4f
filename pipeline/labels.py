"""What a job's record says, in words: the baseline, the theorem behind the bound, the privacy guarantee and the
game, for the log lines and every figure's title and legend. Each reads metrics.json's dict (the game's record),
never the boxes. Theorem names are long; tables and panel titles show their short ids (`theorem_id`,
`short_theorem`, read from the theorem registry, stages.bound.registry) with a line that expands them
(`theorem_legend`)."""
from __future__ import annotations

import re
from typing import Iterable, Mapping

from stages.bound import registry

__all__ = ["BOUND_READING", "baseline_label", "bound_label", "game_label", "mechanism_label", "prior_label",
           "privacy_label", "theorem_name", "theorem_parts", "theorem_id", "short_theorem", "theorem_legend"]

#: How to read a bound line, printed on every figure that draws one.
BOUND_READING = ('"bound @ c": with probability >= c at most this many targets are attacked, so the attack may '
                 "exceed the line in up to 1 - c of the trials (a 0.05 line below the attack is no violation).")

#: The record's name for the minimum over several theorems (pipeline.game._winning_name):
#: 'min of A (at 0.05, 0.5), B (at 0.95)'.
_MIN_OF = "min of "
_AT = re.compile(r"(.+?) \(at [0-9.eE+\-, ]+\)(?:, |$)")
#: The comparator box's names ('comparator kgk', stages.bound.comparator): the comparator is its id.
_COMPARATOR = "comparator "


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


def theorem_parts(record: str) -> list[str]:
    """The theorems a record's name holds: ['A', 'B'] for 'min of A (at 0.05, 0.5), B (at 0.95)', else [record]."""
    record = str(record or "")
    if record.startswith(_MIN_OF):
        parts = [m.group(1) for m in _AT.finditer(record[len(_MIN_OF):])]
        if parts:
            return parts
    return [record] if record else []


def theorem_id(name: str) -> str:
    """A theorem's short id, from the registry (``registry.REGISTRY.label_id``): 'T4' for 'whole-prior one-run count
    (THEORY.md Thm 4)', 'MMC' for MMC's count, 'P3.1' for the paper's Theorem 3.1; '-sv' / '-avg' for the set-valued
    weights / the average over the trials; 'kgk' for 'comparator kgk'; a name it does not know is its own id."""
    short = registry.REGISTRY.label_id(name)
    if short is not None:
        return short
    if name.startswith(_COMPARATOR) and name[len(_COMPARATOR):].strip():
        return name[len(_COMPARATOR):].split()[0] + registry.variant_codes(name)
    return name


def short_theorem(record: str) -> str:
    """A record's theorem as ids: 'T4', or 'T3/T4' for the minimum of two; '-' for none (not private)."""
    if not record or str(record).startswith("none"):
        return "-"
    return "/".join(dict.fromkeys(theorem_id(p) for p in theorem_parts(record)))


def theorem_legend(records: Iterable[str]) -> str:
    """'theorems: T4 = whole-prior one-run count (THEORY.md Thm 4); MMC = ...; a/b = the smaller of the two at each
    confidence': the line that expands the ids of these records ('' for none)."""
    names: dict[str, str] = {}
    mixed = False
    for record in records:
        if not record or str(record).startswith("none"):
            continue
        parts = theorem_parts(record)
        mixed |= len(parts) > 1
        for part in parts:
            names.setdefault(theorem_id(part), part)
    if not names:
        return ""
    text = "theorems: " + "; ".join(f"{short} = {name}" if short != name else name for short, name in names.items())
    if mixed:
        text += ("; a/b = the smaller of their counts at each confidence (report.csv's bound_theorem and metrics.json "
                 "bound_theorem.by_confidence say which gave each)")
    return text


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
    """'eps=1 at delta=1e-05' (the mechanism's own delta; 'mu=1, eps=6.4 at delta=1e-05' for a mechanism given by
    mu), or 'NOT PRIVATE (...)' without a privacy profile."""
    privacy = metrics.get("privacy") or {}
    if not privacy.get("private", True):
        return f"NOT PRIVATE ({privacy.get('reason', 'no privacy profile')})"
    text = f"eps={privacy['epsilon']:.3g} at delta={privacy['delta']:g}"
    own = (metrics.get("params") or {}).get("mechanism") or {}
    if privacy.get("mu") is not None and own.get("epsilon") is None:  # given by mu: its guarantee first
        return f"mu={float(privacy['mu']):.3g}, {text}"
    return text


def prior_label(metrics: Mapping) -> str:
    """The prior with what sets it apart: 'zipf prior (exponent 1.84, 10 values)', 'zipf prior (exponent 1.52 fitted
    to counts.csv, 10 values)', 'uniform prior (10 values)'; a tabular prior names its table and target columns."""
    prior = dict((metrics.get("params") or {}).get("prior") or {})
    name = f"{metrics['boxes']['prior']} prior"
    if prior.get("dataset") is not None:  # prior=baynet: the table and the column(s) attacked
        targets = prior.get("targets") or []
        known = prior.get("known")
        return (f"{name} (table {prior['dataset']}, target column{'s' if len(targets) > 1 else ''} {', '.join(targets)}"
                + (f", {len(known)} columns known" if known is not None else "") + ")")
    details = []
    if prior.get("exponent") is not None:
        counts = prior.get("counts_file")
        details.append(f"exponent {float(prior['exponent']):.3g}"
                       + (f" fitted to {str(counts).rsplit('/', 1)[-1]}" if counts else ""))
    if prior.get("domain_size") is not None:
        details.append(f"{prior['domain_size']} values")
    return f"{name} ({', '.join(details)})" if details else name


def mechanism_label(metrics: Mapping) -> str:
    """The mechanism with its guarantee: 'gaussian (eps=1 at delta=1e-05)', 'randomized_response (eps=1 at
    delta=0)', 'gaussian (mu=1, eps=6.4 at delta=1e-05)', 'dpsgd NOT PRIVATE (...)'."""
    name = metrics["boxes"]["mechanism"]
    privacy = privacy_label(metrics)
    return f"{name} {privacy}" if privacy.startswith("NOT PRIVATE") else f"{name} ({privacy})"


def game_label(metrics: Mapping) -> str:
    """What game a job played, for a figure's title: the prior with its parameters, the number of targets, the
    mechanism with its guarantee, the attack, the metric and the trials, e.g. 'zipf prior (exponent 1.84, 10
    values), 100 targets; gaussian (eps=1 at delta=1e-05); attack bayes_optimal (k=1), metric exact; 200 trials'."""
    return (f"{prior_label(metrics)}, {metrics['n_targets']} targets; {mechanism_label(metrics)}; attack "
            f"{metrics['boxes']['attack']} (k={metrics.get('k', 1)}), metric {metrics['boxes']['metric']}; "
            f"{metrics['trials']} trials")
