"""Checking a response while it streams: each sentence's verdicts as soon as the sentence is complete.

The request body is NDJSON: a first line with the source (``context`` or ``passages``, and
optionally ``question`` and ``policy``), then lines ``{"text": "<next piece of the response>"}``
as the model writes them. The answer is a stream of server-sent events:

* ``sentence``: one complete sentence, its claims and verdicts, and ``unsupported`` (how many of
  them the judge found unsupported), so a chat UI can annotate it or stop the model;
* ``done``: the whole response's result, exactly what ``POST /v1/check`` returns for it;
* ``error``: why the stream ended without ``done`` (with the HTTP status it would have had).

A sentence is complete once the next one has begun, or when the stream ends. Its claims are taken
from a window of the text (the sentence and the two before it, so pronouns still resolve), which
keeps a stream's cost linear in its length.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from hallumeasure.api.check import result_of
from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.spans import unsupported_spans
from hallumeasure.core.text import split_sentences
from hallumeasure.core.types import Claim, Sample, Span
from hallumeasure.guard.core import CheckRequest, CheckResult, Guard
from hallumeasure.pipeline.judging import Judged

#: Sentences before the one being judged that its extraction sees (for pronouns and ellipsis).
WINDOW_SENTENCES = 2


@dataclass
class Event:
    name: str
    data: dict[str, Any]
    final: CheckResult | None = None

    def encode(self) -> bytes:
        return f"event: {self.name}\ndata: {json.dumps(self.data, ensure_ascii=False)}\n\n".encode()


@dataclass
class SentenceStream:
    """The response so far, and the sentences of it already reported."""

    head: CheckRequest
    text: str = ""
    #: (start, end) of each reported sentence in ``text``.
    spans: list[tuple[int, int]] = field(default_factory=list)

    @classmethod
    def open(cls, head: dict[str, Any]) -> SentenceStream:
        """The stream of a validated first line (a dict; ``pydantic.ValidationError`` when it is not a source)."""
        # The head carries the source; the response text arrives after it.
        return cls(CheckRequest.model_validate({**head, "response": head.get("response") or "-"}))

    @property
    def reported(self) -> int:
        return len(self.spans)

    def feed(self, piece: str) -> list[tuple[str, int, int]]:
        """Add ``piece``; the sentences it completed, as (text, start, end) in the response."""
        self.text += piece
        return self._complete(final=False)

    def close(self) -> list[tuple[str, int, int]]:
        return self._complete(final=True)

    def _complete(self, *, final: bool) -> list[tuple[str, int, int]]:
        # Only the text after the last reported sentence is split again: a stream costs linear time.
        offset = self.spans[-1][1] if self.spans else 0
        sentences = split_sentences(self.text[offset:])
        ready = sentences if final else sentences[:-1]  # the last one may still grow
        out = [(text, span.start + offset, span.end + offset) for text, span in ready]
        self.spans += [(start, end) for _, start, end in out]
        return out

    def window(self, start: int, end: int) -> tuple[Sample, int]:
        """The sample a sentence is judged in (it and the ones before it in the window), and where its
        text starts in the window's response."""
        index = next((i for i, (s, _) in enumerate(self.spans) if s == start), len(self.spans))
        begin = self.spans[max(0, index - WINDOW_SENTENCES)][0] if self.spans else 0
        return self.head.sample(response=self.text[begin:end]), begin


JudgeSentence = Callable[[Sample, int], Awaitable[Judged]]


async def sentence_event(
    guard: Guard, stream: SentenceStream, sentence: tuple[str, int, int], index: int, judge: JudgeSentence
) -> Event:
    """The ``sentence`` event of one complete sentence; ``judge`` is ``Guard.judged`` or a judge worker."""
    text, start, end = sentence
    sample, begin = stream.window(start, end)
    judged = await judge(sample, start - begin)
    claims = [_shifted(c, begin) for c in judged.claims]
    found = result_of(
        text,
        summarise_response(sample, claims, list(judged.verdicts), guard.policy),
        guard.policy,
        judge=guard.judge.name,
        extractor=guard.extractor.name,
    )
    return Event(
        "sentence",
        {
            "index": index,
            "text": text,
            "start": start,
            "end": end,
            "unsupported": found.n_unsupported,
            "claims": [json.loads(c.model_dump_json()) for c in found.claims],
            # offsets into the whole response streamed so far, as the claims' spans are
            "unsupported_spans": [
                s.model_dump(mode="json") for s in unsupported_spans(stream.text, claims, judged.verdicts, guard.policy)
            ],
        },
    )


def done_event(result: CheckResult) -> Event:
    return Event("done", json.loads(result.model_dump_json()), final=result)


def error_event(status: int, detail: str) -> Event:
    return Event("error", {"status": status, "detail": detail})


def _shifted(claim: Claim, by: int) -> Claim:
    """``claim`` with its spans in the whole response rather than in the window."""
    if not by:
        return claim
    return claim.model_copy(update={"spans": tuple(Span(start=s.start + by, end=s.end + by) for s in claim.spans)})


__all__ = ["Event", "SentenceStream", "done_event", "error_event", "sentence_event"]
