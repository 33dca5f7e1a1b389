"""Before/after bookkeeping: claim alignment, retention, fixed / removed / new claims, run-level rates."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hallumeasure.core.labels import Label, Policy
from hallumeasure.core.types import Claim, ResponseResult, Usage
from hallumeasure.detectors.entities import value_tokens
from hallumeasure.detectors.rewrite import Rewriter
from hallumeasure.mitigate.report import FlaggedClaim, MitigationReport, ResponseMitigation, RunSide, Snapshot
from hallumeasure.mitigate.rounds import MitigationOutcome, SampleState, hallucinated_share, mean_rate, unsure_claims

#: Dice overlap of content words at or above which two claims count as the same claim. At 0.6 a
#: claim with one value swapped ("42 km" -> "24 km") still aligns with its original, while a
#: replacement sentence that shares only a word or two does not.
ALIGN_THRESHOLD = 0.6

_STOP = frozenset(
    "a an the of and or but to in on at for by with from as is are was were be been it its this that these those "
    "he she they them his her their there will would can could should may might do does did has have had".split()
)


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _content(text: str) -> set[str]:
    return {t for t in value_tokens(text) if t not in _STOP}


def similarity(a: str, b: str) -> float:
    """1.0 for the same text after normalisation, else the Dice overlap of content words (numbers whole)."""
    if _normalise(a) == _normalise(b):
        return 1.0
    left, right = _content(a), _content(b)
    if not left or not right:
        return 0.0
    return 2 * len(left & right) / (len(left) + len(right))


def best_match(claim: str, candidates: Sequence[Claim], threshold: float = ALIGN_THRESHOLD) -> Claim | None:
    """The candidate most similar to ``claim``, if it reaches ``threshold``."""
    scored = [(similarity(claim, c.text), c) for c in candidates]
    score, match = max(scored, key=lambda pair: pair[0], default=(0.0, None))
    return match if match is not None and score >= threshold else None


def _snapshot(result: ResponseResult) -> Snapshot:
    return Snapshot(
        unsupported_rate=result.unsupported_rate,
        hallucinated=result.hallucinated,
        n_claims=result.n_claims,
        n_unsupported=result.n_unsupported,
        error=result.error,
    )


def compare_response(state: SampleState, policy: Policy, threshold: float = ALIGN_THRESHOLD) -> ResponseMitigation:
    """Before/after of one response: retained, fixed, removed and new unsupported claims."""
    before, after = state.original_result, state.result
    row = ResponseMitigation(
        sample_id=state.original.id,
        model=state.original.model,
        sent=state.sent,
        rewritten=state.sample.response != state.original.response,
        rounds=state.rounds,
        rewrite_error=state.error,
        reasoning=state.reasoning,
        original=state.original.response,
        final=state.sample.response,
        before=_snapshot(before),
        after=_snapshot(after),
        rewrite_usage=state.rewrite_usage,
        measure_usage=state.measure_usage,
        left_for_llm_check=unsure_claims(after),
    )
    if not row.rewritten or after.error is not None:
        return row
    row.emptied = before.n_evaluated > 0 and after.n_evaluated == 0
    # unsure verdicts are guesses: they are neither fixed, kept nor new, only left for an LLM check
    label_after = {v.claim_id: v for v in after.verdicts if v.ok and v.confident}
    label_before = {v.claim_id: v for v in before.verdicts if v.ok and v.confident}
    for claim in before.claims:
        verdict = label_before.get(claim.id)
        if verdict is None:
            continue
        match = best_match(claim.text, after.claims, threshold)
        now = label_after.get(match.id) if match is not None else None
        if verdict.label == Label.SUPPORTED:
            row.supported_before += 1
            if now is not None and now.label == Label.SUPPORTED:
                row.retained += 1
            else:
                row.lost_supported.append(claim.text)
        elif policy.is_unsupported(verdict.label):  # type: ignore[arg-type]
            if match is None:
                row.removed.append(claim.text)
            elif now is not None and policy.is_unsupported(now.label):  # type: ignore[arg-type]
                row.still_unsupported.append(claim.text)
            else:
                row.fixed.append(claim.text)
    for claim in after.claims:
        verdict = label_after.get(claim.id)
        if verdict is None or not policy.is_unsupported(verdict.label):  # type: ignore[arg-type]
            continue
        origin = best_match(claim.text, before.claims, threshold)
        origin_verdict = label_before.get(origin.id) if origin is not None else None
        if origin_verdict is None or not policy.is_unsupported(origin_verdict.label):  # type: ignore[arg-type]
            row.new_unsupported.append(
                FlaggedClaim(text=claim.text, label=verdict.label, subtype=verdict.subtype, reason=verdict.label_reason)
            )
    return row


def _side(results: Sequence[ResponseResult]) -> RunSide:
    return RunSide(
        mean_unsupported_rate=mean_rate(results),
        hallucinated_share=hallucinated_share(results),
        n_hallucinated=sum(1 for r in results if r.hallucinated),
        n_rated=sum(1 for r in results if r.unsupported_rate is not None),
    )


def build_report(
    outcome: MitigationOutcome,
    policy: Policy,
    *,
    source_run: str,
    mitigated_run: str,
    detector: str,
    extractor: str,
    judge: str,
    rewriter: Rewriter,
    rounds_requested: int,
    threshold: float = ALIGN_THRESHOLD,
) -> MitigationReport:
    """The before/after report of a mitigation outcome."""
    rows = [compare_response(s, policy, threshold) for s in outcome.states]
    emptied = {r.sample_id for r in rows if r.emptied}
    was = [s for s in outcome.states if s.original_result.hallucinated]
    # An emptied response is clean only because nothing checkable is left: not a repair.
    # Clean after: not hallucinated, or emptied (no claim left; since a response with no checkable claim is
    # never decided clean, its flag is None, so the emptied ones are named here as the clean share defines it).
    clean = [s for s in was if s.result.hallucinated is False or s.original.id in emptied]
    mitigated = [s for s in clean if s.original.id not in emptied]
    supported = sum(r.supported_before for r in rows)
    retained = sum(r.retained for r in rows)
    rewrite_usage = sum((s.rewrite_usage for s in outcome.states), Usage())
    requests = sum(s.requests for s in outcome.states)
    notes = [
        "Responses without unsupported claims were not sent to the rewriter; they are copied unchanged.",
        (
            f"Retention counts supported claims of rewritten responses only; a claim is present when a claim of the "
            f"rewrite has the same normalised text or a content-word overlap (Dice) of at least {threshold:g}."
        ),
    ]
    if emptied:
        notes.append(
            "A response whose rewrite keeps no checkable claim is marked 'emptied': it is no longer "
            "hallucinated, but it was deleted rather than repaired, so the mitigation rate does not count "
            "it (the clean share does)."
        )
    if any(r.left_for_llm_check for r in rows):
        notes.append(
            "Claims the judge could not tell (unsure) were never rewritten: their labels are guesses. They are "
            "left for an LLM check; a response hallucinated only through unsure claims was not sent and counts "
            "as not mitigated."
        )
    if any(not r.kept for r in outcome.rounds):
        notes.append("A round that did not lower the mean unsupported rate was discarded (its cost is counted).")
    return MitigationReport(
        source_run=source_run,
        mitigated_run=mitigated_run,
        detector=detector,
        extractor=extractor,
        judge=judge,
        rewriter=rewriter.name,
        rewriter_settings=rewriter.settings(),
        policy=policy.describe(),
        align_threshold=threshold,
        rounds_requested=rounds_requested,
        rounds_kept=sum(1 for r in outcome.rounds if r.kept),
        rounds=outcome.rounds,
        before=_side([s.original_result for s in outcome.states]),
        after=_side(outcome.results),
        n_responses=len(rows),
        n_sent=sum(1 for r in rows if r.sent),
        n_rewritten=sum(1 for r in rows if r.rewritten),
        n_rewrite_errors=sum(1 for r in rows if r.rewrite_error),
        n_originally_hallucinated=len(was),
        n_mitigated=len(mitigated),
        mitigation_rate=len(mitigated) / len(was) if was else None,
        n_emptied=len(emptied),
        n_hallucinated_emptied=sum(1 for s in was if s.original.id in emptied),
        n_clean=len(clean),
        clean_rate=len(clean) / len(was) if was else None,
        supported_before=supported,
        retained=retained,
        retention=retained / supported if supported else None,
        n_new_unsupported=sum(len(r.new_unsupported) for r in rows),
        n_responses_with_new_unsupported=sum(1 for r in rows if r.new_unsupported),
        n_left_for_llm_check=sum(len(r.left_for_llm_check) for r in rows),
        n_responses_left_for_llm_check=sum(1 for r in rows if r.left_for_llm_check),
        rewrite_usage=rewrite_usage,
        rewrite_requests=requests,
        mean_output_tokens_per_rewrite=rewrite_usage.output_tokens / requests if requests else None,
        measure_usage=sum((s.measure_usage for s in outcome.states), Usage()),
        responses=rows,
        notes=notes,
    )
