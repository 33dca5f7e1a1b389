"""Prices per million tokens, kept in one table (Decimal), dated, and overridable from a JSON file.

The list prices themselves are model facts, kept with the other facts in ``hallumeasure.registry.facts``
(as of ``PRICES_AS_OF``); check them before quoting a cost. Override with
``HALLUMEASURE_PRICES=/path/prices.json`` or ``load_prices(path)``; the file maps a model
spec (or a prefix of one ending in ``*``) to the fields of ``Price``.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from fnmatch import fnmatchcase
from pathlib import Path

from hallumeasure.core.types import Usage
from hallumeasure.registry import registry
from hallumeasure.registry.facts import PRICES_AS_OF, Price

MILLION = Decimal(1_000_000)

__all__ = [
    "MILLION",
    "PRICES_AS_OF",
    "Price",
    "billed_input_tokens",
    "cost",
    "default_prices",
    "load_prices",
    "price_for",
]


def default_prices() -> dict[str, Price]:
    """List prices of every registered model pattern (the registry's facts table)."""
    return {pattern: facts.price for pattern, facts in registry().facts_table().items() if facts.price is not None}


def load_prices(path: str | Path | None = None) -> dict[str, Price]:
    """The default table, updated from ``path`` (or $HALLUMEASURE_PRICES) when given."""
    table = default_prices()
    path = path or os.environ.get("HALLUMEASURE_PRICES")
    if path:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        table.update({spec: Price.model_validate(fields) for spec, fields in raw.items()})
    return table


def price_for(spec: str, table: dict[str, Price] | None = None) -> Price | None:
    """The price of ``spec``, by exact key or the longest matching pattern (``prefix*``); None when unknown."""
    spec = spec.partition("?")[0]  # constructor options (base URL, temperature ...) do not change the price
    table = table if table is not None else load_prices()
    if spec in table:
        return table[spec]
    matches = [k for k in table if fnmatchcase(spec, k)]
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
    price = price or Price(input=Decimal(1), output=Decimal(1))
    return (
        Decimal(usage.input_tokens)
        + Decimal(usage.cache_write_tokens) * price.cache_write_multiplier
        + Decimal(usage.cache_read_tokens) * price.cache_read_multiplier
    )
