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
from hallumeasure.report.stats import SUBTYPES, Estimate, GroupStats

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
    """One stacked bar per group: the share of judged claims with each label."""
    names = [s.name for s in stats]
    y = np.arange(len(names))
    left = np.zeros(len(names))
    for label in LABEL_ORDER:
        share = np.array([s.label_shares[label].value or 0.0 for s in stats])
        ax.barh(y, share, left=left, color=LABEL_COLOURS[label], label=label)
        left += share
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of judged claims")
    ax.set_title("Label mix", loc="left", fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncols=3, fontsize=8, frameon=False)


def draw_subtype_mix(ax: Axes, names: list[str], counts: list[dict[str, int]]) -> None:
    """Grouped bars: for each subtype, its share of each group's subtyped claims."""
    present = [x for x in SUBTYPES if any(c.get(x, 0) for c in counts)] or SUBTYPES
    x = np.arange(len(present))
    width = 0.8 / max(len(names), 1)
    colours = [f"C{i % 10}" for i in range(len(names))]
    top = 0.0
    for i, (name, group_counts) in enumerate(zip(names, counts, strict=True)):
        total = sum(group_counts.values())
        share = [group_counts.get(s, 0) / total if total else 0.0 for s in present]
        where = x + (i - (len(names) - 1) / 2) * width
        # The legend gives each group's number of subtyped claims, each bar its count: 100% of 2 is not 100% of 200.
        ax.bar(
            where, share, width, label=f"{name} ({total} subtyped claim{'s' if total != 1 else ''})", color=colours[i]
        )
        for bx, value, subtype in zip(where, share, present, strict=True):
            n = group_counts.get(subtype, 0)
            if n:
                ax.text(bx, value + 0.015, str(n), ha="center", va="bottom", fontsize=7, color="#222")
        top = max(top, *share) if share else top
    ax.set_xticks(x, [s.replace("_", "\n") for s in present], fontsize=8)
    ax.set_ylim(0, min(1.0, top) * 1.18 + 0.02)
    ax.set_ylabel("share of subtyped claims")
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("Error-subtype mix", loc="left", fontsize=10)
    ax.legend(fontsize=8, frameon=False)


def draw_differences(ax: Axes, comparisons: list[Comparison]) -> None:
    """Forest plot of ``b - a`` in mean unsupported rate, with intervals; right of zero means b is worse."""
    names = [f"{c.b} - {c.a}" for c in comparisons]
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
    ax.set_xlabel("difference in mean unsupported rate")
    ax.set_title("Differences between models", loc="left", fontsize=10)


def _width(labels: list[str]) -> float:
    """Figure width in inches: 7, or wider when the y-axis labels (group names) are long."""
    return max(7.0, 3.5 + 0.075 * max((len(x) for x in labels), default=0))


def save_report_plots(stats: list[GroupStats], comparisons: list[Comparison], out_dir: Path) -> list[tuple[str, str]]:
    """Write the report's PNG files into ``out_dir``; returns (file name, title) pairs in display order."""
    names = [s.name for s in stats]
    height = 1.2 + 0.45 * len(names)
    width = _width(names)
    written = []

    figure = new_figure(width, height)
    draw_estimates(
        figure.add_subplot(),
        names,
        [s.mean_unsupported_rate for s in stats],
        "Mean claim-level unsupported rate (95% CI)",
        xlabel="unsupported claims / evaluated claims",
    )
    save(figure, out_dir / "unsupported_rate.png")
    written.append(("unsupported_rate.png", "Mean unsupported rate per model"))

    figure = new_figure(width, height)
    draw_estimates(
        figure.add_subplot(),
        names,
        [s.hallucinated_share for s in stats],
        "Share of hallucinated responses (95% CI)",
        xlabel="hallucinated responses / responses",
    )
    save(figure, out_dir / "hallucinated_share.png")
    written.append(("hallucinated_share.png", "Hallucinated share per model"))

    figure = new_figure(width, height + 0.9)
    draw_label_mix(figure.add_subplot(), stats)
    save(figure, out_dir / "label_mix.png")
    written.append(("label_mix.png", "Label mix per model"))

    figure = new_figure(width, 3.6)
    draw_subtype_mix(figure.add_subplot(), names, [s.subtype_counts for s in stats])
    save(figure, out_dir / "subtype_mix.png")
    written.append(("subtype_mix.png", "Error-subtype mix per model"))

    if comparisons:
        figure = new_figure(_width([f"{c.b} - {c.a}" for c in comparisons]), 1.2 + 0.45 * len(comparisons))
        draw_differences(figure.add_subplot(), comparisons)
        save(figure, out_dir / "differences.png")
        written.append(("differences.png", "Differences in mean unsupported rate"))
    return written
