"""Model specs (``provider:model`` with optional ``?key=value&...`` constructor options) to provider objects.

Options are part of the spec string so that a run records them and ``--resume`` rebuilds the same
provider: ``langchain:langchain_openai:ChatOpenAI?model=qwen2.5-7b-instruct&base_url=http://localhost:8000/v1``.
A value is read as JSON when it parses as JSON (``0``, ``0.5``, ``true``, ``null``, ``"7"``), else as
text; the part the spec names then checks each option against the ones it declares and converts it to the
declared type (``Part.read_options``). Secrets (keys, tokens, passwords) are refused: a spec is written to
the run manifest and to shell history, so keys come from the environment only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote

from hallumeasure.core.config import looks_secret
from hallumeasure.core.errors import ConfigError


def split_options(spec: str) -> tuple[str, dict[str, Any]]:
    """``spec`` without its ``?key=value&...`` part, and the options that part holds."""
    base, sep, query = spec.partition("?")
    if not sep:
        return spec, {}
    options: dict[str, Any] = {}
    for item in query.split("&"):
        if not item:
            continue
        if "=" not in item:
            raise ConfigError(f"option {item!r} in {spec!r} has no value: write key=value")
        ((key, value),) = parse_qsl(item, keep_blank_values=True)
        options[_option_name(key, spec)] = _option_value(value)
    return base, options


def with_options(spec: str, options: Iterable[str]) -> str:
    """``spec`` with ``key=value`` items (``--judge-option``) added to its options."""
    items = list(options)
    if not items:
        return spec
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"model option {item!r} is not key=value")
        pairs.append(f"{quote(key.strip(), safe='')}={quote(value, safe=':/')}")
    base, existing = split_options(spec)
    joined = "&".join(pairs)
    merged = f"{spec}&{joined}" if existing else f"{base}?{joined}"
    split_options(merged)  # validate names and refuse secrets now, with the option's own name
    return merged


def _option_name(key: str, spec: str) -> str:
    key = key.strip()
    if not key.isidentifier():
        raise ConfigError(f"option name {key!r} in {spec!r} is not a valid name")
    if looks_secret(key):
        raise ConfigError(
            f"option {key!r} looks like a secret: model specs are recorded in the run manifest, so secrets "
            "are not taken from them; set the provider's environment variable instead (for example "
            "OPENAI_API_KEY for ChatOpenAI, ANTHROPIC_API_KEY for anthropic:)"
        )
    return key


def _option_value(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value
