"""One meaning of confident and decided (issue #45 item 2): every view of the same claims says the same.

One run holds three responses: one with an unsure contradicted claim at P(unsupported) = 0.98 (so undecided:
the unsure claim could change its flag), one whose only claim is confident but whose keyless response rule
disagrees (undecided with every claim confident), and one decided. `check` (whose Result the guard's JSON is
made of), `show --claims`, the viewer's data, the pytest message and the evaluation export are rendered and
compared claim by claim and response by response.
"""

import json
from datetime import UTC, datetime

from report.helpers import sample
from testdata import REPO
from typer.testing import CliRunner

from hallumeasure.api.check import result_of
from hallumeasure.api.grounded import failure_message
from hallumeasure.cli import app
from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.certainty import UNSURE, UNSURE_NOTE, claim_certainty
from hallumeasure.core.labels import Decidable, Label, Policy
from hallumeasure.core.types import Claim, ClaimVerdict, Mode, RunManifest
from hallumeasure.export.evaluations import evaluation_results
from hallumeasure.report.viewer import build_viewer_data
from hallumeasure.runs.run import load_run
from hallumeasure.runs.store import RunStore

# (claim text, label, probability, confident) per response, and the keyless rule's verdict on its score
RESPONSES = [
    (
        [
            ("Alpha bridge opened in 1990.", Label.CONTRADICTED, 0.98, False),
            ("It spans a river.", Label.SUPPORTED, 0.1, True),
        ],
        None,
    ),
    ([("Beta bridge is made of steel.", Label.ABSENT, 0.9, True)], Decidable.NEITHER),
    ([("Gamma bridge is red.", Label.SUPPORTED, 0.05, True)], None),
]


def _write(path):
    policy = Policy()
    results = []
    with RunStore(path, write=True) as store:
        samples = [sample(i, "m") for i in range(len(RESPONSES))]
        store.add_samples(samples)
        for s, (claims, decidable) in zip(samples, RESPONSES, strict=True):
            made = [Claim(id=f"{s.id}:c{i}", sample_id=s.id, index=i, text=text) for i, (text, *_) in enumerate(claims)]
            verdicts = [
                ClaimVerdict(
                    claim_id=c.id,
                    label=label,
                    label_reason=f"the judge leans this way (P(unsupported) = {p:.2f})",
                    judge="offline",
                    probability=p,
                    confident=confident,
                )
                for c, (_, label, p, confident) in zip(made, claims, strict=True)
            ]
            result = summarise_response(s, made, verdicts, policy, decidable=decidable)
            store.write_result(result)
            results.append((s, result))
        store.write_manifest(
            RunManifest(
                run_id=path.name,
                package_version="test",
                input_sha256="0" * 64,
                n_samples=len(samples),
                extractor="offline",
                judge="offline",
                mode=Mode.COT_ONE,
                policy=policy,
                detector="claims",
                prompts={},
                started_at=datetime(2025, 1, 1, tzinfo=UTC),
                status="complete",
            )
        )
    return results


def test_every_view_says_the_same_of_confident_and_decided(tmp_path):
    results = _write(tmp_path / "run")
    policy = Policy()
    expected_unsure = {text for claims, _ in RESPONSES for text, _, _, confident in claims if not confident}
    expected_decided = {s.id: r.decided for s, r in results}
    assert expected_decided == {"s0": False, "s1": False, "s2": True}

    # check, and the guard's JSON, which is made of check's Result
    checked = [result_of(s.response, r, policy, judge="offline", extractor="offline") for s, r in results]
    as_json = [json.loads(c.model_dump_json()) for c in checked]
    assert {c["text"] for j in as_json for c in j["claims"] if c["certainty"] == "unsure"} == expected_unsure
    assert {c["text"] for j in as_json for c in j["claims"] if not c["confident"]} == expected_unsure
    assert [j["decided"] for j in as_json] == list(expected_decided.values())
    assert as_json[0]["undecided_reason"] == "undecided: an unsure claim could change its hallucinated flag"
    assert as_json[1]["undecided_reason"].startswith("undecided: its claims are confident, but its response score")
    assert as_json[2]["undecided_reason"] is None

    # show --claims (columns: sample, model, label, ...): an unsure label ends in "?"
    shown = CliRunner().invoke(app, ["show", str(tmp_path / "run"), "--claims"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    every = [text for claims, _ in RESPONSES for text, *_ in claims]
    shown_lines = {text: next(line for line in shown.output.splitlines() if text in line) for text in every}
    assert {text for text, line in shown_lines.items() if line.split()[2].endswith("?")} == expected_unsure

    # the viewer's data
    data = build_viewer_data([load_run(tmp_path / "run")])
    viewer_claims = [c for r in data.responses for c in r.claims]
    assert {c.text for c in viewer_claims if not c.confident} == expected_unsure

    # the viewer's page calls them by the same word
    page_script = (REPO / "hallumeasure" / "report" / "templates" / "viewer.js").read_text(encoding="utf-8")
    assert f'var UNSURE = "needs an LLM check ({UNSURE})";' in page_script

    # the pytest message: the unsure note, never "not confident", beside the same claims
    message = failure_message(checked[0], ["1 unsupported"])
    flat = " ".join(message.split())  # the message wraps at 72 columns
    assert UNSURE_NOTE in flat and "not confident" not in flat
    assert "P(unsupported) = 0.98" in message  # the probability is shown, with what it means beside it

    # the exports
    exported = evaluation_results(load_run(tmp_path / "run"))
    assert {e.claim for e in exported if e.claim is not None and e.unsure} == expected_unsure

    # and the words come from one place
    assert {claim_certainty(c["confident"]) for j in as_json for c in j["claims"]} == {"confident", "unsure"}
