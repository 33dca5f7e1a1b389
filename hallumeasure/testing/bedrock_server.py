"""A local simulator of the Bedrock Converse API (``POST /model/{modelId}/converse``), of Bedrock
batch inference (``/model-invocation-job``, Converse-format records) and of the S3 calls that batch
inference needs, all on one address, for tests and benchmarks.

    with BedrockServer(script=[throttling_reply(retry_after=0.01)]) as srv:
        api = BedrockAPI("anthropic.claude-x", region_name="us-east-1", endpoint_url=srv.endpoint_url)

boto3 needs credentials to sign requests; any dummy values do (the simulator does not check them).
A batch job reads ``{"recordId", "modelInput"}`` lines from the ``.jsonl`` objects under its input
URI, answers each like a Converse call (without rate limits or latency) and, once it has ended,
writes ``<output URI>/<job id>/<input file>.out`` lines ``{"recordId", "modelInput", "modelOutput"}``
or ``{..., "error": {"errorCode", "errorMessage"}}`` and a ``manifest.json.out`` with the counts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar
from urllib.parse import unquote

from hallumeasure.testing.calls import Answer, Call, Reply, Segment
from hallumeasure.testing.s3 import ObjectStore, is_s3_request, jsonl, split_s3_uri
from hallumeasure.testing.server import BatchJob, Protocol, SimServer, check_tool_results, check_tool_schema

_PATH_RE = re.compile(r"^/model/(?P<model>[^/]+)/converse$")
_JOB_RE = re.compile(r"^/model-invocation-job(?:/(?P<id>[^/]+)(?:/(?P<action>stop))?)?/?$")
ACCOUNT = "123456789012"
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
    overloaded_status = 503  # Bedrock has no 529: an overloaded model answers ServiceUnavailableException
    sends_retry_after = False  # Bedrock's ThrottlingException comes without a retry-after header

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
        check_tool_results(
            body["messages"],
            lambda b: (b.get("toolUse") or {}).get("toolUseId"),
            lambda b: (b.get("toolResult") or {}).get("toolUseId"),
        )
        config = body.get("toolConfig") or {}
        tools = {t["toolSpec"]["name"]: t["toolSpec"] for t in config.get("tools", []) if "toolSpec" in t}
        for index, tool in enumerate(tools.values()):
            check_tool_schema(index, tool["inputSchema"]["json"])  # Claude models on Bedrock apply Anthropic's rule
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
            tools=tuple(
                {"name": t["name"], "description": t.get("description", ""), "input_schema": t["inputSchema"]["json"]}
                for t in tools.values()
            ),
            tools_cache=any("cachePoint" in t for t in config.get("tools", [])),
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


def throttling_reply(
    message: str = "Too many requests, please wait before trying again.", *, retry_after: float | None = None
) -> Reply:
    """The 429 ThrottlingException that Bedrock sends when a quota is exceeded."""
    return error_reply(429, message, code="ThrottlingException", retry_after=retry_after)


class BedrockServer(SimServer):
    """``POST /model/{modelId}/converse``, ``/model-invocation-job`` and S3 on 127.0.0.1; pass
    ``endpoint_url=srv.endpoint_url`` to boto3 (``bedrock-runtime``, ``bedrock`` and ``s3`` clients)."""

    protocol = PROTOCOL

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The simulated S3: batch inputs are read from it and outputs written to it.
        self.s3 = ObjectStore()
        self._tokens: dict[str, str] = {}  # clientRequestToken -> job id (CreateModelInvocationJob is idempotent)

    def serve_other(self, method: str, path: str, headers: dict[str, str], raw: bytes, body: Any) -> Reply | None:
        if is_s3_request(headers):
            return self.s3.handle(method, path, headers, raw)
        match = _JOB_RE.match(path.split("?", 1)[0])
        if match is None:
            return None
        if match["id"] is None:
            return self._create_job(body) if method == "POST" else error_reply(400, "listing jobs is not simulated")
        job_id = unquote(match["id"]).rsplit("/", 1)[-1]  # an ARN or a bare job id
        job = self.find_batch(job_id)
        if job is None:
            return error_reply(404, f"no model invocation job {job_id}", code="ResourceNotFoundException")
        if match["action"] == "stop":
            job.cancel()
            return Reply(200, {})
        return Reply(200, self._job_json(job))

    def _create_job(self, body: Any) -> Reply:
        if not isinstance(body, dict):
            return error_reply(400, "the body must be a JSON object")
        for key in ("jobName", "roleArn", "modelId", "inputDataConfig", "outputDataConfig"):
            if key not in body:
                return error_reply(400, f"{key}: Field required")
        if body.get("modelInvocationType", "InvokeModel") != "Converse":
            return error_reply(400, "the simulator runs Converse-format jobs only (modelInvocationType=Converse)")
        token = body.get("clientRequestToken")
        if token and token in self._tokens:
            return Reply(200, {"jobArn": self._arn(self._tokens[token])})
        try:
            bucket, prefix = split_s3_uri(body["inputDataConfig"]["s3InputDataConfig"]["s3Uri"])
            split_s3_uri(body["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"])
        except (KeyError, ValueError) as exc:
            return error_reply(400, f"bad data config: {exc}")
        keys = [k for k in self.s3.keys(bucket, prefix) if k.endswith(".jsonl")]
        if not keys:
            return error_reply(400, f"no .jsonl input under s3://{bucket}/{prefix}")
        items, sources = [], []
        for key in keys:
            for line in (self.s3.get(bucket, key) or b"").decode("utf-8").splitlines():
                if not line.strip():
                    continue
                record = json.loads(line)
                record_id = record.get("recordId") or hashlib.sha256(line.encode()).hexdigest()[:11]
                items.append((record_id, record.get("modelInput"), {"model": body["modelId"]}))
                sources.append(key)
        job = self.create_batch(items, prefix="", meta={"request": body, "sources": sources, "written": False})
        if token:
            self._tokens[token] = job.id
        return Reply(200, {"jobArn": self._arn(job.id)})

    @staticmethod
    def _arn(job_id: str) -> str:
        return f"arn:aws:bedrock:us-east-1:{ACCOUNT}:model-invocation-job/{job_id}"

    def _job_json(self, job: BatchJob) -> dict[str, Any]:
        request = job.meta["request"]
        ended = job.ended()
        counts = job.counts()
        if ended and not job.meta["written"]:
            self._write_outputs(job)
        if not ended:
            status = "InProgress" if job.polls > 1 else "Submitted"
        elif job.canceled:
            status = "Stopped"
        else:
            status = "Completed" if counts["errored"] + counts["expired"] == 0 else "PartiallyCompleted"
        now = datetime.now(UTC).isoformat()
        return {
            "jobArn": self._arn(job.id),
            "jobName": request["jobName"],
            "modelId": request["modelId"],
            "roleArn": request["roleArn"],
            "status": status,
            "submitTime": job.created_at.isoformat(),
            "lastModifiedTime": now,
            **({"endTime": now} if ended else {}),
            "inputDataConfig": request["inputDataConfig"],
            "outputDataConfig": request["outputDataConfig"],
            "modelInvocationType": "Converse",
            "totalRecordCount": len(job.items),
            "processedRecordCount": len(job.items) if ended else 0,
            "successRecordCount": counts["succeeded"],
            "errorRecordCount": counts["errored"] + counts["expired"],
        }

    def _write_outputs(self, job: BatchJob) -> None:
        bucket, prefix = split_s3_uri(job.meta["request"]["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"])
        base = f"{prefix.rstrip('/')}/{job.id}/" if prefix.strip("/") else f"{job.id}/"
        by_source: dict[str, list[dict[str, Any]]] = {}
        input_tokens = output_tokens = 0
        for item, source in zip(job.items, job.meta["sources"], strict=True):
            line: dict[str, Any] = {"recordId": item.custom_id, "modelInput": item.body}
            if item.outcome == "succeeded" and item.answer is not None:
                line["modelOutput"] = PROTOCOL.render(item.answer)
                input_tokens += item.answer.usage.input_tokens
                output_tokens += item.answer.usage.output_tokens
            else:
                status = item.reply.status if item.reply is not None else 500
                message = (
                    (item.reply.body or {}).get("message") if item.reply and isinstance(item.reply.body, dict) else None
                )
                line["error"] = {
                    "errorCode": status if item.outcome == "errored" else 408,
                    "errorMessage": message or f"record {item.outcome}",
                }
            by_source.setdefault(source.rsplit("/", 1)[-1], []).append(line)
        for name, lines in by_source.items():
            self.s3.put(bucket, f"{base}{name}.out", jsonl(lines))
        counts = job.counts()
        manifest = {
            "totalRecordCount": len(job.items),
            "processedRecordCount": len(job.items),
            "successRecordCount": counts["succeeded"],
            "errorRecordCount": len(job.items) - counts["succeeded"],
            "inputTokenCount": input_tokens,
            "outputTokenCount": output_tokens,
        }
        self.s3.put(bucket, f"{base}manifest.json.out", json.dumps(manifest).encode())
        job.meta["written"] = True
