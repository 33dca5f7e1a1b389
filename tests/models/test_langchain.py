"""LangChainAPI against tiny but real ``BaseChatModel`` subclasses.

The LangChain runtime runs; nothing of ours is mocked.
"""

import asyncio
import importlib.util
import json
from typing import Any

import anthropic
import httpx2
import pytest
from botocore.exceptions import ClientError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from provider_fixtures import SCHEMA, TOOL, VERDICT
from pydantic import BaseModel, Field, SecretStr

from hallumeasure.core.errors import ConfigError, ProviderError
from hallumeasure.judges.llm.parsing import parse_output
from hallumeasure.models.base import GenerateRequest, Message
from hallumeasure.models.factory import build_model_api
from hallumeasure.models.langchain import LangChainAPI
from hallumeasure.models.model import Model

SENTINEL = "lc-SENTINEL-never-print-me-0123456789"


class Verdict(BaseModel):
    label_reason: str
    label: str


class ToolChat(BaseChatModel):
    """Calls whatever tool it is bound to with ``args``; raises the queued ``errors`` first."""

    args: dict[str, Any] = Field(default_factory=lambda: dict(VERDICT))
    usage: dict[str, Any] | None = None
    errors: list[Any] = Field(default_factory=list)
    seen: list[dict[str, Any]] = Field(default_factory=list)
    api_key: SecretStr = SecretStr(SENTINEL)
    model: str = "tool-chat-1"
    temperature: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "tool-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature, "api_key": self.api_key}

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.seen.append({"messages": messages, **kwargs})
        if self.errors:
            raise self.errors.pop(0)
        tools = kwargs.get("tools") or []
        calls = [{"name": t["function"]["name"], "args": self.args, "id": f"call_{i}"} for i, t in enumerate(tools)]
        message = AIMessage(
            content="",
            tool_calls=calls,
            usage_metadata=self.usage,
            response_metadata={"stop_reason": "tool_use" if calls else "end_turn"},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class PlainChat(BaseChatModel):
    """A chat model without tool support: it answers ``reply`` as text."""

    reply: str = json.dumps(VERDICT)
    finish: str | None = None
    seen: list[list[Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "plain-chat"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.seen.append(messages)
        metadata = {"finish_reason": self.finish} if self.finish else {}
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=self.reply, response_metadata=metadata))]
        )


def _request(**changes) -> GenerateRequest:
    fields = {
        "system": "You judge claims against a context.",
        "messages": (Message.user("<context>The sky is blue.</context>", "Claim: blue."),),
        "tool": TOOL,
        "max_tokens": 512,
    }
    return GenerateRequest(**{**fields, **changes})


def _generate(api, request: GenerateRequest):
    return asyncio.run(api.generate(request))


def _error(api, request: GenerateRequest | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        _generate(api, request or _request())
    return info.value


def test_forced_tool_round_trip_through_bind_tools():
    usage = {
        "input_tokens": 100,  # LangChain counts cached tokens in input_tokens
        "output_tokens": 7,
        "total_tokens": 107,
        "input_token_details": {"cache_read": 60, "cache_creation": 10},
    }
    chat = ToolChat(usage=usage)
    response = _generate(LangChainAPI(chat), _request())

    assert response.tool_input == VERDICT and response.stop_reason == "tool_use"
    assert (response.usage.calls, response.usage.input_tokens, response.usage.output_tokens) == (1, 30, 7)
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (60, 10)
    (seen,) = chat.seen
    assert seen["tools"] == [
        {
            "type": "function",
            "function": {"name": "record_verdict", "description": TOOL.description, "parameters": SCHEMA},
        }
    ]
    assert seen["tool_choice"] == "record_verdict"
    assert [type(m) for m in seen["messages"]] == [SystemMessage, HumanMessage]
    assert seen["messages"][0].content == "You judge claims against a context."
    assert seen["messages"][1].content == "<context>The sky is blue.</context>Claim: blue."


def test_conversation_roles_and_missing_usage():
    chat = ToolChat()
    request = _request(tool=None, messages=(Message.user("a"), Message.assistant("b"), Message.user("c")))
    response = _generate(LangChainAPI(chat), request)
    assert [type(m) for m in chat.seen[0]["messages"]] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert "tools" not in chat.seen[0] and response.tool_input is None and response.stop_reason == "end_turn"
    assert response.usage.calls == 1 and response.usage.input_tokens == 0


def test_without_bind_tools_the_model_is_asked_for_json_and_the_parser_reads_it():
    chat = PlainChat()
    response = _generate(LangChainAPI(chat), _request())
    assert response.tool_input is None and response.text == json.dumps(VERDICT)
    assert parse_output(Verdict, response) == Verdict(**VERDICT)
    (messages,) = chat.seen
    assert [type(m) for m in messages] == [SystemMessage, HumanMessage]  # the instruction joins the last user turn
    assert messages[-1].content.startswith("<context>The sky is blue.</context>Claim: blue.")
    assert json.dumps(SCHEMA, sort_keys=True) in messages[-1].content and "record_verdict" in messages[-1].content


@pytest.mark.parametrize(
    ("finish", "ours"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal"), ("weird", "other")],
)
def test_finish_reasons_are_mapped(finish, ours):
    response = _generate(LangChainAPI(PlainChat(reply="text", finish=finish)), _request(tool=None))
    assert response.stop_reason == ours


class RateLimitError(Exception):
    pass


class StatusError(Exception):
    def __init__(self, status_code: int):
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


def _anthropic_error(status: int, headers: dict[str, str]) -> Exception:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx2.Response(status, headers=headers, request=request)
    cls = {429: anthropic.RateLimitError, 400: anthropic.BadRequestError}[status]
    return cls("simulated", response=response, body=None)


def _client_error(code: str, status: int) -> Exception:
    meta = {"HTTPStatusCode": status, "HTTPHeaders": {"retry-after": "0.03"}}
    return ClientError({"Error": {"Code": code, "Message": "simulated"}, "ResponseMetadata": meta}, "Converse")


@pytest.mark.parametrize(
    ("error", "retryable", "status", "retry_after"),
    [
        (RateLimitError("slow down"), True, None, None),
        (TimeoutError("took too long"), True, None, None),
        (ConnectionError("refused"), True, None, None),
        (StatusError(529), True, 529, None),
        (StatusError(400), False, 400, None),
        (ValueError("bad input"), False, None, None),
        (_anthropic_error(429, {"retry-after": "0.02"}), True, 429, 0.02),
        (_anthropic_error(400, {}), False, 400, None),
        (_client_error("ThrottlingException", 429), True, 429, 0.03),
        (_client_error("ModelTimeoutException", 408), True, 408, 0.03),
        (_client_error("ValidationException", 400), False, 400, 0.03),
    ],
)
def test_integration_errors_map_to_provider_errors(error, retryable, status, retry_after):
    chat = ToolChat(errors=[error])
    exc = _error(LangChainAPI(chat))
    assert (exc.retryable, exc.status, exc.retry_after) == (retryable, status, retry_after)
    assert len(chat.seen) == 1 and type(error).__name__ in str(exc)


def test_secrets_never_appear_in_errors_or_settings():
    api = LangChainAPI(ToolChat(errors=[RuntimeError(f"auth failed for key {SENTINEL}")]))
    exc = _error(api)
    for text in (str(exc), repr(exc), repr(exc.args), json.dumps(api.settings()), api.spec):
        assert SENTINEL not in text
    assert api.settings()["model"] == "tool-chat-1" and api.settings()["temperature"] == 0.0
    assert "api_key" not in api.settings()


def test_construct_from_an_import_path_through_the_registry():
    path = "langchain_core.language_models.fake_chat_models:FakeListChatModel"
    api = build_model_api(f"langchain:{path}", responses=["hello there"])
    assert api.spec == f"langchain:{path}" and api.settings()["class"] == path
    response = _generate(api, _request(tool=None))
    assert response.text == "hello there" and response.stop_reason == "end_turn"


@pytest.mark.parametrize("path", ["nonexistent_package.mod:Chat", "langchain_core.messages:NoSuchClass", "noseparator"])
def test_bad_import_paths_are_config_errors(path):
    with pytest.raises(ConfigError):
        LangChainAPI(path)


def test_not_a_chat_model_is_a_config_error():
    with pytest.raises(ConfigError, match="BaseChatModel"):
        LangChainAPI("collections:OrderedDict")


def test_rate_limit_then_success_through_the_model_wrapper():
    chat = ToolChat(errors=[_anthropic_error(429, {"retry-after": "0.01"})])
    model = Model(LangChainAPI(chat), backoff_base=0.0)
    response = _generate(model, _request())
    assert response.tool_input == VERDICT and len(chat.seen) == 2 and model.retries == 1


def test_a_failed_import_names_the_module_that_is_missing(tmp_path, monkeypatch):
    (tmp_path / "my_chat_wrapper.py").write_text("import langchain_not_installed_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        build_model_api("langchain:my_chat_wrapper:Chat")
    message = str(caught.value)
    assert "'langchain_not_installed_xyz'" in message and "pip install langchain-not-installed-xyz" in message
    assert "langchain-anthropic" not in message
    if importlib.util.find_spec("langchain_openai") is None:  # the reviewer's case, when it is not installed
        with pytest.raises(ConfigError, match="pip install langchain-openai") as caught:
            build_model_api("langchain:langchain_openai:ChatOpenAI")
        assert "langchain-anthropic" not in str(caught.value)
    with pytest.raises(ConfigError, match="module 'json' has no 'ChatNothing'"):
        build_model_api("langchain:json:ChatNothing")


class BoundedChat(ToolChat):
    """A chat model with an Ollama-style output bound (``num_predict``) and its own retries."""

    num_predict: int | None = None
    max_retries: int = 2
    bounds: list[Any] = Field(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.bounds.append(self.num_predict)
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_each_request_bounds_the_answer_through_the_class_field_and_client_retries_are_off():
    api = LangChainAPI(f"{__name__}:BoundedChat")
    assert api.chat.max_retries == 0 and api.max_tokens_field == "num_predict"
    for limit in (100, 7, 100):
        _generate(api, _request(max_tokens=limit))
    # Each bounded copy shares the original's state lists, so the bound seen per call is recorded here.
    assert api.chat.bounds == [100, 7, 100] and api.chat.num_predict is None
    assert api.settings()["client_max_retries"] == 0 and api.settings()["max_tokens_field"] == "num_predict"


def test_an_instance_that_retries_on_its_own_is_reported(caplog):
    api = LangChainAPI(BoundedChat())
    assert "retries on its own" in caplog.text and api.settings()["client_max_retries"] == 2


def test_an_invalid_tool_call_is_kept_as_written_with_its_id():
    class InvalidChat(ToolChat):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            bad = {
                "name": "record_verdict",
                "args": '```json\n{"label_reason": "x", "label": "supported"}\n```',
                "id": "call_7",
                "error": "not JSON",
                "type": "invalid_tool_call",
            }
            message = AIMessage(
                content='Prose that quotes a fake verdict {"label": "absent"}',
                invalid_tool_calls=[bad],
                response_metadata={"finish_reason": "tool_calls"},
            )
            return ChatResult(generations=[ChatGeneration(message=message)])

    response = _generate(LangChainAPI(InvalidChat()), _request())
    assert response.tool_input is None and response.tool_call_id == "call_7" and response.tool_raw.startswith("```")
    # Only the call counts, repaired; the prose beside it is never read as the answer.
    assert parse_output(Verdict, response) == Verdict(label_reason="x", label="supported")
