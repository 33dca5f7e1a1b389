"""What is known of each model, in one table: context window, list price, prompt-cache minimum, batch service.

One row per spec pattern (``fnmatch`` syntax on ``provider:model``, options dropped). Rows run from general
to specific, and a fact is read from the last matching row that states it, so a row for a family can give
the window while a later row for one model gives its price. Plugins add rows through their provider's
``Part.facts``; ``HALLUMEASURE_PRICES`` still overrides prices (``models/pricing.py``).

Prices are US dollars per million tokens as the providers listed them on ``PRICES_AS_OF``; check them
before quoting a cost. Cache minimums are the shortest prompt prefix a model caches (Anthropic documents
them per model; Bedrock applies the same to the Claude models it serves).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict

PRICES_AS_OF = "2025-10-15"


class Price(BaseModel):
    """US dollars per million tokens. Cache multipliers follow the providers' documentation."""

    model_config = ConfigDict(frozen=True)

    input: Decimal
    output: Decimal
    cache_write_multiplier: Decimal = Decimal("1.25")
    cache_read_multiplier: Decimal = Decimal("0.10")
    batch_discount: Decimal = Decimal("0.50")


class ModelFacts(BaseModel):
    """Facts of one model; None where the table states nothing (no window limit, unknown price ...)."""

    model_config = ConfigDict(frozen=True)

    context_window: int | None = None
    price: Price | None = None
    min_cache_tokens: int | None = None
    batch: bool | None = None


def price(inp: str, out: str) -> Price:
    """A ``Price`` from two decimal strings (input, output per million tokens)."""
    return Price(input=Decimal(inp), output=Decimal(out))


def openai_price(inp: str, out: str, *, read: str) -> Price:
    """An OpenAI list price: cached input is billed at ``read`` of the input price, and writing costs nothing."""
    return Price(
        input=Decimal(inp), output=Decimal(out), cache_write_multiplier=Decimal(1), cache_read_multiplier=Decimal(read)
    )


def _f(
    window: int | None = None, cost: Price | None = None, cache: int | None = None, batch: bool | None = None
) -> ModelFacts:
    return ModelFacts(context_window=window, price=cost, min_cache_tokens=cache, batch=batch)


#: The built-in table. Bedrock serves the Anthropic models at Anthropic's list prices and cache minimums.
BUILTIN_FACTS: dict[str, ModelFacts] = {
    # Anthropic API: 200k windows, prompt caching (1,024 tokens for Sonnet / Opus, 2,048 for Haiku,
    # 4,096 for Haiku 4 and Opus 4.5+), message batches.
    "anthropic:*": _f(200_000, cache=1024, batch=True),
    "anthropic:*haiku*": _f(cache=2048),
    "anthropic:*haiku-4*": _f(cache=4096),
    "anthropic:*opus-4-[5-9]*": _f(cache=4096),
    "anthropic:*opus-4.[5-9]*": _f(cache=4096),
    "anthropic:claude-opus-4*": _f(cost=price("15", "75")),
    "anthropic:claude-sonnet-4*": _f(cost=price("3", "15")),
    "anthropic:claude-3-7-sonnet*": _f(cost=price("3", "15")),
    "anthropic:claude-3-5-sonnet*": _f(cost=price("3", "15")),
    "anthropic:claude-haiku-4*": _f(cost=price("1", "5")),
    "anthropic:claude-3-5-haiku*": _f(cost=price("0.80", "4")),
    "anthropic:claude-3-haiku*": _f(cost=price("0.25", "1.25")),
    # Amazon Bedrock (Converse): windows by model family; only the Claude models are cached here.
    "bedrock:*": _f(batch=True),
    "bedrock:*anthropic.*": _f(200_000),
    "bedrock:*anthropic.*claude*": _f(cache=1024),
    "bedrock:*anthropic.*haiku*": _f(cache=2048),
    "bedrock:*anthropic.*haiku-4*": _f(cache=4096),
    "bedrock:*anthropic.*opus-4-[5-9]*": _f(cache=4096),
    "bedrock:amazon.nova*": _f(300_000),
    "bedrock:us.amazon.nova*": _f(300_000),
    "bedrock:meta.llama3*": _f(128_000),
    "bedrock:mistral.*": _f(32_000),
    "bedrock:anthropic.claude-opus-4*": _f(cost=price("15", "75")),
    "bedrock:anthropic.claude-sonnet-4*": _f(cost=price("3", "15")),
    "bedrock:anthropic.claude-3-5-sonnet*": _f(cost=price("3", "15")),
    "bedrock:anthropic.claude-3-sonnet*": _f(cost=price("3", "15")),
    "bedrock:anthropic.claude-haiku-4*": _f(cost=price("1", "5")),
    "bedrock:anthropic.claude-3-haiku*": _f(cost=price("0.25", "1.25")),
    "bedrock:us.anthropic.claude-sonnet-4*": _f(cost=price("3", "15")),
    # OpenAI: automatic prompt caching from 1,024 tokens (no write charge), Batch API at half price.
    "openai:*": _f(128_000, cache=1024, batch=True),
    "openai:gpt-4o*": _f(cost=openai_price("2.50", "10", read="0.50")),
    "openai:gpt-4o-mini*": _f(cost=openai_price("0.15", "0.60", read="0.50")),
    "openai:gpt-4.1*": _f(1_047_576, cost=openai_price("2", "8", read="0.25")),
    "openai:gpt-4.1-mini*": _f(cost=openai_price("0.40", "1.60", read="0.25")),
    "openai:gpt-4.1-nano*": _f(cost=openai_price("0.10", "0.40", read="0.25")),
    # Keyless parts and the fake provider cost nothing.
    "fake*": _f(cost=price("0", "0"), batch=True),
    "offline": _f(cost=price("0", "0")),
}


def facts_of(spec: str, table: Mapping[str, ModelFacts]) -> ModelFacts:
    """The facts of ``spec`` (options dropped): each field from the last matching row that states it."""
    base = spec.partition("?")[0].strip()
    merged: dict[str, object] = {}
    for pattern, row in table.items():  # rows run from general to specific: a later match wins
        if fnmatchcase(base, pattern):
            merged.update(row.model_dump(exclude_none=True))
    return ModelFacts.model_validate(merged)
