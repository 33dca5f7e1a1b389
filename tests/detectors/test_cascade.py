"""The constrained-reasoner cascade: who is flagged, exact call and feedback counts, what a category does."""

from __future__ import annotations

import asyncio

import pytest
from detectors.example_runs import measure_examples

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.types import Claim, ClaimVerdict, Sample
from hallumeasure.detectors import build_stages
from hallumeasure.detectors.cascade import FLIPPED_NOTE, CascadeJudge
from hallumeasure.detectors.scripted import scripted_responder
from hallumeasure.judges.protocols import Judgement
from hallumeasure.models.fake import FakeAPI, prompt_blocks
from hallumeasure.models.model import Model
from hallumeasure.pipeline.measurement import Measurement, save_detector_stats
from hallumeasure.runs.run import load_run

SAMPLE = Sample(id="s", context="Some context.", response="unused")

#: claim text -> first-pass (label, subtype, probability); "error" makes an error row.
FIRST_PASS = {
    "plain fact": ("supported", None, 0.1),  # not flagged
    "risky fact": ("supported", None, 0.7),  # flagged by probability only
    "made-up fact": ("absent", "other", 0.9),  # flagged; the reasoner finds no problem
    "wrong number": ("contradicted", "number", 0.95),  # flagged; the reasoner agrees
    "big claim": ("partially_supported", "hyperbole", 0.6),  # flagged; the reasoner finds no problem
    "a question?": ("unevaluatable", None, None),  # not flagged
    "broken": "error",  # an error row stays an error row
}
#: claim text -> the reasoner's category
REASONER = {
    "risky fact": "hyperbole",
    "made-up fact": "no_problem_found",
    "wrong number": "number",
    "big claim": "no_problem_found",
}
SECRET = "the reasoner's private musing"


class TableFirstPass:
    name = "first"

    def settings(self):
        return {"table": True}

    async def judge(self, sample, claims):
        out = []
        for claim in claims:
            spec = FIRST_PASS[claim.text]
            if spec == "error":
                out.append(ClaimVerdict(claim_id=claim.id, judge=self.name, error="first pass failed"))
                continue
            label, subtype, probability = spec
            out.append(
                ClaimVerdict(
                    claim_id=claim.id,
                    label=label,
                    subtype=subtype,
                    probability=probability,
                    label_reason=f"first pass on {claim.text}",
                    judge=self.name,
                )
            )
        return Judgement(verdicts=out, score=0.5)


def reasoner() -> FakeAPI:
    def answer(request):
        (claim,) = [body for _, body in prompt_blocks(request, "claim")]
        (flag,) = [body for _, body in prompt_blocks(request, "flag")]
        assert flag.startswith("label: ")
        category = REASONER[claim]
        return {"reason": SECRET if category == "no_problem_found" else f"why {claim}", "category": category}

    return FakeAPI("reasoner", responder=answer)


def claims() -> list[Claim]:
    return [Claim(id=f"s:c{i}", sample_id="s", index=i, text=text) for i, text in enumerate(FIRST_PASS)]


def run(api: FakeAPI, **options):
    judge = CascadeJudge(TableFirstPass(), Model(api), **options)
    return asyncio.run(judge.judge(SAMPLE, claims())), judge


def test_only_flagged_claims_reach_the_llm_and_the_counts_are_exact():
    api = reasoner()
    judgement, judge = run(api)
    asked = sorted(body for r in api.requests for _, body in prompt_blocks(r, "claim"))
    assert asked == sorted(REASONER)
    stats = judge.stats()
    assert stats["claims_seen"] == 7 and stats["flagged"] == 4
    assert stats["llm_requests"] == stats["llm_provider_calls"] == api.calls == 4
    assert stats["llm_calls_avoided"] == 3 and stats["first_pass_errors"] == 1
    assert stats["feedback_no_problem_found"] == 2
    assert stats["feedback_by_first_pass_subtype"] == {"hyperbole": 1, "other": 1}
    assert stats["overrule_rate"] == 0.5
    assert stats["categories"] == {"hyperbole": 1, "no_problem_found": 2, "number": 1}
    assert judgement.score == 0.5 and judgement.usage.calls == 4


def test_what_each_answer_does_to_the_verdict():
    judgement, _ = run(reasoner())
    v = {c.text: verdict for c, verdict in zip(claims(), judgement.verdicts, strict=True)}
    assert v["plain fact"].label == Label.SUPPORTED and v["plain fact"].judge == "first"
    # Flagged by probability only: the label comes from the category.
    assert (v["risky fact"].label, v["risky fact"].subtype) == (Label.PARTIALLY_SUPPORTED, Subtype.HYPERBOLE)
    assert v["risky fact"].label_reason == "why risky fact"
    # The first pass's unsupported label stays; the reasoner's reason and category replace the first pass's.
    assert (v["wrong number"].label, v["wrong number"].subtype) == (Label.CONTRADICTED, Subtype.NUMBER)
    assert v["wrong number"].label_reason == "why wrong number" and v["wrong number"].judge == "first+fake:reasoner"
    # no_problem_found: the flag is withdrawn and the reasoner's text is shown nowhere.
    for text in ("made-up fact", "big claim"):
        assert v[text].label == Label.SUPPORTED and v[text].subtype is None
        assert v[text].label_reason == FLIPPED_NOTE
    assert all(SECRET not in (x.model_dump_json()) for x in judgement.verdicts)
    assert v["a question?"].label == Label.UNEVALUATABLE
    assert not v["broken"].ok


def test_without_flipping_the_first_pass_verdict_is_kept():
    judgement, judge = run(reasoner(), flip_no_problem=False)
    v = {c.text: verdict for c, verdict in zip(claims(), judgement.verdicts, strict=True)}
    assert v["made-up fact"].label == Label.ABSENT and v["made-up fact"].label_reason == "first pass on made-up fact"
    assert all(SECRET not in x.model_dump_json() for x in judgement.verdicts)
    assert judge.stats()["feedback_no_problem_found"] == 2


def test_without_a_threshold_only_policy_labels_are_flagged():
    api = reasoner()
    _, judge = run(api, threshold=None)
    assert api.calls == 3 and judge.stats()["llm_calls_avoided"] == 4


def test_an_unusable_explanation_keeps_the_first_pass_verdict():
    api = FakeAPI("reasoner", responder=lambda request: "no idea")
    judgement, judge = run(api, max_reasks=1)
    v = {c.text: verdict for c, verdict in zip(claims(), judgement.verdicts, strict=True)}
    assert v["wrong number"].label_reason == "first pass on wrong number" and v["risky fact"].label == Label.SUPPORTED
    assert judge.stats()["explain_errors"] == 4 and judge.stats()["llm_requests"] == 4
    assert judge.stats()["llm_provider_calls"] == api.calls == 8  # each asked once and re-asked once


def test_cascade_run_on_the_examples_records_its_stats(tmp_path):
    model = Model(FakeAPI("scripted", responder=scripted_responder))
    extractor, judge = build_stages(
        "cascade",
        extractor="fake:scripted",
        judge="fake:scripted",
        first_pass="fake:scripted",
        model_for=lambda spec: model,
    )
    manifest, results = measure_examples(tmp_path / "cascade", "cascade", extractor, judge)
    stats = save_detector_stats(tmp_path / "cascade", judge)
    data = load_run(tmp_path / "cascade")
    assert data.manifest.detector == "cascade" and data.manifest.settings["detector_stats"] == stats
    assert {"cascade_explain.v1", "classify_cot_one.v4"} <= set(manifest.prompts)
    n_claims = sum(r.n_claims for r in results)
    assert stats["claims_seen"] == n_claims and stats["llm_calls_avoided"] == n_claims - stats["flagged"]
    assert 0 < stats["flagged"] < n_claims and stats["feedback_no_problem_found"] > 0
    explain_requests = [r for r in model.api.requests if r.tool.name == "record_explanation"]
    assert len(explain_requests) == stats["llm_requests"] == stats["flagged"]
    rebuilt = Measurement.of_run(data.manifest).stages(models=lambda spec: model).judge
    assert isinstance(rebuilt, CascadeJudge) and rebuilt.name == judge.name


def test_the_cascade_needs_an_llm_reasoner():
    with pytest.raises(ConfigError, match="needs an LLM"):
        build_stages("cascade", judge="offline")
    with pytest.raises(ConfigError, match="detector must be one of"):
        build_stages("ensemble")


def test_cascade_with_the_offline_first_pass(tmp_path):
    pytest.importorskip("hallumeasure.judges.offline", reason="the offline judge is not in this tree yet")
    api = FakeAPI("scripted", responder=scripted_responder)
    extractor, judge = build_stages("cascade", judge="fake:scripted", model_for=lambda spec: Model(api))
    measure_examples(tmp_path / "cascade", "cascade", extractor, judge)
    stats = judge.stats()
    assert stats["llm_requests"] == stats["flagged"] == api.calls
    assert stats["llm_calls_avoided"] == stats["claims_seen"] - stats["flagged"]
