"""Bad input: every bad row gets a message that names it, and the other rows are measured.

A source longer than the judge's window is not refused: it is cut, per response, to the chunks that
matter to the claims (hallumeasure/sources/retrieval.py), within ``max_context_tokens`` or the window known
for the judge's model. A provider that still refuses a prompt ("prompt is too long") gives an error
row with its error code. Either way the other samples are measured.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from pipeline.reliability.faultcases import check_nothing_lost, provider_api
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.errors import InputError
from hallumeasure.core.text import count_tokens
from hallumeasure.core.types import Claim, ErrorKind, Mode, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.judges.protocols import Extraction
from hallumeasure.models.fake import FakeAPI, demo_responder
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import measure_samples, run_measurement
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.run import load_run
from hallumeasure.sources.rag import SourceOptions
from hallumeasure.testing import AnthropicServer, BedrockServer, default_answer
from hallumeasure.testing.anthropic_server import error_reply as anthropic_error
from hallumeasure.testing.bedrock_server import error_reply as bedrock_error

runner = CliRunner()
GOOD = {"context": "The bridge is 24 km long. It opened in 2019.", "response": "The bridge is 42 km long."}


def _jsonl(path: Path, rows: list) -> Path:
    lines = []
    for row in rows:
        if isinstance(row, bytes):
            lines.append(row)
        elif isinstance(row, str):
            lines.append(row.encode("utf-8"))
        else:
            lines.append(json.dumps(row).encode("utf-8"))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


BAD_ROWS = [
    {"id": "a", **GOOD},  # 1 good
    {"id": "empty-response", "context": GOOD["context"], "response": ""},  # 2
    {"id": "blank-response", "context": GOOD["context"], "response": "  \n\t "},  # 3
    {"id": "empty-context", "context": "", "response": GOOD["response"]},  # 4
    {"id": "blank-context", "context": " \u00a0\n ", "response": GOOD["response"]},  # 5
    b'{"id": "bad-bytes", "context": "caf\xe9 \xff", "response": "R."}',  # 6
    {"id": "ctl", "context": "The bridge\u0000 is 24 km\u0007 long.", "response": "It is\u001b 24 km."},  # 7 good
    {"id": "a", **GOOD},  # 8 duplicate
    {"id": "no-response", "context": GOOD["context"]},  # 9
    {"id": "list-context", "context": ["a", "b"], "response": "R."},  # 10
    '["not", "an", "object"]',  # 11
    '{"id": "broken", "context": "C", ',  # 12
    {"id": "   ", "question": " ", "model": "\t", **GOOD},  # 13 good: blank id
    '{"id": "surrogate", "context": "A lone \\ud800 half.", "response": "A lone \\udfff half."}',  # 14 good
    {"id": "null-response", "context": GOOD["context"], "response": None},  # 15
]
EXPECTED_PROBLEMS = {
    4: ("empty-context", "the context is empty"),
    5: ("blank-context", "the context is empty (whitespace only)"),
    6: (None, "not valid UTF-8"),
    8: ("a", "duplicate id 'a' (first seen at row 1)"),
    9: ("no-response", "has no response (column 'response')"),
    10: ("list-context", "the context must be text, not a list"),
    11: (None, "a JSON object was expected"),
    12: (None, "not valid JSON"),
    15: ("null-response", "the response is missing"),
}


def test_each_bad_jsonl_row_is_named_and_the_others_load(tmp_path):
    loaded = load_samples(_jsonl(tmp_path / "in.jsonl", BAD_ROWS))
    assert [s.id for s in loaded.samples] == ["a", "empty-response", "blank-response", "ctl", "row-13", "surrogate"]
    problems = {p.row: (p.sample_id, p.message) for p in loaded.problems}
    assert set(problems) == set(EXPECTED_PROBLEMS)
    for row, (sid, message) in EXPECTED_PROBLEMS.items():
        assert problems[row][0] == sid and message in problems[row][1], (row, problems[row])
    empty, whitespace, ctl, blank, surrogate = loaded.samples[1:]
    assert empty.response == whitespace.response == ""  # an empty answer is a result with no claims
    assert ctl.context == "The bridge is 24 km long." and ctl.response == "It is 24 km."  # NUL and controls gone
    assert blank.question is None and blank.model is None  # whitespace-only fields count as absent
    assert surrogate.context == "A lone \ufffd half."  # encodable again: SQLite and HTTP can take it
    with pytest.raises(InputError, match=r"row 4 \(id empty-context\): the context is empty"):
        load_samples(tmp_path / "in.jsonl", strict=True)


def test_a_byte_order_mark_and_a_row_without_the_column_do_not_stop_the_file(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps({"id": "first", "answer": "R."}).encode()
        + b"\n"
        + json.dumps({"id": "second", **GOOD}).encode()
        + b"\n"
    )
    loaded = load_samples(path)
    assert [s.id for s in loaded.samples] == ["second"]
    assert loaded.problems[0].row == 1 and "has no context (column 'context')" in loaded.problems[0].message
    nothing = _jsonl(tmp_path / "none.jsonl", [{"id": "x", "source": "C", "answer": "R"}])
    with pytest.raises(InputError, match=r"row 1: has no context .*--column field=name"):
        load_samples(nothing)


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_csv_with_any_common_delimiter_and_bad_rows_named(tmp_path, delimiter):
    d = delimiter
    text = (
        f"\ufeffid{d} context {d}response{d}tags\n"
        f'a{d}"The bridge{d} they say{d} is 24 km long."{d}It is 42 km long.{d}x\n'
        f'b{d}"Two\nlines{d} quoted."{d}Two lines.{d}\n'
        f"c{d}C.{d}R.{d}t{d}one too many\n"
        f"d{d}Only a context\n"
        f"e{d}The \x00bridge.{d}The bridge.{d}\n"
    )
    path = tmp_path / "in.csv"
    path.write_bytes(text.encode("utf-8") + f"f{d}caf".encode() + b"\xe9" + f"{d}R.{d}\n".encode())  # Latin-1 byte
    loaded = load_samples(path)
    assert [s.id for s in loaded.samples] == ["a", "b", "e"]
    assert loaded.samples[0].context == f"The bridge{d} they say{d} is 24 km long."
    assert loaded.samples[1].context == f"Two\nlines{d} quoted." and loaded.samples[2].context == "The bridge."
    problems = {p.row: p.message for p in loaded.problems}
    assert "has 5 fields but the header has 4" in problems[4]
    assert "the response is missing" in problems[5]
    assert "not valid UTF-8 in column(s) 'context'" in problems[7]


def test_a_csv_header_without_the_columns_names_the_delimiter_and_the_fix(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("id;context;response\na;C.;R.\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"read as CSV with delimiter ',', the header has no context .*--column"):
        load_samples(path, delimiter=",")
    assert [s.id for s in load_samples(path).samples] == ["a"]


def test_duplicate_ids_given_to_the_library_are_refused_before_anything_is_written(tmp_path):
    samples = [Sample(id="x", **GOOD), Sample(id="y", **GOOD), Sample(id="x", **GOOD)]
    model = Model(FakeAPI())
    with pytest.raises(InputError, match=r"sample id 'x' appears twice \(positions 0 and 2\)"):
        run_measurement(
            samples, tmp_path / "run", LLMExtractor(model), LLMJudge(model), mode=Mode.COT_ONE, input_sha256="0" * 64
        )
    assert not (tmp_path / "run" / "run.sqlite").exists()


def _big_line_file(tmp_path: Path, size: int = 10_000_000) -> Path:
    big = ("The bridge is 24 km long and opened in 2019. " * (size // 45 + 1))[:size]
    return _jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": "small", **GOOD},
            {"id": "huge", "context": big, "response": "The bridge is 24 km long."},
            {"id": "small-2", **GOOD},
        ],
    )


def test_a_10_mb_line_loads_and_its_context_is_judged_through_a_view_within_the_budget(tmp_path):
    loaded = load_samples(_big_line_file(tmp_path))
    assert [len(s.context) for s in loaded.samples][1] == 10_000_000 and not loaded.problems
    api = FakeAPI()
    model = Model(api)
    manifest, results = run_measurement(
        loaded.samples,
        tmp_path / "run",
        LLMExtractor(model),
        LLMJudge(model),
        mode=Mode.COT_ONE,
        input_sha256=loaded.sha256,
        sources=SourceOptions(max_context_tokens=2_000),
    )
    check_nothing_lost(tmp_path / "run", loaded.samples)
    by_id = {r.sample_id: r for r in results}
    assert all(r.error is None and r.n_errors == 0 for r in results)
    (huge,) = by_id["huge"].verdicts
    assert huge.label == "supported" and huge.shown and all(s.startswith("1:") for s in huge.shown)
    judged = [r for r in api.requests if r.tool and r.tool.name == "record_verdict"]
    longest = max(count_tokens(m.text) for r in judged for m in r.messages)
    assert longest < 2_000 + 200  # the view (at most 2,000 source tokens) plus the claim and the markup
    assert manifest.settings["sources"]["context_budget_tokens"] == 2_000


def _window(limit: int, error):
    """A simulator answer that refuses prompts longer than ``limit`` characters, as a provider would."""

    def answer(call):
        if len(call.prompt_text) > limit:
            return error
        return default_answer(call)

    return answer


@pytest.mark.parametrize(
    ("server", "error", "cause"),
    [
        (
            AnthropicServer,
            anthropic_error(400, "prompt is too long: 250000 tokens > 200000 maximum"),
            "invalid_request_error",
        ),
        (BedrockServer, bedrock_error(400, "Input is too long for requested model."), "ValidationException"),
    ],
)
def test_without_a_limit_the_providers_refusal_of_a_long_context_is_the_error_row(server, error, cause):
    samples = [
        Sample(id="short", **GOOD),
        Sample(id="long", context="The bridge is 24 km long. " * 20_000, response=GOOD["response"]),
    ]
    with server(answer=_window(100_000, error)) as srv:
        model = Model(provider_api("anthropic" if server is AnthropicServer else "bedrock", srv.url), backoff_base=0.0)
        results = asyncio.run(measure_samples(samples, LLMExtractor(model), LLMJudge(model)))
    short, long = results
    assert short.error is None and short.n_errors == 0
    assert long.n_errors == long.n_claims == 1 and long.hallucinated is None
    (verdict,) = long.verdicts
    assert f"provider error ({cause})" in verdict.error and "too long" in verdict.error


def test_model_output_with_lone_surrogates_and_control_characters_is_stored(tmp_path):
    """A model that answers with unencodable text: cleaned or replaced, never a crash of the run."""

    def responder(request):
        answer = demo_responder(request)
        if request.tool and request.tool.name == "record_claims":
            return {"claims": [{"text": "The bridge \ud83d is\u0000 42 km long.", "source_sentence": "x\udc00"}]}
        if isinstance(answer, dict) and "label_reason" in answer:
            answer = {**answer, "label_reason": answer["label_reason"] + " \udfff"}
        return answer

    model = Model(FakeAPI(responder=responder))
    samples = [Sample(id="s", **GOOD)]
    run_measurement(
        samples, tmp_path / "run", LLMExtractor(model), LLMJudge(model), mode=Mode.COT_ONE, input_sha256="0" * 64
    )
    check_nothing_lost(tmp_path / "run", samples)
    claims = load_run(tmp_path / "run").claims
    assert claims["claim"].tolist() == ["The bridge \ufffd is 42 km long."]
    assert claims["label_reason"].str.endswith("\ufffd").all()


# --- the CLI ---------------------------------------------------------------------------------------------


def test_the_cli_names_every_bad_row_measures_the_rest_and_exits_3(tmp_path):
    data = _jsonl(tmp_path / "in.jsonl", BAD_ROWS)
    result = runner.invoke(
        app, ["measure", str(data), "--out", str(tmp_path / "run"), "--extractor", "fake", "--judge", "fake"]
    )
    assert result.exit_code == 3, result.output
    for row, (sid, message) in EXPECTED_PROBLEMS.items():
        who = f" (id {sid})" if sid else ""
        assert f"skipped row {row}{who}: {message}" in result.output, (row, result.output)
    assert f"{len(EXPECTED_PROBLEMS)} input row(s) skipped" in result.output
    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:
        measured = sorted(r[0] for r in db.execute("SELECT sample_id FROM results"))
    assert measured == ["a", "blank-response", "ctl", "empty-response", "row-13", "surrogate"]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["counts"]["skipped_input_rows"] == len(EXPECTED_PROBLEMS)
    assert manifest["counts"]["results"] + len(EXPECTED_PROBLEMS) == len(BAD_ROWS)  # every input row accounted for


def test_the_cli_reads_a_semicolon_csv_and_explains_a_missing_column(tmp_path):
    data = tmp_path / "in.csv"
    data.write_text(
        'id;context;response\na;"The bridge, built in 2019, is 24 km long.";It is 24 km long.\n', encoding="utf-8"
    )
    ok = runner.invoke(
        app, ["measure", str(data), "--out", str(tmp_path / "r1"), "--extractor", "fake", "--judge", "fake"]
    )
    assert ok.exit_code == 0, ok.output
    renamed = tmp_path / "renamed.csv"
    renamed.write_text("id;source;answer\na;C.;R.\n", encoding="utf-8")
    missing = runner.invoke(
        app, ["measure", str(renamed), "--out", str(tmp_path / "r2"), "--extractor", "fake", "--judge", "fake"]
    )
    assert missing.exit_code == 2
    assert "delimiter ';'" in missing.output and "--column field=name" in missing.output
    mapped = runner.invoke(
        app,
        [
            "measure",
            str(renamed),
            "--out",
            str(tmp_path / "r3"),
            "--extractor",
            "fake",
            "--judge",
            "fake",
            "--column",
            "context=source",
            "--column",
            "response=answer",
        ],
    )
    assert mapped.exit_code == 0, mapped.output


def test_the_cli_measures_a_10_mb_line_within_the_models_window(tmp_path, monkeypatch):
    """No limit to raise: the judge is shown what its window holds, so the provider never refuses."""
    data = _big_line_file(tmp_path)
    refuse = anthropic_error(400, "prompt is too long: 2500000 tokens > 200000 maximum")
    with AnthropicServer(answer=_window(1_000_000, refuse)) as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-dummy-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        result = runner.invoke(
            app,
            [
                "measure",
                str(data),
                "--out",
                str(tmp_path / "run"),
                "--extractor",
                "anthropic:claude-sim",
                "--judge",
                "anthropic:claude-sim",
                "--no-cache",
            ],
        )
        longest = max(len(json.dumps(body)) for body in srv.bodies)
    assert result.exit_code == 0, result.output
    assert longest < 1_000_000
    check_nothing_lost(tmp_path / "run", load_samples(data).samples)
    claims = load_run(tmp_path / "run").claims.set_index("sample_id")
    assert claims["error"].isna().all() and claims.loc["huge", "label"] == "supported"


def test_skipped_input_rows_are_stored_with_the_run(tmp_path):
    """A run accounts for every input row: results, error rows, and the rows that never became samples."""
    loaded = load_samples(_jsonl(tmp_path / "in.jsonl", BAD_ROWS))
    model = Model(FakeAPI())
    manifest, results = run_measurement(
        loaded.samples,
        tmp_path / "run",
        LLMExtractor(model),
        LLMJudge(model),
        mode=Mode.COT_ONE,
        input_sha256=loaded.sha256,
        input_problems=loaded.problems,
    )
    skipped = load_run(tmp_path / "run").skipped
    assert skipped["row"].tolist() == sorted(EXPECTED_PROBLEMS)
    assert skipped.set_index("row").loc[8, "message"].startswith("duplicate id 'a' (first seen at row 1); give each")
    assert manifest.counts["skipped_input_rows"] == len(EXPECTED_PROBLEMS)
    assert len(results) + len(skipped) == len(BAD_ROWS)


class _DuplicateClaimIds:
    """A custom extractor with a bug: two claims share one id (the store's primary key refuses them)."""

    name = "buggy"

    async def extract(self, sample):
        claims = [
            Claim(id=f"{sample.id}:c0", sample_id=sample.id, index=i, text=t)
            for i, t in enumerate(["The bridge is 42 km long.", "It opened in 2019."])
        ]
        return Extraction(claims=claims)

    def settings(self):
        return {}


def test_a_result_the_store_refuses_becomes_an_error_row_not_a_crash(tmp_path):
    samples = [Sample(id="s1", **GOOD), Sample(id="s2", **GOOD)]
    model = Model(FakeAPI())
    manifest, results = run_measurement(
        samples, tmp_path / "run", _DuplicateClaimIds(), LLMJudge(model), mode=Mode.COT_ONE, input_sha256="0" * 64
    )
    check_nothing_lost(tmp_path / "run", samples)
    assert all(r.error.startswith("the result could not be stored (IntegrityError") for r in results)
    assert all(r.error_kind is ErrorKind.STORE_FAILURE for r in results)  # as read back from the store
    assert manifest.counts["error_responses"] == 2
