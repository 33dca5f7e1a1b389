"""The fault-injection plan: what each fault looks like through the real SDKs, and how faults are chosen."""

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from testdata import aws_session

from hallumeasure.core.errors import ProviderError
from hallumeasure.judges.llm.outputs import CotVerdicts, tool_schema
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import GenerateRequest, Message, TextBlock, ToolSpec
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.testing import AnthropicServer, BedrockServer
from hallumeasure.testing.faults import BAD_ANSWERS, TRANSIENT, Burst, Fault, FaultPlan, cut_short

TOOL = ToolSpec(
    name="record_verdicts", description="Record one verdict per claim id.", input_schema=tool_schema(CotVerdicts)
)
REQUEST = GenerateRequest(
    system="You judge claims.",
    messages=(
        Message.user(
            TextBlock(text="<context>\nThe sky is blue. It rained on Monday.\n</context>", cache_after=True),
            '<claims>\n<claim id="c0">\nThe sky is blue.\n</claim>\n<claim id="c1">\nIt rained on Monday.\n</claim>\n'
            '<claim id="c2">\nIt rained on Tuesday.\n</claim>\n<claim id="c3">\nThe sky is green.\n</claim>\n</claims>',
        ),
    ),
    tool=TOOL,
)


def _api(provider, srv):
    if provider == "anthropic":
        return AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url, timeout=0.5)
    return BedrockAPI(
        "anthropic.claude-x", region_name="us-east-1", endpoint_url=srv.url, read_timeout=0.5, session=aws_session()
    )


def _outcome(api):
    async def go():
        try:
            return await api.generate(REQUEST)
        except ProviderError as exc:
            return exc
        finally:
            await api.aclose()

    return asyncio.run(go())


SERVERS = {"anthropic": AnthropicServer, "bedrock": BedrockServer}
ERRORS = {
    # fault: (anthropic status, anthropic cause, bedrock status, bedrock cause, retry-after sent)
    Fault.RATE_LIMIT: (429, "rate_limit_error", 429, "ThrottlingException", True),
    Fault.RATE_LIMIT_NO_RETRY_AFTER: (429, "rate_limit_error", 429, "ThrottlingException", False),
    Fault.OVERLOADED: (529, "overloaded_error", 503, "ServiceUnavailableException", False),
    Fault.SERVER_ERROR: (500, "api_error", 500, "InternalServerException", False),
    Fault.UNAVAILABLE: (503, "api_error", 503, "ServiceUnavailableException", False),
}


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
@pytest.mark.parametrize("fault", list(ERRORS))
def test_error_faults_are_the_providers_own_errors(provider, fault, aws):
    with SERVERS[provider](faults=FaultPlan.at({0: fault}, retry_after=0.25)) as srv:
        exc = _outcome(_api(provider, srv))
        assert srv.injected == [(0, fault)]
    a_status, a_cause, b_status, b_cause, retry_after = ERRORS[fault]
    assert isinstance(exc, ProviderError) and exc.retryable
    assert (exc.status, exc.cause) == ((a_status, a_cause) if provider == "anthropic" else (b_status, b_cause))
    assert exc.retry_after == (0.25 if retry_after else None)


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
@pytest.mark.parametrize("fault", [Fault.READ_TIMEOUT, Fault.CONNECTION_RESET])
def test_transport_faults_are_retryable_provider_errors(provider, fault, aws):
    with SERVERS[provider](faults=FaultPlan.at({0: fault}, hang=5.0)) as srv:
        exc = _outcome(_api(provider, srv))
    assert isinstance(exc, ProviderError) and exc.retryable
    assert exc.cause == ("timeout" if fault is Fault.READ_TIMEOUT else "connection")


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_bad_answers_arrive_as_answers(provider, aws):
    faults = [Fault.SCHEMA_VIOLATION, Fault.REFUSAL, Fault.MAX_TOKENS, Fault.EMPTY]
    with SERVERS[provider](faults=FaultPlan.at(faults)) as srv:
        broken, refusal, cut, empty = (_outcome(_api(provider, srv)) for _ in faults)
    assert broken.stop_reason == "tool_use" and "verdicts" not in broken.tool_input
    assert refusal.stop_reason == "refusal" and refusal.tool_input is None
    assert cut.stop_reason == "max_tokens" and 0 < len(cut.tool_input["verdicts"]) < 4
    assert empty.stop_reason == "end_turn" and empty.tool_input is None and empty.text == ""


def test_refusal_is_content_filtered_on_the_bedrock_wire(aws):
    with BedrockServer(faults=FaultPlan.at([Fault.REFUSAL])) as srv:
        _outcome(_api("bedrock", srv))
        reply_body = srv.log[0]
    assert reply_body.fault is Fault.REFUSAL
    # botocore maps nothing: the wire says content_filtered and the provider maps it to refusal.
    from hallumeasure.testing.bedrock_server import PROTOCOL
    from hallumeasure.testing.calls import Answer

    assert PROTOCOL.render(Answer(stop_reason="refusal"))["stopReason"] == "content_filtered"


def test_a_truncated_body_is_cut_json_on_the_wire():
    with AnthropicServer(faults=FaultPlan.at([Fault.TRUNCATED_BODY])) as srv:
        reply = httpx.post(
            f"{srv.url}/v1/messages",
            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        )
    assert reply.status_code == 200 and int(reply.headers["content-length"]) == len(reply.content)
    with pytest.raises(json.JSONDecodeError):
        reply.json()


def test_a_plan_by_content_does_not_depend_on_arrival_order():
    requests = [
        {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"question {i}"}]} for i in range(40)
    ]

    def run(order):
        plan = FaultPlan.random(0.3, [Fault.SERVER_ERROR, Fault.RATE_LIMIT], seed=7)
        with AnthropicServer(faults=plan) as srv, httpx.Client() as client, ThreadPoolExecutor(4) as pool:
            statuses = dict(
                zip(
                    order,
                    pool.map(lambda i: client.post(f"{srv.url}/v1/messages", json=requests[i]).status_code, order),
                    strict=True,
                )
            )
        return statuses

    forward = run(list(range(40)))
    backward = run(list(reversed(range(40))))
    assert forward == backward
    assert 4 <= sum(s != 200 for s in forward.values()) <= 20


def test_a_retry_of_the_same_body_draws_again():
    plan = FaultPlan.random(0.5, [Fault.SERVER_ERROR], seed=3)
    draws = [plan.choose(i, None, "same-body") for i in range(200)]
    assert 60 < sum(d is not None for d in draws) < 140  # not all equal: each occurrence draws anew


def test_schedule_then_bursts_then_rate_and_match():
    plan = FaultPlan(schedule={1: Fault.REFUSAL, 2: None}, bursts=[Burst(start=2, length=2, every=10)], rate=0.0)
    chosen = [plan.choose(i, None, str(i)) for i in range(14)]
    assert chosen[:4] == [None, Fault.REFUSAL, None, Fault.OVERLOADED]
    assert chosen[12:14] == [Fault.OVERLOADED, Fault.OVERLOADED] and chosen[11] is None
    only_verdicts = FaultPlan(rate=1.0, faults=[Fault.EMPTY], match=lambda call: call == "verdicts")
    assert only_verdicts.choose(0, "claims", "a") is None and only_verdicts.choose(1, "verdicts", "b") is Fault.EMPTY


def test_the_fault_lists_cover_every_fault():
    assert set(TRANSIENT) | set(BAD_ANSWERS) == set(Fault)


def test_cut_short_drops_items_and_cuts_the_last_text():
    cut = cut_short(
        {
            "verdicts": [
                {"claim_id": f"c{i}", "label_reason": "because of this", "label": "supported"} for i in range(4)
            ],
            "later": 1,
        }
    )
    assert list(cut) == ["verdicts"] and len(cut["verdicts"]) == 2 and cut["verdicts"][1]["label"] == "supp"
