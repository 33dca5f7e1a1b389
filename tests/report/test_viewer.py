"""The viewer's data and page, without a browser (tests/browser drives the page itself)."""

import json
import re

from report.viewer_runs import CONTEXT, HOSTILE, bridge_rows, write_spanned_run
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.types import Sample
from hallumeasure.report.runs import load_runs
from hallumeasure.report.viewer import build_viewer_data, render_viewer, write_viewer
from hallumeasure.report.viewer_page import embed_json


def _embedded(page: str) -> dict:
    block = re.search(r'<script type="application/json" id="viewer-data">(.*?)</script>', page, re.S)
    assert block, "no data block"
    return json.loads(block.group(1))


def test_embedded_json_cannot_close_the_script_block_and_reads_back_unchanged():
    data = {"text": "</script><script>x()</script> <!-- & \u2028 end", "n": [1, 2]}
    text = str(embed_json(data))
    for fragment in ("</", "<!--", "<", ">", "&", "\u2028"):
        assert fragment not in text
    assert json.loads(text) == data


def test_claims_carry_spans_labels_reasons_and_the_aligned_evidence_sentence(tmp_path):
    run = write_spanned_run(tmp_path / "a", bridge_rows())
    data = build_viewer_data(load_runs([run]))
    first = data.responses[0]
    assert (first.sample_id, first.model, first.rate, first.n_unsupported) == ("b0", "model-a", 0.6667, 2)
    wrong = first.claims[0]
    assert first.response[wrong.spans[0][0] : wrong.spans[0][1]] == "The bridge is 42 km long."
    assert (wrong.label, wrong.subtype, wrong.reason) == (
        "contradicted",
        "number",
        "The context says 24 km, not 42 km.",
    )
    evidence = wrong.evidence[0]
    assert evidence.source == "overlap"
    assert (
        data.contexts[first.context][evidence.start : evidence.end] == "The bridge over the Vell river is 24 km long."
    )
    # one copy of a context shared by every response
    assert len(data.contexts) == 1 and {r.context for r in data.responses} == {0}
    header = data.runs[0]
    assert header.models[0].n_claims == 12 and header.models[0].labels["contradicted"] == 4
    assert header.banner is None and header.n_shown == header.n_total == 4


def test_error_rows_and_banners(tmp_path):
    run = write_spanned_run(
        tmp_path / "off", bridge_rows(), judge="offline", failed={"b3": "extraction failed: timeout"}
    )
    data = build_viewer_data(load_runs([run]))
    assert data.runs[0].banner == "offline" and data.runs[0].models[0].n_error_rows == 1
    failed = data.responses[3]
    assert failed.error == "extraction failed: timeout" and failed.claims == [] and failed.rate is None


def test_two_runs_on_the_same_samples_are_paired_with_changed_verdicts_and_a_diff(tmp_path):
    before = write_spanned_run(tmp_path / "before", bridge_rows())
    after = write_spanned_run(tmp_path / "after", bridge_rows(wrong=False))
    data = build_viewer_data(load_runs([before, after]))
    assert data.pairing is not None and data.pairing.n_shared == 4 and data.pairing.n_rewritten == 4
    a, b = data.responses[0], data.responses[4]
    assert (a.pair, b.pair) == (b.key, a.key)
    assert (b.claims[0].change, b.claims[0].was) == ("changed", "contradicted")
    assert (a.claims[0].change, a.claims[0].was) == ("changed", "supported")
    assert b.claims[1].change is None and b.claims[2].change is None  # same verdict
    assert ("-", "42") in [tuple(x) for x in b.diff] and ("+", "24") in [tuple(x) for x in b.diff]
    assert data.pairing.n_changed_claims == 4


def test_a_cap_on_responses_is_stated(tmp_path):
    run = write_spanned_run(tmp_path / "a", bridge_rows())
    data = build_viewer_data(load_runs([run]), max_responses=3)
    assert len(data.responses) == 3 and data.runs[0].n_shown == 3 and data.runs[0].n_total == 4
    assert data.notes and "Showing 3 of 4 responses" in data.notes[0]


def test_hostile_text_never_reaches_the_page_as_markup(tmp_path):
    payload = " ".join(HOSTILE.values())
    sample = Sample(
        id="x" + HOSTILE["img"],
        model=HOSTILE["svg"],
        context=CONTEXT + payload,
        response="Bridge. " + payload,
        question=payload,
    )
    run = write_spanned_run(tmp_path / "hostile", [(sample, [(payload, ("absent", "other", payload))])])
    page = render_viewer(build_viewer_data(load_runs([run])))
    body = page.split('id="viewer-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in body and ">" not in body
    for text in HOSTILE.values():
        assert text not in page
    assert page.count("<script") == 2  # the data block and our own script, nothing else
    data = _embedded(page)
    assert data["responses"][0]["claims"][0]["reason"] == payload  # shown, not dropped


def test_page_uses_no_html_parsing_sink_and_a_strict_content_security_policy(tmp_path):
    from hallumeasure.report.render import TEMPLATES

    script = (TEMPLATES / "viewer.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in script, sink
    page = write_viewer([write_spanned_run(tmp_path / "a", bridge_rows())], tmp_path / "v.html").read_text()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src &#39;none&#39;" in csp and "script-src &#39;sha256-" in csp and "unsafe" not in csp
    # nothing to fetch: the only address in the page is the docs site, the target of a link a reader may follow
    from hallumeasure.core.docs import DOCS_SITE

    assert "http://" not in page.replace(DOCS_SITE, "") and "https://" not in page.replace(DOCS_SITE, "")
    assert "connect-src" not in csp and "img-src http" not in csp


def test_view_command_writes_the_file_and_prints_its_path(tmp_path):
    run = write_spanned_run(tmp_path / "a", bridge_rows())
    result = CliRunner().invoke(app, ["view", str(run)])
    assert result.exit_code == 0, result.output
    assert (run / "view.html").is_file() and f"wrote {run / 'view.html'}" in result.output
    assert result.output.splitlines()[-1] == (run / "view.html").resolve().as_uri()
    target = tmp_path / "out" / "page.html"
    assert CliRunner().invoke(app, ["view", str(run), "--out", str(target)]).exit_code == 0 and target.is_file()
    missing = CliRunner().invoke(app, ["view", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    to_dir = CliRunner().invoke(app, ["view", str(run), "--out", str(tmp_path)])
    assert to_dir.exit_code == 2 and "is a directory" in to_dir.output


def test_a_runaway_response_is_shortened_on_the_page_and_says_where_to_read_it_all(tmp_path):
    from report.viewer_runs import runaway_rows

    from hallumeasure.report.viewer import CLAIMS_SHOWN, RESPONSE_CHARS, SOURCE_CHARS

    rows = runaway_rows()
    run = write_spanned_run(tmp_path / "runaway", rows)
    data = build_viewer_data(load_runs([run]))
    (item,) = data.responses
    assert len(item.response) == RESPONSE_CHARS and len(item.claims) == CLAIMS_SHOWN and item.n_claims == 2_500
    assert len(data.contexts[item.context]) == SOURCE_CHARS
    sample = rows[0][0]
    assert item.shortened.startswith(
        f"Shortened to keep the page small: it shows the first 100,000 of the response's {len(sample.response):,} "
        f"characters; 2,000 of its 2,500 claims; the first 1,000,000 of the context's {len(sample.context):,} "
    )
    assert f"hallumeasure show {run} --claims" in item.shortened
    assert data.notes == []  # the one response is shown, shortened
    # the first claim's quote lies past the embedded context: its words stay, its offsets go
    (evidence,) = item.claims[0].evidence
    assert (evidence.source, evidence.start, evidence.end) == ("judge", None, None)
    assert evidence.quote == "Fact number 0 holds for the bridge." and evidence.verified
    page = render_viewer(data)
    assert len(page.encode()) < 20_000_000 and _embedded(page)["responses"][0]["shortened"] == item.shortened


def test_the_page_stops_at_its_byte_budget_and_says_how_to_see_the_rest(tmp_path):
    from report.viewer_runs import wide_rows

    run = write_spanned_run(tmp_path / "wide", wide_rows(30))
    data = build_viewer_data(load_runs([run]), max_mb=0.5)
    shown = len(data.responses)
    assert 0 < shown < 30 and data.runs[0].n_shown == shown
    assert data.notes == [
        f"Showing {shown} of 30 responses (the first ones in input order): the page holds at most 0.5 MB of run "
        f"data (--max-mb). See the next ones with hallumeasure view {run} --skip {shown}, or raise --max-mb; "
        f"hallumeasure show {run} --claims lists every claim in the terminal."
    ]
    page = render_viewer(data)
    assert len(page.encode()) < 500_000 + len(render_viewer(build_viewer_data(load_runs([run]), max_responses=1)))
    after = build_viewer_data(load_runs([run]), max_mb=0.5, skip=shown)
    assert after.responses[0].sample_id == f"w{shown}" and "(from response" in after.notes[0]
    whole = build_viewer_data(load_runs([run]), max_mb=5)
    assert len(whole.responses) == 30 and whole.notes == []


def test_two_runs_share_the_budget_so_the_same_samples_stay_side_by_side(tmp_path):
    from report.viewer_runs import wide_rows

    rows = wide_rows(20)
    a = write_spanned_run(tmp_path / "a", rows)
    b = write_spanned_run(tmp_path / "b", rows)
    data = build_viewer_data(load_runs([a, b]), max_mb=0.5)
    first, second = data.runs
    assert 0 < first.n_shown < 20 and abs(first.n_shown - second.n_shown) <= 1
    assert data.pairing is not None and data.pairing.n_shared == min(first.n_shown, second.n_shown)
    paired = [r for r in data.responses if r.pair is not None]
    assert len(paired) == 2 * data.pairing.n_shared  # no response points at a partner left out
    counted = build_viewer_data(load_runs([a, b]), max_responses=10)
    assert (counted.runs[0].n_shown, counted.runs[1].n_shown) == (5, 5) and counted.pairing.n_shared == 5


def test_view_prints_what_the_page_left_out(tmp_path):
    from report.viewer_runs import runaway_rows, wide_rows

    run = write_spanned_run(tmp_path / "wide", wide_rows(30))
    result = CliRunner().invoke(app, ["view", str(run), "--max-mb", "0.5"])
    assert result.exit_code == 0, result.output
    assert "note: Showing " in result.output and "--skip " in result.output
    later = CliRunner().invoke(
        app, ["view", str(run), "--max-mb", "0.5", "--skip", "25", "--out", str(tmp_path / "p2.html")]
    )
    assert later.exit_code == 0 and "note: Showing 5 of 30 responses (from response 26 of each run" in later.output
    runaway = write_spanned_run(tmp_path / "runaway", runaway_rows())
    result = CliRunner().invoke(app, ["view", str(runaway)])
    assert result.exit_code == 0 and "1 response(s) too long to embed whole are shortened" in result.output
    import inspect

    from hallumeasure.cli.view import view
    from hallumeasure.report.viewer import DEFAULT_MAX_MB, DEFAULT_MAX_RESPONSES

    options = inspect.signature(view).parameters  # the command keeps the library's defaults
    assert (options["max_mb"].default, options["max_responses"].default) == (DEFAULT_MAX_MB, DEFAULT_MAX_RESPONSES)
