"""Checking a response while it streams: each sentence's verdicts as soon as the sentence is complete.

The request body is NDJSON: a first line with the source (``context`` or ``passages``, and
optionally ``question`` and ``policy``), then lines ``{"text": "<next piece of the response>"}``
as the model writes them. The answer is a stream of server-sent events:

* ``sentence``: one complete sentence, its claims and verdicts, and ``unsupported`` (how many of
  them the judge found unsupported), so a chat UI can annotate it or stop the model;
* ``done``: the whole response's result, exactly what ``POST /v1/check`` returns for it.

A sentence is complete once the next one has begun, or when the stream ends. Its claims are taken
from the text so far, so pronouns still resolve to earlier sentences.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from hallumeasure.api.check import result_of
from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.spans import unsupported_spans
from hallumeasure.core.text import split_sentences
from hallumeasure.core.types import Sample
from hallumeasure.guard.core import CheckRequest, CheckResult, Guard
from hallumeasure.sources.evidence import verified


@dataclass
class Event:
    name: str
    data: dict[str, Any]
    final: CheckResult | None = None

    def encode(self) -> str:
        return f"event: {self.name}\ndata: {json.dumps(self.data, ensure_ascii=False)}\n\n"


@dataclass
class SentenceStream:
    """The response so far, and how many of its sentences have been reported."""

    head: CheckRequest
    text: str = ""
    reported: int = 0

    @classmethod
    def open(cls, head: dict[str, Any]) -> SentenceStream:
        # The head carries the source; the response text arrives after it.
        return cls(CheckRequest.model_validate({**head, "response": head.get("response") or "-"}))

    def feed(self, piece: str) -> list[tuple[str, int, int]]:
        """Add ``piece``; the sentences it completed, as (text, start, end) in the response."""
        self.text += piece
        return self._complete(final=False)

    def close(self) -> list[tuple[str, int, int]]:
        return self._complete(final=True)

    def _complete(self, *, final: bool) -> list[tuple[str, int, int]]:
        sentences = split_sentences(self.text)
        ready = sentences if final else sentences[:-1]  # the last one may still grow
        out = [(text, span.start, span.end) for text, span in ready[self.reported :]]
        self.reported = max(self.reported, len(ready))
        return out


async def sentence_events(
    guard: Guard, stream: SentenceStream, lines: AsyncIterator[dict[str, Any]], timeout_s: float
) -> AsyncIterator[Event]:
    """The ``sentence`` events as the text arrives, then ``done`` (or ``error``)."""
    index = 0
    try:
        async for line in lines:
            piece = line.get("text")
            if not isinstance(piece, str):
                yield Event("error", {"detail": 'every line after the first must be {"text": "..."}'})
                return
            for sentence in stream.feed(piece):
                yield await asyncio.wait_for(_sentence_event(guard, stream, sentence, index), timeout_s)
                index += 1
        for sentence in stream.close():
            yield await asyncio.wait_for(_sentence_event(guard, stream, sentence, index), timeout_s)
            index += 1
        if not stream.text.strip():
            yield Event("error", {"detail": "the stream held no response text"})
            return
        request = stream.head.model_copy(update={"response": stream.text})
        result = await asyncio.wait_for(guard.run(request), timeout_s)
        yield Event("done", json.loads(result.model_dump_json()), final=result)
    except TimeoutError:
        yield Event("error", {"detail": f"a check did not finish within {timeout_s:g} s"})
    except ValueError as exc:  # malformed JSON line, or over the size limit
        yield Event("error", {"detail": str(exc)})


async def _sentence_event(guard: Guard, stream: SentenceStream, sentence: tuple[str, int, int], index: int) -> Event:
    text, start, end = sentence
    sample = stream.head.sample(response=stream.text[:end])
    extraction = await guard.extractor.extract(sample)
    claims = [c for c in extraction.claims if _starts_in(c.spans, start)]
    judgement = await guard.judge.judge(sample, claims) if claims else None
    verdicts = [verified(sample, v) for v in (judgement.verdicts if judgement is not None else [])]
    found = result_of(
        text,
        summarise_response(sample, claims, verdicts, guard.policy),
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
                s.model_dump(mode="json") for s in unsupported_spans(sample.response, claims, verdicts, guard.policy)
            ],
        },
    )


def _starts_in(spans: Sequence[Any], start: int) -> bool:
    return bool(spans) and spans[0].start >= start


__all__ = ["Event", "Sample", "SentenceStream", "sentence_events"]
