"""Any LangChain chat model (``langchain_core`` ``BaseChatModel``) behind the provider interface.

Structured output goes through ``bind_tools`` with the tool forced; a chat model without tool
support is asked for one JSON object in its text instead, which the output parser validates.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import SecretStr

from hallumeasure.errors import ConfigError, ProviderError
from hallumeasure.models.base import GenerateRequest, GenerateResponse, ModelAPI, ToolSpec
from hallumeasure.types import Usage

#: Fragments of exception class names (or provider error codes) that mean "try again later".
_RETRYABLE_NAMES = (
    "ratelimit",
    "rate_limit",
    "throttl",
    "toomanyrequests",
    "overload",
    "timeout",
    "timedout",
    "connection",
    "unavailable",
    "internalserver",
    "modelnotready",
)
_SECRET_NAMES = (
    "api_key",
    "apikey",
    "access_key",
    "secret",
    "password",
    "credential",
    "auth_token",
    "access_token",
    "session_token",
    "bearer",
)
#: response_metadata finish reasons across integrations -> our stop reasons.
_STOP_REASONS = {
    "end_turn": "end_turn",
    "stop": "end_turn",
    "tool_use": "tool_use",
    "tool_calls": "tool_use",
    "max_tokens": "max_tokens",
    "length": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "content_filter": "refusal",
    "content_filtered": "refusal",
    "guardrail_intervened": "refusal",
}


class LangChainAPI(ModelAPI):
    """``langchain:<package.module:ClassName>`` (built with ``model_kwargs``), or a chat model instance."""

    provider = "langchain"

    def __init__(self, chat: BaseChatModel | str, /, **model_kwargs: Any) -> None:
        if isinstance(chat, str):
            path = chat
            chat = _construct(path, model_kwargs)
        elif model_kwargs:
            raise ConfigError("constructor keyword arguments need an import path, not a chat model instance")
        else:
            path = f"{type(chat).__module__}:{type(chat).__qualname__}"
        if not isinstance(chat, BaseChatModel):
            raise ConfigError(f"{path} is not a langchain_core BaseChatModel")
        super().__init__(path)
        self.chat = chat

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"class": self.model_name}
        model_id = next((getattr(self.chat, a, None) for a in ("model", "model_name", "model_id")
                         if isinstance(getattr(self.chat, a, None), str)), None)
        if model_id:
            settings["model"] = model_id
        try:
            params = dict(self.chat._identifying_params)
        except Exception:  # noqa: BLE001 - a third-party property; settings must not fail
            params = {}
        for name, value in params.items():
            if isinstance(value, (str, int, float, bool)) and not _looks_secret(name):
                settings.setdefault(name, value)
        return settings

    def sampling(self) -> str:
        temperature = self.settings().get("temperature")
        where = f"temperature {temperature}" if temperature is not None else "see the judge's settings"
        return f"the chat model's own sampling settings ({where}); hallumeasure adds none"

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        messages = _messages(request)
        runnable: Any = self.chat
        if request.tool is not None:
            try:
                runnable = self.chat.bind_tools([_openai_tool(request.tool)], tool_choice=request.tool.name)
            except NotImplementedError:
                messages = _ask_for_json(messages, request.tool)
        try:
            message = await runnable.ainvoke(messages)
        except ProviderError:
            raise
        except Exception as exc:  # any integration's error: classify it by name and status
            raise self._provider_error(exc) from None
        return self._response(message, request)

    def _response(self, message: BaseMessage, request: GenerateRequest) -> GenerateResponse:
        tool_input = None
        calls = getattr(message, "tool_calls", None) or []
        if request.tool is not None and calls:
            call = next((c for c in calls if c.get("name") == request.tool.name), calls[0])
            tool_input = call.get("args")
        metadata = getattr(message, "response_metadata", None) or {}
        finish = metadata.get("stop_reason") or metadata.get("finish_reason") or metadata.get("stopReason")
        if tool_input is not None:
            stop_reason = "tool_use"
        else:
            stop_reason = _STOP_REASONS.get(str(finish).lower(), "other") if finish else "end_turn"
        return GenerateResponse(
            text=message.text,
            tool_input=tool_input,
            stop_reason=stop_reason,
            usage=_usage(getattr(message, "usage_metadata", None)),
            model=self.spec,
        )

    def _provider_error(self, exc: Exception) -> ProviderError:
        from hallumeasure.models.wire import is_retryable_status, parse_retry_after, scrub_secrets

        status, code, headers = _status_code_headers(exc)
        names = [c.__name__.lower() for c in type(exc).__mro__] + ([code.lower()] if code else [])
        retryable = is_retryable_status(status) or any(frag in n for n in names for frag in _RETRYABLE_NAMES)
        retry_after = parse_retry_after(headers)
        if retry_after is None and isinstance(getattr(exc, "retry_after", None), (int, float)):
            retry_after = float(exc.retry_after)  # type: ignore[attr-defined]
        detail = str(exc)[:500] or "no details"
        return ProviderError(
            scrub_secrets(f"{self.spec}: {type(exc).__name__}: {detail}", self._secrets()),
            retryable=retryable,
            retry_after=retry_after,
            status=status,
            cause=code or type(exc).__name__,
        )

    def _secrets(self) -> list[str]:
        # Integrations keep their keys in SecretStr fields; make sure none reaches a message.
        return [v.get_secret_value() for v in vars(self.chat).values() if isinstance(v, SecretStr)]


def _construct(path: str, kwargs: dict[str, Any]) -> BaseChatModel:
    module_name, sep, class_name = path.partition(":")
    if not sep:
        module_name, _, class_name = path.rpartition(".")
    if not module_name or not class_name:
        raise ConfigError(f"{path!r} is not an import path: write package.module:ClassName")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        # Name the module that is really missing (it may be a dependency of the one asked for).
        missing = getattr(exc, "name", None)
        if not missing:
            raise ConfigError(f"cannot import {path!r}: {type(exc).__name__}: {exc}") from None
        package = missing.split(".")[0].replace("_", "-")
        raise ConfigError(
            f"cannot import {path!r}: no module named {missing!r}; install the package that provides it "
            f"(usually pip install {package})"
        ) from None
    try:
        cls = getattr(module, class_name)
    except AttributeError:
        raise ConfigError(f"cannot import {path!r}: module {module_name!r} has no {class_name!r}") from None
    try:
        return cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the constructor's own validation error, reported without values
        raise ConfigError(f"cannot construct {path} with options {sorted(kwargs)}: {type(exc).__name__}") from None


def _messages(request: GenerateRequest) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage(content=request.system)] if request.system else []
    for message in request.messages:
        cls = HumanMessage if message.role == "user" else AIMessage
        messages.append(cls(content=message.text))
    return messages


def _openai_tool(tool: ToolSpec) -> dict[str, Any]:
    # The OpenAI function format is the one every LangChain integration's bind_tools accepts.
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
    }


def _ask_for_json(messages: list[BaseMessage], tool: ToolSpec) -> list[BaseMessage]:
    instruction = (
        "\n\nAnswer with a single JSON object and nothing else: no prose, no code fence. "
        f"It is the input of the tool {tool.name!r} ({tool.description}) and must match this JSON Schema:\n"
        + json.dumps(tool.input_schema, sort_keys=True)
    )
    last = messages[-1] if messages else None
    if isinstance(last, HumanMessage) and isinstance(last.content, str):
        # Extend the last user turn rather than add one: some chat models reject two user turns in a row.
        return [*messages[:-1], HumanMessage(content=last.content + instruction)]
    return [*messages, HumanMessage(content=instruction.lstrip())]


def _usage(metadata: Mapping[str, Any] | None) -> Usage:
    if not metadata:
        return Usage(calls=1)
    details = metadata.get("input_token_details") or {}
    read = details.get("cache_read") or 0
    write = details.get("cache_creation") or 0
    # LangChain's input_tokens includes cached tokens; ours excludes them, as the providers report.
    fresh = max(0, (metadata.get("input_tokens") or 0) - read - write)
    return Usage(
        calls=1,
        input_tokens=fresh,
        output_tokens=metadata.get("output_tokens") or 0,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _status_code_headers(exc: Exception) -> tuple[int | None, str | None, Mapping[str, str] | None]:
    """HTTP status, provider error code and response headers, from the shapes SDKs use."""
    status = next(
        (v for a in ("status_code", "status", "http_status") if isinstance(v := getattr(exc, a, None), int)), None
    )
    code, headers = None, None
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):  # botocore ClientError (langchain-aws)
        meta = response.get("ResponseMetadata", {})
        status = status or meta.get("HTTPStatusCode")
        headers = meta.get("HTTPHeaders")
        code = response.get("Error", {}).get("Code")
    elif response is not None:  # httpx-style responses (anthropic, openai and most HTTP SDKs)
        status = status or getattr(response, "status_code", None)
        headers = getattr(response, "headers", None)
    return status, code, headers


def _looks_secret(name: str) -> bool:
    return any(fragment in name.lower() for fragment in _SECRET_NAMES)
