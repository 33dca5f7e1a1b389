"""A local simulator of the Anthropic Messages API (``POST /v1/messages``) and of the Message
Batches API (``/v1/messages/batches``: create, retrieve, results, cancel), for tests and benchmarks.

    with AnthropicServer(handler=lambda body: tool_reply("record", {"x": 1})) as srv:
        api = AnthropicAPI("claude-x", api_key="test", base_url=srv.base_url)
        ...
        srv.requests[0].body["tool_choice"]

Batch items are answered like single calls (script, faults, handler, answer, prompt cache) but
without rate limits or latency; a batch ends ``batch_delay`` seconds after it was created.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, ClassVar

from hallumeasure.testing.calls import Answer, Call, Reply, Segment
from hallumeasure.testing.server import BatchJob, Protocol, SimServer, check_tool_results, check_tool_schema

_BATCH_RE = re.compile(r"^/v1/messages/batches(?:/(?P<id>[^/]+)(?:/(?P<action>results|cancel))?)?/?$")
_CUSTOM_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


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
            segments += (
                [Segment(message["role"], content)] if isinstance(content, str) else _segments(message["role"], content)
            )
        check_tool_results(
            body["messages"],
            lambda b: b.get("id") if b.get("type") == "tool_use" else None,
            lambda b: b.get("tool_use_id") if b.get("type") == "tool_result" else None,
        )
        tools = {t["name"]: t for t in body.get("tools") or []}
        for index, tool in enumerate(tools.values()):
            check_tool_schema(index, tool.get("input_schema"))
        neutral = tuple(
            {"name": t["name"], "description": t.get("description", ""), "input_schema": t.get("input_schema") or {}}
            for t in tools.values()
        )
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
            tools=neutral,
            tools_cache=any(bool(t.get("cache_control")) for t in tools.values()),
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
    """``POST /v1/messages`` and ``/v1/messages/batches`` on 127.0.0.1; point
    ``AnthropicAPI(base_url=srv.base_url)`` at it."""

    protocol = PROTOCOL

    def serve_other(self, method: str, path: str, headers: dict[str, str], raw: bytes, body: Any) -> Reply | None:
        match = _BATCH_RE.match(path.split("?", 1)[0])
        if match is None:
            return None
        batch_id, action = match["id"], match["action"]
        job = self.batch_or_reply(method, batch_id, body, self._create, f"no message batch {batch_id}")
        if isinstance(job, Reply):
            return job
        if action == "results":
            if not job.ended():
                return error_reply(400, f"batch {batch_id} is still in progress; results are not ready")
            return Reply(200, raw=_results_jsonl(job), content_type="application/binary")
        if action == "cancel":
            job.cancel()
        return Reply(200, self._batch_json(job))

    def _create(self, body: Any) -> Reply:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return error_reply(400, "requests: a non-empty list is required")
        ids = [r.get("custom_id") for r in requests]
        if not all(isinstance(i, str) and _CUSTOM_ID_RE.match(i) for i in ids):
            return error_reply(400, "custom_id must match ^[a-zA-Z0-9_-]{1,64}$")
        if len(set(ids)) != len(ids):
            return error_reply(400, "custom_id values must be unique within a batch")
        job = self.create_batch(((r["custom_id"], r.get("params"), {}) for r in requests), prefix="msgbatch_sim")
        return Reply(200, self._batch_json(job))

    def _batch_json(self, job: BatchJob) -> dict[str, Any]:
        ended = job.ended()
        return {
            "id": job.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else ("canceling" if job.canceled else "in_progress"),
            "request_counts": job.counts(),
            "created_at": job.created_at.isoformat().replace("+00:00", "Z"),
            "expires_at": (job.created_at + timedelta(hours=24)).isoformat().replace("+00:00", "Z"),
            "ended_at": (job.created_at.isoformat().replace("+00:00", "Z") if ended else None),
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{job.id}/results" if ended else None,
        }


def _results_jsonl(job: BatchJob) -> bytes:
    lines = []
    for item in job.items:
        if item.outcome == "succeeded" and item.answer is not None:
            result: dict[str, Any] = {"type": "succeeded", "message": PROTOCOL.render(item.answer)}
        elif item.outcome == "succeeded":
            result = {"type": "succeeded", "message": item.reply.body if item.reply else {}}
        elif item.outcome == "errored":
            body = item.reply.body if item.reply is not None and isinstance(item.reply.body, dict) else {}
            result = {
                "type": "errored",
                "error": body or {"type": "error", "error": {"type": "api_error", "message": "simulated"}},
            }
        else:
            result = {"type": item.outcome}
        lines.append(json.dumps({"custom_id": item.custom_id, "result": result}) + "\n")
    return "".join(lines).encode()
