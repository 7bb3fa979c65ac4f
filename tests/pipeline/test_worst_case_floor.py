"""The worst case's lower end in every game's outputs (metrics.json ``worst_case_floor``, report.csv ``floor_<c>``, the
job's log line): the counts of stages.bound.floor for the game's own profile and priors, never above the game's bound,
and, where it is not built, one sentence saying why."""
from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from pipeline.game import compute_metrics
from pipeline.job import run_game
from pipeline.report import _job_row, collect, config_columns
from stages.bound.box import prior_distributions
from stages.bound.floor import floor_counts, floor_mechanism

SMALL = ("prior.n_targets=60", "trials=8")


@pytest.mark.parametrize("overrides", [("prior=zipf", "mechanism.epsilon=1"),
                                       ("prior=uniform", "mechanism.epsilon=4"),
                                       ("prior=zipf", "mechanism=randomized_response", "mechanism.epsilon=2",
                                        "bound=pure_dp")], ids=["zipf-gaussian", "uniform-gaussian", "zipf-rr"])
def test_the_floor_is_the_games_own_and_below_its_bound(compose_config, overrides):
    metrics, _, boxes = compute_metrics(compose_config(*SMALL, *overrides))
    floor = metrics["worst_case_floor"]
    assert floor["mechanism"] == floor_mechanism(boxes.mechanism.profile) and "worst case lies between" in floor["meaning"]
    expected = floor_counts(boxes.mechanism.profile, prior_distributions(boxes.prior), metrics["confidences"])
    assert list(floor["counts"].values()) == expected
    for c, low in floor["counts"].items():
        assert low <= metrics["bound"][c], (c, low, metrics["bound"][c])


@pytest.mark.slow
def test_a_dpsgd_game_gets_randomized_response_certified_below_its_profile(compose_config):
    """DP-SGD with a sample rate below 1 has no closed-form curve: its floor is a mixture of randomized response at eps0
    certified below its privacy-loss profile (stages.bound.floor_mixture), named in the record, below the bound."""
    cfg = compose_config("mechanism=dpsgd", "model=tiny", "attack=model_attack", "mechanism.epochs=1",
                         "mechanism.batch_size=5", "mechanism.epsilon=null", "mechanism.noise_multiplier=1.0",
                         "prior.n_targets=20", "trials=2")  # q = 1/4: a privacy-loss profile, not GDP
    metrics, _, boxes = compute_metrics(cfg)
    floor = metrics["worst_case_floor"]
    # the mixture floor (issue 41): randomized-response components at eps0 on a grid, each certified below DPSGD's curve
    assert "randomized response over the m likeliest values" in floor["mechanism"] and " at eps0 " in floor["mechanism"]
    assert "certified below DPSGD(" in floor["mechanism"]
    expected = floor_counts(boxes.mechanism.profile, prior_distributions(boxes.prior), metrics["confidences"])
    assert list(floor["counts"].values()) == expected
    for c, low in floor["counts"].items():
        assert low <= metrics["bound"][c], (c, low, metrics["bound"][c])


def test_set_valued_success_gets_a_reason_not_a_floor(compose_config):
    metrics, _, _ = compute_metrics(compose_config(*SMALL, "prior=zipf", "metric=within", "metric.distance=1"))
    assert metrics["worst_case_floor"]["counts"] is None
    assert "one exact guess" in metrics["worst_case_floor"]["reason"]


def test_metrics_json_report_and_log_carry_it(compose_config, tmp_path, caplog):
    cfg = compose_config(*SMALL, "prior=zipf", "mechanism.epsilon=2")
    with caplog.at_level(logging.INFO, logger="pipeline.game"):
        metrics = run_game(cfg, tmp_path / "job")
    written = json.loads((tmp_path / "job" / "metrics.json").read_text())
    assert written["worst_case_floor"] == metrics["worst_case_floor"]
    row = _job_row(tmp_path / "job" / "metrics.json", tmp_path)
    for c, low in metrics["worst_case_floor"]["counts"].items():
        assert row[f"floor_{float(c):g}"] == low
    rows = collect(tmp_path)
    assert rows[0]["floor_0.95"] == metrics["worst_case_floor"]["counts"]["0.95"]
    assert not any(col.startswith("floor_") for col in config_columns(rows))  # results, not configuration
    assert any("floor (a real mechanism's counts)" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("bound", ["one_run", "expected"])
def test_per_trial_laws_get_a_floor_per_trial_or_one_for_the_mixture(compose_config, bound):
    """With a law per trial the floor follows the bound: one count per trial where each trial is bounded on its own
    law, one count for the mixture where the bound is over the mixture (the expected box); with the same law in every
    trial both are the fixed prior's floor."""
    from pipeline import boundary
    from pipeline.game import bound_of, build_boxes, floor_of, play_trials

    boxes = build_boxes(compose_config("prior=zipf", "prior.n_targets=30", "trials=3", f"bound={bound}"))
    summary = play_trials(boxes, seed=0, trials=3).attack.trials
    confidences = np.array([0.5, 0.95])
    theorem = bound_of(boxes, summary, confidences)["theorem"]
    fixed = floor_of(boxes, confidences, theorem)["counts"]
    per = floor_of(boxes, confidences, theorem, laws=[boxes.prior] * 3)["counts"]
    if boundary.mixes_trials(boxes.bound):
        assert per == fixed
    else:
        assert per == {c: [v] * 3 for c, v in fixed.items()}


def test_the_report_figure_shades_the_bracket_where_there_is_a_floor(compose_config, tmp_path):
    """report.png: a band from floor_<c> to bound_<c> at the highest confidence, named in the legend; none where no
    job has a floor (set-valued success)."""
    import matplotlib.pyplot as plt

    from pipeline.report import report_figure

    def legend(rows):
        fig = report_figure(rows)
        try:
            return [t.get_text() for lg in fig.legends for t in lg.get_texts()]
        finally:
            plt.close(fig)

    rows = []
    for eps in (1, 4):
        run_game(compose_config(*SMALL, "prior=zipf", f"mechanism.epsilon={eps}"), tmp_path / f"job{eps}")
        rows.append(_job_row(tmp_path / f"job{eps}" / "metrics.json", tmp_path))
    assert "worst case @ 0.95 lies here (floor to bound)" in legend(rows)
    for row in rows:
        for c in ("0.05", "0.5", "0.95"):
            row[f"floor_{c}"] = None
    assert not any("worst case" in entry for entry in legend(rows))
