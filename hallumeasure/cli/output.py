"""Printing shared by several commands: a run's summary and error reasons, the cost estimate of a dry run
(the progress of a measurement is in ``cli/progress.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hallumeasure.cli.common import (
    out,
)
from hallumeasure.core.types import ErrorKind
from hallumeasure.registry import PartKind, is_keyless, is_scripted, registry

if TYPE_CHECKING:
    from hallumeasure.core.types import Mode, RunManifest, Sample, Usage
    from hallumeasure.report.rates import GroupRates
    from hallumeasure.runs.datasets import LabelledSample
    from hallumeasure.runs.run import Run


#: Distinct error reasons printed after a run or by 'show' ('show --json' lists them all).
SHOWN_REASONS = 3


def print_error_reasons(data: Run, where: Console, *, run_dir: Path) -> None:
    """The causes of the error rows (one per kind of error), counted, most frequent first, each with an example."""
    reasons = data.error_reasons_within(240)
    if not reasons:
        return
    where.print(f"error rows by cause ({len(reasons)} cause{'s' if len(reasons) != 1 else ''}):", highlight=False)
    for item in reasons[:SHOWN_REASONS]:
        noun = "response" if item.rows == "response" else "claim"
        cause = "" if item.kind is ErrorKind.UNKNOWN else f"{item.kind.value}, "
        where.print(
            f"  {item.count} {noun}{'s' if item.count != 1 else ''} ({cause}e.g.): {escape(item.reason)}",
            highlight=False,
            soft_wrap=True,
        )
    if len(reasons) > SHOWN_REASONS:
        where.print(
            f"  ... and {len(reasons) - SHOWN_REASONS} more: hallumeasure show {escape(str(run_dir))} --json "
            "lists them all",
            highlight=False,
            soft_wrap=True,
        )


def print_skipped(data: Run, where: Console, *, shown: int = SHOWN_REASONS) -> None:
    """The input rows the run left out, as 'measure' printed them when it ran (the first few)."""
    skipped = data.skipped
    if skipped is None or not len(skipped):
        return
    where.print(f"{len(skipped)} input row(s) skipped when this run was measured:", highlight=False, markup=False)
    for row in skipped.head(shown).itertuples(index=False):
        who = f" (id {row.sample_id})" if isinstance(row.sample_id, str) and row.sample_id else ""
        where.print(f"  row {row.row}{who}: {row.message}", highlight=False, markup=False)
    if len(skipped) > shown:
        where.print(
            f"  ... and {len(skipped) - shown} more (show --json lists them all)", highlight=False, markup=False
        )


def print_estimate(
    samples: Sequence[Sample | LabelledSample],
    mode: Mode | str,
    judge: str,
    extractor: str,
    *,
    gold_claims: bool = False,
    batch: bool = False,
) -> None:
    from hallumeasure.models.pricing import PRICES_AS_OF, price_for
    from hallumeasure.pipeline.estimate import estimate_cost, estimate_run

    est = estimate_run(samples, mode, gold_claims=gold_claims)
    if is_keyless(judge) and (extractor is None or is_keyless(extractor, PartKind.EXTRACTOR)):
        out.print(
            f"{est.n_samples} samples, mode {est.mode}: about {est.claims} claims; the {judge} judge and the "
            "offline extractor call no provider: no tokens to pay for, cost 0"
        )
        return
    out.print(
        f"{est.n_samples} samples, mode {est.mode}: about {est.claims} claims, "
        f"{est.extraction_calls} extraction call(s) + {est.judge_calls} judge call(s), "
        f"~{est.input_tokens:,} input and ~{est.output_tokens:,} output tokens"
    )
    price = price_for(judge)
    if price is None:
        out.print(f"cost: unknown (no price for {judge!r}; add one with HALLUMEASURE_PRICES)")
    else:
        dollars = estimate_cost(est, price) * (float(1 - price.batch_discount) if batch else 1.0)
        out.print(
            f"cost: about ${dollars:,.2f} at {'batch' if batch else 'list'} prices of {PRICES_AS_OF}, "
            "before prompt caching (which lowers it) and re-asks (which raise it)"
        )
    for assumption in est.assumptions:
        out.print(f"  assumes {assumption}")


def duration(seconds: float) -> str:
    """A time span to read in a log: 0.4 s, 12 s, 3 min 05 s, 2 h 07 min (never a bare "0 s" for a short one)."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def fitted_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, title: str | None = None, width: int | None = None
) -> Table:
    """A table that fits the terminal (80 columns when piped) whenever its values do, and never cuts a value.

    Rich's boxed table spends 3 cells between columns and, when short of room, cuts values and headers
    to an ellipsis. Here columns are one space apart under a single rule. When the whole headers do not
    fit, each column after the first is as wide as its longest value or its header's longest word,
    whichever is wider: headers wrap between words and a value is never cut. Only the first column (a
    name) may fold.
    """
    room = width if width is not None else out.size.width
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0)
    )

    def widest(i: int, header: str) -> int:
        return max([len(header)] + [len(row[i]) for row in rows])

    natural = [widest(i, h) for i, h in enumerate(headers)]
    compact = natural[:1] + [
        max([len(word) for word in h.split()] + [len(row[i]) for row in rows]) for i, h in enumerate(headers) if i
    ]
    fixed = natural if sum(natural) + len(headers) - 1 <= room else compact
    for i, header in enumerate(headers):
        if i == 0:
            table.add_column(header, justify="left", overflow="fold")
        else:
            table.add_column(header, justify="right", width=fixed[i])
    for row in rows:
        table.add_row(*row)
    return table


def table_width(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """The width ``fitted_table`` needs with its headers wrapped between words (no value is ever cut)."""
    widths = [max([len(word) for word in h.split()] + [len(row[i]) for row in rows]) for i, h in enumerate(headers)]
    return sum(widths) + len(headers) - 1


def turned_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, title: str | None = None, width: int | None = None
) -> Table:
    """``fitted_table``, turned when it would not fit: one row per column and one column per row (a few
    models' numbers side by side), so that every header and every name stays whole at 80 columns."""
    room = width if width is not None else out.size.width
    if table_width(headers, rows) <= room or len(rows) > len(headers):
        return fitted_table(headers, rows, title=title, width=room)
    turned = [[header, *(row[i] for row in rows)] for i, header in enumerate(headers) if i]
    return fitted_table(["", *(row[0] for row in rows)], turned, title=title, width=room)


def print_rates(rows: Sequence[GroupRates], *, title: str, first: str = "model", judge: str | None = None) -> None:
    """Groups' rates as every view shows them (``hallumeasure.report.rates``): one table of the rates with their
    intervals, then, when a keyless judge left claims unsure, a table of the unsure-claim bounds and a legend."""
    from hallumeasure.report import rates as words

    names = [first, "responses", "claims", words.RATE_COLUMN, words.SHARE_COLUMN, "error rows"]
    table = [
        [
            escape(r.name),
            str(r.stats.n_responses),
            str(r.stats.n_claims),
            words.rate_text(r.stats),
            words.share_text(r.stats),
            str(r.stats.n_error_rows),
        ]
        for r in rows
    ]
    out.print(fitted_table(names, table, title=title))
    unsure = [r for r in rows if r.unsure is not None]
    if not unsure:
        return
    cells = [[escape(r.name), *words.unsure_cells(r.unsure).values()] for r in unsure if r.unsure is not None]
    out.print(fitted_table([first, *words.UNSURE_COLUMNS], cells, title="unsure claims"))
    out.print(words.unsure_legend(judge), markup=False, highlight=False, soft_wrap=False)


def load_summary_table(run_dir: Path) -> Run:
    """The run in ``run_dir`` read as the columns its summary needs (``Run.load_table``): no claim or text, so a
    run of millions of responses is summarised in bounded memory."""
    from hallumeasure.report.runs import text_unit_columns
    from hallumeasure.runs.run import Run

    return Run.load_table(run_dir, text_unit_columns)


def print_summary(run_dir: Path, data: Run | None = None) -> Run:
    """Print a run's summary table and settings; returns the ``Run`` (read as columns when not given)."""
    from hallumeasure.report.rates import run_rates

    data = data if data is not None else load_summary_table(run_dir)
    manifest = data.manifest
    print_rates(run_rates(data), title=f"run {run_dir}", judge=manifest.judge if manifest else None)
    if manifest is not None:
        lines = [
            f"judge: {manifest.judge} ({manifest.mode.value}); extractor: {manifest.extractor}",
            f"policy: {manifest.policy.describe()}",
        ]
        keyless = registry().keyless_note(manifest.judge)
        if keyless:
            lines.append(f"note: the {manifest.judge} judge: {keyless}.")
        if is_scripted(manifest.judge):
            lines.append("note: the fake model is a demo for tests; its labels are not a measurement.")
        for line in lines:  # wrapped to the terminal (80 columns when piped)
            out.print(line, markup=False, highlight=False, soft_wrap=False)
    from hallumeasure.report.stability import run_stability, stability_lines

    stability = run_stability(data)
    for line in stability_lines(stability) if stability is not None else []:
        out.print(line, markup=False, highlight=False)
    if manifest is not None:
        print_judge_checks(manifest)
    print_next_steps(data)
    return data


def print_next_steps(data: Run) -> None:
    """After a keyless run with unsure claims: the concrete ways to settle them (``report/next_steps.py``)."""
    from hallumeasure.report.next_steps import next_steps

    steps = next_steps(data)
    for line in steps.lines() if steps is not None else []:  # wrapped to the terminal (80 columns when piped)
        out.print(line, markup=False, highlight=False, soft_wrap=False)


def print_judge_checks(manifest: RunManifest) -> None:
    """A short block for each sanity check the run's judge failed: what was seen, what it means, what to do."""
    checks = manifest.judge_checks or []
    if not checks:
        return
    out.print(
        f"[red]the judge failed {len(checks)} sanity check(s) on its own output: "
        "its numbers above are no measurement[/red]",
        highlight=False,
    )
    for check in checks:
        for line in (f"  {check.name.value}: {check.seen}", f"    means: {check.means}", f"    do: {check.todo}"):
            out.print(line, markup=False, highlight=False)
    out.print("  audit refuses this run unless given --allow-broken-judge", markup=False, highlight=False)


def usage_line(usage: Usage, specs: Sequence[str], *, batch: bool = False) -> str | None:
    """One line for a run that called providers: calls, tokens, cache hits and cost; None when it called none.

    The cost is priced when every spec that called a provider has the same price (one model for
    both stages, or a keyless extractor); otherwise it says why it is not given.
    """
    from hallumeasure.models.pricing import PRICES_AS_OF, cost, price_for

    if not usage.calls and not usage.cached_calls:
        return None
    paid = [spec for spec in dict.fromkeys(specs) if spec and not is_keyless(spec)]
    prices = {spec: price_for(spec) for spec in paid}
    line = (
        f"provider usage: {usage.calls:,} call(s) sent, {usage.cached_calls:,} answered from the request cache; "
        f"{usage.input_tokens:,} input + {usage.output_tokens:,} output tokens"
    )
    if usage.cache_read_tokens or usage.cache_write_tokens:
        line += f" (prompt cache: {usage.cache_read_tokens:,} read, {usage.cache_write_tokens:,} written)"
    missing = [spec for spec, price in prices.items() if price is None]
    if missing:
        return line + f"; cost unknown (no price for {', '.join(missing)}; add one with HALLUMEASURE_PRICES)"
    if len({p.model_dump_json() for p in prices.values() if p is not None}) > 1:
        return line + "; cost not split between stages priced differently (see each model's usage in 'show --json')"
    price = next((p for p in prices.values() if p is not None), None)
    if price is None:
        return line
    dollars = cost(usage, price, batch=batch)
    return line + f"; cost about ${dollars:,.4f} at {'batch' if batch else 'list'} prices of {PRICES_AS_OF}"


def print_usage(manifest: RunManifest) -> None:
    batch = bool(manifest.settings.get("batch"))
    judges = (manifest.settings.get("judge") or {}).get("votes", {}).get("judges") or [manifest.judge]
    line = usage_line(manifest.usage, [manifest.extractor, *judges], batch=batch)
    if line is not None:
        out.print(line, markup=False, highlight=False, soft_wrap=False)
