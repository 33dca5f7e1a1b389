"""CoNLI hierarchical detection (papers/conli.txt, section 3.1) behind the claim extractor and judge protocols.

Each response sentence is one "claim" (with its span). A sentence is first judged as an NLI
hypothesis against the context. Entailment passes it on; neutral or contradiction make it a
hallucination. A sentence that passes is checked again once per entity found in it, with
that entity marked, because a judge reading a whole sentence tends to skim its details. The
sentence is supported only when every check says entailment.

Mapping to our labels: contradiction -> ``contradicted``, neutral -> ``absent``. The subtype
is the failed entity's kind (numbers and money -> ``number``, dates and durations ->
``temporal``, names, roles, events, skills -> ``entity``) or ``other`` when the sentence failed
as a whole. Questions and short exclamations are not checked and come out ``unevaluatable``
(the paper drops such sentences before judging).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.text import fence, split_sentences, words
from hallumeasure.core.types import Claim, ClaimVerdict, Sample, Usage
from hallumeasure.detectors.entities import (
    KIND_SUBTYPE,
    Entity,
    EntityKind,
    appears_in,
    find_entities,
    mark,
    other_values,
)
from hallumeasure.judges.llm.extract import OnePromptStage, question_block
from hallumeasure.judges.llm.outputs import NliJudgement, tool_schema
from hallumeasure.judges.llm.parsing import ask_structured
from hallumeasure.judges.protocols import (
    ClaimJudge,
    Extraction,
    InstantJudge,
    Judgement,
    ModelStage,
    PromptedStage,
)
from hallumeasure.models.base import GenerateRequest, ToolSpec
from hallumeasure.models.model import Model

NliLabel = Literal["entailment", "neutral", "contradiction"]

NLI_TOOL = ToolSpec(
    name="record_nli",
    description="Record whether the context entails, contradicts or is neutral to the hypothesis.",
    input_schema=tool_schema(NliJudgement),
)

_TO_LABEL: dict[str, Label] = {"contradiction": Label.CONTRADICTED, "neutral": Label.ABSENT}
#: A claim judge's label as an NLI label; every other label is neutral.
_FROM_LABEL: dict[Label, NliLabel] = {
    Label.SUPPORTED: "entailment",
    Label.UNEVALUATABLE: "entailment",
    Label.CONTRADICTED: "contradiction",
}


@dataclass(frozen=True)
class NliCheck:
    """One NLI answer: a label with its reason, or the error that prevented one."""

    label: NliLabel | None = None
    reason: str | None = None
    #: Probability that the hypothesis is not entailed, when the judge gives one.
    probability: float | None = None
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    raw_output: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.label is not None


class NliJudge(Protocol):
    """Judges one hypothesis against a sample's context, optionally focused on one entity of it."""

    name: str

    async def check(self, sample: Sample, hypothesis: str, focus: Entity | None = None) -> NliCheck: ...

    def settings(self) -> dict[str, Any]: ...


@runtime_checkable
class ScoringNliJudge(Protocol):
    """An NLI judge that also gives a response-level probability of a hallucination (the keyless one)."""

    def response_score(self, sample: Sample) -> float | None: ...


class LLMNliJudge(OnePromptStage):
    """NLI with an LLM through the ``conli_sentence`` prompt; the focused entity is marked ``[ ]`` and fenced."""

    def __init__(self, model: Model, *, max_reasks: int = 2, max_tokens: int = 1024) -> None:
        super().__init__(model, "conli_sentence", max_reasks=max_reasks, max_tokens=max_tokens)

    def request(self, sample: Sample, hypothesis: str, focus: Entity | None = None) -> GenerateRequest:
        system, message = self.prompt.render(
            question_block=question_block(sample),
            context_block=fence("context", sample.context),
            hypothesis_block=fence("hypothesis", mark(hypothesis, focus) if focus else hypothesis),
            focus_block=fence("focus", focus.text) if focus else "",
        )
        return GenerateRequest(system=system, messages=(message,), tool=NLI_TOOL, max_tokens=self.max_tokens)

    async def check(self, sample: Sample, hypothesis: str, focus: Entity | None = None) -> NliCheck:
        result = await ask_structured(
            self.model, self.request(sample, hypothesis, focus), NliJudgement, max_reasks=self.max_reasks
        )
        if result.value is None:
            return NliCheck(error=result.error, raw_output=result.raw_output, usage=result.usage)
        return NliCheck(label=result.value.label, reason=result.value.reason, usage=result.usage)


class OfflineNliJudge(ScoringNliJudge):
    """A keyless NLI stand-in: the offline claim judge for whole sentences, value look-ups for entities.

    Sentence level: the offline judge's label maps supported -> entailment, contradicted ->
    contradiction, absent / partially_supported -> neutral (unevaluatable -> entailment: nothing
    to check). Entity level: the entity's value must occur in the context; if it does not and the
    aligned context sentence holds another value of the same family, that is a contradiction,
    otherwise neutral.
    """

    name = "offline"

    def __init__(self, sentence_judge: ClaimJudge | None = None) -> None:
        if sentence_judge is None:
            from hallumeasure.judges.offline import OfflineJudge  # another module of the package; imported on use

            sentence_judge = OfflineJudge()
        self.sentence_judge = sentence_judge
        self.name = sentence_judge.name  # "offline", or "nli" for the trained entailment model

    def settings(self) -> dict[str, Any]:
        return {
            "sentence_judge": self.sentence_judge.name,
            "sentence_judge_settings": self.sentence_judge.settings(),
            "entity_check": "value look-up in the context",
        }

    def response_score(self, sample: Sample) -> float | None:
        """The response-level probability ``--judge offline`` gives the same response (its own claims)."""
        if not isinstance(self.sentence_judge, InstantJudge):
            return None
        from hallumeasure.judges.offline import OfflineExtractor

        return self.sentence_judge.judge_now(sample, OfflineExtractor().claims(sample)).score

    async def check(self, sample: Sample, hypothesis: str, focus: Entity | None = None) -> NliCheck:
        if focus is not None:
            return lookup_entity(sample.context, hypothesis, focus)
        claim = Claim(id=f"{sample.id}:nli", sample_id=sample.id, index=0, text=hypothesis)
        judgement = await self.sentence_judge.judge(sample, [claim])
        verdict = judgement.verdicts[0] if judgement.verdicts else None
        if verdict is None or not verdict.ok or verdict.label is None:
            return NliCheck(error=verdict.error if verdict else "no verdict", usage=judgement.usage)
        label = _FROM_LABEL.get(verdict.label, "neutral")
        return NliCheck(
            label=label, reason=verdict.label_reason, probability=verdict.probability, usage=judgement.usage
        )


def lookup_entity(context: str, hypothesis: str, focus: Entity) -> NliCheck:
    """A keyless focused check: entailment when the value is in the context, else contradiction or neutral."""
    if appears_in(focus, context):
        return NliCheck(label="entailment", reason=f"'{focus.text}' appears in the context.", probability=0.0)
    rivals = other_values(focus, hypothesis, context)
    if rivals:
        named = ", ".join(f"'{r.text}'" for r in rivals[:3])
        return NliCheck(
            label="contradiction",
            probability=1.0,
            reason=f"'{focus.text}' is not in the context; the closest passage gives {named}.",
        )
    return NliCheck(label="neutral", probability=1.0, reason=f"The context does not mention '{focus.text}'.")


class SentenceExtractor:
    """Each response sentence becomes one claim, with its character span (the CoNLI hypotheses)."""

    name = "sentences"

    async def extract(self, sample: Sample) -> Extraction:
        claims = [
            Claim(id=f"{sample.id}:c{i}", sample_id=sample.id, index=i, text=text, spans=(span,))
            for i, (text, span) in enumerate(split_sentences(sample.response))
        ]
        return Extraction(claims=claims)

    def settings(self) -> dict[str, Any]:
        return {"splitter": "pysbd (hallumeasure.core.text.split_sentences)"}


def is_checkable(sentence: str) -> bool:
    """False for questions and short exclamations, which carry no fact to check."""
    text = sentence.strip()
    if not words(text) or text.endswith("?"):
        return False
    return not (text.endswith("!") and len(words(text)) <= 5)


class ConliJudge(PromptedStage, ModelStage):
    """The hierarchical CoNLI judge: sentence check, then one focused re-check per entity of a passing sentence."""

    def __init__(
        self,
        nli: NliJudge,
        *,
        entity_checks: bool = True,
        kinds: frozenset[EntityKind] = frozenset(EntityKind),
        select: bool = True,
    ) -> None:
        self.nli = nli
        self.entity_checks = entity_checks
        self.kinds = kinds
        self.select = select
        self.name = nli.name
        # Seen by the run manifest (prompt hashes) and by run_measurement (closing the model).
        self.prompt = nli.prompt if isinstance(nli, PromptedStage) else None
        self.model = nli.model if isinstance(nli, ModelStage) else None
        self.counts: Counter[str] = Counter()

    def settings(self) -> dict[str, Any]:
        return {
            "detector": "conli",
            "nli": self.nli.name,
            "nli_settings": self.nli.settings(),
            "entity_checks": self.entity_checks,
            "entity_kinds": sorted(k.value for k in self.kinds),
            "select": self.select,
            "labels": "contradiction -> contradicted, neutral -> absent",
            "stats": self.stats(),
        }

    def stats(self) -> dict[str, int]:
        """Counts since construction: sentences seen / skipped, NLI checks made, failures by level."""
        keys = (
            "sentences",
            "skipped",
            "sentence_checks",
            "entity_checks",
            "failed_sentence_level",
            "failed_entity_level",
            "errors",
        )
        return {key: self.counts[key] for key in keys}

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        parts = await asyncio.gather(*(self._judge_sentence(sample, claim) for claim in claims))
        usage = sum((u for _, u in parts), Usage())
        # A keyless NLI gives the offline judge's score.
        score = self.nli.response_score(sample) if isinstance(self.nli, ScoringNliJudge) else None
        return Judgement(verdicts=[v for v, _ in parts], usage=usage, score=score)

    async def _judge_sentence(self, sample: Sample, claim: Claim) -> tuple[ClaimVerdict, Usage]:
        self.counts["sentences"] += 1
        if self.select and not is_checkable(claim.text):
            self.counts["skipped"] += 1
            return self._verdict(claim, Label.UNEVALUATABLE, "Not checked: a question or an exclamation."), Usage()
        self.counts["sentence_checks"] += 1
        whole = await self.nli.check(sample, claim.text)
        if not whole.ok or whole.label is None:
            self.counts["errors"] += 1
            return self._error(claim, f"sentence check failed: {whole.error}", whole.raw_output), whole.usage
        if whole.label != "entailment":
            self.counts["failed_sentence_level"] += 1
            return self._verdict(
                claim,
                _TO_LABEL[whole.label],
                whole.reason,
                Subtype.OTHER,
                "The whole sentence failed; no single entity was singled out.",
                whole.probability,
            ), whole.usage
        entities = [e for e in find_entities(claim.text) if e.kind in self.kinds] if self.entity_checks else []
        self.counts["entity_checks"] += len(entities)
        checks = await asyncio.gather(*(self.nli.check(sample, claim.text, e) for e in entities))
        usage = sum((c.usage for c in checks), whole.usage)
        probability = _max_probability([whole, *checks])
        failed = [(e, c) for e, c in zip(entities, checks, strict=True) if c.ok and c.label != "entailment"]
        if failed:
            self.counts["failed_entity_level"] += 1
            label = Label.CONTRADICTED if any(c.label == "contradiction" for _, c in failed) else Label.ABSENT
            first = failed[0][0]
            reason = " ".join(f"[{e.text}] {c.reason or c.label}" for e, c in failed)
            return self._verdict(
                claim,
                label,
                reason,
                KIND_SUBTYPE[first.kind],
                f"The re-check of the {first.kind.value} '{first.text}' failed.",
                probability,
            ), usage
        broken = [(e, c) for e, c in zip(entities, checks, strict=True) if not c.ok]
        if broken:
            self.counts["errors"] += 1
            entity, check = broken[0]
            return self._error(claim, f"re-check of '{entity.text}' failed: {check.error}", check.raw_output), usage
        return self._verdict(claim, Label.SUPPORTED, whole.reason, probability=probability), usage

    def _verdict(
        self,
        claim: Claim,
        label: Label,
        reason: str | None,
        subtype: Subtype | None = None,
        subtype_reason: str | None = None,
        probability: float | None = None,
    ) -> ClaimVerdict:
        return ClaimVerdict(
            claim_id=claim.id,
            label=label,
            label_reason=reason,
            subtype=subtype,
            subtype_reason=subtype_reason,
            probability=probability,
            judge=self.name,
        )

    def _error(self, claim: Claim, error: str, raw: str | None) -> ClaimVerdict:
        return ClaimVerdict(claim_id=claim.id, judge=self.name, error=error, raw_output=raw)


def _max_probability(checks: Sequence[NliCheck]) -> float | None:
    values = [c.probability for c in checks if c.ok]
    if not values or any(v is None for v in values):
        return None
    return max(values)  # type: ignore[type-var]
