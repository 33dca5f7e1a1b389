"""The viewer on a phone, 390 x 844 CSS pixels (issue #38 item 4): names whole, every number on screen, and a
tapped response's detail brought into view."""

from __future__ import annotations

import pytest
from report.viewer_runs import bridge_rows, write_spanned_run

from hallumeasure.report.viewer import write_viewer

WIDTH, HEIGHT = 390, 844


@pytest.fixture
def two_models(tmp_path):
    rows = bridge_rows("model-a")
    for sample, claims in bridge_rows("model-b", wrong=False):
        rows.append((sample.model_copy(update={"id": "c" + sample.id[1:]}), claims))
    run = write_spanned_run(tmp_path / "mixed", rows)
    return write_viewer([run], tmp_path / "mixed.html")


def _open_phone(page, path):
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("body[data-ready]")


def test_model_names_stay_whole_and_every_number_is_on_screen(page, two_models, artifacts):
    _open_phone(page, two_models)
    page.screenshot(path=str(artifacts / "viewer-390.png"))
    # no sideways scrolling: the page is as wide as the phone
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    names = page.eval_on_selector_all(
        "table.summary td.model",
        """cells => cells.map(cell => {
            const range = document.createRange();
            range.selectNodeContents(cell);
            const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
            return [cell.textContent, lines.size];
        })""",
    )
    assert names == [["model-a", 1], ["model-b", 1]]  # not "mode / l-a"
    cells = page.eval_on_selector_all(
        "table.summary td.num",
        "cells => cells.map(c => { const r = c.getBoundingClientRect(); return [c.textContent, r.left, r.right]; })",
    )
    assert len(cells) == 2 * 5
    for text, left, right in cells:
        assert text and left >= 0 and right <= WIDTH, (text, left, right)


def test_tapping_a_response_brings_its_detail_into_view(page, two_models):
    _open_phone(page, two_models)
    page.click("#list li[data-key]:nth-child(3)")
    page.wait_for_function("document.querySelector('#detail .side-title, #detail h2') !== null")
    page.wait_for_timeout(300)
    top = page.evaluate("document.getElementById('detail').getBoundingClientRect().top")
    assert 0 <= top < HEIGHT / 2, top  # the detail pane starts in the upper half of the screen
    shown = page.evaluate("document.getElementById('detail').textContent")
    listed = page.eval_on_selector("#list li[data-key]:nth-child(3) .id", "n => n.textContent")
    assert listed in shown
