"""How each labelled dataset's own annotation names translate into our labels and subtypes.

Two kinds of table, one entry per dataset:

* ``ERROR_TYPE_MAPS``: the dataset's human error-type names -> our ``Subtype`` (or ``None``
  when no single subtype fits) and, where the name says it, the ``Label`` it implies
  (an "intrinsic" error misstates the source: contradicted; an "extrinsic" one adds
  something the source does not have: absent).
* ``CLAIM_LABEL_MAPS``: the dataset's claim label strings -> our ``Label`` (or ``None`` when
  several fit) and whether the claim counts as unsupported.

Rules: a name that is in a table with ``subtype=None`` is *unmapped on purpose* (the note
says why); a name that is in no table is *unknown*. Both are reported by the bench and never
replaced by a guess. Names are compared after ``normalise_type_name`` (case, separators and a
trailing "error" ignored). After a dataset's own table, our own label and subtype names are
accepted for every dataset, so a user's file written with our vocabulary needs no table.

Where each dataset keeps its error types: ``error_types`` of the record, except for the
datasets in ``ERROR_TYPE_FIELDS`` (CLIFF keeps AggreFact's unified types in ``meta``).
SummEdits' ``meta.edit_types_gpt4_predicted`` are model predictions, not human labels, and
are deliberately not used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from hallumeasure.core.labels import Label, Subtype


@dataclass(frozen=True)
class TypeMapping:
    """Where one dataset error type lands: a subtype (or None: unmapped on purpose) and an implied label."""

    subtype: Subtype | None
    label: Label | None = None
    note: str = ""


@dataclass(frozen=True)
class ClaimLabelMapping:
    """A dataset claim label: our label when one fits, and whether it counts as unsupported (None: excluded)."""

    label: Label | None
    unsupported: bool | None


def normalise_type_name(name: str) -> str:
    """A dataset's subtype name in our words.

    ``"Intrinsic Entity Error"`` -> ``"intrinsic entity"``; ``"extrinsic-entire_sent"`` -> ``"extrinsic entire sent"``.
    """
    text = re.sub(r"[\s_\-]+", " ", str(name).strip().lower())
    return re.sub(r" ?error$", "", text).strip()


_C, _A = Label.CONTRADICTED, Label.ABSENT

_PREDICATE = (
    "a wrong verb or relation; it can be a reasoning error, hyperbole, a temporal slip or other, so no single subtype"
)
_CIRCUMSTANCE = "wrong time, duration or place of an event; spans temporal, number and entity, so no single subtype"
_CORE = (
    "a pronoun or reference pointing at the wrong or a missing entity; "
    "once pronouns are resolved in claims, the claim names a wrong entity"
)
_NP = "noun-phrase errors cover names, numbers and dates alike, which we split into entity / number / temporal"
_SENT = "the whole sentence is unsupported; this is a label-level finding with no finer subtype"

#: dataset -> normalised error-type name -> mapping. BUMP follows the FRANK-style taxonomy;
#: CLIFF's types are AggreFact's unified intrinsic/extrinsic x NP/predicate/sentence types.
ERROR_TYPE_MAPS: dict[str, dict[str, TypeMapping]] = {
    "bump": {
        "intrinsic entity": TypeMapping(Subtype.ENTITY, _C, "an entity of the article put in the wrong place"),
        "extrinsic entity": TypeMapping(Subtype.ENTITY, _A, "an entity the article does not mention"),
        "intrinsic predicate": TypeMapping(None, _C, _PREDICATE),
        "extrinsic predicate": TypeMapping(None, _A, _PREDICATE),
        "intrinsic circumstance": TypeMapping(None, _C, _CIRCUMSTANCE),
        "extrinsic circumstance": TypeMapping(None, _A, _CIRCUMSTANCE),
        "coreference": TypeMapping(Subtype.ENTITY, None, _CORE),
        "other": TypeMapping(Subtype.OTHER, None, "the catch-all class on both sides"),
    },
    "cliff": {
        "intrinsic np": TypeMapping(None, _C, _NP),
        "extrinsic np": TypeMapping(None, _A, _NP),
        "intrinsic predicate": TypeMapping(None, _C, _PREDICATE),
        "extrinsic predicate": TypeMapping(None, _A, _PREDICATE),
        "intrinsic entire sent": TypeMapping(None, _C, _SENT),
        "extrinsic entire sent": TypeMapping(None, _A, _SENT),
    },
}

#: Datasets whose human error types are not in the record's ``error_types`` field: dotted path.
ERROR_TYPE_FIELDS: dict[str, str] = {"cliff": "meta.aggrefact_error_types"}

#: Our own vocabulary, accepted for every dataset after its own table.
GENERIC_ERROR_TYPES: dict[str, TypeMapping] = {
    **{normalise_type_name(s.value): TypeMapping(s) for s in Subtype},
}

_UNSUPPORTED_BY_DEFAULT = {Label.CONTRADICTED, Label.ABSENT, Label.PARTIALLY_SUPPORTED}

#: Our five labels plus two common spellings of "not supported"; unevaluatable claims are excluded.
GENERIC_CLAIM_LABELS: dict[str, ClaimLabelMapping] = {
    **{
        label.value: ClaimLabelMapping(
            label, None if label == Label.UNEVALUATABLE else label in _UNSUPPORTED_BY_DEFAULT
        )
        for label in Label
    },
    "not_supported": ClaimLabelMapping(None, True),
    "unsupported": ClaimLabelMapping(None, True),
}

#: dataset -> claim label string -> mapping.
CLAIM_LABEL_MAPS: dict[str, dict[str, ClaimLabelMapping]] = {
    # WiCE: "not_supported" means the cited evidence does not back the claim; it does not say
    # whether the evidence is silent (absent) or opposed (contradicted), so no fine label.
    "wice": {
        "supported": ClaimLabelMapping(Label.SUPPORTED, False),
        "partially_supported": ClaimLabelMapping(Label.PARTIALLY_SUPPORTED, True),
        "not_supported": ClaimLabelMapping(None, True),
    },
}


def claim_label(dataset: str, raw: str) -> ClaimLabelMapping | None:
    """The mapping of a claim label string for ``dataset``; None when the string is unknown."""
    key = str(raw).strip().lower()
    table = CLAIM_LABEL_MAPS.get(dataset, {})
    return table.get(key) or GENERIC_CLAIM_LABELS.get(key)


def error_type(dataset: str, name: str) -> TypeMapping | None:
    """The mapping of one error-type name for ``dataset``; None when the name is in no table."""
    key = normalise_type_name(name)
    return ERROR_TYPE_MAPS.get(dataset, {}).get(key) or GENERIC_ERROR_TYPES.get(key)


@dataclass
class MappedTypes:
    """Error types of one response after mapping: subtypes found, names unmapped on purpose, unknown names."""

    subtypes: list[Subtype] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def single(self) -> Subtype | None:
        """The one subtype of the response when every name maps and all map to the same subtype."""
        distinct = set(self.subtypes)
        if len(distinct) == 1 and not self.unmapped and not self.unknown:
            return next(iter(distinct))
        return None


def map_error_types(dataset: str, names: Iterable[str]) -> MappedTypes:
    """Map a response's error-type names; every name ends up in exactly one of the three lists."""
    out = MappedTypes()
    for name in names:
        mapping = error_type(dataset, name)
        if mapping is None:
            out.unknown.append(name)
        elif mapping.subtype is None:
            out.unmapped.append(name)
        else:
            out.subtypes.append(mapping.subtype)
    return out
