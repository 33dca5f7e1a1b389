"""How far a run's judge agrees with itself (repeats) and with other judges (a panel), and intervals
that carry the judge's own variance.

Inputs are the run's votes (``Run.votes``): one row per claim, judge and repeat. A run measured
without repeats or a panel has one vote per claim, and nothing here has anything to say about it.

- *Flip rate* of a claim: the share of pairs of its votes (one judge's repeats) that disagree on the
  label, 0 when all agree; ``flipped_share`` is the share of claims with any disagreement, and
  ``unsupported_flipped_share`` the share whose supported/unsupported status changes.
- *Fleiss' kappa* across repeats (and across judges for a panel) over the claims whose votes all
  succeeded (the statistic needs as many ratings per claim); ``n_claims_complete`` says how many.
- *Cohen's kappa* between every two judges of a panel, each judge represented by the majority of
  its repeats.
- *Intervals with judge variance*: the rate one judge call gives (a vote's unsupported rate,
  averaged over a response's votes) with a bootstrap over responses in which each drawn response
  brings all its votes. The spread of the response means already holds the judge's disagreement
  (divided by the number of votes), so drawing the votes again inside each response would count
  it twice and over-cover: ``benchmarks/judge_stability.py`` measures both. ``judge_variance_share``
  says how much of the interval's variance comes from the judge disagreeing with itself. The
  interval is an expanded percentile interval (``expanded_confidence``): the plain percentile
  interval covered about one point short of nominal in that benchmark.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from hallumeasure.core.labels import Label, Policy
from hallumeasure.stats.bootstrap import expanded_confidence, mean_draws, percentile_interval
from hallumeasure.stats.correction import cohen_kappa as confusion_kappa
from hallumeasure.stats.estimate import Estimate
from hallumeasure.stats.resampling import CONFIDENCE, RESAMPLES, SEED

if TYPE_CHECKING:
    from hallumeasure.report.runs import Group
    from hallumeasure.runs.run import Run

LABELS = [label.value for label in Label]
INTERVAL_METHOD = (
    "bootstrap over responses, each drawn response with all its votes (repeats and judges); "
    "expanded percentile interval"
)


# --- agreement statistics --------------------------------------------------------------------------


def fleiss_kappa(table: np.ndarray) -> float | None:
    """Fleiss' kappa of a subjects x categories table of counts (every row the same number of raters).

    None when it is undefined: fewer than two raters, no subjects, or every rating in one category.
    """
    table = np.asarray(table, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0:
        return None
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]):
        raise ValueError("Fleiss' kappa needs the same number of ratings for every subject")
    n = raters[0]
    if n < 2:
        return None
    p_category = table.sum(axis=0) / table.sum()
    agreement = ((table**2).sum(axis=1) - n) / (n * (n - 1))
    expected = float((p_category**2).sum())
    if expected >= 1.0:
        return None
    return float((agreement.mean() - expected) / (1.0 - expected))


def cohen_kappa(a: Iterable[object], b: Iterable[object]) -> float | None:
    """Cohen's kappa of two raters' labels on the same subjects (None when undefined)."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError("Cohen's kappa needs two ratings per subject")
    if not a:
        return None
    categories = sorted(set(a) | set(b), key=str)
    index = {c: i for i, c in enumerate(categories)}
    confusion = np.zeros((len(categories), len(categories)))
    for x, y in zip(a, b, strict=True):
        confusion[index[x], index[y]] += 1
    return confusion_kappa(confusion)


def _counts(rows: list[list[str]], categories: list[str]) -> np.ndarray:
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((len(rows), len(categories)))
    for i, labels in enumerate(rows):
        for label in labels:
            table[i, index[label]] += 1
    return table


def _pairs_disagreeing(labels: list[str]) -> float | None:
    n = len(labels)
    if n < 2:
        return None
    same = sum(c * (c - 1) for c in Counter(labels).values())
    return 1.0 - same / (n * (n - 1))


# --- per-claim stability -----------------------------------------------------------------------------


def _unsupported(policy: Policy, labels: pd.Series) -> pd.Series:
    return labels.map(lambda x: policy.is_unsupported(Label(x)) if isinstance(x, str) else None)


def _ballots(votes: pd.DataFrame, key: tuple[str, ...]) -> dict[tuple[Any, ...], tuple[list[str], int]]:
    """key -> (labels of the answered votes in order, number of failed votes), in one pass over the votes."""
    out: dict[tuple[Any, ...], tuple[list[str], int]] = {}
    columns = [votes[c].tolist() for c in (*key, "label", "error")]  # lists: far faster to walk than Series
    for *ident, label, error in zip(*columns, strict=True):
        labels, failed = out.setdefault(tuple(ident), ([], 0))
        if isinstance(label, str) and not isinstance(error, str):
            labels.append(label)
        else:
            out[tuple(ident)] = (labels, failed + 1)
    return out


def _tally(labels: list[str]) -> str:
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{lab} {n}" for lab, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def claim_stability(votes: pd.DataFrame, policy: Policy) -> pd.DataFrame:
    """One row per claim and judge: votes, failed votes, label tally, flip rate and whether it flipped."""
    unsupported = {label: policy.is_unsupported(Label(label)) for label in LABELS}
    rows = []
    for (sample_id, claim_id, judge), (labels, failed) in _ballots(votes, ("sample_id", "claim_id", "judge")).items():
        status = {unsupported[x] for x in labels}
        rows.append(
            {
                "sample_id": sample_id,
                "claim_id": claim_id,
                "judge": judge,
                "n_votes": len(labels) + failed,
                "n_failed": failed,
                "votes": _tally(labels),
                "flip_rate": _pairs_disagreeing(labels),
                "flipped": len(set(labels)) > 1 if len(labels) > 1 else None,
                "unsupported_flipped": len(status) > 1 if len(labels) > 1 else None,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "sample_id",
            "claim_id",
            "judge",
            "n_votes",
            "n_failed",
            "votes",
            "flip_rate",
            "flipped",
            "unsupported_flipped",
        ],
    )


class JudgeStability(BaseModel):
    """How far one judge agrees with itself across its repeats."""

    judge: str
    repeats: int
    n_claims: int
    n_votes: int
    n_vote_errors: int
    flipped_share: float | None = Field(description="share of claims whose label differs between repeats")
    unsupported_flipped_share: float | None = Field(
        description="share of claims judged unsupported by some repeats and not by others"
    )
    mean_flip_rate: float | None = Field(description="mean over claims of the share of repeat pairs that disagree")
    fleiss_kappa: float | None = Field(description="Fleiss' kappa across repeats, five labels")
    fleiss_kappa_unsupported: float | None = Field(description="Fleiss' kappa across repeats, unsupported or not")
    n_claims_complete: int = Field(description="claims whose repeats all succeeded (the kappas use these)")


class PairAgreement(BaseModel):
    """Two judges of a panel on the claims both decided (each judge: the majority of its repeats)."""

    a: str
    b: str
    n_claims: int
    agreement: float | None
    cohen_kappa: float | None
    cohen_kappa_unsupported: float | None


class PanelAgreement(BaseModel):
    """How far the judges of a panel agree with each other."""

    judges: list[str]
    n_claims_complete: int
    fleiss_kappa: float | None
    fleiss_kappa_unsupported: float | None
    pairs: list[PairAgreement]


class JudgeVarianceStats(BaseModel):
    """A group's rates with intervals that carry the judge's variance (see the module docstring)."""

    name: str
    n_responses: int
    votes_per_claim: float
    per_vote_rate: Estimate = Field(description="mean unsupported rate of one judge call")
    per_vote_hallucinated_share: Estimate = Field(description="hallucinated share of one judge call")
    combined_rate: Estimate = Field(description="mean unsupported rate of the combined verdicts")
    judge_variance_share: float | None = Field(
        description="share of the per-vote rate's variance that comes from repeats disagreeing within a response "
        "(one judge with repeats; None for a panel)"
    )


class StabilityReport(BaseModel):
    """Judge stability of one run: repeats, panel agreement and judge-variance-aware intervals."""

    n_claims: int
    n_votes: int
    n_vote_errors: int
    judges: list[JudgeStability]
    panel: PanelAgreement | None = None
    groups: list[JudgeVarianceStats] = Field(default_factory=list)
    rule: str | None = None
    tie_rule: str | None = None
    error_rule: str | None = None
    interval_method: str = INTERVAL_METHOD
    confidence: float = CONFIDENCE
    resamples: int = RESAMPLES
    seed: int = SEED


def has_votes(votes: pd.DataFrame) -> bool:
    """Whether a run has more than one vote per claim (repeats or a panel)."""
    return len(votes) > 0 and bool(votes.groupby("claim_id").size().max() > 1)


def _judge_stability(judge: str, votes: pd.DataFrame, claims: pd.DataFrame, policy: Policy) -> JudgeStability:
    mine = claims[claims["judge"] == judge]
    votes = votes[votes["judge"] == judge]
    repeats = int(votes.groupby("claim_id").size().max())
    multi = mine[mine["flipped"].notna()]
    complete = _complete_rows(votes, ["claim_id"], "repeat", repeats)
    return JudgeStability(
        judge=judge,
        repeats=repeats,
        n_claims=len(mine),
        n_votes=len(votes),
        n_vote_errors=int(mine["n_failed"].sum()),
        flipped_share=_mean(multi["flipped"]),
        unsupported_flipped_share=_mean(multi["unsupported_flipped"]),
        mean_flip_rate=_mean(multi["flip_rate"]),
        fleiss_kappa=_r(fleiss_kappa(_counts(complete, LABELS))) if repeats > 1 else None,
        fleiss_kappa_unsupported=(
            _r(
                fleiss_kappa(
                    _counts(
                        [[str(policy.is_unsupported(Label(x))) for x in row] for row in complete], ["True", "False"]
                    )
                )
            )
            if repeats > 1
            else None
        ),
        n_claims_complete=len(complete),
    )


def _mean(values: pd.Series) -> float | None:
    values = pd.to_numeric(values.astype("float"), errors="coerce").dropna()
    return round(float(values.mean()), 6) if len(values) else None


def _complete_rows(votes: pd.DataFrame, key: list[str], rater: str, n_raters: int) -> list[list[str]]:
    """The labels of every subject rated by all ``n_raters`` raters without a failure (rater order aside)."""
    return [labels for labels, failed in _ballots(votes, tuple(key)).values() if not failed and len(labels) == n_raters]


def _panel(votes: pd.DataFrame, judges: list[str], policy: Policy) -> PanelAgreement:
    from hallumeasure.judges.votes import PanelRule, decide_label  # the same majority as the verdicts

    decided: dict[str, dict[str, str]] = {judge: {} for judge in judges}
    for (claim_id, judge), (labels, failed) in _ballots(votes, ("claim_id", "judge")).items():
        if labels:
            label = decide_label([Label(x) for x in labels], failed, PanelRule.MAJORITY, policy)
            if label is not None:
                decided[judge][claim_id] = label.value
    shared = set.intersection(*(set(d) for d in decided.values())) if decided else set()
    order = [c for c in dict.fromkeys(votes["claim_id"]) if c in shared]
    rows = [[decided[j][c] for j in judges] for c in order]
    pairs = []
    for a, b in itertools.combinations(judges, 2):
        both = [c for c in dict.fromkeys(votes["claim_id"]) if c in decided[a] and c in decided[b]]
        la, lb = [decided[a][c] for c in both], [decided[b][c] for c in both]
        ua = [policy.is_unsupported(Label(x)) for x in la]
        ub = [policy.is_unsupported(Label(x)) for x in lb]
        pairs.append(
            PairAgreement(
                a=a,
                b=b,
                n_claims=len(both),
                agreement=round(float(np.mean([x == y for x, y in zip(la, lb, strict=True)])), 6) if both else None,
                cohen_kappa=_r(cohen_kappa(la, lb)),
                cohen_kappa_unsupported=_r(cohen_kappa(ua, ub)),
            )
        )
    return PanelAgreement(
        judges=judges,
        n_claims_complete=len(rows),
        fleiss_kappa=_r(fleiss_kappa(_counts(rows, LABELS))),
        fleiss_kappa_unsupported=_r(
            fleiss_kappa(
                _counts([[str(policy.is_unsupported(Label(x))) for x in row] for row in rows], ["True", "False"])
            )
        ),
        pairs=pairs,
    )


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


# --- intervals with judge variance ------------------------------------------------------------------


def vote_rates(votes: pd.DataFrame, policy: Policy) -> pd.DataFrame:
    """One row per response and voter (judge, repeat): its unsupported rate and hallucinated flag."""
    ok = votes[votes["label"].notna() & votes["error"].isna()].copy()
    labels = ok["label"].map(Label)
    ok["evaluated"] = labels.map(policy.is_evaluated).astype(int)
    ok["unsupported"] = labels.map(policy.is_unsupported).astype(int)
    per = ok.groupby(["sample_id", "judge", "repeat"], sort=False)[["evaluated", "unsupported"]].sum().reset_index()
    per["rate"] = np.where(
        per["evaluated"] > 0, per["unsupported"] / per["evaluated"].where(per["evaluated"] > 0), np.nan
    )
    per["hallucinated"] = [
        float(policy.is_hallucinated(int(u), int(e))) if e else np.nan
        for u, e in zip(per["unsupported"], per["evaluated"], strict=True)
    ]
    return per


def judge_variance_stats(
    name: str,
    votes: pd.DataFrame,
    combined_rates: pd.Series,
    policy: Policy,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> JudgeVarianceStats:
    """The per-vote rate and hallucinated share of a group of responses, and its combined rate, with
    intervals from one bootstrap over responses (each drawn with all its votes).

    ``combined_rates``: the unsupported rate of each response's combined verdicts, indexed by sample id.
    """
    per = vote_rates(votes, policy)
    by_response = per.groupby("sample_id", sort=False)
    rate = by_response["rate"].mean()
    hallucinated = by_response["hallucinated"].mean()
    combined = pd.to_numeric(combined_rates.reindex(rate.index), errors="coerce").astype(float)
    rated = rate.notna().to_numpy()
    rng = np.random.default_rng(seed)
    values = np.column_stack([rate.to_numpy(), hallucinated.to_numpy(), combined.to_numpy()])
    draws = mean_draws(values, resamples, rng)
    estimates = []
    for column in range(values.shape[1]):
        point = np.nanmean(values[:, column]) if np.isfinite(values[:, column]).any() else None
        level = expanded_confidence(confidence, int(np.isfinite(values[:, column]).sum()))
        low, high = percentile_interval(draws[:, column], level)
        estimates.append(Estimate.of(point, low, high))
    within = by_response["rate"].var(ddof=1) / by_response["rate"].count()  # NaN with fewer than two votes
    total = float(np.nanvar(rate.to_numpy(), ddof=1)) if rated.sum() > 1 else float("nan")
    # Only repeats of one judge are noise around one expected answer; judges of a panel differ systematically.
    single_judge = votes["judge"].nunique() == 1
    share = float(np.nanmean(within)) / total if single_judge and total > 0 and within.notna().any() else None
    claims = votes.groupby("claim_id").size()
    return JudgeVarianceStats(
        name=name,
        n_responses=int(rated.sum()),
        votes_per_claim=round(float(claims.mean()), 3) if len(claims) else 0,
        per_vote_rate=estimates[0],
        per_vote_hallucinated_share=estimates[1],
        combined_rate=estimates[2],
        judge_variance_share=None if share is None else round(min(1.0, share), 6),
    )


# --- the report ---------------------------------------------------------------------------------------


def stability_report(
    votes: pd.DataFrame,
    responses: pd.DataFrame,
    policy: Policy,
    *,
    vote_settings: dict[str, Any] | None = None,
    groups: dict[str, list[str]] | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> StabilityReport | None:
    """The judge stability of a run, or None when it has one vote per claim.

    ``responses``: the run's response table (``sample_id``, ``model``, ``unsupported_rate``);
    ``groups``: name -> sample ids to give intervals for (default: all responses, then each model).
    """
    if not has_votes(votes):
        return None
    claims = claim_stability(votes, policy)
    judges = list(dict.fromkeys(votes["judge"]))
    if groups is None:
        groups = {"(all)": list(responses["sample_id"])}
        models = responses["model"].dropna()
        if models.nunique() > 1:
            groups.update({str(m): list(responses.loc[responses["model"] == m, "sample_id"]) for m in models.unique()})
    combined = responses.set_index("sample_id")["unsupported_rate"]
    settings = vote_settings or {}
    return StabilityReport(
        n_claims=int(votes["claim_id"].nunique()),
        n_votes=len(votes),
        n_vote_errors=int((votes["label"].isna() | votes["error"].notna()).sum()),
        judges=[_judge_stability(j, votes, claims, policy) for j in judges],
        panel=_panel(votes, judges, policy) if len(judges) > 1 else None,
        groups=[
            judge_variance_stats(
                name,
                votes[votes["sample_id"].isin(ids)],
                combined,
                policy,
                resamples=resamples,
                seed=seed,
                confidence=confidence,
            )
            for name, ids in groups.items()
        ],
        rule=settings.get("rule"),
        tie_rule=settings.get("tie_rule"),
        error_rule=settings.get("error_rule"),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )


def run_stability(
    run: Run,
    *,
    groups: dict[str, list[str]] | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> StabilityReport | None:
    """``stability_report`` of a loaded run (``hallumeasure.runs.run.Run``), with intervals for ``groups``
    (group name -> sample ids) too where given."""
    manifest = run.manifest
    settings = (manifest.settings.get("judge") or {}).get("votes") if manifest is not None else None
    return stability_report(
        run.votes,
        run.responses,
        run.policy,
        vote_settings=settings,
        groups=groups,
        resamples=resamples,
        seed=seed,
        confidence=confidence,
    )


def claim_votes(votes: pd.DataFrame, policy: Policy) -> pd.DataFrame | None:
    """Per claim: its vote tally (per judge for a panel) and flip rate, or None when claims have one vote each."""
    if not has_votes(votes):
        return None
    per_judge = claim_stability(votes, policy)
    panel = per_judge["judge"].nunique() > 1
    every = _ballots(votes, ("claim_id",))
    tallies: dict[str, list[str]] = {}
    for claim_id, judge, tally, failed in zip(
        *(per_judge[c].tolist() for c in ("claim_id", "judge", "votes", "n_failed")), strict=True
    ):
        tallies.setdefault(claim_id, []).append(
            (f"{judge}: " if panel else "") + (tally or "none") + (f" ({failed} failed)" if failed else "")
        )
    rows = [
        {"claim_id": claim_id, "votes": "; ".join(parts), "flip_rate": _pairs_disagreeing(every[(claim_id,)][0])}
        for claim_id, parts in tallies.items()
    ]
    return pd.DataFrame(rows, columns=["claim_id", "votes", "flip_rate"])


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def stability_lines(report: StabilityReport) -> list[str]:
    """The stability report as a few lines of plain text (``measure`` and ``show`` print them)."""
    repeats = max(j.repeats for j in report.judges)
    rule = f"{report.rule} rule" if report.rule else "votes"
    lines = [
        f"judge stability: {report.n_votes} votes on {report.n_claims} claims, {report.n_vote_errors} failed; "
        f"{repeats} repeat(s) per judge; verdicts by {rule}" + (f" ({report.tie_rule})" if report.tie_rule else "")
    ]
    for j in report.judges:
        if j.repeats > 1:
            lines.append(
                f"  {j.judge}: {_pct(j.flipped_share)} of claims flipped between repeats "
                f"({_pct(j.unsupported_flipped_share)} between supported and unsupported); mean flip rate "
                f"{_num(j.mean_flip_rate)}; Fleiss' kappa {_num(j.fleiss_kappa)} (labels), "
                f"{_num(j.fleiss_kappa_unsupported)} (unsupported or not) over {j.n_claims_complete} "
                f"claims with every repeat answered"
            )
    if report.panel is not None:
        p = report.panel
        lines.append(
            f"  panel agreement: Fleiss' kappa {_num(p.fleiss_kappa)} (labels), "
            f"{_num(p.fleiss_kappa_unsupported)} (unsupported or not) over {p.n_claims_complete} claims"
        )
        for pair in p.pairs:
            lines.append(
                f"    {pair.a} vs {pair.b}: Cohen's kappa {_num(pair.cohen_kappa)}, agreement "
                f"{_pct(pair.agreement)} on {pair.n_claims} claims"
            )
    percent = round(report.confidence * 100)
    lines.append(f"rates with judge variance ({percent}% CI, {report.interval_method}):")
    call = "one judge call" if report.panel is None else "one call of a judge drawn from the panel"
    for g in report.groups:
        share = (
            ""
            if g.judge_variance_share is None
            else f"; repeats disagreeing make {_pct(g.judge_variance_share)} of its variance"
        )
        lines.append(
            f"  {g.name}: {call}: unsupported rate {g.per_vote_rate.format()}, hallucinated share "
            f"{g.per_vote_hallucinated_share.format()}{share}; combined verdicts {g.combined_rate.format()}"
        )
    return lines


class RunStability(BaseModel):
    """One run's judge stability, as the comparison report shows it."""

    run: str
    stability: StabilityReport


def runs_stability(
    runs: Sequence[Run],
    groups: Sequence[Group],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> list[RunStability]:
    """The stability of each run (``runs.run.Run``) that has repeats or a panel, with intervals
    for the report's model groups (``report.runs.Group``) of that run."""
    out = []
    for run in runs:
        mine = {g.name: g.units["sample_id"].tolist() for g in groups if g.run == run.name}
        report = run_stability(run, groups=mine, resamples=resamples, seed=seed, confidence=confidence)
        if report is not None:
            out.append(RunStability(run=run.name, stability=report))
    return out
