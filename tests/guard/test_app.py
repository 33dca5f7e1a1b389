"""The guard over HTTP: the API, keys, limits, backpressure, streaming, metrics and logs."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from hallumeasure.core.labels import Label
from hallumeasure.core.types import Claim, ClaimVerdict, Sample
from hallumeasure.guard import Guard, GuardSettings
from hallumeasure.guard.app import create_app
from hallumeasure.judges.protocols import Judgement

CONTEXT = "The Kessler Public Library opens at 9 a.m. and closes at 9 p.m. on weekdays. It holds 120,000 books."
KEY = "test-key-" + "x" * 24
#: A stream's body: the source, then the response.
STREAM = f"{json.dumps({'context': CONTEXT})}\n{json.dumps({'text': 'It holds 120,000 books.'})}\n".encode()


@pytest.fixture(scope="module")
def guard() -> Guard:
    return Guard()


@pytest.fixture
def client(guard: Guard) -> TestClient:
    with TestClient(create_app(GuardSettings(), guard=guard)) as c:
        yield c


def test_check_returns_claims_decision_latency_and_an_id(client: TestClient) -> None:
    r = client.post("/v1/check", json={"response": "The library holds 300,000 books.", "context": CONTEXT})
    assert r.status_code == 200
    body = r.json()
    assert body["decision"] == "flag"
    # one changed number scores under the offline judge's calibrated flag_at_least: hallucinated, not decided
    assert body["hallucinated"] is True and body["decided"] is False
    assert body["claims"][0]["label"] == "contradicted"
    assert len(body["request_id"]) == 32
    assert body["latency_ms"]["total"] >= body["latency_ms"]["judge"]


def test_health_ready_and_metrics(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json()["ready"] is True
    client.post("/v1/check", json={"response": "It holds 120,000 books.", "context": CONTEXT})
    text = client.get("/metrics").text
    assert 'hallumeasure_guard_decisions_total{decision="pass"} 1.0' in text
    assert 'hallumeasure_guard_stage_seconds_count{stage="judge"}' in text
    assert 'hallumeasure_guard_requests_total{endpoint="/v1/check",status="200"}' in text


def test_ready_only_once_the_judge_is_built() -> None:
    app = create_app(GuardSettings())
    with TestClient(app) as c:  # the lifespan builds the judge before serving
        assert c.get("/readyz").status_code == 200


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        ({"response": "x"}, "exactly one of"),
        ({"context": CONTEXT}, "response"),
        ({"response": "x", "context": CONTEXT, "extra": 1}, "'extra' is an unknown field"),
        ({"messages": [{"role": "user", "content": "Hi?"}]}, "no assistant answer"),
        ({"messages": [{"role": "robot", "content": "Hi"}]}, "role"),
        ({"response": "x", "context": CONTEXT, "policy": {"threshold": 2}}, "threshold"),
    ],
)
def test_bad_requests_get_422_with_a_clear_message(client: TestClient, payload: dict[str, Any], needle: str) -> None:
    r = client.post("/v1/check", json=payload)
    assert r.status_code == 422
    assert needle in json.dumps(r.json())


def test_check_takes_messages_read_as_check_reads_them(client: TestClient) -> None:
    messages = [
        {"role": "system", "content": "Answer from the context only."},
        {"role": "user", "content": f"Context: {CONTEXT}\n\nQuestion: How many books does the library hold?"},
        {"role": "assistant", "content": "The library holds 300,000 books."},
    ]
    r = client.post("/v1/check", json={"messages": messages})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["response"] == "The library holds 300,000 books."
    assert body["claims"][0]["label"] == "contradicted" and body["decision"] == "flag"
    assert body["claims"][0]["evidence"][0]["source_kind"] == "user_context"
    # a response given beside the messages is the one checked
    r = client.post("/v1/check", json={"messages": messages, "response": "It holds 120,000 books."})
    assert r.status_code == 200 and r.json()["claims"][0]["label"] == "supported"


def test_malformed_json_gets_422(client: TestClient) -> None:
    r = client.post("/v1/check", content=b'{"response": "x", ', headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert "json" in r.text.lower()


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_a_body_declared_as_another_type_gets_415_naming_the_one_read(client: TestClient, content_type: str) -> None:
    body = json.dumps({"response": "It holds 120,000 books.", "context": CONTEXT}).encode()
    r = client.post("/v1/check", content=body, headers={"content-type": content_type})
    assert r.status_code == 415 and r.headers["content-type"] == "application/json"
    assert "application/json" in r.json()["detail"]
    r = client.post("/v1/check/stream", content=STREAM, headers={"content-type": content_type})
    assert r.status_code == 415 and "application/x-ndjson" in r.json()["detail"]


@pytest.mark.parametrize("content_type", [None, "application/json; charset=utf-8", "Application/JSON"])
def test_a_check_is_read_as_json_when_declared_so_or_not_declared(client: TestClient, content_type: str | None) -> None:
    body = json.dumps({"response": "It holds 120,000 books.", "context": CONTEXT}).encode()
    headers = {"content-type": content_type} if content_type else {}
    assert client.post("/v1/check", content=body, headers=headers).status_code == 200


@pytest.mark.parametrize("content_type", [None, "application/x-ndjson", "application/json", "application/jsonl"])
def test_a_stream_is_read_as_ndjson_when_declared_so_or_not_declared(
    client: TestClient, content_type: str | None
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    r = client.post("/v1/check/stream", content=STREAM, headers=headers)
    assert r.status_code == 200 and _events(r.text)[-1][0] == "done"


def test_keys_are_required_when_configured(guard: Guard) -> None:
    settings = GuardSettings(api_keys=(SecretStr(KEY),))
    with TestClient(create_app(settings, guard=guard)) as c:
        payload = {"response": "It holds 120,000 books.", "context": CONTEXT}
        assert c.post("/v1/check", json=payload).status_code == 401
        assert c.post("/v1/check", json=payload, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.post("/v1/check", json=payload, headers={"Authorization": KEY}).status_code == 401  # no scheme
        assert c.post("/v1/check", json=payload, headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
        assert c.get("/healthz").status_code == 200  # probes need no key
        assert KEY not in c.get("/metrics").text


def test_oversize_requests_get_413(guard: Guard) -> None:
    with TestClient(create_app(GuardSettings(max_request_bytes=2_000), guard=guard)) as c:
        big = {"response": "x" * 3_000, "context": CONTEXT}
        assert c.post("/v1/check", json=big).status_code == 413

        def chunks():  # no content-length: the limit holds while reading
            yield b'{"response": "'
            for _ in range(10):
                yield b"y" * 500
            yield b'", "context": "c"}'

        r = c.post("/v1/check", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413


def test_a_response_over_max_response_chars_gets_413_in_a_check_and_a_stream() -> None:
    from hallumeasure.guard.settings import WorkLimitError

    settings = GuardSettings(max_response_chars=1_000, judge_workers=0)
    # one long "sentence" with no full stop: under max_sentences, so only the character limit stops it
    long = "the library holds many books " * 40
    guard = Guard(settings)
    with TestClient(create_app(settings, guard=guard)) as c:
        r = c.post("/v1/check", json={"response": long, "context": CONTEXT})
        assert r.status_code == 413
        assert r.json()["detail"] == (
            "response characters: 1,160, over the limit of 1,000; the deployment raises it with the "
            "'max_response_chars' setting (serve --max-response-chars)"
        )
        # a stream is stopped as its text grows past the limit (here before its first sentence ends)
        pieces = [json.dumps({"text": long[i : i + 100]}) for i in range(0, len(long), 100)]
        r = c.post("/v1/check/stream", content="\n".join([json.dumps({"context": CONTEXT}), *pieces]).encode())
        assert r.status_code == 413 and "response characters: 1,100" in r.json()["detail"]
        assert c.post("/v1/check", json={"response": long[:900], "context": CONTEXT}).status_code == 200
    with pytest.raises(WorkLimitError, match="max_response_chars"):
        guard.check(long, context=CONTEXT)


class SlowJudge:
    """A real judge implementation that takes its time (a stand-in for a slow model)."""

    name = "slow"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def settings(self) -> dict[str, Any]:
        return {}

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        await asyncio.sleep(self.seconds)
        return Judgement(verdicts=[ClaimVerdict(claim_id=c.id, judge=self.name, label=Label.SUPPORTED) for c in claims])


def _slow_guard(seconds: float) -> Guard:
    guard = Guard()
    guard.judge = SlowJudge(seconds)
    return guard


def test_a_full_queue_answers_429_with_retry_after_and_the_rest_succeed() -> None:
    settings = GuardSettings(max_concurrency=2, max_queue=2)
    app = create_app(settings, guard=_slow_guard(0.3))

    async def burst() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://guard") as c:
            payload = {"response": "It holds 120,000 books.", "context": CONTEXT}
            return await asyncio.gather(*[c.post("/v1/check", json=payload) for _ in range(8)])

    responses = asyncio.run(burst())
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] * 4 + [429] * 4
    assert all(r.headers["retry-after"] == "1" for r in responses if r.status_code == 429)


def test_a_check_past_its_deadline_gets_504() -> None:
    with TestClient(create_app(GuardSettings(timeout_s=0.05), guard=_slow_guard(1.0))) as c:
        r = c.post("/v1/check", json={"response": "It holds 120,000 books.", "context": CONTEXT})
        assert r.status_code == 504
        assert "within 0.05 s" in r.json()["detail"]


def test_logs_carry_no_request_text(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    secret_text = "Zanzibar-unique-phrase holds 120,000 books."
    with caplog.at_level(logging.DEBUG, logger="hallumeasure.guard"):
        client.post("/v1/check", json={"response": secret_text, "context": CONTEXT + " Zanzibar-unique-phrase."})
    assert any("request" in r.getMessage() for r in caplog.records)
    assert not any("Zanzibar" in r.getMessage() for r in caplog.records)


def test_hostile_text_never_reaches_metric_labels(client: TestClient) -> None:
    hostile = '"}\nfake_metric{a="1"} 1\n<script>'
    client.post("/v1/check", json={"response": hostile, "context": CONTEXT})
    client.post("/v1/" + quote(hostile, safe=""), json={})
    text = client.get("/metrics").text
    assert "fake_metric" not in text and "<script>" not in text
    assert 'endpoint="other"' in text


def _events(body: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_the_stream_reports_each_sentence_then_the_whole(client: TestClient) -> None:
    pieces = ["The library opens at 9", " a.m. on weekdays. It holds 30", "0,000 books. It closes at 9 p.m."]
    lines = [json.dumps({"context": CONTEXT})] + [json.dumps({"text": p}) for p in pieces]
    r = client.post("/v1/check/stream", content="\n".join(lines).encode())
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = _events(r.text)
    names = [name for name, _ in events]
    assert names == ["sentence", "sentence", "sentence", "done"]
    sentences = [data for name, data in events if name == "sentence"]
    assert [s["unsupported"] for s in sentences] == [0, 1, 0]
    assert "300,000" in sentences[1]["text"]
    assert sentences[1]["claims"][0]["label"] == "contradicted"
    done = events[-1][1]
    assert done["decision"] == "flag" and done["n_unsupported"] == 1
    # spans point into the whole response, in the sentence events and the final answer alike
    whole = "".join(pieces)
    (span,) = sentences[1]["unsupported_spans"]
    assert whole[span["start"] : span["end"]] == span["text"] and "300,000" in span["text"]
    assert [s["unsupported_spans"] for s in (sentences[0], sentences[2])] == [[], []]
    assert done["unsupported_spans"] == [span]


def test_the_stream_needs_the_source_first(client: TestClient) -> None:
    r = client.post("/v1/check/stream", content=b'{"text": "hello"}\n')
    assert r.status_code == 422


@pytest.mark.parametrize("response", ["\u200b\u200b", "\u200b \u2060\ufeff\n\u200d\u200e", "\u00ad\u180e"])
def test_a_response_that_shows_nothing_makes_no_claim_at_every_door(
    client: TestClient, guard: Guard, response: str
) -> None:
    """Zero-width and format characters only (what a model may emit around nothing): no claim to check,
    in process and over HTTP alike; a stream of them is refused like a stream of no text."""
    import hallumeasure

    assert hallumeasure.check(response, context=CONTEXT).claims == []
    assert guard.check(response, context=CONTEXT).claims == []
    r = client.post("/v1/check", json={"response": response, "context": CONTEXT})
    assert r.status_code == 200 and r.json()["claims"] == [] and r.json()["n_claims"] == 0
    lines = [json.dumps({"context": CONTEXT}), json.dumps({"text": response})]
    r = client.post("/v1/check/stream", content="\n".join(lines).encode())
    assert r.status_code == 422 and "no response text" in r.json()["detail"]


def test_a_claim_around_invisible_characters_is_still_checked(client: TestClient) -> None:
    response = "\u200bThe library holds 300,000 books. \u200b\u200d"
    r = client.post("/v1/check", json={"response": response, "context": CONTEXT})
    assert r.status_code == 200
    assert [c["label"] for c in r.json()["claims"]] == ["contradicted"]
