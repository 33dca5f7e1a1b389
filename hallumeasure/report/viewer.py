"""``hallumeasure view``: one self-contained HTML file to look at runs claim by claim.

The page is a small template (``templates/viewer.html.j2``) with our own plain JavaScript and
CSS inlined (``templates/viewer.js``, ``templates/viewer.css``) and the runs embedded as JSON in
a ``<script type="application/json">`` block. No server, no network, no third-party code: the
file opens from ``file://``, can be mailed or attached to a CI job, and has nothing to update.

Safety: the JSON is made inert inside HTML (every ``<``, ``>`` and ``&`` becomes a ``\\u`` escape,
so neither ``</script>`` nor ``<!--`` can end the block), the script builds the page with
``textContent`` only, and a Content-Security-Policy lets only this page's own script and style
run (by hash), so even a mistake in escaping could not run injected script.

The data (``ViewerData``) is versioned and every field that only some runs have is optional. It is
built from the run's read model (``runs.run.Run``, loaded once) and its typed records: the samples
with their passages, the results with their claims and verdicts. The judge's own evidence (its
quotes, located in the context or in a named passage by ``sources.evidence.verify``) and the
citation findings come from the verdicts; a claim whose judge gave no quote gets the context
sentence sharing most content words instead, marked as a reading aid. A value the run lacks (a
sample not measured yet, a claim without a verdict) stays None on the page.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from markupsafe import Markup
from pydantic import BaseModel, Field

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.spans import unsupported_spans
from hallumeasure.core.text import split_sentences
from hallumeasure.core.types import (
    PASSAGE_SEPARATOR,
    ClaimVerdict,
    Passage,
    ResponseResult,
    Sample,
    Span,
    joined_text,
)
from hallumeasure.registry import is_keyless, is_scripted
from hallumeasure.report.rates import group_rates, rate_text, share_text, unsure_cells, unsure_legend
from hallumeasure.report.render import TEMPLATES, render_html
from hallumeasure.report.resampling import RESAMPLES, SEED
from hallumeasure.report.runs import (
    NO_MODEL,
    judge_notes,
    load_runs,
    model_groups,
    response_units,
)
from hallumeasure.report.stats import LABELS, SUBTYPES, Estimate
from hallumeasure.runs.run import Run
from hallumeasure.sources.align import align_claim
from hallumeasure.version import __version__

#: Bumped when the embedded data changes shape in a way the page must know about.
FORMAT = 1
#: Responses embedded per view by default; more are cut with a note (the file stays a few MB).
DEFAULT_MAX_RESPONSES = 2000


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
    #: ``offline`` when a keyless judge (offline, nli, offline+nli) gave the labels, ``fake`` for the
    #: scripted fake model; None for an LLM judge.
    banner: Literal["offline", "fake"] | None = None
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


# --- building the data ----------------------------------------------------------------------------


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _spans(spans: Sequence[Span]) -> list[tuple[int, int]]:
    return [(s.start, s.end) for s in spans if s.end > s.start]


def _judge_evidence(verdict: ClaimVerdict | None, passages: dict[str, Passage]) -> list[ViewerEvidence]:
    """The judge's quotes, located where ``sources.evidence.verify`` found them (or marked unverified).

    Without passages the context is passage "1" (``Sample.sources``), so those offsets are into the context.
    """
    out = []
    for item in verdict.evidence if verdict is not None else ():
        passage = passages.get(item.passage_id) if item.passage_id is not None else None
        located = item.verified and item.start is not None and item.end is not None
        out.append(
            ViewerEvidence(
                source="judge",
                start=item.start if located else None,
                end=item.end if located else None,
                passage=passage.id if passage is not None else (item.passage_id if passages else None),
                title=passage.title if passage is not None else None,
                quote=item.quote,
                verified=bool(located),
            )
        )
    return out


def _evidence(
    claim: str,
    verdict: ClaimVerdict | None,
    passages: dict[str, Passage],
    context: str,
    sentences: list[tuple[str, Span]],
) -> list[ViewerEvidence]:
    """The judge's quotes when it gave any; else the context sentence sharing most content words (a reading aid)."""
    judged = _judge_evidence(verdict, passages)
    if judged:
        return judged
    aligned = align_claim(claim, context, sentences)
    if aligned is None:
        return []
    return [_in_passage(aligned.start, aligned.end, list(passages.values()), context)]


def _in_passage(start: int, end: int, passages: list[Passage], context: str) -> ViewerEvidence:
    """A reading-aid range of the context, moved into its passage when the context is the passages joined
    (the page shows passages, not the joined text, for a RAG response)."""
    if passages and context == joined_text(passages):
        at = 0
        for passage in passages:
            if at <= start and end <= at + len(passage.text):
                return ViewerEvidence(start=start - at, end=end - at, passage=passage.id, title=passage.title)
            at += len(passage.text) + len(PASSAGE_SEPARATOR)
    return ViewerEvidence(start=start, end=end)


def _run_summary(run: Run, index: int, n_shown: int) -> ViewerRun:
    m = run.manifest
    units = {run.name: response_units(run)}
    groups = model_groups([run], units)
    models = []
    for group in groups:
        rates = group_rates(run, group, group.units, resamples=RESAMPLES, seed=SEED)
        stats = rates.stats
        models.append(
            ViewerModel(
                name=group.model if group.model != NO_MODEL else group.name,
                n_responses=stats.n_responses,
                n_claims=stats.n_claims,
                n_error_rows=stats.n_error_rows,
                rate=stats.mean_unsupported_rate,
                share=stats.hallucinated_share,
                rate_text=rate_text(stats),
                share_text=share_text(stats),
                unsure=unsure_cells(rates.unsure) if rates.unsure is not None else None,
                labels=stats.label_counts,
                subtypes=stats.subtype_counts,
            )
        )
    judge = m.judge if m else None
    banner = "fake" if is_scripted(judge) else "offline" if judge and is_keyless(judge) else None
    return ViewerRun(
        name=run.name,
        judge=judge,
        extractor=m.extractor if m else None,
        mode=m.mode.value if m else None,
        detector=m.detector if m else None,
        policy=run.policy.describe(),
        status=m.status if m else None,
        notes=judge_notes([run]),
        banner=banner,
        models=models,
        n_total=len(run.samples),
        n_shown=n_shown,
    )


def _response(
    run: Run, index: int, sample: Sample, result: ResponseResult | None, context_index: int
) -> ViewerResponse:
    """One response as the page shows it, from the run's records: what a value lacks stays None."""
    context = sample.context
    sentences = split_sentences(context)
    passages = {p.id: p for p in sample.passages}
    found = unsupported_spans(sample.response, result.claims, result.verdicts, run.policy) if result else []
    unlocated = sum(
        1
        for c in (result.claims if result is not None else ())
        if not c.located and (v := run.verdicts.get(c.id)) and v.label and run.policy.is_unsupported(v.label)
    )
    claims = []
    for claim in result.claims if result is not None else ():
        verdict = run.verdicts.get(claim.id)
        label = verdict.label.value if verdict is not None and verdict.label is not None else None
        claims.append(
            ViewerClaim(
                index=claim.index,
                text=claim.text,
                spans=_spans(claim.spans),
                label=label,
                subtype=verdict.subtype.value if verdict is not None and verdict.subtype is not None else None,
                reason=verdict.label_reason if verdict is not None else None,
                subtype_reason=verdict.subtype_reason if verdict is not None else None,
                probability=_rounded(verdict.probability) if verdict is not None else None,
                error=verdict.error if verdict is not None and label is None else None,
                evidence=_evidence(claim.text, verdict, passages, context, sentences),
                citations=list(verdict.citations) if verdict is not None else [],
                citation=verdict.citation.value if verdict is not None and verdict.citation else None,
                # a claim without a verdict, or of a judge that cannot be unsure, counts as confident
                confident=verdict.confident if verdict is not None else True,
            )
        )
    return ViewerResponse(
        key=f"{index}/{sample.id}",
        run=index,
        sample_id=sample.given_id,  # the id as written; ``key`` is unique
        model=sample.model or NO_MODEL,
        question=sample.question,
        context=context_index,
        response=sample.response,
        rate=_rounded(result.unsupported_rate) if result is not None else None,
        hallucinated=result.hallucinated if result is not None else None,
        n_claims=result.n_claims if result is not None else 0,
        n_evaluated=result.n_evaluated if result is not None else 0,
        n_unsupported=result.n_unsupported if result is not None else 0,
        error=result.error if result is not None else "not measured yet (the run is unfinished)",
        claims=claims,
        passages=[
            ViewerPassage(
                id=p.id,
                title=p.title,
                text=p.text,
                kind=p.kind.value,
                tool=p.tool_name,
                call=p.call_id,
                failed=p.failed,
            )
            for p in sample.passages
        ],
        unsupported_spans=[(s.start, s.end, s.label.value) for s in found],
        n_unlocated=unlocated,
    )


_WORD = re.compile(r"\w+")


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _mark_changes(a: ViewerResponse, b: ViewerResponse) -> int:
    """Mark the claims whose verdict differs between ``a`` and ``b``, and those without a match; returns how many."""
    from hallumeasure.mitigate.metrics import ALIGN_THRESHOLD, similarity

    changed = 0
    for claim in b.claims:
        scored = [(similarity(claim.text, other.text), other) for other in a.claims]
        score, match = max(scored, key=lambda pair: pair[0], default=(0.0, None))
        if match is None or score < ALIGN_THRESHOLD:
            claim.change = "new"
        elif (match.label or "error") != (claim.label or "error"):
            claim.change, claim.was = "changed", match.label or "error"
            # and the other way round, so both sides show the change
            match.change, match.was = "changed", claim.label or "error"
        else:
            continue
        changed += 1
    for claim in a.claims:
        if claim.change is None and not any(
            similarity(claim.text, other.text) >= ALIGN_THRESHOLD for other in b.claims
        ):
            claim.change = "gone"
            changed += 1
    return changed


def build_viewer_data(
    runs: list[Run], *, max_responses: int = DEFAULT_MAX_RESPONSES, title: str | None = None
) -> ViewerData:
    """The data the page shows: a header per run, every response (up to ``max_responses``) with its claims.

    With exactly two runs that share sample ids, the runs are shown side by side: each response
    of the first run is paired with the same sample of the second, claims whose verdict changed
    are marked, and a response that was rewritten (mitigation) carries a word diff.
    """
    from hallumeasure.mitigate.render import diff_ops as _diff_ops

    if max_responses < 1:
        raise ConfigError(f"--max-responses must be at least 1, got {max_responses}")
    budget = max_responses
    contexts: dict[str, int] = {}
    responses: list[ViewerResponse] = []
    summaries = []
    for index, run in enumerate(runs):
        shown = run.samples[: max(budget, 0)]
        budget -= len(shown)
        results = {r.sample_id: r for r in run.results}
        for sample in shown:
            context_index = contexts.setdefault(sample.context, len(contexts))
            responses.append(_response(run, index, sample, results.get(sample.id), context_index))
        summaries.append(_run_summary(run, index, len(shown)))

    notes = []
    cut = sum(r.n_total - r.n_shown for r in summaries)
    if cut:
        notes.append(
            f"Showing {len(responses)} of {len(responses) + cut} responses (the first ones in input order); "
            f"pass --max-responses to show more, or view fewer runs at once."
        )

    if any(m.unsure is not None for r in summaries for m in r.models):
        notes.append(unsure_legend())

    pairing = None
    if len(runs) == 2:
        # keyed by (id, model): models that answered the same question share its id
        by_id = [{(r.sample_id, r.model): r for r in responses if r.run == i} for i in (0, 1)]
        shared = [sid for sid in by_id[0] if sid in by_id[1]]
        if shared:
            n_changed = n_rewritten = 0
            for sid in shared:
                a, b = by_id[0][sid], by_id[1][sid]
                a.pair, b.pair = b.key, a.key
                n_changed += _mark_changes(a, b)
                if a.response != b.response:
                    b.diff = _diff_ops(a.response, b.response)
                    n_rewritten += 1
            pairing = ViewerPairing(
                a=0,
                b=1,
                how="same sample id",
                n_shared=len(shared),
                n_changed_claims=n_changed,
                n_rewritten=n_rewritten,
            )
    names = ", ".join(r.name for r in runs)
    return ViewerData(
        generator=f"hallumeasure {__version__}",
        title=title or f"hallumeasure: {names}",
        runs=summaries,
        contexts=list(contexts),
        responses=responses,
        pairing=pairing,
        notes=notes,
    )


# --- writing the page -----------------------------------------------------------------------------


def embed_json(data: BaseModel | dict[str, Any]) -> Markup:
    """JSON that is inert inside an HTML ``<script type="application/json">`` block.

    ``<``, ``>`` and ``&`` become ``\\u003c`` etc. (still the same JSON), so no ``</script>`` or
    ``<!--`` can appear; U+2028/2029 are escaped too for old parsers.
    """
    text = data.model_dump_json() if isinstance(data, BaseModel) else json.dumps(data, ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return Markup(text)


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def render_viewer(data: ViewerData) -> str:
    """The page as one HTML string (script, style and data inline)."""
    script = (TEMPLATES / "viewer.js").read_text(encoding="utf-8")
    style = (TEMPLATES / "viewer.css").read_text(encoding="utf-8")
    csp = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return render_html(
        "viewer.html.j2", title=data.title, csp=csp, script=Markup(script), style=Markup(style), data=embed_json(data)
    )


def write_viewer(
    run_dirs: Sequence[Run | str | Path],
    out: str | Path,
    *,
    max_responses: int = DEFAULT_MAX_RESPONSES,
    title: str | None = None,
) -> Path:
    """Write the viewer page of ``run_dirs`` (loaded runs, or directories to load) to ``out`` (a file); returns
    its path."""
    runs = load_runs(list(run_dirs))
    data = build_viewer_data(runs, max_responses=max_responses, title=title)
    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"{out} is a directory; give a file name for the viewer, such as {out}/view.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_viewer(data), encoding="utf-8")
    return out
