"""A score for every response: question-only answers, the CoNLI detector over the offline judge, empty answers."""

from __future__ import annotations

import asyncio
import json

from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.labels import Label, Policy
from hallumeasure.core.types import Sample
from hallumeasure.detectors.conli import ConliJudge, OfflineNliJudge, SentenceExtractor
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.runs.store import RunStore

CONTEXT = (
    "The Harbour Bridge is 24 km long and opened in 2019. It cost 300 million euros. "
    "Engineers expect it to carry 40,000 cars a day."
)


def _judge(response: str):
    sample = Sample(id="s", context=CONTEXT, response=response)
    claims = OfflineExtractor().claims(sample)
    return sample, claims, OfflineJudge().judge_now(sample, claims)


def test_a_response_of_only_questions_is_unevaluatable_never_cleared_with_the_reason():
    sample, claims, judgement = _judge("Would you like to know more? Thanks for asking!")
    assert len(claims) == 2 and judgement.score is None
    assert all(v.label == Label.UNEVALUATABLE and "nothing to check" in v.label_reason for v in judgement.verdicts)
    result = summarise_response(sample, claims, judgement.verdicts, Policy(), score=judgement.score)
    assert result.hallucinated is None and result.decided is False and result.unsupported_rate is None


def test_an_empty_response_has_no_claim_and_no_score():
    _, claims, judgement = _judge("")
    assert claims == [] and judgement.verdicts == [] and judgement.score is None


def test_conli_over_the_offline_judge_writes_the_offline_response_score():
    sample = Sample(id="s", context=CONTEXT, response="The Harbour Bridge is 42 km long. It opened in 2019.")
    sentences = asyncio.run(SentenceExtractor().extract(sample)).claims
    conli = asyncio.run(ConliJudge(OfflineNliJudge()).judge(sample, sentences))
    _, _, offline = _judge(sample.response)
    assert conli.score is not None and conli.score == offline.score
    _, _, faithful = _judge("The Harbour Bridge is 24 km long.")
    assert faithful.score < conli.score


def test_an_empty_response_is_stored_as_a_result_with_no_claims_and_counted(tmp_path):
    rows = [
        {"id": "full", "context": CONTEXT, "response": "The Harbour Bridge is 24 km long."},
        {"id": "empty", "context": CONTEXT, "response": "   "},
        {"id": "question", "context": CONTEXT, "response": "Shall I tell you more?"},
    ]
    data = tmp_path / "in.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["measure", str(data), "--out", str(run), "--extractor", "offline", "--judge", "offline"]
    )
    assert result.exit_code == 0, result.output
    store = RunStore(run)
    try:
        by_id = {r.sample_id: r for r in store.results()}
    finally:
        store.close()
    assert set(by_id) == {"full", "empty", "question"}
    assert by_id["empty"].n_claims == 0 and by_id["empty"].error is None and by_id["empty"].score is None
    assert by_id["question"].score is None and by_id["full"].score is not None
    # nothing checkable: no flag, not decided (never cleared)
    assert by_id["question"].hallucinated is None and by_id["question"].decided is False
    assert by_id["empty"].hallucinated is None and by_id["empty"].decided is False
    summary = json.loads(CliRunner().invoke(app, ["show", str(run), "--json"]).output)["summary"]
    assert summary[0]["n_responses"] == 3
