"""The fault matrix shared by ``test_faults.py`` and ``benchmarks/reliability_table.py``.

Each case runs a tiny hand-written dataset through the real pipeline (LLM extractor + LLM judge)
against a local Anthropic or Bedrock simulator that injects one fault, then reads the run
directory back and counts what became of every sample. Two kinds of injection:

* ``transient``: a seeded share of calls fails; a retry (or a re-ask) of the same call draws
  again, as a flaky network or a busy provider would behave;
* ``persistent``: every attempt of the calls that belong to a seeded share of samples fails, so
  retries and re-asks cannot help and the pipeline must write error rows that say why.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from pipeline.reliability.samples import SAMPLES

from hallumeasure.core.types import Mode, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.fake import prompt_blocks
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.testing import (
    TRANSIENT,
    AnthropicServer,
    BedrockServer,
    Fault,
    FaultPlan,
)

PROVIDERS = ("anthropic", "bedrock")
PERSISTENCE = ("transient", "persistent")
#: Share of calls (transient) or of samples (persistent) that get the fault.
RATE = 0.3
SEED = 7
#: The persistent faults hit the extraction of two samples and the judging of two others.
PICK_SEED = 9
#: Client read timeout in the read-timeout cases, and how long such a fault holds its answer back.
#: The other cases wait longer, so that a slow machine does not add timeouts of its own.
READ_TIMEOUT = 0.4
HANG = 1.5
TIMEOUT = 10.0

#: What an error row must say for each fault (the cause, as the provider or the parser names it).
CAUSES: dict[Fault, str] = {
    Fault.RATE_LIMIT: r"rate_limit|throttling|429",
    Fault.RATE_LIMIT_NO_RETRY_AFTER: r"rate_limit|throttling|429",
    Fault.OVERLOADED: r"overloaded|529|serviceunavailable|503",
    Fault.SERVER_ERROR: r"api_error|internalserver|500",
    Fault.UNAVAILABLE: r"unavailable|503",
    Fault.READ_TIMEOUT: r"timeout|timed out",
    Fault.CONNECTION_RESET: r"connection|reset|protocol|incomplete",
    Fault.TRUNCATED_BODY: r"reply body was not valid json",
    Fault.SCHEMA_VIOLATION: r"does not match the schema",
    Fault.REFUSAL: r"refused",
    Fault.MAX_TOKENS: r"cut off at max_tokens",
    Fault.EMPTY: r"answer was empty",
}
FAULTS = tuple(CAUSES)


@dataclass(frozen=True)
class Case:
    fault: Fault
    provider: str
    persistence: str

    @property
    def id(self) -> str:
        return f"{self.fault.value}-{self.provider}-{self.persistence}"

    @property
    def mode(self) -> Mode:
        # The max_tokens fault targets the all-claims answer, which the judge splits and asks again.
        return Mode.COT_ALL if self.fault is Fault.MAX_TOKENS else Mode.COT_ONE

    @property
    def recoverable(self) -> bool:
        """Whether a well-behaved client must finish this case without any error row.

        Transient transport and status faults are retried; an all-claims answer cut off at
        max_tokens is split into smaller batches, however often it happens.
        """
        return (self.persistence == "transient" and self.fault in TRANSIENT) or self.fault is Fault.MAX_TOKENS


CASES = [Case(f, p, k) for f in FAULTS for k in PERSISTENCE for p in PROVIDERS]


@dataclass
class Outcome:
    case: Case
    samples_in: int
    results: int
    complete: int
    with_errors: int
    error_responses: int
    claim_errors: int
    claims: int
    injected: int
    calls: int
    duplicates: int
    errors: list[str] = field(default_factory=list)
    manifest_counts: dict[str, int] = field(default_factory=dict)

    @property
    def lost(self) -> int:
        return self.samples_in - self.results

    @property
    def error_rows(self) -> int:
        return self.error_responses + self.claim_errors


def _pick_key(call: Any) -> str:
    """Which sample a call belongs to: its passage or context (judge calls) or its response (extraction)."""
    request = call.to_request()
    blocks = (
        prompt_blocks(request, "passage") or prompt_blocks(request, "context") or prompt_blocks(request, "response")
    )
    tool = (call.tool or {}).get("name", "")
    return f"{tool}:{blocks[0][1] if blocks else call.prompt_text}"


def _picked(call: Any, rate: float = RATE, seed: int = PICK_SEED) -> bool:
    digest = hashlib.sha256(f"{seed}:{_pick_key(call)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def _many_verdicts(call: Any) -> bool:
    """An all-claims judge call for two claims or more: the kind of answer that outgrows max_tokens."""
    return (call.tool or {}).get("name") == "record_verdicts" and len(prompt_blocks(call.to_request(), "claim")) > 1


def fault_plan(case: Case) -> FaultPlan:
    match: Callable[[Any], bool] | None = _many_verdicts if case.fault is Fault.MAX_TOKENS else None
    options = {"hang": HANG, "retry_after": 0.01, "overload_retry_after": None}
    if case.persistence == "transient":
        return FaultPlan.random(RATE, [case.fault], seed=SEED, match=match, **options)
    return FaultPlan(
        rate=1.0,
        faults=[case.fault],
        seed=SEED,
        match=lambda call: (match is None or match(call)) and _picked(call),
        **options,
    )


def provider_api(provider: str, url: str, timeout: float = TIMEOUT):
    if provider == "anthropic":
        return AnthropicAPI("claude-sim", api_key="sk-test-dummy", base_url=url, timeout=timeout)
    # Static dummy credentials: boto3 signs every request, and the environment may have none.
    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
    return BedrockAPI(
        "anthropic.claude-sim", endpoint_url=url, session=session, read_timeout=timeout, connect_timeout=timeout
    )


SERVERS = {"anthropic": AnthropicServer, "bedrock": BedrockServer}


def run_case(case: Case, out: Path, samples: list[Sample] = SAMPLES) -> Outcome:
    """Measure ``samples`` with ``case``'s fault injected; the run directory is ``out``."""
    with SERVERS[case.provider](faults=fault_plan(case)) as srv:
        # Transient: enough retries that five unlucky draws in a row cannot happen by chance.
        retries = 6 if case.persistence == "transient" else 2
        timeout = READ_TIMEOUT if case.fault is Fault.READ_TIMEOUT else TIMEOUT
        model = Model(
            provider_api(case.provider, srv.url, timeout),
            max_retries=retries,
            backoff_base=0.005,
            backoff_max=0.02,
            timeout=timeout * 3,
            max_concurrency=8,
        )
        manifest, _ = run_measurement(
            samples,
            out,
            LLMExtractor(model),
            LLMJudge(model, case.mode),
            mode=case.mode,
            input_sha256="0" * 64,
            concurrency=4,
        )
        injected, calls = len(srv.injected), len(srv.log)
    outcome = read_outcome(case, out, samples)
    outcome.injected, outcome.calls = injected, calls
    outcome.manifest_counts = dict(manifest.counts)
    return outcome


def read_outcome(case: Case, out: Path, samples: list[Sample]) -> Outcome:
    """Count what the run directory holds, straight from SQLite (not through our own readers)."""
    with sqlite3.connect(f"file:{out / 'run.sqlite'}?mode=ro", uri=True) as db:
        ids = [r[0] for r in db.execute("SELECT sample_id FROM results")]
        error_responses = db.execute("SELECT COUNT(*) FROM results WHERE error IS NOT NULL").fetchone()[0]
        claim_errors = db.execute("SELECT COUNT(*) FROM verdicts WHERE error IS NOT NULL").fetchone()[0]
        claims = db.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
        with_errors = db.execute(
            "SELECT COUNT(*) FROM results r WHERE r.error IS NOT NULL OR EXISTS "
            "(SELECT 1 FROM verdicts v WHERE v.sample_id = r.sample_id AND v.error IS NOT NULL)"
        ).fetchone()[0]
        errors = [
            r[0]
            for r in db.execute(
                "SELECT error FROM results WHERE error IS NOT NULL "
                "UNION ALL SELECT error FROM verdicts WHERE error IS NOT NULL"
            )
        ]
    return Outcome(
        case=case,
        samples_in=len(samples),
        results=len(set(ids)),
        complete=len(set(ids)) - with_errors,
        with_errors=with_errors,
        error_responses=error_responses,
        claim_errors=claim_errors,
        claims=claims,
        injected=0,
        calls=0,
        duplicates=len(ids) - len(set(ids)),
        errors=errors,
    )


def check_nothing_lost(out: Path, samples: list[Sample]) -> None:
    """Every sample has exactly one result; every claim exactly one verdict; counts agree everywhere."""
    with sqlite3.connect(f"file:{out / 'run.sqlite'}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        ids = [r[0] for r in db.execute("SELECT sample_id FROM results")]
        assert sorted(ids) == sorted(s.id for s in samples), "a sample has no result, or more than one"
        claim_ids = [r[0] for r in db.execute("SELECT claim_id FROM claims")]
        verdict_ids = [r[0] for r in db.execute("SELECT claim_id FROM verdicts")]
        assert sorted(claim_ids) == sorted(verdict_ids) and len(set(claim_ids)) == len(claim_ids), (
            "a claim has no verdict, or more than one"
        )
        per_sample = db.execute(
            "SELECT r.sample_id, r.n_claims, r.n_errors, r.error, "
            " (SELECT COUNT(*) FROM claims c WHERE c.sample_id = r.sample_id),"
            " (SELECT COUNT(*) FROM verdicts v WHERE v.sample_id = r.sample_id AND v.error IS NOT NULL)"
            " FROM results r"
        ).fetchall()
        for sid, n_claims, n_errors, error, stored_claims, stored_errors in per_sample:
            assert n_claims == stored_claims and n_errors == stored_errors, sid
            assert error is None or error.strip(), f"{sid}: an error row without a cause"
        blank = db.execute(
            "SELECT COUNT(*) FROM verdicts WHERE (error IS NULL AND label IS NULL) "
            "OR (error IS NOT NULL AND TRIM(error) = '')"
        ).fetchone()[0]
        assert blank == 0, "a verdict that is neither a label nor an error with a cause"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    counts = manifest["counts"]
    assert manifest["status"] == "complete"
    assert counts["samples"] == counts["results"] == len(samples)


def cause_pattern(fault: Fault) -> re.Pattern[str]:
    return re.compile(CAUSES[fault], re.IGNORECASE)


def summary_markdown(outcomes: list[Outcome]) -> str:
    """The short table for the README: one row per fault and injection, both providers summed."""
    lines = [
        "| fault | injection | faults injected | samples in | results stored | error rows (samples + claims) | lost |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    groups: dict[tuple[str, str], list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault((o.case.fault.value, o.case.persistence), []).append(o)
    for (fault, persistence), group in groups.items():
        lines.append(
            f"| {fault} | {persistence} | {sum(o.injected for o in group)} | {sum(o.samples_in for o in group)} "
            f"| {sum(o.results for o in group)} | {sum(o.error_responses for o in group)} + "
            f"{sum(o.claim_errors for o in group)} | {sum(o.lost for o in group)} |"
        )
    return "\n".join(lines) + "\n"


def table_markdown(outcomes: list[Outcome], *, seconds: float | None = None) -> str:
    """The full reliability table (one row per run), from measured outcomes."""
    lines = [
        (
            "| fault | provider | injection | faults injected | calls | samples in | measured without error "
            "| samples with error rows | error rows (samples + claims) | duplicates | lost |"
        ),
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for o in outcomes:
        lines.append(
            f"| {o.case.fault.value} | {o.case.provider} | {o.case.persistence} | {o.injected} | {o.calls} "
            f"| {o.samples_in} | {o.complete} | {o.with_errors} | {o.error_responses} + {o.claim_errors} "
            f"| {o.duplicates} | {o.lost} |"
        )
    total_in = sum(o.samples_in for o in outcomes)
    total_lost = sum(o.lost for o in outcomes)
    footer = (
        f"\n{len(outcomes)} runs, {sum(o.injected for o in outcomes)} faults injected, {total_in} samples in, "
        f"{total_lost} lost."
    )
    if seconds is not None:
        footer += f" Measured in {seconds:.0f} s."
    return "\n".join(lines) + "\n" + footer + "\n"
