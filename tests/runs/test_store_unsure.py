"""The store keeps ``confident`` on verdicts and ``decided`` with the rate bounds on results; older runs still load."""

import sqlite3

import pytest
from testdata import EXAMPLES
from unsure_judge import UnsureJudge

from hallumeasure.core.types import Mode
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.run import load_run
from hallumeasure.runs.store import RunStore


def _every_second(claim, verdict):
    return claim.index % 2 == 1


def _measure(out, unsure=_every_second, **kwargs):
    samples = load_samples(EXAMPLES).samples
    judge = UnsureJudge(OfflineJudge(), unsure)
    return run_measurement(samples, out, OfflineExtractor(), judge, mode=Mode.COT_ALL, input_sha256="x" * 64, **kwargs)


def test_confident_decided_and_bounds_round_trip(tmp_path):
    _, results = _measure(tmp_path / "run")
    assert any(not v.confident for r in results for v in r.verdicts)
    with RunStore(tmp_path / "run") as store:
        loaded = store.results()
    for before, after in zip(results, loaded, strict=True):
        assert [v.confident for v in after.verdicts] == [v.confident for v in before.verdicts]
        assert after.decided == before.decided
        assert after.unsupported_rate_low == before.unsupported_rate_low
        assert after.unsupported_rate_high == before.unsupported_rate_high
    assert {r.decided for r in results if r.hallucinated is not None} == {True, False}


def test_loaded_frames_carry_the_new_columns(tmp_path):
    _, results = _measure(tmp_path / "run")
    data = load_run(tmp_path / "run")
    unsure = {v.claim_id for r in results for v in r.verdicts if not v.confident}
    assert set(data.claims.loc[~data.claims["confident"], "claim_id"]) == unsure
    by_id = {r.sample_id: r for r in results}
    for row in data.responses.to_dict(orient="records"):
        r = by_id[row["sample_id"]]
        assert row["decided"] == r.decided
        assert row["unsupported_rate_low"] == pytest.approx(r.unsupported_rate_low)
        assert row["unsupported_rate_high"] == pytest.approx(r.unsupported_rate_high)
    everything = data.summary.set_index("model").loc["(all)"]
    assert everything["n_unsure_claims"] == len(unsure)
    flagged = [r for r in results if r.hallucinated is not None]
    assert everything["decided_share"] == pytest.approx(sum(bool(r.decided) for r in flagged) / len(flagged))
    assert everything["mean_unsupported_rate_low"] <= everything["mean_unsupported_rate"]
    assert everything["mean_unsupported_rate"] <= everything["mean_unsupported_rate_high"]


def _make_old(path):
    """Turn a run into one written before the new columns existed."""
    db = sqlite3.connect(path / "run.sqlite")
    for table, column in (
        ("verdicts", "confident"),
        ("results", "decided"),
        ("results", "unsupported_rate_low"),
        ("results", "unsupported_rate_high"),
        ("results", "error_kind"),
    ):
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.commit()
    db.close()


def test_a_run_written_before_the_columns_loads_as_confident(tmp_path):
    _measure(tmp_path / "run", unsure=lambda c, v: False)
    _make_old(tmp_path / "run")
    data = load_run(tmp_path / "run")
    assert data.claims["confident"].dropna().all()
    flagged = data.responses["hallucinated"].notna()
    assert data.responses.loc[flagged, "decided"].all()
    rated = data.responses["unsupported_rate"].notna()
    assert (data.responses.loc[rated, "unsupported_rate_low"] == data.responses.loc[rated, "unsupported_rate"]).all()
    assert data.summary["decided_share"].eq(1.0).all()
    assert data.summary["n_unsure_claims"].eq(0).all()


def test_resuming_an_older_run_adds_the_columns(tmp_path):
    samples = load_samples(EXAMPLES).samples
    judge = UnsureJudge(OfflineJudge(), _every_second)
    run_measurement(samples[:2], tmp_path / "run", OfflineExtractor(), judge, mode=Mode.COT_ALL, input_sha256="x" * 64)
    _make_old(tmp_path / "run")
    # the same run, asked for more samples: the stored ones stay, the new ones are written with the new columns
    with RunStore(tmp_path / "run", write=True) as store:
        assert store._has_column("verdicts", "confident") and store._has_column("results", "decided")
        stored = store.results()
        store.write_result(stored[0])
    db = sqlite3.connect(tmp_path / "run" / "run.sqlite")
    stored_flags = dict(db.execute("SELECT sample_id, decided FROM results"))
    confident = [
        row[0] for row in db.execute("SELECT confident FROM verdicts WHERE sample_id = ?", (stored[0].sample_id,))
    ]
    db.close()
    assert stored_flags[stored[0].sample_id] is not None and stored_flags[stored[1].sample_id] is None
    assert confident and None not in confident
    # the row without a stored decision gets it worked out on reading
    data = load_run(tmp_path / "run")
    assert data.responses["decided"].head(2).notna().all()


def test_the_words_a_verdict_finds_wrong_round_trip(tmp_path):
    _, results = _measure(tmp_path / "run", unsure=lambda claim, verdict: False)
    assert any(v.focus for r in results for v in r.verdicts)
    with RunStore(tmp_path / "run") as store:
        loaded = store.results()
    for before, after in zip(results, loaded, strict=True):
        assert [v.focus for v in after.verdicts] == [v.focus for v in before.verdicts]
