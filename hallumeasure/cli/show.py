"""The ``show`` command: a run's summary, its claims, its judge's stability and its evidence checks."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
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
from hallumeasure.cli.output import load_summary_table, print_error_reasons, print_skipped, print_summary
from hallumeasure.core.config import redact
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.core.labels import Policy

if TYPE_CHECKING:
    import pandas as pd

    from hallumeasure.report.rag import ClaimEvidence
    from hallumeasure.runs.run import Run
    from hallumeasure.sources.rag import RagSummary


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
    models: Annotated[
        list[str] | None,
        typer.Option("--model", help="List only this model's claims (repeat for several; implies --claims)."),
    ] = None,
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            help="List only claims with this label: supported, partial (partially_supported), absent, "
            "contradicted or unevaluatable (repeat for several; implies --claims).",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            min=1,
            help="List only the first N claims (implies --claims); only their responses are read, so it is quick "
            "on a run of any size.",
        ),
    ] = None,
) -> None:
    """Summarise a run (and optionally list its claims); with repeats or a panel, also the judge's stability;
    with passages, the evidence and citation checks."""
    from hallumeasure.report.rag import load_rag
    from hallumeasure.report.spans import response_spans
    from hallumeasure.report.stability import claim_votes, run_stability
    from hallumeasure.runs.run import Run

    claims = claims or bool(models or labels) or limit is not None
    paged = limit is not None and not as_json
    try:
        # the summary alone, or with the first claims, reads the run as columns (any size); JSON and every claim
        # need its records
        data = Run.load(run_dir) if as_json or (claims and not paged) else load_summary_table(run_dir)
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
    if as_json or (claims and not paged):
        try:
            chosen = _chosen_claims(data.claims, models or [], labels or [])
        except ValueError as exc:
            raise fail(str(exc)) from exc
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
            payload["claims"] = _claim_records(_with_votes(data, claim_votes).loc[chosen].head(limit))
        out.print_json(data=payload)
        return
    summaries, evidence = load_rag(data)
    if summary:
        print_summary(run_dir, data)
        print_skipped(data, out)
        print_error_reasons(data, out, run_dir=run_dir)
        _print_rag(summaries)
    if claims and paged and limit is not None:
        try:
            part, total = _first_claims(data, models or [], labels or [], limit)
        except ValueError as exc:
            raise fail(str(exc)) from exc
        kept = _claim_mask(part.claims, models or [], _wanted_labels(labels or []))
        rows = _with_votes(part, claim_votes).loc[kept].head(limit)
        _print_claims(part, run_dir, rows, load_rag(part)[1], total=total)
    elif claims:
        _print_claims(data, run_dir, _with_votes(data, claim_votes).loc[chosen], evidence)


#: What ``--label`` accepts besides the labels' own names.
LABEL_ALIASES = {"partial": "partially_supported"}


def _chosen_claims(claims: pd.DataFrame, models: list[str], labels: list[str]) -> pd.Series[bool]:
    """Which claims ``--model`` and ``--label`` keep (all of them without either); a ValueError names a
    model that is not in the run, or a label that does not exist, with the ones that do."""
    _check_models(claims.get("model", []), models)
    return _claim_mask(claims, models, _wanted_labels(labels))


def _claim_mask(claims: pd.DataFrame, models: list[str], wanted: list[str]) -> pd.Series[bool]:
    """The claims of ``models`` with a label in ``wanted`` (either empty: any)."""
    chosen = claims["sample_id"].notna()
    if models:
        chosen &= claims["model"].isin(models)
    if wanted:
        chosen &= claims["label"].isin(wanted)
    return chosen


def _check_models(present: Iterable[object], models: list[str]) -> None:
    """A ValueError naming the first of ``models`` that is not among the run's models (``present``)."""
    known = sorted({str(m) for m in present if isinstance(m, str) and m})
    unknown = [m for m in models if m not in known]
    if unknown:
        raise ValueError(
            f"--model {unknown[0]!r}: no claim of this run is by that model; its models: "
            + (", ".join(known) or "none (the input named no model)")
        )


def _wanted_labels(labels: list[str]) -> list[str]:
    """The labels ``--label`` names (``partial`` for partially_supported); a ValueError names one that is no label."""
    from hallumeasure.core.labels import Label

    valid = [label.value for label in Label]
    wanted = [LABEL_ALIASES.get(label.lower(), label.lower()) for label in labels]
    unknown = [label for label, value in zip(labels, wanted, strict=True) if value not in valid]
    if unknown:
        raise ValueError(f"--label {unknown[0]!r} is no label; use one of: partial, {', '.join(valid)}")
    return wanted


def _first_claims(data: Run, models: list[str], labels: list[str], limit: int) -> tuple[Run, int]:
    """The samples of the first ``limit`` claims that ``--model`` and ``--label`` keep (read by id), and how many
    claims the run has; a ValueError names a model or label that is not in the run, as ``_chosen_claims`` does."""
    _check_models(data.responses["model"], models)
    return data.first_claims(limit, models=models, labels=_wanted_labels(labels))


def _print_rag(summaries: list[RagSummary]) -> None:
    """The RAG table, every header and model name whole: turned (one column per model) when it would not fit."""
    from hallumeasure.cli.output import turned_table
    from hallumeasure.report.rag import RAG_COLUMNS, RAG_TITLE, passage_use_line, rag_rows

    rows = rag_rows(summaries)
    if not rows:
        return
    cells = [[escape(model), *values] for model, values in rows]
    out.print(turned_table(["model", *RAG_COLUMNS], cells, title=RAG_TITLE))
    use = passage_use_line(next(s for s in summaries if s.applies))
    if use:
        out.print(f"passage use (by id): {use}", markup=False, highlight=False, soft_wrap=False)


def _print_claims(
    data: Run,
    run_dir: Path,
    rows: pd.DataFrame | None = None,
    evidence: dict[str, ClaimEvidence] | None = None,
    *,
    total: int | None = None,
) -> None:
    """The claims as a table that fits the terminal (80 columns when not a terminal); the claim's text wraps.

    Below 150 columns a claim's subtype sits under its label; from 150, reasons and evidence quotes get
    columns of their own, cut to fit. A run with models gets a model column, and its samples are shown by
    the id of the input (the same for every model).
    ``rows``: the claims to list, with their votes (``_with_votes``); a run with repeats or a panel shows them.
    ``evidence``: the evidence of each claim by claim id (``load_rag``); a run with passages shows each claim's
    citation finding (and, from 150 columns, its evidence quote).
    """
    from rich import box

    from hallumeasure.report.rag import quote_cell

    rows = data.claims if rows is None else rows
    evidence = evidence or {}
    wide = out.size.width >= 150
    models = "model" in rows and bool(rows["model"].map(lambda m: isinstance(m, str) and bool(m)).any())
    # a model's rows carry the model in their id (harbor@model-a); with a model column the input's id is enough
    ids = rows["input_id"] if models and "input_id" in rows else rows["sample_id"]
    ids = ids.where(ids.map(lambda i: isinstance(i, str) and bool(i)), rows["sample_id"])
    unsure = int(rows["confident"].eq(False).sum()) if "confident" in rows else 0
    voted = "votes" in rows
    cited = bool(evidence) and any(getattr(evidence.get(c), "citation", None) for c in rows["claim_id"])
    quoted = bool(evidence) and wide

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=0)  # one space between columns
    fixed: list[int] = []

    def column(header: str, values: list[str], most: int, *, fold: bool = True) -> None:
        width = min(most, max([len(word) for word in header.split()] + [len(v) for v in values]))
        table.add_column(header, width=width, overflow="fold" if fold else "ellipsis", no_wrap=not fold)
        fixed.append(width)

    column("sample", [str(i) for i in ids], 16)
    if models:
        column("model", [_cell(m) for m in rows["model"]], 14)
    column("label" if wide else "label, subtype", ["unevaluatable", "x" * (12 + bool(unsure))], 13)
    if wide:
        column("subtype", [_cell(s) for s in rows["subtype"]], 20)
    if voted:
        column("votes", [_cell(v) for v in rows["votes"]], 14)
    if cited:
        column("citation", ["cited_unsupported" if wide else "unsupported"], 17)
    rest = max(24, out.size.width - sum(fixed) - len(fixed))
    claim_width = rest * 2 // 5 if wide else rest
    table.add_column("claim", width=claim_width, overflow="fold")
    if wide:
        table.add_column("reason", no_wrap=True, overflow="ellipsis", width=(rest - claim_width) // (1 + quoted))
    if quoted:
        table.add_column("evidence", no_wrap=True, overflow="ellipsis", width=(rest - claim_width) // 2)
    for sample, row in zip(ids, rows.to_dict(orient="records"), strict=True):
        label = _cell(row["label"])
        shown = {"partially_supported": "partial"}.get(label, label)
        if label and row.get("confident") is False:  # a best guess, never shown as a decision
            shown += "?"
        shown = shown or "[red]ERROR[/red]"
        subtype = _cell(row["subtype"])
        citation = _cell(getattr(evidence.get(row["claim_id"]), "citation", None))
        cells = [
            _cell(sample),
            *((_cell(row["model"]),) if models else ()),
            *((shown, subtype) if wide else (f"{shown}\n{subtype}" if subtype else shown,)),
            *((_cell(row["votes"]),) if voted else ()),
            # the finding's words wrap at a narrow width: "cited_unsupported" as "cited" over "unsupported"
            *((citation if wide else citation.replace("_", " "),) if cited else ()),
            _cell(row["claim"]),
        ]
        if wide:
            cells.append(_cell(row["label_reason"]) if label else _cell(row["error"]))
        if quoted:
            cells.append(_cell(quote_cell(evidence.get(row["claim_id"]))))
        table.add_row(*cells)
    out.print(table)
    total = len(data.claims) if total is None else total  # a run read in part (--limit) says how many it has
    counted = f"{len(rows)} of {total} claims" if len(rows) != total else f"{len(rows)} claims"
    marked = f"; '?' = unsure: the judge could not tell, its label is a best guess ({unsure} claims)" if unsure else ""
    out.print(
        f"{counted} ('partial' = partially_supported{marked}); every reason and the evidence in full: "
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
