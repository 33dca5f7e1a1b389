"""Reading a conversation's sources as apps send them: context pasted into the user message, JSON tool
results and the arguments of tool calls."""

from __future__ import annotations

import json

import pytest

from hallumeasure.core.types import SourceKind
from hallumeasure.runs.json_facts import json_facts
from hallumeasure.runs.messages import read_conversation
from hallumeasure.runs.user_context import split_user_message


@pytest.mark.parametrize(
    ("message", "context", "asked"),
    [
        (
            "Context: The Zephyr bridge is 2.4 km long.\n\nQuestion: How long is the Zephyr bridge?",
            ["The Zephyr bridge is 2.4 km long."],
            "How long is the Zephyr bridge?",
        ),
        (
            "Context: The Zephyr bridge is 2.4 km long.\n\nHow long is the Zephyr bridge?",
            ["The Zephyr bridge is 2.4 km long."],
            "How long is the Zephyr bridge?",
        ),
        (
            "Documents:\n[1] Alpha is red.\n[2] Beta is blue.\nQuestion: What colour is Alpha?",
            ["Alpha is red.", "Beta is blue."],
            "What colour is Alpha?",
        ),
        (
            "Use the following passages to answer:\nAlpha is red.\n\nQuery: What colour is Alpha?",
            ["Alpha is red."],
            "What colour is Alpha?",
        ),
        (
            "## Context\nAlpha is red.\n## Question\nWhat colour is Alpha?",
            ["Alpha is red."],
            "What colour is Alpha?",
        ),
        (
            '<documents><document index="1">Alpha is red.</document><document>Beta is blue.</document></documents>\n'
            "What colour is Alpha?",
            ["Alpha is red.", "Beta is blue."],
            "What colour is Alpha?",
        ),
        ("```\nAlpha is red.\n```\nWhat colour is Alpha?", ["Alpha is red."], "What colour is Alpha?"),
        # common RAG templates (LangChain's question-answering prompt, LlamaIndex's text QA prompt)
        (
            "Use the following pieces of context to answer the question at the end.\n\nAlpha is red.\n\n"
            "Question: What colour is Alpha?\nHelpful Answer:",
            ["Alpha is red."],
            "What colour is Alpha?",
        ),
        (
            "Context information is below.\n-----\nAlpha is red.\n-----\nGiven the context, answer the query.\n"
            "Query: What colour is Alpha?\nAnswer: ",
            ["Alpha is red."],
            "Given the context, answer the query.\nWhat colour is Alpha?",
        ),
        (
            "> Alpha is red.\n> Beta is blue.\n\nWhat colour is Alpha?",
            ["Alpha is red.\nBeta is blue."],
            "What colour is Alpha?",
        ),
        # the user's own words are no context, even when they state facts or say "sources"
        ("My order 4417 shipped on Monday. When will it arrive?", [], None),
        ("Sources say the bridge is old. Is it?", [], None),
        ("```\nprint('hi')\n```", [], None),
    ],
)
def test_context_pasted_into_a_user_message_is_told_apart_from_the_request(
    message: str, context: list[str], asked: str | None
) -> None:
    found = split_user_message(message)
    assert [text for _, text in found.context] == context
    assert found.request == (asked if asked is not None else message.strip())


def test_a_conversation_gives_user_context_as_a_source_and_never_the_question() -> None:
    conversation = read_conversation(
        [
            {"role": "system", "content": "Answer from the context only."},
            {"role": "user", "content": "I am planning a trip."},
            {"role": "assistant", "content": "Happy to help."},
            {"role": "user", "content": "Context: The Zephyr bridge is 2.4 km long.\n\nQuestion: How long is it?"},
            {"role": "assistant", "content": "The Zephyr bridge is 2.4 km long."},
        ]
    )
    assert conversation.question == "How long is it?"
    assert [(s.id, s.kind, s.text, s.title) for s in conversation.sources] == [
        ("system", SourceKind.SYSTEM_PROMPT, "Answer from the context only.", None),
        ("user-1", SourceKind.USER_TURN, "I am planning a trip.", None),
        ("user-context-1", SourceKind.USER_CONTEXT, "The Zephyr bridge is 2.4 km long.", "Context"),
    ]


def test_json_is_read_as_facts_with_numbers_and_dates_in_plain_forms() -> None:
    raw = json.dumps(
        {
            "name": "Arlo stadium",
            "seats": 52000,
            "opening_date": "2026-11-24",
            "roofed": False,
            "year": 2003,
            "tags": ["football", "concerts"],
            "address": {"city": "Lyon"},
            "events": [{"startsAt": "2026-11-24T19:30:00Z", "act": "Mara"}],
        }
    )
    assert json_facts(raw) == (
        "name: Arlo stadium; seats: 52,000; opening date: November 24, 2026; roofed: no; year: 2003; "
        "tags: football, concerts.\n"
        "address: city: Lyon.\n"
        "events 1: starts at: November 24, 2026, 19:30; act: Mara."
    )
    assert json_facts("Error: timeout") is None and json_facts("[not json") is None and json_facts("42") is None


def test_a_json_tool_result_is_facts_led_by_its_call_and_keeps_its_raw_json() -> None:
    arguments = json.dumps({"venue": "Arlo stadium"})
    conversation = read_conversation(
        [
            {"role": "user", "content": "How many seats?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_7", "type": "function", "function": {"name": "venue_info", "arguments": arguments}},
                    {"id": "call_8", "type": "function", "function": {"name": "weather", "arguments": arguments}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_7", "content": '{"seats": 52000}'},
            {"role": "assistant", "content": "It has 52,000 seats."},
        ]
    )
    result, unanswered = conversation.sources
    assert (result.id, result.kind, result.call_id, result.tool_name) == (
        "call_7",
        SourceKind.TOOL_RESULT,
        "call_7",
        "venue_info",
    )
    assert result.text == "venue_info (venue: Arlo stadium): seats: 52,000."
    assert result.raw == '{"seats": 52000}'
    # a call whose result never came is still a source: what the assistant asked for
    assert (unanswered.id, unanswered.kind, unanswered.call_id) == ("call_8:args", SourceKind.TOOL_CALL, "call_8")
    assert unanswered.text == "weather call: venue: Arlo stadium" and unanswered.raw == arguments
