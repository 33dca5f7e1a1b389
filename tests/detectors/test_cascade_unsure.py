"""The cascade sends every claim its first pass could not tell to the LLM, as it does the flagged ones."""

from __future__ import annotations

import asyncio

from detectors.test_cascade import SAMPLE, TableFirstPass, claims
from unsure_judge import UnsureJudge

from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.types import Claim
from hallumeasure.detectors.cascade import CascadeJudge
from hallumeasure.models.fake import FakeAPI, prompt_blocks
from hallumeasure.models.model import Model

#: "plain fact" (supported, probability 0.1) and "a question?" (unevaluatable) are never flagged when sure.
UNSURE = {"plain fact", "a question?"}
CATEGORY = {"risky fact": "hyperbole", "wrong number": "number", "plain fact": "entity"}


def reasoner() -> FakeAPI:
    def answer(request):
        (claim,) = [body for _, body in prompt_blocks(request, "claim")]
        return {"reason": f"why {claim}", "category": CATEGORY.get(claim, "no_problem_found")}

    return FakeAPI("reasoner", responder=answer)


def _flags(api: FakeAPI) -> dict[str, str]:
    return {
        next(body for _, body in prompt_blocks(r, "claim")): next(body for _, body in prompt_blocks(r, "flag"))
        for r in api.requests
    }


def run(api: FakeAPI, unsure=UNSURE, **options):
    first = UnsureJudge(TableFirstPass(), lambda claim, verdict: claim.text in unsure)
    judge = CascadeJudge(first, Model(api), **options)
    return asyncio.run(judge.judge(SAMPLE, claims())), judge


def test_unsure_claims_are_escalated_and_settled_by_the_llm():
    api = reasoner()
    judgement, judge = run(api)
    flags = _flags(api)
    assert set(flags) >= UNSURE  # both unsure claims were asked, although neither is flagged when sure
    assert set(flags) == {"plain fact", "a question?", "risky fact", "made-up fact", "wrong number", "big claim"}
    assert all(("could not tell" in flag) is (claim in UNSURE) for claim, flag in flags.items())
    stats = judge.stats()
    assert stats["flagged"] == 6 and stats["flagged_unsure"] == 2 and stats["llm_calls_avoided"] == 1
    v = {c.text: verdict for c, verdict in zip(claims(), judgement.verdicts, strict=True)}
    # the LLM found an entity error where the first pass guessed supported
    assert (v["plain fact"].label, v["plain fact"].subtype) == (Label.CONTRADICTED, Subtype.ENTITY)
    # the LLM found no problem with the unsure unevaluatable guess: it is settled as supported
    assert v["a question?"].label == Label.SUPPORTED
    assert all(x.confident for x in judgement.verdicts)  # every settled verdict is the LLM's, so confident


def test_an_unusable_answer_leaves_the_claim_unsure():
    api = FakeAPI("reasoner", responder=lambda request: "no idea")
    judgement, judge = run(api, max_reasks=0)
    v = {c.text: verdict for c, verdict in zip(claims(), judgement.verdicts, strict=True)}
    assert not v["plain fact"].confident and v["plain fact"].label == Label.SUPPORTED
    assert judge.stats()["explain_errors"] == 6


def test_a_sure_first_pass_sends_what_it_always_sent():
    api = reasoner()
    _, judge = run(api, unsure=set())
    flags = _flags(api)
    assert set(flags) == {"risky fact", "made-up fact", "wrong number", "big claim"}
    assert not any("could not tell" in flag for flag in flags.values())
    assert judge.stats()["flagged_unsure"] == 0


def test_a_response_with_nothing_checkable_goes_to_the_llm_and_is_not_cleared_by_the_first_pass():
    api = reasoner()
    only_question = [Claim(id="s:c0", sample_id="s", index=0, text="a question?")]
    judge = CascadeJudge(TableFirstPass(), Model(api))
    judgement = asyncio.run(judge.judge(SAMPLE, only_question))
    assert set(_flags(api)) == {"a question?"}  # the LLM was asked although nothing was flagged
    assert judgement.decidable is None  # the first pass's rule does not speak for what the LLM settled
