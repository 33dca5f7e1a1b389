"""CoNLI hierarchical detection: entity rules, one re-check per entity, label mapping, runs."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from detectors.example_runs import measure_examples

from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.types import ClaimVerdict, Sample
from hallumeasure.detectors import build_stages
from hallumeasure.detectors.conli import ConliJudge, LLMNliJudge, OfflineNliJudge, SentenceExtractor
from hallumeasure.detectors.entities import EntityKind, appears_in, find_entities
from hallumeasure.detectors.scripted import scripted_responder
from hallumeasure.judges.protocols import Judgement
from hallumeasure.models.fake import FakeAPI, prompt_blocks
from hallumeasure.models.model import Model
from hallumeasure.pipeline.measurement import Measurement, save_detector_stats
from hallumeasure.runs.run import load_run

SAMPLE = Sample(
    id="s",
    context="The Kessel bridge is 24 km long. It opened in March 2019. Mayor Ana Ruiz cut the ribbon.",
    response=(
        "The Kessel bridge is 42 km long and opened in March 2019. "  # passes as a sentence, fails on 42
        "Mayor Ana Ruiz cut the ribbon. "  # passes everything
        "Dragons guard the bridge at night. "  # fails as a sentence (neutral)
        "Is it the longest bridge?"  # a question: not checked
    ),
)


def entities(text: str) -> list[tuple[str, str]]:
    return [(e.text, e.kind.value) for e in find_entities(text)]


def test_entity_rules_find_the_paper_kinds():
    assert entities("The Eastmere council approved 4.2 million euros on Tuesday.") == [
        ("Eastmere", "name"),
        ("council", "role"),
        ("4.2 million euros", "money"),
        ("on Tuesday", "date"),
    ]
    assert entities("Mayor Ingrid Solberg said work takes eighteen months and protects 300 homes.") == [
        ("Mayor", "role"),
        ("Ingrid Solberg", "person"),
        ("eighteen months", "duration"),
        ("300", "number"),
    ]
    assert entities("Heavy rain made the Alder River flood parts of Millbrook.") == [
        ("Alder River", "location"),
        ("flood", "event"),
        ("Millbrook", "name"),
    ]
    assert entities("It kept 90 percent of its capacity after 8,000 cycles, from 2027.") == [
        ("90 percent", "number"),
        ("8,000", "number"),
        ("from 2027", "date"),
    ]


def test_entity_lookup_normalises_values():
    (cycles,) = [e for e in find_entities("after 8,000 cycles") if e.kind == EntityKind.NUMBER]
    assert appears_in(cycles, "after 8000 charging cycles") and not appears_in(cycles, "after 800 cycles")
    (span,) = find_entities("a two-year renovation")[:1]
    assert appears_in(span, "a renovation that lasted two years")
    (ceo,) = [e for e in find_entities("CEO Paula Okafor spoke.") if e.kind == EntityKind.ROLE]
    assert appears_in(ceo, "Chief executive Paula Okafor spoke.")


def nli_fake() -> FakeAPI:
    """Sentence level: neutral for the dragons, entailment otherwise. Focus: contradiction for 42, else entailment."""

    def answer(request):
        focus = [body for _, body in prompt_blocks(request, "focus")]
        (hypothesis,) = [body for _, body in prompt_blocks(request, "hypothesis")]
        if focus:
            assert f"[ {focus[0]} ]" in hypothesis  # the focused entity is marked in the hypothesis
            return {"reason": "checked the marked part", "label": "contradiction" if focus[0] == "42" else "entailment"}
        if "Dragons" in hypothesis:
            return {"reason": "no dragons in the premise", "label": "neutral"}
        return {"reason": "the premise says so", "label": "entailment"}

    return FakeAPI("nli", responder=answer)


def judge_sample(api: FakeAPI, sample: Sample = SAMPLE, **options):
    judge = ConliJudge(LLMNliJudge(Model(api)), **options)
    claims = asyncio.run(SentenceExtractor().extract(sample)).claims
    return claims, asyncio.run(judge.judge(sample, claims)), judge


def test_one_recheck_per_entity_of_passing_sentences_only():
    api = nli_fake()
    claims, judgement, judge = judge_sample(api)
    assert [c.text for c in claims][-1] == "Is it the longest bridge?"
    assert [SAMPLE.response[c.spans[0].start : c.spans[0].end] for c in claims] == [c.text for c in claims]

    sentence_requests = [r for r in api.requests if not prompt_blocks(r, "focus")]
    focus = Counter(body for r in api.requests for _, body in prompt_blocks(r, "focus"))
    expected = [e.text for c in claims[:2] for e in find_entities(c.text)]
    assert expected == ["Kessel", "42", "March 2019", "Mayor", "Ana Ruiz"]
    assert focus == Counter(expected)  # once per entity, and none for the failed sentence or the question
    assert len(sentence_requests) == 3  # the question is never sent
    assert judge.stats() == {
        "sentences": 4,
        "skipped": 1,
        "sentence_checks": 3,
        "entity_checks": 5,
        "failed_sentence_level": 1,
        "failed_entity_level": 1,
        "errors": 0,
    }

    verdicts = judgement.verdicts
    assert [v.label for v in verdicts] == [Label.CONTRADICTED, Label.SUPPORTED, Label.ABSENT, Label.UNEVALUATABLE]
    assert verdicts[0].subtype == Subtype.NUMBER and verdicts[0].label_reason.startswith("[42]")
    assert verdicts[2].subtype == Subtype.OTHER and verdicts[2].label_reason == "no dragons in the premise"
    assert judgement.usage.calls == api.calls == 8


def test_entity_checks_can_be_turned_off_or_narrowed():
    api = nli_fake()
    _, judgement, _ = judge_sample(api, entity_checks=False)
    assert api.calls == 3 and judgement.verdicts[0].label == Label.SUPPORTED
    api = nli_fake()
    judge_sample(api, kinds=frozenset({EntityKind.NUMBER}))
    assert Counter(body for r in api.requests for _, body in prompt_blocks(r, "focus")) == Counter(["42"])


def test_kind_decides_the_subtype_and_neutral_maps_to_absent():
    def answer(request):
        focus = [body for _, body in prompt_blocks(request, "focus")]
        if focus == ["March 2019"]:
            return {"reason": "the premise gives no month", "label": "neutral"}
        return {"reason": "fine", "label": "entailment"}

    sample = Sample(id="t", context="The bridge opened in 2019.", response="The bridge opened in March 2019.")
    _, judgement, _ = judge_sample(FakeAPI("nli", responder=answer), sample)
    (verdict,) = judgement.verdicts
    assert (verdict.label, verdict.subtype) == (Label.ABSENT, Subtype.TEMPORAL)


def test_a_failed_recheck_answer_is_an_error_row_unless_another_check_failed():
    def answer(request):
        focus = [body for _, body in prompt_blocks(request, "focus")]
        if focus == ["March 2019"]:
            return "not json at all"
        return {"reason": "fine", "label": "entailment"}

    sample = Sample(id="t", context="The bridge opened in March 2019.", response="The bridge opened in March 2019.")
    judge = ConliJudge(LLMNliJudge(Model(FakeAPI("nli", responder=answer)), max_reasks=0))
    claims = asyncio.run(SentenceExtractor().extract(sample)).claims
    (verdict,) = asyncio.run(judge.judge(sample, claims)).verdicts
    assert not verdict.ok and "March 2019" in verdict.error
    assert judge.stats()["errors"] == 1


class WordJudge:
    """A stand-in sentence judge: supported when every word is in the context, else absent (probability 0.9)."""

    name = "words"

    def settings(self):
        return {}

    async def judge(self, sample, claims):
        context = sample.context.lower()
        out = []
        for claim in claims:
            ok = all(w.strip(".,").lower() in context for w in claim.text.split())
            out.append(
                ClaimVerdict(
                    claim_id=claim.id,
                    label="supported" if ok else "absent",
                    subtype=None if ok else "other",
                    probability=0.1 if ok else 0.9,
                    label_reason="words",
                    judge=self.name,
                )
            )
        return Judgement(verdicts=out)


def test_offline_nli_checks_entities_by_lookup():
    sample = Sample(
        id="o",
        context="The bridge is 24 km long. It opened in 2019.",
        response="The bridge is 24 km long. It opened in 2019. It opened in 2021.",
    )
    claims = asyncio.run(SentenceExtractor().extract(sample)).claims
    judge = ConliJudge(OfflineNliJudge(WordJudge()))
    verdicts = asyncio.run(judge.judge(sample, claims)).verdicts
    assert [v.label for v in verdicts] == [Label.SUPPORTED, Label.SUPPORTED, Label.ABSENT]
    sneaky = Sample(id="p", context="The Kessel bridge is 24 km long.", response="The Kessel bridge is 42 km long.")
    claims = asyncio.run(SentenceExtractor().extract(sneaky)).claims

    class Skimming(WordJudge):  # passes the sentence so that only the entity check can catch the number
        async def judge(self, sample, claims):
            return Judgement(
                verdicts=[ClaimVerdict(claim_id=c.id, label="supported", probability=0.2, judge="s") for c in claims]
            )

    (verdict,) = asyncio.run(ConliJudge(OfflineNliJudge(Skimming())).judge(sneaky, claims)).verdicts
    assert (verdict.label, verdict.subtype) == (Label.CONTRADICTED, Subtype.NUMBER)
    assert "'24'" in verdict.label_reason and verdict.probability == 1.0


def test_conli_run_on_the_examples_is_a_normal_run(tmp_path):
    model = Model(FakeAPI("scripted", responder=scripted_responder))
    extractor, judge = build_stages("conli", judge="fake:scripted", model_for=lambda spec: model)
    manifest, results = measure_examples(tmp_path / "conli", "conli", extractor, judge)
    assert manifest.detector == "conli" and manifest.extractor == "sentences" and manifest.judge == "fake:scripted"
    assert "conli_sentence.v1" in manifest.prompts and manifest.counts["claim_errors"] == 0
    stats = save_detector_stats(tmp_path / "conli", judge)
    data = load_run(tmp_path / "conli")
    assert data.manifest.settings["detector_stats"] == stats and stats["entity_checks"] > 0
    assert stats["failed_entity_level"] >= 1  # the skimming sentence check lets an entity error through
    harbor_b = next(r for r in results if r.sample_id == "harbor-b")
    assert harbor_b.verdicts[0].subtype == Subtype.NUMBER  # 2.4 vs 4.2 million euros, caught by the re-check
    assert set(data.claims["label"]) <= {label.value for label in Label}
    # The manifest is enough to rebuild the same stages (mitigation relies on this).
    rebuilt = Measurement.of_run(data.manifest).stages(models=lambda spec: model)
    rebuilt_extractor, rebuilt_judge = rebuilt.extractor, rebuilt.judge
    assert isinstance(rebuilt_judge, ConliJudge) and rebuilt_judge.name == "fake:scripted"
    assert isinstance(rebuilt_extractor, SentenceExtractor)


def test_conli_offline_end_to_end(tmp_path):
    pytest.importorskip("hallumeasure.judges.offline", reason="the offline judge is not in this tree yet")
    extractor, judge = build_stages("conli", judge="offline")
    manifest, _ = measure_examples(tmp_path / "conli", "conli", extractor, judge)
    assert manifest.detector == "conli" and manifest.judge == "offline"
    assert manifest.counts["claim_errors"] == 0
