"""``minicheck:<provider:model>``: the MiniCheck question asked of a generative checker behind an
OpenAI-compatible server (the simulator answers as Bespoke-MiniCheck would: yes or no)."""

import json

import pytest
from typer.testing import CliRunner

from hallumeasure.core.labels import Label
from hallumeasure.core.types import Claim, Sample
from hallumeasure.judges.build import build_judge
from hallumeasure.judges.checkers.minicheck import MiniCheckJudge
from hallumeasure.testing import OpenAIServer
from hallumeasure.testing.calls import Answer


def user_text(body):
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def checker(body):
    text = user_text(body)
    document = text.split("Document:", 1)[1].split("Claim:", 1)[0]
    claim = text.split("Claim:", 1)[1].split("\n", 1)[0].strip()
    if claim.startswith("garbled"):
        return Answer(text="Maybe, it depends.")
    return Answer(text="Yes" if claim.split()[-1].rstrip(".") in document else "No")


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "unused-by-the-simulator")
    with OpenAIServer(handler=checker) as srv:
        yield srv


def test_the_minicheck_question_is_asked_per_claim_and_answers_become_labels(server):
    spec = f"minicheck:openai:bespoke-minicheck-7b?base_url={server.base_url}"
    judge = build_judge(spec)
    assert isinstance(judge, MiniCheckJudge) and judge.prompt.key == "minicheck.v1"
    sample = Sample(id="s", context="The ferry sails twice a day from Port Allan.", response="x")
    claims = [
        Claim(id="a", sample_id="s", index=0, text="The ferry leaves from Allan."),
        Claim(id="b", sample_id="s", index=1, text="The ferry sails from Skerry."),
        Claim(id="c", sample_id="s", index=2, text="garbled claim"),
    ]
    import asyncio

    out = asyncio.run(judge.judge(sample, claims))
    yes, no, bad = out.verdicts
    assert yes.label is Label.SUPPORTED and yes.evidence[0].quote == sample.context
    assert no.label is Label.ABSENT and no.subtype is None
    assert bad.label is None and bad.error and bad.raw_output == "Maybe, it depends."
    first = user_text(server.requests[0].body)
    assert first.startswith("Determine whether the provided claim is consistent") and "Document: The ferry" in first
    assert out.usage.calls == 3


def test_measure_with_a_minicheck_judge_from_the_command_line(server, tmp_path):
    from hallumeasure.cli.main import app

    data = tmp_path / "in.jsonl"
    data.write_text(
        json.dumps({"id": "a", "context": "The ferry sails from Allan.", "response": "It sails from Allan."})
    )
    spec = f"minicheck:openai:bespoke-minicheck-7b?base_url={server.base_url}"
    done = CliRunner().invoke(
        app, ["measure", str(data), "--out", str(tmp_path / "run"), "--judge", spec, "--no-cache"]
    )
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge"] == "minicheck:openai:bespoke-minicheck-7b"
    assert manifest["prompts"].get("minicheck.v1") or "minicheck" in json.dumps(manifest["settings"])
