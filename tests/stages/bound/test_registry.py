"""The theorem registry (stages/bound/registry.py): every theorem one object, and everything reads it.

* Every registered theorem's own tail is never below the EXACT worst case (lp_oracle's LP over all mechanisms), on a
  fixed-seed sample of small (eps, delta)-DP and eps-DP cases, each theorem where it applies.
* A theorem is one object: a toy theorem registered in a copy of the registry joins every minimum (count_bounds,
  expected_count_bounds; with a fixed-eps evaluation also pure_dp_tail, pure_dp_count_bound and tail_bound_at), the
  boxes' candidates, the labels and the numbering table, with nothing else touched.
* Every theorem label the bound boxes print comes from the registry.
* THEORY.md and docs/pages/bounds.md hold the registry's numbering table, listing exactly the registered theorems.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import lp_oracle as L
from pipeline import labels
from stages.bound import best_bound, registry, prior_run
from stages.bound import theorems as T
from stages.bound.box import TrialLaws
from stages.bound.comparator import ComparatorBound
from stages.bound.expected import ExpectedBound
from stages.bound.one_run import OneRunBound
from stages.bound.priors import Distributions, grouped
from stages.bound.profiles import ApproxDP, GaussianDP, PureDP
from stages.bound.registry import ANY, REGISTRY, Setting, Theorem
from stages.metric import Exact, Within
from stages.prior.base import Prior

ROOT = Path(__file__).resolve().parents[3]
#: A certified value may sit below the exact LP optimum by the LP solver's tolerance only.
TOL = 1e-7
CONFS = np.array([0.05, 0.5, 0.95])


# --------------------------------------------------------------------------------------------
# (a) each theorem on its own against the exact worst case
# --------------------------------------------------------------------------------------------
def _small_cases() -> list[dict]:
    """The oracle's one-constraint (eps, delta) and eps-DP cases whose LP is small (at most 16 datasets)."""
    seen, out = set(), []
    for c in L.oracle_grid() + L.whole_prior_grid():
        if c["kind"] not in ("approx", "pure") or len(c["constraints"]) != 1 or c.get("slow"):
            continue
        if c["domain"] ** c["n"] > 16 or c["name"] in seen:
            continue
        seen.add(c["name"])
        out.append(c)
    return out


def _profile(case):
    (eps, delta), = case["constraints"]
    return PureDP(eps) if case["kind"] == "pure" else ApproxDP(max(eps, 1e-12), delta)  # eps = 0: TV, 1e-12 weakens


def _setting(case) -> Setting:
    """Every input a theorem may read, for one grid case: the a-priori guesses' prior successes (the largest prior
    mass a guess can have, so also an upper bound on any guess's for Theorem 2's runs), each target's whole prior, two
    equal trials of both; Theorem 5 asked for."""
    dists = Distributions.of([np.asarray(pr, dtype=float) for pr in case["priors"]])
    set_valued = case["success"] != "exact"
    collision = [float(np.sum(np.square(pr))) for pr in case["priors"]] if set_valued else None
    g = grouped(list(case["p"]), collision, exact_guess=not set_valued)
    return Setting(_profile(case), g, dists, set_valued, case["k"], runs=(g, g), per_run=(dists, dists),
                   designated=True)


def _applying(case) -> list[tuple[str, bool]]:
    """(name, set-valued?) of every registered theorem with a tail that applies to the case."""
    setting = _setting(case)
    return [(t.name, setting.set_valued) for t in REGISTRY if t.tail is not None and t.applies(setting) is None]


def _sample() -> list[dict]:
    """A fixed-seed sample of the small cases in which every theorem with a tail applies at least twice, and once for
    each success notion (one exact guess, set-valued) it takes."""
    pool = _small_cases()
    hits = [_applying(c) for c in pool]
    need = {**{key: 1 for h in hits for key in h}, **{t.name: 2 for t in REGISTRY if t.tail is not None}}
    out = []
    for i in np.random.default_rng(20240).permutation(len(pool)):
        keys = hits[int(i)] + [name for name, _ in hits[int(i)]]
        if any(need.get(key, 0) > 0 for key in keys):
            out.append(pool[int(i)])
            for key in keys:
                need[key] = need.get(key, 0) - 1
        if not any(v > 0 for v in need.values()):
            break
    return out


SAMPLE = _sample()


def test_the_sample_checks_every_registered_theorem():
    assert len(SAMPLE) <= 16
    covered = {key for case in SAMPLE for key in _applying(case)}
    assert {name for name, _ in covered} == {t.name for t in REGISTRY if t.tail is not None}
    assert {t.name for t in (registry.SPLIT, registry.WHOLE_PRIOR, registry.EXPECTED)} <= {
        name for name, set_valued in covered if set_valued}


@pytest.mark.parametrize("case", SAMPLE, ids=[c["name"] for c in SAMPLE])
def test_every_theorem_is_never_below_the_exact_worst_case(case):
    worst = L.oracle_value(case)
    setting = _setting(case)
    for t in REGISTRY:
        if t.tail is not None and t.applies(setting) is None:
            value = t.tail(setting, case["v"])[0]
            assert value >= worst - TOL, (t.name, value, worst)


# --------------------------------------------------------------------------------------------
# (b) a theorem is one object
# --------------------------------------------------------------------------------------------
TOY = Theorem(name="toy bound of one (tests)", short="TOY", theory="—", paper="—", code="`test_registry.py`",
              needs="the prior successes p", applies=lambda s: None if s.p is not None else "needs p",
              tail=lambda s, v, **_: (1.0, math.nan, 0.0),
              counts=lambda s, confs, hint: np.full(confs.shape, s.p.n),
              at_eps={"tail": lambda s, v, eps: (1.0, eps, 0.0),
                      "counts": lambda s, confs, eps: np.full(confs.shape, s.p.n)})


def test_a_toy_theorem_registered_in_a_copy_joins_every_minimum(monkeypatch):
    rows = np.tile([0.6, 0.3, 0.1], (8, 1))
    profile = GaussianDP(1.0)
    counts, by = T.count_bounds(profile, None, CONFS, distributions=rows)
    tail = T.tail_bound(profile, None, 3, distributions=rows)
    copy = REGISTRY.with_theorem(TOY)
    assert TOY not in REGISTRY and copy.theorems[-1] is TOY and len(copy) == len(REGISTRY) + 1
    monkeypatch.setattr(registry, "REGISTRY", copy)
    monkeypatch.setattr(T, "_COUNTS_MEMO", {})
    # in the minimum, with its own entry: a bound of n never wins, so nothing else moves
    again, by_toy = T.count_bounds(profile, None, CONFS, distributions=rows)
    assert list(by_toy) == [*by, TOY.name] and np.array_equal(by_toy[TOY.name], [8, 8, 8])
    assert np.array_equal(again, counts) and T.tail_bound(profile, None, 3, distributions=rows) == tail
    _, expected_by = T.expected_count_bounds(profile, np.full((3, 8), 0.6), CONFS, distributions=rows)
    assert TOY.name in expected_by
    # at a fixed eps too (it has at_eps): with a profile (tail_bound_at) and without (pure_dp_tail)
    g = grouped(np.full(8, 0.6))
    at = copy.minimum(Setting(profile, g, Distributions.of(rows)), "tail", 3, at=1.0)
    assert list(at.by) == [registry.SPLIT.name, registry.WHOLE_PRIOR.name, TOY.name]
    assert at.value == T.tail_bound_at(profile, None, 3, 1.0, distributions=rows)
    alone = copy.minimum(Setting(None, g, Distributions.of(rows)), "counts", CONFS, at=1.0)
    assert list(alone.by) == [registry.PURE.name, registry.WHOLE_PRIOR.name, TOY.name]
    assert np.array_equal(alone.by[TOY.name], [8, 8, 8])
    assert np.array_equal(alone.value, T.pure_dp_count_bound(1.0, None, CONFS, distributions=rows))
    # the boxes list it, the labels and the numbering table read it
    assert TOY.name in OneRunBound().theorem_for(profile, Exact(), 1, 3)["candidates"]
    assert labels.theorem_id(TOY.name) == "TOY" and labels.short_theorem(f"{TOY.name}, averaged over the trials") \
        == "TOY-avg"
    assert f"| `TOY` | {TOY.name} |" in registry.numbering_table()


#: A toy that evaluates at a fixed eps only (no tail or counts of its own), below every real theorem there.
LOW = Theorem(name="toy bound of zero at a fixed eps (tests)", short="LOW", theory="—", paper="—", code="—",
              needs="the prior successes p", applies=lambda s: None if s.p is not None else "needs p",
              at_eps={"tail": lambda s, v, eps: (0.0, eps, 0.0),
                      "counts": lambda s, confs, eps: np.zeros(confs.shape, dtype=int)})


def test_a_toy_theorem_that_evaluates_at_a_fixed_eps_joins_the_fixed_eps_bounds(monkeypatch):
    rows = np.tile([0.6, 0.3, 0.1], (8, 1))
    p = np.full(8, 0.6)
    before = (T.pure_dp_tail(1.0, p, 3), T.pure_dp_count_bound(1.0, None, CONFS, distributions=rows),
              T.tail_bound_at(GaussianDP(1.0), p, 3, 1.0),
              T.tail_bound_at(PureDP(1.0), None, 3, 2.0, distributions=rows), T.tail_bound(GaussianDP(1.0), p, 3))
    assert min(before[0], before[2], before[3]) > 0 and np.all(before[1] > 0)
    monkeypatch.setattr(registry, "REGISTRY", REGISTRY.with_theorem(LOW))
    assert T.pure_dp_tail(1.0, p, 3) == 0.0 and T.tail_bound_at(GaussianDP(1.0), p, 3, 1.0) == 0.0
    assert T.tail_bound_at(PureDP(1.0), None, 3, 2.0, distributions=rows) == 0.0
    assert np.array_equal(T.pure_dp_count_bound(1.0, None, CONFS, distributions=rows), [0, 0, 0])
    assert T.tail_bound(GaussianDP(1.0), p, 3) == before[4]  # no tail of its own: the other minima keep theirs
    # it names why it does not join where p is unknown, like every theorem
    why = registry.REGISTRY.reasons(Setting(None, None, Distributions.of(rows)), "tail", at=1.0)
    assert why[LOW.name] == "needs p" and registry.MMC.name in why and registry.WHOLE_PRIOR.name not in why


def test_the_fixed_eps_counts_are_the_fixed_eps_tails_counts():
    """At a fixed eps a theorem's count is the smallest c whose tail at c + 1 is <= 1 - confidence: Theorem 3.1, and
    the split theorem and Theorem 3 with a profile (t = eps; no public function reads these two counts yet)."""
    rows = Distributions.of(np.tile([0.6, 0.3, 0.1], (8, 1)))
    g = grouped(np.full(8, 0.6))
    for setting, names in ((Setting(GaussianDP(1.0), g, rows), (registry.SPLIT.name, registry.WHOLE_PRIOR.name)),
                           (Setting(None, g, rows), (registry.PURE.name,))):
        counts = REGISTRY.minimum(setting, "counts", CONFS, at=1.5)
        assert set(names) <= set(counts.by) and len(counts.by) == 2
        for name in names:
            tail = lambda v: REGISTRY.get(name).at_eps["tail"](setting, v, 1.5)[0]
            for c, conf in zip(counts.by[name], CONFS):
                assert tail(c + 1) <= 1 - conf < tail(c), (name, c, conf)


def test_ties_go_to_the_theorem_listed_first():
    setting = Setting(GaussianDP(1.0), grouped(np.full(10, 0.3)))
    real = REGISTRY.minimum(setting, "counts", CONFS)
    same = Theorem(name="toy equal to the minimum (tests)", short="EQ", theory="—", paper="—", code="—",
                   needs="—", applies=lambda s: None, counts=lambda s, confs, hint: real.value)
    first = REGISTRY.with_theorem(same, before=REGISTRY.theorems[0].name).minimum(setting, "counts", CONFS)
    last = REGISTRY.with_theorem(same).minimum(setting, "counts", CONFS)
    assert first.winner == [same.name] * 3 and last.winner == real.winner
    assert np.array_equal(first.value, real.value) and np.array_equal(last.value, real.value)


def test_a_registry_refuses_two_theorems_of_one_name():
    with pytest.raises(ValueError, match="its own name"):
        REGISTRY.with_theorem(TOY).with_theorem(TOY)


# --------------------------------------------------------------------------------------------
# what the theorems share: MMC's conditions, Theorem 4's limit
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p, game", [([1 / 3] * 5, "reconstruction"), ([1 / 3] * 4 + [0.0], "reconstruction"),
                                     ([0.5] * 5, "membership"), ([1 / 3] * 5, "membership"),
                                     ([0.3, 0.2, 0.2, 0.2, 0.1], "reconstruction"), ([0.0] * 5, "reconstruction")])
def test_best_bound_and_the_theorems_read_one_test_of_mmcs_conditions(p, game):
    profile = GaussianDP(1.0)
    ours = T.MMC_THEOREM in T.count_bounds(profile, p, 0.9, game=game)[1]
    comparator = "mmc" in best_bound(profile, p, confidence=0.9, game=game).all
    assert ours == comparator == (registry.mmc_applies(np.asarray(p), game=game) is None)


def test_theorem_4s_limit_is_read_in_one_place(monkeypatch):
    dists = Distributions.of(np.tile([0.6, 0.4], (5, 1)))
    one = Setting(GaussianDP(1.0), grouped(np.full(5, 0.6)), dists)
    trials = Setting(GaussianDP(1.0), runs=(one.p,), per_run=(dists,))
    monkeypatch.setattr(prior_run, "PRIOR_RUN_MAX_TARGETS", 4)
    assert "at most prior_run.PRIOR_RUN_MAX_TARGETS = 4 targets, got 5" in registry.PRIOR_RUN.applies(one)
    assert registry.EXPECTED_PRIOR_RUN.applies(trials) == registry.PRIOR_RUN.applies(one)
    monkeypatch.setattr(prior_run, "PRIOR_RUN_MAX_TARGETS", None)  # no limit
    assert registry.PRIOR_RUN.applies(one) is None and registry.EXPECTED_PRIOR_RUN.applies(trials) is None


# --------------------------------------------------------------------------------------------
# (c) every label the pipeline prints comes from the registry
# --------------------------------------------------------------------------------------------
def _printed_names() -> set[str]:
    """Every theorem name the one_run and expected boxes put in a record (their own and their candidates)."""
    prior = Prior(np.tile([0.5, 0.3, 0.2], (4, 1)))
    laws = TrialLaws((prior, prior))
    guesses = {1: np.zeros((2, 4, 1), dtype=int), 2: np.tile([[0, 1]], (2, 4, 1))}
    out = set()
    for box in (OneRunBound(), OneRunBound(designated=True), ExpectedBound(), ExpectedBound(designated=True)):
        for profile in (GaussianDP(1.0), PureDP(1.0)):
            for metric, k in ((Exact(), 1), (Exact(), 2), (Within(1), 1)):
                for law in (prior, laws) if isinstance(box, ExpectedBound) else (prior,):
                    record = box.theorem(profile, law, metric, guesses[k])
                    out |= {record["theorem"], *record.get("candidates", ())}
    return out


def test_every_theorem_label_the_boxes_print_comes_from_the_registry():
    names = _printed_names()
    assert len(names) >= 10
    for name in names:
        found = REGISTRY.label_id(name)
        assert found is not None, name
        assert labels.theorem_id(name) == labels.short_theorem(name) == found
    for t in REGISTRY:
        assert labels.theorem_id(t.name) == t.label
    # the ids tell the theorems apart: printed names of two theorems never share one
    by_id: dict[str, set[str]] = {}
    for name in names:
        by_id.setdefault(labels.theorem_id(name), set()).add(REGISTRY.theorem_of(name).name)
    assert all(len(v) == 1 for v in by_id.values()), by_id


def test_the_other_boxes_print_their_own_names():
    """The comparator box's ids are its comparators' (best.COMPARATORS); older records' name of Theorem 3.1 keeps its
    id; the pure_dp box's theorem (conditional on the release) is no registered theorem and prints in full."""
    for name in ("kgk", "mmc"):
        record = ComparatorBound(name).theorem(GaussianDP(1.0), None, Exact(), np.zeros((1, 4, 1), dtype=int))
        assert labels.theorem_id(record["theorem"]) == name and REGISTRY.theorem_of(record["theorem"]) is None
    assert labels.theorem_id("Theorem 3.1 (eps-DP, the posterior argument)") == "P3.1"
    assert labels.theorem_id("pure_dp (Theorem 3.1)") == "pure_dp (Theorem 3.1)"


# --------------------------------------------------------------------------------------------
# (d) the numbering table in THEORY.md and docs/pages/bounds.md
# --------------------------------------------------------------------------------------------
_TABLE = re.compile(r"<!-- numbering table: .*? -->\n(.*?)<!-- end of the numbering table -->", re.S)


@pytest.mark.parametrize("page", ["stages/bound/THEORY.md", "docs/pages/bounds.md"])
def test_the_numbering_table_is_the_registrys(page):
    found = _TABLE.findall((ROOT / page).read_text())
    assert len(found) == 1, f"{page} must hold one numbering table between its markers"
    assert found[0] == registry.numbering_table(), (
        f"{page}'s numbering table is not the registry's: paste stages.bound.registry.numbering_table() between the "
        "markers")
    ids = [row.split(" | ")[2].strip("`") for row in found[0].splitlines()[2:]]
    assert ids == [t.label for t in REGISTRY]
