"""The RAG step around judging: citations out of the response before extraction, the source cut to
what fits the judge, and, after judging, evidence checked against the passages and citations judged.

``prepare`` and ``finish`` wrap the claim stages of one sample (pipeline/run.py calls them);
``rag_summary`` turns a run's results into the numbers of the reports' RAG section.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.types import (
    CitationFinding,
    Claim,
    ClaimVerdict,
    Passage,
    ResponseResult,
    Sample,
    SourceKind,
    joined_text,
)
from hallumeasure.sources.citations import (
    DEFAULT_PATTERNS,
    Marker,
    claim_citations,
    compile_patterns,
    find_markers,
    finding,
    id_pattern,
    restore_spans,
    strip_markers,
    supporting,
)
from hallumeasure.sources.evidence import verified
from hallumeasure.sources.retrieval import SourceView, context_budget, sentence_spans, source_tokens, view_for


class SourceOptions(BaseModel):
    """How sources and citations are handled; recorded in the run manifest."""

    model_config = ConfigDict(frozen=True)

    #: Source tokens shown to the judge per call; None = what the judge's window leaves (see retrieval.py).
    max_context_tokens: int | None = Field(default=None, ge=1)
    citation_patterns: tuple[str, ...] = DEFAULT_PATTERNS
    #: Whether what the user said in earlier turns of a conversation is a source (a user's claim is not
    #: evidence by default: a response that repeats it is judged against the other sources only).
    user_turns: bool = False
    #: Whether context pasted into a user message ("Context: ...", documents above the question; kind
    #: ``user_context``, see runs/user_context.py) is a source.
    context_in_user_turns: bool = True

    def settings(self, judge_name: str) -> dict[str, Any]:
        return {
            "context_budget_tokens": context_budget(judge_name, self.max_context_tokens),
            "ranker": "bm25s",
            "citation_patterns": list(self.citation_patterns),
            "user_turns": self.user_turns,
            "context_in_user_turns": self.context_in_user_turns,
        }

    def left_out(self) -> frozenset[SourceKind]:
        """The kinds of source the judge may not use under these options."""
        return frozenset(
            kind
            for kind, used in (
                (SourceKind.USER_TURN, self.user_turns),
                (SourceKind.USER_CONTEXT, self.context_in_user_turns),
            )
            if not used
        )


@dataclass(frozen=True)
class Prepared:
    """The sample as the claim stages see it (citation markers taken out) and the markers found."""

    sample: Sample
    markers: tuple[Marker, ...] = ()
    #: Index in the original response of each character of ``sample.response``.
    kept: tuple[int, ...] = ()

    def restore(self, claims: Sequence[Claim]) -> list[Claim]:
        """Claims with spans into the original response (with its markers)."""
        return restore_spans(claims, self.kept) if self.markers else list(claims)


def judged_sources(sample: Sample, options: SourceOptions) -> Sample:
    """``sample`` with the sources the judge may use: earlier user turns left out unless ``options.user_turns``,
    context pasted into user messages unless ``options.context_in_user_turns`` is off."""
    left_out = options.left_out()
    if not any(p.kind in left_out for p in sample.passages):
        return sample
    kept = tuple(p for p in sample.passages if p.kind not in left_out)
    return sample.model_copy(update={"passages": kept, "context": joined_text(kept)})


def prepare(sample: Sample, options: SourceOptions) -> Prepared:
    """The sample the claim stages see: its judged sources (``judged_sources``), citation markers taken out."""
    sample = judged_sources(sample, options)
    patterns = compile_patterns(options.citation_patterns)
    own = id_pattern(sample)
    markers = tuple(find_markers(sample.response, [*patterns, *([own] if own else [])]))
    if not markers:
        return Prepared(sample)
    text, kept = strip_markers(sample.response, markers)
    return Prepared(sample.model_copy(update={"response": text}), markers, tuple(kept))


def view(
    sample: Sample, claims: Sequence[Claim], judge_name: str, options: SourceOptions, *, fits: int | None = None
) -> SourceView:
    """What the judge is shown of ``sample``'s source for ``claims``; ``fits``: the source tokens the judge's own
    window leaves per call (``WindowedJudge``), which cuts further unless a budget was given."""
    return view_for(sample, claims, _budget(judge_name, options, fits))


def shown_whole(sample: Sample, judge_name: str, options: SourceOptions, *, fits: int | None = None) -> bool:
    """Whether the judge is shown ``sample``'s whole source (``view`` cuts nothing), known before the claims are."""
    budget = _budget(judge_name, options, fits)
    return budget is None or source_tokens(sample) <= budget


def _budget(judge_name: str, options: SourceOptions, fits: int | None) -> int | None:
    budget = context_budget(judge_name, options.max_context_tokens)
    if options.max_context_tokens is not None or fits is None:
        return budget  # a budget the user gave is theirs to keep
    return fits if budget is None else min(budget, fits)


def finish(
    sample: Sample, prepared: Prepared, shown: SourceView, claims: Sequence[Claim], verdicts: Sequence[ClaimVerdict]
) -> list[ClaimVerdict]:
    """Verdicts with evidence located and checked in ``sample``'s passages, what was shown, and citations."""
    out = []
    # The sources the judge was given (earlier user turns may be left out), in full.
    judged = prepared.sample
    for verdict in verdicts:
        # Quotes are checked against the full passages, wherever in them the judge saw the text.
        verdict = not_from_failed_calls(judged, verified(judged, verdict))
        if shown.cut:
            verdict = verdict.model_copy(update={"shown": shown.shown})
        out.append(verdict)
    if prepared.markers:
        # Sentences are found without the markers ("...world.[2] The" would hide a sentence end).
        kept = prepared.kept
        sentences = [(kept[start], kept[end - 1] + 1) for start, end in sentence_spans(prepared.sample.response)]
        cited = claim_citations(sample, claims, prepared.markers, sentences)
        out = [
            v.model_copy(
                update={"citations": cited.get(v.claim_id, ()), "citation": finding(v, cited.get(v.claim_id, ()))}
            )
            for v in out
        ]
    return out


#: The reason given to every claim of a response that has no source at all.
NO_SOURCE_REASON = (
    "The response has no source to check it against (no context, retrieved passage, tool result or system "
    "prompt), so no claim of it can be judged supported."
)


def unsourced(claims: Sequence[Claim], judge_name: str) -> list[ClaimVerdict]:
    """Verdicts of the claims of a response with no source: each unevaluatable, never supported."""
    return [
        ClaimVerdict(claim_id=c.id, label_reason=NO_SOURCE_REASON, label=Label.UNEVALUATABLE, judge=judge_name)
        for c in claims
    ]


def not_from_failed_calls(sample: Sample, verdict: ClaimVerdict) -> ClaimVerdict:
    """A supported verdict whose every verified quote lies in the result of a failed tool call, made absent.

    The text a failed or errored call returned (an error message, a stale fallback) is no evidence: a claim
    that rests on nothing else is unsupported, and its reason says which call failed.
    """
    if verdict.label is not Label.SUPPORTED:
        return verdict
    by_id = {p.id: p for p in sample.sources}
    found = [by_id[e.passage_id] for e in verdict.evidence if e.verified and e.passage_id in by_id]
    if not found or not all(p.failed for p in found):
        return verdict
    calls = ", ".join(dict.fromkeys(_call_name(p) for p in found))
    reason = (
        f"Its only support is the result of a failed tool call ({calls}); the output of a failed or errored "
        "call is no evidence."
    )
    if verdict.label_reason:
        reason += f" The judge had found: {verdict.label_reason}"
    return verdict.model_copy(
        update={
            "label": Label.ABSENT,
            "label_reason": reason,
            "subtype": Subtype.OTHER,
            "subtype_reason": "The claim rests on the result of a failed tool call.",
            "probability": None,
            "confident": True,
        }
    )


def _call_name(passage: Passage) -> str:
    tool = passage.tool_name or "a tool"
    return f"{tool}, call {passage.call_id}" if passage.call_id else f"{tool}, source {passage.id}"


# --- the run-level numbers -----------------------------------------------------------------------------


class PassageUse(BaseModel):
    """How claims used the passages with one id (ids repeat across samples: "1" is each sample's first)."""

    passage_id: str
    n_passages: int = 0
    cited: int = 0
    supported: int = 0
    contradicted: int = 0


class RagSummary(BaseModel):
    """Evidence, citation and passage-use numbers of a run (or of one model's responses in it)."""

    model: str = "(all)"
    n_responses: int = 0
    n_citing_responses: int = Field(0, description="responses with at least one citation marker")
    n_claims_with_evidence: int = 0
    n_evidence_unverified: int = Field(0, description="claims with a quote that was not found in its passage")
    unverified_share: float | None = None
    n_claims_cut: int = Field(0, description="claims judged against a view of a source too long for the judge")
    n_citations: int = Field(0, description="(claim, cited passage) pairs over checked claims of citing responses")
    n_correct_citations: int = 0
    citation_precision: float | None = Field(None, description="cited passages that support the claim / citations")
    n_supported_checked: int = Field(0, description="supported claims of citing responses with a verified quote")
    n_supported_cited_correctly: int = 0
    citation_recall: float | None = Field(
        None, description="supported claims that cite a supporting passage / supported claims"
    )
    findings: dict[CitationFinding, int] = Field(default_factory=dict)
    n_passages: int = 0
    n_passages_used: int = Field(
        0, description="passages that a verified quote shows to support or contradict some claim"
    )
    passage_use: list[PassageUse] = Field(default_factory=list)

    @property
    def applies(self) -> bool:
        """Whether there is anything RAG to report: citations, several passages, cut sources or unverified quotes."""
        return bool(
            self.n_citing_responses
            or self.n_claims_cut
            or self.n_evidence_unverified
            or self.n_passages > self.n_responses
        )


#: Passage ids listed in ``passage_use`` (the rest are counted in the totals only).
MAX_LISTED_PASSAGES = 20


def rag_summary(results: Sequence[ResponseResult], samples: Sequence[Sample], model: str = "(all)") -> RagSummary:
    """The RAG numbers of ``results`` (their samples give the passages)."""
    by_id = {s.id: s for s in samples}
    s = RagSummary(model=model, n_responses=len(results))
    use: dict[str, PassageUse] = {}
    findings: Counter[CitationFinding] = Counter()
    for result in results:
        sample = by_id.get(result.sample_id)
        sources = sample.sources if sample is not None else ()
        for p in sources:
            use.setdefault(p.id, PassageUse(passage_id=p.id)).n_passages += 1
        s.n_passages += len(sources)
        used: set[str] = set()
        citing = any(v.citation is not None or v.citations for v in result.verdicts)
        s.n_citing_responses += citing
        for v in result.verdicts:
            s.n_claims_with_evidence += v.evidence_verified is not None
            s.n_evidence_unverified += v.evidence_verified is False
            s.n_claims_cut += bool(v.shown)
            support, against = supporting(v), supporting(v, Label.CONTRADICTED)
            used |= support | against
            for pid in support:
                use.setdefault(pid, PassageUse(passage_id=pid)).supported += 1
            for pid in against:
                use.setdefault(pid, PassageUse(passage_id=pid)).contradicted += 1
            for pid in v.citations:
                if not pid.startswith("?"):
                    use.setdefault(pid, PassageUse(passage_id=pid)).cited += 1
            if v.citation is None:
                continue
            findings[v.citation] += 1
            if v.citation == CitationFinding.UNCHECKED:
                continue
            s.n_citations += len(v.citations)
            s.n_correct_citations += len(set(v.citations) & support)
            if support:
                s.n_supported_checked += 1
                s.n_supported_cited_correctly += v.citation == CitationFinding.CORRECT
        s.n_passages_used += len(used & {p.id for p in sources})
    s.unverified_share = _share(s.n_evidence_unverified, s.n_claims_with_evidence)
    s.citation_precision = _share(s.n_correct_citations, s.n_citations)
    s.citation_recall = _share(s.n_supported_cited_correctly, s.n_supported_checked)
    s.findings = dict(sorted(findings.items()))
    s.passage_use = sorted(use.values(), key=_id_order)[:MAX_LISTED_PASSAGES]
    return s


def rag_summaries(results: Sequence[ResponseResult], samples: Sequence[Sample]) -> list[RagSummary]:
    """One summary for the whole run, then one per model."""
    groups: dict[str, list[ResponseResult]] = {}
    for r in results:
        groups.setdefault(r.model or "(no model)", []).append(r)
    out = [rag_summary(results, samples)]
    if len(groups) > 1:
        out += [rag_summary(group, samples, name) for name, group in groups.items()]
    return out


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _id_order(use: PassageUse) -> tuple[int, int, str]:
    return (0, int(use.passage_id), "") if use.passage_id.isdigit() else (1, 0, use.passage_id)


def capped_for_estimate(
    samples: Sequence[Sample], judge_name: str, options: SourceOptions, chars_per_token: float = 4.0
) -> list[Sample]:
    """Samples whose sources are cut to what the judge will see at most, for cost estimates (``--dry-run``):
    a source over the budget is judged through a view of at most the budget's tokens."""
    budget = context_budget(judge_name, options.max_context_tokens)
    if budget is None:
        return list(samples)
    limit = int(budget * chars_per_token)
    return [s.model_copy(update={"context": s.context[:limit]}) if len(s.context) > limit else s for s in samples]
