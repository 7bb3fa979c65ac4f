"""The audit in every game (metrics.json ``audit``, report.csv ``audit_<c>`` / ``refute_<c>``, a loud warning when an
attack refutes the claimed guarantee) and from the command line (``python -m pipeline.audit``)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from clitools import run_cli
from pipeline import audit as cli
from pipeline.game import audit_of, audit_warnings, compute_metrics
from pipeline.io import audit_column, refute_column
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
    for c, one in audit["attacks"][metrics["attack_label"]].items():
        assert one["median_successes"] == lower
        # the share refuting the claim is the share above the one_run bound (the same minimum at the claimed mu)
        assert one["share_refuting_claim"] == metrics["exceed"][c]
        if one["median_refutes"]:
            count, _ = count_bounds(A.family("gdp").profile(one["median"]), np.full(40, 0.1), float(c))
            assert count == one["median_count"] < lower


def test_report_row_carries_the_audit(compose_config, tmp_path):
    metrics = run_game(compose_config(*SMALL, "prior=zipf", "mechanism.epsilon=4"), tmp_path / "job")
    row = _job_row(tmp_path / "job" / "metrics.json", tmp_path, metrics)
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
