"""The dry run of a measurement: expected calls and tokens before anything is spent.

Used by ``measure --dry-run``, ``bench --dry-run`` (over labelled sets) and the audit planner
(``hallumeasure.report.plan``), which prices the samples it asks for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import BaseModel

from hallumeasure.core.types import Mode, Sample, Usage
from hallumeasure.models.pricing import Price, cost
from hallumeasure.runs.datasets import LabelledSample


class RunEstimate(BaseModel):
    """Rough expected calls and tokens of a run (or a benchmark), before spending anything."""

    dataset: str
    mode: str
    gold_claims: bool
    n_samples: int
    claims: int
    extraction_calls: int
    judge_calls: int
    input_tokens: int
    output_tokens: int
    assumptions: list[str]

    @property
    def calls(self) -> int:
        return self.extraction_calls + self.judge_calls


#: Output tokens per claim (tool-call JSON included): rough figures in line with the paper's Table 5.
OUTPUT_TOKENS_PER_CLAIM = {"cot": 95, "nocot": 30, "extract": 20}
_SENTENCE_END = re.compile(r"[.!?]+(?:\s|$)")


def _prompt_chars(prompt_id: str, fallback: int) -> int:
    try:
        from hallumeasure.judges.llm.prompts import STANDARD_VALUES, load_prompt

        p = load_prompt(prompt_id)
    except Exception:  # noqa: BLE001 - an estimate must not fail on a prompt problem
        return fallback
    standard = sum(len(STANDARD_VALUES[k]) for k in p.placeholders & STANDARD_VALUES.keys())
    return len(p.system) + len(p.user_prefix) + len(p.user_suffix) + standard


@dataclass(frozen=True)
class _Work:
    """One sample's expected work: claims, calls, prompt characters and output tokens per stage."""

    claims: int
    extraction_calls: int
    judge_calls: int
    extraction_chars: int
    judge_chars: float
    extraction_output: int
    judge_output: int


def _prompts(mode: Mode) -> tuple[int, int]:
    """The characters of the judge's prompt of ``mode`` and of the extraction prompt."""
    style = "cot" if mode.cot else "nocot"
    return _prompt_chars(f"classify_{style}_{'one' if mode.one_claim else 'all'}", 3500), _prompt_chars("extract", 3000)


def _work(
    s: LabelledSample | Sample, mode: Mode, prompts: tuple[int, int], *, gold_claims: bool, claims_per_sentence: float
) -> _Work:
    judge_prompt, extract_prompt = prompts
    style = "cot" if mode.cot else "nocot"
    gold = getattr(s, "claims", None)  # plain Samples (measure --dry-run) have no gold claims
    claim_chars: float
    extraction_chars = extraction_output = extraction_calls = 0
    if gold_claims and gold:
        n, claim_chars = len(gold), sum(len(c.text) for c in gold)
    else:
        sentences = max(1, len(_SENTENCE_END.findall(s.response.strip() + " ")))
        n = max(1, round(sentences * claims_per_sentence))
        claim_chars = max(len(s.response), 1) * 1.2  # claims restate their nouns
        extraction_calls = 1
        extraction_chars = extract_prompt + len(s.response) + len(s.question or "")
        extraction_output = OUTPUT_TOKENS_PER_CLAIM["extract"] * n
    shared = judge_prompt + len(s.context) + len(s.question or "")
    return _Work(
        claims=n,
        extraction_calls=extraction_calls,
        judge_calls=n if mode.one_claim else 1,
        extraction_chars=extraction_chars,
        judge_chars=n * shared + claim_chars if mode.one_claim else shared + claim_chars,
        extraction_output=extraction_output,
        judge_output=OUTPUT_TOKENS_PER_CLAIM[style] * n,
    )


def estimate_run(
    samples: Sequence[LabelledSample | Sample],
    mode: Mode | str = Mode.COT_ONE,
    *,
    gold_claims: bool = False,
    claims_per_sentence: float = 2.0,
    chars_per_token: float = 4.0,
) -> RunEstimate:
    """Expected calls and tokens: tokens = characters / 4; claims = sentences x ``claims_per_sentence``.

    One-claim modes: one extraction call plus one judge call per claim. All-claims modes: one
    extraction call plus one judge call. With gold claims there is no extraction and the claim
    count is exact. Prompt caching, re-asks and retries are not counted (real input cost is lower
    with caching, higher with re-asks).
    """
    mode = Mode(mode)
    style = "cot" if mode.cot else "nocot"
    prompts = _prompts(mode)
    claims = extract_calls = judge_calls = 0
    chars_in = 0.0
    chars_out_tokens = 0
    for s in samples:
        w = _work(s, mode, prompts, gold_claims=gold_claims, claims_per_sentence=claims_per_sentence)
        claims += w.claims
        extract_calls += w.extraction_calls
        judge_calls += w.judge_calls
        if w.extraction_calls:
            chars_in += w.extraction_chars
            chars_out_tokens += w.extraction_output
        chars_in += w.judge_chars
        chars_out_tokens += w.judge_output
    assumptions = [
        f"tokens = characters / {chars_per_token:g}",
        "claims = gold claims" if gold_claims else f"claims = sentences x {claims_per_sentence:g}",
        f"output tokens per claim: {OUTPUT_TOKENS_PER_CLAIM[style]} (judge, {style})"
        + ("" if gold_claims else f", {OUTPUT_TOKENS_PER_CLAIM['extract']} (extraction)"),
        "no prompt caching, re-asks or retries counted",
    ]
    return RunEstimate(
        dataset="+".join(sorted({getattr(s, "dataset", "input") for s in samples})) or "empty",
        mode=mode.value,
        gold_claims=gold_claims,
        n_samples=len(samples),
        claims=claims,
        extraction_calls=extract_calls,
        judge_calls=judge_calls,
        input_tokens=int(chars_in / chars_per_token),
        output_tokens=chars_out_tokens,
        assumptions=assumptions,
    )


def sample_costs(
    samples: Sequence[Sample],
    mode: Mode | str,
    *,
    extractor: Price | None,
    judges: Sequence[Price],
    chars_per_token: float = 4.0,
) -> list[Decimal]:
    """Each sample's estimated cost, as ``estimate_run`` counts its work: the extraction at the ``extractor``'s
    price (None: keyless, free) and the judge calls once at each of ``judges``' prices (one per judge and repeat;
    none: keyless)."""
    mode = Mode(mode)
    prompts = _prompts(mode)
    out = []
    for s in samples:
        w = _work(s, mode, prompts, gold_claims=False, claims_per_sentence=2.0)
        dollars = Decimal(0)
        if extractor is not None:
            extraction = Usage(
                input_tokens=int(w.extraction_chars / chars_per_token), output_tokens=w.extraction_output
            )
            dollars += cost(extraction, extractor)
        judging = Usage(input_tokens=int(w.judge_chars / chars_per_token), output_tokens=w.judge_output)
        dollars += sum((cost(judging, price) for price in judges), Decimal(0))
        out.append(dollars)
    return out


def estimate_cost(estimate: RunEstimate, price: Any) -> float:
    """Dollar cost of an estimate at ``price`` (a ``hallumeasure.models.pricing.Price``), uncached."""
    usage = Usage(calls=estimate.calls, input_tokens=estimate.input_tokens, output_tokens=estimate.output_tokens)
    return float(cost(usage, price))
