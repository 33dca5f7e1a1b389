"""The plain-words sentences that open a comparison or an audit report, before any table.

A reader should learn the answer from the first lines ("model-b's responses have 5.3x the
unsupported-claim rate of model-a's") and find the statistics after. Every sentence is made from
the report's own numbers; names come from runs and are escaped by the templates like any run text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hallumeasure.report.comparison import Comparison
from hallumeasure.report.unsure import UnsureStats
from hallumeasure.stats.estimate import Estimate
from hallumeasure.stats.groups import GroupStats

if TYPE_CHECKING:
    from hallumeasure.report.audit_models import RiseDecision


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None or low == high else f" [{low:+.3f}, {high:+.3f}]"


#: Fewest unsupported claims each side needs before a sentence says "5.3x the rate": below it a
#: ratio rests on one or two claims and swings wildly, so only the difference is given.
RATIO_FLOOR = 5


def _how_many(a: float, b: float) -> str:
    """``5.3x the`` / ``about the same`` wording for two rates, ``b`` above ``a`` above 0."""
    ratio = b / a
    return f"{ratio:.1f}x the" if ratio >= 1.1 else "about the same"


def rate_sentence(worse_first: Comparison, stats: dict[str, GroupStats], alpha: float, interval_label: str = "") -> str:
    """One comparison in words: which model has more unsupported claims, by how much, and whether it is clear.

    ``interval_label`` names the difference's interval where another interval stands beside it (the audit).
    """
    c = worse_first
    ra, rb = stats[c.a].mean_unsupported_rate.value, stats[c.b].mean_unsupported_rate.value
    if ra is None or rb is None:
        missing = c.a if ra is None else c.b
        return f"{missing} has no rated response, so its unsupported-claim rate cannot be compared."
    diff, p = c.unsupported_rate.diff, c.unsupported_rate.p_value
    if ra == rb:
        head = f"{c.a} and {c.b} have the same mean unsupported-claim rate ({ra:.3f})"
    else:
        (low_name, low), (high_name, high) = sorted(((c.a, ra), (c.b, rb)), key=lambda pair: pair[1])
        if low == 0:
            head = (
                f"{high_name}'s responses have unsupported claims where {low_name}'s have none: mean "
                f"unsupported-claim rate {high:.3f} vs {low:.3f}"
            )
        elif min(stats[c.a].n_unsupported, stats[c.b].n_unsupported) < RATIO_FLOOR:
            fewest = min((stats[c.a], stats[c.b]), key=lambda s: s.n_unsupported)
            head = (
                f"{high_name}'s responses have a higher mean unsupported-claim rate than {low_name}'s: "
                f"{high:.3f} vs {low:.3f} (no ratio: {fewest.name} has {fewest.n_unsupported} unsupported "
                f"claim{'s' if fewest.n_unsupported != 1 else ''}, fewer than {RATIO_FLOOR})"
            )
        elif (words := _how_many(low, high)) == "about the same":
            head = (
                f"{high_name}'s and {low_name}'s responses have about the same unsupported-claim rate: "
                f"{high:.3f} vs {low:.3f}"
            )
        else:
            head = (
                f"{high_name}'s responses have {words} unsupported-claim rate of {low_name}'s: {high:.3f} vs {low:.3f}"
            )
    if diff.value is None:
        return head + "."
    clear = p is not None and p < alpha
    verdict = "significant" if clear else "not significant (it could be chance)"
    pairing = f"over {c.n_shared} shared samples" if c.paired else "as independent groups"
    return (
        f"{head}; difference {diff.value:+.3f}{interval_label}{_interval(diff.low, diff.high)} {pairing}, p {_p(p)}: "
        f"{verdict} at the {alpha:g} level."
    )


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def share_sentence(stats: list[GroupStats]) -> str | None:
    """The hallucinated share of each group, in one sentence."""
    parts = [
        f"{_share(s.hallucinated_share.value)} of {s.name}'s {s.n_responses} responses"
        for s in stats
        if s.hallucinated_share.value is not None
    ]
    return f"Responses with at least one unsupported claim: {'; '.join(parts)}." if parts else None


def subtype_sentence(stats: list[GroupStats], top: int = 3) -> str | None:
    """The most frequent error subtypes of each group, with their counts."""
    parts = []
    for s in stats:
        counts = sorted(((n, x) for x, n in s.subtype_counts.items() if n), key=lambda pair: (-pair[0], pair[1]))
        if counts:
            total = sum(n for n, _ in counts)
            shown = ", ".join(f"{x.replace('_', ' ')} {n}" for n, x in counts[:top])
            parts.append(f"{s.name}: {shown} (of {total} subtyped claim{'s' if total != 1 else ''})")
    return f"Most frequent error subtypes: {'; '.join(parts)}." if parts else None


def unsure_sentence(u: UnsureStats, rate: Estimate | None) -> str:
    """A group's unsure claims in words: how many, the decided share, and the rate (``rate``, the group's own
    estimate) beside its unsure-claim bounds and the interval covering them."""
    from hallumeasure.report.rates import unsure_cells

    plural = "s" if u.n_claims != 1 else ""
    text = (
        f"{u.name}: {u.n_unsure_claims} of {u.n_claims} claim{plural} unsure (the keyless judge could not tell; "
        f"an LLM check would settle them), {_share(u.decided_share.value)} of responses decided"
    )
    low, high = u.rate_low.value, u.rate_high.value
    if rate is None or rate.value is None or low is None or high is None:
        return text + "."
    cells = unsure_cells(u)
    return text + (
        f"; mean unsupported-claim rate {rate.format()}, between {low:.3f} (every unsure claim supported) "
        f"and {high:.3f} (every unsure claim unsupported); the 95% CI covering both bounds is "
        f"{cells['95% CI covering the bounds']}."
    )


def error_sentence(stats: list[GroupStats]) -> str:
    with_errors = [f"{s.name} {s.n_error_rows}" for s in stats if s.n_error_rows]
    if not with_errors:
        return "No error rows: every response and claim was judged."
    return f"Error rows (not judged, counted apart): {', '.join(with_errors)}."


def comparison_summary(
    model_stats: list[GroupStats],
    comparisons: list[Comparison],
    confidence: float,
    unsure: Sequence[UnsureStats] = (),
) -> list[str]:
    """The sentences that open a comparison report; ``unsure``: the groups with claims a judge could not tell."""
    by_name = {s.name: s for s in model_stats}
    alpha = round(1 - confidence, 6)
    lines = [rate_sentence(c, by_name, alpha) for c in comparisons]
    if not comparisons and model_stats:
        s = model_stats[0]
        if s.mean_unsupported_rate.value is not None:
            lines.append(
                f"{s.name}'s mean unsupported-claim rate is {s.mean_unsupported_rate.format()} "
                f"over {s.n_responses} responses."
            )
    lines += [x for x in (share_sentence(model_stats), subtype_sentence(model_stats)) if x]
    lines += [unsure_sentence(u, by_name[u.name].mean_unsupported_rate if u.name in by_name else None) for u in unsure]
    lines.append(error_sentence(model_stats))
    return lines


def audit_summary(
    status: str,
    comparison: Comparison,
    baseline: GroupStats,
    current: GroupStats,
    alpha: float,
    decisions: Sequence[RiseDecision] = (),
) -> list[str]:
    """The sentences that open an audit report: the gates' one-sided bounds first, then the comparison.

    The comparison's interval is two-sided and its test is not the gate's, so it is labelled as such:
    beside the gate's bounds an unlabelled interval would read as a contradiction.
    """
    stats = {comparison.a: baseline, comparison.b: current}
    lines = [f"Audit result: {status.upper()}."]
    for d in decisions:
        if d.difference is None:
            continue
        low = "-" if d.lower_bound is None else f"{d.lower_bound:+.3f}"
        high = "-" if d.upper_bound is None else f"{d.upper_bound:+.3f}"
        lines.append(
            f"Gate {d.metric}: difference {d.difference:+.3f}, the gate's {d.confidence:.0%} one-sided bounds: "
            f"lower {low}, upper {high} (tolerated rise {d.margin:.3f}): {d.outcome.upper()}."
        )
    # compare_groups' default level, which the audit uses
    label = ", two-sided 95% interval of the difference (descriptive, not the gate's bounds)"
    lines.append(rate_sentence(comparison, stats, alpha, interval_label=label))
    lines += [x for x in (share_sentence([baseline, current]), subtype_sentence([baseline, current])) if x]
    lines.append(error_sentence([baseline, current]))
    return lines
