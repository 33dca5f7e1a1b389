"""The Phoenix round trip, against a real Phoenix server started here (``phoenix serve`` on 127.0.0.1 with
SQLite in a temporary folder): an agent traced by openinference-instrumentation-openai exports its spans to
Phoenix over OTLP/HTTP, Phoenix's span DataFrame (read with its own client) is measured, and the verdicts are
logged as span annotations and read back through the client.

arize-phoenix (the server) cannot be installed beside hallumeasure: it pins anthropic<2 where hallumeasure
needs anthropic>=2. It runs from its own environment: set HALLUMEASURE_PHOENIX to its ``phoenix`` command
(``.ci/run`` makes one), or have ``phoenix`` on PATH. Only arize-phoenix-client (the ``phoenix`` extra) is
needed here. With HALLUMEASURE_REQUIRE_PHOENIX=1 (CI) a missing server fails instead of skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("phoenix.client", reason="needs the phoenix extra (arize-phoenix-client)")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs the otel extra")
pytest.importorskip("openinference.instrumentation.openai", reason="needs openinference-instrumentation-openai")

import httpx
from local_servers import free_port
from runs.traces.support_app import run_agent, traced

import hallumeasure
from hallumeasure.core.types import SourceKind
from hallumeasure.export.evaluations import CLAIM_EVALUATION, RESPONSE_EVALUATION
from hallumeasure.export.phoenix import log_to_phoenix
from hallumeasure.registry import is_keyless

PROJECT = "support"


def _phoenix_command() -> str | None:
    return os.environ.get("HALLUMEASURE_PHOENIX") or shutil.which("phoenix")


@pytest.fixture(scope="module")
def phoenix_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    command = _phoenix_command()
    if command is None:
        if os.environ.get("HALLUMEASURE_REQUIRE_PHOENIX") == "1":
            pytest.fail("HALLUMEASURE_REQUIRE_PHOENIX=1 but no Phoenix server: set HALLUMEASURE_PHOENIX")
        pytest.skip("no Phoenix server: set HALLUMEASURE_PHOENIX to the phoenix command of its own environment")
    folder = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": str(folder),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = open(folder / "phoenix.log", "wb")  # noqa: SIM115 - closed after the server stops
    server = subprocess.Popen([command, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"Phoenix did not start: {(folder / 'phoenix.log').read_text(errors='replace')[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _spans_frame(client: object, expected: int) -> object:
    deadline = time.monotonic() + 60
    while True:
        frame = client.spans.get_spans_dataframe(project_identifier=PROJECT)  # type: ignore[attr-defined]
        if len(frame) >= expected or time.monotonic() > deadline:
            return frame
        time.sleep(0.5)


def test_phoenix_spans_measured_and_annotations_read_back(phoenix_url: str, tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from phoenix.client import Client

    with traced(OTLPSpanExporter(endpoint=f"{phoenix_url}/v1/traces")) as provider:
        run_agent(provider, "ok")
        run_agent(provider, "failed")
    client = Client(base_url=phoenix_url)
    # each agent run: the agent, the retrieval, two LLM calls and the tool
    frame = _spans_frame(client, 10)
    run = hallumeasure.measure(frame, out=tmp_path / "run")
    assert len(run.results) == 2
    samples = {s.id: s for s in run.samples}
    assert all(samples[r.sample_id].metadata["source_format"] == "openinference" for r in run.results)
    labels = {}
    for result in run.results:
        tool = next(p for p in samples[result.sample_id].passages if p.kind is SourceKind.TOOL_RESULT)
        labels[tool.failed] = result.verdicts[0].label.value if result.verdicts[0].label else None
    assert labels == {False: "supported", True: "absent"}

    logged = log_to_phoenix(run, phoenix_url)  # the claims too, as the command line sends them
    assert logged == 2 + sum(len(r.claims) for r in run.results)
    back = client.spans.get_span_annotations_dataframe(
        span_ids=[r.sample_id for r in run.results], project_identifier=PROJECT
    )
    # the run's judge (the default, offline) calls no model: Phoenix records the annotations as CODE
    assert is_keyless(run.judge or "") and set(back["annotator_kind"]) == {"CODE"}
    names = back["annotation_name"].tolist()
    assert names.count(RESPONSE_EVALUATION) == 2 and CLAIM_EVALUATION in names
    responses = back[back["annotation_name"] == RESPONSE_EVALUATION]
    assert sorted(responses["result.label"].tolist()) == ["grounded", "hallucinated"]
    claims = back[back["annotation_name"] == CLAIM_EVALUATION]
    assert "absent" in claims["result.label"].tolist()
    assert any("failed tool call" in (text or "") for text in claims["result.explanation"])
