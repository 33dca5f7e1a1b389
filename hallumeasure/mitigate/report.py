"""The records of a mitigation report (also written as ``mitigation.json``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from hallumeasure.core.types import Usage


class Snapshot(BaseModel):
    """One response's measurement at one point (before or after)."""

    unsupported_rate: float | None
    hallucinated: bool | None
    n_claims: int
    n_unsupported: int
    error: str | None = None


class FlaggedClaim(BaseModel):
    text: str
    label: str | None
    subtype: str | None = None
    reason: str | None = None


class ResponseMitigation(BaseModel):
    sample_id: str
    model: str | None
    sent: bool
    rewritten: bool = Field(description="the final text differs from the original")
    emptied: bool = Field(default=False, description="the rewrite kept no claim that counts in the rate")
    rounds: int = Field(description="rounds whose rewrite was kept")
    rewrite_error: str | None = None
    reasoning: str | None = None
    original: str
    final: str
    before: Snapshot
    after: Snapshot
    supported_before: int = 0
    retained: int = 0
    lost_supported: list[str] = Field(default_factory=list)
    fixed: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    still_unsupported: list[str] = Field(default_factory=list)
    new_unsupported: list[FlaggedClaim] = Field(default_factory=list)
    left_for_llm_check: list[str] = Field(
        default_factory=list, description="claims of the final text that the judge could not tell; never rewritten"
    )
    rewrite_usage: Usage = Field(default_factory=Usage)
    measure_usage: Usage = Field(default_factory=Usage)


class RoundSummary(BaseModel):
    round: int
    sent: int
    changed: int
    rewrite_errors: int
    mean_unsupported_rate_before: float | None
    mean_unsupported_rate_after: float | None
    hallucinated_share_after: float | None
    output_tokens: int
    kept: bool


class RunSide(BaseModel):
    mean_unsupported_rate: float | None
    hallucinated_share: float | None
    n_hallucinated: int
    n_rated: int


class MitigationReport(BaseModel):
    """Everything the mitigation report shows; also written as ``mitigation.json``."""

    source_run: str
    mitigated_run: str
    detector: str
    extractor: str
    judge: str
    rewriter: str
    rewriter_settings: dict[str, Any]
    policy: str
    align_threshold: float
    rounds_requested: int
    rounds_kept: int
    rounds: list[RoundSummary]
    before: RunSide
    after: RunSide
    n_responses: int
    n_sent: int
    n_rewritten: int
    n_rewrite_errors: int
    n_originally_hallucinated: int
    n_mitigated: int = Field(
        description="originally hallucinated responses that are not hallucinated after the "
        "rewrite and still have a claim that counts (emptied ones excluded)"
    )
    mitigation_rate: float | None = Field(description="n_mitigated / n_originally_hallucinated")
    n_emptied: int = Field(description="rewritten responses left without any claim that counts; never mitigated")
    n_hallucinated_emptied: int = Field(
        default=0, description="of the originally hallucinated responses, those emptied"
    )
    n_clean: int = Field(
        default=0,
        description="originally hallucinated responses not hallucinated after the "
        "rewrite, emptied ones included (n_mitigated + n_hallucinated_emptied)",
    )
    clean_rate: float | None = Field(default=None, description="n_clean / n_originally_hallucinated")
    supported_before: int
    retained: int
    retention: float | None
    n_new_unsupported: int
    n_responses_with_new_unsupported: int
    n_left_for_llm_check: int = Field(
        default=0,
        description="claims the judge could not tell (confident=False), never rewritten: left for an LLM check",
    )
    n_responses_left_for_llm_check: int = Field(default=0, description="responses with such claims")
    rewrite_usage: Usage
    rewrite_requests: int
    mean_output_tokens_per_rewrite: float | None
    measure_usage: Usage
    responses: list[ResponseMitigation]
    notes: list[str] = Field(default_factory=list)
