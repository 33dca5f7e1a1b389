"""A hard cap on what a run's provider requests cost (``--max-cost``), shared by every model of the run.

Each request that leaves for a provider first reserves its worst case: its prompt at about four characters a
token (priced as a prompt-cache write, the dearest way to bill input) and its ``max_tokens`` of output. It goes
only when the money already spent, the reservations of the requests in flight and its own fit the budget; when
only the reservations in flight stand in the way, it waits for them to be settled. Once a request cannot fit
even so, the budget is spent: that request and every later one raise ``BudgetSpentError`` and the run stops, to be
resumed. An answer settles its reservation at what its usage costs at the model's price (``pricing.cost``, as
the manifest's usage is priced). Answers from the request cache and shared in-flight answers cost nothing and
never ask.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal

from hallumeasure.core.errors import ConfigError, RunStoppedError
from hallumeasure.core.types import Usage
from hallumeasure.models.base import GenerateRequest
from hallumeasure.models.limits import TokenEstimate, text_tokens
from hallumeasure.models.pricing import MILLION, Price, cost, price_for
from hallumeasure.registry import is_scripted


class BudgetSpentError(RunStoppedError):
    """The next request would take the run past its ``--max-cost``: the run stops where it is."""

    def __init__(self, budget: Budget) -> None:
        self.limit, self.spent = budget.limit, budget.spent
        super().__init__(f"the budget of ${budget.limit:,.2f} is spent (${budget.spent:,.4f} paid for)")


def known_price(spec: str) -> Price:
    """The price of ``spec`` (``pricing.price_for``; nothing for a scripted stand-in such as ``fake``), or a
    ``ConfigError`` that says how to give one."""
    if is_scripted(spec):
        return Price(input=Decimal(0), output=Decimal(0))
    found = price_for(spec)
    if found is None:
        bare = spec.partition("?")[0]
        raise ConfigError(
            f"max_cost needs the price of {bare!r}, and none is known: give it in a JSON file named by "
            f'HALLUMEASURE_PRICES, such as {{"{bare}": {{"input": 3, "output": 15}}}} (dollars per million '
            "tokens), or leave max_cost out"
        )
    return found


def worst_case(request: GenerateRequest) -> TokenEstimate:
    """The most ``request`` is expected to bill: its whole prompt and its ``max_tokens`` of output."""
    prompt = "".join(block.text for message in request.messages for block in message.content)
    tool = request.tool.model_dump_json() if request.tool is not None else ""
    return TokenEstimate(input_tokens=text_tokens(request.system + prompt + tool), output_tokens=request.max_tokens)


class Budget:
    """``limit`` dollars for a run's requests, of which ``spent_before`` went on earlier attempts (a resumed run).

    One ``Budget`` is shared by every model of a run (``ModelFactory``); each model asks through its own
    ``ModelSpend`` (``for_model``), which knows its price. It belongs to one event loop at a time.
    """

    def __init__(self, limit: Decimal | float | str, *, spent_before: Decimal = Decimal(0)) -> None:
        self.limit = Decimal(str(limit))
        self.spent_before = spent_before
        #: What this process paid for, priced from each answer's usage.
        self.spent_now = Decimal(0)
        self.reserved = Decimal(0)
        self.exhausted = False
        #: Requests let through, and those refused (at most one per request in flight when the budget ran out).
        self.admitted = self.refused = 0
        self._settled: asyncio.Event | None = None

    @property
    def spent(self) -> Decimal:
        """What the run has paid for, earlier attempts included."""
        return self.spent_before + self.spent_now

    @property
    def left(self) -> Decimal:
        return max(Decimal(0), self.limit - self.spent)

    def for_model(self, spec: str) -> ModelSpend:
        """What the model of ``spec`` asks through; a ``ConfigError`` when its price is unknown."""
        return ModelSpend(self, known_price(spec))

    async def admit(self, worst: Decimal) -> Decimal:
        """Reserve ``worst`` dollars, waiting for settlements while only reservations in flight stand in the way."""
        while True:
            if self.exhausted or self.spent + worst > self.limit:
                self.exhausted = True
                self.refused += 1
                raise BudgetSpentError(self)
            if self.spent + self.reserved + worst <= self.limit:
                self.reserved += worst
                self.admitted += 1
                return worst
            if self._settled is None:
                self._settled = asyncio.Event()
            await self._settled.wait()

    def settle(self, reserved: Decimal, paid: Decimal) -> None:
        """Replace a reservation with what its answer cost (0 for a failed attempt: it is not billed)."""
        self.reserved -= reserved
        self.spent_now += paid
        if self._settled is not None:  # wake every waiter to look again
            self._settled.set()
            self._settled = None


class ModelSpend:
    """One model's door to the run's ``Budget``: its requests priced at its ``price``."""

    def __init__(self, budget: Budget, price: Price) -> None:
        self.budget = budget
        self.price = price

    async def admit(self, request: GenerateRequest) -> Decimal:
        worst = worst_case(request)
        per_input = self.price.input * max(Decimal(1), self.price.cache_write_multiplier)
        dollars = (worst.input_tokens * per_input + worst.output_tokens * self.price.output) / MILLION
        return await self.budget.admit(dollars)

    def settle(self, reserved: Decimal, usage: Usage | None) -> None:
        self.budget.settle(reserved, cost(usage, self.price) if usage is not None else Decimal(0))
