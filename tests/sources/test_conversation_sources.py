"""Conversations as input: every source has a kind and an id, and three rules peers get wrong.

- a claim whose only support is a failed tool call's result is unsupported, and its reason says so;
- a response with no source at all is unevaluatable, never supported;
- earlier user turns are sources only when the settings say so, and the manifest records the choice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hallumeasure
from hallumeasure.core.errors import InputError
from hallumeasure.core.labels import Label
from hallumeasure.core.types import SourceKind
from hallumeasure.runs.messages import read_conversation

FLIGHT_CALL = [
    {"role": "user", "content": "When does flight BA117 leave?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "flight_status", "arguments": "{}"}}],
    },
]
FAILED_TOOL = [
    *FLIGHT_CALL,
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "is_error": True,
        "content": "Error: upstream timeout. Cached schedule: flight BA117 departs at 9:40.",
    },
    {"role": "assistant", "content": "Flight BA117 departs at 9:40."},
]
WORKING_TOOL = [
    *FLIGHT_CALL,
    {"role": "tool", "tool_call_id": "call_1", "content": "Flight BA117 departs at 9:40 from gate 5."},
    {"role": "assistant", "content": "Flight BA117 departs at 9:40."},
]
NO_SOURCE = [
    {"role": "user", "content": "Tell me about Paris."},
    {"role": "assistant", "content": "Paris is the capital of France."},
]
USER_TURN = [
    {"role": "user", "content": "My order number is 4417 and it shipped on Monday."},
    {"role": "assistant", "content": "Thanks, noted."},
    {"role": "user", "content": "When did it ship?"},
    {"role": "assistant", "content": "Your order 4417 shipped on Monday."},
]


def test_a_conversation_gives_sources_with_kinds_and_ids():
    conversation = read_conversation(
        [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]}, *FAILED_TOOL]
    )
    assert conversation.response == "Flight BA117 departs at 9:40."
    assert conversation.question == "When does flight BA117 leave?"
    # the question being answered is no source (it never supports its answer)
    assert [(s.id, s.kind, s.tool_name, s.failed) for s in conversation.sources] == [
        ("system", SourceKind.SYSTEM_PROMPT, None, False),
        ("call_1", SourceKind.TOOL_RESULT, "flight_status", True),
    ]


def test_a_claim_resting_only_on_a_failed_tool_call_is_unsupported_and_says_why():
    failed = hallumeasure.check(messages=FAILED_TOOL)
    (claim,) = failed.claims
    assert claim.label is Label.ABSENT and claim.unsupported
    assert "failed tool call (flight_status, call call_1)" in (claim.label_reason or "")
    assert [(e.source_kind, e.passage_id) for e in claim.evidence] == [(SourceKind.TOOL_RESULT, "call_1")]
    # the same answer from a call that worked is supported, and its evidence names the call
    (ok,) = hallumeasure.check(messages=WORKING_TOOL).claims
    assert ok.label is Label.SUPPORTED
    assert [(e.source_kind, e.passage_id, e.verified) for e in ok.evidence] == [
        (SourceKind.TOOL_RESULT, "call_1", True)
    ]


def test_a_response_with_no_source_is_unevaluatable_never_supported():
    result = hallumeasure.check(messages=NO_SOURCE)
    assert [c.label for c in result.claims] == [Label.UNEVALUATABLE]
    assert "no source" in (result.claims[0].label_reason or "")
    assert result.n_evaluated == 0 and result.unsupported_rate is None
    assert result.hallucinated is not True


def test_earlier_user_turns_are_sources_only_when_the_settings_say_so():
    assert [c.label for c in hallumeasure.check(messages=USER_TURN).claims] == [Label.UNEVALUATABLE]
    (claim,) = hallumeasure.check(messages=USER_TURN, user_turns=True).claims
    assert claim.label is Label.SUPPORTED
    assert [(e.source_kind, e.passage_id) for e in claim.evidence] == [(SourceKind.USER_TURN, "user-1")]


def test_measure_reads_messages_in_jsonl_and_records_the_user_turn_choice(tmp_path: Path):
    path = tmp_path / "conversations.jsonl"
    rows = [{"id": "failed", "messages": FAILED_TOOL}, {"id": "none", "messages": NO_SOURCE}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    run = hallumeasure.measure(path, out=tmp_path / "run")
    assert run.manifest.settings["sources"]["user_turns"] is False
    verdicts = {r.sample_id: r.verdicts[0] for r in run.results}
    assert verdicts["failed"].label is Label.ABSENT
    assert verdicts["failed"].evidence[0].source_kind is SourceKind.TOOL_RESULT
    assert verdicts["none"].label is Label.UNEVALUATABLE
    stored = {s.id: s for s in run.samples}
    assert stored["failed"].passages[-1].failed is True  # the store keeps the source's kind and flag
    again = hallumeasure.measure(path, out=tmp_path / "run2", user_turns=True)
    assert again.manifest.settings["sources"]["user_turns"] is True


def test_messages_without_an_answer_are_refused():
    with pytest.raises(InputError, match="no assistant answer"):
        hallumeasure.check(messages=[{"role": "user", "content": "Hello?"}])
    with pytest.raises(InputError, match="role"):
        hallumeasure.check(messages=[{"role": "robot", "content": "Hi"}])


def test_a_quote_in_a_document_and_in_the_system_prompt_that_copies_it_comes_from_the_document():
    from hallumeasure.core.types import Passage, Sample
    from hallumeasure.sources.evidence import verify

    doc = "Standard delivery takes 3 working days."
    sample = Sample(
        id="s",
        response="x",
        passages=(
            Passage(id="kb-12", text=doc),
            Passage(id="system", text=f"Answer from these documents:\n{doc}", kind=SourceKind.SYSTEM_PROMPT),
        ),
    )
    found = verify(sample, None, "delivery takes 3 working days")
    assert (found.verified, found.passage_id, found.source_kind) == (True, "kb-12", SourceKind.PASSAGE)
    twins = Sample(id="t", response="x", passages=(Passage(id="a", text=doc), Passage(id="b", text=doc)))
    assert not verify(twins, None, "delivery takes 3 working days").verified  # which passage? it cannot say
