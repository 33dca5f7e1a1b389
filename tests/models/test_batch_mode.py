"""Batch mode against the simulated batch services: one batch per stage, resume by polling after a
crash (never resubmitting), failed items retried in a later batch and then recorded as error rows."""

import asyncio
import collections
import json
import sqlite3
from decimal import Decimal

import pytest
from testdata import aws_session

from hallumeasure.core.types import Mode, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.batch import Batcher, BatchLedger
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.model import Model
from hallumeasure.models.pricing import cost, price_for
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.testing import AnthropicServer, BedrockServer
from hallumeasure.testing.faults import Fault, FaultPlan

SAMPLES = [
    Sample(
        id=f"s{i}",
        context=f"The bridge is {20 + i} km long. It opened in 2019.",
        response=f"The bridge is {30 + i} km long. It opened in 2019.",
    )
    for i in range(4)
]
FAST = {"collect_window": 0.02, "poll_interval": 0.01, "max_poll_interval": 0.02}


def _anthropic(srv):
    return AnthropicAPI("claude-sonnet-4-5", api_key="k", base_url=srv.base_url)


def _measure(model, mode=Mode.COT_ONE, samples=SAMPLES):
    async def go():
        try:
            return await measure_samples(samples, LLMExtractor(model), LLMJudge(model, mode), concurrency=len(samples))
        finally:
            await model.aclose()

    return asyncio.run(go())


def _created(srv) -> list:
    return [r for r in srv.requests if r.method == "POST" and r.path.rstrip("/").endswith("/batches")]


def test_each_stage_is_one_batch_and_no_single_calls_are_made(tmp_path):
    with AnthropicServer(batch_delay=0.01) as srv:
        api = _anthropic(srv)
        ledger = BatchLedger.for_run(tmp_path / "run")
        batcher = Batcher(api, ledger=ledger, **FAST)
        model = Model(api, batch=batcher, backoff_base=0.0)
        results = _measure(model)
        paths = {r.path.split("/")[3] if r.path.count("/") > 2 else r.path for r in srv.requests}
        created = _created(srv)
    assert all(r.n_claims == 2 and r.n_errors == 0 for r in results)
    assert not any(r.path == "/v1/messages" for r in srv.requests) and paths == {"batches"}
    # Extraction, then classification (no warm-up round in batch mode): two batches of 4 and 8 requests.
    assert [len(r.body["requests"]) for r in created] == [4, 8]
    assert model.batch_usage == model.usage and model.usage.calls == 12
    assert model.settings()["batch"] is True
    assert LLMJudge(model).settings()["warm_cache"] is False  # skipped in batch mode, and recorded as such
    assert [b["status"] for b in ledger.batches()] == ["ended", "ended"]
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:  # queryable with the run
        assert db.execute("SELECT COUNT(*) FROM batch_requests WHERE outcome = 'ok'").fetchone()[0] == 12
    price = price_for(api.spec)
    assert cost(model.batch_usage, price, batch=True) == (cost(model.batch_usage, price) * Decimal("0.5")).quantize(
        Decimal("0.000001")
    )


def test_a_crashed_run_resumes_by_polling_its_batch_instead_of_resubmitting(tmp_path):
    run_dir = tmp_path / "run"
    with AnthropicServer(batch_delay=3600) as srv:  # the batch will not end while the first process lives

        async def first_process():
            api = _anthropic(srv)
            model = Model(api, batch=Batcher(api, ledger=BatchLedger.for_run(run_dir), **FAST))
            task = asyncio.ensure_future(
                measure_samples(SAMPLES, LLMExtractor(model), LLMJudge(model), concurrency=len(SAMPLES))
            )
            while not srv.batches:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # a few polls
            task.cancel()  # the process dies here
            await asyncio.gather(task, return_exceptions=True)
            await model.aclose()

        asyncio.run(first_process())
        (job,) = srv.batches.values()
        polls_before = job.polls
        job.ends_at = 0  # the batch finishes while no process is watching
        srv.batch_delay = 0.0

        api = _anthropic(srv)
        batcher = Batcher(api, ledger=BatchLedger.for_run(run_dir), **FAST)
        results = _measure(Model(api, batch=batcher, backoff_base=0.0))
        created = _created(srv)
    assert all(r.n_errors == 0 and r.n_claims == 2 for r in results)
    assert batcher.resumed == [job.id] and job.polls > polls_before
    # Two batches in all: the extraction batch (submitted once, before the crash) and classification.
    assert [len(r.body["requests"]) for r in created] == [4, 8]
    ids = collections.Counter(item["custom_id"] for r in created for item in r.body["requests"])
    assert max(ids.values()) == 1


def _is_claim(text):
    return lambda call: call.tool and call.tool["name"] == "record_verdict" and text in call.prompt_text


def test_failed_items_are_retried_in_a_later_batch_then_become_error_rows(tmp_path):
    plan = FaultPlan(bursts=(), schedule={4: Fault.OVERLOADED})  # the first classification item, once
    with AnthropicServer(batch_delay=0.0, faults=plan) as srv:
        api = _anthropic(srv)
        model = Model(api, batch=Batcher(api, ledger=BatchLedger.for_run(tmp_path / "a"), **FAST), backoff_base=0.0)
        results = _measure(model)
        sizes = [len(r.body["requests"]) for r in _created(srv)]
    assert all(r.n_errors == 0 for r in results) and sizes == [4, 8, 1] and model.retries == 1

    always = FaultPlan(rate=1.0, faults=[Fault.SERVER_ERROR], match=_is_claim("The bridge is 31 km long."))
    ledger = BatchLedger.for_run(tmp_path / "b")
    with AnthropicServer(batch_delay=0.0, faults=always) as srv:
        api = _anthropic(srv)
        model = Model(api, batch=Batcher(api, ledger=ledger, **FAST), backoff_base=0.0, max_retries=2)
        results = _measure(model)
        sizes = [len(r.body["requests"]) for r in _created(srv)]
    failed = [v for r in results for v in r.verdicts if not v.ok]
    assert len(failed) == 1 and "api_error" in failed[0].error and sizes == [4, 8, 1, 1]
    assert sum(r.n_claims for r in results) == 8
    with sqlite3.connect(tmp_path / "b" / "run.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM batch_requests WHERE outcome = 'error'").fetchone()[0] == 3


def _bedrock(srv, **options):
    srv.s3.create_bucket("runs")
    return BedrockAPI(
        "anthropic.claude-sonnet-4-5",
        region_name="us-east-1",
        endpoint_url=srv.url,
        session=aws_session(),
        batch_s3_uri="s3://runs/hallumeasure",
        batch_role_arn="arn:aws:iam::123456789012:role/batch",
        **options,
    )


def test_bedrock_batch_inference_end_to_end(aws, tmp_path):
    with BedrockServer(batch_delay=0.0) as srv:
        api = _bedrock(srv, batch_min_requests=1)
        model = Model(api, batch=Batcher(api, ledger=BatchLedger.for_run(tmp_path), **FAST), backoff_base=0.0)
        results = _measure(model, Mode.NOCOT_ALL)
        jobs = [r for r in srv.requests if r.path == "/model-invocation-job"]
        converse = [r for r in srv.requests if r.path.endswith("/converse")]
        inputs = [k for k in srv.s3.keys("runs") if k.endswith("input.jsonl")]
    assert all(r.n_claims == 2 and r.n_errors == 0 for r in results)
    assert len(jobs) == 2 and not converse and len(inputs) == 2
    assert jobs[0].body["modelInvocationType"] == "Converse" and jobs[0].body["clientRequestToken"]
    assert model.batch_usage.calls == 8


def test_bedrock_batch_output_lines_that_are_cut_or_not_answers_are_never_read_as_empty_answers(aws):
    """A cut line leaves its request without a result (the batcher retries it); a record whose output is
    not a Converse answer is a retryable error, not an empty answer."""
    from hallumeasure.core.errors import ProviderError
    from hallumeasure.models.base import GenerateRequest, GenerateResponse, Message

    requests = {
        f"r{i}": GenerateRequest(system="Answer.", messages=(Message.user(f"Say {i}."),), max_tokens=16)
        for i in range(3)
    }

    async def go(api, srv):
        job = await api.submit_batch(list(requests.items()), token="t0")
        while not (await api.poll_batch(job)).ended:
            await asyncio.sleep(0.01)
        [key] = [k for k in srv.s3.keys("runs") if k.endswith("input.jsonl.out")]
        good, cut, odd = srv.s3.get("runs", key).decode().splitlines()
        record = json.loads(odd)
        record["modelOutput"] = {"usage": record["modelOutput"]["usage"]}  # no stopReason, no output
        srv.s3.put("runs", key, "\n".join([good, cut[: len(cut) // 2], json.dumps(record)]).encode())
        try:
            return await api.batch_results(job, requests)
        finally:
            await api.aclose()

    with BedrockServer(batch_delay=0.0) as srv:
        results = asyncio.run(go(_bedrock(srv, batch_min_requests=1), srv))
    assert isinstance(results["r0"], GenerateResponse) and results["r0"].text
    assert "r1" not in results
    assert isinstance(results["r2"], ProviderError) and results["r2"].retryable
    assert "not a Converse answer" in str(results["r2"])


def test_too_few_requests_for_bedrock_go_on_demand(aws):
    with BedrockServer() as srv:
        api = _bedrock(srv)  # Bedrock wants at least 100 records per job
        model = Model(api, batch=Batcher(api, **FAST), backoff_base=0.0)
        results = _measure(model, Mode.NOCOT_ALL, SAMPLES[:2])
        jobs = [r for r in srv.requests if "model-invocation-job" in r.path]
    assert all(r.n_errors == 0 for r in results) and not jobs
    assert model.batch_usage.calls == 0 and model.usage.calls == 4


def test_bedrock_batch_mode_without_a_location_is_a_config_error(aws):
    from hallumeasure.core.errors import ConfigError

    api = BedrockAPI("anthropic.claude-x", region_name="us-east-1", batch_min_requests=1, session=aws_session())
    with pytest.raises(ConfigError, match="--batch-s3"):
        Batcher(api)


def test_identical_requests_in_flight_are_sent_once_and_billed_once():
    twins = [SAMPLES[0], SAMPLES[0].model_copy(update={"id": "twin"})]
    with AnthropicServer(batch_delay=0.0) as srv:
        api = _anthropic(srv)
        model = Model(api, batch=Batcher(api, **FAST), backoff_base=0.0)
        results = _measure(model, Mode.COT_ALL, twins)
        sizes = [len(r.body["requests"]) for r in _created(srv)]
    assert [r.n_claims for r in results] == [2, 2] and sizes == [1, 1]
    assert model.usage.calls == 2 and model.usage.cached_calls == 2 and model.batch_usage.calls == 2


def test_the_ledger_touches_the_run_directory_only_when_a_batch_is_recorded(tmp_path):
    """The run store may still clear the directory (--overwrite) after the models are built."""
    ledger = BatchLedger.for_run(tmp_path / "run")
    assert not (tmp_path / "run").exists()
    ledger.record("batch-1", "anthropic:m", [("c1", "k1")])
    assert ledger.find("k1", "anthropic:m") == ("batch-1", "c1") and ledger.submissions("k1") == 1
    ledger.set_outcomes("batch-1", {"c1": "error"})
    assert ledger.find("k1", "anthropic:m") is None  # a failed request is submitted again, never re-attached
    ledger.close()
