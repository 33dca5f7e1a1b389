"""The viewer page in a real headless Chromium: filters, claim selection and evidence, keys, fragments, hostile text."""

from __future__ import annotations

import pytest
from report.viewer_runs import CONTEXT, HOSTILE, bridge_rows, write_spanned_run

from hallumeasure.core.types import Sample
from hallumeasure.report.runs import load_runs
from hallumeasure.report.viewer import ViewerPassage, build_viewer_data, render_viewer, write_viewer


def _open(page, path, fragment: str = ""):
    page.goto(path.resolve().as_uri() + fragment)
    page.wait_for_selector("body[data-ready]")


def _listed(page) -> list[str]:
    return page.eval_on_selector_all("#list li[data-key] .id", "nodes => nodes.map(n => n.textContent)")


@pytest.fixture
def mixed_run(tmp_path):
    """Two models: model-a gets the number wrong in b0..b3; model-b is right in c0..c3; one error row."""
    rows = bridge_rows("model-a")
    for sample, claims in bridge_rows("model-b", wrong=False):
        rows.append((sample.model_copy(update={"id": "c" + sample.id[1:]}), claims))
    run = write_spanned_run(tmp_path / "mixed", rows, failed={"c3": "extraction failed: the model timed out"})
    return write_viewer([run], tmp_path / "mixed.html")


def test_filters_change_what_is_listed(page, mixed_run):
    _open(page, mixed_run)
    assert _listed(page) == ["b0", "b1", "b2", "b3", "c0", "c1", "c2", "c3"]
    page.select_option("#f-label", "contradicted")
    assert _listed(page) == ["b0", "b1", "b2", "b3"]
    # each listed response shows the claims that matched, with their label
    hits = page.eval_on_selector_all("#list .hit .pill", "nodes => nodes.map(n => n.textContent)")
    assert hits == ["contradicted"] * 4
    page.select_option("#f-label", "")
    page.select_option("#f-model", "model-b")
    assert _listed(page) == ["c0", "c1", "c2", "c3"]
    page.check("#f-errors")
    assert _listed(page) == ["c3"]
    page.uncheck("#f-errors")
    page.select_option("#f-model", "")
    page.fill("#f-search", "sample 2 adds")
    assert _listed(page) == ["b2", "c2"]
    page.fill("#f-search", "nothing like this")
    assert _listed(page) == [] and "No response matches" in page.text_content("#list")
    # label and text together: responses with an absent claim whose text mentions "sample 1"
    page.select_option("#f-label", "absent")
    page.fill("#f-search", "sample 1 adds")
    assert _listed(page) == ["b1", "c1"]
    page.select_option("#f-label", "error")  # a whole-sample error row counts as an error
    page.fill("#f-search", "")
    assert _listed(page) == ["c3"]
    page.select_option("#f-label", "")
    page.select_option("#f-sort", "rate-desc")
    assert _listed(page)[:4] == ["b0", "b1", "b2", "b3"] and _listed(page)[-1] == "c3"  # error row (no rate) last
    assert page.text_content("#count").startswith("8 of 8")


def test_selecting_a_claim_shows_label_reasons_and_evidence_in_the_context(page, mixed_run, artifacts):
    _open(page, mixed_run)
    page.click("#list li[data-key] >> text=b1")
    # the response's claims are highlighted in place by label
    segments = page.eval_on_selector_all(".response .seg", "nodes => nodes.map(n => [n.dataset.label, n.textContent])")
    assert segments == [
        ["contradicted", "The bridge is 42 km long."],
        ["supported", "It opened in 2019."],
        ["absent", "Sample 1 adds that tolls are free."],
    ]
    page.click(".claims li[data-claim='0']")
    detail = page.text_content("#claim-detail")
    assert "contradicted" in detail and "number" in detail and "The context says 24 km, not 42 km." in detail
    assert page.text_content("#context mark") == "The bridge over the Vell river is 24 km long."
    # clicking a highlighted stretch of the response selects its claim
    page.click(".response .seg[data-label='supported']")
    assert page.text_content("#context mark") == "It opened in 2019 after six years of work."
    assert page.eval_on_selector(".claims li.active", "n => n.dataset.claim") == "1"
    page.screenshot(path=str(artifacts / "viewer-claim-selected.png"), full_page=True)


def test_keys_move_through_responses_and_claims_and_the_fragment_is_a_stable_link(page, mixed_run):
    _open(page, mixed_run)
    selected = lambda: page.eval_on_selector("#list li.selected", "n => n.dataset.key")  # noqa: E731
    assert selected() == "0/b0"
    page.keyboard.press("j")
    page.keyboard.press("ArrowDown")
    assert selected() == "0/b2" and page.evaluate("location.hash") == "#mixed/b2/c0"
    page.keyboard.press("k")
    assert selected() == "0/b1"
    page.keyboard.press("n")
    assert page.evaluate("location.hash") == "#mixed/b1/c1"
    # the link opens the same response and claim in a fresh page
    _open(page, mixed_run, "#mixed/c2/c2")
    assert selected() == "0/c2"
    assert page.eval_on_selector(".claims li.active", "n => n.dataset.claim") == "2"
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "f-search"


def test_two_runs_side_by_side_mark_changed_verdicts_and_show_the_rewrite_diff(page, tmp_path, artifacts):
    before = write_spanned_run(tmp_path / "before", bridge_rows())
    after = write_spanned_run(tmp_path / "after", bridge_rows(wrong=False))
    path = write_viewer([before, after], tmp_path / "pair.html")
    _open(page, path)
    assert _listed(page) == ["b0", "b1", "b2", "b3"]  # one entry per pair
    sides = page.eval_on_selector_all(".side", "nodes => nodes.map(n => n.dataset.run)")
    assert sides == ["before", "after"]
    changed = page.eval_on_selector_all(".side[data-run='after'] .claims .changed", "n => n.map(x => x.textContent)")
    assert changed == ["changed (other run: contradicted)"]
    assert page.text_content(".side[data-run='after'] .diff del") == "42"
    assert page.text_content(".side[data-run='after'] .diff ins") == "24"
    page.check("#f-changed")
    assert len(_listed(page)) == 4
    page.screenshot(path=str(artifacts / "viewer-side-by-side.png"), full_page=True)


def test_hostile_text_stays_text(page, tmp_path):
    payload = " ".join(HOSTILE.values())
    sample = Sample(
        id="x" + HOSTILE["img"],
        model=HOSTILE["svg"],
        context=CONTEXT + " " + payload,
        response="The bridge is 42 km long. " + payload,
        question=payload,
    )
    run = write_spanned_run(
        tmp_path / ("run" + HOSTILE["img"].replace("/", "")),
        [
            (
                sample,
                [
                    ("The bridge is 42 km long.", ("contradicted", "number", payload)),
                    (payload, ("absent", "other", payload)),
                ],
            )
        ],
    )
    data = build_viewer_data(load_runs([run]), title="title " + payload)
    data.responses[0].passages = [ViewerPassage(id="p1" + HOSTILE["svg"], title=payload, text=CONTEXT + payload)]
    path = tmp_path / "hostile.html"
    path.write_text(render_viewer(data), encoding="utf-8")
    _open(page, path)
    page.click(".claims li[data-claim='1']")
    assert page.evaluate("window.__xss") is None
    # the payload is on the page as text, in every place it was put
    for where in ("#title", "#list", ".response", "#claim-detail", ".context-box"):
        assert HOSTILE["script"] in page.text_content(where), where
    assert page.text_content("#runs").count(HOSTILE["svg"]) >= 1
    # and nothing it contains became an element
    counts = page.evaluate("""() => ({img: document.querySelectorAll('img').length,
        svg: document.querySelectorAll('svg').length, script: document.querySelectorAll('script').length})""")
    assert counts == {"img": 0, "svg": 0, "script": 2}


def test_a_long_context_folds_and_shows_an_excerpt_around_the_evidence(page, tmp_path):
    filler = " ".join(f"Filler sentence number {i} says nothing about bridges." for i in range(60))
    context = filler + " The bridge over the Vell river is 24 km long. " + filler
    rows = [
        (
            Sample(id="long", model="m", context=context, response="The bridge is 42 km long."),
            [("The bridge is 42 km long.", ("contradicted", "number", "24 km, not 42 km"))],
        )
    ]
    path = write_viewer([write_spanned_run(tmp_path / "long", rows)], tmp_path / "long.html")
    _open(page, path)
    assert page.text_content(".context.excerpt mark") == "The bridge over the Vell river is 24 km long."
    assert page.eval_on_selector(".context-box details", "d => d.open") is False  # the whole context is folded
    page.click(".context-box details summary")
    assert page.is_visible("#context") and len(page.text_content("#context")) == len(context)


def test_a_cut_page_says_what_it_left_out_and_a_runaway_response_says_it_is_shortened(page, tmp_path, artifacts):
    from report.viewer_runs import runaway_rows, wide_rows

    run = write_spanned_run(tmp_path / "big", runaway_rows() + wide_rows(30))
    data = build_viewer_data(load_runs([run]), max_mb=2)
    shown = len(data.responses)
    assert 1 < shown < 31 and data.responses[0].shortened
    path = tmp_path / "big.html"
    path.write_text(render_viewer(data), encoding="utf-8")
    assert path.stat().st_size < 2_200_000
    _open(page, path)
    notes = page.text_content("#notes")
    assert f"Showing {shown} of 31 responses" in notes and f"--skip {shown}" in notes and "--max-mb" in notes
    assert page.text_content("#count").startswith(f"{shown} of {shown}")
    # the runaway response opens first: its claims are listed up to the cap, with the note on what is left out
    assert page.text_content(".side .shortened").startswith("Shortened to keep the page small")
    assert page.eval_on_selector_all(".claims li[data-claim]", "nodes => nodes.length") == 2_000
    page.screenshot(path=str(artifacts / "viewer-cut.png"))
    page.click("#list li[data-key] >> text=w0")
    assert page.query_selector(".side .shortened") is None
