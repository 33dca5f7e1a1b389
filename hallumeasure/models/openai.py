"""OpenAI Chat Completions (and Azure OpenAI) through the ``openai`` SDK, with the SDK's own retries off.

Structured output is a forced function call in strict mode: the tool's input schema is rewritten
into the subset of JSON Schema that strict mode accepts (``strict_schema``), and the answer is read
back against the original schema, so callers see what the schema they gave allows. Keywords strict
mode refuses (``if``/``then``, ``minLength``, ``default`` ...) are left out of what is sent; the
output parser still validates every answer against the full contract.

OpenAI caches prompt prefixes on its own (1,024 tokens and longer): there are no markers to send,
and the tokens read from its cache come back as ``usage.prompt_tokens_details.cached_tokens``.

Azure OpenAI is the same wire format under other paths: ``azure_endpoint`` (with ``api_version``)
switches the client to ``AsyncAzureOpenAI``, and the model name is the deployment's name.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import openai

from hallumeasure.core.errors import CONTEXT_TOO_LONG, ConfigError, ProviderError
from hallumeasure.core.types import Usage
from hallumeasure.models.base import (
    GenerateRequest,
    GenerateResponse,
    Message,
    SDKModelAPI,
    StopReason,
    ToolCallBlock,
    ToolResultBlock,
)
from hallumeasure.models.wire import is_retryable_status, public_url, scrub_secrets

if TYPE_CHECKING:
    from hallumeasure.models.batch import BatchResults, BatchStatus

#: Where the SDK sends requests when no base URL is given.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: The Azure OpenAI API version used when neither the spec nor $OPENAI_API_VERSION names one: the first
#: generally available version with strict structured outputs and the Batch API.
DEFAULT_AZURE_API_VERSION = "2024-10-21"
#: OpenAI caches a prompt's prefix once it is at least this long (its prompt-caching guide).
OPENAI_MIN_CACHE_TOKENS = 1024

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
#: Batch states after which nothing more will happen.
_BATCH_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
#: Error codes of a batch item that never ran, so that another batch may run it.
_NOT_RUN_CODES = frozenset({"batch_expired", "batch_cancelled"})

#: JSON Schema keywords that strict mode accepts (OpenAI's "supported schemas"); the rest are dropped.
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)


class OpenAIAPI(SDKModelAPI[openai.AsyncOpenAI]):
    """``openai:<model>``, or ``openai:<deployment>?azure_endpoint=https://<resource>.openai.azure.com``.

    The key comes from $OPENAI_API_KEY (Azure: $AZURE_OPENAI_API_KEY) and is never recorded.
    ``base_url`` (or $OPENAI_BASE_URL) points the client at another OpenAI-compatible server; such
    servers get ``max_tokens``, which all of them read, where OpenAI and Azure get
    ``max_completion_tokens``. ``strict=false`` sends the schema as given, without strict mode, for
    servers that do not support it. ``reasoning_effort`` (``minimal`` ... ``high``) is sent as is to
    reasoning models; their reasoning counts against each request's ``max_tokens``.

    Batch mode (``hallumeasure.models.batch``) uploads a JSONL file and runs it through the Batch API;
    on Azure the deployment must be a batch ("global batch") deployment.
    """

    provider = "openai"
    sdk = openai
    sdk_error = openai.OpenAIError
    #: The Batch API takes up to 50,000 requests per input file.
    batch_min_requests = 1
    batch_max_requests = 50_000

    def __init__(
        self,
        model_name: str,
        *,
        base_url: str | None = None,
        azure_endpoint: str | None = None,
        api_version: str | None = None,
        strict: bool = True,
        reasoning_effort: str | None = None,
        context_window: int | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
    ) -> None:
        super().__init__(model_name, timeout=timeout, connect_timeout=connect_timeout)
        if context_window is not None and context_window < 1:
            raise ConfigError(f"{self.spec}: context_window must be a positive number of tokens")
        #: Given in the spec (``?context_window=2048``): then the server is not asked.
        self._window_given = context_window is not None
        if context_window is not None:
            self.context_window = context_window
        if azure_endpoint and base_url:
            raise ConfigError(f"{self.spec}: give either base_url or azure_endpoint, not both")
        self._azure_endpoint = azure_endpoint or None
        variable = "AZURE_OPENAI_API_KEY" if self._azure_endpoint else "OPENAI_API_KEY"
        key = os.environ.get(variable)
        if not key:
            raise ConfigError(
                f"{self.spec} needs an API key: set the {variable} environment variable (a local OpenAI-compatible "
                "server takes any value), or use the offline judge (--judge offline --extractor offline)"
            )
        self._api_key = key
        self._api_version = (
            (api_version or os.environ.get("OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION)
            if self._azure_endpoint
            else None
        )
        self._base_url = None if self._azure_endpoint else (base_url or os.environ.get("OPENAI_BASE_URL") or None)
        self.strict = strict
        self.reasoning_effort = reasoning_effort
        # Only OpenAI's own service (and Azure's) is known to cache prompts: elsewhere, no warm-up calls.
        self.min_cache_tokens = OPENAI_MIN_CACHE_TOKENS if self._hosted else None
        self.service = "Azure OpenAI" if self._azure_endpoint else "the OpenAI API"

    @property
    def _hosted(self) -> bool:
        """OpenAI's or Azure's service, not another server that speaks its API."""
        return self._azure_endpoint is not None or public_url(self._base_url or DEFAULT_BASE_URL) == DEFAULT_BASE_URL

    async def ask_window(self) -> int | None:
        """The window another OpenAI-compatible server serves the model with: llama.cpp's ``/props`` (``n_ctx`` of a
        slot), else the model's entry in ``/v1/models`` where the server puts one there (vLLM's ``max_model_len``,
        ``context_length``, ``context_window``, ``max_context_length``). OpenAI's and Azure's own models are in the
        facts table, and a window given in the spec is not asked."""
        if self._window_given or self._hosted:
            return None
        import httpx

        base = (self._base_url or DEFAULT_BASE_URL).rstrip("/")
        root = base[: -len("/v1")] if base.endswith("/v1") else base
        headers = {"Authorization": f"Bearer {self._api_key}"}
        async with httpx.AsyncClient(timeout=10.0, headers=headers) as client:
            for url, read in ((f"{root}/props", _props_window), (f"{base}/models", self._listed_window)):
                try:
                    reply = await client.get(url)
                    found = read(reply.json()) if reply.status_code == 200 else None
                except (httpx.HTTPError, ValueError):
                    found = None
                if found:
                    return found
        return None

    def _listed_window(self, body: Any) -> int | None:
        """The window of this model's entry in a ``/v1/models`` list (the only entry when none has its id)."""
        entries = [e for e in (body.get("data") or []) if isinstance(e, dict)] if isinstance(body, dict) else []
        mine = [e for e in entries if e.get("id") == self.model_name] or (entries if len(entries) == 1 else [])
        for entry in mine:
            for name in _WINDOW_FIELDS:
                if _tokens(entry.get(name)):
                    return _tokens(entry.get(name))
        return None

    def settings(self) -> dict[str, Any]:
        # The endpoint and the API version are part of the cache key: another server may answer differently.
        settings: dict[str, Any] = {"model": self.model_name, "strict": self.strict}
        if self.reasoning_effort is not None:
            settings["reasoning_effort"] = self.reasoning_effort
        if self._azure_endpoint:
            settings.update(azure_endpoint=public_url(self._azure_endpoint), api_version=self._api_version)
        else:
            settings["base_url"] = public_url(self._base_url or DEFAULT_BASE_URL)
        return settings

    def new_client(self, options: dict[str, Any]) -> openai.AsyncOpenAI:
        if self._azure_endpoint:
            return openai.AsyncAzureOpenAI(
                azure_endpoint=self._azure_endpoint, api_version=self._api_version, **options
            )
        return openai.AsyncOpenAI(base_url=self._base_url, **options)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        params = self.request_params(request)
        completion = await self._call(lambda: self._client_for_loop().chat.completions.create(**params))
        return self._response(completion.to_dict(), request)

    def request_params(self, request: GenerateRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request`` (the body of a batch line)."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
        for message in request.messages:
            messages += _wire_messages(message)
        params: dict[str, Any] = {"model": self.model_name, "messages": messages}
        params["max_completion_tokens" if self._hosted else "max_tokens"] = request.max_tokens
        if self.reasoning_effort is not None:
            params["reasoning_effort"] = self.reasoning_effort
        if request.tool is not None:
            function: dict[str, Any] = {"name": request.tool.name, "description": request.tool.description}
            if self.strict:
                function.update(parameters=strict_schema(request.tool.input_schema), strict=True)
            else:
                function["parameters"] = request.tool.input_schema
            params["tools"] = [{"type": "function", "function": function}]
            params["tool_choice"] = {"type": "function", "function": {"name": request.tool.name}}
            # Strict mode does not hold for parallel calls; one call is all that is wanted anyway.
            params["parallel_tool_calls"] = False
        return params

    def _response(self, body: Mapping[str, Any], request: GenerateRequest) -> GenerateResponse:
        """Our response from a chat completion's wire JSON (a live answer's, or a batch result line's)."""
        choices = body.get("choices") or [{}]
        choice, message = choices[0], choices[0].get("message") or {}
        text = message.get("content") or ""
        tool_input, tool_raw, call_id = None, None, None
        calls = message.get("tool_calls") or []
        if request.tool is not None and calls:
            name = request.tool.name
            call = next((c for c in calls if (c.get("function") or {}).get("name") == name), calls[0])
            arguments = (call.get("function") or {}).get("arguments") or ""
            call_id = call.get("id")
            try:
                parsed = json.loads(arguments)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                tool_input = restore_optional(parsed, request.tool.input_schema) if self.strict else parsed
            else:  # not an object (a server without strict mode passed the model's text through): repaired later
                tool_raw = arguments
        finish = choice.get("finish_reason") or ""
        stop_reason: StopReason = _STOP_REASONS.get(finish, "other")
        if message.get("refusal"):  # strict mode's refusal comes as a field of its own
            stop_reason, text = "refusal", text or str(message["refusal"])
        elif (tool_input is not None or tool_raw is not None) and stop_reason == "end_turn":
            stop_reason = "tool_use"  # a forced function call ends with "stop", not "tool_calls"
        usage = body.get("usage") or {}
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        return GenerateResponse(
            text=text,
            tool_input=tool_input,
            tool_raw=tool_raw,
            tool_call_id=call_id,
            stop_reason=stop_reason,
            usage=Usage(
                calls=1,
                # prompt_tokens counts the cached ones too; ours exclude them, as the other providers report.
                input_tokens=max(0, int(usage.get("prompt_tokens") or 0) - cached),
                output_tokens=int(usage.get("completion_tokens") or 0),
                cache_read_tokens=cached,
            ),
            model=f"{self.provider}:{body.get('model') or self.model_name}",
        )

    # --- the Batch API (see hallumeasure.models.batch) ---

    @property
    def _batch_endpoint(self) -> str:
        # Azure's batch lines and batch name the endpoint without the version prefix.
        return "/chat/completions" if self._azure_endpoint else "/v1/chat/completions"

    async def submit_batch(self, items: Sequence[tuple[str, GenerateRequest]], *, token: str) -> str:
        """Upload ``(custom id, request)`` lines as a batch input file and create a batch of it; return its id."""
        endpoint = self._batch_endpoint
        lines = [
            json.dumps(
                {"custom_id": custom_id, "method": "POST", "url": endpoint, "body": self.request_params(request)},
                separators=(",", ":"),
            )
            for custom_id, request in items
        ]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        upload = await self._call(
            lambda: self._client_for_loop().files.create(
                file=(f"hallumeasure-{token[:24]}.jsonl", data, "application/jsonl"), purpose="batch"
            )
        )
        batch = await self._call(
            lambda: self._client_for_loop().batches.create(
                input_file_id=upload.id,
                endpoint=endpoint,  # type: ignore[arg-type]  # Azure's form is not in the SDK's literal
                completion_window="24h",
                metadata={"hallumeasure_token": token[:64]},
            )
        )
        return batch.id

    async def poll_batch(self, batch_id: str) -> BatchStatus:
        from hallumeasure.models.batch import BatchStatus

        batch = await self._call(lambda: self._client_for_loop().batches.retrieve(batch_id))
        counts = batch.request_counts
        return BatchStatus(
            batch_id=batch.id,
            ended=batch.status in _BATCH_ENDED,
            total=counts.total if counts else 0,
            succeeded=counts.completed if counts else 0,
            errored=counts.failed if counts else 0,
            state=batch.status,
        )

    async def batch_results(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> BatchResults:
        """Responses (or item errors) of an ended batch, read from its output and error files."""
        client = self._client_for_loop()
        batch = await self._call(lambda: client.batches.retrieve(batch_id))
        out: BatchResults = {}
        if batch.status == "failed":  # the input file was refused as a whole: no request ran
            reasons = "; ".join(f"{e.code}: {e.message}" for e in (batch.errors.data or [])) if batch.errors else ""
            error = ProviderError(
                scrub_secrets(
                    f"{self.spec}: batch {batch_id} failed: {reasons or 'no details'}"[:600], [self._api_key]
                ),
                cause="batch_failed",
            )
            return dict.fromkeys(requests, error)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            data = await self._call(functools.partial(_file_content, client, file_id))
            for line in data.decode("utf-8", errors="replace").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # blank or cut short: its request has no result, which the batcher retries
                request = requests.get(record.get("custom_id", "")) if isinstance(record, dict) else None
                if request is not None:
                    out[record["custom_id"]] = self._batch_item(record, request)
        return out

    def _batch_item(self, record: dict[str, Any], request: GenerateRequest) -> GenerateResponse | ProviderError:
        response = record.get("response") or {}
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            return self._response(body, request)
        if isinstance(status, int):
            error = (body.get("error") if isinstance(body, dict) else None) or {}
            code = error.get("code") or error.get("type") or f"http_{status}"
            message = f"{self.spec}: batch item HTTP {status} {code}: {error.get('message') or 'no details'}"
            return ProviderError(
                scrub_secrets(message[:600], [self._api_key]),
                retryable=is_retryable_status(status),
                status=status,
                cause=str(code),
            )
        error = record.get("error") or {}
        code = str(error.get("code") or "batch_item")
        message = f"{self.spec}: batch item {code}: {error.get('message') or 'no details'}"
        return ProviderError(
            scrub_secrets(message[:600], [self._api_key]), retryable=code in _NOT_RUN_CODES, cause=code
        )

    def status_error(self, exc: openai.APIStatusError) -> tuple[str, str]:
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = body.get("message") or (exc.body if isinstance(exc.body, str) else "") or "no details"
        # llama.cpp sends the status as its code and the kind as its type: the first one that is a name is the kind.
        kind = next(
            (k for k in (exc.code, exc.type) if isinstance(k, str) and k and not k.isdigit()), type(exc).__name__
        )
        return (CONTEXT_TOO_LONG if kind in _TOO_LONG_KINDS else kind), str(detail)


#: Error kinds of a request longer than the model's window: OpenAI's code, llama.cpp's type.
_TOO_LONG_KINDS = frozenset({"context_length_exceeded", "exceed_context_size_error"})
#: Fields of a ``/v1/models`` entry that give the window a server serves the model with.
_WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


def _tokens(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _props_window(body: Any) -> int | None:
    """llama.cpp's ``/props``: the context of one slot (``default_generation_settings.n_ctx``)."""
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    return _tokens(settings.get("n_ctx")) if isinstance(settings, dict) else _tokens(body.get("n_ctx"))


async def _file_content(client: openai.AsyncOpenAI, file_id: str) -> bytes:
    return (await client.files.content(file_id)).content


def _wire_messages(message: Message) -> list[dict[str, Any]]:
    """One of our messages as chat messages: each tool result is a ``tool`` message of its own."""
    text = "".join(b.text for b in message.content if not isinstance(b, (ToolCallBlock, ToolResultBlock)))
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    if results:
        out = [{"role": "tool", "tool_call_id": b.call_id, "content": b.result} for b in results]
        return out + ([{"role": "user", "content": text}] if text else [])
    calls = [b for b in message.content if isinstance(b, ToolCallBlock)]
    if message.role == "assistant" and calls:
        return [
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.text}}
                    for c in calls
                ],
            }
        ]
    return [{"role": message.role, "content": text}]


# --- strict JSON Schema ---------------------------------------------------------------------------------


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as strict mode takes it: every object closed (``additionalProperties: false``) with
    all its properties required, an optional property made nullable instead (``restore_optional``
    drops the nulls again), ``oneOf`` read as ``anyOf``, a one-item ``allOf`` and a ``$ref`` with
    siblings inlined, and keywords outside ``STRICT_KEYWORDS`` left out."""
    out: dict[str, Any] = _strict(dict(schema), schema)
    return out


def _strict(node: Any, root: Mapping[str, Any]) -> Any:
    if not isinstance(node, Mapping):
        return node
    node = dict(node)
    if "oneOf" in node and "anyOf" not in node:
        node["anyOf"] = node.pop("oneOf")
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], Mapping):
        del node["allOf"]
        node = {**all_of[0], **node}
    if "$ref" in node and len(node) > 1:
        ref = node.pop("$ref")
        node = {**_resolve(ref, root), **node}
        return _strict(node, root)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in STRICT_KEYWORDS:
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {name: _strict(sub, root) for name, sub in value.items()}
        elif key == "items":
            out[key] = _strict(value, root)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [_strict(sub, root) for sub in value]
        else:
            out[key] = value
    if out.get("type") == "object" or "properties" in out:
        required = set(node.get("required") or ())
        properties = out.get("properties") or {}
        out["properties"] = {
            name: sub if name in required or _allows_null(sub, root) else {"anyOf": [sub, {"type": "null"}]}
            for name, sub in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


def restore_optional(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` (an answer to ``strict_schema(schema)``) without the nulls that strict mode had to put
    in place of the optional properties it left out, where ``schema`` itself does not allow null."""
    return _restore(value, schema, schema)


def _restore(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    schema = _followed(schema, root)
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, Mapping):
        required = set(schema.get("required") or ())
        out = {}
        for name, item in value.items():
            sub = properties.get(name)
            if sub is None:
                out[name] = item
            elif item is None and name not in required and not _allows_null(sub, root):
                continue
            else:
                out[name] = _restore(item, sub, root)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_restore(item, schema["items"], root) for item in value]
    return value


def _followed(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with its ``$ref`` and a one-item ``allOf`` followed."""
    for _ in range(32):  # a cycle of references is the schema's bug; stop rather than loop
        if not isinstance(schema, Mapping):
            return {}
        if "$ref" in schema:
            schema = {**_resolve(schema["$ref"], root), **{k: v for k, v in schema.items() if k != "$ref"}}
        elif isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            schema = {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}}
        else:
            return schema
    return schema if isinstance(schema, Mapping) else {}


def _allows_null(schema: Any, root: Mapping[str, Any]) -> bool:
    schema = _followed(schema, root)
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in (schema.get("enum") or ()) or ("const" in schema and schema["const"] is None):
        return True
    return any(_allows_null(sub, root) for sub in (schema.get("anyOf") or schema.get("oneOf") or ()))


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    if not ref.startswith("#/"):
        raise ConfigError(f"tool schema: only local references (#/...) are supported, not {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        raise ConfigError(f"tool schema: reference {ref!r} points at nothing")
    return node
