"""Amazon Bedrock's Converse API through boto3, with botocore's own retries off.

boto3 is blocking, so each call runs in a thread of its own off the event loop, at most
``max_workers`` at once. The threads are daemon threads: a call that ``Model`` gave up on at its
deadline keeps its thread only until botocore's read timeout (set from the same deadline by
``bound``), and never holds the process at exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    ProfileNotFound,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from hallumeasure.core.errors import ConfigError, ProviderError
from hallumeasure.core.types import Usage
from hallumeasure.models.base import (
    Block,
    GenerateRequest,
    GenerateResponse,
    ModelAPI,
    ToolCallBlock,
    ToolResultBlock,
    deadline_starts_now,
    deadline_waits,
)
from hallumeasure.models.wire import public_url

if TYPE_CHECKING:
    from hallumeasure.models.batch import BatchResults, BatchStatus

_STOP_REASONS = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "refusal",
    "content_filtered": "refusal",
    # Cut short by the context window: as truncated as max_tokens for a caller.
    "model_context_window_exceeded": "max_tokens",
}
RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "InternalServerException",
        "ModelTimeoutException",
    }
)
NOT_RETRYABLE_CODES = frozenset({"ValidationException", "AccessDeniedException", "ResourceNotFoundException"})
#: Defaults when neither the constructor nor ``Model`` (through ``bound``) says otherwise.
DEFAULT_WORKERS, DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT = 8, 10.0, 120.0
#: Batch inference job states after which nothing more will happen.
_JOB_ENDED = frozenset({"Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"})


class BedrockAPI(ModelAPI):
    """``bedrock:<model id or inference profile>``.

    Credentials come from the usual AWS chain, a named ``profile``, or a ready ``session`` (which
    also lets many providers share botocore's parsed service models).

    Batch mode (``hallumeasure.models.batch``) runs Converse-format batch inference jobs: records are
    written to ``batch_s3_uri`` (``s3://bucket/prefix``), the job runs as ``batch_role_arn`` and
    writes its output next to them. Bedrock takes at least ``batch_min_requests`` records per job
    (100 by default, as its quota says); smaller groups are sent on demand. The S3 and Bedrock
    control-plane clients use ``endpoint_url`` too when it is given (a simulator serves all three),
    else boto3's defaults (including ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL_BEDROCK``).
    """

    provider = "bedrock"
    batch_max_requests = 50_000

    def __init__(
        self,
        model_name: str,
        *,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        profile: str | None = None,
        session: boto3.Session | None = None,
        max_workers: int | None = None,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        batch_s3_uri: str | None = None,
        batch_role_arn: str | None = None,
        batch_min_requests: int = 100,
    ) -> None:
        super().__init__(model_name)
        self.batch_s3_uri = batch_s3_uri
        self.batch_role_arn = batch_role_arn
        self.batch_min_requests = batch_min_requests
        # A Bedrock-compatible endpoint (a gateway, a simulator) from the environment when not given.
        self._endpoint_url = endpoint_url or os.environ.get("HALLUMEASURE_BEDROCK_ENDPOINT") or None
        self._batch_clients: tuple[Any, Any] | None = None
        if session is not None and profile is not None:
            raise ConfigError(f"{self.spec}: pass either an AWS profile or a boto3 session, not both")
        try:
            self._session = session or (boto3.Session(profile_name=profile) if profile else boto3.Session())
        except ProfileNotFound as exc:
            raise ConfigError(f"{self.spec}: AWS profile {profile!r} not found ({exc})") from None
        self._check_credentials()
        self.region_name = region_name or self._session.region_name or "us-east-1"
        # Given here, they win over what ``bound`` derives from the wrapper's timeout and concurrency.
        self._fixed_workers, self._fixed_connect, self._fixed_read = max_workers, connect_timeout, read_timeout
        self._max_workers = max_workers or DEFAULT_WORKERS
        self._connect_timeout = connect_timeout or DEFAULT_CONNECT_TIMEOUT
        self._read_timeout = read_timeout or DEFAULT_READ_TIMEOUT
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._client = self._runtime_client()

    def _config(self) -> Config:
        return Config(
            retries={"total_max_attempts": 1, "mode": "standard"},  # the Model wrapper is the only layer that retries
            connect_timeout=self._connect_timeout,
            read_timeout=self._read_timeout,
            max_pool_connections=self._max_workers,
        )

    def _runtime_client(self) -> Any:
        try:
            return self._session.client(
                "bedrock-runtime", region_name=self.region_name, endpoint_url=self._endpoint_url, config=self._config()
            )
        except (NoRegionError, ValueError) as exc:
            raise ConfigError(f"{self.spec}: cannot create a Bedrock client: {exc}") from None

    def bound(self, *, timeout: float, max_concurrency: int) -> None:
        """botocore's connect and read timeouts from the wrapper's deadline, and room for twice
        ``max_concurrency`` calls: the live ones, and as many abandoned at their deadline that botocore
        has not closed yet (each for at most one read timeout), so that a retry never waits for a thread."""
        self._max_workers = self._fixed_workers or 2 * max_concurrency
        self._connect_timeout = self._fixed_connect or min(DEFAULT_CONNECT_TIMEOUT, timeout)
        self._read_timeout = self._fixed_read or timeout
        self._client.close()
        self._client = self._runtime_client()
        self._slots = weakref.WeakKeyDictionary()

    def _check_credentials(self) -> None:
        """Fail now, as a missing Anthropic key does, rather than as one error row per sample later.

        botocore resolves the chain (environment, profile files, SSO, instance role) once and
        caches the result in the session, so the first call does not pay for it again. A Bedrock
        API key (``AWS_BEARER_TOKEN_BEDROCK``) replaces signing credentials, so it is enough.
        """
        if os.environ.get("AWS_BEARER_TOKEN_BEDROCK"):
            return
        try:
            credentials = self._session.get_credentials()
        except (BotoCoreError, OSError) as exc:  # a broken profile, an expired SSO token, a failing credential_process
            raise ConfigError(f"{self.spec}: AWS credentials cannot be loaded: {type(exc).__name__}: {exc}") from None
        if credentials is None:
            raise ConfigError(
                f"{self.spec}: no AWS credentials found: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (or run 'aws configure'), or use the offline judge"
            )

    def settings(self) -> dict[str, Any]:
        # The endpoint is part of the cache key: another region or a private endpoint may answer differently.
        settings: dict[str, Any] = {"model": self.model_name, "region": self.region_name}
        if self._endpoint_url:
            settings["endpoint_url"] = public_url(self._endpoint_url)
        return settings

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        reply = await self._run(functools.partial(self._client.converse, **self.request_params(request)))
        if not _is_converse_answer(reply):
            # botocore reads a 200 body that is not JSON (cut short on the way) as an empty result
            # rather than an error: that is no answer, not an empty one.
            raise self._unreadable_reply()
        return self._response(reply, request)

    async def _run(self, call: Callable[[], Any]) -> Any:
        """Run a blocking boto3 call in the pool; botocore errors become ``ProviderError``.

        botocore's exception may keep the signed request (key id, session token) and the reply as it
        came, unscrubbed. Raising ours inside the ``except`` block would keep it as ``__context__``
        even with ``from None``, so ours is built there (from chosen, scrubbed fields) and raised
        after the block has ended.
        """
        try:
            return await self._in_thread(call)
        except (ClientError, BotoCoreError) as exc:
            error = self._provider_error(exc)
        except UnicodeDecodeError:  # botocore decodes a body before parsing it: one cut inside a character
            error = self._unreadable_reply()
        raise error

    async def _in_thread(self, call: Callable[[], Any]) -> Any:
        """``call()`` in a daemon thread, once one of ``max_workers`` slots is free.

        The slot is held until the thread ends, not until the caller stops waiting: a call abandoned
        at its deadline still counts until botocore lets it go. The wait for a slot is not charged to
        the call's deadline (``deadline_starts_now``).
        """
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self._max_workers)
        if slots.locked():
            deadline_waits()
        await slots.acquire()
        deadline_starts_now()
        answer: asyncio.Future[Any] = loop.create_future()

        def settle(value: Any, error: BaseException | None) -> None:
            slots.release()
            if answer.done():  # the caller gave up (its deadline, a cancelled run)
                return
            if error is not None:
                answer.set_exception(error)
            else:
                answer.set_result(value)

        def work() -> None:
            value, error = None, None
            try:
                value = call()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting coroutine
                error = exc
            with contextlib.suppress(RuntimeError):  # the event loop has closed: nobody waits any more
                loop.call_soon_threadsafe(settle, value, error)

        try:
            threading.Thread(target=work, name="hallumeasure-bedrock", daemon=True).start()
        except BaseException:
            slots.release()
            raise
        return await answer

    def _unreadable_reply(self) -> ProviderError:
        return ProviderError(
            f"{self.spec}: reply body was not valid JSON or not a Converse answer (truncated?)",
            retryable=True,
            cause="unreadable_body",
        )

    # --- batch inference (see hallumeasure.models.batch) ---

    def validate_batch(self) -> None:
        """Raise ``ConfigError`` unless batch mode has what it needs."""
        self._batch_location()

    def _batch_location(self) -> tuple[str, str]:
        if not self.batch_s3_uri or not self.batch_s3_uri.startswith("s3://") or not self.batch_role_arn:
            raise ConfigError(
                f"{self.spec}: Bedrock batch inference needs an S3 location (s3://bucket/prefix) for its records "
                "and an IAM role ARN that Bedrock may use to read and write it (--batch-s3, --batch-role)"
            )
        bucket, _, prefix = self.batch_s3_uri[5:].partition("/")
        return bucket, prefix.strip("/")

    def _batch_service(self) -> tuple[Any, Any]:
        """(bedrock control-plane client, s3 client), created on first use."""
        if self._batch_clients is None:
            config = self._config()
            s3_config = config.merge(
                Config(
                    s3={"addressing_style": "path"},
                    request_checksum_calculation="when_required",
                    response_checksum_validation="when_required",
                )
            )
            try:
                control = self._session.client(
                    "bedrock", region_name=self.region_name, endpoint_url=self._endpoint_url, config=config
                )
                s3 = self._session.client(
                    "s3", region_name=self.region_name, endpoint_url=self._endpoint_url, config=s3_config
                )
            except (NoRegionError, ValueError) as exc:
                raise ConfigError(f"{self.spec}: cannot create the batch clients: {exc}") from None
            self._batch_clients = (control, s3)
        return self._batch_clients

    async def submit_batch(self, items: Sequence[tuple[str, GenerateRequest]], *, token: str) -> str:
        """Write the records to S3 and start a Converse-format batch inference job; return its ARN."""
        bucket, prefix = self._batch_location()
        control, s3 = self._batch_service()
        base = f"{prefix}/{token}" if prefix else token
        lines = []
        for custom_id, request in items:
            params = self.request_params(request)
            params.pop("modelId")  # the job names the model once
            lines.append(json.dumps({"recordId": custom_id, "modelInput": params}, separators=(",", ":")))
        body = ("\n".join(lines) + "\n").encode("utf-8")
        await self._run(functools.partial(s3.put_object, Bucket=bucket, Key=f"{base}/input.jsonl", Body=body))
        job = await self._run(
            functools.partial(
                control.create_model_invocation_job,
                jobName=f"hallumeasure-{token[:24]}-{int(time.time())}",
                roleArn=self.batch_role_arn,
                modelId=self.model_name,
                clientRequestToken=token,
                modelInvocationType="Converse",
                inputDataConfig={
                    "s3InputDataConfig": {"s3Uri": f"s3://{bucket}/{base}/input.jsonl", "s3InputFormat": "JSONL"}
                },
                outputDataConfig={"s3OutputDataConfig": {"s3Uri": f"s3://{bucket}/{base}/output/"}},
            )
        )
        return str(job["jobArn"])

    async def poll_batch(self, batch_id: str) -> BatchStatus:
        from hallumeasure.models.batch import BatchStatus

        control, _ = self._batch_service()
        job = await self._run(functools.partial(control.get_model_invocation_job, jobIdentifier=batch_id))
        state = job.get("status", "")
        total = int(job.get("totalRecordCount") or 0)
        return BatchStatus(
            batch_id=batch_id,
            ended=state in _JOB_ENDED,
            total=total,
            succeeded=int(job.get("successRecordCount") or 0),
            errored=int(job.get("errorRecordCount") or 0),
            state=state,
        )

    async def batch_results(self, batch_id: str, requests: Mapping[str, GenerateRequest]) -> BatchResults:
        """Responses (or record errors) of an ended job, read from its ``.out`` files in S3."""
        from hallumeasure.models.wire import is_retryable_status

        control, s3 = self._batch_service()
        job = await self._run(functools.partial(control.get_model_invocation_job, jobIdentifier=batch_id))
        bucket, _, prefix = job["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"][5:].partition("/")
        job_id = batch_id.rsplit("/", 1)[-1]
        prefix = f"{prefix.rstrip('/')}/{job_id}/" if prefix.strip("/") else f"{job_id}/"
        listing = await self._run(functools.partial(s3.list_objects_v2, Bucket=bucket, Prefix=prefix))
        out: BatchResults = {}
        for entry in listing.get("Contents", []):
            key = entry["Key"]
            if not key.endswith(".out") or key.endswith("manifest.json.out"):
                continue
            data = await self._run(functools.partial(s3.get_object, Bucket=bucket, Key=key))
            for line in data["Body"].read().decode("utf-8", errors="replace").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # blank or cut short: its request has no result, which the batcher retries
                if not isinstance(record, dict) or requests.get(record.get("recordId", "")) is None:
                    continue
                request = requests[record["recordId"]]
                if "modelOutput" in record:
                    answer = record["modelOutput"]
                    out[record["recordId"]] = (
                        self._response(answer, request) if _is_converse_answer(answer) else self._unreadable_reply()
                    )
                else:
                    error = record.get("error") or {}
                    code = error.get("errorCode")
                    status = code if isinstance(code, int) else None
                    detail = str(error.get("errorMessage") or "no details")[:300]
                    out[record["recordId"]] = ProviderError(
                        f"{self.spec}: batch record failed ({code}): {detail}",
                        retryable=status is None or is_retryable_status(status),
                        status=status,
                        cause="batch_record",
                    )
        return out

    def request_params(self, request: GenerateRequest) -> dict[str, Any]:
        """The keyword arguments of ``converse`` for ``request``."""
        params: dict[str, Any] = {
            "modelId": self.model_name,
            "messages": [{"role": m.role, "content": _content_blocks(m.content)} for m in request.messages],
            "inferenceConfig": {"maxTokens": request.max_tokens},
        }
        if request.system:
            params["system"] = [{"text": request.system}] + ([_cache_point()] if request.cache_system else [])
        if request.tool is not None:
            spec = {"name": request.tool.name, "inputSchema": {"json": request.tool.input_schema}}
            if request.tool.description:  # Bedrock rejects an empty description
                spec["description"] = request.tool.description
            params["toolConfig"] = {
                "tools": [{"toolSpec": spec}],
                "toolChoice": {"tool": {"name": request.tool.name}},
            }
        return params

    def _response(self, reply: dict[str, Any], request: GenerateRequest) -> GenerateResponse:
        texts, tool_input, call_id = [], None, None
        for block in reply.get("output", {}).get("message", {}).get("content", []):
            if "text" in block:
                texts.append(block["text"])
            elif "toolUse" in block and tool_input is None:
                use = block["toolUse"]
                if request.tool is None or use.get("name") == request.tool.name:
                    value = use.get("input")
                    tool_input = value if isinstance(value, dict) else {"input": value}
                    call_id = use.get("toolUseId")
        usage = reply.get("usage", {})
        return GenerateResponse(
            text="".join(texts),
            tool_input=tool_input,
            tool_call_id=call_id,
            stop_reason=_STOP_REASONS.get(reply.get("stopReason", ""), "other"),
            usage=Usage(
                calls=1,
                input_tokens=usage.get("inputTokens", 0),
                output_tokens=usage.get("outputTokens", 0),
                cache_read_tokens=usage.get("cacheReadInputTokens", 0),
                cache_write_tokens=usage.get("cacheWriteInputTokens", 0),
            ),
            model=self.spec,
        )

    def _provider_error(self, exc: ClientError | BotoCoreError) -> ProviderError:
        # Imported here: the anthropic module loads its SDK, which a Bedrock user should not pay for.
        from hallumeasure.models.wire import is_retryable_status, parse_retry_after, scrub_secrets

        secrets = self._credential_values()
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            meta = exc.response.get("ResponseMetadata", {})
            code = error.get("Code") or "UnknownError"
            status = meta.get("HTTPStatusCode")
            if code in RETRYABLE_CODES:
                retryable = True
            elif code in NOT_RETRYABLE_CODES:
                retryable = False
            else:
                retryable = is_retryable_status(status)
            message = f"{self.spec}: {code} (HTTP {status}): {error.get('Message') or 'no details'}"
            return ProviderError(
                scrub_secrets(message, secrets),
                retryable=retryable,
                retry_after=parse_retry_after(meta.get("HTTPHeaders")),
                status=status,
                cause=code,
            )
        if isinstance(exc, (BotoConnectionError, HTTPClientError)):
            # botocore's messages name the endpoint and the low-level reason, never the credentials.
            return ProviderError(
                scrub_secrets(f"{self.spec}: {type(exc).__name__}: {exc}", secrets),
                retryable=True,
                cause="timeout" if "Timeout" in type(exc).__name__ else "connection",
            )
        if isinstance(exc, NoCredentialsError):
            return ProviderError(
                f"{self.spec}: no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY",
                cause="NoCredentialsError",
            )
        return ProviderError(
            scrub_secrets(f"{self.spec}: {type(exc).__name__}: {exc}", secrets), cause=type(exc).__name__
        )

    def _credential_values(self) -> list[str]:
        # The session's credentials may come from a profile file, not the environment; scrub them too.
        try:
            credentials = self._session.get_credentials()
            frozen = credentials.get_frozen_credentials() if credentials is not None else None
        except Exception:  # noqa: BLE001 - scrubbing must never fail the error path
            return []
        if frozen is None:
            return []
        return [v for v in (frozen.access_key, frozen.secret_key, frozen.token) if v]

    async def aclose(self) -> None:
        self._client.close()  # closes the connection pool; botocore reopens it if the API is used again
        for client in self._batch_clients or ():
            client.close()


def _content_blocks(blocks: tuple[Block, ...]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ToolCallBlock):
            content.append({"toolUse": {"toolUseId": block.call_id, "name": block.name, "input": block.input or {}}})
            continue
        if isinstance(block, ToolResultBlock):
            content.append(
                {
                    "toolResult": {
                        "toolUseId": block.call_id,
                        "content": [{"text": block.result}],
                        "status": "error" if block.is_error else "success",
                    }
                }
            )
            continue
        if block.text:  # Bedrock rejects blank text blocks
            content.append({"text": block.text})
        if block.cache_after and content and "cachePoint" not in content[-1]:
            content.append(_cache_point())
    return content


def _cache_point() -> dict[str, Any]:
    return {"cachePoint": {"type": "default"}}


def _is_converse_answer(reply: object) -> bool:
    """Every Converse answer (live or in a batch's output) has a stop reason and an output message."""
    return isinstance(reply, dict) and "stopReason" in reply and "message" in (reply.get("output") or {})
