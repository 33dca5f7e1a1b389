"""A scripted fake provider for tests and demos. It never touches the network.

``FakeAPI(responder=fn)`` answers each request with ``fn(request)``; ``FakeAPI(script=[...])``
answers with the items in order. An answer may be a ``GenerateResponse``, a dict (taken as
the forced tool's input), a string (taken as text) or an exception (raised). With neither,
the built-in demo responder gives plausible but crude answers to the extraction and classify
prompts, marked as coming from a fake. This module depends on the model layer and the types only:
answers to the prompts of higher layers (rewrite, NLI, cascade) are supplied by those layers as a
``responder`` (see ``hallumeasure.detectors.scripted.demo_responder_with_scripted_tools``).

The demo responder imitates an unstable judge across repeats (``measure --repeats``): repeat 0
answers as always, and each later repeat changes about one verdict in four to a neighbouring
label, chosen by a hash of the claim and the repeat, so flips are reproducible.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from hallumeasure.core.errors import ProviderError
from hallumeasure.core.text import count_tokens
from hallumeasure.core.types import Usage
from hallumeasure.models.base import GenerateRequest, GenerateResponse, ModelAPI

Answer = GenerateResponse | dict[str, Any] | str | BaseException
Responder = Callable[[GenerateRequest], Answer]

_WORD_RE = re.compile(r"[A-Za-z0-9$%.,]+")
_STOP = {"the", "a", "an", "of", "and", "or", "to", "in", "on", "for", "is", "was", "are", "were", "be", "by", "with"}


def prompt_blocks(request: GenerateRequest, tag: str) -> list[tuple[str | None, str]]:
    """(id, body) of every ``<tag>`` block in the request's user messages (parsing our own fences)."""
    text = "\n".join(m.text for m in request.messages if m.role == "user")
    pattern = re.compile(rf'<{tag}(?: id="(?P<id>[^"]*)")?>\n(?P<body>.*?)\n</{tag}>', re.DOTALL)
    return [(m["id"], m["body"]) for m in pattern.finditer(text)]


class FakeAPI(ModelAPI):
    provider = "fake"

    def __init__(
        self,
        model_name: str = "demo",
        *,
        responder: Responder | None = None,
        script: Iterable[Answer] | None = None,
        demo_claims: bool = False,
    ) -> None:
        """``demo_claims``: the responder hands the extraction and classify prompts to the demo responder
        (as ``demo_responder_with_scripted_tools`` does), so the run's verdicts are the demo's."""
        super().__init__(model_name)
        self._responder = responder
        self._demo_claims = demo_claims
        self._script = list(script) if script is not None else None
        self.requests: list[GenerateRequest] = []

    @property
    def calls(self) -> int:
        return len(self.requests)

    def settings(self) -> dict[str, Any]:
        return {"model": self.model_name}

    def sampling(self) -> str:
        if self._script is not None or (self._responder is not None and not self._demo_claims):
            return "scripted answers (a test decides them)"
        return (
            f"the demo responder: repeat 0 as always, each later repeat changes about "
            f"{DEMO_FLIP_SHARE:.0%} of verdicts, seeded by claim and repeat"
        )

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.requests.append(request)
        if self._script is not None:
            if not self._script:
                raise ProviderError("fake script exhausted: the test asked for more answers than it scripted")
            answer = self._script.pop(0)
        elif self._responder is not None:
            answer = self._responder(request)
        else:
            answer = demo_responder(request)
        if isinstance(answer, BaseException):
            raise answer
        response = _as_response(answer)
        if response.usage.calls == 0:
            prompt = request.system + "".join(m.text for m in request.messages)
            out = response.text or str(response.tool_input or "")
            response = response.model_copy(
                update={"usage": Usage(calls=1, input_tokens=count_tokens(prompt), output_tokens=count_tokens(out))}
            )
        return response.model_copy(update={"model": self.spec})


def _as_response(answer: Answer) -> GenerateResponse:
    if isinstance(answer, GenerateResponse):
        return answer
    if isinstance(answer, dict):
        return GenerateResponse(tool_input=answer, stop_reason="tool_use")
    return GenerateResponse(text=str(answer), stop_reason="end_turn")


# --- the demo responder: crude heuristics so that the fake can run the whole pipeline ----------------

_DEMO = "[fake demo model, not a measurement]"


def _content_words(text: str) -> set[str]:
    return {w.lower().strip(".,") for w in _WORD_RE.findall(text) if w.lower().strip(".,") not in _STOP} - {""}


def _demo_verdict(context: str, claim: str) -> dict[str, Any]:
    if claim.rstrip().endswith("?"):
        return {"label_reason": f"{_DEMO} a question", "label": "unevaluatable", "subtype": None}
    claim_words = _content_words(claim)
    context_words = _content_words(context)
    missing = sorted(claim_words - context_words)
    numbers = [w for w in missing if any(c.isdigit() for c in w)]
    if not missing:
        return {"label_reason": f"{_DEMO} every word appears in the context", "label": "supported", "subtype": None}
    if numbers:
        return {
            "label_reason": f"{_DEMO} numbers not in the context: {', '.join(numbers)}",
            "label": "contradicted",
            "subtype_reason": f"{_DEMO} a number differs",
            "subtype": "number",
        }
    share = len(missing) / max(1, len(claim_words))
    label = "partially_supported" if share <= 0.34 else "absent"
    return {
        "label_reason": f"{_DEMO} words not in the context: {', '.join(missing[:5])}",
        "label": label,
        "subtype_reason": f"{_DEMO} no specific signal",
        "subtype": "other",
    }


#: Share of verdicts that a demo repeat above 0 changes to a neighbouring label.
DEMO_FLIP_SHARE = 0.25
_NEIGHBOUR = {
    "supported": "partially_supported",
    "partially_supported": "supported",
    "absent": "partially_supported",
    "contradicted": "absent",
    "unevaluatable": "unevaluatable",
}


def _demo_repeat(verdict: dict[str, Any], claim: str, repeat: int) -> dict[str, Any]:
    """The verdict as repeat ``repeat`` of the demo gives it: sometimes a neighbouring label (seeded, reproducible)."""
    if repeat == 0:
        return verdict
    digest = hashlib.sha256(f"{repeat}\x00{claim}".encode()).digest()
    if int.from_bytes(digest[:4], "big") / 2**32 >= DEMO_FLIP_SHARE:
        return verdict
    label = _NEIGHBOUR[verdict["label"]]
    flipped = {"label_reason": f"{_DEMO} repeat {repeat} changed its mind: {verdict['label_reason']}", "label": label}
    if label in ("supported", "unevaluatable"):
        return {**flipped, "subtype": None}
    return {**flipped, "subtype_reason": f"{_DEMO} no specific signal", "subtype": verdict.get("subtype") or "other"}


def demo_responder(request: GenerateRequest) -> Answer:
    """Answer our own prompts by their forced tool, with word-overlap heuristics."""
    from hallumeasure.core.text import split_sentences  # local: keeps the fake importable without pysbd

    tool = request.tool.name if request.tool else None
    context = next((body for _, body in prompt_blocks(request, "context")), "")
    if tool == "record_claims":
        response = next((body for _, body in prompt_blocks(request, "response")), "")
        return {"claims": [{"text": s, "source_sentence": s} for s, _ in split_sentences(response)]}
    if tool == "record_verdict":
        claim = next((body for _, body in prompt_blocks(request, "claim")), "")
        return _demo_repeat(_demo_verdict(context, claim), claim, request.repeat)
    if tool == "record_verdicts":
        return {
            "verdicts": [
                {"claim_id": claim_id, **_demo_repeat(_demo_verdict(context, body), body, request.repeat)}
                for claim_id, body in prompt_blocks(request, "claim")
            ]
        }
    # The rewrite, NLI and cascade prompts belong to layers above this one: their scripted answers
    # (hallumeasure.detectors.scripted) are handed in as a responder by whoever builds the fake for them.
    return GenerateResponse(text=f"{_DEMO} no scripted answer for tool {tool!r}", stop_reason="end_turn")
