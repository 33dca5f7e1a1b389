"""Scripted answers to the rewrite, CoNLI and cascade prompts, so the fake provider can run them end to end.

``scripted_responder`` answers ``FakeAPI`` requests by their forced tool, reading our own
fenced blocks, and hands every other tool to the fake's demo responder. It behaves like a
plausible but imperfect model, and every answer says it comes from a fake:

- rewrite: fixes a wrong number, date or name when the context offers exactly one value in
  its place, removes what cannot be fixed -- and, like real rewriters sometimes do, replaces a
  sweeping "All ..." / "Every ..." sentence with a vague line of its own that the context does
  not back (a new unsupported claim, so reports show that failure too);
- NLI: at sentence level it skims -- it ignores numbers and passes a sentence whose words are
  mostly in the context -- so the entity re-checks have something to catch; a focused check
  looks the marked value up in the context;
- cascade: names a category from simple cues, and answers ``no_problem_found`` when nearly
  every word of the claim is in the context;
- claim verdicts: like the demo responder, but tolerant of word endings ("repair" matches
  "repairing"), with subtypes guessed from cue words.

The fake provider (``hallumeasure.models.fake``) knows nothing of these prompts: the model layer does
not depend on the detectors. Whoever builds a fake for the rewrite, NLI or cascade stages hands it
``demo_responder_with_scripted_tools`` (the registry builds the ``fake`` provider so, through ``scripted_fake_api``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from hallumeasure.models.base import GenerateRequest
from hallumeasure.models.fake import Answer, FakeAPI, Responder, demo_responder, prompt_blocks

FAKE = "[fake scripted model, not a measurement]"

_STOP = frozenset(
    "the a an of and or to in on for is was are were be by with it its this that as at from has have had will "
    "would can could should may not no do does did".split()
)
_WORD = re.compile(r"[a-z]+|\d+(?:[.,]\d+)*")
_UNIVERSAL = re.compile(r"^\s*(?:all|every)\b", re.IGNORECASE)
_SWEEPING = (
    "revolutionized",
    "revolutionised",
    "most popular",
    "best",
    "always",
    "never",
    "unlimited",
    "all ",
    "every ",
)
_TEMPORAL = ("will", "already", "finished", "next", "today", "by ")


def _block(request: GenerateRequest, tag: str) -> str:
    return next((body for _, body in prompt_blocks(request, tag)), "")


def _missing(text: str, context: str, *, numbers: bool = True) -> list[str]:
    context_words = set(_WORD.findall(context.lower()))
    out = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP or (not numbers and word[0].isdigit()):
            continue
        if word in context_words or any(_same_stem(word, c) for c in context_words):
            continue
        out.append(word)
    return out


def _same_stem(a: str, b: str) -> bool:
    """ "opens" ~ "open", "repairs" ~ "repairing": a shared prefix of at least 4 letters, at most 3 letters off."""
    shortest = min(len(a), len(b))
    if shortest < 4 or a[0].isdigit() or b[0].isdigit():
        return False
    common = 0
    while common < shortest and a[common] == b[common]:
        common += 1
    return common >= max(4, max(len(a), len(b)) - 3)


def _issue_fields(body: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in body.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def _rewrite(request: GenerateRequest) -> dict[str, Any]:
    from hallumeasure.core.text import locate
    from hallumeasure.core.types import Claim, ClaimVerdict, Sample
    from hallumeasure.detectors.rewrite import Issue, OfflineRewriter

    context, response = _block(request, "context"), _block(request, "response")
    issues, slips = [], []
    for index, (_, body) in enumerate(prompt_blocks(request, "issue")):
        fields = _issue_fields(body)
        claim_text = fields.get("claim", "")
        passage = fields.get("in the response", claim_text)
        spans = locate(passage, response) or locate(claim_text, response)
        label, _, subtype = fields.get("label", "absent").partition(" ")
        if _UNIVERSAL.match(claim_text) and spans:
            slips.append(spans[0])
            continue
        verdict = ClaimVerdict(
            claim_id=f"x:c{index}",
            label=label,
            subtype=subtype.strip("()") or "other",
            label_reason=fields.get("reason"),
            judge="fake",
        )
        issues.append(Issue(Claim(id=f"x:c{index}", sample_id="x", index=index, text=claim_text, spans=spans), verdict))
    text = response
    for span in sorted(slips, key=lambda s: s.start, reverse=True):
        sentence_end = text.find(".", span.start)
        end = len(text) if sentence_end < 0 else sentence_end + 1
        text = text[: span.start] + "It was widely welcomed." + text[end:]
    if issues:
        rewritten = OfflineRewriter().rewrite_now(Sample(id="x", context=context, response=text), issues)
        text = rewritten.text or ""
    return {"reasoning": f"{FAKE} fixed values the context gives, removed the rest.", "rewritten_response": text}


def _nli(request: GenerateRequest) -> dict[str, Any]:
    from hallumeasure.detectors.conli import lookup_entity
    from hallumeasure.detectors.entities import find_entities

    context, hypothesis, focus = _block(request, "context"), _block(request, "hypothesis"), _block(request, "focus")
    plain = hypothesis.replace("[ ", "").replace(" ]", "")
    if focus:
        entity = next((e for e in find_entities(plain) if e.text == focus), None)
        if entity is None:
            return {"reason": f"{FAKE} the marked words are in the context.", "label": "entailment"}
        check = lookup_entity(context, plain, entity)
        return {"reason": f"{FAKE} {check.reason}", "label": check.label}
    missing = _missing(plain, context, numbers=False)
    content = [w for w in _WORD.findall(plain.lower()) if w not in _STOP and not w[0].isdigit()]
    if len(missing) <= max(1, len(content) // 4):
        return {"reason": f"{FAKE} the passage says much the same.", "label": "entailment"}
    return {"reason": f"{FAKE} the context does not mention: {', '.join(missing[:4])}.", "label": "neutral"}


def _explain(request: GenerateRequest) -> dict[str, Any]:
    context, claim = _block(request, "context"), _block(request, "claim")
    missing = _missing(claim, context)
    lowered = f" {claim.lower()} "
    if len(missing) <= 1 and not any(w[0].isdigit() for w in missing):
        category, reason = "no_problem_found", "the context seems to back the claim."
    elif any(w[0].isdigit() for w in missing):
        figures = ", ".join(w for w in missing if w[0].isdigit())
        category, reason = "number", f"the context gives other figures than {figures}."
    elif any(cue in lowered for cue in _SWEEPING):
        category, reason = (
            "overgeneralization" if "all " in lowered or "every " in lowered else "hyperbole",
            "the claim says more than the context does.",
        )
    elif any(f" {cue}" in lowered for cue in _TEMPORAL):
        category, reason = "temporal", "the timing differs from the context."
    else:
        category, reason = "other", f"the context does not mention: {', '.join(missing[:4])}."
    return {"reason": f"{FAKE} {reason}", "category": category}


def _verdict(context: str, claim: str) -> dict[str, Any]:
    from hallumeasure.detectors.conli import is_checkable

    if not is_checkable(claim):
        return {"label_reason": f"{FAKE} not a checkable statement.", "label": "unevaluatable", "subtype": None}
    missing = _missing(claim, context)
    numbers = [w for w in missing if w[0].isdigit()]
    lowered = f" {claim.lower()} "
    if not missing:
        return {"label_reason": f"{FAKE} the context says this.", "label": "supported", "subtype": None}
    if numbers:
        return {
            "label_reason": f"{FAKE} the context gives other figures than {', '.join(numbers)}.",
            "label": "contradicted",
            "subtype_reason": f"{FAKE} a figure differs.",
            "subtype": "number",
        }
    content = [w for w in _WORD.findall(claim.lower()) if w not in _STOP]
    label = "partially_supported" if len(missing) <= max(1, len(content) // 3) else "absent"
    subtype = (
        "overgeneralization"
        if " all " in lowered or " every " in lowered
        else "hyperbole"
        if any(cue in lowered for cue in _SWEEPING)
        else "temporal"
        if any(f" {cue}" in lowered for cue in _TEMPORAL)
        else "other"
    )
    return {
        "label_reason": f"{FAKE} the context does not mention: {', '.join(missing[:4])}.",
        "label": label,
        "subtype_reason": f"{FAKE} judged from cue words.",
        "subtype": subtype,
    }


def scripted_responder(request: GenerateRequest) -> Answer:
    """A ``FakeAPI`` responder for the rewrite, NLI and cascade tools; others go to the demo responder."""
    tool = request.tool.name if request.tool else None
    if tool == "record_rewrite":
        return _rewrite(request)
    if tool == "record_nli":
        return _nli(request)
    if tool == "record_explanation":
        return _explain(request)
    if tool == "record_verdict":
        return _verdict(_block(request, "context"), _block(request, "claim"))
    if tool == "record_verdicts":
        context = _block(request, "context")
        return {
            "verdicts": [{"claim_id": cid, **_verdict(context, body)} for cid, body in prompt_blocks(request, "claim")]
        }
    return demo_responder(request)


#: The tools of the prompts above the claim pipeline, which the fake's own demo responder does not answer.
SCRIPTED_TOOLS = frozenset({"record_rewrite", "record_nli", "record_explanation"})


def demo_responder_with_scripted_tools(request: GenerateRequest) -> Answer:
    """The fake's demo answers for extraction and classify, and the scripted ones for rewrite, NLI and cascade."""
    if request.tool is not None and request.tool.name in SCRIPTED_TOOLS:
        return scripted_responder(request)
    return demo_responder(request)


def scripted_fake_api(
    model_name: str = "demo",
    *,
    responder: Responder | None = None,
    script: Iterable[Answer] | None = None,
    demo_claims: bool | None = None,
) -> FakeAPI:
    """The ``fake`` provider as the registry builds it: scripted answers to every prompt of the package.

    A ``responder`` or ``script`` given in code replaces the scripted answers (tests decide them).
    """
    scripted = responder is None and script is None
    if scripted:
        responder = demo_responder_with_scripted_tools
    claims = scripted if demo_claims is None else demo_claims
    return FakeAPI(model_name or "demo", responder=responder, script=script, demo_claims=claims)
