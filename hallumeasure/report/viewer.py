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

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.sampling import hash_share
from hallumeasure.core.spans import unsupported_spans
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
from hallumeasure.report.rates import GroupRates, group_rates, rate_text, share_text, unsure_cells, unsure_legend
from hallumeasure.report.runs import (
    NO_MODEL,
    judge_notes,
    load_runs,
    model_groups,
    response_units,
)
from hallumeasure.report.viewer_data import (
    ViewerClaim,
    ViewerData,
    ViewerEvidence,
    ViewerModel,
    ViewerPairing,
    ViewerPassage,
    ViewerResponse,
    ViewerRun,
)
from hallumeasure.report.viewer_page import embedded_bytes, render_page, write_html
from hallumeasure.runs.run import Run
from hallumeasure.sources.align import SentenceIndex
from hallumeasure.stats.resampling import RESAMPLES, SEED
from hallumeasure.version import __version__

#: Responses embedded per view by default; more are cut with a note (the file stays a few MB).
DEFAULT_MAX_RESPONSES = 2000
#: Megabytes of run data a page embeds by default; the responses past it are left out, with a note. With one
#: response's own caps below, a page stays under 20 MB whatever the run (a 178 MB page opens in no browser).
DEFAULT_MAX_MB = 15.0
#: What one response embeds at most; past it, the response is shortened, with a note. The first two are
#: ``measure``'s work limits, so a response measured within them is shown whole.
RESPONSE_CHARS = 100_000
CLAIMS_SHOWN = 2_000
#: Bytes of one response's claims, and characters of one text of a claim (its text, reasons, a quote).
CLAIMS_BYTES = 3_000_000
CLAIM_FIELD_CHARS = 5_000
#: Characters of a response's context, and of its passages together.
SOURCE_CHARS = 1_000_000


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
    sentences: SentenceIndex,
) -> list[ViewerEvidence]:
    """The judge's quotes when it gave any; else the context sentence sharing most content words (a reading aid)."""
    judged = _judge_evidence(verdict, passages)
    if judged:
        return judged
    aligned = sentences.align(claim)
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


#: A run's models with their numbers, in the order of ``model_groups``: (model, numbers).
ModelRates = Sequence[tuple[str, GroupRates]]


def page_rates(run: Run) -> list[tuple[str, GroupRates]]:
    """The numbers the page shows for each model of ``run``, at the default resamples, seed and confidence."""
    groups = model_groups([run], {run.name: response_units(run)})
    return [(g.model, group_rates(run, g, g.units, resamples=RESAMPLES, seed=SEED)) for g in groups]


def _run_summary(run: Run, index: int, n_shown: int, rates: ModelRates | None = None) -> ViewerRun:
    m = run.manifest
    models = []
    for model, numbers in page_rates(run) if rates is None else rates:
        stats = numbers.stats
        models.append(
            ViewerModel(
                # a run without model names is one group named after the run (``model_groups`` of one run)
                name=model if model != NO_MODEL else run.name,
                n_responses=stats.n_responses,
                n_claims=stats.n_claims,
                n_error_rows=stats.n_error_rows,
                rate=stats.mean_unsupported_rate,
                share=stats.hallucinated_share,
                rate_text=rate_text(stats),
                share_text=share_text(stats),
                unsure=unsure_cells(numbers.unsure) if numbers.unsure is not None else None,
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
        notes=[*judge_notes([run]), *_next_steps(run)],
        banner=banner,
        judge_checks=(m.judge_checks or []) if m else [],
        models=models,
        n_total=len(run.responses),  # one row per sample, also in a run read as columns
        n_shown=n_shown,
    )


def _clip(text: str | None, limit: int = CLAIM_FIELD_CHARS) -> str | None:
    return text if text is None or len(text) <= limit else text[: limit - 1] + "\u2026"


def _kept(item: ViewerEvidence, whole: str, kept: int) -> ViewerEvidence:
    """``item`` as it can be shown when only the first ``kept`` characters of its source text are embedded: a
    range past them loses its offsets and keeps its words as the quote."""
    if item.start is None or item.end is None or item.end <= kept:
        return item
    return item.model_copy(
        update={"start": None, "end": None, "quote": _clip(item.quote or whole[item.start : item.end])}
    )


def _response(
    run: Run,
    index: int,
    sample: Sample,
    result: ResponseResult | None,
    context_index: int,
    sentences: SentenceIndex | None = None,
) -> ViewerResponse:
    """One response as the page shows it, from the run's records: what a value lacks stays None.

    A response past what one response may embed (``RESPONSE_CHARS`` of text, ``CLAIMS_SHOWN`` claims within
    ``CLAIMS_BYTES``, ``SOURCE_CHARS`` of context and of passages) is shortened, and says so in ``shortened``.
    ``sentences`` indexes the shown context (built here when not given).
    """
    context = sample.context[:SOURCE_CHARS]  # the shown part: what a reading-aid sentence is looked for in
    sentences = sentences or SentenceIndex(context)
    passages = {p.id: p for p in sample.passages}
    shown_passages = _shown_passages(sample.passages)
    kept_chars = {p.id: len(p.text) for p in shown_passages}
    response = sample.response[:RESPONSE_CHARS]
    found = unsupported_spans(sample.response, result.claims, result.verdicts, run.policy) if result else []
    all_claims = result.claims if result is not None else []
    claims: list[ViewerClaim] = []
    claims_bytes = 0
    for claim in all_claims[:CLAIMS_SHOWN]:
        verdict = run.verdicts.get(claim.id)
        label = verdict.label.value if verdict is not None and verdict.label is not None else None
        evidence = [
            _kept(e, passages[e.passage].text, kept_chars[e.passage])
            if e.passage in passages
            else _kept(e, sample.context, len(context))
            for e in _evidence(claim.text, verdict, passages, context, sentences)
        ]
        shown = ViewerClaim(
            index=claim.index,
            text=_clip(claim.text) or "",
            spans=_spans(claim.spans),
            label=label,
            subtype=verdict.subtype.value if verdict is not None and verdict.subtype is not None else None,
            reason=_clip(verdict.label_reason) if verdict is not None else None,
            subtype_reason=_clip(verdict.subtype_reason) if verdict is not None else None,
            probability=_rounded(verdict.probability) if verdict is not None else None,
            error=_clip(verdict.error) if verdict is not None and label is None else None,
            evidence=[e.model_copy(update={"quote": _clip(e.quote)}) for e in evidence],
            citations=list(verdict.citations) if verdict is not None else [],
            citation=verdict.citation.value if verdict is not None and verdict.citation else None,
            # a claim without a verdict, or of a judge that cannot be unsure, counts as confident
            confident=verdict.confident if verdict is not None else True,
        )
        claims_bytes += embedded_bytes(shown.model_dump_json())
        if claims_bytes > CLAIMS_BYTES:
            break
        claims.append(shown)
    unlocated = sum(
        1
        for c in all_claims[: len(claims)]
        if not c.located and (v := run.verdicts.get(c.id)) and v.label and run.policy.is_unsupported(v.label)
    )
    shortened = _shortened(run, sample, len(all_claims), len(claims), shown_passages)
    return ViewerResponse(
        key=f"{index}/{sample.id}",
        run=index,
        sample_id=sample.given_id,  # the id as written; ``key`` is unique
        model=sample.model or NO_MODEL,
        question=_clip(sample.question, RESPONSE_CHARS),
        context=context_index,
        response=response,
        rate=_rounded(result.unsupported_rate) if result is not None else None,
        hallucinated=result.hallucinated if result is not None else None,
        n_claims=result.n_claims if result is not None else 0,
        n_evaluated=result.n_evaluated if result is not None else 0,
        n_unsupported=result.n_unsupported if result is not None else 0,
        error=result.error if result is not None else "not measured yet (the run is unfinished)",
        claims=claims,
        passages=shown_passages,
        unsupported_spans=[
            (s.start, min(s.end, len(response)), s.label.value) for s in found if s.start < len(response)
        ],
        n_unlocated=unlocated,
        shortened=shortened,
    )


def _shown_passages(passages: Sequence[Passage]) -> list[ViewerPassage]:
    """The passages with at most ``SOURCE_CHARS`` of text in all, in order (a later one may be cut or empty)."""
    left = SOURCE_CHARS
    shown = []
    for p in passages:
        text = p.text[:left]
        left -= len(text)
        shown.append(
            ViewerPassage(
                id=p.id, title=p.title, text=text, kind=p.kind.value, tool=p.tool_name, call=p.call_id, failed=p.failed
            )
        )
    return shown


def _shortened(run: Run, sample: Sample, n_claims: int, n_shown: int, passages: Sequence[ViewerPassage]) -> str | None:
    """What the page leaves out of one response, and where to read all of it; None when it is whole."""
    parts = []
    if len(sample.response) > RESPONSE_CHARS:
        parts.append(f"the first {RESPONSE_CHARS:,} of the response's {len(sample.response):,} characters")
    if n_shown < n_claims:
        parts.append(f"{n_shown:,} of its {n_claims:,} claims")
    if len(sample.context) > SOURCE_CHARS:
        parts.append(f"the first {SOURCE_CHARS:,} of the context's {len(sample.context):,} characters")
    passage_chars = sum(len(p.text) for p in sample.passages)
    if passage_chars > SOURCE_CHARS:
        shown = sum(len(p.text) for p in passages)
        parts.append(f"{shown:,} of the passages' {passage_chars:,} characters")
    if not parts:
        return None
    return (
        f"Shortened to keep the page small: it shows {'; '.join(parts)}. The run holds all of it: "
        f"hallumeasure show {run.path} --claims lists every claim, and load_run({str(run.path)!r}) reads it in Python."
    )


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
    runs: list[Run],
    *,
    max_responses: int = DEFAULT_MAX_RESPONSES,
    max_mb: float = DEFAULT_MAX_MB,
    skip: int = 0,
    title: str | None = None,
    sampled: bool = False,
    rates: Mapping[str, ModelRates] | None = None,
) -> ViewerData:
    """The data the page shows: a header per run, every response (up to ``max_responses``, and as many as fit in
    ``max_mb`` megabytes, after the first ``skip`` of each run) with its claims.

    The runs share the two budgets in equal parts (what a run leaves goes to the next), so that two runs side
    by side show the same samples; the page notes what it left out and how to see it. One response past what a
    response may embed is shortened (``_response``).

    With ``sampled``, a large run is shown by a sample rather than by its first responses: its responses are
    taken in the order of a hash of their id (``core.sampling.hash_share``; the same responses on every page and
    in every run that shares their ids, ``skip`` pages on in that order) and shown in input order; the page says so.

    With exactly two runs that share sample ids, the runs are shown side by side: each response
    of the first run is paired with the same sample of the second, claims whose verdict changed
    are marked, and a response that was rewritten (mitigation) carries a word diff.

    ``rates`` (by run name, as :func:`page_rates` gives them) are the models' numbers when the caller has them
    already (``compare``); a run without them has its numbers computed here.
    """
    if max_responses < 1:
        raise ConfigError(f"--max-responses must be at least 1, got {max_responses}")
    if not max_mb > 0:
        raise ConfigError(f"--max-mb must be above 0, got {max_mb:g}")
    if skip < 0:
        raise ConfigError(f"--skip must be 0 or more, got {skip}")
    byte_budget = int(max_mb * 1_000_000)
    contexts: dict[str, int] = {}
    responses: list[ViewerResponse] = []
    summaries: list[ViewerRun] = []
    used_bytes = used_count = 0
    full = False  # a budget of bytes stopped a run
    pairs = _Pairs(paired=len(runs) == 2 and _share_samples(runs[0], runs[1]))
    aligned: tuple[str | None, SentenceIndex | None] = (None, None)
    for index, run in enumerate(runs):
        left = len(runs) - index
        count_share = -(-(max_responses - used_count) // left)
        byte_share = (byte_budget - used_bytes) // left
        if index == 1 and pairs.paired and summaries[0].n_shown < len(runs[0].samples) - skip:
            count_share = min(count_share, summaries[0].n_shown)  # side by side: the samples the first run shows
        results = {r.sample_id: r for r in run.results}
        n_shown = run_bytes = 0
        for sample in _chosen(run.samples, skip, count_share, sampled=sampled):
            new_context = sample.context not in contexts
            context_index = contexts.get(sample.context, len(contexts))
            if aligned[0] != sample.context:  # responses to one task often follow each other: index it once
                aligned = (sample.context, SentenceIndex(sample.context[:SOURCE_CHARS]))
            item = _response(run, index, sample, results.get(sample.id), context_index, aligned[1])
            size = pairs.join(index, item, sample)  # first: it adds marks and a diff to ``item``
            size += embedded_bytes(item.model_dump_json()) + 1
            if new_context:
                size += embedded_bytes(json.dumps(sample.context[:SOURCE_CHARS], ensure_ascii=False)) + 1
            if responses and run_bytes + size > byte_share:
                pairs.undo(item)
                full = True
                break
            responses.append(item)
            contexts.setdefault(sample.context, context_index)
            run_bytes += size
            n_shown += 1
        used_bytes += run_bytes
        used_count += n_shown
        summaries.append(_run_summary(run, index, n_shown, (rates or {}).get(run.name)))
    names = ", ".join(r.name for r in runs)
    return ViewerData(
        generator=f"hallumeasure {__version__}",
        title=title or f"hallumeasure: {names}",
        runs=summaries,
        contexts=[context[:SOURCE_CHARS] for context in contexts],
        responses=responses,
        pairing=pairs.summary(),
        notes=_cut_notes(
            runs, summaries, skip=skip, full=full, max_responses=max_responses, max_mb=max_mb, sampled=sampled
        )
        + ([unsure_legend()] if any(m.unsure is not None for r in summaries for m in r.models) else []),
    )


def _chosen(samples: list[Sample], skip: int, count: int, *, sampled: bool) -> list[Sample]:
    """The samples a page shows of one run: ``count`` after the first ``skip``, in input order, or with ``sampled``
    in the order of a hash of their id (ties in input order), then put back in input order."""
    if not sampled:
        return samples[skip : skip + count]
    order = sorted(range(len(samples)), key=lambda i: (hash_share(samples[i].given_id), i))
    return [samples[i] for i in sorted(order[skip : skip + count])]


def _share_samples(a: Run, b: Run) -> bool:
    """Whether two runs have samples in common (keyed by id and model), so that they are shown side by side."""
    keys = {(s.given_id, s.model or NO_MODEL) for s in a.samples}
    return any((s.given_id, s.model or NO_MODEL) in keys for s in b.samples)


class _Pairs:
    """The side-by-side pairing of two runs, made while the second run's responses are taken in, so that what
    it adds (the marks on claims, a word diff) is counted in the page's budget."""

    def __init__(self, *, paired: bool) -> None:
        self.paired = paired
        #: The first run's responses by (id, model), with their whole text; models that answered the same
        #: question share its id.
        self.first: dict[tuple[str, str], tuple[ViewerResponse, str]] = {}
        #: Changed claims and whether it was rewritten, per paired response of the second run.
        self.counts: dict[str, tuple[int, bool]] = {}

    def join(self, run: int, item: ViewerResponse, sample: Sample) -> int:
        """Pair ``item`` (of run ``run``) with its sample in the first run; the bytes that adds to the page."""
        if not self.paired:
            return 0
        if run == 0:
            self.first[(item.sample_id, item.model)] = (item, sample.response)
            return 0
        found = self.first.get((item.sample_id, item.model))
        if found is None or found[0].pair is not None:
            return 0
        a, a_text = found
        before = embedded_bytes(a.model_dump_json())
        a.pair, item.pair = item.key, a.key
        changed = _mark_changes(a, item)
        rewritten = a_text != sample.response
        if rewritten and len(a_text) <= RESPONSE_CHARS and len(sample.response) <= RESPONSE_CHARS:
            from hallumeasure.mitigate.render import diff_ops

            item.diff = diff_ops(a.response, item.response)
        self.counts[item.key] = (changed, rewritten)
        # the caller measures ``item`` with its marks and diff; here what its partner gained
        return embedded_bytes(a.model_dump_json()) - before

    def undo(self, item: ViewerResponse) -> None:
        """Forget ``item``, which the page leaves out after all (and unmark its partner)."""
        if item.run == 0:
            self.first.pop((item.sample_id, item.model), None)
            return
        if item.pair is None:
            return
        a, _ = self.first[(item.sample_id, item.model)]
        for claim in a.claims:
            claim.change = claim.was = None
        a.pair = None
        del self.counts[item.key]

    def summary(self) -> ViewerPairing | None:
        if not self.counts:
            return None
        return ViewerPairing(
            a=0,
            b=1,
            how="same sample id",
            n_shared=len(self.counts),
            n_changed_claims=sum(changed for changed, _ in self.counts.values()),
            n_rewritten=sum(rewritten for _, rewritten in self.counts.values()),
        )


def _cut_notes(
    runs: Sequence[Run],
    summaries: Sequence[ViewerRun],
    *,
    skip: int,
    full: bool,
    max_responses: int,
    max_mb: float,
    sampled: bool = False,
) -> list[str]:
    """The page's note on the responses it leaves out, with how to see them; none when it shows them all."""
    total = sum(s.n_total for s in summaries)
    shown = sum(s.n_shown for s in summaries)
    cut = [s for s in summaries if skip + s.n_shown < s.n_total]
    if shown == total:
        return []
    if sampled:
        where = (
            "a sample picked by a hash of each response's id, the same responses every time, shown in input order"
            + (f", from place {skip + 1:,} of the hash order (--skip {skip})" if skip else "")
        )
        note = f"Showing a sample of {shown:,} of {total:,} responses ({where})"
    else:
        where = f"from response {skip + 1:,} of each run (--skip {skip})" if skip else "the first ones in input order"
        note = f"Showing {shown:,} of {total:,} responses ({where})"
    if not cut:
        return [note + "."]
    limit = (
        f"the page holds at most {max_mb:g} MB of run data (--max-mb)"
        if full
        else f"the page holds at most {max_responses:,} responses (--max-responses)"
    )
    following = skip + min(s.n_shown for s in cut)
    more = "--max-mb" if full else "--max-responses"
    runs_word = " ".join(str(r.path) for r in runs)
    again = " --sample" if sampled else ""
    return [
        f"{note}: {limit}. See the next ones with hallumeasure view {runs_word}{again} --skip {following}, or raise "
        f"{more}; hallumeasure show {runs[0].path} --claims lists every claim in the terminal."
    ]


def write_viewer(
    run_dirs: Sequence[Run | str | Path],
    out: str | Path,
    *,
    max_responses: int = DEFAULT_MAX_RESPONSES,
    max_mb: float = DEFAULT_MAX_MB,
    skip: int = 0,
    title: str | None = None,
    sampled: bool = False,
) -> Path:
    """Write the viewer page of ``run_dirs`` (loaded runs, or directories to load) to ``out`` (a file); returns
    its path. ``sampled``: show a sample by a hash of the ids rather than the first responses."""
    runs = load_runs(list(run_dirs))
    data = build_viewer_data(runs, max_responses=max_responses, max_mb=max_mb, skip=skip, title=title, sampled=sampled)
    return write_page(data, out)


def render_viewer(data: ViewerData) -> str:
    """The page as one HTML string (script, style and data inline)."""
    return render_page(data.title, data)


def write_page(data: ViewerData, out: str | Path) -> Path:
    """Write the page of ``data`` to ``out`` (a file, its folder made if needed); returns its path."""
    return write_html(render_viewer(data), out)


def _next_steps(run: Run) -> list[str]:
    """The next-steps block of a keyless run with unsure claims (``report/next_steps.py``), as the run's notes."""
    from hallumeasure.report.next_steps import next_steps

    steps = next_steps(run)
    return steps.lines(width=None) if steps is not None else []


__all__ = [
    "DEFAULT_MAX_MB",
    "DEFAULT_MAX_RESPONSES",
    "ViewerClaim",
    "ViewerData",
    "ViewerEvidence",
    "ViewerModel",
    "ViewerPairing",
    "ViewerPassage",
    "ViewerResponse",
    "ViewerRun",
    "build_viewer_data",
    "render_viewer",
    "write_page",
    "write_viewer",
]
