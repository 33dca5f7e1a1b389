"""The viewer page shows what the judge said: its own evidence, the passages and citations, keyless-judge
caveats; a header that leaves room for the response; a detail pane that follows the filters (issue #25 item 4).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from report.viewer_runs import bridge_rows, write_spanned_run

from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import (
    CitationFinding,
    Claim,
    ClaimVerdict,
    Evidence,
    Mode,
    Passage,
    RunManifest,
    Sample,
    Span,
)
from hallumeasure.report.runs import load_runs
from hallumeasure.report.viewer import build_viewer_data, render_viewer, write_viewer
from hallumeasure.runs.store import RunStore

PASSAGES = (
    Passage(id="doc1", title="Vell bridge: facts", text="The bridge over the Vell river is 24 km long."),
    Passage(id="doc2", title="Opening day", text="It opened in 2019. The mayor praised the builders."),
)
RESPONSE = "The bridge is 24 km long [doc2]. It opened in 2019 [doc2]. Tolls are free. The mayor praised the builders."


def _open(page, path: Path) -> None:
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("body[data-ready]")


def _manifest(name: str, judge: str, n: int) -> RunManifest:
    return RunManifest(
        run_id=name,
        package_version="test",
        input_sha256="0" * 64,
        n_samples=n,
        extractor="test",
        judge=judge,
        mode=Mode.COT_ONE,
        policy=Policy(),
        started_at=datetime(2025, 1, 1, tzinfo=UTC),
        status="complete",
    )


def write_rag_run(path: Path, judge: str = "anthropic:claude-test") -> Path:
    """One RAG sample: a claim backed by a verified quote in the passage it does not cite, one backed by an
    unverifiable quote, and one the judge quoted nothing for."""
    sample = Sample(id="rag1", model="m", passages=PASSAGES, response=RESPONSE, question="How long is the bridge?")
    texts = ["The bridge is 24 km long", "It opened in 2019", "Tolls are free.", "The mayor praised the builders."]
    claims = [
        Claim(
            id=f"rag1:c{i}",
            sample_id="rag1",
            index=i,
            text=t,
            spans=(Span(start=RESPONSE.find(t), end=RESPONSE.find(t) + len(t)),),
        )
        for i, t in enumerate(texts)
    ]
    quote = "is 24 km long"
    start = PASSAGES[0].text.find(quote)
    verdicts = [
        ClaimVerdict(
            claim_id="rag1:c0",
            label="supported",
            label_reason="doc1 gives the length.",
            judge=judge,
            evidence=(Evidence(passage_id="doc1", quote=quote, start=start, end=start + len(quote), verified=True),),
            evidence_verified=True,
            citations=("doc2",),
            citation=CitationFinding.WRONG_PASSAGE,
        ),
        ClaimVerdict(
            claim_id="rag1:c1",
            label="supported",
            label_reason="doc2 gives the year.",
            judge=judge,
            evidence=(Evidence(passage_id="doc2", quote="opened during 2019", verified=False),),
            evidence_verified=False,
            citations=("doc2",),
            citation=CitationFinding.CORRECT,
        ),
        ClaimVerdict(claim_id="rag1:c2", label="absent", subtype="other", label_reason="Not said.", judge=judge),
        ClaimVerdict(claim_id="rag1:c3", label="supported", label_reason="Said in doc2.", judge=judge),
    ]
    with RunStore(path, write=True) as store:
        store.add_samples([sample])
        store.write_result(summarise_response(sample, claims, verdicts, Policy()))
        store.write_manifest(_manifest(path.name, judge, 1))
    return path


def test_the_judges_evidence_is_shown_as_its_own_with_passage_id_title_and_citation_finding(page, tmp_path):
    path = write_viewer([write_rag_run(tmp_path / "rag")], tmp_path / "rag.html")
    _open(page, path)
    page.click(".claims li[data-claim='0']")
    detail = page.text_content("#claim-detail")
    assert "judge's evidence" in detail and "is 24 km long" in detail
    assert "verified in passage doc1 · Vell bridge: facts" in detail
    assert "reading aid" not in detail and "closest" not in detail
    assert "passage doc2 · Opening day" in detail  # what the claim cites, by id and title
    assert "wrong passage" in detail and "another passage does" in detail
    # every passage is listed with its id and title; the quote is marked in the passage it came from
    heads = page.eval_on_selector_all(".context-box details.passage summary", "n => n.map(x => x.textContent)")
    assert heads[0].startswith("passage doc1 · Vell bridge: facts") and "judge's evidence" in heads[0]
    assert heads[1].startswith("passage doc2 · Opening day") and "cited by this claim" in heads[1]
    assert page.text_content("details.passage[data-passage='doc1'] mark.judge") == "is 24 km long"
    # the citation finding is on the claim in the list too
    assert "citation: wrong passage" in page.text_content(".claims li[data-claim='0']")


def test_an_unverified_quote_says_so_and_a_claim_without_a_quote_gets_the_reading_aid(page, tmp_path):
    path = write_viewer([write_rag_run(tmp_path / "rag")], tmp_path / "rag.html")
    _open(page, path)
    page.click(".claims li[data-claim='1']")
    detail = page.text_content("#claim-detail")
    assert "opened during 2019" in detail and "not found in passage doc2 · Opening day" in detail
    assert page.query_selector_all(".context-box mark") == []  # nothing to mark: the quote is not in the source
    page.click(".claims li[data-claim='2']")
    detail = page.text_content("#claim-detail")
    assert "judge's evidence" not in detail and "the judge quoted nothing" in detail
    # the reading aid of a RAG response is marked in the passage it lies in, not in the joined text
    page.click(".claims li[data-claim='3']")
    assert "a reading aid" in page.text_content("#claim-detail")
    assert page.text_content("details.passage[data-passage='doc2'] mark.overlap") == "The mayor praised the builders."
    assert page.eval_on_selector("details.passage[data-passage='doc2']", "d => d.open") is True


@pytest.mark.parametrize("judge", ["offline", "nli", "offline+nli"])
def test_every_keyless_judge_gets_the_not_an_llm_banner(page, tmp_path, judge):
    run = write_spanned_run(tmp_path / "k", bridge_rows(), judge=judge)
    _open(page, write_viewer([run], tmp_path / "k.html"))
    banner = page.text_content(f"#notes .banner[data-judge='{judge}']")
    assert "not an LLM" in banner and "Run k was" in banner


def test_no_banner_for_an_llm_judge(page, tmp_path):
    _open(page, write_viewer([write_rag_run(tmp_path / "rag")], tmp_path / "rag.html"))
    assert page.query_selector_all("#notes .banner") == []


def test_claims_a_keyless_judge_could_not_decide_are_neutral_and_need_an_llm_check(page, tmp_path):
    run = write_spanned_run(tmp_path / "k", bridge_rows(), judge="offline")
    with RunStore(run, write=True) as store:  # the first claim of each response: unsure
        for result in store.results():
            verdicts = [v.model_copy(update={"confident": v.claim_id[-3:] != ":c0"}) for v in result.verdicts]
            store.write_result(result.model_copy(update={"verdicts": verdicts}))
    runs = load_runs([run])
    path = tmp_path / "k.html"
    path.write_text(render_viewer(build_viewer_data(runs)), encoding="utf-8")
    _open(page, path)
    first = page.eval_on_selector(".claims li[data-claim='0']", "n => [n.className, n.textContent]")
    assert "lab-unsure" in first[0] and "lab-contradicted" not in first[0] and "needs an LLM check" in first[1]
    second = page.eval_on_selector(".claims li[data-claim='1']", "n => [n.className, n.textContent]")
    assert "lab-supported" in second[0] and "needs an LLM check" not in second[1]
    seg = page.eval_on_selector(".response .seg", "n => [n.className, n.title]")
    assert "lab-unsure" in seg[0] and "needs an LLM check" in seg[1]
    assert "needs an LLM check" in page.text_content(".legend")
    page.click(".claims li[data-claim='0']")
    assert "a guess: needs an LLM check" in page.text_content("#claim-detail")


def test_a_run_without_the_confident_column_shows_every_claim_by_its_label(page, tmp_path):
    _open(page, write_viewer([write_spanned_run(tmp_path / "k", bridge_rows(), judge="offline")], tmp_path / "k.html"))
    assert page.query_selector_all(".lab-unsure") == [] and "needs an LLM check" not in page.inner_text("main")


def test_with_four_runs_the_header_is_compact_and_no_number_is_clipped(page, tmp_path, artifacts):
    judges = ["offline", "nli", "fake", "anthropic:x"]
    runs = [write_spanned_run(tmp_path / f"run-{i}", bridge_rows(), judge=j) for i, j in enumerate(judges)]
    path = write_viewer(runs, tmp_path / "four.html")
    page.set_viewport_size({"width": 1366, "height": 768})
    _open(page, path)
    height = page.eval_on_selector("header", "n => n.getBoundingClientRect().height")
    assert height < 0.4 * 768, height
    # the response itself starts above the fold
    assert page.eval_on_selector(".response", "n => n.getBoundingClientRect().top") < 768
    clipped = page.eval_on_selector_all(
        "#runs td.num", "cells => cells.filter(c => c.scrollWidth > c.clientWidth).map(c => c.textContent)"
    )
    assert clipped == []
    rates = page.eval_on_selector_all("#runs td.rate", "cells => cells.map(c => c.textContent)")
    assert rates == ["0.667", "1.000"] * 4  # every response has the same rate: no interval to show
    page.screenshot(path=str(artifacts / "viewer-four-runs.png"))


def test_the_detail_pane_follows_the_filters(page, tmp_path):
    rows = bridge_rows("model-a")
    for sample, claims in bridge_rows("model-b", wrong=False):
        rows.append((sample.model_copy(update={"id": "c" + sample.id[1:]}), claims))
    _open(page, write_viewer([write_spanned_run(tmp_path / "mixed", rows)], tmp_path / "mixed.html"))
    page.click("#list li[data-key] >> text=c2")
    assert page.text_content("#detail h2").startswith("c2")
    page.select_option("#f-model", "model-a")  # c2 is model-b's: it leaves the list, and the detail pane
    assert page.text_content("#detail h2").startswith("b0")
    assert page.eval_on_selector("#list li.selected", "n => n.dataset.key") == "0/b0"
    page.fill("#f-search", "nothing like this")
    assert "Select a response" in page.text_content("#detail")
    page.fill("#f-search", "")  # the list is back: so is a response in the detail pane
    assert page.text_content("#detail h2").startswith("b0")


def test_a_run_whose_claims_are_all_error_rows_counts_them(page, tmp_path):
    rows = [(s, [(text, "error") for text, _ in claims]) for s, claims in bridge_rows()]
    _open(page, write_viewer([write_spanned_run(tmp_path / "errors", rows)], tmp_path / "e.html"))
    mix = page.text_content("#runs .mix-cell")
    assert "no claims" not in mix and "error 12" in mix


def test_with_one_run_the_header_leaves_the_context_above_the_fold(page, tmp_path):
    page.set_viewport_size({"width": 1366, "height": 768})
    _open(page, write_viewer([write_rag_run(tmp_path / "rag")], tmp_path / "rag.html"))
    assert page.eval_on_selector("header", "n => n.getBoundingClientRect().height") < 0.25 * 768
    # the passages (the source) start on the first screen
    assert page.eval_on_selector(".context-box", "n => n.getBoundingClientRect().top") < 768


def test_a_link_to_a_response_opens_it_on_a_fresh_page(page, tmp_path):
    rows = bridge_rows("model-a")
    path = write_viewer([write_spanned_run(tmp_path / "mixed", rows)], tmp_path / "mixed.html")
    page.goto(path.resolve().as_uri() + "#mixed/b2/c1")  # the first load of this page
    page.wait_for_selector("body[data-ready]")
    assert page.eval_on_selector("#list li.selected", "n => n.dataset.key") == "0/b2"
    assert page.eval_on_selector(".claims li.active", "n => n.dataset.claim") == "1"
    assert page.evaluate("location.hash") == "#mixed/b2/c1"


def test_the_source_of_the_evidence_is_named_by_its_kind(page, tmp_path):
    import hallumeasure

    messages = [
        {"role": "system", "content": "You are the airline's assistant."},
        {"role": "user", "content": "When does flight BA117 leave?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "function": {"name": "flight_status"}}]},
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "is_error": True,
            "content": "Error: timeout. Cached: BA117 departs at 9:40.",
        },
        {"role": "assistant", "content": "BA117 departs at 9:40."},
    ]
    run = hallumeasure.measure([{"id": "chat1", "messages": messages}], out=tmp_path / "chat")
    path = write_viewer([run.path], tmp_path / "chat.html")
    _open(page, path)
    page.click(".claims li[data-claim='0']")
    detail = page.text_content("#claim-detail")
    assert "verified in tool result call_1 · flight_status (failed call)" in detail
    assert "failed tool call" in detail
    heads = page.eval_on_selector_all(".context-box details.passage summary", "n => n.map(x => x.textContent)")
    assert heads[0].startswith("system prompt system")
    assert any(h.startswith("tool result call_1 · flight_status (failed call)") for h in heads)
