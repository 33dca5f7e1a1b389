"""Default answers of the simulators: schema-valid tool inputs with deterministic usage, and an example
value for any JSON schema."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from hallumeasure.core.text import count_tokens
from hallumeasure.models.fake import demo_responder
from hallumeasure.testing.calls import Answer, Call, Tokens

AnswerFn = Callable[[Call], Answer]


def schema_answer(call: Call) -> Answer:
    """Answer a tool request with an input built from the tool's JSON Schema, else with a short text."""
    if call.tool is not None:
        tool_input = schema_example(call.tool.get("input_schema") or {"type": "object"})
        return _tool_answer(call, tool_input if isinstance(tool_input, dict) else {"value": tool_input})
    text = "This is a simulated answer."
    usage = Tokens(input_tokens=count_tokens(call.prompt_text), output_tokens=count_tokens(text))
    return Answer(text=text, usage=usage, model=call.model)


def default_answer(call: Call) -> Answer:
    """``schema_answer``, except that hallumeasure's own prompts get the fake demo model's answers.

    The demo answers read the prompt (claims from the response, claim ids, word overlap with the
    context), so that every classify mode runs end to end; any other tool gets a schema example.
    """
    if call.tool is not None:
        demo = demo_responder(call.to_request())
        if isinstance(demo, dict):
            return _tool_answer(call, demo)
    return schema_answer(call)


def _tool_answer(call: Call, tool_input: dict[str, Any]) -> Answer:
    assert call.tool is not None
    input_tokens = count_tokens(call.prompt_text) + count_tokens(json.dumps(call.tool, sort_keys=True))
    return Answer(
        tool_name=call.tool["name"],
        tool_input=tool_input,
        stop_reason="tool_use",
        usage=Tokens(input_tokens=input_tokens, output_tokens=count_tokens(json.dumps(tool_input, sort_keys=True))),
        model=call.model,
    )


_MAX_DEPTH = 16


def schema_example(schema: Mapping[str, Any], *, root: Mapping[str, Any] | None = None, name: str = "value") -> Any:
    """A deterministic instance of a JSON Schema (the subset pydantic emits: refs, anyOf, enums, bounds)."""
    return _example(schema, root if root is not None else schema, name, 0)


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part.replace("~1", "/").replace("~0", "~")]
    merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return _resolve(merged, root)


def _example(schema: Mapping[str, Any], root: Mapping[str, Any], name: str, depth: int) -> Any:
    schema = _resolve(schema, root)
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if schema.get("enum"):
        return copy.deepcopy(schema["enum"][0])
    if "default" in schema:
        return copy.deepcopy(schema["default"])
    for key in ("anyOf", "oneOf"):
        if options := schema.get(key):
            non_null = [o for o in options if _resolve(o, root).get("type") != "null"]
            return _example(non_null[0], root, name, depth + 1) if non_null else None
    if all_of := schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in all_of:
            part = _resolve(part, root)
            merged.update({k: v for k, v in part.items() if k not in ("properties", "required")})
            merged.setdefault("properties", {}).update(part.get("properties", {}))
            merged.setdefault("required", []).extend(part.get("required", []))
        return _example(merged, root, name, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "object":
        properties = schema.get("properties", {})
        if depth >= _MAX_DEPTH:  # recursive schemas: stop at the required properties
            properties = {k: v for k, v in properties.items() if k in schema.get("required", ())}
        return {key: _example(sub, root, key, depth + 1) for key, sub in properties.items()}
    if kind == "array":
        low = schema.get("minItems", 0)
        count = low if depth >= _MAX_DEPTH else max(low, 1)
        if "maxItems" in schema:
            count = min(count, schema["maxItems"])
        items = schema.get("items", {})
        return [_example(items, root, f"{name} {i + 1}", depth + 1) for i in range(count)]
    if kind in ("integer", "number"):
        value: float = 0
        if "minimum" in schema:
            value = schema["minimum"]
        elif "exclusiveMinimum" in schema:
            value = schema["exclusiveMinimum"] + 1
        if "maximum" in schema:
            value = min(value, schema["maximum"])
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string_example(schema, name)


def _string_example(schema: Mapping[str, Any], name: str) -> str:
    formats = {"date-time": "2024-01-01T00:00:00Z", "date": "2024-01-01", "email": "someone@example.com"}
    text = formats.get(schema.get("format", ""), f"simulated {name}")
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if len(text) < low:
        text = text + "x" * (low - len(text))
    return text[:high] if high is not None else text
