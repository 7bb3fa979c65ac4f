"""Every figure the project draws, drawn on small inputs and read as a reader reads it (issue 23, item 9).

Each figure is made by the code that makes it in a run: `plot_successes` (every game job's figures/successes.png),
`pipeline.report` (a sweep's figures/report.png, here a sweep with attack variants and an eps = inf job), and
every experiment's `plot` (conf/experiment/*.yaml) on rows made the way its jobs make them: the analytic tasks
run (shrunk), the figures of games read game metrics (played, or written here in the shape a game writes them).
tests/layouttools.py checks each saved figure: no text leaves the canvas or overlaps another text or the data (a
legend over the bars, a label over an error bar), no panel title holds a result column, every series of the data
(attack variants, canaries, objectives) has a legend entry, no two lines coincide unmarked; and what each figure
of item 9 lacked: whole trial counts, the table and column of a tabular game, the theorem behind every bound
(the one the record names, wrapped), delta, the fitted Zipf exponent, eps_protect's kink at p = 1/2.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from layouttools import (capture_figures, coincident_lines, drawn_labels, integer_ticks, layout_problems,
                         missing_series, result_titles, texts)

import pipeline
from pipeline.labels import short_theorem, theorem_id, theorem_parts

CONF_DIR = Path(pipeline.CONF_DIR)
LEVELS = (0.05, 0.5, 0.95)
SPLIT = "split one-run theorem (THEORY.md Thm 1), a-priori guesses z*"
WHOLE = "whole-prior theorem (THEORY.md Thm 3)"
#: What `pipeline.game.bound_of` records when the minimum over theorems is not one theorem at every confidence.
MIN_OF = f"min of {SPLIT} (at 0.05, 0.5, 0.95), {WHOLE} (at 0.05, 0.5)"


@pytest.fixture
def compose(compose_config):
    return compose_config


def _all_text(fig) -> str:
    """Every text of the figure, its lines joined by spaces (a wrapped name reads as one)."""
    return " ".join(" ".join(t.get_text().split()) for t in texts(fig))


def _check(fig, *, results=(), series=None) -> list[str]:
    """The checks every figure passes (tests/layouttools.py)."""
    return (layout_problems(fig) + coincident_lines(fig) + result_titles(fig, results)
            + missing_series(fig, series or {}))


def _saved(saved, name: str):
    """The figure saved under `name` (save_figure_atomic writes .<name>.tmp.png, then renames it)."""
    figures = [fig for path, fig in saved if Path(path).name in (name, f".{Path(name).stem}.tmp{Path(name).suffix}")]
    assert figures, f"no figure {name} was saved: {[p for p, _ in saved]}"
    return figures[-1]


# ------------------------------------------------------------------------------------------------------------
# figures/successes.png of a game job (pipeline.figures.plot_successes)

def _game_metrics(*, trials=3, n=30, attacks=("bayes_optimal",), private=True, per_trial=False, theorem=SPLIT,
                  by_confidence=None, prior="uniform", mechanism="gaussian", attack="bayes_optimal", params=None,
                  unusable=None) -> dict:
    """A game job's metrics.json, in the shape pipeline.game.game_metrics writes it."""
    rng = np.random.default_rng(0)
    successes = {label: rng.integers(0, n // 2, size=trials).tolist() for label in attacks}
    prior_successes = rng.integers(0, n // 3, size=trials).tolist()
    bound = exceed = record = floor = None
    if private:
        counts = {repr(c): n // 3 + 4 * i for i, c in enumerate(LEVELS)}
        # a per-trial law (prior=baynet): one count per trial
        bound = {c: [v + r % 2 for r in range(trials)] if per_trial else v for c, v in counts.items()}
        exceed = {repr(c): 0.0 for c in LEVELS}
        record = {"theorem": theorem, "by_confidence": by_confidence or {repr(c): SPLIT for c in LEVELS}}
        # the bracket's lower end as pipeline.game.floor_of writes it (a count per trial where the bound has one)
        floor = {"counts": {c: [x - 3 for x in v] if per_trial else v - 3 for c, v in bound.items()},
                 "mechanism": "a product of per-target ...", "meaning": "..."}
    first = attacks[0]
    return {
        "n_targets": n, "trials": trials, "seed": 0, "k": 1,
        "boxes": {"prior": prior, "mechanism": mechanism, "attack": attack, "metric": "exact", "bound": "one_run"},
        "baseline": {"k": 1, "metric": "exact"},
        "attack_label": first, "attack_successes": successes[first], "prior_successes": prior_successes,
        "attack_success_mean": float(np.mean(successes[first])), "prior_success_mean": float(np.mean(prior_successes)),
        "confidences": list(LEVELS), "bound": bound, "bound_theorem": record, "exceed": exceed,
        "attacks": {label: {"successes": s, "success_mean": float(np.mean(s)), "bound": bound, "exceed": exceed,
                            "bound_theorem": record} for label, s in successes.items()},
        "privacy": ({"private": True, "epsilon": 1.0, "delta": 1e-5} if private else
                    {"private": False, "reason": "epsilon = inf: the exact marginals", "epsilon": None, "delta": None}),
        "unusable_canaries": unusable, "worst_case_floor": floor,
        "params": params or {"prior": {"prior": prior}, "bound": {"bound": "one_run"}},
    }


_TABULAR = dict(prior="baynet", mechanism="noisy_marginals", attack="rap", attacks=("noise_aware", "plain"),
                per_trial=True, params={"prior": {"prior": "baynet", "dataset": "acs", "targets": ["SEX"],
                                                  "known": ["AGEP", "EDU"], "n_records": 30},
                                        "attack": {"attack": "rap", "decode": "joint"}, "bound": {"bound": "one_run"}})
SUCCESSES = {
    # few trials: counts of 0, 1 or 2 trials a bar (matplotlib's ticks were 0.25 apart)
    "uniform_three_trials": _game_metrics(),
    # the README's tabular game: a per-trial bound, the minimum over two theorems, a variant
    "tabular_min_of_theorems": _game_metrics(theorem=MIN_OF, trials=2, by_confidence={
        "0.05": {SPLIT: 1, WHOLE: 1}, "0.5": {SPLIT: 1, WHOLE: 1}, "0.95": {SPLIT: 2}}, **_TABULAR),
    "tabular_not_private": _game_metrics(private=False, trials=2, **_TABULAR),
    "llm_diverged": _game_metrics(trials=8, n=100, attacks=("model_attack", "model_only", "fitted"), prior="pii",
                                  mechanism="dpsgd", attack="model_attack", unusable=12),
}


@pytest.mark.parametrize("case", sorted(SUCCESSES))
def test_successes_figure(case, tmp_path):
    from pipeline.figures import plot_successes

    metrics = SUCCESSES[case]
    with capture_figures() as saved:
        plot_successes(metrics, tmp_path / "successes.png")
    fig = _saved(saved, "successes.png")
    (ax,) = [a for a in fig.axes if a.get_visible()]
    problems = _check(fig, results=["attack_success_mean", "prior_success_mean", "success_mean"],
                      series={label: label for label in metrics["attacks"]})
    problems += integer_ticks(ax, "y")  # trials are counted
    words = _all_text(fig)
    if metrics["boxes"]["prior"] == "baynet":  # a tabular game: which table, which column
        problems += [f"the figure does not name {what}" for what in ("acs", "SEX") if what not in words]
    if metrics["bound"] is not None:  # every theorem behind a bound line, as the record names it
        names = {name for w in metrics["bound_theorem"]["by_confidence"].values()
                 for name in (w if isinstance(w, dict) else [w])}
        problems += [f"the figure does not name the theorem {name!r}" for name in names if name not in words]
        assert "worst case @ 0.95 lies here (floor to bound)" in words  # the bracket, shaded
    else:
        assert "not private" in words.lower()
    if metrics.get("unusable_canaries"):
        assert "WARNING" in words
    assert not problems, problems


def _bars_and_lines(metrics, tmp_path):
    """(the drawn bars as (left, right), the bound lines' x by their label) of a job's successes.png."""
    from pipeline.figures import plot_successes

    with capture_figures() as saved:
        plot_successes(metrics, tmp_path / "successes.png")
    (ax,) = _saved(saved, "successes.png").axes
    bars = [(p.get_x(), p.get_x() + p.get_width()) for p in ax.patches
            if type(p).__name__ == "Rectangle" and p.get_height() > 0]
    lines = {line.get_label(): line.get_xdata()[0] for line in ax.get_lines()}
    return bars, lines


@pytest.mark.parametrize("n,spread", [(100, False), (100, True), (30, False)])
def test_a_count_equal_to_the_bound_is_drawn_within_it(n, spread, tmp_path):
    """Issue 39 item 7: every trial scoring 100 = n with the bound at 100 drew the bar right of the line (a
    violation to the eye). Bars are centred on their counts and the line "at most v" sits at v + 0.5, so a bar
    of counts <= v ends at or left of it; with a spread over 0..n (several counts a bar) no bar straddles it."""
    metrics = _game_metrics(trials=20, n=n)
    metrics["attack_successes"] = [n] * 20
    metrics["attacks"]["bayes_optimal"]["successes"] = [n] * 20
    if spread:
        metrics["prior_successes"] = list(range(0, n, 5))
    metrics["bound"] = {repr(c): n - (2 - i) * 3 * (not spread) for i, c in enumerate(LEVELS)}
    bars, lines = _bars_and_lines(metrics, tmp_path)
    top = lines[f"bound @ 0.95: at most {n}"]
    assert top == n + 0.5
    assert all(right <= top + 1e-9 or left >= top - 1e-9 for left, right in bars), (bars, top)  # none straddles it
    best = max(bars, key=lambda bar: bar[1])
    assert best[0] < n < best[1] <= top + 1e-9, (best, top)  # the bar of count n: within the bound


def test_game_labels_name_what_sets_a_game_apart():
    """Issue 39 item 7: a job figure's title names the prior's parameters, the mechanism's guarantee, n, trials and
    the attack."""
    from pipeline.labels import game_label

    zipf = _game_metrics(prior="zipf", mechanism="randomized_response",
                         params={"prior": {"prior": "zipf", "exponent": 0.5, "domain_size": 10, "counts_file": None}})
    zipf["privacy"] = {"private": True, "epsilon": 2.0, "delta": 0.0}
    assert game_label(zipf) == ("zipf prior (exponent 0.5, 10 values), 30 targets; randomized_response (eps=2 at "
                                "delta=0); attack bayes_optimal (k=1), metric exact; 3 trials")
    fitted = _game_metrics(prior="zipf", params={"prior": {"prior": "zipf", "exponent": 1.84211, "domain_size": 10,
                                                           "counts_file": "passwords/counts.csv"},
                                                 "mechanism": {"mu": 1.0, "epsilon": None}})
    fitted["privacy"] = {"private": True, "mu": 1.0, "epsilon": 6.4, "delta": 1e-5}
    label = game_label(fitted)
    assert "zipf prior (exponent 1.84 fitted to counts.csv, 10 values)" in label
    assert "gaussian (mu=1, eps=6.4 at delta=1e-05)" in label


def test_theorem_ids():
    from pipeline.labels import short_theorem, theorem_legend

    assert short_theorem(MIN_OF) == "T1/T3" and short_theorem(SPLIT) == "T1" and short_theorem(None) == "-"
    assert short_theorem("split one-run theorem (THEORY.md Thm 1), set-valued weights") == "T1-sv"
    assert short_theorem("Theorem 3.1 at the profile's eps (eps-DP), averaged over the trials") == "P3.1-avg"
    assert short_theorem("comparator kgk") == "kgk" and short_theorem("none (not private)") == "-"
    legend = theorem_legend([MIN_OF, "MMC one-run count (ICML 2025 Thm 3.2)"])
    assert legend.startswith(f"theorems: T1 = {SPLIT}; T3 = {WHOLE}; MMC = MMC one-run count") and "a/b" in legend


# ------------------------------------------------------------------------------------------------------------
# figures/report.png of a sweep with attack variants and an eps = inf job (pipeline.report)

@pytest.mark.parametrize("theorems", ["one", "min_of", "per_panel"])
def test_report_of_a_sweep_with_variants_and_inf(theorems, tmp_path):
    """The README's tabular sweeps in one (tests/pipeline/test_report_sweeps.py writes its folder): the bound
    lines' theorem one name, the record's long 'min of ...' name, or a name per panel (in the panels' titles)."""
    from test_report_sweeps import _sweep

    from pipeline.report import RESULT_COLUMNS, collect, plot, variant_labels

    _sweep(tmp_path / "sweep")
    rows = collect(tmp_path / "sweep")
    for row in rows:
        if row["private"] and theorems != "one":
            row["bound_theorem"] = MIN_OF if theorems == "min_of" or row["prior.targets"] == "[SEX]" else SPLIT
    with capture_figures() as saved:
        plot(rows, tmp_path / "report.png")
    fig = _saved(saved, "report.png")
    variants = variant_labels(rows)
    results = {*RESULT_COLUMNS, *(k for r in rows for k in r if k.startswith(("bound_", "exceed_"))),
               *(f"{v}_success_mean" for v in variants), *(f"{v}_exceed_{c:g}" for v in variants for c in LEVELS)}
    assert variants == ["plain"]
    problems = _check(fig, results=results, series={v: f"variant: {v}" for v in variants})
    words = _all_text(fig)
    # issue 39 item 7: the theorems by short id (header, panel titles), each expanded once under the figure
    records = {r["bound_theorem"] for r in rows if r["private"]}
    problems += [f"the figure does not expand the theorem {name!r}" for record in records
                 for name in theorem_parts(record) if f"{theorem_id(name)} = {name}" not in words]
    problems += [f"the figure does not state {what!r}" for what in ("mechanism = noisy_marginals", "n = 30 targets")
                 if what not in words]
    titles = " ".join(ax.get_title() for ax in fig.axes) + " ".join(t.get_text() for t in fig.texts)
    problems += [f"no title names {short_theorem(r)!r}" for r in records if short_theorem(r) not in titles]
    problems += [f"a title spells out a theorem: {t!r}" for ax in fig.axes if "THEORY.md" in (t := ax.get_title())]
    assert not problems, problems


# ------------------------------------------------------------------------------------------------------------
# The analytic tasks (run shrunk, as a job runs them)

TASKS = {
    "compare_bounds": ["task.mus=[0.5,4]", "task.prior_points=4", "task.reciprocal_points=3"],
    "advantage_by_prior": ["task.eps_points=4",
                           "+task.priors.pii={law: given, probabilities: {max: 0.632, median: 0.001, p10: 9.07e-5}, "
                           "source: 'pii_law run'}"],
    "eps_protect": ["task.prior_points=4"],
    "zipf_calibration": ["task.bootstrap=5", "task.windows=[[1,157],[2,157]]"],
}


def _task_figure(compose, tmp_path, name: str):
    from pipeline.experiments import run_task

    with capture_figures() as saved:
        metrics = run_task(compose(f"experiment={name}", *TASKS[name]), tmp_path / name)
    return _saved(saved, f"{name}.png"), metrics


def test_compare_bounds_figure(compose, tmp_path):
    fig, metrics = _task_figure(compose, tmp_path, "compare_bounds")
    problems = _check(fig, results=["ours", "kgk", "mmc", "best", "best_source"],
                      series={"ours": "ours", "kgk": "KGK", "mmc": "MMC", "best": "best"})
    ours = [t for t in drawn_labels(fig) if t.startswith("ours")]
    problems += [f"'ours' does not name its theorem and delta: {t!r}" for t in ours
                 if "Thm" not in " ".join(t.split()) or "delta" not in t]
    assert not problems, problems


def test_advantage_by_prior_figure(compose, tmp_path):
    fig, metrics = _task_figure(compose, tmp_path, "advantage_by_prior")
    rows = metrics["table"]
    # every canary of every prior has a legend entry (canaries of equal probability: one line naming them all)
    legend = [" ".join(t.get_text().split()) for lg in fig.legends for t in lg.get_texts()]
    missing = sorted({f"{r['prior_name']}/{r['canary']}" for r in rows
                      if not any(e.startswith(f"{r['prior_name']}:") and r["canary"] in e for e in legend)})
    problems = _check(fig, results=["advantage", "prior_probability"]) + [f"{m} not in the legend" for m in missing]
    words = _all_text(fig)
    problems += [f"the figure does not state {what}" for what in ("delta = 1e-05", "Thm") if what not in words]
    problems += ["the figure has no title"] * (not (fig._suptitle and fig._suptitle.get_text()))
    assert not problems, problems


def test_eps_protect_figure(compose, tmp_path):
    fig, metrics = _task_figure(compose, tmp_path, "eps_protect")
    (ax,) = [a for a in fig.axes if a.get_visible()]
    problems = _check(fig, results=["eps_protect", "prior_probability"],
                      series={name: name for name in ("uniform_9digit", "zipf_9digit")})
    # the curve has its kink at p = 1/2 (eps_protect is flat above it) and passes through every marker
    (curve,) = [line for line in ax.get_lines() if line.get_label().startswith("eps_protect")]
    x, y = (np.asarray(v, dtype=float) for v in curve.get_data())
    assert 0.5 in x, x
    for row in (r for r in metrics["table"] if r["prior_name"] != "any"):
        on_curve = np.exp(np.interp(np.log(row["prior_probability"]), np.log(x), np.log(y)))
        assert on_curve == pytest.approx(row["eps_protect"], rel=0.02), (row, on_curve)
    assert not problems, problems


def test_zipf_calibration_figure(compose, tmp_path):
    fig, metrics = _task_figure(compose, tmp_path, "zipf_calibration")
    # issue 39 item 7: the title names the file that was read and what it held, not "the RockYou counts"
    title = fig._suptitle.get_text() if fig._suptitle else " ".join(ax.get_title() for ax in fig.axes)
    title = " ".join(title.split())
    assert "tests/data/passwords/rockyou-top100k-9digit-withcount.csv (157 ranks, " in title, title
    assert f"{metrics['headline']['observed_ranks']} ranks" in title and "RockYou counts" not in title
    problems = _check(fig, results=["exponent", "ci_low", "ci_high", "p_max", "eps_protect", "advantage_eps1"])
    problems += ["the figure has no title"] * (not any(ax.get_title() for ax in fig.axes) and not fig._suptitle)
    problems += ["the configured exponent 1.84 is not marked"] * ("1.84" not in " ".join(drawn_labels(fig)))
    assert not problems, problems


# ------------------------------------------------------------------------------------------------------------
# The PII law's figure (PIILaw.table: the rows of a law summary, without scoring a language model)

def test_pii_law_figure(tmp_path):
    from pipeline.experiments.llm import PIILaw

    task = PIILaw(eps_points=5, prior_points=4)
    summary = {"max": 0.632, "median": 0.001, "p10": 9.07e-5, "score": "inverse_perplexity"}
    result = task.table(summary, model="smollm2")
    with capture_figures() as saved:
        PIILaw.plot(result["table"], tmp_path / "pii_law.png")
    fig = _saved(saved, "pii_law.png")
    problems = _check(fig, results=["advantage", "eps_protect", "prior_probability"],
                      series={c: c for c in ("max", "median", "p10")})
    words = _all_text(fig)
    problems += [f"the figure does not name {what}" for what in ("GPT-2", "smollm2") if what not in words]
    # a curve, as the panel says, with the most probable PII on it
    eps_axis = fig.axes[1]
    assert any(len(line.get_xdata()) > 2 for line in eps_axis.get_lines())
    assert not problems, problems


# ------------------------------------------------------------------------------------------------------------
# The figures of games: the synthetic ones played (small), the tabular and LLM ones from game metrics

@pytest.mark.slow
def test_idealized_gaussian_and_rr_tightness_figures(compose, tmp_path):
    from figuretools import play_figure

    cases = {
        "idealized_gaussian": [[f"experiment=idealized_gaussian", "prior.n_targets=10", "trials=5", f"prior={p}",
                                f"mechanism.epsilon={e}"] for p in ("uniform", "zipf") for e in (1, 100)],
        "rr_tightness": [["experiment=rr_tightness", "prior.n_targets=5", "trials=5", f"prior.exponent={s}",
                          f"mechanism.epsilon={e}"] for s in (0, 2) for e in (1, 4)],
    }
    for name, combinations in cases.items():
        with capture_figures() as saved:
            play_figure(compose, tmp_path / name, *combinations)
        fig = _saved(saved, f"{name}.png")
        problems = _check(fig, results=["attack_mean", "prior_mean", "bound_0.95", "tightness", "bound_exact"])
        assert not problems, (name, problems)
        games = [fig for path, fig in saved if "successes" in Path(path).name]  # each game job's own figure
        assert len(games) == len(combinations)
        for game in games:
            problems = _check(game) + integer_ticks(game.axes[0], "y")
            assert not problems, (name, problems)
        # issue 39 item 7: each game's title says what sets it apart (rr_tightness: the Zipf exponent and eps)
        titles = [" ".join(game.axes[0].get_title().split()) for game in games]
        assert len(set(titles)) == len(games), titles
        if name == "rr_tightness":
            for title in titles:
                for words in ("zipf prior (exponent ", "10 values", "5 targets", "randomized_response (eps=", "delta=0",
                              "attack bayes_optimal", "5 trials"):
                    assert words in title, (words, title)
            assert {t.split("exponent ")[1].split(",")[0] for t in titles} == {"0", "2"}


def _tabular_metrics(cfg, labels=("noise_aware", "plain", "posterior"), seed=0) -> dict:
    """A tabular game job's metrics.json (what `_Tabular.rows` reads)."""
    rng = np.random.default_rng(seed)
    n, trials = int(cfg.prior.n_records), int(cfg.trials)
    private = not math.isinf(float(cfg.mechanism.epsilon))
    bound = {repr(c): [int(n * (0.5 + 0.1 * i))] * trials for i, c in enumerate(LEVELS)} if private else None
    exceed = {repr(c): 0.0 for c in LEVELS} if private else None
    record = {"theorem": MIN_OF} if private else None
    return {"prior_successes": rng.integers(0, n // 2, trials).tolist(), "prior_expected_mean": n / 3,
            "attacks": {label: {"successes": rng.integers(n // 3, n // 2, trials).tolist(), "bound": bound,
                                "exceed": exceed, "bound_theorem": record} for label in labels},
            "release": {"noise_scale": [0.1], "n_marginals": [10]}}


TABULAR = {
    "tabular_single_column": [("prior.dataset=acs", "figure.columns=[SEX,AGEP,EDU]"),
                              ("prior.dataset=fire", "figure.columns=[ALS Unit]")],
    "tabular_epsilon": [("prior.dataset=acs", f"mechanism.epsilon={e}") for e in ("0.5", "1", "10", "inf")],
    "tabular_multi_column": [("prior.dataset=acs",)],
    "tabular_approximate": [("prior.dataset=acs",)],
}


def _tabular_rows(compose, name: str) -> list[dict]:
    from pipeline.experiments import build_figure
    from pipeline.sweeper import point_overrides

    rows = []
    for combination in TABULAR[name]:
        base = [f"experiment={name}", "trials=3", "prior.n_records=30", *combination]
        figure = build_figure(compose(*base))
        if name == "tabular_multi_column":  # the network's visit order, without fitting the network
            points = [{"prior.targets": ["SEX", "AGEP", "EDU"][:m], "prior.known": ["MSP", "RAC1P", "HISP"]}
                      for m in (1, 2, 3)]
        else:
            points = figure.points(compose(*base))
        for point in points:
            cfg = compose(*point_overrides(base, point))
            rows += figure.rows(cfg, _tabular_metrics(cfg, seed=len(rows)))
    return type(figure).combine(rows)


@pytest.mark.parametrize("name", sorted(TABULAR))
def test_tabular_figure(name, compose, tmp_path):
    from pipeline.experiments import build_figure

    rows = _tabular_rows(compose, name)
    figure = type(build_figure(compose(f"experiment={name}")))
    with capture_figures() as saved:
        figure.plot(rows, tmp_path / f"{name}.png")
    fig = _saved(saved, f"{name}.png")
    objectives = {r["objective"] for r in rows}
    series = {o: ("posterior" if o == "posterior" else o) for o in objectives}
    problems = _check(fig, results=["attack_mean", "prior_mean", "bound_0.95", "exceed_0.95"], series=series)
    words = _all_text(fig)
    problems += ["the figure does not name the theorem"] * (WHOLE not in words)
    if name == "tabular_approximate":  # a distance window decodes per column (stages.attack.rap.RAPAttack.decode)
        legend = " ".join(drawn_labels(fig))
        problems += [f"the legend names a joint decode for window metrics: {legend}"] * ("joint" in legend)
    assert not problems, problems


@pytest.mark.slow
def test_a_played_tabular_figure(compose, tmp_path):
    """Fig. recon_1col_multeps played (RAP, shrunk) at eps = 1 and inf: its figure and each game job's own."""
    from figuretools import play_figure

    base = ["experiment=tabular_epsilon", "trials=2", "prior.n_records=30", "attack.steps=50", "prior.dataset=acs"]
    with capture_figures() as saved:
        play_figure(compose, tmp_path / "sweep", [*base, "mechanism.epsilon=1"], [*base, "mechanism.epsilon=inf"])
    problems = _check(_saved(saved, "tabular_epsilon.png"), series={"noise_aware": "noise_aware", "plain": "plain"})
    for path, fig in saved:
        if "successes" in Path(path).name:
            problems += _check(fig, series={"noise_aware": "noise_aware", "plain": "plain"})
            problems += integer_ticks(fig.axes[0], "y")
    assert not problems, problems


def _llm_rows() -> list[dict]:
    """Figure llm's table (LLMCanaries.combine's rows): 3 priors x eps {1, 10, 100} x two learning rates, six
    trials a job (selection and held-out halves), and a job without a privacy guarantee."""
    rows = []
    for p, prior in enumerate(("uniform", "zipf", "pii")):
        for e, eps in enumerate((1.0, 10.0, 100.0)):
            for lr in (0.1, 1.0):
                attack = 10 + 20 * e + 5 * p + lr
                rows.append({
                    "game": "dpsgd", "prior_name": prior, "model": "smollm2", "trainable": "body", "private": True,
                    "eps": eps, "delta": 1e-5, "clip_norm": 1.0, "learning_rate": lr, "epochs": 3, "trials": 6,
                    "attack_mean": attack, "attack_ci_low": attack - 4, "attack_ci_high": attack + 4,
                    "select_trials": 3, "select_mean": attack, "heldout_trials": 3, "heldout_mean": attack - 1,
                    "heldout_ci_low": attack - 6, "heldout_ci_high": attack + 4, "model_only_mean": attack - 3,
                    "fitted_mean": 30 + 10 * e + 5 * p, "prior_mean": 10.0 + 20 * p, "diverged_trials": 0,
                    "bound_theorem": SPLIT, "bound_0.05": 13 + 30 * e, "bound_0.5": 17 + 30 * e,
                    "bound_0.95": min(100, 26 + 30 * e), "floor_0.05": 10 + 25 * e, "floor_0.5": 15 + 25 * e,
                    "floor_0.95": min(100, 20 + 25 * e), "floor_mechanism": "randomized response",
                    **{f"{v}exceed_{c:g}": 0.0 for v in ("", "model_only_", "fitted_")
                                                           for c in LEVELS},
                    "ideal_mean": 13 + 40 * e, "ideal_ci_low": 12 + 40 * e, "ideal_ci_high": 14 + 40 * e,
                    "ideal_trials": 200, "ideal_bound_theorem": SPLIT, "ideal_bound_0.95": min(100, 26 + 30 * e)})
    rows.append({**rows[0], "private": False, "eps": None, "delta": None, "bound_theorem": "none (not private)",
                 **{f"bound_{c:g}": None for c in LEVELS}, **{f"floor_{c:g}": None for c in LEVELS},
                 "floor_mechanism": None, **{f"exceed_{c:g}": None for c in LEVELS},
                 "attack_mean": 86.5, "ideal_mean": None})
    return rows


def test_llm_canaries_figure(tmp_path):
    from pipeline.experiments.llm import LLMCanaries

    with capture_figures() as saved:
        LLMCanaries.plot(_llm_rows(), tmp_path / "llm_canaries.png")
    fig = _saved(saved, "llm_canaries.png")
    problems = _check(fig, results=["attack_mean", "bound_0.95", "exceed_0.95", "ideal_mean"],
                      series={"model_only": "model only", "fitted": "temperature fitted",
                              "ideal": "idealized Gaussian", "not private": "not private",
                              "floor_0.95": "floor to bound"})
    assert not problems, problems


def test_every_experiment_has_a_figure_test():
    """A new conf/experiment/*.yaml gets its figure checked here too."""
    tested = {*TASKS, *TABULAR, "idealized_gaussian", "rr_tightness", "pii_law", "llm_canaries", "llm_canaries_small",
              "llm_canaries_body"}
    assert {p.stem for p in (CONF_DIR / "experiment").glob("*.yaml")} <= tested


# ------------------------------------------------------------------------------------------------------------
# The checks themselves catch what item 9 saw

def test_the_checks_catch_a_legend_over_bars_a_clipped_title_and_fractional_ticks(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.bar([0, 1, 2], [3, 2, 1], label="bars")
    ax.legend(loc="upper right", fontsize=14, labels=["a legend wider than the panel " * 2])
    ax.set_title("a title far too long for the canvas " * 3)
    ax.plot([0, 1], [0, 1], ".", label="a")
    ax.plot([0, 1], [0, 1], ".", label="b")
    problems = layout_problems(fig) + coincident_lines(fig) + integer_ticks(ax)
    plt.close(fig)
    assert any("leaves the canvas" in p for p in problems)
    assert any("covers the bars" in p for p in problems)
    assert any("coincide" in p for p in problems)
    assert any("whole numbers" in p for p in problems)
