"""A local simulator of an OpenAI-compatible chat server (``POST /v1/chat/completions``), the API
that vLLM, llama.cpp's server, llama-cpp-python, Ollama and TGI offer, for tests and benchmarks.

    with OpenAIServer(script=[raw_tool_reply("record_verdict", '```json\\n{"label": "supported"}\\n```')]) as srv:
        chat = ChatOpenAI(model="qwen2.5-0.5b-instruct", base_url=srv.base_url, api_key="unused")
        ...
        srv.requests[0].body["max_completion_tokens"]

Besides the shared behaviour (script, handler, faults, limits, latency; see ``hallumeasure.testing``),
it checks what such servers check (an object schema for each function's parameters, a forced
function that exists) and has helpers for what open-weight models send back: ``raw_tool_reply``
(tool-call arguments as written, valid JSON or not) and ``text_reply`` (a text tool call such as
Hermes' ``<tool_call>`` block is plain text on this wire).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from hallumeasure.testing.calls import Answer, Call, Reply, Segment, Tokens
from hallumeasure.testing.server import Protocol, SimServer

#: Neutral stop reasons -> OpenAI finish reasons.
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


class OpenAIProtocol(Protocol):
    name = "openai"
    error_codes: ClassVar[Mapping[int, str]] = {
        400: "invalid_request_error",
        401: "invalid_api_key",
        404: "model_not_found",
        429: "rate_limit_exceeded",
        500: "server_error",
        503: "service_unavailable",
    }
    default_error_code = "server_error"
    overloaded_status = 503  # vLLM and llama.cpp answer 503 while loading or overloaded

    def route(self, method: str, path: str) -> dict[str, str] | None:
        return {} if method == "POST" and path.rstrip("/") in ("/v1/chat/completions", "/chat/completions") else None

    def parse(self, body: Any, params: Mapping[str, str]) -> Call:
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        for key in ("model", "messages"):
            if key not in body:
                raise ValueError(f"{key}: Field required")
        segments: list[Segment] = []
        for message in body["messages"]:
            segments += _segments(message)
        tools: dict[str, dict[str, Any]] = {}
        for tool in body.get("tools") or []:
            function = tool.get("function") or {}
            parameters = function.get("parameters") or {"type": "object", "properties": {}}
            if parameters.get("type") != "object":
                raise ValueError(
                    f"Invalid schema for function '{function.get('name')}': schema must be a JSON "
                    f"Schema of 'type: \"object\"', got 'type: \"{parameters.get('type')}\"'."
                )
            tools[function["name"]] = {
                "name": function["name"],
                "description": function.get("description", ""),
                "input_schema": parameters,
            }
        choice = body.get("tool_choice")
        name = None
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name")
            if name not in tools:
                raise ValueError(f"tool_choice names an unknown function {name!r}")
        elif choice != "none":
            name = next(iter(tools), None)
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        return Call(
            model=body["model"],
            segments=tuple(segments),
            tool=tools.get(name) if name else None,
            forced=isinstance(choice, dict) or choice == "required",
            max_tokens=max_tokens,
            tools=tuple(tools.values()),
        )

    def render(self, answer: Answer) -> dict[str, Any]:
        calls = None
        if answer.tool_name is not None:
            calls = [_tool_call(answer.tool_name, json.dumps(answer.tool_input or {}), answer.digest)]
        return _completion(
            answer.text or None,
            calls,
            FINISH_REASONS.get(answer.stop_reason, answer.stop_reason),
            answer.usage,
            answer.model or "simulated-open-model",
            answer.digest,
        )

    def error_body(self, status: int, code: str, message: str) -> tuple[dict[str, Any], dict[str, str]]:
        kind = "invalid_request_error" if status < 500 and status != 429 else code
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}, {}

    def raw_tool_reply(
        self,
        name: str,
        arguments: str,
        *,
        text: str = "",
        finish_reason: str = "tool_calls",
        usage: Tokens | Mapping[str, int] | None = None,
        model: str | None = None,
    ) -> Reply:
        """A tool call whose ``arguments`` string is sent as is (a server passes through what the model wrote)."""
        digest = Answer(text=arguments, tool_name=name).digest
        return Reply(
            200,
            _completion(
                text or None,
                [_tool_call(name, arguments, digest)],
                finish_reason,
                Tokens.of(usage),
                model or "simulated-open-model",
                digest,
            ),
        )


def _tool_call(name: str, arguments: str, digest: str) -> dict[str, Any]:
    return {"id": f"call_sim_{digest}", "type": "function", "function": {"name": name, "arguments": arguments}}


def _completion(
    content: str | None, calls: list[dict[str, Any]] | None, finish_reason: str, usage: Tokens, model: str, digest: str
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens  # OpenAI counts all input
    return {
        "id": f"chatcmpl-sim-{digest}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": usage.output_tokens,
            "total_tokens": prompt + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        },
    }


def _segments(message: dict[str, Any]) -> list[Segment]:
    role = message["role"]
    if role not in ("system", "developer", "user", "assistant", "tool"):
        raise ValueError(f"messages: unexpected role {role!r}")
    content = message.get("content")
    if isinstance(content, list):  # content parts
        text = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    else:
        text = content or ""
    if role == "assistant" and not isinstance(content, (str, list)):
        # OpenAI allows null content beside tool calls; llama-cpp-python's server does not, so neither
        # does the simulator: what passes here passes there too.
        raise ValueError("messages: an assistant message's content must be a string")
    if role == "assistant" and message.get("tool_calls"):
        text += json.dumps(message["tool_calls"], sort_keys=True)
    if role == "tool" and not message.get("tool_call_id"):
        raise ValueError("messages: a tool message needs tool_call_id")
    neutral = {"developer": "system", "tool": "user"}.get(role, role)
    return [Segment(neutral, text)] if text else []


PROTOCOL = OpenAIProtocol()
text_reply = PROTOCOL.text_reply
tool_reply = PROTOCOL.tool_reply
error_reply = PROTOCOL.error_reply
raw_tool_reply = PROTOCOL.raw_tool_reply


class OpenAIServer(SimServer):
    """``POST /v1/chat/completions`` on 127.0.0.1; point ``ChatOpenAI(base_url=srv.base_url)`` at it."""

    protocol = PROTOCOL

    @property
    def base_url(self) -> str:
        """The API root as OpenAI clients take it (with ``/v1``)."""
        return f"{self.url}/v1"
