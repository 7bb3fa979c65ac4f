"""Checks of a drawn matplotlib figure, as a reader sees it: text that leaves the canvas, text over other text or
over the data (a legend over the bars, a label over an error bar), a panel title that holds a result, a series
in the data that is not drawn, lines that coincide and cannot be told apart.

Every check draws the figure first and returns a list of problems, one sentence each ([] when there is none).
`capture_figures` keeps every figure the code saves (matplotlib's Figure.savefig), to be checked afterwards.
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping

import numpy as np

__all__ = ["texts", "layout_problems", "data_overlaps", "drawn_labels", "missing_series", "result_titles",
           "coincident_lines", "integer_ticks", "capture_figures"]


def _renderer(fig):
    if not hasattr(fig.canvas, "get_renderer"):  # a figure pyplot closed keeps a bare canvas: draw it with Agg
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _tick_labels(axis, limits) -> list:
    """The tick labels of an axis that are drawn: inside the view limits (matplotlib keeps labels of the
    locator's ticks beyond the limits, which are not drawn)."""
    low, high = sorted(limits)
    span = (high - low) or 1.0
    labels = []
    for label in axis.get_ticklabels():
        x, y = label.get_position()
        where = x if axis.axis_name == "x" else y
        if low - 1e-9 * span <= where <= high + 1e-9 * span:
            labels.append(label)
    return labels


def texts(fig) -> list:
    """Every visible, non-empty text of the figure: captions, titles, axis labels, tick labels, annotations,
    and the texts of every legend (the figure's and each panel's)."""
    found = list(fig.texts)
    legends = list(fig.legends)
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        found += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        found += _tick_labels(ax.xaxis, ax.get_xlim()) + _tick_labels(ax.yaxis, ax.get_ylim())
        if ax.get_legend() is not None:
            legends.append(ax.get_legend())
    for legend in legends:
        found += [legend.get_title(), *legend.get_texts()]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def layout_problems(fig, *, data: bool = True) -> list[str]:
    """Texts that leave the canvas, pairs of texts that overlap (tick labels of one axis with each other, and
    every other pair), and (data=True) texts and legends inside a panel that cover its data (data_overlaps)."""
    renderer = _renderer(fig)
    canvas = fig.bbox
    boxes = [(t, t.get_window_extent(renderer)) for t in texts(fig)]
    problems = [f"{t.get_text()!r} leaves the canvas" for t, b in boxes
                if b.x0 < canvas.x0 - 1 or b.y0 < canvas.y0 - 1 or b.x1 > canvas.x1 + 1 or b.y1 > canvas.y1 + 1]
    for i, (t1, b1) in enumerate(boxes):
        for t2, b2 in boxes[i + 1:]:
            if b1.overlaps(b2):
                both = b1.intersection(b1, b2)
                if both is not None and both.width > 1 and both.height > 1:
                    problems.append(f"{t1.get_text()!r} overlaps {t2.get_text()!r}")
    if data:
        problems += data_overlaps(fig)
    return problems


def _densify(points: np.ndarray, step: float = 2.0) -> np.ndarray:
    """The points of a polyline in display space every `step` pixels (a text may cross a segment between two
    vertices)."""
    points = points[np.all(np.isfinite(points), axis=1)]
    if len(points) < 2:
        return points
    out = [points[:1]]
    for a, b in zip(points[:-1], points[1:]):
        n = int(min(2000, max(1, np.hypot(*(b - a)) // step)))
        out.append(a + (b - a) * np.linspace(0, 1, n + 1)[1:, None])
    return np.concatenate(out)


def _marks(ax) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, object]]]:
    """The data a panel draws, in display space: (name, points) of its lines, error bars and markers, and
    (name, box) of its bars. Shaded backgrounds (fill_between bands, spans with zorder <= 0) are not data."""
    from matplotlib.collections import LineCollection, PathCollection
    from matplotlib.container import BarContainer
    from matplotlib.patches import Rectangle

    points: list[tuple[str, np.ndarray]] = []
    for line in ax.get_lines():
        if not line.get_visible() or len(line.get_xydata()) == 0:
            continue
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), dtype=float))
        drawn = line.get_linestyle() not in ("None", "none", " ", "")
        points.append((line.get_label(), _densify(xy) if drawn else xy[np.all(np.isfinite(xy), axis=1)]))
    for collection in ax.collections:
        if not collection.get_visible():
            continue
        if isinstance(collection, LineCollection):
            transform = collection.get_transform()
            for segment in collection.get_segments():
                if len(segment):
                    points.append((collection.get_label(), _densify(transform.transform(np.asarray(segment)))))
        elif isinstance(collection, PathCollection):
            offsets = np.asarray(collection.get_offsets(), dtype=float)
            if len(offsets):
                points.append((collection.get_label(), collection.get_offset_transform().transform(offsets)))
    bars: list[tuple[str, object]] = []
    for container in ax.containers:
        if isinstance(container, BarContainer):
            for patch in container.patches:
                if patch.get_visible() and patch.get_height() and patch.get_width():
                    bars.append((container.get_label(), patch.get_window_extent()))
    for patch in ax.patches:  # a step histogram: its outline
        if (patch.get_visible() and patch.get_zorder() > 0 and not isinstance(patch, Rectangle)
                and patch.get_fill() is False):
            xy = patch.get_transform().transform(patch.get_path().vertices)
            points.append((patch.get_label(), _densify(xy)))
    return points, bars


def data_overlaps(fig) -> list[str]:
    """Texts and legends that cover drawn data: every text inside a panel (annotations, ax.text), each panel's
    legend and the figure's legends and captions, against the panel's lines, error bars, markers and bars (what
    lies inside the panel only: the rest is clipped)."""
    renderer = _renderer(fig)
    covering = [(t.get_text(), t.get_window_extent(renderer)) for t in fig.texts if t.get_visible() and t.get_text().strip()]
    covering += [("the figure's legend", legend.get_window_extent(renderer)) for legend in fig.legends]
    problems = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        mine = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts if t.get_visible() and t.get_text().strip()]
        if ax.get_legend() is not None and ax.get_legend().get_visible():
            mine.append(("the panel's legend", ax.get_legend().get_window_extent(renderer)))
        frame = ax.get_window_extent(renderer)
        points, bars = _marks(ax)
        for name, box in mine + covering:
            inner = box.padded(-1.0)
            if not inner.overlaps(frame):
                continue
            for label, xy in points:
                inside = ((xy[:, 0] > inner.x0) & (xy[:, 0] < inner.x1) & (xy[:, 1] > inner.y0) & (xy[:, 1] < inner.y1)
                          & (xy[:, 0] >= frame.x0) & (xy[:, 0] <= frame.x1) & (xy[:, 1] >= frame.y0) & (xy[:, 1] <= frame.y1))
                if inside.any():
                    problems.append(f"{name!r} covers the data of {label!r} in panel {ax.get_title()!r}")
                    break
            else:
                for label, bar in bars:
                    clipped = bar.intersection(bar, frame)
                    both = clipped.intersection(clipped, inner) if clipped is not None else None
                    if both is not None and both.width > 1 and both.height > 1:
                        problems.append(f"{name!r} covers the bars of {label!r} in panel {ax.get_title()!r}")
                        break
    return problems


def drawn_labels(fig) -> list[str]:
    """What the figure names: every legend's texts and the labels of every artist of every panel."""
    names = []
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]:
        names += [t.get_text() for t in legend.get_texts()]
    for ax in fig.axes:
        for artist in [*ax.get_lines(), *ax.collections, *ax.patches, *ax.containers]:
            label = str(artist.get_label() or "")
            if label and not label.startswith("_"):
                names.append(label)
    return names


def missing_series(fig, expected: Mapping[str, str]) -> list[str]:
    """Series of the data (name -> a text its legend entry must hold) that the figure does not draw under a
    legend entry of their own."""
    legend = [t.get_text() for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
              for t in legend.get_texts()]
    return [f"{name!r} is in the data but no legend entry names {text!r} (legend: {legend})"
            for name, text in expected.items() if not any(text in entry for entry in legend)]


#: A facet's "key=value" (or "key = value") in a title.
_KEY_VALUE = re.compile(r"([A-Za-z_][\w.\[\]]*)\s*=")


def result_titles(fig, results: Iterable[str]) -> list[str]:
    """Panel titles (and the figure's suptitle) that hold a result column as `column=value`: a title names the
    configuration of its panel, never what the panel measured."""
    results = set(results)
    problems = []
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    if getattr(fig, "_suptitle", None) is not None:
        titles.append(fig._suptitle.get_text())
    for title in titles:
        for key in _KEY_VALUE.findall(title):
            if key in results:
                problems.append(f"panel title {title!r} holds the result column {key!r}")
    return problems


def coincident_lines(fig) -> list[str]:
    """Pairs of lines of one panel with different legend labels that lie on each other (the same points) and
    look the same (marker and line style): a reader sees one line where the data has two."""
    problems = []
    for ax in fig.axes:
        lines = [line for line in ax.get_lines() if line.get_visible() and not str(line.get_label()).startswith("_")]
        for i, a in enumerate(lines):
            for b in lines[i + 1:]:
                xa, xb = np.asarray(a.get_xydata(), dtype=float), np.asarray(b.get_xydata(), dtype=float)
                if a.get_label() == b.get_label() or xa.shape != xb.shape or not np.allclose(xa, xb, equal_nan=True):
                    continue
                if a.get_marker() == b.get_marker() and a.get_linestyle() == b.get_linestyle():
                    problems.append(f"{a.get_label()!r} and {b.get_label()!r} coincide in panel {ax.get_title()!r} and "
                                    f"are drawn alike")
    return problems


def integer_ticks(ax, axis: str = "y") -> list[str]:
    """Tick labels of a count axis (trials, targets) that are not whole numbers."""
    _renderer(ax.figure)
    which = ax.yaxis if axis == "y" else ax.xaxis
    labels = _tick_labels(which, ax.get_ylim() if axis == "y" else ax.get_xlim())
    bad = [t.get_text() for t in labels if t.get_text().strip()
           and not re.fullmatch(r"[\u2212-]?\d+", t.get_text().strip())]
    return [f"{axis} tick labels of a count are not whole numbers: {bad}"] if bad else []


class capture_figures:
    """Within `with capture_figures() as saved:`, every Figure.savefig (whatever module calls it) first records
    (path, figure) in `saved`. A closed figure can still be drawn (Agg), so every check runs after the code that
    drew it has returned."""

    def __enter__(self) -> list:
        from matplotlib.figure import Figure

        self._original = Figure.savefig
        self.saved: list = []
        original, saved = self._original, self.saved

        def savefig(fig, fname, *args, **kwargs):
            saved.append((str(fname), fig))
            return original(fig, fname, *args, **kwargs)

        Figure.savefig = savefig
        return self.saved

    def __exit__(self, *exc) -> None:
        from matplotlib.figure import Figure

        Figure.savefig = self._original
