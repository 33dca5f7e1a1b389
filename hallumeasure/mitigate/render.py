"""The mitigation report as Markdown and HTML (autoescaped), with a word diff of each rewrite."""

from __future__ import annotations

import json
import re
from difflib import SequenceMatcher
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from hallumeasure.mitigate.report import MitigationReport

#: The report's templates: an HTML section (embedded by other pages), the standalone page, the Markdown.
TEMPLATES = Path(__file__).parent / "templates"

_TOKEN_RE = re.compile(r"\s+|\d+(?:[.,]\d+)*|\w+|[^\w\s]")


def diff_ops(before: str, after: str) -> list[tuple[str, str]]:
    """(op, text) pieces of a word-level diff: op is ``=``, ``-`` or ``+``.

    Changes separated only by spaces are merged into one removal and one addition, so that a
    rewritten phrase reads as a phrase rather than as alternating single words.
    """
    a, b = _TOKEN_RE.findall(before), _TOKEN_RE.findall(after)
    out: list[tuple[str, str]] = []
    removed, added = "", ""
    pending = ""  # whitespace seen after a change, kept until we know whether another change follows

    def flush() -> None:
        nonlocal removed, added
        out.extend(piece for piece in (("-", removed), ("+", added)) if piece[1])
        removed, added = "", ""

    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            text = "".join(a[i1:i2])
            if (removed or added) and not text.strip():
                pending += text
                continue
            flush()
            out.append(("=", pending + text))
            pending = ""
            continue
        if pending:
            removed, added = removed + pending, added + pending
            pending = ""
        removed += "".join(a[i1:i2])
        added += "".join(b[j1:j2])
    flush()
    if pending:
        out.append(("=", pending))
    return out


def diff_html(before: str, after: str) -> Markup:
    """The word diff as safe HTML: every piece escaped, removals in ``<del>``, additions in ``<ins>``."""
    tags = {"-": "del", "+": "ins"}
    html = Markup("")
    for op, text in diff_ops(before, after):
        html += escape(text) if op == "=" else Markup(f"<{tags[op]}>") + escape(text) + Markup(f"</{tags[op]}>")
    return html


def diff_markdown(before: str, after: str) -> str:
    """The word diff for Markdown: removals ``~~struck~~``, additions ``**bold**``; text escaped."""
    from hallumeasure.core.text import md_escape

    parts = []
    for op, text in diff_ops(before, after):
        core = md_escape(text)
        if not core:
            parts.append(" " if text.strip() == "" and text else "")
            continue
        lead = " " if text[:1].isspace() else ""
        tail = " " if text[-1:].isspace() else ""
        parts.append(lead + (core if op == "=" else f"~~{core}~~" if op == "-" else f"**{core}**") + tail)
    return "".join(parts)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def template_environment(templates: Path, *, html: bool) -> Environment:
    """A Jinja environment for the templates in ``templates``, as the reports use it: HTML escaped (or not,
    for Markdown), an undefined name an error, block tags leaving no blank lines behind."""
    return Environment(
        loader=FileSystemLoader(templates),
        autoescape=html,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _environment(*, html: bool) -> Environment:
    from hallumeasure.core.text import md_escape

    env = template_environment(TEMPLATES, html=html)
    env.filters.update(num=_num, pct=_pct, md=md_escape)
    return env


def render_section(report: MitigationReport) -> Markup:
    """The report as an HTML section (autoescaped) that another page can embed."""
    diffs = {x.sample_id: diff_html(x.original, x.final) for x in report.responses}
    return Markup(_environment(html=True).get_template("section.html.j2").render(r=report, diffs=diffs))


def render_html(report: MitigationReport) -> str:
    """The report as a standalone HTML page."""
    return _environment(html=True).get_template("page.html.j2").render(section=render_section(report))


def render_markdown(report: MitigationReport) -> str:
    mddiffs = {x.sample_id: diff_markdown(x.original, x.final) for x in report.responses}
    return _environment(html=False).get_template("mitigation.md.j2").render(r=report, mddiffs=mddiffs)


def write_report(report: MitigationReport, out_dir: str | Path) -> tuple[Path, Path, Path]:
    """Write ``mitigation.json``, ``mitigation.md`` and ``mitigation.html`` into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = (out_dir / "mitigation.json", out_dir / "mitigation.md", out_dir / "mitigation.html")
    paths[0].write_text(
        json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    paths[1].write_text(render_markdown(report), encoding="utf-8")
    paths[2].write_text(render_html(report), encoding="utf-8")
    return paths
