"""The JSON contracts of LLM answers. Each is sent as a forced tool's input schema and validated on return.

In every contract the reason field comes before the verdict it explains, so that a model
writing left to right reasons first and decides second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

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


class _SubtypeRule(_Contract):
    """Supported and unevaluatable claims carry no subtype; the other labels must name one."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_subtype_rule_schema)

    if TYPE_CHECKING:  # each subclass declares them, in its own place of the schema's field order
        label: Label
        subtype: Subtype | None

    @model_validator(mode="after")
    def _subtype_only_when_unsupported(self) -> _SubtypeRule:
        if self.label not in LABELS_WITH_SUBTYPE:
            self.subtype = None
        elif self.subtype is None:
            raise ValueError(f"label {self.label.value!r} needs a subtype (one of {[s.value for s in Subtype]})")
        return self


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
