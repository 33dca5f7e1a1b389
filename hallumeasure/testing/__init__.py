"""Local provider simulators: real HTTP servers on 127.0.0.1 that speak the Anthropic Messages API
(and Message Batches), the Bedrock Converse API (and batch inference, with a small S3) and the
OpenAI-compatible chat API of local model servers (``OpenAIServer``), so that the real SDKs can be
tested and benchmarked without a network.

    from hallumeasure.testing import AnthropicServer, BedrockServer
    from hallumeasure.testing.anthropic_server import error_reply, tool_reply

    with AnthropicServer(script=[error_reply(429, retry_after=0.01)]) as srv:
        ...  # srv.base_url, srv.requests, srv.calls, srv.log

Both front-ends share one core (``server.SimServer``); they only translate their wire format.

Answers. Each model call is answered by the next item of ``script``, else an injected fault, else a
429 when ``limits`` are exceeded, else ``handler(wire body)``, else ``answer(call)`` (default
``default_answer``: hallumeasure's own prompts get the fake demo model's answers, any other tool an
input built from its JSON Schema). Results may be a wire dict, a ``Reply`` or a neutral ``Answer``.

Behaviour (all keyword arguments of both servers):

* ``latency=0.05`` or ``Latency(base, per_input_token, per_cache_read_token, per_output_token)``
  or ``fn(call, tokens) -> seconds``: how long an answer takes (errors take ``base``).
* ``limits=RateLimits(rpm=, tpm=, input_tpm=, output_tpm=, burst=1.0)``: token buckets; a refused
  call gets a 429 (Anthropic ``rate_limit_error`` with retry-after; Bedrock ``ThrottlingException``
  without, as Bedrock sends it). Cache reads do not count; scripted replies and batch items are exempt.
* ``prompt_cache=PromptCache(ttl=300, min_tokens=8)`` (or True): bills cache writes and reads at the
  request's breakpoints (``cache_control`` / ``cachePoint``, as recorded in ``Call.segments``) the
  way the providers document: the longest prefix seen within the TTL is read (and refreshed), the
  rest up to the last breakpoint long enough is written, the remainder is plain input; a prefix is
  readable only once the request that wrote it has answered. Without it, all input is plain.
* ``faults=FaultPlan(...)``: per-call faults (below). ``batch_delay=0.05``: seconds until a batch ends.

Reading what happened: ``srv.requests`` (every HTTP request: method, path, headers, parsed body),
``srv.calls`` (model calls as neutral ``Call``s), ``srv.log`` (``CallRecord`` per model call: index,
arrival and reply times, status, injected fault, billed ``Tokens``, batch id), ``srv.billed(tool=)``
(billed tokens in total), ``srv.injected`` (``(index, Fault)`` pairs), ``srv.batches`` (batch jobs),
``BedrockServer.s3`` (the object store: ``create_bucket``, ``put``, ``get``, ``keys``).

Fault plan (``hallumeasure.testing.faults``), for fault suites::

    from hallumeasure.testing import Fault, FaultPlan, Burst

    FaultPlan.at({0: Fault.RATE_LIMIT, 3: Fault.REFUSAL})            # by arrival index of model calls
    FaultPlan.at([Fault.OVERLOADED, None, Fault.EMPTY])               # the first calls, in order
    FaultPlan.random(0.1, [Fault.SERVER_ERROR, Fault.READ_TIMEOUT], seed=7)   # a seeded share
    FaultPlan.random(0.2, {Fault.RATE_LIMIT: 3, Fault.OVERLOADED: 1})         # weighted
    FaultPlan(bursts=[Burst(start=10, length=5, every=50, fault=Fault.OVERLOADED)])
    FaultPlan.random(1.0, [Fault.MAX_TOKENS],
                     match=lambda call: bool(call.tool) and call.tool["name"] == "record_verdicts")

Random draws depend on the request body and on how many times that body was seen (``key="content"``,
the default), so they do not depend on the arrival order of concurrent calls and a retry draws
again; ``key="order"`` draws by arrival index. Precedence: schedule, bursts, rate. Options:
``retry_after`` (seconds sent with ``RATE_LIMIT``, default 0.05), ``overload_retry_after``, ``hang``
(seconds a ``READ_TIMEOUT`` answer is held, default 30; the server drops it when it closes),
``in_batches`` (faults also hit batch items: errors error the item, ``READ_TIMEOUT`` expires it).

``Fault``: ``RATE_LIMIT`` (429 + retry-after), ``RATE_LIMIT_NO_RETRY_AFTER``, ``OVERLOADED`` (Anthropic
529, Bedrock 503 ServiceUnavailableException), ``SERVER_ERROR`` (500), ``UNAVAILABLE`` (503),
``READ_TIMEOUT`` (answer held past the client's deadline), ``CONNECTION_RESET`` (half the body, then a
TCP reset), ``TRUNCATED_BODY`` (a 200 whose JSON is cut in half), ``SCHEMA_VIOLATION`` (tool input
that breaks the tool's schema), ``REFUSAL`` (stop_reason refusal / Bedrock content_filtered),
``MAX_TOKENS`` (stop at max_tokens with the all-claims verdict list cut short), ``EMPTY`` (no content).
``TRANSIENT`` and ``BAD_ANSWERS`` list the faults a client should retry and those it must repair,
re-ask or record as error rows.

Batches: ``AnthropicServer`` serves ``/v1/messages/batches`` (create, retrieve, results, cancel);
``BedrockServer`` serves ``/model-invocation-job`` (Converse-format records read from its S3, outputs
written back as ``<output>/<job id>/<input>.out`` and ``manifest.json.out``) and S3 itself (path
style; recognised by the request signature's service). Items are answered like single calls.
"""

from hallumeasure.testing.accounting import Latency, PromptCache, RateLimits
from hallumeasure.testing.answers import default_answer, schema_answer, schema_example
from hallumeasure.testing.anthropic_server import AnthropicServer
from hallumeasure.testing.bedrock_server import BedrockServer
from hallumeasure.testing.calls import Answer, Call, RecordedRequest, Reply, Segment, Tokens
from hallumeasure.testing.faults import BAD_ANSWERS, TRANSIENT, Burst, Fault, FaultPlan
from hallumeasure.testing.openai_server import OpenAIServer
from hallumeasure.testing.server import BatchJob, CallRecord, SimServer

__all__ = [
    "BAD_ANSWERS",
    "TRANSIENT",
    "Answer",
    "AnthropicServer",
    "BatchJob",
    "BedrockServer",
    "Burst",
    "Call",
    "CallRecord",
    "Fault",
    "FaultPlan",
    "Latency",
    "OpenAIServer",
    "PromptCache",
    "RateLimits",
    "RecordedRequest",
    "Reply",
    "Segment",
    "SimServer",
    "Tokens",
    "default_answer",
    "schema_answer",
    "schema_example",
]
