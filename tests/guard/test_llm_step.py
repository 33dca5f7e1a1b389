"""The guard's LLM step against the local Anthropic simulator: an explainer that withdraws or confirms a
flag, and the deadline that holds when the LLM is slow, failing or hung (fail-open and fail-closed)."""

from __future__ import annotations

import time

import pytest

from hallumeasure.core.labels import Label, Subtype
from hallumeasure.guard import Decision, Guard, GuardSettings
from hallumeasure.guard.settings import FailMode
from hallumeasure.testing import AnthropicServer, Fault, FaultPlan, default_answer
from hallumeasure.testing.calls import Answer, Call

CONTEXT = "The Kessler Public Library opens at 9 a.m. and closes at 9 p.m. on weekdays. It holds 120,000 books."
WRONG = "The library holds 300,000 books."
KEY = "sk-test-" + "g" * 30


def explainer(category: str):
    def answer(call: Call) -> Answer:
        if call.tool is not None and call.tool["name"] == "record_explanation":
            tool_input = {"reason": "The counts differ.", "category": category}
            return Answer(tool_name="record_explanation", tool_input=tool_input, stop_reason="tool_use")
        return default_answer(call)

    return answer


@pytest.fixture
def llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _guard(srv: AnthropicServer, monkeypatch: pytest.MonkeyPatch, **settings) -> Guard:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
    return Guard(GuardSettings(explainer="anthropic:claude-test", **settings))


def test_the_explainer_confirms_a_flag_with_its_category(llm_env, monkeypatch) -> None:
    with AnthropicServer(answer=explainer("number")) as srv:
        result = _guard(srv, monkeypatch).check(WRONG, context=CONTEXT)
        asked = [c for c in srv.calls if c.tool and c.tool["name"] == "record_explanation"]
    assert result.explained and result.fallback is None
    assert result.decision is Decision.FLAG
    assert result.claims[0].subtype is Subtype.NUMBER and result.claims[0].label_reason == "The counts differ."
    assert len(asked) == 1  # only the flagged claim goes to the LLM


def test_no_problem_found_withdraws_the_flag(llm_env, monkeypatch) -> None:
    with AnthropicServer(answer=explainer("no_problem_found")) as srv:
        result = _guard(srv, monkeypatch).check(WRONG, context=CONTEXT)
    assert result.explained
    assert result.claims[0].label is Label.SUPPORTED
    assert result.decision is Decision.PASS


def test_a_faithful_response_never_calls_the_llm(llm_env, monkeypatch) -> None:
    with AnthropicServer(answer=explainer("number")) as srv:
        result = _guard(srv, monkeypatch).check("The library holds 120,000 books.", context=CONTEXT)
        assert not srv.calls
    assert result.decision is Decision.PASS and not result.explained


@pytest.mark.parametrize(
    ("server", "why"),
    [
        ({"latency": 1.5}, "within 0.4 s"),  # slow
        ({"faults": FaultPlan.random(1.0, [Fault.SERVER_ERROR], seed=1)}, ""),  # failing (retried until the deadline)
        ({"faults": FaultPlan.random(1.0, [Fault.READ_TIMEOUT], seed=1, hang=30)}, "within 0.4 s"),  # hung
    ],
)
@pytest.mark.parametrize("mode", [FailMode.OPEN, FailMode.CLOSED])
def test_the_deadline_holds_and_the_fail_mode_decides(llm_env, monkeypatch, server, why, mode) -> None:
    with AnthropicServer(answer=explainer("number"), **server) as srv:
        guard = _guard(srv, monkeypatch, llm_deadline_s=0.4, on_llm_failure=mode)
        started = time.perf_counter()
        result = guard.check(WRONG, context=CONTEXT)
        elapsed = time.perf_counter() - started
    assert result.fallback is not None and why in result.fallback
    assert not result.explained
    assert result.claims[0].label is Label.CONTRADICTED  # the fast verdict stands
    assert result.decision is (Decision.FLAG if mode is FailMode.OPEN else Decision.BLOCK)
    assert elapsed < 0.4 + 0.5  # the deadline, plus the fast path and slack for a loaded machine
