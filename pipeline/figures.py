"""The layout every figure of the project shares: text wrapped to the figure's width, and one legend and a note
under the panels, sized by measuring them once drawn (a legend inside a panel covers its data)."""
from __future__ import annotations

import textwrap
from typing import Sequence

__all__ = ["wrap", "legend_below"]

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
