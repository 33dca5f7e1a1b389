"""Write docs/img/viewer.png: the viewer page of the demo run, rendered by the system Chromium.

Run ``make demo`` first (it writes ``runs/demo/view.html``), then ``python scripts/docs_screenshot.py``.
The page opens on model-b's harbor summary, whose claims carry three different labels.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hallumeasure.testing.browser import browser_missing, open_page

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", type=Path, default=REPO / "runs" / "demo" / "view.html")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img" / "viewer.png")
    parser.add_argument("--fragment", default="#demo/harbor-b")
    args = parser.parse_args()
    reason = browser_missing()
    if reason:
        parser.exit(2, f"no screenshot: {reason}\n")
    with open_page(width=1400, height=900) as page:
        page.goto(args.page.resolve().as_uri() + args.fragment)  # type: ignore[attr-defined]
        page.wait_for_selector("body[data-ready]")  # type: ignore[attr-defined]
        page.screenshot(path=str(args.out))  # type: ignore[attr-defined]
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
