"""Phoenix span annotations without a Phoenix: the annotation rows (``annotator_kind`` from the judge, the unsure
marker), and what Phoenix's own client posts from them to a stand-in server started here, from Python and
from the command line alike."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

import hallumeasure
from hallumeasure.cli import app
from hallumeasure.export.evaluations import CLAIM_EVALUATION, RESPONSE_EVALUATION, evaluation_results
from hallumeasure.export.phoenix import log_to_phoenix, span_annotations
from tests.testdata import EXAMPLES


def _rows() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]
    for n, row in enumerate(rows):
        row["metadata"] = {"trace_id": f"{n:032x}", "span_id": f"{n + 1:016x}"}
    return rows


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> hallumeasure.Run:
    return hallumeasure.measure(_rows(), out=tmp_path_factory.mktemp("phoenix") / "offline", judge="offline")


def test_a_keyless_judge_annotates_as_code_and_an_llm_judge_as_llm(offline: hallumeasure.Run, tmp_path: Path) -> None:
    rows = span_annotations(evaluation_results(offline))
    assert rows and {r["annotator_kind"] for r in rows} == {"CODE"}
    llm = hallumeasure.measure(_rows()[:2], out=tmp_path / "llm", judge="fake", extractor="fake")
    assert {r["annotator_kind"] for r in span_annotations(evaluation_results(llm))} == {"LLM"}


def test_unsure_verdicts_keep_their_label_and_are_marked(offline: hallumeasure.Run) -> None:
    verdicts = {
        (r.sample_id, c.index): v for r in offline.results for c in r.claims for v in r.verdicts if v.claim_id == c.id
    }
    rows = [r for r in span_annotations(evaluation_results(offline)) if r["name"] == CLAIM_EVALUATION]
    unsure = [r for r in rows if r["metadata"]["unsure"]]
    assert unsure and len(unsure) < len(rows)
    for row in rows:
        verdict = verdicts[(row["metadata"]["sample_id"], int(row["identifier"].removeprefix("claim-")))]
        assert row["metadata"]["unsure"] is (not verdict.confident)
        assert verdict.label is not None and row["label"] == verdict.label.value
    responses = [r for r in span_annotations(evaluation_results(offline)) if r["name"] == RESPONSE_EVALUATION]
    assert any(r["metadata"]["unsure"] for r in responses)


class _Phoenix(BaseHTTPRequestHandler):
    """A stand-in for Phoenix's REST API: keeps the body of every span-annotation POST."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.startswith("/v1/span_annotations"):
            type(self).bodies.append(body)
        reply = json.dumps({"data": [{"id": str(n)} for n, _ in enumerate(body.get("data", []))]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def phoenix() -> Iterator[str]:
    pytest.importorskip("phoenix.client", reason="needs the phoenix extra (arize-phoenix-client)")
    _Phoenix.bodies.clear()
    server = HTTPServer(("127.0.0.1", 0), _Phoenix)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


def _sent() -> list[dict[str, Any]]:
    return [a for body in _Phoenix.bodies for a in body["data"]]


def test_python_and_the_command_line_send_the_same_annotations(offline: hallumeasure.Run, phoenix: str) -> None:
    logged = log_to_phoenix(offline, phoenix)
    from_python = _sent()
    assert logged == len(from_python) == len(evaluation_results(offline))
    assert {a["name"] for a in from_python} == {RESPONSE_EVALUATION, CLAIM_EVALUATION}
    assert {a["annotator_kind"] for a in from_python} == {"CODE"}
    assert any(a["metadata"]["unsure"] for a in from_python)
    _Phoenix.bodies.clear()
    done = CliRunner().invoke(app, ["export", str(offline.path), "--to", "phoenix", "--out", phoenix])
    assert done.exit_code == 0, done.output
    assert _sent() == from_python
