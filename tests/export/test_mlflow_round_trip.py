"""The MLflow round trip, against a real tracking store on local files (SQLite): an app traced by MLflow's own
OpenAI autologging (the openai client against the local simulator), ``mlflow.search_traces`` measured, the
verdicts logged back as assessments and read through MLflow's client, and the scorer run by
``mlflow.genai.evaluate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

mlflow = pytest.importorskip("mlflow", reason="needs the mlflow extra")

from mlflow.entities import AssessmentSource  # noqa: E402

import hallumeasure  # noqa: E402
from hallumeasure.core.labels import Label  # noqa: E402
from hallumeasure.core.types import SourceKind  # noqa: E402
from hallumeasure.export.evaluations import CLAIM_EVALUATION, RESPONSE_EVALUATION  # noqa: E402
from hallumeasure.export.mlflow import log_to_mlflow  # noqa: E402
from hallumeasure.testing import Answer, OpenAIServer  # noqa: E402

DOC = "Orders ship from the Leeds warehouse. Standard delivery takes 3 working days."
ANSWER = "Order 4417 shipped on Monday. Delivery takes 3 working days."
RESULTS = {
    "ok": "Order 4417 shipped on Monday from Leeds.",
    "failed": "ERROR 503 order service unavailable; last cached status: order 4417 shipped on Monday.",
}


def _agent(outcome: str) -> None:
    import openai

    with OpenAIServer(script=[Answer(text=ANSWER)]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")

        @mlflow.trace(span_type="AGENT")
        def answer(question: str) -> str:
            with mlflow.start_span("retrieve", span_type="RETRIEVER") as span:
                span.set_inputs({"query": question})
                span.set_outputs(
                    [{"page_content": DOC, "metadata": {"doc_uri": "kb/shipping.md", "chunk_id": "kb-12"}}]
                )
            with mlflow.start_span("lookup_order", span_type="TOOL") as span:
                span.set_inputs({"order": "4417"})
                span.set_outputs(RESULTS[outcome])
                if outcome == "failed":
                    span.set_status("ERROR")
            reply = client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[
                    {"role": "system", "content": "You are Parcelly's agent."},
                    {"role": "user", "content": question},
                ],
            )
            return reply.choices[0].message.content or ""

        answer("Where is my order 4417?")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("support")
    mlflow.openai.autolog()
    try:
        _agent("ok")
        _agent("failed")
        mlflow.flush_trace_async_logging()
    finally:
        mlflow.openai.autolog(disable=True)
    return uri


def test_traces_measured_and_assessments_read_back(store: str, tmp_path: Path) -> None:
    traces = mlflow.search_traces()
    assert len(traces) == 2
    run = hallumeasure.measure(traces, out=tmp_path / "run")
    samples = {s.id: s for s in run.samples}
    failed = {}
    for result in run.results:
        sample = samples[result.sample_id]
        assert sample.metadata["source_format"] == "mlflow"
        tool = next(p for p in sample.passages if p.kind is SourceKind.TOOL_RESULT)
        failed[tool.failed] = result
    assert failed[True].verdicts[0].label is Label.ABSENT
    assert "failed tool call" in (failed[True].verdicts[0].label_reason or "")
    assert failed[False].verdicts[0].label is Label.SUPPORTED
    # what the first version logged: on the trace, one name per claim; the export replaces it
    old = AssessmentSource(source_type="CODE", source_id="hallumeasure")
    for trace_id in traces["trace_id"]:
        mlflow.log_feedback(trace_id=trace_id, name=RESPONSE_EVALUATION, value=1.0, source=old)
        mlflow.log_feedback(trace_id=trace_id, name=f"{CLAIM_EVALUATION}.0", value=1.0, source=old)
    # a response and its claims per trace; exported twice, each span still holds one assessment per metric
    assert log_to_mlflow(run, tracking_uri=store) == 4
    assert log_to_mlflow(run, tracking_uri=store) == 4
    back = {}
    for sample_id in (r.sample_id for r in run.results):
        sample = samples[sample_id]
        trace_id, span_id = sample.metadata["trace_id"], sample.metadata["span_id"]
        assessments = mlflow.get_trace(trace_id).info.assessments
        assert sorted(a.name for a in assessments) == [CLAIM_EVALUATION, RESPONSE_EVALUATION]
        assert {a.span_id for a in assessments} == {span_id}
        back[trace_id] = {a.name: a for a in assessments}
    values = sorted(a[RESPONSE_EVALUATION].value for a in back.values())
    assert values == [0.0, 0.5]
    assert any("tool result" in (a[RESPONSE_EVALUATION].rationale or "") for a in back.values())
    claims = [a[CLAIM_EVALUATION] for a in back.values()]
    assert sorted(tuple(c.value) for c in claims) == [("absent", "supported"), ("supported", "supported")]
    rows = [row for c in claims for row in json.loads(c.metadata["claims"])]
    absent = next(row for row in rows if row["label"] == "absent")
    assert absent["source_kind"] == "tool_result" and len(absent["source_id"]) == 16
    assert {c.metadata["source_id"] for c in claims} >= {f"{absent['source_id']},kb-12"}


def test_the_scorer_runs_in_mlflow_genai_evaluate(store: str) -> None:
    from hallumeasure.api.mlflow_scorer import NAME, grounded_scorer

    assert NAME == RESPONSE_EVALUATION  # the scorer's column and the export's are one

    traces = mlflow.search_traces()
    outcome = mlflow.genai.evaluate(data=traces, scorers=[grounded_scorer()])
    table = outcome.result_df
    column = next(c for c in table.columns if c.startswith(NAME) and c.endswith("value"))
    assert sorted(table[column].tolist()) == [0.0, 0.5]
