"""The guard under hostile and unlucky traffic (issue #33), always through a real socket: a uvicorn server
on 127.0.0.1 started by the test, spoken to with raw HTTP/1.1 where the body must really stream."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn
from local_servers import free_port, wait_ready

from hallumeasure.core.labels import Label
from hallumeasure.core.types import Claim, ClaimVerdict, Sample
from hallumeasure.guard import Guard, GuardSettings
from hallumeasure.guard.app import create_app
from hallumeasure.guard.stream import SentenceStream
from hallumeasure.judges.protocols import Judgement
from hallumeasure.models.model import ProviderUnreachableError

CONTEXT = "The Kessler Public Library opens at 9 a.m. and closes at 9 p.m. on weekdays. It holds 120,000 books."


@contextmanager
def served(settings: GuardSettings, guard: Guard | None = None) -> Iterator[str]:
    """The app on a real socket, in a thread of this process; yields its base URL."""
    with running(settings, guard) as (base, _):
        yield base


@contextmanager
def running(
    settings: GuardSettings, guard: Guard | None = None, **options: Any
) -> Iterator[tuple[str, uvicorn.Server]]:
    """``served``, with uvicorn's ``options`` and its server (a test may stop it: ``server.should_exit``)."""
    port = free_port()
    app = create_app(settings, guard=guard)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, seconds=90)
    try:
        yield base, server
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _gauge(base: str, name: str) -> float:
    text = httpx.get(f"{base}/metrics", timeout=5).text
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    assert found, name
    return float(found.group(1))


async def _raw(port: int, head: bytes, chunks: Sequence[bytes], *, delay: float = 0.0, finish: bool = True) -> bytes:
    """A chunked POST to /v1/check/stream written by hand: ``chunks`` sent ``delay`` apart; without
    ``finish`` the client leaves before the body ends. What the server answered (b"" if nothing)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /v1/check/stream HTTP/1.1\r\nhost: guard\r\nconnection: close\r\ntransfer-encoding: chunked\r\n"
        b"content-type: application/x-ndjson\r\n\r\n"
    )
    got: list[bytes] = []

    async def collect() -> None:  # read from the start: an early answer (413) survives the reset that follows it
        try:
            while block := await reader.read(65536):
                got.append(block)
        except ConnectionError:
            pass

    collector = asyncio.create_task(collect())
    try:
        for chunk in [head, *chunks]:
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
            if delay:
                await asyncio.sleep(delay)
        if not finish:
            collector.cancel()
            return b""
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    except ConnectionError:  # the server answered early and closed
        pass
    try:
        await asyncio.wait_for(collector, 30)
    except TimeoutError:
        pass
    finally:
        writer.close()
    return b"".join(got)


def _sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The events of a chunked SSE answer (chunk framing removed)."""
    body = raw.split(b"\r\n\r\n", 1)[1]
    data, out = b"", []
    while body:
        size, _, rest = body.partition(b"\r\n")
        n = int(size, 16)
        if n == 0:
            break
        data, body = data + rest[:n], rest[n + 2 :]
    for block in data.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


# 1. Malformed and abandoned streams never keep a slot.


def test_a_thousand_malformed_and_abandoned_streams_leak_no_slot() -> None:
    settings = GuardSettings(max_concurrency=2, max_queue=0, max_streams=4, judge_workers=0)
    with served(settings, Guard()) as base:
        port = int(base.rsplit(":", 1)[1])
        head = (json.dumps({"context": CONTEXT}) + "\n").encode()
        kinds: list[tuple[bytes, list[bytes], bool]] = [
            (b"1\n", [], True),
            (b"[]\n", [], True),
            (b'"a string"\n', [], True),
            (b"[" * 50_000 + b"]" * 50_000 + b"\n", [], True),  # deep nesting
            (b"{not json\n", [], True),
            (b'{"context": "a', [], False),  # the client leaves in the middle of the first line
            (head, [b'{"text": "It holds 120,000 books. It'], False),  # ... or in the middle of the text
            (head, [b'{"text": 5}\n'], True),
        ]

        async def run_all() -> list[bytes]:
            limit = asyncio.Semaphore(16)

            async def one(i: int) -> bytes:
                first, rest, finish = kinds[i % len(kinds)]
                async with limit:
                    return await _raw(port, first, rest, finish=finish)

            return await asyncio.gather(*(one(i) for i in range(1000)))

        answers = asyncio.run(run_all())
        statuses = {a.split(b" ", 2)[1] for a in answers if a}
        assert b"500" not in statuses
        time.sleep(0.5)  # let the server notice the last departures
        ok = httpx.post(
            f"{base}/v1/check", json={"response": "It holds 120,000 books.", "context": CONTEXT}, timeout=10
        )
        assert ok.status_code == 200
        assert _gauge(base, "hallumeasure_guard_queue_depth") == 0
        assert _gauge(base, "hallumeasure_guard_open_streams") == 0
        metrics = httpx.get(f"{base}/metrics", timeout=5).text
        assert 'status="500"' not in metrics


# 2. Judging off the event loop, under a deadline that kills the work; limits besides bytes.


def _worst_case(sentences: int = 60, context_sentences: int = 2500) -> dict[str, Any]:
    words = "library museum river bridge council hall garden station tower market".split()
    para = " ".join(
        f"The {words[i % 10]} {words[(i * 7) % 10]} had {i} {words[(i * 3) % 10]}." for i in range(context_sentences)
    )
    response = " ".join(
        f"The {words[i % 10]} holds {i * 13} visitors each {words[(i * 3) % 10]}." for i in range(sentences)
    )
    return {"response": response, "context": para}


def _numbers(sentences: int, per_sentence: int) -> str:
    """``sentences`` sentences of ``per_sentence`` numbers each."""
    return " ".join(
        "The " + " and ".join(f"hall {i * 131 + j * 17} holds {j * 7 + 3}" for j in range(per_sentence // 2)) + "."
        for i in range(sentences)
    )


def test_worst_case_checks_get_504_while_probes_answer_at_once() -> None:
    settings = GuardSettings(
        max_concurrency=2,
        timeout_s=1.0,
        judge_workers=2,
        max_context_chars=1_000_000,
        max_sentences=1000,
        max_work_units=10**9,
    )
    with served(settings) as base:
        slow = _worst_case(sentences=200, context_sentences=8000)  # about 2 s of one core, in process
        results: list[httpx.Response] = []

        def call() -> None:
            results.append(httpx.post(f"{base}/v1/check", json=slow, timeout=60))

        callers = [threading.Thread(target=call) for _ in range(2)]
        for c in callers:
            c.start()
        time.sleep(0.3)
        for path in ("/healthz", "/readyz", "/metrics") * 3:
            started = time.perf_counter()
            status = httpx.get(f"{base}{path}", timeout=5).status_code
            # /readyz says 503 once the deadline has stopped both workers, until a replacement is ready
            assert status == 200 or (path == "/readyz" and status == 503)
            assert time.perf_counter() - started < 1.0  # the event loop is free while the slots are full
        for c in callers:
            c.join(timeout=30)
        assert [r.status_code for r in results] == [504, 504]
        assert "setting timeout_s" in results[0].json()["detail"]
        # The killed workers are replaced: an ordinary check goes through, and the slots are free again.
        deadline = time.monotonic() + 60
        while True:
            r = httpx.post(
                f"{base}/v1/check", json={"response": "It holds 120,000 books.", "context": CONTEXT}, timeout=10
            )
            if r.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert r.status_code == 200
        assert _gauge(base, "hallumeasure_guard_queue_depth") == 0


def test_a_reply_larger_than_the_pipe_buffer_comes_back_whole() -> None:
    # 150 claims against a long source, two at once: each worker's reply is about 120 kB, more than a pipe
    # holds. The server's loop (uvloop) left the pipe non-blocking, and reading such a reply stopped half way
    # with EAGAIN, answered as a dead worker (500).
    settings = GuardSettings(
        timeout_s=60, judge_workers=2, max_context_chars=1_000_000, max_sentences=1000, max_work_units=10**9
    )
    with served(settings) as base:
        statuses: list[int] = []

        def call(sentences: int) -> None:
            big = _worst_case(sentences=sentences)
            statuses.append(httpx.post(f"{base}/v1/check", json=big, timeout=90).status_code)

        for round_ in range(3):
            callers = [threading.Thread(target=call, args=(150 + 2 * round_ + i,)) for i in range(2)]
            for c in callers:
                c.start()
            for c in callers:
                c.join(timeout=90)
    assert statuses == [200] * 6


@pytest.mark.parametrize(
    ("payload", "setting"),
    [
        ({"response": "It holds 120,000 books.", "context": "x " * 6_000}, "max_context_chars"),
        ({"response": "It is open. " * 60, "context": CONTEXT}, "max_sentences"),
        # Under every other limit, yet minutes of CPU on main: claims full of numbers against one sentence of 500
        # numbers (any two of which a claim's number might be the sum or ratio of).
        ({"response": _numbers(10, 40), "context": _numbers(1, 500)}, "max_work_units"),
    ],
)
def test_work_limits_answer_413_naming_the_setting(payload: dict[str, Any], setting: str) -> None:
    settings = GuardSettings(max_context_chars=10_000, max_sentences=50, judge_workers=0)
    with served(settings, Guard(settings)) as base:
        r = httpx.post(f"{base}/v1/check", json=payload, timeout=10)
    assert r.status_code == 413
    assert setting in r.json()["detail"]


# 3. A body that really streams keeps every chunk; the byte limit holds for chunked streams.


def test_a_stream_sent_in_delayed_chunks_has_every_sentence_judged() -> None:
    pieces = [
        "The library opens at 9",
        " a.m. on weekdays. It holds 30",
        "0,000 books. It is large.",
        " It closes at 11 p.m.",
    ]
    with served(GuardSettings(judge_workers=0), Guard()) as base:
        port = int(base.rsplit(":", 1)[1])
        head = (json.dumps({"context": CONTEXT}) + "\n").encode()
        chunks = [(json.dumps({"text": p}) + "\n").encode() for p in pieces]
        events = _sse(asyncio.run(_raw(port, head, chunks, delay=0.15)))
    sentences = [d for name, d in events if name == "sentence"]
    assert [s["text"] for s in sentences] == [
        "The library opens at 9 a.m. on weekdays.",
        "It holds 300,000 books.",
        "It is large.",
        "It closes at 11 p.m.",
    ]
    assert sentences[3]["unsupported"] == 1  # the planted error was judged
    assert events[-1][0] == "done" and events[-1][1]["response"] == "".join(pieces)


def test_a_chunked_stream_over_the_byte_limit_gets_413() -> None:
    with served(GuardSettings(max_request_bytes=2_000, judge_workers=0), Guard()) as base:
        port = int(base.rsplit(":", 1)[1])
        head = (json.dumps({"context": CONTEXT}) + "\n").encode()
        chunks = [(json.dumps({"text": "word " * 100}) + "\n").encode() for _ in range(10)]
        raw = asyncio.run(_raw(port, head, chunks, delay=0.01))
    assert raw.startswith(b"HTTP/1.1 413")
    assert b"max_request_bytes" in raw


# 4. Idle streams hold no check slot, and end on their own.


def test_idle_streams_neither_starve_checks_nor_stay_forever() -> None:
    settings = GuardSettings(max_concurrency=1, max_queue=0, stream_idle_s=1.0, timeout_s=5, judge_workers=0)
    with served(settings, Guard()) as base:
        port = int(base.rsplit(":", 1)[1])
        head = (json.dumps({"context": CONTEXT}) + "\n").encode()

        async def scenario() -> tuple[list[bytes], int]:
            idle = [asyncio.create_task(_raw(port, head, [b'{"text": "It holds'], delay=3.0)) for _ in range(4)]
            await asyncio.sleep(0.3)
            async with httpx.AsyncClient() as c:
                r = await c.post(f"{base}/v1/check", json={"response": "It holds 120,000 books.", "context": CONTEXT})
            return await asyncio.gather(*idle), r.status_code

        idle_answers, status = asyncio.run(scenario())
    assert status == 200
    assert all(a.startswith(b"HTTP/1.1 408") and b"stream_idle_s" in a for a in idle_answers)


# 6. Nothing echoed; the LLM step's contract; every status counted.


def test_errors_name_the_field_never_the_input() -> None:
    hostile_name = "N" * 200_000
    with served(GuardSettings(judge_workers=0), Guard()) as base:
        r = httpx.post(
            f"{base}/v1/check", json={"response": "x", "context": CONTEXT, hostile_name: "SECRET-VALUE"}, timeout=10
        )
        s = httpx.post(
            f"{base}/v1/check/stream", content=json.dumps({"context": 12345678, "question": ["SECRET-VALUE"]}) + "\n"
        )
    assert r.status_code == 422 and "unknown field" in r.text
    assert "NNNN" not in r.text and "SECRET" not in r.text and len(r.text) < 500
    assert s.status_code == 422 and "12345678" not in s.text and "SECRET" not in s.text


class _FailingJudge:
    name = "failing"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def settings(self) -> dict[str, Any]:
        return {}

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        raise self.error


def test_a_500_is_counted_in_the_metrics() -> None:
    """A judge whose provider cannot be reached at all stops the check (as it stops a run): a 500, counted."""
    guard = Guard()
    guard.judge = _FailingJudge(ProviderUnreachableError("boom with request text: It holds 120,000 books."))  # type: ignore[assignment]
    with served(GuardSettings(judge_workers=0), guard) as base:
        r = httpx.post(f"{base}/v1/check", json={"response": "It holds 120,000 books.", "context": CONTEXT}, timeout=10)
        metrics = httpx.get(f"{base}/metrics", timeout=5).text
    assert r.status_code == 500 and "120,000" not in r.text
    assert 'hallumeasure_guard_requests_total{endpoint="/v1/check",status="500"} 1.0' in metrics


def test_a_judge_that_fails_on_one_response_is_an_error_row_flagged_as_check_gives_it() -> None:
    """The guard judges through the same path as ``check``: a judge failure is an error row, and the guard flags
    the response rather than pass it."""
    guard = Guard()
    guard.judge = _FailingJudge(RuntimeError("the judge broke"))  # type: ignore[assignment]
    with served(GuardSettings(judge_workers=0), guard) as base:
        r = httpx.post(f"{base}/v1/check", json={"response": "It holds 120,000 books.", "context": CONTEXT}, timeout=10)
    body = r.json()
    assert r.status_code == 200 and body["decision"] == "flag"
    assert body["hallucinated"] is None and body["error"] == "RuntimeError: the judge broke"
    assert body["error_kind"] == "unexpected"


def test_a_stream_judges_a_window_not_the_whole_text_again() -> None:
    """Each sentence is extracted in a window of a few sentences: a stream's work grows linearly."""
    stream = SentenceStream.open({"context": CONTEXT})
    seen = 0
    for i in range(200):
        for _, start, end in stream.feed(f"Sentence number {i} is here. "):
            sample, _ = stream.window(start, end)
            seen += len(sample.response)
    assert seen < 4 * len(stream.text)


class _UnsureJudge:
    """One claim unsupported, one supported but unsure: only the first may reach the LLM."""

    name = "unsure"

    def settings(self) -> dict[str, Any]:
        return {}

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        labels = [Label.CONTRADICTED, Label.SUPPORTED]
        return Judgement(
            verdicts=[
                ClaimVerdict(claim_id=c.id, judge=self.name, label=labels[i % 2], confident=i % 2 == 0)
                for i, c in enumerate(claims)
            ]
        )


def test_the_llm_step_sees_only_flagged_claims_and_never_adds_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    from hallumeasure.testing import AnthropicServer
    from tests.guard.test_llm_step import KEY, explainer

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with AnthropicServer(answer=explainer("no_problem_found")) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        guard = Guard(GuardSettings(explainer="anthropic:claude-test"))
        guard.judge = _UnsureJudge()  # type: ignore[assignment]
        result = guard.check("The library holds 300,000 books. It opens at 9 a.m.", context=CONTEXT)
        asked = [c for c in srv.calls if c.tool and c.tool["name"] == "record_explanation"]
    assert len(asked) == 1  # the unsure supported claim is not sent
    assert [c.label for c in result.claims] == [Label.SUPPORTED, Label.SUPPORTED]
    assert result.claims[1].confident is False  # untouched


def test_a_failing_provider_is_reported_as_failing_not_as_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    from hallumeasure.testing import AnthropicServer, Fault, FaultPlan
    from tests.guard.test_llm_step import KEY, WRONG, explainer

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with AnthropicServer(answer=explainer("number"), faults=FaultPlan.random(1.0, [Fault.SERVER_ERROR], seed=1)) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        result = Guard(GuardSettings(explainer="anthropic:claude-test", llm_deadline_s=0.5)).check(
            WRONG, context=CONTEXT
        )
    assert result.fallback is not None
    assert "failed" in result.fallback and "500" in result.fallback, result.fallback


def test_serve_documents_the_explainer_and_keeps_a_hash_in_a_key(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from hallumeasure.cli import app
    from hallumeasure.guard.settings import read_keys

    out = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    for option in ("--explainer", "--llm-deadline", "--on-llm-failure", "--drain-seconds", "--max-sentences"):
        assert option in out
    keys = tmp_path / "keys"
    keys.write_text("# comment\nabc#def" + "x" * 20 + "\n")
    assert [k.get_secret_value() for k in read_keys(keys)] == ["abc#def" + "x" * 20]
