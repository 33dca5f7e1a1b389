"""Model specs (``provider:model``) to provider objects."""

from __future__ import annotations

import os
from typing import Any

from hallumeasure.errors import ConfigError
from hallumeasure.models.base import ModelAPI

PROVIDERS = ("fake", "anthropic", "bedrock", "langchain")


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``provider:model`` at the first colon (Bedrock ids and import paths contain colons)."""
    provider, _, name = spec.strip().partition(":")
    if provider not in PROVIDERS:
        raise ConfigError(
            f"unknown model provider {provider!r} in {spec!r}; use one of "
            + ", ".join(f"{p}:<model>" for p in PROVIDERS)
            + " (or 'offline' for the keyless judge)"
        )
    if provider in ("anthropic", "bedrock", "langchain") and not name:
        raise ConfigError(f"{spec!r} names no model: write {provider}:<model>")
    return provider, name


def build_model_api(spec: str, **options: Any) -> ModelAPI:
    """A provider for ``spec``; options go to the provider's constructor (for example ``base_url``)."""
    provider, name = parse_spec(spec)
    if provider == "fake":
        from hallumeasure.models.fake import FakeAPI

        return FakeAPI(name or "demo", **options)
    if provider == "anthropic":
        from hallumeasure.models.anthropic import AnthropicAPI

        return AnthropicAPI(name, **options)
    if provider == "bedrock":
        from hallumeasure.models.bedrock import BedrockAPI

        options.setdefault("endpoint_url", os.environ.get("HALLUMEASURE_BEDROCK_ENDPOINT") or None)
        return BedrockAPI(name, **options)
    from hallumeasure.models.langchain import LangChainAPI

    return LangChainAPI(name, **options)
