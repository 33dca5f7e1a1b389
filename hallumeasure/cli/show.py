"""The ``show`` command: a run's summary, its claims, its judge's stability and its evidence checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from hallumeasure.cli.common import (
    MeasuredRunDir,
    app,
    console,
    fail,
    out,
    resume_command,
)
from hallumeasure.cli.output import print_error_reasons, print_skipped, print_summary
from hallumeasure.core.config import redact
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.core.labels import Policy

if TYPE_CHECKING:
    import pandas as pd

    from hallumeasure.report.rag import ClaimEvidence
    from hallumeasure.runs.run import Run


@app.command()
def show(
    run_dir: MeasuredRunDir,
    claims: Annotated[
        bool, typer.Option("--claims", help="List every claim with its verdict (with --json: a 'claims' list).")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the manifest, summary and error reasons as JSON.")
    ] = False,
    summary: Annotated[
        bool, typer.Option("--summary/--no-summary", help="Print the summary table (--no-summary: only the claims).")
    ] = True,
) -> None:
    """Summarise a run (and optionally list its claims); with repeats or a panel, also the judge's stability;
    with passages, the evidence and citation checks."""
    from hallumeasure.report.rag import load_rag, print_rag
    from hallumeasure.report.spans import response_spans
    from hallumeasure.report.stability import claim_votes, run_stability
    from hallumeasure.runs.run import Run

    try:
        data = Run.load(run_dir)
    except HalluMeasureError as exc:
        raise fail(str(exc)) from exc
    if data.unfinished and data.manifest is not None:  # exit 0: looking at a crashed run is how one finds out why
        from hallumeasure.runs.run import unfinished_message

        message = unfinished_message(data, resume_command(data))
        console.print(
            f"[yellow]warning:[/yellow] {escape(redact(message))}",
            highlight=False,
            soft_wrap=True,
        )
    if as_json:
        payload = {
            "manifest": json.loads(data.manifest.model_dump_json()) if data.manifest else None,
            "unfinished": data.unfinished,
            "summary": json.loads(data.summary.to_json(orient="records")),
            "error_reasons": [reason.model_dump() for reason in data.error_reasons],
            "skipped": json.loads(data.skipped.to_json(orient="records")),
            "stability": json.loads(stability.model_dump_json()) if (stability := run_stability(data)) else None,
            "rag": [s.model_dump(mode="json") for s in load_rag(data)[0]],
            "unsupported_spans": [r.model_dump(mode="json", exclude={"response"}) for r in response_spans(data)],
        }
        if claims:
            payload["claims"] = _claim_records(_with_votes(data, claim_votes))
        out.print_json(data=payload)
        return
    summaries, evidence = load_rag(data)
    if summary:
        print_summary(run_dir, data)
        print_skipped(data, out)
        print_error_reasons(data, out, run_dir=run_dir)
        print_rag(out, summaries)
    if claims:
        _print_claims(data, run_dir, _with_votes(data, claim_votes), evidence)


def _print_claims(
    data: Run,
    run_dir: Path,
    rows: pd.DataFrame | None = None,
    evidence: dict[str, ClaimEvidence] | None = None,
) -> None:
    """One line per claim, cut to the terminal's width (80 columns when not a terminal); reasons when it is wide.

    ``rows``: the claims with their votes (``_with_votes``); a run with repeats or a panel shows them.
    ``evidence``: the evidence of each claim by claim id (``load_rag``); a run with passages shows each claim's
    citation finding and its evidence quote.
    """
    from rich import box

    from hallumeasure.report.rag import quote_cell

    wide = out.size.width >= 150
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    sample_width = min(16, max([6, *(len(str(x)) for x in data.claims["sample_id"])]))
    table.add_column("sample", no_wrap=True, overflow="ellipsis", width=sample_width)
    unsure = int(data.claims["confident"].eq(False).sum()) if "confident" in data.claims else 0
    label_width = 13 if unsure else 12  # room for "contradicted?"
    table.add_column("label", no_wrap=True, overflow="ellipsis", width=label_width)
    table.add_column("subtype", no_wrap=True, overflow="ellipsis", width=11)
    rows = data.claims if rows is None else rows
    evidence = evidence or {}
    voted = "votes" in rows
    if voted:
        table.add_column("votes", no_wrap=True, overflow="ellipsis", width=14)
    # the citation finding when some claim has one (a response that cites passages), the quote when wide
    cited = bool(evidence) and any(getattr(e, "citation", None) for e in evidence.values())
    if cited:
        table.add_column("citation", no_wrap=True, overflow="ellipsis", width=17)
    quoted = bool(evidence) and wide
    # rich squeezes every column when a text is longer than the line, so the rest is shared out here
    n_columns = 4 + voted + cited + wide + quoted
    fixed = sample_width + label_width + 11 + (15 if voted else 0) + (18 if cited else 0)
    rest = max(20, out.size.width - fixed - 2 * n_columns)
    claim_width = rest * 2 // 5 if wide else rest
    table.add_column("claim", no_wrap=True, overflow="ellipsis", width=claim_width)
    if wide:
        table.add_column("reason", no_wrap=True, overflow="ellipsis", width=(rest - claim_width) // (1 + quoted))
    if quoted:
        table.add_column("evidence", no_wrap=True, overflow="ellipsis", width=(rest - claim_width) // 2)
    for row in rows.to_dict(orient="records"):
        label = _cell(row["label"])
        shown = {"partially_supported": "partial"}.get(label, label)
        if label and row.get("confident") is False:  # a best guess, never shown as a decision
            shown += "?"
        cells = [
            _cell(row["sample_id"]),
            shown or "[red]ERROR[/red]",
            _cell(row["subtype"]),
            *((_cell(row["votes"]),) if voted else ()),
            _cell(row["claim"]),
        ]
        if cited:
            cells.insert(3 + voted, _cell(getattr(evidence.get(row["claim_id"]), "citation", None)))
        if wide:
            cells.append(_cell(row["label_reason"]) if label else _cell(row["error"]))
        if quoted:
            cells.append(_cell(quote_cell(evidence.get(row["claim_id"]))))
        table.add_row(*cells)
    out.print(table)
    marked = f"; '?' = unsure: the judge could not tell, its label is a best guess ({unsure} claims)" if unsure else ""
    out.print(
        f"{len(data.claims)} claims, one line each, cut to fit ('partial' = partially_supported{marked}); every "
        "reason and the evidence in full: "
        f"hallumeasure view {run_dir} (or: show {run_dir} --json --claims)",
        highlight=False,
        markup=False,
        soft_wrap=False,
    )


def _with_votes(data: Run, claim_votes: Callable[[pd.DataFrame, Policy], pd.DataFrame | None]) -> pd.DataFrame:
    """The run's claims, with each claim's vote tally and flip rate when it has repeats or a panel."""
    votes = claim_votes(data.votes, data.policy)
    return data.claims if votes is None else data.claims.merge(votes, on="claim_id", how="left")


def _claim_records(claims: pd.DataFrame) -> list[dict[str, Any]]:
    """Claims with their verdicts as JSON-ready records (spans parsed; the raw model output left out)."""
    from hallumeasure.core.config import redact as _redact

    records: list[dict[str, Any]] = json.loads(
        claims.drop(columns=["raw_output"], errors="ignore").to_json(orient="records")
    )
    for record in records:
        if isinstance(record.get("spans"), str):
            record["spans"] = json.loads(record["spans"])
        if isinstance(record.get("error"), str):
            record["error"] = _redact(record["error"])
    return records


def _cell(value: object) -> str:
    """Table text for a DataFrame value (None and NaN become empty); markup in data is escaped."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return escape(str(value))
