"""Claim extraction with an LLM: the whole response in one call, answered through a forced tool."""

from __future__ import annotations

from typing import Any

from hallumeasure.models.base import GenerateRequest, ToolSpec
from hallumeasure.models.model import Model
from hallumeasure.outputs import ExtractedClaims, tool_schema
from hallumeasure.parsing import ask_structured
from hallumeasure.pipeline.protocols import Extraction
from hallumeasure.prompts import load_prompt
from hallumeasure.text import clean_text, fence, locate, split_sentences
from hallumeasure.types import Claim, Sample

EXTRACT_TOOL = ToolSpec(
    name="record_claims",
    description="Record the atomic claims found in the response.",
    input_schema=tool_schema(ExtractedClaims),
)


def question_block(sample: Sample) -> str:
    return fence("question", sample.question) if sample.question and sample.question.strip() else ""


def make_claims(sample: Sample, items: list[tuple[str, str | None]]) -> list[Claim]:
    """Claims with ids ``<sample>:c<i>`` and spans located in the response (by source sentence, else text)."""
    sentences = split_sentences(sample.response)
    claims = []
    for index, (text, source) in enumerate(items):
        spans = locate(source, sample.response, sentences) if source else ()
        spans = spans or locate(text, sample.response, sentences)
        claims.append(Claim(id=f"{sample.id}:c{index}", sample_id=sample.id, index=index, text=text, spans=spans))
    return claims


class LLMExtractor:
    """Extracts atomic claims from a whole response with one structured call."""

    def __init__(self, model: Model, *, max_reasks: int = 2, max_tokens: int = 2048,
                 max_tokens_retry: int = 8192) -> None:
        self.model = model
        self.prompt = load_prompt("extract")
        self.max_reasks = max_reasks
        self.max_tokens = max_tokens
        #: A claim list cut off at ``max_tokens`` is asked for once more with this budget.
        self.max_tokens_retry = max_tokens_retry
        self.name = model.spec

    def settings(self) -> dict[str, Any]:
        return {"model": self.model.spec, **self.model.settings(), "max_reasks": self.max_reasks,
                "max_tokens": self.max_tokens, "max_tokens_retry": self.max_tokens_retry,
                "prompt": self.prompt.key}

    def request(self, sample: Sample) -> GenerateRequest:
        system, message = self.prompt.render(
            question_block=question_block(sample), response_block=fence("response", sample.response)
        )
        return GenerateRequest(system=system, messages=(message,), tool=EXTRACT_TOOL, max_tokens=self.max_tokens)

    async def extract(self, sample: Sample) -> Extraction:
        if not sample.response.strip():
            return Extraction()  # an empty response makes no claims; aggregation reports it
        request = self.request(sample)
        result = await ask_structured(self.model, request, ExtractedClaims, max_reasks=self.max_reasks)
        usage = result.usage
        if result.value is None and result.stop_reason == "max_tokens" and self.max_tokens_retry > request.max_tokens:
            # A long response has many claims: one more try with room for all of them.
            bigger = request.model_copy(update={"max_tokens": self.max_tokens_retry})
            result = await ask_structured(self.model, bigger, ExtractedClaims, max_reasks=self.max_reasks)
            usage = usage + result.usage
            if result.value is None and result.stop_reason == "max_tokens":
                result = result.model_copy(
                    update={"error": f"{result.error} (also with max_tokens={self.max_tokens_retry})"})
        if result.value is None:
            return Extraction(error=f"extraction failed: {result.error}", raw_output=result.raw_output, usage=usage)
        # Claims are model output that goes into later prompts and the store: clean them like input.
        items = [(text, clean_text(c.source_sentence) if c.source_sentence else None)
                 for c in result.value.claims if (text := clean_text(c.text).strip())]
        return Extraction(claims=make_claims(sample, items), usage=usage)
