"""Context that an application pasted into a user message, told apart from what the user asks.

RAG apps often send no system prompt or tool result: they paste what they retrieved into the user message
above the question. ``split_user_message`` finds that context with a few plain rules, so that it can be a
source (kind ``user_context``) while the user's own words stay out:

- **tags**: ``<document>…</document>``, ``<passage>``, ``<source>`` (each one passage), or, without those,
  ``<context>``, ``<documents>``, ``<passages>``, ``<sources>``, ``<search_results>``, ``<references>``;
- **labelled blocks**: a line that opens with a label and a colon (``Context: …``, ``Documents:``,
  ``Passage 2:``, ``Background:``, ``Search results:``), a heading with one (``## Context``), or a lead-in
  line that names it (``Use the following pieces of context to answer the question.``, ``Context information
  is below.``). The block runs to the next label, to a line that opens the request (``Question:``,
  ``Query:``, ``Task:``, ``Instructions:``, ``Answer:``), to a rule line (``-----``) after its text, or to the
  end, where a last paragraph ending with "?" is the question. Lines that open with ``[1]``,
  ``[2]`` … inside a block are one passage each;
- **fenced or quoted blocks** above the request: ````` ``` ````` or ``\"\"\"`` fences, and runs of ``>`` lines.

Anything else stays the user's: a user who writes "My order shipped on Monday. When will it arrive?" states
no context, and their claim is no evidence. The rest of the message (labels of the request taken off) is the
question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SOURCE_WORDS = (
    r"contexts?|background|documents?|docs?|passages?|sources?|references?|excerpts?|articles?|snippets?|"
    r"information|knowledge(?:\s+base)?|facts|search\s+results?|retrieved\s+(?:context|documents?|passages?)"
)
#: "Context:", "Document 2:", "**Sources:**", "## Context", "[Context]".
_LABEL_RE = re.compile(
    rf"^[ \t]*(?:#{{1,6}}[ \t]*)?[*_\[]*(?P<label>(?:{_SOURCE_WORDS})(?:[ \t]*#?\d+)?)[*_\]]*"
    r"(?:[ \t]*[:：][ \t]*(?P<rest>.*)|[ \t]*$)",
    re.IGNORECASE,
)
#: A lead-in that names what follows: "Use the following pieces of context to answer the question at the end.",
#: "Answer from the documents below:", "Context information is below.".
_LEAD_IN_RE = re.compile(
    rf"^[^\n]*(?:\b(?:following|below)\s+(?:[\w-]+\s+){{0,3}}(?:{_SOURCE_WORDS})\b[^\n]*"
    rf"|\b(?:{_SOURCE_WORDS})\b[^\n]*\b(?:below|follows?)\b[^\n]*"
    rf"|\b(?:this|these|given|provided)\s+(?:[\w-]+\s+){{0,2}}(?:{_SOURCE_WORDS})\b[^\n]*:[ \t]*)$",
    re.IGNORECASE,
)
#: A line of dashes, equals signs or stars: it closes a block that has begun.
_RULE_RE = re.compile(r"^[ \t]*([-=*_~#])\1{2,}[ \t]*$")
#: A line that opens the request: the context block ends there.
_REQUEST_RE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?[*_]*(?:question|query|q|user\s+question|task|instructions?|request|prompt|input|"
    r"(?:helpful\s+)?answer)"
    r"[*_]*[ \t]*(?:[:：][ \t]*|$)",
    re.IGNORECASE,
)
_ITEM_RE = re.compile(r"^[ \t]*\[\d+\][ \t]*", re.MULTILINE)
_LEAF_TAG_RE = re.compile(r"<(document|doc|passage|source)\b[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)
_BLOCK_TAGS = r"context|documents|passages|sources|search_results|references|retrieved_context"
_BLOCK_TAG_RE = re.compile(rf"<({_BLOCK_TAGS})\b[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)
_BARE_TAG_RE = re.compile(rf"</?(?:{_BLOCK_TAGS})\b[^>]*>", re.IGNORECASE)
_FENCE_RE = re.compile(r"^[ \t]*(```|\"\"\")[^\n]*\n(.*?)\n[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_QUOTED_RE = re.compile(r"(?:^[ \t]*>[^\n]*(?:\n|$))+", re.MULTILINE)


@dataclass
class UserMessage:
    """A user message read apart: the context pasted into it (title, text) and the user's own request."""

    context: list[tuple[str | None, str]] = field(default_factory=list)
    request: str = ""


def split_user_message(text: str) -> UserMessage:
    """The context pasted into ``text`` and what is left of it (see the module); no context: all is request."""
    found: list[tuple[str | None, str]] = []
    rest = text
    for pattern in (_LEAF_TAG_RE, _BLOCK_TAG_RE):
        if pattern.search(rest):
            found += [(_title(m.group(1)), m.group(2)) for m in pattern.finditer(rest)]
            rest = _BARE_TAG_RE.sub("", pattern.sub("\n", rest))
            break
    if not found:
        found, rest = _labelled(rest)
    if not found:
        for pattern in (_FENCE_RE, _QUOTED_RE):
            blocks = list(pattern.finditer(rest))
            remainder = pattern.sub("\n", rest)
            if blocks and remainder.strip():  # fenced text alone is what the user asks about, not context
                found = [(None, m.group(2) if pattern is _FENCE_RE else _unquote(m.group(0))) for m in blocks]
                rest = remainder
                break
    context = [(title, body) for title, text_ in found for body in _items(text_)]
    return UserMessage(context=context, request=_request(rest) if context else text.strip())


def _labelled(text: str) -> tuple[list[tuple[str | None, str]], str]:
    """Labelled context blocks of ``text`` and the lines outside them."""
    blocks: list[tuple[str | None, list[str]]] = []
    outside: list[str] = []
    inside = False
    for line in text.split("\n"):
        label = _LABEL_RE.match(line)
        if label is not None:
            blocks.append((_title(label.group("label")), [label.group("rest") or ""]))
            inside = True
        elif _LEAD_IN_RE.match(line) and not _REQUEST_RE.match(line):
            blocks.append((None, []))
            inside = True
        elif _REQUEST_RE.match(line):
            inside = False
            outside.append(line)
        elif _RULE_RE.match(line):
            inside = inside and not "".join(blocks[-1][1]).strip()  # a rule opens a block's text, or closes it
        elif inside:
            blocks[-1][1].append(line)
        else:
            outside.append(line)
    if inside and blocks:
        # A block that runs to the end: its last paragraph is the question when it ends with "?".
        paragraphs = "\n".join(blocks[-1][1]).rstrip().split("\n\n")
        if len(paragraphs) > 1 and paragraphs[-1].strip().endswith("?"):
            blocks[-1] = (blocks[-1][0], "\n\n".join(paragraphs[:-1]).split("\n"))
            outside.append(paragraphs[-1])
    found = [(title, "\n".join(lines)) for title, lines in blocks if "\n".join(lines).strip()]
    return found, "\n".join(outside)


def _title(label: str) -> str:
    return re.sub(r"[\s_]+", " ", label.strip()).capitalize()


def _items(text: str) -> list[str]:
    """The passages of one block: one per ``[n]`` line when it has them, else the block."""
    parts = _ITEM_RE.split(text) if _ITEM_RE.search(text) else [text]
    return [p.strip() for p in parts if p.strip()]


def _unquote(block: str) -> str:
    return "\n".join(re.sub(r"^[ \t]*>[ \t]?", "", line) for line in block.split("\n"))


def _request(rest: str) -> str:
    """The user's request without its labels ("Question: How long ..." -> "How long ...")."""
    lines = [_REQUEST_RE.sub("", line) for line in rest.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
