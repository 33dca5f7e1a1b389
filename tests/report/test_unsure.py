"""Rate bounds, decided share and the covering interval of groups with unsure claims (report/unsure.py, compare)."""

import numpy as np
import pandas as pd
import pytest
from testdata import EXAMPLES
from unsure_judge import UnsureJudge

from hallumeasure.core.types import Mode
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.report.compare import compare_runs
from hallumeasure.report.runs import load_runs, response_units
from hallumeasure.report.unsure import group_unsure_stats, run_unsure_stats, unsure_stats
from hallumeasure.runs.inputs import load_samples
from hallumeasure.stats.groups import group_stats


def _run(out, unsure):
    samples = load_samples(EXAMPLES).samples
    run_measurement(
        samples, out, OfflineExtractor(), UnsureJudge(OfflineJudge(), unsure), mode=Mode.COT_ALL, input_sha256="x" * 64
    )
    return out


@pytest.fixture(scope="module")
def unsure_run(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("unsure") / "run", lambda c, v: c.index % 2 == 1)


def test_same_resamples_as_the_group_statistics(unsure_run):
    """The rate, and each bound taken as a rate, get exactly the intervals that group_stats gives them."""
    run = load_runs([unsure_run])[0]
    units = response_units(run)
    u = group_unsure_stats(run.responses, run.claims, run.name, resamples=500, seed=3)
    assert u is not None
    stats = group_stats(units, run.name, resamples=500, seed=3)
    low_units = units.assign(rate=run.responses["unsupported_rate_low"].to_numpy())
    high_units = units.assign(rate=run.responses["unsupported_rate_high"].to_numpy())
    assert u.rate_low == group_stats(low_units, "x", resamples=500, seed=3).mean_unsupported_rate
    assert u.rate_high == group_stats(high_units, "x", resamples=500, seed=3).mean_unsupported_rate
    rate = stats.mean_unsupported_rate
    assert u.covering == (u.rate_low.low, u.rate_high.high)
    assert u.covering[0] <= rate.low and u.covering[1] >= rate.high
    assert u.rate_low.value < rate.value < u.rate_high.value
    flagged = run.responses["hallucinated"].notna()
    assert u.decided_share.value == pytest.approx(run.responses.loc[flagged, "decided"].mean())


def test_no_unsure_claims_means_no_unsure_stats(tmp_path):
    run_dir = _run(tmp_path / "run", lambda c, v: False)
    run = load_runs([run_dir])[0]
    assert run_unsure_stats(run.responses, run.claims) == []
    assert group_unsure_stats(run.responses, run.claims, "r") is None


def test_covering_interval_keeps_its_coverage_whatever_the_unsure_claims_are():
    """Simulation with known truth: every claim is unsupported with probability 0.2, so the mean rate is 0.2.

    A third of the claims are unsure and their best guess is a coin flip. The covering interval must
    hold 0.2 at least as often as a 95% interval should, although the best guesses are noise.
    """
    rng = np.random.default_rng(11)
    hits, sims, n, k = 0, 200, 40, 5
    for _ in range(sims):
        truth = rng.random((n, k)) < 0.2
        unsure = rng.random((n, k)) < 1 / 3
        guess = np.where(unsure, rng.random((n, k)) < 0.5, truth)
        sure_bad = (truth & ~unsure).sum(axis=1)
        frame = pd.DataFrame(
            {
                "unsupported_rate": guess.mean(axis=1),
                "unsupported_rate_low": sure_bad / k,
                "unsupported_rate_high": (sure_bad + unsure.sum(axis=1)) / k,
                "hallucinated": guess.any(axis=1),
                "decided": (sure_bad > 0) | (unsure.sum(axis=1) == 0),
            }
        )
        u = unsure_stats(frame, "sim", n * k, int(unsure.sum()), resamples=400, seed=int(rng.integers(1 << 30)))
        hits += u.covering[0] <= 0.2 <= u.covering[1]
    assert hits / sims >= 0.95


def test_compare_reports_decided_share_beside_the_rate(unsure_run, tmp_path):
    report = compare_runs([unsure_run], tmp_path / "out", resamples=200)
    assert {u.name for u in report.unsure} == {"model-a", "model-b"}
    run = load_runs([unsure_run])[0]
    units = response_units(run)
    by_name = {u.name: u for u in report.unsure}
    for s in report.model_stats:
        # the rate keeps its own interval; the covering interval is shown beside it, labelled
        own = group_stats(units[units["model"] == s.name].reset_index(drop=True), s.name, resamples=200)
        assert s.mean_unsupported_rate == own.mean_unsupported_rate
        assert by_name[s.name].covering[0] <= own.mean_unsupported_rate.low
    markdown = (tmp_path / "out" / "report.md").read_text()
    html = (tmp_path / "out" / "report.html").read_text()
    for u in report.unsure:
        note = (
            f"(unsure-claim bounds {u.rate_low.value:.3f}-{u.rate_high.value:.3f}, 95% CI covering them "
            f"[{u.covering[0]:.3f}, {u.covering[1]:.3f}], {u.decided_share.value:.0%} decided)"
        )
        assert note in markdown and note in html
        assert f"{u.name}: {u.n_unsure_claims} of {u.n_claims} claims unsure" in markdown
    assert report.run_unsure and report.run_unsure[0].n_unsure_claims == sum(u.n_unsure_claims for u in report.unsure)


def test_compare_of_confident_runs_says_nothing_new(tmp_path):
    run_dir = _run(tmp_path / "run", lambda c, v: False)
    report = compare_runs([run_dir], tmp_path / "out", resamples=200)
    assert report.unsure == [] and report.run_unsure == []
    markdown = (tmp_path / "out" / "report.md").read_text()
    # Nothing of the unsure summary (the judge's own reasons in the examples may say "unsure: ...").
    assert "claims unsure" not in markdown and "decided" not in markdown and "every unsure claim" not in markdown
