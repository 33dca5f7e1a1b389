"""The pipeline against the local provider servers: re-ask on malformed tool input, error rows after
the bound, a LangChain chat model through the same code path, and crash safety (SIGKILL, then resume)."""

import asyncio
import collections
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from testdata import EXAMPLES, REPO

from hallumeasure.core.types import Mode, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import GenerateRequest, Message, ToolSpec
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.fake import demo_responder, prompt_blocks
from hallumeasure.models.langchain import LangChainAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.testing import Answer, AnthropicServer, BedrockServer, default_answer

SAMPLE = Sample(
    id="s1",
    context="The bridge is 24 km long. It opened in 2019.",
    response="The bridge is 42 km long. It opened in 2019.",
)


def _run(api, mode=Mode.COT_ONE, samples=(SAMPLE,)):
    model = Model(api, backoff_base=0.0)
    # The request counts below are per claim: no cache warm-up (tests/judges/test_warm_up.py covers it).
    judge = LLMJudge(model, mode, warm_cache=False)
    return asyncio.run(measure_samples(list(samples), LLMExtractor(model), judge))


def _malformed_first(times: int):
    """Answer judge calls with a label that is not in the schema ``times`` times, then properly."""
    seen = collections.Counter()

    def answer(call):
        if call.tool and call.tool["name"] == "record_verdict":
            key = prompt_blocks(call.to_request(), "claim")[0]
            seen[key] += 1
            if seen[key] <= times:
                return Answer(
                    tool_name="record_verdict",
                    tool_input={"label": "certainly", "subtype": "x"},
                    stop_reason="tool_use",
                )
        return default_answer(call)

    return answer


def test_malformed_tool_input_is_reasked_with_the_error_then_succeeds():
    with AnthropicServer(answer=_malformed_first(1)) as srv:
        (result,) = _run(AnthropicAPI("claude-sim", api_key="k", base_url=srv.base_url))
        bodies = [r.body for r in srv.requests]
    assert all(v.ok for v in result.verdicts) and result.n_claims == 2
    assert len(bodies) == 1 + 2 * 2  # extraction, then per claim: a bad answer and the re-ask
    reasks = [b for b in bodies if len(b["messages"]) == 3]
    assert len(reasks) == 2
    # The failed call goes back as Claude's own tool_use, answered by a tool_result with is_error.
    result_block, note = reasks[0]["messages"][2]["content"]
    assert note["type"] == "text" and "re-ask 1" in note["text"]  # the reason again, in text templates keep
    (use,) = [b for b in reasks[0]["messages"][1]["content"] if b["type"] == "tool_use"]
    assert result_block["type"] == "tool_result" and result_block["is_error"]
    assert result_block["tool_use_id"] == use["id"]
    feedback = result_block["content"]
    assert "could not be used" in feedback and "label" in feedback
    assert "certainly" in json.dumps(use["input"])  # the bad answer is shown back


def test_malformed_tool_input_becomes_an_error_row_after_the_bound(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with BedrockServer(answer=_malformed_first(99)) as srv:
        api = BedrockAPI("anthropic.claude-sim", endpoint_url=srv.endpoint_url, region_name="us-east-1")
        (result,) = _run(api, Mode.NOCOT_ONE)
        n_requests = len(srv.requests)
    assert result.n_errors == 2 and result.hallucinated is None
    assert n_requests == 1 + 2 * 2  # extraction, then per claim: first answer + a re-ask that repeats it
    assert all("certainly" in v.raw_output and "label" in v.error for v in result.verdicts)


class DemoChat(BaseChatModel):
    """A real LangChain chat model that answers hallumeasure's tools with the fake's demo answers."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "demo-chat"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        (tool,) = kwargs["tools"]
        name = tool["function"]["name"]
        request = GenerateRequest(
            system=str(messages[0].content),
            messages=tuple(Message.user(str(m.content)) for m in messages[1:]),
            tool=ToolSpec(name=name, description="", input_schema={}),
        )
        args = demo_responder(request)
        message = AIMessage(
            content="",
            tool_calls=[{"name": name, "args": args, "id": f"call_{self.calls}"}],
            usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


@pytest.mark.parametrize("mode", list(Mode))
def test_a_langchain_chat_model_runs_every_mode(mode):
    chat = DemoChat()
    results = _run(LangChainAPI(chat), mode)
    (result,) = results
    assert [v.label for v in result.verdicts] == ["contradicted", "supported"]
    assert result.usage.input_tokens == 10 * chat.calls and chat.calls == (3 if mode.one_claim else 2)


# --- crash safety ------------------------------------------------------------------------------------


def _count_results(run_dir) -> int:
    db = run_dir / "run.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _measure_cmd(run_dir, *extra):
    return [
        sys.executable,
        "-m",
        "hallumeasure.cli",
        "measure",
        str(EXAMPLES),
        "--out",
        str(run_dir),
        "--extractor",
        "anthropic:claude-sim",
        "--judge",
        "anthropic:claude-sim",
        "--mode",
        "cot-one",
        "--concurrency",
        "2",
        "--max-concurrency",
        "2",
        *extra,
    ]


@pytest.mark.parametrize("kill_after", [2, 9])
def test_sigkill_then_resume_measures_every_sample_once_without_paying_twice(tmp_path, kill_after):
    run_dir = tmp_path / "run"
    with AnthropicServer(latency=0.03) as srv:
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": srv.base_url,
            "ANTHROPIC_API_KEY": "sk-test-dummy-key",
            "HALLUMEASURE_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": str(REPO),
        }
        proc = subprocess.Popen(_measure_cmd(run_dir), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while _count_results(run_dir) < kill_after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read()!r}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        stored_at_kill = _count_results(run_dir)
        assert kill_after <= stored_at_kill < 16
        calls_before = len(srv.requests)

        resumed = subprocess.run(_measure_cmd(run_dir, "--resume"), env=env, capture_output=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr.decode()
        bodies = [json.dumps(r.body, sort_keys=True) for r in srv.requests]
        again = subprocess.run(_measure_cmd(run_dir, "--resume"), env=env, capture_output=True, timeout=120)
        assert again.returncode == 0 and len(srv.requests) == len(bodies)  # a finished run costs nothing

    with sqlite3.connect(run_dir / "run.sqlite") as conn:
        ids = [row[0] for row in conn.execute("SELECT sample_id FROM results")]
        n_claims = conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
        n_verdicts = conn.execute("SELECT COUNT(*) FROM verdicts WHERE error IS NULL").fetchone()[0]
        orphans = conn.execute("SELECT COUNT(*) FROM claims WHERE sample_id NOT IN (SELECT sample_id FROM results)")
        assert orphans.fetchone()[0] == 0
    assert sorted(ids) == sorted({json.loads(line)["id"] for line in EXAMPLES.read_text().splitlines()})
    assert n_claims == n_verdicts > 0
    # Only requests that were in flight when the process died may be sent twice (at most the concurrency).
    repeated = sum(n - 1 for n in collections.Counter(bodies).values())
    assert repeated <= 2, f"{repeated} requests were paid twice"
    assert calls_before > 0 and len(bodies) > calls_before
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["counts"]["results"] == 16
