"""The audit in every game (metrics.json ``audit``, report.csv ``audit_<c>`` / ``refute_<c>``, a loud warning when an
attack refutes the claimed guarantee) and from the command line (``python -m pipeline.audit``)."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from clitools import run_cli
from pipeline import audit as cli
from pipeline.game import ConfigError, audit_of, audit_warnings, compute_metrics
from pipeline.io import audit_column, refute_column, trials_rows
from pipeline.job import run_game
from pipeline.record import AttackPlay
from pipeline.report import _job_row
from stages.bound import audit as A
from stages.bound.theorems import count_bounds

SMALL = ("prior.n_targets=40", "trials=8")


def test_the_games_audit_is_its_median_trials_and_the_share_is_its_exceedance(compose_config):
    metrics, played, boxes = compute_metrics(compose_config(*SMALL, "mechanism.epsilon=2"))
    audit = metrics["audit"]
    assert audit["family"]["parameter"] == "mu" and np.isclose(audit["claimed"], boxes.mechanism.profile.gdp_mu())
    successes = np.asarray(metrics["attack_successes"])
    lower = int(np.sort(successes)[(successes.size - 1) // 2])
    auditor = A.Auditor(np.full(40, 0.1), confidences=metrics["confidences"], rtol=audit["rtol"])
    for c, one in audit["attacks"][metrics["attack_label"]].items():
        assert one["median_successes"] == lower
        # every trial's audit is the library's for its count, and the median theirs (the lower median)
        assert one["per_trial"] == [auditor.audit(int(m), float(c)).theta for m in successes]
        assert one["median"] == float(np.sort(one["per_trial"])[(successes.size - 1) // 2])
        # the share refuting the claim is the share above the one_run bound (the same minimum at the claimed mu)
        assert one["share_refuting_claim"] == metrics["exceed"][c]
        if one["median_refutes"]:
            count, _ = count_bounds(A.family("gdp").profile(one["median"]), np.full(40, 0.1), float(c))
            assert count == one["median_count"] < lower


def test_report_row_and_trials_csv_carry_the_audit(compose_config, tmp_path):
    metrics = run_game(compose_config(*SMALL, "prior=zipf", "mechanism.epsilon=4"), tmp_path / "job")
    row = _job_row(tmp_path / "job" / "metrics.json", tmp_path, metrics)
    # trials.csv: one row per attack and trial, its successes, bound, exceedance and audit at every confidence
    with (tmp_path / "job" / "trials.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    label = metrics["attack_label"]
    mine = [r for r in rows if r["attack"] == label]
    assert [int(r["successes"]) for r in mine] == metrics["attack_successes"]
    for c in metrics["confidences"]:
        key = repr(float(c))
        audits = metrics["audit"]["attacks"][label][key]["per_trial"]
        assert [float(r[audit_column(c)]) for r in mine] == audits
        assert [int(r[f"bound_{float(c):g}"]) for r in mine] == [metrics["bound"][key]] * len(mine)
        assert np.mean([int(r[f"exceed_{float(c):g}"]) for r in mine]) == metrics["exceed"][key]
    for c in metrics["confidences"]:
        one = metrics["audit"]["attacks"][metrics["attack_label"]][repr(float(c))]
        assert row[audit_column(c)] == one["median"] and row[refute_column(c)] == one["share_refuting_claim"]
    assert row["audit_family"] == "mu"


def test_an_attack_beyond_the_guarantee_is_said_loudly(compose_config):
    """A game whose trials succeed far beyond the bound (as a broken mechanism would let them) gets the warning."""
    cfg = compose_config(*SMALL, "mechanism.epsilon=1")
    metrics, played, boxes = compute_metrics(cfg)
    attack = played.attacks[0]
    broken = played.__class__(**{**played.__dict__, "attacks": (AttackPlay(
        label=attack.label, successes=np.full(attack.successes.shape, 35), trials=attack.trials, observed={}),)})
    bounds = {attack.label: {"bound": metrics["bound"], "per_trial": metrics.get("bound_per_trial")}}
    audit = audit_of(boxes, broken, np.asarray(metrics["confidences"]), None, 1e-5, bounds)
    lines = audit_warnings(audit, attack.label)
    # every trial refutes the claim at every confidence; 8 of 8 is beyond chance (p < 1e-3) only at 0.95
    assert [one["trials_refuting_claim"] for one in audit["attacks"][attack.label].values()] == [8, 8, 8]
    assert len(lines) == 1 and "REFUTES THE CLAIMED GUARANTEE: at confidence 0.95" in lines[0]
    assert audit_warnings(metrics["audit"], attack.label) == []


def test_cli_count_matches_the_library(tmp_path):
    out = run_cli("--successes", "40", "--targets", "100", "--prior", "p:0.1", "--family", "gdp", "--json",
                  cwd=tmp_path, module="pipeline.audit")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)[0]
    assert record["theta"] == A.audit(40, np.full(100, 0.1)).theta and "mu <= " in record["statement"]


def test_cli_priors():
    assert np.allclose(cli.parse_prior("uniform:4")[0], 0.25)
    zipf = cli.parse_prior("zipf:1.84:10")[0]
    assert np.isclose(zipf.sum(), 1.0) and zipf[0] > zipf[1]
    assert np.isclose(cli.parse_prior("pii")[0][0], 0.4)
    assert cli.parse_prior("p:0.3") == (None, 0.3)


def test_cli_csv_of_per_target_outcomes(tmp_path):
    rng = np.random.default_rng(0)
    success = (rng.random(60) < 0.5).astype(int)
    rows = ["success,p,guessed"] + [f"{s},0.1,1" for s in success]
    (tmp_path / "outcomes.csv").write_text("\n".join(rows) + "\n")
    assert cli.main(["--csv", str(tmp_path / "outcomes.csv"), "--family", "approx", "--delta", "1e-5",
                     "--claimed", "1.0"]) == 0
    out = run_cli("--csv", str(tmp_path / "outcomes.csv"), "--family", "approx", "--delta", "1e-5", "--json",
                  cwd=tmp_path, module="pipeline.audit")
    assert out.returncode == 0, out.stderr
    expected = A.audit(int(success.sum()), np.full(60, 0.1), family="approx", delta=1e-5)
    assert json.loads(out.stdout)[0]["theta"] == expected.theta and expected.refutes


@pytest.mark.parametrize("args, says", [
    (["--successes", "5", "--targets", "10", "--prior", "uniform:1"], "--prior must be"),
    (["--successes", "11", "--targets", "10", "--prior", "uniform:10"], "--successes must be"),
    (["--targets", "10", "--prior", "uniform:10"], "--successes must be given"),
    (["--successes", "5", "--targets", "10", "--prior", "zipf:x:10"], "--prior must be"),
    (["--successes", "5", "--targets", "10", "--prior", "uniform:10", "--family", "approx"], "delta must be given"),
    (["--successes", "5", "--targets", "10", "--prior", "uniform:10", "--confidence", "2"], "--confidence must be"),
    (["--successes", "5", "--targets", "10", "--prior", "uniform:10", "--k", "11"], "--k must be"),
    (["--csv", "missing.csv"], "does not exist"),
])
def test_cli_bad_input_is_one_sentence(args, says, capsys):
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and says in err and "\n" not in err


@pytest.mark.parametrize("text, says", [
    ("success,p\n2,0.1\n", "`success` must be 0 or 1"),
    ("success\n1\n", "a column `p`"),
    ("success,p,guessed\n1,0.1,0\n", "an abstention is never right"),
    ("success,prior_0,prior_1\n1,0.5,0.6\n", "must sum to 1"),
    ("success,p\n1,x\n", "must hold numbers"),
])
def test_cli_bad_csv_is_one_sentence(text, says, tmp_path, capsys):
    (tmp_path / "bad.csv").write_text(text)
    assert cli.main(["--csv", str(tmp_path / "bad.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err


def test_the_audit_setting_median_none_and_a_bad_value(compose_config, tmp_path):
    """audit=median: the median trial's audit alone (the same number as every trial's audit gives it), no per-trial
    audits; audit=none: no audit; anything else is refused in one sentence naming the setting."""
    full, _, _ = compute_metrics(compose_config(*SMALL, "mechanism.epsilon=2"))
    median = run_game(compose_config(*SMALL, "mechanism.epsilon=2", "audit=median"), tmp_path / "median")
    label = median["attack_label"]
    for key, one in median["audit"]["attacks"][label].items():
        every = full["audit"]["attacks"][label][key]
        assert one["per_trial"] is None and one["median"] == every["median"]
        assert one["median_successes"] == every["median_successes"] and one["median_count"] == every["median_count"]
        assert one["share_refuting_claim"] == every["share_refuting_claim"]
    with (tmp_path / "median" / "trials.csv").open() as handle:
        assert {row["audit_0.95"] for row in csv.DictReader(handle)} == {""}
    none, _, _ = compute_metrics(compose_config(*SMALL, "mechanism.epsilon=2", "audit=none"))
    assert none["audit"] is None and none["bound"] == full["bound"]
    with pytest.raises(ConfigError) as refused:
        compute_metrics(compose_config(*SMALL, "audit=trials"))
    message = str(refused.value)
    assert "audit must be one of all, median, none" in message and "'trials'" in message and "\n" not in message


def test_trials_rows_of_a_per_trial_law_and_of_a_job_without_audit():
    """A per-trial law (prior=baynet) holds one bound per trial under `bound`; a non-private job has none."""
    metrics = {"confidences": [0.5], "prior_successes": [3, 4],
               "attacks": {"rap": {"successes": [5, 2], "bound": {"0.5": [4, 6]}}},
               "audit": {"attacks": {"rap": {"0.5": {"per_trial": [0.7, 0.0]}}}}}
    rows = trials_rows(metrics)
    assert [(r["bound_0.5"], r["exceed_0.5"], r["audit_0.5"]) for r in rows] == [(4, 1, 0.7), (6, 0, 0.0)]
    bare = trials_rows({"confidences": [0.5], "attacks": {"rap": {"successes": [1], "bound": None}}, "audit": None})
    assert bare == [{"trial": 0, "attack": "rap", "successes": 1, "prior_successes": None, "bound_0.5": None,
                     "exceed_0.5": None, "audit_0.5": None}]
