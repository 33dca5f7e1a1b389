"""hallumeasure.Run: typed tables with Python objects, short reprs, escaped HTML, viewer, comparison and audit."""

from __future__ import annotations

import json
import sqlite3

import pytest
from testdata import REPO

import hallumeasure
from hallumeasure.core.errors import RunStoreError
from hallumeasure.report.drilldown import stats_table
from hallumeasure.runs.run import load_run as load_run_data

EXAMPLES = REPO / "examples" / "samples.jsonl"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> hallumeasure.Run:
    return hallumeasure.measure(EXAMPLES, out=tmp_path_factory.mktemp("runs") / "demo")


def test_count_and_span_columns_hold_python_objects(run):
    stored = sqlite3.connect(run.path / "run.sqlite")
    for row in run.responses.itertuples(index=False):
        counts, subtypes = stored.execute(
            "SELECT label_counts, subtype_counts FROM results WHERE sample_id = ?", (row.sample_id,)
        ).fetchone()
        assert row.label_counts == json.loads(counts) and row.subtype_counts == json.loads(subtypes)
        assert sum(row.label_counts.values()) == row.n_claims - row.n_errors
    spans = dict(stored.execute("SELECT claim_id, spans FROM claims"))
    assert all(
        isinstance(x, list) and x == json.loads(spans[c])
        for c, x in zip(run.claims["claim_id"], run.claims["spans"], strict=True)
    )
    first = run.claims.iloc[0]
    response = run.responses.set_index("sample_id").loc[first["sample_id"], "response"]
    span = first["spans"][0]
    assert response[span["start"] : span["end"]]  # the span points into the response


def test_attributes_are_data_and_typed(run):
    assert isinstance(run.error_reasons, list) and run.error_reasons == []
    assert run.judge == "offline" and run.extractor == "offline" and run.status == "complete" and not run.unfinished
    assert run.errors.empty and list(run.summary["model"]) == ["(all)", "model-a", "model-b"]
    assert run.rates.equals(stats_table(load_run_data(run.path)))
    assert hallumeasure.load_run(run.path).summary.equals(run.summary)


def test_error_reasons_are_typed_records(tmp_path):
    rows = [{"id": "a", "context": "The sky is blue.", "response": "The sky is blue."}]
    run = hallumeasure.measure(rows, out=tmp_path / "run")
    with sqlite3.connect(run.path / "run.sqlite") as db:
        db.execute("UPDATE verdicts SET label = NULL, error = 'the judge timed out'")
    [reason] = hallumeasure.load_run(run.path).error_reasons
    assert reason == hallumeasure.ErrorReason(reason="the judge timed out", count=1, rows="claim")


def test_repr_is_short_and_html_shows_counts_rates_with_intervals_and_judge(run):
    text = repr(run)
    assert len(text) < 250 and "16 responses" in text and "judge offline" in text
    html = run._repr_html_()
    overall = run.rates.iloc[0]
    assert overall["mean unsupported rate [95% CI]"] in html and "[" in overall["mean unsupported rate [95% CI]"]
    assert "model-a" in html and "judge <b>offline</b>" in html and len(html) < 5000


def test_run_text_is_escaped_in_html(tmp_path):
    rows = [
        {"id": "x", "model": "<script>alert(1)</script>", "context": "The sky is blue.", "response": "The sky is red."}
    ]
    run = hallumeasure.measure(rows, out=tmp_path / "run")
    for html in (run._repr_html_(), str(run.claims_html())):
        assert "<script>" not in html and "&lt;script&gt;" in html


def test_filter_and_tables_for_a_notebook(run):
    wrong = run.filter(model="model-b", label=["contradicted", "absent"])
    assert len(wrong) and set(wrong["model"]) == {"model-b"} and "source_sentence" in wrong
    page = run.claims_html(wrong, limit=3)
    assert "<mark>" in page._repr_html_() and page._repr_html_().count("<tr>") == 4
    assert run.claims_html(run.claims.head(2))._repr_html_().count("<tr>") == 3  # plain claims rows work too
    assert run.subtype_mix.to_numpy().sum() == run.claims["subtype"].notna().sum()
    assert run.citations.empty  # no passages, no citation numbers


def test_filter_by_sample_id_matches_every_model_of_a_shared_id_and_a_run_key_exactly(tmp_path):
    context = "Ticket INC-2291 was closed on Monday. The refund takes five days."
    rows = [
        {"id": "q-ticket", "model": "assistant-v1", "context": context, "response": "INC-2291 was closed on Monday."},
        {"id": "q-ticket", "model": "assistant-v2", "context": context, "response": "INC-2291 was closed on Friday."},
        {"id": "q-refund", "model": "assistant-v1", "context": context, "response": "The refund takes five days."},
    ]
    path = tmp_path / "models.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    run = hallumeasure.measure(path, out=tmp_path / "run")
    assert {"q-ticket@assistant-v1", "q-ticket@assistant-v2"} <= set(run.claims["sample_id"])  # keyed per model

    shared = run.filter(sample_id="q-ticket")  # the id as written: both models' rows
    assert len(shared) and set(shared["model"]) == {"assistant-v1", "assistant-v2"}
    assert set(shared["sample_id"]) == {"q-ticket@assistant-v1", "q-ticket@assistant-v2"}
    keyed = run.filter(sample_id="q-ticket@assistant-v2")  # a run key: that row only
    assert len(keyed) and set(keyed["sample_id"]) == {"q-ticket@assistant-v2"}
    several = run.filter(sample_id=["q-ticket@assistant-v1", "q-refund"], model="assistant-v1")
    assert set(several["sample_id"]) == {"q-ticket@assistant-v1", "q-refund"}
    assert run.filter(sample_id="q-ticket@assistant-v3").empty and run.filter(sample_id="q-tick").empty


def test_view_writes_the_viewer(run, tmp_path, monkeypatch):
    opened = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    page = run.view(tmp_path / "page.html")
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>") and opened == [page.resolve().as_uri()]
    assert run.view(tmp_path / "quiet.html", open=False).exists() and len(opened) == 1


def test_compare_and_audit_return_typed_results_with_html(run, tmp_path):
    other = hallumeasure.measure(EXAMPLES, out=tmp_path / "again", unsupported_labels="contradicted,absent")
    comparison = run.compare(other, out=tmp_path / "compare", allow_mismatch=True)
    assert isinstance(comparison, hallumeasure.RunComparison) and (tmp_path / "compare" / "report.html").exists()
    names = ["model-a (demo)", "model-b (demo)", "model-a (again)", "model-b (again)"]
    # one baseline (the first group) against each other group: k - 1 comparisons
    assert [s.name for s in comparison.model_stats] == names and len(comparison.comparisons) == len(names) - 1
    assert "rate difference" in comparison._repr_html_() and comparison.out == str(tmp_path / "compare")

    audit = run.audit(run, out=tmp_path / "audit", max_rate_rise=0.05)
    assert isinstance(audit, hallumeasure.RunAudit) and audit.settings.max_rate_rise == 0.05
    # A run against itself over 16 samples: no spread, and too few samples to rule a rise out (issue #28).
    assert audit.status == "inconclusive" and not audit.passed and audit.exit_code == 4
    assert (tmp_path / "audit" / "audit.junit.xml").exists()
    html = audit._repr_html_()
    assert "unsupported_rate" in html and "PASS" in html
    # The outcome and its exit code once, not "inconclusive (exit code 4): INCONCLUSIVE (exit code 4)" (issue #38).
    assert repr(audit).startswith("<RunAudit INCONCLUSIVE (exit code 4), ") and repr(audit).count("exit code") == 1
    with pytest.raises(TypeError):
        run.audit(run, gates=hallumeasure.AuditGates(), alpha=0.1)


def test_compare_and_audit_refuse_an_unfinished_run(run, tmp_path):
    rows = [{"id": "a", "context": "The sky is blue.", "response": "The sky is blue."}]
    cut = hallumeasure.measure(rows, out=tmp_path / "cut")
    manifest = json.loads((cut.path / "manifest.json").read_text())
    (cut.path / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    with pytest.raises(RunStoreError, match="unfinished run"):
        run.audit(cut.path)
    with pytest.raises(RunStoreError, match="resume=True"):
        run.compare(cut.path, out=tmp_path / "c")


def test_stability_is_there_for_repeats_only(run, tmp_path):
    from hallumeasure.report.stability import run_stability

    assert run.stability is None
    rows = hallumeasure.load_samples(EXAMPLES).samples[:3]
    repeated = hallumeasure.measure(rows, judge="fake", extractor="fake", repeats=3, out=tmp_path / "rep")
    assert repeated.stability == run_stability(load_run_data(repeated.path))
    assert set(repeated.votes["repeat"]) == {0, 1, 2}
