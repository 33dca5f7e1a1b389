"""``--repeats`` against the local provider servers: K repeats send K requests per claim, a re-run sends none,
and the repeat index never reaches the wire (it only keys the request cache)."""

import asyncio

import pytest

from hallumeasure.core.types import Mode, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.offline import OfflineExtractor
from hallumeasure.judges.votes import VotingJudge
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.cache import RequestCache
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.testing import AnthropicServer, BedrockServer

SAMPLE = Sample(
    id="s1",
    context="The bridge is 24 km long. It opened in 2019.",
    response="The bridge is 42 km long. It opened in 2019.",
)
REPEATS = 3


def _measure(api, cache: RequestCache, mode: Mode):
    judge = VotingJudge([LLMJudge(Model(api, cache=cache, backoff_base=0.0), mode)], repeats=REPEATS)
    (result,) = asyncio.run(measure_samples([SAMPLE], OfflineExtractor(), judge))
    return result


def _anthropic(srv):
    return AnthropicAPI("claude-sim", api_key="k", base_url=srv.base_url)


def _bedrock(srv):
    return BedrockAPI("anthropic.claude-sim", endpoint_url=srv.endpoint_url, region_name="us-east-1")


@pytest.mark.parametrize(
    ("server", "make_api"), [(AnthropicServer, _anthropic), (BedrockServer, _bedrock)], ids=["anthropic", "bedrock"]
)
@pytest.mark.parametrize("mode", [Mode.COT_ONE, Mode.NOCOT_ALL])
def test_k_repeats_send_k_requests_and_a_rerun_sends_none(server, make_api, mode, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    cache = RequestCache(tmp_path / "cache.sqlite")
    per_repeat = 2 if mode.one_claim else 1  # two claims: one call each, or one call for both
    with server() as srv:
        first = _measure(make_api(srv), cache, mode)
        bodies = [r.body for r in srv.requests]
        assert len(bodies) == REPEATS * per_repeat
        # The repeats are the same question asked again: identical bodies, told apart only by the cache.
        assert len({str(sorted(b.items())) for b in bodies}) == per_repeat
        assert not any("repeat" in str(b) for b in bodies)
        second = _measure(make_api(srv), cache, mode)
        assert len(srv.requests) == REPEATS * per_repeat  # the re-run sent nothing
    assert len(first.votes) == 2 * REPEATS and second.votes == first.votes
    assert len(cache) == REPEATS * per_repeat


def test_repeat_0_keys_as_requests_did_before_repeats_and_each_repeat_keys_apart():
    import hashlib
    import json

    from hallumeasure.models.base import GenerateRequest, Message
    from hallumeasure.models.cache import request_key

    request = GenerateRequest(system="s", messages=(Message.user("hello"),))
    # Neither the repeat nor a first ask's re-ask attempt (both added after the cache existed) is in the key.
    fields = {k: v for k, v in request.model_dump(mode="json").items() if k not in ("repeat", "attempt")}
    before = hashlib.sha256(
        json.dumps(
            {"model": "fake:x", "settings": {}, "request": fields},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
    ).hexdigest()
    assert request_key("fake:x", request) == before  # existing caches keep answering runs without repeats
    keys = {request_key("fake:x", request.model_copy(update={"repeat": k})) for k in range(4)}
    assert len(keys) == 4
    # A re-ask of each repeat keys apart from its first ask and from the re-asks of the other repeats.
    reasks = {request_key("fake:x", request.model_copy(update={"repeat": k, "attempt": 1})) for k in range(4)}
    assert len(reasks) == 4 and not reasks & keys
