"""Issue 42 item 2: a figure that shows a bound shows the audit beside it.

report.png: beside each panel of successes, where its private jobs have audit columns (report.csv audit_<c>, the
median trial's audit at confidence c), a panel "what the attack proves": the audit at each confidence against the
claimed parameter (audit_claimed), in the bound's style at that confidence, and the diagonal (the claim). A run
that refutes nothing is drawn (at 0, or on an edge line where the axis cannot show its value); jobs without audit
columns draw the figure as before. successes.png: the median trial's audit in one line of the legend's title.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from layouttools import capture_figures, coincident_lines, layout_problems, texts
from test_report_sweeps import CONFIDENCES, _job, _metrics

from pipeline.io import audit_column
from pipeline.report import AUDIT_READING, collect, plot, report_figure

AUDIT_TITLE = "what the attack proves"
ABOVE = "the claim (audit = claimed): a point above it refutes the claimed mu or eps"
BELOW = "the claim (audit = claimed): a point below it refutes the claimed sigma"
EDGE = "audit refutes nothing: drawn on the panel's dotted edge line"


def _audit(parameter: str, claimed: float, medians) -> dict:
    """metrics.json's audit record (pipeline.game.audit_of) for the attack noise_aware."""
    family = {"mu": "gdp", "eps": "pure", "noise_multiplier": "dpsgd"}[parameter]
    guarantee = {"mu": "mu-GDP", "eps": "eps-DP", "noise_multiplier": "DP-SGD-private at noise multiplier sigma"}
    return {"family": {"family": family, "parameter": parameter}, "claimed": claimed, "guarantee": guarantee[parameter],
            "attacks": {"noise_aware": {repr(c): {"median": m, "share_refuting_claim": 0.0}
                                        for c, m in zip(CONFIDENCES, medians)}}}


def _sweep(root: Path, jobs) -> list[dict]:
    """A sweep's folder of jobs (targets, eps, audit record or None); the report's rows of it."""
    for number, (targets, eps, audit) in enumerate(jobs):
        metrics = _metrics(eps, 20 + number, 19, 18)
        if audit is not None:
            metrics["audit"] = audit
        _job(root / str(number), [f"prior.targets={targets}", f"mechanism.epsilon={eps:g}"], metrics, eps)
    return collect(root)


# mu = claimed at eps 1, 3, 10 (a gaussian mechanism's calibrated mu), then eps = inf (not private, no audit); the
# median trial's audit at 0.05, 0.5, 0.95: at eps = 1 it refutes nothing at 0.95 (0), at eps = 10 more than the claim
MU_JOBS = [(0.2, (0.3, 0.1, 0.0)), (0.6, (0.9, 0.5, 0.2)), (2.0, (2.5, 1.8, 1.2))]


def _mu_sweep(root: Path, facets=("[SEX]", "[EDU]")) -> list[dict]:
    jobs = []
    for targets in facets:
        jobs += [(targets, eps, _audit("mu", mu, medians)) for eps, (mu, medians) in zip((1.0, 3.0, 10.0), MU_JOBS)]
        jobs.append((targets, math.inf, None))
    return _sweep(root, jobs)


def _panels(fig):
    """(the success panels, the audit panels) of a report figure, visible ones only."""
    visible = [ax for ax in fig.axes if ax.get_visible()]
    audit = [ax for ax in visible if ax.get_title().startswith(AUDIT_TITLE)]
    return [ax for ax in visible if ax not in audit], audit


def _lines(ax) -> dict:
    out = {}
    for line in ax.get_lines():
        out.setdefault(line.get_label(), []).append(line)
    return out


def _legend(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def _words(fig) -> str:
    return " ".join(" ".join(t.get_text().split()) for t in texts(fig))


@pytest.fixture
def close():
    import matplotlib.pyplot as plt

    figures = []
    yield figures.append
    for fig in figures:
        plt.close(fig)


def test_each_facet_has_its_audit_panel_beside_it_with_the_audit_at_each_confidence(tmp_path, close):
    rows = _mu_sweep(tmp_path / "sweep")
    assert {r[audit_column(0.95)] for r in rows if r["private"]} == {0.0, 0.2, 1.2}  # the report's columns
    with capture_figures() as saved:
        plot(rows, tmp_path / "report.png")
    (fig,) = [fig for path, fig in saved if "report" in Path(path).name]
    close(fig)
    bound, audit = _panels(fig)
    assert len(bound) == 2 and len(audit) == 2
    # each audit panel sits right of its facet's panel, on the same grid row
    order = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert order == ["prior.targets=[SEX]", f"{AUDIT_TITLE}: prior.targets=[SEX]", "prior.targets=[EDU]",
                     f"{AUDIT_TITLE}: prior.targets=[EDU]"]
    claimed = [mu for mu, _ in MU_JOBS]
    for ax in audit:
        lines = _lines(ax)
        for i, c in enumerate(CONFIDENCES):
            (line,) = lines[f"audit @ {c:g} (median trial)"]
            assert list(line.get_xdata()) == claimed  # the private jobs only: eps = inf has no audit
            assert list(line.get_ydata()) == [medians[i] for _, medians in MU_JOBS]
            # the bound's style at c (the success panel's bound @ c line), in the audit's color
            (bound_line,) = _lines(bound[0])[f"bound @ {c:g}"]
            assert (line.get_linestyle(), line.get_marker()) == (bound_line.get_linestyle(), bound_line.get_marker())
            assert line.get_color() != bound_line.get_color()
        (diagonal,) = lines[ABOVE]
        x, y = diagonal.get_xdata(), diagonal.get_ydata()
        assert np.allclose(x, y) and min(x) <= 0.0 and max(x) >= max(claimed) * 1.25  # over every point
        assert ax.get_xlabel() == "claimed mu" and "mu <=" in ax.get_ylabel()
        assert ax.get_xscale() == "linear" and ax.get_ylim()[0] < 0.0  # the refutes-nothing 0 is drawn, inside
        assert EDGE not in lines  # 0 is the value itself on a linear axis: no edge line
    assert set(_legend(fig)) >= {ABOVE, *(f"audit @ {c:g} (median trial)" for c in CONFIDENCES)}
    words = _words(fig)
    assert " ".join(AUDIT_READING.split()) in words
    assert not layout_problems(fig), layout_problems(fig)
    assert not coincident_lines(fig), coincident_lines(fig)


def test_the_success_panels_are_as_before(tmp_path, close):
    """The audit panels add panels; the success panels keep their lines, and share their y axis (same n)."""
    rows = _mu_sweep(tmp_path / "sweep")
    fig = report_figure(rows)
    close(fig)
    bound, audit = _panels(fig)
    for ax in bound:
        labels = [line.get_label() for line in ax.get_lines()]
        assert labels.count("attack: noise_aware (mean)") == 2 and labels.count("bound @ 0.95") == 1
        assert not any(label.startswith("audit") for label in labels)
    assert bound[0].get_ylim() == bound[1].get_ylim()
    assert audit[0].get_ylim() != bound[0].get_ylim()  # an audit panel has its own axes


def test_without_audit_columns_the_figure_has_no_audit_panel(tmp_path, close):
    """Jobs without an audit record (no family fits, or an older metrics.json) and not-private jobs."""
    rows = _sweep(tmp_path / "sweep", [(t, eps, None) for t in ("[SEX]", "[EDU]") for eps in (1.0, 3.0, math.inf)])
    assert all(r[audit_column(0.95)] is None and r["audit_claimed"] is None for r in rows)
    fig = report_figure(rows)
    close(fig)
    bound, audit = _panels(fig)
    assert len(bound) == 2 and audit == [] and len(fig.axes) == 2
    assert not any(entry.startswith(("audit", "the claim")) for entry in _legend(fig))
    assert "what the attack proves" not in _words(fig)
    assert not layout_problems(fig), layout_problems(fig)
    # a not-private job alone: no audit panel either
    fig = report_figure([r for r in rows if not r["private"]][:1])
    close(fig)
    assert _panels(fig)[1] == []


def test_a_facet_without_audit_keeps_an_empty_slot(tmp_path, close):
    jobs = [("[SEX]", eps, _audit("mu", mu, medians)) for eps, (mu, medians) in zip((1.0, 3.0, 10.0), MU_JOBS)]
    jobs += [("[EDU]", eps, None) for eps in (1.0, 3.0)]
    fig = report_figure(_sweep(tmp_path / "sweep", jobs))
    close(fig)
    bound, audit = _panels(fig)
    assert [ax.get_title() for ax in audit] == [f"{AUDIT_TITLE}: prior.targets=[SEX]"]
    assert len(bound) == 2 and len(fig.axes) == 4  # the [EDU] facet's slot beside it is hidden
    assert not layout_problems(fig), layout_problems(fig)


def test_dpsgd_audits_the_noise_multiplier_the_other_way_and_draws_what_refutes_nothing_at_the_edge(tmp_path, close):
    """sigma: the audit refutes every sigma >= it, inf where it refutes nothing (a point on the panel's top edge)."""
    sigmas = [(3.0, (2.0, math.inf, math.inf)), (0.8, (0.5, 0.7, math.inf))]
    jobs = [("[SEX]", eps, _audit("noise_multiplier", s, medians)) for eps, (s, medians) in zip((1.0, 10.0), sigmas)]
    fig = report_figure(_sweep(tmp_path / "sweep", jobs))
    close(fig)
    (ax,) = _panels(fig)[1]
    assert ax.get_xlabel() == "claimed noise multiplier sigma" and "sigma >=" in ax.get_ylabel()
    lines = _lines(ax)
    assert BELOW in lines and ABOVE not in lines
    (edge,) = lines[EDGE]
    top = edge.get_ydata()[0]
    assert ax.get_ylim()[0] < top < ax.get_ylim()[1]  # inside the panel
    # jobs by claimed sigma: 0.8, then 3.0
    (joined,) = lines["audit @ 0.05 (median trial)"]
    assert list(joined.get_xdata()) == [0.8, 3.0] and list(joined.get_ydata()) == [0.5, 2.0]
    assert top > 3.0  # above every finite audit and claim
    for c, refuting_nothing in ((0.5, [3.0]), (0.95, [0.8, 3.0])):
        (joined,) = lines[f"audit @ {c:g} (median trial)"]
        assert [x for x, y in zip(joined.get_xdata(), joined.get_ydata()) if np.isnan(y)] == refuting_nothing
        (points,) = lines[f"_nothing refuted @ {c:g}"]
        assert list(points.get_xdata()) == refuting_nothing and set(points.get_ydata()) == {top}
        assert points.get_marker() == joined.get_marker() and points.get_linestyle() == "None"
    assert BELOW in _legend(fig) and EDGE in _legend(fig)
    assert not layout_problems(fig), layout_problems(fig)
    assert not coincident_lines(fig), coincident_lines(fig)


def test_claims_over_decades_are_drawn_on_log_axes_with_nothing_refuted_at_the_bottom_edge(tmp_path, close):
    epsilons = (0.1, 1.0, 10.0, 100.0)
    jobs = [("[SEX]", eps, _audit("eps", eps, (eps / 2, eps / 5, 0.0))) for eps in epsilons]
    fig = report_figure(_sweep(tmp_path / "sweep", jobs))
    close(fig)
    (ax,) = _panels(fig)[1]
    assert ax.get_xscale() == ax.get_yscale() == "log" and ax.get_xlabel() == "claimed eps"
    lines = _lines(ax)
    (edge,) = lines[EDGE]
    bottom = edge.get_ydata()[0]
    assert ax.get_ylim()[0] < bottom < min(eps / 5 for eps in epsilons)
    (points,) = lines["_nothing refuted @ 0.95"]
    assert list(points.get_xdata()) == list(epsilons) and set(points.get_ydata()) == {bottom}
    (joined,) = lines["audit @ 0.05 (median trial)"]
    assert list(joined.get_ydata()) == [eps / 2 for eps in epsilons]
    assert not layout_problems(fig), layout_problems(fig)


# ------------------------------------------------------------------------------------------------------------
# successes.png (pipeline.figures.plot_successes): the median trial's audit in the legend's title

def _game(audit: dict | None) -> dict:
    from test_figure_layout import _game_metrics

    metrics = _game_metrics()
    if audit is not None:
        audit = json.loads(json.dumps(audit).replace("noise_aware", metrics["attack_label"]))
    metrics["audit"] = audit
    return metrics


@pytest.mark.parametrize("audit,line", [
    (_audit("mu", 1.0, (0.9, 0.85, 0.78)), "audit @ 0.95 (median trial): not mu-GDP for mu <= 0.78 (claimed mu = 1)"),
    (_audit("mu", 1.0, (0.9, 0.85, 0.0)), "audit @ 0.95 (median trial): refutes no mu (claimed mu = 1)"),
    (_audit("noise_multiplier", 0.8, (0.5, 0.61, 0.63)),
     "audit @ 0.95 (median trial): not DP-SGD-private for sigma >= 0.63 (claimed sigma = 0.8)"),
    (_audit("noise_multiplier", 0.8, (0.5, math.inf, math.inf)),
     "audit @ 0.95 (median trial): refutes no sigma (claimed sigma = 0.8)"),
    ({"reason": "no audited family fits the profile"}, None),
    (None, None),
])
def test_the_successes_figure_names_the_median_trials_audit(audit, line, tmp_path):
    from pipeline.figures import audit_line, plot_successes

    metrics = _game(audit)
    assert audit_line(metrics) == (line or "")
    with capture_figures() as saved:
        plot_successes(metrics, tmp_path / "successes.png")
    fig = saved[-1][1]
    title = " ".join(fig.legends[0].get_title().get_text().split())
    if line is None:
        assert "audit" not in title
    else:
        assert title.endswith(line) and title.startswith("bound lines:")
    assert not layout_problems(fig), layout_problems(fig)


def test_a_not_private_job_has_no_audit_line(tmp_path):
    from test_figure_layout import _game_metrics

    from pipeline.figures import plot_successes

    metrics = _game_metrics(private=False)
    metrics["audit"] = None
    with capture_figures() as saved:
        plot_successes(metrics, tmp_path / "successes.png")
    assert "audit" not in _words(saved[-1][1])


@pytest.mark.slow  # plays two games: about 15 s
def test_played_games_draw_their_audit(compose_config, tmp_path, close):
    """Two gaussian games (eps = 1, 4), played: the audit panel draws each job's metrics.json audit, the successes
    figure says the median trial's."""
    from clitools import SMALL

    from pipeline.figures import audit_line
    from pipeline.job import run_game
    from pipeline.report import _job_row

    rows, played = [], []
    for eps in (1, 4):
        metrics = run_game(compose_config(*SMALL, f"mechanism.epsilon={eps}"), tmp_path / f"job{eps}")
        played.append(metrics)
        rows.append(_job_row(tmp_path / f"job{eps}" / "metrics.json", tmp_path))
        assert audit_line(metrics).startswith("audit @ 0.95 (median trial): ")
    fig = report_figure(rows)
    close(fig)
    (ax,) = _panels(fig)[1]
    lines = _lines(ax)
    claimed = [m["audit"]["claimed"] for m in played]
    for c in CONFIDENCES:
        (line,) = lines[f"audit @ {c:g} (median trial)"]
        medians = [m["audit"]["attacks"][m["attack_label"]][repr(c)]["median"] for m in played]
        order = np.argsort(claimed)
        assert np.allclose(line.get_xdata(), np.asarray(claimed)[order])
        assert np.allclose(line.get_ydata(), np.asarray(medians)[order])
    assert ax.get_xlabel() == "claimed mu"
    assert not layout_problems(fig), layout_problems(fig)
