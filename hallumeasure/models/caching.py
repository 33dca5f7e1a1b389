"""The providers' prompt-cache rules that the client plans with: the shortest prefix each model caches.

Anthropic documents a minimum cacheable prompt per model (tokens up to a breakpoint); a shorter
prefix is processed normally and nothing is written, so a request sent only to write the cache
would be wasted. Bedrock applies the same minimums to the Claude models it serves. Providers that
cache nothing here (the fake, LangChain) have no minimum: ``None``.
"""

from __future__ import annotations

import re

#: (pattern on the model id, minimum tokens), first match wins; from Anthropic's prompt-caching docs.
_CLAUDE_MINIMUMS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"opus-4-[5-9]|opus-4\.[5-9]"), 4096),
    (re.compile(r"haiku-4|haiku-4\.\d"), 4096),
    (re.compile(r"haiku"), 2048),
    (re.compile(r"sonnet|opus"), 1024),
)
#: A Claude model the table does not name (newer ones): the smallest documented minimum.
DEFAULT_CLAUDE_MINIMUM = 1024
#: Providers whose models are served with prompt caching by this package.
CACHING_PROVIDERS = frozenset({"anthropic", "bedrock"})


def min_cache_tokens(provider: str, model_name: str) -> int | None:
    """The shortest prefix ``provider``'s ``model_name`` caches, or None when it caches nothing."""
    if provider not in CACHING_PROVIDERS:
        return None
    name = model_name.lower()
    if "claude" not in name and provider == "bedrock":
        return None  # other Bedrock models: not planned for (the warm-up is skipped)
    for pattern, tokens in _CLAUDE_MINIMUMS:
        if pattern.search(name):
            return tokens
    return DEFAULT_CLAUDE_MINIMUM
