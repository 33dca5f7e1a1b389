"""A model's context window: what a request's prompt takes of it, and what is left for the answer.

A window holds the prompt (tool definitions, system prompt, messages) and the answer together: a local
server started with a small window refuses a prompt that does not fit (llama.cpp), or a prompt whose
``max_tokens`` do not fit beside it (vLLM). The prompt is counted with the words-and-marks estimate of
``core/text.py``, the simulators' own count; real tokenizers count JSON lower and prose about the same,
and a chat template adds a few tokens of its own, so a margin of the window is kept free.
"""

from __future__ import annotations

import json

from hallumeasure.core.text import count_tokens
from hallumeasure.models.base import GenerateRequest

#: The share of a window kept free for chat-template tokens and the tokenizer's difference from the estimate.
MARGIN_SHARE = 0.05
#: The least margin, in tokens.
MIN_MARGIN = 16


def margin(window: int) -> int:
    """Tokens of ``window`` that no request is sized into."""
    return max(MIN_MARGIN, int(window * MARGIN_SHARE))


def prompt_tokens(request: GenerateRequest) -> int:
    """The tokens ``request``'s prompt takes of a window: its tool definition, system prompt and messages."""
    tool = request.tool
    total = count_tokens(json.dumps([tool.model_dump()], sort_keys=True)) if tool is not None else 0
    return total + count_tokens(request.system) + sum(count_tokens(m.text) for m in request.messages)


def answer_room(request: GenerateRequest, window: int) -> int:
    """Tokens left for the answer of ``request`` in a window of ``window`` tokens (0 or less: none)."""
    return window - margin(window) - prompt_tokens(request)
