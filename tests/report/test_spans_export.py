"""Unsupported spans of a stored run: the responses frame, show --json, and the LettuceDetect / RAGTruth exports."""

import itertools
import json

import pytest
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.report.spans import response_spans
from hallumeasure.runs.run import Run
from hallumeasure.runs.span_sets import load_span_set
from tests.testdata import EXAMPLES

runner = CliRunner()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("spans") / "run"
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(out), "--judge", "fake", "--extractor", "fake"])
    assert result.exit_code in (0, 3), result.output
    return out


def _hold_their_text(response: str, spans) -> bool:
    return all(response[s["start"] : s["end"]] == s["text"] for s in spans)


def test_every_response_has_its_unsupported_spans(run_dir):
    run = Run.load(run_dir)
    frame = run.responses
    assert "unsupported_spans" in frame.columns and frame["unsupported_spans"].map(len).sum() > 0
    for response, spans in zip(frame["response"], frame["unsupported_spans"], strict=True):
        assert _hold_their_text(response, spans)
        assert all(a["end"] <= b["start"] for a, b in itertools.pairwise(spans))
    # a response with an unsupported claim that was placed has a span; a clean one has none
    for r in response_spans(run):
        if r.measured and not r.spans:
            result = next(x for x in run.results if x.sample_id == r.sample_id)
            assert result.n_unsupported == len(r.unlocated)
    assert run.claims["located"].all()


def test_show_json_lists_the_spans(run_dir):
    shown = runner.invoke(app, ["show", str(run_dir), "--json"])
    payload = json.loads(shown.output)["unsupported_spans"]
    assert {"sample_id", "spans", "unlocated", "measured"} <= set(payload[0])
    assert any(p["spans"] for p in payload)
    assert {"start", "end", "text", "confidence", "label", "subtype"} <= set(
        next(p for p in payload if p["spans"])["spans"][0]
    )


def test_exports_read_back_as_span_truth(run_dir, tmp_path):
    lettuce = runner.invoke(app, ["export", str(run_dir), "--to", "lettucedetect", "--out", str(tmp_path / "l.json")])
    assert lettuce.exit_code == 0, lettuce.output
    records = json.loads((tmp_path / "l.json").read_text())
    assert {"prompt", "answer", "labels"} <= set(records[0])
    assert all(_hold_their_text(r["answer"], r["labels"]) for r in records)
    folder = tmp_path / "rt"
    rag = runner.invoke(app, ["export", str(run_dir), "--to", "ragtruth", "--out", str(folder)])
    assert rag.exit_code == 0, rag.output
    back = load_span_set(folder)
    run = Run.load(run_dir)
    assert len(back) == len([r for r in response_spans(run) if r.measured])
    mine = {r.sample_id: [(s.start, s.end) for s in r.spans] for r in response_spans(run)}
    assert all([(g.start, g.end) for g in s.spans or ()] == mine[s.id] for s in back)
    assert {g.label for s in back for g in s.spans or ()} <= {
        "Evident Conflict",
        "Subtle Conflict",
        "Evident Baseless Info",
        "Subtle Baseless Info",
    }
    bad = runner.invoke(app, ["export", str(run_dir), "--to", "csv"])
    assert bad.exit_code == 2 and "lettucedetect" in bad.output
