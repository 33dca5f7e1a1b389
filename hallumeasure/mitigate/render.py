"""The mitigation report as Markdown and HTML (autoescaped), with a word diff of each rewrite."""

from __future__ import annotations

import json
import re
from difflib import SequenceMatcher
from pathlib import Path

from jinja2 import DictLoader, Environment, StrictUndefined
from markupsafe import Markup, escape

from hallumeasure.mitigate.report import MitigationReport

_TOKEN_RE = re.compile(r"\s+|\d+(?:[.,]\d+)*|\w+|[^\w\s]")


def _diff_ops(before: str, after: str) -> list[tuple[str, str]]:
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
    for op, text in _diff_ops(before, after):
        html += escape(text) if op == "=" else Markup(f"<{tags[op]}>") + escape(text) + Markup(f"</{tags[op]}>")
    return html


def diff_markdown(before: str, after: str) -> str:
    """The word diff for Markdown: removals ``~~struck~~``, additions ``**bold**``; text escaped."""
    from hallumeasure.report.render import md_escape

    parts = []
    for op, text in _diff_ops(before, after):
        core = md_escape(text)
        if not core:
            parts.append(" " if text.strip() == "" and text else "")
            continue
        lead = " " if text[:1].isspace() else ""
        tail = " " if text[-1:].isspace() else ""
        parts.append(lead + (core if op == "=" else f"~~{core}~~" if op == "-" else f"**{core}**") + tail)
    return "".join(parts)


_SECTION = """\
<section class="mitigation">
<h2>Mitigation</h2>
<p>Source run <code>{{ r.source_run }}</code> &rarr; mitigated run <code>{{ r.mitigated_run }}</code>;
detector {{ r.detector }}, judge {{ r.judge }}, extractor {{ r.extractor }}, rewriter {{ r.rewriter }}.</p>
<p>Policy: {{ r.policy }}</p>
<table>
<tr><th></th><th>before</th><th>after</th></tr>
<tr><td>mean unsupported rate</td><td>{{ r.before.mean_unsupported_rate | num }}</td><td>{{ r.after.mean_unsupported_rate | num }}</td></tr>
<tr><td>hallucinated share</td><td>{{ r.before.hallucinated_share | num }}</td><td>{{ r.after.hallucinated_share | num }}</td></tr>
<tr><td>hallucinated responses</td><td>{{ r.before.n_hallucinated }}</td><td>{{ r.after.n_hallucinated }}</td></tr>
</table>
<ul>
<li>mitigation rate: <strong>{{ r.mitigation_rate | pct }}</strong> ({{ r.n_mitigated }} of {{ r.n_originally_hallucinated }} hallucinated responses repaired: clean after rewriting, with checkable claims left)</li>
<li>emptied: <strong>{{ r.n_hallucinated_emptied }}</strong> of {{ r.n_originally_hallucinated }} hallucinated responses lost every checkable claim (not counted as mitigated); clean share, emptied included: {{ r.clean_rate | pct }} ({{ r.n_clean }} of {{ r.n_originally_hallucinated }})</li>
<li>retention: <strong>{{ r.retention | pct }}</strong> ({{ r.retained }} of {{ r.supported_before }} supported claims still present and supported)</li>
<li>new unsupported claims introduced by the rewrite: <strong>{{ r.n_new_unsupported }}</strong> in {{ r.n_responses_with_new_unsupported }} response(s)</li>
<li>sent to the rewriter: {{ r.n_sent }} of {{ r.n_responses }} responses; rewritten: {{ r.n_rewritten }}; rewrite errors: {{ r.n_rewrite_errors }}</li>
<li>rewrite cost: {{ r.rewrite_requests }} request(s) ({{ r.rewrite_usage.cached_calls }} answered from the cache at no cost), {{ r.rewrite_usage.output_tokens }} output tokens ({{ r.mean_output_tokens_per_rewrite | num(1) }} per rewrite), {{ r.rewrite_usage.input_tokens }} input tokens; measuring the rewrites: {{ r.measure_usage.calls }} call(s), {{ r.measure_usage.output_tokens }} output tokens</li>
</ul>
{% if r.rounds %}
<table>
<tr><th>round</th><th>sent</th><th>changed</th><th>errors</th><th>rate before</th><th>rate after</th><th>hallucinated share after</th><th>output tokens</th><th>kept</th></tr>
{% for x in r.rounds %}
<tr><td>{{ x.round }}</td><td>{{ x.sent }}</td><td>{{ x.changed }}</td><td>{{ x.rewrite_errors }}</td><td>{{ x.mean_unsupported_rate_before | num }}</td><td>{{ x.mean_unsupported_rate_after | num }}</td><td>{{ x.hallucinated_share_after | num }}</td><td>{{ x.output_tokens }}</td><td>{{ "yes" if x.kept else "no" }}</td></tr>
{% endfor %}
</table>
{% endif %}
{% for x in r.responses if x.sent %}
<article class="response{% if x.new_unsupported %} has-new{% endif %}">
<h3>{{ x.sample_id }}{% if x.model %} <small>({{ x.model }})</small>{% endif %}</h3>
<p>unsupported rate {{ x.before.unsupported_rate | num }} &rarr; {{ x.after.unsupported_rate | num }};
hallucinated {{ x.before.hallucinated }} &rarr; {{ x.after.hallucinated }}{% if x.emptied %} (emptied){% endif %}; rounds kept {{ x.rounds }};
rewrite output tokens {{ x.rewrite_usage.output_tokens }}</p>
{% if x.rewrite_error %}<p class="error">rewrite failed: {{ x.rewrite_error }}</p>{% endif %}
<p class="diff">{{ diffs[x.sample_id] }}</p>
{% if x.new_unsupported %}<p><strong>New unsupported claims:</strong></p><ul>{% for c in x.new_unsupported %}<li class="new">{{ c.text }} &mdash; {{ c.label }}{% if c.subtype %} ({{ c.subtype }}){% endif %}{% if c.reason %}: {{ c.reason }}{% endif %}</li>{% endfor %}</ul>{% endif %}
{% if x.fixed %}<p>fixed: {% for c in x.fixed %}<q>{{ c }}</q>{% if not loop.last %}; {% endif %}{% endfor %}</p>{% endif %}
{% if x.removed %}<p>removed: {% for c in x.removed %}<q>{{ c }}</q>{% if not loop.last %}; {% endif %}{% endfor %}</p>{% endif %}
{% if x.still_unsupported %}<p>still unsupported: {% for c in x.still_unsupported %}<q>{{ c }}</q>{% if not loop.last %}; {% endif %}{% endfor %}</p>{% endif %}
{% if x.lost_supported %}<p>supported claims lost: {% for c in x.lost_supported %}<q>{{ c }}</q>{% if not loop.last %}; {% endif %}{% endfor %}</p>{% endif %}
</article>
{% endfor %}
{% for note in r.notes %}<p class="note">{{ note }}</p>{% endfor %}
</section>
"""

_PAGE = """\
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>hallumeasure mitigation report</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; line-height: 1.45; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { border: 1px solid #ccc; padding: .25rem .5rem; }
del { background: #fdd; } ins { background: #dfd; text-decoration: none; }
.has-new { border-left: 4px solid #c00; padding-left: .75rem; } .new { color: #a00; } .error { color: #a00; }
article { margin: 1.5rem 0; }
</style></head>
<body>
{{ section }}
</body></html>
"""

_MARKDOWN = """\
# Mitigation report

Source run `{{ r.source_run | md }}` -> mitigated run `{{ r.mitigated_run | md }}`; detector {{ r.detector | md }}, judge {{ r.judge | md }}, extractor {{ r.extractor | md }}, rewriter {{ r.rewriter | md }}.

Policy: {{ r.policy | md }}

| | before | after |
|---|---|---|
| mean unsupported rate | {{ r.before.mean_unsupported_rate | num }} | {{ r.after.mean_unsupported_rate | num }} |
| hallucinated share | {{ r.before.hallucinated_share | num }} | {{ r.after.hallucinated_share | num }} |
| hallucinated responses | {{ r.before.n_hallucinated }} | {{ r.after.n_hallucinated }} |

- mitigation rate: **{{ r.mitigation_rate | pct }}** ({{ r.n_mitigated }} of {{ r.n_originally_hallucinated }} hallucinated responses repaired: clean after rewriting, with checkable claims left)
- emptied: **{{ r.n_hallucinated_emptied }}** of {{ r.n_originally_hallucinated }} hallucinated responses lost every checkable claim (not counted as mitigated); clean share, emptied included: {{ r.clean_rate | pct }} ({{ r.n_clean }} of {{ r.n_originally_hallucinated }})
- retention: **{{ r.retention | pct }}** ({{ r.retained }} of {{ r.supported_before }} supported claims still present and supported)
- new unsupported claims introduced by the rewrite: **{{ r.n_new_unsupported }}** in {{ r.n_responses_with_new_unsupported }} response(s)
- sent to the rewriter: {{ r.n_sent }} of {{ r.n_responses }}; rewritten: {{ r.n_rewritten }}; rewrite errors: {{ r.n_rewrite_errors }}
- rewrite cost: {{ r.rewrite_requests }} request(s) ({{ r.rewrite_usage.cached_calls }} answered from the cache at no cost), {{ r.rewrite_usage.output_tokens }} output tokens ({{ r.mean_output_tokens_per_rewrite | num(1) }} per rewrite); measuring the rewrites: {{ r.measure_usage.calls }} call(s)
{% if r.rounds %}

| round | sent | changed | errors | rate before | rate after | hallucinated share after | output tokens | kept |
|---|---|---|---|---|---|---|---|---|
{% for x in r.rounds %}
| {{ x.round }} | {{ x.sent }} | {{ x.changed }} | {{ x.rewrite_errors }} | {{ x.mean_unsupported_rate_before | num }} | {{ x.mean_unsupported_rate_after | num }} | {{ x.hallucinated_share_after | num }} | {{ x.output_tokens }} | {{ "yes" if x.kept else "no" }} |
{% endfor %}
{% endif %}

## Responses sent to the rewriter
{% for x in r.responses if x.sent %}

### {{ x.sample_id | md }}{{ (" (" ~ (x.model | md) ~ ")") if x.model else "" }}{{ " -- NEW UNSUPPORTED CLAIMS" if x.new_unsupported else "" }}

unsupported rate {{ x.before.unsupported_rate | num }} -> {{ x.after.unsupported_rate | num }}; hallucinated {{ x.before.hallucinated }} -> {{ x.after.hallucinated }}{{ " (emptied)" if x.emptied else "" }}; rewrite output tokens {{ x.rewrite_usage.output_tokens }}
{% if x.rewrite_error %}

rewrite failed: {{ x.rewrite_error | md }}
{% endif %}

> {{ mddiffs[x.sample_id] }}

{% for c in x.new_unsupported %}
- NEW: {{ c.text | md }} ({{ c.label | md }}{% if c.subtype %}, {{ c.subtype | md }}{% endif %}){% if c.reason %}: {{ c.reason | md }}{% endif %}

{% endfor %}
{% for c in x.fixed %}
- fixed: {{ c | md }}
{% endfor %}
{% for c in x.removed %}
- removed: {{ c | md }}
{% endfor %}
{% for c in x.still_unsupported %}
- still unsupported: {{ c | md }}
{% endfor %}
{% for c in x.lost_supported %}
- supported claim lost: {{ c | md }}
{% endfor %}
{% endfor %}

{% for note in r.notes %}
_{{ note | md }}_

{% endfor %}
"""


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _environment(*, html: bool) -> Environment:
    from hallumeasure.report.render import md_escape

    env = Environment(
        loader=DictLoader({"section": _SECTION, "page": _PAGE, "md": _MARKDOWN}),
        autoescape=html,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(num=_num, pct=_pct, md=md_escape)
    return env


def render_section(report: MitigationReport) -> Markup:
    """The report as an HTML section (autoescaped) that another page can embed."""
    diffs = {x.sample_id: diff_html(x.original, x.final) for x in report.responses}
    return Markup(_environment(html=True).get_template("section").render(r=report, diffs=diffs))


def render_html(report: MitigationReport) -> str:
    """The report as a standalone HTML page."""
    return _environment(html=True).get_template("page").render(section=render_section(report))


def render_markdown(report: MitigationReport) -> str:
    mddiffs = {x.sample_id: diff_markdown(x.original, x.final) for x in report.responses}
    return _environment(html=False).get_template("md").render(r=report, mddiffs=mddiffs)


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
