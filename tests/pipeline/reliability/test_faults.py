"""Nothing is lost under provider faults: every fault of the simulators' fault plan, against the
local Anthropic and Bedrock servers, transient and persistent (see ``faultcases.py``).

For every case: each input sample has exactly one stored result, each claim exactly one verdict,
no duplicates; error rows say which fault caused them; runs with only transient transport faults
(and all-claims answers cut off at max_tokens, which the judge splits) end with no error row. The
CLI states the number of error rows and exits 3 when there are any, 0 when there are none.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pipeline.reliability.faultcases import (
    CASES,
    FAULTS,
    PICK_SEED,
    SAMPLES,
    Case,
    cause_pattern,
    check_nothing_lost,
    fault_plan,
    provider_api,
    run_case,
)
from testdata import REPO
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.types import Mode
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.judges.llm.outputs import CotVerdict
from hallumeasure.judges.llm.parsing import ask_structured
from hallumeasure.models.base import GenerateRequest, GenerateResponse, Message
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.testing import AnthropicServer, BedrockServer, Burst, Fault, FaultPlan

TABLE = REPO / "benchmarks" / "results" / "reliability.md"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every case of the matrix, run once for the module (in parallel: each has its own server)."""
    base = tmp_path_factory.mktemp("faults")
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = {case: pool.submit(run_case, case, base / case.id) for case in CASES}
        return {case: (future.result(), base / case.id) for case, future in futures.items()}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_sample_ends_as_one_result_or_an_error_row_that_names_the_fault(case: Case, outcomes):
    outcome, run_dir = outcomes[case]
    assert outcome.injected > 0, "the plan injected nothing: the case tests nothing"
    check_nothing_lost(run_dir, SAMPLES)
    assert outcome.lost == 0 and outcome.duplicates == 0
    assert outcome.complete + outcome.with_errors == outcome.samples_in == len(SAMPLES)
    counts = outcome.manifest_counts
    assert counts["error_responses"] == outcome.error_responses
    assert counts["claim_errors"] == outcome.claim_errors
    assert counts["responses_with_errors"] == outcome.with_errors
    cause = cause_pattern(case.fault)
    unexplained = [e for e in outcome.errors if not cause.search(e)]
    assert not unexplained, f"error rows that do not name the fault: {unexplained[:3]}"
    if case.recoverable:
        assert outcome.error_rows == 0, f"a recoverable fault left error rows: {outcome.errors[:3]}"
    elif case.persistence == "persistent":
        # The plan breaks the extraction of two samples and the judging of two others, for good.
        assert outcome.error_responses == 2 and outcome.with_errors == 4 and outcome.claim_errors > 0


def test_the_matrix_covers_every_fault_on_both_providers():
    assert set(FAULTS) == set(Fault)
    assert {(c.fault, c.provider, c.persistence) for c in CASES} == {
        (f, p, k) for f in Fault for p in ("anthropic", "bedrock") for k in ("transient", "persistent")
    }


def test_the_committed_reliability_table_lists_every_case_and_lost_is_zero():
    """benchmarks/results/reliability.md is written by benchmarks/reliability_table.py from these same cases."""
    assert TABLE.exists(), "run: .venv/bin/python benchmarks/reliability_table.py"
    rows = [
        line.split("|")[1:-1]
        for line in TABLE.read_text(encoding="utf-8").splitlines()
        if line.startswith("| ") and not line.startswith("| fault")
    ]
    found = {(r[0].strip(), r[1].strip(), r[2].strip()): r for r in rows}
    for case in CASES:
        row = found.get((case.fault.value, case.provider, case.persistence))
        assert row is not None, f"{case.id} is missing from {TABLE.name}: regenerate it"
        assert row[-1].strip() == "0" and row[-2].strip() == "0", f"{case.id}: lost or duplicated samples"


# --- the CLI: exit code and summary -------------------------------------------------------------------


def _write_input(path: Path) -> Path:
    rows = [{"id": s.id, "model": s.model, "context": s.context, "response": s.response} for s in SAMPLES]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _cli_env(monkeypatch, provider: str, url: str) -> str:
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-dummy-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        return "anthropic:claude-sim"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("HALLUMEASURE_BEDROCK_ENDPOINT", url)
    return "bedrock:anthropic.claude-sim"


_SUMMARY = re.compile(r"(\d+) response\(s\) and (\d+) claim\(s\) ended as error rows; (\d+) input row\(s\) skipped")


@pytest.mark.parametrize(
    ("provider", "fault", "persistence", "retries"),
    [
        ("anthropic", Fault.RATE_LIMIT, "transient", 4),
        ("bedrock", Fault.UNAVAILABLE, "transient", 4),
        ("anthropic", Fault.SCHEMA_VIOLATION, "persistent", 1),
        ("bedrock", Fault.SERVER_ERROR, "persistent", 1),
    ],
)
def test_the_cli_states_the_error_rows_and_exits_3_only_when_there_are_some(
    tmp_path, monkeypatch, provider, fault, persistence, retries
):
    case = Case(fault, provider, persistence)
    server = AnthropicServer if provider == "anthropic" else BedrockServer
    with server(faults=fault_plan(case)) as srv:
        spec = _cli_env(monkeypatch, provider, srv.url)
        result = CliRunner().invoke(
            app,
            [
                "measure",
                str(_write_input(tmp_path / "in.jsonl")),
                "--out",
                str(tmp_path / "run"),
                "--extractor",
                spec,
                "--judge",
                spec,
                "--max-retries",
                str(retries),
                "--timeout",
                "5",
                "--no-cache",
            ],
        )
        injected = len(srv.injected)
    assert injected > 0
    run_dir = tmp_path / "run"
    check_nothing_lost(run_dir, SAMPLES)
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        failed = db.execute("SELECT COUNT(*) FROM results WHERE error IS NOT NULL").fetchone()[0]
        claim_errors = db.execute("SELECT COUNT(*) FROM verdicts WHERE error IS NOT NULL").fetchone()[0]
    (all_row,) = [line for line in result.output.splitlines() if "(all)" in line]
    cells = all_row.split()  # the table separates its columns by spaces
    assert cells[-1] == str(failed + claim_errors), all_row  # the table's "error rows" column
    if persistence == "transient":
        assert result.exit_code == 0, result.output
        assert failed == claim_errors == 0 and not _SUMMARY.search(result.output)
    else:
        assert result.exit_code == 3, result.output
        assert (failed, claim_errors) == (2, 4), f"pick seed {PICK_SEED} hits two extractions and two judgings"
        stated = _SUMMARY.search(result.output)
        assert stated and stated.groups() == (str(failed), str(claim_errors), "0"), result.output
        with sqlite3.connect(run_dir / "run.sqlite") as db:
            causes = [
                r[0]
                for r in db.execute(
                    "SELECT error FROM results WHERE error IS NOT NULL "
                    "UNION ALL SELECT error FROM verdicts WHERE error IS NOT NULL"
                )
            ]
        assert all(cause_pattern(fault).search(c) for c in causes), causes
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["counts"]["error_responses"] == failed and manifest["counts"]["claim_errors"] == claim_errors


def test_a_burst_of_overload_on_every_call_is_ridden_out(tmp_path):
    """Ten consecutive calls overloaded (the provider's bad minute): retried, nothing lost, no error row."""
    plan = FaultPlan(bursts=[Burst(start=2, length=10, fault=Fault.OVERLOADED)])
    with AnthropicServer(faults=plan) as srv:
        model = Model(provider_api("anthropic", srv.url), max_retries=12, backoff_base=0.002, backoff_max=0.01)
        manifest, _ = run_measurement(
            SAMPLES,
            tmp_path / "run",
            LLMExtractor(model),
            LLMJudge(model, Mode.COT_ONE),
            mode=Mode.COT_ONE,
            input_sha256="0" * 64,
        )
        assert len(srv.injected) == 10
    check_nothing_lost(tmp_path / "run", SAMPLES)
    assert manifest.counts["error_responses"] == manifest.counts["claim_errors"] == 0


# --- unit checks of the recovery paths the matrix relies on --------------------------------------------------


def test_an_unreadable_answer_is_asked_for_again_and_bounded():
    """A provider that raises something else than ProviderError (say an SDK's JSON error on a cut body;
    the Anthropic and Bedrock providers turn that into a retryable ProviderError themselves)."""
    good = {"label_reason": "The context says 24 km.", "label": "contradicted", "subtype": "number"}
    request = GenerateRequest(system="s", messages=(Message.user("u"),))
    api = FakeAPI(script=[json.JSONDecodeError("Unterminated string", "{", 1), good])
    result = asyncio.run(ask_structured(Model(api), request, CotVerdict))
    assert result.value is not None and api.calls == 2
    assert api.requests[0] == api.requests[1]  # nothing was read: the same request goes again
    api = FakeAPI(script=[json.JSONDecodeError("Unterminated string", "{", 1)] * 3)
    result = asyncio.run(ask_structured(Model(api), request, CotVerdict, max_reasks=2))
    assert result.value is None and api.calls == 3 and result.error.startswith("unreadable answer (JSONDecodeError")


def test_a_claim_list_cut_off_at_max_tokens_is_asked_for_once_with_a_bigger_budget():
    cut = GenerateResponse(tool_input={"claims": [{"text": "The bridge"}]}, stop_reason="max_tokens")
    whole = {"claims": [{"text": "The bridge is 42 km long.", "source_sentence": "The bridge is 42 km long."}]}
    api = FakeAPI(script=[cut, whole])
    extraction = asyncio.run(LLMExtractor(Model(api)).extract(SAMPLES[0]))
    assert extraction.error is None and [c.text for c in extraction.claims] == ["The bridge is 42 km long."]
    assert [r.max_tokens for r in api.requests] == [2048, 8192]
    api = FakeAPI(script=[cut, cut])
    extraction = asyncio.run(LLMExtractor(Model(api)).extract(SAMPLES[0]))
    assert extraction.error == (
        "extraction failed: the answer was cut off at max_tokens (also with max_tokens=8192); "
        'the answer was: {"claims": [{"text": "The bridge"}]}'
    )
