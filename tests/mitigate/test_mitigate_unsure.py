"""Mitigation never rewrites a claim its judge could not tell; it counts such claims as left for an LLM check."""

from __future__ import annotations

from mitigate.test_mitigate import ROUND_ONE, SAMPLES, TableJudge, rewriter_for, sent_responses
from unsure_judge import UnsureJudge

from hallumeasure.core.types import Mode
from hallumeasure.detectors.conli import SentenceExtractor
from hallumeasure.mitigate import mitigate_run
from hallumeasure.mitigate.rounds import unsupported_issues
from hallumeasure.models.fake import prompt_blocks
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.runs.store import RunStore

#: The judge could not tell these; its guesses stay what the table says.
UNSURE = {"Gamma is huge.", "Beta is blue."}


def _judge() -> UnsureJudge:
    return UnsureJudge(TableJudge(), lambda claim, verdict: claim.text in UNSURE)


def test_unsure_claims_are_never_sent_and_are_counted_as_left(tmp_path):
    source = tmp_path / "source"
    run_measurement(SAMPLES, source, SentenceExtractor(), _judge(), mode=Mode.COT_ONE, input_sha256="0" * 64)
    rewriter, api = rewriter_for(ROUND_ONE)
    report = mitigate_run(source, tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=_judge())

    # s2's only unsupported claim is an unsure guess: not sent. s3 and s4 have confident unsupported claims.
    assert sent_responses(api) == [SAMPLES[2].response, SAMPLES[3].response]
    issues = [body for r in api.requests for _, body in prompt_blocks(r, "issue")]
    assert issues and not any("Gamma is huge." in body or "Beta is blue." in body for body in issues)
    rows = {r.sample_id: r for r in report.responses}
    assert not rows["s2"].sent and rows["s2"].final == SAMPLES[1].response
    assert rows["s2"].left_for_llm_check == ["Gamma is huge."] and rows["s2"].removed == []
    assert rows["s1"].left_for_llm_check == ["Beta is blue."]
    # s3 was rewritten to "Beta is blue. Delta has 41 rooms.": its unsure claim is left, never listed as fixed or lost
    assert rows["s3"].left_for_llm_check == ["Beta is blue."] and "Beta is blue." not in rows["s3"].lost_supported
    assert report.n_left_for_llm_check == sum(len(r.left_for_llm_check) for r in report.responses) == 3
    assert report.n_responses_left_for_llm_check == 3
    assert any("never rewritten" in note for note in report.notes)
    markdown = (tmp_path / "fixed" / "mitigation.md").read_text()
    assert "left for an LLM check: 3 unsure claims in 3 responses" in markdown
    assert "- s2: Gamma is huge." in markdown and "- s3: Beta is blue." in markdown
    html = (tmp_path / "fixed" / "mitigation.html").read_text()
    assert "Claims left for an LLM check" in html and "<li>s2: <q>Gamma is huge.</q></li>" in html


def test_unsupported_issues_skip_unsure_verdicts(tmp_path):
    run_measurement(SAMPLES, tmp_path / "r", SentenceExtractor(), _judge(), mode=Mode.COT_ONE, input_sha256="0" * 64)
    with RunStore(tmp_path / "r") as store:
        results = {r.sample_id: r for r in store.results()}
    from hallumeasure.core.labels import Policy

    assert unsupported_issues(results["s2"], Policy()) == []
    assert [i.claim.text for i in unsupported_issues(results["s3"], Policy())] == ["Delta has 42 rooms."]


def test_a_confident_run_mentions_nothing_left(tmp_path):
    source = tmp_path / "source"
    run_measurement(SAMPLES, source, SentenceExtractor(), TableJudge(), mode=Mode.COT_ONE, input_sha256="0" * 64)
    rewriter, _ = rewriter_for(ROUND_ONE)
    report = mitigate_run(source, tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=TableJudge())
    assert report.n_left_for_llm_check == 0
    assert "LLM check" not in (tmp_path / "fixed" / "mitigation.md").read_text()
