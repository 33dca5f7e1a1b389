"""hallumeasure.measure / ameasure: inputs of every kind, settings validated as the CLI does, loop safety, cache."""

from __future__ import annotations

import asyncio
import json
import sys

import pandas as pd
import pytest
from testdata import REPO

import hallumeasure
from hallumeasure.core.errors import ConfigError, InputError, RunStoreError
from hallumeasure.testing import AnthropicServer

EXAMPLES = REPO / "examples" / "samples.jsonl"
ROWS = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()][:4]


def _outcome(run: hallumeasure.Run) -> list[tuple]:
    return [
        (r.sample_id, r.n_claims, r.n_unsupported, r.unsupported_rate) for r in run.responses.itertuples(index=False)
    ]


def test_a_file_a_dataframe_records_and_samples_measure_alike(tmp_path):
    from_file = hallumeasure.measure(EXAMPLES, out=tmp_path / "file")
    assert len(from_file.responses) == 16 and from_file.manifest.status == "complete"
    head = [r["id"] for r in ROWS]
    frame = hallumeasure.measure(pd.DataFrame(ROWS), out=tmp_path / "frame")
    records = hallumeasure.measure(ROWS, out=tmp_path / "records")
    samples = hallumeasure.measure(hallumeasure.load_samples(EXAMPLES).samples[:4], out=tmp_path / "samples")
    expected = [x for x in _outcome(from_file) if x[0] in head]
    assert _outcome(frame) == _outcome(records) == _outcome(samples) == expected
    assert frame.manifest.input_path == "<DataFrame of 4 rows>"
    # the same data hashes the same, so it can resume its own run; other data cannot
    assert hallumeasure.measure(pd.DataFrame(ROWS), out=tmp_path / "frame", resume=True).manifest.status == "complete"
    with pytest.raises(RunStoreError, match="different input_sha256"):
        hallumeasure.measure(pd.DataFrame(ROWS[:3]), out=tmp_path / "frame", resume=True)


def test_dataframe_rows_that_cannot_be_read_are_reported_not_dropped(tmp_path):
    rows = [*ROWS[:2], {"id": "bad", "response": "no source"}]
    with pytest.warns(UserWarning, match="1 input row"):
        run = hallumeasure.measure(pd.DataFrame(rows), out=tmp_path / "run")
    assert len(run.responses) == 2
    assert run.skipped["sample_id"].tolist() == ["bad"] and "context" in run.skipped["message"][0]
    assert "input.jsonl" not in run.skipped["message"][0]  # the temporary file is not named
    with pytest.raises(InputError, match="bad"):
        hallumeasure.measure(pd.DataFrame(rows), out=tmp_path / "strict", strict_input=True)


def test_other_inputs_are_refused_with_a_reason(tmp_path):
    with pytest.raises(InputError, match="wrap one dict"):
        hallumeasure.measure(ROWS[0], out=tmp_path / "a")
    with pytest.raises(InputError, match="list of int"):
        hallumeasure.measure([1, 2], out=tmp_path / "b")
    with pytest.raises(InputError, match="empty"):
        hallumeasure.measure([], out=tmp_path / "c")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"repeats": 3}, "repeats 3: the offline judge is deterministic"),
        ({"mode": "fast"}, "mode must be one of"),
        ({"flag_threshold": 0.3}, "flag_threshold is for detector cascade only"),
        ({"unsupported_labels": "wrong"}, "unsupported_labels takes a comma-separated list"),
        ({"colour": "red"}, "unknown setting"),
    ],
)
def test_settings_are_validated_like_the_command_line(tmp_path, settings, message):
    with pytest.raises(ConfigError, match=message):
        hallumeasure.measure(ROWS, out=tmp_path / "run", **settings)
    assert not (tmp_path / "run").exists()


def test_a_settings_file_is_read_and_keywords_win(tmp_path):
    config = tmp_path / "hallumeasure.toml"
    config.write_text('unsupported_labels = "contradicted"\nmin_unsupported_claims = 2\n')
    run = hallumeasure.measure(ROWS, out=tmp_path / "run", config=config, min_unsupported_claims=1)
    assert run.manifest.policy.unsupported_labels == frozenset({hallumeasure.Label.CONTRADICTED})
    assert run.manifest.policy.min_unsupported_claims == 1
    config.write_text("repeats = 2\n")
    with pytest.raises(ConfigError, match=f"repeats in {config}"):
        hallumeasure.measure(ROWS, out=tmp_path / "again", config=config)


def test_a_settings_model_sits_between_the_file_and_the_keywords(tmp_path):
    config = tmp_path / "hallumeasure.toml"
    config.write_text('unsupported_labels = "contradicted"\nmin_unsupported_claims = 3\n')
    settings = hallumeasure.MeasureSettings(min_unsupported_claims=2, concurrency=1)
    run = hallumeasure.measure(ROWS, out=tmp_path / "run", config=config, settings=settings, concurrency=2)
    policy, effective = run.manifest.policy, run.manifest.settings["effective"]
    assert policy.unsupported_labels == frozenset({hallumeasure.Label.CONTRADICTED})  # the file's
    assert policy.min_unsupported_claims == 2  # the model's, over the file's
    assert effective["concurrency"] == 2  # the keyword's, over the model's


def test_an_existing_run_needs_resume_or_overwrite(tmp_path):
    hallumeasure.measure(ROWS, out=tmp_path / "run")
    with pytest.raises(RunStoreError, match="already holds a run"):
        hallumeasure.measure(ROWS, out=tmp_path / "run")
    assert len(hallumeasure.measure(ROWS, out=tmp_path / "run", resume=True).responses) == 4
    assert len(hallumeasure.measure(ROWS[:1], out=tmp_path / "run", overwrite=True).responses) == 1


def test_measure_works_inside_a_running_event_loop_without_patching_it(tmp_path):
    original = asyncio.BaseEventLoop.run_until_complete

    async def in_a_notebook_cell():
        loop = asyncio.get_running_loop()
        run = hallumeasure.measure(ROWS, out=tmp_path / "run")
        assert asyncio.get_running_loop() is loop and type(loop).run_until_complete is original
        return run

    run = asyncio.run(in_a_notebook_cell())
    assert len(run.responses) == 4
    assert "nest_asyncio" not in sys.modules


def test_ameasure_leaves_the_callers_loop_free(tmp_path):
    async def app():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.005)

        task = asyncio.create_task(ticker())
        run = await hallumeasure.ameasure(EXAMPLES, out=tmp_path / "run")
        task.cancel()
        return run, ticks

    run, ticks = asyncio.run(app())
    assert len(run.responses) == 16 and ticks > 3  # the loop kept serving while the run went on


def test_without_out_the_run_goes_under_the_cache_and_the_request_cache_applies(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-dummy-key")
    with AnthropicServer() as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        first = hallumeasure.measure(ROWS[:2], judge="anthropic:claude-sim", extractor="anthropic:claude-sim")
        paid = len(srv.requests)
        second = hallumeasure.measure(ROWS[:2], judge="anthropic:claude-sim", extractor="anthropic:claude-sim")
        assert paid > 0 and len(srv.requests) == paid  # the second run came from the request cache
    runs = tmp_path / "cache" / "runs"
    assert first.path.parent == second.path.parent == runs and first.path != second.path
    assert _outcome(first) == _outcome(second) and first.judge == "anthropic:claude-sim"


def test_skipped_rows_are_said_by_a_warning_the_repr_and_show(tmp_path):
    """Issue #38: a file with bad rows warns as the CLI prints; the repr and 'show' say it too."""
    from typer.testing import CliRunner

    from hallumeasure.api.measure import SkippedRowsWarning
    from hallumeasure.cli import app

    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()[:4]
    data = tmp_path / "dup.jsonl"
    data.write_text("\n".join([*lines, lines[0], json.dumps({"id": "x", "response": "r"})]) + "\n", encoding="utf-8")
    with pytest.warns(SkippedRowsWarning) as caught:
        run = hallumeasure.measure(data, out=tmp_path / "run")
    (warning,) = caught
    assert warning.filename == __file__  # points at the caller's line, not the library's
    assert "2 input row(s) of" in str(warning.message) and "row 5" in str(warning.message)
    assert "row 6 (id x): has no context" in str(warning.message) and "run.skipped" in str(warning.message)
    assert len(run.skipped) == 2 and "4 responses" in repr(run) and "2 input rows skipped" in repr(run)
    shown = CliRunner().invoke(app, ["show", str(tmp_path / "run")])
    assert shown.exit_code == 0, shown.output
    assert "2 input row(s) skipped when this run was measured" in shown.output and "row 6 (id x)" in shown.output
    listed = CliRunner().invoke(app, ["show", str(tmp_path / "run"), "--json"])
    assert [r["row"] for r in json.loads(listed.output)["skipped"]] == [5, 6]


def test_the_api_column_error_names_the_api_argument_not_the_cli_flag(tmp_path):
    data = tmp_path / "answers.csv"
    data.write_text("id,context,answer\na,The sky is blue.,The sky is blue.\n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        hallumeasure.measure(data, out=tmp_path / "run")
    assert "columns={'response': 'answer'}" in str(raised.value) and "--column" not in str(raised.value)
    records = [{"id": "a", "context": "c", "answer": "r"}]
    with pytest.raises(InputError) as raised:
        hallumeasure.measure(records, out=tmp_path / "run2")
    assert "columns=" in str(raised.value) and "--column" not in str(raised.value)
