"""Issue 14, "reported under the wrong name": what a job's outputs say about privacy and the bound is true.

A run without a privacy profile (DP-SGD with clipping=none) reports no epsilon and no bound; the reported
(epsilon, delta) uses the mechanism's own delta; every output that shows a bound number names the
theorem that produced it.
"""
from __future__ import annotations

import json
import logging

import pytest

from pipeline.game import compute_metrics
from pipeline.figures import plot_successes
from pipeline.job import run_game
from pipeline.report import _job_row, report_figure


def _figure_text(path_or_fig) -> str:
    fig = path_or_fig
    texts = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        texts += [ax.get_title()] + [t.get_text() for t in ax.texts]
        if ax.get_legend() is not None:
            texts += [t.get_text() for t in ax.get_legend().get_texts()]
    for legend in fig.legends:
        texts += [t.get_text() for t in legend.get_texts()] + [legend.get_title().get_text()]
    return " ".join(" ".join(texts).split())


def _plot(metrics, tmp_path, monkeypatch):
    """plot_successes' figure, kept open for inspection."""
    import matplotlib.pyplot as plt

    import pipeline.figures as figures

    kept = {}
    monkeypatch.setattr(figures, "save_figure_atomic", lambda fig, path: kept.setdefault("fig", fig))
    plot_successes(metrics, tmp_path / "f.png")
    fig = kept["fig"]
    text = _figure_text(fig)
    plt.close(fig)
    return text


def test_non_private_dpsgd_run_reports_no_epsilon_and_no_bound(compose_config, tmp_path, monkeypatch):
    """Item 1: clipping=none was reported as 'DPSGD sigma=3.16, eps=10' with a bound of 67/96/100."""
    cfg = compose_config("mechanism=dpsgd", "attack=model_attack", "model=tiny", "mechanism.clipping=none",
                         "prior.n_targets=10", "mechanism.epochs=1", "trials=1")
    metrics = run_game(cfg, tmp_path / "job")
    assert metrics["privacy"]["private"] is False and "clipping=none" in metrics["privacy"]["reason"]
    assert metrics["privacy"]["epsilon"] is None and metrics["privacy"]["delta"] is None
    assert metrics["bound"] is None and metrics["bound_theorem"] is None and metrics["exceed"] is None
    assert metrics["worst_case_floor"] is None  # no guarantee, so no mechanism "with the same guarantee" either
    written = json.loads((tmp_path / "job" / "metrics.json").read_text())
    assert written["bound"] is None and written["privacy"]["private"] is False
    text = _plot(metrics, tmp_path, monkeypatch)
    assert "NOT PRIVATE" in text and "no bound" in text and "eps=" not in text
    # the report: no epsilon, no bound columns, and the figure says so
    row = _job_row(tmp_path / "job" / "metrics.json", tmp_path)
    assert row["private"] is False and row["epsilon"] is None and row["delta"] is None
    assert row["bound_0.95"] is None and row["exceed_0.95"] is None and row["bound_theorem"] == "none (not private)"
    assert row["floor_0.95"] is None
    fig = report_figure([row])
    try:
        assert "not private" in _figure_text(fig)
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_non_private_mechanism_has_no_profile():
    from stages.mechanism.dpsgd import DPSGDFineTuning

    class Model:  # the profile needs no model
        def params(self):
            return {"model": "stub"}

    private = DPSGDFineTuning(Model(), epsilon=2.0, n_targets=4, domain_size=2, epochs=1)
    public = DPSGDFineTuning(Model(), epsilon=2.0, n_targets=4, domain_size=2, epochs=1, clipping="none")
    assert private.profile is not None and private.privacy()["private"] is True
    assert public.profile is None and public.privacy()["private"] is False
    assert public.privacy()["epsilon_replace_one"] is None and public.params()["noise_multiplier"] is None


@pytest.mark.parametrize("overrides,delta,epsilon,source", [
    (("mechanism.delta=1e-3", "mechanism.epsilon=2"), 1e-3, 2.0, "mechanism.delta"),
    (("mechanism=randomized_response", "mechanism.epsilon=1.5"), 0.0, 1.5, "pure"),
    (("mechanism.mu=1", "mechanism.epsilon=null", "mechanism.delta=null"), 1e-5, None, "no delta"),
])
def test_reported_epsilon_uses_the_mechanisms_own_delta(overrides, delta, epsilon, source, compose_config, tmp_path,
                                                        monkeypatch):
    """Item 3: epsilon was reported at delta = 1e-5 whatever mechanism.delta said."""
    metrics, _, boxes = compute_metrics(compose_config(*overrides, "prior.n_targets=10", "trials=2"))
    privacy = metrics["privacy"]
    assert privacy["delta"] == delta and source in privacy["delta_source"]
    if epsilon is not None:
        assert privacy["epsilon"] == pytest.approx(epsilon, rel=1e-6)
    else:
        assert privacy["epsilon"] == pytest.approx(boxes.mechanism.profile.epsilon(1e-5))
    text = _plot(metrics, tmp_path, monkeypatch)
    assert f"at delta={delta:g}" in text


def test_summary_line_figure_and_report_name_the_theorem(compose_config, tmp_path, caplog, monkeypatch):
    """Item 2: with attack.k=3 the numbers came from another theorem than the one the outputs named."""
    cfg = compose_config("attack.k=3", "prior.n_targets=10", "trials=2")
    with caplog.at_level(logging.INFO, logger="pipeline.game"):
        metrics = run_game(cfg, tmp_path / "job")
    theorem = metrics["bound_theorem"]["theorem"]
    assert theorem and metrics["bound_theorem"]["set_valued"] is True
    summary = [r.getMessage() for r in caplog.records if r.getMessage().startswith("attack ")]
    assert len(summary) == 1 and theorem in summary[0]
    assert theorem in _plot(metrics, tmp_path, monkeypatch)
    row = _job_row(tmp_path / "job" / "metrics.json", tmp_path)
    assert row["bound_theorem"] == theorem
    assert [k for k in row if k.startswith(("bound_0", "exceed_0"))] == [
        "bound_0.05", "bound_0.5", "bound_0.95", "exceed_0.05", "exceed_0.5", "exceed_0.95"]
