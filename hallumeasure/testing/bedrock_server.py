"""A local simulator of the Bedrock Converse API (``POST /model/{modelId}/converse``), for tests and benchmarks.

    with BedrockServer(script=[throttling_reply(retry_after=0.01)]) as srv:
        api = BedrockAPI("anthropic.claude-x", region_name="us-east-1", endpoint_url=srv.endpoint_url)

boto3 needs credentials to sign requests; any dummy values do (the simulator does not check them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import unquote

from hallumeasure.testing.server import Answer, Call, Protocol, Reply, Segment, SimServer

_PATH_RE = re.compile(r"^/model/(?P<model>[^/]+)/converse$")
_STOP_REASONS = {"refusal": "content_filtered"}


class BedrockProtocol(Protocol):
    name = "bedrock"
    error_codes: ClassVar[Mapping[int, str]] = {
        400: "ValidationException",
        403: "AccessDeniedException",
        404: "ResourceNotFoundException",
        408: "ModelTimeoutException",
        424: "ModelErrorException",
        429: "ThrottlingException",
        500: "InternalServerException",
        503: "ServiceUnavailableException",
    }
    default_error_code = "InternalServerException"

    def route(self, method: str, path: str) -> dict[str, str] | None:
        match = _PATH_RE.match(path) if method == "POST" else None
        return {"model": unquote(match["model"])} if match else None

    def parse(self, body: Any, params: Mapping[str, str]) -> Call:
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        if "messages" not in body:
            raise ValueError("messages: Field required")
        segments: list[Segment] = []
        _add_segments(segments, "system", body.get("system") or [])
        for message in body["messages"]:
            if message["role"] not in ("user", "assistant"):
                raise ValueError(f"messages: unexpected role {message['role']!r}")
            _add_segments(segments, message["role"], message["content"])
        config = body.get("toolConfig") or {}
        tools = {t["toolSpec"]["name"]: t["toolSpec"] for t in config.get("tools", [])}
        choice = config.get("toolChoice") or {}
        if "tool" in choice and choice["tool"]["name"] not in tools:
            raise ValueError(f"toolChoice names an unknown tool {choice['tool']['name']!r}")
        name = choice["tool"]["name"] if "tool" in choice else next(iter(tools), None)
        spec = tools.get(name) if name else None
        tool = None
        if spec is not None:
            tool = {
                "name": spec["name"],
                "description": spec.get("description", ""),
                "input_schema": spec["inputSchema"]["json"],
            }
        return Call(
            model=params["model"],
            segments=tuple(segments),
            tool=tool,
            forced="tool" in choice or "any" in choice,
            max_tokens=(body.get("inferenceConfig") or {}).get("maxTokens"),
        )

    def render(self, answer: Answer) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if answer.text:
            content.append({"text": answer.text})
        if answer.tool_name is not None:
            content.append(
                {
                    "toolUse": {
                        "toolUseId": f"tooluse_sim_{answer.digest}",
                        "name": answer.tool_name,
                        "input": answer.tool_input or {},
                    }
                }
            )
        usage = answer.usage
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": _STOP_REASONS.get(answer.stop_reason, answer.stop_reason),
            "usage": {
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "totalTokens": usage.input_tokens
                + usage.output_tokens
                + usage.cache_read_tokens
                + usage.cache_write_tokens,
                "cacheReadInputTokens": usage.cache_read_tokens,
                "cacheWriteInputTokens": usage.cache_write_tokens,
            },
            "metrics": {"latencyMs": 0},
        }

    def error_body(self, status: int, code: str, message: str) -> tuple[dict[str, Any], dict[str, str]]:
        # botocore reads the error code from this header, as AWS sends it.
        headers = {
            "x-amzn-errortype": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "x-amzn-requestid": "00000000-0000-0000-0000-000000000000",
        }
        return {"message": message}, headers


def _add_segments(segments: list[Segment], role: str, blocks: list[dict[str, Any]]) -> None:
    for block in blocks:
        if "cachePoint" in block:
            # A cache point closes the prefix that ends with the block before it.
            if segments:
                last = segments[-1]
                segments[-1] = Segment(last.role, last.text, cache_after=True)
            continue
        text = block["text"] if "text" in block else json.dumps(block, sort_keys=True)
        segments.append(Segment(role, text))


PROTOCOL = BedrockProtocol()
text_reply = PROTOCOL.text_reply
tool_reply = PROTOCOL.tool_reply
error_reply = PROTOCOL.error_reply


def throttling_reply(message: str = "Too many requests, please wait before trying again.", *,
                     retry_after: float | None = None) -> Reply:
    """The 429 ThrottlingException that Bedrock sends when a quota is exceeded."""
    return error_reply(429, message, code="ThrottlingException", retry_after=retry_after)


class BedrockServer(SimServer):
    """``POST /model/{modelId}/converse`` on 127.0.0.1; pass ``endpoint_url=srv.endpoint_url`` to boto3."""

    protocol = PROTOCOL
