"""The RAG section of show, compare and the run store, on the bundled ragas-style example."""

from __future__ import annotations

import json

from testdata import REPO
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.labels import Label
from hallumeasure.core.types import Passage, Sample
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.report.compare import compare_runs
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.store import RunStore

EXAMPLE = REPO / "examples" / "rag_samples.jsonl"
runner = CliRunner()


def _measure(tmp_path, samples=None):
    samples = samples or load_samples(EXAMPLE).samples
    run_measurement(samples, tmp_path / "run", OfflineExtractor(), OfflineJudge(), mode="cot-one", input_sha256="x")
    return tmp_path / "run"


def test_the_example_loads_as_ragas_rows_with_cited_passages():
    samples = load_samples(EXAMPLE).samples
    assert len(samples) == 6 and all(s.question and len(s.passages) >= 2 for s in samples)
    tides = next(s for s in samples if s.id == "tides")
    assert [p.id for p in tides.passages] == ["moon", "cycle"] and tides.passages[0].url


def test_passages_and_evidence_survive_the_store(tmp_path):
    run = _measure(tmp_path)
    with RunStore(run) as store:
        samples, results = store.samples(), store.results()
    assert samples == load_samples(EXAMPLE).samples  # passages with ids, titles and urls come back
    # a bare "Yes." is unevaluatable (nothing to check, so no citation to judge); every claim cites
    verdicts = [v for r in results for v in r.verdicts if v.label != Label.UNEVALUATABLE]
    assert sum(1 for v in verdicts if v.citation) == len(verdicts)
    assert all(e.verified and e.start is not None for v in verdicts for e in v.evidence)


def test_show_prints_the_rag_table_and_the_evidence_of_each_claim(tmp_path):
    run = _measure(tmp_path)
    shown = runner.invoke(app, ["show", str(run), "--claims"], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    assert "RAG: evidence and citations" in shown.output and "wrong_passage" in shown.output
    assert '[moon] "Tides' in shown.output and "NOT FOUND" not in shown.output  # the quote, with its passage id
    payload = json.loads(runner.invoke(app, ["show", str(run), "--json", "--claims"]).output)
    (overall, *per_model) = payload["rag"]
    assert overall["n_citing_responses"] == 6 and [m["model"] for m in per_model] == ["assistant-v1", "assistant-v2"]
    assert overall["citation_precision"] == round(overall["n_correct_citations"] / overall["n_citations"], 4)
    claims = payload["claims"]
    assert {"evidence_quote", "evidence_verified", "citations", "citation"} <= set(claims[0])


def test_compare_writes_the_rag_section_and_escapes_passage_text(tmp_path):
    # A wrong year, so that the response is among the worst examples, shown with its evidence passage.
    hostile = Sample(
        id="x",
        model="m",
        response="The museum opened in 1925 [1].",
        passages=(Passage(id="1", title="<script>alert(1)</script>", text="The <b>museum</b> opened in 1923."),),
    )
    run = _measure(tmp_path, [*load_samples(EXAMPLE).samples, hostile])
    report = compare_runs([run], tmp_path / "report", resamples=200)
    assert report.rag and report.rag[0].model == "(all)" and report.rag[0].n_citing_responses == 7
    md = (tmp_path / "report" / "report.md").read_text()
    html = (tmp_path / "report" / "report.html").read_text()
    assert "## RAG: evidence and citations" in md and "RAG: evidence and citations</h2>" in html
    assert "<script>alert(1)" not in html and "<b>museum</b>" not in html
    assert "&lt;b&gt;museum&lt;/b&gt;" in html
    assert json.loads((tmp_path / "report" / "report.json").read_text())["rag"][0]["n_responses"] == 7


def test_a_single_context_run_has_no_rag_section(tmp_path):
    samples = [Sample(id="a", context="The bridge is 24 km long.", response="The bridge is 24 km long.")]
    report = compare_runs([_measure(tmp_path, samples)], tmp_path / "report", resamples=200)
    assert report.rag == [] and "RAG" not in (tmp_path / "report" / "report.md").read_text()


def test_the_cli_reads_a_csv_with_ragas_columns_and_a_custom_citation_pattern(tmp_path):
    path = tmp_path / "in.csv"
    passages = json.dumps(["The bridge is 24 km long.", "It opened in 2019."])
    path.write_text(
        "id,user_input,retrieved_contexts,response\n"
        f'a,How long?,"{passages.replace(chr(34), chr(34) * 2)}",The bridge is 24 km long (see 2).\n',
        encoding="utf-8",
    )
    result = runner.invoke(
        app, ["measure", str(path), "--out", str(tmp_path / "run"), "--citation-pattern", r"\(see (?P<ids>\d+)\)"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(runner.invoke(app, ["show", str(tmp_path / "run"), "--json", "--claims"]).output)
    (claim,) = payload["claims"]
    assert claim["claim"] == "The bridge is 24 km long." and claim["citations"] == ["2"]
    assert claim["citation"] == "wrong_passage"
    bad = runner.invoke(
        app, ["measure", str(path), "--out", str(tmp_path / "run2"), "--citation-pattern", r"\[(\d+)\]"]
    )
    assert bad.exit_code == 2 and "group named ids" in bad.output
