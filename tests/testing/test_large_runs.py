"""Synthetic large runs: each stored result is what summarising its own claims and verdicts gives."""

from hallumeasure.core.aggregate import summarise_response
from hallumeasure.runs.run import Run
from hallumeasure.testing.large_runs import write_large_run


def test_each_synthetic_result_is_the_summary_of_its_claims(tmp_path):
    run = Run.load(write_large_run(tmp_path / "run", 400, unsupported_share=0.3))
    assert run.manifest is not None and run.manifest.status == "complete" and len(run.results) == 400
    for sample, stored in zip(run.samples, run.results, strict=True):
        again = summarise_response(sample, stored.claims, stored.verdicts, run.policy)
        for field in ("n_claims", "n_unsupported", "unsupported_rate", "hallucinated", "label_counts", "decided"):
            assert getattr(stored, field) == getattr(again, field), (sample.id, field)
    assert 0.2 < run.responses["unsupported_rate"].mean() < 0.4


def test_a_rise_and_changed_responses_show_in_the_second_run(tmp_path):
    base = Run.load(write_large_run(tmp_path / "base", 2000))
    cur = Run.load(write_large_run(tmp_path / "cur", 2000, rise=0.2, changed=0.5, salt=1))
    assert [s.id for s in base.samples] == [s.id for s in cur.samples]
    rise = cur.responses["unsupported_rate"].mean() - base.responses["unsupported_rate"].mean()
    assert 0.15 < rise < 0.25
    moved = sum(a.response != b.response for a, b in zip(base.samples, cur.samples, strict=True))
    assert 900 < moved < 1100
