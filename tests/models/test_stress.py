"""The model layer under hangs, slow servers and many concurrent calls, at the wire level: a deadline
frees the call on every provider, concurrency is what ``max_concurrency`` says, identical requests
in flight are sent once, and a provider that cannot be reached stops the run and names its URL.

Short timeouts and few calls; the full table is ``benchmarks/stress.py``."""

import asyncio
import socket
import time

import pytest
from provider_fixtures import judge_request
from testdata import aws_session

from hallumeasure.core.errors import ProviderError
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.langchain import LangChainAPI
from hallumeasure.models.model import Model, ProviderUnreachableError
from hallumeasure.testing import AnthropicServer, BedrockServer, Fault, FaultPlan, Latency, OpenAIServer

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"


def _anthropic(url: str) -> AnthropicAPI:
    return AnthropicAPI("claude-test", api_key="sk-ant-test-key-123456", base_url=url)


def _bedrock(url: str, **options) -> BedrockAPI:
    return BedrockAPI(MODEL_ID, session=aws_session(), endpoint_url=url, **options)


def _openai(url: str) -> LangChainAPI:
    return LangChainAPI("langchain_openai:ChatOpenAI", model="local", base_url=url, api_key="unused")


SERVERS = {
    "anthropic": (AnthropicServer, lambda srv: _anthropic(srv.base_url)),
    "bedrock": (BedrockServer, lambda srv: _bedrock(srv.endpoint_url)),
    "openai-compatible": (OpenAIServer, lambda srv: _openai(srv.base_url)),
}
EACH_PROVIDER = pytest.mark.parametrize("provider", list(SERVERS))


def _distinct(n: int):
    return [judge_request(system=f"You judge claims against a context. ({i})") for i in range(n)]


async def _gather(model: Model, requests):
    try:
        return await asyncio.gather(*(model.generate(r) for r in requests), return_exceptions=True)
    finally:
        await model.aclose()


def test_bedrock_takes_its_botocore_timeouts_and_pool_from_the_wrapper():
    with BedrockServer() as srv:
        api = _bedrock(srv.endpoint_url)
        Model(api, timeout=5.0, max_concurrency=16)
        config = api._client.meta.config
        assert (config.read_timeout, config.connect_timeout) == (5.0, 5.0)
        assert config.max_pool_connections == 32 and config.retries["total_max_attempts"] == 1
        fixed = _bedrock(srv.endpoint_url, read_timeout=2.0, max_workers=3)
        Model(fixed, timeout=5.0, max_concurrency=16)  # options given to the provider win
        assert (fixed._client.meta.config.read_timeout, fixed._client.meta.config.max_pool_connections) == (2.0, 3)


@EACH_PROVIDER
def test_hung_calls_are_freed_at_the_deadline_and_their_retries_succeed(provider):
    server, make = SERVERS[provider]
    plan = FaultPlan.at(dict.fromkeys(range(8), Fault.READ_TIMEOUT), hang=30.0)
    with server(faults=plan, latency=0.01) as srv:
        model = Model(make(srv), timeout=0.5, max_concurrency=8, backoff_base=0.01)
        started = time.perf_counter()
        results = asyncio.run(_gather(model, _distinct(8)))
        elapsed = time.perf_counter() - started
        assert len(srv.log) == 16  # eight hung, eight retries
    assert not [r for r in results if isinstance(r, BaseException)]
    # Freed at the 0.5 s deadline (not at the SDK's 120 s read timeout, which held Bedrock's threads), so
    # the retries reach the server at once; a generous bound, as the test machine may be loaded.
    assert elapsed < 10 and model.retries >= 8


def test_a_hung_bedrock_call_does_not_hold_the_process_at_exit(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "hang.py"
    script.write_text(
        "import asyncio, sys\n"
        "sys.path[:0] = [sys.argv[2], sys.argv[3]]\n"
        "from provider_fixtures import judge_request\n"
        "from testdata import aws_session\n"
        "from hallumeasure.models.bedrock import BedrockAPI\n"
        "from hallumeasure.models.model import Model\n"
        f"api = BedrockAPI({MODEL_ID!r}, session=aws_session(), endpoint_url=sys.argv[1], read_timeout=60)\n"
        "model = Model(api, timeout=0.3, max_retries=0)\n"
        "async def go():\n"
        "    try:\n"
        "        await model.generate(judge_request())\n"
        "    except Exception as exc:\n"
        "        print(type(exc).__name__)\n"
        "asyncio.run(go())\n"
    )
    import hallumeasure

    root = str(__import__("pathlib").Path(hallumeasure.__file__).parents[1])
    tests = str(__import__("pathlib").Path(__file__).parents[1])
    with BedrockServer(faults=FaultPlan.at({0: Fault.READ_TIMEOUT}, hang=30.0)) as srv:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(script), srv.endpoint_url, root, tests], capture_output=True, text=True, timeout=30
        )
        elapsed = time.perf_counter() - started
    assert "ProviderError" in done.stdout, done.stderr
    # botocore would read for 60 s; the daemon thread that still waits does not keep the process alive.
    assert elapsed < 15


def test_the_wait_for_a_bedrock_thread_is_not_charged_to_the_deadline():
    with BedrockServer(latency=0.3) as srv:
        # One thread for three calls: the last waits 0.6 s for it, longer than its 0.5 s deadline.
        model = Model(_bedrock(srv.endpoint_url, max_workers=1), timeout=0.5, max_concurrency=3, max_retries=0)
        results = asyncio.run(_gather(model, _distinct(3)))
    assert not [r for r in results if isinstance(r, BaseException)]


@EACH_PROVIDER
@pytest.mark.parametrize("concurrency", [16, 64])
def test_a_slow_healthy_server_gives_no_errors_and_no_extra_requests_at_any_concurrency(provider, concurrency):
    server, make = SERVERS[provider]
    # Served in rounds of a fixed pool of 8 (as Bedrock was), 64 calls of 0.5 s would take 4 s, past the
    # deadline; all in flight at once they take 0.5 s and the client's own work. The deadline leaves room
    # for that work on a loaded test machine: it is not a timing target (benchmarks/stress.py measures).
    with server(latency=Latency(base=0.5)) as srv:
        model = Model(make(srv), timeout=2.5, max_concurrency=concurrency)
        results = asyncio.run(_gather(model, _distinct(concurrency)))
        sent = len(srv.log)
    assert not [r for r in results if isinstance(r, BaseException)]
    assert sent == concurrency and model.retries == 0


@EACH_PROVIDER
def test_identical_requests_in_flight_are_sent_once(provider):
    server, make = SERVERS[provider]
    with server(latency=0.1) as srv:
        model = Model(make(srv), timeout=2.0)
        results = asyncio.run(_gather(model, [judge_request()] * 5 + _distinct(2)))
        sent = len(srv.log)
    assert sent == 3 and model.shared == 4
    first = results[0]
    assert all(r.tool_input == first.tool_input for r in results[:5])
    # The first caller paid; the others are counted as answered without a call.
    assert first.usage.calls == 1 and all(r.usage.calls == 0 and r.usage.cached_calls == 1 for r in results[1:5])
    assert model.usage.calls == 3 and model.usage.cached_calls == 4


def test_waiters_share_the_error_of_the_call_they_waited_for():
    with AnthropicServer(faults=FaultPlan.random(1.0, [Fault.SERVER_ERROR]), latency=0.05) as srv:
        model = Model(_anthropic(srv.base_url), max_retries=1, backoff_base=0.0)
        results = asyncio.run(_gather(model, [judge_request()] * 3))
        sent = len(srv.log)
    assert sent == 2  # one call and its one retry, for all three callers
    assert all(isinstance(r, ProviderError) and r.status == 500 for r in results)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("provider", ["anthropic", "bedrock", "openai-compatible"])
def test_a_provider_that_cannot_be_reached_stops_with_its_url_and_never_its_key(provider):
    url = f"http://127.0.0.1:{_closed_port()}"
    api = {"anthropic": _anthropic, "bedrock": _bedrock, "openai-compatible": lambda u: _openai(u + "/v1")}[provider]
    model = Model(api(url), max_retries=1, backoff_base=0.0)
    results = asyncio.run(_gather(model, _distinct(3)))
    assert all(isinstance(r, ProviderUnreachableError) for r in results)
    message = str(results[0])
    assert f"127.0.0.1:{url.rsplit(':', 1)[1]}" in message and "cannot connect" in message
    assert "sk-ant-test-key-123456" not in message and "unused" not in message


def test_connection_failures_after_the_provider_has_answered_stay_retryable_errors():
    with AnthropicServer() as srv:
        model = Model(_anthropic(srv.base_url), max_retries=0)
        asyncio.run(_gather(model, _distinct(1)))
    assert model.reached
    (result,) = asyncio.run(_gather(model, _distinct(1)))  # the server is gone now
    assert isinstance(result, ProviderError) and not isinstance(result, ProviderUnreachableError)
