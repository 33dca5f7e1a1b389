"""The viewer page as HTML: its data made inert inside the page, the Content-Security-Policy that lets only the
page's own script and style run, and the file written (``report/viewer.py`` builds the data, ``ViewerData``)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pydantic import BaseModel

from hallumeasure.core.errors import ConfigError
from hallumeasure.report.render import TEMPLATES, render_html


def embedded_bytes(text: str) -> int:
    """Bytes the JSON ``text`` takes in the page once ``embed_json`` has escaped it."""
    return len(text.encode("utf-8")) + 5 * (text.count("<") + text.count(">") + text.count("&"))


def embed_json(data: BaseModel | dict[str, Any]) -> Markup:
    """JSON that is inert inside an HTML ``<script type="application/json">`` block.

    ``<``, ``>`` and ``&`` become ``\\u003c`` etc. (still the same JSON), so no ``</script>`` or
    ``<!--`` can appear; U+2028/2029 are escaped too for old parsers.
    """
    text = data.model_dump_json() if isinstance(data, BaseModel) else json.dumps(data, ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return Markup(text)


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def render_page(title: str, data: BaseModel) -> str:
    """The page of ``data`` as one HTML string (script, style and data inline)."""
    script = (TEMPLATES / "viewer.js").read_text(encoding="utf-8")
    style = (TEMPLATES / "viewer.css").read_text(encoding="utf-8")
    csp = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return render_html(
        "viewer.html.j2", title=title, csp=csp, script=Markup(script), style=Markup(style), data=embed_json(data)
    )


def write_html(html: str, out: str | Path) -> Path:
    """Write the page ``html`` to ``out`` (a file, its folder made if needed); returns its path."""
    out = Path(out)
    if out.is_dir():
        raise ConfigError(f"{out} is a directory; give a file name for the viewer, such as {out}/view.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    return out
