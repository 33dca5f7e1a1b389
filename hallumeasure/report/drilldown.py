"""Helpers for reading a run in a notebook: filter claims, align them to the context, show them safely.

from hallumeasure.runs.run import Run
from hallumeasure.report import drilldown
run = Run.load("runs/demo")
claims = drilldown.claims_with_sources(run)
view = drilldown.filter_claims(claims, model="model-b", label="contradicted")
HTML(drilldown.claims_html(view))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
from markupsafe import Markup, escape

from hallumeasure.core.text import split_sentences
from hallumeasure.runs.run import Run
from hallumeasure.sources.align import Alignment, align_claim, highlight
from hallumeasure.stats.resampling import RESAMPLES, SEED


def claims_with_sources(run: Run) -> pd.DataFrame:
    """The run's claims with their response's context and response, and the aligned context sentence.

    Added columns: ``context``, ``response``, ``question``, ``source_sentence`` (empty when no
    sentence shares a content word), ``source_start`` / ``source_end`` (character offsets in the
    context, -1 when unaligned) and ``overlap`` (share of the claim's content words found there).
    """
    responses = run.responses[["sample_id", "question", "context", "response"]]
    claims = run.claims.merge(responses, on="sample_id", how="left")
    sentences = {
        sid: split_sentences(ctx) for sid, ctx in zip(responses["sample_id"], responses["context"], strict=True)
    }
    aligned = [
        align_claim(text, ctx, sentences[sid])
        for text, ctx, sid in zip(claims["claim"], claims["context"], claims["sample_id"], strict=True)
    ]
    claims["source_sentence"] = [a.sentence if a else "" for a in aligned]
    claims["source_start"] = [a.start if a else -1 for a in aligned]
    claims["source_end"] = [a.end if a else -1 for a in aligned]
    claims["overlap"] = [a.overlap if a else 0.0 for a in aligned]
    return claims


def _as_set(value: str | Iterable[str] | None) -> set[str] | None:
    if value is None:
        return None
    return {value} if isinstance(value, str) else set(value)


def filter_claims(
    claims: pd.DataFrame,
    *,
    model: str | Iterable[str] | None = None,
    label: str | Iterable[str] | None = None,
    subtype: str | Iterable[str] | None = None,
    sample_id: str | Iterable[str] | None = None,
    errors: bool | None = None,
) -> pd.DataFrame:
    """Rows matching every given filter (each filter takes one value or several).

    ``sample_id`` takes the id as written in the input, which matches the rows of every model that shares it
    (the run keys them ``q-ticket@assistant-v1``, ...), or a run key, which matches its own rows only.
    ``errors=True`` keeps only error rows (claims without a verdict), ``False`` drops them.
    """
    keep = pd.Series(True, index=claims.index)
    for column, wanted in (("model", model), ("label", label), ("subtype", subtype)):
        values = _as_set(wanted)
        if values is not None:
            keep &= claims[column].isin(values)
    ids = _as_set(sample_id)
    if ids is not None:
        match = claims["sample_id"].isin(ids)
        if "input_id" in claims:  # the frames of a stored run have it; a hand-made frame may not
            match |= claims["input_id"].isin(ids)
        keep &= match
    if errors is not None:
        is_error = claims["label"].isna()
        keep &= is_error if errors else ~is_error
    return claims[keep]


def _cell(value: object) -> Markup:
    if value is None:
        return Markup("")
    return escape(value)


def claims_html(claims: pd.DataFrame, *, limit: int = 50) -> Markup:
    """An HTML table of claims beside their label, subtype, reasons and highlighted source sentence.

    Needs the columns added by :func:`claims_with_sources`. All run text is escaped.
    """
    head = Markup(
        "<table><tr><th>sample</th><th>model</th><th>claim</th><th>label</th><th>subtype</th>"
        "<th>reason</th><th>source in context</th></tr>"
    )
    rows = []
    for row in claims.head(limit).to_dict(orient="records"):
        label = row["label"] if isinstance(row["label"], str) else "error"
        reason = _cell(row["label_reason"]) if label != "error" else _cell(row["error"])
        if isinstance(row.get("subtype_reason"), str):
            reason += Markup("<br><em>Subtype:</em> ") + escape(row["subtype_reason"])
        if row["source_start"] >= 0:
            context = highlight(row["context"], _span(row))
        else:
            context = Markup("<em>no sentence shares a content word</em><br>") + escape(row["context"])
        rows.append(
            Markup(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td>"
                "<td style='font-size:smaller'>{}</td></tr>"
            ).format(
                _cell(row["sample_id"]),
                _cell(row["model"]),
                _cell(row["claim"]),
                label,
                _cell(row["subtype"]),
                reason,
                context,
            )
        )
    more = len(claims) - min(limit, len(claims))
    tail = Markup("</table>") + (Markup("<p>... {} more rows</p>").format(more) if more > 0 else Markup(""))
    return head + Markup("").join(rows) + tail


def _span(row: dict[str, Any]) -> Alignment:
    return Alignment(row["source_sentence"], int(row["source_start"]), int(row["source_end"]), float(row["overlap"]))


def stats_table(run: Run, *, resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """Aggregates of the whole run and of each model in it, with 95% bootstrap intervals as text, and the
    unsure-claim bounds when a keyless judge left claims unsure (see :mod:`hallumeasure.report.rates`)."""
    from hallumeasure.report.rates import rates_frame, run_rates

    return rates_frame(run_rates(run, resamples=resamples, seed=seed))


def subtype_counts(claims: pd.DataFrame) -> pd.DataFrame:
    """Claims per model (rows) and error subtype (columns)."""
    subtyped = claims[claims["subtype"].notna()]
    return pd.crosstab(subtyped["model"].fillna("(no model)"), subtyped["subtype"])
