"""Prices per million tokens, kept in one table (Decimal), dated, and overridable from a JSON file.

The numbers are list prices as published by the providers when this table was written
(see ``PRICES_AS_OF``); check them before quoting a cost. Override with
``HALLUMEASURE_PRICES=/path/prices.json`` or ``load_prices(path)``; the file maps a model
spec (or a prefix of one ending in ``*``) to the fields of ``Price``.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hallumeasure.core.types import Usage

PRICES_AS_OF = "2025-10-15"
MILLION = Decimal(1_000_000)


class Price(BaseModel):
    """US dollars per million tokens. Cache multipliers follow the providers' documentation."""

    model_config = ConfigDict(frozen=True)

    input: Decimal
    output: Decimal
    cache_write_multiplier: Decimal = Decimal("1.25")
    cache_read_multiplier: Decimal = Decimal("0.10")
    batch_discount: Decimal = Decimal("0.50")


def _p(inp: str, out: str) -> Price:
    return Price(input=Decimal(inp), output=Decimal(out))


#: Longest matching prefix wins. Bedrock ids carry the same Anthropic list prices.
DEFAULT_PRICES: dict[str, Price] = {
    "anthropic:claude-opus-4*": _p("15", "75"),
    "anthropic:claude-sonnet-4*": _p("3", "15"),
    "anthropic:claude-3-7-sonnet*": _p("3", "15"),
    "anthropic:claude-3-5-sonnet*": _p("3", "15"),
    "anthropic:claude-haiku-4*": _p("1", "5"),
    "anthropic:claude-3-5-haiku*": _p("0.80", "4"),
    "anthropic:claude-3-haiku*": _p("0.25", "1.25"),
    "bedrock:anthropic.claude-opus-4*": _p("15", "75"),
    "bedrock:anthropic.claude-sonnet-4*": _p("3", "15"),
    "bedrock:anthropic.claude-3-5-sonnet*": _p("3", "15"),
    "bedrock:anthropic.claude-3-sonnet*": _p("3", "15"),
    "bedrock:anthropic.claude-haiku-4*": _p("1", "5"),
    "bedrock:anthropic.claude-3-haiku*": _p("0.25", "1.25"),
    "bedrock:us.anthropic.claude-sonnet-4*": _p("3", "15"),
    "fake*": _p("0", "0"),
    "offline": _p("0", "0"),
}


def load_prices(path: str | Path | None = None) -> dict[str, Price]:
    """The default table, updated from ``path`` (or $HALLUMEASURE_PRICES) when given."""
    table = dict(DEFAULT_PRICES)
    path = path or os.environ.get("HALLUMEASURE_PRICES")
    if path:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        table.update({spec: Price.model_validate(fields) for spec, fields in raw.items()})
    return table


def price_for(spec: str, table: dict[str, Price] | None = None) -> Price | None:
    """The price of ``spec``, by exact key or the longest ``prefix*`` key; None when unknown."""
    spec = spec.partition("?")[0]  # constructor options (base URL, temperature ...) do not change the price
    table = table if table is not None else load_prices()
    if spec in table:
        return table[spec]
    matches = [k for k in table if k.endswith("*") and spec.startswith(k[:-1])]
    return table[max(matches, key=len)] if matches else None


def cost(usage: Usage, price: Price, *, batch: bool = False) -> Decimal:
    """Dollar cost of ``usage``. ``input_tokens`` excludes cache reads and writes, as the providers report."""
    input_cost = (
        Decimal(usage.input_tokens)
        + Decimal(usage.cache_write_tokens) * price.cache_write_multiplier
        + Decimal(usage.cache_read_tokens) * price.cache_read_multiplier
    ) * price.input
    total = (input_cost + Decimal(usage.output_tokens) * price.output) / MILLION
    if batch:
        total *= 1 - price.batch_discount
    return total.quantize(Decimal("0.000001"))


def billed_input_tokens(usage: Usage, price: Price | None = None) -> Decimal:
    """Input tokens weighted by the cache multipliers (what the input side is billed as)."""
    price = price or _p("1", "1")
    return (
        Decimal(usage.input_tokens)
        + Decimal(usage.cache_write_tokens) * price.cache_write_multiplier
        + Decimal(usage.cache_read_tokens) * price.cache_read_multiplier
    )
