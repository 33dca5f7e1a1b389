"""Test helpers for reports: an HTML escaping check, and runs written straight through ``RunStore``
(``viewer_runs.write_spanned_run`` is ``write_run`` with claim spans and the viewer tests' verdicts).

Import as ``from report.helpers import assert_escaped, write_run, verdicts`` (``tests`` is on
the pytest ``pythonpath``).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from markupsafe import escape

from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import Claim, ClaimVerdict, Mode, RunManifest, Sample, Span
from hallumeasure.runs.store import RunStore

#: Strings that must never reach an HTML page unescaped.
XSS_PAYLOADS = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')


def assert_escaped(page: str, payloads: tuple[str, ...] | list[str] = XSS_PAYLOADS) -> None:
    """Fail unless every payload occurs in ``page`` only in escaped form (and does occur, escaped).

    Checks the raw payload, its dangerous fragments (a live ``<script`` or ``<img`` tag, a
    quote that closes an attribute before ``>``), and that the escaped text is present so the
    content was shown rather than dropped.
    """
    for payload in payloads:
        assert payload not in page, f"unescaped payload in page: {payload!r}"
        escaped_forms = {html.escape(payload, quote=True), html.escape(payload, quote=False), str(escape(payload))}
        assert any(form in page for form in escaped_forms), f"payload missing from page (dropped?): {payload!r}"
    lowered = page.lower()
    for fragment in ("<script>alert", "<img src=x", '"><img', "onerror=alert(1)>"):
        assert fragment not in lowered, f"live markup fragment in page: {fragment!r}"


def verdict(
    claim_id: str,
    spec: tuple | str | ClaimVerdict,
    *,
    reason: str = "{label} here",
    why: str = "{subtype} here",
    probability: float | None = None,
) -> ClaimVerdict:
    """A verdict from a short spec: ``"supported"``, ``("absent", "number", "why")``, ``"error"`` or a whole
    ``ClaimVerdict`` (given this claim's id); ``reason`` and ``why`` word the label and subtype reasons that the
    spec leaves out."""
    if isinstance(spec, ClaimVerdict):
        return spec.model_copy(update={"claim_id": claim_id})
    if spec == "error":
        return ClaimVerdict(claim_id=claim_id, judge="test", error="the judge returned no verdict")
    label, subtype, given = (spec, None, None) if isinstance(spec, str) else ((*tuple(spec), None, None))[:3]
    return ClaimVerdict(
        claim_id=claim_id,
        label=label,
        subtype=subtype,
        label_reason=given or reason.format(label=label),
        subtype_reason=why.format(subtype=subtype) if subtype else None,
        judge="test",
        probability=probability,
    )


def verdicts(claim_ids: list[str], specs: list[tuple | str]) -> list[ClaimVerdict]:
    """Verdicts from short specs (``verdict``)."""
    return [verdict(cid, spec) for cid, spec in zip(claim_ids, specs, strict=True)]


def write_run(
    path: Path,
    rows: list[tuple[Sample, list[tuple[str, tuple | str]]]],
    *,
    judge: str = "test-judge",
    extractor: str = "test-extractor",
    mode: Mode = Mode.COT_ONE,
    policy: Policy | None = None,
    prompts: dict[str, str] | None = None,
    failed: dict[str, str] | None = None,
    detector: str = "claims",
    spans: bool = False,
    make_verdict: Callable[[str, Any], ClaimVerdict] = verdict,
) -> Path:
    """Write a complete run: each row is a sample and its claims as (claim text, verdict spec).

    ``failed`` maps sample ids to an error message: those samples become whole-sample error rows. With
    ``spans``, each claim's span is where its text occurs in the response (none where it does not).
    ``make_verdict(claim id, spec)`` makes each verdict.
    """
    policy = policy or Policy()
    failed = failed or {}
    with RunStore(path, write=True) as store:
        store.add_samples([sample for sample, _ in rows])
        for sample, claim_specs in rows:
            if sample.id in failed:
                store.write_result(summarise_response(sample, [], [], policy, error=failed[sample.id]))
                continue
            claims = [
                Claim(
                    id=f"{sample.id}:c{i}", sample_id=sample.id, index=i, text=text, spans=_spans(sample, text, spans)
                )
                for i, (text, _) in enumerate(claim_specs)
            ]
            judged = [make_verdict(c.id, spec) for c, (_, spec) in zip(claims, claim_specs, strict=True)]
            store.write_result(summarise_response(sample, claims, judged, policy))
        store.write_manifest(
            RunManifest(
                run_id=path.name,
                package_version="test",
                input_sha256="0" * 64,
                n_samples=len(rows),
                extractor=extractor,
                judge=judge,
                mode=mode,
                policy=policy,
                detector=detector,
                prompts=prompts if prompts is not None else {"classify_cot_one.v1": "a" * 64},
                started_at=datetime(2025, 1, 1, tzinfo=UTC),
                status="complete",
            )
        )
    return path


def _spans(sample: Sample, text: str, wanted: bool) -> tuple[Span, ...]:
    at = sample.response.find(text) if wanted else -1
    return (Span(start=at, end=at + len(text)),) if at >= 0 else ()


def sample(i: int, model: str | None = None, **fields) -> Sample:
    """A small sample whose context has three sentences, so claims can align to one of them."""
    base = {
        "id": f"s{i}",
        "context": f"The bridge number {i} is 24 km long. It opened in 2019. The mayor praised the builders.",
        "response": f"The bridge number {i} is 42 km long. It opened in 2019.",
        "model": model,
    }
    return Sample(**{**base, **fields})


def planned_run(path: Path, unsupported: list[int], n: int = 20) -> Path:
    """A run of ``n`` samples of four claims each, by an LLM judge (what ``plan`` reads); sample ``i`` has
    ``unsupported[i % len(unsupported)]`` of its claims contradicted."""
    rows = []
    for i in range(n):
        bad = unsupported[i % len(unsupported)]
        specs = [("contradicted", "number")] * bad + ["supported"] * (4 - bad)
        rows.append((sample(i, "m"), [(f"Claim {j}.", spec) for j, spec in enumerate(specs)]))
    return write_run(path, rows, judge="anthropic:claude-sonnet-4-5", extractor="anthropic:claude-sonnet-4-5")


def measure_offline(path: Path, out: Path, *, concurrency: int = 4) -> Path:
    """Measure the input file at ``path`` into ``out`` with the keyless offline extractor and judge."""
    from hallumeasure.judges.build import build_extractor, build_judge
    from hallumeasure.pipeline.run import run_measurement
    from hallumeasure.runs.inputs import load_samples

    loaded = load_samples(path)
    run_measurement(
        loaded.samples,
        out,
        build_extractor("offline"),
        build_judge("offline", Mode.COT_ONE),
        mode=Mode.COT_ONE,
        input_sha256=loaded.sha256,
        input_path=str(path),
        concurrency=concurrency,
    )
    return out
