"""Audit your own attack: the privacy parameter its successes refute (stages.bound.audit, THEORY.md section 12).

    python -m pipeline.audit --successes 612 --targets 1000 --prior uniform:10 --family gdp --confidence 0.95
    python -m pipeline.audit --csv outcomes.csv --family approx --delta 1e-5

A count over --targets targets with one prior for all (--prior), or a CSV with one row per target: a column
`success` (1 if the attack got it right, else 0) and either `p` (the prior success of that target's best a-priori
guess) or one column `prior_<value>` per candidate value (the target's whole prior), and optionally `guessed` (0 for
a target the attack abstained on). Prints the largest parameter refuted at each confidence ("with confidence c the
mechanism is not theta-DP for any theta <= theta_hat"; for the noise multiplier, >= sigma_hat) and the theorem that
certifies it; --json prints the records. Exit 2 with one sentence on a bad input.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

from stages.bound import _validate
from stages.bound.audit import DEFAULT_RTOL, FAMILIES, Auditor

__all__ = ["main", "parse_prior", "read_outcomes", "AuditInputError", "PII_PRIOR"]

#: The PII prior's probabilities of the paper's Figure llm (the likeliest names first).
PII_PRIOR = (0.4, 0.2, 0.12, 0.08, 0.06, 0.05, 0.04, 0.02, 0.02, 0.01)
PRIORS_TAKEN = "uniform:K, zipf:EXPONENT:K, pii, probs:P1,P2,... or p:P (a prior success only)"


class AuditInputError(ValueError):
    """A refused command-line input: str() is one sentence naming the option, the value and the fix."""


def parse_prior(text: str) -> tuple[np.ndarray | None, float | None]:
    """(the distribution over the candidate values, or None; the prior success p where only it is given)."""
    kind, _, rest = str(text).partition(":")
    try:
        if kind == "uniform":
            k = int(rest)
            if k < 2:
                raise ValueError
            return np.full(k, 1.0 / k), None
        if kind == "zipf":
            s, k = rest.split(":")
            s, k = float(s), int(k)
            if k < 2 or not np.isfinite(s) or s < 0:
                raise ValueError
            w = np.arange(1, k + 1, dtype=float) ** -s
            return w / w.sum(), None
        if kind == "pii" and not rest:
            return np.array(PII_PRIOR) / np.sum(PII_PRIOR), None
        if kind == "probs":
            d = np.array([float(x) for x in rest.split(",")])
            if d.size < 2 or np.any(~np.isfinite(d)) or np.any(d < 0) or abs(d.sum() - 1.0) > 1e-6:
                raise ValueError
            return d / d.sum(), None
        if kind == "p":
            p = float(rest)
            if not 0.0 <= p <= 1.0:
                raise ValueError
            return None, p
    except ValueError:
        pass
    raise AuditInputError(f"--prior must be one of {PRIORS_TAKEN} (K >= 2 values, probabilities summing to 1), got "
                          f"{text!r}; e.g. --prior uniform:10.")


def read_outcomes(path: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, int | None]:
    """(outcomes (n,), prior successes p (n,) or None, whole priors (n, d) or None, guesses or None) from a CSV."""
    file = Path(path)
    if not file.is_file():
        raise AuditInputError(f"--csv must be a CSV file with one row per target, got {path!r}, which does not exist.")
    with file.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise AuditInputError(f"--csv must hold a header and one row per target, got none in {path}.")
    columns = list(rows[0])
    prior_columns = [c for c in columns if c.startswith("prior_")]
    if "success" not in columns or ("p" not in columns and not prior_columns):
        raise AuditInputError(f"--csv must have a column `success` and a column `p` or columns `prior_<value>`, got "
                              f"columns {columns} in {path}.")

    def numbers(name: str) -> np.ndarray:
        try:
            return np.array([float(row[name]) for row in rows])
        except (TypeError, ValueError):
            bad = next(i for i, row in enumerate(rows) if not _is_number(row[name]))
            raise AuditInputError(f"--csv column `{name}` must hold numbers, got {rows[bad][name]!r} in row {bad + 2} "
                                  f"of {path}.") from None

    success = numbers("success")
    if np.any(~np.isin(success, (0.0, 1.0))):
        bad = int(np.flatnonzero(~np.isin(success, (0.0, 1.0)))[0])
        raise AuditInputError(f"--csv column `success` must be 0 or 1 in every row, got {success[bad]:g} in row "
                              f"{bad + 2} of {path}.")
    guesses = None
    if "guessed" in columns:
        guessed = numbers("guessed")
        if np.any(~np.isin(guessed, (0.0, 1.0))) or np.any((guessed == 0) & (success == 1)):
            raise AuditInputError(f"--csv column `guessed` must be 0 or 1, and 1 wherever `success` is 1 (an "
                                  f"abstention is never right), in {path}.")
        guesses = int(guessed.sum())
        if guesses == 0:
            raise AuditInputError(f"--csv column `guessed` must mark at least one target guessed, got none in {path}.")
    p = numbers("p") if "p" in columns else None
    dists = np.stack([numbers(c) for c in prior_columns], axis=1) if prior_columns else None
    if dists is not None and np.any(np.abs(dists.sum(axis=1) - 1.0) > 1e-6):
        bad = int(np.flatnonzero(np.abs(dists.sum(axis=1) - 1.0) > 1e-6)[0])
        raise AuditInputError(f"--csv columns prior_<value> must sum to 1 in every row, got {dists[bad].sum():.6g} "
                              f"in row {bad + 2} of {path}.")
    return success.astype(int), p, dists, guesses


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline.audit", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    given = parser.add_argument_group("the observation (a count, or a CSV of per-target outcomes)")
    given.add_argument("--successes", type=int, help="targets the attack got right")
    given.add_argument("--targets", type=int, help="targets attacked (n)")
    given.add_argument("--prior", help=f"every target's prior: {PRIORS_TAKEN}")
    given.add_argument("--csv", help="one row per target: success, p or prior_<value> columns, optional guessed")
    given.add_argument("--guesses", type=int, help="at most this many targets guessed (the rest abstained, chosen after "
                                                   "the release); default: every target")
    given.add_argument("--k", type=int, default=1, help="guesses per target (success if any is right; default 1)")
    given.add_argument("--game", default="reconstruction", choices=("reconstruction", "membership"))
    fam = parser.add_argument_group("the guarantee audited")
    fam.add_argument("--family", default="gdp", help=f"one of {', '.join(FAMILIES)} (default gdp)")
    fam.add_argument("--delta", type=float, help="the fixed delta of family approx")
    fam.add_argument("--sample-rate", type=float, help="DP-SGD's sample rate (family dpsgd)")
    fam.add_argument("--steps", type=int, help="DP-SGD's steps (family dpsgd)")
    fam.add_argument("--neighboring", default="replace_one", help="DP-SGD's accounting: replace_one or add_remove")
    fam.add_argument("--claimed", type=float, help="the mechanism's claimed parameter: also say whether it is refuted")
    parser.add_argument("--confidence", default="0.95", help="confidence(s), comma-separated (default 0.95)")
    parser.add_argument("--rtol", type=float, default=DEFAULT_RTOL, help=f"the grid's relative spacing (default "
                                                                          f"{DEFAULT_RTOL:g})")
    parser.add_argument("--json", action="store_true", help="print the audits as JSON records")
    return parser


def _setting(args) -> tuple[int | np.ndarray, dict, int | None]:
    """(the successes, Auditor's prior arguments, guesses) from the options."""
    k = _validate.integer("--k", args.k, minimum=1)
    if args.csv is not None:
        if any(v is not None for v in (args.successes, args.targets, args.prior)):
            raise AuditInputError("--csv must be given alone, without --successes, --targets or --prior (the CSV "
                                  "holds them), got both.")
        outcomes, p, dists, guesses = read_outcomes(args.csv)
        if args.guesses is not None:
            raise AuditInputError("--guesses must not be given with --csv (its `guessed` column says which targets "
                                  "were guessed), got both.")
        if dists is not None and p is None:
            p = np.sort(dists, axis=1)[:, ::-1][:, :k].sum(axis=1) if k > 1 else None
        return outcomes, _prior_args(p, dists, k), guesses
    for name, value in (("--successes", args.successes), ("--targets", args.targets), ("--prior", args.prior)):
        if value is None:
            raise AuditInputError(f"{name} must be given (or --csv with one row per target), got nothing; e.g. "
                                  "--successes 612 --targets 1000 --prior uniform:10.")
    n = _validate.integer("--targets", args.targets, minimum=1)
    m = _validate.integer("--successes", args.successes, minimum=0, maximum=n)
    d, p = parse_prior(args.prior)
    if d is not None and k > d.size:
        raise AuditInputError(f"--k must be at most the prior's {d.size} values, got {k}.")
    if d is None:
        if k > 1:
            raise AuditInputError("--k must be 1 with --prior p:P (P is already the prior success of the guesses), "
                                  f"got {k}.")
        return m, _prior_args(np.full(n, p), None, 1), args.guesses
    top = float(np.sort(d)[::-1][:k].sum())
    return m, _prior_args(np.full(n, top), np.tile(d, (n, 1)), k), args.guesses


def _prior_args(p, dists, k: int) -> dict:
    """count_bounds' prior arguments: one exact guess reads the whole priors; k > 1 is set-valued success."""
    if k == 1:
        return {"p": p if dists is None else None, "distributions": dists}
    return {"p": p, "distributions": dists, "set_valued": True, "set_size": k if dists is not None else None}


def _confidences(text: str) -> list[float]:
    try:
        values = [float(x) for x in str(text).split(",")]
    except ValueError:
        raise AuditInputError(f"--confidence must be numbers in (0, 1), comma-separated, got {text!r}; e.g. "
                              "--confidence 0.95.") from None
    return list(np.atleast_1d(_validate.confidence("--confidence", values)))


def run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    successes, prior, guesses = _setting(args)
    family_args = {"delta": args.delta, "sample_rate": args.sample_rate, "steps": args.steps}
    family_args = {key: v for key, v in family_args.items() if v is not None}
    if args.family == "dpsgd":
        family_args["neighboring"] = args.neighboring
    auditor = Auditor(**prior, family=args.family, confidences=_confidences(args.confidence), guesses=guesses,
                      game=args.game, rtol=args.rtol, **family_args)
    records = []
    for c in auditor.confidences:
        one = auditor.audit(successes, c, start=args.claimed)
        record = one.as_dict()
        if args.claimed is not None:
            record["claimed"] = args.claimed
            record["refutes_claim"] = auditor.refutes(successes, args.claimed, c)
        records.append(record)
        if not args.json:
            print(one.statement)
            if args.claimed is not None:
                print(f"  the claimed {one.family.parameter} = {args.claimed:g} is "
                      f"{'REFUTED' if record['refutes_claim'] else 'not refuted'} at confidence {c:g}.")
    if args.json:
        print(json.dumps(records, indent=1))
    return 0


def main(argv: list[str] | None = None) -> int:
    from pipeline.io import command

    return command(lambda: run(argv), (ValueError,), 2, "interrupted.")


if __name__ == "__main__":
    sys.exit(main())
