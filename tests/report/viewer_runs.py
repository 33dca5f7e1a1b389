"""Runs for the viewer tests, written straight through ``RunStore`` with claim spans in the response.

Import as ``from report.viewer_runs import write_spanned_run, HOSTILE`` (``tests`` is on the pytest path).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hallumeasure.core.aggregate import summarise_response
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import Claim, ClaimVerdict, Evidence, Mode, RunManifest, Sample, Span
from hallumeasure.runs.store import RunStore

#: Text that would run script or break the page if it were ever parsed as HTML.
HOSTILE = {
    "script": "</script><script>window.__xss = 1</script><!--",
    "img": '"><img src=x onerror="window.__xss = 2">',
    "svg": '<svg onload="window.__xss = 3"></svg>',
}

CONTEXT = (
    "The bridge over the Vell river is 24 km long. It opened in 2019 after six years of work. "
    "The mayor praised the builders at the opening."
)


def verdict(claim_id: str, spec) -> ClaimVerdict:
    """``"supported"``, ``("contradicted", "number", "reason")``, ``"error"`` or a whole ``ClaimVerdict``."""
    if isinstance(spec, ClaimVerdict):
        return spec.model_copy(update={"claim_id": claim_id})
    if spec == "error":
        return ClaimVerdict(claim_id=claim_id, judge="test", error="the judge returned no verdict")
    label, subtype, reason = (spec, None, None) if isinstance(spec, str) else ((*tuple(spec), None, None))[:3]
    return ClaimVerdict(
        claim_id=claim_id,
        label=label,
        subtype=subtype,
        label_reason=reason or f"{label}: a reason",
        subtype_reason=f"{subtype}: why" if subtype else None,
        judge="test",
        probability=0.5,
    )


def write_spanned_run(
    path: Path,
    rows: list[tuple[Sample, list[tuple[str, object]]]],
    *,
    judge: str = "test-judge",
    failed: dict[str, str] | None = None,
) -> Path:
    """A complete run; each claim's span is where its text occurs in the response (none when absent)."""
    policy = Policy()
    failed = failed or {}
    with RunStore(path, write=True) as store:
        store.add_samples([s for s, _ in rows])
        for s, specs in rows:
            if s.id in failed:
                store.write_result(summarise_response(s, [], [], policy, error=failed[s.id]))
                continue
            claims = []
            for i, (text, _) in enumerate(specs):
                at = s.response.find(text)
                spans = (Span(start=at, end=at + len(text)),) if at >= 0 else ()
                claims.append(Claim(id=f"{s.id}:c{i}", sample_id=s.id, index=i, text=text, spans=spans))
            verdicts = [verdict(c.id, spec) for c, (_, spec) in zip(claims, specs, strict=True)]
            store.write_result(summarise_response(s, claims, verdicts, policy))
        store.write_manifest(
            RunManifest(
                run_id=path.name,
                package_version="test",
                input_sha256="0" * 64,
                n_samples=len(rows),
                extractor="test",
                judge=judge,
                mode=Mode.COT_ONE,
                policy=policy,
                started_at=datetime(2025, 1, 1, tzinfo=UTC),
                status="complete",
                prompts={"classify_cot_one.v1": "a" * 64},
            )
        )
    return path


def bridge_rows(model: str = "model-a", *, wrong: bool = True) -> list[tuple[Sample, list[tuple[str, object]]]]:
    """Four samples about one bridge: claims supported, contradicted (a number), absent, and an error row."""
    length = "42 km" if wrong else "24 km"
    rows = []
    for i in range(4):
        response = f"The bridge is {length} long. It opened in 2019. Sample {i} adds that tolls are free."
        rows.append(
            (
                Sample(id=f"b{i}", model=model, context=CONTEXT, response=response, question="How long is it?"),
                [
                    (
                        f"The bridge is {length} long.",
                        ("contradicted", "number", "The context says 24 km, not 42 km.") if wrong else "supported",
                    ),
                    ("It opened in 2019.", "supported"),
                    (f"Sample {i} adds that tolls are free.", ("absent", "other", "Tolls are not mentioned.")),
                ],
            )
        )
    return rows


def runaway_rows(
    n_claims: int = 2_500, context_chars: int = 1_200_000
) -> list[tuple[Sample, list[tuple[str, object]]]]:
    """One runaway response: more claims and characters than a page embeds whole, over a very long context
    whose supporting sentence sits past the first million characters."""
    claims = [f"Fact number {i} holds for the bridge." for i in range(n_claims)]
    response = " ".join(claims) + " " + "padding words " * 4_000
    filler = "Filler text about nothing. " * (context_chars // 27)
    quote = "Fact number 0 holds for the bridge."
    context = filler + quote
    quoted = ClaimVerdict(
        claim_id="",
        label="supported",
        judge="test",
        label_reason="The context says so.",
        evidence=(Evidence(passage_id="1", quote=quote, start=len(filler), end=len(context), verified=True),),
    )
    specs: list[tuple[str, object]] = [(c, quoted if i == 0 else "supported") for i, c in enumerate(claims)]
    return [(Sample(id="runaway", model="m", context=context, response=response), specs)]


def wide_rows(n: int, context_chars: int = 50_000) -> list[tuple[Sample, list[tuple[str, object]]]]:
    """``n`` ordinary responses, each over its own long context: a run whose page would grow with it."""
    rows = []
    for i in range(n):
        context = f"Context {i}. " + "The bridge over the Vell river is 24 km long. " * (context_chars // 46)
        response = f"Response {i} says the bridge is 24 km long."
        rows.append((Sample(id=f"w{i}", model="m", context=context, response=response), [(response, "supported")]))
    return rows
