"""Compare with k groups: one baseline, k-1 differences, plots readable at 8 groups, one interval procedure."""

from __future__ import annotations

import pytest
from matplotlib.transforms import Bbox
from report.helpers import sample, write_run
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.errors import ConfigError
from hallumeasure.report.compare import compare_runs
from hallumeasure.report.plots import report_figures
from hallumeasure.report.runs import load_runs, model_groups, response_units
from hallumeasure.report.summary import RATIO_FLOOR, comparison_summary
from hallumeasure.report.viewer import build_viewer_data
from hallumeasure.runs.inputs import key_samples
from hallumeasure.stats.groups import group_stats

#: Long model names, as providers spell them, so clipping and overlap would show.
MODELS = [f"provider-{i}:model-with-a-long-name-v{i}" for i in range(8)]


def _run(path, models=MODELS, n=10, bad=None, absent=True):
    """One row per question and model, the models sharing ids. Model k has ``bad[k]`` (default k)
    contradicted first claims; its second claim is absent in the first response when k is odd."""
    bad = list(range(len(models))) if bad is None else bad
    rows = []
    for i in range(n):
        for k, model in enumerate(models):
            specs = [("The bridge is 42 km long.", ("contradicted", "number") if i < bad[k] else "supported")]
            specs.append(("It opened.", ("absent", "entity") if absent and k % 2 and i == 0 else "unevaluatable"))
            rows.append((sample(i, model, id=f"q{i}"), specs))
    keyed = key_samples([s for s, _ in rows])
    return write_run(path, [(s, specs) for s, (_, specs) in zip(keyed, rows, strict=True)])


def test_eight_groups_give_seven_differences_against_the_first(tmp_path):
    report = compare_runs([_run(tmp_path / "run")], tmp_path / "out", resamples=200)
    assert report.baseline == MODELS[0]
    assert [c.a for c in report.comparisons] == [MODELS[0]] * 7
    assert [c.b for c in report.comparisons] == MODELS[1:]
    assert all(c.paired and c.n_shared == 10 for c in report.comparisons)
    assert report.comparisons[-1].unsupported_rate.diff.value == pytest.approx(0.7)


def test_baseline_is_chosen_by_name_and_an_unknown_one_is_refused(tmp_path):
    run = _run(tmp_path / "run", MODELS[:3])
    report = compare_runs([run], tmp_path / "out", resamples=200, baseline=MODELS[2])
    assert [(c.a, c.b) for c in report.comparisons] == [(MODELS[2], MODELS[0]), (MODELS[2], MODELS[1])]
    with pytest.raises(ConfigError, match=r"not a group.*provider-0"):
        compare_runs([run], tmp_path / "out", resamples=200, baseline="nope")
    result = CliRunner().invoke(
        app, ["compare", str(run), "--out", str(tmp_path / "o"), "--baseline", MODELS[1], "--resamples", "200"]
    )
    assert result.exit_code == 0, result.output
    assert f"against the baseline {MODELS[1]}" in result.output
    assert result.output.count(": +") + result.output.count(": -") == 2


def _overlaps(a: Bbox, b: Bbox) -> bool:
    return a.x0 < b.x1 - 0.5 and b.x0 < a.x1 - 0.5 and a.y0 < b.y1 - 0.5 and b.y0 < a.y1 - 0.5


def test_plots_of_eight_groups_keep_legends_and_labels_off_the_axes_and_inside_the_figure(tmp_path):
    runs = load_runs([_run(tmp_path / "run")])
    units = {r.name: response_units(r) for r in runs}
    groups = model_groups(runs, units)
    stats = [group_stats(g.units, g.name, resamples=100) for g in groups]
    report = compare_runs([tmp_path / "run"], tmp_path / "out", resamples=200)
    figures = report_figures(stats, report.comparisons)
    assert [name for name, _, _ in figures][-1] == "differences.png"
    for name, _, figure in figures:
        renderer = figure.canvas.get_renderer()
        figure.draw(renderer)
        frame = figure.bbox
        (ax,) = figure.axes
        plot_area = ax.get_window_extent(renderer)
        # only the ticks drawn: matplotlib keeps labels for ticks just outside the view limits
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        ticks = [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]
        ticks += [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
        boxes = [t.get_window_extent(renderer) for t in ticks if t.get_text()]
        for legend in [*figure.legends, *([ax.get_legend()] if ax.get_legend() else [])]:
            box = legend.get_window_extent(renderer)
            assert not _overlaps(box, plot_area), f"{name}: the legend covers the plot"
            boxes.append(box)
            texts = [t.get_text() for t in legend.get_texts()]
            assert "unevaluatable" in texts or name != "label_mix.png"
        assert boxes, name
        for box in boxes:
            assert not _overlaps(box, plot_area), f"{name}: a label overlaps the plot area"
        titles = [ax.title, ax.xaxis.label, *([figure._suptitle] if figure._suptitle else [])]
        boxes += [t.get_window_extent(renderer) for t in titles if t.get_text()]
        for box in boxes:
            assert frame.x0 - 0.5 <= box.x0 and box.x1 <= frame.x1 + 0.5, f"{name}: a text is cut at the side"
            assert frame.y0 - 0.5 <= box.y0 and box.y1 <= frame.y1 + 0.5, f"{name}: a text is cut at the top/bottom"
        shown = {t.get_text() for t in ax.get_yticklabels()}
        expected = set(MODELS[1:]) if name == "differences.png" else set(MODELS)
        assert all(any(m in label for label in shown) for m in expected), f"{name}: a group name is missing"


def test_subtype_shares_are_of_all_judged_claims(tmp_path):
    report = compare_runs([_run(tmp_path / "run", MODELS[:2])], tmp_path / "out", resamples=200)
    one = report.model_stats[1]  # one absent claim (entity) among 20 judged claims
    assert one.subtype_counts["entity"] == 1
    assert one.subtype_shares["entity"].value == pytest.approx(1 / 20)


def test_a_ratio_needs_enough_unsupported_claims_on_both_sides(tmp_path):
    report = compare_runs([_run(tmp_path / "run", MODELS[:8])], tmp_path / "out", resamples=200)
    by_name = {s.name: s for s in report.model_stats}
    lines = comparison_summary(report.model_stats, report.comparisons, report.confidence)
    # the baseline has no unsupported claim: no ratio against it in any line
    assert by_name[MODELS[0]].n_unsupported == 0
    assert not any("x the" in line for line in lines)
    few = compare_runs([_run(tmp_path / "few", MODELS[:2], bad=[2, 7], absent=False)], tmp_path / "o2", resamples=200)
    counts = sorted(s.n_unsupported for s in few.model_stats)
    assert counts[0] < RATIO_FLOOR <= counts[1]
    (line, *_) = comparison_summary(few.model_stats, few.comparisons, few.confidence)
    assert "x the" not in line and "no ratio" in line and str(counts[0]) in line
    enough = compare_runs(
        [_run(tmp_path / "enough", MODELS[:2], bad=[5, 7], absent=False)], tmp_path / "o3", resamples=200
    )
    assert min(s.n_unsupported for s in enough.model_stats) >= RATIO_FLOOR
    (line, *_) = comparison_summary(enough.model_stats, enough.comparisons, enough.confidence)
    assert "1.4x the" in line


def test_view_and_compare_give_one_run_the_same_interval(tmp_path):
    run = _run(tmp_path / "run", MODELS[:2], bad=[3, 6])
    report = compare_runs([run], tmp_path / "out")
    (viewed,) = build_viewer_data(load_runs([run])).runs
    assert [m.name for m in viewed.models] == MODELS[:2]
    for model, compared in zip(viewed.models, report.model_stats, strict=True):
        assert model.rate == compared.mean_unsupported_rate and model.share == compared.hallucinated_share
        assert model.rate.low is not None and model.rate.low < model.rate.value
