"""One judging path: the same response gets the same claims, verdicts, evidence and rates from every door.

The doors: ``measure`` (a stored run), ``check``, ``Guard().check`` in process, the server's ``/v1/check``
(judged in a worker process), the server's stream (its ``done`` event), ``monitor`` (the guard's traffic log
judged again); a conversation with tool results through check, measure, the guard and ``/v1/check``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from local_servers import free_port, wait_ready

import hallumeasure as h
from hallumeasure.api.check import Result, result_of
from hallumeasure.core.types import Passage, Sample
from hallumeasure.guard import Guard, GuardSettings
from hallumeasure.guard.app import create_app
from hallumeasure.guard.core import CheckRequest
from hallumeasure.guard.monitor import monitor_traffic
from hallumeasure.pipeline.measurement import Measurement, measure_settings
from hallumeasure.pipeline.run import run_sync
from hallumeasure.runs.messages import read_conversation
from hallumeasure.runs.store import RunStore

EIFFEL = [
    {"id": "1", "text": "The Eiffel Tower was completed in 1889 in Paris."},
    {"id": "2", "text": "It is 330 metres tall."},
]
LONG_SOURCE = " ".join(
    f"The depot on Quay {i} stores {i * 37} crates of tea and opened in {1900 + i}." for i in range(1, 120)
)

#: (name, source given as context or passages, response): judged through every door.
CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "plain context",
        {"context": "The Zephyr bridge is 2.4 km long. It opened in 2003 and carries four lanes."},
        "The Zephyr bridge is 2.4 km long. It opened in 2007. It carries four lanes.",
    ),
    (
        "passages with citation markers",
        {"passages": EIFFEL},
        "The Eiffel Tower was completed in 1889 [1]. It is 330 metres tall [2]. It was built in 1925 [1].",
    ),
    (
        "a long source",
        {"context": LONG_SOURCE},
        "The depot on Quay 7 stores 259 crates of tea. The depot on Quay 9 opened in 1950.",
    ),
    ("no checkable claim", {"context": "The museum opens at 9 am."}, "Thanks for asking!"),
    (
        "not English",
        {"context": "Der Eiffelturm wurde 1889 in Paris fertiggestellt und ist 330 Meter hoch."},
        "Der Eiffelturm wurde 1925 fertiggestellt. Er ist 330 Meter hoch.",
    ),
]

MESSAGES = [
    {"role": "system", "content": "Answer from the tool results only."},
    {"role": "user", "content": "How many seats does the Arlo stadium have, and is ticket INC-2291 open?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "venue", "arguments": '{"name": "Arlo"}'}},
            {"id": "c2", "type": "function", "function": {"name": "ticket", "arguments": '{"id": "INC-2291"}'}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "The Arlo stadium has 52,000 seats and opened in 1998."},
    {"role": "tool", "tool_call_id": "c2", "content": "Error: the ticket system timed out."},
    {"role": "assistant", "content": "The Arlo stadium has 81,000 seats. It opened in 1998."},
]


def _sample(name: str, source: dict[str, Any], response: str) -> Sample:
    passages = tuple(Passage(id=p["id"], text=p["text"]) for p in source.get("passages", ()))
    return Sample(id=name.replace(" ", "-"), context=source.get("context", ""), passages=passages, response=response)


def _comparable(result: Result) -> dict[str, Any]:
    """What every door must agree on: claims, labels, reasons, evidence, spans and the response's numbers."""
    data = json.loads(Result.model_validate(dict(result)).model_dump_json(exclude={"usage"}))
    return data  # type: ignore[no-any-return]


@contextmanager
def _served(settings: GuardSettings) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    wait_ready(base, seconds=120)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _streamed(base: str, source: dict[str, Any], response: str) -> dict[str, Any]:
    words = response.split(" ")
    pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
    body = "\n".join(json.dumps(line) for line in [source, *({"text": p} for p in pieces)]) + "\n"
    r = httpx.post(f"{base}/v1/check/stream", content=body, timeout=60)
    assert r.status_code == 200, r.text
    events = [block for block in r.text.split("\n\n") if block.strip()]
    done = [e for e in events if e.startswith("event: done")]
    assert len(done) == 1, r.text
    return json.loads(done[0].split("data: ", 1)[1])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def doors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    """Each case's comparable result from each door."""
    tmp = tmp_path_factory.mktemp("doors")
    samples = [_sample(*case) for case in CASES]
    found: dict[str, dict[str, dict[str, Any]]] = {name: {} for name, _, _ in CASES}
    measured = Measurement(measure_settings({"judge": ["offline"]}))
    policy, stages = measured.policy, measured.stages()
    h.measure(samples, out=tmp / "run")
    with RunStore(tmp / "run") as store:
        by_id = {r.sample_id: r for r in store.results()}
    guard = Guard()
    log_dir = tmp / "traffic"
    with _served(GuardSettings(judge_workers=1, log_dir=log_dir, log_sample=1.0)) as base:
        for (name, source, response), sample in zip(CASES, samples, strict=True):
            stored = by_id[sample.id]
            found[name]["measure"] = _comparable(
                result_of(response, stored, policy, judge=stages.judge.name, extractor=stages.extractor.name)
            )
            found[name]["check"] = _comparable(h.check(response, **source))
            found[name]["Guard().check"] = _comparable(guard.check(response, **source))
            served = httpx.post(f"{base}/v1/check", json={"response": response, **source}, timeout=60)
            assert served.status_code == 200, served.text
            found[name]["/v1/check (worker)"] = _comparable(Result.model_validate(served.json()))
            found[name]["stream"] = _comparable(Result.model_validate(_streamed(base, source, response)))
    report = monitor_traffic(log_dir, stages.extractor, stages.judge, out=tmp / "monitor")
    assert report is not None
    with RunStore(tmp / "monitor") as store:
        watched = {s.response: r for s, r in zip(store.samples(), _in_order(store), strict=True)}
    for name, _, response in CASES:
        found[name]["monitor"] = _comparable(
            result_of(response, watched[response], policy, judge=stages.judge.name, extractor=stages.extractor.name)
        )
    return found


def _in_order(store: RunStore) -> list[Any]:
    results = {r.sample_id: r for r in store.results()}
    return [results[s.id] for s in store.samples()]


@pytest.mark.parametrize("case", [name for name, _, _ in CASES])
def test_every_door_gives_the_same_claims_verdicts_and_rates(
    doors: dict[str, dict[str, dict[str, Any]]], case: str
) -> None:
    by_door = doors[case]
    reference = by_door["check"]
    assert set(by_door) == {"measure", "check", "Guard().check", "/v1/check (worker)", "stream", "monitor"}
    for door, found in by_door.items():
        assert found == reference, f"{case}: {door} differs from check"


def test_the_eiffel_example_gets_a_third_unsupported_from_every_door(
    doors: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """The citation markers are taken out of the claims by every door: only the 1925 claim is unsupported."""
    rates = {door: found["unsupported_rate"] for door, found in doors["passages with citation markers"].items()}
    assert rates == {door: pytest.approx(1 / 3) for door in rates}
    claims = doors["passages with citation markers"]["Guard().check"]["claims"]
    assert all("[" not in c["text"] for c in claims)


def test_a_conversation_with_tool_results_is_judged_alike_by_check_measure_and_the_guard(tmp_path: Path) -> None:
    conversation = read_conversation(MESSAGES)
    sample = Sample(
        id="arlo", response=conversation.response, passages=conversation.sources, question=conversation.question
    )
    checked = h.check(messages=MESSAGES)
    h.measure([sample], out=tmp_path / "run")
    with RunStore(tmp_path / "run") as store:
        stored = store.results()[0]
    guard = Guard()
    name, extractor = guard.judge.name, guard.extractor.name
    from_measure = result_of(sample.response, stored, guard.policy, judge=name, extractor=extractor)
    from_guard = run_sync(guard.run(CheckRequest.model_validate({"messages": MESSAGES})))
    from_guard_check = guard.check(messages=MESSAGES)  # Guard.check takes the conversation as check() does
    with _served(GuardSettings(judge_workers=1)) as base:
        served = httpx.post(f"{base}/v1/check", json={"messages": MESSAGES}, timeout=60)
    assert served.status_code == 200, served.text
    assert _comparable(checked) == _comparable(from_measure) == _comparable(from_guard)
    assert _comparable(from_guard_check) == _comparable(checked)
    assert _comparable(Result.model_validate(served.json())) == _comparable(checked)
    assert checked.n_unsupported >= 1  # 81,000 against the tool's 52,000
