"""The viewer highlights the unsupported spans of each answer, by label, with the claim, reason and evidence."""

from __future__ import annotations

from report.viewer_runs import bridge_rows, write_spanned_run

from hallumeasure.report.viewer import write_viewer


def test_unsupported_spans_are_highlighted_by_label_with_reason_on_hover_and_detail_on_click(page, tmp_path):
    run = write_spanned_run(tmp_path / "run", bridge_rows("model-a"))
    html = write_viewer([run], tmp_path / "view.html")
    page.goto(html.resolve().as_uri())
    page.wait_for_selector("body[data-ready]")
    page.click("#list li[data-key] >> nth=0")
    marked = page.eval_on_selector_all(
        ".response .seg.unsupported",
        "nodes => nodes.map(n => [n.textContent, n.dataset.spanLabel, n.dataset.span, n.title])",
    )
    response = "The bridge is 42 km long. It opened in 2019. Sample 0 adds that tolls are free."
    assert [(text, label) for text, label, _, _ in marked] == [
        ("The bridge is 42 km long.", "contradicted"),
        ("Sample 0 adds that tolls are free.", "absent"),
    ]
    for text, _, where, title in marked:
        start, end = map(int, where.split("-"))
        assert response[start:end] == text  # the span the exports give, character for character
        assert "why:" in title  # hover: the claim and the judge's reason
    # the supported claim is highlighted as a claim but not as an unsupported span
    assert page.eval_on_selector_all(".response .seg:not(.unsupported)", "n => n.map(x => x.textContent)") == [
        "It opened in 2019."
    ]
    # the two labels are painted differently
    colours = page.eval_on_selector_all(
        ".response .seg.unsupported", "n => n.map(x => getComputedStyle(x).borderBottomColor)"
    )
    assert colours[0] != colours[1]
    # click: the detail pane shows the claim, its reason
    page.click(".response .seg.unsupported >> nth=0")
    detail = page.text_content("#claim-detail")
    assert "The bridge is 42 km long." in detail and "24 km, not 42 km" in detail
