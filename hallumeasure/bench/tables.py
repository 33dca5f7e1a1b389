"""A benchmark's files and tables: the JSON result and its Markdown report, and the side-by-side
comparison of several results (``hallumeasure bench-compare``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hallumeasure.bench.run import BenchResult
from hallumeasure.bench.spans import span_markdown


def bench_filename(result: BenchResult) -> str:
    """``<dataset>__<judge>__<mode>[__gold]`` with unsafe characters replaced."""
    raw = f"{result.dataset}__{result.judge}__{result.mode}" + ("__gold" if result.gold_claims else "")
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", raw)


def save_bench(result: BenchResult, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``<name>.json`` and ``<name>.md`` into ``out_dir``; returns both paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = bench_filename(result)
    json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
    json_path.write_text(result.model_dump_json(indent=2), encoding="utf-8")
    md_path.write_text(bench_markdown(result), encoding="utf-8")
    return json_path, md_path


def load_bench(path: str | Path) -> BenchResult:
    return BenchResult.model_validate_json(Path(path).read_text(encoding="utf-8"))


def _md_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def bench_markdown(result: BenchResult) -> str:
    """A readable report of one benchmark."""
    r = result
    pct = round(r.confidence * 100)
    out = [
        f"# Bench: {r.judge} / {r.mode} on {r.dataset}" + (" (gold claims)" if r.gold_claims else ""),
        "",
        f"Extractor `{r.extractor}`. Policy: {r.policy}. {pct}% percentile-bootstrap intervals over responses "
        f"({r.n_resamples} resamples, seed {r.seed}). Response score: {r.score_source}.",
        "",
        "## Counts",
        "",
        _md_table(["what", "n"], r.counts.items()),
        "",
        "## Response level (positive = unsupported)",
        "",
        _md_table(["metric", "value"], [(k, v.fmt()) for k, v in r.response.items()]),
    ]
    if r.claim is not None:
        c = r.claim
        out += [
            "",
            "## Claim level (gold claims)",
            "",
            _md_table(
                ["metric", "value"],
                [
                    ("precision", c.precision.fmt()),
                    ("recall", c.recall.fmt()),
                    ("f1", c.f1.fmt()),
                    ("balanced_accuracy", c.balanced_accuracy.fmt()),
                    ("gold claims / scored / errors", f"{c.n_gold} / {c.n_scored} / {c.n_errors}"),
                ],
            ),
        ]
    if r.subtype is not None:
        st = r.subtype
        out += [
            "",
            "## Error subtypes",
            "",
            f"{st.n_responses} responses with one mapped gold subtype; {st.n_ambiguous} skipped (unmapped or unknown "
            f"gold type, or several subtypes). "
            f"Macro F1 {st.macro_f1.fmt()}, weighted F1 {st.weighted_f1.fmt()}.",
            "",
        ]
        if st.rows:
            out += [
                _md_table(
                    ["subtype", "#gold", "#pred", "P", "R", "F1"],
                    [
                        (x.subtype, x.n_gold, x.n_pred, f"{x.precision:.2f}", f"{x.recall:.2f}", f"{x.f1:.2f}")
                        for x in st.rows
                    ],
                ),
                "",
            ]
        if st.unmapped:
            out.append(
                "Unmapped gold types (no single subtype): " + ", ".join(f"{k} ({v})" for k, v in st.unmapped.items())
            )
        if st.unknown:
            out.append("Unknown gold types (in no table): " + ", ".join(f"{k} ({v})" for k, v in st.unknown.items()))
    if r.span is not None:
        out += ["", *span_markdown(r.span)]
    u = r.usage
    out += [
        "",
        "## Judge usage per response",
        "",
        _md_table(["measure", "mean"], [(k, v.fmt(2)) for k, v in u.per_response.items()]),
        "",
        f"Judge total: {u.judge_total.calls} calls, {u.judge_total.input_tokens} input / "
        f"{u.judge_total.output_tokens} output tokens. Extraction total: {u.extraction_total.calls} calls, "
        f"{u.extraction_total.input_tokens} input / {u.extraction_total.output_tokens} output tokens.",
    ]
    if u.cost_usd_total is not None:
        out.append(f"Total cost: ${u.cost_usd_total:.4f} ({u.cost_note}).")
    elif u.cost_note:
        out.append(u.cost_note.capitalize() + ".")
    if r.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in r.notes]
    return "\n".join(out) + "\n"


def bench_rows(results: Iterable[BenchResult | str | Path], digits: int = 2) -> list[dict[str, str]]:
    """One row of formatted cells per benchmark: the columns of ``compare_bench``."""
    rows = []
    for item in results:
        r = item if isinstance(item, BenchResult) else load_bench(item)
        c, st, per = r.claim, r.subtype, r.usage.per_response
        na = "n/a"
        rows.append(
            {
                "dataset": r.dataset,
                "judge": r.judge,
                "mode": r.mode + (" (gold claims)" if r.gold_claims else ""),
                "resp P": r.response["precision"].fmt(digits),
                "resp R": r.response["recall"].fmt(digits),
                "resp F1": r.response["f1"].fmt(digits),
                "claim P": c.precision.fmt(digits) if c else na,
                "claim R": c.recall.fmt(digits) if c else na,
                "claim F1": c.f1.fmt(digits) if c else na,
                "AUC ROC": r.response["auc_roc"].fmt(digits),
                "subtype macro F1": st.macro_f1.fmt(digits) if st else na,
                "subtype weighted F1": st.weighted_f1.fmt(digits) if st else na,
                "s / resp": per["seconds"].fmt(1),
                "in tok / resp": per["input_tokens"].fmt(0),
                "out tok / resp": per["output_tokens"].fmt(0),
                "$ / resp": per["cost_usd"].fmt(4) if "cost_usd" in per else na,
                "errors": str(r.counts["error_responses"] + r.counts["undefined_responses"]),
                "n": str(r.counts["scored"]),
            }
        )
    return rows


def compare_bench(results: Iterable[BenchResult | str | Path]) -> str:
    """A Markdown table with several benchmarks side by side (results or paths of their JSON files)."""
    rows = bench_rows(results)
    if not rows:
        return "(no bench results)\n"
    return _md_table(list(rows[0]), [list(row.values()) for row in rows]) + "\n"
