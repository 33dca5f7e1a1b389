"""``--judge minicheck:<provider:model>``: a generative checker (Bespoke-MiniCheck-7B) behind a provider.

The checker is asked MiniCheck's question (prompt ``minicheck``: ``Document: ... Claim: ...``, answer yes or
no) for each claim against each chunk of its source, and a claim is ``supported`` when some chunk is
consistent with it, with the first such chunk as evidence; else ``absent`` (the checker tells consistent
from not, nothing more, and no subtype). An answer that is neither yes nor no is an error row. The model is
served where the user serves it, usually an OpenAI-compatible server (vLLM, llama.cpp):
``minicheck:openai:bespokelabs/Bespoke-MiniCheck-7B?base_url=http://localhost:8000/v1``. Requests go through
the run's one ``Model`` (cache, limits, retries) like every LLM judge's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from hallumeasure.core.errors import ProviderError
from hallumeasure.core.labels import Label
from hallumeasure.core.text import count_tokens, quote
from hallumeasure.core.types import Claim, ClaimVerdict, Evidence, Sample, Usage
from hallumeasure.judges.checkers.chunks import chunk_source
from hallumeasure.judges.llm.prompts import Prompt, load_prompt
from hallumeasure.judges.offline.extractor import is_unevaluatable
from hallumeasure.judges.offline.judge import in_claim_order
from hallumeasure.judges.protocols import Judgement, ModelStage, PromptedStage
from hallumeasure.models.base import GenerateRequest
from hallumeasure.models.model import Model

#: Source tokens per chunk (counted as hallumeasure counts tokens); Bespoke-MiniCheck-7B reads 32k, a
#: smaller chunk keeps each answer about one passage.
CHUNK_TOKENS = 2000


class MiniCheckJudge(PromptedStage, ModelStage):
    """A claim judge that asks a generative checker yes or no for each claim against each source chunk."""

    def __init__(self, model: Model, *, chunk_tokens: int = CHUNK_TOKENS) -> None:
        self.model: Model = model
        self.prompt: Prompt = load_prompt("minicheck")
        self.chunk_tokens = chunk_tokens
        self.name = f"minicheck:{model.spec}"

    def settings(self) -> dict[str, Any]:
        return {
            "kind": "generative checker (MiniCheck prompt) behind a provider",
            "model": self.model.spec,
            "model_settings": self.model.settings(),
            "prompt": self.prompt.key,
            "chunk_tokens": self.chunk_tokens,
        }

    async def _ask(self, document: str, claim: str) -> tuple[bool | None, str, Usage]:
        system, message = self.prompt.render(document=document, claim=claim)
        request = GenerateRequest(system=system, messages=(message,), max_tokens=8, cache_system=False)
        response = await self.model.generate(request)
        words = response.text.strip().lower().split()
        first = words[0].strip(".,!:;\"'") if words else ""
        return {"yes": True, "no": False}.get(first), response.text, response.usage

    async def _claim(self, sample: Sample, claim: Claim) -> tuple[ClaimVerdict, Usage]:
        chunks = chunk_source(sample.context, self.chunk_tokens, count_tokens)
        try:
            answers = await asyncio.gather(*(self._ask(chunk.text, claim.text) for chunk in chunks))
        except ProviderError as exc:
            return ClaimVerdict(claim_id=claim.id, judge=self.name, error=f"provider error: {exc}"), Usage()
        usage = sum((u for _, _, u in answers), Usage())
        if any(verdict is None for verdict, _, _ in answers):
            raw = next(text for verdict, text, _ in answers if verdict is None)
            error = "the checker answered neither yes nor no"
            return ClaimVerdict(claim_id=claim.id, judge=self.name, error=error, raw_output=raw), usage
        consistent = [chunk for chunk, (verdict, _, _) in zip(chunks, answers, strict=True) if verdict]
        where = f"{len(chunks)} chunks" if len(chunks) > 1 else "the source"
        if consistent:
            return ClaimVerdict(
                claim_id=claim.id,
                judge=self.name,
                label=Label.SUPPORTED,
                label_reason=f"the checker finds the claim consistent with {quote(consistent[0].text)}",
                evidence=(Evidence(quote=consistent[0].text),),
            ), usage
        return ClaimVerdict(
            claim_id=claim.id,
            judge=self.name,
            label=Label.ABSENT,
            label_reason=f"the checker finds the claim consistent with none of {where}",
        ), usage

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        checked = [claim for claim in claims if not is_unevaluatable(claim.text)]
        results = await asyncio.gather(*(self._claim(sample, claim) for claim in checked))
        found = {claim.id: verdict for claim, (verdict, _) in zip(checked, results, strict=True)}
        usage = sum((u for _, u in results), Usage())
        return Judgement(verdicts=in_claim_order(claims, found, self.name), usage=usage)
