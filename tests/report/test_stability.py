"""Judge stability statistics against reference implementations (statsmodels, scikit-learn) and hand cases."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from hallumeasure.core.labels import Policy
from hallumeasure.report.stability import (
    StabilityReport,
    claim_stability,
    claim_votes,
    cohen_kappa,
    fleiss_kappa,
    judge_variance_stats,
    stability_lines,
    stability_report,
)

LABELS = ["supported", "absent", "contradicted", "partially_supported", "unevaluatable"]


@pytest.mark.parametrize("seed", range(6))
def test_fleiss_kappa_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    raters = int(rng.integers(2, 7))
    # Subjects with a preferred category, so that kappa is far from 0 in some cases.
    table = np.stack([rng.multinomial(raters, rng.dirichlet(np.full(5, 0.3 + seed * 0.5))) for _ in range(40)])
    assert fleiss_kappa(table) == pytest.approx(statsmodels_fleiss(table, method="fleiss"), abs=1e-12)


def test_fleiss_kappa_fixed_case_and_undefined_cases():
    # Fleiss (1971)-style small table: 4 subjects, 3 raters, 2 categories.
    table = np.array([[3, 0], [0, 3], [2, 1], [1, 2]])
    assert fleiss_kappa(table) == pytest.approx(statsmodels_fleiss(table), abs=1e-12)
    assert fleiss_kappa(np.array([[3, 0], [3, 0]])) is None  # one category only: undefined
    assert fleiss_kappa(np.array([[1, 0], [0, 1]])) is None  # one rater
    with pytest.raises(ValueError, match="same number of ratings"):
        fleiss_kappa(np.array([[2, 0], [1, 0]]))


@pytest.mark.parametrize("seed", range(4))
def test_cohen_kappa_matches_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    a = rng.choice(LABELS, 60)
    b = np.where(rng.random(60) < 0.6, a, rng.choice(LABELS, 60))
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert cohen_kappa([True, False, True], [True, True, True]) == pytest.approx(
        cohen_kappa_score([True, False, True], [True, True, True])
    )


def _votes(rows):
    """rows: (sample, claim, judge, repeat, label or None)."""
    return pd.DataFrame(
        [
            {
                "sample_id": s,
                "model": m,
                "claim_id": c,
                "judge": j,
                "repeat": k,
                "label": label,
                "error": None if label else "failed",
            }
            for s, m, c, j, k, label in rows
        ]
    )


def test_flip_rates_by_hand():
    votes = _votes(
        [
            ("s1", "m", "a", "j", 0, "supported"),
            ("s1", "m", "a", "j", 1, "supported"),
            ("s1", "m", "a", "j", 2, "supported"),
            ("s1", "m", "b", "j", 0, "supported"),
            ("s1", "m", "b", "j", 1, "absent"),
            ("s1", "m", "b", "j", 2, "supported"),
            ("s2", "m", "c", "j", 0, "absent"),
            ("s2", "m", "c", "j", 1, "contradicted"),
            ("s2", "m", "c", "j", 2, None),
        ]
    )
    claims = claim_stability(votes, Policy()).set_index("claim_id")
    assert claims.loc["a", "flip_rate"] == 0 and not claims.loc["a", "flipped"]
    assert claims.loc["b", "flip_rate"] == pytest.approx(2 / 3)  # 2 of the 3 pairs disagree
    assert claims.loc["b", "unsupported_flipped"]
    assert claims.loc["c", "flip_rate"] == 1.0 and not claims.loc["c", "unsupported_flipped"]
    assert claims.loc["c", "n_failed"] == 1
    report = stability_report(
        votes, pd.DataFrame({"sample_id": ["s1", "s2"], "model": ["m", "m"], "unsupported_rate": [0.0, 1.0]}), Policy()
    )
    (judge,) = report.judges
    assert judge.flipped_share == pytest.approx(2 / 3) and judge.unsupported_flipped_share == pytest.approx(1 / 3)
    assert judge.n_vote_errors == 1 and report.n_vote_errors == 1
    assert judge.n_claims_complete == 2  # claim c lost a vote, so the kappas use a and b
    table = np.array([[3, 0], [2, 1]])  # a: 3 supported; b: 2 supported, 1 absent (categories that occur)
    assert judge.fleiss_kappa == pytest.approx(statsmodels_fleiss(table), abs=1e-6)
    tally = claim_votes(votes, Policy()).set_index("claim_id")
    assert tally.loc["b", "votes"] == "supported 2, absent 1"
    assert tally.loc["c", "votes"] == "absent 1, contradicted 1 (1 failed)"
    StabilityReport.model_validate_json(report.model_dump_json())
    assert any("flipped between repeats" in line for line in stability_lines(report))


def test_one_vote_per_claim_has_no_stability_to_report():
    votes = _votes([("s1", "m", "a", "j", 0, "supported"), ("s1", "m", "b", "j", 0, "absent")])
    assert (
        stability_report(
            votes, pd.DataFrame({"sample_id": ["s1"], "model": ["m"], "unsupported_rate": [0.5]}), Policy()
        )
        is None
    )
    assert claim_votes(votes, Policy()) is None


def test_panel_agreement_pairs_judges_on_their_majority():
    rows = []
    for i, (x, y) in enumerate(
        [
            ("supported", "supported"),
            ("absent", "absent"),
            ("absent", "supported"),
            ("supported", "supported"),
            ("contradicted", "absent"),
        ]
    ):
        rows += [("s", "m", f"c{i}", "A", 0, x), ("s", "m", f"c{i}", "B", 0, y)]
    votes = _votes(rows)
    report = stability_report(
        votes, pd.DataFrame({"sample_id": ["s"], "model": ["m"], "unsupported_rate": [0.4]}), Policy()
    )
    (pair,) = report.panel.pairs
    a = ["supported", "absent", "absent", "supported", "contradicted"]
    b = ["supported", "absent", "supported", "supported", "absent"]
    assert pair.cohen_kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-6)
    assert pair.agreement == pytest.approx(3 / 5)
    unsupported = [x != "supported" for x in a], [y != "supported" for y in b]
    assert pair.cohen_kappa_unsupported == pytest.approx(cohen_kappa_score(*unsupported), abs=1e-6)
    table = np.array([[(r == lab) + (s == lab) for lab in LABELS] for r, s in zip(a, b, strict=True)])
    assert report.panel.fleiss_kappa == pytest.approx(statsmodels_fleiss(table), abs=1e-6)
    assert all(g.judge_variance_share is None for g in report.groups)  # judges differ systematically, not by noise


def test_judge_variance_interval_holds_the_judges_noise():
    rng = np.random.default_rng(3)
    rows, combined = [], {}
    for s in range(80):
        q = rng.uniform(0.1, 0.9, 4)  # four claims, each called unsupported with its own probability
        says = rng.random((3, 4)) < q
        for k in range(3):
            rows += [(f"s{s}", "m", f"s{s}c{c}", "j", k, "absent" if says[k, c] else "supported") for c in range(4)]
        combined[f"s{s}"] = float((says.sum(axis=0) >= 2).mean())
    votes = _votes(rows)
    stats = judge_variance_stats("m", votes, pd.Series(combined), Policy(), resamples=500, seed=1)
    per_response = votes.assign(u=votes["label"] == "absent").groupby("sample_id")["u"].mean()
    assert stats.per_vote_rate.value == pytest.approx(per_response.mean(), abs=1e-6)
    assert stats.per_vote_rate.low < stats.per_vote_rate.value < stats.per_vote_rate.high
    assert stats.combined_rate.value == pytest.approx(np.mean(list(combined.values())), abs=1e-6)
    # Here every response's claims are a coin toss of their own: most of the variance is the judge's.
    assert 0.3 < stats.judge_variance_share <= 1.0
    assert stats.n_responses == 80 and stats.votes_per_claim == 3
