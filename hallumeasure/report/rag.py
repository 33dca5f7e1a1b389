"""The RAG section of the reports: citation precision and recall per model, unverified evidence, passage use,
and each claim's evidence quote highlighted in its passage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from hallumeasure.core.types import CitationFinding, ClaimVerdict, Sample
from hallumeasure.runs.run import Run
from hallumeasure.sources.evidence import find_quote
from hallumeasure.sources.rag import RagSummary, rag_summaries

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class ClaimEvidence:
    """What the drill-downs show beside a claim: its quote in its passage, and its citation finding."""

    passage_id: str | None
    title: str | None
    quote: str
    verified: bool
    citation: str | None
    citations: tuple[str, ...]
    #: The passage as safe HTML with the quote marked (empty when the quote was not found).
    passage_html: Markup


def load_rag(run: Run) -> tuple[list[RagSummary], dict[str, ClaimEvidence]]:
    """The run's RAG summaries (whole run, then per model) and the evidence of each claim, by claim id.

    A run read as columns that stored no passages, evidence or citations has none to report (no summaries, no
    evidence); one that did is read whole for them."""
    if run.columns_only:
        if not run.has_rag_rows():
            return [], {}
        run = Run.load(run.path, name=run.name)
    samples = {s.id: s for s in run.samples}
    evidence = {
        v.claim_id: view
        for r in run.results
        for v in r.verdicts
        if (view := claim_evidence(samples.get(r.sample_id), v)) is not None
    }
    return rag_summaries(run.results, run.samples), evidence


def claim_evidence(sample: Sample | None, verdict: ClaimVerdict) -> ClaimEvidence | None:
    if sample is None or not (verdict.evidence or verdict.citation):
        return None
    first = verdict.evidence[0] if verdict.evidence else None
    passage = next((p for p in sample.sources if first and p.id == first.passage_id), None)
    html = Markup("")
    if passage is not None and first is not None and first.verified:
        span = find_quote(first.quote, passage.text)
        if span is not None:
            start, end = span
            html = (
                escape(passage.text[:start])
                + Markup("<mark>")
                + escape(passage.text[start:end])
                + Markup("</mark>")
                + escape(passage.text[end:])
            )
    return ClaimEvidence(
        passage_id=first.passage_id if first else None,
        title=passage.title if passage else None,
        quote=first.quote if first else "",
        verified=bool(first and first.verified),
        citation=verdict.citation.value if verdict.citation else None,
        citations=verdict.citations,
        passage_html=html,
    )


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def passage_use_line(summary: RagSummary) -> str:
    """ "1: cited 33, supports 22, contradicts 4; 2: ..." for the passages listed in the summary."""
    return "; ".join(
        f"{u.passage_id}: cited {u.cited}, supports {u.supported}, contradicts {u.contradicted}"
        for u in summary.passage_use
    )


#: The RAG table's title and its columns after "model", as ``show`` prints them.
RAG_TITLE = "RAG: evidence and citations"
RAG_COLUMNS = (
    "citing",
    "citation precision",
    "citation recall",
    "wrong passage",
    "uncited",
    "cites contradicting",
    "unverified evidence",
    "cut",
    "passages used",
)


def rag_rows(summaries: list[RagSummary]) -> list[tuple[str, list[str]]]:
    """The RAG table of ``show``: one row per model (the whole run first), its cells in ``RAG_COLUMNS`` order;
    empty when the run has nothing RAG to report. Model names are plain text (the caller escapes them)."""
    return [
        (
            s.model,
            [
                f"{s.n_citing_responses}/{s.n_responses}",
                share(s.citation_precision),
                share(s.citation_recall),
                str(s.findings.get(CitationFinding.WRONG_PASSAGE, 0)),
                str(s.findings.get(CitationFinding.UNCITED, 0)),
                str(s.findings.get(CitationFinding.CITED_CONTRADICTS, 0)),
                f"{s.n_evidence_unverified}/{s.n_claims_with_evidence}",
                str(s.n_claims_cut),
                f"{s.n_passages_used}/{s.n_passages}",
            ],
        )
        for s in summaries
        if s.applies
    ]


def quote_cell(evidence: ClaimEvidence | None) -> str:
    """One line for a claims table: [passage] "quote", marked when the quote is not in its passage."""
    if evidence is None or not evidence.quote:
        return ""
    return f'[{evidence.passage_id}] "{evidence.quote}"' + ("" if evidence.verified else " (NOT FOUND)")


def evidence_table_html(claims: pd.DataFrame, evidence: dict[str, ClaimEvidence], limit: int = 20) -> Markup:
    """An HTML table of claims (a DataFrame of ``Run.claims``) with their citation finding and
    their evidence quote marked in its passage; every piece of run text is escaped."""
    rows = [
        Markup(
            "<tr><th>sample</th><th>claim</th><th>label</th><th>cites</th><th>citation</th>"
            "<th>evidence in its passage</th></tr>"
        )
    ]
    for record in claims.head(limit).to_dict(orient="records"):
        found = evidence.get(record["claim_id"])
        passage = Markup("")
        if found is not None and found.passage_html:
            passage = Markup("<b>[{}] {}</b><br>{}").format(found.passage_id, found.title or "", found.passage_html)
        elif found is not None and found.quote:
            passage = Markup('<b>[{}]</b> "{}" <b>not found in the passage</b>').format(found.passage_id, found.quote)
        rows.append(
            Markup("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>").format(
                record["sample_id"],
                record["claim"],
                record["label"] or "error",
                ", ".join(found.citations) if found else "",
                (found.citation or "") if found else "",
                passage,
            )
        )
    return Markup("<table>") + Markup("").join(rows) + Markup("</table>")
