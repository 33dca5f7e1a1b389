"""One run, one interval: every view shows a group's rate with the same interval and the same rounding, and,
for a keyless run with unsure claims, the same unsure-claim bounds and covering interval, labelled as such."""

import json

import pytest
from testdata import EXAMPLES
from typer.testing import CliRunner
from unsure_judge import UnsureJudge

import hallumeasure as hm
from hallumeasure.cli import app
from hallumeasure.core.types import Mode
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.report.audit import audit_runs
from hallumeasure.report.compare import compare_runs
from hallumeasure.report.rates import UNSURE_COLUMNS, rate_text, run_rates, unsure_cells
from hallumeasure.report.viewer import build_viewer_data
from hallumeasure.runs.inputs import load_samples
from hallumeasure.stats.estimate import Estimate

runner = CliRunner()


@pytest.fixture(scope="module")
def unsure_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rates") / "run"
    samples = load_samples(EXAMPLES).samples
    judge = UnsureJudge(OfflineJudge(), lambda c, v: c.index % 2 == 1)
    run_measurement(samples, out, OfflineExtractor(), judge, mode=Mode.COT_ALL, input_sha256="x" * 64)
    return out


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_view_shows_the_same_rate_and_the_same_bounds(unsure_run, tmp_path):
    run = hm.load_run(unsure_run)
    groups = {g.name: g for g in run_rates(run)}
    assert set(groups) == {"(all)", "model-a", "model-b"}
    expected = {}
    for name, g in groups.items():
        assert g.unsure is not None
        cells = unsure_cells(g.unsure)
        expected[name] = (rate_text(g.stats), cells)
        low, high = g.unsure.covering
        own = g.stats.mean_unsupported_rate
        # the covering interval is never the rate's own interval, and it holds both bounds' values and the rate's
        assert (low, high) != (own.low, own.high)
        assert low <= min(own.low, g.unsure.rate_low.value) and high >= max(own.high, g.unsure.rate_high.value)

    # measure / show (terminal): the rate table, then the unsure table
    shown = _flat(runner.invoke(app, ["show", str(unsure_run)], env={"COLUMNS": "200"}).output)
    # the notebook: Run.rates and its HTML
    table = run.rates.set_index("group")
    html = run._repr_html_()
    for name, (rate, cells) in expected.items():
        assert f"{name} " in shown and f" {rate} " in shown
        assert f"{name} {' '.join(cells.values())}" in shown
        assert table.loc[name, "mean unsupported rate [95% CI]"] == rate
        assert [table.loc[name, c] for c in UNSURE_COLUMNS] == list(cells.values())
        assert f"<td>{rate}</td>" in html and all(f"<td>{c}</td>" in html for c in cells.values())

    # the viewer: the page shows the strings Python wrote
    viewer = {m.name: m for m in build_viewer_data([run]).runs[0].models}
    for name in ("model-a", "model-b"):
        rate, cells = expected[name]
        assert viewer[name].rate_text == rate and viewer[name].unsure == cells

    # compare: the report files, its JSON and the terminal
    report = compare_runs([run], tmp_path / "cmp", resamples=2000)
    markdown, page = (tmp_path / "cmp" / "report.md").read_text(), (tmp_path / "cmp" / "report.html").read_text()
    data = json.loads((tmp_path / "cmp" / "report.json").read_text())
    printed = _flat(runner.invoke(app, ["compare", str(unsure_run), "--out", str(tmp_path / "c2")]).output)
    for name in ("model-a", "model-b"):
        rate, cells = expected[name]
        phrase = (
            f"{rate} (unsure-claim bounds {cells['unsure-claim bounds']}, 95% CI covering them "
            f"{cells['95% CI covering the bounds']}, {cells['decided']} decided)"
        )
        assert phrase in markdown and phrase in page
        stats = next(s for s in data["model_stats"] if s["name"] == name)
        assert Estimate(**stats["mean_unsupported_rate"]).format() == rate
        assert f"{name} " in printed and f" {rate} " in printed and f"{name} {' '.join(cells.values())}" in printed
    assert report.run_unsure[0].covering == groups["(all)"].unsure.covering

    # audit: each run's numbers
    audit_runs(run, run, out_dir=tmp_path / "audit")
    audit = _flat((tmp_path / "audit" / "audit.md").read_text())
    rate, cells = expected["(all)"]
    assert f"| mean unsupported rate | {rate} | {rate} |" in audit
    for column, cell in cells.items():
        label = "unsure-claim bounds of the rate" if column == "unsure-claim bounds" else column
        assert f"| {label} | {cell} | {cell} |" in audit


def test_rates_are_written_with_one_rounding():
    """A half-way value is written as Python writes it everywhere (the viewer no longer rounds in the browser)."""
    half = Estimate(value=0.0625, low=0.0, high=0.1875)
    assert half.format() == f"{0.0625:.3f} [{0.0:.3f}, {0.1875:.3f}]" == "0.062 [0.000, 0.188]"
    # an interval of one point (nothing varies) is left out, in every view alike
    assert Estimate(value=1.0, low=1.0, high=1.0).format() == "1.000"
    assert Estimate(value=None).format() == "-"


def test_a_run_without_unsure_claims_shows_no_bounds(tmp_path):
    out = tmp_path / "run"
    samples = load_samples(EXAMPLES).samples
    run_measurement(
        samples,
        out,
        OfflineExtractor(),
        UnsureJudge(OfflineJudge(), lambda c, v: False),
        mode=Mode.COT_ALL,
        input_sha256="y" * 64,
    )
    run = hm.load_run(out)
    assert all(g.unsure is None for g in run_rates(run))
    assert not set(UNSURE_COLUMNS) & set(run.rates.columns)
    assert all(m.unsure is None for m in build_viewer_data([run]).runs[0].models)
