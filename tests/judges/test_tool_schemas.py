"""The tool schemas state the label/subtype rule themselves (JSON Schema if/then), agree with the
pydantic validation on every label, and are accepted by all three providers' tool definitions (the
simulators refuse what the APIs refuse: a non-object schema, oneOf/allOf/anyOf at the top level)."""

import itertools

import pytest
from jsonschema import Draft202012Validator
from provider_fixtures import generate_once
from testdata import aws_session

from hallumeasure.core.labels import Label
from hallumeasure.judges.llm.outputs import (
    CascadeExplanation,
    CotVerdict,
    CotVerdicts,
    ExtractedClaims,
    NliJudgement,
    PlainVerdict,
    PlainVerdicts,
    Rewrite,
    tool_schema,
)
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.base import GenerateRequest, Message, ToolSpec
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.langchain import LangChainAPI
from hallumeasure.testing import AnthropicServer, BedrockServer, OpenAIServer
from hallumeasure.testing.server import check_tool_schema

CONTRACTS = [
    ExtractedClaims,
    CotVerdict,
    PlainVerdict,
    CotVerdicts,
    PlainVerdicts,
    Rewrite,
    NliJudgement,
    CascadeExplanation,
]


def _verdict(contract, label: str, subtype: str | None) -> dict:
    # Every field present (the schema requires them all, so that grammars keep their order).
    value = {
        "label_reason": "Because.",
        "evidence": [],
        "label": label,
        "subtype_reason": "Because.",
        "subtype": subtype,
    }
    if contract in (PlainVerdict, PlainVerdicts):
        value = {k: v for k, v in value.items() if not k.endswith("_reason")}
    if contract in (CotVerdicts, PlainVerdicts):
        return {"verdicts": [{"claim_id": "c0", **value}]}
    return value


@pytest.mark.parametrize("contract", [CotVerdict, PlainVerdict, CotVerdicts, PlainVerdicts])
@pytest.mark.parametrize(
    ("label", "subtype"), list(itertools.product([label.value for label in Label], [None, "number"]))
)
def test_the_schema_states_the_subtype_rule_and_the_validator_repairs_what_it_rejects(contract, label, subtype):
    validator = Draft202012Validator(tool_schema(contract))
    value = _verdict(contract, label, subtype)
    needs_subtype = label not in ("supported", "unevaluatable")
    assert validator.is_valid(value) == (subtype is not None or not needs_subtype)
    # The validator keeps every label: a missing subtype becomes 'other' with a note, never an error.
    parsed = contract.model_validate(value)
    item = parsed.verdicts[0] if contract in (CotVerdicts, PlainVerdicts) else parsed
    expected = (subtype or "other") if needs_subtype else None
    assert item.subtype == expected
    assert bool(item.repairs) == (needs_subtype and subtype is None)


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: c.__name__)
def test_every_tool_schema_is_accepted_by_every_provider(contract, monkeypatch):
    schema = tool_schema(contract)
    check_tool_schema(0, schema)
    Draft202012Validator.check_schema(schema)
    request = GenerateRequest(
        system="s",
        messages=(Message.user("u"),),
        max_tokens=64,
        tool=ToolSpec(name="record", description="Record it.", input_schema=schema),
    )
    with AnthropicServer() as anthropic, BedrockServer() as bedrock, OpenAIServer() as openai:
        apis = [
            AnthropicAPI("claude-test", api_key="test-key", base_url=anthropic.base_url),
            BedrockAPI(
                "anthropic.claude-3-haiku-20240307-v1:0", session=aws_session(), endpoint_url=bedrock.endpoint_url
            ),
            LangChainAPI("langchain_openai:ChatOpenAI", model="m", base_url=openai.base_url, api_key="unused"),
        ]
        for api in apis:
            assert generate_once(api, request).tool_input is not None
        for srv in (anthropic, bedrock, openai):
            assert [r.status for r in srv.log] == [200]


def test_the_simulators_refuse_what_the_apis_refuse():
    with pytest.raises(ValueError, match="does not support oneOf, allOf, or anyOf at the top level"):
        check_tool_schema(0, {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]})
    with pytest.raises(ValueError, match="type object"):
        check_tool_schema(0, {"type": "array"})
