"""The rewrite stage: repair a response given its unsupported claims (papers/conli.txt, section 3.2).

A rewriter gets the sample and its issues -- the unsupported claims with their labels, subtypes
and reasons -- and returns a new response: what the context can fix is fixed, what it cannot
is removed, everything else stays as it was. ``LLMRewriter`` asks a model (prompt ``rewrite``);
``OfflineRewriter`` edits the text with deterministic rules and needs no key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from hallumeasure.core.text import fence, locate, split_sentences, words
from hallumeasure.core.types import Claim, ClaimVerdict, Sample, Span, Usage
from hallumeasure.detectors.entities import FAMILY, Entity, appears_in, find_entities, other_values
from hallumeasure.judges.llm.extract import OnePromptStage, question_block
from hallumeasure.judges.llm.outputs import Rewrite, tool_schema
from hallumeasure.judges.llm.parsing import ask_structured
from hallumeasure.models.base import GenerateRequest, ToolSpec
from hallumeasure.models.model import Model

REWRITE_TOOL = ToolSpec(
    name="record_rewrite",
    description="Record the rewritten response.",
    input_schema=tool_schema(Rewrite),
)


@dataclass(frozen=True)
class Issue:
    """An unsupported claim of the response, with the verdict that says why."""

    claim: Claim
    verdict: ClaimVerdict


@dataclass
class RewriteOutcome:
    """The rewritten response, or the error that prevented one (then ``text`` is None)."""

    text: str | None
    reasoning: str | None = None
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    raw_output: str | None = None
    edits: list[str] = field(default_factory=list)


@runtime_checkable
class Rewriter(Protocol):
    name: str

    async def rewrite(self, sample: Sample, issues: Sequence[Issue]) -> RewriteOutcome: ...

    def settings(self) -> dict[str, Any]: ...


def issue_text(issue: Issue, response: str) -> str:
    """One issue as the rewriter reads it: the claim, its label and subtype, the reason, the sentence it sits in."""
    v = issue.verdict
    lines = [f"claim: {issue.claim.text}", f"label: {v.label}" + (f" ({v.subtype})" if v.subtype else "")]
    if v.label_reason:
        lines.append(f"reason: {v.label_reason}")
    if v.subtype_reason:
        lines.append(f"detail: {v.subtype_reason}")
    passage = " ".join(response[s.start : s.end] for s in issue.claim.spans)
    if passage:
        lines.append(f"in the response: {passage}")
    return "\n".join(lines)


def issues_block(issues: Sequence[Issue], response: str) -> str:
    """All issues, each fenced as ``<issue id="cN">`` inside one ``<issues>`` block."""
    inner = "\n".join(fence("issue", issue_text(i, response), id=f"c{i.claim.index}") for i in issues)
    return f"<issues>\n{inner}\n</issues>"


class LLMRewriter(OnePromptStage):
    """Rewrites a response with an LLM through the ``rewrite`` prompt, answered by a forced tool."""

    def __init__(self, model: Model, *, max_reasks: int = 2, max_tokens: int = 4096) -> None:
        super().__init__(model, "rewrite", max_reasks=max_reasks, max_tokens=max_tokens)

    def settings(self) -> dict[str, Any]:
        return {
            "rewriter": self.model.spec,
            **self.model.settings(),
            "max_reasks": self.max_reasks,
            "max_tokens": self.max_tokens,
            "prompt": self.prompt.key,
            "prompt_sha256": self.prompt.sha256,
        }

    def request(self, sample: Sample, issues: Sequence[Issue]) -> GenerateRequest:
        system, message = self.prompt.render(
            question_block=question_block(sample),
            context_block=fence("context", sample.context),
            response_block=fence("response", sample.response),
            issues_block=issues_block(issues, sample.response),
        )
        return GenerateRequest(system=system, messages=(message,), tool=REWRITE_TOOL, max_tokens=self.max_tokens)

    async def rewrite(self, sample: Sample, issues: Sequence[Issue]) -> RewriteOutcome:
        result = await ask_structured(self.model, self.request(sample, issues), Rewrite, max_reasks=self.max_reasks)
        if result.value is None:
            return RewriteOutcome(text=None, error=result.error, raw_output=result.raw_output, usage=result.usage)
        return RewriteOutcome(
            text=result.value.rewritten_response.strip(), reasoning=result.value.reasoning, usage=result.usage
        )


# --- the offline rewriter -----------------------------------------------------------------------------

#: Where a sentence splits into clauses that can go on their own: ", and ...", "; ...", ", but ...".
_CLAUSE_BREAK = re.compile(r",\s+(?=(?:and|but|while|whereas|although|though|so|yet)\b)|;\s+")


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    replacement: str
    note: str


class OfflineRewriter:
    """Deterministic repair without a model.

    For each issue whose subtype says a value is wrong (number, entity, temporal; or a
    contradicted claim without subtype): when the claim holds exactly one value (number, date,
    money, name) that the context lacks, and exactly one value of the same family stands in for
    it -- named in the verdict's reason and found in the context, or else in the context
    sentence closest to the claim -- that value is substituted. Otherwise the smallest piece carrying the claim is
    deleted: the claim's own span when it is a later piece of its sentence (with the "and" or
    comma before it), else its clause (", and ...", "; ...") when the sentence has several and
    one clearly carries the claim, else the whole sentence. Deletions win over substitutions
    they cover. Only unsupported claims are edited, so supported claims in other pieces stay.
    """

    name = "offline"

    def settings(self) -> dict[str, Any]:
        return {"rewriter": "offline", "rules": "substitute one aligned value, else delete clause or sentence"}

    async def rewrite(self, sample: Sample, issues: Sequence[Issue]) -> RewriteOutcome:
        return self.rewrite_now(sample, issues)

    def rewrite_now(self, sample: Sample, issues: Sequence[Issue]) -> RewriteOutcome:
        """The synchronous core (the rules need no I/O)."""
        response = sample.response
        sentences = split_sentences(response)
        edits = [edit for issue in issues if (edit := self._edit(sample, issue, sentences)) is not None]
        text, kept = _apply(response, edits)
        notes = [e.note for e in kept] or ["no edit could be placed"]
        return RewriteOutcome(text=text, reasoning="; ".join(notes), edits=notes)

    def _edit(self, sample: Sample, issue: Issue, sentences: list[tuple[str, Span]]) -> _Edit | None:
        span = _claim_span(issue.claim, sample.response, sentences)
        if span is None:
            return None
        sentence_span = next((s for _, s in sentences if s.start <= span.start < s.end), None)
        if sentence_span is None:
            return None
        substitution = _substitution(issue, sample.context, sample.response, sentence_span)
        if substitution is not None:
            return substitution
        return _piece_deletion(sample.response, span, sentence_span) or _deletion(
            issue.claim.text, sample.response, sentence_span
        )


def _claim_span(claim: Claim, response: str, sentences: list[tuple[str, Span]]) -> Span | None:
    if claim.spans:
        return claim.spans[0]
    found = locate(claim.text, response, sentences)
    return found[0] if found else None


#: Subtypes that say a single value is wrong, so that swapping the value can repair the claim.
_VALUE_SUBTYPES = frozenset({"number", "entity", "temporal"})


def _substitution(issue: Issue, context: str, response: str, sentence: Span) -> _Edit | None:
    verdict = issue.verdict
    if verdict.subtype not in _VALUE_SUBTYPES and not (verdict.subtype is None and verdict.label == "contradicted"):
        return None
    claim = issue.claim.text
    wrong = [e for e in find_entities(claim) if not appears_in(e, context)]
    if len(wrong) != 1:
        return None
    (bad,) = wrong
    family = FAMILY[bad.kind]
    from_reason = [
        e
        for e in find_entities(issue.verdict.label_reason or "")
        if FAMILY[e.kind] == family and appears_in(e, context) and not appears_in(e, claim)
    ]
    candidates = _distinct(from_reason) or _distinct(other_values(bad, claim, context))
    if len(candidates) != 1:
        return None
    (good,) = candidates
    where = response.find(bad.text, sentence.start, sentence.end)
    if where < 0:
        return None
    return _Edit(where, where + len(bad.text), good.text, f"replaced '{bad.text}' with '{good.text}'")


def _distinct(entities: list[Entity]) -> list[Entity]:
    seen: dict[str, Entity] = {}
    for entity in entities:
        seen.setdefault(entity.text.lower(), entity)
    return list(seen.values())


_JOINER_RE = re.compile(r"(?:\s*[,;])?\s*(?:\b(?:and|but|while|whereas)\b\s*)?$")


def _piece_deletion(response: str, span: Span, sentence: Span) -> _Edit | None:
    """Cut only the claim's own words when its span is a later piece of the sentence (with the "and" or comma
    that joined it), so the sentence's other claims -- which may be supported -- stay."""
    if not (sentence.start < span.start < span.end <= sentence.end):
        return None
    joiner = _JOINER_RE.search(response, sentence.start, span.start)
    cut_from = joiner.start() if joiner else span.start
    piece = response[span.start : span.end].rstrip()
    end = span.start + len(piece) - (1 if piece.endswith((".", "!", "?")) else 0)
    if cut_from <= sentence.start or end <= span.start:
        return None
    return _Edit(cut_from, end, "", f"removed the clause '{response[span.start : end].strip()}'")


def _deletion(claim: str, response: str, sentence: Span) -> _Edit:
    text = response[sentence.start : sentence.end]
    pieces = _clauses(text)
    if len(pieces) > 1:
        target = set(words(claim))
        scores = [len(target & set(words(text[s:e]))) / max(1, len(target)) for s, e, _ in pieces]
        best = max(range(len(pieces)), key=scores.__getitem__)
        runner_up = max((s for i, s in enumerate(scores) if i != best), default=0.0)
        # Cut a clause only when it clearly carries the claim, and never the first (it holds the subject).
        if best > 0 and scores[best] >= 0.5 and scores[best] > runner_up:
            _, end, lead = pieces[best]
            cut_from = sentence.start + lead
            cut_to = sentence.start + end
            removed = response[cut_from:cut_to].strip(" ,;")
            return _Edit(cut_from, cut_to, "", f"removed the clause '{removed}'")
    return _Edit(sentence.start, sentence.end, "", f"removed the sentence '{text}'")


def _clauses(sentence: str) -> list[tuple[int, int, int]]:
    """(start, end, cut_start) of each clause; ``cut_start`` includes the separator before it."""
    body_end = len(sentence.rstrip(".!?"))
    out, cursor, lead = [], 0, 0
    for match in _CLAUSE_BREAK.finditer(sentence, 0, body_end):
        out.append((cursor, match.start(), lead))
        cursor, lead = match.end(), match.start()
    out.append((cursor, body_end, lead))
    return out


def _apply(response: str, edits: list[_Edit]) -> tuple[str, list[_Edit]]:
    """The response with the edits made, and the edits that were made (in reading order)."""
    kept: list[_Edit] = []
    # Deletions first and widest first, so that a substitution inside a deleted span is dropped.
    for edit in sorted(edits, key=lambda e: (e.replacement != "", -(e.end - e.start), e.start)):
        if all(edit.end <= k.start or edit.start >= k.end for k in kept):
            kept.append(edit)
    kept.sort(key=lambda e: e.start)
    text = response
    for edit in reversed(kept):
        text = text[: edit.start] + edit.replacement + text[edit.end :]
    return _tidy(text), kept


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]+([.,;!?])", r"\1", text)
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def build_rewriter(
    spec: str, *, model: Model | None = None, model_for: Callable[[str], Model] | None = None
) -> Rewriter:
    """The rewriter ``spec`` names: a registered keyless rewriter (``offline``), else the LLM rewriter over the
    model of the provider spec (``model``, else ``model_for(spec)``, else a new ``Model``)."""
    from hallumeasure.registry import PartKind, registry

    rewriters = registry().parts[PartKind.REWRITER]
    named = rewriters.get(spec.partition("?")[0])
    if named is not None and named.keyless:
        built: Rewriter = named.load()()
        return built
    if model is None:
        from hallumeasure.models.factory import build_model

        model = (model_for or build_model)(spec)
    llm: Rewriter = rewriters["llm"].load()(model)
    return llm
