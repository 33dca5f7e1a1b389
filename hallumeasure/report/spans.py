"""A run's unsupported spans, per response: what ``show --json`` lists and the ``lettucedetect`` and
``ragtruth`` exporters (``hallumeasure.export``) write."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from hallumeasure.core.spans import UnsupportedSpan, unsupported_spans
from hallumeasure.core.types import Sample
from hallumeasure.runs.run import Run


class ResponseSpans(BaseModel):
    """One response of a run with the characters behind its unsupported claims."""

    sample_id: str
    input_id: str
    model: str | None = None
    response: str
    spans: list[UnsupportedSpan]
    #: Indexes of unsupported claims that could not be placed in the response (so have no span).
    unlocated: list[int]
    #: Whether the response was measured (False: not yet, or it failed; ``spans`` is then empty).
    measured: bool


def response_spans(run: Run) -> list[ResponseSpans]:
    """Every response of ``run`` with its unsupported spans, in input order."""
    by_id = {r.sample_id: r for r in run.results}
    out = []
    for sample in run.samples:
        result = by_id.get(sample.id)
        measured = result is not None and result.error is None
        spans = unsupported_spans(sample.response, result.claims, result.verdicts, run.policy) if result else []
        unlocated = []
        if result is not None:
            verdicts = {v.claim_id: v for v in result.verdicts}
            unlocated = [
                c.index
                for c in result.claims
                if not c.located
                and (v := verdicts.get(c.id)) is not None
                and v.ok
                and v.label is not None
                and run.policy.is_unsupported(v.label)
            ]
        out.append(
            ResponseSpans(
                sample_id=sample.id,
                input_id=sample.given_id,
                model=sample.model,
                response=sample.response,
                spans=spans,
                unlocated=unlocated,
                measured=measured,
            )
        )
    return out


def measured_spans(run: Run) -> Iterator[tuple[Sample, ResponseSpans]]:
    """Each measured response of ``run`` with its sample, in input order: what the span exporters write."""
    samples = {s.id: s for s in run.samples}
    for r in response_spans(run):
        if r.measured:
            yield samples[r.sample_id], r
