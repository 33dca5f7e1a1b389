"""Report plots, drawn with matplotlib's object API on the Agg canvas (no pyplot, no global state).

Each ``draw_*`` function draws on an ``Axes`` you pass in, so a notebook can reuse it;
:func:`save_report_plots` writes the PNG files of a comparison report.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hallumeasure.report.comparison import Comparison
from hallumeasure.stats.estimate import Estimate
from hallumeasure.stats.groups import SUBTYPES, GroupStats

LABEL_COLOURS = {
    "supported": "#4c9a5a",
    "partially_supported": "#e6b73e",
    "absent": "#e07b39",
    "contradicted": "#c8414b",
    "unevaluatable": "#9a9a9a",
}
# Stack order: good to bad, unevaluatable last.
LABEL_ORDER = ["supported", "partially_supported", "absent", "contradicted", "unevaluatable"]


def new_figure(width: float, height: float) -> Figure:
    """A figure bound to the Agg canvas, independent of whatever backend pyplot uses."""
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save(figure: Figure, path: Path) -> None:
    # No "Software" metadata, so the bytes do not change with the matplotlib version.
    figure.savefig(path, format="png", metadata={"Software": None})


def draw_estimates(ax: Axes, names: list[str], estimates: list[Estimate], title: str, *, xlabel: str) -> None:
    """Horizontal bars with confidence-interval error bars; groups without a value are left blank."""
    y = np.arange(len(names))
    values = np.array([e.value if e.value is not None else np.nan for e in estimates], dtype=float)
    low = np.array(
        [e.value - e.low if e.value is not None and e.low is not None else 0.0 for e in estimates], dtype=float
    )
    high = np.array(
        [e.high - e.value if e.value is not None and e.high is not None else 0.0 for e in estimates], dtype=float
    )
    ax.barh(
        y,
        np.nan_to_num(values),
        color="#8fb0dd",
        xerr=np.vstack([low, high]),
        capsize=4,
        error_kw={"elinewidth": 1.2, "ecolor": "#222"},
    )
    for i, (v, e) in enumerate(zip(values, estimates, strict=True)):
        # The value goes right of the bar and its interval, in dark text, so no error bar crosses it.
        if np.isfinite(v):
            end = e.high if e.high is not None else v
            text = f"{v:.3f}" + (f"  [{e.low:.3f}, {e.high:.3f}]" if e.low is not None and e.low != e.high else "")
            ax.text(end + 0.015, i, text, va="center", ha="left", color="#222", fontsize=8)
        else:
            ax.text(0.015, i, "no rated response", va="center", ha="left", color="#666", fontsize=8)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.35)  # room for the caps at 1.0 and the labels after them
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_xlabel(xlabel)
    ax.set_title(title, loc="left", fontsize=10)


def draw_label_mix(ax: Axes, stats: list[GroupStats]) -> None:
    """One stacked bar per group: the share of judged claims with each label.

    The legend sits in the figure, below the axes (``outside lower center``), so that with any
    number of groups it neither covers a bar nor gets cut at the figure's edge.
    """
    names = [s.name for s in stats]
    y = np.arange(len(names))
    left = np.zeros(len(names))
    for label in LABEL_ORDER:
        share = np.array([s.label_shares[label].value or 0.0 for s in stats])
        ax.barh(y, share, left=left, color=LABEL_COLOURS[label], label=label.replace("_", " "))
        left += share
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of judged claims")
    ax.set_title("Label mix", loc="left", fontsize=10)
    ax.figure.legend(loc="outside lower center", ncols=len(LABEL_ORDER), fontsize=8, frameon=False)


def draw_subtype_mix(ax: Axes, names: list[str], counts: list[dict[str, int]], judged: list[int] | None = None) -> None:
    """A grid with one row per group and one column per subtype: the count of claims with that
    subtype and, given each group's number of ``judged`` claims, their share of them.

    The colour follows the share of all judged claims (the count when ``judged`` is not given),
    so one subtyped claim among fifty is a pale 2% cell, not a full bar; a grid also stays
    readable with many groups, where grouped bars do not.
    """
    present = [x for x in SUBTYPES if any(c.get(x, 0) for c in counts)] or SUBTYPES
    table = np.array([[c.get(x, 0) for x in present] for c in counts], dtype=float).reshape(len(names), len(present))
    if judged is not None:
        totals = np.array(judged, dtype=float)[:, None]
        shade = np.divide(table, totals, out=np.zeros_like(table), where=totals > 0)
    else:
        shade = table
    top = max(float(shade.max(initial=0.0)), 0.05 if judged is not None else 1.0)
    ax.imshow(shade, cmap="Reds", vmin=0.0, vmax=top, aspect="auto")
    for row in range(len(names)):
        for col in range(len(present)):
            k = int(table[row, col])
            text = f"{k} ({shade[row, col]:.0%})" if k and judged is not None else str(k)
            colour = "white" if shade[row, col] > top * 0.6 else "#222"
            ax.text(col, row, text, ha="center", va="center", fontsize=7, color=colour)
    ax.set_xticks(np.arange(len(present)), [x.replace("_", " ") for x in present], fontsize=8, rotation=30, ha="right")
    rows = names if judged is None else [f"{name} ({n} judged)" for name, n in zip(names, judged, strict=True)]
    ax.set_yticks(np.arange(len(names)), rows)
    ax.tick_params(length=0)
    ax.spines[:].set_visible(False)
    what = "claims (share of judged claims)" if judged is not None else "claims"
    # a figure title: the grid may be narrower than the sentence
    _figure_title(ax, f"Error subtypes: {what}")


def draw_differences(ax: Axes, comparisons: list[Comparison]) -> None:
    """Forest plot of each group against the baseline (``b - a`` in mean unsupported rate, with
    intervals); right of zero means the group is worse than the baseline."""
    names = [c.b for c in comparisons]
    y = np.arange(len(names))
    for i, c in enumerate(comparisons):
        d = c.unsupported_rate.diff
        if d.value is None:
            continue
        if d.low is not None and d.high is not None:
            ax.plot([d.low, d.high], [i, i], color="#222", linewidth=1.5)
        ax.plot([d.value], [i], "o", color="#c8414b" if d.value > 0 else "#4c9a5a")
        ax.annotate(
            f"{d.value:+.3f}",
            (d.value, i),
            textcoords="offset points",
            xytext=(0, 7),
            ha="center",
            fontsize=8,
            color="#222",
        )
    ax.axvline(0, color="#888", linewidth=1, linestyle="--")
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_ylim(len(names) - 0.4, -0.7)  # room above the first point for its label
    ax.set_xlim(-1.05, 1.05)
    baseline = comparisons[0].a if comparisons else ""
    ax.set_xlabel("difference in mean unsupported rate (group - baseline)")
    _figure_title(ax, f"Each group against the baseline {baseline}")


def _figure_title(ax: Axes, text: str) -> None:
    """A title over the whole figure, left-aligned: unlike an axes title it may be wider than the plot."""
    ax.figure.suptitle(text, x=0.01, ha="left", fontsize=10)


def _width(labels: list[str]) -> float:
    """Figure width in inches: 7, or wider when the y-axis labels (group names) are long."""
    return max(7.0, 3.5 + 0.075 * max((len(x) for x in labels), default=0))


def report_figures(stats: list[GroupStats], comparisons: list[Comparison]) -> list[tuple[str, str, Figure]]:
    """The report's figures as (file name, title, figure), in display order, drawn but not saved."""
    names = [s.name for s in stats]
    height = 1.2 + 0.45 * len(names)
    width = _width(names)
    figures = []

    for field, plot_title, xlabel, file, title in (
        (
            "mean_unsupported_rate",
            "Mean claim-level unsupported rate (95% CI)",
            "unsupported claims / evaluated claims",
            "unsupported_rate.png",
            "Mean unsupported rate per model",
        ),
        (
            "hallucinated_share",
            "Share of hallucinated responses (95% CI)",
            "hallucinated responses / responses",
            "hallucinated_share.png",
            "Hallucinated share per model",
        ),
    ):
        figure = new_figure(width, height)
        draw_estimates(figure.add_subplot(), names, [getattr(s, field) for s in stats], plot_title, xlabel=xlabel)
        figures.append((file, title, figure))

    figure = new_figure(max(width, 7.5), height + 0.6)  # 7.5 in: the five labels fit on one legend line
    draw_label_mix(figure.add_subplot(), stats)
    figures.append(("label_mix.png", "Label mix per model", figure))

    judged = [sum(s.label_counts.values()) for s in stats]
    present = sum(1 for x in SUBTYPES if any(s.subtype_counts.get(x, 0) for s in stats)) or len(SUBTYPES)
    rows = [f"{name} ({n} judged)" for name, n in zip(names, judged, strict=True)]
    # at least 4.5 in, the width of the figure title
    figure = new_figure(max(_width(rows) - 3.5 + 0.9 * present, 4.5), 1.8 + 0.4 * len(names))
    draw_subtype_mix(figure.add_subplot(), names, [s.subtype_counts for s in stats], judged)
    figures.append(("subtype_mix.png", "Error subtypes per model", figure))

    if comparisons:
        figure = new_figure(_width([c.b for c in comparisons]), 1.4 + 0.45 * len(comparisons))
        draw_differences(figure.add_subplot(), comparisons)
        figures.append(("differences.png", "Difference in mean unsupported rate from the baseline", figure))
    return figures


def save_report_plots(stats: list[GroupStats], comparisons: list[Comparison], out_dir: Path) -> list[tuple[str, str]]:
    """Write the report's PNG files into ``out_dir``; returns (file name, title) pairs in display order."""
    written = []
    for name, title, figure in report_figures(stats, comparisons):
        save(figure, out_dir / name)
        written.append((name, title))
    return written
