"""Monitoring the guard: its logged traffic re-judged later by an LLM judge.

The production papers measure a deployed detector by re-judging a sample of its traffic with a
stronger model. ``monitor_traffic`` does that for the guard's traffic log: every logged response
(and every rewrite the guard made) is measured by the given judge into a run directory, then the
guard's decisions are scored against that judge:

* precision: of the responses the guard flagged, blocked or rewrote, the share the judge finds
  hallucinated; recall: of the responses the judge finds hallucinated, the share the guard acted on;
* the block, rewrite and flag rates of the logged traffic;
* the rewrite success rate: of the rewrites, the share the judge finds free of unsupported claims.

Each rate comes with a 95% Wilson score interval (scipy), which stays inside [0, 1] and behaves
at the low rates of production traffic. The judge is a reference, not the truth. With human labels
for part of the logged traffic (``human_labels``: request id -> hallucinated), the report adds the
traffic's hallucination rate corrected by those labels (stratified PPI, the estimator of
``hallumeasure calibrate``: the judge's verdicts on every logged response, the people's on the
labelled ones) and the guard's precision and recall against the people on the labelled responses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from scipy.stats import binomtest

from hallumeasure.core.sampling import in_sample
from hallumeasure.core.types import Mode, ResponseResult, Sample
from hallumeasure.guard.traffic import TrafficRecord, read_traffic, shared_record
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge
from hallumeasure.models.budget import BudgetSpentError
from hallumeasure.pipeline.budget import BudgetRecord, BudgetStoppedError, RunBudget, pick_within
from hallumeasure.pipeline.limits import WorkLimits
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.sources.rag import SourceOptions
from hallumeasure.stats.correction import stratified_ppi

ACTED = frozenset({"flag", "block", "rewrite"})
REWRITE_SUFFIX = ":rewrite"


class Share(BaseModel):
    """``k`` of ``n``, with a 95% Wilson score interval (None when ``n`` is 0)."""

    k: int
    n: int
    value: float | None = None
    low: float | None = None
    high: float | None = None

    @classmethod
    def of(cls, k: int, n: int) -> Share:
        if n == 0:
            return cls(k=k, n=n)
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        return cls(k=k, n=n, value=k / n, low=float(ci.low), high=float(ci.high))

    def text(self) -> str:
        if self.value is None:
            return f"- (0 of {self.n})"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}] ({self.k} of {self.n})"


class MonitorReport(BaseModel):
    """The guard's operating figures against a reference judge, over its logged traffic."""

    log_dir: str
    run_dir: str
    guard_judge: str
    reference_judge: str
    n_logged: int
    n_unreadable: int = Field(description="log lines that could not be read (a line torn by a crash)")
    n_judged: int = Field(description="logged responses the reference judge rated (no error row)")
    precision: Share
    recall: Share
    block_rate: Share
    rewrite_rate: Share
    flag_rate: Share
    rewrite_success: Share
    n_disagreements: int
    #: Share of the logged responses the reference judge finds hallucinated.
    hallucination_rate: Share
    #: With human labels: how many logged responses they cover, the hallucination rate corrected by
    #: them (stratified PPI; estimate and 95% interval, always in [0, 1]), and the guard against them.
    #: With ``max_cost``: what the budget picked and what the run spent.
    budget: BudgetRecord | None = None
    n_human_labels: int = 0
    hallucination_rate_corrected: tuple[float | None, float | None, float | None] | None = None
    precision_vs_people: Share | None = None
    recall_vs_people: Share | None = None


def monitor_traffic(
    log_dir: Path,
    extractor: ClaimExtractor,
    judge: ClaimJudge,
    *,
    out: Path | None = None,
    mode: Mode = Mode.COT_ONE,
    concurrency: int = 4,
    export_disagreements: Path | None = None,
    human_labels: Mapping[str, bool] | None = None,
    sample_rate: float | None = None,
    budget: RunBudget | None = None,
) -> MonitorReport:
    """Re-judge the guard's traffic log in ``log_dir`` with ``judge``; write the run into ``out``.

    The run directory is remade from the log each time; the request cache keeps responses judged
    before from being paid for again. With ``sample_rate``, only the requests a hash of their id picks are
    judged (with their rewrites), and the report is of them. With a ``budget`` (``Measurement.run_budget``, whose
    cap the stages' models share), the requests are picked in the order of that hash while their estimated cost
    fits it, as ``measure --max-cost`` picks, and the run stops (``BudgetStoppedError``) before it spends more.
    """
    records, unreadable = read_traffic(log_dir)
    if not records:
        raise ValueError(f"{log_dir} has no readable traffic record yet")
    unknown = sorted(set(human_labels or {}) - {r.request_id for r in records})
    if unknown:  # before anything is paid for
        raise ValueError(f"{len(unknown)} labelled request id(s) are not in the traffic log, e.g. {unknown[0]!r}")
    if sample_rate is not None:  # the same requests on every run and for every reference judge (core/sampling.py)
        records = [r for r in records if in_sample(r.request_id, sample_rate)]
        if not records:
            raise ValueError(f"sample_rate {sample_rate} picks none of the logged responses")
        human_labels = {rid: v for rid, v in (human_labels or {}).items() if in_sample(rid, sample_rate)}
    samples = [r.request.sample(id=r.request_id, model="guard") for r in records]
    samples += [
        r.request.sample(id=r.request_id + REWRITE_SUFFIX, model="guard-rewrite", response=r.rewritten)
        for r in records
        if r.rewritten
    ]
    limits = WorkLimits.defaults()  # as measure's: a logged answer the guard let through may still be huge
    record = None
    if budget is not None:
        samples, record = pick_within(
            samples, budget.max_cost, budget.prices, mode=mode, judge=judge.name, sources=SourceOptions(),
            limits=limits, key=_request_id, rate=sample_rate,
        )  # fmt: skip
        if not samples:
            raise ValueError(f"max_cost {budget.max_cost} is less than the estimated cost of the first response")
        kept = {_request_id(s) for s in samples}
        records = [r for r in records if r.request_id in kept]
        human_labels = {rid: v for rid, v in (human_labels or {}).items() if rid in kept}
    run_dir = out or log_dir / "monitor"
    digest = hashlib.sha256("\n".join(s.model_dump_json() for s in samples).encode()).hexdigest()
    try:
        _, results = run_measurement(
            samples,
            run_dir,
            extractor,
            judge,
            mode=mode,
            input_sha256=digest,
            input_path=str(log_dir),
            concurrency=concurrency,
            overwrite=True,
            limits=limits,
            settings={"budget": record.model_dump(mode="json")} if record is not None else None,
        )
    except BudgetSpentError as exc:
        if budget is None or record is None:
            raise
        spent = record.model_copy(update={"spent": float(budget.cap.spent)})
        raise BudgetStoppedError(spent, stored=_stored(run_dir), n_samples=len(samples), again=AGAIN) from exc
    by_id = {r.sample_id: r for r in results}
    report = _score(records, by_id, unreadable, log_dir, run_dir, judge.name)
    if budget is not None and record is not None:
        report = report.model_copy(update={"budget": record.model_copy(update={"spent": float(budget.cap.spent)})})
    if human_labels:
        report = _with_people(report, records, by_id, human_labels)
    if export_disagreements is not None:
        _export(records, by_id, export_disagreements, judge.name)
    return report


#: How to go on after the budget stopped a monitor run.
AGAIN = "Run monitor again with a larger --max-cost (about {enough}): what was answered is not paid again"


def _request_id(sample: Sample) -> str:
    """The logged request a sample judges: a rewrite is picked with the response it replaced."""
    return sample.id.removesuffix(REWRITE_SUFFIX)


def _stored(run_dir: Path) -> int:
    from hallumeasure.runs.store import RunStore

    with RunStore(run_dir) as store:
        return len(store.done_ids())


def _score(
    records: list[TrafficRecord],
    by_id: dict[str, ResponseResult],
    unreadable: int,
    log_dir: Path,
    run_dir: Path,
    reference: str,
) -> MonitorReport:
    rated = [
        (r, by_id[r.request_id])
        for r in records
        if by_id.get(r.request_id) and by_id[r.request_id].hallucinated is not None
    ]
    acted = [(r, res) for r, res in rated if r.decision in ACTED]
    positive = [(r, res) for r, res in rated if res.hallucinated]
    both = sum(1 for r, res in rated if r.decision in ACTED and res.hallucinated)
    rewrites = [by_id.get(r.request_id + REWRITE_SUFFIX) for r in records if r.rewritten]
    rewrites_rated = [res for res in rewrites if res is not None and res.hallucinated is not None]
    n = len(records)
    decisions = [r.decision for r in records]
    return MonitorReport(
        log_dir=str(log_dir),
        run_dir=str(run_dir),
        guard_judge=", ".join(sorted({r.judge for r in records})),
        reference_judge=reference,
        n_logged=n,
        n_unreadable=unreadable,
        n_judged=len(rated),
        precision=Share.of(both, len(acted)),
        recall=Share.of(both, len(positive)),
        block_rate=Share.of(decisions.count("block"), n),
        rewrite_rate=Share.of(decisions.count("rewrite"), n),
        flag_rate=Share.of(decisions.count("flag"), n),
        rewrite_success=Share.of(sum(1 for res in rewrites_rated if not res.hallucinated), len(rewrites_rated)),
        n_disagreements=sum(1 for r, res in rated if (r.decision in ACTED) != bool(res.hallucinated)),
        hallucination_rate=Share.of(len(positive), len(rated)),
    )


def _with_people(
    report: MonitorReport,
    records: list[TrafficRecord],
    by_id: dict[str, ResponseResult],
    labels: Mapping[str, bool],
) -> MonitorReport:
    """``report`` with the figures that human labels allow (see the module docstring)."""
    judged = {r.request_id: bool(by_id[r.request_id].hallucinated) for r in records
              if by_id.get(r.request_id) and by_id[r.request_id].hallucinated is not None}  # fmt: skip
    labelled = [rid for rid in labels if rid in judged]
    truth = np.array([float(labels[rid]) for rid in labelled])
    corrected = stratified_ppi(
        truth,
        np.array([float(judged[rid]) for rid in labelled]),
        np.array([float(v) for rid, v in judged.items() if rid not in labels]),
    )
    acted = {r.request_id: r.decision in ACTED for r in records}
    both = sum(1 for rid in labels if acted[rid] and labels[rid])
    return report.model_copy(
        update={
            "n_human_labels": len(labels),
            "hallucination_rate_corrected": corrected if labelled else None,
            "precision_vs_people": Share.of(both, sum(1 for rid in labels if acted[rid])),
            "recall_vs_people": Share.of(both, sum(1 for rid in labels if labels[rid])),
        }
    )


def _export(records: list[TrafficRecord], by_id: dict[str, ResponseResult], path: Path, reference: str) -> int:
    """Write the responses where the guard and the judge disagree, labelled by the judge, as JSONL."""
    rows: list[dict[str, Any]] = []
    for record in records:
        result = by_id.get(record.request_id)
        if result is None or result.hallucinated is None:
            continue
        if (record.decision in ACTED) == result.hallucinated:
            continue
        labels = {v.claim_id: v.label.value for v in result.verdicts if v.ok and v.label is not None}
        claims = [{"text": c.text, "label": labels[c.id]} for c in result.claims if c.id in labels]
        meta = {"guard_decision": record.decision, "guard_judge": record.judge, "reference_judge": reference}
        rows.append(shared_record(record, int(result.hallucinated), claims, meta))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return len(rows)
