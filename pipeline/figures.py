"""The layout every figure of the project shares: text wrapped to the figure's width, and one legend and a note
under the panels, sized by measuring them once drawn (a legend inside a panel covers its data)."""
from __future__ import annotations

import math
import os
import textwrap
from typing import Sequence

import numpy as np

from pipeline.io import save_figure_atomic
from pipeline.labels import BOUND_READING, baseline_label, bound_label, game_label

__all__ = ["wrap", "legend_below", "plot_successes", "count_bins", "audit_line", "BARS_READING"]

#: How a histogram of counts meets its bound lines (plot_successes).
BARS_READING = ("Each bar is one count of targets, centred on it; a bound line \"at most v\" is drawn at v + 0.5, so a "
                "bar left of the line is within the bound.")
#: At most this many bars span a histogram of counts (wider data takes bars of several counts).
_MAX_BARS = 60

#: Inches between the blocks stacked under the panels (legend, note) and around them.
_PAD_IN = 0.06


def wrap(text: str, width_in: float, fontsize: float = 8.0) -> str:
    """text wrapped to lines that fit width_in inches at fontsize points (about 0.6 em a character in DejaVu
    Sans, so a line is at most that wide); explicit newlines are kept, words are never split at hyphens."""
    chars = max(20, int(width_in * 72.0 / (0.6 * fontsize)))
    return "\n".join("\n".join(textwrap.wrap(line, chars, break_on_hyphens=False, break_long_words=False)) or line
                     for line in str(text).split("\n"))


def _renderer(fig):
    if not hasattr(fig.canvas, "get_renderer"):  # pragma: no cover - a figure made outside pyplot
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def legend_below(fig, handles: Sequence, labels: Sequence[str], *, title: str = "", note: str = "",
                 fontsize: float = 7.0, max_columns: int = 3, top_in: float = 0.0) -> None:
    """Put one legend for every panel under the panels, and the note (small, grey) under it; grow the figure by
    the height they take (measured), then lay the panels out above them (tight_layout). Labels and the title
    are wrapped to the figure's width; the legend takes as many columns (at most max_columns) as fit the
    width. top_in: inches kept free above the panels (e.g. a header written with fig.text)."""
    width_in, height_in = fig.get_size_inches()
    renderer = _renderer(fig)
    legend_in = 0.0
    legend = None
    if labels:
        # the number of columns (at most max_columns) that gives the lowest legend within the figure's width: long
        # labels wrap in narrow columns, so more columns is not always lower
        best = None
        for ncol in range(min(max_columns, len(labels)), 0, -1):
            # a column's label may use the width the columns share, less the handle and the gaps
            label_in = (width_in - 0.2) / ncol - 0.55
            wrapped = [wrap(label, label_in, fontsize) for label in labels]
            candidate = fig.legend(handles, wrapped, loc="lower center", ncol=ncol, fontsize=fontsize, frameon=False,
                                   title=wrap(title, width_in - 0.3, fontsize) if title else None,
                                   title_fontsize=fontsize)
            box = candidate.get_window_extent(renderer)
            fits = box.width / fig.dpi <= width_in - 0.1 or ncol == 1
            if fits and (best is None or box.height < best[1] - 0.5):
                if best is not None:
                    best[0].remove()
                best = (candidate, box.height)
            else:
                candidate.remove()
        legend = best[0]
        legend_in = best[1] / fig.dpi + _PAD_IN
    text = None
    note_in = 0.0
    if note:
        text = fig.text(0.01, 0.0, wrap(note, width_in - 0.2, 6.5), fontsize=6.5, color="0.3", va="bottom")
        note_in = text.get_window_extent(renderer).height / fig.dpi + 2 * _PAD_IN
    total = height_in + legend_in + note_in
    fig.set_size_inches(width_in, total)
    if text is not None:
        text.set_y(_PAD_IN / total)
    if legend is not None:
        legend.set_bbox_to_anchor((0.5, note_in / total), transform=fig.transFigure)
    fig.tight_layout(rect=(0, (legend_in + note_in) / total, 1, 1 - top_in / total))


def count_bins(low: int, high: int, bound: float | None = None) -> np.ndarray:
    """Bin edges for a histogram of the counts low..high: one count a bar, centred on it (edges at half-integers);
    over a wide range several counts a bar, aligned so that a bar ends at bound + 0.5 (the highest bound line, "at
    most bound"), so no bar straddles that line."""
    step = max(1, -(-(high - low + 1) // _MAX_BARS))
    start = low - 0.5
    if bound is not None and step > 1:
        start -= (low - round(bound) - 1) % step  # an edge at round(bound) + 0.5
    return np.arange(start, high + 0.5 + step, step)


def audit_line(metrics: dict) -> str:
    """The median trial's audit at the highest confidence (metrics.json audit, the first attack's), one line, e.g.
    'audit @ 0.95 (median trial): not mu-GDP for mu <= 0.78 (claimed mu = 1)'; "" where the job has none (no
    privacy guarantee, no family fits its profile)."""
    audit = metrics.get("audit") or {}
    mine = (audit.get("attacks") or {}).get(metrics.get("attack_label")) or {}
    levels = sorted((float(c), one) for c, one in mine.items()
                    if isinstance(one, dict) and one.get("median") is not None)
    parameter = (audit.get("family") or {}).get("parameter")
    if not levels or parameter is None or audit.get("claimed") is None:
        return ""
    confidence, one = levels[-1]
    value, loss_grows = float(one["median"]), parameter != "noise_multiplier"
    symbol = "sigma" if parameter == "noise_multiplier" else parameter
    # the guarantee by name (DP-SGD's names its sample rate, steps and accounting: too long for one line)
    guarantee = "DP-SGD-private" if not loss_grows else audit.get("guarantee") or f"{symbol}-DP"
    # nothing refuted: 0 for mu and eps, inf for the noise multiplier
    if math.isfinite(value) and (value > 0 or not loss_grows):
        said = f"not {guarantee} for {symbol} {'<=' if loss_grows else '>='} {value:.3g}"
        said += " (at the search's end; it may refute beyond)" if one.get("at_cap") else ""
    else:
        said = f"refutes no {symbol}"
    return f"audit @ {confidence:g} (median trial): {said} (claimed {symbol} = {float(audit['claimed']):.3g})"


def plot_successes(metrics: dict, path: str | os.PathLike) -> None:
    """Histogram of the successes per trial of the attack, of every variant scored beside it and of the prior
    baseline, with the bound counts; the game in the title, one legend under the panel (a legend inside it covers
    the bars) whose title names the theorem behind the bound lines as the record says it, and the median trial's
    audit where the job has one (audit_line)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator


    attack = np.asarray(metrics["attack_successes"])
    baseline = np.asarray(metrics["prior_successes"])
    main = metrics.get("attack_label") or metrics["boxes"]["attack"]
    variants = {label: np.asarray(a["successes"]) for label, a in list((metrics.get("attacks") or {}).items())[1:]}
    width = 6.4
    fig, ax = plt.subplots(figsize=(width, 3.0))
    bound = metrics.get("bound")
    lines = [(float(confidence), float(np.mean(np.atleast_1d(np.asarray(count, dtype=float)))),
              np.asarray(count).size > 1) for confidence, count in (bound or {}).items()]
    counts = np.concatenate([attack, baseline, *variants.values()]).astype(float)
    bins = count_bins(int(counts.min(initial=np.inf)) if counts.size else 0, int(counts.max(initial=0)),
                      max((v for _, v, _ in lines), default=None))
    ax.hist(baseline, bins=bins, alpha=0.5, color="C0", label=baseline_label(metrics))
    name = metrics["boxes"]["attack"]
    ax.hist(attack, bins=bins, alpha=0.5, color="C1", label=f"attack: {name}" + (f" ({main})" if main != name else ""))
    for i, (label, successes) in enumerate(variants.items()):  # outlines, so the bars stay visible under them
        ax.hist(successes, bins=bins, histtype="step", linewidth=1.6, color=f"C{2 + i}",
                linestyle=("--", "-.", ":")[i % 3], label=f"attack variant: {label}")
    # a bar is one count (centred on it); the bound "at most v" is the line just right of v's bar, at v + 0.5
    for (confidence, count, mean), style in zip(lines, ("dotted", "dashed", "solid", "dashdot")):
        ax.axvline(count + 0.5, color="k", linestyle=style, label=f"bound @ {confidence:g}: at most {count:g}"
                   + (" (mean of the trials' counts)" if mean else ""))
    floors = ((metrics.get("worst_case_floor") or {}).get("counts") or {}) if bound else {}
    if floors:  # the bracket at the highest confidence: what a real mechanism with the profile reaches, up to the bound
        confidence = max(floors, key=float)
        low = float(np.mean(np.atleast_1d(np.asarray(floors[confidence], dtype=float))))
        high = float(np.mean(np.atleast_1d(np.asarray(bound[confidence], dtype=float))))
        ax.axvspan(low - 0.5, max(low, high) + 0.5, color="0.6", alpha=0.25, zorder=0, linewidth=0,
                   label=f"worst case @ {float(confidence):g} lies here (floor to bound)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # trials are counted
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"targets attacked (of {metrics['n_targets']})")
    ax.set_ylabel("trials")
    ax.set_title(wrap(game_label(metrics), width - 0.4, 8), fontsize=8)
    warnings = []
    if bound is None:
        warnings.append("not private: no privacy guarantee, no bound")
    if metrics.get("unusable_canaries"):  # a diverged training: say so on the figure, not only in metrics.json
        warnings.append(f"WARNING: {metrics['unusable_canaries']} canary guesses had no usable likelihood (training "
                        f"diverged): the attack guessed the prior for them")
    top_in = 0.0
    if warnings:  # above the panel, never over the bars
        header = fig.text(0.5, 1.0, wrap("\n".join(warnings), width - 0.3, 7.5), fontsize=7.5, color="firebrick",
                          ha="center", va="top")
        top_in = header.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi + 0.1
    title = f"bound lines: {bound_label(metrics)}" if bound is not None else ""
    audited = audit_line(metrics) if bound is not None else ""
    title = "\n".join(line for line in (title, audited) if line)
    handles, labels = ax.get_legend_handles_labels()
    legend_below(fig, handles, labels, title=title, note=f"{BOUND_READING} {BARS_READING}" if bound is not None else "",
                 max_columns=2,
                 top_in=top_in)
    if warnings:
        header.set_y(1 - 0.05 / fig.get_size_inches()[1])
    save_figure_atomic(fig, path)
