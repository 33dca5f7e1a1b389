"""The JSON contracts of LLM answers. Each is sent as a forced tool's input schema and validated on return.

In every contract the reason field comes before the verdict it explains, so that a model
writing left to right reasons first and decides second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    field_validator,
    model_validator,
)

from hallumeasure.core.labels import LABELS_WITH_SUBTYPE, Label, Subtype


class _Contract(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ExtractedClaim(_Contract):
    text: str = Field(min_length=1, description="One atomic, self-contained claim.")
    source_sentence: str | None = Field(default=None, description="The response sentence it comes from, verbatim.")


class ExtractedClaims(_Contract):
    claims: list[ExtractedClaim]


def _normalise_enum(value: object) -> object:
    # "Partially Supported" and "partially-supported" mean the same label.
    if isinstance(value, str):
        return value.strip().lower().replace("-", "_").replace(" ", "_")
    return value


def _normalise_subtype(value: object) -> object:
    value = _normalise_enum(value)
    return None if value in ("", "none", "null", "n/a") else value


LabelField = Annotated[Label, BeforeValidator(_normalise_enum)]
SubtypeField = Annotated[Subtype | None, BeforeValidator(_normalise_subtype)]


def _verdict_schema(schema: dict[str, Any], cls: type) -> None:
    """Every field required, in the contract's order, and the subtype rule stated.

    Grammar-constrained servers (llama.cpp, vLLM) build a grammar from the tool schema that writes
    the required properties first: with every property required, the order stays the contract's
    (reason before verdict), and an empty field is written as null or [] rather than moved. The
    parser still accepts an answer without the optional ones."""
    schema["required"] = list(schema.get("properties", {}))
    _subtype_rule_schema(schema, cls)


def _subtype_rule_schema(schema: dict[str, Any], cls: type) -> None:
    """State the subtype rule in the JSON Schema too, so that a model following the tool's schema
    is not re-asked for it: ``if`` the label is one that needs a subtype, ``then`` a subtype is
    required and is not null (a string; the ``subtype`` property already limits strings to the ten
    subtypes, so the list is not repeated: the tool is part of every request's prompt).
    ``if``/``then`` (not ``oneOf``/``anyOf``, which Claude's APIs refuse at a tool schema's top level)
    keeps the schema acceptable to Anthropic, Bedrock and OpenAI-compatible servers."""
    schema["if"] = {
        "properties": {"label": {"enum": sorted(label.value for label in LABELS_WITH_SUBTYPE)}},
        "required": ["label"],
    }
    schema["then"] = {"properties": {"subtype": {"type": "string"}}, "required": ["subtype"]}


class EvidenceQuote(_Contract):
    # The prompts state the evidence rule; the schema keeps only the reminder that matters while writing.
    passage_id: Annotated[str, BeforeValidator(lambda v: str(v) if isinstance(v, int) else v)]
    quote: str = Field(description="Copied word for word from that passage.")


def _as_list(value: object) -> object:
    # One quote sent as an object instead of a list of one; null for none.
    if value is None:
        return []
    return [value] if isinstance(value, dict) else value


EvidenceField = Annotated[list[EvidenceQuote], BeforeValidator(_as_list)]
_EVIDENCE: list[EvidenceQuote] = Field(default_factory=list)


_SUBTYPES = frozenset(s.value for s in Subtype)


class _SubtypeRule(_Contract):
    """Supported and unevaluatable claims carry no subtype; the other labels name one.

    A label is worth more than its subtype: an answer whose label needs a subtype but names none,
    or one that is not among the ten (a grammar-constrained server may drop the schema's rule),
    keeps its label and gets ``other``; ``repairs`` says what was changed, for the verdict's record.
    """

    model_config = ConfigDict(extra="ignore", json_schema_extra=_verdict_schema)
    _repairs: list[str] = PrivateAttr(default_factory=list)

    if TYPE_CHECKING:  # each subclass declares them, in its own place of the schema's field order
        label: Label
        subtype: Subtype | None

    @property
    def repairs(self) -> list[str]:
        """What the parser changed in this answer to keep it (empty: taken as given)."""
        return self._repairs

    @model_validator(mode="wrap")
    @classmethod
    def _subtype_only_when_unsupported(cls, data: Any, handler: ModelWrapValidatorHandler[_SubtypeRule]) -> Any:
        given = None
        if isinstance(data, dict) and isinstance(data.get("subtype"), str):
            normalised = _normalise_subtype(data["subtype"])
            if normalised is not None and normalised not in _SUBTYPES:
                given, data = data["subtype"], {**data, "subtype": None}
        value = handler(data)
        if value.label not in LABELS_WITH_SUBTYPE:
            value.subtype = None
        elif value.subtype is None:
            value.subtype = Subtype.OTHER
            what = f"subtype {str(given)[:60]!r} is not one of the ten" if given is not None else "no subtype given"
            value._repairs.append(f"{what} for label {value.label.value!r}: subtype set to 'other'")
        return value


class PlainVerdict(_SubtypeRule):
    evidence: EvidenceField = _EVIDENCE
    label: LabelField
    subtype: SubtypeField = None


class CotVerdict(_SubtypeRule):
    label_reason: str = Field(min_length=1)
    evidence: EvidenceField = _EVIDENCE
    label: LabelField
    subtype_reason: str | None = None
    subtype: SubtypeField = None


class PlainClaimVerdict(_SubtypeRule):
    claim_id: str
    evidence: EvidenceField = _EVIDENCE
    label: LabelField
    subtype: SubtypeField = None


class CotClaimVerdict(_SubtypeRule):
    claim_id: str
    label_reason: str = Field(min_length=1)
    evidence: EvidenceField = _EVIDENCE
    label: LabelField
    subtype_reason: str | None = None
    subtype: SubtypeField = None


class PlainVerdicts(_Contract):
    verdicts: list[PlainClaimVerdict]


class CotVerdicts(_Contract):
    verdicts: list[CotClaimVerdict]


class Rewrite(_Contract):
    reasoning: str
    rewritten_response: str


class NliJudgement(_Contract):
    reason: str
    label: Literal["entailment", "neutral", "contradiction"]

    @field_validator("label", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return _normalise_enum(value)


CascadeCategory = Literal[
    "number",
    "entity",
    "false_concatenation",
    "attribution_failure",
    "overgeneralization",
    "reasoning_error",
    "hyperbole",
    "temporal",
    "context_based_meaning",
    "other",
    "no_problem_found",
]


class CascadeExplanation(_Contract):
    reason: str
    category: CascadeCategory

    @field_validator("category", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return _normalise_enum(value)


def tool_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a contract, as providers expect a tool's input schema.

    Without pydantic's ``title`` keys: they only repeat the property and class names, and the tool
    is part of every request's prompt (billed, in one-claim modes, once per claim).
    """
    schema: dict[str, Any] = _without_titles(model.model_json_schema())
    return schema


def _without_titles(schema: Any) -> Any:
    # Keys of "properties" and "$defs" are names, not keywords: a property called "title" stays.
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: (
            {name: _without_titles(sub) for name, sub in value.items()}
            if key in ("properties", "$defs")
            else _without_titles(value)
        )
        for key, value in schema.items()
        if key != "title"
    }
