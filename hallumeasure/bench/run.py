"""Benchmark a judge on labelled data: the quality, time and token numbers of HalluMeasure's Tables 4-7.

``run_bench`` (sync) / ``bench_async`` measure labelled samples with an extractor and a judge,
then ``score_bench`` compares the results with the human labels. Everything is computed over
responses, and every number carries a percentile-bootstrap interval that resamples responses.

What is measured, and how:

* **Response level** (unsupported class = positive): precision, recall, F1, accuracy and
  balanced accuracy of ``ResponseResult.hallucinated`` (the ``Policy`` threshold), and AUC ROC
  of the response score: the judge's ``Judgement.score`` when it gives one, else the
  unsupported-claim rate (0.0 for a response with no evaluated claim).
* **Claim level**, only with ``gold_claims=True``: the gold claims are judged directly
  (``GoldClaimExtractor``) and each verdict is compared with its claim's gold label. Claims a
  model extracts itself are *not* aligned to gold claims: any alignment rule would mix
  extraction errors into the judge's score, so without gold claims there are no claim metrics.
  Gold claims whose label is excluded (unevaluatable) are skipped. Claim-level intervals
  resample responses (a cluster bootstrap), since claims of one response are not independent.
* **Subtypes**: where the dataset's human error types map to one of our subtypes
  (``hallumeasure.core.subtype_maps``), for hallucinated responses with exactly one mapped gold
  subtype, the predicted subtype is the most frequent subtype among the response's
  unsupported verdicts (ties: first in claim order; ``"none"`` when the judge found nothing).
  Macro and weighted F1 run over the gold and predicted subtypes (``"none"`` is never a class,
  so a miss only lowers recall). Unmapped and unknown type names are counted and reported.
* **Cost**: per response, judge calls, seconds (summed call time), input / output / cache
  tokens, from ``Usage``; extraction usage is recorded apart. Dollar cost when a price is
  known (``price_of``: defaults to ``hallumeasure.models.pricing.price_for`` of each stage's name).

Error rows are never dropped: responses that failed, or whose flag is undefined because a
verdict failed, are left out of the quality metrics and counted in ``counts``; claim verdicts
with an error are counted in the claim block. Usage covers every response, failed or not.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict

import numpy as np
from pydantic import BaseModel, Field

from hallumeasure.bench.metrics import (
    MetricCI,
    accuracy,
    balanced_accuracy,
    interval,
    macro_f1,
    per_class_prf,
    precision_recall_f1,
    roc_auc,
    weighted_f1,
)
from hallumeasure.bench.spans import SpanScores, score_spans
from hallumeasure.core.docs import QUALITY_PAGE, docs_reference
from hallumeasure.core.labels import Policy
from hallumeasure.core.subtype_maps import map_error_types
from hallumeasure.core.types import Claim, Mode, ResponseResult, Sample, Usage
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge, Extraction, ModeJudge, model_to_close
from hallumeasure.pipeline.limits import WorkLimits
from hallumeasure.pipeline.run import measure_samples, run_sync
from hallumeasure.runs.datasets import LabelledSample
from hallumeasure.version import __version__

PriceOf = Callable[[str], Any]  # spec -> hallumeasure.models.pricing.Price | None
USAGE_FIELDS = ("calls", "seconds", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
NO_SUBTYPE = "none"


class ClaimScores(BaseModel):
    n_gold: int = Field(description="gold claims with a binary label")
    n_scored: int
    n_errors: int = Field(description="gold claims whose verdict is an error row or missing")
    precision: MetricCI
    recall: MetricCI
    f1: MetricCI
    balanced_accuracy: MetricCI


class SubtypeRow(BaseModel):
    subtype: str
    n_gold: int
    n_pred: int
    precision: float
    recall: float
    f1: float


class SubtypeScores(BaseModel):
    n_responses: int = Field(description="hallucinated responses with one mapped gold subtype")
    macro_f1: MetricCI
    weighted_f1: MetricCI
    rows: list[SubtypeRow]
    unmapped: dict[str, int] = Field(description="gold type names deliberately not mapped to a subtype")
    unknown: dict[str, int] = Field(description="gold type names in no table")
    n_ambiguous: int = Field(
        description="hallucinated responses skipped: unmapped or unknown names, or several subtypes"
    )


class UsageStats(BaseModel):
    """Per-response means (with intervals) of the judge's usage, and totals."""

    per_response: dict[str, MetricCI]
    judge_total: Usage
    extraction_total: Usage
    cost_usd_total: float | None = None
    cost_note: str = ""
    wall_seconds: float | None = None


class BenchResult(BaseModel):
    """One judge x mode x dataset benchmark."""

    schema_version: int = 1
    dataset: str
    judge: str
    extractor: str
    mode: str
    gold_claims: bool
    policy: str
    counts: dict[str, int]
    response: dict[str, MetricCI]
    score_source: str = Field(description="judge, unsupported_rate, or mixed")
    claim: ClaimScores | None = None
    subtype: SubtypeScores | None = None
    #: Character spans against the humans' (sets with span truth only), beside mark-everything and mark-nothing.
    span: SpanScores | None = None
    usage: UsageStats
    notes: list[str] = Field(default_factory=list)
    confidence: float = 0.95
    n_resamples: int = 1000
    seed: int = 0
    settings: dict[str, Any] = Field(default_factory=dict)
    package_version: str = __version__
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


# --------------------------------------------------------------------------- extraction helpers


class GoldClaimExtractor:
    """Returns each sample's gold claims as ``Claim``s (ids ``<sample>:g<i>``), skipping extraction."""

    name = "gold-claims"

    def __init__(self, samples: Iterable[LabelledSample]) -> None:
        self._claims = {s.id: s.claims for s in samples}

    def settings(self) -> dict[str, Any]:
        return {"extractor": self.name}

    async def extract(self, sample: Sample) -> Extraction:
        gold = self._claims.get(sample.id)
        if gold is None:
            return Extraction(error=f"sample {sample.id} has no gold claims")
        return Extraction(
            claims=[
                Claim(id=gold_claim_id(sample.id, i), sample_id=sample.id, index=i, text=c.text)
                for i, c in enumerate(gold)
            ]
        )


def gold_claim_id(sample_id: str, index: int) -> str:
    return f"{sample_id}:g{index}"


class _UsageRecorder:
    """Wraps an extractor to keep each sample's extraction usage apart from the judge's."""

    def __init__(self, inner: ClaimExtractor) -> None:
        self.inner = inner
        self.name = inner.name
        self.by_id: dict[str, Usage] = {}

    def settings(self) -> dict[str, Any]:
        return self.inner.settings()

    async def extract(self, sample: Sample) -> Extraction:
        extraction = await self.inner.extract(sample)
        self.by_id[sample.id] = extraction.usage
        return extraction


# --------------------------------------------------------------------------- running


async def bench_async(
    samples: Sequence[LabelledSample],
    judge: ClaimJudge,
    extractor: ClaimExtractor | None = None,
    *,
    gold_claims: bool = False,
    mode: Mode | str | None = None,
    policy: Policy | None = None,
    concurrency: int = 4,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    price_of: PriceOf | None = None,
    dataset: str | None = None,
    progress: Callable[[ResponseResult], None] | None = None,
) -> BenchResult:
    """Measure ``samples`` with ``extractor`` + ``judge`` (at most ``concurrency`` at once) and score them.

    With ``gold_claims`` the gold claims are judged and ``extractor`` must be None. The
    caller owns the stages' models (``run_bench`` closes them for you).
    """
    if gold_claims:
        if extractor is not None:
            raise ValueError("gold_claims=True judges the gold claims; do not pass an extractor")
        if not any(s.claims for s in samples):
            names = dataset or ", ".join(sorted({s.dataset for s in samples})) or "given"
            raise ValueError(
                f"the {names} data set has no gold claims (no labelled 'claims' field); "
                "run bench without --gold-claims to judge the claims extracted from its responses"
            )
        extractor = GoldClaimExtractor(samples)
    elif extractor is None:
        raise ValueError("pass an extractor, or gold_claims=True for data with claim labels")
    policy = policy or Policy()
    recorder = _UsageRecorder(extractor)
    started = time.perf_counter()
    results = await measure_samples(
        [s.to_sample() for s in samples],
        recorder,
        judge,
        policy,
        concurrency=concurrency,
        progress=progress,
        limits=WorkLimits.defaults(),  # one pathological row must not hold the whole benchmark
    )
    wall = time.perf_counter() - started
    return score_bench(
        samples,
        results,
        judge=judge.name,
        extractor=extractor.name,
        mode=_mode_of(judge, mode),
        policy=policy,
        gold_claims=gold_claims,
        extraction_usage=recorder.by_id,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
        price_of=price_of,
        dataset=dataset,
        wall_seconds=wall,
        settings={"judge": judge.settings(), "extractor": extractor.settings(), "concurrency": concurrency},
    )


def run_bench(
    samples: Sequence[LabelledSample], judge: ClaimJudge, extractor: ClaimExtractor | None = None, **options: Any
) -> BenchResult:
    """Synchronous ``bench_async`` for scripts and the CLI; closes the stages' models at the end."""

    async def go() -> BenchResult:
        try:
            return await bench_async(samples, judge, extractor, **options)
        finally:
            models = {id(m): m for m in (model_to_close(extractor), model_to_close(judge)) if m}
            for model in models.values():
                await model.aclose()

    return run_sync(go())


def _mode_of(judge: ClaimJudge, mode: Mode | str | None) -> str:
    value = mode if mode is not None else judge.mode if isinstance(judge, ModeJudge) else None
    return str(Mode(value).value) if value is not None and value in {m.value for m in Mode} else str(value or "n/a")


# --------------------------------------------------------------------------- scoring


def score_bench(
    samples: Sequence[LabelledSample],
    results: Sequence[ResponseResult],
    *,
    judge: str,
    extractor: str,
    mode: str = "n/a",
    policy: Policy | None = None,
    gold_claims: bool = False,
    extraction_usage: Mapping[str, Usage] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    price_of: PriceOf | None = None,
    dataset: str | None = None,
    wall_seconds: float | None = None,
    settings: dict[str, Any] | None = None,
) -> BenchResult:
    """Compare measured ``results`` with the human labels of ``samples`` (matched by sample id).

    Also works on a stored run (``hallumeasure.runs.run.Run``: its ``samples`` and ``results``) of a labelled
    file. Without ``extraction_usage`` the results' usage is taken as the judge's.
    """
    policy = policy or Policy()
    boot: _Bootstrap = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    by_id = {r.sample_id: r for r in results}
    names = sorted({s.dataset for s in samples})
    notes: list[str] = []
    missing = [s.id for s in samples if s.id not in by_id]
    if missing:
        notes.append(f"{len(missing)} sample(s) have no result (first: {missing[0]}); counted as error rows")
    pairs = [(s, by_id.get(s.id)) for s in samples]

    # Response level.
    y, pred, score, sources = [], [], [], Counter[str]()
    n_error, n_undefined = 0, 0
    for s, r in pairs:
        if r is None or r.error is not None:
            n_error += 1
            continue
        if r.hallucinated is None:
            n_undefined += 1
            continue
        value, source = _response_score(r)
        y.append(s.label)
        pred.append(int(r.hallucinated))
        score.append(value)
        sources[source] += 1
    y_a, p_a, s_a = np.array(y, dtype=int), np.array(pred, dtype=int), np.array(score, dtype=float)
    response = {
        "precision": interval(lambda a, b: precision_recall_f1(a, b)[0], y_a, p_a, **boot),
        "recall": interval(lambda a, b: precision_recall_f1(a, b)[1], y_a, p_a, **boot),
        "f1": interval(lambda a, b: precision_recall_f1(a, b)[2], y_a, p_a, **boot),
        "accuracy": interval(accuracy, y_a, p_a, **boot),
        "balanced_accuracy": interval(balanced_accuracy, y_a, p_a, **boot),
        "auc_roc": interval(roc_auc, y_a, s_a, **boot),
    }
    if n_error or n_undefined:
        notes.append(
            f"{n_error + n_undefined} of {len(samples)} responses not scored: {n_error} failed, "
            f"{n_undefined} with an undefined flag because a claim verdict failed"
        )
    if len(sources) > 1:
        notes.append(f"response scores are mixed: {dict(sources)}; AUC compares unlike scales")

    claim = _claim_scores(pairs, policy, boot) if gold_claims else None
    if not gold_claims and any(s.claims for s in samples):
        notes.append(
            "claim-level metrics need --gold-claims (gold_claims=True in Python): extracted claims are not "
            "aligned to gold claims"
        )
    subtype = _subtype_scores(pairs, policy, boot)
    span = score_spans(samples, results, policy, **boot)
    usage = _usage_stats(pairs, extraction_usage, judge, extractor, price_of, boot, wall_seconds)
    if extraction_usage is None:
        notes.append("usage was not split by stage: it includes extraction")
    counts = {
        "samples": len(samples),
        "positive": sum(s.label for s in samples),
        "scored": len(y),
        "error_responses": n_error,
        "undefined_responses": n_undefined,
        "claims": sum(r.n_claims for _, r in pairs if r is not None),
        "claim_errors": sum(r.n_errors for _, r in pairs if r is not None),
    }
    if counts["scored"] and len(set(y)) < 2:
        notes.append("only one gold class among scored responses: AUC ROC and some rates are undefined")
    seen = sorted(set(names) & trained_on((settings or {}).get("judge") or {}))
    if seen:
        notes.append(
            f"in-sample: the keyless judge {judge} was trained on {', '.join(seen)}; these figures overstate its "
            f"quality (its leave-one-dataset-out figures are on {docs_reference(*QUALITY_PAGE)})"
        )
    return BenchResult(
        dataset=dataset or "+".join(names) or "empty",
        judge=judge,
        extractor=extractor,
        mode=mode,
        gold_claims=gold_claims,
        policy=policy.describe(),
        counts=counts,
        response=response,
        score_source="mixed" if len(sources) > 1 else next(iter(sources), "n/a"),
        claim=claim,
        subtype=subtype,
        span=span,
        usage=usage,
        notes=notes,
        settings=settings or {},
        **boot,
    )


def trained_on(judge_settings: Mapping[str, Any]) -> set[str]:
    """Names of the labelled data sets a keyless judge was fitted on, read from its settings (none for an LLM).

    The offline trees list theirs under ``trained_on``; the NLI model under ``training_pool.shared_sets``;
    ``offline+nli`` nests the NLI model's settings under ``nli``.
    """
    found: set[str] = set()
    fitted = judge_settings.get("trained_on")
    if isinstance(fitted, Mapping):
        found |= {str(name) for name in fitted}
    pool = judge_settings.get("training_pool")
    if isinstance(pool, Mapping):
        found |= {str(name) for name in pool.get("shared_sets") or ()}
    nested = judge_settings.get("nli")
    if isinstance(nested, Mapping):
        found |= trained_on(nested)
    return found


def _response_score(r: ResponseResult) -> tuple[float, str]:
    if r.score is not None:
        return float(r.score), "judge"
    if r.unsupported_rate is not None:
        return float(r.unsupported_rate), "unsupported_rate"
    return 0.0, "unsupported_rate"  # no evaluated claim: nothing unsupported


class _Bootstrap(TypedDict):
    """The bootstrap's settings, passed on to every interval and recorded in the result."""

    n_resamples: int
    seed: int
    confidence: float


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def _claim_counts_metric(which: str) -> Callable[..., float]:
    """A metric over per-response confusion counts (summed inside each bootstrap draw)."""

    def fn(tp: np.ndarray, fp: np.ndarray, fn_: np.ndarray, tn: np.ndarray) -> float:
        n_tp, n_fp, n_fn, n_tn = (float(a.sum()) for a in (tp, fp, fn_, tn))
        p, r = _ratio(n_tp, n_tp + n_fp), _ratio(n_tp, n_tp + n_fn)
        if which == "precision":
            return p
        if which == "recall":
            return r
        if which == "f1":
            return _ratio(2 * p * r, p + r)
        recalls = [_ratio(hit, hit + miss) for hit, miss in ((n_tp, n_fn), (n_tn, n_fp)) if hit + miss > 0]
        return float(np.mean(recalls)) if recalls else float("nan")

    return fn


#: Each labelled sample with its result (None when the run has none for it).
_Pairs = Sequence[tuple[LabelledSample, ResponseResult | None]]


def _claim_scores(pairs: _Pairs, policy: Policy, boot: _Bootstrap) -> ClaimScores:
    rows, n_gold, n_errors = [], 0, 0
    for s, r in pairs:
        verdicts = {v.claim_id: v for v in (r.verdicts if r is not None else [])}
        tp = fp = fn = tn = 0
        for i, gold in enumerate(s.claims or ()):
            if gold.unsupported is None:
                continue
            n_gold += 1
            v = verdicts.get(gold_claim_id(s.id, i))
            if v is None or not v.ok or v.label is None:
                n_errors += 1
                continue
            predicted = policy.is_unsupported(v.label)
            tp += predicted and gold.unsupported
            fp += predicted and not gold.unsupported
            fn += (not predicted) and gold.unsupported
            tn += (not predicted) and not gold.unsupported
        if s.claims:
            rows.append((tp, fp, fn, tn))
    counts = [np.array(col, dtype=float) for col in zip(*rows, strict=True)] if rows else [np.zeros(0)] * 4
    metric = {k: interval(_claim_counts_metric(k), *counts, **boot) for k in ("precision", "recall", "f1", "balanced")}
    return ClaimScores(
        n_gold=n_gold,
        n_scored=n_gold - n_errors,
        n_errors=n_errors,
        precision=metric["precision"],
        recall=metric["recall"],
        f1=metric["f1"],
        balanced_accuracy=metric["balanced"],
    )


def predicted_subtype(r: ResponseResult, policy: Policy) -> str:
    """Most frequent subtype of the response's unsupported verdicts (ties: first in claim order), or ``none``."""
    found = [
        v.subtype.value
        for v in r.verdicts
        if v.ok and v.label is not None and v.subtype is not None and policy.is_unsupported(v.label)
    ]
    if not found:
        return NO_SUBTYPE
    counts = Counter(found)
    top = max(counts.values())
    return next(name for name in found if counts[name] == top)


def _subtype_classes(gold: Iterable[str], pred: Iterable[str]) -> list[str]:
    """Subtypes seen in gold or prediction (per bootstrap draw, so a rare class absent from a draw is not a zero)."""
    return sorted((set(gold) | set(pred)) - {NO_SUBTYPE})


def _subtype_scores(pairs: _Pairs, policy: Policy, boot: _Bootstrap) -> SubtypeScores | None:
    gold, pred = [], []
    unmapped: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    ambiguous = 0
    annotated = False
    for s, r in pairs:
        names = s.gold_error_types()
        if names is None:
            continue
        annotated = True
        mapped = map_error_types(s.dataset, names)
        unmapped.update(mapped.unmapped)
        unknown.update(mapped.unknown)
        if s.label != 1 or not names:
            continue
        if mapped.single is None:
            ambiguous += 1
            continue
        if r is None or r.error is not None:
            continue  # already counted as an error response
        gold.append(mapped.single.value)
        pred.append(predicted_subtype(r, policy))
    if not annotated:
        return None
    classes = _subtype_classes(gold, pred)
    g_a, p_a = np.array(gold, dtype=object), np.array(pred, dtype=object)
    table = per_class_prf(g_a, p_a, classes) if gold else {}
    n_pred = Counter(pred)
    rows = [
        SubtypeRow(subtype=c, n_gold=sup, n_pred=n_pred[c], precision=p, recall=rc, f1=f)
        for c, (p, rc, f, sup) in table.items()
    ]
    return SubtypeScores(
        n_responses=len(gold),
        macro_f1=interval(lambda a, b: macro_f1(a, b, _subtype_classes(a, b)), g_a, p_a, **boot),
        weighted_f1=interval(lambda a, b: weighted_f1(a, b, _subtype_classes(a, b)), g_a, p_a, **boot),
        rows=rows,
        unmapped=dict(unmapped.most_common()),
        unknown=dict(unknown.most_common()),
        n_ambiguous=ambiguous,
    )


def _minus(a: Usage, b: Usage) -> Usage:
    return Usage(**{k: max(getattr(a, k) - getattr(b, k), 0) for k in Usage.model_fields})


def _default_price_of(spec: str) -> Any:
    try:
        from hallumeasure.models.pricing import price_for
    except ImportError:  # pricing is optional
        return None
    return price_for(spec)


def _cost(usage: Usage, price: Any) -> float:
    from hallumeasure.models.pricing import cost

    return float(cost(usage, price))


def _usage_stats(
    pairs: _Pairs,
    extraction_usage: Mapping[str, Usage] | None,
    judge: str,
    extractor: str,
    price_of: PriceOf | None,
    boot: _Bootstrap,
    wall: float | None,
) -> UsageStats:
    price_of = price_of or _default_price_of
    judge_price = price_of(judge)
    extract_price = None if extractor == GoldClaimExtractor.name or extraction_usage is None else price_of(extractor)
    judge_rows, extract_rows = [], []
    for s, r in pairs:
        total = r.usage if r is not None else Usage()
        extracted = (extraction_usage or {}).get(s.id, Usage())
        judge_rows.append(_minus(total, extracted))
        extract_rows.append(extracted)
    per = {
        k: interval(np.mean, np.array([getattr(u, k) for u in judge_rows], dtype=float), **boot) for k in USAGE_FIELDS
    }
    note, total_cost = "", None
    needs_extract_price = extractor != GoldClaimExtractor.name and any(u.calls for u in extract_rows)
    if judge_price is None:
        note = f"no price known for {judge!r}; cost omitted"
    elif needs_extract_price and extract_price is None:
        note = f"no price known for extractor {extractor!r}; cost omitted"
    else:
        costs = np.array(
            [
                _cost(j, judge_price) + (_cost(e, extract_price) if needs_extract_price else 0.0)
                for j, e in zip(judge_rows, extract_rows, strict=True)
            ]
        )
        per["cost_usd"] = interval(np.mean, costs, **boot)
        total_cost = float(costs.sum())
        note = "cost covers judge" + (" and extraction" if needs_extract_price else "") + " at list prices"
    return UsageStats(
        per_response=per,
        judge_total=sum(judge_rows, Usage()),
        extraction_total=sum(extract_rows, Usage()),
        cost_usd_total=total_cost,
        cost_note=note,
        wall_seconds=wall,
    )
