"""Passages in prompts: each one fenced as untrusted data with its id (and title), inside one <context>.

The judge cites passages by these ids. Everything a passage brings (text, title, url) is neutralised
by ``fence``, so no passage can close its block, open another one or forge an id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hallumeasure.core.text import fence
from hallumeasure.core.types import Passage, Sample, SourceKind

_SPACE_RE = re.compile(r"\s+")
#: A title longer than this is cut in the prompt (it is a label, not evidence).
MAX_TITLE = 200


def passage_block(passage: Passage) -> str:
    """One source fenced with its id; a source that is not a retrieved passage also says what it is
    (``kind="tool_result" tool="search" call="c1" failed="true"``), so the judge knows a failed call's text."""
    attrs = {"id": _attr(passage.id)}
    if passage.title:
        attrs["title"] = _attr(passage.title)[:MAX_TITLE]
    if passage.kind is not SourceKind.PASSAGE:
        attrs["kind"] = passage.kind.value
    if passage.tool_name:
        attrs["tool"] = _attr(passage.tool_name)[:MAX_TITLE]
    if passage.call_id:
        attrs["call"] = _attr(passage.call_id)[:MAX_TITLE]
    if passage.failed:
        attrs["failed"] = "true"
    return fence("passage", passage.text, **attrs)


def passages_block(passages: Sequence[Passage]) -> str:
    """``<context>`` holding one ``<passage id=...>`` block per passage."""
    return "<context>\n" + "\n".join(passage_block(p) for p in passages) + "\n</context>"


def context_block(sample: Sample) -> str:
    """The source of ``sample`` as the classify prompts show it: passages with ids (one passage "1" for a context)."""
    return passages_block(sample.sources)


def _attr(value: str) -> str:
    # One line, and no angle brackets: an attribute value must not look like a new line of the prompt or
    # like the end of its tag. (fence also removes double quotes and neutralises delimiter look-alikes.)
    return _SPACE_RE.sub(" ", value).strip().replace("<", "\u2039").replace(">", "\u203a")


def passage_by_id(sample: Sample, passage_id: str | None) -> Passage | None:
    """The passage that ``passage_id`` names, tolerating the ways models and writers spell ids.

    Exact id first; then the id with a prefix such as "doc", "passage", "source" or "[...]" removed;
    then a bare number as the n-th passage when ids are not numbers themselves.
    """
    if passage_id is None:
        return None
    sources = sample.sources
    by_id = {p.id: p for p in sources}
    wanted = passage_id.strip()
    if wanted in by_id:
        return by_id[wanted]
    bare = _ID_NOISE.sub("", wanted)
    if bare in by_id:
        return by_id[bare]
    for p in sources:
        if _ID_NOISE.sub("", p.id) == bare and bare:
            return p
    if bare.isdigit() and 1 <= int(bare) <= len(sources) and not any(p.id.isdigit() for p in sources):
        return sources[int(bare) - 1]
    return None


_ID_NOISE = re.compile(
    r"^[\s\[\(#]*(?:doc(?:ument)?|passage|source|ref|context|chunk|p)?[\s_#:-]*|[\s\]\)]*$", re.IGNORECASE
)
