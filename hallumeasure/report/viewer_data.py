"""What the viewer page embeds: ``ViewerData``, the versioned records its script reads, one per run, model,
response, claim, passage and piece of evidence. ``report/viewer.py`` builds them from runs; ``report/viewer_page.py``
writes them into the page. Every field that only some runs have is optional, and a value a run lacks stays None.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hallumeasure.core.docs import QUALITY_PAGE, docs_link
from hallumeasure.core.judge_checks import JudgeCheck
from hallumeasure.stats.estimate import Estimate
from hallumeasure.stats.groups import LABELS, SUBTYPES

#: Bumped when the embedded data changes shape in a way the page must know about.
FORMAT = 1


class ViewerEvidence(BaseModel):
    """A stretch of source text that bears on a claim: [start, end) in the context, or in a passage.

    A judge's quote that could not be found in the source has no offsets and ``verified`` False.
    """

    start: int | None = None
    end: int | None = None
    #: ``overlap``: the context sentence sharing most content words (a reading aid, not the judge's);
    #: ``judge``: a quote the judge gave as evidence, checked against the source.
    source: Literal["overlap", "judge"] = "overlap"
    passage: str | None = None
    #: The passage's title, when the passages have titles.
    title: str | None = None
    quote: str | None = None
    verified: bool = True


class ViewerClaim(BaseModel):
    index: int
    text: str
    spans: list[tuple[int, int]] = Field(default_factory=list)
    label: str | None = None
    subtype: str | None = None
    reason: str | None = None
    subtype_reason: str | None = None
    probability: float | None = None
    error: str | None = None
    evidence: list[ViewerEvidence] = Field(default_factory=list)
    #: Passage ids the claim's sentence cites, and what the citations say next to the label.
    citations: list[str] = Field(default_factory=list)
    citation: str | None = None
    #: False when a keyless judge could not tell: the label is its best guess, and an LLM should check it.
    confident: bool = True
    #: Side-by-side only: ``changed`` (the matched claim of the other run has another label), ``new`` (a
    #: claim of the second run that matches none of the first) or ``gone`` (the other way round).
    change: Literal["changed", "new", "gone"] | None = None
    #: The other run's label for the matched claim, when ``change`` is ``changed``.
    was: str | None = None


class ViewerPassage(BaseModel):
    id: str
    title: str | None = None
    text: str
    #: What the source is (``passage``, ``tool_result``, ``user_turn``, ``system_prompt``); tool results also
    #: name their tool and call, and say whether the call failed.
    kind: str = "passage"
    tool: str | None = None
    call: str | None = None
    failed: bool = False


class ViewerResponse(BaseModel):
    key: str
    run: int
    sample_id: str
    model: str
    question: str | None = None
    #: Index into ``ViewerData.contexts`` (responses to the same task share one copy).
    context: int
    response: str
    rate: float | None = None
    hallucinated: bool | None = None
    n_claims: int = 0
    n_evaluated: int = 0
    n_unsupported: int = 0
    error: str | None = None
    claims: list[ViewerClaim] = Field(default_factory=list)
    passages: list[ViewerPassage] = Field(default_factory=list)
    #: The characters behind the unsupported claims, merged where claims overlap: ``[start, end, label]``.
    unsupported_spans: list[tuple[int, int, str]] = Field(default_factory=list)
    #: Unsupported claims that could not be placed in the response (so are not highlighted).
    n_unlocated: int = 0
    #: Side-by-side only: the key of the same sample in the other run, and the word diff to it.
    pair: str | None = None
    diff: list[tuple[str, str]] | None = None
    #: What the page leaves out of this response (too long to embed whole), and where to read all of it.
    shortened: str | None = None


class ViewerModel(BaseModel):
    name: str
    n_responses: int
    n_claims: int
    n_error_rows: int
    rate: Estimate
    share: Estimate
    #: ``rate`` and ``share`` as every view writes them (report/rates.py): the page shows these strings.
    rate_text: str
    share_text: str
    #: The unsure-claim cells (report/rates.UNSURE_COLUMNS); None when no claim of the model is unsure.
    unsure: dict[str, str] | None = None
    labels: dict[str, int]
    subtypes: dict[str, int]


class ViewerRun(BaseModel):
    name: str
    judge: str | None = None
    extractor: str | None = None
    mode: str | None = None
    detector: str | None = None
    policy: str
    status: str | None = None
    notes: list[str] = Field(default_factory=list)
    #: The docs page on the keyless judges' measured quality: its title and its address on the docs site
    #: (``hallumeasure.core.docs``); the banner of a keyless run links it.
    quality_page: str = QUALITY_PAGE[0]
    quality_url: str = docs_link(QUALITY_PAGE[1])
    #: ``offline`` when a keyless judge (offline, nli, offline+nli) gave the labels, ``fake`` for the
    #: scripted fake model; None for an LLM judge.
    banner: Literal["offline", "fake"] | None = None
    #: The sanity checks the run's judge failed (``core/judge_checks.py``): a red banner each.
    judge_checks: list[JudgeCheck] = Field(default_factory=list)
    models: list[ViewerModel]
    n_total: int
    n_shown: int


class ViewerPairing(BaseModel):
    a: int
    b: int
    how: str
    n_shared: int
    n_changed_claims: int
    n_rewritten: int


class ViewerData(BaseModel):
    format: int = FORMAT
    generator: str
    title: str
    labels: list[str] = Field(default_factory=lambda: list(LABELS))
    subtypes: list[str] = Field(default_factory=lambda: list(SUBTYPES))
    runs: list[ViewerRun]
    contexts: list[str]
    responses: list[ViewerResponse]
    pairing: ViewerPairing | None = None
    notes: list[str] = Field(default_factory=list)
