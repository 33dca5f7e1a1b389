"""Any LangChain chat model (``langchain_core`` ``BaseChatModel``) behind the provider interface.

Structured output goes through ``bind_tools`` with the tool forced; a chat model without tool
support is asked for one JSON object in its text instead, which the output parser validates.

What holds for every class (so that a local OpenAI-compatible server behaves like a hosted API):

* one retry layer: a class with a ``max_retries`` field is built with 0 (``Model`` retries);
* bounded output: each request's ``max_tokens`` is set on the class's own field for it
  (``max_tokens``, ``max_completion_tokens``, ``max_output_tokens``, ``num_predict`` ...), and a
  cut-off is read from the finish reason;
* tool calls whose arguments did not parse (``invalid_tool_calls``) are kept as written, for the
  parser to repair and for a re-ask to show back;
* ``settings()`` names the resolved model and endpoint (never a key): they are in the cache key.
"""

from __future__ import annotations

import difflib
import importlib
import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import SecretStr

from hallumeasure.core.config import looks_secret
from hallumeasure.core.errors import ConfigError, ProviderError
from hallumeasure.core.types import Usage
from hallumeasure.models.base import (
    GenerateRequest,
    GenerateResponse,
    Message,
    ModelAPI,
    ToolCallBlock,
    ToolResultBlock,
    ToolSpec,
)
from hallumeasure.models.wire import public_url

log = logging.getLogger(__name__)

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
#: Fields through which classes bound the length of an answer, in order of preference.
_MAX_TOKENS_FIELDS = (
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "max_new_tokens",
    "num_predict",
    "n_predict",
)
#: Fields that name the server a class talks to, and the region of a cloud endpoint.
_ENDPOINT_FIELDS = (
    "openai_api_base",
    "base_url",
    "api_base",
    "anthropic_api_url",
    "azure_endpoint",
    "endpoint_url",
    "endpoint",
    "inference_server_url",
    "host",
    "server_url",
)
_REGION_FIELDS = ("region_name", "region", "location")
#: Attributes under which classes keep their SDK clients (whose base URL is the resolved one).
_CLIENT_ATTRS = ("root_async_client", "async_client", "root_client", "client")
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
    """``langchain:<package.module:ClassName>`` (built with ``model_kwargs``), or a chat model instance.

    ``model_kwargs`` are the class's constructor options (from the spec's ``?key=value`` part or
    ``--judge-option``); each must be a field of the class. ``max_retries`` is not one of them: the
    class is built with 0, as ``Model`` is the one layer that retries.
    """

    provider = "langchain"

    def __init__(self, chat: BaseChatModel | str, /, **model_kwargs: Any) -> None:
        self.options: dict[str, Any] = {}
        self._rebuild: tuple[str, dict[str, Any]] | None = None
        if isinstance(chat, str):
            path = chat
            self._rebuild = (path, dict(model_kwargs))
            self.options = {k: v for k, v in model_kwargs.items() if not _looks_secret(k)}
            chat = _construct(path, model_kwargs)
        elif model_kwargs:
            raise ConfigError("constructor keyword arguments need an import path, not a chat model instance")
        else:
            path = f"{type(chat).__module__}:{type(chat).__qualname__}"
        if not isinstance(chat, BaseChatModel):
            raise ConfigError(f"{path} is not a langchain_core BaseChatModel")
        super().__init__(path)
        self.chat = chat
        self.max_tokens_field = next((f for f in _MAX_TOKENS_FIELDS if f in _fields(type(chat))), None)
        self._bounded: dict[int, BaseChatModel] = {}
        retries = getattr(chat, "max_retries", 0)
        if retries:  # an instance built elsewhere; its SDK client already holds the count
            log.warning(
                "%s: the chat model retries on its own (max_retries=%s) under hallumeasure's retries; "
                "build it with max_retries=0 so that there is one retry layer",
                path,
                retries,
            )

    def bound(self, *, timeout: float, max_concurrency: int) -> None:
        """A class built here from its import path gets the wrapper's deadline as its client's own
        timeout (``timeout`` / ``request_timeout``), unless the spec set one.

        Where this does not reach: a chat model instance built elsewhere keeps its own timeout and
        pool, and a class whose async call runs its blocking client in a thread keeps that thread
        until its own timeout after ``Model`` gave up at the deadline. Async clients (ChatOpenAI,
        ChatAnthropic) close the connection when the deadline cancels the call.
        """
        if self._rebuild is None:
            return
        path, kwargs = self._rebuild
        fields = _fields(type(self.chat))
        field = next((f for f in ("timeout", "request_timeout", "default_request_timeout") if f in fields), None)
        if field is None or any(k in kwargs for k in ("timeout", "request_timeout", "default_request_timeout")):
            return
        self.chat = _construct(path, {**kwargs, field: timeout})
        self._bounded = {}

    def settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"class": self.model_name}
        model_id = next(
            (
                getattr(self.chat, a, None)
                for a in ("model_name", "model", "model_id")
                if isinstance(getattr(self.chat, a, None), str)
            ),
            None,
        )
        if model_id:
            settings["model"] = model_id
        settings.update(_endpoint(self.chat))
        settings["client_max_retries"] = getattr(self.chat, "max_retries", None)
        settings["max_tokens_field"] = self.max_tokens_field
        for name, value in sorted(self.options.items()):
            settings.setdefault(name, _recordable(value))
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

    def _bounded_chat(self, max_tokens: int) -> BaseChatModel:
        """The chat model with its output bounded at ``max_tokens`` (a shallow copy: clients are shared).

        ChatOpenAI sends its bound as ``max_completion_tokens``, which OpenAI reads but some
        OpenAI-compatible servers ignore (llama-cpp-python's reads only ``max_tokens``): for a server
        other than OpenAI's, ``max_tokens`` goes in the body too, with the same value.
        """
        if self.max_tokens_field is None:
            return self.chat
        if max_tokens not in self._bounded:
            update: dict[str, Any] = {self.max_tokens_field: max_tokens}
            if self._renames_max_tokens() and "extra_body" in _fields(type(self.chat)):
                update["extra_body"] = {**(getattr(self.chat, "extra_body", None) or {}), "max_tokens": max_tokens}
            self._bounded[max_tokens] = self.chat.model_copy(update=update)
        return self._bounded[max_tokens]

    def _renames_max_tokens(self) -> bool:
        info = (getattr(type(self.chat), "model_fields", None) or {}).get(self.max_tokens_field or "")
        host = urlsplit(_endpoint(self.chat).get("base_url", "")).hostname or ""
        return getattr(info, "alias", None) == "max_completion_tokens" and host not in ("", "api.openai.com")

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        messages = _messages(request)
        chat = self._bounded_chat(request.max_tokens)
        runnable: Any = chat
        if request.tool is not None:
            try:
                runnable = chat.bind_tools([_openai_tool(request.tool)], tool_choice=request.tool.name)
            except NotImplementedError:
                messages = _ask_for_json(messages, request.tool)
        try:
            message = await runnable.ainvoke(messages)
        except ProviderError:
            raise
        except Exception as exc:  # noqa: BLE001 - any integration's error: classify it by name and status
            error = self._provider_error(exc)
        else:
            return self._response(message, request)
        raise error  # outside the except block, so that the integration's error (it may hold the key) is not kept

    def _response(self, message: BaseMessage, request: GenerateRequest) -> GenerateResponse:
        tool_input, tool_raw, call_id = None, None, None
        if request.tool is not None:
            calls = getattr(message, "tool_calls", None) or []
            invalid = getattr(message, "invalid_tool_calls", None) or []
            call = next((c for c in calls if c.get("name") == request.tool.name), calls[0] if calls else None)
            if call is not None:
                tool_input, call_id = call.get("args"), call.get("id")
            elif invalid:
                # Arguments that did not parse as JSON (fenced, followed by a template marker, cut off):
                # kept as written, for the parser to repair and for a re-ask to show back.
                bad = next((c for c in invalid if c.get("name") == request.tool.name), invalid[0])
                tool_raw, call_id = str(bad.get("args") or ""), bad.get("id")
        metadata = getattr(message, "response_metadata", None) or {}
        finish = (
            metadata.get("stop_reason")
            or metadata.get("finish_reason")
            or metadata.get("stopReason")
            or metadata.get("done_reason")
        )
        stop_reason = _STOP_REASONS.get(str(finish).lower(), "other") if finish else "end_turn"
        if tool_input is not None and stop_reason not in ("max_tokens", "refusal"):
            stop_reason = "tool_use"
        usage = _usage(getattr(message, "usage_metadata", None))
        if tool_input is None and stop_reason != "refusal" and usage.output_tokens >= request.max_tokens:
            # llama.cpp's server ends a tool call cut at max_tokens with finish_reason "tool_calls" and the
            # arguments as far as they got (no parsed input): the budget used up tells that it was cut.
            stop_reason = "max_tokens"
        return GenerateResponse(
            text=message.text,
            tool_input=tool_input,
            tool_raw=tool_raw,
            tool_call_id=call_id,
            stop_reason=stop_reason,
            usage=usage,
            model=self.spec,
        )

    def _provider_error(self, exc: Exception) -> ProviderError:
        from hallumeasure.models.wire import is_retryable_status, parse_retry_after, scrub_secrets

        if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):  # a body cut short on the way
            return ProviderError(
                f"{self.spec}: reply body was not valid JSON (truncated?)", retryable=True, cause="unreadable_body"
            )
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
    kwargs = _checked_options(path, cls, kwargs)
    try:
        chat: BaseChatModel = cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the constructor's own error, reported without the values given
        reason = _construction_error(exc, kwargs)
    else:
        return chat
    raise ConfigError(f"cannot construct {path} with options {sorted(kwargs)}: {reason}")


def _checked_options(path: str, cls: type, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` checked against the class's fields, with the client's own retries switched off."""
    fields = _fields(cls)
    if "max_retries" in kwargs:
        raise ConfigError(
            f"{path}: max_retries is hallumeasure's, not the chat model's: use --max-retries "
            "(the chat model is built with max_retries=0, so that there is one retry layer)"
        )
    if fields and isinstance(cls, type) and issubclass(cls, BaseChatModel):
        unknown = sorted(k for k in kwargs if k not in fields)
        if unknown:
            hints = [
                f"{k} (did you mean {', '.join(m)}?)" if (m := difflib.get_close_matches(k, fields, n=2)) else k
                for k in unknown
            ]
            raise ConfigError(f"{path} has no option {'; '.join(hints)}; see the class's documentation for its fields")
    if "max_retries" in fields:
        kwargs = {**kwargs, "max_retries": 0}  # Model is the one layer that retries
    return kwargs


def _fields(cls: type) -> set[str]:
    """The names a pydantic class accepts as constructor options: its fields and their aliases."""
    names: set[str] = set()
    for name, info in (getattr(cls, "model_fields", None) or {}).items():
        names.add(name)
        if info.alias:
            names.add(info.alias)
    return names


def _construction_error(exc: Exception, kwargs: dict[str, Any]) -> str:
    """A one-line reason that never repeats an option's value (a validation error quotes its input)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in errors()[:3])
        except Exception:  # noqa: BLE001 - not a pydantic error after all
            pass
    from hallumeasure.models.wire import scrub_secrets

    first_line = (str(exc).strip().splitlines() or [""])[0][:300]
    values = [str(v) for v in kwargs.values() if isinstance(v, (str, SecretStr))]
    return scrub_secrets(f"{type(exc).__name__}: {first_line}", values) if first_line else type(exc).__name__


def _messages(request: GenerateRequest) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage(content=request.system)] if request.system else []
    for message in request.messages:
        messages += _message(message)
    return messages


def _message(message: Message) -> list[BaseMessage]:
    """One of our messages as LangChain messages: a tool result becomes a ``ToolMessage`` of its own."""
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    calls = [b for b in message.content if isinstance(b, ToolCallBlock)]
    text = "".join(b.text for b in message.content if not isinstance(b, (ToolCallBlock, ToolResultBlock)))
    if results:
        out: list[BaseMessage] = [
            ToolMessage(content=b.result, tool_call_id=b.call_id, status="error" if b.is_error else "success")
            for b in results
        ]
        return out + ([HumanMessage(content=text)] if text else [])
    if message.role == "user":
        return [HumanMessage(content=text)]
    valid = [
        {"name": c.name, "args": c.input, "id": c.call_id, "type": "tool_call"} for c in calls if c.input is not None
    ]
    # Arguments that did not parse go back as written: integrations send them as the call's arguments.
    invalid = [
        {"name": c.name, "args": c.raw, "id": c.call_id, "error": None, "type": "invalid_tool_call"}
        for c in calls
        if c.input is None
    ]
    if calls and not text:
        # Integrations send an empty content beside tool calls as null, which OpenAI allows but some
        # servers refuse (llama-cpp-python 0.3.36 answers 500: content must be a string).
        text = f"(call to {calls[0].name})"
    return [AIMessage(content=text, tool_calls=valid, invalid_tool_calls=invalid)]


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
    return looks_secret(name)


def _recordable(value: object) -> object:
    """An option's value as the manifest may show it: a URL without credentials or query; a structure
    (headers, clients, ...) only by its type, since it may hold a token under an innocent name."""
    if isinstance(value, str):
        return public_url(value) if "://" in value else value
    if value is None or isinstance(value, (int, float, bool)):
        return value
    return f"<{type(value).__name__}, not recorded>"


def _endpoint(chat: BaseChatModel) -> dict[str, Any]:
    """The resolved server (``base_url``) and ``region`` of a chat model, as far as it tells them.

    A field set on the model wins; else its SDK client's base URL (which the SDK resolved from its
    environment variables, such as ``OPENAI_BASE_URL``) or botocore's endpoint and region.
    """
    found: dict[str, Any] = {}
    url = next((v for f in _ENDPOINT_FIELDS if isinstance(v := getattr(chat, f, None), str) and v), None)
    region = next((v for f in _REGION_FIELDS if isinstance(v := getattr(chat, f, None), str) and v), None)
    for attr in _CLIENT_ATTRS:
        client = getattr(chat, attr, None)
        if client is None:
            continue
        url = url or (str(v) if (v := getattr(client, "base_url", None)) else None)
        meta = getattr(client, "meta", None)  # a boto3 client
        if meta is not None:
            url = url or getattr(meta, "endpoint_url", None)
            region = region or getattr(meta, "region_name", None)
    if url:
        found["base_url"] = public_url(url)
    if region:
        found["region"] = region
    return found
