"""Sources as apps send them, judged as a user would run it (``check(messages=...)`` and the CLI on JSONL):

- context pasted into the user message is a source by default (kind ``user_context``), and can be turned off;
- the question being answered never supports a claim, even with ``user_turns``;
- JSON tool results are read as facts (numbers and dates compared), cited with their call id;
- an answer that reports a failed call is not flagged for what the call asked for;
- ``run.claims`` and ``show --json`` carry each evidence's source id and kind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

import hallumeasure
from hallumeasure.cli.main import app
from hallumeasure.core.labels import Label
from hallumeasure.core.types import SourceKind

ZEPHYR = [
    {"role": "system", "content": "Answer from the context only."},
    {
        "role": "user",
        "content": "Context: The Zephyr bridge is 2.4 km long.\n\nQuestion: How long is the Zephyr bridge?",
    },
    {"role": "assistant", "content": "The Zephyr bridge is 2.4 km long."},
]


def _tool_turn(tool: str, arguments: dict[str, Any], result: str, answer: str, **message: Any) -> list[dict[str, Any]]:
    call = {"id": "call_7", "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}
    return [
        {"role": "user", "content": "Can you look that up?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_7", "content": result, **message},
        {"role": "assistant", "content": answer},
    ]


def test_context_in_the_user_message_supports_the_answer_unless_turned_off():
    (claim,) = hallumeasure.check(messages=ZEPHYR).claims
    assert claim.label is Label.SUPPORTED
    assert [(e.passage_id, e.source_kind, e.verified) for e in claim.evidence] == [
        ("user-context-1", SourceKind.USER_CONTEXT, True)
    ]
    (off,) = hallumeasure.check(messages=ZEPHYR, context_in_user_turns=False).claims
    assert off.label is Label.ABSENT and off.evidence == ()


def test_the_question_being_answered_never_supports_a_claim():
    asked = [
        {"role": "user", "content": "Tell me about the Kessel bridge."},
        {"role": "assistant", "content": "The Kessel bridge opened in 1932."},
    ]
    for user_turns in (False, True):
        (claim,) = hallumeasure.check(messages=asked, user_turns=user_turns).claims
        assert claim.label is Label.UNEVALUATABLE and claim.evidence == ()


def test_a_json_tool_result_is_read_as_facts_and_cited_with_its_call_id():
    seats = _tool_turn(
        "venue_info", {"venue": "Arlo stadium"}, '{"seats": 52000}', "The Arlo stadium has 81,000 seats."
    )
    (claim,) = hallumeasure.check(messages=seats).claims
    assert claim.label is Label.CONTRADICTED and claim.unsupported
    assert [(e.passage_id, e.source_kind, e.quote) for e in claim.evidence] == [
        ("call_7", SourceKind.TOOL_RESULT, "venue_info (venue: Arlo stadium): seats: 52,000.")
    ]
    # a result that names no subject: still compared, and the number it gives is quoted
    books = _tool_turn("stats", {}, '{"books": 120000}', "The Dunmore library holds 450,000 books.")
    (claim,) = hallumeasure.check(messages=books).claims
    assert claim.unsupported and "120,000" in (claim.label_reason or "")
    assert [(e.passage_id, e.source_kind, e.quote) for e in claim.evidence] == [
        ("call_7", SourceKind.TOOL_RESULT, "books: 120,000.")
    ]
    dated = _tool_turn(
        "event_date", {"event": "Arlo concert"}, '{"date": "2026-11-24"}', "The Arlo concert is on November 24."
    )
    (claim,) = hallumeasure.check(messages=dated).claims
    assert claim.label is Label.SUPPORTED  # the ISO date read as a date (unsure: the claim gives no year)
    assert claim.evidence[0].passage_id == "call_7"


def test_an_answer_that_reports_a_failed_call_is_not_flagged_for_what_the_call_asked_for():
    failed = _tool_turn(
        "get_ticket",
        {"ticket_id": "INC-2291"},
        "Error: the ticket system timed out.",
        "I couldn't retrieve ticket INC-2291 because the ticket system timed out.",
        is_error=True,
    )
    (claim,) = hallumeasure.check(messages=failed).claims
    # the id is what the call asked for: the result's text says so, and the id is not called invented
    assert "never gives" not in (claim.label_reason or "")
    assert not (claim.unsupported and claim.confident)
    assert claim.evidence[0].passage_id == "call_7"


def test_measure_and_show_on_jsonl_carry_each_evidence_source_id_and_kind(tmp_path: Path):
    rows = [
        {"id": "zephyr", "messages": ZEPHYR},
        {
            "id": "seats",
            "messages": _tool_turn(
                "venue_info", {"venue": "Arlo stadium"}, '{"seats": 52000}', "The Arlo stadium has 81,000 seats."
            ),
        },
    ]
    path = tmp_path / "conversations.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    runner = CliRunner()
    measured = runner.invoke(app, ["measure", str(path), "--out", str(tmp_path / "run")], env={"COLUMNS": "80"})
    assert measured.exit_code == 0, measured.output
    run = hallumeasure.load_run(tmp_path / "run")
    assert run.manifest.settings["sources"]["context_in_user_turns"] is True
    by_sample = {row.sample_id: row for row in run.claims.itertuples()}
    assert list(by_sample["zephyr"].evidence_sources) == [{"id": "user-context-1", "kind": "user_context"}]
    assert list(by_sample["seats"].evidence_sources) == [{"id": "call_7", "kind": "tool_result"}]
    shown = runner.invoke(app, ["show", str(tmp_path / "run"), "--json", "--claims"], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    claims = {c["sample_id"]: c for c in json.loads(shown.output)["claims"]}
    assert claims["zephyr"]["label"] == "supported"
    assert claims["zephyr"]["evidence_sources"] == [{"id": "user-context-1", "kind": "user_context"}]
    assert claims["seats"]["evidence_sources"] == [{"id": "call_7", "kind": "tool_result"}]
    off = runner.invoke(
        app, ["measure", str(path), "--out", str(tmp_path / "off"), "--no-context-in-user-turns"], env={"COLUMNS": "80"}
    )
    assert off.exit_code == 0, off.output
    run = hallumeasure.load_run(tmp_path / "off")
    assert run.manifest.settings["sources"]["context_in_user_turns"] is False
    assert {r.sample_id: r.verdicts[0].label for r in run.results}["zephyr"] is Label.ABSENT
