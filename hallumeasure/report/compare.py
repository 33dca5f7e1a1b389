"""The model-comparison report: per-model aggregates with intervals, paired differences, plots, worst examples.

``compare_runs`` reads one or more run directories, refuses runs whose numbers are not
comparable (different samples *and* different judge or detector settings, or a different
policy; unless told otherwise, and then says so on the report), and writes
``report.md``, ``report.html`` (self-contained: plots embedded), ``report.json`` and the
PNG plots into one output directory. Nothing in the output depends on the time or on
where the runs are stored, so the same runs and seed always give the same report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from markupsafe import Markup
from pydantic import BaseModel

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.text import split_sentences
from hallumeasure.report.calibrate import CalibrationReport, calibrate_best_run
from hallumeasure.report.comparison import Comparison, compare_groups
from hallumeasure.report.plots import LABEL_ORDER, save_report_plots
from hallumeasure.report.rag import ClaimEvidence, load_rag, passage_use_line
from hallumeasure.report.rates import GroupRates
from hallumeasure.report.render import data_uri, render_html, render_markdown
from hallumeasure.report.runs import (
    NO_MODEL,
    Group,
    RunInfo,
    check_comparable,
    comparable_groups,
    judge_notes,
    load_runs,
    model_groups,
    policy_lines,
    response_units,
    run_info,
    text_unit_columns,
)
from hallumeasure.report.stability import RunStability, runs_stability
from hallumeasure.report.unsure import UnsureStats, group_unsure_stats
from hallumeasure.report.viewer import DEFAULT_MAX_RESPONSES, build_viewer_data, render_viewer
from hallumeasure.runs.run import Run
from hallumeasure.sources.align import align_claim, highlight
from hallumeasure.sources.rag import RagSummary
from hallumeasure.stats.groups import SUBTYPES, GroupStats, Resampling, group_stats
from hallumeasure.stats.resampling import CONFIDENCE, RESAMPLES, SEED


class ComparisonReport(BaseModel):
    """Everything a comparison report shows, also written as ``report.json``."""

    title: str
    #: The group every other group is compared with (``--baseline``; the first group by default).
    baseline: str | None = None
    runs: list[RunInfo]
    run_stats: list[GroupStats]
    model_stats: list[GroupStats]
    comparisons: list[Comparison]
    mismatches: list[str]
    policy: list[str]
    notes: list[str]
    resamples: int
    seed: int
    confidence: float
    files: list[str] = []
    calibrations: list[CalibrationReport] = []
    #: Runs measured with repeats or a panel: flip rates, kappas, intervals with the judge's variance.
    judge_stability: list[RunStability] = []
    #: Evidence, citation and passage-use numbers per run and model (empty when no run has any).
    rag: list[RagSummary] = []
    #: Models and runs with claims a keyless judge could not tell: decided share, the rate's bounds and the
    #: interval covering them (shown beside the rate, which keeps its own interval).
    unsure: list[UnsureStats] = []
    run_unsure: list[UnsureStats] = []


@dataclass
class ClaimRow:
    index: int
    text: str
    label: str
    subtype: str
    reason: str
    subtype_reason: str
    source: str
    overlap: float | None
    evidence: ClaimEvidence | None = None


@dataclass
class Example:
    group: str
    run: str
    sample_id: str
    question: str
    response: str
    context: str
    rate: float
    n_unsupported: int
    n_evaluated: int
    claims: list[ClaimRow] = field(default_factory=list)
    #: The context as safe HTML, every sentence that some claim aligns to marked.
    context_html: Markup = Markup("")


def _text(value: object) -> str:
    if value is None:
        return ""
    return str(value)


def worst_ids(run: Run, group: Group, limit: int) -> list[str]:
    """The sample ids of the ``limit`` responses of a group with the highest unsupported rate (then the most
    unsupported claims, then input order)."""
    if limit <= 0:
        return []
    responses = run.responses
    # the group's rows: those of its model (as ``model_groups`` cuts them), with a rate above 0
    ours = responses["model"].fillna(NO_MODEL).astype(str).to_numpy() == group.model
    mine = responses[ours & responses["unsupported_rate"].notna().to_numpy()]
    mine = mine[mine["unsupported_rate"] > 0].assign(position=lambda t: range(len(t)))
    mine = mine.sort_values(["unsupported_rate", "n_unsupported", "position"], ascending=[False, False, True])
    return [str(x) for x in mine["sample_id"].head(limit)]


def worst_examples(
    run: Run, group: Group, limit: int, evidence: dict[str, ClaimEvidence] | None = None
) -> list[Example]:
    """The ``limit`` responses of a group with the highest unsupported rate, with their claims aligned."""
    chosen = worst_ids(run, group, limit)
    if not chosen:
        return []
    # only the rows shown are read with their texts and claims (by id, for a run read as columns)
    shown = run.records_of(chosen)
    rows = shown.responses.set_index("sample_id", drop=False).loc[chosen]
    claims = shown.claims
    examples = []
    for row in rows.to_dict(orient="records"):
        context = row["context"]
        sentences = split_sentences(context)
        example = Example(
            group=group.name,
            run=run.name,
            sample_id=str(row.get("input_id") or row["sample_id"]),
            question=_text(row["question"]),
            response=row["response"],
            context=context,
            rate=float(row["unsupported_rate"]),
            n_unsupported=int(row["n_unsupported"]),
            n_evaluated=int(row["n_evaluated"]),
        )
        alignments = []
        for claim in claims[claims["sample_id"] == row["sample_id"]].to_dict(orient="records"):
            alignment = align_claim(claim["claim"], context, sentences)
            alignments.append(alignment)
            label = _text(claim["label"]) or "error"
            example.claims.append(
                ClaimRow(
                    index=int(claim["claim_index"]) + 1,
                    text=claim["claim"],
                    label=label,
                    subtype=_text(claim["subtype"]),
                    reason=_text(claim["label_reason"]) if label != "error" else _text(claim["error"]),
                    subtype_reason=_text(claim["subtype_reason"]),
                    source=alignment.sentence if alignment else "",
                    overlap=alignment.overlap if alignment else None,
                    evidence=(evidence or {}).get(claim["claim_id"]),
                )
            )
        example.context_html = highlight(context, alignments)
        examples.append(example)
    return examples


def _frames(run: Run) -> tuple[pd.DataFrame, pd.DataFrame]:
    return run.responses, run.claims


def load_for_compare(run: Run | str | Path, *, name: str | None = None) -> Run:
    """``run`` itself when loaded already, else the run in that directory read as the columns a comparison needs
    (``Run.load_table``): its numbers, votes and skipped rows, no claim or text, so that runs of millions of
    responses fit in memory; the worst examples and the page read their few samples by id."""
    return run if isinstance(run, Run) else Run.load_table(run, text_unit_columns, name=name)


def pick_baseline(groups: list[Group], wanted: str | None) -> Group:
    """The group named ``wanted`` (its group name, else its model, else its run), or the first group."""
    if wanted is None:
        return groups[0]
    for field_name in ("name", "model", "run"):
        found = [g for g in groups if getattr(g, field_name) == wanted]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = ", ".join(g.name for g in found)
            raise ConfigError(f"--baseline {wanted!r} names several groups ({names}); give one of these names")
    names = ", ".join(repr(g.name) for g in groups)
    raise ConfigError(f"--baseline {wanted!r} is not a group of these runs; the groups are {names}")


def compare_runs(
    run_dirs: Sequence[Run | str | Path],
    out_dir: str | Path,
    allow_mismatch: bool = False,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    worst: int = 3,
    title: str = "Model comparison",
    labels: Sequence[str | Path] | None = None,
    baseline: str | None = None,
) -> ComparisonReport:
    """Compare the models in ``run_dirs`` (loaded runs or their directories) and write the report files into
    ``out_dir``.

    Models come from the samples' ``model`` field and from the runs (a model in several runs
    is shown once per run, named with the settings its runs differ in). Runs over the same
    samples may differ in judge, detector, extractor, mode or prompts: that is the comparison.
    Raises ``ConfigError`` when runs differ in both their samples and how they were measured,
    or in policy, unless ``allow_mismatch``. Each file in ``labels`` (human labels, see
    ``hallumeasure.report.calibrate``) adds a calibration section for the run it matches best.

    With k groups there are k - 1 differences, each against one ``baseline`` group (named by its
    group name, model or run; the first group by default), so 8 models give 7 differences.
    """
    if resamples < 100:
        raise ConfigError(f"resamples must be at least 100 for a usable interval, got {resamples}")
    runs = load_runs(list(run_dirs), read=load_for_compare)
    found = check_comparable(runs, allow_mismatch)
    units = {run.name: response_units(run) for run in runs}
    groups = model_groups(runs, units)
    options: Resampling = {"resamples": resamples, "seed": seed, "confidence": confidence}
    model_stats = [group_stats(g.units, g.name, **options) for g in groups]
    # a run of one model is one group with the same rows: its numbers are the group's, under the run's name
    alone = {g.run: s for g, s in zip(groups, model_stats, strict=True) if [h.run for h in groups].count(g.run) == 1}
    run_stats = [
        alone[run.name].model_copy(update={"name": run.name})
        if run.name in alone
        else group_stats(units[run.name], run.name, **options)
        for run in runs
    ]
    by_name = {run.name: run for run in runs}
    unsure = [u for g in groups if (u := group_unsure_stats(*_frames(by_name[g.run]), g.name, g.model, **options))]
    run_unsure = [u for run in runs if (u := group_unsure_stats(*_frames(run), run.name, **options))]
    base = pick_baseline(groups, baseline)
    # Without allow_mismatch, only pairs that differ in one thing: another model measured alike,
    # or the same model measured another way (model-a by CoNLI against model-b by the claim judge
    # would mix the two).
    others = [g for g in groups if g is not base]
    comparisons = [
        compare_groups(base.units, g.units, base.name, g.name, **options)
        for g in others
        if allow_mismatch or comparable_groups(base, g, by_name)
    ]
    compared = {c.b for c in comparisons}
    skipped = [
        f"{g.name} is not compared with the baseline {base.name}: they differ in both the model and how it "
        "was measured; choose another --baseline to compare it"
        for g in others
        if g.name not in compared
    ]
    # The rows shown (the worst examples, the page's first responses) are read with their records, one query by id
    # per run read as columns.
    shown = {
        run.name: run.with_records(
            [
                *run.responses["sample_id"].head(DEFAULT_MAX_RESPONSES),
                *(i for g in groups if g.run == run.name for i in worst_ids(run, g, worst)),
            ]
        )
        for run in runs
    }
    rag = {run.name: load_rag(run) for run in runs}
    examples = [e for g in groups for e in worst_examples(shown[g.run], g, worst, rag[g.run][1])]
    rag_rows = [
        s.model_copy(update={"model": f"{name}: {s.model}" if len(runs) > 1 else s.model})
        for name, (summaries, _) in rag.items()
        for s in summaries
        if s.applies
    ]

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = save_report_plots(model_stats, comparisons, out)
    report = ComparisonReport(
        title=title,
        baseline=base.name if len(groups) > 1 else None,
        runs=[run_info(r) for r in runs],
        run_stats=run_stats,
        model_stats=model_stats,
        comparisons=comparisons,
        mismatches=found,
        policy=policy_lines(runs),
        notes=[*judge_notes(runs), *skipped],
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        rag=rag_rows,
        files=["report.md", "report.html", "report.json", "view.html", *[name for name, _ in plots]],
        calibrations=[calibrate_best_run(_whole(runs), path, confidence=confidence) for path in labels or []],
        judge_stability=runs_stability(runs, groups, **options),
        unsure=unsure,
        run_unsure=run_unsure,
    )
    subtypes = [x for x in SUBTYPES if any(s.subtype_counts[x] for s in model_stats)]
    context = {
        "report": report,
        "examples": examples,
        "percent": round(confidence * 100),
        "labels": LABEL_ORDER,
        "subtypes": subtypes,
        "passage_use": passage_use_line,
        "unsure": {u.name: u for u in unsure},
        "run_unsure": {u.name: u for u in run_unsure},
    }
    (out / "report.md").write_text(
        render_markdown("report.md.j2", plots=[{"file": f, "title": t} for f, t in plots], **context), encoding="utf-8"
    )
    (out / "report.html").write_text(
        render_html(
            "report.html.j2", plots=[{"file": f, "title": t, "uri": data_uri(out / f)} for f, t in plots], **context
        ),
        encoding="utf-8",
    )
    (out / "report.json").write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    # every claim, for the reader who wants more than the worst examples (the reports link to it); the page holds
    # at most the first DEFAULT_MAX_RESPONSES responses of the runs
    page = [shown[run.name] for run in runs]
    (out / "view.html").write_text(
        render_viewer(build_viewer_data(page, rates=_page_rates(runs, groups, model_stats, unsure, options))),
        encoding="utf-8",
    )
    return report


def _page_rates(
    runs: list[Run], groups: list[Group], stats: list[GroupStats], unsure: list[UnsureStats], options: Resampling
) -> dict[str, list[tuple[str, GroupRates]]] | None:
    """Each run's models with the numbers this report computed, for the page (``build_viewer_data``), so that they
    are not bootstrapped again; None when the report's resamples, seed or confidence are not the page's."""
    if options != {"resamples": RESAMPLES, "seed": SEED, "confidence": CONFIDENCE}:
        return None
    found = {u.name: u for u in unsure}
    return {
        run.name: [
            (g.model, GroupRates(stats=s, unsure=found.get(g.name)))
            for g, s in zip(groups, stats, strict=True)
            if g.run == run.name
        ]
        for run in runs
    }


def _whole(runs: list[Run]) -> list[Run]:
    """The runs with their every claim (calibrating against human labels matches claims by their text)."""
    return [Run.load(run.path, name=run.name) if run.columns_only else run for run in runs]
