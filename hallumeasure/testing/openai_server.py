"""A local simulator of an OpenAI-compatible chat server (``POST /v1/chat/completions``), the API
that vLLM, llama.cpp's server, llama-cpp-python, Ollama and TGI offer, and of OpenAI's own service
around it: strict function schemas, automatic prompt caching (``prompt_tokens_details.cached_tokens``),
Azure OpenAI's deployment paths (``/openai/deployments/<name>/chat/completions?api-version=...``),
and the Files and Batch APIs (``/v1/files``, ``/v1/batches``; on Azure ``/openai/files`` and
``/openai/batches``), for tests and benchmarks.

    with OpenAIServer(script=[raw_tool_reply("record_verdict", '```json\\n{"label": "supported"}\\n```')]) as srv:
        chat = ChatOpenAI(model="qwen2.5-0.5b-instruct", base_url=srv.base_url, api_key="unused")
        ...
        srv.requests[0].body["max_completion_tokens"]

Besides the shared behaviour (script, handler, faults, limits, latency; see ``hallumeasure.testing``),
it checks what such servers check (an object schema for each function's parameters, a forced
function that exists), and what OpenAI checks of a ``"strict": true`` function (every object closed
and all its properties required, no keyword strict mode refuses). With ``prompt_cache`` every message
boundary is a cache breakpoint, as OpenAI caches the longest prefix it has seen without markers; the
cached tokens are reported as OpenAI does, inside ``prompt_tokens``. It has helpers for what
open-weight models send back: ``raw_tool_reply`` (tool-call arguments as written, valid JSON or
not) and ``text_reply`` (a text tool call such as Hermes' ``<tool_call>`` block is plain text on
this wire).
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import itertools
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar, Literal
from urllib.parse import parse_qs, urlsplit

from hallumeasure.testing.calls import Answer, Call, Reply, Segment, Tokens
from hallumeasure.testing.server import BatchJob, Protocol, SimServer

_AZURE_CHAT_RE = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions/?$")
_FILES_RE = re.compile(r"^(?:/v1|/openai)/files(?:/(?P<id>[^/]+)(?:/(?P<content>content))?)?/?$")
_BATCHES_RE = re.compile(r"^(?:/v1|/openai)/batches(?:/(?P<id>[^/]+)(?:/(?P<cancel>cancel))?)?/?$")
#: JSON Schema keywords that OpenAI refuses in a strict function's parameters.
STRICT_REFUSED = frozenset(
    {
        "allOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "default",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
        "unevaluatedProperties",
    }
)

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
        if method != "POST":
            return None
        if path.rstrip("/") in ("/v1/chat/completions", "/chat/completions"):
            return {}
        azure = _AZURE_CHAT_RE.match(path)
        return {"deployment": azure["deployment"]} if azure else None

    def parse(self, body: Any, params: Mapping[str, str]) -> Call:
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        for key in ("model", "messages"):
            if key not in body:
                raise ValueError(f"{key}: Field required")
        segments: list[Segment] = []
        for message in body["messages"]:
            segments += _segments(message)
        # OpenAI caches without markers: any message boundary may end a cached prefix.
        segments = [Segment(s.role, s.text, cache_after=True) for s in segments]
        tools: dict[str, dict[str, Any]] = {}
        for tool in body.get("tools") or []:
            function = tool.get("function") or {}
            parameters = function.get("parameters") or {"type": "object", "properties": {}}
            if parameters.get("type") != "object":
                raise ValueError(
                    f"Invalid schema for function '{function.get('name')}': schema must be a JSON "
                    f"Schema of 'type: \"object\"', got 'type: \"{parameters.get('type')}\"'."
                )
            if function.get("strict"):
                check_strict_schema(function["name"], parameters)
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
            tools_cache=bool(tools),
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


def check_strict_schema(name: str, schema: dict[str, Any]) -> None:
    """Refuse a strict function's parameters as OpenAI does: the root is an object, not ``anyOf``; every
    object has ``additionalProperties: false`` and requires all its properties; no refused keyword."""
    if "anyOf" in schema:
        raise ValueError(f"Invalid schema for function '{name}': schema must not be of type 'anyOf' at the root.")
    _check_strict(name, schema, ())


def _check_strict(name: str, node: Any, context: tuple[str, ...]) -> None:
    if not isinstance(node, dict):
        return
    prefix = f"Invalid schema for function '{name}': In context={context!r}, "
    for key in node:
        if key in STRICT_REFUSED:
            raise ValueError(f"{prefix}'{key}' is not permitted.")
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties") is not False:
            raise ValueError(f"{prefix}'additionalProperties' is required to be supplied and to be false.")
        required = node.get("required") or []
        missing = [key for key in node.get("properties") or {} if key not in required]
        if missing:
            raise ValueError(
                f"{prefix}'required' is required to be supplied and to be an array including every key in "
                f"properties. Missing '{missing[0]}'."
            )
    for key in ("properties", "$defs", "definitions"):
        for sub_name, sub in (node.get(key) or {}).items():
            _check_strict(name, sub, (*context, key, sub_name))
    if "items" in node:
        _check_strict(name, node["items"], (*context, "items"))
    for index, sub in enumerate(node.get("anyOf") or []):
        _check_strict(name, sub, (*context, "anyOf", str(index)))


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


WindowRule = Literal["llama.cpp", "vllm"]


class OpenAIServer(SimServer):
    """``POST /v1/chat/completions`` (and Azure's deployment path), ``/v1/files`` and ``/v1/batches`` on
    127.0.0.1; point ``ChatOpenAI(base_url=srv.base_url)`` or ``AsyncAzureOpenAI(azure_endpoint=srv.url)``
    at it. ``srv.files`` holds the uploaded and written files (id -> metadata with its ``data``).

    ``context_window`` serves the model with a window of that many tokens (the simulator's count: the tool
    definitions and every message), as a local server started with ``-c``/``--max-model-len`` does, and says
    so at ``GET /props`` (llama.cpp's ``default_generation_settings.n_ctx``) and in its ``GET /v1/models``
    entry (vLLM's ``max_model_len``); ``list_window=False`` keeps it out of both. ``window_rule`` is how a
    request is held to it: ``"llama.cpp"`` refuses a prompt longer than the window with llama.cpp's
    ``exceed_context_size_error`` and stops the answer where the window ends; ``"vllm"`` refuses a prompt
    whose ``max_tokens`` do not fit beside it, with vLLM's message. ``srv.window_refusals`` lists the token
    counts (prompt, max_tokens) of the requests it refused."""

    protocol = PROTOCOL

    def __init__(
        self,
        *args: Any,
        context_window: int | None = None,
        window_rule: WindowRule = "llama.cpp",
        list_window: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.context_window = context_window
        self.window_rule = window_rule
        self.list_window = list_window
        self.window_refusals: list[tuple[int, int | None]] = []
        #: The paths of the ``GET /props`` and ``GET /v1/models`` requests, in order.
        self.fact_requests: list[str] = []
        self.files: dict[str, dict[str, Any]] = {}
        self._file_ids = itertools.count(1)
        self._files_lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The API root as OpenAI clients take it (with ``/v1``)."""
        return f"{self.url}/v1"

    def answer_call(self, call: Call, body: Any, *, batch_id: str | None = None) -> Reply:
        """Hold the call to ``context_window`` (refused, or its answer stopped where the window ends), then answer."""
        window = self.context_window
        if window is None or batch_id is not None:
            return super().answer_call(call, body, batch_id=batch_id)
        prompt = sum(piece.tokens for piece in call.pieces())
        refused = self._over_window(prompt, call.max_tokens, window)
        if refused is not None:
            with self._lock:
                self.window_refusals.append((prompt, call.max_tokens))
            return refused
        room = window - prompt
        if call.max_tokens is None or call.max_tokens > room:
            call = replace(call, max_tokens=room)  # generation stops where the window is full
        return super().answer_call(call, body)

    def _over_window(self, prompt: int, max_tokens: int | None, window: int) -> Reply | None:
        if self.window_rule == "vllm":
            asked = prompt + (max_tokens or 0)
            if asked <= window:
                return None
            message = (
                f"This model's maximum context length is {window} tokens. However, you requested {asked} tokens "
                f"({prompt} in the messages, {max_tokens or 0} in the completion). Please reduce the length of the "
                "messages or completion."
            )
            return Reply(400, {"object": "error", "message": message, "type": "BadRequestError", "code": 400})
        if prompt < window:
            return None
        message = f"request ({prompt} tokens) exceeds the available context size ({window} tokens), try increasing it"
        error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
        return Reply(400, {"error": {**error, "n_prompt_tokens": prompt, "n_ctx": window}})

    def _server_facts(self, path: str) -> Reply | None:
        """``GET /props`` (llama.cpp) and ``GET /v1/models``, with the window where ``list_window``."""
        window = self.context_window if self.list_window else None
        if path.rstrip("/") == "/props":
            settings = {"n_ctx": window} if window is not None else {}
            return Reply(200, {"default_generation_settings": settings, "total_slots": 1})
        if path.rstrip("/") in ("/v1/models", "/models"):
            entry: dict[str, Any] = {"id": "simulated-open-model", "object": "model", "owned_by": "simulator"}
            if window is not None:
                entry["max_model_len"] = window
            return Reply(200, {"object": "list", "data": [entry]})
        return None

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        """``GET /props`` and ``GET /v1/models`` are answered here and kept apart (``srv.fact_requests``), so that
        ``srv.requests`` stays the requests a run makes of the model."""
        facts = self._server_facts(urlsplit(path).path) if method == "GET" else None
        if facts is None:
            return super().respond(method, path, headers, raw)
        with self._lock:
            self.fact_requests.append(urlsplit(path).path)
        return facts

    def serve_other(self, method: str, path: str, headers: dict[str, str], raw: bytes, body: Any) -> Reply | None:
        parts = urlsplit(path)
        if parts.path.startswith("/openai/") and not parse_qs(parts.query).get("api-version"):
            # Azure answers a request without an API version as if the path did not exist.
            return error_reply(404, "Resource not found (the api-version query parameter is missing)")
        files = _FILES_RE.match(parts.path)
        if files is not None:
            return self._files(method, files["id"], bool(files["content"]), headers, raw)
        batches = _BATCHES_RE.match(parts.path)
        if batches is not None:
            return self._batches(method, batches["id"], bool(batches["cancel"]), body)
        return None

    # --- the Files API ---

    def add_file(self, data: bytes, *, purpose: str, filename: str) -> dict[str, Any]:
        """Store a file as the Files API would; return its metadata (``data`` included)."""
        with self._files_lock:
            file_id = f"file-sim{next(self._file_ids):06d}{hashlib.sha256(data).hexdigest()[:8]}"
            meta = {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": 0,
                "filename": filename,
                "purpose": purpose,
                "status": "processed",
                "data": data,
            }
            self.files[file_id] = meta
        return meta

    def _files(self, method: str, file_id: str | None, content: bool, headers: dict[str, str], raw: bytes) -> Reply:
        if file_id is None:
            if method != "POST":
                return error_reply(405, "listing files is not simulated")
            form = _multipart(headers.get("content-type", ""), raw)
            if "file" not in form or "purpose" not in form:
                return error_reply(400, "file and purpose are required (multipart/form-data)")
            filename, data = form["file"]
            meta = self.add_file(data, purpose=form["purpose"][1].decode(), filename=filename or "upload")
            return Reply(200, _public(meta))
        found = self.files.get(file_id)
        if found is None:
            return error_reply(404, f"No such File object: {file_id}")
        if content:
            return Reply(200, raw=found["data"], content_type="application/octet-stream")
        return Reply(200, _public(found))

    # --- the Batch API ---

    def _batches(self, method: str, batch_id: str | None, cancel: bool, body: Any) -> Reply:
        job = self.batch_or_reply(method, batch_id, body, self._create, f"No batch found with id '{batch_id}'.")
        if isinstance(job, Reply):
            return job
        if cancel:
            job.cancel()
        return Reply(200, self._batch_json(job))

    def _create(self, body: Any) -> Reply:
        if not isinstance(body, dict) or not isinstance(body.get("input_file_id"), str):
            return error_reply(400, "input_file_id: Field required")
        endpoint = body.get("endpoint")
        if endpoint not in ("/v1/chat/completions", "/chat/completions"):
            return error_reply(400, f"endpoint {endpoint!r} is not supported by the simulator")
        if body.get("completion_window") != "24h":
            return error_reply(400, "completion_window must be '24h'")
        source = self.files.get(body["input_file_id"])
        if source is None or source["purpose"] != "batch":
            return error_reply(400, f"input file {body['input_file_id']} is not a batch input file")
        items: list[tuple[str, Any, dict[str, str]]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        for number, line in enumerate(source["data"].decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                custom_id, url = record["custom_id"], record["url"]
                if record.get("method") != "POST" or url != endpoint:
                    raise ValueError(f"method must be POST and url must be {endpoint}")
                if custom_id in seen:
                    raise ValueError(f"duplicate custom_id {custom_id!r}")
            except (ValueError, KeyError, TypeError) as exc:
                errors.append({"code": "invalid_request", "line": number, "message": str(exc), "param": None})
                continue
            seen.add(custom_id)
            items.append((custom_id, record.get("body"), {}))
        meta = {"endpoint": endpoint, "input_file_id": body["input_file_id"], "metadata": body.get("metadata")}
        if errors:  # OpenAI validates the whole file first, and runs none of it if a line is wrong
            job = self.create_batch((), prefix="batch_sim", meta={**meta, "errors": errors})
        else:
            job = self.create_batch(items, prefix="batch_sim", meta=meta)
        return Reply(200, self._batch_json(job))

    def _batch_json(self, job: BatchJob) -> dict[str, Any]:
        counts = job.counts()
        failed_batch = bool(job.meta.get("errors"))
        if failed_batch:
            status = "failed"
        elif job.canceled:
            status = "cancelled"
        else:
            status = "completed" if job.ended() else "in_progress"
        if job.ended() and not failed_batch and "output_file_id" not in job.meta:
            self._write_results(job)
        return {
            "id": job.id,
            "object": "batch",
            "endpoint": job.meta["endpoint"],
            "errors": {"object": "list", "data": job.meta["errors"]} if failed_batch else None,
            "input_file_id": job.meta["input_file_id"],
            "completion_window": "24h",
            "status": status,
            "output_file_id": job.meta.get("output_file_id"),
            "error_file_id": job.meta.get("error_file_id"),
            "created_at": int(job.created_at.timestamp()),
            "request_counts": {
                "total": len(job.items),
                "completed": counts["succeeded"],
                "failed": counts["errored"] + counts["expired"] + counts["canceled"],
            },
            "metadata": job.meta.get("metadata"),
        }

    def _write_results(self, job: BatchJob) -> None:
        """The output file (answered requests) and the error file (the rest), as the Batch API writes them."""
        output: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for number, item in enumerate(job.items):
            line: dict[str, Any] = {"id": f"batch_req_sim{number:06d}", "custom_id": item.custom_id, "error": None}
            reply = item.reply
            if item.outcome in ("succeeded", "errored") and reply is not None:
                answer_body = PROTOCOL.render(item.answer) if item.answer is not None else reply.body
                line["response"] = {"status_code": reply.status, "request_id": "req_sim", "body": answer_body}
                (output if item.outcome == "succeeded" else failed).append(line)
            else:
                code = "batch_cancelled" if item.outcome == "canceled" else "batch_expired"
                line["response"] = None
                line["error"] = {"code": code, "message": f"This request was not run: the batch {item.outcome}."}
                failed.append(line)
        for key, lines in (("output_file_id", output), ("error_file_id", failed)):
            data = "".join(json.dumps(line) + "\n" for line in lines).encode()
            job.meta[key] = (
                self.add_file(data, purpose="batch_output", filename=f"{job.id}_{key[:-8]}.jsonl")["id"]
                if lines
                else None
            )


def _public(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k != "data"}


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (file name, bytes)."""
    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    message = parser.parsebytes(b"content-type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        return fields
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if name:
            fields[str(name)] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return fields
