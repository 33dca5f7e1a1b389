"""Re-asks on every provider, at the wire level: a failed tool call is answered the way each provider
documents (Anthropic: the assistant's tool_use, then a user tool_result with is_error; Bedrock
Converse: toolUse, then toolResult with status error; OpenAI-compatible: the call, then a tool
message) and followed by the reason in plain text that chat templates keep; each re-ask differs from
the ask before it, re-asking stops when the model repeats an answer exactly, and a resumed run
replays every call from the cache. The re-asks and the cache keys are built in one place
(``parsing.reask``, ``cache.request_key``), so the three providers share the behaviour."""

import asyncio
from typing import Literal

import pytest
from provider_fixtures import judge_request
from pydantic import BaseModel
from testdata import aws_session

from hallumeasure.judges.llm.parsing import ask_structured
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.cache import RequestCache
from hallumeasure.models.langchain import LangChainAPI
from hallumeasure.models.model import Model
from hallumeasure.testing import AnthropicServer, BedrockServer, OpenAIServer

GOOD = {"label_reason": "The context says the sky is blue.", "label": "supported"}
BAD = {"label_reason": "The context says the sky is blue.", "label": "maybe"}


class Verdict(BaseModel):
    label_reason: str
    label: Literal["supported", "absent"]


class Anthropic:
    server = AnthropicServer

    @staticmethod
    def api(srv):
        return AnthropicAPI("claude-test", api_key="test-key", base_url=srv.base_url)

    @staticmethod
    def failed_call(messages):
        """(the call's input, its id, the tool result's id, is it an error, the result text)."""
        (use,) = [b for b in messages[-2]["content"] if b["type"] == "tool_use"]
        result, note = messages[-1]["content"]
        assert messages[-2]["role"] == "assistant" and messages[-1]["role"] == "user"
        assert result["type"] == "tool_result" and note["type"] == "text"
        return use["input"], use["id"], result["tool_use_id"], result["is_error"], result["content"], note["text"]


class Bedrock:
    server = BedrockServer

    @staticmethod
    def api(srv):
        return BedrockAPI(
            "anthropic.claude-3-haiku-20240307-v1:0", session=aws_session(), endpoint_url=srv.endpoint_url
        )

    @staticmethod
    def failed_call(messages):
        (use,) = [b["toolUse"] for b in messages[-2]["content"] if "toolUse" in b]
        block, note = messages[-1]["content"]
        result = block["toolResult"]
        assert messages[-2]["role"] == "assistant" and messages[-1]["role"] == "user"
        return (
            use["input"],
            use["toolUseId"],
            result["toolUseId"],
            result["status"] == "error",
            result["content"][0]["text"],
            note["text"],
        )


class OpenAICompatible:
    server = OpenAIServer

    @staticmethod
    def api(srv):
        return LangChainAPI("langchain_openai:ChatOpenAI", model="local", base_url=srv.base_url, api_key="unused")

    @staticmethod
    def failed_call(messages):
        import json

        (call,) = messages[-3]["tool_calls"]
        tool, note = messages[-2], messages[-1]
        assert messages[-3]["role"] == "assistant" and tool["role"] == "tool" and note["role"] == "user"
        # The OpenAI wire has no error flag on a tool message: the text says the call failed.
        args = json.loads(call["function"]["arguments"])
        return args, call["id"], tool["tool_call_id"], True, tool["content"], note["content"]


PROVIDERS = pytest.mark.parametrize(
    "provider", [Anthropic, Bedrock, OpenAICompatible], ids=["anthropic", "bedrock", "openai-compatible"]
)


def _ask(model: Model):
    async def go():
        try:
            return await ask_structured(model, judge_request(), Verdict, max_reasks=2)
        finally:
            await model.aclose()

    return asyncio.run(go())


def _answers(server, *inputs):
    return [server.protocol.tool_reply("record_verdict", value) for value in inputs]


@PROVIDERS
def test_a_failed_tool_call_is_answered_with_an_error_result_as_the_provider_documents(provider):
    with provider.server(script=_answers(provider.server, BAD, GOOD)) as srv:
        result = _ask(Model(provider.api(srv)))
        first, second = srv.bodies
    assert result.value == Verdict(**GOOD) and result.attempts == 2
    assert second["messages"][: len(first["messages"])] == first["messages"]  # the first request, continued
    tool_input, call_id, answered_id, is_error, text, note = provider.failed_call(second["messages"])
    assert tool_input == BAD and answered_id == call_id and is_error
    assert "could not be used" in text and "label" in text  # the validation error, for the model to fix
    # Said again as plain text, which a chat template that drops tool results or their ids still shows.
    assert "re-ask 1" in note and "label" in note


BAD_TOO = {"label_reason": "The context says the sky is blue.", "label": "perhaps"}


@PROVIDERS
def test_re_asks_differ_from_each_other_and_a_resumed_run_replays_them_from_the_cache(provider, tmp_path):
    cache = RequestCache(tmp_path / "cache.sqlite")
    with provider.server(script=_answers(provider.server, BAD, BAD_TOO, BAD)) as srv:
        result = _ask(Model(provider.api(srv), cache=cache))
        assert len(srv.requests) == 3 and result.attempts == 3 and result.value is None
        first, second, third = srv.bodies
        assert first != second != third != first  # every re-ask names its number and its own error
        again = _ask(Model(provider.api(srv), cache=cache))
        assert len(srv.requests) == 3  # resumed: nothing is paid twice
    assert again.usage.cached_calls == 3 and again.error == result.error and again.raw_output == result.raw_output


@PROVIDERS
def test_re_asking_stops_when_the_model_repeats_its_answer_exactly(provider):
    with provider.server(handler=lambda body: provider.server.protocol.tool_reply("record_verdict", BAD)) as srv:
        result = _ask(Model(provider.api(srv)))
        # Greedy decoding gives the same answer to the re-ask: a second re-ask would only pay for it again.
        assert len(srv.requests) == 2 and result.attempts == 2
    assert result.value is None and "re-asking stopped" in result.error and "maybe" in result.raw_output


@pytest.mark.parametrize("server", [AnthropicServer, BedrockServer], ids=["anthropic", "bedrock"])
def test_the_simulators_refuse_a_tool_result_that_answers_no_call(server):
    """What the re-ask tests rely on: the simulators check tool results as the APIs do."""
    if server is AnthropicServer:
        messages = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "no call"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "e"}]},
        ]
        body = {"model": "m", "max_tokens": 5, "messages": messages}
    else:
        messages = [
            {"role": "user", "content": [{"text": "hi"}]},
            {"role": "assistant", "content": [{"text": "no call"}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "x", "content": [{"text": "e"}]}}]},
        ]
        body = {"messages": messages}
    with pytest.raises(ValueError, match="tool_result blocks"):
        server.protocol.parse(body, {"model": "m"})
