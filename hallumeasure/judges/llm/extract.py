"""Claim extraction with an LLM: the whole response in one call, answered through a forced tool."""

from __future__ import annotations

from typing import Any

from hallumeasure.core.text import clean_text, fence, locate, split_sentences, visible, words
from hallumeasure.core.types import Claim, Sample, Span
from hallumeasure.judges.llm.outputs import ExtractedClaims, tool_schema
from hallumeasure.judges.llm.parsing import ask_structured
from hallumeasure.judges.llm.prompts import Prompt, load_prompt
from hallumeasure.judges.protocols import Extraction, ModelStage, PromptedStage
from hallumeasure.models.base import GenerateRequest, ToolSpec
from hallumeasure.models.model import Model
from hallumeasure.models.window import answer_room

EXTRACT_TOOL = ToolSpec(
    name="record_claims",
    description="Record the atomic claims found in the response.",
    input_schema=tool_schema(ExtractedClaims),
)


def question_block(sample: Sample) -> str:
    return fence("question", sample.question) if sample.question and sample.question.strip() else ""


#: How much of a failed extraction's answer the stored error keeps (characters).
RAW_KEPT = 2000

#: The share of a claim's words that the span of its source sentence must hold, for that span to count.
MIN_SOURCE_COVERAGE = 1 / 3


def make_claims(sample: Sample, items: list[tuple[str, str | None]]) -> list[Claim]:
    """Claims with ids ``<sample>:c<i>`` and spans located in the response (see ``claim_spans``)."""
    sentences = split_sentences(sample.response)
    return [
        Claim(
            id=f"{sample.id}:c{index}",
            sample_id=sample.id,
            index=index,
            text=text,
            spans=claim_spans(text, source, sample.response, sentences),
        )
        for index, (text, source) in enumerate(items)
    ]


def claim_spans(
    text: str, source: str | None, response: str, sentences: list[tuple[str, Span]] | None = None
) -> tuple[Span, ...]:
    """Where a claim comes from in the response.

    The model's ``source`` sentence is checked against the claim, not trusted: its span counts only
    when it holds at least a third of the claim's words and no fewer than the span found from the
    claim's own text (a claim that restates the whole response is not pinned to one of its
    sentences). Otherwise the claim's text is located; when neither is found, there is no span.
    """
    sentences = sentences if sentences is not None else split_sentences(response)
    by_text = locate(text, response, sentences)
    by_source = locate(source, response, sentences) if source else ()
    if by_source:
        covered = _coverage(text, response, by_source)
        if covered >= MIN_SOURCE_COVERAGE and covered >= _coverage(text, response, by_text):
            return by_source
    return by_text


def _coverage(claim: str, response: str, spans: tuple[Span, ...]) -> float:
    """The share of the claim's distinct words that occur in the spanned text."""
    wanted = set(words(claim))
    if not wanted or not spans:
        return 0.0
    held = set(words(" ".join(response[s.start : s.end] for s in spans)))
    return len(wanted & held) / len(wanted)


class OnePromptStage(PromptedStage, ModelStage):
    """A stage that asks ``model`` through one prompt for a structured answer of at most ``max_tokens``
    tokens, re-asking up to ``max_reasks`` times; it is named after the model."""

    def __init__(self, model: Model, prompt: str, *, max_reasks: int, max_tokens: int) -> None:
        self.model: Model = model
        self.prompt: Prompt = load_prompt(prompt)
        self.max_reasks = max_reasks
        self.max_tokens = max_tokens
        self.name = model.spec

    def settings(self) -> dict[str, Any]:
        return {
            "model": self.model.spec,
            **self.model.settings(),
            **self.budgets(),
            "prompt": self.prompt.key,
        }

    def budgets(self) -> dict[str, Any]:
        """The budgets recorded in the settings, in order (after the model's settings, before the prompt)."""
        return {"max_reasks": self.max_reasks, "max_tokens": self.max_tokens}


class LLMExtractor(OnePromptStage):
    """Extracts atomic claims from a whole response with one structured call."""

    def __init__(
        self, model: Model, *, max_reasks: int = 2, max_tokens: int = 2048, max_tokens_retry: int = 8192
    ) -> None:
        super().__init__(model, "extract", max_reasks=max_reasks, max_tokens=max_tokens)
        #: A claim list cut off at ``max_tokens`` is asked for once more with this budget.
        self.max_tokens_retry = max_tokens_retry

    def budgets(self) -> dict[str, Any]:
        return {**super().budgets(), "max_tokens_retry": self.max_tokens_retry}

    def request(self, sample: Sample) -> GenerateRequest:
        system, message = self.prompt.render(
            question_block=question_block(sample), response_block=fence("response", sample.response)
        )
        return GenerateRequest(system=system, messages=(message,), tool=EXTRACT_TOOL, max_tokens=self.max_tokens)

    async def extract(self, sample: Sample) -> Extraction:
        if not visible(sample.response):
            return Extraction()  # an empty (or invisible) response makes no claims; aggregation reports it
        request = self.request(sample)
        # In a small window (a local server's) the answer gets what the prompt leaves, and no more.
        window = await self.model.window()
        room = answer_room(request, window) if window is not None else None
        if room is not None:
            request = request.model_copy(update={"max_tokens": max(1, min(request.max_tokens, room))})
        result = await ask_structured(self.model, request, ExtractedClaims, max_reasks=self.max_reasks)
        usage = result.usage
        retry = self.max_tokens_retry if room is None else min(self.max_tokens_retry, room)
        if result.value is None and result.stop_reason == "max_tokens" and retry > request.max_tokens:
            # A long response has many claims: one more try with room for all of them.
            bigger = request.model_copy(update={"max_tokens": retry})
            result = await ask_structured(self.model, bigger, ExtractedClaims, max_reasks=self.max_reasks)
            usage = usage + result.usage
            if result.value is None and result.stop_reason == "max_tokens":
                result = result.model_copy(update={"error": f"{result.error} (also with max_tokens={retry})"})
        if result.value is None:
            # The error is all a failed response keeps in the run, so the model's answer goes in it too.
            answer = f"; the answer was: {result.raw_output[:RAW_KEPT]}" if result.raw_output else ""
            return Extraction(
                error=f"extraction failed: {result.error}{answer}", raw_output=result.raw_output, usage=usage
            )
        # Claims are model output that goes into later prompts and the store: clean them like input.
        items = [
            (text, clean_text(c.source_sentence) if c.source_sentence else None)
            for c in result.value.claims
            if (text := clean_text(c.text).strip())
        ]
        return Extraction(claims=make_claims(sample, items), usage=usage)
