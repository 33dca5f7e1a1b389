"""Typed records that flow through the pipeline: samples -> claims -> verdicts -> results."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hallumeasure.core.judge_checks import JudgeCheck
from hallumeasure.core.labels import Label, Policy, Subtype


class Mode(StrEnum):
    """Classifier prompt configuration: chain of thought or not, one claim per call or all at once."""

    COT_ONE = "cot-one"
    COT_ALL = "cot-all"
    NOCOT_ONE = "nocot-one"
    NOCOT_ALL = "nocot-all"

    @property
    def cot(self) -> bool:
        return self in (Mode.COT_ONE, Mode.COT_ALL)

    @property
    def one_claim(self) -> bool:
        return self in (Mode.COT_ONE, Mode.NOCOT_ONE)


class SourceKind(StrEnum):
    """What a source of a response is: where the judge's evidence for a claim came from."""

    #: A retrieved document, or the one context of a flat sample.
    PASSAGE = "passage"
    #: The result of a tool call (``call_id``, ``tool_name``; ``failed`` when the call errored).
    TOOL_RESULT = "tool_result"
    #: What the user said in an earlier turn; a source only when the settings say so (``user_turns``).
    USER_TURN = "user_turn"
    #: The system prompt (or system instructions) the application gave the model.
    SYSTEM_PROMPT = "system_prompt"
    #: Context pasted into a user message ("Context: ...", documents above the question); a source by
    #: default (``context_in_user_turns``), unlike the user's own words.
    USER_CONTEXT = "user_context"
    #: The arguments of a tool call the assistant made (``call_id``, ``tool_name``): what it asked for.
    TOOL_CALL = "tool_call"


def _non_blank(value: str, message: str) -> str:
    """``value`` without the spaces around it; a ``ValueError`` saying ``message`` when nothing is left."""
    value = value.strip()
    if not value:
        raise ValueError(message)
    return value


class Passage(BaseModel):
    """One source of a response: an id the judge and the response can cite, its text, and what it is.

    Most are retrieved passages (``kind`` passage). From a conversation or a trace a source may also be
    a tool result (with the call's id, the tool's name and whether the call failed), a tool call's
    arguments, context pasted into a user message, an earlier user turn or the system prompt.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    text: str
    title: str | None = None
    url: str | None = None
    kind: SourceKind = SourceKind.PASSAGE
    #: Tool results: the name of the tool and the id of the call that returned this text.
    tool_name: str | None = None
    call_id: str | None = None
    #: Tool results: the call failed or errored; its text is no evidence for a claim.
    failed: bool = False
    #: The source as the application sent it, when ``text`` is a reading of it (JSON read as facts).
    raw: str | None = None

    @field_validator("id")
    @classmethod
    def _strip_id(cls, value: str) -> str:
        return _non_blank(value, "a passage id must not be blank")


@lru_cache(maxsize=32)
def _context_passage(context: str) -> tuple[Passage, ...]:
    """A context as the one passage "1", made once per context: every quote of a sample looks through its sources
    (a passage is frozen, so one object serves every caller)."""
    return (Passage(id="1", text=context),)


class Sample(BaseModel):
    """One response to measure, with the source it should be grounded in.

    The source is either one ``context`` string or a list of ``passages`` (RAG); with passages and
    no context, ``context`` is the passages' texts joined by blank lines, so every stage that reads
    one source text keeps working. ``sources`` gives the passages either way.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    context: str = ""
    response: str
    passages: tuple[Passage, ...] = ()
    question: str | None = None
    model: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: The id as the input wrote it, when ``id`` is a run key made unique by adding the model (the
    #: same question answered by several models shares one id); None when ``id`` is that id.
    input_id: str | None = None

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """A short repr (pytest prints a failing test's arguments on one line): the id, the model, the
        response's start; the source and the rest stay on the fields."""
        yield "id", self.id
        if self.model:
            yield "model", self.model
        yield "response", self.response if len(self.response) <= 40 else self.response[:39] + "…"

    @property
    def given_id(self) -> str:
        """The id the user wrote: ``input_id`` when the run keyed the sample by (id, model), else ``id``."""
        return self.input_id or self.id

    @field_validator("id")
    @classmethod
    def _strip_id(cls, value: str) -> str:
        return _non_blank(value, "id must not be blank")

    @model_validator(mode="after")
    def _context_from_passages(self) -> Sample:
        ids = [p.id for p in self.passages]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"passage ids must be unique within a sample; repeated: {twice}")
        if self.passages and not self.context:
            object.__setattr__(self, "context", joined_text(self.passages))
        return self

    @property
    def sources(self) -> tuple[Passage, ...]:
        """The passages, or the one context as passage "1"."""
        return self.passages or _context_passage(self.context)

    @property
    def has_source(self) -> bool:
        """Whether there is anything to check the response against: a passage or a non-blank context."""
        return bool(self.passages) or bool(self.context.strip())


#: What separates passages when they are read as one context.
PASSAGE_SEPARATOR = "\n\n"


def joined_text(passages: tuple[Passage, ...] | list[Passage]) -> str:
    return PASSAGE_SEPARATOR.join(p.text for p in passages)


class Span(BaseModel):
    """Character offsets [start, end) into the response."""

    model_config = ConfigDict(frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)


class Claim(BaseModel):
    """An atomic statement taken from a response."""

    model_config = ConfigDict(frozen=True)

    id: str
    sample_id: str
    index: int = Field(ge=0)
    text: str
    #: Where the claim comes from in the response; empty when it could not be found there (see ``located``).
    spans: tuple[Span, ...] = ()

    @property
    def located(self) -> bool:
        """Whether the claim's span in the response was found."""
        return bool(self.spans)


class Evidence(BaseModel):
    """A quote that backs (or contradicts) a claim, with where it sits in its passage.

    ``start``/``end`` are character offsets into the passage's text when the quote was found there;
    ``verified`` says whether it was (after light normalisation: whitespace, quote marks, case).
    """

    model_config = ConfigDict(frozen=True)

    passage_id: str | None = None
    #: The kind of the source ``passage_id`` names, set when the quote is verified (None: not found).
    source_kind: SourceKind | None = None
    quote: str
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=0)
    verified: bool = False


class CitationFinding(StrEnum):
    """What a claim's citations say next to its label (see hallumeasure/sources/citations.py)."""

    CORRECT = "correct"  # a cited passage supports the claim
    WRONG_PASSAGE = "wrong_passage"  # cited passages do not support it, another passage does
    UNCITED = "uncited"  # the response cites passages, this claim's sentence cites none
    CITED_CONTRADICTS = "cited_contradicts"  # a cited passage contradicts the claim
    CITED_UNSUPPORTED = "cited_unsupported"  # cites passages, but no passage supports the claim
    UNKNOWN_PASSAGE = "unknown_passage"  # cites only ids that are not among the passages
    UNCHECKED = "unchecked"  # supported, but no verified quote says which passage supports it


class ErrorKind(StrEnum):
    """Why a response, or a claim, is an error row (``ResponseResult.error``, ``ClaimVerdict.error``): set where
    the row is made, so that code asks the kind and never reads it back from the message, which is for people."""

    #: A work limit (``max_response_chars``, ``max_claims``) left the response out; a resume measures it again.
    OVER_LIMIT = "over_limit"
    #: The extractor gave no claims, with its reason (a provider failure or an answer that could not be read).
    EXTRACTION_FAILED = "extraction_failed"
    #: An exception nobody expected while the sample was measured.
    UNEXPECTED = "unexpected"
    #: The result was measured but the run store refused it.
    STORE_FAILURE = "store_failure"
    #: An error row whose kind was not recorded (a run stored before kinds existed, or a caller that gave none).
    UNKNOWN = "unknown"
    # Kinds of a claim's error row (``ClaimVerdict.error_kind``): why the judge gave no verdict.
    #: The request did not fit the model's context window (refused by the server, or not sent).
    WINDOW = "window"
    #: A provider call failed (after its retries) for another reason.
    PROVIDER = "provider"
    #: The judge answered, but not in a form a verdict could be read from (after its re-asks).
    UNREADABLE_ANSWER = "unreadable_answer"
    #: The judge's answer for several claims had no verdict for this one.
    NO_VERDICT = "no_verdict"


class ClaimVerdict(BaseModel):
    """The judge's decision on one claim; an error row when ``error`` is set and ``label`` is None."""

    model_config = ConfigDict(frozen=True)

    claim_id: str
    label_reason: str | None = None
    label: Label | None = None
    subtype_reason: str | None = None
    subtype: Subtype | None = None
    #: Probability that the claim is unsupported, when the judge gives one (the offline judge does).
    probability: float | None = Field(default=None, ge=0.0, le=1.0)
    judge: str
    error: str | None = None
    #: Why there is no verdict, when ``error`` is set (None: not recorded, as in runs stored before kinds).
    error_kind: ErrorKind | None = None
    raw_output: str | None = None
    #: Quotes the verdict rests on, each checked against its passage.
    evidence: tuple[Evidence, ...] = ()
    #: False when a quote could not be found in its passage; None when there was no quote to check.
    evidence_verified: bool | None = None
    #: Passage ids that the claim's sentence in the response cites.
    citations: tuple[str, ...] = ()
    citation: CitationFinding | None = None
    #: When the source was too long for the judge: the passage ranges it saw ("3:120-890").
    shown: tuple[str, ...] = ()
    #: False when a keyless judge's signals cannot tell: ``label`` is then its best guess, and the claim
    #: needs an LLM check. LLM judges are always confident (their variance is measured by repeats).
    confident: bool = True
    #: The words of the claim the verdict finds wrong, as the claim writes them: a value, a name, a negation, or
    #: the phrase the claim adds beyond its evidence. An unsupported span covers these where the claim holds them,
    #: the whole claim otherwise (core/spans.py). Empty when the judge does not know which words.
    focus: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None and self.label is not None


class Vote(ClaimVerdict):
    """One verdict of one judge in one repeat (``measure --repeats``, a panel of judges).

    A claim's ``ClaimVerdict`` is combined from its votes; a vote whose judge failed is an error
    vote, kept and counted, never left out of the count.
    """

    repeat: int = Field(default=0, ge=0)


class Usage(BaseModel):
    """Provider usage accumulated over one or more calls."""

    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    seconds: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in Usage.model_fields})


class ResponseResult(BaseModel):
    """Everything measured for one sample: its claims, their verdicts, and the per-response aggregate."""

    sample_id: str
    model: str | None = None
    claims: list[Claim] = Field(default_factory=list)
    verdicts: list[ClaimVerdict] = Field(default_factory=list)
    #: Every vote the verdicts were combined from (empty when one judge answered once).
    votes: list[Vote] = Field(default_factory=list)
    label_counts: dict[Label, int] = Field(default_factory=dict)
    subtype_counts: dict[Subtype, int] = Field(default_factory=dict)
    n_claims: int = 0
    n_evaluated: int = 0
    n_unsupported: int = 0
    n_errors: int = 0
    unsupported_rate: float | None = None
    #: The rate with every claim judged without confidence counted supported (low) or unsupported (high);
    #: equal to ``unsupported_rate`` when every claim was judged with confidence.
    unsupported_rate_low: float | None = None
    unsupported_rate_high: float | None = None
    hallucinated: bool | None = None
    #: Response-level probability of hallucination, when the judge gives one.
    score: float | None = None
    #: Whether ``hallucinated`` cannot change whatever the claims judged without confidence turn out to be
    #: (a confident unsupported claim exists, or every evaluated claim is confidently supported) and, for a
    #: keyless judge, its response score agrees with the flag by its calibrated rule (judges/decision.py).
    #: False for a response with no checkable claim (it is unevaluatable: ``hallucinated`` is None); None
    #: for an error row.
    decided: bool | None = None
    #: Set when the whole sample failed (for example extraction); the result is then an error row.
    error: str | None = None
    #: What kind of error row it is (None when ``error`` is None); ``UNKNOWN`` when the maker gave none.
    error_kind: ErrorKind | None = None
    usage: Usage = Field(default_factory=Usage)

    @model_validator(mode="after")
    def _kind_with_error(self) -> ResponseResult:
        """An error row always has a kind, and a result without an error none."""
        if self.error is None:
            self.error_kind = None
        elif self.error_kind is None:
            self.error_kind = ErrorKind.UNKNOWN
        return self


class RunManifest(BaseModel):
    """What a run measured and how, so that two runs can be compared honestly."""

    run_id: str
    package_version: str
    input_path: str | None = None
    input_sha256: str
    n_samples: int
    extractor: str
    judge: str
    mode: Mode
    detector: str = "claims"
    policy: Policy
    prompts: dict[str, str] = Field(default_factory=dict, description="prompt id -> sha256")
    settings: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime
    finished_at: datetime | None = None
    status: str = "running"
    counts: dict[str, int] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    #: The judge's sanity checks that failed on this run (``core/judge_checks.py``); empty when all passed,
    #: None when the run was not checked (an unfinished run, or one stored before the checks existed).
    judge_checks: list[JudgeCheck] | None = None
