"""Calibration of a run's judge against human labels, and the labelling template.

Labels file (CSV or JSONL), one row per labelled claim or response:

* a claim: ``claim_id`` (as in the run), or ``sample_id`` + ``claim`` (the claim text, matched
  ignoring case and spacing); ``label`` (one of the five labels); optional ``subtype``;
* a response: ``sample_id`` and ``hallucinated`` (yes/no, true/false, 1/0).

``response_id`` is accepted for ``sample_id``. The report holds: the confusion matrix over the
five labels and over supported/unsupported (under the run's policy), per-subtype agreement,
Cohen's kappa, the judge's sensitivity and specificity (Wilson intervals), and the run's mean
unsupported rate and hallucinated share corrected for the judge's errors. Every corrected
number lies in [0, 1] by construction, not by clipping: stratified prediction-powered inference
with a Bayesian interval (``correction.stratified_ppi``), the labels alone with a Jeffreys
interval, and a Bayesian Rogan-Gladen; power-tuned PPI (PPI++) with its normal interval is kept
for comparison, clipped. Each corrected rate carries a ``CoverageCheck``: where the simulation
grid of ``benchmarks/ppi_coverage.py`` says its interval covered less than 93% of runs at
similar settings, or the run lies outside the grid, the report says so in its notes.

PPI needs the labelled responses to be a random sample of the run, each labelled whole (all
its claims): ``export_sample`` draws such a sample, stratified by model with proportional
allocation (so it stays self-weighting), and writes every claim of the drawn responses.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Label, Policy, Subtype
from hallumeasure.runs.run import Run
from hallumeasure.stats.correction import (
    cohen_kappa,
    labels_only_bounded,
    ppi_mean,
    rogan_gladen_bounded,
    stratified_ppi,
)
from hallumeasure.stats.coverage_check import CoverageCheck, check_coverage
from hallumeasure.stats.estimate import Estimate
from hallumeasure.stats.intervals import wilson_interval

LABELS = [label.value for label in Label]
SUBTYPES = [subtype.value for subtype in Subtype]
_YES = {"yes", "y", "true", "1", "hallucinated"}
_NO = {"no", "n", "false", "0", "faithful", "not hallucinated"}
_SPACE = re.compile(r"\s+")
#: Unmatched label rows listed in the report (all are counted).
SHOWN_UNMATCHED = 20


def _norm(text: str) -> str:
    return _SPACE.sub(" ", str(text)).strip().lower()


class HumanLabels(BaseModel):
    """Human labels read from a file: claim labels keyed by claim id, response labels by sample id."""

    claims: dict[str, tuple[str, str | None]] = Field(description="claim_id -> (label, subtype or None)")
    responses: dict[str, bool] = Field(description="sample_id -> hallucinated")
    unmatched: list[str]
    n_rows: int


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc.strerror or exc}") from None
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path} line {number} is not JSON: {exc.msg}") from None
            if not isinstance(row, dict):
                raise ConfigError(f"{path} line {number} is not a JSON object")
            rows.append({k: "" if v is None else str(v) for k, v in row.items()})
        return rows
    return [{k.strip(): (v or "").strip() for k, v in row.items() if k} for row in csv.DictReader(io.StringIO(text))]


def read_labels(path: str | Path, run: Run) -> HumanLabels:
    """Read a labels file and match its rows to the claims and responses of ``run``.

    Raises ``ConfigError`` naming the row and the valid values for a bad label; rows that name
    a claim or sample the run does not have are kept in ``unmatched``.
    """
    path = Path(path)
    claims = run.claims
    ids = set(claims["claim_id"].astype(str))
    by_text = {
        (str(s), _norm(t)): str(c)
        for s, t, c in zip(claims["sample_id"], claims["claim"], claims["claim_id"], strict=True)
    }
    samples = set(run.responses["sample_id"].astype(str))
    keys = _sample_keys(run)
    out_claims: dict[str, tuple[str, str | None]] = {}
    out_responses: dict[str, bool] = {}
    unmatched: list[str] = []
    rows = _rows(path)
    if not rows:
        raise ConfigError(f"{path} holds no label rows")
    for number, row in enumerate(rows, start=2 if path.suffix.lower() == ".csv" else 1):
        where = f"{path.name} row {number}"
        sample_id = row.get("sample_id") or row.get("response_id") or ""
        # the id as written plus a model column finds a sample whose id several models share
        sample_id = keys.get((sample_id, (row.get("model") or "").strip()), sample_id)
        label = (row.get("label") or "").strip().lower()
        flag = (row.get("hallucinated") or "").strip().lower()
        if label:
            if label not in LABELS:
                raise ConfigError(f"{where}: label {label!r} is not one of {', '.join(LABELS)}")
            subtype = (row.get("subtype") or "").strip().lower() or None
            if subtype is not None and subtype not in SUBTYPES:
                raise ConfigError(f"{where}: subtype {subtype!r} is not one of {', '.join(SUBTYPES)}")
            claim_id = row.get("claim_id") or by_text.get((sample_id, _norm(row.get("claim") or "")))
            if not claim_id and not (sample_id and row.get("claim")):
                raise ConfigError(f"{where}: a claim label needs claim_id, or sample_id and claim")
            if claim_id is None or claim_id not in ids:
                unmatched.append(f"{where}: no claim {claim_id or row.get('claim')!r} in the run")
                continue
            out_claims[claim_id] = (label, subtype)
        elif flag:
            if flag not in _YES | _NO:
                raise ConfigError(f"{where}: hallucinated {flag!r} is not yes/no, true/false or 1/0")
            if not sample_id:
                raise ConfigError(f"{where}: a response label needs sample_id")
            if sample_id not in samples:
                unmatched.append(f"{where}: no sample {sample_id!r} in the run")
                continue
            out_responses[sample_id] = flag in _YES
        elif any(v for v in row.values()):
            raise ConfigError(f"{where}: give label (a claim label) or hallucinated (a response label)")
    return HumanLabels(claims=out_claims, responses=out_responses, unmatched=unmatched, n_rows=len(rows))


def _sample_keys(run: Run) -> dict[tuple[str, str], str]:
    """(id as written, model) -> run key, for the samples a run keyed by (id, model)."""
    r = run.responses
    if "input_id" not in r.columns:
        return {}
    rows = zip(r["input_id"], r["model"], r["sample_id"], strict=True)
    return {(str(i), m if isinstance(m, str) else ""): str(k) for i, m, k in rows if i != k}


# --- the report ----------------------------------------------------------------------------------


class Share(BaseModel):
    """k of n with a Wilson interval."""

    k: int
    n: int
    value: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, k: int, n: int, confidence: float) -> Share:
        low, high = wilson_interval(k, n, confidence)
        return cls(k=k, n=n, value=round(k / n, 6) if n else None, low=_r(low), high=_r(high))

    def format(self) -> str:
        return "-" if self.value is None else f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}] ({self.k}/{self.n})"


class SubtypeAgreement(BaseModel):
    subtype: str = Field(description="The human's subtype.")
    agreement: Share = Field(description="Claims where the judge gave the same subtype.")


class CorrectedRate(BaseModel):
    """One run-level metric: as the judge measured it, and corrected by human labels."""

    metric: str
    judge: Estimate = Field(description="The judge's value over the whole run (no interval).")
    ppi: Estimate = Field(
        description="Stratified prediction-powered estimate (posterior median) and Bayesian interval, "
        "always within [0, 1]: the judge's share of flagged responses over the run times the human "
        "rate among labelled flagged responses, plus the same for the responses it cleared."
    )
    ppi_tuned: Estimate = Field(
        description="Power-tuned PPI (PPI++, Angelopoulos et al. 2023) with its normal interval, clipped to "
        "[0, 1]: for comparison only; it under-covers with few labels or rare positives "
        "(benchmarks/results/ppi_coverage.md)."
    )
    ppi_lambda: float = Field(description="Weight of the judge's predictions in the tuned estimate (0 = labels only).")
    labels_only: Estimate = Field(
        description="The labelled responses alone: Jeffreys interval (effective sample size for rates), within [0, 1]."
    )
    rogan_gladen: Estimate = Field(
        description="Bayesian Rogan-Gladen: posterior median and interval over sensitivity, specificity and "
        "the judge's share, keeping only draws within [0, 1]; a value even when no label is positive."
    )
    coverage: CoverageCheck = Field(
        description="Whether the simulation grid (benchmarks/ppi_coverage.py) vouches for the PPI and "
        "Rogan-Gladen intervals at this run's labels, judge error rates and rate."
    )
    n_labelled: int = Field(description="Labelled responses used.")
    n_unlabelled: int


class CalibrationReport(BaseModel):
    """A run's judge measured against human labels (written by ``calibrate --json``)."""

    run: str
    labels_file: str
    policy: str
    confidence: float
    n_label_rows: int
    n_claims_labelled: int
    n_responses_labelled: int
    unmatched: list[str]
    n_unmatched: int
    labels: list[str]
    confusion: list[list[int]] = Field(description="Rows: human label; columns: judge label (order of 'labels').")
    judge_errors: int = Field(description="Labelled claims whose judge verdict is an error row.")
    binary_confusion: dict[str, int] = Field(
        description="Over claims evaluated by both: tp, fp, fn, tn (positive = unsupported)."
    )
    kappa_labels: float | None
    kappa_binary: float | None
    sensitivity: Share = Field(description="Judge says unsupported, among claims people call unsupported.")
    specificity: Share = Field(description="Judge says supported, among claims people call supported.")
    response_sensitivity: Share = Field(
        description="Judge flags the response, among responses people call hallucinated."
    )
    response_specificity: Share
    subtypes: list[SubtypeAgreement]
    corrected: list[CorrectedRate]
    notes: list[str]


def _r(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), 6) + 0.0


def _estimate(triple: Sequence[float | None]) -> Estimate:
    return Estimate.of(*triple[:3])


def calibrate_best_run(runs: list[Run], labels_path: str | Path, *, confidence: float = 0.95) -> CalibrationReport:
    """Calibrate the run that the most label rows match."""

    def matched(run: Run) -> int:
        found = read_labels(labels_path, run)
        return len(found.claims) + len(found.responses)

    return calibrate(max(runs, key=matched), labels_path, confidence=confidence)


def calibrate(run: Run | str | Path, labels_path: str | Path, *, confidence: float = 0.95) -> CalibrationReport:
    """Measure the judge of ``run`` (loaded, or its directory) against the human labels in ``labels_path``."""
    run = Run.of(run)
    policy = run.manifest.policy if run.manifest else Policy()
    human = read_labels(labels_path, run)
    if not human.claims and not human.responses:
        raise ConfigError(
            f"no row of {Path(labels_path).name} matches a claim or sample of the run "
            f"({len(human.unmatched)} unmatched); check its claim_id / sample_id values"
        )
    claims = run.claims.assign(
        claim_id=run.claims["claim_id"].astype(str), sample_id=run.claims["sample_id"].astype(str)
    )
    labelled = claims[claims["claim_id"].isin(human.claims)].copy()
    labelled["human"] = [human.claims[c][0] for c in labelled["claim_id"]]
    labelled["human_subtype"] = [human.claims[c][1] for c in labelled["claim_id"]]
    judged = labelled[labelled["label"].notna()]
    index = {x: i for i, x in enumerate(LABELS)}
    confusion = np.zeros((len(LABELS), len(LABELS)), dtype=int)
    for h, j in zip(judged["human"], judged["label"], strict=True):
        confusion[index[h], index[j]] += 1

    # Binary, under the run's policy: only claims both sides evaluated.
    def unsupported(label: str) -> bool | None:
        lab = Label(label)
        if lab == Label.UNEVALUATABLE:
            choice = policy.unevaluatable.value
            return None if choice == "exclude" else choice == "unsupported"
        return policy.is_unsupported(lab)

    either = [(unsupported(h), unsupported(j)) for h, j in zip(judged["human"], judged["label"], strict=True)]
    pairs = [(h, j) for h, j in either if h is not None and j is not None]
    tp = sum(h and j for h, j in pairs)
    fn = sum(h and not j for h, j in pairs)
    fp = sum(j and not h for h, j in pairs)
    tn = sum(not h and not j for h, j in pairs)

    subtypes = []
    with_subtype = judged[judged["human_subtype"].notna()]
    for x in SUBTYPES:
        mine = with_subtype[with_subtype["human_subtype"] == x]
        if len(mine):
            subtypes.append(
                SubtypeAgreement(
                    subtype=x, agreement=Share.of(int((mine["subtype"] == x).sum()), len(mine), confidence)
                )
            )

    # Per response: the human's rate and flag where the response is labelled whole (or flagged directly).
    responses = run.responses.assign(sample_id=run.responses["sample_id"].astype(str))
    judge_rate = pd.to_numeric(responses["unsupported_rate"], errors="coerce").to_numpy(dtype=float)
    judge_flag = responses["hallucinated"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    human_rate = np.full(len(responses), np.nan)
    human_flag = np.full(len(responses), np.nan)
    by_sample = claims.groupby("sample_id")["claim_id"].apply(list).to_dict()
    for i, sid in enumerate(responses["sample_id"]):
        ids = by_sample.get(sid, [])
        if ids and all(c in human.claims for c in ids):
            calls = [unsupported(human.claims[c][0]) for c in ids]
            evaluated = [c for c in calls if c is not None]
            if evaluated:
                human_rate[i] = sum(evaluated) / len(evaluated)
                human_flag[i] = float(policy.is_hallucinated(sum(evaluated), len(evaluated)))
        if sid in human.responses:
            human_flag[i] = float(human.responses[sid])
    both_flags = np.isfinite(human_flag) & np.isfinite(judge_flag)
    hf, jf = human_flag[both_flags] > 0.5, judge_flag[both_flags] > 0.5

    corrected = [
        _corrected("mean unsupported rate", human_rate, judge_rate, confidence, sens=(tp, tp + fn), spec=(tn, tn + fp)),
        _corrected(
            "hallucinated share",
            human_flag,
            judge_flag,
            confidence,
            sens=(int(np.sum(hf & jf)), int(np.sum(hf))),
            spec=(int(np.sum(~hf & ~jf)), int(np.sum(~hf))),
        ),
    ]
    notes = [f"{c.metric}: {c.coverage.message}" for c in corrected if c.n_labelled and not c.coverage.holds]
    notes.append(
        "corrected rates assume the labelled responses are a random sample of the run "
        "(calibrate --export-sample draws one)"
    )
    binary = np.array([[tp, fn], [fp, tn]])
    return CalibrationReport(
        run=Path(run.name).name,
        labels_file=Path(labels_path).name,
        policy=policy.describe(),
        confidence=confidence,
        n_label_rows=human.n_rows,
        n_claims_labelled=len(labelled),
        n_responses_labelled=int(np.isfinite(human_flag).sum()),
        unmatched=human.unmatched[:SHOWN_UNMATCHED],
        n_unmatched=len(human.unmatched),
        labels=LABELS,
        confusion=confusion.tolist(),
        judge_errors=int(labelled["label"].isna().sum()),
        binary_confusion={"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        kappa_labels=_r(cohen_kappa(confusion)),
        kappa_binary=_r(cohen_kappa(binary)),
        sensitivity=Share.of(tp, tp + fn, confidence),
        specificity=Share.of(tn, tn + fp, confidence),
        response_sensitivity=Share.of(int(np.sum(hf & jf)), int(np.sum(hf)), confidence),
        response_specificity=Share.of(int(np.sum(~hf & ~jf)), int(np.sum(~hf)), confidence),
        subtypes=subtypes,
        corrected=corrected,
        notes=notes,
    )


def _corrected(
    metric: str,
    human: np.ndarray,
    judge: np.ndarray,
    confidence: float,
    *,
    sens: tuple[int, int],
    spec: tuple[int, int],
) -> CorrectedRate:
    has_judge = np.isfinite(judge)
    lab = np.isfinite(human) & has_judge
    rest = has_judge & ~lab
    bounded = stratified_ppi(human[lab], judge[lab], judge[rest], confidence)
    *tuned, lam = ppi_mean(human[lab], judge[lab], judge[rest], confidence, tuned=True)
    observed = judge[has_judge]
    obs_mean = float(observed.mean()) if observed.size else None
    obs_var = float(observed.var(ddof=1)) / observed.size if observed.size > 1 else 0.0
    rg: tuple[float | None, float | None, float | None] = (None, None, None)
    if obs_mean is not None and sens[1] + spec[1] > 0:  # error rates measured on labelled claims or responses
        tp, n_pos = sens
        tn, n_neg = spec
        rg = rogan_gladen_bounded(obs_mean, obs_var, observed.size, (tp, n_pos - tp), (tn, n_neg - tn), confidence)
    n_labelled = int(lab.sum())
    return CorrectedRate(
        metric=metric,
        judge=Estimate.of(obs_mean),
        ppi=_estimate(bounded),
        ppi_tuned=_estimate([_clip(x) for x in tuned]),
        ppi_lambda=round(lam, 6),
        labels_only=_estimate(labels_only_bounded(human[lab], confidence)),
        rogan_gladen=_estimate(rg),
        coverage=check_coverage(
            "share" if metric == "hallucinated share" else "rate",
            n_labelled=n_labelled,
            sensitivity=sens[0] / sens[1] if sens[1] else None,
            specificity=spec[0] / spec[1] if spec[1] else None,
            rate=bounded[0],
            confidence=confidence,
            sensitivity_counts=sens,
            specificity_counts=spec,
        ),
        n_labelled=n_labelled,
        n_unlabelled=int(rest.sum()),
    )


def _clip(value: float | None) -> float | None:
    return None if value is None else min(1.0, max(0.0, value))


# --- the labelling template ----------------------------------------------------------------------

TEMPLATE_COLUMNS = [
    "sample_id",
    "claim_id",
    "model",
    "question",
    "context",
    "response",
    "claim",
    "label",
    "subtype",
    "comment",
]
JUDGE_COLUMNS = ["judge_label", "judge_subtype", "judge_reason"]


def export_sample(
    run: Run | str | Path, n_responses: int, out_path: str | Path, *, show_judge: bool = False, seed: int = 0
) -> tuple[int, int]:
    """Write a CSV of every claim of ``n_responses`` randomly drawn responses (stratified by model).

    Proportional allocation per model (largest remainders), so the sample is self-weighting and
    PPI's random-sample assumption holds. Responses without claims are not drawn. The judge's
    label, subtype and reasons are left out unless ``show_judge`` (people who see them tend to
    agree with them). Returns (responses, claims) written.
    """
    run = Run.of(run)
    claims = run.claims.assign(sample_id=run.claims["sample_id"].astype(str))
    eligible = run.responses.assign(sample_id=run.responses["sample_id"].astype(str))
    eligible = eligible[eligible["sample_id"].isin(set(claims["sample_id"]))]
    if eligible.empty:
        raise ConfigError(f"{run.path} has no response with claims to label")
    n = min(n_responses, len(eligible))
    models = eligible["model"].fillna("(no model)").astype(str)
    sizes = models.value_counts().sort_index()
    quota = sizes * n / len(eligible)
    take = np.floor(quota).astype(int)
    for model in (quota - take).sort_values(ascending=False).index[: n - int(take.sum())]:
        take[model] += 1
    rng = np.random.default_rng(seed)
    chosen = []
    for model, k in take.items():
        ids = eligible["sample_id"][models == model].to_numpy()
        chosen += list(rng.choice(ids, size=int(k), replace=False))
    picked = eligible.set_index("sample_id").loc[chosen]
    columns = TEMPLATE_COLUMNS + (JUDGE_COLUMNS if show_judge else [])
    rows = 0
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for sid, response in picked.iterrows():
            for claim in claims[claims["sample_id"] == sid].to_dict(orient="records"):
                row = {
                    "sample_id": sid,
                    "claim_id": claim["claim_id"],
                    "model": _text(response["model"]),
                    "question": _text(response["question"]),
                    "context": response["context"],
                    "response": response["response"],
                    "claim": claim["claim"],
                    "label": "",
                    "subtype": "",
                    "comment": "",
                }
                if show_judge:
                    row |= {
                        "judge_label": _text(claim["label"]),
                        "judge_subtype": _text(claim["subtype"]),
                        "judge_reason": _text(claim["label_reason"]),
                    }
                writer.writerow(row)
                rows += 1
    return len(picked), rows


def _text(value: object) -> str:
    """A cell as text: a missing value becomes empty."""
    return "" if value is None else str(value)
