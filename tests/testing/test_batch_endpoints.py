"""The simulated batch services as the SDKs see them: Anthropic Message Batches, Bedrock batch
inference over the simulated S3, plus the call log that tests read."""

import json

import anthropic
import pytest
from botocore.config import Config
from testdata import aws_session

from hallumeasure.testing import AnthropicServer, BedrockServer
from hallumeasure.testing.faults import Fault, FaultPlan

PARAMS = {"model": "claude-x", "max_tokens": 50, "messages": [{"role": "user", "content": "Say hi."}]}


def test_anthropic_batch_create_retrieve_results_through_the_sdk():
    with AnthropicServer(batch_delay=0.0, faults=FaultPlan.at({1: Fault.OVERLOADED, 2: Fault.READ_TIMEOUT})) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.base_url, max_retries=0)
        batch = client.messages.batches.create(requests=[{"custom_id": f"r{i}", "params": PARAMS} for i in range(4)])
        again = client.messages.batches.retrieve(batch.id)
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
        assert all(record.batch_id == batch.id for record in srv.log) and len(srv.log) == 4
    assert again.processing_status == "ended" and again.results_url.endswith(f"/{batch.id}/results")
    assert again.request_counts.succeeded == 2 and again.request_counts.errored == 1
    assert again.request_counts.expired == 1
    assert results["r0"].type == "succeeded" and results["r0"].message.content[0].text
    assert results["r1"].type == "errored" and results["r1"].error.error.type == "overloaded_error"
    assert results["r2"].type == "expired"


def test_anthropic_batch_in_progress_until_the_delay_and_then_cancel():
    with AnthropicServer(batch_delay=60.0) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.base_url, max_retries=0)
        batch = client.messages.batches.create(requests=[{"custom_id": "a", "params": PARAMS}])
        assert batch.processing_status == "in_progress" and batch.results_url is None
        assert batch.request_counts.processing == 1
        with pytest.raises(anthropic.AnthropicError):
            client.messages.batches.results(batch.id)
        canceled = client.messages.batches.cancel(batch.id)
        assert canceled.processing_status == "ended" and canceled.request_counts.canceled == 1


def test_anthropic_batch_rejects_bad_custom_ids():
    with AnthropicServer() as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.base_url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError):
            client.messages.batches.create(requests=[{"custom_id": "a b", "params": PARAMS}])


def _clients(srv):
    session = aws_session()
    s3 = session.client("s3", endpoint_url=srv.url, config=Config(s3={"addressing_style": "path"}))
    return session.client("bedrock", endpoint_url=srv.url), s3


def test_the_simulated_s3_stores_lists_and_reports_missing_keys(aws):
    with BedrockServer() as srv:
        _, s3 = _clients(srv)
        s3.create_bucket(Bucket="data")
        s3.put_object(Bucket="data", Key="a/one.jsonl", Body=b'{"x": 1}\n')
        s3.put_object(Bucket="data", Key="a/two.jsonl", Body=b"2")
        s3.put_object(Bucket="data", Key="b/three", Body=b"3")
        listed = [o["Key"] for o in s3.list_objects_v2(Bucket="data", Prefix="a/")["Contents"]]
        body = s3.get_object(Bucket="data", Key="a/one.jsonl")["Body"].read()
        with pytest.raises(s3.exceptions.NoSuchKey):
            s3.get_object(Bucket="data", Key="missing")
        assert srv.s3.get("data", "b/three") == b"3"
    assert listed == ["a/one.jsonl", "a/two.jsonl"] and body == b'{"x": 1}\n'


def test_bedrock_batch_job_reads_records_from_s3_and_writes_outputs(aws):
    converse = {"messages": [{"role": "user", "content": [{"text": "Say hi."}]}], "inferenceConfig": {"maxTokens": 50}}
    records = [{"recordId": f"r{i}", "modelInput": converse} for i in range(3)]
    with BedrockServer(batch_delay=0.0, faults=FaultPlan.at({1: Fault.SERVER_ERROR})) as srv:
        control, s3 = _clients(srv)
        srv.s3.create_bucket("jobs")
        s3.put_object(Bucket="jobs", Key="in/records.jsonl", Body="".join(json.dumps(r) + "\n" for r in records))
        request = {
            "jobName": "job-1",
            "roleArn": "arn:aws:iam::123456789012:role/batch",
            "modelId": "anthropic.claude-x",
            "clientRequestToken": "token1",
            "modelInvocationType": "Converse",
            "inputDataConfig": {"s3InputDataConfig": {"s3Uri": "s3://jobs/in/"}},
            "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": "s3://jobs/out/"}},
        }
        arn = control.create_model_invocation_job(**request)["jobArn"]
        assert control.create_model_invocation_job(**request)["jobArn"] == arn  # idempotent by token
        job = control.get_model_invocation_job(jobIdentifier=arn)
        job_id = arn.rsplit("/", 1)[1]
        out = s3.get_object(Bucket="jobs", Key=f"out/{job_id}/records.jsonl.out")["Body"].read().decode()
        manifest = json.loads(s3.get_object(Bucket="jobs", Key=f"out/{job_id}/manifest.json.out")["Body"].read())
        assert len(srv.batches) == 1
    lines = {json.loads(line)["recordId"]: json.loads(line) for line in out.splitlines()}
    assert job["status"] == "PartiallyCompleted" and job["totalRecordCount"] == 3
    assert job["successRecordCount"] == 2 and job["errorRecordCount"] == 1
    assert lines["r0"]["modelOutput"]["output"]["message"]["content"][0]["text"]
    assert lines["r0"]["modelInput"] == converse and lines["r1"]["error"]["errorCode"] == 500
    assert manifest["successRecordCount"] == 2


def test_bedrock_batch_job_needs_converse_records(aws):
    with BedrockServer() as srv:
        control, _ = _clients(srv)
        srv.s3.put("jobs", "in/x.jsonl", b"{}\n")
        with pytest.raises(control.exceptions.ValidationException):
            control.create_model_invocation_job(
                jobName="job-1",
                roleArn="arn:aws:iam::123456789012:role/batch",
                modelId="m",
                inputDataConfig={"s3InputDataConfig": {"s3Uri": "s3://jobs/in/"}},
                outputDataConfig={"s3OutputDataConfig": {"s3Uri": "s3://jobs/out/"}},
            )


def test_the_call_log_and_the_bill():
    with AnthropicServer(prompt_cache=True) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.base_url, max_retries=0)
        for _ in range(2):
            client.messages.create(
                **{
                    **PARAMS,
                    "system": [{"type": "text", "text": "Be brief. " * 10, "cache_control": {"type": "ephemeral"}}],
                }
            )
        first, second = srv.log
    assert (first.index, second.index) == (0, 1) and first.status == second.status == 200
    assert first.usage.cache_write_tokens > 0 and second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert srv.billed() == first.usage + second.usage and first.replied is not None
