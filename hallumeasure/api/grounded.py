"""Groundedness as an assertion: ``assert_grounded`` for test suites, the settings it takes from a
project, the tally the pytest plugin reports, and ``parametrize_samples`` (one test per sample of a file).

Nothing here imports pytest or a judge until it is called, so the plugin stays free for test sessions
that never use it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hallumeasure.core.certainty import UNSURE_NOTE
from hallumeasure.core.config import redact
from hallumeasure.core.types import Passage, Sample, Usage

if TYPE_CHECKING:
    from hallumeasure.api.check import CheckedClaim, Result

log = logging.getLogger(__name__)

#: Settings of a settings file that mean nothing for one response checked in memory.
_RUN_ONLY = ("batch", "batch_s3", "batch_role", "batch_poll", "concurrency", "strict_input", "delimiter", "model_name")


class GroundednessError(AssertionError):
    """A response with more unsupported claims (or error rows) than allowed; ``result`` holds what was found."""

    # A failure's first line reads "hallumeasure.GroundednessError: ...", the name users import, and fits 80 columns.
    __module__ = "hallumeasure"

    def __init__(self, message: str, result: Result) -> None:
        super().__init__(message)
        self.result = result


@dataclass
class Tally:
    """What was checked: responses, claims, unsupported claims, error rows, usage per priced spec."""

    responses: int = 0
    claims: int = 0
    evaluated: int = 0
    unsupported: int = 0
    errors: int = 0
    judges: set[str] = field(default_factory=set)
    usage: dict[str, Usage] = field(default_factory=dict)

    def add(self, result: Result) -> None:
        from hallumeasure.registry import is_keyless

        self.responses += 1
        self.claims += result.n_claims
        self.evaluated += result.n_evaluated
        self.unsupported += result.n_unsupported
        self.errors += result.n_errors + (1 if result.error else 0)
        self.judges.add(result.judge)
        billed = result.judge if not is_keyless(result.judge) else result.extractor
        self.usage[billed] = self.usage.get(billed, Usage()) + result.usage

    @property
    def rate(self) -> float | None:
        return self.unsupported / self.evaluated if self.evaluated else None


@dataclass
class Project:
    """Where the defaults of ``assert_grounded`` come from: command-line options, then the settings file."""

    root: Path | None = None
    judge: list[str] | None = None
    cache: str | None = None
    _settings: dict[str, Any] | None = None

    def settings(self) -> dict[str, Any]:
        """The check settings: the settings file's keys (found from ``root``), then the options."""
        if self._settings is None:
            from hallumeasure.pipeline.settings import find_config, read_config

            found = find_config(self.root) if self.root is not None else None
            values = read_config(found) if found is not None else {}
            values = {k: v for k, v in values.items() if k not in _RUN_ONLY}
            if self.judge:
                values["judge"] = self.judge
            if self.cache:
                values["cache"] = self.cache
            self._settings = values
        return dict(self._settings)


#: Set by the pytest plugin: the project's defaults, the session's tally and the running test's.
project = Project()
session: Tally | None = None
current: Tally | None = None


def _record(result: Result) -> None:
    for tally in (session, current):
        if tally is not None:
            tally.add(result)


def check_with_defaults(
    response: str | Sample | None = None,
    *,
    context: str | None = None,
    passages: Sequence[str | Passage | dict[str, Any]] | None = None,
    messages: Sequence[Mapping[str, Any]] | None = None,
    question: str | None = None,
    judge: str | list[str] | None = None,
    **settings: Any,
) -> Result:
    """``check`` with the project's settings under the given ones; counted in the pytest tallies."""
    from hallumeasure.api.check import check

    values = {**project.settings(), **{k: v for k, v in settings.items() if v is not None}}
    if judge is not None:
        values["judge"] = judge
    result = check(response, context=context, passages=passages, messages=messages, question=question, **values)
    _record(result)
    return result


def assert_grounded(
    response: str | Sample | None = None,
    context: str | None = None,
    passages: Sequence[str | Passage | dict[str, Any]] | None = None,
    *,
    messages: Sequence[Mapping[str, Any]] | None = None,
    question: str | None = None,
    max_unsupported: int = 0,
    max_errors: int = 0,
    judge: str | list[str] | None = None,
    **settings: Any,
) -> Result:
    """Check ``response`` against ``context`` (or ``passages``) and raise ``GroundednessError`` (an
    ``AssertionError``) when more than ``max_unsupported`` claims are unsupported or more than
    ``max_errors`` could not be judged. The message lists each such claim with its label, subtype,
    reason and evidence. Returns the ``Result`` when the response passes.

    ``judge`` defaults to the project's (``--hallumeasure-judge``, else ``judge`` in hallumeasure.toml or
    ``[tool.hallumeasure]``, else ``offline``); ``settings`` are further ``MeasureSettings`` fields.
    """
    # pytest leaves this frame out of a failure's traceback: the report shows the test's line, then the claims.
    __tracebackhide__ = True
    result = check_with_defaults(
        response, context=context, passages=passages, messages=messages, question=question, judge=judge, **settings
    )
    problems = []
    if result.error is not None:
        problems.append(f"the response could not be checked: {result.error}")
    if result.n_unsupported > max_unsupported:
        problems.append(f"{result.n_unsupported} unsupported (at most {max_unsupported} allowed)")
    if result.n_errors > max_errors:
        problems.append(f"{result.n_errors} claim(s) without a verdict (at most {max_errors} allowed)")
    if problems:
        raise GroundednessError(redact(failure_message(result, problems)), result)
    return result


#: The width of a failure message's lines: pytest puts "E" and the failing line's indent (8 columns) before each.
MESSAGE_WIDTH = 72


def failure_message(result: Result, problems: list[str]) -> str:
    """The lines of a failed ``assert_grounded``: what failed, then each unsupported or unjudged claim, each line
    wrapped to ``MESSAGE_WIDTH`` so that pytest's report of it fits an 80-column terminal."""
    rate = "-" if result.unsupported_rate is None else f"{result.unsupported_rate:.3f}"
    lines = [
        "response not grounded:",
        f"  {'; '.join(problems)}; {result.n_claims} claims, unsupported rate {rate}, judge {result.judge}",
    ]
    for claim in result.claims:
        if claim.unsupported or claim.error is not None:
            lines += _claim_lines(claim)
    return "\n".join(_wrapped(line) for line in lines)


def _wrapped(line: str) -> str:
    """One message line wrapped to ``MESSAGE_WIDTH``, its continuation lines indented two more columns."""
    import textwrap

    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return "\n".join(textwrap.wrap(line, MESSAGE_WIDTH, subsequent_indent=indent, break_on_hyphens=False)) or line


def _claim_lines(claim: CheckedClaim) -> list[str]:
    label = claim.label.value if claim.label is not None else "error"
    kind = label + (f" / {claim.subtype.value}" if claim.subtype is not None else "")
    if not claim.confident:
        kind += f" ({UNSURE_NOTE})"
    lines = [f"  claim {claim.index + 1}: {claim.text!r}", f"    label: {kind}"]
    reason = claim.label_reason if claim.error is None else claim.error
    if reason:
        lines.append(f"    reason: {' '.join(reason.split())}")
    if claim.subtype_reason:
        lines.append(f"    subtype reason: {' '.join(claim.subtype_reason.split())}")
    for evidence in claim.evidence:
        kind = evidence.source_kind.value.replace("_", " ") if evidence.source_kind else "passage"
        where = f" ({kind} {evidence.passage_id})" if evidence.passage_id else ""
        lines.append(f"    evidence{where}: {evidence.quote!r}")
    return lines


def parametrize_samples(
    path: str | Path, *, argname: str = "sample", columns: dict[str, str] | None = None, model: str | None = None
) -> Any:
    """A ``pytest.mark.parametrize`` mark that runs the test once per sample of a data file (JSONL, CSV or
    Parquet, the fields of ``measure``), each test named by the sample's id. A row that cannot be read
    stops the collection with its row number and reason.

    A relative ``path`` is found from the calling test file, not the current directory, so pytest may
    run from anywhere: first beside the test file, then beside each folder above it (so
    ``"tests/answers.jsonl"`` written from the project root works from ``tests/`` too), then in the
    current directory.
    """
    import pytest

    from hallumeasure.api.measure import load_input

    caller = inspect.currentframe()
    caller_file = caller.f_back.f_globals.get("__file__") if caller is not None and caller.f_back else None
    loaded = load_input(
        _data_file(Path(path), Path(caller_file) if caller_file else None), columns=columns, model=model, strict=True
    )
    return pytest.mark.parametrize(argname, loaded.samples, ids=[s.id for s in loaded.samples])


def _data_file(path: Path, caller: Path | None) -> Path:
    """``path`` as ``parametrize_samples`` finds it: from the caller's folder and those above it, else as given."""
    if path.is_absolute() or caller is None:
        return path
    for folder in caller.resolve().parents:
        if (folder / path).exists():
            return folder / path
    return path
