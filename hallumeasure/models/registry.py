"""Model specs (``provider:model`` with optional ``?key=value&...`` constructor options) to provider objects.

Options are part of the spec string so that a run records them and ``--resume`` rebuilds the same
provider: ``langchain:langchain_openai:ChatOpenAI?model=qwen2.5-7b-instruct&base_url=http://localhost:8000/v1``.
A value is read as JSON when it parses as JSON (``0``, ``0.5``, ``true``, ``null``, ``"7"``), else as
text. Secrets (keys, tokens, passwords) are refused: a spec is written to the run manifest and to
shell history, so keys come from the environment only.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote

from hallumeasure.core.errors import ConfigError
from hallumeasure.models.base import ModelAPI
from hallumeasure.models.wire import SECRET_NAME_FRAGMENTS, looks_secret  # noqa: F401 - looked up here too

PROVIDERS = ("fake", "anthropic", "bedrock", "langchain", "openai")


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``provider:model`` at the first colon (Bedrock ids and import paths contain colons); options dropped."""
    base, _ = split_options(spec)
    provider, _, name = base.strip().partition(":")
    if provider not in PROVIDERS:
        raise ConfigError(
            f"unknown model provider {provider!r} in {spec!r}; use one of "
            + ", ".join(f"{p}:<model>" for p in PROVIDERS)
            + " (or 'offline' / 'nli' / 'offline+nli' for the keyless judges)"
        )
    if provider != "fake" and not name:
        raise ConfigError(f"{spec!r} names no model: write {provider}:<model>")
    return provider, name


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
    if spec.partition("?")[0].partition(":")[0] not in PROVIDERS:
        raise ConfigError(
            f"{spec!r} takes no model options: they are for {', '.join(p + ':' for p in PROVIDERS)} specs"
        )
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


def build_model_api(spec: str, **options: Any) -> ModelAPI:
    """A provider for ``spec``; the spec's options and ``options`` go to the provider's constructor.

    ``options`` given in code win over the spec's, and may hold secrets (they are never recorded).
    """
    provider, name = parse_spec(spec)
    _, spec_options = split_options(spec)
    options = {**spec_options, **options}
    if provider == "langchain":
        from hallumeasure.models.langchain import LangChainAPI

        return LangChainAPI(name, **options)
    if provider == "fake":
        from hallumeasure.models.fake import FakeAPI

        cls: type[ModelAPI] = FakeAPI
        name = name or "demo"
    elif provider == "anthropic":
        from hallumeasure.models.anthropic import AnthropicAPI

        cls = AnthropicAPI
    elif provider == "openai":
        from hallumeasure.models.openai import OpenAIAPI

        cls = OpenAIAPI
    else:
        from hallumeasure.models.bedrock import BedrockAPI

        cls = BedrockAPI
        options.setdefault("endpoint_url", os.environ.get("HALLUMEASURE_BEDROCK_ENDPOINT") or None)
    _check_options(cls, provider, options)
    return cls(name, **options)


def _check_options(cls: type, provider: str, options: dict[str, Any]) -> None:
    parameters = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    valid = [n for n, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ConfigError(
            f"{provider}: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"valid options: {', '.join(valid)}"
        )
