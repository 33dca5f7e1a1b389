"""Runs for the viewer tests, written straight through ``RunStore`` with claim spans in the response.

Import as ``from report.viewer_runs import write_spanned_run, HOSTILE`` (``tests`` is on the pytest path).
"""

from __future__ import annotations

import functools
from pathlib import Path

from report.helpers import verdict, write_run

from hallumeasure.core.types import ClaimVerdict, Evidence, Sample

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


#: The viewer tests' verdicts: worded reasons, and a probability to show.
_verdict = functools.partial(verdict, reason="{label}: a reason", why="{subtype}: why", probability=0.5)


def write_spanned_run(
    path: Path,
    rows: list[tuple[Sample, list[tuple[str, object]]]],
    *,
    judge: str = "test-judge",
    failed: dict[str, str] | None = None,
) -> Path:
    """A complete run; each claim's span is where its text occurs in the response (none when absent)."""
    return write_run(path, rows, judge=judge, extractor="test", failed=failed, spans=True, make_verdict=_verdict)


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
