"""A run larger than the page: the viewer shows a sample picked by a hash of the ids, the same every time, and
says so."""

from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.sampling import hash_share
from hallumeasure.report.runs import load_runs
from hallumeasure.report.viewer import build_viewer_data
from hallumeasure.testing.large_runs import write_large_run


def test_a_sampled_page_shows_the_ids_a_hash_picks_in_input_order_and_says_so(tmp_path):
    run = write_large_run(tmp_path / "big", 300)
    data = build_viewer_data(load_runs([run]), max_responses=20, sampled=True)
    shown = [r.sample_id for r in data.responses]
    order = sorted((f"s{i}" for i in range(300)), key=hash_share)
    picked = order[:20]
    assert set(shown) == set(picked) and shown == sorted(shown, key=lambda s: int(s[1:]))
    assert shown != [f"s{i}" for i in range(20)]  # not the first ones
    assert "Showing a sample of 20 of 300 responses" in data.notes[0] and "hash" in data.notes[0]
    # the next page goes on in the hash order, and a run over the same ids shows the same samples side by side
    following = build_viewer_data(load_runs([run]), max_responses=20, sampled=True, skip=20)
    assert {r.sample_id for r in following.responses} == set(
        sorted((f"s{i}" for i in range(300)), key=hash_share)[20:40]
    )
    other = write_large_run(tmp_path / "other", 300, rise=0.2, salt=1)
    both = build_viewer_data(load_runs([run, other]), max_responses=40, sampled=True)
    assert [r.sample_id for r in both.responses if r.run == 0] == [r.sample_id for r in both.responses if r.run == 1]
    assert {r.sample_id for r in both.responses} == set(picked)


def test_view_sample_writes_the_note_on_the_page(tmp_path):
    run = write_large_run(tmp_path / "big", 120)
    out = tmp_path / "view.html"
    result = CliRunner().invoke(app, ["view", str(run), "--out", str(out), "--max-responses", "10", "--sample"])
    assert result.exit_code == 0, result.output
    assert "Showing a sample of 10 of 120 responses" in out.read_text(encoding="utf-8")
    assert "--sample --skip 10" in result.output
