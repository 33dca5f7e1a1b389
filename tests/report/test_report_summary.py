"""The plain-words summary that opens comparison and audit reports, and intervals that say something."""

from report.helpers import sample, write_run

from hallumeasure.report.audit import AuditGates, audit_runs
from hallumeasure.report.compare import compare_runs
from hallumeasure.report.render import format_estimate
from hallumeasure.stats.estimate import Estimate


def _run(path, unsupported: int, model: str = "m"):
    specs = [("contradicted", "number")] * unsupported + ["supported"] * (4 - unsupported)
    return write_run(
        path, [(sample(i, model), [(f"Claim {j}.", spec) for j, spec in enumerate(specs)]) for i in range(10)]
    )


def test_a_degenerate_interval_is_not_printed():
    assert format_estimate(Estimate.of(0.0, 0.0, 0.0)) == "0.000"
    assert format_estimate(Estimate.of(0.0, 0.0, 0.0), 0) == "0"
    assert format_estimate(Estimate.of(0.25, 0.1, 0.4)) == "0.250 [0.100, 0.400]"
    assert format_estimate(None) == "-"


def test_comparison_opens_with_the_answer_in_words(tmp_path):
    base, cur = _run(tmp_path / "base", 1), _run(tmp_path / "cur", 3)
    compare_runs([base, cur], tmp_path / "out", resamples=300, seed=1)
    markdown = (tmp_path / "out" / "report.md").read_text()
    summary = markdown.split("## Summary", 1)[1].split("## Statistics", 1)[0]
    # 0.75 vs 0.25 over 10 paired samples that all moved the same way
    assert "m (cur)'s responses have 3.0x the unsupported-claim rate of m (base)'s: 0.750 vs 0.250" in summary
    assert "over 10 shared samples, p 0.002: significant at the 0.05 level" in summary
    assert "100% of m (base)'s 10 responses" in summary and "No error rows" in summary
    assert "number 10 (of 10 subtyped claims)" in summary
    # a zero count carries no interval anywhere in the report
    assert "[0.000, 0.000]" not in markdown and "[0, 0]" not in markdown
    html = (tmp_path / "out" / "report.html").read_text()
    assert html.index("<h2>Summary</h2>") < html.index("<h2>Statistics</h2>") and html.count('class="policy"') == 1
    assert '<a href="view.html">' in html and 'class="plots"' in html


def test_a_change_that_could_be_chance_is_called_so(tmp_path):
    rows_a = [(sample(i, "m"), [("c", "supported"), ("d", "supported")]) for i in range(6)]
    rows_b = [
        (sample(i, "m"), [("c", ("absent", "other") if i == 0 else "supported"), ("d", "supported")]) for i in range(6)
    ]
    a, b = write_run(tmp_path / "a", rows_a), write_run(tmp_path / "b", rows_b)
    result = audit_runs(a, b, AuditGates(), out_dir=tmp_path / "audit", resamples=300)
    markdown = (tmp_path / "audit" / "audit.md").read_text()
    summary = markdown.split("## Summary", 1)[1].split("## Gates", 1)[0]
    assert f"Audit result: {result.status.upper()}." in summary
    assert "b's responses have unsupported claims where a's have none" in summary
    assert "not significant (it could be chance)" in summary
    assert markdown.count("_Policy:") == 1
