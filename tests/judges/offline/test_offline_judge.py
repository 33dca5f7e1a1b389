"""The offline extractor and judge: spans, unevaluatable claims, labels, subtypes, reasons, probabilities."""

import asyncio
import json

import pytest

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.types import Sample
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge, split_claims
from hallumeasure.judges.offline.model import EVIDENCE_RULES, MODEL_FILE, load_model
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge

CONTEXT = (
    "The Harbour Bridge is 24 km long and opened in 2019. It cost 300 million euros. "
    "Engineer Tomas Albu designed it. The mayor said the repairs may start in June. "
    "Traffic rose sharply after the opening."
)


def run(response, context=CONTEXT):
    sample = Sample(id="s", context=context, response=response)
    claims = asyncio.run(OfflineExtractor().extract(sample)).claims
    return claims, asyncio.run(OfflineJudge().judge(sample, claims))


def test_both_stages_satisfy_the_protocols():
    assert isinstance(OfflineExtractor(), ClaimExtractor) and isinstance(OfflineJudge(), ClaimJudge)
    assert OfflineJudge().settings()["model_sha256"]


def test_claims_split_safe_clauses_and_keep_spans_into_the_response():
    text = (
        "The bridge was designed by engineer Tomas Albu and opened in 1998; the city paid for it. "
        "It carries 40,000 cars a day. Would you like a map?"
    )
    claims = split_claims(text)
    assert [c for c, _ in claims] == [
        "The bridge was designed by engineer Tomas Albu",
        "The bridge opened in 1998",
        "The city paid for it.",
        "The bridge carries 40,000 cars a day.",
        "Would you like a map?",
    ]
    assert [text[s.start : s.end] for _, s in claims] == [
        "The bridge was designed by engineer Tomas Albu",
        "opened in 1998",
        "the city paid for it.",
        "It carries 40,000 cars a day.",
        "Would you like a map?",
    ]


def test_claim_ids_and_spans_on_the_claim_objects():
    sample = Sample(id="r7", context="x", response="Voltra Labs built a cell. It stores 410 Wh per kilogram.")
    claims = asyncio.run(OfflineExtractor().extract(sample)).claims
    assert [c.id for c in claims] == ["r7:c0", "r7:c1"]
    # "It" is the thing the previous sentence introduced (the cell), not the company.
    assert [c.text for c in claims] == ["Voltra Labs built a cell.", "The cell stores 410 Wh per kilogram."]
    assert sample.response[claims[1].spans[0].start : claims[1].spans[0].end] == "It stores 410 Wh per kilogram."


def test_greetings_questions_and_instructions_are_kept_and_marked_unevaluatable():
    claims, judgement = run("Hello there! Is the bridge long? Please check the map. His bridge is long.")
    assert [c.text for c in claims][:3] == ["Hello there!", "Is the bridge long?", "Please check the map."]
    labels = [v.label for v in judgement.verdicts]
    assert labels[:3] == [Label.UNEVALUATABLE] * 3 and labels[3] != Label.UNEVALUATABLE  # "His" is not "hi"
    assert all(v.probability is None and v.subtype is None for v in judgement.verdicts[:3])


def test_a_changed_number_is_contradicted_with_both_values_in_the_reason():
    _, judgement = run("The Harbour Bridge is 42 km long. It opened in 2019.")
    wrong, right = judgement.verdicts
    assert wrong.label == Label.CONTRADICTED and wrong.subtype == Subtype.NUMBER
    assert "42" in wrong.label_reason and "24" in wrong.label_reason
    assert right.label == Label.SUPPORTED and right.subtype is None and right.probability < 0.5 < wrong.probability
    assert judgement.score > 0.5  # the response score: the trees, raised by the original evidence rules


def test_an_invented_name_is_reported_and_a_faithful_response_scores_low():
    _, bad = run("The bridge was designed by Maria Kessler.")
    (verdict,) = bad.verdicts
    assert verdict.label in (Label.ABSENT, Label.PARTIALLY_SUPPORTED) and verdict.subtype == Subtype.ENTITY
    assert "Maria Kessler" in verdict.label_reason
    _, good = run("The Harbour Bridge is 24 km long. It cost 300 million euros.")
    assert all(v.label == Label.SUPPORTED for v in good.verdicts) and good.score < bad.score


def test_every_verdict_is_well_formed():
    claims, judgement = run(
        "The Harbour Bridge is 42 km long, and traffic fell after the opening. The repairs will start in June. Thanks!"
    )
    assert [v.claim_id for v in judgement.verdicts] == [c.id for c in claims]
    for v in judgement.verdicts:
        assert v.judge == "offline" and v.ok and v.label_reason
        if v.label not in (Label.SUPPORTED, Label.UNEVALUATABLE):
            assert v.subtype is not None and v.subtype_reason and v.probability >= 0.5


def test_threshold_is_validated_and_changes_labels():
    with pytest.raises(ValueError, match="threshold must be between 0 and 1"):
        OfflineJudge(threshold=1.5)
    sample = Sample(id="s", context=CONTEXT, response="The repairs will start in June.")
    claims = asyncio.run(OfflineExtractor().extract(sample)).claims
    strict = asyncio.run(OfflineJudge(threshold=0.01).judge(sample, claims)).verdicts[0]
    assert strict.label != Label.SUPPORTED


def test_the_shipped_model_is_small_portable_json_that_describes_its_training():
    assert MODEL_FILE.stat().st_size < 5_000_000
    data = json.loads(MODEL_FILE.read_text())
    assert data["response_model"]["calibration"]["kind"] == "platt"
    assert set(data["evidence_rules"]) == set(EVIDENCE_RULES)
    assert all(0.5 < p <= 1.0 for p in data["evidence_rules"].values())
    model = load_model()
    assert set(model.meta["trained_on"]) >= {"summedits", "bump", "cliff"}
    assert model.meta["seed"] == 13


def test_a_stale_or_missing_model_fails_with_a_clear_message(tmp_path):
    stale = json.loads(MODEL_FILE.read_text())
    stale["response_model"]["features"] = stale["response_model"]["features"][:-1]
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    with pytest.raises(ConfigError, match="train_offline"):
        load_model(str(tmp_path / "stale.json"))
    with pytest.raises(ConfigError, match="missing"):
        load_model(str(tmp_path / "absent.json"))


def test_a_reason_never_prints_the_threshold_as_the_side_it_is_not_on() -> None:
    from hallumeasure.judges.offline.judge import odds

    assert odds(0.38, 0.65) == "(P(unsupported) = 0.38, under the 0.65 that flags a claim)"
    assert odds(0.6499, 0.65) == "(P(unsupported) = 0.6499, under the 0.65 that flags a claim)"
    assert odds(0.648, 0.65) == "(P(unsupported) = 0.648, under the 0.65 that flags a claim)"
    assert odds(0.65, 0.65) == "(P(unsupported) = 0.65, at or over the 0.65 that flags a claim)"
    assert odds(0.91, 0.65) == "(P(unsupported) = 0.91, at or over the 0.65 that flags a claim)"
