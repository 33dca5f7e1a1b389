"""Work limits per response: a response over --max-response-chars or --max-claims is an error row that says
which limit, how big the response was and how to raise it; nothing is judged for it, and nothing is lost."""

import asyncio
import json
import sqlite3

import pytest
from testdata import EXAMPLES
from typer.testing import CliRunner

import hallumeasure
from hallumeasure.cli import app
from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import ErrorKind, Mode, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.limits import WorkLimits, claim_units, response_units, source_units
from hallumeasure.pipeline.measurement import measure_settings
from hallumeasure.pipeline.run import measure_samples

CONTEXT = "The bridge is 24 km long. It opened in 2019. The mayor praised the builders."
SHORT = Sample(id="short", context=CONTEXT, response="The bridge is 24 km long. It opened in 2019.")
#: 3,001 characters: over a limit of 3,000, and a few dozen claims.
LONG = Sample(id="long", context=CONTEXT, response=("The bridge opened in 2019. " * 112)[:3001])


def _fake_run(samples, limits):
    api = FakeAPI()
    model = Model(api)
    results = asyncio.run(
        measure_samples(
            samples, LLMExtractor(model), LLMJudge(model, Mode.COT_ONE), Policy(), limits=limits, concurrency=1
        )
    )
    return {r.sample_id: r for r in results}, api


def test_a_response_over_the_character_limit_is_an_error_row_and_costs_no_call():
    results, api = _fake_run([LONG], WorkLimits(max_response_chars=3_000))
    row = results["long"]
    assert api.calls == 0 and row.claims == [] and row.hallucinated is None
    assert row.error_kind is ErrorKind.OVER_LIMIT
    assert row.error == (
        "not judged: 3,001 characters in the response, over the limit of 3,000 (max_response_chars). "
        "Raise it to measure it: --max-response-chars 3001 (command line), max_response_chars=3001 "
        "(Python, hallumeasure.toml); 0: no limit"
    )


def test_a_response_over_the_claim_limit_is_an_error_row_before_any_judge_call():
    results, api = _fake_run([SHORT, LONG], WorkLimits(max_claims=5))
    row = results["long"]
    assert row.error is not None and row.claims == [] and row.error_kind is ErrorKind.OVER_LIMIT
    assert "claims extracted from the response, over the limit of 5 (max_claims)" in row.error
    assert "--max-claims" in row.error and "max_claims=" in row.error
    n_extracted = int(row.error.split("not judged: ", 1)[1].split(" ", 1)[0].replace(",", ""))
    assert n_extracted > 5 and f"--max-claims {n_extracted} " in row.error
    # only the two extractions and the short response's claims were asked; the extraction's cost is kept
    assert api.calls == 2 + results["short"].n_claims
    assert row.usage.input_tokens > 0
    assert results["short"].error is None and results["short"].n_claims == 2


def test_zero_or_none_lifts_a_limit():
    for limits in (WorkLimits(max_response_chars=0, max_claims=0), WorkLimits(None, None)):
        results, _ = _fake_run([LONG], limits)
        assert results["long"].error is None and results["long"].n_claims > 5
    assert measure_settings({"max_claims": None, "max_response_chars": None}).max_claims == 0
    assert measure_settings({}).max_response_chars == 100_000 and measure_settings({}).max_claims == 2_000
    with pytest.raises(ConfigError, match="max_claims"):
        measure_settings({"max_claims": -1})


def test_a_run_keeps_the_over_limit_response_with_its_error_and_records_the_limits(tmp_path):
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()[:2]]
    rows.append(dict(rows[0], id="huge", response=rows[0]["response"] * 20))
    run = hallumeasure.measure(rows, out=tmp_path / "run", max_response_chars=2_000)
    assert run.responses["sample_id"].tolist() == [r["id"] for r in rows]  # nothing lost
    huge = run.responses.set_index("sample_id").loc["huge"]
    assert "over the limit of 2,000 (max_response_chars)" in huge["error"]
    assert run.manifest.counts["error_responses"] == 1
    effective = run.manifest.settings["effective"]
    assert (effective["max_response_chars"], effective["max_claims"]) == (2_000, 2_000)


def test_check_answers_an_over_limit_response_with_its_error():
    result = hallumeasure.check(LONG.response, context=CONTEXT, max_claims=3)
    assert result.claims == [] and "(max_claims)" in result.error and not result.grounded
    assert hallumeasure.check(SHORT.response, context=CONTEXT, max_claims=3).error is None


def test_the_command_line_names_the_option_and_the_settings_file_takes_the_key(tmp_path):
    runner = CliRunner()
    help_text = runner.invoke(app, ["measure", "-h"]).output
    assert "--max-response-chars" in help_text and "--max-claims" in help_text
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "a"), "--max-claims", "2"])
    assert result.exit_code == 3, result.output  # error rows: the run is incomplete
    assert "(max_claims). Raise it to measure it: --max-claims" in result.output
    config = tmp_path / "hallumeasure.toml"
    config.write_text("max-response-chars = 150\n", encoding="utf-8")
    result = runner.invoke(
        app, ["measure", str(EXAMPLES), "--out", str(tmp_path / "b"), "--config", str(config), "--dry-run"]
    )
    assert result.exit_code == 0, result.output
    assert "response(s) over --max-response-chars (150 characters) left out" in result.output


def test_resume_measures_again_what_a_limit_left_out_once_the_limit_is_raised(tmp_path):
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()[:2]]
    rows.append(dict(rows[0], id="huge", response=rows[0]["response"] * 20))
    out = tmp_path / "run"
    first = hallumeasure.measure(rows, out=out, max_response_chars=2_000)
    assert first.responses.set_index("sample_id").loc["huge", "error"].startswith("not judged: ")
    # the same limit again: still left out, the error row is written anew and the others are kept
    again = hallumeasure.measure(rows, out=out, max_response_chars=2_000, resume=True)
    assert again.manifest.counts["measured_now"] == 1 and again.manifest.counts["error_responses"] == 1
    raised = hallumeasure.measure(rows, out=out, max_response_chars=0, resume=True)
    huge = raised.responses.set_index("sample_id").loc["huge"]
    assert raised.manifest.counts["measured_now"] == 1 and raised.manifest.counts["error_responses"] == 0
    assert huge["error"] is None and huge["n_claims"] > 0


def test_resume_finds_the_over_limit_rows_of_a_run_stored_before_error_kinds(tmp_path):
    """An older run has no error_kind column: opening it to resume adds it, and its rows get their kind once
    from the message they were stored with; any other old error row is of unknown kind and stays as it is."""
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()[:2]]
    rows.append(dict(rows[0], id="huge", response=rows[0]["response"] * 20))
    out = tmp_path / "run"
    hallumeasure.measure(rows, out=out, max_response_chars=2_000)
    with sqlite3.connect(out / "run.sqlite") as db:
        db.execute("UPDATE results SET error = 'RuntimeError: boom' WHERE sample_id = ?", (rows[1]["id"],))
        db.execute("ALTER TABLE results DROP COLUMN error_kind")
    old = hallumeasure.load_run(out).results
    assert [r.error_kind for r in old] == [None, ErrorKind.UNKNOWN, ErrorKind.UNKNOWN]  # read only: not known
    raised = hallumeasure.measure(rows, out=out, max_response_chars=0, resume=True)
    assert raised.manifest.counts["measured_now"] == 1  # the over-limit row, not the other error row
    kinds = {r.sample_id: (r.error_kind, r.error) for r in raised.results}
    assert kinds["huge"] == (None, None) and kinds[rows[1]["id"]] == (ErrorKind.UNKNOWN, "RuntimeError: boom")


def test_work_units_count_words_and_the_pairs_of_numbers_within_a_sentence():
    # 6 words, then 5 words of which 3 numbers (3 pairs) in the second sentence; no pair across sentences
    source = Sample(id="s", response="-", context="The hall opened in the spring. Halls 12, 40 and 7.")
    assert source_units(source) == 6 + 5 + 3
    assert source_units(source.model_copy(update={"context": "Halls 12, 40. And 7."})) == 3 + 2 + 1
    # a claim: its words, its pairs of numbers, and 8
    assert claim_units(["It holds 120 books.", "It is 5 or 6."]) == (4 + 0 + 8) + (5 + 1 + 8)
    # before the extraction each sentence of the response stands for one claim
    assert response_units("It holds 120 books. It is 5 or 6.") == claim_units(["It holds 120 books.", "It is 5 or 6."])


def test_claims_over_the_work_limit_are_an_error_row_before_any_judge_call():
    limits = WorkLimits(max_work_units=20 * source_units(SHORT))
    results, api = _fake_run([SHORT], limits)  # two claims of more than 10 units each
    row = results["short"]
    assert row.error is not None and "max_work_units" in row.error and row.error_kind is ErrorKind.OVER_LIMIT
    assert row.claims == [] and api.calls == 1  # the extraction only: no claim was judged
