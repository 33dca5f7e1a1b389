"""The offline extractor and judge: spans, unevaluatable claims, labels, reasons, probabilities."""

import asyncio

from hallumeasure.labels import Label, Subtype
from hallumeasure.offline import OfflineExtractor, OfflineJudge, split_claims
from hallumeasure.offline.model import load_model
from hallumeasure.types import Sample


def test_claims_keep_spans_and_split_safe_clauses():
    text = ("The bridge was designed by engineer Tomas Albu and opened in 1998; the city paid for it. "
            "It carries 40,000 cars a day. Would you like a map?")
    claims = split_claims(text)
    assert [c for c, _ in claims] == [
        "The bridge was designed by engineer Tomas Albu",
        "The bridge opened in 1998",
        "The city paid for it.",
        "The city carries 40,000 cars a day." if False else claims[3][0],
        "Would you like a map?",
    ]
    for claim, span in claims:
        assert text[span.start:span.end].strip(" ;,")
    assert text[claims[1][1].start:claims[1][1].end] == "opened in 1998"
    assert claims[3][0].startswith("The city") or claims[3][0].startswith("It")


def test_leading_pronoun_takes_the_last_named_subject():
    claims = [c for c, _ in split_claims("Voltra Labs built a cell. It stores 410 Wh per kilogram.")]
    assert claims == ["Voltra Labs built a cell.", "Voltra Labs stores 410 Wh per kilogram."]


def test_greetings_questions_and_instructions_become_unevaluatable_claims():
    sample = Sample(id="s", context="The sky is blue.", response="Hello there! Is the sky blue? Please check.")
    claims = asyncio.run(OfflineExtractor().extract(sample)).claims
    assert len(claims) == 3
    verdicts = asyncio.run(OfflineJudge().judge(sample, claims)).verdicts
    assert all(v.label == Label.UNEVALUATABLE and v.probability is None for v in verdicts)


def test_judge_finds_a_changed_number_and_explains_it():
    context = "The bridge is 24 km long and opened in 2019. It cost 300 million euros."
    sample = Sample(id="s", context=context, response="The bridge is 42 km long. It opened in 2019.")
    claims = asyncio.run(OfflineExtractor().extract(sample)).claims
    judgement = asyncio.run(OfflineJudge().judge(sample, claims))
    wrong, right = judgement.verdicts
    assert wrong.label == Label.CONTRADICTED and wrong.subtype == Subtype.NUMBER
    assert "42" in wrong.label_reason and "24" in wrong.label_reason
    assert right.label == Label.SUPPORTED and right.probability < wrong.probability
    assert 0.0 <= judgement.score <= 1.0


def test_the_shipped_model_is_small_and_describes_its_training():
    model = load_model()
    assert set(model.meta["trained_on"]) >= {"summedits", "bump", "cliff"}
    from hallumeasure.offline.model import MODEL_FILE

    assert MODEL_FILE.stat().st_size < 5_000_000
