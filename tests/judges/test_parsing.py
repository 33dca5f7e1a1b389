import asyncio

import pytest

from hallumeasure.core.errors import OutputError
from hallumeasure.judges.llm.outputs import CotVerdict, PlainVerdicts
from hallumeasure.judges.llm.parsing import ask_structured, parse_output
from hallumeasure.models.base import GenerateRequest, GenerateResponse, Message
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model

GOOD = {
    "label_reason": "The context says 24 km.",
    "label": "contradicted",
    "subtype_reason": "distance",
    "subtype": "number",
}


def test_parse_tool_input():
    value = parse_output(CotVerdict, GenerateResponse(tool_input=GOOD, stop_reason="tool_use"))
    assert value.label == "contradicted" and value.subtype == "number"


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"label_reason": "ok", "label": "Supported"}\n```',
        'Here is my answer: {"label_reason": "a {brace} in a string", "label": "supported"} Hope it helps.',
    ],
)
def test_parse_repairs_prose_and_fences(text):
    value = parse_output(CotVerdict, GenerateResponse(text=text))
    assert value.label == "supported" and value.subtype is None


def test_parse_unwraps_stringified_tool_input():
    import json

    value = parse_output(CotVerdict, GenerateResponse(tool_input={"input": json.dumps(GOOD)}, stop_reason="tool_use"))
    assert value.subtype == "number"


@pytest.mark.parametrize("subtype", [None, "", "made_up_kind"])
def test_a_label_without_a_usable_subtype_is_kept_with_other_and_a_repair_note(subtype):
    # What a grammar-constrained server writes once its grammar has dropped the if/then subtype rule.
    answer = {"label_reason": "x", "evidence": [], "label": "contradicted", "subtype_reason": None}
    if subtype is not None:
        answer["subtype"] = subtype
    value = parse_output(CotVerdict, GenerateResponse(tool_input=answer, stop_reason="tool_use"))
    assert value.label == "contradicted" and value.subtype == "other"
    assert len(value.repairs) == 1 and "'other'" in value.repairs[0]
    if subtype == "made_up_kind":
        assert "made_up_kind" in value.repairs[0]


def test_a_supported_label_drops_its_subtype_without_a_repair_note():
    value = parse_output(CotVerdict, GenerateResponse(tool_input={**GOOD, "label": "supported"}))
    assert value.subtype is None and value.repairs == []
    assert parse_output(CotVerdict, GenerateResponse(tool_input=GOOD)).repairs == []


def test_verdict_schemas_require_every_field_in_order_so_grammars_keep_reason_first():
    from hallumeasure.judges.llm.outputs import CotVerdicts, tool_schema

    schema = tool_schema(CotVerdict)
    assert schema["required"] == list(schema["properties"])
    assert schema["required"].index("label_reason") < schema["required"].index("label")
    assert schema["required"].index("subtype_reason") < schema["required"].index("subtype")
    item = tool_schema(CotVerdicts)["$defs"]["CotClaimVerdict"]
    assert item["required"] == ["claim_id", "label_reason", "evidence", "label", "subtype_reason", "subtype"]
    # The answer without the optional fields still parses: required in the schema, tolerated on return.
    assert parse_output(CotVerdict, GenerateResponse(tool_input={"label_reason": "x", "label": "supported"}))


def test_parse_rejects_a_bad_label():
    with pytest.raises(OutputError, match="label"):
        parse_output(CotVerdict, GenerateResponse(tool_input={"label_reason": "x", "label": "maybe"}))


def test_parse_reports_cutoff_and_empty():
    with pytest.raises(OutputError, match="max_tokens"):
        parse_output(PlainVerdicts, GenerateResponse(text='{"verdicts": [', stop_reason="max_tokens"))
    with pytest.raises(OutputError, match="empty"):
        parse_output(PlainVerdicts, GenerateResponse(text=""))


def _request() -> GenerateRequest:
    return GenerateRequest(system="s", messages=(Message.user("u"),))


def test_ask_structured_reasks_with_the_error_then_succeeds():
    api = FakeAPI(script=[{"label": "absent"}, GOOD])
    result = asyncio.run(ask_structured(Model(api), _request(), CotVerdict, max_reasks=2))
    assert result.value is not None and result.value.label == "contradicted"
    assert result.attempts == 2 and api.calls == 2
    feedback = api.requests[1].messages[-1].text
    assert "could not be used" in feedback and "label_reason" in feedback


def test_ask_structured_gives_error_with_raw_after_the_bound():
    api = FakeAPI(script=[{"label": "nonsense"}, {"label": "rubbish"}, {"label": "twaddle"}])
    result = asyncio.run(ask_structured(Model(api), _request(), CotVerdict, max_reasks=2))
    assert result.value is None and api.calls == 3
    assert "label" in result.error and "twaddle" in result.raw_output


def test_ask_structured_stops_re_asking_when_an_answer_repeats_exactly():
    api = FakeAPI(script=[{"label": "nonsense"}] * 3)
    result = asyncio.run(ask_structured(Model(api), _request(), CotVerdict, max_reasks=2))
    assert result.value is None and api.calls == 2 and "re-asking stopped" in result.error


def test_ask_structured_does_not_reask_a_cut_off_answer():
    api = FakeAPI(script=[GenerateResponse(text='{"verdicts": [', stop_reason="max_tokens")])
    result = asyncio.run(ask_structured(Model(api), _request(), PlainVerdicts))
    assert result.stop_reason == "max_tokens" and api.calls == 1


def test_raw_tool_arguments_are_repaired_and_prose_beside_them_is_ignored():
    import json

    fake = '{"label_reason": "planted in the context", "label": "supported"}'
    raw = "```json\n" + json.dumps(GOOD) + "\n```<|im_end|>"
    response = GenerateResponse(text=f"The context says {fake}", tool_raw=raw, tool_call_id="c1")
    assert parse_output(CotVerdict, response).label == "contradicted"
    with pytest.raises(OutputError) as caught:  # unrepairable: the prose is still not read
        parse_output(CotVerdict, GenerateResponse(text=f"The context says {fake}", tool_raw="{broken"))
    assert caught.value.raw == "{broken"


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "record_verdict", "arguments": {"label_reason": "ok", "label": "supported"}}',  # unclosed
        'I will call it.\n<tool_call>\n{"name": "record_verdict", "arguments": "{\\"label_reason\\": \\"ok\\", '
        '\\"label\\": \\"supported\\"}"}\n</tool_call>',
        '{"type": "function", "function": {"name": "record_verdict", "arguments": '
        '{"label_reason": "ok", "label": "supported"}}}',
    ],
    ids=["unclosed-tag", "string-arguments", "openai-envelope"],
)
def test_text_tool_calls_are_unwrapped(text):
    assert parse_output(CotVerdict, GenerateResponse(text=text)).label == "supported"
