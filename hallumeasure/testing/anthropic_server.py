"""A local simulator of the Anthropic Messages API (``POST /v1/messages``), for tests and benchmarks.

    with AnthropicServer(handler=lambda body: tool_reply("record", {"x": 1})) as srv:
        api = AnthropicAPI("claude-x", api_key="test", base_url=srv.base_url)
        ...
        srv.requests[0].body["tool_choice"]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from hallumeasure.testing.server import Answer, Call, Protocol, Reply, Segment, SimServer


class AnthropicProtocol(Protocol):
    name = "anthropic"
    error_codes: ClassVar[Mapping[int, str]] = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        500: "api_error",
        504: "timeout_error",
        529: "overloaded_error",
    }
    default_error_code = "api_error"

    def route(self, method: str, path: str) -> dict[str, str] | None:
        return {} if method == "POST" and path.rstrip("/") == "/v1/messages" else None

    def parse(self, body: Any, params: Mapping[str, str]) -> Call:
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        for key in ("model", "max_tokens", "messages"):
            if key not in body:
                raise ValueError(f"{key}: Field required")
        system = body.get("system") or []
        segments = [Segment("system", system)] if isinstance(system, str) else _segments("system", system)
        for message in body["messages"]:
            if message["role"] not in ("user", "assistant"):
                raise ValueError(f"messages: unexpected role {message['role']!r}")
            content = message["content"]
            segments += [Segment(message["role"], content)] if isinstance(content, str) else _segments(
                message["role"], content
            )
        tools = {t["name"]: t for t in body.get("tools") or []}
        choice = body.get("tool_choice") or {}
        if choice.get("type") == "tool" and choice.get("name") not in tools:
            raise ValueError(f"tool_choice names an unknown tool {choice.get('name')!r}")
        name = choice.get("name") if choice.get("type") == "tool" else next(iter(tools), None)
        return Call(
            model=body["model"],
            segments=tuple(segments),
            tool=tools.get(name) if name else None,
            forced=choice.get("type") in ("tool", "any"),
            max_tokens=body["max_tokens"],
        )

    def render(self, answer: Answer) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if answer.text:
            content.append({"type": "text", "text": answer.text})
        if answer.tool_name is not None:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_sim_{answer.digest}",
                    "name": answer.tool_name,
                    "input": answer.tool_input or {},
                }
            )
        return {
            "id": f"msg_sim_{answer.digest}",
            "type": "message",
            "role": "assistant",
            "model": answer.model or "claude-simulated",
            "content": content,
            "stop_reason": answer.stop_reason,  # the neutral names are Anthropic's own
            "stop_sequence": None,
            "usage": {
                "input_tokens": answer.usage.input_tokens,
                "output_tokens": answer.usage.output_tokens,
                "cache_creation_input_tokens": answer.usage.cache_write_tokens,
                "cache_read_input_tokens": answer.usage.cache_read_tokens,
            },
        }

    def error_body(self, status: int, code: str, message: str) -> tuple[dict[str, Any], dict[str, str]]:
        body = {"type": "error", "error": {"type": code, "message": message}}
        return body, {"request-id": "req_simulated"}


def _segments(role: str, blocks: list[dict[str, Any]]) -> list[Segment]:
    segments = []
    for block in blocks:
        if block.get("type") == "text":
            text = block["text"]
        elif block.get("type") == "tool_result":
            inner = block.get("content", "")
            text = inner if isinstance(inner, str) else json.dumps(inner, sort_keys=True)
        else:  # tool_use and other blocks still count as prompt text
            text = json.dumps(block, sort_keys=True)
        segments.append(Segment(role, text, cache_after=bool(block.get("cache_control"))))
    return segments


PROTOCOL = AnthropicProtocol()
text_reply = PROTOCOL.text_reply
tool_reply = PROTOCOL.tool_reply
error_reply = PROTOCOL.error_reply


def overloaded_reply(message: str = "Overloaded", *, retry_after: float | None = None) -> Reply:
    """The 529 that Anthropic sends when it is overloaded."""
    return error_reply(529, message, retry_after=retry_after)


class AnthropicServer(SimServer):
    """``POST /v1/messages`` on 127.0.0.1; point ``AnthropicAPI(base_url=srv.base_url)`` at it."""

    protocol = PROTOCOL
