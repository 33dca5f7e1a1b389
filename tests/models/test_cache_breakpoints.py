"""Cache breakpoints sit where the shared prefix ends, on both wires: after the system prompt (shared by
every request of a stage) and after the instructions + context (shared by the claims of a response);
the claim comes after the last breakpoint. Re-asks keep within the providers' limit of four."""

import asyncio
import collections

import pytest
from testdata import aws_session

from hallumeasure.core.types import Mode, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.fake import prompt_blocks
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.testing import Answer, AnthropicServer, BedrockServer, default_answer

SAMPLE = Sample(
    id="s1",
    context="The bridge is 24 km long. It opened in 2019.",
    response="The bridge is 42 km long. It opened in 2019.",
)


def _bad_first_verdict():
    seen = collections.Counter()

    def answer(call):
        if call.tool and call.tool["name"] == "record_verdict":
            key = prompt_blocks(call.to_request(), "claim")[0]
            seen[key] += 1
            if seen[key] == 1:  # one malformed answer per claim, so that every claim is re-asked once
                return Answer(tool_name="record_verdict", tool_input={"label": "certainly"}, stop_reason="tool_use")
        return default_answer(call)

    return answer


def _run(api, mode):
    model = Model(api, backoff_base=0.0)
    asyncio.run(measure_samples([SAMPLE], LLMExtractor(model), LLMJudge(model, mode)))


@pytest.mark.parametrize("mode", [Mode.COT_ONE, Mode.COT_ALL])
def test_anthropic_breakpoints(mode):
    with AnthropicServer(answer=_bad_first_verdict()) as srv:
        _run(AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url), mode)
        bodies = srv.bodies
    judge_bodies = [b for b in bodies if b["tools"][0]["name"] != "record_claims"]
    assert judge_bodies
    for body in judge_bodies:
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        first = body["messages"][0]["content"]
        assert len(first) == 2
        prefix, claim = first
        assert prefix["cache_control"] == {"type": "ephemeral"} and "<context>" in prefix["text"]
        assert "<claim" not in prefix["text"] and "cache_control" not in claim and "<claim" in claim["text"]
        assert "cache_control" not in body["tools"][0]  # the system breakpoint already covers the tools
        assert str(body).count("cache_control") <= 4
    if mode is Mode.COT_ONE:
        assert any(len(b["messages"]) == 3 for b in judge_bodies)  # re-asks were sent and checked too


@pytest.mark.parametrize("mode", [Mode.COT_ONE, Mode.NOCOT_ALL])
def test_bedrock_breakpoints(mode, aws):
    with BedrockServer(answer=_bad_first_verdict()) as srv:
        api = BedrockAPI("anthropic.claude-x", region_name="us-east-1", endpoint_url=srv.url, session=aws_session())
        _run(api, mode)
        bodies = srv.bodies
    judge_bodies = [b for b in bodies if b["toolConfig"]["tools"][0]["toolSpec"]["name"] != "record_claims"]
    assert judge_bodies
    for body in judge_bodies:
        assert body["system"][-1] == {"cachePoint": {"type": "default"}} and len(body["system"]) == 2
        prefix, point, claim = body["messages"][0]["content"]
        assert "<context>" in prefix["text"] and "<claim" not in prefix["text"]
        assert point == {"cachePoint": {"type": "default"}} and "<claim" in claim["text"]
        assert str(body).count("cachePoint") <= 4


def test_the_simulator_reads_the_breakpoints_as_sent():
    """The accounting sees exactly the two prefixes: system, and system + context."""
    with AnthropicServer() as srv:
        _run(AnthropicAPI("claude-x", api_key="k", base_url=srv.base_url), Mode.COT_ONE)
        calls = [c for c in srv.calls if c.tool["name"] == "record_verdict"]
    for call in calls:
        marks = [(s.role, s.cache_after) for s in call.segments]
        assert marks == [("system", True), ("user", True), ("user", False)]
