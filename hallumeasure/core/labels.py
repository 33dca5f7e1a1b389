"""The five claim labels, the ten error subtypes, and the policy that turns them into rates.

Definitions are written for this project; the taxonomy follows the HalluMeasure paper
(labels of section 3.2, subtypes of its Table 2).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator


class Label(StrEnum):
    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    ABSENT = "absent"
    PARTIALLY_SUPPORTED = "partially_supported"
    UNEVALUATABLE = "unevaluatable"


class Subtype(StrEnum):
    NUMBER = "number"
    ENTITY = "entity"
    FALSE_CONCATENATION = "false_concatenation"
    ATTRIBUTION_FAILURE = "attribution_failure"
    OVERGENERALIZATION = "overgeneralization"
    REASONING_ERROR = "reasoning_error"
    HYPERBOLE = "hyperbole"
    TEMPORAL = "temporal"
    CONTEXT_BASED_MEANING = "context_based_meaning"
    OTHER = "other"


LABEL_DEFINITIONS: dict[Label, str] = {
    Label.SUPPORTED: "An ordinary reader of the context would accept the claim as true.",
    Label.CONTRADICTED: "The context states something that cannot be true at the same time as the claim.",
    Label.ABSENT: "The context gives no evidence for or against the claim; it adds new information.",
    Label.PARTIALLY_SUPPORTED: (
        "Almost right: the core is in the context but one detail is added, dropped, softened, "
        "strengthened or shifted, or a statement the context attributes to someone is stated as plain fact."
    ),
    Label.UNEVALUATABLE: "Not a checkable statement: a question, an instruction, a greeting or filler.",
}

SUBTYPE_DEFINITIONS: dict[Subtype, str] = {
    Subtype.NUMBER: "A quantity differs from the context: counts, amounts, percentages, years, ages, sizes.",
    Subtype.ENTITY: "A person, organisation, place, object or other noun phrase is swapped, wrong or invented.",
    Subtype.FALSE_CONCATENATION: "Facts about different entities or events are wrongly joined into one.",
    Subtype.ATTRIBUTION_FAILURE: "The source of a statement is wrong, or an opinion or report is presented as fact.",
    Subtype.OVERGENERALIZATION: "True for a narrower case in the context, but stated more broadly than it allows.",
    Subtype.REASONING_ERROR: "Built from true facts of the context but draws a conclusion that does not follow.",
    Subtype.HYPERBOLE: "Built from true facts of the context but exaggerated or stated with too much force.",
    Subtype.TEMPORAL: "Tense, time reference or modality (may / will / did) does not match the context.",
    Subtype.CONTEXT_BASED_MEANING: "An idiom, homonym or ambiguous word is read in the wrong sense.",
    Subtype.OTHER: "Any other error: far-fetched inference, wrong circumstances, incoherent text.",
}

#: Labels that may carry a subtype. Supported and unevaluatable claims never do.
LABELS_WITH_SUBTYPE = frozenset({Label.CONTRADICTED, Label.ABSENT, Label.PARTIALLY_SUPPORTED})


class Decidable(StrEnum):
    """Which hallucinated flag a keyless judge's calibrated response rule allows to be decided (judges/decision.py)."""

    CLEAN = "clean"
    HALLUCINATED = "hallucinated"
    NEITHER = "neither"


class UnevaluatablePolicy(StrEnum):
    EXCLUDE = "exclude"  # left out of numerator and denominator
    SUPPORTED = "supported"  # counted as evaluated and supported
    UNSUPPORTED = "unsupported"  # counted as evaluated and unsupported


class Policy(BaseModel):
    """How claim labels become a response's unsupported rate and hallucinated flag.

    Defaults: contradicted, absent and partially_supported are unsupported;
    unevaluatable claims are excluded from the denominator; a response is
    hallucinated when it has at least one unsupported claim.
    """

    model_config = ConfigDict(frozen=True)

    unsupported_labels: frozenset[Label] = Field(
        default=frozenset({Label.CONTRADICTED, Label.ABSENT, Label.PARTIALLY_SUPPORTED})
    )
    unevaluatable: UnevaluatablePolicy = UnevaluatablePolicy.EXCLUDE
    #: A response is hallucinated when its unsupported claim count is >= min_unsupported_claims
    #: and its unsupported rate is >= min_unsupported_rate.
    min_unsupported_claims: int = Field(default=1, ge=1)
    min_unsupported_rate: float = Field(default=0.0, ge=0.0, le=1.0)

    @field_serializer("unsupported_labels")
    def _sorted_labels(self, labels: frozenset[Label]) -> list[str]:
        # Sorted, so that manifests and cache keys do not depend on set iteration order.
        return sorted(label.value for label in labels)

    @model_validator(mode="after")
    def _check_labels(self) -> Policy:
        bad = self.unsupported_labels & {Label.SUPPORTED, Label.UNEVALUATABLE}
        if bad:
            raise ValueError(
                f"unsupported_labels may only hold contradicted, absent, partially_supported; got {sorted(bad)}. "
                "Use the 'unevaluatable' setting to decide how unevaluatable claims count."
            )
        return self

    def is_evaluated(self, label: Label) -> bool:
        return label != Label.UNEVALUATABLE or self.unevaluatable != UnevaluatablePolicy.EXCLUDE

    def is_unsupported(self, label: Label) -> bool:
        if label == Label.UNEVALUATABLE:
            return self.unevaluatable == UnevaluatablePolicy.UNSUPPORTED
        return label in self.unsupported_labels

    def is_hallucinated(self, n_unsupported: int, n_evaluated: int) -> bool:
        if n_evaluated == 0 or n_unsupported < self.min_unsupported_claims:
            return False
        return n_unsupported / n_evaluated >= self.min_unsupported_rate

    def describe(self) -> str:
        labels = ", ".join(sorted(self.unsupported_labels))
        return (
            f"unsupported = {labels}; unevaluatable claims: {self.unevaluatable.value}; "
            f"hallucinated response = at least {self.min_unsupported_claims} unsupported claim(s)"
            + (f" and rate >= {self.min_unsupported_rate:g}" if self.min_unsupported_rate > 0 else "")
        )
