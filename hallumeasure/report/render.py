"""Jinja2 rendering of reports: HTML with autoescaping always on, Markdown with an explicit escape filter.

Everything that comes from a run (contexts, responses, claims, reasons, sample ids, model
names) is untrusted text. In HTML, autoescaping turns it into inert text. In Markdown the
``md`` filter escapes HTML-significant characters and table pipes, so a viewer that renders
inline HTML still shows the text instead of running it.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

from jinja2 import Environment

from hallumeasure.core.text import md_escape
from hallumeasure.mitigate.render import template_environment
from hallumeasure.report.rates import bounds_phrase, unsure_cell
from hallumeasure.report.summary import audit_summary, comparison_summary
from hallumeasure.stats.estimate import Estimate

TEMPLATES = Path(__file__).parent / "templates"


def format_estimate(value: Estimate | None, digits: int = 3) -> str:
    """``0.250 [0.100, 0.400]`` (see ``Estimate.format``), ``-`` for no estimate."""
    return "-" if value is None else value.format(digits)


def format_p(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def format_number(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}"


def format_signed(value: Estimate | None, digits: int = 3) -> str:
    """A difference with its sign: ``+0.125 [-0.050, +0.300]``."""
    if value is None or value.value is None:
        return "-"
    text = f"{value.value:+.{digits}f}"
    if value.low is not None and value.high is not None and value.low != value.high:
        text += f" [{value.low:+.{digits}f}, {value.high:+.{digits}f}]"
    return text


def data_uri(path: Path) -> str:
    """A PNG file as a ``data:`` URI, so the HTML report needs no file beside it."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _environment(*, html: bool) -> Environment:
    env = template_environment(TEMPLATES, html=html)
    env.filters.update(est=format_estimate, p=format_p, num=format_number, signed=format_signed, md=md_escape)
    env.globals.update(
        comparison_summary=comparison_summary,
        audit_summary=audit_summary,
        bounds_phrase=bounds_phrase,
        unsure_cell=unsure_cell,
    )
    return env


def render_html(template: str, **context: object) -> str:
    """Render an HTML template; autoescaping is on and cannot be turned off by the caller."""
    return _environment(html=True).get_template(template).render(**context)


def render_markdown(template: str, **context: object) -> str:
    """Render a Markdown template; templates pass untrusted text through the ``md`` filter."""
    text = _environment(html=False).get_template(template).render(**context)
    # Collapse runs of blank lines left by template control blocks.
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"
