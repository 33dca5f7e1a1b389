"""The pytest plugin (entry point ``pytest11``): the ``hallumeasure`` fixture, the options
``--hallumeasure-judge`` and ``--hallumeasure-cache``, per-test JUnit properties and a session summary.

Loaded into every test session of a project that installs hallumeasure, and inert there until a test
checks a response: it imports no judge and prints nothing before that. A test that calls
``hallumeasure.assert_grounded`` (or the fixture) gets these JUnit properties when it checked something:
``hallumeasure_claims``, ``hallumeasure_unsupported``, ``hallumeasure_unsupported_rate`` and
``hallumeasure_judge``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Generator, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest

from hallumeasure.api import grounded

if TYPE_CHECKING:
    from hallumeasure.api.check import Result
    from hallumeasure.core.types import Passage, Sample


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hallumeasure", "groundedness checks (hallumeasure)")
    group.addoption(
        "--hallumeasure-judge",
        action="append",
        default=None,
        metavar="SPEC",
        help="Judge of assert_grounded and the hallumeasure fixture (offline, nli, anthropic:<model> ...; "
        "repeat for a panel). Default: judge in hallumeasure.toml or [tool.hallumeasure], else offline.",
    )
    group.addoption(
        "--hallumeasure-cache",
        default=None,
        metavar="FILE",
        help="Request cache file of LLM judges (default: $HALLUMEASURE_CACHE_DIR/requests.sqlite).",
    )


def pytest_configure(config: pytest.Config) -> None:
    grounded.project = grounded.Project(
        root=config.rootpath,
        judge=config.getoption("hallumeasure_judge"),
        cache=config.getoption("hallumeasure_cache"),
    )
    grounded.session = grounded.Tally()


def pytest_unconfigure(config: pytest.Config) -> None:
    grounded.session = None
    grounded.project = grounded.Project()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    grounded.current = tally = grounded.Tally()
    try:
        yield
    finally:
        grounded.current = None
        if tally.responses:
            rate = tally.rate
            item.user_properties += [
                ("hallumeasure_claims", tally.claims),
                ("hallumeasure_unsupported", tally.unsupported),
                ("hallumeasure_unsupported_rate", "" if rate is None else f"{rate:.4f}"),
                ("hallumeasure_judge", ", ".join(sorted(tally.judges))),
            ]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    tally = grounded.session
    if tally is None or not tally.responses:
        return
    terminalreporter.section("hallumeasure")
    rate = "-" if tally.rate is None else f"{tally.rate:.3f}"
    terminalreporter.write_line(
        f"{tally.responses} responses, {tally.claims} claims checked: {tally.unsupported} unsupported "
        f"(rate {rate}), {tally.errors} error rows"
    )
    terminalreporter.write_line(f"judge: {', '.join(sorted(tally.judges))}")
    # the cost line wraps within the terminal (80 columns when piped), as pytest's own lines do
    width = max(40, config.get_terminal_writer().fullwidth)
    for line in textwrap.wrap(cost_line(tally), width, subsequent_indent="  "):
        terminalreporter.write_line(line)


def cost_line(tally: grounded.Tally) -> str:
    """The cost of the session's checks: list prices of the calls made (cache hits are free)."""
    from hallumeasure.models.pricing import cost, price_for

    calls = sum(u.calls for u in tally.usage.values())
    cached = sum(u.cached_calls for u in tally.usage.values())
    tokens = sum(
        u.input_tokens + u.output_tokens + u.cache_read_tokens + u.cache_write_tokens for u in tally.usage.values()
    )
    if not calls and not cached:
        return "cost: $0 (no provider was called)"
    total, unpriced = Decimal(0), []
    for spec, usage in tally.usage.items():
        price = price_for(spec)
        if price is None:
            unpriced.append(spec)
        else:
            total += cost(usage, price)
    text = (
        f"cost: ${total:.4f} at list prices ({calls} provider calls, {cached} from the request cache, {tokens} tokens)"
    )
    return text + (f"; no price known for {', '.join(sorted(unpriced))}" if unpriced else "")


class Grounding:
    """The ``hallumeasure`` fixture: ``check`` and ``assert_grounded`` with the project's judge and settings.

    A test that names the fixture ``hallumeasure`` hides the module of that name; the fixture has the
    module's two functions, so ``hallumeasure.assert_grounded(...)`` reads the same inside such a test.
    Its methods hide their frames (``__tracebackhide__``): a failure shows the test's line, then the claims.
    """

    def __repr__(self) -> str:  # pytest prints a failing test's arguments: one short line, not an address
        return "<hallumeasure fixture>"

    @property
    def settings(self) -> dict[str, Any]:
        """The settings every check uses: ``[tool.hallumeasure]`` or hallumeasure.toml, then the options."""
        return grounded.project.settings()

    @property
    def judge(self) -> str | list[str]:
        judge: str | list[str] = self.settings.get("judge") or "offline"
        return judge

    def check(
        self,
        response: str | Sample | None = None,
        context: str | None = None,
        passages: Sequence[str | Passage | dict[str, Any]] | None = None,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> Result:
        """``hallumeasure.check`` with the project's settings (counted in the session summary); ``messages``
        checks the last answer of a conversation against its system prompt and tool results."""
        __tracebackhide__ = True
        return grounded.check_with_defaults(response, context=context, passages=passages, messages=messages, **options)

    def assert_grounded(
        self,
        response: str | Sample | None = None,
        context: str | None = None,
        passages: Sequence[str | Passage | dict[str, Any]] | None = None,
        *,
        messages: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> Result:
        """``hallumeasure.assert_grounded`` with the project's settings."""
        __tracebackhide__ = True
        return grounded.assert_grounded(response, context, passages, messages=messages, **options)


@pytest.fixture
def hallumeasure() -> Grounding:
    """Check responses for groundedness with the project's judge (see ``Grounding``)."""
    return Grounding()
