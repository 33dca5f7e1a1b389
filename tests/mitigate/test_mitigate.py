"""Mitigation: who is sent, the before/after bookkeeping, rounds, the new run, the report, the offline rewriter."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from report.helpers import XSS_PAYLOADS, assert_escaped
from testdata import EXAMPLES

from hallumeasure.core.errors import ConfigError, RunStoreError
from hallumeasure.core.labels import Label, Policy
from hallumeasure.core.types import Claim, ClaimVerdict, Mode, Sample, Span
from hallumeasure.detectors.conli import SentenceExtractor
from hallumeasure.detectors.rewrite import Issue, LLMRewriter, OfflineRewriter, issues_block
from hallumeasure.detectors.scripted import scripted_responder
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.judges.protocols import Judgement
from hallumeasure.mitigate import diff_html, mitigate_run, similarity
from hallumeasure.models.fake import FakeAPI, prompt_blocks
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.run import load_run
from hallumeasure.runs.store import RunStore

CONTEXT = "Alpha is red. Beta is blue. Delta has 40 rooms."

#: How the table judge labels each sentence; anything else is supported.
LABELS: dict[str, tuple[str, str | None, str]] = {
    "Gamma is huge.": ("absent", "other", "The context never mentions Gamma."),
    "Delta has 42 rooms.": ("contradicted", "number", "The context gives 40 rooms."),
    "Delta has 41 rooms.": ("contradicted", "number", "The context gives 40 rooms."),
    "Omega is vast.": ("absent", "other", "Nothing about Omega."),
    "Zeta sells fish.": ("absent", "other", "Nothing about Zeta."),
}

SAMPLES = [
    Sample(id="s1", context=CONTEXT, response="Alpha is red. Beta is blue."),
    Sample(id="s2", context=CONTEXT, response="Alpha is red. Gamma is huge."),
    Sample(id="s3", context=CONTEXT, response="Beta is blue. Delta has 42 rooms."),
    Sample(id="s4", context=CONTEXT, response="Alpha is red. Beta is blue. Omega is vast."),
]

#: Round one: s2 fixed by removal, s3 still wrong, s4 loses a supported claim and gains a new unsupported one.
ROUND_ONE = {
    "Alpha is red. Gamma is huge.": "Alpha is red.",
    "Beta is blue. Delta has 42 rooms.": "Beta is blue. Delta has 41 rooms.",
    "Alpha is red. Beta is blue. Omega is vast.": "Alpha is red. Zeta sells fish.",
}
#: Round two repairs what round one left.
ROUND_TWO = {"Beta is blue. Delta has 41 rooms.": "Beta is blue.", "Alpha is red. Zeta sells fish.": "Alpha is red."}


class TableJudge:
    """Labels sentences from ``LABELS``; counts the claims it judged."""

    name = "table"

    def __init__(self) -> None:
        self.judged: list[str] = []

    def settings(self) -> dict[str, Any]:
        return {"table": len(LABELS)}

    async def judge(self, sample: Sample, claims) -> Judgement:
        verdicts = []
        for claim in claims:
            self.judged.append(claim.text)
            label, subtype, reason = LABELS.get(claim.text, ("supported", None, "Stated in the context."))
            verdicts.append(
                ClaimVerdict(claim_id=claim.id, label=label, subtype=subtype, label_reason=reason, judge=self.name)
            )
        return Judgement(verdicts=verdicts)


def rewriter_for(*tables: dict[str, str]) -> tuple[LLMRewriter, FakeAPI]:
    def answer(request):
        (response,) = [body for _, body in prompt_blocks(request, "response")]
        for table in tables:
            if response in table:
                return {"reasoning": "following the issues", "rewritten_response": table[response]}
        return {"reasoning": "nothing to change", "rewritten_response": response}

    api = FakeAPI("rewriter", responder=answer)
    return LLMRewriter(Model(api)), api


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "source"
    run_measurement(SAMPLES, path, SentenceExtractor(), TableJudge(), mode=Mode.COT_ONE, input_sha256="0" * 64)
    return path


def sent_responses(api: FakeAPI) -> list[str]:
    return [body for r in api.requests for _, body in prompt_blocks(r, "response")]


def test_mitigation_rate_retention_and_new_claims_on_a_hand_made_case(source, tmp_path):
    rewriter, api = rewriter_for(ROUND_ONE)
    judge = TableJudge()
    report = mitigate_run(source, tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=judge)

    assert sent_responses(api) == [s.response for s in SAMPLES[1:]]  # s1 has no unsupported claim
    # Only the three rewrites are measured again; s1 is copied as it was.
    assert sorted(judge.judged) == sorted(
        ["Alpha is red.", "Beta is blue.", "Delta has 41 rooms.", "Alpha is red.", "Zeta sells fish."]
    )
    assert report.n_sent == 3 and report.n_rewritten == 3
    assert report.n_originally_hallucinated == 3 and report.n_mitigated == 1
    assert report.mitigation_rate == pytest.approx(1 / 3)
    assert (report.supported_before, report.retained) == (4, 3)
    assert report.retention == pytest.approx(3 / 4)
    assert report.n_new_unsupported == 1 and report.n_responses_with_new_unsupported == 1
    rows = {r.sample_id: r for r in report.responses}
    assert not rows["s1"].sent and rows["s1"].final == SAMPLES[0].response
    assert rows["s2"].removed == ["Gamma is huge."] and rows["s2"].after.hallucinated is False
    assert rows["s3"].still_unsupported == ["Delta has 42 rooms."] and not rows["s3"].new_unsupported
    assert rows["s4"].lost_supported == ["Beta is blue."] and rows["s4"].removed == ["Omega is vast."]
    assert [c.text for c in rows["s4"].new_unsupported] == ["Zeta sells fish."]
    assert report.before.hallucinated_share == pytest.approx(3 / 4)
    assert report.after.hallucinated_share == pytest.approx(2 / 4)
    assert report.rewrite_requests == 3
    assert report.rewrite_usage.output_tokens == sum(r.rewrite_usage.output_tokens for r in report.responses) > 0
    assert report.rounds_kept == 1 and len(report.rounds) == 1


def test_the_mitigated_run_is_a_normal_run_with_its_origin_recorded(source, tmp_path):
    rewriter, _ = rewriter_for(ROUND_ONE)
    mitigate_run(source, tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=TableJudge())
    data = load_run(tmp_path / "fixed")
    manifest = data.manifest
    assert manifest.status == "complete" and manifest.detector == "claims" and manifest.judge == "table"
    assert manifest.settings["mitigated_from"]["run_id"] == "source"
    assert manifest.settings["rewriter"]["name"] == "fake:rewriter"
    assert manifest.settings["rounds"]["requested"] == 1 and manifest.settings["rounds"]["kept"] == 1
    assert list(data.responses["sample_id"]) == ["s1", "s2", "s3", "s4"]
    assert list(data.responses["response"]) == [SAMPLES[0].response, *ROUND_ONE.values()]
    assert list(data.responses["hallucinated"]) == [False, False, True, True]
    # Copied responses cost nothing in the new run; the usage there is the cost of re-measuring.
    assert json.loads((tmp_path / "fixed" / "mitigation.json").read_text())["mitigation_rate"] == pytest.approx(1 / 3)
    assert (tmp_path / "fixed" / "mitigation.md").exists() and (tmp_path / "fixed" / "mitigation.html").exists()


def test_rounds_repeat_while_the_rate_falls(source, tmp_path):
    rewriter, api = rewriter_for(ROUND_ONE, ROUND_TWO)
    report = mitigate_run(
        source, tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=TableJudge(), rounds=3
    )
    assert [r.sent for r in report.rounds] == [3, 2]  # round three finds nothing left to send
    assert all(r.kept for r in report.rounds) and report.rounds_kept == 2
    assert report.mitigation_rate == 1.0 and report.n_new_unsupported == 0
    assert api.calls == 5
    assert {r.sample_id: r.rounds for r in report.responses} == {"s1": 0, "s2": 1, "s3": 2, "s4": 2}


def test_a_round_that_does_not_help_is_discarded(source, tmp_path):
    worse = {
        "Beta is blue. Delta has 41 rooms.": "Beta is blue. Delta has 41 rooms. Omega is vast.",
        "Alpha is red. Zeta sells fish.": "Zeta sells fish.",
    }
    rewriter, _ = rewriter_for(ROUND_ONE, worse)
    report = mitigate_run(
        source, tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=TableJudge(), rounds=3
    )
    assert [r.kept for r in report.rounds] == [True, False]
    assert report.rounds[1].mean_unsupported_rate_after > report.rounds[1].mean_unsupported_rate_before
    rows = {r.sample_id: r for r in report.responses}
    assert rows["s3"].final == ROUND_ONE[SAMPLES[2].response]  # round two's text was not kept
    assert report.mitigation_rate == pytest.approx(1 / 3)
    assert report.rewrite_requests == 5  # the discarded round's calls are still counted


def test_a_failed_rewrite_keeps_the_response_and_is_not_mitigated(source, tmp_path):
    api = FakeAPI("broken", responder=lambda request: "I would rather not.")
    report = mitigate_run(
        source,
        tmp_path / "fixed",
        LLMRewriter(Model(api), max_reasks=1),
        extractor=SentenceExtractor(),
        judge=TableJudge(),
    )
    assert report.n_rewrite_errors == 3 and report.n_mitigated == 0 and report.mitigation_rate == 0.0
    assert all(r.final == r.original for r in report.responses)
    assert api.calls == 3 * 2  # one ask and one re-ask per sent response


def test_a_rewrite_over_the_work_limit_keeps_the_original_and_says_why(source, tmp_path):
    # s2's rewrite balloons past measure's 100,000-character limit: an error row that must not count as a fix
    ballooned = dict(ROUND_ONE, **{SAMPLES[1].response: "Alpha is red. " * 8_000})
    rewriter, _ = rewriter_for(ballooned)
    report = mitigate_run(source, tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=TableJudge())
    rows = {r.sample_id: r for r in report.responses}
    assert rows["s2"].final == SAMPLES[1].response and not rows["s2"].rewritten and rows["s2"].rounds == 0
    assert "could not be measured, the original is kept" in rows["s2"].rewrite_error
    assert "(max_response_chars)" in rows["s2"].rewrite_error
    assert rows["s3"].final == ROUND_ONE[SAMPLES[2].response]  # the others' rewrites still count


def test_refuses_an_existing_output_run_before_spending_anything(source, tmp_path):
    rewriter, api = rewriter_for(ROUND_ONE)
    other = tmp_path / "other"
    run_measurement(SAMPLES[:1], other, SentenceExtractor(), TableJudge(), mode=Mode.COT_ONE, input_sha256="0" * 64)
    with pytest.raises(RunStoreError, match="already holds a run; pass --overwrite"):
        mitigate_run(source, other, rewriter, extractor=SentenceExtractor(), judge=TableJudge())
    with pytest.raises(ConfigError, match="new directory"):
        mitigate_run(source, source, rewriter, extractor=SentenceExtractor(), judge=TableJudge())
    assert api.calls == 0


def test_issues_block_carries_label_subtype_reason_and_passage():
    sample = SAMPLES[2]
    claim = Claim(id="s3:c1", sample_id="s3", index=1, text="Delta has 42 rooms.", spans=(Span(start=14, end=33),))
    verdict = ClaimVerdict(
        claim_id="s3:c1",
        label=Label.CONTRADICTED,
        subtype="number",
        label_reason="The context gives 40 rooms.",
        judge="t",
    )
    block = issues_block([Issue(claim, verdict)], sample.response)
    ((issue_id, body),) = prompt_blocks_from_text(block, "issue")
    assert issue_id == "c1"
    assert "label: contradicted (number)" in body and "reason: The context gives 40 rooms." in body
    assert "in the response: Delta has 42 rooms." in body


def prompt_blocks_from_text(text: str, tag: str):
    from hallumeasure.models.base import GenerateRequest, Message

    return prompt_blocks(GenerateRequest(system="", messages=(Message.user(text),)), tag)


def test_report_escapes_untrusted_text(tmp_path):
    payload = " ".join(XSS_PAYLOADS)
    samples = [Sample(id="x1", context="Alpha is red.", response=f"Alpha is red. {payload}")]
    source = tmp_path / "source"
    run_measurement(samples, source, SentenceExtractor(), TableJudge(), mode=Mode.COT_ONE, input_sha256="0" * 64)

    class Evil(TableJudge):
        async def judge(self, sample, claims):
            verdicts = [
                ClaimVerdict(
                    claim_id=c.id,
                    label="supported" if c.index == 0 else "absent",
                    subtype=None if c.index == 0 else "other",
                    label_reason=payload,
                    judge="t",
                )
                for c in claims
            ]
            return Judgement(verdicts=verdicts)

    rewriter, _ = rewriter_for({samples[0].response: f"Alpha is red. New {payload}"})
    run_measurement(samples, tmp_path / "evil", SentenceExtractor(), Evil(), mode=Mode.COT_ONE, input_sha256="0" * 64)
    mitigate_run(tmp_path / "evil", tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=Evil())
    assert_escaped((tmp_path / "fixed" / "mitigation.html").read_text())
    assert "<script>" not in (tmp_path / "fixed" / "mitigation.md").read_text()
    assert str(diff_html("a <b>", "a <i>")) == "a &lt;<del>b</del><ins>i</ins>&gt;"


def test_alignment_keeps_numbers_whole():
    assert similarity("The bridge is 42 km long.", "the bridge is 42 km long") == 1.0
    assert similarity("The bridge is 42 km long.", "The bridge is 24 km long.") < 1.0
    assert similarity("Free users can create unlimited projects.", "Free users can create up to three projects.") >= 0.6
    assert similarity("All parties supported the plan.", "It was widely welcomed.") < 0.6


# --- the offline rewriter -----------------------------------------------------------------------------------


def issue(
    sample: Sample, text: str, label: str = "contradicted", subtype: str | None = "number", reason: str = ""
) -> Issue:
    start = sample.response.find(text)
    spans = (Span(start=start, end=start + len(text)),) if start >= 0 else ()
    return Issue(
        Claim(id=f"{sample.id}:c0", sample_id=sample.id, index=0, text=text, spans=spans),
        ClaimVerdict(claim_id=f"{sample.id}:c0", label=label, subtype=subtype, label_reason=reason, judge="t"),
    )


def offline(sample: Sample, *issues: Issue) -> str:
    return asyncio.run(OfflineRewriter().rewrite(sample, list(issues))).text


def test_offline_substitutes_the_one_aligned_value():
    s = Sample(
        id="b",
        context="The bridge is 24 km long. It opened in 2019.",
        response="The bridge is 42 km long. It opened in 2019.",
    )
    assert offline(s, issue(s, "The bridge is 42 km long.")) == "The bridge is 24 km long. It opened in 2019."


def test_offline_uses_the_reason_when_the_passage_is_ambiguous():
    s = Sample(
        id="b",
        context="The east bridge is 24 km long and the west bridge is 18 km long.",
        response="The east bridge is 42 km long.",
    )
    assert offline(s, issue(s, "The east bridge is 42 km long.")) == ""  # two candidates: removed
    fixed = offline(s, issue(s, "The east bridge is 42 km long.", reason="The context says 24 km for it."))
    assert fixed == "The east bridge is 24 km long."


def test_offline_removes_the_clause_or_the_sentence():
    s = Sample(
        id="c",
        context="TaskPilot 5.0 adds offline mode. Free users get three projects.",
        response="TaskPilot 5.0 adds offline mode, and it is available on iOS today. Free users get three "
        "projects. It is the best app ever.",
    )
    out = offline(
        s,
        issue(s, "TaskPilot 5.0 is available on iOS today.", "absent", "other"),
        issue(s, "It is the best app ever.", "absent", "hyperbole"),
    )
    assert out == "TaskPilot 5.0 adds offline mode. Free users get three projects."


def test_offline_cuts_only_the_unsupported_piece_of_a_sentence():
    s = Sample(
        id="p",
        context="Breathex cut severe attacks by 31 percent.",
        response="Breathex cut severe attacks by 31 percent and is safe for long-term use. Headaches were rare.",
    )
    out = offline(s, issue(s, "is safe for long-term use.", "absent", "other"))
    assert out == "Breathex cut severe attacks by 31 percent. Headaches were rare."


def test_offline_deletion_wins_over_a_substitution_in_the_same_sentence_and_is_deterministic():
    s = Sample(id="d", context="The bridge is 24 km long.", response="The bridge is 42 km long and painted gold.")
    issues = [
        issue(s, "The bridge is 42 km long"),
        issue(s, "The bridge is 42 km long and painted gold.", "absent", "other"),
    ]
    assert offline(s, *issues) == offline(s, *reversed(issues)) == ""


def test_offline_substitutes_money_and_entities():
    s = Sample(
        id="e",
        context="The council approved a budget of 4.2 million euros. Mayor Ingrid Solberg backed it.",
        response="The council approved 2.4 million euros. Mayor Anna Berg backed it.",
    )
    out = offline(
        s, issue(s, "The council approved 2.4 million euros."), issue(s, "Mayor Anna Berg backed it.", subtype="entity")
    )
    assert out == "The council approved 4.2 million euros. Mayor Ingrid Solberg backed it."


# --- end to end on the examples -----------------------------------------------------------------------------


def _examples_run(tmp_path):
    loaded = load_samples(EXAMPLES)
    model = Model(FakeAPI("scripted", responder=scripted_responder))
    path = tmp_path / "claims"
    run_measurement(
        loaded.samples, path, LLMExtractor(model), LLMJudge(model), mode=Mode.COT_ONE, input_sha256=loaded.sha256
    )
    return path, loaded.samples


def _scripted_model(spec):
    """Every judge spec gets the scripted fake (the re-measure after a rewrite)."""
    return Model(FakeAPI("scripted", responder=scripted_responder))


def test_examples_with_the_scripted_fake_fix_some_and_break_one(tmp_path):
    path, samples = _examples_run(tmp_path)
    before = {r["sample_id"]: r for r in load_run(path).responses.to_dict(orient="records")}
    api = FakeAPI("scripted", responder=scripted_responder)
    report = mitigate_run(path, tmp_path / "fixed", LLMRewriter(Model(api)), model_for=_scripted_model)

    clean = {sid for sid, row in before.items() if row["n_unsupported"] == 0}
    assert clean, "the examples should hold at least one clean response"
    sent = set(sent_responses(api))
    assert not sent & {s.response for s in samples if s.id in clean}
    assert len(sent) == report.n_sent == len(samples) - len(clean)
    assert 0 < report.mitigation_rate < 1
    assert report.after.mean_unsupported_rate < report.before.mean_unsupported_rate
    broken = {r.sample_id for r in report.responses if r.new_unsupported}
    assert "harbor-b" in broken
    fixed = {r.sample_id: r for r in report.responses}["harbor-b"]
    assert "4.2 million euros" in fixed.final and "2.4 million" not in fixed.final
    assert report.mean_output_tokens_per_rewrite > 0


def test_examples_with_the_offline_rewriter(tmp_path):
    path, _ = _examples_run(tmp_path)
    report = mitigate_run(path, tmp_path / "fixed", OfflineRewriter(), model_for=_scripted_model)
    assert report.rewrite_usage.output_tokens == 0 and report.rewriter == "offline"
    assert report.mitigation_rate > 0.5
    assert report.retention == 1.0


def test_offline_judge_end_to_end(tmp_path):
    offline_module = pytest.importorskip(
        "hallumeasure.judges.offline", reason="the offline judge is not in this tree yet"
    )
    loaded = load_samples(EXAMPLES)
    path = tmp_path / "offline"
    _, results = run_measurement(
        loaded.samples,
        path,
        offline_module.OfflineExtractor(),
        offline_module.OfflineJudge(),
        mode=Mode.COT_ONE,
        input_sha256=loaded.sha256,
    )
    errors = [r.error for r in results if r.error]
    assert not errors, f"the offline judge itself failed on the examples: {errors[:1]}"
    report = mitigate_run(path, tmp_path / "fixed", OfflineRewriter())
    assert report.n_sent >= 1 and report.rewrite_usage.calls == 0
    assert load_run(tmp_path / "fixed").manifest.judge == load_run(path).manifest.judge
    # Only unsupported claims are removed or repaired: every claim the offline judge found supported in the
    # demo is still there (and still supported), and no response that had one is emptied.
    assert report.retention == 1.0 and report.supported_before > 0
    assert not [r.sample_id for r in report.responses if r.emptied and r.supported_before > 0]
    trial = {r.sample_id: r for r in report.responses}["trial-b"]
    assert trial.final.startswith("Breathex cut severe asthma attacks by 31 percent")  # its supported clause stays


def test_policy_decides_what_is_sent(tmp_path):
    policy = Policy(unsupported_labels=frozenset({Label.CONTRADICTED}))
    source = tmp_path / "source"
    run_measurement(
        SAMPLES, source, SentenceExtractor(), TableJudge(), mode=Mode.COT_ONE, input_sha256="0" * 64, policy=policy
    )
    rewriter, api = rewriter_for(ROUND_ONE)
    report = mitigate_run(source, tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=TableJudge())
    assert sent_responses(api) == [SAMPLES[2].response]  # only the contradicted claim counts under this policy
    assert report.n_originally_hallucinated == 1


def test_an_emptied_response_is_counted_apart_not_as_mitigated(source, tmp_path):
    # s2 is repaired (the bad sentence goes, a supported one stays); s3 and s4 lose every sentence.
    emptying = {
        "Alpha is red. Gamma is huge.": "Alpha is red.",
        "Beta is blue. Delta has 42 rooms.": "",
        "Alpha is red. Beta is blue. Omega is vast.": "",
    }
    rewriter, _ = rewriter_for(emptying)
    report = mitigate_run(source, tmp_path / "fixed", rewriter, extractor=SentenceExtractor(), judge=TableJudge())
    assert report.n_originally_hallucinated == 3
    assert report.n_mitigated == 1 and report.mitigation_rate == pytest.approx(1 / 3)
    assert report.n_emptied == 2 and report.n_hallucinated_emptied == 2
    assert report.n_clean == 3 and report.clean_rate == 1.0
    assert {r.sample_id for r in report.responses if r.emptied} == {"s3", "s4"}
    markdown = (tmp_path / "fixed" / "mitigation.md").read_text()
    assert "- mitigation rate: **33.3%** (1 of 3" in markdown
    assert "2** of 3 hallucinated responses lost every checkable claim (not counted as mitigated)" in markdown
    saved = json.loads((tmp_path / "fixed" / "mitigation.json").read_text())
    assert saved["n_emptied"] == 2 and saved["clean_rate"] == 1.0


def test_the_rewrites_are_measured_with_the_source_runs_settings(tmp_path):
    """A run measured with a context budget and user turns as sources is re-measured with the same: the
    mitigated run's manifest records them, and each rewrite's result is what ``check`` gives it under them."""
    import hallumeasure as h

    settings = {"max_context_tokens": 40, "user_turns": True}
    h.measure(EXAMPLES, out=tmp_path / "run", **settings)
    report = mitigate_run(tmp_path / "run", tmp_path / "fixed", OfflineRewriter())
    source, fixed = load_run(tmp_path / "run"), load_run(tmp_path / "fixed")
    assert fixed.manifest.settings["sources"] == source.manifest.settings["sources"]
    assert fixed.manifest.settings["sources"]["context_budget_tokens"] == 40
    effective = fixed.manifest.settings["effective"]
    assert effective["max_context_tokens"] == 40 and effective["user_turns"] is True
    changed = [r for r in report.responses if r.final != r.original]
    assert changed
    with RunStore(tmp_path / "fixed") as store:
        by_id = {s.id: s for s in store.samples()}
        results = {r.sample_id: r for r in store.results()}
    for response in changed:
        sample = by_id[response.sample_id]
        again = h.check(sample, **settings)
        assert again.unsupported_rate == results[sample.id].unsupported_rate
        assert [c.label for c in again.claims] == [v.label for v in results[sample.id].verdicts]
